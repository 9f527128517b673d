"""sqlanon.regions: the 2d-dimensional points against a brute force from the view, the rules and
the hierarchy (numeric, date, timestamp, text and hierarchical QIs, NULLs), as a relation, a
DataFrame and a view; another relation via ``table=``; the view-name collision rule."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.model.hierarchy import Hierarchy
from sqlanon.release.regions import regions
from tests.support import describe, frame, is_postgres, load_frame, objects, rows, run

pytestmark = pytest.mark.engines("duckdb", "postgres")

J = {"*": {"P": {"P1": ["a", "b"], "P2": ["c"]}, "Q": ["d", "e", "f"]}}
QID = ["a", "d", "ts", "s", "j"]
COLUMNS = ["id", "a__lo", "a__hi", "d__lo", "d__hi", "ts__lo", "ts__hi", "s__lo", "s__hi", "j__lo", "j__hi",
           "y", "eq_class"]


def _make(con, n: int = 60, seed: int = 7, k: int = 3) -> sqlanon.Release:
    rng = np.random.default_rng(seed)
    data = pd.DataFrame({
        "id": np.arange(n),
        "a": pd.array(np.where(rng.random(n) < 0.15, None, rng.integers(0, 50, n)), dtype="Int64"),
        "d": (pd.to_datetime("2021-01-01") + pd.to_timedelta(rng.integers(0, 400, n), unit="D")).date,
        "ts": pd.to_datetime("2021-06-01") + pd.to_timedelta(rng.integers(0, 10**9, n), unit="ms"),
        "s": rng.choice(["kiwi", "apple", "fig", "pear", "Plum", "date"], n),
        "j": np.where(rng.random(n) < 0.1, None, rng.choice(list("abcdef"), n)),
        "y": rng.choice(["yes", "no"], n),
    })
    load_frame(con, "t", data, types={"id": "BIGINT", "a": "INTEGER", "d": "DATE", "ts": "TIMESTAMP", "s": "VARCHAR",
                                      "j": "VARCHAR", "y": "VARCHAR"})
    # key="id" (CTAS declares none): a live view, with a row map, that follows the source
    return sqlanon.anonymize(con, "t", qid=QID, k=k, hierarchies={"j": J}, output=sqlanon.Output(key="id"))


def _brute(con, view: str = "t_anon", relation: str | None = None) -> pd.DataFrame:
    """The points from the published columns, the rules and the hierarchy, in pandas."""
    rel = frame(con, f'SELECT * FROM "{relation or view}"')
    rules = frame(con, f'SELECT * FROM "{view}_rules"').set_index("region")
    h = Hierarchy.from_dict(J)
    if rows(con, "SELECT count(*) FILTER (WHERE j IS NULL) FROM t")[0][0]:
        h = h.with_null_leaf()
    live = rules[rules["size"] > 0]
    bounds = sorted(set(live["s_min"].dropna()) | set(live["s_max"].dropna()))
    out = pd.DataFrame({"id": rel["id"]})
    epoch = pd.Timestamp("1970-01-01")
    for side, part in (("lo", "min"), ("hi", "max")):
        out[f"a__{side}"] = pd.to_numeric(rel[f"a_{part}"]).astype("float64")
        out[f"d__{side}"] = (pd.to_datetime(rel[f"d_{part}"]) - epoch).dt.days
        out[f"ts__{side}"] = (pd.to_datetime(rel[f"ts_{part}"]) - epoch).dt.total_seconds()

        def rank(v):
            if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)):
                return np.nan
            below = sum(b < v for b in bounds)
            return float(below) if v in bounds else below - 0.5

        out[f"s__{side}"] = rel[f"s_{part}"].map(rank).astype("float64")
    # a row without a class (a suppressed row of the view) is fully generalized: the root, node 0
    node = rel["eq_class"].map(lambda c: rules.at[int(c), "j_node"] if pd.notna(c) else 0)
    out["j__lo"] = node.map(lambda x: h.leaf_lo[int(x)] if pd.notna(x) else None).astype("Int64")
    out["j__hi"] = node.map(lambda x: h.leaf_hi[int(x)] if pd.notna(x) else None).astype("Int64")
    # the published label is the node's label (the node comes from eq_class, not the label)
    labels = node.map(lambda x: h.labels[int(x)] if pd.notna(x) else None)
    assert [None if pd.isna(v) else v for v in labels] == [None if pd.isna(v) else v for v in rel["j"]]
    out["y"], out["eq_class"] = rel["y"], rel["eq_class"]
    return out[COLUMNS]


def _same(got: pd.DataFrame, expected: pd.DataFrame) -> None:
    assert list(got.columns) == COLUMNS
    got = got.sort_values("id", ignore_index=True)
    expected = expected.sort_values("id", ignore_index=True)
    for c in COLUMNS:
        g, e = got[c], expected[c]
        if c in ("y",):
            assert g.tolist() == e.tolist(), c
            continue
        g = pd.to_numeric(g).astype("float64").to_numpy()
        e = pd.to_numeric(e).astype("float64").to_numpy()
        np.testing.assert_allclose(g, e, rtol=0, atol=1e-6, equal_nan=True, err_msg=c)


def test_points_against_brute_force(con):
    release = _make(con)
    expected = _brute(con)
    assert expected["a__lo"].isna().any()  # a class holding NULLs of a: NULL lower bound
    assert (expected["j__lo"] == 0).any() or not rows(con, "SELECT count(*) FROM t WHERE j IS NULL")[0][0]
    relation = regions(con, release)
    if is_postgres(con):  # no lazy relation there: a DataFrame
        assert isinstance(relation, pd.DataFrame)
        _same(relation, expected)
    else:
        assert isinstance(relation, duckdb.DuckDBPyRelation)
        _same(relation.df(), expected)
    points = regions(con, "t_anon", as_frame=True)
    assert isinstance(points, pd.DataFrame)
    _same(points, expected)
    assert regions(con, release, name="pts") == "pts"
    assert [o[3] for o in objects(con) if o[2] == "pts"] == ["view"]
    _same(frame(con, "SELECT * FROM pts"), expected)
    # types: numbers DOUBLE, dates BIGINT days, timestamps DOUBLE seconds, ranks DOUBLE, codes BIGINT
    types = dict(describe(con, "pts"))
    assert [types[c] for c in ("a__lo", "d__lo", "ts__lo", "s__lo", "j__lo")] == (
        ["double precision", "bigint", "double precision", "double precision", "bigint"] if is_postgres(con)
        else ["DOUBLE", "BIGINT", "DOUBLE", "DOUBLE", "BIGINT"])
    # fractional seconds are kept
    assert (points["ts__lo"] % 1 != 0).any()
    # suppressed rows (inserted later; the live view follows the source): fully generalized, so
    # every coordinate is the whole release's -- per ordered QI the smallest lower corner (NULL
    # when a class holds NULLs: NULL sorts first) and the largest upper one, the hierarchy's
    # root interval [0, leaves - 1]
    assert not release.materialized
    con.execute("INSERT INTO t VALUES (1000, 5, DATE '2021-02-01', TIMESTAMP '2021-07-01 10:00:00', 'fig', 'a', 'no')")
    row = frame(con, "SELECT * FROM pts WHERE id = 1000")
    assert len(row) == 1 and pd.isna(row.at[0, "eq_class"]) and row.at[0, "y"] == "no"
    h = Hierarchy.from_dict(J)
    if rows(con, "SELECT count(*) FROM t WHERE j IS NULL")[0][0]:
        h = h.with_null_leaf()
    for q in ("a", "d", "ts", "s"):
        lo = np.nan if expected[f"{q}__lo"].isna().any() else expected[f"{q}__lo"].min()
        assert np.array_equal(np.array([row.at[0, f"{q}__lo"], row.at[0, f"{q}__hi"]], dtype=float),
                              [lo, expected[f"{q}__hi"].max()], equal_nan=True), q
    assert (row.at[0, "j__lo"], row.at[0, "j__hi"]) == (0, h.n_leaves - 1)
    _same(frame(con, "SELECT * FROM pts"), _brute(con))


def test_hand_computed_points(con):
    con.execute("CREATE TABLE h(id INT, job VARCHAR, day DATE, w VARCHAR)")
    con.execute("INSERT INTO h VALUES (0, 'nurse', DATE '1970-01-02', 'b'), (1, 'doctor', DATE '1970-01-04', 'a'), "
                "(2, 'clerk', DATE '1970-01-11', 'd'), (3, 'cashier', DATE '1970-01-12', 'c')")
    jobs = {"*": {"medical": ["nurse", "doctor"], "office": ["clerk", "cashier"]}}
    sqlanon.anonymize(con, "h", qid=["job", "day", "w"], k=2, hierarchies={"job": jobs})
    got = regions(con, "h_anon", as_frame=True).sort_values("id")
    assert list(got.columns) == ["id", "job__lo", "job__hi", "day__lo", "day__hi", "w__lo", "w__hi", "eq_class"]
    # leaves nurse 0, doctor 1, clerk 2, cashier 3; bounds a < b < c < d ranked 0..3
    assert got[["job__lo", "job__hi", "day__lo", "day__hi", "w__lo", "w__hi"]].values.tolist() == [
        [0, 1, 1, 3, 0, 1]] * 2 + [[2, 3, 10, 11, 2, 3]] * 2


def test_another_relation(con):
    release = _make(con)
    # a "test table" with the published columns, plus text values that are no published bound
    con.execute("CREATE TABLE later AS SELECT * FROM t_anon")
    con.execute("INSERT INTO later SELECT id + 500, a_min, a_max, d_min, d_max, ts_min, ts_max, '0', 'zz', j, y, "
                "eq_class FROM t_anon WHERE id = 0")
    rules = rows(con, "SELECT s_min, s_max FROM t_anon_rules WHERE size > 0")
    bounds = sorted({v for r in rules for v in r if v is not None})
    run(con, "INSERT INTO later SELECT id + 600, a_min, a_max, d_min, d_max, ts_min, ts_max, 'figs', ?, j, y, "
             "eq_class FROM t_anon WHERE id = 1", [bounds[-1]])
    got = regions(con, release, table="later", as_frame=True)
    _same(got, _brute(con, relation="later"))
    row = got.set_index("id").loc[500]
    assert (row["s__lo"], row["s__hi"]) == (-0.5, len(bounds) - 0.5)  # below and above every bound
    row = got.set_index("id").loc[601]
    assert row["s__lo"] == sum(b < "figs" for b in bounds) - 0.5 and row["s__hi"] == len(bounds) - 1
    # a view over it, read back
    regions(con, release, table="later", name="later_points")
    assert rows(con, "SELECT count(*) FROM later_points")[0][0] == 62

    con.execute("CREATE TABLE no_class AS SELECT id, a_min, a_max, d_min, d_max, ts_min, ts_max, s_min, s_max, j, y "
                "FROM t_anon")
    with pytest.raises(sqlanon.UnknownColumnError, match="eq_class"):
        regions(con, release, table="no_class")
    con.execute("CREATE TABLE no_bound AS SELECT id, a_min, a_max, d_min, ts_min, ts_max, s_min, s_max, j, y, eq_class "
                "FROM t_anon")
    with pytest.raises(sqlanon.UnknownColumnError, match="d_max"):
        regions(con, release, table="no_bound")
    with pytest.raises(sqlanon.UnknownTableError, match="later"):
        regions(con, release, table="latr")
    con.execute("CREATE TABLE clash AS SELECT *, 1 AS \"A__LO\" FROM t_anon")
    with pytest.raises(sqlanon.ObjectExistsError, match="duplicate"):
        regions(con, release, table="clash")
    with pytest.raises(sqlanon.InputError, match="not a sqlanon release"):
        regions(con, "t")


def test_view_name_collisions(con, engine_name):
    release = _make(con)
    con.execute("CREATE TABLE taken AS SELECT 1 AS x")
    con.execute("CREATE VIEW seen AS SELECT 1 AS x")
    # "TAKEN" is taken on DuckDB (names up to case); on PostgreSQL it is another name
    for name in ("taken", "TAKEN", "seen") if engine_name == "duckdb" else ("taken", "seen"):
        with pytest.raises(sqlanon.ObjectExistsError, match="replace=True"):
            regions(con, release, name=name)
    assert rows(con, "SELECT * FROM taken") == [(1,)]  # untouched
    if engine_name == "postgres":
        assert regions(con, release, name="TAKEN") == "TAKEN"  # beside taken, which stays a table
        assert rows(con, "SELECT * FROM taken") == [(1,)] and len(rows(con, 'SELECT * FROM "TAKEN"')) > 0
    for name in ("t_anon", "t_anon_rules", "T_ANON_ROWMAP", "t_anon_hierarchies", "t"):
        with pytest.raises(sqlanon.ObjectExistsError, match="release"):
            regions(con, release, name=name, replace=True)
    assert regions(con, release, name="taken", replace=True) == "taken"
    assert regions(con, release, name="seen", replace=True) == "seen"
    kinds = {o[2]: o[3] for o in objects(con)}
    assert kinds["taken"] == kinds["seen"] == "view"
    _same(frame(con, "SELECT * FROM taken"), _brute(con))
    # in the caller's transaction: created inside it, gone on rollback
    if is_postgres(con):
        con.commit()  # keep what was made so far; the next statement opens the caller's transaction
        run(con, "SELECT 1")
    else:
        con.execute("BEGIN")
    regions(con, release, name="tx_points")
    assert "tx_points" in {o[2] for o in objects(con)}
    con.rollback() if is_postgres(con) else con.execute("ROLLBACK")
    assert "tx_points" not in {o[2] for o in objects(con)} and "taken" in {o[2] for o in objects(con)}


def test_adult_hierarchies(adult):
    con, hierarchies = adult
    hier = ["education", "marital-status", "native-country"]
    sqlanon.anonymize(con, "adult", qid=["age"] + hier, k=25, hierarchies={c: hierarchies[c] for c in hier})
    got = regions(con, "adult_anon", as_frame=True)
    view = frame(con, "SELECT * FROM adult_anon")
    rules = frame(con, "SELECT * FROM adult_anon_rules").set_index("region")
    assert len(got) == len(view) == 30_162
    # every row of a class is the class's point: compare row by row through eq_class
    live = rules.loc[np.sort(view["eq_class"].unique())]
    for c in hier:
        h = Hierarchy.from_csv(hierarchies[c])
        node = live[f"{c}_node"].to_numpy()
        labels = view.groupby("eq_class")[c].agg(lambda v: set(v))
        assert [{h.labels[x]} for x in node] == labels.loc[live.index].tolist()
        lo = pd.Series(h.leaf_lo[node], index=live.index)
        hi = pd.Series(h.leaf_hi[node], index=live.index)
        assert got[f"{c}__lo"].tolist() == lo.loc[got["eq_class"]].tolist()
        assert got[f"{c}__hi"].tolist() == hi.loc[got["eq_class"]].tolist()
    assert got["age__lo"].tolist() == live["age_min"].astype(float).loc[got["eq_class"]].tolist()
    assert (got["native-country__hi"] > got["native-country__lo"]).any()


@settings(max_examples=6, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow],
          phases=[Phase.explicit, Phase.generate])  # no shrinking: each example runs a release
@given(st.integers(8, 80), st.integers(0, 2**32 - 1), st.integers(1, 6))
# engine-independent algorithm; DuckDB vs PostgreSQL identity is tests/e2e/test_engines.py
def test_random_tables(n, seed, k):
    con = duckdb.connect()
    try:
        release = _make(con, n=n, seed=seed, k=min(k, n))
        _same(regions(con, release).df(), _brute(con))
    finally:
        con.close()
