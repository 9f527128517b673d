"""Split criteria: which attribute to try first and which allowable cut to prefer.

Median Mondrian (LeFevre, DeWitt, Ramakrishnan, Mondrian Multidimensional k-Anonymity, ICDE
2006; restated in KDD 2006, Section 3.1): choose the attribute with the widest *normalized
range* and cut it at the median, falling back to the next attribute when no cut is allowable.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .domain import Domain


def normalized_range(
    cmin: np.ndarray, cmax: np.ndarray, node: np.ndarray, domains: Sequence[Domain]
) -> tuple[np.ndarray, np.ndarray]:
    """Normalized range of every QI in every partition, and which QIs can be split at all.

    Args:
        cmin, cmax: (P, d) smallest and largest code present in each partition.
        node: (P, d) the partition's hierarchy node per hierarchical QI.
        domains: the d encoded domains.

    Returns:
        ``(w, candidate)``, both (P, d). Ordered QI: ``w = (num(cmax) - num(cmin)) /
        (num(last) - num(first))`` (0 when the whole column holds one value); a candidate iff
        ``cmin < cmax``. Hierarchical QI: ``w = leaves(node) / leaves(root)``; a candidate iff
        the node is not a leaf.
    """
    w = np.zeros(cmin.shape, dtype=np.float64)
    candidate = np.zeros(cmin.shape, dtype=bool)
    for j, d in enumerate(domains):
        if d.num is not None:
            span = d.num[-1] - d.num[0]
            if span > 0:
                w[:, j] = (d.num[cmax[:, j]] - d.num[cmin[:, j]]) / span
            candidate[:, j] = cmin[:, j] < cmax[:, j]
        else:
            h = d.qi.hierarchy
            assert h is not None
            nodes = node[:, j]
            w[:, j] = (h.leaf_hi[nodes] - h.leaf_lo[nodes] + 1) / h.n_leaves
            inner = np.array([len(c) > 0 for c in h.children], dtype=bool)
            candidate[:, j] = inner[nodes]
    return w, candidate


@dataclass(frozen=True)
class Median:
    """Median Mondrian: widest normalized range first; the most balanced allowable cut.

    Attribute order: ``w`` descending, ties broken by QI position. Cut score (lower is better):
    ``|2 L - n|`` for a cut leaving ``L`` of ``n`` rows on the left, ties to the lower cut —
    the median cut when it is allowable, otherwise the allowable cut nearest to it.
    """

    def rank(
        self, cmin: np.ndarray, cmax: np.ndarray, node: np.ndarray, domains: Sequence[Domain],
        exclude: np.ndarray | None = None,
    ) -> np.ndarray:
        """(P, d) QI indices in the order to try them; -1 marks the end of the candidates.

        ``exclude`` (P, d) removes QIs known to have no allowable split.
        """
        w, candidate = normalized_range(cmin, cmax, node, domains)
        if exclude is not None:
            candidate &= ~exclude
        key = np.where(candidate, -w, np.inf)
        order = np.argsort(key, axis=1, kind="stable")  # stable: ties keep QI position order
        return np.where(np.take_along_axis(candidate, order, axis=1), order, -1)

    def cut_score(self, left: np.ndarray, n: np.ndarray) -> np.ndarray:
        return np.abs(2 * left - n)
