"""Privacy models beyond k in the depth-first workload finish (:mod:`sqlanon.mondrian.compiled.workload_finish`):
a node's split chosen among the cuts whose children pass every model.

The level-by-level path (:func:`sqlanon.mondrian.split.evaluate` and
:meth:`Partitioner._pick <sqlanon.mondrian.builder.Partitioner._pick>`) takes, per candidate QI,
the criterion's best *allowable* cut — the smallest ``(key, |2L - n|, cut)`` among the cuts in
the size window whose both children pass every model — and its most balanced allowable cut; a
QI is a candidate only if it has one. The node takes the smallest key, ties by rank, or, when
that split's gain is below ``min_gain`` (or the node is pure in every label,
:func:`~sqlanon.mondrian.split.settled`), the first candidate QI in rank order at its most
balanced allowable cut. The finish's scans (:mod:`sqlanon.mondrian.compiled.cut_scan`) find the same
choice over the size window alone, the winner ``W`` before the Median fallback; then
(:func:`decide`):

* ``W`` allowable and not weak: ``W`` is the smallest ``(key, rank, balance, cut)`` over a
  superset of the allowable cuts and is one of them, so it is the answer.
* ``W`` allowable and weak: it is the allowable winner too, and weak: the Median choice over
  the allowable cuts (:func:`_qi_cuts` per QI in rank order until one has an allowable cut; the
  first QI's usually has).
* A pure node: the Median choice over the allowable cuts, as above.
* ``W`` not allowable (or no scan ran): every candidate QI's cuts are walked in code order
  with the running label counts, target moments and sensitive counts, every allowable cut
  judged by the models and scored by :func:`~sqlanon.mondrian.compiled.cut_scan.consider` (the scans'
  own scoring: the same keys from the same integers), and the choice made as above. (A scan
  scores cuts of a binned QI from histograms; float targets are then summed in another order,
  within the tolerance :mod:`~sqlanon.mondrian.compiled.workload_finish` states; integer sums are exact.)
* No cut in the size window: no allowable cut either, a leaf.

A child is judged by the models' compiled faces (:func:`sqlanon.model.privacy.compiled.passes`
through :func:`sqlanon.mondrian.compiled.median_finish.allowed`, the Median finish's judgement) from its
sensitive value counts and integer moments, summed over its rows: the rows' sensitive values
``Y`` (:class:`~sqlanon.mondrian.compiled.median_finish.Models`) are indexed by row in the space the
node's rows are named in — the batch in canonical order for the histogram phase, the regions'
order for the attribute lists. Each decision costs one pass over the node's rows (its whole and
``W``'s left child); only a rejected ``W`` costs a walk of every candidate QI.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numba import njit

from ...model.privacy.base import Face
from .cut_scan import NO_CUT, consider
from .median_finish import Models, add_row, allowed

#: Where a node's rows are named: the attribute lists and records (:class:`~sqlanon.mondrian.compiled.workload_finish._Lists`)
#: or the histogram phase's row order (:class:`~sqlanon.mondrian.compiled.histograms.Histograms`).
LISTS, ORDER = 0, 1


class Judge:
    """The privacy models of a workload finish: their faces' arrays
    (:func:`sqlanon.model.privacy.compiled.table`) and the rows' sensitive values ``Y`` (M,
    columns; int64) in the index space of the phase at hand (:meth:`reindexed`)."""

    def __init__(self, models: Models) -> None:
        self.models = models

    @classmethod
    def of(cls, faces: Sequence[Face], values: Mapping[str, np.ndarray], sizes: Mapping[str, int], M: int,
           largest: int) -> Judge | None:
        """The judge of a batch of ``M`` rows whose largest partition has ``largest`` rows (the
        entropy tables' length); None without faces."""
        if not faces:
            return None
        return cls(Models.of(faces, values, sizes, M, largest))

    def reindexed(self, order: np.ndarray | None) -> Judge:
        """The judge with the rows renumbered: row ``i`` is the old row ``order[i]``."""
        if order is None:
            return self
        m = self.models
        return Judge(Models(np.ascontiguousarray(m.Y[order]), m.ncls, m.arrays))

    def arrays(self) -> tuple:
        """``(Y, ncls, kinds, cols, ps, a, b, offs, sizes, xlogx, logn)``: what :func:`decide` reads."""
        return (self.models.Y, self.models.ncls, *self.models.arrays)

    def scratch(self) -> tuple[np.ndarray, ...]:
        """One thread's work arrays: value counts and moments of four classes and a column's buffer."""
        return self.models.scratch(0)[1:]

    @staticmethod
    def none() -> tuple:
        """:meth:`arrays` and :meth:`scratch` of no models (a compiled loop's empty arguments):
        ``kinds`` is None, so a loop that tests ``kinds is None`` has its model path pruned
        from the k-alone specialization (numba prunes a branch on an argument that is None:
        :func:`_decide` is then not compiled for a request under k alone)."""
        return _NO_MODELS


def _no_models() -> tuple:
    m = Models.of((), {}, {}, 0, 1)
    return (m.Y, m.ncls, None, *m.arrays[1:]), m.scratch(0)[1:]


_NO_MODELS = _no_models()


def decide(choice: tuple, pure: bool, ranked: np.ndarray, s: int, m: int, least: int, site: int, names: tuple,
           judge: Judge, scratch: tuple, slots: np.ndarray, values: np.ndarray, whole, moments, partition, off,
           table, normalize, base, tie, min_gain) -> tuple[int, int, int]:
    """:func:`_decide` from Python (the histogram phase and the wide nodes' growth)."""
    out = _decide(*(int(x) for x in choice[3:6]), bool(choice[6]), pure, ranked, s, m, least, site, *names,
                  *judge.arrays(), *scratch, slots, values, whole, moments, partition, off, table, normalize, base,
                  tie, min_gain)
    return int(out[0]), int(out[1]), int(out[2])


@njit(nogil=True, cache=True)
def _decide(wq, wc, wat, weak, pure, ranked, s, m, least, site, row, code, rec, words, col, shift, order, codes,
            Y, ncls, kinds, cols, ps, fa, fb, offs, sizes, xlogx, logn, cnt, mom, buf, slots, values, whole, moments,
            partition, off, table, normalize, base, tie, min_gain):
    """The node's split under the privacy models (module docstring): ``(QI, cut, rows left)``,
    QI -1 for a leaf. ``wq, wc, wat``: the scans' winner over the size window (``wq`` -1:
    none), ``weak`` whether its gain is below ``min_gain``; ``pure``: the node is settled (the
    Median choice, no scan ran). ``site`` and the arrays after it name the node's rows
    (:func:`_qi_rows`); ``slots``, ``values``: each row's label slots and targets, by row."""
    T = Y.shape[1] - ncls
    rows_q = np.empty(m, dtype=np.int64)
    codes_q = np.empty(m, dtype=np.int64)
    scale = base if base > 0 else 1.0
    if len(ranked) == 0:
        return np.int64(-1), np.int64(0), np.int64(0)
    if not pure:
        if wq < 0:
            return np.int64(-1), np.int64(0), np.int64(0)
        _qi_rows(site, wq, s, m, row, code, rec, words, col, shift, order, codes, rows_q, codes_q)
        cnt[0, :] = 0
        cnt[1, :] = 0
        mom[0, :, :] = 0
        mom[1, :, :] = 0
        for i in range(m):
            r = rows_q[i]
            add_row(Y, r, ncls, T, offs, cnt[0], mom[0], 1)
            if codes_q[i] <= wc:
                add_row(Y, r, ncls, T, offs, cnt[1], mom[1], 1)
        if allowed(np.int64(1), T, kinds, cols, ps, fa, fb, offs, sizes, xlogx, logn, cnt, mom, buf):
            if not weak:
                return np.int64(wq), np.int64(wc), np.int64(wat)
            pure = True  # the allowable winner is weak: the Median choice
    else:
        _qi_rows(site, ranked[0], s, m, row, code, rec, words, col, shift, order, codes, rows_q, codes_q)
        cnt[0, :] = 0
        mom[0, :, :] = 0
        for i in range(m):
            add_row(Y, rows_q[i], ncls, T, offs, cnt[0], mom[0], 1)
    score = not pure
    median = -1
    median_c, median_l = np.int64(0), np.int64(0)
    best = NO_CUT
    won = -1
    for i in range(len(ranked)):
        q = ranked[i]
        done = _qi_rows(site, q, s, m, row, code, rec, words, col, shift, order, codes, rows_q, codes_q)
        has, mc, ml, cut = _qi_cuts(rows_q, codes_q, done, m, least, Y, ncls, T, kinds, cols, ps, fa, fb, offs, sizes,
                                    xlogx, logn, cnt, mom, buf, score, slots, values, whole, moments, partition, off,
                                    table, normalize, base, scale, tie)
        if not has:
            continue
        if median < 0:
            median, median_c, median_l = i, mc, ml
            if not score:
                break
        if cut[0] and (won < 0 or cut[3] < best[3]):  # the smallest key, ties by rank
            best, won = cut, i
    if median < 0:
        return np.int64(-1), np.int64(0), np.int64(0)
    if not score or best[5] < min_gain:  # weak: the Median choice
        return np.int64(ranked[median]), median_c, median_l
    return np.int64(ranked[won]), best[1], best[2]


@njit(nogil=True, cache=True)
def _qi_rows(site, q, s, m, row, code, rec, words, col, shift, order, codes, rows_q, codes_q):
    """The node's rows (``s .. s+m-1`` of its region) and their codes on QI ``q`` into
    ``rows_q``, ``codes_q``; whether they come sorted by code (ties in row order: an attribute
    list). :data:`LISTS`: QI ``q``'s list (``row``, ``code``), or for a binned QI its records
    (``rec``, ``words``, cell ``col[q]``, bins ``shift[q] + code``); :data:`ORDER`: the batch
    rows ``order[s:s+m]`` and their ``codes``."""
    if site == LISTS:
        if col[q] < 0:
            for i in range(m):
                rows_q[i] = row[q, s + i]
                codes_q[i] = code[q, s + i]
            return True
        for i in range(m):
            rows_q[i] = words[s + i, 0] & 0xFFFFFFFF  # the record's row (workload_finish._row)
            codes_q[i] = np.int64(rec[s + i, col[q]]) - shift[q]
        return False
    for i in range(m):
        r = order[s + i]
        rows_q[i] = r
        codes_q[i] = codes[q, r]
    return False


@njit(nogil=True, cache=True, error_model="numpy")
def _qi_cuts(rows_q, codes_q, done, m, least, Y, ncls, T, kinds, cols, ps, fa, fb, offs, sizes, xlogx, logn, cnt,
             mom, buf, score, slots, values, whole, moments, partition, off, table, normalize, base, scale, tie):
    """Walk one QI's cuts in code order (rows ``rows_q`` with codes ``codes_q``, sorted first
    unless ``done``; a stable sort: rows of a code keep their order) with the left child's
    sensitive counts and moments (slot 1 of ``cnt``, ``mom``; slot 0 holds the node's), and
    judge each cut of the size window by the models. Returns ``(has, cut, rows left, best)``:
    whether the QI has an allowable cut, its most balanced one (smallest ``(|2L - n|, cut)``)
    and, when ``score``, the criterion's best allowable one as :func:`~sqlanon.mondrian.compiled.cut_scan.consider`
    keeps it (the left child's label counts and target moments summed row by row as a list's
    scan sums them). Without ``score``, only the most balanced allowable cut
    (:func:`_median_walk`)."""
    if done:
        at = np.arange(m)
    else:
        at = np.argsort(codes_q, kind="mergesort")
    if not score:
        c, nl = _median_walk(rows_q, codes_q, at, m, least, Y, ncls, T, kinds, cols, ps, fa, fb, offs, sizes, xlogx,
                             logn, cnt, mom, buf)
        return nl > 0, c, nl, NO_CUT
    T_c = slots.shape[0]
    T_n = values.shape[0]
    left = np.zeros(len(whole), dtype=np.int64)
    left_moments = np.zeros((T_n, 3), dtype=values.dtype)
    cnt[1, :] = 0
    mom[1, :, :] = 0
    has = False
    median_c, median_l, median_b = np.int64(0), np.int64(0), np.int64(0)
    best = NO_CUT
    for i in range(m - 1):
        p = at[i]
        r = rows_q[p]
        add_row(Y, r, ncls, T, offs, cnt[1], mom[1], 1)
        if score:
            for u in range(T_c):
                left[slots[u, r]] += 1
            for u in range(T_n):
                x = values[u, r]
                left_moments[u, 1] += x
                left_moments[u, 2] += x * x
        nl = i + 1
        here = codes_q[p]
        if here == codes_q[at[i + 1]] or nl < least:
            continue
        if m - nl < least:
            break
        balance = abs(2 * nl - m)
        if not allowed(np.int64(1), T, kinds, cols, ps, fa, fb, offs, sizes, xlogx, logn, cnt, mom, buf):
            continue
        if not has or balance < median_b:  # a tie of balance keeps the lower cut
            has, median_c, median_l, median_b = True, np.int64(here), np.int64(nl), np.int64(balance)
        if score:
            best = consider(nl, m, np.int64(here), whole, left, moments, left_moments, partition, off, table,
                             normalize, base, scale, tie, best)
    return has, median_c, median_l, best


@njit(nogil=True, cache=True)
def _median_walk(rows_q, codes_q, at, m, least, Y, ncls, T, kinds, cols, ps, fa, fb, offs, sizes, xlogx, logn, cnt,
                 mom, buf):
    """The most balanced allowable cut of one QI (rows ``rows_q[at]`` in code order): the
    smallest ``(|2L - n|, cut)`` among the cuts in the size window whose children pass every
    model, as :func:`sqlanon.mondrian.compiled.median_finish._model_cut` walks them — outwards from the
    median, the left walker's cut (below the median code) against the right one's (at it), the
    more balanced first and the left one on a tie; once a side leaves the size window every
    further cut on it does too. Slots of ``cnt``/``mom``: 0 the node (filled by the caller), 1
    and 2 the walkers' left children. Returns ``(cut, rows left)``, rows 0 when none."""
    h = (m + 1) // 2 - 1  # the median's position: the first code with 2 L >= m
    v = codes_q[at[h]]
    pl, pr = h, h + 1  # the walkers' cuts: rows at[:pl] and at[:pr] on the left
    while pl > 0 and codes_q[at[pl - 1]] == v:
        pl -= 1
    while pr < m and codes_q[at[pr]] == v:
        pr += 1
    for w in (1, 2):
        cnt[w, :] = 0
        mom[w, :, :] = 0
    for i in range(pl):
        add_row(Y, rows_q[at[i]], ncls, T, offs, cnt[1], mom[1], 1)
        add_row(Y, rows_q[at[i]], ncls, T, offs, cnt[2], mom[2], 1)
    for i in range(pl, pr):
        add_row(Y, rows_q[at[i]], ncls, T, offs, cnt[2], mom[2], 1)
    while True:
        lv = pl > 0 and pl >= least and m - pl >= least
        rv = pr < m and pr >= least and m - pr >= least
        if not lv and not rv:
            return np.int64(0), np.int64(0)
        if lv and (not rv or m - 2 * pl <= 2 * pr - m):
            c = codes_q[at[pl - 1]]
            if allowed(np.int64(1), T, kinds, cols, ps, fa, fb, offs, sizes, xlogx, logn, cnt, mom, buf):
                return np.int64(c), np.int64(pl)
            while pl > 0 and codes_q[at[pl - 1]] == c:
                pl -= 1
                add_row(Y, rows_q[at[pl]], ncls, T, offs, cnt[1], mom[1], -1)
        else:
            if allowed(np.int64(2), T, kinds, cols, ps, fa, fb, offs, sizes, xlogx, logn, cnt, mom, buf):
                return np.int64(codes_q[at[pr - 1]]), np.int64(pr)
            c = codes_q[at[pr]]
            while pr < m and codes_q[at[pr]] == c:
                add_row(Y, rows_q[at[pr]], ncls, T, offs, cnt[2], mom[2], 1)
                pr += 1
