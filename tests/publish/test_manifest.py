"""A release describes itself in the database and reloads by name, hierarchies included."""

from __future__ import annotations

import datetime as dt
import json

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.publish import manifest
from tests.support import describe, load_frame, quote, rows, run

pytestmark = pytest.mark.engines("duckdb", "postgres")


def test_release_reloads_by_name_with_identical_hierarchies(con):
    i = np.arange(600)
    nats = np.array(["fr", "gr", "cn", "jp"], dtype=object)[i % 4]
    nats[i % 11 == 0] = None
    load_frame(con, "p", pd.DataFrame({
        "id": i, "age": i % 70, "nat": nats,
        "seen": [dt.date(2000, 1, 1) + dt.timedelta(days=int(d)) for d in i % 300]}))
    rows = [["fr", "Europe", "*"], ["gr", "Europe", "*"], ["cn", "Asia", "*"], ["jp", "Asia", "*"]]
    # The table declares no key: key="id" makes the release a live view with a row map.
    release = sqlanon.anonymize(con, "p", qid=["age", "nat", "seen"], k=12, hierarchies={"nat": rows},
                                output=sqlanon.Output(view="pv", key="id"))
    m = manifest.read(con, "pv")
    assert (m.view, m.rules, m.rowmap, m.hierarchies_table) == ("pv", "pv_rules", "pv_rowmap", "pv_hierarchies")
    assert m.qid == ("age", "nat", "seen") and m.k == 12 and m.source == "p" and not m.materialized
    assert m.key == ("id",) and m.key_declared is False
    assert [q.kind for q in m.qis] == ["numeric", "hierarchy", "temporal"]
    assert [q.has_null for q in m.qis] == [False, True, False]
    assert m.constraints == ("k-anonymity(k=12)",) and m.criterion == "median"
    expected = sqlanon.Hierarchy.from_rows(rows).with_null_leaf()
    assert m.hierarchies["nat"] == expected
    # The node ids stored in the rules mean the same nodes in the reloaded hierarchy.
    for node, label in con.execute(f'SELECT nat_node, nat FROM "{release.rules}"').fetchall():
        assert m.hierarchies["nat"].labels[node] == label
    assert manifest.read(con, "pv_rules") == m


def test_not_a_release(con):
    run(con, "CREATE TABLE t_rules (a INTEGER)")
    with pytest.raises(sqlanon.InputError, match="not a sqlanon release"):
        manifest.read(con, "t")
    with pytest.raises(sqlanon.InputError, match="not a sqlanon release"):
        manifest.read(con, "nothing")


# -- any text value round-trips through the stored hierarchy and manifest (issue 49, part 4) ----
#: Values that broke reading a release back: empty, whitespace, padded, the labels sqlanon adds
#: (``*``, ``⊥``), CSV and SQL syntax, line breaks, PostgreSQL's COPY NULL marker, unicode.
AWKWARD = ["", " ", "  ", " a", "a ", "*", "⊥", "**", "x;y", "q'\"", "n\nl", "\\N", "é", "NULL", "None", "a"]
_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=5)


def _requests(values: list[str]) -> dict[str, dict]:
    """One request per recoding of a table whose text QI ``s`` holds ``values`` (and ``n``, a
    number): single-dimensional (tdr, genetic with and without suppression, optimal over a
    hierarchy) and multidimensional (``s`` ordered, and over a hierarchy). A hierarchy's cells
    are stripped on loading, so the requests with one keep to values that are their own strip."""
    requests: dict[str, dict] = {
        "tdr": {"algorithm": sqlanon.TopDown(), "target": "y"},
        "genetic": {"algorithm": sqlanon.Genetic(iterations=3)},
        "genetic-suppression": {"algorithm": sqlanon.Genetic(iterations=3), "suppression": 0.25},
        "mondrian": {},
        "mondrian-suppression": {"suppression": 0.25},
    }
    if all(v and v == v.strip() for v in values):
        groups = [[v, f"g{i % 2}", "*"] for i, v in enumerate(values)]
        numbers = [[str(i), "low" if i < 2 else "high", "*"] for i in range(4)]
        requests["optimal"] = {"algorithm": sqlanon.Optimal(), "suppression": 0.25,
                               "hierarchies": {"s": groups, "n": numbers}}
        requests["mondrian-hierarchy"] = {"hierarchies": {"s": groups}}
    return requests


def _round_trip(con, values: list[str], name: str, request: dict) -> None:
    """Anonymize ``values`` (each on at least two rows), then read the release back: apply
    recodes the source as the view publishes it, the report renders, verify agrees."""
    counts = [2 + i % 3 for i in range(len(values))]
    s = [v for v, c in zip(values, counts) for _ in range(c)] + [values[0]]
    n = len(s)
    load_frame(con, "t", pd.DataFrame({"id": np.arange(n), "s": s, "n": np.arange(n) % 4, "y": np.arange(n) % 2}),
               types={"s": "VARCHAR"})
    release = sqlanon.anonymize(con, "t", qid=["s", "n"], k=2, **request, output="tv")
    assert release.verification.ok, name
    again = sqlanon.verify(con, release.view, ["s", "n"], 2, class_column=release.class_column)
    assert again.ok, (name, again)
    m = manifest.read(con, release.view)
    if "s" in m.hierarchies:  # the node ids the rules store mean the same nodes after reloading
        for node, label in rows(con, f'SELECT s_node, s FROM "{release.rules}"'):
            assert m.hierarchies["s"].labels[node] == label, name
    applied = sqlanon.apply(con, release.view, "t", view="ta")
    assert (applied.rows, applied.placed) == (n, n), name
    columns = ", ".join(quote(c) for c in ("s", "s_min", "s_max", "n", "n_min", "n_max") if c in _columns(con, "tv"))
    view = rows(con, f'SELECT id, {columns}, {quote(release.class_column)} FROM "tv" ORDER BY id')
    out = rows(con, f'SELECT id, {columns}, {quote(release.class_column)} FROM "ta" ORDER BY id')
    # the rules recode the source as the view published it (a suppressed row is placed by apply)
    assert [r for r, v in zip(out, view) if v[-1] is not None] == [v for v in view if v[-1] is not None], name
    assert json.loads(sqlanon.report(con, release.view, format="json"))["release"]["view"] == "tv"


def _columns(con, name: str) -> list[str]:
    return [c for c, _ in describe(con, name)]


@pytest.mark.filterwarnings("ignore::sqlanon.errors.PrivacyWarning")  # apply places suppressed rows
@pytest.mark.parametrize("name", ["tdr", "genetic", "genetic-suppression", "mondrian", "mondrian-suppression",
                                  "optimal", "mondrian-hierarchy"])
def test_awkward_text_values_read_back(con, name):
    values = AWKWARD if name not in ("optimal", "mondrian-hierarchy") else [v for v in AWKWARD if v and v == v.strip()]
    _round_trip(con, values, name, _requests(values)[name])


@pytest.mark.engines("duckdb")
@pytest.mark.filterwarnings("ignore::sqlanon.errors.PrivacyWarning")
@settings(max_examples=40, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(_TEXT, min_size=1, max_size=6, unique=True), pick=st.integers(0, 6))
def test_any_text_value_reads_back(values, pick):
    requests = _requests(values)
    name = sorted(requests)[pick % len(requests)]
    with duckdb.connect() as con:
        _round_trip(con, values, name, requests[name])
