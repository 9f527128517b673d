"""The histogram phase's few-row take-outs, gathered into its kept spares, reach the filling
kernel as contiguous arrays, as the batch's own arrays do: one compiled specialization of
:func:`histograms._fill`, not a second one for a strided layout (issue 52, "no silent first
run": every specialization is compiled, and cached, on its own)."""

from __future__ import annotations

import numpy as np

from sqlanon.mondrian.compiled import gather, histograms


def test_gathered_into_spares_is_contiguous_and_numpys_fancy_index() -> None:
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 50, (4, 300)).astype(np.int32)
    values = rng.integers(-9, 9, (2, 300)).astype(np.int64)
    rows = np.sort(rng.choice(300, 40, replace=False)).astype(np.int64)
    spares = (np.empty((4, 75), np.int32), np.empty((2, 75), np.int64))
    got = gather.gathered((codes, values), rows, 2, spares)
    for g, x, spare in zip(got, (codes, values), spares):
        np.testing.assert_array_equal(g, x[:, rows])
        assert g.flags.c_contiguous and np.shares_memory(g, spare)


def test_take_outs_and_counts_fill_with_one_specialization() -> None:
    rng = np.random.default_rng(5)
    d, M = 3, 400
    codes = rng.integers(0, 30, (d, M)).astype(np.int32)
    slots = rng.integers(0, 2, (1, M)).astype(np.int32)
    values = np.zeros((0, M), np.int64)
    lo, hi = codes.min(axis=1).astype(np.int64), codes.max(axis=1).astype(np.int64)
    h = histograms.Histograms.of(codes, slots, values, np.array([0, 2], np.int64), 10, lo, hi)
    assert h is not None
    order = rng.permutation(M).astype(np.int64)
    cnt, mom, bcnt = h._count(order, 0, M, 2)  # every row: read in place
    # the specializations the batch's own arrays need (other tests in this process may have
    # compiled others, for other types: only what the take-out adds counts)
    in_place = {str(sig) for sig in histograms._fill.signatures}
    few = M // histograms._GATHER_PART - 7  # gathered, into the first cells of the kept spares
    h._take_out(order, 0, few, cnt, mom, bcnt, 2)
    expected = h._count(order, few, M - few, 2)
    for got, want in zip((cnt, mom, bcnt), expected):
        np.testing.assert_array_equal(got, want)
    added = {str(sig) for sig in histograms._fill.signatures} - in_place
    assert not added, added  # before: a second, strided specialization
