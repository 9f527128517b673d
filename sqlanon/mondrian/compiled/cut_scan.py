"""Scoring a node's candidate QIs for the depth-first workload finish: one pass per QI down its
sorted attribute list (:func:`scan`) or its histogram (:func:`scan_bins`), and the node's
split chosen from those passes (:func:`_pick`) — the decisions of :meth:`Partitioner.decide
<sqlanon.mondrian.builder.Partitioner.decide>` with :func:`sqlanon.mondrian.split.evaluate`,
step by step (see :mod:`sqlanon.mondrian.compiled.workload_finish` for why they are the same).

Most cuts are never scored exactly: a cheap estimate of a cut's impurity (:func:`_estimate`, no
division) rules out every cut whose estimate exceeds the best cut's by more than the roundings
of both and a few ``tie`` (:func:`_margin`): its key is certainly larger. A whole block of
consecutive cuts is ruled out at once where a lower bound over the block does the same: for a
label, :func:`_box_bound` (the weighted entropies are concave in the left child's counts, which
lie in a box); for a numeric target, :func:`_moment_bound` (the squared errors from the range
of the left sums about the node's mean). Then a block costs a pass adding up its rows, where
its cuts cost an estimate each — LSD on a target unrelated to the QI scored nearly every cut,
16 ns per row of a list against 4 with the blocks. What is scored is scored exactly, so the
choice is unchanged (``tests/mondrian/test_cut_scan.py`` scores every cut).

Both finishes' phases (the attribute lists, :mod:`sqlanon.mondrian.compiled.workload_finish`, and the
histograms, :mod:`sqlanon.mondrian.compiled.histograms`) read here what a decision takes besides the rows
(:class:`SplitRequest`), the node's candidates in rank order (:func:`rank`) and the scans' buffers
(:class:`Scratch`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

from ...model import score_kernels as sk
from ...model.domain import Domain
from .median_finish import balanced


class SplitRequest:
    """What every split decision reads besides the rows: the QIs' positions and spans (their
    ranking), k, the labels' slots, the ``c ln c`` table, the criterion's settings and ``tie``."""

    def __init__(self, num, num_off, span, least, small, off, table, normalize, settle, min_gain, tie) -> None:
        self.num, self.num_off, self.span, self.least, self.small = num, num_off, span, least, small
        self.off, self.table, self.normalize, self.settle, self.min_gain = off, table, normalize, settle, min_gain
        self.tie = tie

    @classmethod
    def of(cls, domains: Sequence[Domain], min_size: int, off: np.ndarray, table: np.ndarray, normalize: bool,
           min_gain: float, numeric: int, tie: float) -> SplitRequest:
        num = np.concatenate([np.asarray(dom.num, dtype=np.float64) for dom in domains])
        num_off = np.concatenate(([0], np.cumsum([len(dom.num) for dom in domains])[:-1])).astype(np.int64)
        span = np.array([float(dom.num[-1] - dom.num[0]) if len(dom.num) else 0.0 for dom in domains])
        # pure in every label: the Median choice (InfoGain; Targets without numeric targets)
        return cls(num, num_off, span, max(1, int(min_size)), 2 * int(min_size), off, table, normalize,
                   numeric == 0, min_gain, tie)

    def arrays(self) -> tuple:
        return (self.num, self.num_off, self.span, self.least, self.small, self.off, self.table, self.normalize,
                self.settle, self.min_gain, self.tie)


class Scratch:
    """Per-scan buffers: the partition's label counts and target moments, the left child's
    during a scan, and the partition's impurity per target."""

    def __init__(self, whole, left, moments, left_moments, partition) -> None:
        self.whole, self.left, self.partition = whole, left, partition
        self.moments, self.left_moments = moments, left_moments

    @classmethod
    def make(cls, slots: int, T_c: int, T_n: int, kind: type) -> Scratch:
        """Buffers for ``slots`` label slots of ``T_c`` labels and ``T_n`` targets of ``kind``."""
        return cls(np.zeros(slots, np.int64), np.zeros(slots, np.int64), np.zeros((T_n, 3), kind),
                   np.zeros((T_n, 3), kind), np.zeros(T_c + T_n))

    def share(self, other: Scratch) -> None:
        """Take the partition's statistics from ``other``."""
        self.whole[:], self.moments[:], self.partition[:] = other.whole, other.moments, other.partition

    def arrays(self) -> tuple[np.ndarray, ...]:
        return self.whole, self.left, self.moments, self.left_moments, self.partition


@njit(nogil=True, cache=True)
def rank(node, n, cmin, cmax, num, num_off, span, small):
    """A node's candidate QIs in rank order: those with ``cmin < cmax``, widest normalized
    range first, ties by position (none below ``small`` rows)."""
    d = cmin.shape[1]
    if n[node] < small:
        return np.empty(0, dtype=np.int64)
    w = np.empty(d, dtype=np.float64)
    tried = np.zeros(d, dtype=np.bool_)
    nr = 0
    for j in range(d):
        tried[j] = cmin[node, j] >= cmax[node, j]
        nr += not tried[j]
        w[j] = (num[num_off[j] + cmax[node, j]] - num[num_off[j] + cmin[node, j]]) / span[j] if span[j] > 0 else 0.0
    ranked = np.empty(nr, dtype=np.int64)
    for i in range(nr):
        j = -1
        for q in range(d):
            if not tried[q] and (j < 0 or w[q] > w[j]):
                j = q
        tried[j] = True
        ranked[i] = j
    return ranked


@njit(nogil=True, cache=True)
def judge_node(m, whole, moments, off, table, normalize, settle, partition):
    """A node of ``m`` rows with label counts ``whole`` and target moments ``moments``: its
    impurity per target (``partition``) and in all, and whether it is pure in every label
    (``settle`` criteria only). Returns ``(base, pure)``."""
    T_c = len(off) - 1
    T_n = moments.shape[0]
    if settle:
        pure = True
        for u in range(T_c):
            hit = False
            for v in range(off[u], off[u + 1]):
                hit = hit or whole[v] == m
            pure = pure and hit
        if pure:
            return 0.0, True
    base = 0.0
    for u in range(T_c):
        partition[u] = sk.class_entropy(whole[off[u]:off[u + 1]], table)
    for u in range(T_n):
        partition[T_c + u] = sk._squared_error(moments[u, 0], moments[u, 1], moments[u, 2])
    for u in range(T_c + T_n):  # the criterion's combine of the partition with itself
        p = partition[u]
        base += (p / p if p > 0 else 0.0) if normalize else p
    return base, False


@njit(nogil=True, cache=True)
def settled_choice(code, ranked, s, m, least, col, shift, cnt, bcnt, W, cmin, cmax):
    """The Median choice: the first QI in rank order whose most balanced cut is allowable (a
    binned QI's from the node's histogram ``cnt`` and its block sums ``bcnt``, within its
    extents ``cmin``, ``cmax``). Returns ``(QI, cut, rows left)``, QI -1 when none."""
    for i in range(len(ranked)):
        q = ranked[i]
        if col[q] >= 0:
            c, at = _median_bins(cnt, bcnt, W, shift[q], cmin[q], cmax[q], m)
        else:
            c, at = _median_cut(code, q, s, m)
        if at >= least and m - at >= least:
            return q, np.int64(c), np.int64(at)
    return -1, np.int64(0), np.int64(0)


@njit(nogil=True, cache=True)
def choose_sequential(code, label, value, ranked, s, m, least, whole, left, moments, left_moments, partition, base,
                       off, table, normalize, tie, min_gain, col, shift, cnt, mom, W, cmin, cmax):
    """:func:`choose` of the :func:`scan` of every ranked QI (of its histogram,
    :func:`scan_bins`, for a binned QI), one after another, each against the best cut so far.

    The binned QIs go first (a histogram of a few codes is scanned in no time), then the listed
    ones, each in rank order; a QI's cut must beat the best so far on ``(key, rank)`` — a smaller
    key, or the same key on a QI of a better rank — so its cuts and blocks certainly worse than
    it are never scored (at 10M rows a random label's small nodes scored a cut in three of
    their QIs' lists against the first's best). The winner is :func:`_pick`'s: the smallest
    ``(key, rank)`` over the QIs, at its own smallest ``(key, balance, code)``. Returns ``(QI,
    cut, rows left)``, QI -1 if none, then the criterion's winner before that Median choice and
    whether it is weak (:func:`_pick`)."""
    nr = len(ranked)
    best = NO_CUT
    won = -1  # the position in ``ranked`` of the best cut's QI
    median = -1  # the first QI in rank order with an allowable cut, and its most balanced cut
    median_c, median_l = 0, 0
    for binned in (True, False):
        for i in range(nr):
            q = ranked[i]
            if (col[q] >= 0) != binned:
                continue
            # the best so far, its balance set so that a tie on the key goes by rank
            seed = best
            if best[0]:
                seed = (best[0], best[1], best[2], best[3], np.int64(-1 if won < i else m + 1), best[5], best[6],
                        best[7])
            if binned:
                allowed, cut, c, l = _scan_bins_from(cnt, cnt[:0], mom, W - 1, shift[q], cmin[q], cmax[q], m, least,
                                                     whole, left, moments, left_moments, partition, base, off, table,
                                                     normalize, tie, seed)
            else:
                allowed, cut, c, l = _scan_from(code, label, value, q, s, m, least, whole, left, moments,
                                                left_moments, partition, base, off, table, normalize, tie, seed)
            if not allowed:
                continue
            if median < 0 or i < median:
                median, median_c, median_l = i, c, l
            if not best[0] or cut[4] != seed[4]:  # a cut of this QI won
                best, won = cut, i
    if won < 0:
        return -1, 0, 0, -1, 0, 0, False
    if best[5] < min_gain:  # weak: the Median choice
        return ranked[median], median_c, median_l, ranked[won], best[1], best[2], True
    return ranked[won], best[1], best[2], ranked[won], best[1], best[2], False


def choose(ranked: np.ndarray, scans: list[tuple], min_gain: float) -> tuple[int, ...]:
    """:func:`_pick` of the results of :func:`scan` per ranked QI."""
    nr = len(ranked)
    ok = np.array([x[0] for x in scans], dtype=np.bool_).reshape(nr)
    cuts = np.array([(x[1], x[2], x[5], x[6]) for x in scans], dtype=np.int64).reshape(nr, 4)
    scores = np.array([(x[3], x[4]) for x in scans], dtype=np.float64).reshape(nr, 2)
    return tuple(int(x) for x in _pick(ranked, ok, cuts, scores, min_gain))


def _pick(ranked, ok, cuts, scores, min_gain):
    """The partition's split from its QIs' (in rank order): the smallest key, ties by rank
    (:meth:`Partitioner._pick`); when its gain is below ``min_gain``, the Median choice — the
    first allowable QI at its most balanced cut. Returns ``(QI, cut, rows left)``, -1 if none,
    then the criterion's winner ``(QI, cut, rows left)`` and whether it is weak (then the first
    three are the Median choice): a privacy model judges that winner
    (:mod:`sqlanon.mondrian.compiled.workload_models`). Plain Python: a wide node's few QIs,
    where a compiled loop would cost its compilation at the first use."""
    best = -1
    median = -1
    for i in range(len(ranked)):
        if not ok[i]:
            continue
        if median < 0:
            median = i
        if best < 0 or scores[i, 0] < scores[best, 0]:
            best = i
    if best < 0:
        return -1, 0, 0, -1, 0, 0, False
    if scores[best, 1] < min_gain:  # weak: the Median choice
        return ranked[median], cuts[median, 2], cuts[median, 3], ranked[best], cuts[best, 0], cuts[best, 1], True
    return ranked[best], cuts[best, 0], cuts[best, 1], ranked[best], cuts[best, 0], cuts[best, 1], False


@njit(nogil=True, cache=True)
def scan(code, label, value, q, s, m, least, whole, left, moments, left_moments, partition, base, off, table,
          normalize, tie):
    """Score every allowable cut of QI ``q`` down its list (rows ``s .. s+m-1`` in code order).
    Returns ``(allowed, cut, L, key, gain, median cut, median L)``: the criterion's cut
    (smallest key, then ``|2L - m|``, then code; :func:`sqlanon.model.score_kernels.best_cuts`)
    and the most balanced one (:func:`_median_cut`: the QI has an allowable cut iff it is one).
    (:func:`_scan_from` with no cut to beat.)"""
    allowed, best, median_c, median_l = _scan_from(code, label, value, q, s, m, least, whole, left, moments,
                                                   left_moments, partition, base, off, table, normalize, tie, NO_CUT)
    return allowed, best[1], best[2], best[3], best[5], median_c, median_l


@njit(nogil=True, cache=True, error_model="numpy")
def _scan_from(code, label, value, q, s, m, least, whole, left, moments, left_moments, partition, base, off, table,
               normalize, tie, seed):
    """:func:`scan` of QI ``q`` against ``seed``, the best cut so far of :func:`consider`
    (:data:`NO_CUT`: none): returns ``(allowed, best, median cut, median L)``, ``best`` the seed
    where no cut of ``q`` beats it (:func:`choose_sequential` passes another QI's best: cuts
    and blocks certainly worse than it are never scored).

    A cut is scored exactly (the functions of :mod:`sqlanon.model.score_kernels`) only when
    :func:`_estimate` cannot rule it out: its estimate exceeds the best cut's by more than
    :func:`_margin`, so its key is certainly larger (see there). Where every label has at most
    :data:`_BOX_VALUES` values, the allowable cuts are taken in blocks of :data:`BLOCK` rows:
    a first pass adds the rows up, keeping each block's running sums at its start and a lower
    bound of its cuts' estimates (:func:`_box_bound`, :func:`_moment_bound`); the block of the
    lowest bound is scored first, then the others in order, each ruled out whole where its
    bound exceeds the best estimate so far by the margin. (Scored in order, a target that
    follows the QI improves the best at nearly every block up to its peak: 60 % of the blocks
    scored, against under 1 % from the most promising block on.) The running sums a block
    starts from are the first pass's, row by row as a single pass takes them, so every cut is
    scored from the same numbers in any order of the blocks; the smallest ``(key, balance,
    code)`` wins whatever the order.

    Compiled with numpy's error model (no check for a zero divisor, which costs the row loop a
    third of its speed): every division here has a positive divisor — ``ln 2``, ``tie``, and
    ``max(n, 1)``, a child's rows (at least ``least``) or an impurity tested positive."""
    T_c = label.shape[1]
    T_n = value.shape[1]
    median_c, median_l = _median_cut(code, q, s, m)
    if median_l < least or m - median_l < least:  # no allowable cut (the window is symmetric)
        return False, seed, median_c, median_l
    # the cuts allowed are after rows first .. last (least .. m - least rows left)
    first = s + least - 1
    last = s + m - least - 1
    nb = (last - first) // BLOCK + 1
    slots = left.shape[0]
    at_left = np.empty((nb, slots), dtype=left.dtype)  # each block's running sums at its start
    at_moments = np.empty((nb, T_n, 2), dtype=left_moments.dtype)
    bound = np.full(nb, -np.inf)
    boxes, cap = _boxes(m, moments, partition, off, table, normalize)
    centre, low, high = _centres(m, moments)
    left[:] = 0
    for r in range(s, first):
        for u in range(T_c):
            left[label[q, u, r]] += 1
    for u in range(T_n):
        s1, s2 = left_moments.dtype.type(0), left_moments.dtype.type(0)
        for r in range(s, first):
            x = value[q, u, r]
            s1 += x
            s2 += x * x
        left_moments[u, 1], left_moments[u, 2] = s1, s2
    # First pass: each block's start and bound.
    for k in range(nb):
        i = first + k * BLOCK
        stop = min(i + BLOCK, last + 1)
        for v in range(slots):
            at_left[k, v] = left[v]
        for u in range(T_c):  # label by label, a count in a register
            lo_slot = off[u]
            if off[u + 1] - lo_slot == 2:  # two values: the second's count is the sum of the slots
                ones = 0
                for r in range(i, stop):
                    ones += label[q, u, r]
                ones -= lo_slot * (stop - i)
                left[lo_slot + 1] += ones
                left[lo_slot] += stop - i - ones
            else:
                for r in range(i, stop):
                    left[label[q, u, r]] += 1
        for u in range(T_n):  # target by target, the sums in registers
            s1, s2 = left_moments[u, 1], left_moments[u, 2]
            at_moments[k, u, 0], at_moments[k, u, 1] = s1, s2
            lo, hi = np.inf, -np.inf
            for r in range(i, stop):  # after row r, r - s + 1 rows left
                x = value[q, u, r]
                s1 += x
                s2 += x * x
                e = np.float64(s1) - np.float64(r - s + 1) * centre[u]
                lo = min(lo, e)
                hi = max(hi, e)
            left_moments[u, 1], left_moments[u, 2] = s1, s2
            low[u], high[u] = lo, hi
        if boxes:
            nl = i - s
            bound[k] = (_box_bound(at_left[k], left, whole, partition, off, table, normalize)
                        + _moment_bound(nl + 1, nl + stop - i, m, low, high, centre, moments, partition, off,
                                        normalize))
    # Second pass: the most promising block, then the others in order.
    best = seed  # found, cut, rows left, key, balance, gain, estimate, size
    scale = base if base > 0 else 1.0
    lead = np.argmin(bound)
    two = T_c == 1 and T_n == 0 and off[1] - off[0] == 2  # one two-valued label: its count in a register
    f = _INV_LN2
    if normalize:
        f = f / partition[0] if partition[0] > 0 else 0.0
    for t in range(-1, nb):
        k = lead if t < 0 else t
        if t == lead:
            continue
        if best[0] and bound[k] - best[6] > _margin(scale, tie, cap, best[7]) + cap * 2.0**-40:
            continue  # no cut of the block can win
        i = first + k * BLOCK
        stop = min(i + BLOCK, last + 1)
        for v in range(slots):
            left[v] = at_left[k, v]
        for u in range(T_n):
            left_moments[u, 1], left_moments[u, 2] = at_moments[k, u, 0], at_moments[k, u, 1]
        nl = i - s
        if two:
            best = _scan_two(code, label, q, i, stop, nl, m, off[0], whole, left, moments, left_moments, partition,
                             off, table, normalize, base, scale, tie, f, best)
            continue
        # One row at a time, a cut after each row that is the last of its code (a loop per code
        # would exit unpredictably where codes are held by one or two rows each).
        for r in range(i, stop):
            for u in range(T_c):
                left[label[q, u, r]] += 1
            for u in range(T_n):
                x = value[q, u, r]
                left_moments[u, 1] += x
                left_moments[u, 2] += x * x
            nl += 1
            here = code[q, r]
            if here == code[q, r + 1]:
                continue
            best = consider(nl, m, np.int64(here), whole, left, moments, left_moments, partition, off, table,
                             normalize, base, scale, tie, best)
    return True, best, median_c, median_l


@njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _scan_two(code, label, q, i, stop, nl, m, lo, whole, left, moments, left_moments, partition, off, table,
              normalize, base, scale, tie, f, best):
    """The cuts after rows ``i .. stop-1`` of QI ``q``'s list (``nl`` rows left before them, the
    left child's counts in ``left``) for one label of two values (slots ``lo``, ``lo + 1``) and
    no target: :func:`consider` of each, the second value's count kept in a register and
    the estimate taken inline (a cut of a small node costs 6 ns here against 20 through
    :func:`_estimate`'s loops: at 10M rows a random label's nodes under 10K rows spent most of
    their time there). The estimate and its size are :func:`_estimate`'s, operation for
    operation (``f`` its factor), so every test against the best has the same outcome, and a
    cut it cannot rule out is scored by :func:`_scored` as :func:`consider` scores it.
    Returns the best."""
    ones = left[lo + 1]
    w0 = whole[lo]
    w1 = whole[lo + 1]
    for r in range(i, stop):
        ones += label[q, 0, r] - lo
        nl += 1
        here = code[q, r]
        if here == code[q, r + 1]:
            continue
        zeros = nl - ones
        t_left = table[nl]
        t_right = table[(w0 - zeros) + (w1 - ones)]
        x_left = table[zeros] + table[ones]
        x_right = table[w0 - zeros] + table[w1 - ones]
        estimate = ((t_left - x_left) + (t_right - x_right)) * f
        size = (t_left + t_right) * f
        if best[0] and estimate - best[6] > _margin(scale, tie, size, best[7]):
            continue
        left[lo], left[lo + 1] = zeros, ones
        best = _scored(nl, m, np.int64(here), estimate, size, whole, left, moments, left_moments, partition, off,
                       table, normalize, base, tie, best)
    return best


#: No cut yet: ``(found, cut, rows left, key, balance, gain, estimate, size)`` of :func:`consider`.
NO_CUT = (False, np.int64(0), np.int64(0), 0.0, np.int64(0), 0.0, 0.0, 0.0)


@njit(nogil=True, cache=True, inline="always", error_model="numpy")
def consider(nl, m, here, whole, left, moments, left_moments, partition, off, table, normalize, base, scale, tie,
              best):
    """The cut after code ``here`` (``nl`` rows left, with label counts ``left`` and target
    moments ``left_moments``) against the best so far, ``best = (found, cut, rows left, key,
    balance, gain, estimate, size)``: ruled out by its estimate where :func:`_margin` allows,
    else scored exactly (:func:`_scored`). Returns the best.

    Inlined where it is called (the estimate is a cut's whole cost where it rules the cut
    out); the exact scoring is one compiled function all of them call: inlined too, its
    operations were compiled again at every call site (seconds of a first run's compile)."""
    estimate, size = _estimate(nl, m, whole, left, moments, left_moments, partition, off, table, normalize)
    if best[0] and estimate - best[6] > _margin(scale, tie, size, best[7]):
        return best
    return _scored(nl, m, here, estimate, size, whole, left, moments, left_moments, partition, off, table, normalize,
                   base, tie, best)


@njit(nogil=True, cache=True, error_model="numpy")
def _scored(nl, m, here, estimate, size, whole, left, moments, left_moments, partition, off, table, normalize, base,
            tie, best):
    """:func:`consider`'s exact scoring of a cut its estimate (``estimate``, ``size``) did not
    rule out: its impurity (:func:`_impurity`), key and gain; it wins on the smallest ``(key,
    balance, code)``. Returns the best."""
    balance = abs(2 * nl - m)
    impurity = _impurity(nl, whole, left, moments, left_moments, partition, off, table, normalize)
    key = sk.cut_key(impurity, base, tie)
    if not best[0] or key < best[3] or (key == best[3] and (balance < best[4] or (
            balance == best[4] and here < best[1]))):
        return True, here, nl, key, balance, sk.cut_gain(impurity, base, m), estimate, size
    return best


@njit(nogil=True, cache=True, error_model="numpy")
def _boxes(m, moments, partition, off, table, normalize):
    """Whether blocks of cuts are bounded (:func:`_box_bound` and :func:`_moment_bound`: every
    label of at most :data:`_BOX_VALUES` values) and the largest size of an estimate: each
    child's ``n ln n`` is at most ``m ln m``; a target's ``|Q_L| + |Q_R| + S_L^2 / n_L + S_R^2
    / n_R`` is at most ``2 Q`` (``S^2 <= n Q``, Cauchy-Schwarz), a little more for the roundings.
    Returns ``(boxes, cap)``."""
    T_c = len(off) - 1
    boxes = True
    cap = 0.0
    for u in range(T_c):
        boxes = boxes and off[u + 1] - off[u] <= _BOX_VALUES
        f = _INV_LN2
        if normalize:
            f = f / partition[u] if partition[u] > 0 else 0.0
        cap += 2.0 * table[m] * f
    for u in range(moments.shape[0]):
        f = 1.0
        if normalize:
            f = 1.0 / partition[T_c + u] if partition[T_c + u] > 0 else 0.0
        cap += 2.0 * abs(np.float64(moments[u, 2])) * (1.0 + 2.0**-30) * f
    return boxes, cap


@njit(nogil=True, cache=True, error_model="numpy")
def _centres(m, moments):
    """Per target the node's mean ``S / m`` (the centre :func:`_moment_bound` measures the
    left sums from) and two buffers for a block's range of them."""
    T_n = moments.shape[0]
    centre = np.empty(T_n)
    for u in range(T_n):
        centre[u] = np.float64(moments[u, 1]) / np.float64(m)
    return centre, np.empty(T_n), np.empty(T_n)


@njit(nogil=True, cache=True, error_model="numpy")
def _moment_bound(n_low, n_high, m, low, high, centre, moments, partition, off, normalize):
    """A lower bound of the target terms of :func:`_estimate` over the cuts of a block whose
    left child has ``n_low .. n_high`` rows and, per target ``u``, left sums ``S_L`` with
    ``S_L - n_L c`` in ``low[u] .. high[u]`` (``c = centre[u]``).

    Each target's term is at least ``Q - S_L^2 / n_L - S_R^2 / n_R`` (each child clipped at 0,
    and ``Q_L + Q_R = Q``), and for any ``c``, ``S_L^2 / n_L + S_R^2 / n_R = e_L^2 / n_L + e_R^2
    / n_R + 2 c S - c^2 m`` with ``e_L = S_L - n_L c``, ``e_R = S_R - n_R c = E - e_L``, ``E = S -
    m c``. So the term is at least ``Q_c - max e_L^2 / n_low - max (E - e_L)^2 / max(m - n_high, 1)``
    with ``Q_c = Q - c (2 S - c m)``, the node's squares about ``c`` (where ``n_R = 0``, ``E -
    e_L = 0``), and at least 0. Measured about the mean, the ``e`` of a block stay small where
    the target does not follow the QI: the bound is close and most blocks are ruled out (LSD on
    a random target otherwise scores nearly every row's cut). Computed in float64 to within a
    few roundings of ``Q``, which :func:`scan`'s test allows for (``cap``)."""
    T_c = len(off) - 1
    bound = 0.0
    for u in range(moments.shape[0]):
        f = 1.0
        if normalize:
            f = 1.0 / partition[T_c + u] if partition[T_c + u] > 0 else 0.0
        S = np.float64(moments[u, 1])
        c = centre[u]
        E = S - np.float64(m) * c
        left_most = max(low[u] * low[u], high[u] * high[u]) / np.float64(n_low)
        right_most = max((E - low[u]) * (E - low[u]), (E - high[u]) * (E - high[u])) / np.float64(max(m - n_high, 1))
        q_c = np.float64(moments[u, 2]) - c * (2.0 * S - c * np.float64(m))
        bound += max(q_c - left_most - right_most, 0.0) * f
    return bound


@njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _impurity(nl, whole, left, moments, left_moments, partition, off, table, normalize):
    """A cut's exact impurity (``nl`` rows left with label counts ``left`` and target moments
    ``left_moments``): the functions of :mod:`sqlanon.model.score_kernels`, in the criterion's
    order of terms."""
    T_c = len(off) - 1
    impurity = 0.0
    for u in range(T_c):
        h = sk.children_entropy(left[off[u]:off[u + 1]], whole[off[u]:off[u + 1]], table)
        impurity = sk.add_term(impurity, h, partition[u], normalize)
    for u in range(moments.shape[0]):
        e = sk.children_squared_error(nl, left_moments[u, 1], left_moments[u, 2],
                                      moments[u, 0], moments[u, 1], moments[u, 2])
        impurity = sk.add_term(impurity, e, partition[T_c + u], normalize)
    return impurity


#: Rows of a block :func:`scan` tries to rule out whole.
BLOCK = 32
#: Labels of at most this many values have their blocks bounded (``2^values`` corners each).
_BOX_VALUES = 4


@njit(nogil=True, cache=True, error_model="numpy")
def _box_bound(low, high, whole, partition, off, table, normalize):
    """A lower bound of :func:`_estimate` over the cuts of a block: the left child's counts per
    value lie between ``low`` (before the block) and ``high`` (after it), a box; each label's
    ``|L| H(L) + |R| H(R)`` (``n ln n - sum c ln c`` of each child, ``n`` the child's rows) is
    concave in the left counts (``n H`` is concave, and the right child's counts are affine in
    the left's), so its smallest value on the box is at a corner; labels add up (the corners of
    different labels need not agree on the rows: a looser, still valid, bound). Estimated like
    :func:`_estimate` (so within its roundings of the exact values)."""
    bound = 0.0
    for u in range(len(off) - 1):
        lo, hi = off[u], off[u + 1]
        f = _INV_LN2
        if normalize:
            f = f / partition[u] if partition[u] > 0 else 0.0
        least = np.inf
        for corner in range(1 << (hi - lo)):
            n_left = 0
            n_right = 0
            x_left = 0.0
            x_right = 0.0
            for j in range(lo, hi):
                c_left = high[j] if (corner >> (j - lo)) & 1 else low[j]
                c_right = whole[j] - c_left
                n_left += c_left
                n_right += c_right
                x_left += table[c_left]
                x_right += table[c_right]
            a = (table[n_left] - x_left) + (table[n_right] - x_right)
            least = min(least, a * f)
        bound += least
    return bound


#: ``1 / ln 2``: the estimates of :func:`_estimate` multiply where the exact terms divide.
_INV_LN2 = 1.0 / sk.LN2


@njit(nogil=True, cache=True, inline="always")
def _estimate(nl, m, whole, left, moments, left_moments, partition, off, table, normalize):
    """A cheap estimate of a cut's impurity (the exact one divides several times per target),
    and the size of the quantities it is made of: ``(estimate, size)``.

    Per label ``n ln n - sum c ln c`` of each child (as the exact
    :func:`~sqlanon.model.score_kernels.children_entropy`, but for the order of the sums, and
    ``n`` counted in integers: every count is a label's), times ``1 / ln 2`` instead of divided
    by ``ln 2``; per numeric target ``S2 - S1^2 / n`` of each child (clipped at 0) instead of
    :func:`~sqlanon.model.score_kernels.children_squared_error`'s operations; times ``1 /
    impurity`` of the partition when normalized. Each differs from the exact term by a few
    roundings of numbers no larger than ``size`` (the sum of the magnitudes involved)."""
    T_c = len(off) - 1
    T_n = moments.shape[0]
    estimate = 0.0
    size = 0.0
    for u in range(T_c):
        n_right = 0
        x_left = 0.0
        x_right = 0.0
        for j in range(off[u], off[u + 1]):
            c_left = left[j]
            c_right = whole[j] - c_left
            n_right += c_right
            x_left += table[c_left]
            x_right += table[c_right]
        t_left = table[nl]
        t_right = table[n_right]
        f = _INV_LN2
        if normalize:
            f = f / partition[u] if partition[u] > 0 else 0.0
        estimate += ((t_left - x_left) + (t_right - x_right)) * f
        size += (t_left + t_right) * f
    for u in range(T_n):
        n_l = np.float64(nl)
        s_l = np.float64(left_moments[u, 1])
        q_l = np.float64(left_moments[u, 2])
        n_r = np.float64(moments[u, 0] - nl)
        s_r = np.float64(moments[u, 1] - left_moments[u, 1])
        q_r = np.float64(moments[u, 2] - left_moments[u, 2])
        a = max(q_l - s_l * s_l / n_l, 0.0)
        b = max(q_r - s_r * s_r / n_r, 0.0)
        f = 1.0
        if normalize:
            f = 1.0 / partition[T_c + u] if partition[T_c + u] > 0 else 0.0
        estimate += (a + b) * f
        size += (abs(q_l) + abs(q_r) + s_l * s_l / n_l + s_r * s_r / n_r) * f
    return estimate, size


@njit(nogil=True, cache=True)
def _margin(scale, tie, size, best_size):
    """How far a cut's estimate may exceed the best cut's and its key still not be certainly
    larger. Keys are ``rint(impurity / scale / tie) * tie``, non-decreasing in the impurity; two
    impurities more than ``4 tie scale`` apart (plus the roundings of the divisions, relative
    ``2^-52`` of impurities no larger than ``size``) give keys at least one ``tie`` apart. An
    estimate is within a few dozen roundings (``2^-52`` each, relative to ``size``) of its exact
    impurity, so ``8 tie scale + 2^-40 (size + best size)`` covers both with a wide berth."""
    return 8.0 * tie * scale + (size + best_size) * 2.0**-40


@njit(nogil=True, cache=True)
def _median_cut(code, q, s, m):
    """The most balanced cut of QI ``q`` (rows ``s .. s+m-1`` sorted by code), ignoring the size
    window: ``(cut, rows <= cut)``, the lower on a tie; ``(largest code, m)`` when none."""
    h = (m + 1) // 2 - 1  # the median's position: the first code with 2 L >= m
    v = code[q, s + h]
    lt = np.searchsorted(code[q, s:s + m], v, side="left")  # rows below v
    le = np.searchsorted(code[q, s:s + m], v, side="right")  # rows <= v
    prev = code[q, s + lt - 1] if lt > 0 else -1
    return balanced(v, prev, lt, le, code[q, s + m - 1], m)


@njit(nogil=True, cache=True)
def _median_bins(cnt, bcnt, W, shift, lo_code, hi_code, m):
    """:func:`_median_cut` from a histogram: the most balanced cut of a QI whose codes
    ``lo_code .. hi_code`` hold ``cnt[(shift + code) W]`` rows. With the histogram's block sums
    (``bcnt``, see :func:`_scan_bins_from`; empty: none) the blocks before the median's are
    passed whole."""
    h = (m + 1) // 2 - 1  # the median's position: the first code with 2 L >= m
    below = 0
    prev = -1
    first = lo_code
    if len(bcnt):
        g = (shift + lo_code) // BLOCK
        held = -1  # the last block passed that holds rows
        while below + bcnt[g * W] <= h:
            if bcnt[g * W]:
                below += bcnt[g * W]
                held = g
            g += 1
        first = max(lo_code, g * BLOCK - shift)
        if held >= 0:  # the largest code below the median's block
            prev = min((held + 1) * BLOCK - 1 - shift, hi_code)
            while cnt[(shift + prev) * W] == 0:
                prev -= 1
    for code in range(first, hi_code + 1):
        c = cnt[(shift + code) * W]
        if c == 0:
            continue
        if below + c > h:
            return balanced(code, prev, below, below + c, hi_code, m)
        below += c
        prev = code
    return hi_code, m


@njit(nogil=True, cache=True)
def scan_bins(cnt, bcnt, mom, L, shift, lo_code, hi_code, m, least, whole, left, moments, left_moments, partition,
               base, off, table, normalize, tie):
    """:func:`scan` of one QI from its histogram (codes ``lo_code .. hi_code`` at
    ``shift + code``): the same cuts in the same order with the same running sums, so the same
    result; blocks of :data:`BLOCK` codes ruled out whole as there. (:func:`_scan_bins_from`
    with no cut to beat.)"""
    allowed, best, median_c, median_l = _scan_bins_from(cnt, bcnt, mom, L, shift, lo_code, hi_code, m, least, whole,
                                                        left, moments, left_moments, partition, base, off, table,
                                                        normalize, tie, NO_CUT)
    return allowed, best[1], best[2], best[3], best[5], median_c, median_l


@njit(nogil=True, cache=True, error_model="numpy")
def _scan_bins_from(cnt, bcnt, mom, L, shift, lo_code, hi_code, m, least, whole, left, moments, left_moments,
                    partition, base, off, table, normalize, tie, seed):
    """:func:`scan_bins` against ``seed`` as :func:`_scan_from`, in its two passes where blocks
    are bounded: the first adds the codes up, keeping each block's running sums at its start
    and its bound; the second scores the block of the lowest bound first, then the others in
    order, each ruled out whole where its bound allows. (In order, the wide nodes of a random
    label's histogram phase scored their blocks one after another until the best settled.) A
    block's cuts are scored from the first pass's running sums, code by code as one pass takes
    them, so the result does not depend on the order. Blocks with no allowable cut are never
    scored. (Divisions as there: every divisor is positive.)

    The blocks are those of the bins (``shift + code``), every :data:`BLOCK` from 0. Without
    targets, a block's bound needs only its running sums at its start and end: with the
    histogram's block sums (``bcnt``: per block its rows and label counts, as ``cnt`` per code;
    a QI's bins starting at a block) the first pass adds up blocks, not codes (at 10M rows it
    was three quarters of a random label's histogram scans). Empty ``bcnt``: code by code."""
    T_n = moments.shape[0]
    W = L + 1
    median_c, median_l = _median_bins(cnt, bcnt, W, shift, lo_code, hi_code, m)
    if median_l < least or m - median_l < least:
        return False, seed, median_c, median_l
    left[:] = 0
    left_moments[:, :] = 0
    best = seed  # found, cut, rows left, key, balance, gain, estimate, size
    scale = base if base > 0 else 1.0
    boxes, cap = _boxes(m, moments, partition, off, table, normalize)
    g0 = (shift + lo_code) // BLOCK  # the first block's
    nb = (shift + hi_code) // BLOCK - g0 + 1
    if not boxes:
        nb = 1  # one block of every code, scored in order
    slots = left.shape[0]
    at_left = np.zeros((nb, slots), dtype=left.dtype)  # each block's running sums at its start
    at_moments = np.zeros((nb, T_n, 2), dtype=left_moments.dtype)
    at_nl = np.zeros(nb, dtype=np.int64)
    bound = np.full(nb, -np.inf)
    if boxes:
        # First pass: each block's start and bound (no allowable cut: +inf, never scored).
        centre, low, high = _centres(m, moments)
        summed = len(bcnt) > 0 and T_n == 0
        nl = 0
        for k in range(nb):
            for v in range(slots):
                at_left[k, v] = left[v]
            for u in range(T_n):
                at_moments[k, u, 0], at_moments[k, u, 1] = left_moments[u, 1], left_moments[u, 2]
            at_nl[k] = nl
            code = max(lo_code, (g0 + k) * BLOCK - shift)
            stop = min((g0 + k + 1) * BLOCK - shift, hi_code + 1)
            low[:] = np.inf
            high[:] = -np.inf
            rows = 0
            if summed:
                x = (g0 + k) * W
                rows = bcnt[x]
                for v in range(L):
                    left[v] += bcnt[x + 1 + v]
                code = stop  # (the codes' rows are the block's)
            for cc in range(code, stop):
                b = (shift + cc) * W
                rows += cnt[b]
                for v in range(L):
                    left[v] += cnt[b + 1 + v]
                for u in range(T_n):
                    left_moments[u, 1] += mom[((shift + cc) * T_n + u) * 2]
                    left_moments[u, 2] += mom[((shift + cc) * T_n + u) * 2 + 1]
                    e = np.float64(left_moments[u, 1]) - np.float64(nl + rows) * centre[u]
                    low[u] = min(low[u], e)
                    high[u] = max(high[u], e)
            if nl + rows < least or nl >= m - least:
                bound[k] = np.inf
            else:
                bound[k] = (_box_bound(at_left[k], left, whole, partition, off, table, normalize)
                            + _moment_bound(nl + 1, nl + rows, m, low, high, centre, moments, partition, off,
                                            normalize))
            nl += rows
    # Second pass: the most promising block, then the others in order.
    lead = np.argmin(bound)
    for t in range(-1, nb):
        k = lead if t < 0 else t
        if t == lead or bound[k] == np.inf:
            continue
        if best[0] and bound[k] - best[6] > _margin(scale, tie, cap, best[7]) + cap * 2.0**-40:
            continue  # no cut of the block can win
        for v in range(slots):
            left[v] = at_left[k, v]
        for u in range(T_n):
            left_moments[u, 1], left_moments[u, 2] = at_moments[k, u, 0], at_moments[k, u, 1]
        nl = at_nl[k]
        first = lo_code if not boxes else max(lo_code, (g0 + k) * BLOCK - shift)
        stop = hi_code + 1 if not boxes else min((g0 + k + 1) * BLOCK - shift, hi_code + 1)
        for code in range(first, stop):
            b = (shift + code) * W
            c = cnt[b]
            if c == 0:
                continue
            for v in range(L):
                left[v] += cnt[b + 1 + v]
            for u in range(T_n):
                left_moments[u, 1] += mom[((shift + code) * T_n + u) * 2]
                left_moments[u, 2] += mom[((shift + code) * T_n + u) * 2 + 1]
            nl += c
            if nl < least:
                continue
            if m - nl < least:
                break
            best = consider(nl, m, np.int64(code), whole, left, moments, left_moments, partition, off, table,
                             normalize, base, scale, tie, best)
    return True, best, median_c, median_l
