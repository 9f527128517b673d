"""The one split decision function, shared by the SQL-pushed and the in-memory loops.

Given the AV frequency groups of one candidate attribute for a batch of partitions, decide for
each partition whether the attribute has an allowable split and, if so, which one — the
scikit-learn splitter pattern: constraints reject cuts first, the criterion ranks what is left.

* Ordered attribute: every cut between two consecutive distinct codes is a candidate; its left
  child holds the cumulative count ``L`` and its right child ``n - L``. All cuts of all
  partitions are judged in one vectorized pass.
* Hierarchical attribute: the split replaces the partition's node by its children (KDD 2006,
  Figure "basic Mondrian algorithm"); it is allowable when every non-empty child is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .constraints import Constraint
from .criteria import Median
from .domain import Domain
from .hierarchy import Hierarchy
from .stats import FrequencyGroups, first_of_run


@dataclass(frozen=True)
class Children:
    """The children of the partitions that split, ordered by parent then code.

    Attributes:
        parent: index of the split partition (into the batch being decided).
        lo, hi: the child's code interval on the split attribute (inclusive).
        node: the child's hierarchy node, -1 for ordered attributes.
        count: rows in the child (0 for a hierarchy child no row falls into).
    """

    parent: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    node: np.ndarray
    count: np.ndarray

    @classmethod
    def concat(cls, parts: Sequence[Children]) -> Children:
        parts = [p for p in parts if len(p.parent)] or [_EMPTY]
        merged = cls(*(np.concatenate([getattr(p, f) for p in parts]) for f in cls.__dataclass_fields__))
        order = np.lexsort((merged.lo, merged.parent))
        return cls(*(getattr(merged, f)[order] for f in cls.__dataclass_fields__))


_EMPTY = Children(*(np.zeros(0, np.int64) for _ in range(5)))


def choose_splits(
    attr: np.ndarray,
    box_lo: np.ndarray,
    box_hi: np.ndarray,
    node: np.ndarray,
    groups: FrequencyGroups,
    domains: Sequence[Domain],
    constraints: Sequence[Constraint],
    criterion: Median,
) -> tuple[np.ndarray, Children]:
    """Decide the split of each partition on its candidate attribute.

    Args:
        attr: (P,) the QI each partition tries now.
        box_lo, box_hi: (P,) the partition's code interval on that QI.
        node: (P,) the partition's node on that QI if hierarchical, else -1.
        groups: AV groups of that QI for the P partitions.
        domains, constraints, criterion: the request.

    Returns:
        ``(allowed, children)``: which partitions split, and their children.
    """
    P = len(attr)
    n = groups.totals(P)
    allowed = np.zeros(P, dtype=bool)
    results = []
    hierarchical = np.array([d.num is None for d in domains], dtype=bool)[attr[groups.part]]
    if (~hierarchical).any():
        ok, kids = _ordered(groups, ~hierarchical, n, box_lo, box_hi, constraints, criterion)
        allowed |= ok
        results.append(kids)
    for j in np.unique(attr[groups.part[hierarchical]]):
        rows = hierarchical & (attr[groups.part] == j)
        h = domains[j].qi.hierarchy
        assert h is not None
        ok, kids = _hierarchical(groups, rows, node, h, constraints)
        allowed |= ok
        results.append(kids)
    return allowed, Children.concat(results)


def _passes(constraints: Sequence[Constraint], n: np.ndarray) -> np.ndarray:
    ok = np.ones(len(n), dtype=bool)
    for c in constraints:
        ok &= c.allowed(n)
    return ok


def _ordered(
    groups: FrequencyGroups,
    rows: np.ndarray,
    n: np.ndarray,
    box_lo: np.ndarray,
    box_hi: np.ndarray,
    constraints: Sequence[Constraint],
    criterion: Median,
) -> tuple[np.ndarray, Children]:
    part, code = groups.part, groups.code
    left = groups.cumulative()
    total = n[part]
    ok = rows & ~groups.is_last() & _passes(constraints, left) & _passes(constraints, total - left)
    cand = ok.nonzero()[0]
    # Best cut per partition: lowest score, then lowest code. Both are packed into one key so
    # that a segmented minimum finds it (the groups are sorted by partition).
    score = criterion.cut_score(left[cand], total[cand]).astype(np.int64)
    key = score * (int(code.max(initial=0)) + 1) + code[cand]
    starts = first_of_run(part[cand])
    if len(starts):
        best_key = np.minimum.reduceat(key, starts)
        hit = key == np.repeat(best_key, np.diff(np.append(starts, len(cand))))
        best = cand[hit][first_of_run(part[cand][hit])]
    else:
        best = cand
    p = part[best]
    allowed = np.zeros(len(n), dtype=bool)
    allowed[p] = True
    cut = code[best].astype(np.int64)
    kids = Children(
        parent=np.repeat(p, 2),
        lo=np.column_stack((box_lo[p], cut + 1)).ravel(),
        hi=np.column_stack((cut, box_hi[p])).ravel(),
        node=np.full(2 * len(p), -1, dtype=np.int64),
        count=np.column_stack((left[best], n[p] - left[best])).ravel(),
    )
    return allowed, kids


def _hierarchical(
    groups: FrequencyGroups,
    rows: np.ndarray,
    node: np.ndarray,
    h: Hierarchy,
    constraints: Sequence[Constraint],
) -> tuple[np.ndarray, Children]:
    idx = rows.nonzero()[0]
    part = groups.part[idx]
    child = h.child_of(node[part], groups.code[idx]).astype(np.int64)
    # Codes are sorted within a partition and children cover consecutive code intervals, so
    # (part, child) runs are contiguous: their sums are the children's sizes.
    key_change = np.concatenate(([True], (part[1:] != part[:-1]) | (child[1:] != child[:-1])))
    starts = key_change.nonzero()[0]
    sizes = np.add.reduceat(groups.count[idx], starts) if len(starts) else np.zeros(0, np.int64)
    run_part, run_child = part[starts], child[starts]
    bad = np.zeros(len(node), dtype=bool)
    bad[run_part[~_passes(constraints, sizes)]] = True
    considered = np.zeros(len(node), dtype=bool)
    considered[run_part] = True
    allowed = considered & ~bad
    # Emit every child of each split node, the empty ones too: the rules must cover the domain.
    p = allowed.nonzero()[0]
    first, count = _child_table(h)
    parents = node[p]
    reps = count[parents]
    parent_idx = np.repeat(p, reps)
    offsets = np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)
    kid_nodes = first[np.repeat(parents, reps)] + offsets
    kid_nodes = _child_ids(h)[kid_nodes]
    counts = np.zeros(len(kid_nodes), dtype=np.int64)
    keep = allowed[run_part]
    # Position of each non-empty run among all emitted children: same parent, same child node.
    pos = np.searchsorted(parent_idx * (h.n_nodes + 1) + kid_nodes,
                          run_part[keep] * (h.n_nodes + 1) + run_child[keep])
    counts[pos] = sizes[keep]
    kids = Children(
        parent=parent_idx,
        lo=h.leaf_lo[kid_nodes].astype(np.int64),
        hi=h.leaf_hi[kid_nodes].astype(np.int64),
        node=kid_nodes,
        count=counts,
    )
    return allowed, kids


def _child_table(h: Hierarchy) -> tuple[np.ndarray, np.ndarray]:
    """CSR layout of the children lists: start offset and number of children per node."""
    count = np.array([len(c) for c in h.children], dtype=np.int64)
    first = np.cumsum(count) - count
    return first, count


def _child_ids(h: Hierarchy) -> np.ndarray:
    return np.array([c for cs in h.children for c in cs], dtype=np.int64)
