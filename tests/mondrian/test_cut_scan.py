"""Scoring a node's QI in one pass (sqlanon/mondrian/compiled/cut_scan.py) picks the cut that scoring
every allowable cut exactly picks — also where blocks of cuts are ruled out whole by a bound
(labels: :func:`_box_bound`; numeric targets: :func:`_moment_bound`), on targets that follow
the QI and on targets that have nothing to do with it (where nearly every block is ruled
out), integers and floats, normalized or not. And the bounds are bounds: never above the
estimate of a cut they cover."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlanon.model import score_kernels as sk
from sqlanon.model.summaries import xlogx_table
from sqlanon.mondrian.compiled import cut_scan
from sqlanon.mondrian.compiled.cut_scan import _estimate, _moment_bound, scan, scan_bins
from sqlanon.mondrian.split import TIE


@st.composite
def nodes(draw):
    """A node's list of one QI: ``m`` rows in code order (codes distinct or much repeated),
    0-2 labels (2 and 3 values) and 0-2 targets (integers — some as large as a salary's
    squares allow — or floats with exact sums), each following the code, or not at all."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    m = draw(st.integers(2, 4000))
    codes = np.sort(rng.integers(0, draw(st.sampled_from([3, 50, 10**6])), m)).astype(np.int32)
    T_c = draw(st.integers(0, 2))
    T_n = draw(st.integers(0 if T_c else 1, 2))
    follows = draw(st.sampled_from([0.0, 0.3, 1.0]))  # how much of each target the code decides
    sizes = [2, 3][:T_c]
    labels = []
    for size in sizes:
        own = rng.integers(0, size, m)
        labels.append(np.where(rng.random(m) < follows, codes % size, own))
    floats = draw(st.booleans())
    scale = draw(st.sampled_from([1, 1000, 250_000]))
    values = []
    for _ in range(T_n):
        x = rng.integers(-scale, scale + 1, m) + np.round(follows * scale * np.sin(codes / 7.0)).astype(np.int64)
        values.append(x * 0.25 if floats else x)
    k = draw(st.sampled_from([1, 2, 5, 20, 100]))
    return {"codes": codes, "labels": labels, "sizes": sizes, "values": values, "k": k,
            "normalize": draw(st.booleans()) and T_c + T_n > 1, "floats": floats}


def _node(case):
    """The arrays :func:`scan` reads: one list (QI 0), the node's totals and impurities."""
    m = len(case["codes"])
    off = np.concatenate(([0], np.cumsum(case["sizes"]))).astype(np.int64)
    table = xlogx_table(m)
    kind = np.float64 if case["floats"] else np.int64
    label = np.zeros((1, len(case["labels"]), m), np.int16)
    for u, lab in enumerate(case["labels"]):
        label[0, u] = lab + off[u]
    value = np.zeros((1, len(case["values"]), m), kind)
    for u, x in enumerate(case["values"]):
        value[0, u] = x
    whole = np.bincount(label[0].ravel(), minlength=int(off[-1])).astype(np.int64)
    moments = np.zeros((value.shape[1], 3), kind)
    for u in range(value.shape[1]):
        moments[u] = (m, value[0, u].sum(), (value[0, u] * value[0, u]).sum())
    T_c = len(off) - 1
    partition = np.zeros(T_c + value.shape[1])
    for u in range(T_c):
        partition[u] = sk.class_entropy(whole[off[u]:off[u + 1]], table)
    for u in range(value.shape[1]):
        partition[T_c + u] = sk._squared_error(moments[u, 0], moments[u, 1], moments[u, 2])
    base = sum((p / p if p > 0 else 0.0) if case["normalize"] else p for p in partition)
    return label, value, off, table, whole, moments, partition, base


def brute_force(case):
    """Every allowable cut scored exactly: ``(found, cut, rows left, key, gain)`` of the
    smallest ``(key, |2L - m|, cut)``."""
    codes, m, least = case["codes"], len(case["codes"]), max(1, case["k"])
    label, value, off, table, whole, moments, partition, base = _node(case)
    best = None
    ends = np.nonzero(np.diff(codes))[0] + 1  # rows left of each cut
    for nl in ends.tolist():
        if nl < least or m - nl < least:
            continue
        left = np.bincount(label[0, :, :nl].ravel(), minlength=int(off[-1])).astype(np.int64)
        impurity = 0.0
        for u in range(len(off) - 1):
            h = sk.children_entropy(left[off[u]:off[u + 1]], whole[off[u]:off[u + 1]], table)
            impurity = sk.add_term(impurity, h, partition[u], case["normalize"])
        for u in range(value.shape[1]):
            x = value[0, u, :nl]
            e = sk.children_squared_error(nl, x.sum(), (x * x).sum(), *moments[u])
            impurity = sk.add_term(impurity, e, partition[len(off) - 1 + u], case["normalize"])
        key = sk.cut_key(impurity, base, TIE)
        mine = (key, abs(2 * nl - m), int(codes[nl - 1]))
        if best is None or mine < best[0]:
            best = (mine, nl, sk.cut_gain(impurity, base, m))
    if best is None:
        return False, 0, 0, 0.0, 0.0
    return True, best[0][2], best[1], best[0][0], best[2]


def one_pass(case):
    """:func:`scan` of the node's list."""
    label, value, off, table, whole, moments, partition, base = _node(case)
    code = case["codes"].reshape(1, -1)
    T_n = value.shape[1]
    out = scan(code, label, value, 0, 0, code.shape[1], max(1, case["k"]), whole, np.zeros_like(whole),
                moments, np.zeros((T_n, 3), moments.dtype), partition, base, off, table, case["normalize"], TIE)
    return tuple(out[:5])


def block_sums(cnt, W):
    """A histogram's block sums: per :data:`cut_scan.BLOCK` bins from 0, its rows and label
    counts (as :class:`sqlanon.mondrian.compiled.histograms.Histograms` keeps them)."""
    bins = len(cnt) // W
    padded = np.zeros(-(-bins // cut_scan.BLOCK) * cut_scan.BLOCK * W, cnt.dtype)
    padded[:len(cnt)] = cnt
    return padded.reshape(-1, cut_scan.BLOCK, W).sum(axis=1).astype(cnt.dtype).ravel()


def from_histogram(case, blocks=False):
    """:func:`scan_bins` of the node's histogram (its codes shifted into bins from a few
    empty ones: its first code need not start a block), with its block sums when ``blocks``."""
    label, value, off, table, whole, moments, partition, base = _node(case)
    codes = case["codes"].astype(np.int64)
    lo, hi = int(codes[0]), int(codes[-1])
    B = hi - lo + 1
    if B > 20_000:
        codes = np.unique(codes, return_inverse=True)[1]  # dense: a histogram of every code present
        lo, hi, B = 0, int(codes[-1]), int(codes[-1]) + 1
    pad = int(case["codes"][0]) % cut_scan.BLOCK
    bins = pad + codes - lo
    L = int(off[-1])
    T_n = value.shape[1]
    cnt = np.zeros((pad + B) * (L + 1), np.int32)
    np.add.at(cnt, bins * (L + 1), 1)
    for u in range(label.shape[1]):
        np.add.at(cnt, bins * (L + 1) + 1 + label[0, u], 1)
    mom = np.zeros((pad + B) * T_n * 2, moments.dtype)
    for u in range(T_n):
        np.add.at(mom, (bins * T_n + u) * 2, value[0, u])
        np.add.at(mom, (bins * T_n + u) * 2 + 1, value[0, u] * value[0, u])
    out = scan_bins(cnt, block_sums(cnt, L + 1) if blocks else cnt[:0], mom, L, pad - lo, lo, hi, len(codes),
                     max(1, case["k"]), whole, np.zeros_like(whole), moments, np.zeros((T_n, 3), moments.dtype),
                     partition, base, off, table, case["normalize"], TIE)
    found, c, nl, key, gain, median_c, median_l = out
    if found and B != case["codes"][-1] - case["codes"][0] + 1:
        c = int(np.unique(case["codes"])[c])  # back to the QI's code
    return found, (c if found else 0), nl, key, gain, int(median_c), int(median_l)


@given(nodes())
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
def test_one_pass_picks_the_cut_every_cut_scored_picks(case):
    """The cut, its rows, key and gain: bit for bit those of scoring every allowable cut."""
    expected = brute_force(case)
    got = one_pass(case)
    assert got[:3] == expected[:3]
    if expected[0]:
        assert got[3] == expected[3] and got[4] == expected[4]


@given(nodes())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
def test_a_histogram_picks_what_the_list_picks(case):
    """:func:`scan_bins` of the node's histogram, with its block sums and without: the list's
    choice (its blocks are codes)."""
    expected = brute_force(case)
    got = from_histogram(case)
    assert got[:3] == expected[:3]
    if expected[0]:
        assert got[3] == expected[3] and got[4] == expected[4]
    assert from_histogram(case, blocks=True) == got  # the median's cut too


@pytest.mark.parametrize("floats", [False, True])
@pytest.mark.parametrize("normalize", [False, True])
def test_the_moment_bound_is_never_above_a_cut_it_covers(floats, normalize):
    """For random blocks of rows — targets random or following the rows, centred or far from
    0 — :func:`_moment_bound` is at most the target terms of :func:`_estimate` of every cut in
    the block, less nothing but roundings; and on a random target it is close (it rules out)."""
    rng = np.random.default_rng(3 + floats + 2 * normalize)
    table = xlogx_table(10)
    off = np.zeros(1, np.int64)
    empty = np.zeros(0, np.int64)
    close = 0
    for trial in range(400):
        m = int(rng.integers(40, 5000))
        T_n = int(rng.integers(1, 3))
        shift = rng.choice([0, 10**4, -(10**6)])
        x = rng.integers(-250_000, 250_001, (T_n, m)) + shift
        if trial % 3 == 0:
            x = x + np.arange(m) * 400  # following the rows
        x = x * 0.25 if floats else x
        moments = np.array([[m, x[u].sum(), (x[u] * x[u]).sum()] for u in range(T_n)], x.dtype)
        partition = np.array([sk._squared_error(*moments[u]) for u in range(T_n)])
        centre = moments[:, 1] / m
        a = int(rng.integers(1, m - 1))
        b = int(min(m - 1, a + rng.integers(0, 64)))
        prefix = np.cumsum(x, axis=1)
        squares = np.cumsum(x * x, axis=1)
        e = prefix[:, a - 1:b] - np.arange(a, b + 1) * centre[:, None]
        bound = _moment_bound(a, b, m, e.min(axis=1), e.max(axis=1), centre, moments, partition, off, normalize)
        _, cap = cut_scan._boxes(m, moments, partition, off, table, normalize)
        lowest = np.inf
        for nl in range(a, b + 1):
            left = np.zeros((T_n, 3), x.dtype)
            left[:, 1], left[:, 2] = prefix[:, nl - 1], squares[:, nl - 1]
            estimate, _ = _estimate(nl, m, empty, empty, moments, left, partition, off, table, normalize)
            lowest = min(lowest, estimate)
        assert bound <= lowest + cap * 2.0**-45, (trial, bound, lowest)
        close += trial % 3 != 0 and bound >= lowest * (1 - 1e-2)
    assert close > 200  # of the 266 random blocks


@st.composite
def nodes_of_several_qis(draw):
    """A node's ``d`` QIs (2-5): each random with few or many codes, or the twin of another
    (the same rows in the same order: every key ties), some binned (scored on the node's
    histogram), in a random rank order; its labels and targets as :func:`nodes`'."""
    case = draw(nodes())
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    m = len(case["codes"])
    d = draw(st.integers(2, 5))
    qis = [case["codes"]]
    for _ in range(d - 1):
        kind = draw(st.sampled_from(["twin", "few", "many"]))
        if kind == "twin":
            qis.append(qis[int(rng.integers(0, len(qis)))].copy())
        else:
            qis.append(rng.integers(0, 12 if kind == "few" else 10**5, m).astype(np.int32))
    binned = [len(np.unique(c)) <= 12 and draw(st.booleans()) for c in qis]
    ranked = rng.permutation(d).astype(np.int64)
    return case, qis, binned, ranked, draw(st.sampled_from([0.0, 0.0, 0.05, 1e9]))


@given(nodes_of_several_qis())
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
def test_scanning_each_qi_against_the_best_so_far_picks_what_scanning_each_alone_picks(several):
    """:func:`choose_sequential` (binned QIs first, each QI against the best cut so far, ties
    on the key going by rank): the split :func:`choose` picks from every QI scanned alone —
    the smallest ``(key, rank)``, the Median choice below ``min_gain``."""
    case, qis, binned, ranked, min_gain = several
    label0, value0, off, table, whole, moments, partition, base = _node(case)
    m, d, T_n = len(qis[0]), len(qis), value0.shape[1]
    least = max(1, case["k"])
    # each QI's list: the node's rows (in the first QI's order, its codes sorted) in its code order
    orders = [np.argsort(c, kind="stable") for c in qis]
    code = np.stack([qis[j][orders[j]] for j in range(d)])
    label = np.stack([label0[0][:, orders[j]] for j in range(d)])
    value = np.stack([value0[0][:, orders[j]] for j in range(d)])
    # the binned QIs' histogram: QI j's code c at bin shift[j] + c
    L = int(off[-1])
    W = L + 1
    col = np.array([j if binned[j] else -1 for j in range(d)], np.int64)
    width = np.array([int(qis[j].max()) + 1 if binned[j] else 0 for j in range(d)])
    shift = np.concatenate(([0], np.cumsum(width)[:-1])).astype(np.int64)
    B = int(width.sum())
    cnt = np.zeros(max(B, 1) * W, np.int32)
    mom = np.zeros(max(B, 1) * T_n * 2, moments.dtype)
    for j in range(d):
        if binned[j]:
            b = shift[j] + qis[j].astype(np.int64)
            np.add.at(cnt, b * W, 1)
            for u in range(label0.shape[1]):
                np.add.at(cnt, b * W + 1 + label0[0, u], 1)
            for u in range(T_n):
                np.add.at(mom, (b * T_n + u) * 2, value0[0, u])
                np.add.at(mom, (b * T_n + u) * 2 + 1, value0[0, u] * value0[0, u])
    cmin = np.array([c.min() for c in qis], np.int64)
    cmax = np.array([c.max() for c in qis], np.int64)

    def scratch():
        return (whole, np.zeros_like(whole), moments, np.zeros((T_n, 3), moments.dtype), partition)

    alone = []
    for q in ranked.tolist():
        if binned[q]:
            alone.append(scan_bins(cnt, cnt[:0], mom, L, shift[q], cmin[q], cmax[q], m, least, *scratch(), base, off,
                                    table, case["normalize"], TIE))
        else:
            alone.append(scan(code, label, value, q, 0, m, least, *scratch(), base, off, table, case["normalize"],
                               TIE))
    expected = cut_scan.choose(ranked, alone, min_gain)
    got = cut_scan.choose_sequential(code, label, value, ranked, 0, m, least, *scratch(), base, off, table,
                                      case["normalize"], TIE, min_gain, col, shift, cnt, mom, W, cmin, cmax)
    assert tuple(int(x) for x in got) == expected
