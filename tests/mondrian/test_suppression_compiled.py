"""Median's depth-first compiled finish with a suppression budget (issue 52) gives exactly what
the level-by-level finish gives: the same leaves (suppressed ones included, with their boxes),
the same ids in the same order, the same leaf for every row, the same progress counters -- and
through the whole release the same rules and suppressed rows."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.model.criteria import Median
from sqlanon.model.domain import Domain
from sqlanon.model.partition import Boxes
from sqlanon.model.privacy import KAnonymity
from sqlanon.model.qi import QI
from sqlanon.mondrian import builder
from sqlanon.mondrian.builder import Batch, Partitioner
from sqlanon.mondrian.compiled import median_finish
from sqlanon.mondrian.split import Children
from sqlanon.mondrian.suppression import share_budget
from tests.mondrian.test_median_finish import tables  # at import: a module of @given tests imported inside one nests them
from tests.mondrian.test_suppression_mondrian import published
from tests.support.finish import assert_same, batches
from tests.support.finish import finish as support_finish
from tests.support.mondrian import load, rules_frame


def finish(codes: np.ndarray, seg_n: np.ndarray, domains: list[Domain], k: int, budget: np.ndarray, fast: bool,
           threads: int = 1) -> dict:
    """One batch with suppression budgets (:func:`tests.support.finish.finish`)."""
    return support_finish(codes, seg_n, domains, k, fast, threads, budget=budget)


@given(batches(), st.integers(1, 2), st.data())
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_same_leaves_ids_and_rows_as_the_level_by_level_finish(case, threads, data):
    codes, seg_n, domains, k = case
    budget = np.array([data.draw(st.sampled_from([0, 1, 2, int(n) // 10, int(n) // 3, int(n)])) for n in seg_n])
    fast = finish(codes, seg_n, domains, k, budget, True, threads)
    assert_same(fast, finish(codes, seg_n, domains, k, budget, False))
    dropped = fast["leaves"]["suppressed"].astype(bool)
    # the suppressed leaves' rows: at most each partition's budget in all
    gone = np.isin(fast["pid"], fast["leaves"]["pid"][dropped])
    assert gone.sum() <= budget.sum()


def test_outliers_on_two_threads():
    """A batch big enough for the first phase and two threads, with far outliers to trim."""
    rng = np.random.default_rng(11)
    M = 2 * median_finish.PARALLEL_ROWS + 12345
    sizes = [5000, 40, 3, 100000]
    domains = [Domain(QI(f"q{j}", "numeric", "INTEGER"), s, "", np.arange(s, dtype=np.float64))
               for j, s in enumerate(sizes)]
    codes = np.vstack([np.minimum(rng.geometric(0.01, M), 4999), np.minimum(rng.geometric(0.05, M), 39),
                       rng.integers(0, 3, M), np.minimum(rng.geometric(0.001, M), 99999)])
    seg_n = np.array([M - 20000, 15000, 5000])
    budget = (seg_n * 0.01).astype(np.int64)
    fast = finish(codes, seg_n, domains, 25, budget, True, threads=2)
    assert fast["leaves"]["suppressed"].sum() > 0
    assert_same(fast, finish(codes, seg_n, domains, 25, budget, False))


@given(st.integers(0, 60), st.integers(0, 60), st.integers(0, 3), st.integers(0, 80), st.integers(1, 12))
@settings(max_examples=500, deadline=None)
def test_two_children_share_as_share_budget(n1, n2, drop, b, least):
    """The compiled two-child share equals share_budget's."""
    if drop == 3:
        drop = 0
    lost = n1 if drop == 1 else n2 if drop == 2 else 0
    b = max(b, lost)
    z = np.zeros((1, 1), np.int64)
    want = share_budget(Boxes(np.zeros(1, np.int64), np.array([n1 + n2]), z, z, z, np.array([b])),
                        Children(np.zeros(2, np.int64), np.zeros(2, np.int64), np.zeros(2, np.int64),
                                 np.zeros(2, np.int64), np.array([n1, n2]), np.array([drop == 1, drop == 2])), least)
    assert list(median_finish._shares(b, n1, n2, drop, least)) == want.tolist()


@pytest.mark.parametrize("memory_rows", [0, 40, 10**9])
def test_same_release_with_and_without_the_compiled_finish(memory_rows, monkeypatch):
    """Through the release (SQL levels, batches): the same rules and suppressed rows."""
    rng = np.random.default_rng(4)
    n = 700
    df = pd.DataFrame({"a": np.minimum(rng.geometric(0.05, n), 300), "b": rng.integers(0, 50, n),
                       "c": np.where(rng.random(n) < 0.02, 10_000, rng.integers(0, 30, n))})
    out = []
    for fast in (True, False):
        monkeypatch.setattr(builder, "_MEDIAN_FINISH", fast)
        con = duckdb.connect()
        load(con, df)
        release = sqlanon.anonymize(con, "t", qid=["a", "b", "c"], k=9, suppression=0.03,
                                    algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=memory_rows)),
                                    output=sqlanon.Output(key="id"))
        assert release.verification.ok and 0 < release.suppressed <= int(0.03 * n)
        out.append((rules_frame(con, release), published(con, release.view)))
    pd.testing.assert_frame_equal(out[0][0], out[1][0])
    assert out[0][1] == out[1][1]


# -- privacy models beyond k with a budget -------------------------------------------------------
def run_models(codes, seg_n, domains, k, models, s, v, V, budget, fast: bool, threads: int = 1) -> dict:
    """tests/test_model_finish.py's run, with suppression budgets."""
    from sqlanon.model.stats import StatColumn

    R, d = len(seg_n), len(domains)
    saved = builder._MEDIAN_FINISH
    builder._MEDIAN_FINISH = fast
    try:
        stats = (StatColumn("s", "class", size=V), StatColumn("v", "numeric", exact=True))
        p = Partitioner(domains, [KAnonymity(k), *models], Median(), stat_columns=stats, threads=threads)
        p.next_pid = 1000
        seg = Boxes(np.arange(7, 7 + R, dtype=np.int64), seg_n.astype(np.int64), np.zeros((R, d), np.int64),
                    np.tile([dom.size - 1 for dom in domains], (R, 1)).astype(np.int64), np.full((R, d), -1, np.int64),
                    budget.astype(np.int64))
        assert p.median_finish_applies(seg) == fast
        seen = []
        p.progress = seen.append
        rows, pid = p.run_memory(Batch(codes.astype(np.int32), [s.astype(np.int64)], [v.astype(np.int64)]), seg)
    finally:
        builder._MEDIAN_FINISH = saved
    order = np.argsort(rows)
    return {"leaves": p.leaf_table(), "rows": rows[order], "pid": pid[order], "next_pid": p.next_pid,
            "levels": p.levels, "finished": p.rows_finished,
            "progress": [(x.level, x.open_partitions, x.rows_finished) for x in seen]}


def _model_cases():
    from tests.mondrian.test_model_finish import cases

    return cases()


@given(_model_cases(), st.integers(1, 2), st.data())
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_models_with_a_budget_same_as_the_level_by_level_finish(case, threads, data):
    """Every model with a compiled face (distinct, entropy, recursive (c,l)-diversity, variance,
    t-closeness, delta-disclosure, beta-likeness), alone and together, with budgets."""
    codes, seg_n, domains, k, models, s, v, V = case
    budget = np.array([data.draw(st.sampled_from([0, 1, 3, int(n) // 10, int(n) // 3, int(n)])) for n in seg_n])
    assert_same(run_models(codes, seg_n, domains, k, models, s, v, V, budget, True, threads),
                run_models(codes, seg_n, domains, k, models, s, v, V, budget, False))


def test_models_with_outliers_on_two_threads():
    """A batch big enough for two threads, entropy l-diversity and variance diversity, outliers
    to trim: suppressed leaves come out, the same as level by level."""
    from sqlanon.model.privacy import EntropyLDiversity, VarianceDiversity

    rng = np.random.default_rng(11)
    M = 2 * median_finish.PARALLEL_ROWS + 12345
    sizes = [5000, 40, 3, 100000]
    domains = [Domain(QI(f"q{j}", "numeric", "INTEGER"), n, "", np.arange(n, dtype=np.float64))
               for j, n in enumerate(sizes)]
    codes = np.vstack([np.minimum(rng.geometric(0.01, M), 4999), np.minimum(rng.geometric(0.05, M), 39),
                       rng.integers(0, 3, M), np.minimum(rng.geometric(0.001, M), 99999)])
    s = np.where(rng.random(M) < 0.7, codes[0] // 1000, rng.integers(0, 5, M))
    v = codes[1] + rng.integers(0, 3, M)
    seg_n = np.array([M - 20000, 15000, 5000])
    budget = (seg_n * 0.01).astype(np.int64)
    models = [EntropyLDiversity("s", 2.0), VarianceDiversity("v", 2.0)]
    fast = run_models(codes, seg_n, domains, 25, models, s, v, 5, budget, True, threads=2)
    assert fast["leaves"]["suppressed"].sum() > 0
    assert_same(fast, run_models(codes, seg_n, domains, 25, models, s, v, 5, budget, False))


# -- through the whole release, random tables ----------------------------------------------------
def _release(frame: pd.DataFrame, k: int, memory_rows: int, fraction: float, privacy: list, fast: bool):
    """The release's rules and view with suppression, the depth-first finish on or off."""
    con = duckdb.connect()
    saved = builder._MEDIAN_FINISH
    builder._MEDIAN_FINISH = fast
    try:
        con.register("frame", frame)
        con.execute("CREATE TABLE t AS SELECT row_number() OVER () AS id, * FROM frame")
        release = sqlanon.anonymize(con, "t", qid=[c for c in frame.columns if c != "s"], k=k, privacy=privacy,
                                    suppression=fraction,
                                    algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=memory_rows)),
                                    output=sqlanon.Output(key="id"))
        assert release.verification.ok and release.suppressed <= int(fraction * len(frame) + 1e-9)
        return (con.execute(f'SELECT * FROM "{release.rules}" ORDER BY ALL').fetchall(),
                con.execute(f'SELECT * FROM "{release.view}" ORDER BY id').fetchall())
    finally:
        builder._MEDIAN_FINISH = saved
        con.close()


@given(st.data(), st.sampled_from([0.01, 0.05, 0.2]), st.booleans())
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_same_rules_and_view_through_the_release(data, fraction, diverse):
    """Numbers, dates, text, NULLs; SQL levels first or not at all; k alone or with distinct
    l-diversity on a sensitive column: the same rules and published rows either way."""
    frame, k, memory_rows = data.draw(tables())
    privacy = []
    if diverse:
        rng = np.random.default_rng(len(frame))
        frame = frame.assign(s=rng.choice(["x", "y", "z"], len(frame)))
        privacy = [sqlanon.DistinctLDiversity("s", 2)]
    assert _release(frame, k, memory_rows, fraction, privacy, True) == \
        _release(frame, k, memory_rows, fraction, privacy, False)
