"""beta-likeness (Cao & Karras, *Publishing Microdata with a Robust Privacy Guarantee*, VLDB
2012), as ARX defines it (``BasicBLikeness``, ``EnhancedBLikeness``).

With ``p`` the share of a sensitive value in a class and ``q`` its share in the whole table,
every value *present* in a class (NULL is a value) must have ``(p - q) / q <= beta`` (basic), or
``(p - q) / q <= min(beta, -ln q)`` (enhanced: a frequent value may not become certain). Only an
increase of a value's share is bounded; ``beta > 0``. ARX's user interface offers the basic
variant unless told otherwise; so does ``enhanced=False`` here.

``(p - q) / q`` is computed as ``r - 1`` with ``r = p / q = (c N) / (n Q)``, the same IEEE double
in numpy and in every engine (:func:`~sqlanon.model.privacy.base.ratio`); the bound allows
:data:`~sqlanon.model.privacy.base.TOLERANCE` (the enhanced bound's ``ln q`` is a library call,
which engines may round differently in the last place).

Rothko-S's test (:class:`LikenessTest`): each value's bound is an upper bound on a proportion
within the child, so the TR's one-sided proportion test applies value by value (TR 1590,
Section 3.1.1's form): with ``b = (1 + bound) q`` the largest share a value may have and
``p^ = x / n_i`` its share in the sample child, reject "``p >= b``" when
``(b - p^) / sqrt(b (1 - b) / (n_i - 1) * (N - n) / N) > z_alpha'``, with ``alpha'`` the child's
level divided by the number of values that can break their bound (``b < 1``; Bonferroni). A
value absent from the population child satisfies its bound anyway, so testing every value is
sound (and cautious).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from sqlglot import exp

from ...engine import sqlgen as g
from ...errors import InputError
from ..stats import ClassStats, Layout
from .base import (
    BAD,
    BETA,
    SIZE,
    TOLERANCE,
    VALUE,
    AgainstTable,
    Constraint,
    Face,
    Reference,
    any_of,
    column,
    double,
    keys,
    number,
    plain,
    ratio,
    ratio_sql,
    reference_cells,
    shown,
    subquery,
)
from .sampling import fpc, standardized, z_upper


@dataclass(frozen=True)
class BetaLikeness(AgainstTable):
    """beta-likeness of ``sensitive`` (module docstring), basic or ``enhanced``. Its measure is
    a class's largest ``(p - q) / q``."""

    sensitive: str
    beta: float
    enhanced: bool = False
    reference: Reference | None = field(default=None, compare=False, repr=False)
    measure: ClassVar[str] = "max (p-q)/q"
    worst: ClassVar[str] = "max"
    spec_key: ClassVar[str] = "beta_likeness"
    spec_param: ClassVar[str] = "beta"
    spec_help: ClassVar[str] = ("beta-likeness: in every class each present value of COL has (p - q)/q <= BETA, p "
                                "its share in the class, q in the whole table; ,enhanced=true bounds it by "
                                "min(BETA, -ln q) (repeatable)")

    def limits(self) -> np.ndarray:
        """The bound on ``(p - q) / q`` of each value code: ``beta``, or ``min(beta, -ln q)``."""
        assert self.reference is not None
        beta = np.full(len(self.reference.counts), float(self.beta))
        if not self.enhanced:
            return beta
        with np.errstate(divide="ignore"):
            return np.minimum(beta, -np.log(self.reference.counts.astype(np.float64) / self.reference.total))

    def allowed(self, stats: ClassStats, layout: Layout) -> np.ndarray:
        if self.reference is None:
            raise ValueError(f"{self.describe()} has no reference distribution: resolve the request first")
        counts = layout.counts(stats, self.sensitive)
        limit = self.limits() + TOLERANCE
        n = np.zeros(len(counts))
        for j in range(counts.shape[1]):
            n += counts[:, j]
        ok = np.ones(len(counts), dtype=bool)
        with np.errstate(divide="ignore", invalid="ignore"):
            for j in range(counts.shape[1]):
                present = counts[:, j] > 0
                r = ratio(counts, j, n, self.reference.counts, self.reference.total)
                ok &= ~present | (r - 1.0 <= limit[j])
        return ok | (stats.n == 0)

    def face(self) -> Face | None:
        if self.reference is None:
            return None
        return Face(BETA, self.sensitive, p=(float(self.reference.total),),
                    a=self.reference.counts.astype(np.float64), b=self.limits() + TOLERANCE)

    def describe(self) -> str:
        kind = "enhanced " if self.enhanced else ""
        return f"{kind}beta-likeness({self.sensitive!r}, beta={shown(self.beta)})"

    def checked(self) -> BetaLikeness:
        sensitive = column(self)
        number(self, "beta", 0.0, strict=True)
        if not isinstance(self.enhanced, (bool, np.bool_)):
            raise InputError(f"BetaLikeness enhanced must be True or False, got {self.enhanced!r}")
        return dataclasses.replace(self, sensitive=sensitive, beta=plain(self.beta), enhanced=bool(self.enhanced),
                                   reference=None)

    def per_class(self, source: exp.Expression, columns: Sequence[str],
                  where: exp.Expression | None = None) -> exp.Select:
        increase = exp.Sub(this=ratio_sql(), expression=g.lit(1.0))
        limit: exp.Expression = double(g.lit(float(self.beta)))
        if self.enhanced:
            q = exp.Div(this=double(g.col("__q")), expression=double(g.col("__total")))
            limit = exp.Least(this=limit, expressions=[exp.Neg(this=exp.Ln(this=q))])
        above = exp.GT(this=increase.copy(), expression=exp.Add(this=limit, expression=double(g.lit(TOLERANCE))))
        cells = subquery(reference_cells(source, columns, self.sensitive, where), "cells")
        return (exp.select(*keys(columns), g.alias(exp.Max(this=g.col("__size")), SIZE),
                           g.alias(exp.Max(this=increase), VALUE), g.alias(any_of(above), BAD))
                .from_(cells).group_by(*keys(columns)))

    def sample_test(self, population: int, sample: int, alpha: float) -> Constraint:
        return LikenessTest(self, population, sample, alpha)


@dataclass(frozen=True)
class LikenessTest(Constraint):
    """beta-likeness judged on a sample (module docstring)."""

    constraint: BetaLikeness
    population: int
    sample: int
    alpha: float

    @property
    def class_columns(self) -> tuple[str, ...]:
        return self.constraint.class_columns

    @property
    def min_size(self) -> int:
        return 2

    def allowed(self, stats: ClassStats, layout: Layout) -> np.ndarray:
        c = self.constraint
        assert c.reference is not None
        counts = layout.counts(stats, c.sensitive)
        b = (1.0 + c.limits()) * c.reference.share()
        tested = np.flatnonzero(b < 1.0)
        ni = np.zeros(len(counts))
        for j in range(counts.shape[1]):
            ni += counts[:, j]
        z = z_upper(self.alpha / max(len(tested), 1))
        ok = np.ones(len(counts), dtype=bool)
        factor = fpc(self.population, self.sample) / np.maximum(ni - 1, 1.0)
        for j in tested:
            p = counts[:, j] / np.maximum(ni, 1.0)
            ok &= standardized(b[j] - p, b[j] * (1 - b[j]) * factor, ni) > z
        return ok | (stats.n == 0)

    def describe(self) -> str:
        return f"sample test of {self.constraint.describe()}"
