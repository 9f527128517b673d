"""The fused scoring of ordered cuts (:mod:`sqlanon.model.score_kernels`) picks the split the
paper's formulas pick, and gives the numpy scoring's keys and gains bit for bit.

* Against the formulas: every cut of every pair of random frequency groups is scored in plain
  Python, exactly — LSD's squared errors ``S2 - S1^2 / n`` of integer targets as fractions, and
  InfoGain's weighted entropies ``sum_children (n ln n - sum_c c ln c) / ln 2`` compared as the
  integers ``prod n^n / prod c^c`` whose logarithms they are — and each pair's best allowable cut
  (least impurity, then most balanced, then lowest) must be the one :func:`split.evaluate` chose.
  Groups repeat the same counts often, so mirror-image cuts tie exactly and the tie-break decides.
* Against numpy: :func:`split._criterion_best` with the fused loops and through
  :func:`split._score` and :func:`split._best`, on up to nine targets (numpy's own row sums go
  pairwise from eight columns on; both paths add targets left to right), NULL targets, large
  offsets and counts.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.model.stats import ClassStats, FrequencyGroups, Running
from sqlanon.mondrian import split

LABELS = ("a", "b", "c", "d", "e")
TARGETS = ("x", "y", "z", "u", "v")


class Names:
    """A layout: class columns ``a``..``e`` (``e`` the sensitive one), numeric ``x``..``v``."""

    def counts(self, stats, column):
        return stats.counts[LABELS.index(column)]

    def moments(self, stats, column):
        return stats.moments[TARGETS.index(column)]


@st.composite
def frequency_groups(draw, integer_targets: bool = True):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    Q = draw(st.integers(1, 5))
    sizes = rng.integers(1, draw(st.integers(2, 40)), Q)
    part = np.repeat(np.arange(Q), sizes)
    code = np.concatenate([np.sort(rng.choice(100, s, replace=False)) for s in sizes]).astype(np.int32)
    # A few distinct group shapes, repeated: mirror-image cuts score exactly alike.
    shapes = draw(st.integers(1, 4))
    shape = rng.integers(0, shapes, len(part))
    n = rng.integers(1, 9, shapes)
    counts = tuple(np.asfortranarray(np.array([rng.multinomial(k, rng.dirichlet(np.ones(width))) for k in n],
                                              dtype=np.int64)[shape]) for width in (2, 3, 2, 4, 3))
    moments = []
    for _ in TARGETS:  # centered, as the library sums them (see sqlanon.model.stats)
        values = [rng.integers(-4, 5, k) for k in n]
        m = np.array([[k, v.sum(), (v * v).sum()] for k, v in zip(n, values)], dtype=np.int64)[shape]
        moments.append(m if integer_targets else m.astype(np.float64))
    return FrequencyGroups(part, code, ClassStats(n[shape].astype(np.int64), counts, tuple(moments)))


def _exact_impurity(criterion, left: list[ClassStats], right: list[ClassStats]):
    """The paper's impurity of a split, exactly: a Fraction (LSD: KDD 2006, eq. 4), or for InfoGain
    (eq. 2) the Fraction ``prod n^n / prod c^c`` whose base-2 logarithm it is."""
    if isinstance(criterion, sqlanon.Regression):
        total = Fraction(0)
        for t in criterion.targets:
            for side in (left, right):
                k, s1, s2 = (int(v) for v in side[TARGETS.index(t)])
                total += Fraction(s2) - Fraction(s1 * s1, k) if k else 0
        return total
    ratio = Fraction(1)
    for t in criterion.targets:
        for side in (left, right):
            c = [int(v) for v in side[LABELS.index(t)]]
            m = sum(c)
            ratio *= Fraction(m**m, math.prod(v**v for v in c))
    return ratio


def _bits(criterion, exact) -> float:
    """The impurity in the criterion's units (bits for InfoGain)."""
    if isinstance(criterion, sqlanon.Regression):
        return float(exact)
    return (math.log(exact.numerator) - math.log(exact.denominator)) / math.log(2)


def _entropy_bits(counts) -> float:
    """``|E| H(C|E)`` in bits, the textbook way: ``-sum_c c log2(c / |E|)``."""
    m = sum(counts)
    return -sum(c * math.log2(c / m) for c in counts if c)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frequency_groups(), st.integers(1, 6), st.sampled_from([0, 2]), st.sampled_from([
    sqlanon.InfoGain("a"), sqlanon.InfoGain("a", "b"), sqlanon.InfoGain("c", "d"),
    sqlanon.Regression("x"), sqlanon.Regression("x", "y", "z"),
]))
def test_best_split_is_the_papers_best(groups, k, l, criterion):
    layout = Names()
    Q = int(groups.part[-1]) + 1
    constraints = [sqlanon.KAnonymity(k)] + ([sqlanon.DistinctLDiversity("e", l)] if l else [])
    got = split.evaluate(np.zeros(Q, np.int64), np.full(Q, -1), groups, [_Ordered()], constraints, criterion, layout)
    for q in range(Q):
        rows = np.flatnonzero(groups.part == q)
        whole = [groups.stats.counts[j][rows].sum(axis=0) for j in range(len(LABELS))]
        whole_m = [groups.stats.moments[j][rows].sum(axis=0) for j in range(len(TARGETS))]
        n = int(groups.stats.n[rows].sum())
        cuts = []
        for i in range(len(rows) - 1):  # every cut between two codes of the pair
            left = [groups.stats.counts[j][rows[: i + 1]].sum(axis=0) for j in range(len(LABELS))]
            left_m = [groups.stats.moments[j][rows[: i + 1]].sum(axis=0) for j in range(len(TARGETS))]
            right = [w - a for w, a in zip(whole, left)]
            right_m = [w - a for w, a in zip(whole_m, left_m)]
            nl = int(groups.stats.n[rows[: i + 1]].sum())
            ok = min(nl, n - nl) >= k and (not l or min((left[4] > 0).sum(), (right[4] > 0).sum()) >= l)
            if ok:
                sides = (left_m, right_m) if isinstance(criterion, sqlanon.Regression) else (left, right)
                cuts.append((_exact_impurity(criterion, *sides), abs(2 * nl - n), int(groups.code[rows[i]]), nl, sides))
        assert bool(got.allowed[q]) == bool(cuts)
        if not cuts:
            continue
        best = min(cuts, key=lambda c: c[:3])
        lowest = _bits(criterion, best[0])
        scale = _bits(criterion, _exact_impurity(criterion, *((whole_m, [0 * w for w in whole_m])
                                                              if isinstance(criterion, sqlanon.Regression)
                                                              else (whole, [0 * w for w in whole]))))
        # Cuts within the criterion's tie tolerance but not exactly tied could go either way.
        near = [c for c in cuts if c[0] != best[0] and _bits(criterion, c[0]) - lowest <= 1e-9 * max(scale, 1)]
        if near:
            continue
        assert (got.cut[q], got.left[q], got.balance[q]) == (best[2], best[3], best[1])
        if isinstance(criterion, sqlanon.InfoGain):  # the textbook formula, in floats
            sides = best[4]
            textbook = sum(_entropy_bits([int(v) for v in side[LABELS.index(t)]])
                           for t in criterion.targets for side in sides)
            assert lowest == pytest.approx(textbook, rel=1e-9, abs=1e-9)
        assert got.key[q, 0] == pytest.approx(lowest / scale if scale > 0 else lowest, rel=1e-9, abs=1e-9)
        assert got.gain[q, 0] == pytest.approx((scale - lowest) / n, rel=1e-9, abs=1e-6)


class _Ordered:
    """An ordered QI's domain (codes 0..99)."""

    num = np.arange(100.0)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frequency_groups(integer_targets=False), st.integers(0, 2**32 - 1), st.sampled_from([
    sqlanon.InfoGain("a"), sqlanon.InfoGain(*LABELS[:4]), sqlanon.Regression("x"),
    sqlanon.Regression(*TARGETS), sqlanon.Targets(classes=("a", "b"), numeric=("x", "y")),
    sqlanon.Targets(classes=LABELS, numeric=TARGETS),  # ten targets
]))
def test_fused_scores_equal_numpy_scores(groups, seed, criterion):
    rng = np.random.default_rng(seed)
    stats = groups.stats
    # Large counts and offsets, NULL targets (a target's own count below the rows').
    scale = int(rng.choice([1, 1000, 20_000]))  # counts stay within the c ln c table
    moments = []
    for m in stats.moments:
        m = m.copy()
        m[:, 0] -= rng.integers(0, 2, len(m)) * (m[:, 0] > 0)
        m[:, 1:] += rng.normal(0, 1e7, (len(m), 1)) * [1.0, 1e7]
        moments.append(m)
    groups = FrequencyGroups(groups.part, groups.code, ClassStats(stats.n * scale, tuple(np.asfortranarray(c * scale)
                                                                                         for c in stats.counts),
                                                                 tuple(moments)))
    layout = Names()
    Q = int(groups.part[-1]) + 1
    total = groups.totals(Q)
    running = Running(groups)
    n_left = running.n()
    cand = np.flatnonzero(~groups.is_last())
    terms = criterion.terms(total, layout)
    fused = split._fused_best(cand, groups.part, total, terms, criterion, running, layout, n_left)
    assert fused is not None
    left = running.left(cand)
    right = Running.right(total, groups.part[cand], left)
    p = groups.part[cand]
    key, gain = split._score(criterion, criterion.terms(left, layout) + criterion.terms(right, layout), terms[p],
                             total.n[p])
    best = split._best(p, (*key.T, np.abs(2 * left.n - total.n[p]), groups.code[cand]))
    assert np.array_equal(fused[0], best)
    assert np.array_equal(fused[1], key[best])
    assert np.array_equal(fused[2], gain[best])
