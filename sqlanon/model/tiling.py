"""The guillotine tiling: rebuild a balanced tree of cuts from disjoint boxes that tile a domain.

Mondrian's regions are the leaves of a tree of binary cuts and hierarchy node splits, so they
form a *guillotine* tiling: every set of boxes of a subtree is separated into two non-empty
sides by one cut ``position <= c`` on one attribute. :func:`guillotine` rebuilds such a tree
from the boxes alone, level by level and vectorized over all open nodes, taking the most
balanced valid cut (see :mod:`sqlanon.release.apply`, which walks the tree in SQL). Pure numpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError

_GAP = ("the rules' boxes do not cover the domain (a region is missing or was edited): not a sqlanon "
        "rules relation")


@dataclass(frozen=True)
class Tree:
    """A binary tree of cuts whose leaves are the boxes.

    Internal node ``j`` (key ``-(j + 1)``; the root is ``-1``) sends a point ``p`` to ``left[j]``
    when ``p[attr[j]] <= cut[j]``, else to ``right[j]``; a child ``>= 0`` is a leaf: the index of
    its box. ``level[j]`` is node ``j``'s distance from the root, ``depth`` the number of internal
    nodes on the longest root-to-leaf path. A single box is a tree with no internal node
    (``root = 0``, ``depth = 0``).
    """

    attr: np.ndarray
    cut: np.ndarray
    left: np.ndarray
    right: np.ndarray
    level: np.ndarray
    root: int
    depth: int

    def weights(self, leaf_weight: np.ndarray) -> np.ndarray:
        """Per internal node, the sum of ``leaf_weight`` over the boxes below it."""
        w = np.zeros(len(self.attr))
        for level in range(self.depth - 1, -1, -1):  # deeper levels first
            js = np.nonzero(self.level == level)[0]
            for child in (self.left[js], self.right[js]):
                w[js] += np.where(child >= 0, leaf_weight[np.maximum(child, 0)], w[np.maximum(-child - 1, 0)])
        return w

    def locate(self, points: np.ndarray) -> np.ndarray:
        """The leaf (box index) of each point, by walking the tree in numpy (for tests)."""
        cur = np.full(len(points), self.root, dtype=np.int64)
        for _ in range(self.depth):
            inner = cur < 0
            j = -cur[inner] - 1
            go_left = points[inner, self.attr[j]] <= self.cut[j]
            cur[inner] = np.where(go_left, self.left[j], self.right[j])
        return cur


def guillotine(a: np.ndarray, b: np.ndarray, lo: np.ndarray | None = None, hi: np.ndarray | None = None) -> Tree:
    """Rebuild a balanced tree of cuts over disjoint boxes ``(a, b]`` that tile a guillotine
    partition (``a``, ``b``: int64 arrays ``(boxes, dims)``).

    All open nodes of a level are handled together. Each dimension keeps the order of the live
    boxes sorted by (node, a, b); a cut after the first ``t`` boxes of a node is valid when
    ``max(b[:t]) <= a[t]`` (no box straddles it). The cut taken maximizes the smaller side's box
    count (ties: first dimension, then lower cut); children are stable partitions of each
    dimension's order, so nothing is sorted again. O(levels x dims x boxes).

    With the domain ``(lo, hi]`` (int64 arrays ``(dims,)``) the boxes must also *cover* it: each
    tree node's cell is its parent's cut at the cut value, and every leaf's box must equal its
    cell (disjoint boxes whose cells are their boxes tile the domain).

    Raises:
        InputError: when some set of boxes has no valid cut (the boxes overlap or do not form a
            guillotine partition), or a box is smaller than its cell (a gap in the domain).
    """
    n, d = a.shape
    if lo is None or hi is None:
        lo, hi = a.min(axis=0), b.max(axis=0)
    if n == 1:
        if not (np.array_equal(a[0], lo) and np.array_equal(b[0], hi)):
            raise InputError(_GAP)
        z = np.zeros(0, np.int64)
        return Tree(z, z, z, z, z, root=0, depth=0)
    cell_lo, cell_hi = np.asarray(lo, np.int64)[None, :].copy(), np.asarray(hi, np.int64)[None, :].copy()
    shift = int(min(a.min(), b.min()))
    span = int(max(a.max(), b.max())) - shift + 1
    attr_l, cut_l, left_l, right_l = [], [], [], []
    group = np.zeros(n, np.int64)  # per box: index of its open node
    keys = np.array([-1], np.int64)  # per open node: its internal node key
    starts, sizes = np.array([0]), np.array([n])
    a_cols = [np.ascontiguousarray(a[:, j]) for j in range(d)]  # gathers from contiguous columns
    b_cols = [np.ascontiguousarray(b[:, j]) for j in range(d)]
    orders = [np.lexsort((b_cols[j], a_cols[j])) for j in range(d)]
    next_key = -2
    depth = 0
    while len(keys):
        depth += 1
        live = len(orders[0])
        nodes = len(keys)
        best_bal = np.full(nodes, -1, np.int64)
        best_attr = np.zeros(nodes, np.int64)
        best_cut = np.zeros(nodes, np.int64)
        # every order is sorted by node first, so the node of each position is the same for all
        gs = group[orders[0]]
        offset = gs * span
        pos = np.arange(live) - starts[gs]
        same = gs[1:] == gs[:-1]
        rank = np.minimum(pos + 1, sizes[gs] - pos - 1) * (live + 1) + (live - pos)  # balance, then lower cut
        for j in range(d):
            o = orders[j]
            aj, bj = a_cols[j][o], b_cols[j][o]
            cummax = np.maximum.accumulate(bj - shift + offset) - offset + shift  # per node
            valid = np.zeros(live, bool)
            valid[:-1] = same & (cummax[:-1] <= aj[1:])
            top = np.maximum.reduceat(np.where(valid, rank, -1), starts)
            bal, at = top // (live + 1), live - top % (live + 1)
            better = (top >= 0) & (bal > best_bal)  # strictly: ties keep the earlier dimension
            best_bal[better] = bal[better]
            best_attr[better] = j
            best_cut[better] = cummax[(starts + at)[better]]
        if (best_bal < 0).any():
            raise InputError("the rules' boxes do not form a guillotine partition of the domain (they overlap or "
                             "leave gaps that no cut separates): not a sqlanon rules relation")
        boxes = orders[0]
        gb = group[boxes]
        go_left = np.zeros(n, bool)
        go_left[boxes] = b[boxes, best_attr[gb]] <= best_cut[gb]
        n_left = np.bincount(gb, weights=go_left[boxes], minlength=nodes).astype(np.int64)
        # children in order (node, side): their sizes, and which are leaves (one box)
        child_size = np.stack([n_left, sizes - n_left], axis=1).ravel()
        inner = child_size > 1
        child_key = np.zeros(2 * nodes, np.int64)
        child_key[inner] = next_key - np.arange(int(inner.sum()))
        next_key -= int(inner.sum())
        side = (~go_left).astype(np.int64)
        slot = 2 * gb + side[boxes]  # per live box (in orders[0]'s order): its child
        leaf_child = np.zeros(n, bool)
        leaf_child[boxes] = child_size[slot] == 1
        child_box = np.zeros(2 * nodes, np.int64)
        child_box[slot[leaf_child[boxes]]] = boxes[leaf_child[boxes]]
        child = np.where(inner, child_key, child_box)
        # the children's cells: the parent's, cut at the cut value on the cut's dimension
        child_lo, child_hi = np.repeat(cell_lo, 2, axis=0), np.repeat(cell_hi, 2, axis=0)
        idx = np.arange(nodes)
        child_hi[2 * idx, best_attr] = best_cut
        child_lo[2 * idx + 1, best_attr] = best_cut
        leaf = ~inner
        lone = child_box[leaf]
        if not (np.array_equal(a[lone], child_lo[leaf]) and np.array_equal(b[lone], child_hi[leaf])):
            raise InputError(_GAP)
        cell_lo, cell_hi = child_lo[inner], child_hi[inner]
        attr_l.append(best_attr)
        cut_l.append(best_cut)
        left_l.append(child[0::2])
        right_l.append(child[1::2])
        # stable partition of every dimension's order: each node's lefts, then its rights
        seg = starts[gs]
        new_orders = []
        for o in orders:
            left_here = go_left[o]
            before = np.cumsum(left_here) - left_here
            lb = before - before[seg]  # lefts before this position, within its node
            new = np.where(left_here, seg + lb, seg + n_left[gs] + (pos - lb))
            moved = np.empty_like(o)
            moved[new] = o
            new_orders.append(moved[~leaf_child[moved]])
        orders = new_orders
        new_group = np.cumsum(inner) - 1  # dense index of each inner child
        group[boxes] = new_group[slot]
        keys = child_key[inner]
        sizes = child_size[inner]
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    attr, cut = np.concatenate(attr_l), np.concatenate(cut_l)
    left, right = np.concatenate(left_l), np.concatenate(right_l)
    # keys were handed out level by level in node order, so node j of the concatenation is -(j+1)
    level = np.repeat(np.arange(depth), [len(x) for x in attr_l])
    return Tree(attr, cut, left, right, level, root=-1, depth=depth)
