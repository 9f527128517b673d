"""Fused loops for the per-group arithmetic of the in-memory levels (compiled with numba).

Regression and InfoGain judge every cut of every candidate QI, so their level cost is a few
array operations per frequency group and per row. In numpy each operation is a pass over
memory with a fresh temporary; these loops do the same arithmetic in one pass each (the scoring
of cuts is in :mod:`sqlanon.model.score_kernels`). They release the GIL (``nogil``), so the
threads of :mod:`sqlanon.model.parallel` run them side by side, and they are compiled once and cached
on disk (``cache``).

Each loop does the arithmetic of the numpy expressions it replaces, in a fixed order and
without floating-point reassociation (numba's default, without ``fastmath``). Sums run over
rows in the order given (numpy's ``add.reduceat`` may pair them up differently); integer sums
are exact either way, and split decisions do not hang on the last bits of a float sum (see
:data:`sqlanon.mondrian.split.TIE`).
"""

from __future__ import annotations

import numpy as np
from numba import njit


def _set_up_numba() -> None:
    """Set up numba's typing and target contexts now, at import.

    numba does it lazily, on the first compiled call of the process, and it is mostly numba's
    own imports: about 0.33 s of Python holding the GIL (measured on the CI machine). Done inside
    the first ``anonymize()``, it competed with the engine's encoding statements for the GIL (a
    1M-row run took 1.9 s instead of 1.6 s). Here it is part of importing the kernels, like the
    imports of pandas and numba themselves: the first use of a name that needs them
    (``sqlanon.anonymize``; ``import sqlanon`` alone imports neither), before the run, whose
    first load of a cached loop then takes a few milliseconds. A numba without these internals
    only loses the head start."""
    try:
        from numba.core import registry
    except ImportError:  # pragma: no cover - numba moved its internals
        return
    target = getattr(registry, "cpu_target", None)
    for context in (getattr(target, "typing_context", None), getattr(target, "target_context", None)):
        if context is not None and hasattr(context, "refresh"):
            context.refresh()


_set_up_numba()


@njit(nogil=True, cache=True)
def moments_of_runs(values: np.ndarray, order: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """``[n, sum, sum of squares]`` of ``values[order[i]]`` over the runs of positions that
    begin at ``starts`` (the last run ends at ``len(order)``); NaN is NULL (not counted).

    Integer values are summed in int64 (exact), floats in float64, in row order.
    """
    groups = len(starts)
    out = np.zeros((groups, 3), dtype=values.dtype)
    end = len(order)
    for g in range(groups - 1, -1, -1):
        start = starts[g]
        n = 0
        s1 = out[g, 1]
        s2 = out[g, 2]
        for i in range(start, end):
            v = values[order[i]]
            if v == v:  # not NaN
                n += 1
                s1 += v
                s2 += v * v
        out[g, 0] = n
        out[g, 1] = s1
        out[g, 2] = s2
        end = start
    return out


@njit(nogil=True, cache=True)
def moments_of_groups(values: np.ndarray, rows: np.ndarray, bins: np.ndarray, group_of_bin: np.ndarray,
                      groups: int) -> np.ndarray:
    """``[n, sum, sum of squares]`` of ``values[rows[i]]`` per group ``group_of_bin[bins[i]]``
    (NaN is NULL), in row order — the binned twin of :func:`moments_of_runs`."""
    out = np.zeros((groups, 3), dtype=values.dtype)
    for i in range(len(rows)):
        v = values[rows[i]]
        if v == v:
            g = group_of_bin[bins[i]]
            out[g, 0] += 1
            out[g, 1] += v
            out[g, 2] += v * v
    return out


@njit(nogil=True, cache=True)
def counts_of_runs(codes: np.ndarray, order: np.ndarray, starts: np.ndarray, size: int) -> np.ndarray:
    """Rows per value code of ``codes[order[i]]`` over the runs beginning at ``starts``, as a
    (size, runs) array (value-major: criteria and constraints read one value at a time)."""
    groups = len(starts)
    out = np.zeros((size, groups), dtype=np.int64)
    end = len(order)
    for g in range(groups - 1, -1, -1):
        for i in range(starts[g], end):
            out[codes[order[i]], g] += 1
        end = starts[g]
    return out


@njit(nogil=True, cache=True)
def counts_of_groups(codes: np.ndarray, rows: np.ndarray, bins: np.ndarray, group_of_bin: np.ndarray, groups: int,
                     size: int) -> np.ndarray:
    """Rows per value code of ``codes[rows[i]]`` per group ``group_of_bin[bins[i]]``, as a
    (size, groups) array."""
    out = np.zeros((size, groups), dtype=np.int64)
    for i in range(len(rows)):
        out[codes[rows[i]], group_of_bin[bins[i]]] += 1
    return out


@njit(nogil=True, cache=True)
def codes_of_pairs(codes: np.ndarray, attr: np.ndarray, local: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``codes[attr[local[i]], rows[i]]``: each row's code on its pair's QI (``codes`` is (d, M));
    also the gather of attribute lists (a (d, M) array of rows)."""
    out = np.empty(len(rows), dtype=codes.dtype)
    for i in range(len(rows)):
        out[i] = codes[attr[local[i]], rows[i]]
    return out


@njit(nogil=True, cache=True)
def follow_list(order: np.ndarray, dest: np.ndarray, starts_new: np.ndarray, out: np.ndarray) -> None:
    """Carry one attribute list through a level's splits (SLIQ's list split, Mehta, Agrawal &
    Rissanen, EDBT 1996).

    ``order`` holds the batch rows partition by partition, each partition's sorted by the QI's
    code; ``dest[r]`` is ``(p << 32) | q`` for a row ``r`` that stays — ``q`` its position in the
    next level's batch, ``p`` its partition there, whose first position is ``starts_new[p]`` —
    and -1 for a row that leaves (one lookup per row, not two: the lookups are the cost). One
    pass in list order appends every row that stays to its child's run of ``out``, so each
    child's run comes out sorted by the code too — children are subsets of their parent — and
    no sort is needed at any level after the first (about 10x cheaper than sorting).
    """
    cursor = starts_new.copy()
    for e in range(len(order)):
        v = dest[order[e]]
        if v >= 0:
            p = v >> 32
            out[cursor[p]] = v & 0xFFFFFFFF
            cursor[p] += 1


@njit(nogil=True, cache=True)
def bins_of_rows(local: np.ndarray, values: np.ndarray, first_bin: np.ndarray, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's bin ``first_bin[local[i]] + values[i]`` and the rows per bin."""
    b = np.empty(len(local), dtype=np.int64)
    per_bin = np.zeros(bins, dtype=np.int64)
    for i in range(len(local)):
        k = first_bin[local[i]] + values[i]
        b[i] = k
        per_bin[k] += 1
    return b, per_bin
