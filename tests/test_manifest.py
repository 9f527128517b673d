"""A release describes itself in the database and reloads by name, hierarchies included."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pytest

import sqlanon
from conftest import load_frame, run
from sqlanon.publish import manifest

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
