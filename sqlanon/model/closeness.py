"""Earth Mover's Distance for t-closeness (Li, Li & Venkatasubramanian, *t-Closeness: Privacy
Beyond k-Anonymity and l-Diversity*, ICDE 2007, Section 4), with ARX's three ground distances.

A class E has the distribution ``P = (p_1..p_m)`` of the sensitive values (``p_i = n_i / |E|``)
and the whole table ``Q = (q_1..q_m)``, over the same ``m`` values (the table's distinct
values: a value absent from E has ``p_i = 0``). With ``r_i = p_i - q_i``:

* **equal** distance (every two values at distance 1): ``EMD = 1/2 sum_i |r_i|``;
* **ordered** distance (values in their sort order, ``|i - j| / (m - 1)`` apart):
  ``EMD = 1/(m-1) sum_i |r_1 + ... + r_i|`` (0 when m = 1);
* **hierarchical** distance (two leaves at ``height(lca) / H``, H the hierarchy's height):
  ``EMD = sum_N height(N)/H min(pos(N), neg(N))`` over the inner nodes N, where ``extra(C)`` is
  the sum of ``r`` over the leaves below C, ``pos(N)`` the sum of the positive ``extra`` of N's
  children and ``neg(N)`` that of the negative ones (negated); ``height(N)`` is the height of
  the subtree under N (for ARX's hierarchies, whose leaves all sit at one depth, N's level).

Pure numpy over count matrices (one row per candidate class, one column per value code),
column by column, so each row's value is computed by the same operations whatever the other
rows (the split decision must not depend on how candidates were batched).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .hierarchy import Hierarchy

DISTANCES = ("equal", "ordered", "hierarchical")


@dataclass(frozen=True, eq=False)
class Ground:
    """The whole table's distribution over a sensitive column's value codes and the ground
    distance between them: what a :class:`~sqlanon.model.constraints.TCloseness` measures
    every class against, computed once per request.

    Attributes:
        distance: ``"equal"``, ``"ordered"`` or ``"hierarchical"``.
        reference: ``q`` (C,): the table's share of each value code (codes in the column's sort
            order, NULL first).
        order: hierarchical only: the non-root nodes sorted by parent (children of one node
            consecutive), as hierarchy node ids.
        starts: hierarchical only: where each inner node's children begin in ``order``.
        weight: hierarchical only: ``height(N) / H`` of each inner node, in ``starts`` order.
        lo, hi: hierarchical only: the range of sorted leaf positions below each node of ``order``.
        leaf_order: hierarchical only: the value codes sorted by their hierarchy leaf (DFS order).
    """

    distance: str
    reference: np.ndarray
    order: np.ndarray | None = None
    starts: np.ndarray | None = None
    weight: np.ndarray | None = None
    lo: np.ndarray | None = None
    hi: np.ndarray | None = None
    leaf_order: np.ndarray | None = None

    @classmethod
    def of(cls, distance: str, counts: np.ndarray, hierarchy: Hierarchy | None = None,
           leaves: np.ndarray | None = None) -> Ground:
        """From the table's counts per value code; for the hierarchical distance, the hierarchy
        and the leaf code of each value code (every value a leaf)."""
        counts = np.asarray(counts, dtype=np.float64)
        reference = counts / max(counts.sum(), 1.0)
        if distance != "hierarchical":
            return cls(distance, reference)
        assert hierarchy is not None and leaves is not None
        h = hierarchy
        leaf_order = np.argsort(leaves, kind="stable")  # value codes in DFS leaf order
        sorted_leaves = np.asarray(leaves)[leaf_order]
        nodes = np.arange(1, h.n_nodes)
        order = nodes[np.argsort(h.parent[nodes], kind="stable")]
        parents = h.parent[order]
        starts = np.flatnonzero(np.concatenate(([True], parents[1:] != parents[:-1])))
        height = subtree_heights(h)
        total = max(h.height, 1)
        weight = height[parents[starts]] / total
        # leaves of the data below each node: positions in sorted_leaves within [leaf_lo, leaf_hi]
        lo = np.searchsorted(sorted_leaves, h.leaf_lo[order], side="left")
        hi = np.searchsorted(sorted_leaves, h.leaf_hi[order], side="right")
        return cls(distance, reference, order, starts, weight.astype(np.float64), lo, hi, leaf_order)

    def emd(self, counts: np.ndarray) -> np.ndarray:
        """EMD of each row of a (K, C) count matrix from the reference (0 for an empty row)."""
        return emd(counts, self)


def leaves_of(h: Hierarchy, texts: list[str | None]) -> np.ndarray:
    """The leaf code of each value given as the database's text (NULL as None), -1 where none:
    matched exactly, as the SQL check matches them (``CAST(value AS VARCHAR) = leaf``)."""
    index = {leaf: i for i, leaf in enumerate(h.leaves)}
    return np.array([index.get(t, -1) for t in texts], dtype=np.int64)


def subtree_heights(h: Hierarchy) -> np.ndarray:
    """The height of the subtree under every node (0 for a leaf)."""
    height = np.zeros(h.n_nodes, dtype=np.float64)
    for node in range(h.n_nodes - 1, 0, -1):  # pre-order: children come after their parent
        parent = h.parent[node]
        height[parent] = max(height[parent], height[node] + 1)
    return height


def shares(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's size ``n`` (K,) and its distribution ``p = counts / n`` (K, C; 0 for an
    empty row)."""
    counts = np.asarray(counts)
    n = np.zeros(len(counts))
    for j in range(counts.shape[1]):
        n += counts[:, j]
    p = counts.astype(np.float64) / np.maximum(n, 1.0)[:, None]
    return n, p


def emd(counts: np.ndarray, ground: Ground) -> np.ndarray:
    """EMD of each class (a row of counts per value code) from ``ground.reference``."""
    n, p = shares(counts)
    q = ground.reference
    out = np.zeros(len(p))
    if ground.distance == "equal":
        for j in range(p.shape[1]):
            out += np.abs(p[:, j] - q[j])
        out *= 0.5
    elif ground.distance == "ordered":
        m = p.shape[1]
        running = np.zeros(len(p))
        for j in range(m):
            running += p[:, j] - q[j]
            out += np.abs(running)
        out /= max(m - 1, 1)
    else:
        out = _hierarchical(p - q[None, :], ground)
    out[n == 0] = 0.0
    return out


def _hierarchical(r: np.ndarray, g: Ground) -> np.ndarray:
    """``sum_N w_N min(pos(N), neg(N))`` with every node's ``extra`` from running sums of ``r``
    in leaf order (a node's leaves are consecutive there)."""
    assert g.order is not None and g.starts is not None and g.weight is not None
    assert g.lo is not None and g.hi is not None and g.leaf_order is not None
    k = len(r)
    running = np.zeros((k, r.shape[1] + 1))
    for i, code in enumerate(g.leaf_order):
        running[:, i + 1] = running[:, i] + r[:, code]
    extra = running[:, g.hi] - running[:, g.lo]  # (K, non-root nodes), children consecutive
    pos = np.add.reduceat(np.maximum(extra, 0.0), g.starts, axis=1)
    neg = np.add.reduceat(np.maximum(-extra, 0.0), g.starts, axis=1)
    cost = np.minimum(pos, neg)
    out = np.zeros(k)
    for j in range(cost.shape[1]):
        out += g.weight[j] * cost[:, j]
    return out
