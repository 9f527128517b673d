"""l-diversity of a categorical sensitive column (Machanavajjhala et al., *l-Diversity: Privacy
Beyond k-Anonymity*, ICDE 2006): distinct, entropy and recursive (c, l)-diversity.

Each needs the column's value counts per class (AVS groups; NULL counts as a value), and a
class needs at least ``l`` rows to pass. Per class in SQL: the rows of each value, one
``GROUP BY class, value`` (ranked by count for recursive (c, l)), then one row per class.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from sqlglot import exp

from ...engine import sqlgen as g
from ..stats import ClassStats, Layout
from ..summaries import entropy
from .base import (
    BAD,
    DISTINCT,
    DOUBLE,
    ENTROPY,
    RECURSIVE,
    SIZE,
    TOLERANCE,
    VALUE,
    Constraint,
    Face,
    OnSensitive,
    column,
    integer,
    keys,
    number,
    plain,
    shown,
    subquery,
    value_counts,
)
from .sampling import fpc, standardized, z_upper


class _OnSensitiveValues(OnSensitive):
    """What the diversity models over a categorical sensitive column share."""

    l: float

    @property
    def min_size(self) -> int:
        return max(1, math.ceil(self.l))

    def per_class(self, source: exp.Expression, columns: Sequence[str],
                  where: exp.Expression | None = None) -> exp.Select:
        n = g.col("n")
        value, bad = self._measure(n)
        return (exp.select(*keys(columns), g.alias(exp.Sum(this=n.copy()), SIZE), g.alias(value, VALUE),
                           g.alias(bad, BAD))
                .from_(self._counts(source, columns, where)).group_by(*keys(columns)))

    def _counts(self, source: exp.Expression, columns: Sequence[str], where: exp.Expression | None) -> exp.Subquery:
        return subquery(value_counts(source, columns, self.sensitive, where), "v")

    def _measure(self, n: exp.Column) -> tuple[exp.Expression, exp.Expression]:
        """Per class (over its value counts ``n``): the measure and whether it fails."""
        raise NotImplementedError


def entropy_sql(n: exp.Column) -> exp.Expression:
    """``ln(sum n) - sum(n ln n) / sum n``: the entropy (nats) of a class's value counts."""
    total = exp.Sum(this=n.copy())
    return exp.Sub(this=exp.Ln(this=total), expression=exp.Div(
        this=exp.Sum(this=exp.Mul(this=n.copy(), expression=exp.Ln(this=n.copy()))), expression=total.copy()))


@dataclass(frozen=True)
class DistinctLDiversity(_OnSensitiveValues):
    """Distinct l-diversity (Machanavajjhala et al., ICDE 2006): every class holds at least
    ``l`` distinct values of ``sensitive`` (NULL counts as a value).

    Its Rothko-S test is the model itself: a sample child with ``l`` distinct values proves
    that its population child has them too."""

    sensitive: str
    l: int
    measure: ClassVar[str] = "distinct values"

    def allowed(self, stats: ClassStats, layout: Layout) -> np.ndarray:
        counts = layout.counts(stats, self.sensitive)
        distinct = np.zeros(len(counts), dtype=np.int64)
        for j in range(counts.shape[1]):  # C vector additions beat a short-axis reduction
            distinct += counts[:, j] > 0
        return (distinct >= self.l) | (stats.n == 0)

    def describe(self) -> str:
        return f"distinct l-diversity({self.sensitive!r}, l={self.l})"

    def face(self) -> Face:
        return Face(DISTINCT, self.sensitive, p=(float(self.l),))

    def checked(self) -> DistinctLDiversity:
        sensitive = column(self)
        return dataclasses.replace(self, sensitive=sensitive, l=integer(self, "l"))

    def _measure(self, n: exp.Column) -> tuple[exp.Expression, exp.Expression]:
        distinct = exp.Count(this=exp.Star())
        return exp.Cast(this=distinct, to=DOUBLE.copy()), exp.LT(this=distinct.copy(), expression=g.lit(self.l))


@dataclass(frozen=True)
class EntropyLDiversity(_OnSensitiveValues):
    """Entropy l-diversity (Machanavajjhala et al.; KDD 2006, Section 3.1): in every class E,
    ``-sum_s p(s|E) ln p(s|E) >= ln l``, i.e. the entropy of ``sensitive`` is at least that of
    ``l`` equally frequent values. ``l`` may be fractional. Its measure is ``l = e^H``."""

    sensitive: str
    l: float
    measure: ClassVar[str] = "l = e^entropy"

    @property
    def min_size(self) -> int:
        """The fewest rows whose entropy can pass: n rows have at most ``ln n``, and the verdict
        allows ``TOLERANCE`` (so ``l`` a hair above an integer m still lets m rows pass)."""
        n = max(1, math.ceil(self.l))
        while n > 1 and np.log(float(n - 1)) >= math.log(self.l) - TOLERANCE:
            n -= 1
        return n

    def allowed(self, stats: ClassStats, layout: Layout) -> np.ndarray:
        h = entropy(layout.counts(stats, self.sensitive))
        return (h >= math.log(self.l) - TOLERANCE) | (stats.n == 0)

    def describe(self) -> str:
        return f"entropy l-diversity({self.sensitive!r}, l={shown(self.l)})"

    def face(self) -> Face:
        return Face(ENTROPY, self.sensitive, p=(math.log(self.l) - TOLERANCE,))

    def checked(self) -> EntropyLDiversity:
        sensitive = column(self)
        number(self, "l", 1.0)
        return dataclasses.replace(self, sensitive=sensitive, l=plain(self.l))

    def _measure(self, n: exp.Column) -> tuple[exp.Expression, exp.Expression]:
        h = entropy_sql(n)
        return exp.Exp(this=h), exp.LT(this=h.copy(), expression=g.lit(math.log(self.l) - TOLERANCE))

    def sample_test(self, population: int, sample: int, alpha: float) -> Constraint:
        return EntropyTest(self, population, sample, alpha)


@dataclass(frozen=True)
class RecursiveCLDiversity(_OnSensitiveValues):
    """Recursive (c, l)-diversity (Machanavajjhala et al.; TR 1590, Section 1.1): with
    ``x_1 >= x_2 >= ...`` the counts of the sensitive values in a class,
    ``x_1 < c (x_l + x_{l+1} + ... + x_m)``. Its measure is ``x_1 / (x_l + ... + x_m)``."""

    sensitive: str
    c: float
    l: int
    measure: ClassVar[str] = "x1/(xl+...+xm)"
    worst: ClassVar[str] = "max"

    def allowed(self, stats: ClassStats, layout: Layout) -> np.ndarray:
        counts = -np.sort(-layout.counts(stats, self.sensitive), axis=1)  # descending
        tail = counts[:, self.l - 1 :].sum(axis=1) if counts.shape[1] >= self.l else np.zeros(len(counts))
        return (counts[:, 0] < self.c * tail) | (stats.n == 0)

    def describe(self) -> str:
        return f"recursive (c,l)-diversity({self.sensitive!r}, c={shown(self.c)}, l={self.l})"

    def face(self) -> Face:
        return Face(RECURSIVE, self.sensitive, p=(float(self.c), float(self.l)))

    def checked(self) -> RecursiveCLDiversity:
        sensitive = column(self)
        l = integer(self, "l")
        number(self, "c", 1e-300)
        return dataclasses.replace(self, sensitive=sensitive, l=l, c=plain(self.c))

    def _counts(self, source: exp.Expression, columns: Sequence[str], where: exp.Expression | None) -> exp.Subquery:
        """The value counts ranked within each class, largest first (``r``)."""
        rank = exp.Window(this=exp.RowNumber(), partition_by=keys(columns),
                          order=exp.Order(expressions=[exp.Ordered(this=g.col("n"), desc=True)]))
        ranked = exp.select(*keys(columns), g.col("n"), g.alias(rank, "r")).from_(
            super()._counts(source, columns, where))
        return subquery(ranked, "ranked")

    def _measure(self, n: exp.Column) -> tuple[exp.Expression, exp.Expression]:
        top = exp.Max(this=n.copy())
        tail = exp.Coalesce(this=exp.Filter(this=exp.Sum(this=n.copy()), expression=exp.Where(
            this=exp.GTE(this=g.col("r"), expression=g.lit(self.l)))), expressions=[g.lit(0)])
        infinite = exp.Cast(this=g.lit("inf"), to=DOUBLE.copy())
        value = exp.Case().when(exp.EQ(this=tail.copy(), expression=g.lit(0)), infinite).else_(
            exp.Div(this=exp.Cast(this=top.copy(), to=DOUBLE.copy()), expression=tail.copy()))
        bad = exp.Not(this=exp.LT(this=top, expression=exp.Mul(this=g.lit(float(self.c)), expression=tail)))
        return value, bad

    def sample_test(self, population: int, sample: int, alpha: float) -> Constraint:
        return CLTest(self, population, sample, alpha)


# -- Rothko-S -------------------------------------------------------------------------------
def recursive_cl_statistic(counts: np.ndarray, c: float, l: int, population: int, sample: int) -> np.ndarray:
    """TR 3.1.2: with ``p1^ = x_1 / n_i``, ``p2^ = (x_l + ...) / n_i``, the statistic
    ``(c p2^ - p1^) / sqrt((c^2 p2^(1 - p2^) + p1^(1 - p1^)) / (n_i - 1) * (N - n) / N)`` per row
    of a (K, values) count matrix."""
    x = -np.sort(-counts, axis=1).astype(np.float64)
    ni = x.sum(axis=1)
    safe = np.maximum(ni, 1.0)
    p1 = x[:, 0] / safe
    p2 = (x[:, l - 1:].sum(axis=1) if x.shape[1] >= l else np.zeros(len(x))) / safe
    var = (c * c * p2 * (1 - p2) + p1 * (1 - p1)) / np.maximum(ni - 1, 1.0) * fpc(population, sample)
    return standardized(c * p2 - p1, var, ni)


def entropy_statistic(counts: np.ndarray, l: float, population: int, sample: int) -> np.ndarray:
    """The TR gives no entropy test (footnote 7); this one has the same form, by the delta
    method: with ``H^`` the sample entropy (nats), ``Var(H^) ~ (sum_j p_j^ ln^2 p_j^ - H^^2) /
    (n_i - 1) * (N - n) / N``, the statistic ``(H^ - ln l) / sqrt(Var)`` per row. (``H^`` is
    biased low, which only makes the test more cautious.)"""
    x = counts.astype(np.float64)
    ni = x.sum(axis=1)
    h = entropy(counts)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = x / np.maximum(ni, 1.0)[:, None]
        lnp = np.where(p > 0, np.log(np.where(p > 0, p, 1.0)), 0.0)
    second = (p * lnp * lnp).sum(axis=1)
    var = np.maximum(second - h * h, 0.0) / np.maximum(ni - 1, 1.0) * fpc(population, sample)
    return standardized(h - math.log(l), var, ni)


@dataclass(frozen=True)
class _DiversityTest(Constraint):
    """A diversity model judged on a sample: a class passes when its test statistic exceeds the
    upper ``alpha`` quantile of the standard normal."""

    constraint: RecursiveCLDiversity | EntropyLDiversity
    population: int
    sample: int
    alpha: float

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
        return recursive_cl_statistic(counts, c.c, c.l, self.population, self.sample)  # type: ignore[union-attr]


@dataclass(frozen=True)
class EntropyTest(_DiversityTest):
    """Entropy l-diversity judged on a sample (delta method; the TR has no test)."""

    def statistic(self, counts: np.ndarray) -> np.ndarray:
        return entropy_statistic(counts, self.constraint.l, self.population, self.sample)
