"""The split search's shortcuts change no decision.

:func:`sqlanon.mondrian.split.evaluate` judges and scores only the cuts that can matter: a size filter
before the constraints, the most balanced allowable cut found from the median outwards, the
criterion's best cut judged first, settled (label-pure) partitions taking the Median choice,
and Regression scoring only the cuts whose squared error is near the best. Each must leave
every output of ``evaluate`` bit for bit what the plain search gives: every cut of every pair
judged by every constraint, every allowable cut scored. The plain search is restated here
(with the library's own ``_score`` and ``_best``, so that only the search is compared) and run
on random frequency groups: ties, pure labels, NULL targets, large offsets, several
constraints at once.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.model.criteria import InfoGain
from sqlanon.model.privacy import Constraint
from sqlanon.model.privacy.closeness import Ground
from sqlanon.model.stats import ClassStats, FrequencyGroups, first_of_run
from sqlanon.mondrian import split


class Names:
    """A layout: class columns ``label``, ``label2``, ``sensitive``; numeric ``y``, ``y2``, ``v``."""

    classes = ("label", "label2", "sensitive")
    numbers = ("y", "y2", "v")

    def counts(self, stats, column):
        return stats.counts[self.classes.index(column)]

    def moments(self, stats, column):
        return stats.moments[self.numbers.index(column)]


def plain(attr, groups, constraints, criterion, layout) -> dict[str, np.ndarray]:
    """The search without shortcuts (ordered QIs): every cut judged, every allowable cut scored."""
    Q = len(attr)
    total = groups.totals(Q)
    out = {f: np.zeros(Q, dtype=np.int64) for f in ("cut", "left", "balance", "median_cut", "median_left", "median_balance")}
    out.update(allowed=np.zeros(Q, dtype=bool), key=np.zeros((Q, criterion.levels)), gain=np.zeros((Q, criterion.levels)))
    partition_terms = criterion.terms(total, layout)
    part, code = groups.part, groups.code
    left = groups.cumulative()
    right = total.take(part) - left
    ok = ~groups.is_last()
    for c in constraints:
        ok &= c.allowed(left, layout) & c.allowed(right, layout)
    cand = ok.nonzero()[0]
    if len(cand) == 0:
        return out
    p = part[cand]
    balance = np.abs(2 * left.n[cand] - total.n[p])
    median = split._best(p, (balance, code[cand]))
    if partition_terms is None:
        best, key, gain = median, np.zeros((len(cand), 1)), np.zeros((len(cand), 1))
    else:
        children = criterion.terms(left, layout)[cand] + criterion.terms(right, layout)[cand]
        key, gain = split._score(criterion, children, partition_terms[p], total.n[p])
        best = split._best(p, (*key.T, balance, code[cand]))
    q = p[best]
    out["allowed"][q] = True
    out["cut"][q], out["left"][q], out["balance"][q] = code[cand][best], left.n[cand][best], balance[best]
    out["key"][q], out["gain"][q] = key[best], gain[best]
    out["median_cut"][p[median]] = code[cand][median]
    out["median_left"][p[median]] = left.n[cand][median]
    out["median_balance"][p[median]] = balance[median]
    return out


#: t-closeness of the 4-valued ``sensitive`` column under each ground distance, bound to a table
#: distribution as a resolved request would be.
_TREE = sqlanon.Hierarchy.from_dict({"*": {"x": ["a", "b"], "y": ["c", "d"]}})
CLOSENESS = [
    sqlanon.TCloseness("sensitive", 0.3).bound(Ground.of("equal", np.array([4, 3, 2, 1]))),
    sqlanon.TCloseness("sensitive", 0.2, "ordered").bound(Ground.of("ordered", np.array([1, 2, 3, 4]))),
    sqlanon.TCloseness("sensitive", 0.25, "hierarchical", _TREE).bound(
        Ground.of("hierarchical", np.array([2, 2, 1, 5]), _TREE, np.array([0, 1, 2, 3]))),
]


@st.composite
def searches(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    Q = draw(st.integers(1, 6))
    sizes = rng.integers(1, draw(st.integers(2, 60)), Q)
    part = np.repeat(np.arange(Q), sizes)
    code = np.concatenate([np.sort(rng.choice(200, s, replace=False)) for s in sizes]).astype(np.int32)
    G = len(part)
    n = rng.integers(1, draw(st.integers(2, 9)), G)
    pure = draw(st.booleans())  # whole pairs on one label value: settled partitions
    counts = []
    for width in (2, 3, 4):
        share = rng.dirichlet(np.ones(width), G) if not pure or width == 4 else np.eye(width)[rng.integers(0, width, Q)][part]
        c = np.array([rng.multinomial(k, s) for k, s in zip(n, share)], dtype=np.int64)
        counts.append(np.asfortranarray(c))
    moments = []
    for kind in ("float", "int", "float"):
        present = n - (rng.integers(0, 2, G) * rng.integers(0, n + 1) if draw(st.booleans()) else 0)  # NULLs
        if kind == "int":
            offset = draw(st.sampled_from([0, 10**6]))
            values = [rng.integers(-5, 6, k) + offset for k in present]
        else:  # continuous values, a few repeated ones (exact ties) or one per pair (every cut
            # ties), maybe far from 0
            offset = draw(st.sampled_from([0.0, 1e7]))
            shape = draw(st.sampled_from(["continuous", "few", "constant"]))
            level = rng.normal(0, 1e3, Q)
            values = [(rng.normal(0, 1e3, k) if shape == "continuous" else rng.integers(0, 4, k) * 0.5
                       if shape == "few" else np.full(k, level[q])) + offset for k, q in zip(present, part)]
        m = np.array([[k, v.sum(), (v * v).sum()] for k, v in zip(present, values)],
                     dtype=np.int64 if kind == "int" else np.float64)
        moments.append(m)
    groups = FrequencyGroups(part, code, ClassStats(n.astype(np.int64), tuple(counts), tuple(moments)))
    k = draw(st.integers(1, 12))
    extra = draw(st.lists(st.sampled_from([
        sqlanon.EntropyLDiversity("sensitive", 1.5),
        sqlanon.DistinctLDiversity("sensitive", 2),
        sqlanon.RecursiveCLDiversity("sensitive", c=2.0, l=2),
        sqlanon.VarianceDiversity("v", 0.5),
        sqlanon.VarianceDiversity("y2", 2.0),
        *CLOSENESS,
    ]), max_size=2, unique=True))
    criterion = draw(st.sampled_from([
        sqlanon.Median(),
        sqlanon.InfoGain("label"),
        sqlanon.InfoGain("label", "label2"),
        sqlanon.InfoGain("label", min_gain=0.2),
        sqlanon.Regression("y"),
        sqlanon.Regression("y", "y2"),
        sqlanon.Regression("y2"),
        sqlanon.Targets(classes=("label",)),
        sqlanon.Targets(classes=("label",), numeric=("y",)),
    ]))
    return groups, [sqlanon.KAnonymity(k), *extra], criterion


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(searches())
def test_evaluate_equals_the_plain_search(case):
    groups, constraints, criterion = case
    Q = int(groups.part[-1]) + 1
    attr = np.zeros(Q, dtype=np.int64)
    domains = [SimpleNamespace(num=np.arange(200.0))]  # one ordered QI
    layout = Names()
    got = split.evaluate(attr, np.full(Q, -1), groups, domains, constraints, criterion, layout)
    want = plain(attr, groups, constraints, criterion, layout)
    for field, expected in want.items():
        assert np.array_equal(getattr(got, field), expected), field


def test_settled_needs_pure_labels_and_vanishing_scores():
    layout = Names()
    n = np.array([10, 10, 7])
    label = np.array([[10, 0], [4, 6], [0, 7]])
    stats = ClassStats(n, (label, np.zeros((3, 3), np.int64), np.zeros((3, 4), np.int64)), ())
    assert split.settled(sqlanon.InfoGain("label"), stats, layout).tolist() == [True, False, True]
    assert split.settled(sqlanon.Regression("y"), stats, layout) is None
    assert split.settled(sqlanon.Targets(classes=("label",), numeric=("y",)), stats, layout) is None

    class Noisy(InfoGain):  # a criterion whose pure classes do not score exactly 0
        def terms(self, stats, layout):
            return super().terms(stats, layout) + 1e-300 * stats.n[:, None]

    assert not split.settled(Noisy("label"), stats, layout).any()


class Extremes(Constraint):
    """Acceptable with at most ``small`` or at least ``large`` rows: only cuts far from the
    median are allowable, so the outward search must widen."""

    class_columns, numeric_columns, min_size = (), (), 1

    def __init__(self, small: int, large: int) -> None:
        self.small, self.large = small, large

    def allowed(self, stats, layout):
        return (stats.n <= self.small) | (stats.n >= self.large) | (stats.n == 0)


@pytest.mark.parametrize(("small", "large", "expected"), [(10, 54, 9), (9, 54, 8), (20, 60, 3)])
def test_most_balanced_search_widens_until_certain(small, large, expected):
    # One pair of 64 rows, one per code; (9, 54): cuts 8 and 54 are equally balanced, the lower wins.
    groups = FrequencyGroups(np.zeros(64, np.int64), np.arange(64, dtype=np.int32), ClassStats(np.ones(64, np.int64)))
    running = split.Running(groups)
    got = split._most_balanced(np.arange(63), groups.part, running.n(), groups.totals(1), running, (set(), set()),
                               [Extremes(small, large)], None)
    assert got.tolist() == [expected]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.integers(1, 6), min_size=2, max_size=80), min_size=1, max_size=4),
       st.integers(0, 200), st.integers(0, 200))
@example(sizes=[[4, 2, 1, 6, 4, 1, 5, 2, 6, 6, 1, 3, 1, 4, 5, 5, 3, 3, 4, 6, 1, 2, 1, 3, 1, 2, 3, 2]], small=37, large=53)
def test_most_balanced_search_equals_judging_every_cut(sizes, small, large):
    n = np.array([x for pair in sizes for x in pair], dtype=np.int64)
    part = np.repeat(np.arange(len(sizes)), [len(pair) for pair in sizes])
    groups = FrequencyGroups(part, np.concatenate([np.arange(len(pair)) for pair in sizes]).astype(np.int32), ClassStats(n))
    total = groups.totals(len(sizes))
    left = groups.cumulative()
    right = total.take(part) - left
    c = Extremes(small, large)
    ok = ~groups.is_last() & c.allowed(left, None) & c.allowed(right, None)
    expected = []
    for q in range(len(sizes)):
        mine = [i for i in np.flatnonzero(part == q) if ok[i]]
        if mine:
            expected.append(min(mine, key=lambda i: (abs(2 * left.n[i] - total.n[q]), i)))
    running = split.Running(groups)
    cand = np.flatnonzero(~groups.is_last())
    got = split._most_balanced(cand, part, running.n(), total, running, (set(), set()), [c], None)
    assert got.tolist() == expected


@pytest.mark.parametrize("first", [0, 1])
def test_running_sums_equal_the_cumulative_statistics(first):
    rng = np.random.default_rng(first)
    part = np.sort(rng.integers(0, 30, 500))
    stats = ClassStats(rng.integers(1, 5, 500), (np.asfortranarray(rng.integers(0, 9, (500, 3))),),
                       (rng.normal(0, 1e6, (500, 3)) * [0, 1, 1] + rng.integers(1, 4, (500, 1)) * [1, 0, 0],))
    groups = FrequencyGroups(part, np.zeros(500, np.int32), stats)
    at = np.sort(rng.choice(500, 200, replace=False))[first:]
    want = groups.cumulative().take(at)
    got = split.Running(groups).left(at)
    assert np.array_equal(got.n, want.n)
    assert all(np.array_equal(a, b) for a, b in zip(got.counts + got.moments, want.counts + want.moments))
    assert first_of_run(part).size == len(np.unique(part))
