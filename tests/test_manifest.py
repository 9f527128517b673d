"""A release describes itself in the database and reloads by name, hierarchies included."""

from __future__ import annotations

import pytest

import sqlanon
from sqlanon.publish import manifest


def test_release_reloads_by_name_with_identical_hierarchies(con):
    con.execute(
        "CREATE TABLE p AS SELECT i AS id, i % 70 AS age, "
        "CASE WHEN i % 11 = 0 THEN NULL ELSE ['fr', 'gr', 'cn', 'jp'][1 + i % 4] END AS nat, "
        "DATE '2000-01-01' + (i % 300)::INTEGER AS seen FROM range(600) t(i)"
    )
    rows = [["fr", "Europe", "*"], ["gr", "Europe", "*"], ["cn", "Asia", "*"], ["jp", "Asia", "*"]]
    # CTAS declares no key: key="id" makes the release a live view with a row map.
    release = sqlanon.anonymize(
        con, "p", qid=["age", "nat", "seen"], k=12, hierarchies={"nat": rows}, view="pv", key="id"
    )
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
    for node, label in con.sql(f'SELECT nat_node, nat FROM "{release.rules}"').fetchall():
        assert m.hierarchies["nat"].labels[node] == label
    assert manifest.read(con, "pv_rules") == m


def test_not_a_release(con):
    con.execute("CREATE TABLE t_rules (a INTEGER)")
    with pytest.raises(sqlanon.InputError, match="not a sqlanon release"):
        manifest.read(con, "t")
    with pytest.raises(sqlanon.InputError, match="not a sqlanon release"):
        manifest.read(con, "nothing")
