"""Variance (squared-error) diversity of a numeric sensitive column (LeFevre et al., KDD 2006
and TR 1590)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from sqlglot import exp

from ...engine import sqlgen as g
from ..stats import ClassStats, Layout
from ..summaries import squared_error, variance
from .base import (
    BAD,
    SIZE,
    TOLERANCE,
    VALUE,
    VARIANCE,
    Constraint,
    Face,
    PrivacyModel,
    column,
    double,
    keys,
    number,
    plain,
    rows_of,
    shown,
)
from .sampling import chi2_upper


@dataclass(frozen=True)
class VarianceDiversity(PrivacyModel):
    """Variance diversity: the variance of the numeric ``sensitive`` attribute in every class,
    ``(1/|E|) sum (s - mean_E)^2``, is at least ``v`` (NULLs are left out of the variance; a
    class without a value has variance 0)."""

    sensitive: str
    v: float
    measure: ClassVar[str] = "variance"

    @property
    def numeric_columns(self) -> tuple[str, ...]:
        return (self.sensitive,)

    @property
    def min_size(self) -> int:
        return 2 if self.v > 0 else 1

    def allowed(self, stats: ClassStats, layout: Layout) -> np.ndarray:
        var = variance(layout.moments(stats, self.sensitive))
        return (var >= self.v * (1 - TOLERANCE)) | (stats.n == 0)

    def describe(self) -> str:
        return f"variance diversity({self.sensitive!r}, v={shown(self.v)})"

    def face(self) -> Face:
        """Judged from integer moments only (the finish takes it for exact columns)."""
        return Face(VARIANCE, self.sensitive, numeric=True, p=(self.v * (1 - TOLERANCE),))

    def checked(self) -> VarianceDiversity:
        sensitive = column(self)
        number(self, "v", 0.0)
        return dataclasses.replace(self, sensitive=sensitive, v=plain(self.v))

    def per_class(self, source: exp.Expression, columns: Sequence[str],
                  where: exp.Expression | None = None) -> exp.Select:
        var = exp.Coalesce(this=exp.func("var_pop", double(g.col(self.sensitive))), expressions=[g.lit(0.0)])
        bad = exp.LT(this=var.copy(), expression=g.lit(float(self.v) * (1 - TOLERANCE)))
        return rows_of(source, columns, where).select(
            g.alias(exp.Count(this=exp.Star()), SIZE), g.alias(var, VALUE), g.alias(bad, BAD),
            copy=False).group_by(*keys(columns))

    def sample_test(self, population: int, sample: int, alpha: float) -> Constraint:
        return VarianceTest(self, alpha)


@dataclass(frozen=True)
class VarianceTest(Constraint):
    """Variance diversity judged on a sample (TR 3.1.3): reject when ``(n_i - 1) s^2 / v >=
    chi^2_alpha(n_i - 1)``, ``s^2`` the sample variance, i.e. the child's squared error over
    ``v``."""

    constraint: VarianceDiversity
    alpha: float

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
