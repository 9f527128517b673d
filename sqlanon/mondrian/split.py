"""The one split decision function, shared by the SQL-pushed and the in-memory loops.

Given the frequency groups of candidate (partition, QI) pairs, :func:`evaluate` finds for every
pair its best allowable split — the scikit-learn splitter pattern: constraints reject cuts
first, the criterion ranks what is left — and :func:`children` spells out the chosen splits.

* Ordered QI: every cut between two consecutive distinct codes is a candidate; its left child
  has the cumulative statistics and its right child the partition's minus those. All cuts of
  all pairs are judged in one vectorized pass.
* Hierarchical QI: the split replaces the partition's node by its children (KDD 2006, Figure
  "basic Mondrian algorithm"); it is allowable when every non-empty child is.

**Suppression** (``suppression=``) lives in :mod:`sqlanon.mondrian.suppression`: the fields
``suppress``, ``drop`` and ``cost`` of :class:`Evaluation` are its (0 for an ordinary split), and
:func:`children` spells out a suppressing split's suppressed children.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..model import score_kernels
from ..model.criteria import Criterion, InfoGain, Regression, Targets
from ..model.domain import Domain
from ..model.hierarchy import Hierarchy
from ..model.parallel import run_all
from ..model.privacy import Constraint
from ..model.stats import ClassStats, FrequencyGroups, Layout, Running, first_of_run, ranges
from ..model.summaries import xlogx_table

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
    suppressed: np.ndarray

    @classmethod
    def concat(cls, parts: Sequence[Children]) -> Children:
        parts = [p for p in parts if len(p.parent)] or [_EMPTY]
        merged = cls(*(np.concatenate([getattr(p, f) for p in parts]) for f in cls.__dataclass_fields__))
        order = np.lexsort((merged.lo, merged.parent))
        return cls(*(getattr(merged, f)[order] for f in cls.__dataclass_fields__))


_EMPTY = Children(*(np.zeros(0, np.int64) for _ in range(5)), np.zeros(0, dtype=bool))


@dataclass(frozen=True)
class Evaluation:
    """For each candidate pair: whether it has an allowable split, the criterion's best one and
    the most balanced one (the Median choice, used for ties and below ``min_gain``).

    ``cut`` is the largest code of the left child (-1 for a hierarchy split); ``left`` its rows;
    ``key`` (Q, levels) the split's impurity normalized by the partition's, one column per level
    of the criterion, compared lexicographically (0 for Median); ``gain`` (Q, levels) the
    impurity removed per row at each level; ``balance`` is ``|2 L - n|``. ``suppress``: the rows
    a suppressing split suppresses (0: an ordinary split); ``drop``: which side of a suppressing
    ordered cut is suppressed (1 left, 2 right, 0 none or hierarchical); ``cost``: a suppressing
    split's suppressed rows per unit of :func:`suppression_gain` (> 0; 0 for an ordinary split).
    A suppressing split has ``key`` and ``gain`` 0 and its median fields equal to its own.
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
    suppress: np.ndarray
    drop: np.ndarray
    cost: np.ndarray


def evaluate(
    attr: np.ndarray,
    node: np.ndarray,
    groups: FrequencyGroups,
    domains: Sequence[Domain],
    constraints: Sequence[Constraint],
    criterion: Criterion,
    layout: Layout,
    threads: int = 1,
) -> Evaluation:
    """Best allowable split of each (partition, QI) pair (on up to ``threads`` threads; the
    result does not depend on how many).

    Args:
        attr: (Q,) the QI of each pair.
        node: (Q,) the partition's node on that QI if hierarchical, else -1.
        groups: frequency groups of the pairs (``groups.part`` indexes pairs).

    Suppressing splits (``suppress``, ``drop``, ``cost``) are left at 0 here:
    :func:`sqlanon.mondrian.suppression.suppressing` adds them for partitions with a budget.
    """
    Q = len(attr)
    total = groups.totals(Q)
    out = {f: np.zeros(Q, dtype=np.int64) for f in ("cut", "left", "balance", "median_cut", "median_left",
                                                    "median_balance", "suppress", "drop")}
    levels = criterion.levels
    out.update(allowed=np.zeros(Q, dtype=bool), key=np.zeros((Q, levels)), gain=np.zeros((Q, levels)),
               cost=np.zeros(Q))
    partition_terms = criterion.terms(total, layout)  # (Q, targets), None for Median
    hierarchical = np.array([d.num is None for d in domains], dtype=bool)[attr[groups.part]]
    if (~hierarchical).any():
        _ordered(groups, ~hierarchical, total, partition_terms, constraints, criterion, layout, out, threads)
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
    for c in sorted(constraints, key=lambda c: not c.size_only):
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


def _ordered(groups, rows, total, partition_terms, constraints, criterion, layout, out, threads=1) -> None:
    part = groups.part
    running = Running(groups)
    # Every constraint declares the fewest rows a non-empty class may have, and both children of
    # an ordered cut are non-empty (the last group's "cut" leaves an empty right child, which this
    # also excludes). One comparison of running counts therefore discards every cut some
    # constraint would reject for size alone (near the leaves, partitions of a few k rows, most
    # cuts), and the constraints and the criterion only look at the cuts left.
    least = max([1, *(c.min_size for c in constraints)])
    n_left = running.n()
    cand = (rows & (n_left >= least) & (total.n[part] - n_left >= least)).nonzero()[0]
    if len(cand) == 0:
        return
    judged = _positions(layout, total, constraints)  # the columns the constraints read
    # Pairs whose choice is their most balanced allowable cut: all of them under Median, the
    # settled ones under the other criteria (every split scores alike there: see settled()).
    tied = None if partition_terms is None else settled(criterion, total, layout)
    balanced = np.ones(len(total), dtype=bool) if partition_terms is None else (
        tied if tied is not None else np.zeros(len(total), dtype=bool))
    # From here on every pair is judged on its own cuts alone, so runs of pairs can be searched
    # on several threads; the running sums they share are computed first, once.
    scored = _positions(layout, total, [criterion]) if partition_terms is not None else (set(), set())
    running.prepare(judged[0] | scored[0], judged[1] | scored[1], threads)
    run_all(lambda c: _ordered_cuts(c, groups, n_left, running, total, balanced, judged, partition_terms,
                                    constraints, criterion, layout, out),
            _split_runs(cand, part, threads), threads)


def _split_runs(cand: np.ndarray, part: np.ndarray, pieces: int, least: int = 65536) -> list[np.ndarray]:
    """``cand`` (sorted) cut into up to ``pieces`` slices of about equal length, never inside a
    pair's run; slices shorter than ``least`` are not worth a thread."""
    pieces = max(1, min(pieces, len(cand) // least))
    if pieces == 1:
        return [cand]
    p = part[cand]
    at = np.searchsorted(p, p[np.arange(1, pieces) * len(cand) // pieces])  # back to a run's start
    return [c for c in np.split(cand, np.unique(at)) if len(c)]


def _ordered_cuts(cand, groups, n_left, running, total, balanced, judged, partition_terms, constraints,
                  criterion, layout, out) -> None:
    """The best allowable cut of the pairs of the candidate groups ``cand`` (whole runs), into ``out``."""
    part, code = groups.part, groups.code
    lazy = balanced[part[cand]]
    if lazy.any():
        m = _most_balanced(cand[lazy], part, n_left, total, running, judged, constraints, layout)
        q, nl = part[m], n_left[m]
        balance = np.abs(2 * nl - total.n[q])
        out["median_cut"][q], out["median_left"][q], out["median_balance"][q] = code[m], nl, balance
        if partition_terms is None:  # Median: the criterion's choice is the median choice
            key = gain = np.zeros((len(m), 1))
        else:  # scored with the children's impurity, which is exactly 0 (see settled())
            key, gain = _score(criterion, np.zeros((len(m), partition_terms.shape[1])), partition_terms[q], total.n[q])
        _record(out, q, code[m], nl, balance, key, gain)
        cand = cand[~lazy]
        if len(cand) == 0:
            return
    # The other pairs. Their most balanced allowable cut (the Median choice, taken below
    # min_gain) also tells which pairs have an allowable cut at all.
    m = _most_balanced(cand, part, n_left, total, running, judged, constraints, layout)
    if len(m) == 0:
        return
    q, nl = part[m], n_left[m]
    out["median_cut"][q], out["median_left"][q], out["median_balance"][q] = code[m], nl, np.abs(2 * nl - total.n[q])
    splittable = np.zeros(len(total), dtype=bool)
    splittable[q] = True
    cand = cand[splittable[part[cand]]]
    # The criterion ranks the cuts, then the constraints judge each pair's best: if it is
    # allowable it is the best allowable one. Only the pairs whose best is not have all their
    # cuts judged and ranked again (k-anonymity alone needs no judging: the size filter above
    # is exactly its verdict).
    best, key, gain = _criterion_best(cand, part, code, total, partition_terms, criterion, running, layout, n_left)
    if not all(c.size_only for c in constraints):
        g = cand[best]
        left = running.left(g, *judged)
        right = Running.right(total, part[g], left)
        rejected = ~(_passes(constraints, left, layout) & _passes(constraints, right, layout))
        if rejected.any():
            redo = np.zeros(len(total), dtype=bool)
            redo[part[g[rejected]]] = True
            again = cand[redo[part[cand]]]
            left = running.left(again, *judged)
            right = Running.right(total, part[again], left)
            again = again[_passes(constraints, left, layout) & _passes(constraints, right, layout)]
            best2, key2, gain2 = _criterion_best(again, part, code, total, partition_terms, criterion, running, layout, n_left)
            keep = ~rejected
            g = np.concatenate((g[keep], again[best2]))
            key, gain = np.concatenate((key[keep], key2)), np.concatenate((gain[keep], gain2))
            order = np.argsort(part[g], kind="stable")
            g, key, gain = g[order], key[order], gain[order]
        best_groups = g
    else:
        best_groups = cand[best]
    q, nl = part[best_groups], n_left[best_groups]
    _record(out, q, code[best_groups], nl, np.abs(2 * nl - total.n[q]), key, gain)


def _criterion_best(cand, part, code, total, partition_terms, criterion, running, layout, n_left):
    """Per pair (``cand`` sorted), the candidate the criterion ranks first — the smallest key,
    then balance, then code — as an index into ``cand``, with its key and gain. ``n_left``: the
    running row counts of all groups.

    InfoGain, Regression and Targets are scored by the fused loops of
    :mod:`sqlanon.model.score_kernels` (the same keys and gains, bit for bit, in a few passes
    instead of some forty); the other criteria, and counts too large for the ``c ln c`` table,
    through :func:`_score` and :func:`_best`.
    """
    fused = _fused_best(cand, part, total, partition_terms, criterion, running, layout, n_left)
    if fused is not None:
        return fused
    scored = _positions(layout, total, [criterion])
    left = running.left(cand, *scored)
    right = Running.right(total, part[cand], left)
    p, c = part[cand], code[cand]
    balance = np.abs(2 * left.n - total.n[p])
    # Scores are per split (row-wise), so scoring only some cuts gives the same keys.
    children = criterion.terms(left, layout) + criterion.terms(right, layout)
    key, gain = _score(criterion, children, partition_terms[p], total.n[p])
    best = _best(p, (*key.T, balance, c))
    return best, key[best], gain[best]


def _fused_best(cand, part, total, partition_terms, criterion, running, layout, n_left):
    """:func:`_criterion_best` of InfoGain, Regression and Targets in :mod:`sqlanon.model.score_kernels`:
    one pass per target adds each cut's children's impurity (in the order of ``terms`` and
    ``combine``: class labels, then numeric targets), one more keeps each pair's best. None
    when the criterion is another, or a count is beyond the ``c ln c`` table."""
    if not isinstance(criterion, (InfoGain, Regression, Targets)):
        return None
    p = part[cand]
    table = None
    if criterion.class_columns:  # every count of a cut is at most its pair's rows
        table = xlogx_table(int(total.n[p].max(initial=0)))
        if table is None or any(c.dtype.kind not in "iu" for c in total.counts):
            return None
    normalize = isinstance(criterion, Targets)
    impurity = np.zeros(len(cand))
    probe = ClassStats(total.n[:0], tuple(range(len(total.counts))), tuple(range(len(total.moments))))
    columns = [("c", layout.counts(probe, t)) for t in criterion.class_columns] + \
              [("m", layout.moments(probe, t)) for t in criterion.numeric_columns]
    for t, (kind, j) in enumerate(columns):
        sums, before = running.sums(kind, j)
        partition = np.ascontiguousarray(partition_terms[:, t])
        if kind == "c":
            score_kernels.add_entropy(impurity, cand, p, running.run, sums, before, total.counts[j], table,
                                      partition, normalize)
        else:
            score_kernels.add_squared_error(impurity, cand, p, running.run, sums, before, total.moments[j],
                                            partition, normalize)
    base = criterion.combine(partition_terms, partition_terms)[:, 0]
    best, key, gain = score_kernels.best_cuts(impurity, cand, p, n_left, total.n, base, TIE)
    return best, key[:, None], gain[:, None]


def _positions(layout: Layout, stats: ClassStats, declarers) -> tuple[set[int], set[int]]:
    """Positions in ``stats.counts`` and ``stats.moments`` of the columns that constraints or
    criteria declare (asked of the layout with a probe whose "columns" are their positions)."""
    probe = ClassStats(stats.n[:0], tuple(range(len(stats.counts))), tuple(range(len(stats.moments))))
    return ({layout.counts(probe, c) for d in declarers for c in d.class_columns},
            {layout.moments(probe, c) for d in declarers for c in d.numeric_columns})


def _most_balanced(idx, part, n_left, total, running, judged, constraints, layout) -> np.ndarray:
    """Per pair, its most balanced allowable cut (smallest ``|2 L - n|``, then lowest code), as a
    group index; pairs without one are left out. ``idx``: the candidate groups, sorted.

    Equal to judging every candidate and taking ``_best(pair, (balance, code))``, but the
    constraints judge candidates from the median outwards, in windows growing fourfold, and stop
    once the best allowable cut in the window is certain: balance falls towards the median and
    rises after it, so the nearest candidates left outside bound all the others (a left one wins
    a tie of balance, having the lower code). Near the median a cut is usually allowable, so a
    pair typically costs two judged cuts instead of all of them — what makes l-diversity and
    variance diversity cheap for Median and for settled partitions.
    """
    p = part[idx]
    nl = n_left[idx]
    n = total.n[p]
    starts = first_of_run(p)
    ends = np.append(starts[1:], len(idx))
    cross = starts + np.add.reduceat((2 * nl < n).astype(np.int64), starts)  # first cut past the median
    if all(c.size_only for c in constraints):
        # The size filter was the verdict: every candidate is allowable, and the most balanced is
        # the last one before the median or the first one past it (the earlier on a tie).
        before, after = np.maximum(cross - 1, starts), np.minimum(cross, ends - 1)
        later = np.abs(2 * nl[after] - n[after]) < np.abs(2 * nl[before] - n[before])
        return idx[np.where(later, after, before)]
    balance = np.abs(2 * nl - n)
    pair_of = np.repeat(np.arange(len(starts)), ends - starts)
    lo, hi = cross.copy(), cross.copy()  # the window [lo, hi) judged so far
    state = np.zeros(len(idx), dtype=np.int8)  # 0 not judged, 1 allowable, 2 not
    best = np.full(len(starts), -1, dtype=np.int64)
    open_ = np.ones(len(starts), dtype=bool)
    width = 1
    while open_.any():
        r = open_.nonzero()[0]
        new_lo, new_hi = np.maximum(starts[r], cross[r] - width), np.minimum(ends[r], cross[r] + width)
        fresh = np.concatenate((ranges(new_lo, lo[r]), ranges(hi[r], new_hi)))
        lo[r], hi[r] = new_lo, new_hi
        if len(fresh):
            g = idx[fresh]
            left = running.left(g, *judged)
            right = Running.right(total, part[g], left)
            state[fresh] = np.where(_passes(constraints, left, layout) & _passes(constraints, right, layout), 1, 2)
        a = ((state == 1) & open_[pair_of]).nonzero()[0]
        if len(a):
            b = a[_best(pair_of[a], (balance[a], a))]
            best[pair_of[b]] = b
        b = best[r]
        has = b >= 0
        safe_b = np.where(has, b, 0)
        left_done = (lo[r] == starts[r]) | (has & (balance[safe_b] < balance[np.maximum(lo[r] - 1, 0)]))
        right_done = (hi[r] == ends[r]) | (has & (balance[safe_b] <= balance[np.minimum(hi[r], len(idx) - 1)]))
        open_[r] = ~(left_done & right_done)
        width *= 4
    found = best[best >= 0]
    return idx[found]


def _record(out, q, cut, left, balance, key, gain) -> None:
    """The criterion's best split of pairs ``q``."""
    out["allowed"][q] = True
    out["cut"][q], out["left"][q], out["balance"][q] = cut, left, balance
    out["key"][q], out["gain"][q] = key, gain


def settled(criterion: Criterion, stats: ClassStats, layout: Layout) -> np.ndarray | None:
    """Which of the K partitions (``stats`` are their totals) every split scores alike under
    ``criterion``: there the criterion's choice is the Median choice — the first QI in rank
    order with an allowable cut, at its most balanced cut (ties go to rank, balance, cut).
    None when the criterion has no such shortcut.

    Criteria over class labels only (InfoGain; Targets without numeric targets) in a partition
    that is pure in every label (one value holds all its rows): every child is pure too, and the
    weighted entropy of a pure class, ``(n ln n - n ln n) / ln 2``, is exactly 0 — both terms
    are the same floating-point product — so every split's impurity is exactly 0 (for Targets
    the partition's own impurity is 0, which zeroes every target's contribution). That the
    criterion computes exactly 0 for pure classes is checked, not assumed, by
    :func:`_vanishing`. The labels of a partition typically become pure a few levels
    down (the point of InfoGain), and from then on such partitions cost what Median costs:
    statistics of one QI instead of all of them, and no impurity computed.
    """
    if not can_settle(criterion) or len(stats) == 0:
        return None
    pure = np.ones(len(stats), dtype=bool)
    for label in criterion.class_columns:
        counts = layout.counts(stats, label)
        hit = stats.n == 0
        for j in range(counts.shape[1]):  # one value holds every row (counts add up to n)
            hit |= counts[:, j] == stats.n
        pure &= hit
    if not pure.any():
        return None
    pure &= stats.n <= _vanishing(criterion, stats, layout, int(stats.n[pure].max()))
    return pure


def can_settle(criterion: Criterion) -> bool:
    """Whether :func:`settled` can find partitions for ``criterion`` (class labels only)."""
    return isinstance(criterion, (InfoGain, Targets)) and not criterion.numeric_columns and bool(criterion.class_columns)


#: Largest class size up to which ``criterion.terms`` was checked to vanish on pure classes
#: (-2: the check failed), per criterion and count-matrix widths.
_VANISH: dict[tuple, int] = {}
_VANISH_CHUNK = 2**20


def _vanishing(criterion: Criterion, stats: ClassStats, layout: Layout, largest: int) -> int:
    """A class size up to which (at least ``largest``) ``criterion.terms`` is checked to be
    exactly 0 on every pure class (all rows on one label value); -1 if it is not.

    Checked once per criterion and size range, in chunks of a million sizes, on a synthetic
    table of pure classes of 0, 1, 2, ... rows (the value holding them varying from row to
    row) through the criterion's own code; each chunk twice: as it is, and with one huge class
    added, which forces the path the ``c ln c`` table cannot serve (the table is chosen per
    call, by the largest count in it). About 20 ms per million sizes.
    """
    widths = tuple(c.shape[1] for c in stats.counts)
    key = (repr(criterion), widths)
    known = _VANISH.get(key, -1)
    if known == -2:
        return -1
    # Only the criterion's labels are read; the other class columns are zero-cost placeholders.
    labels = {i for t in criterion.class_columns for i, c in enumerate(stats.counts) if c is layout.counts(stats, t)}
    while known < largest:
        first, last = known + 1, known + _VANISH_CHUNK
        for extra in ((), (2**40,)):
            sizes = np.concatenate((np.arange(first, last + 1, dtype=np.int64), np.array(extra, dtype=np.int64)))
            rows = np.arange(len(sizes))
            counts = []
            for i, w in enumerate(widths):
                if i in labels:
                    c = np.zeros((len(sizes), w), dtype=np.int64, order="F")
                    c[rows, rows % w] = sizes
                else:
                    c = np.broadcast_to(np.zeros((1, w), dtype=np.int64), (len(sizes), w))
                counts.append(c)
            terms = criterion.terms(ClassStats(sizes, tuple(counts), ()), layout)
            if not (terms[: last + 1 - first] == 0).all():
                _VANISH[key] = -2
                return -1
        known = _VANISH[key] = last
    return known


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
    drop: np.ndarray | None = None,
    suppressing: np.ndarray | None = None,
    judge=None,
) -> Children:
    """The children of the chosen splits, one per chosen pair (``pairs`` index the groups' pairs).

    Ordered: ``[lo, cut]`` with ``left`` rows and ``[cut + 1, hi]`` with the rest. Hierarchical:
    every child of the node, the empty ones too — the rules must cover the domain.
    ``Children.parent`` is the index into ``pairs``.

    Suppressing splits (:func:`evaluate`'s ``suppress`` > 0): ``drop`` (per chosen pair) names the
    suppressed side of an ordered cut; ``suppressing`` marks the chosen pairs whose failing
    hierarchy children are suppressed, judged by ``judge(stats) -> passes``.
    """
    total = FrequencyGroups(groups.part, groups.code, ClassStats(groups.stats.n)).totals(len(attr)).n  # counts only
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
            suppressed=(np.column_stack((drop[i] == 1, drop[i] == 2)).ravel() if drop is not None
                        else np.zeros(2 * len(i), dtype=bool)),
        ))
    for j in np.unique(attr[pairs[~ordered]]):
        i = ((attr[pairs] == j) & ~ordered).nonzero()[0]
        h = domains[j].qi.hierarchy
        assert h is not None
        chosen = np.zeros(len(attr), dtype=bool)
        chosen[pairs[i]] = True
        out.append(_node_children(groups, chosen[groups.part], node, h, pairs, i,
                                  None if suppressing is None else suppressing[i], judge))
    return Children.concat(out)


def _node_children(groups, rows, node, h: Hierarchy, pairs, i, suppressing=None, judge=None) -> Children:
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
    at = by_key[np.searchsorted(emitted[by_key], run_part * stride + run_child)]
    counts[at] = stats.n
    dropped = np.zeros(len(kid_nodes), dtype=bool)
    if suppressing is not None and suppressing.any():  # the failing children of suppressing splits
        mine = np.zeros(len(node), dtype=bool)
        mine[pairs[i[suppressing]]] = True
        r = mine[run_part].nonzero()[0]
        dropped[at[r]] = ~judge(stats.take(r))
    return Children(parent_idx, h.leaf_lo[kid_nodes].astype(np.int64), h.leaf_hi[kid_nodes].astype(np.int64),
                    kid_nodes, counts, dropped)
