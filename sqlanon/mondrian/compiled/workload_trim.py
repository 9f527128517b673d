"""Mondrian's suppression budget in the depth-first workload finish
(:mod:`sqlanon.mondrian.compiled.workload_finish`): a node's best suppressing split.

The rule is :mod:`sqlanon.mondrian.suppression`'s, as the level-by-level path applies it to the
workload criteria (:meth:`Partitioner.decide <sqlanon.mondrian.builder.Partitioner.decide>`,
:func:`~sqlanon.mondrian.suppression.suppressing`, :meth:`Partitioner._pick
<sqlanon.mondrian.builder.Partitioner._pick>`):

* Only a node with budget ``b > 0`` and no ordinary split on any QI may suppress (an ordinary
  split has cost 0, a suppressing one a positive cost, and ``_pick`` orders by cost before the
  criterion's keys). Such a node is asked whatever its size: its candidates are every QI with
  ``cmin < cmax``, in rank order (:func:`~sqlanon.mondrian.compiled.cut_scan.rank` with no size
  floor, as ``decide`` exempts partitions with a budget from the ``2 min_size`` floor).
* A QI's suppressing cuts: between two present codes, exactly one side fails (fewer than
  ``min_size`` rows, or a privacy model's compiled face rejects it: the numpy verdicts bit for
  bit, :func:`sqlanon.model.privacy.compiled.passes`), the failing side holds at most ``b`` rows,
  and the gain ``kept x (w - w_kept) - lost x slack`` is positive (:func:`~sqlanon.mondrian.suppression.suppression_gain`,
  the same float64 operations on the same extents). The QI's choice: the smallest
  ``cost = lost / gain``, then the smallest ``|2 L - n|``, then the lowest cut.
* The node's choice: the cheapest QI, ties by rank (``_pick``'s lexsort puts cost before the
  keys -- 0 for every suppressing split -- and the rank; its Median fallback for a weak gain,
  which a suppressing split's gain of 0 may take, orders by cost and rank too). The same holds
  for a settled (pure) node, which the levels ask one QI at a time and which keeps the
  strictly cheaper suppressing split aside.

The failing side becomes a suppressed leaf and the budgets of the children are
:func:`~sqlanon.mondrian.suppression.share_budget`'s (:func:`sqlanon.mondrian.compiled.median_finish._shares`),
in the histogram phase, the wide nodes' growth and the lists' growth alike.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ...model.privacy.compiled import passes
from .cut_scan import rank
from .median_finish import add_row
from .workload_models import _qi_rows


@njit(nogil=True, cache=True)
def trim(node, n, cmin, cmax, num, num_off, span, b, min_size, s, m, site, row, code, rec, words, col, shift, order,
         codes, Y, ncls, kinds, cols, ps, fa, fb, offs, sizes, xlogx, logn, cnt, mom, buf):
    """The suppressing split of node ``node`` (rows ``s .. s+m-1`` of its region, named as
    :func:`~sqlanon.mondrian.compiled.workload_models._qi_rows` names them from ``site`` on) with
    budget ``b`` (module docstring): ``(QI, cut, rows left, drop)``, ``drop`` 1 (the left side
    suppressed), 2 (the right) or 0 (none: QI -1). Privacy models beyond k when ``kinds`` is not
    None (None: k alone, whose model branches numba prunes at compile time; ``Y`` the rows'
    sensitive values; ``cnt``, ``mom`` slots 0 the node, 1 the left side, 3 the right side)."""
    d = cmin.shape[1]
    ranked = rank(node, n, cmin, cmax, num, num_off, span, np.int64(0))  # no literal: one specialization
    slack = 0.0  # what suppressing a row costs: sum_j (1 - w_j), QI by QI (suppression.slack)
    for j in range(d):
        if span[j] > 0:
            w = (num[num_off[j] + cmax[node, j]] - num[num_off[j] + cmin[node, j]]) / span[j]
        else:
            w = 0.0
        slack = slack + (1.0 - w)
    T = Y.shape[1] - ncls
    rows_q = np.empty(m, dtype=np.int64)
    codes_q = np.empty(m, dtype=np.int64)
    best_cost = np.inf
    best_q, best_c, best_l, best_drop = np.int64(-1), np.int64(0), np.int64(0), np.int64(0)
    totals = False
    for i in range(len(ranked)):
        q = ranked[i]
        done = _qi_rows(site, q, s, m, row, code, rec, words, col, shift, order, codes, rows_q, codes_q)
        if done:
            at = np.arange(m)
        else:
            at = np.argsort(codes_q, kind="mergesort")
        if kinds is not None:
            if not totals:  # the node's counts and moments (any QI's rows are the node's)
                cnt[0, :] = 0
                mom[0, :, :] = 0
                for r in range(m):
                    add_row(Y, rows_q[r], ncls, T, offs, cnt[0], mom[0], 1)
                totals = True
            cnt[1, :] = 0
            mom[1, :, :] = 0
        lo, hi = cmin[node, q], cmax[node, q]
        if span[q] > 0:
            w_part = (num[num_off[q] + hi] - num[num_off[q] + lo]) / span[q]
        else:
            w_part = 0.0
        q_cost = np.inf
        q_bal = 0
        q_c, q_l, q_drop = np.int64(0), np.int64(0), np.int64(0)
        k = 0
        while k < m:
            v = codes_q[at[k]]
            while k < m and codes_q[at[k]] == v:
                if kinds is not None:
                    add_row(Y, rows_q[at[k]], ncls, T, offs, cnt[1], mom[1], 1)
                k += 1
            if k >= m:  # the last code: no cut after it
                break
            nl = k
            nr = m - nl
            if nl > b and nr > b:  # neither side fits the budget
                continue
            ok_l = nl >= min_size
            ok_r = nr >= min_size
            if kinds is not None:
                ok_l = ok_l and passes(kinds, cols, ps, fa, fb, offs, sizes, xlogx, logn, cnt[1], mom[1], buf)
                for x in range(cnt.shape[1]):
                    cnt[3, x] = cnt[0, x] - cnt[1, x]
                for u in range(T):
                    for x in range(3):
                        mom[3, u, x] = mom[0, u, x] - mom[1, u, x]
                ok_r = ok_r and passes(kinds, cols, ps, fa, fb, offs, sizes, xlogx, logn, cnt[3], mom[3], buf)
            drop = 0
            lost = 0
            kept_lo, kept_hi = lo, hi
            if not ok_l and ok_r and nl <= b:
                drop, lost, kept_lo = 1, nl, codes_q[at[k]]
            elif ok_l and not ok_r and nr <= b:
                drop, lost, kept_hi = 2, nr, v
            if drop == 0:
                continue
            if span[q] > 0:
                w_kept = (num[num_off[q] + kept_hi] - num[num_off[q] + kept_lo]) / span[q]
            else:
                w_kept = 0.0
            gain = float(m - lost) * (w_part - w_kept) - float(lost) * slack
            if gain > 0:
                cost = float(lost) / gain
                bal = abs(2 * nl - m)
                if cost < q_cost or (cost == q_cost and bal < q_bal):  # ties of both: the lower cut, met first
                    q_cost, q_bal, q_c, q_l, q_drop = cost, bal, np.int64(v), np.int64(nl), np.int64(drop)
        if q_drop > 0 and q_cost < best_cost:  # strictly cheaper: ties go to the better rank
            best_cost, best_q, best_c, best_l, best_drop = q_cost, np.int64(q), q_c, q_l, q_drop
    return best_q, best_c, best_l, best_drop
