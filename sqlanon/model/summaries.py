"""Summaries of count and moment matrices: Shannon entropy and variance, per row.

Shared by the privacy models (entropy l-diversity, variance diversity) and the criteria
(InfoGain's class entropy, regression's squared error). A row is a candidate class; every row is
computed by the same operations whatever the other rows, so how candidates were batched cannot
change a value.
"""

from __future__ import annotations

import numpy as np


def entropy(counts: np.ndarray) -> np.ndarray:
    """Shannon entropy in nats of each row of a count matrix (0 for an empty row):
    ``H = ln n - (1/n) sum_c c ln c``, which needs one logarithm per count and no divisions."""
    n, sum_xlogx = count_moments(counts)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n > 0, np.log(np.maximum(n, 1.0)) - sum_xlogx / np.maximum(n, 1.0), 0.0)


def count_moments(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of a (K, C) count matrix: ``n = sum_c c`` and ``sum_c c ln c`` (as floats).

    Column by column: for the few values a class column has, numpy's reduction along a short
    axis costs far more per row than C vector additions (and the count matrices are kept
    column-major, so a column is contiguous). ``c ln c`` of integer counts comes from a table."""
    n = np.zeros(len(counts))
    acc = np.zeros(len(counts))
    table = xlogx_table(int(counts.max(initial=0))) if counts.dtype.kind in "iu" else None
    for j in range(counts.shape[1]):
        column = counts[:, j]
        n += column
        if table is not None:
            acc += np.take(table, column)
        else:
            c = column.astype(np.float64)
            acc += c * np.log(np.maximum(c, 1.0))  # 0 ln 0 = 1 ln 1 = 0
    return n, acc


_XLOGX = np.zeros(1)
#: Counts the ``c ln c`` table serves (256 MiB at most): beyond, ``c ln c`` is computed per count.
XLOGX_ROWS = 2**25


def xlogx_table(largest: int) -> np.ndarray | None:
    """``c ln c`` for c = 0..largest (grown on demand; None from :data:`XLOGX_ROWS` counts on)."""
    global _XLOGX
    if largest >= XLOGX_ROWS:
        return None
    if largest >= len(_XLOGX):
        c = np.arange(min(max(largest + 1, 2 * len(_XLOGX)), XLOGX_ROWS), dtype=np.float64)
        _XLOGX = c * np.log(np.maximum(c, 1.0))
    return _XLOGX


def variance(moments: np.ndarray) -> np.ndarray:
    """Population variance from centered moments ``[n, sum, sum of squares]`` (0 when n = 0):
    ``(S2 - S1^2 / n) / n``, clipped at 0 against rounding."""
    n = moments[:, 0].astype(np.float64)
    d = np.maximum(n, 1.0)
    # In place and without np.where (several times slower): the same operations on every class
    # with rows, then 0 for the empty ones (whose sums may hold rounding residue).
    var = moments[:, 1].astype(np.float64)
    var *= var
    var /= d
    np.subtract(moments[:, 2], var, out=var)
    var /= d
    var[n <= 0] = 0.0
    return np.maximum(var, 0.0, out=var)


def squared_error(moments: np.ndarray) -> np.ndarray:
    """Sum of squared deviations from the class mean, ``S2 - S1^2 / n`` (0 when n = 0)."""
    return variance(moments) * moments[:, 0].astype(np.float64)
