"""The in-memory finish of the workload criteria under k-anonymity, depth-first in compiled loops.

InfoGain and LSD Mondrian (LeFevre, DeWitt, Ramakrishnan, KDD 2006, Sections 3.1-3.2) and
:class:`~sqlanon.model.criteria.Targets` judge every candidate QI of every partition, at every
cut. :meth:`Partitioner.run_memory <sqlanon.mondrian.builder.Partitioner.run_memory>` does that
level by level in numpy; for the requests where each split depends on nothing but its
partition's rows — one of these criteria, only :class:`~sqlanon.model.constraints.KAnonymity`
constraints, every QI ordered, no suppression budget, numeric targets summed exactly (integers)
— :func:`finish` grows the batch's partitions depth-first instead, as
:mod:`sqlanon.mondrian.median_finish` does for Median, with SPRINT's attribute lists (Shafer,
Agrawal & Mehta, VLDB 1996): per QI, the partition's rows in code order, a contiguous run of one
array per QI. Scoring a QI is one pass down its list accumulating the label counts and target
moments of the left child, and a split partitions every list stably (left rows first), so the
lists stay sorted without a sort. The loops release the GIL: after a few splits the open
partitions are shared out over ``threads`` threads.

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
  are bit for bit numpy's. The partition's own impurity is :func:`~sqlanon.model.criteria.weighted_entropy`
  / :func:`~sqlanon.model.constraints.squared_error` in the same operations
  (:func:`~sqlanon.model.score_kernels.class_entropy`, ``_squared_error``), summed left to right
  (``_sum_columns``) or, for Targets, as the count of targets with positive impurity
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
(:func:`~sqlanon.mondrian.median_finish.number`, :func:`~sqlanon.mondrian.median_finish.boxes`),
so the ids, rules, leaves and rows are identical to the level-by-level path's
(``tests/test_workload_finish.py``; ``builder._WORKLOAD_FINISH = False`` forces that path).

Left on the general path (``applies`` is False): l-diversity, t-closeness and the other
constraints, hierarchical QIs, a suppression budget, Selection Mondrian, numeric targets with
floating-point sums (their level-by-level running sums are taken over the whole level, in an
order a depth-first finish cannot repeat bit for bit), and label counts beyond the ``c ln c``
table (partitions of 2^23 rows or more).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

from ..model import score_kernels as sk
from ..model.constraints import Constraint, KAnonymity, xlogx_table
from ..model.criteria import Criterion, InfoGain, Regression, Targets
from ..model.domain import Domain
from ..model.parallel import run_all
from .median_finish import _PARALLEL_ROWS, _Table, _share
from .split import TIE

#: Largest partition the ``c ln c`` table serves (:func:`~sqlanon.model.constraints.xlogx_table`).
_TABLE_ROWS = 2**23


def applies(criterion: Criterion, constraints: Sequence[Constraint], domains: Sequence[Domain],
            budget: np.ndarray, exact: Sequence[bool], rows: int) -> bool:
    """Whether :func:`finish` gives the partition of this request (see the module docstring).

    ``exact``: per numeric target of the criterion, whether it is summed as integers; ``rows``:
    the largest partition to finish."""
    return (type(criterion) in (InfoGain, Regression, Targets)
            and len(criterion.class_columns) + len(criterion.numeric_columns) > 0
            and len(exact) == len(criterion.numeric_columns) and all(exact)
            and len(constraints) > 0 and all(type(c) is KAnonymity for c in constraints)
            and len(domains) > 0 and all(d.num is not None for d in domains)
            and not (budget > 0).any() and rows < _TABLE_ROWS)


def finish(codes: np.ndarray, seg_n: np.ndarray, domains: Sequence[Domain], min_size: int,
           classes: Sequence[np.ndarray], sizes: Sequence[int], numbers: Sequence[np.ndarray],
           normalize: bool, min_gain: float, threads: int = 1) -> dict[str, np.ndarray]:
    """Grow the partitions of a batch to their leaves.

    Args:
        codes: (d, M) the batch's QI codes, rows partition by partition (``seg_n`` rows each).
        seg_n: rows of each open partition (all > 0), in batch order.
        min_size: the fewest rows a class may have (k).
        classes: the criterion's class labels in its order (codes 0..size-1, NULL a code), with
            ``sizes`` their numbers of codes; ``numbers``: its numeric targets (int64, centered),
            after the labels in the criterion's terms.
        normalize: each target's impurity as a fraction of the partition's (Targets).
        min_gain: the criterion's ``min_gain`` (below it, the Median choice).

    Returns the node table of :func:`sqlanon.mondrian.median_finish.finish`: ``parent``,
    ``child``, ``depth``, ``n``, ``attr``, ``cut``, ``cmin``/``cmax`` per node (roots first),
    ``row`` and ``leaf`` per batch row.
    """
    from .builder import sort_and_group  # builder imports this module

    d, M = codes.shape
    R = len(seg_n)
    least = max(1, int(min_size))
    seg_of_row = np.repeat(np.arange(R, dtype=np.int64), seg_n)
    # The attribute lists: per QI the rows of each partition in code order, and their codes.
    lrow = np.empty((d, M), dtype=np.int32)
    lcode = np.empty((d, M), dtype=np.int32)

    def sort(j: int) -> None:
        order = sort_and_group(seg_of_row, codes[j])[0]
        lrow[j] = order
        np.take(codes[j], order, out=lcode[j])

    run_all(sort, range(d), threads)
    off = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    labels = np.empty((M, len(classes)), dtype=np.int32)  # a row's count slot per label
    for t, c in enumerate(classes):
        labels[:, t] = c + off[t]
    values = np.empty((M, len(numbers)), dtype=np.int64)
    for t, v in enumerate(numbers):
        values[:, t] = v
    table = xlogx_table(int(seg_n.max(initial=0)))
    if table is None:
        raise ValueError("a partition beyond the c ln c table (see applies)")
    settle = len(numbers) == 0  # pure in every label: the Median choice (see the module docstring)
    num = np.concatenate([np.asarray(dom.num, dtype=np.float64) for dom in domains])
    num_off = np.concatenate(([0], np.cumsum([len(dom.num) for dom in domains])[:-1])).astype(np.int64)
    span = np.array([float(dom.num[-1] - dom.num[0]) if len(dom.num) else 0.0 for dom in domains])
    start = np.concatenate(([0], np.cumsum(seg_n)[:-1])).astype(np.int64)
    left_of = np.zeros(M, dtype=np.bool_)  # per row: goes to the left child of the split at hand
    leaf_of = np.empty(M, dtype=np.int64)

    threads = max(1, int(threads))
    cap1 = 2 * (M // least) + 2
    cap = R + cap1 + threads * cap1
    t = _Table(cap, d)
    t.start[:R], t.n[:R], t.depth[:R], t.parent[:R] = start, seg_n, 0, -1
    for i in range(R):  # a partition's lists are sorted: its extents are their ends
        t.cmin[i] = lcode[:, start[i]]
        t.cmax[i] = lcode[:, start[i] + seg_n[i] - 1]

    def run(todo: np.ndarray, first: int, defer: int) -> tuple[int, np.ndarray]:
        width = int(t.n[todo].max(initial=0))
        deferred = np.empty(len(todo) + 2 * (M // least) + 2, dtype=np.int64)
        used, nd = _grow(lrow, lcode, labels, values, left_of, leaf_of, todo, first, defer, *t.arrays(),
                         num, num_off, span, least, 2 * int(min_size), off, table, normalize, settle,
                         float(min_gain), TIE, np.empty(width, np.int32), np.empty(width, np.int32), deferred)
        return used, deferred[:nd]

    roots = np.arange(R, dtype=np.int64)
    areas = [(R, 0)]  # (first node, nodes made) per call
    if threads > 1 and M >= 2 * _PARALLEL_ROWS:
        # First phase: split the partitions larger than a slice of the batch, defer the rest.
        defer = max(M // (8 * threads), 1)
        big = t.n[roots] > defer
        used, todo = run(roots[big], R, defer)
        todo = np.concatenate((roots[~big], todo))
        areas[0] = (R, used)
        todo = todo[np.argsort(-t.n[todo], kind="stable")]
        share = _share(t.n[todo], threads)
        firsts = [R + cap1 * (i + 1) for i in range(threads)]
        done = run_all(lambda i: run(todo[share == i], firsts[i], -1)[0], range(threads), threads)
        areas += list(zip(firsts, done))
    else:
        used, _ = run(roots, R, -1)
        areas[0] = (R, used)
    made = np.concatenate([roots] + [np.arange(f, f + u, dtype=np.int64) for f, u in areas])
    out = t.take(made)
    at = np.empty(cap, dtype=np.int64)
    at[made] = np.arange(len(made))
    out["parent"] = np.where(out["parent"] >= 0, at[np.maximum(out["parent"], 0)], -1)
    out["row"], out["leaf"] = np.arange(M, dtype=np.int64), at[leaf_of]
    return out


@njit(nogil=True, cache=True)
def _grow(lrow, lcode, labels, values, left_of, leaf_of, todo, first, defer, parent, child, depth, start, n,
          attr, cut, cmin, cmax, num, num_off, span, least, small, off, table, normalize, settle, min_gain,
          tie, spare_row, spare_code, deferred):
    """Finish the nodes ``todo`` depth-first; new nodes from table row ``first`` on. Children
    with at most ``defer`` rows (-1: none) are not grown but listed in ``deferred``. Returns
    ``(nodes made, deferred count)``."""
    d = lcode.shape[0]
    T_c = labels.shape[1]
    T_n = values.shape[1]
    stack = np.empty(len(todo) + 2 * (lcode.shape[1] // least) + 2, dtype=np.int64)
    top = 0
    for i in range(len(todo) - 1, -1, -1):
        stack[top] = todo[i]
        top += 1
    free = first
    nd = 0
    w = np.empty(d, dtype=np.float64)
    ranked = np.empty(d, dtype=np.int64)
    tried = np.zeros(d, dtype=np.bool_)
    whole = np.zeros(off[-1], dtype=np.int64)  # the partition's rows per label value
    left = np.zeros(off[-1], dtype=np.int64)  # the left child's, during a scan
    moments = np.zeros((T_n, 3), dtype=np.int64)
    left_moments = np.zeros((T_n, 3), dtype=np.int64)
    partition = np.empty(T_c + T_n, dtype=np.float64)  # the partition's impurity per target
    while top > 0:
        top -= 1
        node = stack[top]
        s = start[node]
        m = n[node]
        found = -1
        c = 0
        at = 0
        if m >= small:
            # the candidates in rank order: widest normalized range first, ties by position
            for j in range(d):
                tried[j] = cmin[node, j] >= cmax[node, j]
                if span[j] > 0:
                    w[j] = (num[num_off[j] + cmax[node, j]] - num[num_off[j] + cmin[node, j]]) / span[j]
                else:
                    w[j] = 0.0
            nr = 0
            while True:
                j = -1
                for q in range(d):
                    if not tried[q] and (j < 0 or w[q] > w[j]):
                        j = q
                if j < 0:
                    break
                tried[j] = True
                ranked[nr] = j
                nr += 1
            # the partition's label counts and target moments (list 0 holds its rows)
            whole[:] = 0
            moments[:, :] = 0
            for i in range(s, s + m if nr > 0 else s):
                r = lrow[0, i]
                for u in range(T_c):
                    whole[labels[r, u]] += 1
                for u in range(T_n):
                    x = values[r, u]
                    moments[u, 1] += x
                    moments[u, 2] += x * x
            for u in range(T_n):
                moments[u, 0] = m
            pure = settle and nr > 0
            if pure:
                for u in range(T_c):
                    hit = False
                    for v in range(off[u], off[u + 1]):
                        hit = hit or whole[v] == m
                    pure = pure and hit
            if pure:  # every cut scores 0: the first QI with an allowable Median cut
                for i in range(nr):
                    q = ranked[i]
                    cq, lq = _median_cut(lcode, q, s, m)
                    if lq >= least and m - lq >= least:
                        found, c, at = q, cq, lq
                        break
            elif nr > 0:
                base = 0.0
                for u in range(T_c):
                    partition[u] = sk.class_entropy(whole[off[u]:off[u + 1]], table)
                for u in range(T_n):
                    partition[T_c + u] = sk._squared_error(moments[u, 0], moments[u, 1], moments[u, 2])
                for u in range(T_c + T_n):
                    p = partition[u]
                    base += (p / p if p > 0 else 0.0) if normalize else p
                best_q = -1
                best_key = 0.0
                best_gain = 0.0
                best_c = 0
                best_l = 0
                median_q = -1
                median_c = 0
                median_l = 0
                for i in range(nr):
                    q = ranked[i]
                    ok, qc, ql, qkey, qgain, mc, ml = _scan(lrow, lcode, labels, values, q, s, m, least, whole, left,
                                                            moments, left_moments, partition, base, off, table,
                                                            normalize, tie)
                    if not ok:
                        continue
                    if median_q < 0:
                        median_q, median_c, median_l = q, mc, ml
                    if best_q < 0 or qkey < best_key:  # ties: the earlier QI in rank order
                        best_q, best_key, best_gain, best_c, best_l = q, qkey, qgain, qc, ql
                if best_q >= 0:
                    if best_gain < min_gain:  # weak: the Median choice
                        found, c, at = median_q, median_c, median_l
                    else:
                        found, c, at = best_q, best_c, best_l
        if found < 0:
            attr[node] = -1
            for i in range(s, s + m):
                leaf_of[lrow[0, i]] = node
            continue
        attr[node] = found
        cut[node] = c
        a, b = free, free + 1
        free += 2
        for i in range(s, s + m):  # the split QI's list is sorted: its first ``at`` rows go left
            left_of[lrow[found, i]] = i < s + at
        for j in range(d):
            if j != found:
                _partition(lrow, lcode, j, s, m, left_of, spare_row, spare_code)
            cmin[a, j], cmax[a, j] = lcode[j, s], lcode[j, s + at - 1]
            cmin[b, j], cmax[b, j] = lcode[j, s + at], lcode[j, s + m - 1]
        parent[a] = parent[b] = node
        child[a], child[b] = 0, 1
        depth[a] = depth[b] = depth[node] + 1
        start[a], start[b] = s, s + at
        n[a], n[b] = at, m - at
        # the right child is pushed first, so the left one is grown first
        for kid in (b, a):
            if n[kid] <= defer:
                deferred[nd] = kid
                nd += 1
            else:
                stack[top] = kid
                top += 1
    return free - first, nd


@njit(nogil=True, cache=True)
def _scan(lrow, lcode, labels, values, q, s, m, least, whole, left, moments, left_moments, partition, base, off,
          table, normalize, tie):
    """Score every allowable cut of QI ``q`` in one pass down its list (rows ``s .. s+m-1`` in
    code order). Returns ``(allowed, cut, L, key, gain, median cut, median L)``: the criterion's
    cut (smallest key, then ``|2L - m|``, then code; :func:`sqlanon.model.score_kernels.best_cuts`)
    and the most balanced one."""
    T_c = labels.shape[1]
    T_n = values.shape[1]
    left[:] = 0
    left_moments[:, :] = 0
    nl = 0
    i = s
    end = s + m
    found = False
    best_c = 0
    best_l = 0
    best_key = 0.0
    best_balance = 0
    best_gain = 0.0
    median_c = 0
    median_l = 0
    median_balance = -1
    while i < end:
        code = lcode[q, i]
        while i < end and lcode[q, i] == code:
            r = lrow[q, i]
            for u in range(T_c):
                left[labels[r, u]] += 1
            for u in range(T_n):
                x = values[r, u]
                left_moments[u, 1] += x
                left_moments[u, 2] += x * x
            i += 1
            nl += 1
        if i == end or m - nl < least:  # no cut after the largest code; none allowable beyond
            break
        if nl < least:
            continue
        balance = abs(2 * nl - m)
        if median_balance < 0 or balance < median_balance:
            median_c, median_l, median_balance = code, nl, balance
        impurity = 0.0
        for u in range(T_c):
            h = sk.children_entropy(left[off[u]:off[u + 1]], whole[off[u]:off[u + 1]], table)
            impurity = sk.add_term(impurity, h, partition[u], normalize)
        for u in range(T_n):
            e = sk.children_squared_error(nl, left_moments[u, 1], left_moments[u, 2],
                                          moments[u, 0], moments[u, 1], moments[u, 2])
            impurity = sk.add_term(impurity, e, partition[T_c + u], normalize)
        key = sk.cut_key(impurity, base, tie)
        if not found or key < best_key or (key == best_key and balance < best_balance):
            found = True
            best_c, best_l, best_key, best_balance = code, nl, key, balance
            best_gain = sk.cut_gain(impurity, base, m)
    return found, best_c, best_l, best_key, best_gain, median_c, median_l


@njit(nogil=True, cache=True)
def _median_cut(lcode, q, s, m):
    """The most balanced cut of QI ``q`` (rows ``s .. s+m-1`` sorted by code), ignoring the size
    window: ``(cut, rows <= cut)``, the lower on a tie; ``(largest code, m)`` when none."""
    h = (m + 1) // 2 - 1  # the median's position: the first code with 2 L >= m
    v = lcode[q, s + h]
    lt = np.searchsorted(lcode[q, s:s + m], v, side="left")  # rows below v
    le = np.searchsorted(lcode[q, s:s + m], v, side="right")  # rows <= v
    hi = lcode[q, s + m - 1]
    best_c, best_l = hi, m
    if lt > 0:
        best_c, best_l = lcode[q, s + lt - 1], lt
    if v < hi and (lt == 0 or 2 * le - m < m - 2 * lt):
        best_c, best_l = v, le
    return best_c, best_l


@njit(nogil=True, cache=True)
def _partition(lrow, lcode, j, s, m, left_of, spare_row, spare_code):
    """Partition list ``j``'s rows ``s .. s+m-1`` stably: those going left first, each side
    keeping its code order."""
    k = s
    right = 0
    for i in range(s, s + m):
        r = lrow[j, i]
        if left_of[r]:
            lrow[j, k] = r
            lcode[j, k] = lcode[j, i]
            k += 1
        else:
            spare_row[right] = r
            spare_code[right] = lcode[j, i]
            right += 1
    for i in range(right):
        lrow[j, k + i] = spare_row[i]
        lcode[j, k + i] = spare_code[i]
