"""Suppressed rows in a release: what is published of them and how verify judges them.

How each search chooses what to suppress is tested with the search (Mondrian:
``tests/mondrian/test_suppression_mondrian.py``; the lattice and the genetic algorithm:
``tests/singledim/``). Here, for every search that suppresses:

Issue 49, part 1: a suppressed row's values are never printed, anywhere.

Suppression hides outliers. The rule checked here, by brute force on small DuckDB tables: no
value held only by suppressed rows appears in the view (its published columns, the suppressed
rows' own included), the rules relation (published bounds and box edges), the row map's
columns other than the source's own, or the report; and under ``published="domain"`` neither
does the smallest or largest published value when fewer than k published rows hold it (the
empty-range marker of a NULL-only box apart, the one exception README documents). A value of
an ordered QI counts; a hierarchy's labels are the custodian's, public.

Issue 49, part 3: verify agrees with the release: a release with suppressed rows verifies as
the quick start calls it; one whose suppressed rows show values, that was tampered with, or whose
live view went beyond the suppression limit does not (on DuckDB and PostgreSQL).
"""

from __future__ import annotations

import math
import re

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.errors import VerificationError
from sqlanon.publish.violations import violations
from tests.support.db import frame, is_postgres, rows, run
from tests.support.mondrian import load
from tests.support.releases import SUPPRESSING, suppressing_release

# The verify tests below take ``con`` and run on both engines; the leak tests make their own DuckDB.
pytestmark = pytest.mark.engines("duckdb", "postgres")


def _plain(v):
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return None
    return float(v) if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) else v


def exposures(con, release, k: int) -> list[str]:
    """Every place where the release prints a value only suppressed rows hold, or under
    ``"domain"`` an extreme held by fewer than k published rows (empty list: none)."""
    t = con.execute(f'SELECT * FROM "{release.table}"').df()
    view = con.execute(f'SELECT * FROM "{release.view}"').df()
    rules = con.execute(f'SELECT * FROM "{release.rules}"').df()
    rowmap = con.execute(f'SELECT * FROM "{release.rowmap}"').df()
    joined = t.merge(view[["id", release.class_column]], on="id")
    hidden_rows = joined[joined[release.class_column].isna()]
    shown_rows = joined[joined[release.class_column].notna()]
    modes = {q: release.published.get(q, "data") for q in release.qid}
    problems = []
    text = sqlanon.report(con, release, format="json") + sqlanon.report(con, release, format="markdown")
    html = re.sub(r"<[^>]*>", " ", sqlanon.report(con, release, format="html"))
    # the report is searched for a number whatever its column: one that a published row shows in
    # another QI is that QI's to print (an outlier can be one column's hidden and another's shown value)
    shown_anywhere = {_plain(v) for q in release.qid for v in shown_rows[q]} - {None}
    for q in release.qid:
        if f"{q}_lo" not in rules.columns:
            continue  # a hierarchical QI: its labels are the hierarchy's
        shown = {_plain(v) for v in shown_rows[q]} - {None}
        hidden = {_plain(v) for v in hidden_rows[q]} - {None} - shown
        boxes = [_plain(v) for c in (f"{q}_lo", f"{q}_hi") for v in rules[c]]
        bounds = [_plain(v) for frame in (rules, view) for c in (f"{q}_min", f"{q}_max") for v in frame[c]]
        printed = boxes + (bounds if modes[q] != "hierarchy" else [])  # hierarchy intervals: the custodian's
        # the row map holds keys, classes, hashes and (a snapshot) the source's other columns: no QI
        printed += [_plain(v) for c in rowmap.columns if c == q or c.startswith(f"{q}_") for v in rowmap[c]]
        for v in hidden:
            if v in printed:
                problems.append(f"{q}: suppressed-only value {v} printed")
            if abs(v) >= 100_000 and v not in shown_anywhere and (
                    re.search(rf"(?<![\d.]){int(v)}(?![\d])", text + html)):
                problems.append(f"{q}: suppressed-only value {v} in the report")
        if modes[q] == "domain" and shown:
            counts = shown_rows[q].map(_plain).value_counts()
            markers = {_plain(a) for a, b in zip(rules[f"{q}_lo"], rules[f"{q}_hi"])
                       if _plain(a) is not None and _plain(a) == _plain(b)}
            for v in (min(shown), max(shown)):
                if counts[v] < k and v in [x for x in printed if x not in markers]:
                    problems.append(f"{q}: extreme {v} held by {counts[v]} < k published rows printed")
    return problems


OUTLIERS = [1_000_003, -2_000_029, 3_000_017, -4_000_037, 5_000_011]


@st.composite
def outlier_tables(draw):
    """Small tables: one or two integer QIs (NULLs sometimes), a few rows with distinctive
    outlying values (so the report can be searched for them), perhaps a hierarchical QI."""
    n = draw(st.integers(10, 36))
    d = draw(st.integers(1, 2))
    cols = {}
    for j in range(d):
        values = draw(st.lists(st.integers(0, draw(st.integers(3, 40))), min_size=n, max_size=n))
        if draw(st.booleans()):
            mask = draw(st.lists(st.booleans(), min_size=n, max_size=n))
            values = [None if m and i % 3 == 0 else v for i, (v, m) in enumerate(zip(values, mask))]
        for at in draw(st.lists(st.integers(0, n - 1), max_size=3, unique=True)):
            values[at] = draw(st.sampled_from(OUTLIERS))
        cols[f"q{j}"] = pd.Series(values, dtype="Int64")
    hierarchies = {}
    if draw(st.booleans()):
        leaves = ["a", "b", "c", "d"]
        cols["h"] = pd.Series(draw(st.lists(st.sampled_from(leaves), min_size=n, max_size=n)), dtype=object)
        hierarchies["h"] = [[leaf, "ab" if leaf in "ab" else "cd", "*"] for leaf in leaves]
    return pd.DataFrame(cols), hierarchies


#: Every algorithm that supports suppression (Mondrian's levels, in SQL and in memory; the
#: genetic search; TDR and Mondrian's sample strategy refuse suppression=), x every mode.
ALGORITHMS = [dict(algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(0))),
              dict(algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(10**6))), dict(target="label"),
              dict(algorithm=sqlanon.Genetic(iterations=30, seed=1))]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(outlier_tables(), st.integers(2, 5), st.sampled_from([0.1, 0.2, 0.3]), st.sampled_from(ALGORITHMS),
       st.sampled_from(["data", "domain"]), st.booleans())
def test_no_suppressed_value_or_thin_extreme_is_printed(case, k, fraction, algorithm, published, keyed):
    df, hierarchies = case
    df["label"] = np.where(np.arange(len(df)) % 3 == 0, "x", "y")
    con = duckdb.connect()
    load(con, df)
    qid = [c for c in df.columns if c != "label"]
    try:
        release = sqlanon.anonymize(con, "t", qid=qid, k=k, hierarchies=hierarchies, suppression=fraction,
                                    published=published, **algorithm,
                                    output=sqlanon.Output(key="id" if keyed else None))
    except sqlanon.SqlanonError as e:
        assert "cannot" in str(e) or "k=" in str(e) or "larger" in str(e), e
        return
    assert release.verification.ok
    assert exposures(con, release, k) == []


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 49), min_size=24, max_size=40), st.lists(st.sampled_from(OUTLIERS[:2]), min_size=1, max_size=2),
       st.integers(2, 4), st.sampled_from([dict(), dict(algorithm=sqlanon.Genetic(iterations=30, seed=2))]))
def test_hierarchy_mode(values, outliers, k, algorithm):
    """published="hierarchy": box edges never hold a suppressed-only value, and every interval a
    class or an empty region prints covers a published value."""
    ages = values + outliers
    rows = [[str(v), f"{v // 10 * 10}-{v // 10 * 10 + 9}", "*"] for v in range(50)]
    rows += [[str(v), "far", "*"] for v in OUTLIERS[:2]]
    con = duckdb.connect()
    load(con, pd.DataFrame({"age": pd.Series(ages, dtype="Int64")}))
    try:
        release = sqlanon.anonymize(con, "t", qid=["age"], k=k, hierarchies={"age": rows},
                                    published="hierarchy", suppression=0.1, **algorithm,
                                    output=sqlanon.Output(key="id"))
    except sqlanon.SqlanonError:
        return
    assert exposures(con, release, k) == []
    shown = {v for v, c in con.execute(f'SELECT t.age, v.eq_class FROM t JOIN "{release.view}" v USING (id)').fetchall()
             if c is not None}
    for low, high in con.execute(f'SELECT age_min, age_max FROM "{release.rules}"').fetchall():
        assert low is None and high is None or any(low <= v <= high for v in shown), (low, high)


# -- the cases, each failing before the fix ----------------------------------------------
def _release(con, x, k, **kwargs):
    load(con, pd.DataFrame({"x": pd.Series(x, dtype="Int64")}))
    return sqlanon.anonymize(con, "t", ["x"], k, **kwargs, output=sqlanon.Output(replace=True, key="id"))


def test_mondrian_domain_never_prints_the_trimmed_outlier(con=None):
    """-2000 and -1000 below 0..19, k=10, 10 %: -2000 is trimmed. It was the neighbouring class's
    bound (``x_min = -2000`` on 10 visible rows), the suppressed row's and the rules'."""
    con = duckdb.connect()
    release = _release(con, [-2000, -1000] + list(range(20)), 10, suppression=0.1, published="domain")
    assert release.suppressed == 1 and release.verification.ok
    view = con.execute(f'SELECT x_min, x_max, count(*) FROM "{release.view}" GROUP BY ALL ORDER BY 1 NULLS FIRST, 2').fetchall()
    assert view == [(None, 8, 10), (None, None, 1), (8, None, 11)]  # the suppressed row: NULL, NULL
    assert con.execute(f'SELECT x_lo, x_hi, x_min, x_max FROM "{release.rules}" ORDER BY region').fetchall() == [
        (None, 8, None, 8), (8, None, 8, None)]
    assert exposures(con, release, 10) == []


def test_domain_suppressed_row_is_unbounded_and_the_thin_maximum_is_not_printed():
    """0..19, 1000, 2000, k=10: 2000 is suppressed. Its row was ``(NULL, 1000]`` (a range that
    excludes it) and 1000, the largest published value held by one row, the class's bound."""
    con = duckdb.connect()
    release = _release(con, list(range(20)) + [1000, 2000], 10, suppression=0.1, published="domain")
    assert release.suppressed == 1
    assert con.execute(f'SELECT x_min, x_max FROM "{release.view}" WHERE eq_class IS NULL').fetchall() == [(None, None)]
    assert con.execute(f'SELECT DISTINCT x_min, x_max FROM "{release.view}" WHERE eq_class IS NOT NULL '
                       f'ORDER BY 1 NULLS FIRST').fetchall() == [(None, 10), (10, None)]
    assert exposures(con, release, 10) == []


def test_data_mode_rules_hold_no_suppressed_value():
    """Under "data" the suppressed leaf was an empty region publishing its box, ``[2000, 2000]``,
    and the box edge ``x_hi = 1000`` / ``x_lo = 1000`` of its neighbour: now no region, and the
    edge is the open end."""
    con = duckdb.connect()
    release = _release(con, list(range(20)) + [1000, 2000], 10, suppression=0.1)
    assert con.execute(f'SELECT size, x_min, x_max, x_lo, x_hi FROM "{release.rules}" ORDER BY region').fetchall() == [
        (11, 0, 10, None, 10), (10, 11, 1000, 10, None)]
    assert release.regions == 2
    assert exposures(con, release, 10) == []


def test_genetic_never_prints_the_outlier():
    """1,000,000 among 0..39, its row alone in category "c", k=5, 5 %: the genetic search cuts x
    into intervals, the last ending at 1,000,000, and suppresses the row's cell. The interval's
    visible cells printed it as their upper bound, and the suppressed row's "fully generalized"
    bounds were (0, 1000000); both end at 39 now, the largest published value."""
    con = duckdb.connect()
    x = list(range(40)) + [1_000_000]
    y = ["a" if i % 2 else "b" for i in range(40)] + ["c"]
    load(con, pd.DataFrame({"x": pd.Series(x, dtype="Int64"), "y": y}))
    for seed in (0, 1):
        release = sqlanon.anonymize(con, "t", ["x", "y"], 5,
                                    suppression=0.05, output=sqlanon.Output(replace=True, key="id"),
                                    algorithm=sqlanon.Genetic(iterations=60, seed=seed))
        assert release.verification.ok and release.suppressed == 1
        assert con.execute(f'SELECT eq_class, x_min, x_max FROM "{release.view}" WHERE id = 40').fetchall() == [
            (None, 0, 39)]
        assert con.execute(f'SELECT max(x_max) FROM "{release.view}"').fetchall() == [(39,)]
        assert exposures(con, release, 5) == []


def test_domain_minimum_shared_with_nulls_is_not_printed():
    """Nine NULLs and one 0 below ten 5s, k=10: the lowest class was ``(NULL, 0]``, printing the
    column's minimum, which one row holds. Its box now holds NULL only (it publishes NULL, NULL)."""
    con = duckdb.connect()
    release = _release(con, [None] * 9 + [0] + [5] * 10, 10, published="domain")
    assert con.execute(f'SELECT DISTINCT x_min, x_max FROM "{release.view}" ORDER BY 1 NULLS FIRST, 2 NULLS FIRST'
                       ).fetchall() == [(None, None)]
    assert con.execute(f'SELECT DISTINCT eq_class FROM "{release.view}"').fetchall() != [(None,)]
    assert release.verification.ok and exposures(con, release, 10) == []


# -- verify ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("keyed", [True, False])
def test_verify_refuses_a_release_that_prints_a_suppressed_value(keyed, monkeypatch):
    """A release whose rules print the suppressed outlier is refused at publication (fail closed,
    nothing published), and a keyed release tampered with later fails :func:`sqlanon.verify`."""
    from sqlanon.publish import bounds
    from tests.support import objects

    con = duckdb.connect()
    load(con, pd.DataFrame({"x": pd.Series(list(range(20)) + [1000, 2000], dtype="Int64")}))
    key = "id" if keyed else None
    release = sqlanon.anonymize(con, "t", ["x"], 10, suppression=0.1, published="domain",
                                output=sqlanon.Output("good", key=key))
    check = sqlanon.verify(con, "good", ["x"], 10, class_column="eq_class")
    assert check.ok and check.exposed == 0
    before = objects(con)
    real = bounds.Shown.cut

    def leaky(self, c):  # the old edges: the outlier's value stays a box edge
        return c

    monkeypatch.setattr(bounds.Shown, "cut", leaky)
    with pytest.raises(VerificationError, match="suppressed rows only"):
        sqlanon.anonymize(con, "t", ["x"], 10, suppression=0.1, published="domain",
                          output=sqlanon.Output("bad", key=key))
    assert objects(con) == before
    monkeypatch.setattr(bounds.Shown, "cut", real)
    if keyed:
        con.execute(f'UPDATE "{release.rules}" SET x_max = 2000 WHERE x_max IS NULL')
        tampered = sqlanon.verify(con, "good", ["x"], 10, class_column="eq_class")
        assert not tampered.ok and tampered.exposed >= 1


# -- verify and suppressed rows (both engines) ----------------------------------------------------
def test_a_suppressed_row_showing_values_is_leaked(con):
    """A release's suppressed rows (class NULL) must show the fully generalized values: one that
    shows its own is counted as leaked and fails the check; one that is fully generalized does not."""
    rows = "generate_series(0, 59) i" if is_postgres(con) else "range(60) t(i)"
    con.execute(f"CREATE TABLE people AS SELECT i AS id, i % 30 AS age, i % 3 AS zip FROM {rows}")
    release = sqlanon.anonymize(con, "people", qid=["age", "zip"], k=5)  # no key: a view of a snapshot
    assert release.materialized and release.verification.ok and release.verification.leaked == 0
    first = release.rules
    # the view replaced by an edited copy of it, under its name
    con.execute(f"CREATE TABLE copied AS SELECT * FROM {release.view}")
    con.execute(f"DROP VIEW {release.view}")
    con.execute(f"ALTER TABLE copied RENAME TO {release.view}")
    con.execute(f"UPDATE {release.view} SET eq_class = NULL WHERE id IN (0, 1)")  # suppressed, still showing values
    check = sqlanon.verify(con, release.view, ["age", "zip"], 5, class_column="eq_class")
    assert (check.ok, check.unplaced, check.leaked) == (False, 2, 2)
    # fully generalized: the release's smallest lower and largest upper bound of every QI
    con.execute(f"UPDATE {release.view} SET age_min = (SELECT min(age_min) FROM {first}), "
                f"age_max = (SELECT max(age_max) FROM {first}), zip_min = (SELECT min(zip_min) FROM {first}), "
                f"zip_max = (SELECT max(zip_max) FROM {first}) WHERE id IN (0, 1)")
    check = sqlanon.verify(con, release.view, ["age", "zip"], 5, class_column="eq_class")
    assert check.unplaced == 2 and check.leaked == 0


# -- issue 49, part 3: verify agrees with the release ---------------------------------------------
@pytest.mark.parametrize("key", [None, "id"])
@pytest.mark.parametrize("search", SUPPRESSING)
def test_a_release_with_suppression_verifies_ok_as_the_quick_start_calls_it(con, search, key):
    """The README's own call -- no class column named -- on a valid release with suppressed
    rows: the class column and the suppression limit come from its manifest, so the suppressed
    rows (fully generalized, class NULL) form no class and the release verifies ok."""
    release, qid = suppressing_release(con, search, key)
    v = sqlanon.verify(con, release.view, qid, 10)
    assert v.ok and v.failures() == ()
    assert (v.release, v.class_column, v.unplaced, v.suppression_limit, v.leaked) == (
        True, "eq_class", release.suppressed, 9, 0)
    assert v == sqlanon.verify(con, release.view, qid, 10, class_column="eq_class") == release.verification
    # the violations listed for it are verify's: the suppressed rows are in no class
    assert violations(con, release.view, qid, sqlanon.KAnonymity(10)).violating == 0
    # another column named as the class column: no release semantics, its NULLs fail (closed)
    run(con, "CREATE TABLE other AS SELECT * FROM t_anon")
    other = sqlanon.verify(con, "other", qid, 10, class_column="eq_class")
    assert not other.ok and not other.release and other.unplaced == release.suppressed


@pytest.mark.parametrize("search", SUPPRESSING)
def test_a_tampered_release_with_suppression_does_not_verify(con, search):
    """Fail closed: a suppressed row given a real class (a group below k), one that shows its own
    values, a placed row alone in its class, and more suppressed rows than the release's limit
    each fail ``sqlanon.verify`` -- with no class column named, as with the release's own. (A
    single-dimensional release's own QID, checked on the placed rows, fails beside k.)"""
    release, qid = suppressing_release(con, search)
    view = release.view
    run(con, f"CREATE TABLE copied AS SELECT * FROM {view}")
    run(con, f"DROP VIEW {view}")
    run(con, f"ALTER TABLE copied RENAME TO {view}")
    published = [c for c in frame(con, f"SELECT * FROM {view} LIMIT 0").columns if c not in ("id", "eq_class")]
    hidden = rows(con, f"SELECT min(id) FROM {view} WHERE eq_class IS NULL")[0][0]
    root = rows(con, f"SELECT {', '.join(published)} FROM {view} WHERE id = ?", [hidden])[0]
    placed_class = rows(con, f"SELECT min(eq_class) FROM {view}")[0][0]

    def verdict(**kwargs):
        return sqlanon.verify(con, view, qid, 10, **kwargs)

    assert verdict().ok
    # a suppressed row given a real class: its fully generalized values form a group of 1
    run(con, f"UPDATE {view} SET eq_class = ? WHERE id = ?", [placed_class, hidden])
    for v in (verdict(), verdict(class_column="eq_class")):
        assert (v.ok, v.violating, v.k_achieved, v.failures()[0]) == (False, 1, 1, "k-anonymity(k=10)")
    run(con, f"UPDATE {view} SET eq_class = NULL WHERE id = ?", [hidden])
    assert verdict().ok
    # a suppressed row that shows its own value
    run(con, f"UPDATE {view} SET zip = '31' WHERE id = ?", [hidden])
    v = verdict()
    assert (v.ok, v.leaked, v.failures()) == (False, 1, ("suppressed rows fully generalized",))
    run(con, f"UPDATE {view} SET zip = ? WHERE id = ?", [root[published.index("zip")], hidden])
    assert verdict().ok
    # a placed row given values of its own: a class below k
    own = rows(con, f"SELECT zip FROM {view} WHERE id = 0")[0][0]
    run(con, f"UPDATE {view} SET zip = '3*' WHERE id = 0")  # no placed row's value
    v = verdict()
    assert (v.ok, v.k_achieved, v.failures()[0]) == (False, 1, "k-anonymity(k=10)")
    run(con, f"UPDATE {view} SET zip = ? WHERE id = 0", [own])
    assert verdict().ok
    # a whole class suppressed (fully generalized, in no class): more rows than the limit of 9
    sets = ", ".join(f"{c} = ?" for c in published)
    run(con, f"UPDATE {view} SET eq_class = NULL, {sets} WHERE eq_class = ?", [*root, placed_class])
    v = verdict()
    assert (v.ok, v.violating, v.leaked, v.unplaced > 9, v.failures()) == (
        False, 0, 0, True, ("suppression limit (9 rows)",))


@pytest.mark.parametrize("search", SUPPRESSING)
def test_a_live_release_beyond_its_suppression_limit_does_not_verify(con, search):
    """A live view (key=): rows its row map no longer places are suppressed by the recoding; past
    the release's limit, ``sqlanon.verify`` (no class column named) fails."""
    release, qid = suppressing_release(con, search, key="id")
    assert sqlanon.verify(con, release.view, qid, 10).ok
    run(con, f"UPDATE {release.rowmap} SET region = NULL WHERE key0 < 10")
    v = sqlanon.verify(con, release.view, qid, 10)
    assert not v.ok and v.recoded > 9 and "suppression limit (9 rows)" in v.failures()
