"""The manifest's structured records: the report and apply read the criterion and constraints
from them (never from ``describe()`` text), and a format-1 manifest (sqlanon 0.1, texts only)
still loads, with what cannot be read back said plainly."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import sqlanon
from sqlanon.publish import manifest
from sqlanon.release.report import collect, release_workload
from tests.support import load_frame, rows, run

pytestmark = pytest.mark.engines("duckdb", "postgres")


@pytest.fixture
def people(con):
    rng = np.random.default_rng(3)
    n = 400
    load_frame(con, "p", pd.DataFrame({
        "id": np.arange(n), "age": rng.integers(18, 90, n), "zip": rng.integers(0, 30, n),
        "dx": rng.choice(["a", "b", "c", "d"], n), "cost": rng.normal(100, 20, n).round(2),
        "y": rng.choice(["yes", "no"], n)}), primary_key="id")
    return con


def _rewrite_as_format_1(con, rules: str) -> None:
    """Store the release's manifest as sqlanon 0.1 did: texts, no records."""
    document = json.loads(rows(con, "SELECT obj_description(to_regclass(?), 'pg_class')", [rules])[0][0]
                          if "psycopg" in type(con).__module__ else
                          rows(con, "SELECT comment FROM duckdb_tables() WHERE table_name = ?", [rules])[0][0])
    document["sqlanon"] = 1
    del document["criterion_record"], document["constraint_records"]
    text = json.dumps(document).replace("'", "''")
    run(con, f'COMMENT ON TABLE "{rules}" IS \'{text}\'')


@pytest.mark.parametrize("criterion, workload", [
    (dict(target="y"), {"targets": ["y"], "numeric_targets": []}),
    (dict(algorithm=sqlanon.Mondrian(sqlanon.Regression("cost"))), {"targets": [], "numeric_targets": ["cost"]}),
    (dict(algorithm=sqlanon.Mondrian(sqlanon.Targets(("y",), ("cost",)))), {"targets": ["y"], "numeric_targets": ["cost"]}),
    (dict(selections=["age < 40"], target="y"), {"targets": ["y"], "numeric_targets": []}),
], ids=["infogain", "regression", "targets", "selections"])
def test_the_workload_is_read_from_the_records(people, criterion, workload):
    release = sqlanon.anonymize(people, "p", qid=["age", "zip"], k=20, privacy=[sqlanon.DistinctLDiversity("dx", 2)],
                                **criterion)
    m = manifest.read(people, release.view)
    assert m.criterion_object is not None and m.criterion_object.describe() == m.criterion
    assert m.constraint_objects == (sqlanon.KAnonymity(20), sqlanon.DistinctLDiversity("dx", 2))
    assert release_workload(m) == {**workload, "sensitive": ["dx"]}


def test_a_format_1_manifest_still_loads_and_says_what_it_cannot_check(people):
    release = sqlanon.anonymize(people, "p", qid=["age", "zip"], k=20, target="y",
                                privacy=[sqlanon.EntropyLDiversity("dx", 1.5)])
    _rewrite_as_format_1(people, release.rules)
    m = manifest.read(people, release.view)
    assert m.criterion_object is None and m.constraint_objects == ()
    assert m.unknown_constraints == ("entropy l-diversity('dx', l=1.5)",)
    assert m.criterion == "infogain('y')"
    assert release_workload(m) == {"targets": [], "numeric_targets": [], "sensitive": []}
    data = collect(people, release.view)
    assert data.unchecked == ("entropy l-diversity('dx', l=1.5)",) and data.verification.ok
    assert "not re-checked" in sqlanon.report(people, release.view, format="markdown")
    with pytest.raises(sqlanon.InputError, match="sqlanon 0.1"):
        sqlanon.apply(people, release.view, "p", view="p_again", enforce=True)
