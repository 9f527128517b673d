"""k-anonymity (Samarati & Sweeney): every equivalence class holds at least ``k`` rows."""

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
from .base import BAD, SIZE, VALUE, PrivacyModel, double, integer, keys, rows_of
from .sampling import z_upper


@dataclass(frozen=True)
class KAnonymity(PrivacyModel):
    """k-anonymity: every class holds at least ``k`` rows. Its measure is the class's rows.

    ``qid``: the quasi-identifier this k is for, when a request has several (TKDE 2007,
    Definition 1: every group of rows equal on the QID holds at least ``k``; top-down refinement
    enforces each); None: the request's QIs."""

    k: int
    qid: tuple[str, ...] | None = None
    size_only: ClassVar[bool] = True
    measure: ClassVar[str] = "rows"

    def __post_init__(self) -> None:
        if isinstance(self.qid, list):
            object.__setattr__(self, "qid", tuple(self.qid))

    @property
    def min_size(self) -> int:
        return self.k

    def allowed(self, stats: ClassStats, layout: Layout) -> np.ndarray:
        return (stats.n >= self.k) | (stats.n == 0)

    def describe(self) -> str:
        return f"k-anonymity(k={self.k})" if self.qid is None else f"k-anonymity(k={self.k}, qid={list(self.qid)})"

    def reason(self) -> str:
        return f"class below k={self.k}"

    def checked(self) -> KAnonymity:
        return dataclasses.replace(self, k=integer(self, "k"))

    def record(self) -> dict[str, object]:
        """``{"type": "KAnonymity", "k": k}``, with ``qid`` (a list) only when given."""
        return {"type": "KAnonymity", "k": self.k, **({"qid": list(self.qid)} if self.qid is not None else {})}

    def release_entry(self) -> tuple[str, dict[str, object]]:
        """A k of its own QID is a ``privacy.qids`` entry, ``{ columns = [...], k = N }``."""
        if self.qid is None:
            return super().release_entry()
        return "qids", {"columns": list(self.qid), "k": self.k}

    def per_class(self, source: exp.Expression, columns: Sequence[str],
                  where: exp.Expression | None = None) -> exp.Select:
        size = exp.Count(this=exp.Star())
        return rows_of(source, columns, where).select(
            g.alias(size, SIZE), g.alias(double(size.copy()), VALUE),
            g.alias(exp.LT(this=size.copy(), expression=g.lit(self.k)), BAD), copy=False).group_by(*keys(columns))

    def sample_test(self, population: int, sample: int, alpha: float) -> KAnonymity:
        """TR 3.1.1: ``p = |R_i| / N``, H0 ``p = p0 = k / N``; with ``p^ = n_i / n`` reject when
        ``(p^ - p0) / sqrt(p0 (1 - p0) / n * (N - n) / (N - 1)) >= z_alpha`` (normal
        approximation, finite-population correction). Monotone in ``n_i``, so the test *is*
        k-anonymity with the sample threshold :func:`k_threshold`."""
        return dataclasses.replace(self, k=k_threshold(self.k, population, sample, alpha))


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
