"""The in-memory finish of the workload criteria under k-anonymity and privacy models, depth-first
in compiled loops.

InfoGain and LSD Mondrian (LeFevre, DeWitt, Ramakrishnan, KDD 2006, Sections 3.1-3.2) and
:class:`~sqlanon.model.criteria.Targets` judge every candidate QI of every partition, at every
cut. :meth:`Partitioner.run_memory <sqlanon.mondrian.builder.Partitioner.run_memory>` does that
level by level in numpy; for the requests where each split depends on nothing but its
partition's rows — one of these criteria, :class:`~sqlanon.model.privacy.KAnonymity` and
privacy models that have a compiled face (:meth:`~sqlanon.model.privacy.base.Constraint.face`),
every QI ordered, numeric targets all integers or all floats, with or without a suppression budget
— :func:`finish` grows the batch's partitions depth-first instead, as
:mod:`sqlanon.mondrian.compiled.median_finish` does for Median, with SPRINT's attribute lists (Shafer,
Agrawal & Mehta, VLDB 1996): per QI, the partition's rows in code order, a contiguous run of one
array per QI. Scoring a QI is one pass down its list accumulating the label counts and target
moments of the left child, and a split partitions every list stably (left rows first), so the
lists stay sorted without a sort. The loops release the GIL: while partitions are large (a
tree of unbalanced splits keeps them large for many levels) each is scored QI by QI and its lists
partitioned on all ``threads`` threads; the smaller ones are shared out, whole subtrees each,
every thread taking the largest left. The QIs of few codes (:data:`_BIN_WIDTH`) get no list:
they are columns of one list of row records, and a node scores them on histograms carried down
the tree (:class:`_Bins`) — a list's move at every split costs twice its scan, and a split moves
every list but one (at 600K rows of Agrawal, 9 QIs of which 5 binned, growth took 55 % of
the all-lists time, with identical decisions).

Before the lists are built, the partitions wider than a slice of the batch and than a quarter of
its codes are split on per-node histograms with sibling subtraction
(:mod:`sqlanon.mondrian.compiled.histograms`): a
split costs the smaller child's rows times the QIs plus the batch's codes, where the lists cost
the partition's rows times the QIs — at 10M rows a random label's InfoGain cuts a few rows off
partitions of millions again and again. Their scans read the same running sums at the same
cuts, so the decisions are the lists' (``tests/mondrian/test_workload_finish.py`` forces the phase down
to every node).

How a node's QIs are scored — one pass per QI, most cuts ruled out by a cheap estimate —
is :mod:`sqlanon.mondrian.compiled.cut_scan`.

**Why it is exact** — the same decision as :meth:`Partitioner.decide` with
:func:`sqlanon.mondrian.split.evaluate` and :meth:`Partitioner._pick`, step by step:

* Candidates: none in a partition of fewer than ``2 min_size`` rows; else the QIs with
  ``cmin < cmax`` in rank order (widest normalized range first, ties by position: the float64
  operations of :func:`~sqlanon.model.criteria.rank`, as in median_finish).
* A QI's cuts are the codes present but its largest; those whose left child ``L`` rows satisfy
  ``least <= L <= n - least`` (``least = max(1, min_size)``) are allowable (k-anonymity alone:
  the size window is the whole verdict). Its Median cut is the allowable one with the smallest
  ``(|2L - n|, cut)``; its criterion cut the smallest ``(key, |2L - n|, cut)``.
* A cut's key and gain are those of :func:`sqlanon.model.score_kernels.best_cuts`, computed by
  the same functions (:func:`~sqlanon.model.score_kernels.children_entropy`,
  :func:`~sqlanon.model.score_kernels.children_squared_error`,
  :func:`~sqlanon.model.score_kernels.add_term`, :func:`~sqlanon.model.score_kernels.cut_key`,
  :func:`~sqlanon.model.score_kernels.cut_gain`) from the same integers: label counts and
  integer target moments are exact sums whatever order the rows come in, so the keys and gains
  are bit for bit numpy's. (Floating-point targets are summed in float64 in other orders than
  the level-by-level path's running sums over the whole level: row by row down a list, code
  by code in a histogram, a larger child's as its parent's less the smaller's. Their moments
  differ in the last bits, and a key — the impurity rounded to ``tie`` of the partition's —
  differs only where it lies within those roundings of a rounding boundary: the tolerance
  the SQL levels and the in-memory levels already have with each other,
  :mod:`sqlanon.mondrian.siblings`. Targets whose sums are exact in float64 give the same
  partition bit for bit, as the tests check. So that the order the engine sends a partition's
  rows in cannot reach the sums, its rows are first put in the order of their targets: rows
  tied there hold equal values, and any order of them sums alike.) The partition's own
  impurity is :func:`~sqlanon.model.criteria.weighted_entropy` /
  :func:`~sqlanon.model.summaries.squared_error` in the same operations
  (:func:`~sqlanon.model.score_kernels.class_entropy`, ``_squared_error``), summed left to
  right (``_sum_columns``) or, for Targets, as the count of targets with positive impurity
  (``combine`` of the partition with itself).
* The partition takes the smallest key over its QIs, ties by rank (lexsort of ``_pick``: key,
  rank, balance, cut — rank is unique per partition); if that split's gain is below ``min_gain``
  (``weak``), the Median choice: the first QI in rank order with an allowable cut, at its Median
  cut.
* A partition pure in every label (InfoGain, Targets without numeric targets) scores every cut
  0 exactly — each child's ``(n ln n - n ln n) / ln 2`` is 0, so key and gain are 0 — so its
  choice is the Median choice whatever ``min_gain`` (what :func:`~sqlanon.mondrian.split.settled`
  exploits); here it is found by binary search in the sorted lists, without scoring.

The node table, breadth-first numbering, boxes and leaf order are median_finish's
(:func:`~sqlanon.mondrian.compiled.median_finish.number`, :func:`~sqlanon.mondrian.compiled.median_finish.boxes`),
so the ids, rules, leaves and rows are identical to the level-by-level path's
(``tests/mondrian/test_workload_finish.py``; ``builder._WORKLOAD_FINISH = False`` forces that path).

Under privacy models beyond k the choice below is made over the size window as stated, and
then fixed to the cuts whose children pass every model (:mod:`sqlanon.mondrian.compiled.workload_models`:
the winner judged, the allowable cuts walked where it fails).

A suppression budget (``suppression=``): a node with budget and no ordinary split takes its
best suppressing split (:mod:`sqlanon.mondrian.compiled.workload_trim`, the rule of
:mod:`sqlanon.mondrian.suppression` as the levels apply it to these criteria), its failing side a
suppressed leaf; every split shares the node's budget between its children as
:func:`~sqlanon.mondrian.suppression.share_budget` does. The histogram phase and the wide nodes'
growth make ordinary splits only and hand a node that could only suppress to the lists' growth.
Without a budget the compiled loop is a specialization without that code (``budget`` None).

Left on the general path (``applies`` is False): models without a compiled face (the
hierarchical t-closeness, variance over a column summed in floats), hierarchical QIs,
Selection Mondrian, integer and float numeric targets together (summed in
one array, the integers would round), and label counts beyond the ``c ln c`` table (partitions of
:data:`~sqlanon.model.summaries.XLOGX_ROWS` rows or more).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
from numba import njit

from ...model.criteria import Criterion, InfoGain, Regression, Targets
from ...model.domain import Domain
from ...model.parallel import run_all
from ...model.privacy import Constraint
from ...model.privacy.base import Face
from ...model.summaries import XLOGX_ROWS, xlogx_table
from ..split import TIE
from .cut_scan import Scratch, SplitRequest, choose, choose_sequential, judge_node, rank, scan, scan_bins, settled_choice
from .gather import gathered, permuted, take_into
from .histograms import Histograms, bin_extents
from .median_finish import PARALLEL_ROWS, NodeTable, _shares, faces
from .workload_models import LISTS, Judge, _decide, decide
from .workload_trim import trim

#: Largest partition the ``c ln c`` table serves (:func:`~sqlanon.model.summaries.xlogx_table`).
_TABLE_ROWS = XLOGX_ROWS
#: Most integers kept for the nodes' label counts and target moments (256 MiB).
_TOTALS = 2**25


def applies(criterion: Criterion, constraints: Sequence[Constraint], domains: Sequence[Domain],
            budget: np.ndarray, exact: Sequence[bool], rows: int,
            model_exact: Callable[[str], bool] = lambda column: False) -> bool:
    """Whether :func:`finish` gives the partition of this request (see the module docstring).

    ``exact``: per numeric target of the criterion, whether it is summed as integers; ``rows``:
    the largest partition to finish; ``model_exact(column)``: whether a numeric column a privacy
    model reads is summed as integers."""
    return (takes(criterion, constraints, exact, model_exact)
            and len(domains) > 0 and all(d.num is not None for d in domains) and rows < _TABLE_ROWS)


def takes(criterion: Criterion, constraints: Sequence[Constraint], exact: Sequence[bool],
          model_exact: Callable[[str], bool]) -> bool:
    """The request's part of :func:`applies`: InfoGain, Regression or Targets with numeric
    targets all integers or all floats, under k-anonymity and privacy models that have a
    compiled face (:func:`sqlanon.mondrian.compiled.median_finish.faces`)."""
    return (type(criterion) in (InfoGain, Regression, Targets)
            and len(criterion.class_columns) + len(criterion.numeric_columns) > 0
            and len(exact) == len(criterion.numeric_columns) and len(set(exact)) <= 1
            and len(constraints) > 0 and faces(constraints, model_exact) is not None)


def finish(codes: np.ndarray, seg_n: np.ndarray, domains: Sequence[Domain], min_size: int,
           classes: Sequence[np.ndarray], sizes: Sequence[int], numbers: Sequence[np.ndarray],
           normalize: bool, min_gain: float, threads: int = 1, disposable: bool = False, models: Sequence[Face] = (),
           model_values: Mapping[str, np.ndarray] | None = None,
           model_sizes: Mapping[str, int] | None = None, budget: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Grow the partitions of a batch to their leaves.

    Args:
        codes: (d, M) the batch's QI codes, rows partition by partition (``seg_n`` rows each).
        seg_n: rows of each open partition (all > 0), in batch order.
        min_size: the fewest rows a class may have (k).
        classes: the criterion's class labels in its order (codes 0..size-1, NULL a code), with
            ``sizes`` their numbers of codes; ``numbers``: its numeric targets (centered; all int64 or all float64),
            after the labels in the criterion's terms.
        normalize: each target's impurity as a fraction of the partition's (Targets).
        min_gain: the criterion's ``min_gain`` (below it, the Median choice).
        disposable: ``codes`` may be overwritten (no one reads them after).
        models, model_values, model_sizes: the privacy models' compiled faces beyond k, the
            columns they read and those class columns' sizes (:func:`sqlanon.mondrian.compiled.median_finish.finish`'s);
            every child of a split passes them (:mod:`sqlanon.mondrian.compiled.workload_models`).
        budget: the rows each open partition may still suppress (``suppression=``:
            :mod:`sqlanon.mondrian.compiled.workload_trim`); None or all 0: none may, and the
            suppression code is neither run nor compiled.

    Returns the node table of :func:`sqlanon.mondrian.compiled.median_finish.finish`: ``parent``,
    ``child``, ``depth``, ``n``, ``attr``, ``cut``, ``cmin``/``cmax`` per node (roots first),
    ``row`` (each batch row once, in any order) and its ``leaf``; ``budget`` (the rows a node
    may suppress) and ``suppressed`` (a suppressed leaf) as median_finish's.
    """
    d, M = codes.shape
    R = len(seg_n)
    table = xlogx_table(int(seg_n.max(initial=0)))
    if table is None:
        raise ValueError("a partition beyond the c ln c table (see applies)")
    off = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    start = np.concatenate(([0], np.cumsum(seg_n)[:-1])).astype(np.int64)
    threads = max(1, int(threads))
    spend = budget is not None and bool((budget > 0).any())
    # Every node made holds >= least rows but the suppressed leaves (at least a row each, at most
    # the budget's rows in all), so an area that finishes r rows makes <= 2 (r / least + B) nodes.
    cap1 = 2 * (M // max(1, int(min_size)) + (min(int(budget.sum()), M) if spend else 0)) + 2
    cap = R + cap1 + threads * cap1
    t = NodeTable(cap, d)
    t.start[:R], t.n[:R], t.depth[:R], t.parent[:R] = start, seg_n, 0, -1
    if spend:
        t.budget[:R] = budget
    roots = np.arange(R, dtype=np.int64)
    request = SplitRequest.of(domains, min_size, off, table, normalize, float(min_gain), len(numbers), TIE)
    # the batch QI by QI (a code column contiguous) and its labels and targets, once for both phases
    given = codes
    codes = _columns(codes, threads)
    own = disposable or codes is not given  # the finish may write over ``codes``
    slot = np.empty((len(classes), M), dtype=np.int32)  # each label's codes shifted to its count slots
    for u, c in enumerate(classes):
        np.add(c, off[u], out=slot[u], casting="unsafe")
    value = stacked(numbers, _moment_kind(numbers), M)
    judge = Judge.of(models, model_values or {}, model_sizes or {}, M, int(seg_n.max(initial=0)))
    canon, spares = None, None
    if value.dtype.kind == "f" and M:
        # A float sum depends on the order of its terms, and the engine may send a partition's
        # rows in any order: each partition's rows are put in the order of their targets (rows
        # tied there hold equal values, so any order of them sums alike), so the sums -- and the
        # release -- are the same whatever the order the rows came in.
        spares = []  # the sort's work arrays, the spares of the gathers below and the histograms'
        canon = _canonical_order(value, seg_n, spares)
        # gathered over themselves where the finish may write over them: no new pages to fault in
        # (the label slots and targets are the finish's own)
        mine = [*slot, *value]
        if own:
            mine += list(codes)
        else:
            codes = gathered((codes,), canon, threads)[0]
            own = True
        spares = permuted(mine, canon, threads)
        judge = judge and judge.reindexed(canon)
    lo = codes.min(axis=1).astype(np.int64) if M else np.zeros(d, np.int64)
    hi = codes.max(axis=1).astype(np.int64) if M else np.zeros(d, np.int64)
    # First phase: the partitions larger than a slice of the batch are split on histograms,
    # one at a time (a tree of unbalanced splits keeps large partitions for many levels) ...
    defer = max(M // (8 * threads), PARALLEL_ROWS // 4)
    hist = Histograms.of(codes, slot, value, off, defer, lo, hi)
    order, lists_roots, leaves, free = None, roots, np.empty(0, np.int64), R
    if hist is not None and int(seg_n.max(initial=0)) > hist.wide:
        order, lists_roots, leaves, free = hist.grow(t, roots, request, threads, judge, int(min_size),
                                                     spares[0].view(np.int64) if spares else None)
    # ... the others get SPRINT's attribute lists, each region of rows (``order``) a segment
    # filled when its partition is grown
    bins = _Bins.of(lo, hi, int(off[-1]), M, slot.shape[0], value.dtype, value.shape[0])
    lists = _Lists.of(codes, slot, value, threads, bins, order, own, spares)
    del codes  # the lists' codes when disposable
    g = _Grower(lists, t, request, M, judge and judge.reindexed(order), int(min_size), spend)
    for i in leaves.tolist():  # a leaf's rows are its region (its extents are its histogram's)
        g.leaf_of[t.start[i]:t.start[i] + t.n[i]] = i
        t.attr[i] = -1

    def ready(i: int, threads: int) -> None:
        """Region ``i``'s lists filled, its extents (a sorted list's ends) and totals taken."""
        s, m = int(t.start[i]), int(t.n[i])
        lists.fill(s, m, threads)
        t.cmin[i] = lists.code[:, s]
        t.cmax[i] = lists.code[:, s + m - 1]
        _record_extents(bins.rec, s, m, bins.qs, bins.shift, t.cmin[i], t.cmax[i])
        if len(g.node_counts):
            _totals(lists.label, lists.value, 0, s, m, g.node_counts[i], g.node_moments[i])

    areas = [(R, free - R)]  # (first node, nodes made) per call
    if threads > 1 and M >= 2 * PARALLEL_ROWS:
        # ... the lists of partitions still larger than the slice are filled and split one at a
        # time, their QIs scored and their lists partitioned on all threads; the others are
        # deferred ...
        wide = [i for i in lists_roots.tolist() if t.n[i] > defer]
        for i in wide:
            ready(i, threads)
        unfilled = set(lists_roots.tolist()) - set(wide)
        used, todo = g.grow_wide(lists_roots, free, defer, threads)
        areas[0] = (R, free - R + used)
        # ... and shared out over the threads, each filling a region's lists (they stay in the
        # caches for its growth) and growing whole subtrees: the largest left next (a subtree's
        # work is not its rows: a fixed share left one thread idle for 10 %)
        todo = todo[np.argsort(-t.n[todo], kind="stable")]
        queue = iter(todo.tolist())  # taken from by every thread (next() holds the GIL)
        firsts = [R + cap1 * (i + 1) for i in range(threads)]
        width = int(t.n[todo].max(initial=0))

        def work(i: int) -> int:
            used = 0
            mine = g.buffers(width)
            for node in queue:
                if node in unfilled:
                    ready(node, 1)
                used += g.grow(np.array([node], dtype=np.int64), firsts[i] + used, mine)
            return used

        done = run_all(work, range(threads), threads)
        areas += list(zip(firsts, done))
    else:
        for i in lists_roots.tolist():
            ready(i, threads)
        areas[0] = (R, free - R + g.grow(lists_roots, free))
    made = np.concatenate([roots] + [np.arange(f, f + u, dtype=np.int64) for f, u in areas])
    out = t.take(made)
    at = np.empty(cap, dtype=np.int64)
    at[made] = np.arange(len(made))
    out["parent"] = np.where(out["parent"] >= 0, at[np.maximum(out["parent"], 0)], -1)
    # each position's batch row and leaf: the lists number the rows by position in the regions'
    # order (``order``), the regions' order numbers them in the batch put in canonical order
    # (``canon``); the caller places the leaves by row (one scatter, not one here too)
    rows = order
    if canon is not None:
        rows = canon if rows is None else take_into(canon, rows, rows)  # over the regions' order, no longer read
    out["row"] = np.arange(M, dtype=np.int64) if rows is None else rows
    out["leaf"] = take_into(at, g.leaf_of, g.leaf_of)  # over the leaves by position, no longer read
    return out


class _Lists:
    """SPRINT's attribute lists (Shafer, Agrawal & Mehta, VLDB 1996): per QI ``j``, the batch's
    rows partition by partition, each partition's in code order — ``row[j]`` the row (its
    position in the regions' order, :meth:`of`), ``code[j]``
    its code, ``label[j, u]`` its count slot of label ``u`` and ``value[j, u]`` its numeric
    target ``u`` — so a scan down a list reads memory in order. A split partitions every list
    stably, left rows first (:func:`_partition`). The binned QIs (``bins``) get no list: their
    records are filled instead."""

    def __init__(self, row: np.ndarray, code: np.ndarray, label: np.ndarray, value: np.ndarray, bins: _Bins,
                 codes: np.ndarray, source: np.ndarray, slots: np.ndarray, targets: np.ndarray,
                 order: np.ndarray) -> None:
        self.row, self.code, self.label, self.value, self.bins = row, code, label, value, bins
        # what the regions are filled from: the batch's codes (the binned QIs' read through
        # ``order``), the listed QIs' codes, the label slots and targets in the regions' order
        self.codes, self.source, self.slots, self.targets, self.order = codes, source, slots, targets, order

    @classmethod
    def of(cls, codes: np.ndarray, label: np.ndarray, value: np.ndarray, threads: int, bins: _Bins,
           order: np.ndarray | None = None, disposable: bool = False,
           spares: list[np.ndarray] | None = None) -> _Lists:
        """The lists of a batch, to be filled region by region (:meth:`fill`): ``codes`` (d, M)
        per QI, ``label`` (labels, M) the label slots, ``value`` (targets, M) the targets, per
        batch row; the regions are runs of the batch's rows in ``order`` (None: the batch
        order). The listed QIs' codes, the labels and the targets are first put in the regions'
        order (each region's rows then lie together), and the lists number the rows by their
        positions in that order, not by batch row: a node's rows are then numbered within its
        region, so the bits of a split (:func:`_mark`) and the leaves (:func:`_leaf`) it writes
        lie in a region-sized window that stays in the CPU's cache (at 10M rows, a random
        label's growth took 0.8x the time of batch rows scattered over the whole bit array).
        ``disposable``: ``codes``, ``label`` and ``value`` may be overwritten (the lists' codes
        take the codes' place; the listed QIs' codes, the labels and targets are put in the
        regions' order over themselves, through ``spares``: :func:`~sqlanon.mondrian.compiled.gather.permuted`'s)."""
        d, M = codes.shape
        # label slots in 16 bits where they fit: a split moves every list, so bytes count
        kind = np.int16 if int(label.max(initial=0)) < 2**15 else np.int32
        reuse = disposable and codes.dtype == np.int32 and codes.flags.c_contiguous
        out = np.empty((d, M), dtype=np.int32) if not reuse else codes
        source = codes
        if order is not None and reuse:  # the listed QIs' codes, the labels and targets over themselves
            permuted([*(codes[j] for j in bins.listed), *label, *value], order, threads, spares)
        elif order is not None:
            label, value = gathered((label, value), order, threads)
            source = np.empty((d, M), dtype=np.int32)
            run_all(lambda j: take_into(codes[j], order, source[j]), bins.listed, threads)
        return cls(np.empty((d, M), dtype=np.int32), out, np.empty((d, label.shape[0], M), dtype=kind),
                   np.empty((d, value.shape[0], M), dtype=value.dtype), bins, codes, source, label, value,
                   np.empty(0, dtype=np.int64) if order is None else order)

    def fill(self, s: int, m: int, threads: int) -> None:
        """The lists of the region of rows ``s .. s+m-1`` (each listed QI's sorted by code, ties
        by position) and its records, the QIs on ``threads`` threads. A region's input is
        copied out first: the lists' codes may be the rows of the source they are sorted from."""
        e = s + m
        label, value = np.ascontiguousarray(self.slots[:, s:e]), np.ascontiguousarray(self.targets[:, s:e])
        b = self.bins
        n = np.array([m], dtype=np.int64)

        def one(j: int) -> None:
            if j < 0:  # the binned QIs' records (their rows of ``codes`` are no list's: in batch order)
                _records(self.order, self.codes, b.qs, b.shift, label, value, s, m, b.rec, b.words, b.value)
            else:
                _segment_lists(self.source[j, s:e].copy(), n, label, value, s, self.row[j], self.code[j],
                               self.label[j], self.value[j])

        run_all(one, self.bins.listed + ([-1] if len(b.qs) else []), threads)

    def arrays(self) -> tuple[np.ndarray, ...]:
        return self.row, self.code, self.label, self.value


class _Grower:
    """The depth-first growth of one batch: the lists, the node table and the request."""

    def __init__(self, lists: _Lists, t: NodeTable, request: SplitRequest, M: int, judge: Judge | None = None,
                 min_size: int = 1, spend: bool = False) -> None:
        self.lists, self.t, self.request, self.bins = lists, t, request, lists.bins
        self.judge = judge  # the privacy models beyond k (None: k alone), rows named as the lists name them
        # the nodes' suppression budgets (``t.budget``) when some may suppress, else None (not compiled)
        self.min_size, self.budget = min_size, t.budget if spend else None
        self.words = (M + 63) // 64  # a bit per row: goes to the left child of the split at hand (_mark)
        self.leaf_of = np.empty(M, dtype=np.int64)
        # every node's label counts and target moments: the roots' counted, a child's from its
        # parent's (_child_totals)
        # (when the table stays small: else each node counts its own, :func:`_prepare`)
        off = request.off
        cap = len(t.n) if len(t.n) * (off[-1] + 3 * lists.value.shape[1]) <= _TOTALS else 0
        self.node_counts = np.zeros((cap, off[-1]), dtype=np.int64)
        self.node_moments = np.zeros((cap, lists.value.shape[1], 3), dtype=lists.value.dtype)

    def _scratch(self) -> Scratch:
        L = self.lists
        return Scratch.make(int(self.request.off[-1]), L.label.shape[1], L.value.shape[1], L.value.dtype)

    def _spare(self, width: int) -> tuple[np.ndarray, ...]:
        L = self.lists
        return (np.empty(width, np.int32), np.empty(width, np.int32), np.empty((L.label.shape[1], width), L.label.dtype),
                np.empty((L.value.shape[1], width), L.value.dtype))

    def _spare_records(self, width: int) -> tuple[np.ndarray, np.ndarray]:
        b = self.bins
        half = width // 2 + 1  # a split sets aside the smaller side
        return np.empty((half, b.words.shape[1]), np.int64), np.empty((half, b.value.shape[1]), b.value.dtype)

    def buffers(self, width: int) -> tuple[np.ndarray, ...]:
        """A thread's buffers for :meth:`grow` of nodes of at most ``width`` rows: its bits of
        the rows going left (rows of different subtrees share words), its scan scratch and the
        spares of the lists' and records' moves. Kept by a thread over its calls: the spares of
        fresh ones cost a page fault per 4 KiB touched (at 10M rows, 150K faults a run)."""
        return (np.zeros(self.words, np.uint64), *self._scratch().arrays(), *self._spare(width),
                *self._spare_records(width), *self._judging())

    def _judging(self) -> tuple:
        """The models' arrays and a thread's scratch for :func:`_grow` (empty ones: k alone)."""
        if self.judge is None:
            arrays, scratch = Judge.none()
            return (*arrays, *scratch)
        return (*self.judge.arrays(), *self.judge.scratch())

    def grow(self, todo: np.ndarray, first: int, buffers: tuple[np.ndarray, ...] | None = None) -> int:
        """Finish the nodes ``todo`` depth-first in one compiled loop; new nodes from table row
        ``first`` on, with the thread's ``buffers`` (:meth:`buffers`, None: new ones). Returns
        the nodes made."""
        if buffers is None:
            buffers = self.buffers(int(self.t.n[todo].max(initial=0)))
        left_of, *rest = buffers
        L = self.lists
        return _grow(*L.arrays(), *self.bins.arrays(), left_of, self.leaf_of, todo, first, *self.t.arrays(),
                     *self.request.arrays(), *rest, self.node_counts, self.node_moments, L.slots, L.targets,
                     self.min_size, self.budget, self.t.suppressed)

    def grow_wide(self, todo: np.ndarray, first: int, defer: int, threads: int) -> tuple[int, np.ndarray]:
        """Finish the nodes ``todo`` depth-first down to children of at most ``defer`` rows, one
        node at a time, each on all threads: its QIs scored and its lists partitioned in
        parallel. Returns the nodes made and the deferred ones."""
        t, L, b = self.t, self.lists, self.bins
        d = L.code.shape[0]
        r = self.request
        spare_records = self._spare_records(int(t.n[todo].max(initial=0)))
        none = b.count(0, 0)  # no histograms (a node without candidates, or no binned QI)
        scratch = [self._scratch() for _ in range(d)]
        spare = [self._spare(int(t.n[todo].max(initial=0))) for _ in range(threads)]
        stack = [int(x) for x in todo[::-1] if t.n[x] > defer]
        deferred = [int(x) for x in todo if t.n[x] <= defer]
        free = first
        pieces = [list(range(i, d, threads)) for i in range(threads)]
        left_of = np.zeros(self.words, np.uint64)
        judging = self.judge.scratch() if self.judge is not None else ()
        while stack:
            node = stack.pop()
            s, m = int(t.start[node]), int(t.n[node])
            ranked, base, pure = _prepare(L.label, L.value, node, t.start, t.n, t.cmin, t.cmax, *self.request.arrays(),
                                          scratch[0].whole, scratch[0].moments, scratch[0].partition,
                                          self.node_counts, self.node_moments)
            cnt, mom = b.count(s, m) if len(b.qs) and len(ranked) else none
            choice = None
            if self.judge is not None and (pure or len(ranked) == 0):
                choice = (-1, 0, 0, -1, 0, 0, False)
            elif pure or len(ranked) == 0:
                found, c, at = settled_choice(L.code, ranked, s, m, r.least, b.col, b.shift, cnt, cnt[:0], b.W,
                                               t.cmin[node], t.cmax[node])
            else:
                for x in scratch[1:]:
                    x.share(scratch[0])

                def score(i: int) -> tuple:
                    q = int(ranked[i])
                    if b.col[q] >= 0:
                        # cnt[:0]: the lists' binned QIs keep no block sums
                        return scan_bins(cnt, cnt[:0], mom, b.W - 1, b.shift[q], t.cmin[node, q], t.cmax[node, q],
                                          m, r.least, *scratch[i].arrays(), base, r.off, r.table, r.normalize, r.tie)
                    return scan(L.code, L.label, L.value, q, s, m, r.least, *scratch[i].arrays(),
                                 base, r.off, r.table, r.normalize, r.tie)

                # the lists first (a list's scan costs the node's rows, a histogram's its codes)
                def cost(i: int) -> int:
                    q = ranked[i]
                    return m if b.col[q] < 0 else t.cmax[node, q] - t.cmin[node, q]

                scans = run_all(score, range(len(ranked)), threads, cost)
                choice = choose(ranked, scans, r.min_gain)
                found, c, at = choice[:3]
            if self.judge is not None and choice is not None:  # the split the privacy models allow
                sc = scratch[0]
                found, c, at = decide(choice, pure, ranked, s, m, r.least, LISTS, (*L.arrays()[:2], b.rec, b.words,
                                      b.col, b.shift, _NO_ORDER, L.code[:0]), self.judge, judging, L.slots,
                                      L.targets, sc.whole, sc.moments, sc.partition, r.off, r.table, r.normalize,
                                      base, r.tie, r.min_gain)
            if found < 0 and self.budget is not None and t.budget[node] > 0:
                deferred.append(node)  # it may suppress: the compiled growth takes its suppressing split
                continue
            if found < 0:
                _leaf(L.row, node, s, m, self.leaf_of, t.attr)
                continue
            if b.col[found] >= 0:
                _mark_records(b.rec, b.words, b.col[found], s, m, b.shift[found] + c, left_of)
            else:
                _mark(L.row, found, s, m, at, left_of)

            def move(i: int) -> None:
                if i == threads:
                    _partition_records(b.words, b.value, s, m, at, left_of, *spare_records)
                    return
                for j in pieces[i]:
                    if j != found and b.col[j] < 0:
                        _partition(*L.arrays(), j, s, m, at, left_of, *spare[i])

            run_all(move, range(threads + (len(b.qs) > 0)), threads)
            a = free
            free += 2
            _children(L.code, node, found, c, at, a, *t.arrays())
            _record_extents(b.rec, s, at, b.qs, b.shift, t.cmin[a], t.cmax[a])
            _record_extents(b.rec, s + at, m - at, b.qs, b.shift, t.cmin[a + 1], t.cmax[a + 1])
            _child_totals(L.label, L.value, found if b.col[found] < 0 else 0, node, a, t.start, t.n, self.node_counts,
                          self.node_moments)
            if t.budget[node] > 0:  # an ordinary split: the budget shared between the children
                t.budget[a], t.budget[a + 1] = _shares(t.budget[node], t.n[a], t.n[a + 1], 0, self.min_size)
            for kid in (a + 1, a):  # the right child is pushed first, so the left one is grown first
                (deferred if t.n[kid] <= defer else stack).append(kid)
        return free - first, np.array(deferred, dtype=np.int64)


@njit(nogil=True, cache=True)
def _segment_lists(codes, seg_n, label, value, first, row, code, list_label, list_value):
    """One QI's list of a batch of several partitions (rows arrive partition by partition): per
    partition its rows sorted by code, ties in row order, with their positions, codes, label
    slots and targets — a counting pass over the partition's code range where it spans at most
    2^:data:`_ONE_PASS_BITS` codes, else two stable passes of half its bits each (the low half
    first) through a spare of the partition's size. Each pass reads its rows in order and writes
    them where they go: a sort of positions and then a gather of every field by position read
    them at random (at 10M rows in 16 partitions of 500K codes, 0.38-0.40 s against 0.68-0.79
    s). One partition's scatter stays within its rows, where two passes over the whole batch
    scatter across all of it (four times slower at 10M rows in 86 partitions); and half the
    bits a pass keep its counts and the places it writes to few (2^11 for 2^21 codes, not
    2^16: a 10M-row list in 16 partitions of 2^17 to 2^21 codes took 0.33-0.40 s against
    0.50-0.62 s with 16-bit digits). The inputs are the partitions' own (``codes``, ``label``,
    ``value`` from 0); the list is written from position ``first`` on, numbering the rows so.

    A row's first label slot and first target move with it, without a loop (as in
    :func:`_partition`: a loop over the labels and targets per row, even one never taken, made
    a 600K-row region's pass 2-2.5x slower); the others, when a request has more, are gathered
    by row afterwards (:func:`_lists_rest`)."""
    widest = 0
    for p in range(len(seg_n)):
        widest = max(widest, seg_n[p])
    has_c = label.shape[0] > 0
    has_n = value.shape[0] > 0
    spare_row = np.empty(widest, dtype=np.int32)
    spare_code = np.empty(widest, dtype=np.int32)
    spare_label = np.empty(widest if has_c else 0, dtype=list_label.dtype)
    spare_value = np.empty(widest if has_n else 0, dtype=list_value.dtype)
    count = np.zeros(2**max(_ONE_PASS_BITS, 16) + 1, dtype=np.int64)
    s = 0
    for p in range(len(seg_n)):
        e = s + seg_n[p]
        lo = codes[s]
        hi = codes[s]
        for i in range(s, e):
            lo = min(lo, codes[i])
            hi = max(hi, codes[i])
        width = np.int64(hi) - np.int64(lo) + 1
        bits = 0
        while (np.int64(1) << bits) < width:
            bits += 1
        if bits <= _ONE_PASS_BITS:  # one pass: the rows straight into the list
            count[:width + 1] = 0
            for i in range(s, e):
                count[np.int64(codes[i]) - lo + 1] += 1
            for c in range(width):
                count[c + 1] += count[c]
            for i in range(s, e):
                g = np.int64(codes[i]) - lo
                at = first + s + count[g]
                count[g] += 1
                row[at] = first + i
                code[at] = codes[i]
                if has_c:
                    list_label[0, at] = label[0, i]
                if has_n:
                    list_value[0, at] = value[0, i]
        else:  # the low digit into the spare, then the high digit into the list
            low = (bits + 1) // 2
            mask = (np.int64(1) << low) - 1
            buckets = np.int64(1) << low
            count[:buckets + 1] = 0
            for i in range(s, e):
                count[((np.int64(codes[i]) - lo) & mask) + 1] += 1
            for c in range(buckets):
                count[c + 1] += count[c]
            for i in range(s, e):
                g = (np.int64(codes[i]) - lo) & mask
                at = count[g]
                count[g] += 1
                spare_row[at] = i
                spare_code[at] = codes[i]
                if has_c:
                    spare_label[at] = label[0, i]
                if has_n:
                    spare_value[at] = value[0, i]
            high = ((width - 1) >> low) + 1
            count[:high + 1] = 0
            for i in range(e - s):
                count[((np.int64(spare_code[i]) - lo) >> low) + 1] += 1
            for c in range(high):
                count[c + 1] += count[c]
            for i in range(e - s):
                g = (np.int64(spare_code[i]) - lo) >> low
                at = first + s + count[g]
                count[g] += 1
                row[at] = first + spare_row[i]
                code[at] = spare_code[i]
                if has_c:
                    list_label[0, at] = spare_label[i]
                if has_n:
                    list_value[0, at] = spare_value[i]
        s = e
    if label.shape[0] > 1 or value.shape[0] > 1:
        _lists_rest(label, value, first, len(codes), row, list_label, list_value)


@njit(nogil=True, cache=True)
def _lists_rest(label, value, first, m, row, list_label, list_value):
    """The label slots and targets after the first of each, of the list positions ``first ..
    first+m-1`` (:func:`_segment_lists`): each gathered by the position's row."""
    for at in range(first, first + m):
        i = row[at] - first
        for u in range(1, label.shape[0]):
            list_label[u, at] = label[u, i]
        for u in range(1, value.shape[0]):
            list_value[u, at] = value[u, i]


#: A partition's list is sorted in one counting pass where its codes span at most 2^this, else
#: in two passes of half the bits each (:func:`_segment_lists`).
_ONE_PASS_BITS = 16


#: QIs whose codes span at most this many values in a batch are binned (:class:`_Bins`): no
#: attribute list each, but one column of the rows' records, scored on histograms. None: none
#: binned (tests compare).
_BIN_WIDTH: int | None = 256
#: Records whose bins and label slots are all below this take 16-bit cells (tests set 0: 32-bit).
_NARROW_CELLS = 2**15


class _Bins:
    """The binned QIs of a batch: those of at most :data:`_BIN_WIDTH` codes (but the first QI,
    whose list every node reads for its rows). An attribute list costs a move per row at every
    split; a binned QI costs nothing there but its column in one list of row records — per row
    the batch row, each binned QI's bin (``shift[q] + code``), the label slots (``rec``) and the
    targets (``value``), partitioned stably at each split like a list — and a node scores it on
    its histogram (:func:`scan_bins`, the same decisions as :func:`scan`, see
    :class:`~sqlanon.mondrian.compiled.histograms.Histograms`). A node's histograms are its smaller
    sibling's counted from its records and subtracted from the parent's: about ``smaller child
    x binned QIs + bins`` per split where the lists cost ``m x binned QIs`` moves and scans."""

    def __init__(self, qs, col, shift, B, W, rec, value, T_c) -> None:
        self.qs, self.col, self.shift, self.B, self.W, self.rec, self.value = qs, col, shift, B, W, rec, value
        self.T_c = T_c
        # a record moves as 64-bit words (its cells padded to whole words): fewer loads and stores
        # than its fields one by one (a split's move of 300K records, 6.7 ns per record against
        # 13.7); its row is the low half of its first word, whatever the cells' width (_row)
        self.words = rec.view(np.int64)
        self.listed = [j for j in range(len(col)) if col[j] < 0]  # the QIs with attribute lists

    @classmethod
    def of(cls, lo: np.ndarray, hi: np.ndarray, L: int, M: int, T_c: int, value_kind: type, T_n: int) -> _Bins:
        """The bins of a batch whose QIs' codes span ``lo .. hi``, with ``L`` label slots."""
        d = len(lo)
        width = hi - lo + 1
        qs = np.array([q for q in range(1, d) if _BIN_WIDTH is not None and width[q] <= _BIN_WIDTH], np.int64)
        col = np.full(d, -1, np.int64)  # a binned QI's cell in a record (below)
        shift = np.zeros(d, np.int64)
        base = np.concatenate(([0], np.cumsum(width[qs]))).astype(np.int64)
        shift[qs] = base[:-1] - lo[qs]
        rows = M if len(qs) else 0
        # A record's cells: its row (32 bits), then per binned QI its bin and per label its slot.
        # Bins and slots in 16 bits where they fit: a split moves every record, and Agrawal's
        # records (5 binned QIs, a label) take 16 bytes so, 32 in int32 cells.
        kind = np.int16 if max(int(base[-1]), L) < _NARROW_CELLS else np.int32
        first = 4 // np.dtype(kind).itemsize  # the row's cells
        col[qs] = first + np.arange(len(qs))
        cells = first + len(qs) + T_c
        per_word = 8 // np.dtype(kind).itemsize
        return cls(qs, col, shift, int(base[-1]), L + 1, np.zeros((rows, -(-cells // per_word) * per_word), kind),
                   np.empty((rows, T_n), value_kind), T_c)

    def count(self, s: int, m: int) -> tuple[np.ndarray, np.ndarray]:
        """A node's histograms (rows ``s .. s+m-1`` of the records)."""
        cnt = np.empty(self.B * self.W, np.int32)
        mom = np.empty(self.B * self.value.shape[1] * 2, self.value.dtype)
        _count_records(self.rec, self.value, s, m, len(self.qs), self.T_c, self.W, cnt, mom)
        return cnt, mom

    def arrays(self) -> tuple:
        return self.rec, self.words, self.value, self.qs, self.col, self.shift, self.B, self.W


@njit(nogil=True, cache=True, inline="always")
def _row(words, p):
    """Record ``p``'s row: the low half of its first word (the row's 32 bits lead the record,
    in int16 or int32 cells alike)."""
    return words[p, 0] & 0xFFFFFFFF


@njit(nogil=True, cache=True)
def _records(order, codes, qs, shift, label, value, first, m, rec, words, rec_value):
    """The records of the region of positions ``first .. first+m-1`` in the regions' order:
    position ``p`` holds ``p``, the bins of batch row ``order[p]`` (``p`` itself when ``order``
    is empty; ``codes`` in batch order) and its label slots and targets (``label``, ``value``
    the region's, from 0)."""
    through = len(order) > 0
    nb = len(qs)
    f0 = 4 // rec.itemsize  # the row's cells
    for i in range(m):
        p = first + i
        r = order[p] if through else p
        words[p, 0] = p  # the row, the cells after it in the word zeroed: written next
        for k in range(nb):
            q = qs[k]
            rec[p, f0 + k] = shift[q] + codes[q, r]
        for u in range(label.shape[0]):
            rec[p, f0 + nb + u] = label[u, i]
        for u in range(value.shape[0]):
            rec_value[p, u] = value[u, i]


@njit(nogil=True, cache=True)
def _count_records(rec, rec_value, s, m, nb, T_c, W, cnt, mom):
    """The histograms of records ``s .. s+m-1`` (``nb`` bins and ``T_c`` label slots each):
    per bin its rows and label counts (``cnt``, the layout of
    :class:`~sqlanon.mondrian.compiled.histograms.Histograms`) and its targets' sums and sums of
    squares (``mom``)."""
    cnt[:] = 0
    mom[:] = 0
    T_n = rec_value.shape[1]
    f0 = 4 // rec.itemsize  # the row's cells
    if T_c > 1 or T_n > 1:
        _count_records_any(rec, rec_value, s, m, nb, T_c, W, cnt, mom)
        return
    # at most one label and one target: no loop over them per row (a loop, even one never
    # taken, slows a row's pass, as in _partition: a record of one label 16 -> 13 ns, of one
    # target 20 -> 11)
    has_c = T_c > 0
    has_n = T_n > 0
    for p in range(s, s + m):
        for i in range(nb):
            b = np.int64(rec[p, f0 + i])
            cnt[b * W] += 1
            if has_c:
                cnt[b * W + 1 + rec[p, f0 + nb]] += 1
            if has_n:
                x = rec_value[p, 0]
                mom[b * 2] += x
                mom[b * 2 + 1] += x * x


@njit(nogil=True, cache=True)
def _count_records_any(rec, rec_value, s, m, nb, T_c, W, cnt, mom):
    """:func:`_count_records` of any number of labels and targets (a loop over them per row)."""
    T_n = rec_value.shape[1]
    f0 = 4 // rec.itemsize
    for p in range(s, s + m):
        for i in range(nb):
            b = np.int64(rec[p, f0 + i])
            cnt[b * W] += 1
            for u in range(T_c):
                cnt[b * W + 1 + rec[p, f0 + nb + u]] += 1
            for u in range(T_n):
                x = rec_value[p, u]
                mom[(b * T_n + u) * 2] += x
                mom[(b * T_n + u) * 2 + 1] += x * x


@njit(nogil=True, cache=True)
def _record_extents(rec, s, m, qs, shift, cmin, cmax):
    """The smallest and largest code of each binned QI over records ``s .. s+m-1``."""
    f0 = 4 // rec.itemsize  # the row's cells
    for i in range(len(qs)):
        lo = np.int64(rec[s, f0 + i])
        hi = lo
        for p in range(s + 1, s + m):
            b = np.int64(rec[p, f0 + i])
            lo = min(lo, b)
            hi = max(hi, b)
        cmin[qs[i]] = lo - shift[qs[i]]
        cmax[qs[i]] = hi - shift[qs[i]]


@njit(nogil=True, cache=True)
def _mark_records(rec, words, col, s, m, bound, left_of):
    """:func:`_mark` on a binned QI: the records whose bin in cell ``col`` is at most
    ``bound`` go left. Returns how many."""
    k = 0
    for p in range(s, s + m):
        r = _row(words, p)
        w = r >> 6
        b = np.uint64(1) << np.uint64(r & 63)
        if rec[p, col] <= bound:
            left_of[w] |= b
            k += 1
        else:
            left_of[w] &= ~b
    return k


@njit(nogil=True, cache=True)
def _partition_records(words, rec_value, s, m, at, left_of, spare, spare_value):
    """:func:`_partition` of the records: stably, the ``at`` going left first. The smaller side
    is set aside (``spare``, ``spare_value``: half a node's records) and the larger packed in
    place — from the back when the left side is the smaller — then the smaller copied into its
    place; where neither side is small each record is written to both places and one kept (no
    branch). A record moves as its ``words`` (its cells seen as int64) and its first target; the
    others, when a request has more, first in a pass of their own (:func:`_values_rest`)."""
    T_n = rec_value.shape[1]
    if T_n > 1:
        _values_rest(words, rec_value, s, m, at, left_of, spare_value)
    has_n = T_n > 0
    nw = words.shape[1]
    few = min(at, m - at) <= m // 8  # the side each record goes to is predictable
    aside = 0
    # Two mirrored loops, not one that walks either way: one loop with the direction as a
    # variable took 17 ns per record against 12.5 (balanced) and 8.8 against 6.9 (unbalanced).
    if at <= m - at:  # backwards: the right records packed from the end, the left ones set aside
        k = s + m
        for i in range(s + m - 1, s - 1, -1):
            r = _row(words, i)
            go = np.int64((left_of[r >> 6] >> np.uint64(r & 63)) & np.uint64(1))
            if few and go:
                for x in range(nw):
                    spare[aside, x] = words[i, x]
                if has_n:
                    spare_value[aside, 0] = rec_value[i, 0]
            elif few:
                for x in range(nw):
                    words[k - 1, x] = words[i, x]
                if has_n:
                    rec_value[k - 1, 0] = rec_value[i, 0]
            else:  # ``k - 1 >= i``: the right side overwrites only records already read
                for x in range(nw):
                    w = words[i, x]
                    spare[aside, x] = w
                    words[k - 1, x] = w
                if has_n:
                    y = rec_value[i, 0]
                    spare_value[aside, 0] = y
                    rec_value[k - 1, 0] = y
            aside += go
            k -= 1 - go
        for i in range(aside):  # set aside last first
            for x in range(nw):
                words[s + aside - 1 - i, x] = spare[i, x]
            if has_n:
                rec_value[s + aside - 1 - i, 0] = spare_value[i, 0]
        return
    k = s
    for i in range(s, s + m):
        r = _row(words, i)
        go = np.int64((left_of[r >> 6] >> np.uint64(r & 63)) & np.uint64(1))
        if few and go:
            for x in range(nw):
                words[k, x] = words[i, x]
            if has_n:
                rec_value[k, 0] = rec_value[i, 0]
        elif few:
            for x in range(nw):
                spare[aside, x] = words[i, x]
            if has_n:
                spare_value[aside, 0] = rec_value[i, 0]
        else:  # ``k <= i``: the left side overwrites only records already read
            for x in range(nw):
                w = words[i, x]
                spare[aside, x] = w
                words[k, x] = w
            if has_n:
                y = rec_value[i, 0]
                spare_value[aside, 0] = y
                rec_value[k, 0] = y
        k += go
        aside += 1 - go
    for i in range(aside):
        for x in range(nw):
            words[k + i, x] = spare[i, x]
        if has_n:
            rec_value[k + i, 0] = spare_value[i, 0]


@njit(nogil=True, cache=True)
def _values_rest(words, rec_value, s, m, at, left_of, spare_value):
    """The records' targets after the first, partitioned as :func:`_partition_records`
    partitions the records (stably, left first; the smaller side set aside), before it moves
    them: the side of each record is read from its row (``words``), which this pass leaves as it is."""
    T_n = rec_value.shape[1]
    aside = 0
    if at <= m - at:
        k = s + m
        for i in range(s + m - 1, s - 1, -1):
            r = _row(words, i)
            if (left_of[r >> 6] >> np.uint64(r & 63)) & np.uint64(1):
                for u in range(1, T_n):
                    spare_value[aside, u] = rec_value[i, u]
                aside += 1
            else:
                k -= 1
                for u in range(1, T_n):
                    rec_value[k, u] = rec_value[i, u]
        for i in range(aside):
            for u in range(1, T_n):
                rec_value[s + aside - 1 - i, u] = spare_value[i, u]
        return
    k = s
    for i in range(s, s + m):
        r = _row(words, i)
        if (left_of[r >> 6] >> np.uint64(r & 63)) & np.uint64(1):
            for u in range(1, T_n):
                rec_value[k, u] = rec_value[i, u]
            k += 1
        else:
            for u in range(1, T_n):
                spare_value[aside, u] = rec_value[i, u]
            aside += 1
    for i in range(aside):
        for u in range(1, T_n):
            rec_value[k + i, u] = spare_value[i, u]


def _columns(codes: np.ndarray, threads: int) -> np.ndarray:
    """The (d, M) codes as a contiguous int32 array, one QI per row (as a fetched batch gives
    them, :func:`stacked`). The ``.T`` view of a row-major (M, d)
    array (:func:`~sqlanon.mondrian.builder.interleaved`) is transposed a block of rows at a
    time on the threads (numpy's copy of the view took 0.6 s at 10M rows x 9 QIs)."""
    if codes.dtype == np.int32 and codes.flags.c_contiguous:
        return codes
    if codes.dtype != np.int32 or not codes.T.flags.c_contiguous:
        return np.ascontiguousarray(codes, dtype=np.int32)
    d, M = codes.shape
    out = np.empty((d, M), dtype=np.int32)
    step = -(-M // max(1, threads))
    run_all(lambda s: _transpose(codes.T, out, s, min(M, s + step)), range(0, M, step), threads)
    return out


@njit(nogil=True, cache=True)
def _transpose(rows, out, s, e):
    """``out[:, s:e] = rows[s:e].T``, :data:`_TRANSPOSE_ROWS` rows at a time (each block's
    stripes stay in the caches)."""
    d = rows.shape[1]
    for b in range(s, e, _TRANSPOSE_ROWS):
        stop = min(e, b + _TRANSPOSE_ROWS)
        for j in range(d):
            for i in range(b, stop):
                out[j, i] = rows[i, j]


#: No row order (the attribute lists name their rows themselves: :func:`~sqlanon.mondrian.compiled.workload_models._qi_rows`).
_NO_ORDER = np.empty(0, dtype=np.int64)

#: Rows of one block of :func:`_transpose` (9 QIs: 144 KiB).
_TRANSPOSE_ROWS = 4096


def stacked(columns: Sequence[np.ndarray], dtype: type = np.int32, rows: int | None = None) -> np.ndarray:
    """The columns as the rows of one contiguous ``(len(columns), rows)`` array: a batch's codes
    QI by QI as this finish reads them (a column is one run of memory), or its label slots and
    targets. ``rows`` is needed only when there are no columns."""
    out = np.empty((len(columns), len(columns[0]) if columns else int(rows or 0)), dtype=dtype)
    for u, c in enumerate(columns):
        out[u] = c
    return out


def _canonical_order(value: np.ndarray, seg_n: np.ndarray, spares: list[np.ndarray] | None = None) -> np.ndarray:
    """The batch's rows partition by partition, each partition's in the order of its float
    targets (``value`` (targets, M), the first target first) by their bits — ``-0.0`` before
    ``0.0``, NaNs at the ends — ties in row order: rows tied hold the same values.

    A stable least-significant-digit radix sort, 16 bits a pass, of each float's bits made to
    sort as unsigned integers (the last target's first, the partition last): numpy's stable
    argsort of 10M floats took 2.8 s in the finish, these passes 0.6 s. ``spares``: where its two
    work arrays of ``M`` 8-byte items are put, as bytes, for later work (None: freed)."""
    M = value.shape[1]
    order = np.arange(M, dtype=np.int64)
    spare = np.empty(M, dtype=np.int64)
    keys = order  # none made: no spare
    for u in range(value.shape[0] - 1, -1, -1):
        keys = _float_keys(value[u])
        order, spare = _radix_by(keys, order, spare)
    if len(seg_n) > 1:
        keys = np.repeat(np.arange(len(seg_n), dtype=np.uint64), seg_n)
        order, spare = _radix_by(keys, order, spare)
    if spares is not None:
        spares += [x.view(np.uint8) for x in (spare, keys) if x is not order]
    return order


@njit(nogil=True, cache=True)
def _float_keys(x):
    """Per float its bits as an unsigned integer in the floats' order (negatives' bits flipped,
    positives' sign bit set)."""
    bits = x.view(np.uint64)
    out = np.empty(len(x), dtype=np.uint64)
    top = np.uint64(1) << np.uint64(63)
    for i in range(len(x)):
        b = bits[i]
        out[i] = ~b if b & top else b | top
    return out


@njit(nogil=True, cache=True)
def _radix_by(keys, order, spare):
    """``order`` stably sorted by ``keys[order]``: a counting pass per 16-bit digit, least
    significant first, skipping the digits every key shares; the keys travel with the rows
    (each pass reads them in order). Returns ``(sorted, spare)``."""
    M = len(order)
    count = np.zeros(2**16 + 1, dtype=np.int64)
    mask = np.uint64(2**16 - 1)
    key = np.empty(M, dtype=np.uint64)
    other = np.empty(M, dtype=np.uint64)
    lo = np.uint64(0xFFFFFFFFFFFFFFFF)
    hi = np.uint64(0)
    for i in range(M):
        key[i] = keys[order[i]]
        lo = min(lo, key[i])
        hi = max(hi, key[i])
    for shift in range(0, 64, 16):
        sh = np.uint64(shift)
        if (lo >> sh) == (hi >> sh):  # every key the same from this digit on
            break
        count[:] = 0
        for i in range(M):
            count[((key[i] >> sh) & mask) + 1] += 1
        for c in range(2**16):
            count[c + 1] += count[c]
        for i in range(M):
            g = (key[i] >> sh) & mask
            at = count[g]
            spare[at] = order[i]
            other[at] = key[i]
            count[g] = at + 1
        order, spare = spare, order
        key, other = other, key
    return order, spare


def _moment_kind(numbers: Sequence[np.ndarray]) -> type:
    """How the targets are summed: int64 (exactly) when they are integers, float64 when they are
    floats (:func:`applies` takes no mix of the two)."""
    return np.float64 if any(x.dtype.kind == "f" for x in numbers) else np.int64


@njit(nogil=True, cache=True)
def _grow(row, code, label, value, rec, words, rec_value, qs, col, shift, B, W, left_of, leaf_of, todo, first, parent,
          child, depth, start, n, attr, cut, cmin, cmax, num, num_off, span, least, small, off, table, normalize,
          settle, min_gain, tie, whole, left, moments, left_moments, partition, spare_row, spare_code, spare_label,
          spare_value, spare_rec, spare_rvalue, Y, ncls, kinds, cols, ps, fa, fb, offs, sizes, xlogx, logn, mcnt, mmom,
          mbuf, node_counts, node_moments, slots, targets, min_size, budget, suppressed):
    """Finish the nodes ``todo`` depth-first; new nodes from table row ``first`` on. Returns
    the nodes made. With binned QIs (:class:`_Bins`), each node on the stack that may split
    holds its histograms in a slot of a pool (a root counts its own when it is taken). With
    privacy models (``kinds`` not None) the split is the one they allow
    (:func:`sqlanon.mondrian.compiled.workload_models._decide`, the rows' sensitive values ``Y``, label
    slots ``slots`` and targets ``targets`` by row). With a suppression ``budget`` per node
    (None: no budget, and the suppression code is not compiled in this specialization: numba
    prunes a branch on an argument that is None), a node that has budget and no ordinary split
    takes its best suppressing one (:func:`sqlanon.mondrian.compiled.workload_trim.trim`): its
    failing side a ``suppressed`` leaf, the children's budgets
    :func:`~sqlanon.mondrian.compiled.median_finish._shares`'."""
    d = code.shape[0]
    nb = len(qs)
    T_n = value.shape[1]
    widest = 0
    for i in range(len(todo)):
        widest = max(widest, n[todo[i]])
    size = len(todo) + 2 * (widest // least) + 2  # the roots left and one subtree's pending nodes
    stack = np.empty(size, dtype=np.int64)
    held = np.full(size, -1, dtype=np.int64)  # each stacked node's histogram slot (-1: none yet)
    P = 4 if nb > 0 else 0  # doubled as the stack deepens (_pool_slot)
    pool_cnt = np.empty((P, B * W), dtype=np.int32)
    pool_mom = np.empty((P, B * T_n * 2), dtype=rec_value.dtype)
    free_slots = np.arange(P - 1, -1, -1)
    nfree = P
    top = 0
    for i in range(len(todo) - 1, -1, -1):
        stack[top] = todo[i]
        top += 1
    free = first
    while top > 0:
        top -= 1
        node = stack[top]
        h = held[top]
        held[top] = -1
        s = start[node]
        m = n[node]
        ranked, base, pure = _prepare(label, value, node, start, n, cmin, cmax, num, num_off, span, least, small,
                                      off, table, normalize, settle, min_gain, tie, whole, moments, partition,
                                      node_counts, node_moments)
        if nb > 0 and len(ranked) > 0 and h < 0:
            h, pool_cnt, pool_mom, free_slots, nfree = _pool_slot(pool_cnt, pool_mom, free_slots, nfree)
            _count_records(rec, rec_value, s, m, nb, label.shape[1], W, pool_cnt[h], pool_mom[h])
        cnt = pool_cnt[max(h, 0)] if nb > 0 else pool_cnt.ravel()
        mom = pool_mom[max(h, 0)] if nb > 0 else pool_mom.ravel()
        if kinds is not None:  # privacy models beyond k (None: k alone, the branch pruned)
            # np.int64, not literals: a literal argument of a compiled call is a specialization of its
            # own, compiled (while numba infers the types) and cached beside the int64 one
            wq, wc, wat, weak = np.int64(-1), np.int64(0), np.int64(0), False
            if not pure and len(ranked) > 0:
                _, _, _, wq, wc, wat, weak = choose_sequential(
                    code, label, value, ranked, s, m, least, whole, left, moments, left_moments, partition, base, off,
                    table, normalize, tie, min_gain, col, shift, cnt, mom, W, cmin[node], cmax[node])
            found, c, at = _decide(wq, wc, wat, weak, pure, ranked, s, m, least, np.int64(LISTS), row, code, rec,
                                   words, col, shift, todo[:0], code[:0], Y, ncls, kinds, cols, ps, fa, fb, offs, sizes, xlogx,
                                   logn, mcnt, mmom, mbuf, slots, targets, whole, moments, partition, off, table,
                                   normalize, base, tie, min_gain)
        elif pure or len(ranked) == 0:
            found, c, at = settled_choice(code, ranked, s, m, least, col, shift, cnt, cnt[:0], W, cmin[node],
                                           cmax[node])
        else:
            found, c, at, _, _, _, _ = choose_sequential(code, label, value, ranked, s, m, least, whole, left,
                                                          moments, left_moments, partition, base, off, table,
                                                          normalize, tie, min_gain, col, shift, cnt, mom, W,
                                                          cmin[node], cmax[node])
        drop = np.int64(0)  # a suppressing split's suppressed side: 1 left, 2 right
        if budget is not None:
            if found < 0 and budget[node] > 0:
                found, c, at, drop = trim(node, n, cmin, cmax, num, num_off, span, budget[node], min_size, s, m,
                                          np.int64(LISTS), row, code, rec, words, col, shift, todo[:0], code[:0], Y,
                                          ncls, kinds, cols, ps, fa, fb, offs, sizes, xlogx, logn, mcnt, mmom, mbuf)
        if found < 0:
            _leaf(row, node, s, m, leaf_of, attr)
            if h >= 0:
                free_slots[nfree] = h
                nfree += 1
            continue
        if col[found] >= 0:
            _mark_records(rec, words, col[found], s, m, shift[found] + c, left_of)
        else:
            _mark(row, found, s, m, at, left_of)
        for j in range(d):
            if j != found and col[j] < 0:
                _partition(row, code, label, value, j, s, m, at, left_of, spare_row, spare_code, spare_label,
                           spare_value)
        a = free
        free += 2
        _children(code, node, found, c, at, a, parent, child, depth, start, n, attr, cut, cmin, cmax)
        _child_totals(label, value, found if col[found] < 0 else np.int64(0), node, a, start, n, node_counts, node_moments)
        kept = np.full(2, -1, dtype=np.int64)  # the children's slots
        if nb > 0 and drop > 0:  # a suppressing split: the kept child counts its own histograms when taken
            _partition_records(words, rec_value, s, m, at, left_of, spare_rec, spare_rvalue)
            _record_extents(rec, s, at, qs, shift, cmin[a], cmax[a])
            _record_extents(rec, s + at, m - at, qs, shift, cmin[a + 1], cmax[a + 1])
            if h >= 0:
                free_slots[nfree] = h
                nfree += 1
        elif nb > 0:
            _partition_records(words, rec_value, s, m, at, left_of, spare_rec, spare_rvalue)
            few = a if n[a] <= n[a + 1] else a + 1
            many = 2 * a + 1 - few
            if n[many] >= small:  # the larger may split: its histograms the parent's less the smaller's
                g, pool_cnt, pool_mom, free_slots, nfree = _pool_slot(pool_cnt, pool_mom, free_slots, nfree)
                _count_records(rec, rec_value, start[few], n[few], nb, label.shape[1], W, pool_cnt[g], pool_mom[g])
                pc, gc = pool_cnt[h], pool_cnt[g]
                for x in range(B * W):
                    pc[x] -= gc[x]
                pm, gm = pool_mom[h], pool_mom[g]
                for x in range(B * T_n * 2):
                    pm[x] -= gm[x]
                bin_extents(pool_cnt[h], W, qs, shift, cmin[node], cmax[node], cmin[many], cmax[many])
                bin_extents(pool_cnt[g], W, qs, shift, cmin[node], cmax[node], cmin[few], cmax[few])
                kept[many - a] = h
                if n[few] >= small:
                    kept[few - a] = g
                else:
                    free_slots[nfree] = g
                    nfree += 1
            else:  # neither splits: their extents from their records
                _record_extents(rec, s, at, qs, shift, cmin[a], cmax[a])
                _record_extents(rec, s + at, m - at, qs, shift, cmin[a + 1], cmax[a + 1])
                free_slots[nfree] = h
                nfree += 1
        if budget is not None:
            budget[a], budget[a + 1] = _shares(budget[node], n[a], n[a + 1], drop, min_size)
            if drop > 0:  # the suppressed side: a leaf of its own
                gone = a if drop == 1 else a + 1
                suppressed[gone] = True
                _leaf(row, gone, start[gone], n[gone], leaf_of, attr)
        # the right child is pushed first, so the left one is grown first (a suppressed one is not)
        if drop != 2:
            stack[top], held[top] = a + 1, kept[1]
            top += 1
        if drop != 1:
            stack[top], held[top] = a, kept[0]
            top += 1
    return free - first


@njit(nogil=True, cache=True)
def _pool_slot(pool_cnt, pool_mom, free_slots, nfree):
    """A free slot of :func:`_grow`'s pool of histograms, the pool doubled when none is free
    (``free_slots[:nfree]`` the free ones). Returns ``(slot, pool_cnt, pool_mom, free_slots,
    nfree)``."""
    if nfree == 0:
        P = pool_cnt.shape[0]
        grown_cnt = np.empty((2 * P, pool_cnt.shape[1]), dtype=pool_cnt.dtype)
        grown_mom = np.empty((2 * P, pool_mom.shape[1]), dtype=pool_mom.dtype)
        for i in range(P):  # element by element, as in _prepare
            for x in range(pool_cnt.shape[1]):
                grown_cnt[i, x] = pool_cnt[i, x]
            for x in range(pool_mom.shape[1]):
                grown_mom[i, x] = pool_mom[i, x]
        pool_cnt, pool_mom = grown_cnt, grown_mom
        grown_free = np.empty(2 * P, dtype=free_slots.dtype)  # the new slots, then the old ones
        for i in range(P):
            grown_free[i] = 2 * P - 1 - i
            grown_free[P + i] = free_slots[i]
        free_slots = grown_free
        nfree = P
    nfree -= 1
    return free_slots[nfree], pool_cnt, pool_mom, free_slots, nfree


@njit(nogil=True, cache=True)
def _prepare(label, value, node, start, n, cmin, cmax, num, num_off, span, least, small, off, table, normalize,
             settle, min_gain, tie, whole, moments, partition, node_counts, node_moments):
    """A node's candidate QIs in rank order (none below ``small`` rows), and when it has some,
    its label counts and target moments (from ``node_counts``, ``node_moments``, into
    ``whole``, ``moments``), its impurity per target (``partition``) and in all (``base``), and
    whether it is pure in every label (``settle`` criteria only). Returns ``(ranked, base, pure)``."""
    ranked = rank(node, n, cmin, cmax, num, num_off, span, small)
    if len(ranked) == 0:
        return ranked, 0.0, False
    if len(node_counts):
        # element by element: numba's check of an array slice assignment's shapes compiles a
        # string formatter for its error message (seconds of the first run's compile)
        for v in range(len(whole)):
            whole[v] = node_counts[node, v]
        for u in range(moments.shape[0]):
            for x in range(3):
                moments[u, x] = node_moments[node, u, x]
    else:
        _totals(label, value, np.int64(0), start[node], n[node], whole, moments)
    base, pure = judge_node(n[node], whole, moments, off, table, normalize, settle, partition)
    return ranked, base, pure


@njit(nogil=True, cache=True)
def _leaf(row, node, s, m, leaf_of, attr):
    """Node ``node`` (rows ``s .. s+m-1``) is a leaf."""
    attr[node] = -1
    for i in range(s, s + m):
        leaf_of[row[0, i]] = node


@njit(nogil=True, cache=True)
def _mark(row, found, s, m, at, left_of):
    """Which rows go left, one bit per row in ``left_of``: the split QI's list is sorted, so
    its first ``at`` rows. (Bits, not bytes: the partition reads them in random order, and a
    batch's bits stay in the CPU's cache.)"""
    for i in range(s, s + m):
        r = row[found, i]
        w = r >> 6
        b = np.uint64(1) << np.uint64(r & 63)
        if i < s + at:
            left_of[w] |= b
        else:
            left_of[w] &= ~b


@njit(nogil=True, cache=True)
def _totals(label, value, j, s, m, counts, moments):
    """The label counts and target moments of rows ``s .. s+m-1`` of list ``j``."""
    counts[:] = 0
    moments[:, :] = 0
    for i in range(s, s + m):
        for u in range(label.shape[1]):
            counts[label[j, u, i]] += 1
        for u in range(value.shape[1]):
            x = value[j, u, i]
            moments[u, 1] += x
            moments[u, 2] += x * x
    for u in range(value.shape[1]):
        moments[u, 0] = m


@njit(nogil=True, cache=True)
def _child_totals(label, value, found, node, a, start, n, node_counts, node_moments):
    """The totals of the children ``a`` and ``a + 1`` of ``node`` (split on ``found``): the
    smaller one's counted, the other's its parent's less those (exact integers)."""
    if len(node_counts) == 0:  # not kept
        return
    small = a if n[a] <= n[a + 1] else a + 1
    other = 2 * a + 1 - small
    _totals(label, value, found, start[small], n[small], node_counts[small], node_moments[small])
    for v in range(node_counts.shape[1]):  # element by element, as in _prepare
        node_counts[other, v] = node_counts[node, v] - node_counts[small, v]
    for u in range(node_moments.shape[1]):
        for x in range(3):
            node_moments[other, u, x] = node_moments[node, u, x] - node_moments[small, u, x]


@njit(nogil=True, cache=True)
def _children(code, node, found, c, at, a, parent, child, depth, start, n, attr, cut, cmin, cmax):
    """Record the split of ``node`` on QI ``found`` at ``c`` (``at`` rows left) and its children
    ``a`` (left) and ``a + 1``, whose extents are the ends of their (partitioned) lists."""
    s = start[node]
    m = n[node]
    b = a + 1
    attr[node] = found
    cut[node] = c
    for j in range(code.shape[0]):
        cmin[a, j], cmax[a, j] = code[j, s], code[j, s + at - 1]
        cmin[b, j], cmax[b, j] = code[j, s + at], code[j, s + m - 1]
    parent[a] = parent[b] = node
    child[a], child[b] = 0, 1
    depth[a] = depth[b] = depth[node] + 1
    start[a], start[b] = s, s + at
    n[a], n[b] = at, m - at


@njit(nogil=True, cache=True)
def _partition(row, code, label, value, j, s, m, at, left_of, spare_row, spare_code, spare_label, spare_value):
    """Partition list ``j``'s rows ``s .. s+m-1`` stably: the ``at`` going left first, each
    side keeping its code order.

    Where one side is much smaller (the unbalanced splits the workload criteria often make),
    the larger side is compacted in place — towards the front for the left side, from the back
    for the right one — and the smaller set aside and copied into its place: about one write
    per row, and the test of each row is predictable. Otherwise each row is written to both
    places and one kept (no branch: which side a row goes to is as good as random in any list
    but the split QI's).

    A row's first label slot and first target move with it here, without a loop: a loop over
    the labels and targets per row, even one never taken, doubled the cost of a move (on 300K
    rows, 9-10.6 ns per row against 4.6-4.9 balanced, 5.7-6.2 against 3.4 unbalanced). The
    others, when a request has more, move first in a pass of their own (:func:`_partition_rest`)."""
    T_c = label.shape[1]
    T_n = value.shape[1]
    if T_c > 1 or T_n > 1:
        _partition_rest(row, label, value, j, s, m, left_of, spare_label, spare_value)
    has_c = T_c > 0
    has_n = T_n > 0
    small = m // 8
    backwards = at <= small  # (a variable, not literals, to _restore: one specialization)
    if backwards:  # backwards: the right rows packed from the end, the left ones set aside
        k = s + m
        aside = np.int64(0)  # (not a literal 0: _restore would be compiled for it while numba infers the types)
        for i in range(s + m - 1, s - 1, -1):
            r = row[j, i]
            if (left_of[r >> 6] >> np.uint64(r & 63)) & np.uint64(1):
                spare_row[aside] = r
                spare_code[aside] = code[j, i]
                if has_c:
                    spare_label[0, aside] = label[j, 0, i]
                if has_n:
                    spare_value[0, aside] = value[j, 0, i]
                aside += 1
            else:
                k -= 1
                row[j, k] = r
                code[j, k] = code[j, i]
                if has_c:
                    label[j, 0, k] = label[j, 0, i]
                if has_n:
                    value[j, 0, k] = value[j, 0, i]
        _restore(row, code, label, value, j, s, aside, backwards, spare_row, spare_code, spare_label, spare_value)
        return
    k = s
    right = np.int64(0)
    if m - at <= small:  # forwards: the left rows packed at the front, the right ones set aside
        for i in range(s, s + m):
            r = row[j, i]
            if (left_of[r >> 6] >> np.uint64(r & 63)) & np.uint64(1):
                row[j, k] = r
                code[j, k] = code[j, i]
                if has_c:
                    label[j, 0, k] = label[j, 0, i]
                if has_n:
                    value[j, 0, k] = value[j, 0, i]
                k += 1
            else:
                spare_row[right] = r
                spare_code[right] = code[j, i]
                if has_c:
                    spare_label[0, right] = label[j, 0, i]
                if has_n:
                    spare_value[0, right] = value[j, 0, i]
                right += 1
    else:
        for i in range(s, s + m):
            # ``k <= i``: the left side overwrites only rows already read
            r = row[j, i]
            c = code[j, i]
            go = np.int64((left_of[r >> 6] >> np.uint64(r & 63)) & np.uint64(1))
            spare_row[right] = r
            spare_code[right] = c
            row[j, k] = r
            code[j, k] = c
            if has_c:
                x = label[j, 0, i]
                spare_label[0, right] = x
                label[j, 0, k] = x
            if has_n:
                y = value[j, 0, i]
                spare_value[0, right] = y
                value[j, 0, k] = y
            k += go
            right += 1 - go
    _restore(row, code, label, value, j, k, right, backwards, spare_row, spare_code, spare_label, spare_value)


@njit(nogil=True, cache=True)
def _restore(row, code, label, value, j, at, count, reverse, spare_row, spare_code, spare_label, spare_value):
    """:func:`_partition`'s last step: copy the ``count`` rows set aside (their first label
    slot and target) into list ``j`` from position ``at`` on (``reverse``: they were set aside
    last first)."""
    has_c = label.shape[1] > 0
    has_n = value.shape[1] > 0
    for i in range(count):
        t = at + (count - 1 - i if reverse else i)
        row[j, t] = spare_row[i]
        code[j, t] = spare_code[i]
        if has_c:
            label[j, 0, t] = spare_label[0, i]
        if has_n:
            value[j, 0, t] = spare_value[0, i]


@njit(nogil=True, cache=True)
def _partition_rest(row, label, value, j, s, m, left_of, spare_label, spare_value):
    """The label slots and targets of list ``j`` after the first of each, partitioned as
    :func:`_partition` partitions the rows (stably, left rows first), before it moves them:
    the side of each row is read from ``row``, which this pass leaves as it is."""
    T_c = label.shape[1]
    T_n = value.shape[1]
    k = s
    right = 0
    for i in range(s, s + m):
        r = row[j, i]
        if (left_of[r >> 6] >> np.uint64(r & 63)) & np.uint64(1):
            for u in range(1, T_c):
                label[j, u, k] = label[j, u, i]
            for u in range(1, T_n):
                value[j, u, k] = value[j, u, i]
            k += 1
        else:
            for u in range(1, T_c):
                spare_label[u, right] = label[j, u, i]
            for u in range(1, T_n):
                spare_value[u, right] = value[j, u, i]
            right += 1
    for i in range(right):
        for u in range(1, T_c):
            label[j, u, k + i] = spare_label[u, i]
        for u in range(1, T_n):
            value[j, u, k + i] = spare_value[u, i]
