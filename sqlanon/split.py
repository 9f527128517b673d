"""The one split decision function, shared by the SQL-pushed and the in-memory loops.

Given the frequency groups of candidate (partition, QI) pairs, :func:`evaluate` finds for every
pair its best allowable split — the scikit-learn splitter pattern: constraints reject cuts
first, the criterion ranks what is left — and :func:`children` spells out the chosen splits.

* Ordered QI: every cut between two consecutive distinct codes is a candidate; its left child
  has the cumulative statistics and its right child the partition's minus those. All cuts of
  all pairs are judged in one vectorized pass.
* Hierarchical QI: the split replaces the partition's node by its children (KDD 2006, Figure
  "basic Mondrian algorithm"); it is allowable when every non-empty child is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .constraints import Constraint, KAnonymity, Layout
from .criteria import Criterion
from .hierarchy import Hierarchy
from .stats import ClassStats, FrequencyGroups, first_of_run

if TYPE_CHECKING:  # domain builds on spec, which builds on the criteria
    from .domain import Domain

#: Normalized impurities closer than this count as a tie (summation order must not decide).
TIE = 1e-12


@dataclass(frozen=True)
class Children:
    """The children of the partitions that split, ordered by parent then code.

    Attributes:
        parent: index of the split partition.
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


@dataclass(frozen=True)
class Evaluation:
    """For each candidate pair: whether it has an allowable split, the criterion's best one and
    the most balanced one (the Median choice, used for ties and below ``min_gain``).

    ``cut`` is the largest code of the left child (-1 for a hierarchy split); ``left`` its rows;
    ``key`` (Q, levels) the split's impurity normalized by the partition's, one column per level
    of the criterion, compared lexicographically (0 for Median); ``gain`` (Q, levels) the
    impurity removed per row at each level; ``balance`` is ``|2 L - n|``.
    """

    allowed: np.ndarray
    cut: np.ndarray
    left: np.ndarray
    key: np.ndarray
    gain: np.ndarray
    balance: np.ndarray
    median_cut: np.ndarray
    median_left: np.ndarray
    median_balance: np.ndarray


def evaluate(
    attr: np.ndarray,
    node: np.ndarray,
    groups: FrequencyGroups,
    domains: Sequence[Domain],
    constraints: Sequence[Constraint],
    criterion: Criterion,
    layout: Layout,
) -> Evaluation:
    """Best allowable split of each (partition, QI) pair.

    Args:
        attr: (Q,) the QI of each pair.
        node: (Q,) the partition's node on that QI if hierarchical, else -1.
        groups: frequency groups of the pairs (``groups.part`` indexes pairs).
    """
    Q = len(attr)
    total = groups.totals(Q)
    out = {f: np.zeros(Q, dtype=np.int64) for f in ("cut", "left", "balance", "median_cut", "median_left", "median_balance")}
    levels = criterion.levels
    out.update(allowed=np.zeros(Q, dtype=bool), key=np.zeros((Q, levels)), gain=np.zeros((Q, levels)))
    partition_terms = criterion.terms(total, layout)  # (Q, targets), None for Median
    hierarchical = np.array([d.num is None for d in domains], dtype=bool)[attr[groups.part]]
    if (~hierarchical).any():
        _ordered(groups, ~hierarchical, total, partition_terms, constraints, criterion, layout, out)
    for j in np.unique(attr[groups.part[hierarchical]]):
        h = domains[j].qi.hierarchy
        assert h is not None
        _hierarchical(groups, hierarchical & (attr[groups.part] == j), node, h, total, partition_terms,
                      constraints, criterion, layout, out)
    return Evaluation(**out)


def _passes(constraints: Sequence[Constraint], stats: ClassStats, layout: Layout) -> np.ndarray:
    """Rows of ``stats`` that satisfy every constraint. k-anonymity (cheap) goes first; the
    others only judge the rows still standing."""
    ok = np.ones(len(stats), dtype=bool)
    for c in sorted(constraints, key=lambda c: not isinstance(c, KAnonymity)):
        alive = ok.nonzero()[0]
        if len(alive) == 0:
            break
        if len(alive) == len(ok):
            ok &= c.allowed(stats, layout)
        else:
            ok[alive] = c.allowed(stats.take(alive), layout)
    return ok


def _score(criterion: Criterion, children: np.ndarray, partition: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A split's impurity as a fraction of its partition's, rounded so near-ties are ties (the
    order of a floating-point sum must not decide), and the impurity it removes per row; both
    (K, levels), one column per level of the criterion.

    ``children`` are the split's summed terms, ``partition`` the partition's, both (K, targets).
    """
    impurity = criterion.combine(children, partition)
    base = criterion.combine(partition, partition)
    scale = np.where(base > 0, base, 1.0)
    return np.round(impurity / scale / TIE) * TIE, (base - impurity) / np.maximum(n, 1)[:, None]


def _best(part: np.ndarray, keys: Sequence[np.ndarray]) -> np.ndarray:
    """Index of the lexicographically smallest ``keys`` row within each run of ``part`` (sorted).

    One segmented minimum per key, keeping the rows that reach it (several times faster than a
    lexsort over all candidates).
    """
    alive = np.arange(len(part))
    for key in keys:
        if len(alive) == 0:
            break
        k = key[alive]
        starts = first_of_run(part[alive])
        low = np.minimum.reduceat(k, starts)
        alive = alive[k == np.repeat(low, np.diff(np.append(starts, len(alive))))]
    return alive[first_of_run(part[alive])]


def _ordered(groups, rows, total, partition_terms, constraints, criterion, layout, out) -> None:
    part, code = groups.part, groups.code
    left = groups.cumulative()
    right = total.take(part) - left
    ok = rows & ~groups.is_last() & _passes(constraints, left, layout) & _passes(constraints, right, layout)
    cand = ok.nonzero()[0]
    if len(cand) == 0:
        return
    p = part[cand]
    balance = np.abs(2 * left.n[cand] - total.n[p])
    median = _best(p, (balance, code[cand]))
    if partition_terms is None:  # Median: the criterion's choice is the median choice
        best, key, gain = median, np.zeros((len(cand), 1)), np.zeros((len(cand), 1))
    else:
        children = criterion.terms(left, layout)[cand] + criterion.terms(right, layout)[cand]
        key, gain = _score(criterion, children, partition_terms[p], total.n[p])
        best = _best(p, (*key.T, balance, code[cand]))
    q = p[best]
    out["allowed"][q] = True
    out["cut"][q], out["left"][q], out["balance"][q] = code[cand][best], left.n[cand][best], balance[best]
    out["key"][q], out["gain"][q] = key[best], gain[best]
    out["median_cut"][p[median]] = code[cand][median]
    out["median_left"][p[median]] = left.n[cand][median]
    out["median_balance"][p[median]] = balance[median]


def _runs(groups: FrequencyGroups, rows: np.ndarray, node: np.ndarray, h: Hierarchy):
    """The (pair, child node) runs of a hierarchical QI's groups: codes are sorted within a pair
    and children cover consecutive code intervals, so each child's groups are contiguous."""
    idx = rows.nonzero()[0]
    part = groups.part[idx]
    child = h.child_of(node[part], groups.code[idx]).astype(np.int64)
    change = np.concatenate(([True], (part[1:] != part[:-1]) | (child[1:] != child[:-1])))
    starts = change.nonzero()[0]
    return idx, part[starts], child[starts], groups.stats.take(idx).reduce_runs(starts)


def _hierarchical(groups, rows, node, h, total, partition_terms, constraints, criterion, layout, out) -> None:
    _, run_part, _, stats = _runs(groups, rows, node, h)
    if len(run_part) == 0:
        return
    bad = np.zeros(len(node), dtype=bool)
    bad[run_part[~_passes(constraints, stats, layout)]] = True
    considered = np.zeros(len(node), dtype=bool)
    considered[run_part] = True
    q = (considered & ~bad).nonzero()[0]
    out["allowed"][q] = True
    out["cut"][q] = out["median_cut"][q] = -1
    if partition_terms is not None:
        terms = criterion.terms(stats, layout)
        starts = first_of_run(run_part)
        children = np.zeros_like(partition_terms)
        children[run_part[starts]] = np.add.reduceat(terms, starts, axis=0)
        key, gain = _score(criterion, children[q], partition_terms[q], total.n[q])
        out["key"][q], out["gain"][q] = key, gain


def children(
    pairs: np.ndarray,
    cut: np.ndarray,
    left: np.ndarray,
    attr: np.ndarray,
    box_lo: np.ndarray,
    box_hi: np.ndarray,
    node: np.ndarray,
    groups: FrequencyGroups,
    domains: Sequence[Domain],
) -> Children:
    """The children of the chosen splits, one per chosen pair (``pairs`` index the groups' pairs).

    Ordered: ``[lo, cut]`` with ``left`` rows and ``[cut + 1, hi]`` with the rest. Hierarchical:
    every child of the node, the empty ones too — the rules must cover the domain.
    ``Children.parent`` is the index into ``pairs``.
    """
    total = groups.totals(len(attr)).n
    ordered = np.array([d.num is not None for d in domains], dtype=bool)[attr[pairs]]
    out = []
    i = ordered.nonzero()[0]
    if len(i):
        q = pairs[i]
        out.append(Children(
            parent=np.repeat(i, 2),
            lo=np.column_stack((box_lo[q], cut[i] + 1)).ravel(),
            hi=np.column_stack((cut[i], box_hi[q])).ravel(),
            node=np.full(2 * len(i), -1, dtype=np.int64),
            count=np.column_stack((left[i], total[q] - left[i])).ravel(),
        ))
    for j in np.unique(attr[pairs[~ordered]]):
        i = ((attr[pairs] == j) & ~ordered).nonzero()[0]
        h = domains[j].qi.hierarchy
        assert h is not None
        chosen = np.zeros(len(attr), dtype=bool)
        chosen[pairs[i]] = True
        out.append(_node_children(groups, chosen[groups.part], node, h, pairs, i))
    return Children.concat(out)


def _node_children(groups, rows, node, h: Hierarchy, pairs, i) -> Children:
    _, run_part, run_child, stats = _runs(groups, rows, node, h)
    first = np.array([0] + [len(c) for c in h.children], dtype=np.int64).cumsum()[:-1]
    count = np.array([len(c) for c in h.children], dtype=np.int64)
    ids = np.array([c for cs in h.children for c in cs], dtype=np.int64)
    q = pairs[i]
    reps = count[node[q]]
    parent_idx = np.repeat(i, reps)
    offsets = np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)
    kid_nodes = ids[first[np.repeat(node[q], reps)] + offsets]
    counts = np.zeros(len(kid_nodes), dtype=np.int64)
    # Each non-empty run is one emitted child: same pair, same child node.
    stride = h.n_nodes + 1
    emitted = np.repeat(q, reps) * stride + kid_nodes
    by_key = np.argsort(emitted, kind="stable")
    counts[by_key[np.searchsorted(emitted[by_key], run_part * stride + run_child)]] = stats.n
    return Children(parent_idx, h.leaf_lo[kid_nodes].astype(np.int64), h.leaf_hi[kid_nodes].astype(np.int64),
                    kid_nodes, counts)
