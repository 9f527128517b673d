"""Fused scoring of ordered cuts for the impurity criteria (compiled with numba).

InfoGain and LSD Mondrian (LeFevre, DeWitt, Ramakrishnan, KDD 2006, Sections 3.1 and 3.2) and
:class:`~sqlanon.model.criteria.Targets` score every allowable cut of every candidate (partition,
QI) pair: a cut's left child holds the rows up to its code, its right child the rest, and the
cut is ranked by the impurity the two children leave. In numpy that is some forty passes over
the cuts, each with a fresh temporary (left and right statistics, their terms, the sums, the
normalized key, a segmented minimum per key). Here one pass per target adds the children's
impurity of every cut into one buffer (:func:`add_entropy`, :func:`add_squared_error`) and one
more pass scores the cuts and keeps each pair's best (:func:`best_cuts`).

Every value is the one :mod:`sqlanon.model.criteria` computes in numpy, bit for bit: the same
operations in the same order, without floating-point reassociation or contraction (numba's
default, without ``fastmath``), and no logarithm of numba's own — ``c ln c`` comes from the
table :func:`~sqlanon.model.summaries.count_moments` reads (numpy's logarithm, which returns
the same value for the same argument wherever it sits in an array; numba's libm differs from it
in the last bit for a few hundred of the first 2^23 integers). So the keys, gains and the chosen
cuts are those of :func:`sqlanon.mondrian.split._score` and :func:`~sqlanon.mondrian.split._best`.

The left statistics of a cut are running sums less their run's offset, as
:class:`sqlanon.model.stats.Running` reads them (``total[g] - before[run[g]]``), the right ones
the pair's totals less the left's (:meth:`~sqlanon.model.stats.Running.right`). The loops release
the GIL, so disjoint runs of pairs are scored on several threads at once.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

#: ``ln 2``: weighted entropies are in bits.
LN2 = math.log(2)


@njit(nogil=True, cache=True, inline="always")
def entropy_bits(n: float, x: float, table: np.ndarray) -> float:
    """``|E| H(C|E) = (n ln n - x) / ln 2`` in bits of a class of ``n`` rows (a float holding
    an integer) with ``x = sum_c c ln c`` (:func:`~sqlanon.model.criteria.weighted_entropy`)."""
    return (table[np.int64(n)] - x) / LN2


@njit(nogil=True, cache=True, inline="always")
def class_entropy(counts: np.ndarray, table: np.ndarray) -> float:
    """``|E| H(C|E)`` in bits of one class's counts per value, both sums taken value by value
    (the order of :func:`~sqlanon.model.summaries.count_moments`)."""
    n = 0.0
    x = 0.0
    for j in range(len(counts)):
        n += counts[j]
        x += table[counts[j]]
    return entropy_bits(n, x, table)


@njit(nogil=True, cache=True, inline="always")
def children_entropy(left: np.ndarray, whole: np.ndarray, table: np.ndarray) -> float:
    """``|L| H(C|L) + |R| H(C|R)`` (bits) of a cut whose left child holds ``left`` rows per
    value of a label and its partition ``whole`` (the right child the difference)."""
    n_left = 0.0
    x_left = 0.0
    n_right = 0.0
    x_right = 0.0
    for j in range(len(whole)):
        c_left = left[j]
        c_right = whole[j] - c_left
        n_left += c_left
        x_left += table[c_left]
        n_right += c_right
        x_right += table[c_right]
    return entropy_bits(n_left, x_left, table) + entropy_bits(n_right, x_right, table)


@njit(nogil=True, cache=True, inline="always")
def add_term(acc: float, term: float, partition: float, normalize: bool) -> float:
    """``acc`` plus one target's children impurity ``term`` — divided by the partition's own
    impurity ``partition`` when ``normalize`` (0 where that is not positive: :meth:`Targets.combine
    <sqlanon.model.criteria.Targets.combine>`); targets are added left to right."""
    if normalize:
        return acc + (term / partition if partition > 0 else 0.0)
    return acc + term


@njit(nogil=True, cache=True)
def add_entropy(acc: np.ndarray, cand: np.ndarray, pair: np.ndarray, run: np.ndarray, total: np.ndarray,
                before: np.ndarray, whole: np.ndarray, table: np.ndarray, partition: np.ndarray,
                normalize: bool) -> None:
    """Add one class label's ``|L| H(C|L) + |R| H(C|R)`` (bits, :func:`children_entropy`) to
    ``acc[i]`` for every cut ``cand[i]`` (``pair[i]`` its pair), normalized by the partition's
    ``partition[pair]`` when ``normalize`` (:func:`add_term`).

    ``total`` (G, C) the running counts per value over all groups, ``before`` (runs, C) their
    value before each run, ``whole`` (pairs, C) the pairs' counts; ``table[c] = c ln c`` covers
    every count.
    """
    left = np.empty(total.shape[1], dtype=total.dtype)
    for i in range(len(cand)):
        g = cand[i]
        r = run[g]
        p = pair[i]
        for j in range(len(left)):
            left[j] = total[g, j] - before[r, j]
        acc[i] = add_term(acc[i], children_entropy(left, whole[p], table), partition[p], normalize)


@njit(nogil=True, cache=True, inline="always")
def _squared_error(n, s1, s2) -> float:
    """``S2 - S1^2 / n`` of centered moments, clipped at 0 (0 when n = 0), in the operations
    of :func:`~sqlanon.model.summaries.variance` times ``n``."""
    count = np.float64(n)
    d = max(count, 1.0)
    v = np.float64(s1)
    v = v * v
    v = v / d
    v = np.float64(s2) - v
    v = v / d
    if count <= 0.0:
        v = 0.0
    if v < 0.0:  # np.maximum(v, 0.0): NaN stays NaN
        v = 0.0
    return v * count


@njit(nogil=True, cache=True, inline="always")
def children_squared_error(n_left, s_left, q_left, n, s, q) -> float:
    """One numeric target's squared error around each child's mean, left plus right, of a cut
    whose left child has the moments ``(n_left, s_left, q_left)`` of its partition's ``(n, s, q)``."""
    return _squared_error(n_left, s_left, q_left) + _squared_error(n - n_left, s - s_left, q - q_left)


@njit(nogil=True, cache=True)
def add_squared_error(acc: np.ndarray, cand: np.ndarray, pair: np.ndarray, run: np.ndarray, total: np.ndarray,
                      before: np.ndarray, whole: np.ndarray, partition: np.ndarray, normalize: bool) -> None:
    """Add one numeric target's :func:`children_squared_error` to ``acc[i]`` for every cut
    ``cand[i]`` (normalized as in :func:`add_entropy`).

    ``total`` (G, 3) the running moments ``[n, sum, sum of squares]`` over all groups (int64 for
    exactly summed columns, else float64), ``before`` and ``whole`` as in :func:`add_entropy`.
    """
    for i in range(len(cand)):
        g = cand[i]
        r = run[g]
        p = pair[i]
        e = children_squared_error(total[g, 0] - before[r, 0], total[g, 1] - before[r, 1], total[g, 2] - before[r, 2],
                                   whole[p, 0], whole[p, 1], whole[p, 2])
        acc[i] = add_term(acc[i], e, partition[p], normalize)


@njit(nogil=True, cache=True, inline="always")
def cut_key(impurity: float, base: float, tie: float) -> float:
    """A cut's key: its impurity as a fraction of the partition's ``base`` (1 where that is not
    positive), rounded to ``tie`` (:func:`sqlanon.mondrian.split._score`)."""
    scale = base if base > 0 else 1.0
    return np.rint(impurity / scale / tie) * tie


@njit(nogil=True, cache=True, inline="always")
def cut_gain(impurity: float, base: float, n) -> float:
    """The impurity a cut removes per row of its partition of ``n`` rows."""
    return (base - impurity) / np.float64(max(n, 1))


@njit(nogil=True, cache=True)
def best_cuts(impurity: np.ndarray, cand: np.ndarray, pair: np.ndarray, n_left: np.ndarray, n: np.ndarray,
              base: np.ndarray, tie: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per pair (``pair`` sorted), the cut the criterion ranks first, as an index into ``cand``,
    with its key and gain (pair order).

    A cut's key is its impurity as a fraction of the partition's, rounded to ``tie``
    (``rint(impurity / scale / tie) * tie``, ``scale`` the partition's impurity ``base`` where
    positive, else 1); its gain ``(base - impurity) / max(n, 1)``; the first is the smallest
    key, then the smallest ``|2 L - n|``, then the lowest cut (the first in ``cand``).
    """
    runs = 0
    for i in range(len(pair)):
        if i == 0 or pair[i] != pair[i - 1]:
            runs += 1
    best = np.empty(runs, dtype=np.int64)
    key = np.empty(runs)
    gain = np.empty(runs)
    r = -1
    best_key = 0.0
    best_balance = 0
    for i in range(len(pair)):
        p = pair[i]
        b = base[p]
        k = cut_key(impurity[i], b, tie)
        balance = abs(2 * n_left[cand[i]] - n[p])
        if i == 0 or p != pair[i - 1]:
            r += 1
        elif not (k < best_key or (k == best_key and balance < best_balance)):
            continue
        best[r] = i
        best_key = k
        best_balance = balance
        key[r] = k
        gain[r] = cut_gain(impurity[i], b, n[p])
    return best, key, gain
