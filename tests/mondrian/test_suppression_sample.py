"""Mondrian's suppression limit with Rothko-S (``Mondrian(strategy=Sample(...))``, issue 52):
the sample grows ordinary splits only, each round shares its roots' budgets down the pruned tree
(:func:`sqlanon.mondrian.suppression.share_down`), and the exact finish spends them. The total
suppressed always stays within ``floor(f x N)``, every class passes k, the release equals
Rothko-T's when the sample is the whole table, and PostgreSQL gives DuckDB's rules.
"""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.model.partition import Boxes
from sqlanon.mondrian.split import Children
from sqlanon.mondrian.suppression import share_budget, share_down
from tests.mondrian.test_suppression_mondrian import ZIP, motivating, published
from tests.support.db import frame
from tests.support.mondrian import load, rules_frame, tables

pytestmark = pytest.mark.engines("duckdb", "postgres")


# -- share_down ----------------------------------------------------------------------------------
@st.composite
def trees(draw):
    """A random tree (parents before children), real row counts that add up, some subtrees cut
    off (not kept), and root budgets."""
    roots = draw(st.integers(1, 3))
    parent = [-1] * roots
    lo = [0] * roots
    for _ in range(draw(st.integers(0, 25))):
        parent.append(draw(st.integers(0, len(parent) - 1)))
        lo.append(draw(st.integers(0, 50)))
    T = len(parent)
    parent = np.array(parent, np.int64)
    lo = np.array(lo, np.int64)
    # distinct intervals among siblings (their order is the child order)
    lo = lo * 64 + np.arange(T)
    depth = np.zeros(T, np.int64)
    for i in range(roots, T):
        depth[i] = depth[parent[i]] + 1
    n = np.zeros(T, np.int64)
    leaf = np.ones(T, bool)
    leaf[parent[parent >= 0]] = False
    n[leaf] = [draw(st.integers(0, 40)) for _ in range(int(leaf.sum()))]
    for d in range(int(depth.max()), 0, -1):
        for i in (depth == d).nonzero()[0]:
            n[parent[i]] += n[i]
    keep = np.ones(T, bool)
    for i in range(roots, T):  # a node cut off takes its subtree along
        cut = draw(st.booleans()) and draw(st.booleans())
        keep[i] = keep[parent[i]] and not cut
    # pruning collapses a whole parent: a kept child's siblings are all kept
    collapsed = np.zeros(T, bool)
    for i in range(roots, T):
        if not keep[i]:
            collapsed[parent[i]] = True
    for i in range(roots, T):
        keep[i] = keep[parent[i]] and not collapsed[parent[i]]
    budget = np.zeros(T, np.int64)
    budget[:roots] = [draw(st.integers(0, int(n[r]))) for r in range(roots)]
    return parent, depth, lo, n, keep, budget, draw(st.integers(1, 6))


@settings(max_examples=200, deadline=None)
@given(trees())
def test_share_down_shares_each_kept_split_as_share_budget_does(tree):
    """Parent by parent, top-down, in plain Python: each kept parent's children get
    :func:`share_budget` of its budget alone; nodes not kept get nothing; the leaves never hold
    more than their roots."""
    parent, depth, lo, n, keep, budget, least = tree
    got = share_down(parent, depth, lo, n, keep, budget, least)
    want = np.where(parent < 0, budget, 0)
    for i in np.argsort(depth, kind="stable"):
        kids = [j for j in range(len(parent)) if parent[j] == i and keep[j]]
        if not kids or not keep[i]:
            continue
        kids.sort(key=lambda j: lo[j])
        z = np.zeros((1, 1), np.int64)
        none = np.zeros(len(kids), np.int64)
        shares = share_budget(Boxes(np.array([i]), n[[i]], z, z, z, np.array([want[i]])),
                              Children(none, none, none, none, n[kids], np.zeros(len(kids), bool)), least)
        want[kids] = shares
    np.testing.assert_array_equal(got, want)
    assert (got[~keep] == 0).all()
    final = keep & ~np.isin(np.arange(len(parent)), parent[keep & (parent >= 0)])
    roots = parent < 0
    root_of = np.arange(len(parent))
    for i in np.argsort(depth, kind="stable"):
        if parent[i] >= 0:
            root_of[i] = root_of[parent[i]]
    for r in roots.nonzero()[0]:
        assert got[final & (root_of == r)].sum() <= budget[r]


# -- end to end ----------------------------------------------------------------------------------
def test_a_small_branch_is_suppressed_with_rothko_s(con):
    """The motivating case (issue 19) through Rothko-S: a round's sample cannot split the root
    (branch 3 has 9 < k rows), Rothko-T takes the root with its whole budget and suppresses the
    branch, as the levels do."""
    load(con, motivating())
    release = sqlanon.anonymize(con, "t", ["zip"], 10, hierarchies={"zip": ZIP}, suppression=0.2,
                                algorithm=sqlanon.Mondrian(strategy=sqlanon.Sample(rows=20, seed=1)),
                                output=sqlanon.Output(key="id"))
    assert release.outcome.strategy == "sample" and release.outcome.rounds >= 1
    classes, dropped = published(con, release.view)
    assert dropped == set(range(40, 49)) and release.suppressed == 9 and release.verification.ok
    assert classes == {frozenset(range(a, a + 10)) for a in range(0, 40, 10)}


def _skewed(n: int, seed: int) -> pd.DataFrame:
    """Clustered values with a tail of far outliers: suppression has something to trim."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 40, n)
    far = rng.random(n) < 0.03
    a[far] = rng.integers(1000, 5000, int(far.sum()))
    b = rng.geometric(0.2, n)
    c = rng.integers(0, 3, n)
    return pd.DataFrame({"a": a, "b": b, "c": c})


def test_rothko_s_with_suppression_on_every_engine(con):
    """A sample round, then the budgets spent in the exact finish, on DuckDB and PostgreSQL:
    within the limit, every class of k rows, verified, the suppressed rows fully generalized
    alike.
    (The rules are not compared across the engines: Rothko-S's samples differ between them
    today even without suppression -- reported, not this test's concern.)"""
    df = _skewed(900, 5)
    load(con, df)
    release = sqlanon.anonymize(con, "t", qid=["a", "b", "c"], k=12, suppression=0.05, output=sqlanon.Output(key="id"),
                                algorithm=sqlanon.Mondrian(strategy=sqlanon.Sample(rows=120, confidence=0.5, seed=2,
                                                                                   memory_rows=40)))
    assert release.outcome.strategy == "sample" and release.outcome.rounds >= 1
    classes, dropped = published(con, release.view)
    assert release.verification.ok and 0 < release.suppressed == len(dropped) <= int(0.05 * 900)
    assert all(len(c) >= 12 for c in classes)
    assert not release.verification.leaked  # each suppressed row fully generalized
    view = frame(con, f'SELECT * FROM "{release.view}" WHERE eq_class IS NULL')
    assert len(view[[f"{q}_{e}" for q in "abc" for e in ("min", "max")]].drop_duplicates()) == 1


@pytest.mark.engines("duckdb")
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.sampled_from([0.02, 0.1, 0.3]), st.integers(1, 40), st.sampled_from([0.05, 0.5, 0.95]),
       st.integers(0, 3), st.sampled_from([0, 4, 10**9]))
def test_rothko_s_stays_within_the_limit(case, fraction, sample_rows, confidence, seed, memory_rows):
    """Random tables (NULLs, duplicates, hierarchies), tiny samples, every confidence: the rows
    suppressed never pass ``floor(f x N)``, every class has k rows, the release verifies."""
    df, qid, k, hierarchies = case
    con = duckdb.connect()
    load(con, df)
    release = sqlanon.anonymize(con, "t", qid=qid, k=k, hierarchies=hierarchies, suppression=fraction,
                                algorithm=sqlanon.Mondrian(strategy=sqlanon.Sample(
                                    rows=sample_rows, confidence=confidence, seed=seed, memory_rows=memory_rows)),
                                output=sqlanon.Output(key="id"))
    classes, dropped = published(con, release.view)
    assert len(dropped) <= int(fraction * len(df) + 1e-9) and release.suppressed == len(dropped)
    assert all(len(c) >= k for c in classes) and release.verification.ok
    assert sum(map(len, classes)) + len(dropped) == len(df)


@pytest.mark.engines("duckdb")
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.sampled_from([0.05, 0.25]), st.sampled_from([0, 3, 10**9]))
def test_a_sample_of_the_whole_table_equals_levels_with_suppression(case, fraction, memory_rows):
    df, qid, k, hierarchies = case
    con = duckdb.connect()
    load(con, df)
    out = []
    for strategy in (sqlanon.Levels(memory_rows=memory_rows), sqlanon.Sample(rows=len(df), memory_rows=memory_rows)):
        release = sqlanon.anonymize(con, "t", qid=qid, k=k, hierarchies=hierarchies, suppression=fraction,
                                    algorithm=sqlanon.Mondrian(strategy=strategy),
                                    output=sqlanon.Output(replace=True, key="id"))
        out.append((published(con, release.view), rules_frame(con, release), release.suppressed))
    assert out[0][0] == out[1][0] and out[0][2] == out[1][2]
    pd.testing.assert_frame_equal(out[0][1], out[1][1])


@pytest.mark.engines("duckdb")
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.sampled_from([0.05, 0.25]), st.integers(5, 60), st.integers(0, 3))
def test_rothko_s_with_suppression_does_not_depend_on_memory_rows(case, fraction, sample_rows, seed):
    """The budgets go down the sample's tree and into the exact finish alike whether the
    finish runs in SQL levels, small batches or one batch."""
    df, qid, k, hierarchies = case
    con = duckdb.connect()
    load(con, df)
    out = []
    for memory_rows in (0, 3, 10**9):
        release = sqlanon.anonymize(con, "t", qid=qid, k=k, hierarchies=hierarchies, suppression=fraction,
                                    algorithm=sqlanon.Mondrian(strategy=sqlanon.Sample(
                                        rows=sample_rows, seed=seed, memory_rows=memory_rows)),
                                    output=sqlanon.Output(replace=True, key="id"))
        out.append((published(con, release.view), release.suppressed))
    assert out[0] == out[1] == out[2]
