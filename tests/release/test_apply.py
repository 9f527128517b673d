"""sqlanon.apply: recoding other tables with a release's stored rules.

* On the training table the output equals the release's view (every column, every row,
  ``eq_class`` included): random tables (integers, floats, dates, timestamps, text, a hierarchy,
  NULLs; several k) and Adult with hierarchies.
* On new rows -- inside and outside the training domain, between training values, NULLs, unseen
  categories, leaves no training row had -- every row is checked against a brute-force oracle
  that tests the rules' boxes in plain Python: the one region whose box holds the row (for an
  unknown hierarchical value, the one region whose box holds the other values, if only one
  does), or the documented fully generalized output; row count preserved, no raw value.
* The partition tree against brute force on random guillotine tilings; refusals of boxes that
  overlap, are not a guillotine partition, or leave a gap.
* Reloading by view name (also from a reopened database file), files as input, ``regions`` on an
  applied table, and every error before anything is written.
* What it guarantees: the output's classes, smallest class and classes below the release's k
  against a brute-force count (with a ``PrivacyWarning`` exactly when some class is below k);
  ``enforce=True`` against a brute-force oracle on random releases with and without diversity
  constraints: exactly the classes below k or breaking a constraint are suppressed, fully
  generalized, and every class left holds at least k rows.
"""

from __future__ import annotations

import datetime as dt
import math
import warnings

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon import datasets
from sqlanon.model.hierarchy import Hierarchy
from sqlanon.publish import manifest
from sqlanon.release.apply import Applied, apply, guillotine
from tests.support import (
    ADULT_COLUMNS,
    ADULT_CSV,
    ADULT_HIERARCHIES,
    describe,
    is_postgres,
    load_frame,
    objects,
    request_options,
    rows,
    run,
    temp_objects,
)

pytestmark = pytest.mark.engines("duckdb", "postgres")

J = {"*": {"P": {"P1": ["a", "b"], "P2": ["c"]}, "Q": ["d", "e", "f"]}}
ORDERED = ["i", "f", "d", "ts", "s"]
QID = ORDERED + ["j"]
TEXT = ["kiwi", "apple", "fig", "pear", "Plum", "date"]


# -- data ---------------------------------------------------------------------------------------
def _frame(rng: np.random.Generator, n: int, nulls: dict[str, bool], start: int = 0, new: bool = False) -> pd.DataFrame:
    """Training rows, or (``new``) rows reaching beyond the training domain: values between and
    outside the training values, NULLs anywhere, unseen categories and text."""
    def maybe_null(values: np.ndarray, column: str) -> np.ndarray:
        p = 0.1 if new else (0.15 if nulls[column] else 0.0)
        out = values.astype(object)
        out[rng.random(n) < p] = None
        return out

    spread = 2 if new else 1
    i = rng.integers(-20 * spread, 40 * spread, n).astype(float)
    if new:  # between training integers too: the new column is DOUBLE
        i = i + rng.choice([0.0, 0.5], n)
    f = np.round(rng.normal(0, 10 * spread, n), 2)
    days = rng.integers(-30 * spread, 400 * spread, n)
    ms = rng.integers(0, 10**9 * spread, n)
    words = TEXT + (["0", "zz", "fig2", "Apple", ""] if new else [])
    leaves = list("abcdef") + (["zz", "P", "*"] if new else [])
    return pd.DataFrame({
        "id": np.arange(start, start + n),
        "i": maybe_null(i, "i"),
        "f": maybe_null(f, "f"),
        "d": maybe_null(np.array([dt.date(2021, 1, 1) + dt.timedelta(days=int(x)) for x in days]), "d"),
        "ts": maybe_null(np.array([dt.datetime(2021, 6, 1) + dt.timedelta(milliseconds=int(x)) for x in ms]), "ts"),
        "s": maybe_null(rng.choice(words, n), "s"),
        "j": maybe_null(rng.choice(leaves, n), "j"),
        "y": rng.choice(["yes", "no"], n),
    })


def _load(con, name: str, frame: pd.DataFrame, i_type: str = "INTEGER") -> None:
    frame = frame.copy()
    if i_type == "INTEGER":  # whole numbers (held as floats beside NULLs)
        frame["i"] = pd.Series([None if v is None else int(v) for v in frame["i"]], index=frame.index, dtype=object)
    load_frame(con, name, frame, types={"id": "BIGINT", "i": i_type, "f": "DOUBLE", "d": "DATE", "ts": "TIMESTAMP",
                                        "s": "VARCHAR", "j": "VARCHAR", "y": "VARCHAR"})


def _release(con, n: int, seed: int, k: int, **kwargs) -> sqlanon.Release:
    rng = np.random.default_rng(seed)
    nulls = {c: bool(rng.random() < 0.5) for c in QID}
    _load(con, "t", _frame(rng, n, nulls))
    return sqlanon.anonymize(con, "t", qid=QID, k=min(k, n), hierarchies={"j": J}, **request_options(**kwargs))


# -- the oracle ---------------------------------------------------------------------------------
def _rows(con, sql: str) -> list[dict]:
    cur = con.execute(sql)
    names = [getattr(c, "name", None) or c[0] for c in cur.description]  # psycopg's Column, DuckDB's tuple
    return [dict(zip(names, r)) for r in cur.fetchall()]


def _count(con, sql: str) -> int:
    return rows(con, f"SELECT count(*) FROM ({sql}) AS q")[0][0]


def _exists(con, name: str) -> bool:
    return any(o[2] == name for o in objects(con))


def _comment(con, table: str) -> str:
    """The comment on ``table`` (where a release keeps its manifest)."""
    if is_postgres(con):
        return rows(con, "SELECT obj_description(?::regclass, 'pg_class')", ['"' + table.replace('"', '""') + '"'])[0][0]
    return rows(con, "SELECT comment FROM duckdb_tables() WHERE table_name = ?", [table])[0][0]


def _load_adult_keyed(con, key: str, n: int | None = None) -> dict[str, str]:
    """Adult (as the ``adult`` fixture loads it; its first ``n`` rows if given) with a first
    column ``key`` numbering its rows from 0, in file order."""
    data = pd.read_csv(ADULT_CSV, sep=";", quoting=3, keep_default_na=False, nrows=n,
                       dtype={c: ("int64" if c == "age" else str) for c in ADULT_COLUMNS})[list(ADULT_COLUMNS)]
    data.insert(0, key, np.arange(len(data), dtype=np.int64))
    load_frame(con, "adult", data, types={c: ("BIGINT" if c in ("age", key) else "VARCHAR") for c in data.columns})
    return dict(ADULT_HIERARCHIES)


def _contains(rule: dict, q: str, v) -> bool:
    if v is None:
        return bool(rule[f"{q}_null"])
    lo, hi = rule[f"{q}_lo"], rule[f"{q}_hi"]
    return (lo is None or v > lo) and (hi is None or v <= hi)


def _expected(con, view: str, training: str, relation: str) -> list[tuple]:
    """The recoded rows of ``relation`` (ordered by id) from the rules' boxes, in plain Python."""
    rules = _rows(con, f'SELECT * FROM "{view}_rules"')
    train = _rows(con, f'SELECT * FROM "{training}"')
    h = Hierarchy.from_dict(J)
    if any(r["j"] is None for r in train):
        h = h.with_null_leaf()
    full = {}
    for q in ORDERED:
        present = [r[q] for r in train if r[q] is not None]
        full[q] = (None if len(present) < len(train) else min(present), max(present))
    out = []
    for row in _rows(con, f'SELECT * FROM "{relation}" ORDER BY id'):
        code = int(h.code_of([row["j"]])[0])
        hits = [r for r in rules if all(_contains(r, q, row[q]) for q in ORDERED)
                and (code < 0 or h.leaf_lo[r["j_node"]] <= code <= h.leaf_hi[r["j_node"]])]
        assert code < 0 or len(hits) == 1, (row, hits)  # the boxes tile the domain
        # j NULL without a NULL leaf, or no leaf: placed only when one box holds the other
        # values, whatever j is (that box spans all of j)
        rule = hits[0] if len(hits) == 1 else None
        assert rule is None or code >= 0 or (h.leaf_lo[rule["j_node"]], h.leaf_hi[rule["j_node"]]) == (0, h.n_leaves - 1)
        bounds = {q: (rule[f"{q}_min"], rule[f"{q}_max"]) if rule and rule["size"] > 0
                  else _box(rule, q, train, full[q]) if rule else full[q] for q in ORDERED}
        out.append((row["id"], *[v for q in ORDERED for v in bounds[q]],
                    rule["j"] if rule else "*", row["y"], rule["region"] if rule else None))
    return out


def _one_region(con, view: str, relation: str, key: str) -> dict:
    """For each row of ``relation`` with a hierarchical QI that is NULL without a NULL leaf or no
    leaf: the region of release ``view`` whose box alone holds its other values (then it spans the
    unknown QIs' whole domains), None when several do -- by brute force over the rules' boxes."""
    m = manifest.read(con, view)
    records = _rows(con, f'SELECT * FROM "{m.rules}"')  # NULL as None (pandas would make NaN of it)
    rules = pd.DataFrame(records)
    out = {}
    for row in _rows(con, f'SELECT * FROM "{relation}"'):
        codes = {q: int(h.code_of([row[q]])[0]) for q, h in m.hierarchies.items()}
        if min(codes.values()) >= 0:
            continue
        holds = np.ones(len(rules), bool)
        for q in m.qis:
            if q.kind == "hierarchy":
                h, code, node = m.hierarchies[q.name], codes[q.name], rules[f"{q.name}_node"].to_numpy(int)
                holds &= code < 0 or (h.leaf_lo[node] <= code) & (code <= h.leaf_hi[node])
            else:
                holds &= [_contains(r, q.name, row[q.name]) for r in records]
        one = np.flatnonzero(holds)
        out[row[key]] = int(rules[m.region_column][one[0]]) if len(one) == 1 else None
        if len(one) == 1:
            for q in m.hierarchies:  # the one box spans the unknown QIs' whole domain
                h, node = m.hierarchies[q], int(rules[f"{q}_node"][one[0]])
                assert codes[q] >= 0 or (h.leaf_lo[node], h.leaf_hi[node]) == (0, h.n_leaves - 1)
    return out


def _box(rule: dict, q: str, train: list[dict], full: tuple) -> tuple:
    """What an empty region publishes for ordered QI ``q`` (issue 19): its box in the training
    domain -- the smallest training value above ``q_lo`` (NULL when the box admits NULLs of a
    column that has them) and ``q_hi`` (the largest value when open) -- or, for a box of only
    NULLs (stored NULL, NULL), the fully generalized bounds."""
    lo, hi = rule[f"{q}_lo"], rule[f"{q}_hi"]
    if lo is not None and lo == hi:
        return full
    present = [r[q] for r in train if r[q] is not None]
    has_null = len(present) < len(train)
    low = None if has_null and rule[f"{q}_null"] else min(v for v in present if lo is None or v > lo)
    return low, (max(present) if hi is None else hi)


def _same_as_view(con, view: str, applied: str) -> None:
    assert describe(con, view) == describe(con, applied)
    for a, b in ((view, applied), (applied, view)):
        assert _count(con, f'SELECT * FROM "{a}" EXCEPT ALL SELECT * FROM "{b}"') == 0
    assert _count(con, f'SELECT * FROM "{applied}"') == _count(con, f'SELECT * FROM "{view}"')


def _check_new_rows(con, release, seed: int, m: int = 150) -> Applied:
    rng = np.random.default_rng(seed + 1)
    _load(con, "new", _frame(rng, m, {}, start=10_000, new=True), i_type="DOUBLE")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        applied = apply(con, release, "new")
    assert (applied.view, applied.rules, applied.table, applied.rows) == ("new_anon", release.rules, "new", m)
    got = con.execute("SELECT * FROM new_anon ORDER BY id").fetchall()
    expected = _expected(con, release.view, "t", "new")
    assert got == expected
    assert applied.unplaced == sum(r[-1] is None for r in expected) and applied.placed == m - applied.unplaced
    # the classes it reports, counted by hand: rows per eq_class, NULL left out
    sizes = pd.Series([r[-1] for r in expected if r[-1] is not None], dtype=object).value_counts()
    assert (applied.k, applied.classes) == (release.k, len(sizes))
    assert applied.k_achieved == (int(sizes.min()) if len(sizes) else 0)
    assert applied.below_k == int((sizes < release.k).sum())
    assert [w.category for w in caught] == ([sqlanon.PrivacyWarning] if applied.below_k else [])
    # nothing raw: published bounds are rules' bounds or the full ones, labels node labels
    raw = con.execute("SELECT i FROM new WHERE i <> floor(i)").fetchall()
    assert raw and _count(con, "SELECT * FROM new_anon WHERE i_min <> floor(i_min) OR i_max <> floor(i_max)") == 0
    assert _count(con, "SELECT * FROM new_anon WHERE j = 'zz'") == 0
    return applied


# -- tests --------------------------------------------------------------------------------------
@settings(max_examples=25, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow],
          phases=[Phase.explicit, Phase.generate])  # no shrinking: each example runs a release
@given(st.integers(10, 120), st.integers(0, 2**32 - 1), st.sampled_from([1, 2, 3, 5, 10]))
# engine-independent algorithm; DuckDB vs PostgreSQL identity is tests/e2e/test_engines.py
def test_random_tables(n, seed, k):
    con = duckdb.connect()
    try:
        release = _release(con, n, seed, k)
        applied = apply(con, release, "t", view="again")
        assert (applied.rows, applied.placed, applied.unplaced) == (n, n, 0)
        _same_as_view(con, release.view, "again")
        assert con.execute("SELECT * FROM again ORDER BY id").fetchall() == _expected(con, release.view, "t", "t")
        _check_new_rows(con, release, seed)
        assert temp_objects(con) == []
    finally:
        con.close()


def test_workload_release_with_empty_regions(con):
    # InfoGain leaves empty hierarchy regions; a leaf no training row has falls in one
    release = _release(con, 300, 11, 4, target="y")
    assert release.regions > release.partitions  # empty regions exist
    _same_as_view(con, release.view, apply(con, release, "t", view="again").view)
    applied = _check_new_rows(con, release, 11, m=400)
    assert applied.unplaced > 0
    empty = con.execute("SELECT count(*) FROM new_anon a JOIN t_anon_rules r ON r.region = a.eq_class "
                        "WHERE r.size = 0").fetchall()[0][0]
    assert empty > 0


@pytest.mark.filterwarnings("ignore::sqlanon.errors.PrivacyWarning")  # new rows: below k
def test_adult_with_hierarchies(con):
    # PostgreSQL: the first 10,000 rows (the whole of Adult costs ~15 s there; same checks, scaled)
    n = 10_000 if is_postgres(con) else 30_162
    hierarchies = _load_adult_keyed(con, "rid", n if is_postgres(con) else None)  # a key: the release keeps a row map
    assert rows(con, "SELECT count(*), min(age), max(age) FROM adult")[0] == (n, 17, 90)
    qid = ["age", "sex", "race", "marital-status", "education", "native-country", "workclass", "occupation"]
    release = sqlanon.anonymize(con, "adult", qid=qid, k=10, target="salary-class",
                                hierarchies={c: hierarchies[c] for c in qid if c != "age"},
                                output=sqlanon.Output(key="rid"))
    applied = apply(con, release, "adult", view="adult_again")
    assert (applied.rows, applied.placed, applied.unplaced) == (n, n, 0) and applied.depth > 0
    _same_as_view(con, "adult_anon", "adult_again")
    # a test table: unseen categories, NULLs, ages out of range, another column order
    con.execute("""CREATE TABLE adult_test AS SELECT "salary-class", occupation, age, sex, race, "marital-status",
                   education, "native-country", workclass, rid FROM adult""")
    con.execute("UPDATE adult_test SET occupation = 'Astronaut' WHERE rid % 50 = 0")
    con.execute("UPDATE adult_test SET education = NULL WHERE rid % 70 = 1")
    con.execute("UPDATE adult_test SET age = NULL WHERE rid % 30 = 2")
    con.execute("UPDATE adult_test SET age = age + 100 WHERE rid % 40 = 3")
    test = apply(con, "adult_anon", "adult_test")
    # a row with an unseen occupation or a NULL education is placed when one region's box holds
    # its other values (brute force), else fully generalized
    unknown = _one_region(con, "adult_anon", "adult_test", "rid")
    assert len(unknown) == con.execute(
        "SELECT count(*) FROM adult_test WHERE occupation = 'Astronaut' OR education IS NULL").fetchall()[0][0]
    assert test.rows == n and test.unplaced == sum(r is None for r in unknown.values())
    placed = dict(rows(con, "SELECT rid, eq_class FROM adult_test_anon"))
    assert {rid: placed[rid] for rid in unknown} == unknown
    columns = [r[0] for r in describe(con, "adult_test_anon")]
    assert columns[:4] == ["salary-class", "occupation", "age_min", "age_max"] and columns[-2:] == ["rid", "eq_class"]
    # placed rows: the region of the training row with the same QI values (same region, same columns)
    same = con.execute("""
        SELECT count(*), count(*) FILTER (WHERE a.eq_class IS DISTINCT FROM m.region)
        FROM adult_test_anon a JOIN adult_test t ON t.rid = a.rid JOIN adult o ON o.rid = a.rid
        JOIN adult_anon_rowmap m ON m.key0 = a.rid
        WHERE a.eq_class IS NOT NULL AND t.age = o.age""").fetchall()[0]
    assert same[0] > 25_000 * n / 30_162 and same[1] == 0
    # unplaced rows: fully generalized
    full = con.execute("""SELECT DISTINCT age_min, age_max, sex, race, "marital-status", education, "native-country",
                          workclass, occupation FROM adult_test_anon WHERE eq_class IS NULL""").fetchall()
    assert full == [(17, 90, "*", "*", "*", "*", "*", "*", "*")]
    # ages beyond the training domain fall in the regions open at the top
    beyond = con.execute("SELECT count(*), count(*) FILTER (WHERE r.age_hi IS NOT NULL) FROM adult_test_anon a "
                         "JOIN adult_test t ON t.rid = a.rid JOIN adult_anon_rules r ON r.region = a.eq_class "
                         "WHERE t.age > 100").fetchall()[0]
    assert beyond[0] > 500 * n / 30_162 and beyond[1] == 0


def test_nulls_in_a_hierarchy_without_a_null_leaf(con):
    i = np.arange(120)
    load_frame(con, "t", pd.DataFrame({"id": i, "a": i % 50, "j": np.array(list("abcdef"))[i % 6]}))
    release = sqlanon.anonymize(con, "t", qid=["a", "j"], k=5, hierarchies={"j": J})
    con.execute("CREATE TABLE u AS SELECT * FROM t")
    con.execute("INSERT INTO u VALUES (1000, NULL, NULL), (1001, 7, NULL), (1002, NULL, 'a'), (1003, 99, 'zz')")
    applied = apply(con, release, "u")
    assert (applied.rows, applied.unplaced) == (124, 3)
    rows = con.execute("SELECT id, a_min, a_max, j, eq_class FROM u_anon WHERE id >= 1000 ORDER BY id").fetchall()
    assert rows[0] == (1000, 0, 49, "*", None) and rows[1] == (1001, 0, 49, "*", None)
    assert rows[3] == (1003, 0, 49, "*", None)
    # NULL in an ordered QI sorts first: the region holding the smallest values
    first = con.execute("SELECT eq_class FROM t_anon WHERE id = 0").fetchall()[0][0]  # a = 0, j = 'a'
    assert rows[2][4] == first


def _spanning_release(con) -> sqlanon.Release:
    """Four regions of ``a`` (0-6, 7-14, 15-21, 22-29), each spanning the whole of ``j``."""
    i = np.arange(60)
    load_frame(con, "t", pd.DataFrame({"id": i, "a": i % 30, "j": np.array(list("abcdef"))[i % 6],
                                       "y": np.where(i % 2 == 0, "yes", "no")}))
    release = sqlanon.anonymize(con, "t", qid=["a", "j"], k=12, hierarchies={"j": J},
                                privacy=[sqlanon.EntropyLDiversity("y", 1.9)])
    assert rows(con, f'SELECT a_lo, a_hi, j FROM "{release.rules}" ORDER BY region') == [
        (None, 6, "*"), (6, 14, "*"), (14, 21, "*"), (21, None, "*")]
    return release


def _new_rows(con, groups: list[tuple[int, int, str | None, str]]) -> None:
    """Table ``new``: ``count`` rows of ``(a, j, y)`` per group, ids from 0."""
    data = [(a, j, y) for count, a, j, y in groups for _ in range(count)]
    load_frame(con, "new", pd.DataFrame({"id": np.arange(len(data)), "a": [d[0] for d in data],
                                         "j": pd.Series([d[1] for d in data], dtype=object),
                                         "y": [d[2] for d in data]}), types={"j": "VARCHAR"})


@pytest.mark.filterwarnings("ignore::sqlanon.errors.PrivacyWarning")  # new rows: below k
def test_an_unknown_hierarchical_value_is_placed_where_its_region_spans_the_qi(con):
    """A row whose j is NULL (no NULL leaf) or no leaf goes to the region its other values
    reach when that region spans the whole of j: published as its other rows are, j at the root
    (it was fully generalized, eq_class NULL); where a cut on j decides, it still is."""
    release = _spanning_release(con)
    _new_rows(con, [(2, 3, "a", "yes"), (2, 3, None, "no"), (1, 10, "zz", "yes"), (1, 25, "P", "no")])
    applied = apply(con, release, "new", view="out")
    assert (applied.rows, applied.placed, applied.unplaced) == (6, 6, 0)
    assert rows(con, "SELECT id, a_min, a_max, j, eq_class FROM out ORDER BY id") == [
        (0, 0, 6, "*", 0), (1, 0, 6, "*", 0), (2, 0, 6, "*", 0), (3, 0, 6, "*", 0), (4, 7, 14, "*", 1),
        (5, 22, 29, "*", 3)]
    assert (applied.classes, applied.k_achieved, applied.below_k) == (3, 1, 3)  # the rows count in their class
    # a release that cuts j where it can: not where a slab holds fewer than k rows of "d" (Q)
    i = np.arange(120)
    load_frame(con, "cut", pd.DataFrame({"id": i, "a": i % 50, "j": np.where(i % 10 == 0, "d", "a")}))
    cut = sqlanon.anonymize(con, "cut", qid=["a", "j"], k=8, hierarchies={"j": J}, output="cut_anon")
    con.execute("CREATE TABLE u AS SELECT id, a, CAST(NULL AS VARCHAR) AS j FROM cut WHERE id < 60")
    expected = _one_region(con, "cut_anon", "u", "id")
    assert 0 < sum(r is None for r in expected.values()) < 60  # both cases occur
    applied = apply(con, cut, "u")
    assert dict(rows(con, "SELECT id, eq_class FROM u_anon")) == expected
    assert applied.unplaced == sum(r is None for r in expected.values())


@pytest.mark.engines("duckdb")  # the whole of UCI Adult's test file, checked row by row in Python
@pytest.mark.filterwarnings("ignore::sqlanon.errors.PrivacyWarning")  # new rows: below k
def test_uci_adult_test_rows_with_a_missing_category_are_placed(con):
    """UCI Adult's test file has 1,221 rows with a missing (NULL) workclass, occupation or
    native-country, which the complete training rows never had: every one of them was fully
    generalized. Now those whose other values reach a region spanning the missing QIs are
    placed -- exactly those (brute force) -- and fewer are suppressed."""
    hierarchies = datasets.load_adult_uci(con, "train")
    datasets.load_adult_uci(con, "test", split="test", complete=False)
    qid = ["age", "workclass", "education", "marital-status", "occupation", "race", "sex", "native-country"]
    release = sqlanon.anonymize(con, "train", qid=qid, k=50, target="salary-class",
                                hierarchies={q: hierarchies[q] for q in qid if q != "age"}, output="train_anon")
    run(con, "CREATE TABLE test_rows AS SELECT row_number() OVER () AS rid, * FROM test")
    missing = rows(con, 'SELECT count(*) FROM test_rows WHERE workclass IS NULL OR occupation IS NULL '
                        'OR "native-country" IS NULL')[0][0]
    assert missing == 1_221
    applied = apply(con, release, "test_rows")
    expected = _one_region(con, "train_anon", "test_rows", "rid")
    assert len(expected) == missing
    assert applied.unplaced == sum(r is None for r in expected.values()) < missing  # was: == missing
    placed = dict(rows(con, "SELECT rid, eq_class FROM test_rows_anon"))
    assert {rid: placed[rid] for rid in expected} == expected


def test_enforce_judges_rows_placed_at_the_root_apart(con):
    """With enforce, a class that meets k and the release's constraints with its rows placed
    at the root keeps them; one that fails with them but meets everything without them loses
    only them; one that fails either way is suppressed whole (its rows placed at the root too)."""
    release = _spanning_release(con)  # k = 12, entropy l-diversity l = 1.9 on y
    _new_rows(con, [
        (6, 3, "a", "yes"), (6, 3, "b", "no"), (10, 3, None, "yes"),  # region 0: 16:6 fails, 6:6 holds
        (4, 10, "a", "yes"), (4, 10, "d", "no"), (3, 10, "zz", "yes"), (3, 10, None, "no"),  # region 1: 7:7 holds
        (12, 17, "c", "yes"), (2, 17, None, "no"),  # region 2: fails either way
        (1, 25, "e", "no"),  # region 3: one row, below k
    ])
    applied = apply(con, release, "new", view="out", enforce=True)
    got = rows(con, "SELECT eq_class, count(*) FROM out GROUP BY eq_class ORDER BY eq_class NULLS LAST")
    assert got == [(0, 12), (1, 14), (None, 10 + 14 + 1)]
    assert (applied.placed, applied.unplaced) == (51, 0)  # placed by the rules, before enforce
    assert (applied.suppressed_classes, applied.suppressed_rows) == (2, 25)
    assert (applied.classes, applied.k_achieved, applied.below_k) == (2, 12, 0)
    suppressed = rows(con, "SELECT DISTINCT a_min, a_max, j FROM out WHERE eq_class IS NULL")
    assert suppressed == [(0, 29, "*")]
    run(con, "CREATE VIEW kept AS SELECT * FROM out WHERE eq_class IS NOT NULL")
    check = sqlanon.verify(con, "kept", ["a", "j"], 12, class_column="eq_class",
                           constraints=[sqlanon.EntropyLDiversity("y", 1.9)])
    assert check.ok and check.rows == 26


@pytest.mark.filterwarnings("ignore::sqlanon.errors.PrivacyWarning")  # new rows: below k
def test_nan_and_infinities_sort_last(con):
    i = np.arange(200)
    load_frame(con, "t", pd.DataFrame({"id": i, "f": (i % 40) * 0.5 - 3}), types={"f": "DECIMAL(21, 1)"})
    release = sqlanon.anonymize(con, "t", qid=["f"], k=10)
    load_frame(con, "u", pd.DataFrame({"id": [1, 2, 3, 4, 5], "f": [0.0] * 5}), types={"f": "DOUBLE"})
    for id_, f in ((1, math.nan), (2, math.inf), (3, -math.inf), (4, 1e300), (5, 0.25)):  # NaN: not NULL
        run(con, "UPDATE u SET f = ? WHERE id = ?", [f, id_])
    apply(con, release, "u")
    got = dict(con.execute("SELECT id, eq_class FROM u_anon").fetchall())
    top = con.execute("SELECT region FROM t_anon_rules WHERE f_hi IS NULL").fetchall()  # open at the top
    bottom = con.execute("SELECT region FROM t_anon_rules WHERE f_lo IS NULL").fetchall()
    assert len(top) == len(bottom) == 1
    assert got[1] == got[2] == got[4] == top[0][0] and got[3] == bottom[0][0]
    box = rows(con, "SELECT f_lo, f_hi FROM t_anon_rules WHERE region = ?", [got[5]])[0]
    assert box[0] < 0.25 <= box[1]


def test_reload_by_name_from_a_reopened_file(engine_name, tmp_path, request):
    """The release is read back from the database alone: by a new connection (to a reopened
    DuckDB file; to the same PostgreSQL database and schema, after the first one committed)."""
    if engine_name == "duckdb":
        path = str(tmp_path / "db.duckdb")
        con = duckdb.connect(path)
        release = _release(con, 80, 5, 3)
        con.close()
        con = duckdb.connect(path)
    else:
        import psycopg

        first = request.getfixturevalue("pg_con")
        release = _release(first, 80, 5, 3)
        schema = rows(first, "SELECT current_schema()")[0][0]
        first.commit()
        first.close()
        con = psycopg.connect(request.getfixturevalue("pg_database"), options=f"-c search_path={schema}")
    try:
        for name in ("t_anon", "t_anon_rules"):
            applied = apply(con, name, "t", view="again", replace=True)
            assert applied.rules == release.rules and applied.view == "again"
            _same_as_view(con, "t_anon", "again")
    finally:
        con.close()


@pytest.mark.filterwarnings("ignore::sqlanon.errors.PrivacyWarning")  # new rows: below k
def test_other_relations_and_transactions(con):
    release = _release(con, 90, 9, 3)
    _load(con, "new", _frame(np.random.default_rng(3), 60, {}, start=500, new=True), i_type="DOUBLE")
    apply(con, release, "new", view="from_table")
    con.execute("CREATE VIEW new_view AS SELECT * FROM new")
    applied = apply(con, release, "new_view")
    assert applied.rows == 60 and applied.view == "new_view_anon"
    assert _count(con, "SELECT * FROM new_view_anon EXCEPT ALL SELECT * FROM from_table") == 0
    assert _count(con, "SELECT * FROM from_table EXCEPT ALL SELECT * FROM new_view_anon") == 0
    # inside the caller's transaction: gone on rollback
    if is_postgres(con):
        con.commit()  # keep what was made so far; the next statement opens the caller's transaction
        run(con, "SELECT 1")
    else:
        con.execute("BEGIN")
    apply(con, release, "new", view="tx")
    assert _exists(con, "tx")
    con.rollback() if is_postgres(con) else con.execute("ROLLBACK")
    assert not _exists(con, "tx") and _exists(con, "new_view_anon")


@pytest.mark.engines("duckdb")  # data files read in place: DuckDB's alone
@pytest.mark.filterwarnings("ignore::sqlanon.errors.PrivacyWarning")  # new rows: below k
def test_files_as_input(con, tmp_path):
    release = _release(con, 90, 9, 3)
    _load(con, "new", _frame(np.random.default_rng(3), 60, {}, start=500, new=True), i_type="DOUBLE")
    apply(con, release, "new", view="from_table")
    parquet = str(tmp_path / "fresh.parquet")
    con.execute(f"COPY new TO '{parquet}' (FORMAT parquet)")
    applied = apply(con, release, parquet)
    assert applied.view == "fresh_anon" and applied.table == parquet and applied.rows == 60
    assert con.execute("SELECT * FROM fresh_anon EXCEPT ALL SELECT * FROM from_table").fetchall() == []


@pytest.mark.engines("postgres")
def test_files_as_input_are_refused_on_postgres(con, tmp_path):
    release = _release(con, 90, 9, 3)
    parquet = tmp_path / "fresh.parquet"
    parquet.write_bytes(b"PAR1")  # a file where a table name is expected: refused, never read
    before = objects(con)
    for path in (str(parquet), str(tmp_path / "*.csv")):
        with pytest.raises(sqlanon.InputError, match="only the DuckDB engine reads in place; on postgres"):
            apply(con, release, path)
    assert objects(con) == before and temp_objects(con) == []


def test_regions_of_an_applied_table(con):
    release = _release(con, 100, 21, 3)
    apply(con, release, "t", view="again")
    view_points = sqlanon.regions(con, release, as_frame=True).sort_values("id", ignore_index=True)
    again_points = sqlanon.regions(con, release, table="again", as_frame=True).sort_values("id", ignore_index=True)
    pd.testing.assert_frame_equal(view_points, again_points)
    _check_new_rows(con, release, 21)
    points = sqlanon.regions(con, release, table="new_anon", as_frame=True)
    unplaced = points[points["eq_class"].isna()]
    assert len(unplaced) > 0 and len(points) == 150
    h = Hierarchy.from_dict(J)
    leaves = h.n_leaves + (con.execute("SELECT count(*) FROM t WHERE j IS NULL").fetchall()[0][0] > 0)
    assert (unplaced["j__lo"] == 0).all() and (unplaced["j__hi"] == leaves - 1).all()
    top = con.execute("SELECT max(f) FROM t").fetchall()[0][0]
    assert (unplaced["f__hi"] == top).all()
    placed = points[points["eq_class"].notna()]
    assert placed["j__lo"].notna().all() and (placed["j__lo"] <= placed["j__hi"]).all()


# -- what apply guarantees ------------------------------------------------------------------------
def _generalized(con, rules: str) -> tuple:
    """The fully generalized published QI values, from the rules in plain Python: the smallest
    ``q_min`` of the non-empty regions (NULL when one is NULL: the training column had NULLs,
    which sort first), their largest ``q_max``, the hierarchy's root label."""
    rows = [r for r in _rows(con, f'SELECT * FROM "{rules}"') if r["size"] > 0]
    out = []
    for q in ORDERED:
        lows = [r[f"{q}_min"] for r in rows]
        highs = [r[f"{q}_max"] for r in rows if r[f"{q}_max"] is not None]
        out += [None if None in lows else min(lows), max(highs) if highs else None]
    return (*out, "*")


def _fails(frame: pd.DataFrame, constraint) -> bool:
    """Whether the rows of one class break ``constraint``, by hand (NULL is a sensitive value;
    variance leaves NULLs out)."""
    if isinstance(constraint, sqlanon.VarianceDiversity):
        values = frame[constraint.sensitive].dropna().astype(float).to_numpy()
        variance = float(values.var()) if len(values) else 0.0
        return variance < constraint.v * (1 - 1e-9)
    counts = frame[constraint.sensitive].fillna("<NULL>").value_counts().to_numpy()
    if isinstance(constraint, sqlanon.DistinctLDiversity):
        return len(counts) < constraint.l
    if isinstance(constraint, sqlanon.EntropyLDiversity):
        p = counts / counts.sum()
        return float(-(p * np.log(p)).sum()) < math.log(constraint.l) - 1e-9
    counts = np.sort(counts)[::-1]
    return not counts[0] < constraint.c * counts[constraint.l - 1:].sum()


CONSTRAINTS = [
    [],
    [sqlanon.EntropyLDiversity("y", 1.5)],
    [sqlanon.DistinctLDiversity("y", 2), sqlanon.VarianceDiversity("id", 20.0)],
    [sqlanon.RecursiveCLDiversity("y", 3.0, 2)],
]


@settings(max_examples=25, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow],
          phases=[Phase.explicit, Phase.generate])  # no shrinking: each example runs a release
@given(st.integers(40, 160), st.integers(0, 2**32 - 1), st.sampled_from([2, 3, 5, 10]),
       st.sampled_from(range(len(CONSTRAINTS))), st.integers(20, 300))
# engine-independent algorithm; DuckDB vs PostgreSQL identity is tests/e2e/test_engines.py
def test_enforce_against_brute_force(n, seed, k, which, m):
    """enforce=True suppresses exactly the classes of the plain recoding that are below k or
    break one of the release's constraints -- each as a whole, published fully generalized,
    unless the class meets them without its rows placed with an unknown hierarchical value,
    which then go alone -- and leaves the other rows as they were; every class left holds at
    least k rows."""
    constraints = CONSTRAINTS[which]
    con = duckdb.connect()
    try:
        try:
            release = _release(con, n, seed, k, constraints=constraints)
        except sqlanon.InputError:  # the whole random table cannot meet the constraint
            return
        rng = np.random.default_rng(seed + 7)
        _load(con, "new", _frame(rng, m, {}, start=10_000, new=True), i_type="DOUBLE")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sqlanon.PrivacyWarning)
            plain = apply(con, release, "new", view="plain")
        with warnings.catch_warnings():
            warnings.simplefilter("error", sqlanon.PrivacyWarning)  # never warns once enforced
            enforced = apply(con, release, "new", view="enforced", enforce=True)
        before = con.execute("SELECT * FROM plain ORDER BY id").df()
        after = con.execute("SELECT * FROM enforced ORDER BY id").df()
        qi_columns = [c for q in ORDERED for c in (f"{q}_min", f"{q}_max")] + ["j"]
        # the oracle: the plain recoding's classes that fail k or a constraint; the rows placed
        # with an unknown j (no leaf, or NULL without a NULL leaf) go alone when their class
        # meets every constraint without them
        h = manifest.read(con, release.view).hierarchies["j"]
        raw = con.execute("SELECT j FROM new ORDER BY id").df()["j"].tolist()
        at_root = pd.Series(h.code_of(raw) < 0, index=before.index)

        def fails(rows: pd.DataFrame) -> bool:
            return len(rows) < release.k or any(_fails(rows, c) for c in constraints)

        suppressed = pd.Series(False, index=before.index)
        bad = set()  # classes no row of which is left
        for region, rows in before[before["eq_class"].notna()].groupby("eq_class"):
            if not fails(rows):
                continue
            regular = rows[~at_root[rows.index]]
            gone = rows.index if len(regular) == 0 or fails(regular) else rows.index[at_root[rows.index]]
            suppressed[gone] = True
            bad |= {region} if len(gone) == len(rows) else set()
        generalized = _generalized(con, release.rules)
        assert after["eq_class"][suppressed].isna().all()
        ids = {int(i) for i in before["id"][suppressed]}
        plain_rows = _rows(con, "SELECT * FROM plain ORDER BY id")
        for row, was in zip(_rows(con, "SELECT * FROM enforced ORDER BY id"), plain_rows, strict=True):
            if row["id"] in ids:  # fully generalized, everything else as it was
                assert tuple(row[c] for c in qi_columns) == generalized and row["eq_class"] is None
                assert {c: v for c, v in row.items() if c not in qi_columns + ["eq_class"]} == \
                    {c: v for c, v in was.items() if c not in qi_columns + ["eq_class"]}
            else:
                assert row == was
        # what it reports
        sizes = after["eq_class"].dropna().value_counts()
        assert (enforced.suppressed_classes, enforced.suppressed_rows) == (len(bad), int(suppressed.sum()))
        assert enforced.enforced == tuple(c.describe() for c in [sqlanon.KAnonymity(release.k), *constraints])
        assert (enforced.placed, enforced.unplaced) == (plain.placed, plain.unplaced)
        assert (enforced.classes, enforced.below_k) == (len(sizes), 0)
        assert enforced.k_achieved == (int(sizes.min()) if len(sizes) else 0)
        assert enforced.k_achieved >= release.k or enforced.classes == 0
        # and the independent check agrees: the rows with a class are k-anonymous and diverse
        if enforced.classes:
            con.execute("CREATE VIEW kept AS SELECT * FROM enforced WHERE eq_class IS NOT NULL")
            check = sqlanon.verify(con, "kept", QID, release.k, class_column="eq_class", constraints=constraints)
            assert check.ok, check
        assert temp_objects(con) == []
    finally:
        con.close()


def test_applied_reports_k_and_warns(con):
    """Recoding new rows does not keep k: Applied says so, with a PrivacyWarning; the training
    table recoded with its own rules keeps it and does not warn."""
    i = np.arange(2000, dtype=np.int64)
    load_frame(con, "people", pd.DataFrame({"id": i, "age": i % 90, "zip": i % 7}))
    i = np.arange(1500, dtype=np.int64)
    load_frame(con, "fresh", pd.DataFrame({"id": i, "age": (i * 37) % 90, "zip": (i * i) % 7}))
    release = sqlanon.anonymize(con, "people", ["age", "zip"], k=10)
    with pytest.warns(sqlanon.PrivacyWarning, match=r"not 10-anonymous: \d+ of \d+ classes .* enforce=True"):
        applied = apply(con, release, "fresh")
    sizes = con.execute("SELECT count(*) FROM fresh_anon GROUP BY eq_class").fetchall()
    assert (applied.k, applied.classes, applied.k_achieved) == (10, len(sizes), min(s for s, in sizes))
    assert applied.below_k == sum(s < 10 for s, in sizes) > 0 and applied.enforced == ()
    assert issubclass(sqlanon.PrivacyWarning, UserWarning)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = apply(con, release, "people", view="again")
    assert (again.k_achieved, again.below_k, again.classes) == (release.k_achieved, 0, release.partitions)
    enforced = apply(con, release, "fresh", view="fresh_enforced", enforce=True)
    assert enforced.suppressed_classes == applied.below_k and enforced.k_achieved >= 10 and enforced.classes > 0
    assert enforced.suppressed_rows == sum(s for s, in sizes if s < 10)
    assert con.execute("SELECT DISTINCT age_min, age_max, zip_min, zip_max FROM fresh_enforced "
                       "WHERE eq_class IS NULL").fetchall() == [(0, 89, 0, 6)]


def test_enforce_needs_readable_constraints_and_their_columns(con):
    i = np.arange(300, dtype=np.int64)
    load_frame(con, "people", pd.DataFrame({"id": i, "age": i % 90, "dx": [f"c{v}" for v in i % 3]}))
    release = sqlanon.anonymize(con, "people", ["age"], k=5, sensitive="dx", l=2)
    con.execute("CREATE TABLE no_dx AS SELECT id, age FROM people")
    before = objects(con)
    with pytest.raises(sqlanon.UnknownColumnError, match="no column 'dx'.*entropy l-diversity"):
        apply(con, release, "no_dx", enforce=True)
    assert apply(con, release, "no_dx", view="loose").rows == 300  # without enforce the column is not needed
    con.execute("DROP TABLE loose")
    comment = _comment(con, "people_anon_rules")
    edited = comment.replace("entropy l-diversity('dx', l=2)", "delta-presence('dx', delta=0.2)").replace(
        '"type": "EntropyLDiversity"', '"type": "DeltaPresence"')  # a constraint this version does not know
    con.execute("COMMENT ON TABLE people_anon_rules IS " + "'" + edited.replace("'", "''") + "'")
    with pytest.raises(sqlanon.InputError, match="cannot enforce the constraint \"delta-presence"):
        apply(con, release, "people", view="x", enforce=True)
    with pytest.raises(sqlanon.InputError, match="enforce must be True or False"):
        apply(con, release, "people", view="x", enforce="yes")
    assert objects(con) == before and temp_objects(con) == []


def test_errors_before_any_write(con):
    release = _release(con, 60, 1, 3, key="id")  # a live view: the release has a row map
    con.execute("CREATE TABLE other AS SELECT id, i, f, d, ts, s, j, y, 1 AS i_max FROM t")
    con.execute("CREATE TABLE taken AS SELECT 1 AS x")
    con.execute("CREATE TABLE no_s AS SELECT id, i, f, d, ts, j, y FROM t")
    con.execute("CREATE TABLE text_i AS SELECT id, CAST(i AS VARCHAR) AS i, f, d, ts, s, j, y FROM t")
    con.execute("CREATE TABLE int_s AS SELECT id, i, f, d, ts, length(s) AS s, j, y FROM t")
    con.execute("CREATE TABLE text_d AS SELECT id, i, f, CAST(d AS VARCHAR) AS d, ts, s, j, y FROM t")
    con.execute("CREATE TABLE clash AS SELECT *, 0 AS EQ_CLASS FROM t")  # eq_class in another case (PostgreSQL folds it)
    before = objects(con)
    cases = [
        (dict(table="tt"), sqlanon.UnknownTableError, "Did you mean 't'"),
        (dict(table="no_s"), sqlanon.UnknownColumnError, r"lacks the QI column\(s\) \['s'\]"),
        (dict(table="text_i"), sqlanon.UnsupportedTypeError, "'i' of 'text_i' has type VARCHAR"),
        (dict(table="int_s"), sqlanon.UnsupportedTypeError, "same type"),
        (dict(table="text_d"), sqlanon.UnsupportedTypeError, "temporal"),
        (dict(table="other"), sqlanon.ObjectExistsError, "duplicate columns 'i_max'"),
        (dict(table="clash"), sqlanon.ObjectExistsError, "duplicate columns"),
        (dict(table="t"), sqlanon.ObjectExistsError, "object of release"),  # default name: the release's view
        (dict(table="t", view="T_ANON_RULES", replace=True), sqlanon.ObjectExistsError, "object of release"),
        (dict(table="t", view="t_anon_rowmap", replace=True), sqlanon.ObjectExistsError, "object of release"),
        (dict(table="t", view="t", replace=True), sqlanon.ObjectExistsError, "object of release"),
        (dict(table="no_s", view="no_s", replace=True), sqlanon.UnknownColumnError, "lacks"),
        (dict(table="t", view="taken"), sqlanon.ObjectExistsError, "replace=True"),
        (dict(table="t", view=""), sqlanon.InputError, "non-empty"),
        (dict(table=""), sqlanon.InputError, "non-empty"),
    ]
    for kwargs, error, match in cases:
        with pytest.raises(error, match=match):
            apply(con, release, **kwargs)
    with pytest.raises(sqlanon.InputError, match="not a sqlanon release"):
        apply(con, "t", "t", view="x")
    with pytest.raises(sqlanon.InputError, match="release must be"):
        apply(con, 42, "t", view="x")
    con.execute("CREATE TABLE same AS SELECT * FROM t")
    with pytest.raises(sqlanon.ObjectExistsError, match="overwrite the input"):
        apply(con, release, "same", view="SAME", replace=True)
    database, schema = next(o[:2] for o in before if o[2] == "t")
    assert objects(con) == before | {(database, schema, "same", "table")} and temp_objects(con) == []
    # replace=True replaces a table or a view that is not the release's
    assert apply(con, release, "t", view="taken", replace=True).rows == 60
    _same_as_view(con, "t_anon", "taken")


def test_edited_rules_are_refused(con):
    release = _release(con, 80, 2, 3)
    con.execute("CREATE TABLE saved AS SELECT * FROM t_anon_rules")
    con.execute("DELETE FROM t_anon_rules WHERE region = (SELECT max(region) FROM t_anon_rules)")
    with pytest.raises(sqlanon.InputError, match="do not cover the domain|guillotine"):
        apply(con, release, "t", view="x")
    con.execute("DELETE FROM t_anon_rules")
    con.execute("INSERT INTO t_anon_rules SELECT * FROM saved")
    con.execute("UPDATE t_anon_rules SET region = region + 1 WHERE region = 0")  # now two regions 1
    with pytest.raises(sqlanon.InputError, match="number"):
        apply(con, release, "t", view="x")
    con.execute("ALTER TABLE t_anon_rules DROP COLUMN f_null")
    with pytest.raises(sqlanon.InputError, match="f_null"):
        apply(con, release, "t", view="x")
    assert temp_objects(con) == [] and not _exists(con, "x")


# -- the partition tree -------------------------------------------------------------------------
def _tiling(rng: np.random.Generator, d: int, cuts: int, top: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """A random guillotine tiling of ``(-1, top]^d``: repeatedly cut a random box in two."""
    boxes = [(np.full(d, -1), np.full(d, top))]
    for _ in range(cuts):
        a, b = boxes.pop(int(rng.integers(len(boxes))))
        j = int(rng.integers(d))
        if b[j] - a[j] < 2:
            boxes.append((a, b))
            continue
        c = int(rng.integers(a[j] + 1, b[j]))
        upper, lower = b.copy(), a.copy()
        upper[j], lower[j] = c, c
        boxes += [(a, upper), (lower, b)]
    order = rng.permutation(len(boxes))
    return np.array([boxes[i][0] for i in order]), np.array([boxes[i][1] for i in order])


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 4), st.integers(0, 120), st.integers(0, 2**32 - 1))
def test_guillotine_against_brute_force(d, cuts, seed):
    rng = np.random.default_rng(seed)
    a, b = _tiling(rng, d, cuts)
    lo, hi = np.full(d, -1), np.full(d, 40)
    tree = guillotine(a, b, lo, hi)
    points = rng.integers(0, 41, size=(300, d))
    inside = ((a[None] < points[:, None]) & (points[:, None] <= b[None])).all(axis=2)
    assert (inside.sum(axis=1) == 1).all()
    assert np.array_equal(tree.locate(points), inside.argmax(axis=1))
    leaves = np.concatenate([tree.left[tree.left >= 0], tree.right[tree.right >= 0]]) if len(a) > 1 else [0]
    assert sorted(leaves) == list(range(len(a)))
    assert tree.depth >= np.ceil(np.log2(len(a)))
    if len(a) > 1:  # a missing box is a gap
        k = int(rng.integers(len(a)))
        with pytest.raises(sqlanon.InputError, match="cover|guillotine"):
            guillotine(np.delete(a, k, 0), np.delete(b, k, 0), lo, hi)


def test_guillotine_refusals_and_balance():
    # a pinwheel tiles the square but no cut separates it
    a = np.array([[0, 0], [2, 0], [1, 2], [0, 1], [1, 1]])
    b = np.array([[2, 1], [3, 2], [3, 3], [1, 3], [2, 2]])
    with pytest.raises(sqlanon.InputError, match="guillotine"):
        guillotine(a, b, np.array([0, 0]), np.array([3, 3]))
    with pytest.raises(sqlanon.InputError, match="guillotine"):  # overlapping
        guillotine(np.array([[0], [1]]), np.array([[2], [3]]))
    # a regular grid of 2^4 x 2^4 cells: the balanced tree has depth 8
    edges = np.arange(-1, 16)
    cells = [(x, y) for x in range(16) for y in range(16)]
    a = np.array([[edges[x], edges[y]] for x, y in cells])
    tree = guillotine(a, a + 1, np.array([-1, -1]), np.array([15, 15]))
    assert tree.depth == 8
