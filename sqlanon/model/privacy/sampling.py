"""What the Rothko-S hypothesis tests of the privacy models share (LeFevre & DeWitt, TR 1590,
Section 3.1; :mod:`sqlanon.mondrian.hypotheses` applies them).

A test sees a sample child of ``n_i`` rows of a simple random sample of ``n`` rows drawn
without replacement from a population partition of ``N`` rows, and rejects the null hypothesis
"the population child breaks the requirement" at level ``alpha`` (already Bonferroni-divided
over a split's children). A degenerate variance (0) rejects when the estimate is on the right
side, and an empty sample child passes (an empty class is no class).
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np


def z_upper(alpha: float) -> float:
    """``z_alpha``: the standard normal point with area ``alpha`` to its right."""
    return NormalDist().inv_cdf(1.0 - alpha)


def chi2_upper(alpha: float, df: np.ndarray) -> np.ndarray:
    """``chi^2_alpha(df)``: the point with area ``alpha`` to its right under chi-square with ``df``
    degrees of freedom (Wilson–Hilferty: ``df (1 - 2/(9 df) + z_alpha sqrt(2/(9 df)))^3``); inf
    where ``df < 1`` (no test possible)."""
    df = np.asarray(df, dtype=np.float64)
    z = z_upper(alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = 2.0 / (9.0 * df)
        out = df * np.maximum(1.0 - a + z * np.sqrt(a), 0.0) ** 3
    return np.where(df >= 1, out, np.inf)


def fpc(population: int, sample: int) -> float:
    """The finite-population factor ``(N - n) / N`` of the proportion tests within a child."""
    return (population - sample) / population


def standardized(num: np.ndarray, var: np.ndarray, ni: np.ndarray) -> np.ndarray:
    """``num / sqrt(var)`` per class: +inf where the variance is 0 and ``num`` positive, -inf
    where it is 0 otherwise, and -inf where the sample child has fewer than 2 rows."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = num / np.sqrt(var)
    out = np.where(var > 0, out, np.where(num > 0, np.inf, -np.inf))
    return np.where(ni >= 2, out, -np.inf)
