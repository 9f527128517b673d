"""delta-disclosure privacy (Brickell & Shmatikov, *The Cost of Privacy: Destruction of
Data-Mining Utility in Anonymized Data Publishing*, KDD 2008), as ARX defines it
(``DDisclosurePrivacy``).

With ``p`` the share of a sensitive value in a class and ``q`` its share in the whole table,
every value *present* in a class (``p > 0``; NULL is a value) must have
``|log2(p / q)| < delta`` -- in bits, ARX's logarithm (Brickell & Shmatikov write ``ln``; pycanon's
measure, :mod:`sqlanon.release.measures`, too: its delta is this one times ``ln 2``), strictly
below. A value absent from a class is not judged (ARX; the paper's definition would make every
class hold every value).

The verdict is computed without logarithms: ``|log2 r| < delta`` iff ``2^-delta < r < 2^delta``
for ``r = p / q = (c N) / (n Q)`` (``c`` the value's rows in the class of ``n`` rows, ``Q`` its
rows among the table's ``N``), and ``r`` is the same IEEE double in numpy and in every engine
(integers cast to doubles, two products and one division in the same order), so the partitioner
and the SQL check agree exactly, at the threshold too: no tolerance is needed.

Rothko-S has no sound test for it: a sample cannot show that a rare value is *absent* from a
population child rather than present below ``2^-delta q``, so a sample child's lower bound
cannot be established. The model needs the exact path (``sample_testable = False``):
``strategy="sample"`` refuses it and ``"auto"`` partitions with Rothko-T.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from sqlglot import exp

from ...engine import sqlgen as g
from ..stats import ClassStats, Layout
from .base import (
    BAD,
    DELTA,
    SIZE,
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


@dataclass(frozen=True)
class DeltaDisclosure(AgainstTable):
    """delta-disclosure privacy of ``sensitive`` (module docstring): in every class, every
    present value has ``|log2(p / q)| < delta``. Its measure is a class's largest
    ``|log2(p / q)|``."""

    sensitive: str
    delta: float
    reference: Reference | None = field(default=None, compare=False, repr=False)
    measure: ClassVar[str] = "max |log2(p/q)|"
    worst: ClassVar[str] = "max"
    spec_key: ClassVar[str] = "delta_disclosure"
    spec_param: ClassVar[str] = "delta"
    spec_help: ClassVar[str] = ("delta-disclosure privacy: in every class each present value of COL has "
                                "|log2(p/q)| < DELTA, p its share in the class, q in the whole table (repeatable)")
    sample_testable: ClassVar[bool] = False

    def bounds(self) -> tuple[float, float]:
        """``(2^-delta, 2^delta)``: the open interval ``p / q`` must lie in."""
        return 2.0 ** -float(self.delta), 2.0 ** float(self.delta)

    def allowed(self, stats: ClassStats, layout: Layout) -> np.ndarray:
        if self.reference is None:
            raise ValueError(f"{self.describe()} has no reference distribution: resolve the request first")
        counts = layout.counts(stats, self.sensitive)
        lo, hi = self.bounds()
        n = np.zeros(len(counts))
        for j in range(counts.shape[1]):
            n += counts[:, j]
        ok = np.ones(len(counts), dtype=bool)
        total = self.reference.total
        with np.errstate(divide="ignore", invalid="ignore"):
            for j in range(counts.shape[1]):
                present = counts[:, j] > 0
                r = ratio(counts, j, n, self.reference.counts, total)
                ok &= ~present | ((r > lo) & (r < hi))
        return ok | (stats.n == 0)

    def describe(self) -> str:
        return f"delta-disclosure({self.sensitive!r}, delta={shown(self.delta)})"

    def face(self) -> Face | None:
        if self.reference is None:
            return None
        lo, hi = self.bounds()
        return Face(DELTA, self.sensitive, p=(lo, hi, float(self.reference.total)),
                    a=self.reference.counts.astype(np.float64))

    def checked(self) -> DeltaDisclosure:
        sensitive = column(self)
        number(self, "delta", 0.0, strict=True)
        return dataclasses.replace(self, sensitive=sensitive, delta=plain(self.delta), reference=None)

    def per_class(self, source: exp.Expression, columns: Sequence[str],
                  where: exp.Expression | None = None) -> exp.Select:
        lo, hi = self.bounds()
        r = ratio_sql()
        bits = exp.Div(this=exp.Abs(this=exp.Ln(this=r.copy())), expression=double(g.lit(math.log(2.0))))
        outside = exp.or_(exp.LTE(this=r.copy(), expression=double(g.lit(lo))),
                          exp.GTE(this=r.copy(), expression=double(g.lit(hi))))
        cells = subquery(reference_cells(source, columns, self.sensitive, where), "cells")
        return (exp.select(*keys(columns), g.alias(exp.Max(this=g.col("__size")), SIZE),
                           g.alias(exp.Max(this=bits), VALUE), g.alias(any_of(outside), BAD))
                .from_(cells).group_by(*keys(columns)))

    def sample_test(self, population: int, sample: int, alpha: float) -> Constraint:
        raise ValueError(f"{self.describe()} has no Rothko-S test: it needs the exact path (strategy='levels')")
