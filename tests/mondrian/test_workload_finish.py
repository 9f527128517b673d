"""The depth-first compiled finish of the workload criteria under k-anonymity
(sqlanon/mondrian/compiled/workload_finish.py) gives exactly what the level-by-level finish gives: the
same leaves (boxes, extents, sizes), partition ids, leaf of every row and progress counters for
InfoGain (with and without ``min_gain``), Regression and Targets — and through the whole release
the same rules and view, whatever ``memory_rows``. Requests it does not cover take the general
path."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.model.criteria import InfoGain, Median, Regression, Selections, Targets
from sqlanon.model.domain import Domain
from sqlanon.model.partition import Boxes
from sqlanon.model.privacy import EntropyLDiversity, KAnonymity, VarianceDiversity
from sqlanon.model.qi import QI
from sqlanon.model.stats import StatColumn
from sqlanon.model.summaries import XLOGX_ROWS, xlogx_table
from sqlanon.mondrian import builder
from sqlanon.mondrian.builder import Batch, Partitioner
from sqlanon.mondrian.compiled import gather, histograms, median_finish, workload_finish
from tests.support import request_options
from tests.support.finish import assert_same, release_rows

STATS = (StatColumn("y", "class", size=3), StatColumn("z", "class", size=2), StatColumn("v", "numeric", exact=True),
         StatColumn("w", "numeric", exact=True))
#: The same with float targets (summed in float64).
FLOAT_STATS = STATS[:2] + (StatColumn("v", "numeric"), StatColumn("w", "numeric"))


def finish(case: dict, criterion, fast: bool, threads: int = 1, stats: tuple | None = None) -> dict:
    """One batch through Partitioner.run_memory: leaves, each row's leaf id, counters."""
    stats = stats or case.get("stats", STATS)
    codes, seg_n, domains, k = case["codes"], case["seg_n"], case["domains"], case["k"]
    R, d = len(seg_n), len(domains)
    saved = builder._WORKLOAD_FINISH
    builder._WORKLOAD_FINISH = fast
    try:
        p = Partitioner(domains, [KAnonymity(k)], criterion, stat_columns=stats, threads=threads)
        p.next_pid = 1000
        seg = Boxes(np.arange(7, 7 + R, dtype=np.int64), seg_n.astype(np.int64), np.zeros((R, d), np.int64),
                    np.tile([dom.size - 1 for dom in domains], (R, 1)).astype(np.int64), np.full((R, d), -1, np.int64))
        seen = []
        p.progress = seen.append
        # a fresh copy the finish may write over (the lists' codes take the batch's place)
        rows, pid = p.run_memory(Batch(codes.astype(np.int32), list(case["classes"]), list(case["numbers"]),
                                       disposable=True), seg)
    finally:
        builder._WORKLOAD_FINISH = saved
    order = np.argsort(rows)
    return {"leaves": p.leaf_table(), "rows": rows[order], "pid": pid[order], "next_pid": p.next_pid,
            "levels": p.levels, "finished": p.rows_finished,
            "progress": [(s.level, s.open_partitions, s.rows_finished) for s in seen]}


def _domains(rng, d: int, draw) -> list[Domain]:
    out = []
    for j in range(d):
        size = int(rng.choice([1, 2, 3, 7, 60, 3000]))
        if draw(st.booleans()) and out and out[-1].size == size:
            num = out[-1].num  # the same positions as the previous QI: equal ranges are common
        elif draw(st.booleans()):
            num = np.sort(rng.choice(size * 4, size, replace=False)).astype(np.float64) * 0.37 - 5
        else:
            num = np.arange(size, dtype=np.float64)
        out.append(Domain(QI(f"q{j}", "numeric", "INTEGER"), size, "", num))
    return out


@st.composite
def batches(draw, rows: tuple[int, int] = (1, 900)):
    """A batch of 1-3 partitions over 1-4 ordered QIs (ties, skewed codes), two labels (the
    first code stands for NULL) that follow a QI or not, and two targets, integers or floats
    (multiples of 1/4 and 1/2: every sum of them is exact in float64, so the float path must
    give the level-by-level finish's partition bit for bit)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    d = draw(st.integers(1, 4))
    M = draw(st.integers(*rows))
    domains = _domains(rng, d, draw)
    codes = []
    for dom in domains:
        skew = draw(st.sampled_from(["uniform", "geometric", "few"]))
        if skew == "geometric":
            codes.append(np.minimum(rng.geometric(0.2, M) - 1, dom.size - 1))
        elif skew == "few":
            codes.append(rng.choice(rng.integers(0, dom.size, 3), M))
        else:
            codes.append(rng.integers(0, dom.size, M))
    codes = np.vstack(codes)
    noise = draw(st.sampled_from([0.0, 0.2, 1.0]))  # 1.0: the label has nothing to do with the QIs
    follows = (codes[0] * 3 // max(domains[0].size, 1)).astype(np.int64)
    y = np.where(rng.random(M) < noise, rng.integers(0, 3, M), follows)
    z = rng.integers(0, 2, M) if draw(st.booleans()) else np.zeros(M, np.int64)  # z pure or not
    v = (codes[-1] * 7 + rng.integers(-20, 21, M)).astype(np.int64)
    w = rng.choice([-3, 0, 5], M).astype(np.int64)
    R = draw(st.integers(1, 3))
    cuts = np.sort(rng.choice(np.arange(1, M), min(R - 1, M - 1), replace=False)) if M > 1 else np.zeros(0, int)
    seg_n = np.diff(np.concatenate(([0], cuts, [M])))
    k = draw(st.sampled_from([1, 2, 3, 5, 12]))
    case = {"codes": codes, "seg_n": seg_n, "domains": domains, "k": k, "classes": (y, z), "numbers": (v, w)}
    if draw(st.booleans()):
        case.update(numbers=(v * 0.25, w * 0.5), stats=FLOAT_STATS)
    return case


@contextlib.contextmanager
def setting(name: str, value, module=workload_finish) -> Iterator[None]:
    """One of a module's settings (workload_finish's by default) changed for the block
    (hypothesis tests take no function-scoped monkeypatch)."""
    saved = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, saved)


CRITERIA = st.sampled_from([
    InfoGain("y"), InfoGain("y", min_gain=0.05), InfoGain("y", "z"), InfoGain("z", min_gain=0.5),
    Regression("v"), Regression("v", min_gain=40.0), Regression("v", "w"),
    Targets(("y",), ("v",)), Targets(("y", "z"), ()), Targets((), ("w", "v"), 0.1), Targets(("z",), ("v",), 0.02),
    Targets((), ("v",), 0.05),
])


@given(batches(), CRITERIA, st.integers(1, 2))
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_same_leaves_ids_and_rows_as_the_level_by_level_finish(case, criterion, threads):
    assert_same(finish(case, criterion, True, threads), finish(case, criterion, False))


@given(batches(), CRITERIA, st.integers(1, 2), st.sampled_from([None, 3, 60, 10**6]), st.sampled_from([2**15, 0]))
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_binned_qis_give_the_same(case, criterion, threads, width, narrow):
    """QIs of at most ``width`` codes binned (None: none; 10^6: all but the first), scored on
    histograms carried down the tree, their records in 16-bit cells or (``narrow`` 0) 32-bit
    ones: the same leaves, ids and rows as the level-by-level finish."""
    with setting("_BIN_WIDTH", width), setting("_NARROW_CELLS", narrow):
        assert_same(finish(case, criterion, True, threads), finish(case, criterion, False))


@given(batches(), CRITERIA)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_nodes_counting_their_own_totals(case, criterion):
    """Where the nodes' totals would take too much memory, each node counts its own: the same."""
    with setting("_TOTALS", 0):
        assert_same(finish(case, criterion, True), finish(case, criterion, False))


@given(batches(), CRITERIA, st.integers(1, 2), st.sampled_from([0, 1, 7, 40, 150]))
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_wide_nodes_split_on_histograms_give_the_same(case, criterion, threads, wide):
    """The nodes wider than ``wide`` rows split on histograms with sibling subtraction (0:
    every node, leaves included; then the attribute lists take the narrower ones): the same
    leaves, ids and rows as the level-by-level finish."""
    with setting("_HIST_WIDE", wide, histograms):
        assert_same(finish(case, criterion, True, threads), finish(case, criterion, False))


@pytest.mark.parametrize("seed", range(4))
def test_float_sums_hang_on_no_row_order_even_at_exact_ties(monkeypatch, seed):
    """Twin QIs (one the mirror of the other: each cut of one has a cut of the other splitting
    the same rows) score the same cuts from sums taken in different orders; with ties not
    rounded away (``TIE`` far below a float's resolution) the twin chosen hangs on the last bits
    of those sums — and still the tree does not depend on the order the rows came in."""
    monkeypatch.setattr(workload_finish, "TIE", 1e-30)
    rng = np.random.default_rng(seed)
    M = 3000
    a = rng.integers(0, 60, M)
    codes = np.vstack([a, 59 - a, rng.integers(0, 60, M)]).astype(np.int32)
    domains = [Domain(QI(f"q{j}", "numeric", "INTEGER"), 60, "", np.arange(60.0)) for j in range(3)]
    v = rng.normal(0, 1, M) * 1e3 + np.where(a < 30, 0.1, 7.3)

    def run(order: np.ndarray) -> dict:
        out = workload_finish.finish(codes[:, order], np.array([M]), domains, 5, [], [], [v[order]], False, 0.0)
        assert np.array_equal(np.sort(out["row"]), np.arange(M))  # each row once
        leaf = np.empty(M, dtype=np.int64)
        leaf[out["row"]] = out["leaf"]
        return {**out, "leaf": leaf}

    base = run(np.arange(M))
    for _ in range(4):
        perm = rng.permutation(M)
        other = run(perm)
        for key in ("parent", "attr", "cut", "n"):
            np.testing.assert_array_equal(base[key], other[key], err_msg=key)
        np.testing.assert_array_equal(base["leaf"][perm], other["leaf"])


def test_histograms_are_taken_on_a_wide_batch(monkeypatch):
    """The phase runs where a partition is wider than the threshold (it is not skipped)."""
    calls = []
    real = histograms.Histograms.grow
    monkeypatch.setattr(histograms.Histograms, "grow", lambda self, *a: calls.append(self.wide) or real(self, *a))
    monkeypatch.setattr(histograms, "_HIST_WIDE", 10)
    case = one_batch(np.random.default_rng(4), 400, 2, 30, labels=3, spread=9)
    assert_same(finish(case, InfoGain("y"), True), finish(case, InfoGain("y"), False))
    assert calls == [10]


def one_batch(rng: np.random.Generator, M: int, d: int, codes: int, labels: int, spread: int) -> dict:
    """A batch of ``M`` rows, ``d`` uniform QIs of ``codes`` codes, k = 5: label ``y`` of
    ``labels`` values and ``z`` of 2, target ``v`` uniform in ``[-spread, spread)`` and ``w``
    in ``[-3, 3)``."""
    domains = [Domain(QI(f"q{j}", "numeric", "INTEGER"), codes, "", np.arange(float(codes))) for j in range(d)]
    return {"codes": rng.integers(0, codes, size=(d, M)).astype(np.int32), "seg_n": np.array([M]),
            "domains": domains, "k": 5, "classes": (rng.integers(0, labels, M), rng.integers(0, 2, M)),
            "numbers": (rng.integers(-spread, spread, M), rng.integers(-3, 3, M))}


@pytest.mark.parametrize("criterion", [InfoGain("y"), Regression("v")])
def test_a_narrow_child_is_taken_out_of_its_wide_parents_histograms(monkeypatch, criterion):
    """A split of a wide node whose smaller child is narrow subtracts that child's rows from
    the parent's histograms one by one (``_take_out``), one whose children are both wide counts
    the smaller's histograms (``_count``): both happen on a random label's unbalanced splits,
    and the leaves, ids and rows are the level-by-level finish's."""
    calls: list[str] = []
    for name in ("_take_out", "_count"):
        real = getattr(histograms.Histograms, name)
        monkeypatch.setattr(histograms.Histograms, name,
                            lambda self, *a, real=real, name=name: calls.append(name) or real(self, *a))
    monkeypatch.setattr(histograms, "_HIST_WIDE", 60)
    case = one_batch(np.random.default_rng(7), 3000, 3, 400, labels=2, spread=500)
    assert_same(finish(case, criterion, True), finish(case, criterion, False))
    assert "_take_out" in calls and calls.count("_count") > 1  # the root's, and a wide smaller child's


@given(st.integers(1, 3000), st.integers(1, 3), st.integers(1, 5), st.sampled_from([1e-3, 1.0, 1e6, 1e300]),
       st.booleans(), st.integers(0, 2**32 - 1))
@settings(max_examples=150, deadline=None)
def test_canonical_order_is_a_stable_sort_by_partition_then_targets(M, T_n, parts, scale, zeros, seed):
    """The float targets' order (radix passes over their bits): numpy's stable lexsort of
    (partition, first target, ...), negatives, infinities, NaNs and many ties included; with
    both zeros, -0.0 before 0.0 — rows tied hold the same bits."""
    rng = np.random.default_rng(seed)
    value = rng.choice(np.r_[rng.normal(0, scale, 6), -np.inf, np.inf, np.nan], size=(T_n, M))
    if zeros:
        value[:, rng.random(M) < 0.3] = rng.choice([-0.0, 0.0])
        value[0, rng.random(M) < 0.3] = -0.0
    cuts = np.sort(rng.integers(0, M + 1, parts - 1))
    seg_n = np.diff(np.concatenate(([0], cuts, [M])))
    seg_n = seg_n[seg_n > 0]
    order = workload_finish._canonical_order(value, seg_n)
    part = np.repeat(np.arange(len(seg_n)), seg_n)
    bits = [np.where(np.signbit(value[u]), -1.0, 1.0) for u in range(T_n)]  # -0.0 before 0.0
    expected = np.lexsort([x for u in range(T_n - 1, -1, -1) for x in (bits[u], value[u])] + [part])
    np.testing.assert_array_equal(order, expected)


@given(st.integers(1, 3000), st.sampled_from([1, 3, 100, 2**16, 2**16 + 1, 70_000, 2**20, 2**31 - 1]),
       st.integers(1, 6), st.integers(0, 50), st.integers(0, 3), st.integers(0, 2), st.integers(0, 2**32 - 1))
@settings(max_examples=150, deadline=None)
def test_segment_lists_are_a_stable_sort_by_partition_then_code(M, width, parts, first, T_c, T_n, seed):
    """One QI's list of a region of several partitions (one counting pass, or beyond 2^16 codes
    in a partition two passes of half the bits each, an odd count's larger half first), written
    from position ``first`` on: the rows by partition, then code, ties by row, each with its
    position, code, label slots and targets (none, one, or more: the first moved with its row,
    the others gathered after); nothing before ``first`` or after the region written."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, width, M).astype(np.int32)
    cuts = np.sort(rng.choice(np.arange(1, M), min(parts - 1, M - 1), replace=False)) if M > 1 else np.zeros(0, int)
    seg_n = np.diff(np.concatenate(([0], cuts, [M]))).astype(np.int64)
    label = rng.integers(0, 5, (T_c, M)).astype(np.int32)
    value = rng.normal(size=(T_n, M))
    size = first + M + 7
    row, code = np.full(size, -1, np.int32), np.full(size, -1, np.int32)
    list_label, list_value = np.full((T_c, size), -1, np.int16), np.full((T_n, size), -1.0)
    workload_finish._segment_lists(codes, seg_n, label, value, first, row, code, list_label, list_value)
    expected = np.lexsort((np.arange(M), codes, np.repeat(np.arange(len(seg_n)), seg_n)))
    mine = slice(first, first + M)
    np.testing.assert_array_equal(row[mine], first + expected)
    np.testing.assert_array_equal(code[mine], codes[expected])
    np.testing.assert_array_equal(list_label[:, mine], label[:, expected])
    np.testing.assert_array_equal(list_value[:, mine], value[:, expected])
    rest = np.r_[0:first, first + M:size]
    assert (row[rest] == -1).all() and (code[rest] == -1).all()
    assert (list_label[:, rest] == -1).all() and (list_value[:, rest] == -1).all()


@given(st.integers(0, 9000), st.integers(1, 5), st.integers(1, 3), st.integers(0, 2**32 - 1))
@settings(max_examples=40, deadline=None)
def test_columns_of_a_row_major_batch(M, d, threads, seed):
    """The Median finish's row-major codes (the ``.T`` view of :func:`builder.interleaved`) and
    a fetched batch's stacked ones give the workload finish the same contiguous (d, M) codes."""
    rng = np.random.default_rng(seed)
    columns = [rng.integers(0, 2**31 - 1, M).astype(np.int32) for _ in range(d)]
    expected = np.array(columns, dtype=np.int32).reshape(d, M)
    got = workload_finish._columns(builder.interleaved(columns).T, threads)
    assert got.flags.c_contiguous and got.dtype == np.int32
    np.testing.assert_array_equal(got, expected)
    stacked = workload_finish.stacked(columns)
    assert workload_finish._columns(stacked, threads) is stacked  # already so: not copied
    np.testing.assert_array_equal(stacked, expected)


def test_label_of_many_values():
    """Label slots beyond 16 bits (kept in 32) give the same."""
    rng = np.random.default_rng(9)
    M, size = 80, 33000
    domains = [Domain(QI("q0", "numeric", "INTEGER"), 50, "", np.arange(50.0))]
    stats = (StatColumn("y", "class", size=size), StatColumn("v", "numeric", exact=True))
    case = {"codes": rng.integers(0, 50, (1, M)), "seg_n": np.array([M]), "domains": domains, "k": 3,
            "classes": (rng.choice([0, 5, size - 1], M),), "numbers": (rng.integers(0, 9, M),)}
    criterion = Targets(("y",), ("v",))  # (InfoGain's pure-class check of the general path is heavy here)
    assert_same(finish(case, criterion, True, stats=stats), finish(case, criterion, False, stats=stats))


def test_deep_unbalanced_trees_on_two_threads():
    """A noisy label splits unevenly (a deep tree, large partitions for many levels: the wide
    first phase on two threads), with and without min_gain — whose weak partitions take the
    Median choice — and a numeric target beside it."""
    rng = np.random.default_rng(7)
    M = 2 * median_finish.PARALLEL_ROWS + 4321
    sizes = [5000, 40, 3, 60000]
    domains = [Domain(QI(f"q{j}", "numeric", "INTEGER"), s, "", np.arange(s, dtype=np.float64))
               for j, s in enumerate(sizes)]
    codes = np.vstack([rng.integers(0, 5000, M), np.minimum(rng.geometric(0.05, M), 39),
                       rng.integers(0, 3, M), rng.integers(0, 60000, M)])
    y = np.where(rng.random(M) < 0.9, rng.integers(0, 3, M), codes[1] % 3)
    case = {"codes": codes, "seg_n": np.array([M - 30000, 30000]), "domains": domains, "k": 20,
            "classes": (y, rng.integers(0, 2, M)), "numbers": (rng.integers(-100, 100, M), np.zeros(M, np.int64))}
    levels = {}
    for criterion in (InfoGain("y"), InfoGain("y", min_gain=0.01), Targets(("y",), ("v",))):
        fast = finish(case, criterion, True, threads=2)
        assert_same(fast, finish(case, criterion, False))
        levels[criterion] = fast["levels"]
    assert levels[InfoGain("y")] > 3 * np.log2(M / 20)  # far deeper than a balanced tree
    assert levels[InfoGain("y", min_gain=0.01)] < levels[InfoGain("y")] / 2  # weak partitions split at the median


def test_every_partition_weak_is_median_mondrian():
    """With a min_gain no split reaches, every partition takes the Median choice: the leaves,
    ids and rows of Median Mondrian (through median_finish)."""
    rng = np.random.default_rng(3)
    M = 3000
    domains = [Domain(QI(f"q{j}", "numeric", "INTEGER"), s, "", np.arange(s, dtype=np.float64))
               for j, s in enumerate([100, 7, 2000])]
    codes = np.vstack([rng.integers(0, s, M) for s in (100, 7, 2000)])
    case = {"codes": codes, "seg_n": np.array([M]), "domains": domains, "k": 4,
            "classes": (rng.integers(0, 3, M), rng.integers(0, 2, M)), "numbers": (rng.integers(0, 9, M),) * 2}
    median = finish(case, Median(), True)
    for criterion in (InfoGain("y", min_gain=1e9), Regression("v", min_gain=1e9), Targets(("y",), ("v",), 1e9)):
        assert_same(finish(case, criterion, True), median)


def test_general_path_where_it_does_not_apply():
    """Hierarchies, models without a compiled face, integer and float targets together, partitions
    beyond the c ln c table and other criteria are not this finish's; a suppression budget is
    (tests/mondrian/test_workload_suppression_compiled.py)."""
    ordered = [Domain(QI("a", "numeric", "INTEGER"), 5, "", np.arange(5.0))]
    hierarchy = dataclasses.replace(ordered[0], num=None)  # a hierarchical QI's domain has no positions
    k, none = [KAnonymity(3)], np.zeros(1, np.int64)
    assert workload_finish.applies(InfoGain("y"), k, ordered, none, [], 100)
    assert workload_finish.applies(Targets(("y",), ("v",)), k, ordered, none, [True], 100)
    assert not workload_finish.applies(InfoGain("y"), k, ordered + [hierarchy], none, [], 100)
    assert workload_finish.applies(InfoGain("y"), k + [EntropyLDiversity("s", 2)], ordered, none, [], 100)
    floats = k + [VarianceDiversity("x", 1.0)]  # a model without a compiled face on floats
    assert not workload_finish.applies(InfoGain("y"), floats, ordered, none, [], 100)
    assert workload_finish.applies(InfoGain("y"), floats, ordered, none, [], 100, lambda column: column == "x")
    assert workload_finish.applies(InfoGain("y"), k, ordered, np.array([2]), [], 100)  # a budget
    assert workload_finish.applies(Regression("v"), k, ordered, none, [False], 100)  # a float target
    assert workload_finish.applies(Regression("v", "w"), k, ordered, none, [False, False], 100)
    assert not workload_finish.applies(Regression("v", "w"), k, ordered, none, [True, False], 100)
    assert workload_finish.applies(InfoGain("y"), k, ordered, none, [], 10_000_000)  # a 10M-row table in one batch
    assert not workload_finish.applies(InfoGain("y"), k, ordered, none, [], XLOGX_ROWS)
    assert not workload_finish.applies(Median(), k, ordered, none, [], 100)
    assert not workload_finish.applies(Selections("a < 2", InfoGain("y")), k, ordered, none, [], 100)


def test_c_ln_c_table_beyond_two_to_the_23():
    """The table serves the counts of a 10M-row partition (the depth-first finish reads
    ``table[n]`` of its largest), with numpy's ``c ln c`` of each count, and stops at
    :data:`XLOGX_ROWS`."""
    table = xlogx_table(2**23 + 5)
    assert 2**23 + 5 < len(table) <= XLOGX_ROWS
    c = np.array([0, 1, 2, 2**23 - 1, 2**23, 2**23 + 5, len(table) - 1], dtype=np.float64)
    assert np.array_equal(table[c.astype(np.int64)], c * np.log(np.maximum(c, 1.0)))
    assert xlogx_table(XLOGX_ROWS) is None


def test_default_memory_rows_caps_only_the_level_by_level_finish():
    """Without ``memory_rows=``, a request a depth-first finish takes (Median or a workload
    criterion under k-anonymity and privacy models with a compiled face) keeps the engine-sized
    budget (a 10M-row table is finished in memory: faster than SQL levels), the others are
    capped at 2M rows (the SQL levels beat the level-by-level numpy finish)."""
    from sqlanon.engine import engine_for
    from sqlanon.request.spec import DEFAULT_MEMORY_ROWS, default_memory_rows

    con = duckdb.connect()
    con.execute("SET memory_limit = '20GB'")
    con.execute("CREATE TABLE t AS SELECT i AS a, i % 7 AS b, (i % 3)::VARCHAR AS y, i % 11 AS v, "
                "i / 3.0 AS f, (i % 5)::VARCHAR AS s, (i % 4)::VARCHAR AS h FROM range(100) r(i)")
    engine = engine_for(con)
    sized = default_memory_rows(engine)
    assert sized > DEFAULT_MEMORY_ROWS

    def rows(qid=("a", "b"), **kw) -> int:
        return sqlanon.Request("t", list(qid), 5, **request_options(**kw)).resolve(engine).memory_rows

    assert rows() == sized  # Median
    assert rows(sensitive="s", l=2) == sized  # Median under l-diversity: its compiled face
    variance = sqlanon.VarianceDiversity("f", 1.0)  # over a column summed in floats: no compiled face
    assert rows(constraints=[variance]) == DEFAULT_MEMORY_ROWS
    assert rows(constraints=[sqlanon.VarianceDiversity("v", 1.0)]) == sized  # summed as integers
    assert rows(("a", "h"), hierarchies={"h": {"*": ["0", "1", "2", "3"]}}) == DEFAULT_MEMORY_ROWS
    assert rows(suppression=0.1) == sized  # Median's finish carries a suppression budget
    assert rows(suppression=0.1, target="y") == sized  # the workload finish carries one too
    assert rows(target="y") == sized  # InfoGain
    assert rows(target="v") == sized  # Regression on an integer target: summed exactly
    assert rows(target=["y", "v"]) == sized  # Targets
    assert rows(target="f") == sized  # a float target: summed in float64
    assert rows(target=["v", "f"]) == DEFAULT_MEMORY_ROWS  # both: the level-by-level finish
    assert rows(target="y", sensitive="s", l=2) == sized  # l-diversity: its compiled face
    assert rows(target="y", constraints=[variance]) == DEFAULT_MEMORY_ROWS
    assert rows(target="v", constraints=[sqlanon.TCloseness("s", 0.3)]) == sized
    assert rows(target="v", suppression=0.1, sensitive="s", l=2) == sized
    assert rows(("a", "h"), target="y") == sized  # an ordered VARCHAR QI
    assert rows(("a", "h"), target="y", hierarchies={"h": {"*": ["0", "1", "2", "3"]}}) == DEFAULT_MEMORY_ROWS
    assert rows(target="y", memory_rows=7) == 7  # given: kept


def test_release_with_a_model_without_face_takes_the_general_path(monkeypatch):
    """Through anonymize: the finish is never called for a request outside its scope."""
    def refuse(*args, **kwargs):
        raise AssertionError("workload_finish.finish called outside its scope")

    rng = np.random.default_rng(1)
    n = 300
    frame = pd.DataFrame({"id": np.arange(n), "a": rng.integers(0, 50, n), "s": rng.choice(list("ABCD"), n),
                          "label": rng.choice(["p", "q"], n), "x": rng.normal(0, 1, n), "c": rng.integers(0, 9, n)})
    con = duckdb.connect()
    con.register("frame", frame)
    con.execute("CREATE TABLE t AS SELECT * FROM frame")
    monkeypatch.setattr(workload_finish, "finish", refuse)
    sqlanon.anonymize(con, "t", qid=["a"], k=5, privacy=[sqlanon.VarianceDiversity("x", 0.01)], target="label",
                      output=sqlanon.Output(key="id"))  # variance over a float column: no compiled face
    # float and integer
    sqlanon.anonymize(con, "t", qid=["a"], k=5, target=["x", "c"], output=sqlanon.Output(replace=True, key="id"))
    with pytest.raises(AssertionError, match="outside its scope"):
        sqlanon.anonymize(con, "t", qid=["a"], k=5, target="label", output=sqlanon.Output(replace=True, key="id"))


# -- through the whole release ----------------------------------------------------------------
@st.composite
def tables(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(30, 500))
    columns = {}
    for j in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["int", "float", "date", "text"]))
        values = rng.integers(0, int(rng.choice([2, 9, 300])), n)
        if kind == "float":
            column = pd.Series(values * 0.5 - 3, dtype="Float64")
        elif kind == "date":
            column = pd.Series(pd.Timestamp("2020-01-01") + pd.to_timedelta(values * 3, unit="D"))
        elif kind == "text":
            column = pd.Series([f"v{v:04d}" for v in values], dtype=object)
        else:
            column = pd.Series(values, dtype="Int64")
        if draw(st.booleans()):
            column = column.mask(rng.random(n) < 0.15)
        columns[f"q{j}"] = column
    label = pd.Series(rng.choice(["p", "q", "r"], n), dtype=object)
    columns["label"] = label.mask(rng.random(n) < 0.1)  # a NULL label is a value of its own
    columns["amount"] = pd.Series(rng.integers(-500, 500, n) + (columns["q0"].notna() * 100), dtype="Int64")
    # a float target of multiples of 1/4 summing to 0: its center (the mean) is 0 and every sum of
    # it exact, in SQL and in memory, so the float paths must agree bit for bit too
    share = rng.integers(-40, 40, n) * 0.25
    share[-1] -= share.sum()
    columns["share"] = pd.Series(share, dtype="float64")
    target = draw(st.sampled_from([["label"], ["amount"], ["label", "amount"], ["share"], ["label", "share"]]))
    return pd.DataFrame(columns), target, draw(st.sampled_from([2, 5, 17]))


@given(tables())
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_same_release_whatever_memory_rows(case):
    """Numbers, dates, text, NULLs; SQL levels first (small ``memory_rows``) or not at all: the
    same rules and view with the finish on, off, and for every ``memory_rows``."""
    frame, target, k = case
    qid = [c for c in frame.columns if c.startswith("q")]
    expected = release_rows(frame, "_WORKLOAD_FINISH", False, 10**9, qid=qid, k=k, target=target)
    for memory_rows in (0, 40, 10**9):
        assert release_rows(frame, "_WORKLOAD_FINISH", True, memory_rows, qid=qid, k=k, target=target) == expected


@pytest.mark.spark
def test_spark_executors_publish_the_general_paths_rules(spark):
    """On Spark the finish runs on the executors (BatchFinish, the module's default: on): the
    rules and view are DuckDB's with the finish switched off."""
    from tests.support.engines import load, rules, table_of

    rng = np.random.default_rng(4)
    n = 600
    frame = pd.DataFrame({"id": np.arange(n, dtype=np.int64), "a": rng.integers(0, 300, n).astype(np.int64),
                          "b": rng.integers(0, 9, n).astype(np.int64), "label": rng.choice(["x", "y", "z"], n),
                          "amount": rng.integers(-50, 50, n).astype(np.int64)})
    duck = duckdb.connect()
    saved = builder._WORKLOAD_FINISH
    try:
        out = []
        for con, fast in ((duck, False), (spark, True)):
            builder._WORKLOAD_FINISH = fast
            load(con, "t", frame)
            out.append(sqlanon.anonymize(con, "t", qid=["a", "b"], k=7, target=["label", "amount"],
                                         algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=150)),
                                         output=sqlanon.Output(view="t_anon", replace=True, key="id")))
        assert rules(duck, out[0]) == rules(spark, out[1])
        assert table_of(duck, "t_anon") == table_of(spark, "t_anon")
    finally:
        builder._WORKLOAD_FINISH = saved
        duck.close()


@given(st.integers(0, 3000), st.integers(0, 3), st.integers(0, 2), st.booleans(), st.integers(1, 3),
       st.integers(0, 2**32 - 1))
@settings(max_examples=80, deadline=None)
def test_gathered_rows_are_numpys_fancy_index(M, T_c, T_n, permutation, threads, seed):
    """A batch's codes, label slots and targets gathered (:func:`gather.gathered`: a float
    target's batch in canonical order, the regions' order, a histogram take-out's few rows):
    each array's ``x[:, rows]`` with its dtype, whatever the threads."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(-2**31, 2**31 - 1, (3, M)).astype(np.int32)
    slots = rng.integers(0, 40, (T_c, M)).astype(np.int16)
    values = rng.normal(size=(T_n, M))
    rows = (rng.permutation(M) if permutation else np.sort(rng.choice(M, rng.integers(0, M + 1), replace=False))
            ).astype(np.int64)
    got = gather.gathered((codes, slots, values), rows, threads)
    assert len(got) == 3
    for g, x in zip(got, (codes, slots, values)):
        np.testing.assert_array_equal(g, x[:, rows])
        assert g.dtype == x.dtype and g.shape == (x.shape[0], len(rows))


@given(st.integers(0, 400), st.integers(0, 60), st.integers(1, 4), st.integers(0, 2**32 - 1))
@settings(max_examples=120, deadline=None)
def test_split_rows_is_a_stable_partition_on_any_threads(M, s, threads, seed):
    """The histogram phase's split of a node's rows (:func:`histograms._split_rows`, a piece per
    thread, then rotated together): the rows with code at most the cut first, each side in its
    order (numpy's stable sort on the side), the rows outside the node untouched."""
    rng = np.random.default_rng(seed)
    size = s + M + int(rng.integers(0, 30))
    codes = rng.integers(0, 12, (2, size)).astype(np.int32)
    order = rng.permutation(size).astype(np.int64)
    c = int(rng.integers(-1, 13))
    node = order[s:s + M]
    side = codes[1, node] > c
    expected = order.copy()
    expected[s:s + M] = node[np.argsort(side, kind="stable")]
    saved = histograms._SPLIT_PIECE
    histograms._SPLIT_PIECE = 1
    try:
        left = histograms._split_rows(order, np.full(size, -7, np.int64), codes, 1, c, s, M, int((~side).sum()),
                                      threads)
    finally:
        histograms._SPLIT_PIECE = saved
    assert left == int((~side).sum())
    np.testing.assert_array_equal(order, expected)
