"""``published="data"|"domain"|"hierarchy"`` (issue 19, part 2), checked by brute force on small
tables: every row's value lies in its published bounds; under ``"domain"`` the bounds are the
region's box -- they tile the domain grid, and no published value is a class's own extreme unless
it is a cut point; under ``"hierarchy"`` they are the smallest covering interval of the
hierarchy, found by enumerating its nodes; the partition is the same whatever is published;
imprecision, rewrite and apply read the bounds as the view publishes them; an empty region is
published with its box by apply.
"""

from __future__ import annotations

import itertools
import math

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.errors import HierarchyError, InputError
from sqlanon.model.hierarchy import Hierarchy
from tests.support import request_options, rows

# Interval hierarchy over 0..49: leaves, 5-wide, 10-wide, [0, 19] / [20, 49], root.
AGE_ROWS = [[str(v), f"{v // 5 * 5}-{v // 5 * 5 + 4}", f"{v // 10 * 10}-{v // 10 * 10 + 9}",
             "0-19" if v < 20 else "20-49", "*"] for v in range(50)]
CAT = {"*": {"ab": ["a", "b"], "cd": ["c", "d", "e"]}}  # leaf "e" never occurs


def table(seed: int, n: int = 60, nulls: bool = False) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(3, 47, n).astype(float)
    if nulls:
        age[rng.random(n) < 0.15] = np.nan
    return pd.DataFrame({"id": np.arange(n), "age": pd.array(age, dtype="Int64"),
                         "zip": rng.integers(0, 6, n), "cat": rng.choice(list("abcd"), n),
                         "label": rng.choice(["x", "y"], n)})


def release_of(con, frame: pd.DataFrame, published, view: str, **kwargs):
    con.register("frame", frame)
    con.execute("CREATE OR REPLACE TABLE t AS SELECT * FROM frame")
    return sqlanon.anonymize(con, "t", qid=["age", "zip"], k=kwargs.pop("k", 4), published=published,
                             output=sqlanon.Output(view=view, replace=True, key="id"), **request_options(**kwargs))


def published_rows(con, view: str) -> pd.DataFrame:
    """Each source row's raw age/zip beside its published bounds and class."""
    return con.execute(f"SELECT t.id, t.age, t.zip, v.age_min, v.age_max, v.zip_min, v.zip_max, v.eq_class "
                       f"FROM t JOIN {view} v USING (id) ORDER BY t.id").df()


def _none(v):
    return None if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA else v


def in_domain_box(v, low, high) -> bool:
    """``low < v <= high`` with NULL ends unbounded; NULL v only where the box is open below."""
    v, low, high = _none(v), _none(low), _none(high)
    if v is None:
        return low is None
    return (low is None or v > low) and (high is None or v <= high)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), nulls=st.booleans(), k=st.integers(2, 8), recoding=st.sampled_from(["multi", "single"]))
def test_domain_bounds_are_boxes_that_tile_the_grid(seed, nulls, k, recoding):
    con = duckdb.connect()
    frame = table(seed, nulls=nulls)
    release_of(con, frame, "data", "v_data", k=k, recoding=recoding)
    domain = release_of(con, frame, "domain", "v_dom", k=k, recoding=recoding)
    assert domain.published == {"age": "domain", "zip": "domain"} and domain.verification.ok
    # the partition does not depend on what is published: same regions, same sizes
    assert rows(con, "SELECT region, size FROM v_data_rules ORDER BY 1") == \
        rows(con, "SELECT region, size FROM v_dom_rules ORDER BY 1")
    got = published_rows(con, "v_dom")
    # every row in its class's box
    for r in got.itertuples():
        assert in_domain_box(r.age, r.age_min, r.age_max) and in_domain_box(r.zip, r.zip_min, r.zip_max)
    # the boxes tile the grid of every (age, zip) value of the domain: each point in exactly one
    rules = con.execute("SELECT age_min, age_max, zip_min, zip_max, size FROM v_dom_rules").df()
    ages = [None] * nulls + sorted(frame.age.dropna().unique().tolist())
    for a, z in itertools.product(ages, sorted(frame.zip.unique())):
        hits = [r for r in rules.itertuples()
                if in_domain_box(a, r.age_min, r.age_max) and in_domain_box(z, r.zip_min, r.zip_max)]
        null_only = [r for r in hits if _none(r.age_min) is None and _none(r.age_max) is None]
        assert len(hits) == 1 or (a is None and len(hits) - len(null_only) <= 1 and null_only) or (
            a is not None and len(hits) - len(null_only) == 1), (a, z, hits)
    # never a class's own extreme unless it is a cut point (a box edge shared with a neighbour)
    cuts = set(rules.age_max.dropna()) & set(rules.age_min.dropna()) | set(rules.age_max.dropna())
    extremes = got.groupby("eq_class").age.agg(["min", "max"])
    shown = set(got.age_min.dropna()) | set(got.age_max.dropna())
    for lo, hi in extremes.itertuples(index=False):
        for v in (lo, hi):
            assert _none(v) is None or v not in shown or v in cuts
    assert frame.age.max() not in shown  # the column's largest value is never a cut
    # the rules relation holds no extreme either
    stored = set(rows(con, "SELECT age_lo FROM v_dom_rules UNION SELECT age_hi FROM v_dom_rules"))
    assert (frame.age.max(),) not in stored
    # data mode publishes the class's own extremes (Mondrian; a cell's, single-dimensional)
    data_rows = published_rows(con, "v_data")
    assert (data_rows.eq_class == got.eq_class).all()
    for r in data_rows.itertuples() if recoding == "multi" else ():
        cls = data_rows[data_rows.eq_class == r.eq_class]
        assert _none(r.age_max) == _none(cls.age.max()) and _none(r.zip_min) == cls.zip.min()


def smallest_cover(lo: float, hi: float) -> tuple[int, int]:
    """Brute force: the node of AGE_ROWS with fewest leaves whose leaf range holds [lo, hi]."""
    best = None
    for depth in range(0, 5):  # a leaf is the interval of one value
        for label in {r[depth] for r in AGE_ROWS}:
            leaves = [int(r[0]) for r in AGE_ROWS if r[depth] == label]
            if min(leaves) <= lo and hi <= max(leaves) and (best is None or len(leaves) < best[1] - best[0] + 1):
                best = (min(leaves), max(leaves))
    assert best is not None
    return best


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), nulls=st.booleans(), recoding=st.sampled_from(["multi", "single"]))
def test_hierarchy_bounds_are_the_smallest_covering_interval(seed, nulls, recoding):
    con = duckdb.connect()
    con.register("frame", table(seed, nulls=nulls))
    con.execute("CREATE OR REPLACE TABLE t AS SELECT * FROM frame")
    r = sqlanon.anonymize(con, "t", qid=["age", "zip"], k=4, hierarchies={"age": AGE_ROWS},
                          published={"age": "hierarchy"},
                          algorithm=(sqlanon.TopDown() if recoding == "single" else None),
                          output=sqlanon.Output(view="v_h", key="id"))
    assert r.published == {"age": "hierarchy", "zip": "data"} and r.verification.ok
    assert str(con.execute("SELECT typeof(age_max) FROM v_h LIMIT 1").fetchone()[0]) == "BIGINT"
    # the same partition published as data: each class's own bounds (a cell's, single-dimensional)
    sqlanon.anonymize(con, "t", qid=["age", "zip"], k=4,
                      algorithm=(sqlanon.TopDown() if recoding == "single" else None),
                      output=sqlanon.Output(view="v_d", key="id"))
    pairs = con.execute("SELECT h.age_min, h.age_max, d.age_min AS lo, d.age_max AS hi FROM v_h_rules h "
                        "JOIN v_d_rules d USING (region) WHERE h.size > 0").df()
    assert len(pairs) == r.partitions
    highs = {int(x[0]) for x in AGE_ROWS}  # every node ends at a leaf
    for low, high, lo, hi in pairs.itertuples(index=False):
        if _none(hi) is None:  # a class of only NULLs
            assert _none(low) is None and _none(high) is None
        elif _none(lo) is None:  # the class holds NULLs: NULL sorts first
            assert _none(low) is None and high >= hi and high in highs
        else:
            assert (low, high) == smallest_cover(lo, hi)
    for _cls, members in published_rows(con, "v_h").groupby("eq_class"):  # every row inside
        values = members.age.dropna()
        low, high = members.iloc[0].age_min, members.iloc[0].age_max
        assert values.empty or ((_none(low) is None or low <= values.min()) and values.max() <= high)


def test_overlap_semantics_follow_the_published_bounds():
    """Imprecision's returned rows and rewrite's kept rows equal a Python overlap over the view's
    published bounds, under each mode; no row satisfying a predicate is lost."""
    con = duckdb.connect()
    frame = table(7, n=120, nulls=True)
    predicates = ["age > 20", "age <= 30", "age BETWEEN 10 AND 25", "age < 15 AND zip >= 3", "age = 29", "age IS NULL"]
    for mode in ("data", "domain"):
        release = release_of(con, frame, mode, f"v_{mode}", k=5)
        view = published_rows(con, f"v_{mode}")
        sizes = view.groupby("eq_class").size()
        measured = sqlanon.imprecision(con, release, predicates)
        for p, result in zip(predicates, measured.predicates):
            truth = con.execute(f"SELECT id FROM t WHERE {p}").df().id
            kept = con.execute(sqlanon.rewrite(f"SELECT id FROM t WHERE {p}", release)).df().id
            assert set(truth) <= set(kept)
            expected = sum(sizes[c] for c in set(view.eq_class[view.id.isin(kept)]))
            assert result.returned == expected == len(kept) and result.true == len(truth)


@pytest.mark.filterwarnings("ignore::sqlanon.PrivacyWarning")  # one new row is a class below k
def test_apply_reproduces_the_view_and_publishes_empty_regions_as_boxes():
    con = duckdb.connect()
    frame = table(3, n=80)
    con.register("frame", frame)
    for mode in ("data", "domain"):
        con.execute("CREATE OR REPLACE TABLE t AS SELECT * FROM frame")
        release = sqlanon.anonymize(con, "t", qid=["age", "zip", "cat"], k=4, hierarchies={"cat": CAT},
                                    published=mode, output=sqlanon.Output(view=f"w_{mode}", key="id"))
        assert sqlanon.metrics(con, release.view).ncp["age"] > 0
        applied = sqlanon.apply(con, f"w_{mode}", "t", view=f"a_{mode}")
        same = ("SELECT id, age_min, age_max, zip_min, zip_max, cat, eq_class FROM {} ORDER BY id")
        assert rows(con, same.format(f"a_{mode}")) == rows(con, same.format(f"w_{mode}")) and applied.unplaced == 0
        empty = con.execute(f"SELECT region, age_lo, age_hi, age_min, age_max, zip_lo, zip_hi, zip_min, zip_max "
                            f"FROM w_{mode}_rules WHERE size = 0").df()
        assert len(empty), "the hierarchy leaf 'e' occurs in no row: its node is an empty region"
        # a new row in each empty region: category 'e' (or the empty sibling node) and values of its box
        for r in empty.itertuples():
            age = (0 if _none(r.age_lo) is None else int(r.age_lo) + 1)
            zip_ = (0 if _none(r.zip_lo) is None else int(r.zip_lo) + 1)
            con.execute("CREATE OR REPLACE TABLE new AS SELECT 1 AS id, ?::BIGINT AS age, ?::BIGINT AS zip, 'e' AS cat",
                        [age, zip_])
            sqlanon.apply(con, f"w_{mode}", "new", view="new_anon", replace=True)
            got = con.execute("SELECT age_min, age_max, zip_min, zip_max, eq_class FROM new_anon").fetchone()
            if got[4] != r.region:
                continue  # 'e' falls in another empty region; that one is checked in its turn
            values = sorted(frame.age.unique())
            zips = sorted(frame.zip.unique())
            if mode == "domain":
                assert got[:4] == tuple(_none(x) for x in (r.age_min, r.age_max, r.zip_min, r.zip_max))
                assert _none(got[0]) == _none(r.age_lo) and _none(got[1]) == _none(r.age_hi)
            else:  # the training values the box spans, never the whole table's bounds by default
                lo = min(v for v in values if _none(r.age_lo) is None or v > r.age_lo)
                hi = values[-1] if _none(r.age_hi) is None else r.age_hi
                zlo = min(v for v in zips if _none(r.zip_lo) is None or v > r.zip_lo)
                zhi = zips[-1] if _none(r.zip_hi) is None else r.zip_hi
                assert got[:4] == (lo, hi, zlo, zhi)
            assert in_domain_box(age, r.age_lo, r.age_hi)


def test_manifest_records_the_choice_and_suppressed_rows_are_unbounded():
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT i AS id, i % 50 AS age, i % 6 AS zip FROM range(200) t(i)")
    release = sqlanon.anonymize(con, "t", qid=["age", "zip"], k=10, published={"age": "domain"},
                                output=sqlanon.Output(key="id"))
    from sqlanon.publish import manifest

    m = manifest.read(con, release.view)
    assert {q.name: q.bounds for q in m.qis} == {"age": "domain", "zip": "data"}
    assert rows(con, f"SELECT max(age_max) < 49, bool_or(age_max IS NULL), bool_or(age_min IS NULL), "
                     f"bool_or(age_min = 0) FROM {release.view}") == [(True, True, True, False)]
    # a row changed after the release is suppressed: fully generalized = unbounded under domain
    con.execute("UPDATE t SET age = 3 WHERE id = 0")
    assert rows(con, f"SELECT age_min, age_max, zip_min, zip_max FROM {release.view} WHERE eq_class IS NULL") == [
        (None, None, 0, 5)]
    check = sqlanon.verify(con, release.view, ["age", "zip"], 10, class_column="eq_class")
    assert check.leaked == 0


def test_text_and_dates_under_domain():
    """Ordered text and date QIs publish cut points too; NCP stays within [0, 1] (ranks of the cut
    points for text, an open end one rank beyond) and is never below the data mode's."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT i AS id, chr((97 + (i * 7) % 20)::INTEGER) AS w, "
                "DATE '2024-01-01' + ((i * 13) % 300)::INTEGER AS d "
                "FROM range(300) t(i)")
    ncp = {}
    for mode in ("data", "domain"):
        release = sqlanon.anonymize(con, "t", qid=["w", "d"], k=15, published=mode,
                                    output=sqlanon.Output(view=f"v_{mode}", key="id"))
        got = con.execute(f"SELECT t.w, t.d, w_min, w_max, d_min, d_max FROM t JOIN v_{mode} USING (id)").fetchall()
        for w, d, w_min, w_max, d_min, d_max in got:
            if mode == "domain":
                assert in_domain_box(w, w_min, w_max) and in_domain_box(d, d_min, d_max)
                assert "t" not in (w_min, w_max)  # the largest letter is never a bound
            else:
                assert w_min <= w <= w_max and d_min <= d <= d_max
        ncp[mode] = sqlanon.metrics(con, release).ncp
        assert all(0 < v <= 1 for v in ncp[mode].values())
        assert f"published: {mode}" in sqlanon.report(con, release, format="markdown") or mode == "data"
    assert ncp["domain"]["w"] >= ncp["data"]["w"] and ncp["domain"]["d"] >= ncp["data"]["d"]


def test_bad_requests_fail_clearly_before_any_work():
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT i AS id, i % 50 AS age, i % 6 AS zip, (i % 3)::VARCHAR AS c, "
                "i % 50 + 0.5 AS f FROM range(100) t(i)")
    cases = [
        (dict(published="box"), InputError, "published must be one of"),
        (dict(published="hierarchy"), InputError, "no numeric QI has one"),
        (dict(published={"nope": "domain"}), InputError, "not a QI"),
        (dict(published={"age": "hierarchy"}), InputError, "has no hierarchy"),
        (dict(published=3), InputError, "published must be"),
        (dict(published={"c": "domain"}, hierarchies={"c": {"*": ["0", "1", "2"]}}), InputError,
         "node label"),
        (dict(published="hierarchy", hierarchies={"age": AGE_ROWS[::-1]}), HierarchyError, "do not ascend"),
        (dict(published="hierarchy", hierarchies={"age": AGE_ROWS[:40]}), HierarchyError, "outside it"),
        (dict(published="hierarchy", hierarchies={"age": [["x", "*"]] + AGE_ROWS}), HierarchyError, "not an integer"),
    ]
    for kwargs, error, text in cases:
        qid = ["age", "zip", "c"] if "c" in str(kwargs) else ["age", "zip"]
        if kwargs.get("published") == "hierarchy" and "hierarchies" in kwargs:
            qid = ["age"]
        with pytest.raises(error, match=text):
            sqlanon.anonymize(con, "t", qid=qid, k=5, **request_options(**kwargs))
    assert rows(con, "SELECT count(*) FROM information_schema.tables") == [(1,)]


def test_cli_and_release_file_take_published(tmp_path):
    from sqlanon.cli import main

    db = str(tmp_path / "x.duckdb")
    con = duckdb.connect(db)
    con.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, age INTEGER, zip INTEGER)")
    con.execute("INSERT INTO t SELECT i, i % 50, i % 6 FROM range(200) t(i)")
    con.close()
    assert main(["anonymize", db, "t", "--qid", "age,zip", "--k", "10", "--published", "domain"]) == 0
    config = tmp_path / "r.toml"
    config.write_text(f'[release]\ndatabase = "{db}"\ntable = "t"\nview = "t2"\npublished = {{ age = "domain" }}\n'
                      '[[qi]]\nname = "age"\n[[qi]]\nname = "zip"\n[privacy]\nk = 10\n')
    assert main(["anonymize", "--config", str(config)]) == 0
    config.write_text(config.read_text().replace('{ age = "domain" }', '"box"'))
    assert main(["anonymize", "--config", str(config)]) != 0
    con = duckdb.connect(db)
    assert rows(con, "SELECT bool_or(age_max IS NULL), bool_or(zip_min IS NULL), max(zip_max) < 5 FROM t_anon") == [
        (True, True, True)]
    assert rows(con, "SELECT bool_or(age_max IS NULL), max(age_max) < 49, max(zip_max) FROM t2") == [(True, True, 5)]


def test_intervals_covering_matches_enumeration():
    from sqlanon.model.intervals import Intervals

    h = Hierarchy.from_rows(AGE_ROWS)
    iv = Intervals.of("age", h, integer=True)
    rng = np.random.default_rng(0)
    a = rng.integers(0, 50, 300)
    b = np.maximum(a, rng.integers(0, 50, 300))
    low, high = iv.bounds(iv.covering(a, b))
    assert [(int(x), int(y)) for x, y in zip(low, high)] == [smallest_cover(x, y) for x, y in zip(a, b)]


# -- PostgreSQL and Spark publish DuckDB's bounds ---------------------------------------------------
REQUESTS = [("domain", None), ({"age": "hierarchy"}, {"age": AGE_ROWS})]


def _plain(values: list[tuple]) -> list[tuple]:
    return sorted((tuple(float(v) if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
                         else v for v in row) for row in values), key=repr)


@pytest.mark.engines("postgres")
def test_postgres_publishes_duckdbs_bounds(con):
    from tests.support import load_frame

    frame = table(5, n=80, nulls=True)[["id", "age", "zip", "cat"]]
    types = {"id": "BIGINT", "age": "BIGINT", "zip": "BIGINT", "cat": "VARCHAR"}
    duck = duckdb.connect()
    for c in (duck, con):
        load_frame(c, "t", frame, primary_key="id", types=types)
    for published, hierarchies in REQUESTS:
        out = [sqlanon.anonymize(c, "t", qid=["age", "zip", "cat"], k=4, published=published,
                                 hierarchies={"cat": CAT, **(hierarchies or {})},
                                 output=sqlanon.Output(view="v", replace=True)) for c in (duck, con)]
        assert out[1].published == out[0].published and out[1].verification.ok
        assert _plain(rows(con, "SELECT * FROM v_rules")) == _plain(rows(duck, "SELECT * FROM v_rules"))
        for c in (duck, con):
            sqlanon.apply(c, "v", "t", view="again", replace=True)
        query = "SELECT id, age_min, age_max, zip_min, zip_max, cat, eq_class FROM {}"
        assert _plain(rows(con, query.format("again"))) == _plain(rows(duck, query.format("v"))) == \
            _plain(rows(con, query.format("v")))
        predicates = ["age > 20", "age BETWEEN 10 AND 25 AND zip < 3"]
        assert [p.returned for p in sqlanon.imprecision(con, "v", predicates).predicates] == \
            [p.returned for p in sqlanon.imprecision(duck, "v", predicates).predicates]
        assert sqlanon.metrics(con, "v").ncp == pytest.approx(sqlanon.metrics(duck, "v").ncp)


@pytest.mark.spark
def test_spark_publishes_duckdbs_bounds(spark):
    from sqlanon.engine import engine_for

    frame = table(6, n=80, nulls=True)[["id", "age", "zip", "cat"]]
    duck = duckdb.connect()

    def fetch(c, sql):
        return _plain([tuple(r) for r in engine_for(c).fetch_frame(sql).astype(object).where(
            lambda f: f.notna(), None).values.tolist()])

    for c in (duck, spark):
        engine_for(c).create_from_frame("t", frame, replace=True)
    # one release (Spark is slow to start a statement): both modes on two QIs
    for published, hierarchies in [({"age": "hierarchy", "zip": "domain"}, {"age": AGE_ROWS})]:
        out = [sqlanon.anonymize(c, "t", qid=["age", "zip", "cat"], k=4, published=published,
                                 hierarchies={"cat": CAT, **(hierarchies or {})},
                                 output=sqlanon.Output(view="v", replace=True, key="id"))
               for c in (duck, spark)]
        assert out[1].published == out[0].published and out[1].verification.ok
        from sqlglot import exp

        assert fetch(spark, exp.select("*").from_("v_rules")) == fetch(duck, exp.select("*").from_("v_rules"))
        assert fetch(spark, exp.select("*").from_("v")) == fetch(duck, exp.select("*").from_("v"))


def test_lookup_groups_pack_consecutive_qis_under_the_limit():
    from sqlanon.publish.rules import lookup_groups

    rows = {0: 5, 1: 3, 2: 9, 3: 1, 4: 1, 5: 20}
    assert lookup_groups(rows, None) == [[0, 1, 2, 3, 4, 5]]
    assert lookup_groups(rows, 8) == [[0, 1], [2], [3, 4], [5]]  # 9 and 20 alone, over the limit
    assert lookup_groups(rows, 1) == [[0], [1], [2], [3], [4], [5]]
    assert lookup_groups(rows, 2) == [[0], [1], [2], [3, 4], [5]]
    assert lookup_groups({}, 3) == []
    # greedy and exhaustive: every QI once, in order; no group could take its successor's first QI
    rng = np.random.default_rng(3)
    for _ in range(200):
        sizes = {i: int(n) for i, n in enumerate(rng.integers(0, 12, rng.integers(1, 9)))}
        most = int(rng.integers(1, 30))
        groups = lookup_groups(sizes, most)
        assert [i for grp in groups for i in grp] == list(sizes)
        for grp, after in zip(groups, groups[1:] + [None]):
            total = sum(sizes[i] for i in grp)
            assert len(grp) == 1 or total <= most
            if after is not None:
                assert total + sizes[after[0]] > most


@pytest.mark.parametrize("most", [1, 40])
def test_rules_are_the_same_however_the_lookups_are_grouped(monkeypatch, most):
    """DuckDB looks the bounds up a few QIs per statement (``LOOKUP_ROWS``); one QI per
    statement, a few, or all at once give the same rules table and the same view."""
    from sqlanon.publish import rules as rules_module

    con = duckdb.connect()
    rng = np.random.default_rng(11)
    n = 400
    con.register("src", pd.DataFrame({
        "age": rng.integers(0, 90, n), "zip": rng.integers(53000, 53999, n).astype(str),
        "day": pd.to_datetime("2020-01-01") + pd.to_timedelta(rng.integers(0, 900, n), unit="D"),
        "score": np.round(rng.normal(0, 10, n), 2), "x": np.arange(n)}))
    con.execute("CREATE TABLE t AS SELECT * FROM src")
    qid = ["age", "zip", "day", "score"]
    sqlanon.anonymize(con, "t", qid=qid, k=5, output=sqlanon.Output(view="whole"))
    expected = con.execute("SELECT * FROM whole_rules ORDER BY ALL").fetchall()
    view = con.execute("SELECT * FROM whole ORDER BY x").fetchall()
    monkeypatch.setattr(rules_module, "LOOKUP_ROWS", most)
    statements: list[str] = []
    real = rules_module.lookup_groups
    monkeypatch.setattr(rules_module, "lookup_groups", lambda r, m: statements.append(real(r, m)) or statements[-1])
    sqlanon.anonymize(con, "t", qid=qid, k=5, output=sqlanon.Output(view="grouped"))
    assert len(statements[0]) > 1  # the lookups really were split
    assert con.execute("SELECT * FROM grouped_rules ORDER BY ALL").fetchall() == expected
    assert con.execute("SELECT * FROM grouped ORDER BY x").fetchall() == view


@pytest.mark.parametrize("keyed", [True, False])
def test_the_publication_lets_go_of_the_leaves_before_its_longest_statements(monkeypatch, keyed):
    """The regions (0.26 GiB at 100M rows) are not held while the snapshot or the row map is
    written: nothing references them once the rules and the row map query are made."""
    import gc
    import weakref

    from sqlanon.publish import pipeline

    seen: dict[str, object] = {}
    real_rules, real_publish = pipeline.create_rules, pipeline.publish

    def create_rules(engine, spec, domains, regions):
        seen["leaves"] = weakref.ref(regions)
        seen["cmin"] = weakref.ref(regions.cmin)
        return real_rules(engine, spec, domains, regions)

    def publish(*args, **kwargs):
        gc.collect()
        seen["alive"] = (seen["leaves"]() is not None, seen["cmin"]() is not None)
        return real_publish(*args, **kwargs)

    monkeypatch.setattr(pipeline, "create_rules", create_rules)
    monkeypatch.setattr(pipeline, "publish", publish)
    con = duckdb.connect()
    key = " PRIMARY KEY" if keyed else ""
    con.execute(f"CREATE TABLE t (id INTEGER{key}, a INTEGER, b INTEGER)")
    con.execute("INSERT INTO t SELECT i, i % 97, (i * 31) % 101 FROM range(3000) r(i)")
    release = sqlanon.anonymize(con, "t", qid=["a", "b"], k=10)
    assert seen["alive"] == (False, False)
    assert release.partitions > 1 and release.regions >= release.partitions
    assert release.materialized is not keyed


def test_codes_held_for_a_phase_are_int32_while_they_fit():
    """``Domain.code_type``: int32 for codes, -1 and node ids below 2^31, else int64; the
    batches' leaf tables and the rules' code columns use it."""
    from sqlanon.model.domain import Domain
    from sqlanon.model.qi import QI

    qi = QI("a", "numeric", "BIGINT")
    assert Domain(qi, 1000, "t", None).code_type is np.int32
    assert Domain(qi, 2**31 - 1, "t", None).code_type is np.int32
    assert Domain(qi, 2**31, "t", None).code_type is np.int64
    h = Hierarchy.from_rows([["x", "*"], ["y", "*"]])
    assert Domain(QI("h", "hierarchy", "VARCHAR", hierarchy=h), 2, "t", None).code_type is np.int32
