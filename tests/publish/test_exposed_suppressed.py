"""A column whose every non-NULL value only suppressed rows hold publishes none of them.

Found by ``tests/mondrian/test_suppression_mondrian.py::test_workloads_and_diversity_equal_oracle_on_random_tables``:
3 rows, k=1, distinct 2-diversity on ``diag``, ``suppression=0.5``. The one suppressing split
cuts ``q1`` into NULL (rows 1, 2: flu, hiv) and ``0`` (row 0: flu, suppressed). ``q1 = 0`` is
then held by the suppressed row only, and the NULL-only box of the kept rows used to store it as
its empty-range marker ``q1_lo = q1_hi = 0`` in the rules: the release failed its own check
(``exposed_values``) and nothing was published. With no published non-NULL code the NULL edge
moves to the open end like every other edge (:meth:`sqlanon.publish.bounds.Shown.cut`): the
NULL-only box takes in the hidden codes and needs no marker.
"""

from __future__ import annotations

import pandas as pd
import pytest

import sqlanon
from tests.support.db import frame, load_frame, quote

pytestmark = pytest.mark.engines("duckdb", "postgres")


def _table(con) -> None:
    df = pd.DataFrame({"id": [0, 1, 2], "q0": pd.array([0, 0, None], dtype="Int64"),
                       "q1": pd.array([0, None, None], dtype="Int64"), "q2": [0, 0, 0],
                       "label": ["x", "x", "x"], "diag": ["flu", "flu", "hiv"]})
    load_frame(con, "t", df)


@pytest.mark.parametrize("criterion", [sqlanon.InfoGain("label"), sqlanon.Median()], ids=["infogain", "median"])
@pytest.mark.parametrize("memory_rows", [0, 1_000_000], ids=["sql", "memory"])
@pytest.mark.parametrize("key", [None, "id"], ids=["snapshot", "keyed"])
def test_value_only_suppressed_rows_hold_is_not_a_marker(con, criterion, memory_rows, key):
    _table(con)
    release = sqlanon.anonymize(con, "t", qid=["q0", "q1", "q2"], k=1, suppression=0.5,
                                algorithm=sqlanon.Mondrian(criterion, strategy=sqlanon.Levels(memory_rows=memory_rows)),
                                privacy=[sqlanon.DistinctLDiversity("diag", 2)], output=sqlanon.Output(key=key))
    assert release.verification.ok and release.verification.exposed == 0
    assert release.suppressed == 1
    rules = frame(con, f"select * from {quote(release.view + '_rules')}")
    assert len(rules) == 1  # the NULL-only box took in the suppressed row's box
    # q1 = 0 is held by the suppressed row only: no cell of the rules prints it
    assert rules[["q1_min", "q1_max", "q1_lo", "q1_hi"]].isna().all().all() and bool(rules["q1_null"].iloc[0])
    view = frame(con, f"select * from {quote(release.view)} order by {quote('diag')}")
    assert sorted(view["diag"]) == ["flu", "flu", "hiv"]
    assert view["q1_min"].isna().all() and view["q1_max"].isna().all()
    assert view["eq_class"].isna().sum() == 1
