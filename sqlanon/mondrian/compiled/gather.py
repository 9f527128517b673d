"""Gathers of a batch's columns in compiled loops, without the GIL: the workload finish puts a
batch's codes, label slots and targets in another order (:mod:`~sqlanon.mondrian.compiled.workload_finish`)
and its histogram phase gathers the few rows a split cuts off (:mod:`~sqlanon.mondrian.compiled.histograms`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

from ...model.parallel import run_all


@njit(nogil=True, cache=True)
def take(column, order):
    """``column[order]`` (without the GIL)."""
    return take_into(column, order, np.empty(len(order), dtype=column.dtype))


@njit(nogil=True, cache=True)
def take_into(column, order, out):
    """``out[:] = column[order]``; returns ``out``."""
    for k in range(len(order)):
        out[k] = column[order[k]]
    return out


def gathered(arrays: Sequence[np.ndarray], order: np.ndarray, threads: int) -> tuple[np.ndarray, ...]:
    """``x[:, order]`` for each 2-D ``x`` of ``arrays``, their rows gathered on the threads
    (numpy's ``take`` along the rows of a 10M-row batch's codes, label slots and targets took
    2.5 s, these gathers 0.7 s on two threads)."""
    out = tuple(np.empty((x.shape[0], len(order)), dtype=x.dtype) for x in arrays)
    rows = [(x[u], o[u]) for x, o in zip(arrays, out) for u in range(x.shape[0])]
    run_all(lambda r: take_into(r[0], order, r[1]), rows, threads)
    return out
