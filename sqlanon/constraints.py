"""Privacy constraints: each judges candidate equivalence classes from their statistics.

A split is *allowable* when every child it creates satisfies every constraint (LeFevre et al.,
Workload-Aware Anonymization, KDD 2006, Section 2; TR 1590, Section 1.2). Constraints only
filter; ranking the allowable splits is the criterion's job (:mod:`sqlanon.criteria`). Each
constraint declares the statistics it needs so that the stats statement computes only those.
Judgement is vectorized: one call covers every cut of every partition of a tree level.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np


class Constraint(Protocol):
    """What a privacy model must provide."""

    needs: ClassVar[frozenset[str]]

    @property
    def min_size(self) -> int:
        """A lower bound on the rows of any acceptable non-empty class (prunes small partitions)."""
        ...

    def allowed(self, n: np.ndarray) -> np.ndarray:
        """Which candidate classes (given their sizes ``n``) are acceptable."""
        ...


@dataclass(frozen=True)
class KAnonymity:
    """k-anonymity (Samarati & Sweeney): every equivalence class holds at least ``k`` rows.

    An empty child (a hierarchy node no row falls into) is not an equivalence class of the
    published data, so it is acceptable: it only exists so that the rules cover the domain.
    """

    k: int
    needs: ClassVar[frozenset[str]] = frozenset({"count"})

    @property
    def min_size(self) -> int:
        return self.k

    def allowed(self, n: np.ndarray) -> np.ndarray:
        return (n >= self.k) | (n == 0)
