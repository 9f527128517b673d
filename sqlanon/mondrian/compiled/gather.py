"""Gathers of a batch's columns in compiled loops, without the GIL: the workload finish puts a
batch's codes, label slots and targets in another order (:mod:`~sqlanon.mondrian.compiled.workload_finish`)
and its histogram phase gathers the few rows a split cuts off (:mod:`~sqlanon.mondrian.compiled.histograms`).

A gather moves cells, whatever they mean: a column is gathered as cells of its width (int32
codes and label slots, int64 or float64 targets seen as int64), so one compiled loop per width
serves every dtype — one specialization each, not one per dtype a request happens to bring.
"""

from __future__ import annotations

import queue
from collections.abc import Sequence

import numpy as np
from numba import njit

from ...model.parallel import run_all


@njit(nogil=True, cache=True)
def take(column, order):
    """``column[order]`` of an int64 column (without the GIL)."""
    out = np.empty(len(order), dtype=column.dtype)
    for k in range(len(order)):
        out[k] = column[order[k]]
    return out


def take_into(column: np.ndarray, order: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out[:] = column[order]`` (contiguous 1-D arrays of one dtype, ``order`` int64); returns
    ``out``. Cells of 4 and 8 bytes (the finish's codes, label slots and targets) in a compiled
    loop per width, others by numpy's ``take``."""
    if column.dtype.itemsize == 4:
        _take4(column.view(np.int32), order, out.view(np.int32))
    elif column.dtype.itemsize == 8:
        _take8(column.view(np.int64), order, out.view(np.int64))
    else:
        np.take(column, order, out=out)
    return out


@njit(nogil=True, cache=True)
def _take4(column, order, out):
    """``out[:] = column[order]`` of 4-byte cells."""
    for k in range(len(order)):
        out[k] = column[order[k]]


@njit(nogil=True, cache=True)
def _take8(column, order, out):
    """``out[:] = column[order]`` of 8-byte cells (the loop of :func:`_take4`: a kernel per width,
    each compiled for one signature)."""
    for k in range(len(order)):
        out[k] = column[order[k]]


def gathered(arrays: Sequence[np.ndarray], order: np.ndarray, threads: int,
             into: Sequence[np.ndarray] | None = None) -> tuple[np.ndarray, ...]:
    """``x[:, order]`` for each 2-D ``x`` of ``arrays``, their rows gathered on the threads
    (numpy's ``take`` along the rows of a 10M-row batch's codes, label slots and targets took
    2.5 s, these gathers 0.7 s on two threads). ``into``: contiguous arrays of at least as many
    cells as their ``x`` gathers to gather into (the result is a contiguous view of their first
    cells: ``o[:, :len(order)]`` would not be, and a kernel given one compiles a second
    specialization beside the one for contiguous arrays), else new ones."""
    if into is None:
        out = tuple(np.empty((x.shape[0], len(order)), dtype=x.dtype) for x in arrays)
    else:
        out = tuple(o.reshape(-1)[:x.shape[0] * len(order)].reshape(x.shape[0], len(order))
                    for x, o in zip(arrays, into))
    rows = [(x[u], o[u]) for x, o in zip(arrays, out) for u in range(x.shape[0])]
    run_all(lambda r: take_into(r[0], order, r[1]), rows, threads)
    return out


def permuted(rows: Sequence[np.ndarray], order: np.ndarray, threads: int,
             spares: list[np.ndarray] | None = None) -> list[np.ndarray]:
    """Each of ``rows`` (1-D contiguous arrays of ``len(order)`` items, ``order`` a permutation
    of their positions) made ``row[order]`` over itself, on the threads: gathered into a spare
    of the thread's, then copied back. A copy in order costs a fraction of the first touch of
    the pages of a new array (at 10M rows, a new 360 MB of codes is 90K page faults, 0.3 s of
    the kernel's zeroing). ``spares``: byte buffers of a previous call to use again (at most
    one a thread, each of ``len(order)`` 8-byte items). Returns the spares, for a next call."""
    if spares is None:
        spares = [np.empty(8 * len(order), np.uint8) for _ in range(max(1, min(threads, len(rows))))]
    free: queue.SimpleQueue[np.ndarray] = queue.SimpleQueue()
    for x in spares:
        free.put(x)

    def one(row: np.ndarray) -> None:
        spare = free.get()
        out = spare[:row.nbytes].view(row.dtype)
        take_into(row, order, out)
        row[:] = out
        free.put(spare)

    run_all(one, list(rows), min(threads, len(spares)))
    return spares
