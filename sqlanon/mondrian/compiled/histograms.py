"""The first phase of the depth-first workload finish (:mod:`sqlanon.mondrian.compiled.workload_finish`):
the partitions wider than a slice of the batch split on per-node histograms with sibling
subtraction (:class:`Histograms`).

A split there costs the smaller child's rows times the QIs (its rows taken out of the parent's
histograms, or counted into its own) where the attribute lists cost the partition's rows times
the QIs: at 10M rows a random label's InfoGain cuts a few rows off partitions of millions again
and again. The histograms' scans (:func:`~sqlanon.mondrian.compiled.cut_scan.scan_bins`) read the same
running sums at the same cuts as the lists' scans, so the decisions are the lists'.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ...model.parallel import run_all
from .cut_scan import BLOCK, Scratch, SplitRequest, choose, judge_node, rank, scan_bins, settled_choice
from .gather import gathered
from .median_finish import NodeTable, _shares
from .workload_models import ORDER, Judge, decide


class Histograms:
    """The first phase of :func:`~sqlanon.mondrian.compiled.workload_finish.finish`: the partitions wider
    than ``wide`` rows split on per-node histograms with sibling subtraction (as LightGBM's, Ke
    et al., NeurIPS 2017, but over every code, not bins: exact).

    A node's histogram of QI ``j`` holds, per code of the batch's range of ``j``, its rows and
    their label counts per slot side by side (``cnt``), and their targets' sums and sums of
    squares (``mom``). Scoring ``j`` (:func:`~sqlanon.mondrian.compiled.cut_scan.scan_bins`) adds up the
    codes in order: at each code's last row :func:`~sqlanon.mondrian.compiled.cut_scan.scan` holds
    exactly these running sums, so the cuts, keys, gains and the chosen split are its. A split
    reorders the node's rows in ``order`` (one array, not one list per QI), counts the smaller
    child's histograms from its rows and leaves the larger child the parent's less those (exact
    integers): about ``smaller child x d + codes`` per split where the attribute lists move ``m
    x d`` — the unbalanced splits of the workload criteria cut a few rows off a partition of
    millions again and again. The rows of a node stay in batch order, so every read of the
    batch's arrays moves forward."""

    def __init__(self, codes, slots, values, lo, hi, base, L, wide) -> None:
        self.codes, self.slots, self.values = codes, slots, values
        self.lo, self.hi, self.base, self.L, self.wide = lo, hi, base, L, wide
        self.B = int(base[-1])
        # as _Bins' (every QI binned): QI j's code c at bin shift[j] + c, codes lo[j] .. hi[j]
        self.every = np.arange(len(lo), dtype=np.int64)
        self.shift = base[:-1] - lo
        # where the few rows of :meth:`add_row` are gathered, made at its first gather and kept:
        # new arrays at every split fault their pages in afresh (at 10M rows, 0.1 GB a split)
        self.spare: tuple[np.ndarray, ...] | None = None

    @classmethod
    def of(cls, codes: np.ndarray, slot: np.ndarray, value: np.ndarray, off: np.ndarray, defer: int,
           lo: np.ndarray, hi: np.ndarray) -> Histograms | None:
        """The phase for a batch (``codes`` (d, M) int32, ``slot`` (labels, M) int32, ``value``
        (targets, M) int64 or float64, all contiguous), or None when a histogram would be too large: nodes
        wider than ``defer`` rows and a quarter of the codes (below, scanning lists costs less
        than the histograms' codes)."""
        d, M = codes.shape
        L = int(off[-1])
        # each QI's bins from a block's first (its block sums its own: cut_scan._scan_bins_from)
        base = np.concatenate(([0], np.cumsum(-(-(hi - lo + 1) // BLOCK) * BLOCK))).astype(np.int64)
        B = int(base[-1])
        if L > _HIST_SLOTS or B * (4 + 4 * L + 16 * value.shape[0]) > _HIST_BYTES:
            return None
        wide = max(defer, B // 4) if _HIST_WIDE is None else _HIST_WIDE
        return cls(codes, slot, value, lo, hi, base, L, wide)

    def _count(self, order: np.ndarray, s: int, m: int, threads: int) -> tuple[np.ndarray, ...]:
        """The histograms of rows ``order[s:s+m]`` (:meth:`add_row`): ``(cnt, mom, bcnt)``."""
        T_n = self.values.shape[0]
        W = 1 + self.L
        # zeroed pages of their own: a small child's rows touch few of them
        h = (np.zeros(self.B * W, np.int32), np.zeros(self.B * T_n * 2, self.values.dtype),
             np.zeros(self.B // BLOCK * W, np.int32))
        self.add_row(order, s, m, *h, 1, threads)
        return h

    def add_row(self, order: np.ndarray, s: int, m: int, cnt: np.ndarray, mom: np.ndarray, bcnt: np.ndarray,
             sign: int, threads: int) -> None:
        """Add (``sign`` 1) or subtract (-1) rows ``order[s:s+m]`` to the histograms ``cnt``,
        ``mom`` and the block sums ``bcnt``, QI by QI on the threads (one QI's histogram at a
        time stays in the caches: a thread taking a share of the QIs row by row was 3-4x
        slower)."""
        codes, slots, values = self.codes, self.slots, self.values
        if m <= len(order) // _GATHER_PART:  # a few rows spread over the batch: gathered once
            # filled QI by QI, a few rows spread over the batch would be read QI by QI at random,
            # their slots and targets once per QI (at 10M rows, a random label's take-outs of
            # 4.66M rows: 1.16-1.54 s -> 0.88-0.98 s gathered)
            if self.spare is None:
                part = len(order) // _GATHER_PART
                self.spare = tuple(np.empty((x.shape[0], part), x.dtype) for x in (codes, slots, values))
            codes, slots, values = gathered((codes, slots, values), order[s:s + m], threads, self.spare)
            order, s = np.empty(0, dtype=np.int64), 0  # in order
        run_all(lambda j: _fill(codes, slots, values, order, s, m, j, self.lo[j], self.base[j], self.base[j + 1],
                                cnt, mom, bcnt, self.L, sign), range(len(self.lo)), threads,
                cost=lambda j: self.base[j + 1] - self.base[j])  # the widest histograms first

    def _take_out(self, order: np.ndarray, s: int, m: int, cnt: np.ndarray, mom: np.ndarray, bcnt: np.ndarray,
                  threads: int) -> None:
        """Subtract rows ``order[s:s+m]`` from the histograms ``cnt``, ``mom``, QI by QI on the
        threads: a split that cuts a few rows off costs those rows, where counting them into
        histograms of their own and subtracting those costs every code (at 10M rows, a random
        label's 79 histogram splits spent 1 s zeroing and subtracting pages)."""
        self.add_row(order, s, m, cnt, mom, bcnt, -1, threads)

    def grow(self, t: NodeTable, roots: np.ndarray, request: SplitRequest, threads: int,
             judge: Judge | None = None, min_size: int = 1,
             spare: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """Split the roots wider than ``wide`` rows until every node is narrower; new nodes
        from table row ``len(roots)`` on. Returns the rows' order (each node's rows a region,
        at its ``start``), the narrow nodes, the wide leaves and the next free table row.
        ``judge``: the privacy models beyond k (rows named as the batch's), whose allowed split
        is taken (:mod:`sqlanon.mondrian.compiled.workload_models`). Ordinary splits only: the
        suppression budgets ``t.budget`` are shared down them
        (:func:`~sqlanon.mondrian.compiled.median_finish._shares`, the children's rows and
        ``min_size``), and a wide node without an ordinary split but with budget goes with the
        narrow ones, to the lists' growth, which takes its suppressing split
        (:mod:`sqlanon.mondrian.compiled.workload_trim`). ``spare``: a work array of ``M``
        int64 (None: a new one)."""
        d, M = self.codes.shape
        T_n = self.values.shape[0]
        R = len(roots)
        order = np.arange(M, dtype=np.int64)
        spare = np.empty(M, dtype=np.int64) if spare is None else spare  # a split's work array
        scratch = [Scratch.make(self.L, len(request.off) - 1, T_n, self.values.dtype) for _ in range(d)]
        hists = {}
        stack, narrow, leaves = [], [], []
        for x in roots[::-1].tolist():
            if t.n[x] > self.wide:
                stack.append(x)
                hists[x] = self._count(order, int(t.start[x]), int(t.n[x]), threads)
            else:
                narrow.append(x)
        narrow.reverse()
        free = R
        r = request
        if judge is not None:
            judging = judge.scratch()
            no = np.zeros((0, 0), dtype=np.int32)
            names = (no, no, np.zeros((0, 1), np.int16), np.zeros((0, 1), np.int64), np.zeros(0, np.int64),
                     np.zeros(0, np.int64), order, self.codes)
        while stack:
            x = stack.pop()
            cnt, mom, bcnt = hists.pop(x)  # per code: its rows and label counts side by side; target sums
            s, m = int(t.start[x]), int(t.n[x])
            sc = scratch[0]
            bin_extents(cnt, self.L + 1, self.every, self.shift, self.lo, self.hi, t.cmin[x], t.cmax[x])
            _hist_totals(cnt, mom, self.base[0], self.base[1], self.L, sc.whole, sc.moments)
            ranked = rank(x, t.n, t.cmin, t.cmax, r.num, r.num_off, r.span, r.small)
            found, c, at = -1, 0, 0
            if len(ranked):
                basis, pure = judge_node(m, sc.whole, sc.moments, r.off, r.table, r.normalize, r.settle, sc.partition)
                if pure and judge is not None:
                    found, c, at = decide((-1, 0, 0, -1, 0, 0, False), True, ranked, s, m, r.least, ORDER, names,
                                          judge, judging, self.slots, self.values, sc.whole, sc.moments, sc.partition,
                                          r.off, r.table, r.normalize, basis, r.tie, r.min_gain)
                elif pure:
                    # every QI binned here (``every`` >= 0): the codes are not read
                    found, c, at = settled_choice(self.codes, ranked, s, m, r.least, self.every, self.shift, cnt,
                                                   bcnt, self.L + 1, t.cmin[x], t.cmax[x])
                else:
                    for o in scratch[1:]:
                        o.share(sc)

                    def score(i: int) -> tuple:
                        q = int(ranked[i])
                        return scan_bins(cnt, bcnt, mom, self.L, self.shift[q], t.cmin[x, q],
                                          t.cmax[x, q], m, r.least, *scratch[i].arrays(), basis, r.off, r.table,
                                          r.normalize, r.tie)

                    # the QIs of most codes first: a scan costs the node's codes
                    scans = run_all(score, range(len(ranked)), threads,
                                    cost=lambda i: t.cmax[x, ranked[i]] - t.cmin[x, ranked[i]])
                    choice = choose(ranked, scans, r.min_gain)
                    found, c, at = choice[:3]
                    if judge is not None:  # the split the privacy models allow
                        found, c, at = decide(choice, False, ranked, s, m, r.least, ORDER, names, judge, judging,
                                              self.slots, self.values, sc.whole, sc.moments, sc.partition, r.off,
                                              r.table, r.normalize, basis, r.tie, r.min_gain)
            if found < 0:
                (narrow if t.budget[x] > 0 else leaves).append(x)
                continue
            left = _split_rows(order, spare, self.codes, found, c, s, m, at, threads)
            assert left == at, "a split's rows disagree with its histogram"
            a = free
            free += 2
            t.attr[x], t.cut[x] = found, c
            t.parent[a] = t.parent[a + 1] = x
            t.child[a], t.child[a + 1] = 0, 1
            t.depth[a] = t.depth[a + 1] = t.depth[x] + 1
            t.start[a], t.start[a + 1] = s, s + at
            t.n[a], t.n[a + 1] = at, m - at
            if t.budget[x] > 0:
                t.budget[a], t.budget[a + 1] = _shares(t.budget[x], at, m - at, 0, min_size)
            small, large = (a, a + 1) if at <= m - at else (a + 1, a)
            if t.n[large] > self.wide:  # the larger child's histograms: the parent's less the smaller's
                if t.n[small] > self.wide:  # both kept: the smaller's counted, then subtracted
                    h = self._count(order, int(t.start[small]), int(t.n[small]), threads)
                    for mine, theirs in zip((cnt, mom, bcnt), h):
                        np.subtract(mine, theirs, out=mine)
                    hists[small] = h
                else:  # its rows taken out of the parent's one by one: no histogram of the codes
                    self._take_out(order, int(t.start[small]), int(t.n[small]), cnt, mom, bcnt, threads)
                hists[large] = (cnt, mom, bcnt)
            for kid in (a + 1, a):  # the left child first
                (stack if t.n[kid] > self.wide else narrow).append(kid)
        self.spare = None  # freed before the lists are made
        return order, np.array(narrow, dtype=np.int64), np.array(leaves, dtype=np.int64), free


#: Rows of at most a batch's 1/this are gathered before their histograms are filled (:func:`gathered`).
_GATHER_PART = 4
#: Fewest rows of a piece of :func:`_split_rows` (tests set 1).
_SPLIT_PIECE = 2**16
#: Most label slots a histogram holds per code (beyond, the attribute lists only).
_HIST_SLOTS = 16
#: Largest histogram of one node (bytes): beyond, the attribute lists only.
_HIST_BYTES = 2**28
#: Nodes wider than this many rows are split on histograms (None: from the batch; tests set it).
_HIST_WIDE: int | None = None


@njit(nogil=True, cache=True)
def _fill(codes, slot, value, order, s, m, j, lo, base, end, cnt, mom, bcnt, L, sign):
    """Add (``sign`` 1) or subtract (-1) rows ``order[s:s+m]`` (``order`` empty: rows ``s ..
    s+m-1``) to QI ``j``'s histogram (code ``lo`` at bin ``base``, its bins up to ``end``): per
    code ``b``, its rows at ``cnt[b (L + 1)]`` and its label counts in the ``L`` after (one
    cache line), its targets' sums and sums of squares in ``mom``; and per block of
    :data:`BLOCK` bins its rows and label counts in ``bcnt`` likewise — row by row for a few
    rows, else summed afresh from the QI's bins (a block taking every row's increment too made
    a count of a node's rows twice as slow: the rows of a QI of few codes hit one block one
    after another)."""
    T_c = slot.shape[0]
    T_n = value.shape[0]
    by_row = 4 * m < end - base
    if T_c > 1 or T_n > 1:
        _fill_any(codes, slot, value, order, s, m, j, lo, base, cnt, mom, bcnt, L, sign, by_row)
    else:
        # at most one label and one target: no loop over them per row (a loop, even one never
        # taken, slows a row's pass: see workload_finish._count_records)
        W = L + 1
        has_c = T_c > 0
        has_n = T_n > 0
        through = len(order) > 0
        for p in range(s, s + m):
            r = order[p] if through else p
            b = base + codes[j, r] - lo
            cnt[b * W] += sign
            if has_c:
                cnt[b * W + 1 + slot[0, r]] += sign
            if by_row:
                g = b // BLOCK
                bcnt[g * W] += sign
                if has_c:
                    bcnt[g * W + 1 + slot[0, r]] += sign
            if has_n:
                x = value[0, r]
                mom[b * 2] += sign * x
                mom[b * 2 + 1] += sign * x * x
    if not by_row:
        _block_sums(cnt, bcnt, base, end, L + 1)


@njit(nogil=True, cache=True)
def _fill_any(codes, slot, value, order, s, m, j, lo, base, cnt, mom, bcnt, L, sign, by_row):
    """:func:`_fill` of any number of labels and targets (a loop over them per row)."""
    T_c = slot.shape[0]
    T_n = value.shape[0]
    W = L + 1
    through = len(order) > 0
    for p in range(s, s + m):
        r = order[p] if through else p
        b = base + codes[j, r] - lo
        cnt[b * W] += sign
        for u in range(T_c):
            cnt[b * W + 1 + slot[u, r]] += sign
        if by_row:
            g = b // BLOCK
            bcnt[g * W] += sign
            for u in range(T_c):
                bcnt[g * W + 1 + slot[u, r]] += sign
        for u in range(T_n):
            x = value[u, r]
            mom[(b * T_n + u) * 2] += sign * x
            mom[(b * T_n + u) * 2 + 1] += sign * x * x


@njit(nogil=True, cache=True)
def _block_sums(cnt, bcnt, base, end, W):
    """The block sums of bins ``base .. end - 1`` (whole blocks) from the histogram ``cnt``."""
    for g in range(base // BLOCK, end // BLOCK):
        for v in range(W):
            bcnt[g * W + v] = 0
        for b in range(g * BLOCK, (g + 1) * BLOCK):
            for v in range(W):
                bcnt[g * W + v] += cnt[b * W + v]


@njit(nogil=True, cache=True)
def _hist_totals(cnt, mom, b0, b1, L, whole, moments):
    """A node's label counts and target moments: the sums over the first QI's codes."""
    T_n = moments.shape[0]
    W = L + 1
    whole[:] = 0
    moments[:, :] = 0
    for b in range(b0, b1):
        if cnt[b * W] == 0:
            continue
        for v in range(L):
            whole[v] += cnt[b * W + 1 + v]
        for u in range(T_n):
            moments[u, 0] += cnt[b * W]
            moments[u, 1] += mom[(b * T_n + u) * 2]
            moments[u, 2] += mom[(b * T_n + u) * 2 + 1]


def _split_rows(order: np.ndarray, spare: np.ndarray, codes: np.ndarray, j: int, c: int, s: int, m: int,
                at: int, threads: int) -> int:
    """:func:`_split_order` of ``order[s:s+m]`` in a piece per thread: each thread splits its
    piece (reading its rows' codes at random is the cost: 0.66 s of a random label's 10M-row
    phase on one thread), then the left rows of the later pieces are rotated in front of the
    right rows of the earlier ones (a copy in order). Returns how many rows go left."""
    if threads <= 1 or m < _SPLIT_PIECE * 2:
        return _split_order(order, spare, codes, j, c, s, m, at)
    bounds = np.linspace(s, s + m, threads + 1).astype(np.int64).tolist()
    # a piece's share of ``at`` only picks the direction its split packs in (see _split_order)
    lefts = run_all(lambda i: _split_order(order, spare[bounds[i]:], codes, j, c, bounds[i],
                                           bounds[i + 1] - bounds[i], at * (bounds[i + 1] - bounds[i]) // m),
                    range(threads), threads)
    k = s + lefts[0]  # the left rows so far end here, the right rows so far from here to bounds[i]
    for i in range(1, threads):
        right = order[k:bounds[i]].copy()
        order[k:k + lefts[i]] = order[bounds[i]:bounds[i] + lefts[i]]
        order[k + lefts[i]:bounds[i] + lefts[i]] = right
        k += lefts[i]
    return k - s


@njit(nogil=True, cache=True)
def _split_order(order, spare, codes, j, c, s, m, at):
    """Reorder the rows ``order[s:s+m]`` stably: those with code at most ``c`` on QI ``j``
    first (``at`` of them, by the histogram). Returns how many.

    The smaller side is set aside and copied back, the larger packed in place (the left side
    from the front, the right side from the back): a split that cuts a few rows off a node of
    millions writes its rows once, not twice."""
    if at <= m - at:  # backwards: the right rows packed from the end, the left ones set aside
        k = s + m
        left = 0
        for p in range(s + m - 1, s - 1, -1):
            r = order[p]
            if codes[j, r] <= c:
                spare[left] = r
                left += 1
            else:
                k -= 1
                order[k] = r
        for i in range(left):  # set aside last first
            order[s + left - 1 - i] = spare[i]
        return left
    k = s
    right = 0
    for p in range(s, s + m):
        r = order[p]
        if codes[j, r] <= c:
            order[k] = r
            k += 1
        else:
            spare[right] = r
            right += 1
    for i in range(right):
        order[k + i] = spare[i]
    return k - s


@njit(nogil=True, cache=True)
def bin_extents(cnt, W, qs, shift, lo, hi, cmin, cmax):
    """A node's smallest and largest code of each binned QI from its histogram, within
    ``lo .. hi`` (its parent's extents, or the batch's)."""
    for i in range(len(qs)):
        q = qs[i]
        b = shift[q] + lo[q]
        while cnt[b * W] == 0:
            b += 1
        cmin[q] = b - shift[q]
        b = shift[q] + hi[q]
        while cnt[b * W] == 0:
            b -= 1
        cmax[q] = b - shift[q]
