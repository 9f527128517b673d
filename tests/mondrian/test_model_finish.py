"""The depth-first compiled finish of Median under privacy models beyond k
(sqlanon/mondrian/compiled/median_finish.py with the models' compiled faces) gives exactly what the
level-by-level finish gives: the same leaves, ids, rows and progress, for every model with a
face -- distinct, entropy and recursive (c,l)-diversity, variance diversity, t-closeness (equal
and ordered), delta-disclosure, beta-likeness -- alone and together, and through the release."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.model.criteria import Median
from sqlanon.model.privacy import (
    BetaLikeness,
    DeltaDisclosure,
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    RecursiveCLDiversity,
    TCloseness,
    VarianceDiversity,
)
from sqlanon.model.stats import StatColumn
from sqlanon.mondrian import builder
from sqlanon.mondrian.builder import Batch, Boxes, Partitioner
from sqlanon.mondrian.compiled import median_finish
from tests.support.finish import assert_same, batches, release_rows


def model_list(draw, V, s_counts):
    """One to three models over the class column ``s`` (V codes) and the numeric column ``v``."""
    texts = [str(i) for i in range(V)]
    pool = [
        lambda: DistinctLDiversity("s", draw(st.integers(1, 4))),
        lambda: EntropyLDiversity("s", draw(st.sampled_from([1.0, 1.3, 2.0, 2.5, 3.0]))),
        lambda: RecursiveCLDiversity("s", draw(st.sampled_from([0.5, 1.0, 2.0, 4.0])), draw(st.integers(1, 3))),
        lambda: VarianceDiversity("v", draw(st.sampled_from([0.0, 1.0, 4.0, 30.0]))),
        lambda: TCloseness("s", draw(st.sampled_from([0.05, 0.2, 0.5])), draw(st.sampled_from(["equal", "ordered"])))
        .with_reference(texts, s_counts),
        lambda: DeltaDisclosure("s", draw(st.sampled_from([0.5, 1.0, 3.0]))).with_reference(texts, s_counts),
        lambda: BetaLikeness("s", draw(st.sampled_from([0.3, 1.0, 4.0])), draw(st.booleans()))
        .with_reference(texts, s_counts),
    ]
    picks = draw(st.lists(st.integers(0, len(pool) - 1), min_size=1, max_size=3))
    return [pool[i]() for i in picks]


def run(codes, seg_n, domains, k, models, s, v, V, fast: bool, threads: int = 1) -> dict:
    R, d = len(seg_n), len(domains)
    saved = builder._MEDIAN_FINISH
    builder._MEDIAN_FINISH = fast
    try:
        stats = (StatColumn("s", "class", size=V), StatColumn("v", "numeric", exact=True))
        p = Partitioner(domains, [KAnonymity(k), *models], Median(), stat_columns=stats, threads=threads)
        p.next_pid = 1000
        seg = Boxes(np.arange(7, 7 + R, dtype=np.int64), seg_n.astype(np.int64), np.zeros((R, d), np.int64),
                    np.tile([dom.size - 1 for dom in domains], (R, 1)).astype(np.int64), np.full((R, d), -1, np.int64))
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


@st.composite
def cases(draw):
    codes, seg_n, domains, k = draw(batches())
    M = codes.shape[1]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    V = draw(st.integers(1, 6))
    skew = draw(st.sampled_from(["uniform", "skewed", "clustered"]))
    if skew == "uniform":
        s = rng.integers(0, V, M)
    elif skew == "skewed":
        s = np.minimum(rng.geometric(0.5, M) - 1, V - 1)
    else:  # the sensitive value follows the first QI: l-diversity blocks many cuts
        s = (codes[0] * V // max(int(codes[0].max()) + 1, 1)).astype(np.int64) % V
    v = rng.integers(-5, 6, M) * draw(st.sampled_from([1, 3]))
    models = model_list(draw, V, np.bincount(s, minlength=V))
    return codes, seg_n, domains, min(k, 10), models, s, v, V


@given(cases(), st.integers(1, 2))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_same_leaves_ids_and_rows_as_the_level_by_level_finish(case, threads):
    codes, seg_n, domains, k, models, s, v, V = case
    assert_same(run(codes, seg_n, domains, k, models, s, v, V, True, threads),
                run(codes, seg_n, domains, k, models, s, v, V, False))


def test_many_rows_on_two_threads():
    """A batch big enough for the first phase and two threads, under entropy l-diversity and
    variance diversity (sensitive values correlated with a QI, so cuts near the median fail)."""
    from sqlanon.model.domain import Domain
    from sqlanon.model.qi import QI
    rng = np.random.default_rng(11)
    M = 2 * median_finish.PARALLEL_ROWS + 12345
    sizes = [5000, 40, 3, 100000]
    domains = [Domain(QI(f"q{j}", "numeric", "INTEGER"), n, "", np.arange(n, dtype=np.float64))
               for j, n in enumerate(sizes)]
    codes = np.vstack([rng.integers(0, 5000, M), np.minimum(rng.geometric(0.05, M), 39),
                       rng.integers(0, 3, M), rng.integers(0, 100000, M)])
    s = np.where(rng.random(M) < 0.7, codes[0] // 1000, rng.integers(0, 5, M))
    v = codes[1] + rng.integers(0, 3, M)
    seg_n = np.array([M - 20000, 15000, 5000])
    models = [EntropyLDiversity("s", 2.5), VarianceDiversity("v", 2.0)]
    assert_same(run(codes, seg_n, domains, 25, models, s, v, 5, True, threads=2),
                run(codes, seg_n, domains, 25, models, s, v, 5, False))


def test_hierarchical_closeness_and_float_variance_stay_level_by_level():
    """Models without a compiled face (hierarchical t-closeness) and variance over a column
    summed in floats take the level-by-level finish."""
    from sqlanon.model.domain import Domain
    from sqlanon.model.qi import QI
    domains = [Domain(QI("q", "numeric", "INTEGER"), 10, "", np.arange(10.0))]
    seg = Boxes(np.array([1]), np.array([100]), np.zeros((1, 1), np.int64), np.array([[9]]), np.full((1, 1), -1))
    tree = sqlanon.Hierarchy.from_dict({"*": {"low": ["0", "1"], "high": ["2"]}})
    models = [TCloseness("s", 0.2, "hierarchical", tree).with_reference(["0", "1", "2"], np.array([5, 3, 2]))]
    floats = (StatColumn("s", "class", size=3), StatColumn("v", "numeric", exact=False))
    for constraint in [*models, VarianceDiversity("v", 1.0)]:
        p = Partitioner(domains, [KAnonymity(2), constraint], Median(), stat_columns=floats)
        assert not p.median_finish_applies(seg)


# -- through the whole release ----------------------------------------------------------------


@pytest.mark.parametrize("constraints", [
    [EntropyLDiversity("s", 2.0)],
    [RecursiveCLDiversity("s", 3.0, 2), DistinctLDiversity("s", 2)],
    [VarianceDiversity("v", 3.0)],
    [TCloseness("s", 0.25)],
    [TCloseness("s", 0.25, "ordered"), BetaLikeness("s", 2.0)],
    [DeltaDisclosure("s", 1.5)],
])
@pytest.mark.parametrize("memory_rows", [10**9, 300])
def test_same_rules_and_view_through_the_release(constraints, memory_rows, monkeypatch):
    calls = []
    real = median_finish.finish
    monkeypatch.setattr(median_finish, "finish", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    rng = np.random.default_rng(len(constraints) + memory_rows % 7)
    n = 3000
    a = rng.integers(0, 200, n)
    frame = pd.DataFrame({"a": a, "b": rng.integers(0, 12, n), "c": rng.normal(50, 10, n).round(1),
                          "s": np.where(rng.random(n) < 0.5, [f"x{x}" for x in a // 40], "y"),
                          "v": rng.integers(0, 20, n)})
    fast = release_rows(frame, "_MEDIAN_FINISH", True, memory_rows, qid=["a", "b", "c"], k=4, privacy=constraints)
    assert calls, "the compiled finish was not taken"
    assert fast == release_rows(frame, "_MEDIAN_FINISH", False, memory_rows, qid=["a", "b", "c"], k=4, privacy=constraints)
