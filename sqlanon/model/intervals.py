"""A numeric hierarchy read as nested intervals, for ``published="hierarchy"``.

ARX's hierarchies of numbers (Adult's ages: ``17;15-19;10-19;0-19;*``) group consecutive values
into intervals. With leaves numbered in DFS pre-order (:mod:`sqlanon.model.hierarchy`) and
ascending in that order, every node covers a contiguous run of leaves, so it *is* the interval
``[its first leaf, its last leaf]`` and the nodes form a laminar family: two nodes' intervals
are nested or disjoint. The smallest node covering a closed range ``[a, b]`` is then the lowest
common ancestor of ``floor(a)`` (the largest leaf <= a) and ``ceil(b)`` (the smallest leaf >= b):
a node holds ``[a, b]`` iff its first leaf is <= a and its last leaf >= b, iff it holds both of
those leaves. Pure numpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import HierarchyError
from .hierarchy import Hierarchy


@dataclass(frozen=True, eq=False)
class Intervals:
    """A hierarchy of numbers whose leaves ascend in DFS order.

    Attributes:
        hierarchy: the hierarchy (no NULL leaf: NULL is handled by the caller).
        values: the number of each leaf code, strictly ascending.
    """

    hierarchy: Hierarchy
    values: np.ndarray

    @classmethod
    def of(cls, name: str, h: Hierarchy, integer: bool) -> Intervals:
        """Check that ``h`` (the hierarchy of numeric QI ``name``) is an interval hierarchy.

        Raises:
            HierarchyError: a leaf that is not a finite number (an integer, for an integer
                column), or leaves that do not ascend in the hierarchy's order (then a node is
                no interval).
        """
        leaves = [x for x in h.leaves if x is not None]
        if len(leaves) != h.n_leaves:
            raise HierarchyError(f"the interval hierarchy of {name!r} has a NULL leaf")
        values = np.empty(len(leaves))
        for i, text in enumerate(leaves):
            try:
                v = float(text)
            except ValueError:
                v = math.nan
            if not math.isfinite(v) or (integer and not v.is_integer()):
                what = "an integer" if integer else "a finite number"
                raise HierarchyError(f"published='hierarchy' reads the hierarchy of {name!r} as intervals of "
                                     f"numbers, but its leaf {text!r} is not {what}")
            values[i] = v
        down = np.nonzero(np.diff(values) <= 0)[0]
        if len(down):
            i = int(down[0])
            raise HierarchyError(
                f"published='hierarchy' reads the hierarchy of {name!r} as intervals, but its leaves do not ascend "
                f"in its order: {leaves[i]!r} comes before {leaves[i + 1]!r}, so a node would not be an interval. "
                f"List the leaves (rows of the CSV) in ascending order of value")
        return cls(h, values)

    @property
    def low(self) -> float:
        return float(self.values[0])

    @property
    def high(self) -> float:
        return float(self.values[-1])

    def covering(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Node id of the smallest interval covering ``[a[i], b[i]]`` (``low <= a <= b <= high``)."""
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        below = np.clip(np.searchsorted(self.values, a, side="right") - 1, 0, len(self.values) - 1)
        above = np.clip(np.searchsorted(self.values, b, side="left"), 0, len(self.values) - 1)
        anc = self.hierarchy.ancestors
        same = anc[below] == anc[above]  # a common prefix from the root down
        depth = np.cumprod(same, axis=1).sum(axis=1) - 1
        return anc[below, depth].astype(np.int64)

    def bounds(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The first and last leaf (as text) of each node: its published interval."""
        h = self.hierarchy
        leaves = np.asarray(h.leaves, dtype=object)
        return leaves[h.leaf_lo[nodes]], leaves[h.leaf_hi[nodes]]
