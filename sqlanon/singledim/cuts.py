"""Cuts -> grid cells -> regions: a single-dimensional recoding as the release Mondrian publishes.

The final cut of every QI partitions its domain into values (intervals of codes, hierarchy
nodes), so the cuts form a grid and each non-empty cell is an equivalence class. The rules must
also cover the empty cells (:func:`sqlanon.apply`, regions and metrics place any point of the
domain), but a grid has exponentially many. A guillotine tiling covers them with few boxes:
split the domain on the first QI's values, split each slab *that holds rows* on the second QI's
values, and so on; a slab without rows stays one empty region spanning the whole domain of the
later QIs, and runs of empty values are merged (adjacent empty intervals into one interval, an
empty hierarchy subtree into its top node). Per QI, each slab with rows adds at most one empty
region per present interval plus one, or per child of a node on the paths to its present nodes
-- polynomial in the non-empty cells, not a product of the QIs' values -- and every region is a
box of the same kind as Mondrian's, so publishing, apply, regions, metrics and report work
unchanged.

Published bounds: every row of a cell shows its value's bounds on each QI -- an interval's first
and last value (not the smallest and largest of the cell's rows: every row of the interval shows
the same thing), a hierarchy node's label.

A categorical QI without a hierarchy is refined by disclosing values from ``⊥``; its published
form is a hierarchy built from the result (:func:`disclosure_hierarchy`): the root ``*`` over the
disclosed values and a node ``⊥`` over those still suppressed (labels no value of the column has).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..model.hierarchy import Hierarchy, unused_label
from ..model.partition import Boxes, Regions
from .tdr import SUPPRESSED, Attribute, factorize

#: Labels of the hierarchy of a categorical QI without one (:func:`disclosure_hierarchy`).
ROOT, HIDDEN = "*", "⊥"


@dataclass(frozen=True)
class Cells:
    """The release of a run: the regions (non-empty cells and the empty boxes covering the rest
    of the domain) and the region (pid) of every compressed row."""

    regions: Regions
    pid: np.ndarray


def disclosure_hierarchy(leaves: Sequence[str | None], disclosed: np.ndarray) -> tuple[Hierarchy, np.ndarray]:
    """The hierarchy publishing a ``⊥``-refined QI, and each old code's new leaf code.

    ``leaves``: the values (old code order); ``disclosed``: which are disclosed. Nothing
    disclosed or nothing left suppressed: ``*`` over every value; else ``*`` over the disclosed
    values (in code order) and ``⊥`` over the others. ``*`` and ``⊥`` are lengthened
    (:func:`~sqlanon.model.hierarchy.unused_label`) when they are values of the column: a
    published label then never reads as another node's.
    """
    shown = [i for i in range(len(leaves)) if disclosed[i]]
    hidden = [i for i in range(len(leaves)) if not disclosed[i]]
    root = unused_label(ROOT, leaves)
    if not shown or not hidden:
        tree: dict = {leaves[i]: {} for i in range(len(leaves))}
        order = list(range(len(leaves)))
    else:
        tree = {**{leaves[i]: {} for i in shown},
                unused_label(HIDDEN, {*leaves, root}): {leaves[i]: {} for i in hidden}}
        order = shown + hidden
    h = Hierarchy._build(root, tree)
    code = np.empty(len(leaves), dtype=np.int64)
    code[order] = np.arange(len(leaves))
    return h, code


def disclosure_nodes(h: Hierarchy, code: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """The node of every old code in :func:`disclosure_hierarchy`'s tree: its leaf when
    disclosed, else ``⊥`` (the root when nothing was disclosed)."""
    leaf = h.leaf_node[code]
    hidden = labels == SUPPRESSED
    if hidden.all() or not hidden.any():
        return np.where(hidden, 0, leaf).astype(np.int64)
    return np.where(hidden, h.parent[leaf[hidden.nonzero()[0][0]]], leaf).astype(np.int64)


def cells(values: np.ndarray, rows: np.ndarray, attributes: Sequence[Attribute], hi: Sequence[np.ndarray | None]
          ) -> Cells:
    """The guillotine regions of the final cuts (module docstring).

    Args:
        values: (G, d) the value id of every compressed row: an interval's first code, or a
            hierarchy node (categorical QIs without a hierarchy already as nodes of their
            :func:`disclosure_hierarchy`).
        rows: (G,) rows per compressed row.
        attributes: the d QIs (``"interval"`` or ``"hierarchy"``).
        hi: per interval QI, the last code of the interval starting at each value id.
    """
    G, d = values.shape
    full_lo = np.zeros(d, dtype=np.int64)
    full_hi = np.array([a.size - 1 for a in attributes], dtype=np.int64)
    full_node = np.array([0 if a.kind == "hierarchy" else -1 for a in attributes], dtype=np.int64)
    empty: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (lo, hi, node) of empty regions
    prefix = np.zeros(G, dtype=np.int64)  # the slab of every row
    p_lo, p_hi, p_node = full_lo[None, :].copy(), full_hi[None, :].copy(), full_node[None, :].copy()
    for j, a in enumerate(attributes):
        space = a.hierarchy.n_nodes if a.kind == "hierarchy" else a.size
        index, keys = factorize(prefix * space + values[:, j])  # a hash, not a sort of every row ...
        order = np.argsort(keys, kind="stable")  # ... then the few distinct (slab, value) pairs sorted
        position = np.empty(len(keys), dtype=np.int64)
        position[order] = np.arange(len(keys))
        pairs, prefix = keys[order], position[index]
        parent, value = pairs // space, pairs % space
        if a.kind == "interval":
            box_lo, box_hi, box_node = value, hi[j][value], np.full(len(value), -1)
            gap_parent, gap_lo, gap_hi, gap_node = _interval_gaps(parent, value, hi[j][value], a.size)
        else:
            h = a.hierarchy
            box_lo, box_hi, box_node = h.leaf_lo[value].astype(np.int64), h.leaf_hi[value].astype(np.int64), value
            gap_parent, gap_node = _hierarchy_gaps(parent, value, h)
            gap_lo, gap_hi = h.leaf_lo[gap_node].astype(np.int64), h.leaf_hi[gap_node].astype(np.int64)
        if len(gap_parent):
            lo, hi_, node = p_lo[gap_parent].copy(), p_hi[gap_parent].copy(), p_node[gap_parent].copy()
            lo[:, j], hi_[:, j], node[:, j] = gap_lo, gap_hi, gap_node
            empty.append((lo, hi_, node))
        p_lo, p_hi, p_node = p_lo[parent].copy(), p_hi[parent].copy(), p_node[parent].copy()
        p_lo[:, j], p_hi[:, j], p_node[:, j] = box_lo, box_hi, box_node
    n = np.bincount(prefix, weights=rows, minlength=len(p_lo)).astype(np.int64)
    C = len(p_lo)
    e_lo = np.concatenate([e[0] for e in empty]) if empty else np.zeros((0, d), np.int64)
    e_hi = np.concatenate([e[1] for e in empty]) if empty else np.zeros((0, d), np.int64)
    e_node = np.concatenate([e[2] for e in empty]) if empty else np.zeros((0, d), np.int64)
    E = len(e_lo)
    boxes = Boxes(np.arange(1, C + E + 1, dtype=np.int64), np.concatenate((n, np.zeros(E, np.int64))),
                  np.vstack((p_lo, e_lo)), np.vstack((p_hi, e_hi)), np.vstack((p_node, e_node)))
    none = np.full((E, d), -1, dtype=np.int64)
    # published bounds of a non-empty cell: its values' bounds (code extents of the box)
    regions = Regions(boxes, np.vstack((p_lo, none)), np.vstack((p_hi, none)), np.ones(C + E, dtype=bool))
    return Cells(regions, prefix + 1)


def _interval_gaps(parent: np.ndarray, lo: np.ndarray, hi: np.ndarray, size: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Runs of codes no present interval of the slab covers: ``(slab, lo, hi, node=-1)``.
    ``parent``/``lo``/``hi``: the present intervals, sorted by (slab, lo)."""
    first = np.ones(len(parent), dtype=bool)
    first[1:] = parent[1:] != parent[:-1]
    last = np.ones(len(parent), dtype=bool)
    last[:-1] = parent[1:] != parent[:-1]
    start = np.where(first, 0, np.concatenate(([0], hi[:-1] + 1)))  # where the gap before each begins
    before = lo > start
    after = last & (hi < size - 1)
    slab = np.concatenate((parent[before], parent[after]))
    g_lo = np.concatenate((start[before], hi[after] + 1))
    g_hi = np.concatenate((lo[before] - 1, np.full(int(after.sum()), size - 1)))
    return slab, g_lo, g_hi, np.full(len(slab), -1, dtype=np.int64)


def _hierarchy_gaps(parent: np.ndarray, node: np.ndarray, h: Hierarchy) -> tuple[np.ndarray, np.ndarray]:
    """The empty subtrees of each slab: children of the present nodes' strict ancestors that
    are neither such an ancestor nor present. Returns ``(slab, node)``."""
    N = h.n_nodes
    path = h.ancestors[h.leaf_lo[node]]  # (P, height+1): the root-to-node path, then the node repeated
    depth = h.depth[node]
    above = np.arange(path.shape[1])[None, :] < depth[:, None]
    open_keys = np.unique((parent[:, None] * N + path)[above])
    taken = np.union1d(open_keys, parent * N + node)
    slab, top = open_keys // N, open_keys % N
    sizes = np.array([len(h.children[t]) for t in top.tolist()], dtype=np.int64)
    kids = np.array([c for t in top.tolist() for c in h.children[t]], dtype=np.int64)
    slab = np.repeat(slab, sizes)
    keep = ~np.isin(slab * N + kids, taken)
    return slab[keep], kids[keep]
