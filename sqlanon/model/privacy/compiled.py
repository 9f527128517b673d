"""The privacy models' compiled faces, judged in compiled loops (the depth-first finish,
:mod:`sqlanon.mondrian.compiled.median_finish`).

A model's :meth:`~sqlanon.model.privacy.base.Constraint.face` states its verdict as a
:class:`~sqlanon.model.privacy.base.Face`; :func:`table` packs a request's faces into arrays,
and :func:`passes` judges one class from its value counts and moments with them. Each kind
repeats its model's numpy judgement (``allowed``) operation by operation, in float64 and in the
same order, so the two verdicts are the same bit for bit (``tests/model/test_privacy_faces.py`` checks
them against each other on random classes, and the finish's identity tests through the whole
partition):

* distinct l-diversity: values with a count > 0, at least ``l``;
* entropy l-diversity: ``ln n - (sum c ln c) / n >= ln l - TOLERANCE``, ``c ln c`` and ``ln n``
  read from tables numpy computed (:func:`~sqlanon.model.summaries.xlogx_table`, :func:`log_table`),
  the counts and ``n`` summed as floats value by value;
* recursive (c, l)-diversity: the counts sorted descending, ``x_1 < c (x_l + ... + x_m)``;
* variance diversity (integer moments only): ``((S2 - S1^2 / n) / n) >= v (1 - TOLERANCE)``;
* t-closeness, equal and ordered ground distance: the EMD of :func:`~sqlanon.model.privacy.closeness.emd`;
* delta-disclosure and beta-likeness: ``r = (c N) / (n Q)`` per present value
  (:func:`~sqlanon.model.privacy.base.ratio`).

An empty class passes every model (as in numpy); the finish never judges one.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

from ..summaries import xlogx_table
from .base import DELTA, DISTINCT, ENTROPY, EQUAL_EMD, ORDERED_EMD, RECURSIVE, VARIANCE, Face


def log_table(largest: int) -> np.ndarray:
    """``ln max(n, 1)`` for n = 0..largest, computed by numpy as :func:`~sqlanon.model.summaries.entropy`
    computes ``ln n`` (one elementwise ``np.log`` over float64 integers)."""
    return np.log(np.maximum(np.arange(largest + 1, dtype=np.float64), 1.0))


def table(faces: Sequence[Face], cols: Sequence[int], class_sizes: Sequence[int],
          largest: int) -> tuple[np.ndarray, ...]:
    """The faces as the arrays :func:`passes` takes: ``(kinds, cols, ps, a, b, offs, sizes,
    xlogx, logn)``. Counts faces read class column ``cols[f]`` (its value counts at
    ``offs[cols[f]]``, ``sizes[cols[f]]`` of them), numeric faces moment row ``cols[f]``; the
    caller numbers the columns (``Face.column`` is only a name). ``largest``: the largest class
    judged (the entropy tables' length)."""
    F = len(faces)
    V = max([1, *class_sizes])
    kinds = np.array([f.kind for f in faces], dtype=np.int64)
    columns = np.array(list(cols), dtype=np.int64)
    ps = np.zeros((F, 3), dtype=np.float64)
    a = np.zeros((F, V), dtype=np.float64)
    b = np.zeros((F, V), dtype=np.float64)
    for i, f in enumerate(faces):
        ps[i, :len(f.p)] = f.p
        if f.a is not None:
            a[i, :len(f.a)] = f.a
        if f.b is not None:
            b[i, :len(f.b)] = f.b
    sizes = np.array(list(class_sizes), dtype=np.int64)
    offs = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    entropy = any(f.kind == ENTROPY for f in faces)
    xlogx = xlogx_table(largest) if entropy else np.zeros(1)
    assert xlogx is not None, "the c ln c table cannot serve classes this large"
    logn = log_table(largest) if entropy else np.zeros(1)
    return kinds, columns, ps, a, b, offs, sizes, xlogx, logn


@njit(nogil=True, cache=True, error_model="numpy")
def passes(kinds, cols, ps, a, b, offs, sizes, xlogx, logn, cnt, mom, buf):
    """Whether the class with value counts ``cnt`` (all class columns, at ``offs``) and integer
    moments ``mom`` ((T, 3): n, sum, sum of squares) satisfies every face. ``buf``: scratch of
    at least the largest class column's size."""
    for f in range(len(kinds)):
        kind = kinds[f]
        col = cols[f]
        if kind == VARIANCE:
            k = mom[col, 0]
            d = max(float(k), 1.0)
            var = float(mom[col, 1])
            var *= var
            var /= d
            var = float(mom[col, 2]) - var
            var /= d
            if k <= 0:
                var = 0.0
            var = max(var, 0.0)
            if not var >= ps[f, 0]:
                return False
            continue
        o = offs[col]
        V = sizes[col]
        n = 0.0
        whole = 0
        for j in range(V):
            n += cnt[o + j]
            whole += cnt[o + j]
        if whole == 0:
            continue
        if kind == DISTINCT:
            distinct = 0
            for j in range(V):
                if cnt[o + j] > 0:
                    distinct += 1
            if distinct < ps[f, 0]:
                return False
        elif kind == ENTROPY:
            acc = 0.0
            for j in range(V):
                acc += xlogx[cnt[o + j]]
            h = logn[whole] - acc / max(n, 1.0)
            if not h >= ps[f, 0]:
                return False
        elif kind == RECURSIVE:
            for j in range(V):
                buf[j] = cnt[o + j]
            x = buf[:V]
            x.sort()  # ascending: x_1 is the last
            l = int(ps[f, 1])
            tail = 0
            for j in range(V - l + 1):  # x_l + ... + x_m: the V - l + 1 smallest
                tail += x[j]
            if not float(x[V - 1]) < ps[f, 0] * float(tail):
                return False
        elif kind == EQUAL_EMD or kind == ORDERED_EMD:
            out = 0.0
            running = 0.0
            for j in range(V):
                p = float(cnt[o + j]) / max(n, 1.0)
                if kind == EQUAL_EMD:
                    out += abs(p - a[f, j])
                else:
                    running += p - a[f, j]
                    out += abs(running)
            if kind == EQUAL_EMD:
                out *= 0.5
            else:
                out /= max(V - 1, 1)
            if not out <= ps[f, 0]:
                return False
        else:  # DELTA, BETA (the last kind): r = (c N) / (n Q) of every present value
            total = ps[f, 2] if kind == DELTA else ps[f, 0]
            for j in range(V):
                c = cnt[o + j]
                if c > 0:
                    r = (float(c) * total) / (n * a[f, j])
                    if kind == DELTA:
                        if not (r > ps[f, 0] and r < ps[f, 1]):
                            return False
                    elif not r - 1.0 <= b[f, j]:
                        return False
    return True
