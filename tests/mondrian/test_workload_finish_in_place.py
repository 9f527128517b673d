"""The workload finish's gathers over its own arrays (:func:`sqlanon.mondrian.compiled.gather.permuted`):
the batch's codes, label slots and targets put in canonical order and in the regions' order
over themselves when the finish may write over them (``disposable``), the few rows of a
histogram split gathered into one kept spare — the same node table as the finish that gathers
into new arrays and leaves its input as it was."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlanon.model.domain import Domain
from sqlanon.model.qi import QI
from sqlanon.mondrian.compiled import gather, histograms, workload_finish


@given(st.integers(0, 2**32 - 1), st.integers(0, 400), st.integers(1, 3),
       st.lists(st.sampled_from(["int16", "int32", "int64", "float64"]), min_size=1, max_size=6), st.booleans())
@settings(max_examples=150, deadline=None)
def test_permuted_is_a_gather_over_each_row(seed, M, threads, kinds, again):
    """Every row becomes ``row[order]``, whatever its type, on any number of threads, with
    spares new or kept from a previous call."""
    rng = np.random.default_rng(seed)
    rows = [rng.integers(-1000, 1000, M).astype(kind) for kind in kinds]
    want = []
    order = rng.permutation(M).astype(np.int64)
    spares = None
    if again:  # the spares of a first call, used by the second
        first = rng.permutation(M).astype(np.int64)
        spares = gather.permuted(rows, first, threads)
        rows = [r.copy() for r in rows]
    want = [r[order] for r in rows]
    gather.permuted(rows, order, threads, spares)
    for got, expected in zip(rows, want):
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)


@st.composite
def batches(draw):
    """A batch of 1-3 partitions over 1-4 QIs of few (binned) or many codes, a label or none,
    and float targets (the canonical order) or integer ones."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    d = draw(st.integers(1, 4))
    M = draw(st.integers(2, 1500))
    sizes = [int(rng.choice([2, 7, 60, 600, 3000])) for _ in range(d)]
    codes = np.vstack([rng.integers(0, s, M) for s in sizes]).astype(np.int32)
    domains = [Domain(QI(f"q{j}", "numeric", "INTEGER"), s, "", np.arange(float(s))) for j, s in enumerate(sizes)]
    classes = [rng.integers(0, 3, M)] if draw(st.booleans()) else []
    v = (codes[-1] * 7 + rng.integers(-20, 21, M)).astype(np.int64)
    numbers = [v * 0.25] if draw(st.booleans()) else [v]
    if not classes and draw(st.booleans()):
        numbers.append(rng.normal(0, 10, M) if numbers[0].dtype.kind == "f" else rng.integers(-9, 9, M))
    R = draw(st.integers(1, 3))
    cuts = np.sort(rng.choice(np.arange(1, M), min(R - 1, M - 1), replace=False))
    seg_n = np.diff(np.concatenate(([0], cuts, [M]))).astype(np.int64)
    return codes, seg_n, domains, draw(st.sampled_from([1, 2, 5, 12])), classes, numbers


@given(batches(), st.sampled_from([None, 0, 7, 150]), st.sampled_from([None, 0]))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_in_place_gathers_give_the_same_node_table(case, wide, bins):
    """``disposable``: the finish writes over its input; else it leaves it untouched. Both give
    the same node table, leaves and rows, the nodes wider than ``wide`` split on histograms (0:
    every node, so the few rows of a split are gathered into the kept spare) and the QIs of few
    codes binned or not (``bins`` 0: none)."""
    codes, seg_n, domains, k, classes, numbers = case
    args = (seg_n, domains, k, classes, [3] * len(classes), numbers, False, 0.0, 1)
    saved = histograms._HIST_WIDE, workload_finish._BIN_WIDTH
    histograms._HIST_WIDE = wide
    workload_finish._BIN_WIDTH = 256 if bins is None else bins
    try:
        kept = codes.copy()
        fresh = workload_finish.finish(codes, *args, disposable=False)
        np.testing.assert_array_equal(codes, kept)  # not disposable: the input as it was
        mine = codes.copy()
        over = workload_finish.finish(mine, *args, disposable=True)
    finally:
        histograms._HIST_WIDE, workload_finish._BIN_WIDTH = saved
    assert fresh.keys() == over.keys()
    for key in fresh:
        np.testing.assert_array_equal(fresh[key], over[key], err_msg=key)
    assert np.array_equal(np.sort(over["row"]), np.arange(len(codes[0])))
