"""Rothko-S's hypothesis tests: may a split chosen on a sample be made optimistically?

LeFevre & DeWitt, Scalable Anonymization Algorithms for Large Data Sets (TR 1590), Section 3.1.
The growth phase of Rothko-S (:mod:`sqlanon.mondrian.sample`) sees a simple random sample ``r``
of ``n`` rows drawn without replacement from a population partition ``R`` of ``N`` rows. For a
candidate split into ``m`` children, the null hypothesis for each child ``R_i`` is "``R_i`` breaks
the requirement"; the split is made when every child's test rejects it at level ``alpha / m``
(Bonferroni: the chance that *any* child is accepted wrongly is at most ``alpha``). A split made
in error is undone later (pruning), so the tests only steer how often that happens; they never
decide what is published.

Each test is a :class:`~sqlanon.model.constraints.Constraint` judging *sample* statistics, so the
one split decision (:func:`sqlanon.mondrian.split.evaluate`) runs unchanged on the sample:
:func:`sample_constraints` turns the requirement into its tests. With ``n == N`` (the sample is
the whole partition) every test is the constraint itself, exactly.

* k-anonymity (TR 3.1.1): ``p = |R_i| / N``, H0: ``p = p0 = k / N``; with ``p^ = n_i / n`` reject
  when ``(p^ - p0) / sqrt(p0 (1 - p0) / n * (N - n) / (N - 1)) >= z_{alpha/m}`` (normal
  approximation, finite-population correction). The test is monotone in ``n_i``, so it *is*
  k-anonymity with a sample threshold ``k_s`` (:func:`k_threshold`): the split code's k-anonymity
  fast path applies as it is.
* recursive (c, l)-diversity (TR 3.1.2): ``p1^ = x_1 / n_i``, ``p2^ = (x_l + ... ) / n_i``; reject
  when ``(c p2^ - p1^) / sqrt((c^2 p2^(1 - p2^) + p1^(1 - p1^)) / (n_i - 1) * (N - n) / N) >
  z_{alpha/m}``.
* entropy l-diversity: the TR gives no test (footnote 7). Ours has the same form, by the delta
  method: with ``H^`` the sample entropy (nats), ``Var(H^) ~ (sum_j p_j^ ln^2 p_j^ - H^^2) / (n_i - 1)
  * (N - n) / N``; reject when ``(H^ - ln l) / sqrt(Var) > z_{alpha/m}``. (``H^`` is biased low,
  which only makes the test more cautious.)
* distinct l-diversity: no test needed — a sample child with ``l`` distinct values proves that
  its population child has them too; the constraint itself is used.
* variance diversity (TR 3.1.3): reject when ``(n_i - 1) s^2 / v >= chi^2_{alpha/m}(n_i - 1)``,
  ``s^2`` the sample variance (``n_i - 1`` in the denominator), i.e. the child's squared error
  over ``v``. The upper quantile of chi-square comes from the Wilson–Hilferty transform
  (:func:`chi2_upper`; within 1% of the exact quantile from 3 degrees of freedom on, which a
  rule of thumb does not notice).
* t-closeness: no test; the sample child's distance from the table's distribution is the
  estimate (the constraint itself judges the sample statistics). A child whose population is
  farther than t is merged back by pruning, which judges the real statistics.

* fitting the budget (not a requirement: when growth stops, :mod:`sqlanon.mondrian.sample`):
  H0 ``p = p0 = M / N`` for the sample budget ``M``, rejected towards ``p < p0`` when
  ``(p0 - p^) / sqrt(p0 (1 - p0) / n * (N - n) / (N - 1)) >= z_alpha`` (:func:`fit_threshold`;
  one test per partition, no correction: an error costs only another round for that partition).

In every test a degenerate variance (0) rejects when the estimate is on the right side, and an
empty sample child passes (the constraints' own convention: an empty class is no class).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from ..model.constraints import (
    Constraint, EntropyLDiversity, KAnonymity, Layout, RecursiveCLDiversity, VarianceDiversity, entropy,
    squared_error,
)
from ..model.stats import ClassStats


def z_upper(alpha: float) -> float:
    """``z_alpha``: the standard normal point with area ``alpha`` to its right."""
    return NormalDist().inv_cdf(1.0 - alpha)


def chi2_upper(alpha: float, df: np.ndarray) -> np.ndarray:
    """``chi^2_alpha(df)``: the point with area ``alpha`` to its right under chi-square with ``df``
    degrees of freedom (Wilson–Hilferty: ``df (1 - 2/(9 df) + z_alpha sqrt(2/(9 df)))^3``); inf
    where ``df < 1`` (no test possible)."""
    df = np.asarray(df, dtype=np.float64)
    z = z_upper(alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = 2.0 / (9.0 * df)
        out = df * np.maximum(1.0 - a + z * np.sqrt(a), 0.0) ** 3
    return np.where(df >= 1, out, np.inf)


def fpc(population: int, sample: int) -> float:
    """The finite-population factor ``(N - n) / N`` of the l-diversity tests."""
    return (population - sample) / population


def k_threshold(k: int, population: int, sample: int, alpha: float) -> int:
    """The fewest sample rows ``n_i`` for which the k-anonymity test rejects H0 (TR 3.1.1):
    the smallest integer with ``n_i / n - p0 >= z_alpha sqrt(p0 (1 - p0) / n (N - n) / (N - 1))``,
    ``p0 = k / N``. ``alpha`` is already Bonferroni-divided. ``k`` itself when ``n == N``."""
    N, n = population, sample
    if n >= N:
        return k
    p0 = k / N
    sd = math.sqrt(p0 * (1 - p0) / n * (N - n) / (N - 1))
    t = n * (p0 + z_upper(alpha) * sd)
    out = max(1, math.ceil(t))
    while out > 1 and (out - 1) / n - p0 >= z_upper(alpha) * sd:  # ceil's rounding, checked
        out -= 1
    return out


def fit_threshold(limit: int, population: int, sample: int, alpha: float) -> int:
    """The most sample rows ``n_i`` at which a sample partition's population ``R_i`` fits
    ``limit`` rows with confidence ``1 - alpha``: H0 ``p = p0 = limit / N`` (``R_i`` is larger), and
    ``n_i`` rejects it when ``p0 - n_i / n >= z_alpha sqrt(p0 (1 - p0) / n (N - n) / (N - 1))`` --
    :func:`k_threshold`'s test with the other tail. ``limit`` itself when ``n == N``; -1 when no
    sample partition proves it (``limit`` is too small a share of ``N`` for this sample)."""
    N, n = population, sample
    if n >= N:
        return limit
    p0 = min(limit / N, 1.0)
    sd = math.sqrt(p0 * (1 - p0) / n * (N - n) / (N - 1))
    out = math.floor(n * (p0 - z_upper(alpha) * sd))
    while out >= 0 and p0 - out / n < z_upper(alpha) * sd:  # floor's rounding, checked
        out -= 1
    return max(out, -1)


def recursive_cl_statistic(counts: np.ndarray, c: float, l: int, population: int, sample: int) -> np.ndarray:
    """``(c p2^ - p1^) / sqrt(Var^)`` of TR 3.1.2 per row of a (K, values) count matrix (+inf
    where the variance is 0 and the numerator positive; -inf where ``n_i < 2``)."""
    x = -np.sort(-counts, axis=1).astype(np.float64)
    ni = x.sum(axis=1)
    safe = np.maximum(ni, 1.0)
    p1 = x[:, 0] / safe
    p2 = (x[:, l - 1:].sum(axis=1) if x.shape[1] >= l else np.zeros(len(x))) / safe
    var = (c * c * p2 * (1 - p2) + p1 * (1 - p1)) / np.maximum(ni - 1, 1.0) * fpc(population, sample)
    return _ratio(c * p2 - p1, var, ni)


def entropy_statistic(counts: np.ndarray, l: float, population: int, sample: int) -> np.ndarray:
    """``(H^ - ln l) / sqrt(Var^(H^))`` per row of a (K, values) count matrix, the delta-method
    variance of the plug-in entropy (see the module docstring)."""
    x = counts.astype(np.float64)
    ni = x.sum(axis=1)
    h = entropy(counts)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = x / np.maximum(ni, 1.0)[:, None]
        lnp = np.where(p > 0, np.log(np.where(p > 0, p, 1.0)), 0.0)
    second = (p * lnp * lnp).sum(axis=1)
    var = np.maximum(second - h * h, 0.0) / np.maximum(ni - 1, 1.0) * fpc(population, sample)
    return _ratio(h - math.log(l), var, ni)


def _ratio(num: np.ndarray, var: np.ndarray, ni: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        out = num / np.sqrt(var)
    out = np.where(var > 0, out, np.where(num > 0, np.inf, -np.inf))
    return np.where(ni >= 2, out, -np.inf)


@dataclass(frozen=True)
class _DiversityTest:
    """A diversity constraint over a sensitive column's value counts, judged on a sample: a class
    passes when its test statistic exceeds the upper ``alpha`` quantile of the standard normal."""

    constraint: RecursiveCLDiversity | EntropyLDiversity
    population: int
    sample: int
    alpha: float

    numeric_columns = ()

    @property
    def class_columns(self) -> tuple[str, ...]:
        return self.constraint.class_columns

    @property
    def min_size(self) -> int:
        return max(2, self.constraint.min_size)

    def statistic(self, counts: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def allowed(self, stats: ClassStats, layout: Layout) -> np.ndarray:
        t = self.statistic(layout.counts(stats, self.constraint.sensitive))
        return (t > z_upper(self.alpha)) | (stats.n == 0)

    def describe(self) -> str:
        return f"sample test of {self.constraint.describe()}"


@dataclass(frozen=True)
class CLTest(_DiversityTest):
    """Recursive (c, l)-diversity judged on a sample (TR 3.1.2)."""

    def statistic(self, counts: np.ndarray) -> np.ndarray:
        c = self.constraint
        return recursive_cl_statistic(counts, c.c, c.l, self.population, self.sample)


@dataclass(frozen=True)
class EntropyTest(_DiversityTest):
    """Entropy l-diversity judged on a sample (delta method; the TR has no test)."""

    def statistic(self, counts: np.ndarray) -> np.ndarray:
        return entropy_statistic(counts, self.constraint.l, self.population, self.sample)


@dataclass(frozen=True)
class VarianceTest:
    """Variance diversity judged on a sample (TR 3.1.3, chi-square)."""

    constraint: VarianceDiversity
    alpha: float

    class_columns = ()

    @property
    def numeric_columns(self) -> tuple[str, ...]:
        return self.constraint.numeric_columns

    @property
    def min_size(self) -> int:
        return 2

    def allowed(self, stats: ClassStats, layout: Layout) -> np.ndarray:
        moments = layout.moments(stats, self.constraint.sensitive)
        df = moments[:, 0].astype(np.float64) - 1
        statistic = squared_error(moments) / self.constraint.v if self.constraint.v > 0 else np.full(len(df), np.inf)
        return (statistic >= chi2_upper(self.alpha, df)) | (stats.n == 0)

    def describe(self) -> str:
        return f"sample test of {self.constraint.describe()}"


def sample_constraints(constraints: Sequence[Constraint], population: int, sample: int, confidence: float,
                       fanout: int) -> tuple[Constraint, ...]:
    """The tests judging splits of a ``sample``-row sample of a ``population``-row partition in
    place of ``constraints``, each at level ``(1 - confidence) / fanout`` (Bonferroni over the
    most children a split can make). The constraints themselves when the sample is the whole
    partition."""
    if sample >= population:
        return tuple(constraints)
    alpha = (1.0 - confidence) / fanout
    out: list[Constraint] = []
    for c in constraints:
        if isinstance(c, KAnonymity):
            out.append(KAnonymity(k_threshold(c.k, population, sample, alpha)))
        elif isinstance(c, RecursiveCLDiversity):
            out.append(CLTest(c, population, sample, alpha))
        elif isinstance(c, EntropyLDiversity):
            out.append(EntropyTest(c, population, sample, alpha))
        elif isinstance(c, VarianceDiversity):
            out.append(VarianceTest(c, alpha))
        else:  # distinct l-diversity: what the sample shows the population has; t-closeness:
            out.append(c)  # the sample's distance as the estimate (pruning corrects it)
    return tuple(out)
