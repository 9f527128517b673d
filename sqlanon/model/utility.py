"""Utility metrics of a single-dimensional release, from its equivalence classes (pure numpy).

The searches of :mod:`sqlanon.singledim` (the full-domain lattice, the genetic algorithm) score
a candidate from the table of its classes: rows ``n`` per class, rows per target label ``y``, and
per QI the cell loss of each class's generalized value. A class smaller than ``k`` is
*suppressed*: its rows are published with every QI fully generalized and no class
(:mod:`sqlanon.publish.suppression`). ``N`` rows in all, ``S`` of them suppressed.

* ``LM`` (Iyengar, *Transforming Data to Satisfy Privacy Constraints*, KDD 2002, Section 3.1):
  ``sum_q (sum_{E kept} |E| loss_E(q) + S) / N`` -- a suppressed cell loses 1 (the root);
  ``loss`` of a hierarchy node ``(M_P - 1) / (M - 1)``, of an interval its width over the span.
* ``CM`` (Iyengar, Section 3.2): ``(sum_{E kept} (|E| - majority_E) + S) / N``.
* ``DM`` (ARX's non-monotonic discernibility; Bayardo & Agrawal, ICDE 2005):
  ``sum_{E kept} |E|^2 + N S``.
* ``AECS`` (ARX: average equivalence class size, the suppressed rows forming one class):
  ``N / (classes kept + [S > 0])``.
* ``Loss`` (ARX's ``MetricMDNMLoss``): per QI ``(sum_{E kept} |E| share_E(q) + S - N/|D|) /
  (N - N/|D|)`` with ``share`` the fraction of the hierarchy's leaves under the class's node --
  the same number as ``LM``'s per-QI term for a hierarchy; aggregated as ARX's default, the
  geometric mean ``prod_q (1 + loss_q)^(1/d) - 1``.
* ``Precision`` (Sweeney's Prec as ARX's ``MetricMDNMPrecision``): ``mean_q ((N - S) l_q / h_q +
  S) / N`` for a full-domain node (level ``l_q`` of height ``h_q``).
* ``Entropy`` (non-uniform entropy, ARX's ``MetricMDNUNMEntropy``; Gionis & Tassa, 2009):
  ``sum_q [sum_v c_v log2(c_{g(v)} / c_v) + sum_v s_v log2(S / s_v)]`` in bits, ``c_v`` the rows
  of original value ``v``, ``c_{g(v)}`` the rows of its generalized value (suppressed rows
  included), ``s_v`` the suppressed rows of *generalized* value ``v`` (as ARX computes it: the
  suppressed classes' values at the node).

Each has a *bound* (:func:`bound`; mostly the same figure with nothing suppressed), which never
exceeds the metric of the candidate or of any coarser one and never decreases when a QI is
generalized further (classes only merge) -- what makes pruning the lattice sound
(:mod:`sqlanon.singledim.lattice`). ARX
reports per-QI values rounded down to 10 decimals (``Loss``, ``Entropy``); these functions do
not round.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Metrics every search knows, and those only a full-domain node has (levels).
METRICS = ("LM", "CM", "DM", "AECS", "Loss", "Precision", "Entropy")


@dataclass(frozen=True)
class Classes:
    """The equivalence classes of one candidate.

    Attributes:
        n: (C,) rows per class.
        y: (C, m) rows per target label (m = 1 without a target).
        loss: (C, d) cell loss of each class's generalized value per QI (0 exact .. 1 root).
    """

    n: np.ndarray
    y: np.ndarray
    loss: np.ndarray


def suppressed_rows(n: np.ndarray, k: int) -> int:
    """Rows in classes smaller than ``k``."""
    return int(n[n < k].sum())


def lm(c: Classes, kept: np.ndarray) -> float:
    """Iyengar's LM (module docstring); ``kept``: the classes not suppressed."""
    N = float(c.n.sum())
    S = N - float(c.n[kept].sum())
    return float(((c.n[kept, None] * c.loss[kept]).sum(axis=0) + S).sum() / N)


def loss_per_qi(c: Classes, kept: np.ndarray) -> np.ndarray:
    """Per QI ``(sum_{E kept} |E| loss_E(q) + S) / N``: NCP, ARX's normalized Loss per QI."""
    N = float(c.n.sum())
    S = N - float(c.n[kept].sum())
    return ((c.n[kept, None] * c.loss[kept]).sum(axis=0) + S) / N


def arx_loss(c: Classes, kept: np.ndarray) -> float:
    """ARX's Loss with its default aggregate: ``prod_q (1 + loss_q)^(1/d) - 1``."""
    per = loss_per_qi(c, kept)
    return float(np.exp(np.log1p(per).mean()) - 1.0) if len(per) else 0.0


def cm(c: Classes, kept: np.ndarray) -> float:
    """Iyengar's CM (module docstring)."""
    N = float(c.n.sum())
    S = N - float(c.n[kept].sum())
    minority = (c.n[kept] - c.y[kept].max(axis=1)).sum()
    return float((minority + S) / N)


def dm(c: Classes, kept: np.ndarray) -> float:
    """ARX's non-monotonic discernibility (module docstring)."""
    N = float(c.n.sum())
    S = N - float(c.n[kept].sum())
    return float((c.n[kept].astype(np.float64) ** 2).sum() + N * S)


def aecs(c: Classes, kept: np.ndarray) -> float:
    """ARX's average equivalence class size (module docstring)."""
    N = float(c.n.sum())
    S = N - float(c.n[kept].sum())
    return N / (int(kept.sum()) + (1 if S > 0 else 0))


def precision(n_total: int, suppressed: int, levels: np.ndarray, heights: np.ndarray) -> float:
    """ARX's non-monotonic precision of a full-domain node (module docstring)."""
    share = np.where(heights > 0, levels / np.maximum(heights, 1), 0.0)
    N = float(n_total)
    return float((((N - suppressed) * share + suppressed) / N).mean())


def generalization_entropy(counts: np.ndarray, generalized: np.ndarray) -> float:
    """``sum_v c_v log2(c_{g(v)} / c_v)`` over the original values ``v`` with rows: ``counts``
    (V,) rows per original value, ``generalized`` (V,) the rows of each one's generalized value."""
    present = counts > 0
    a = counts[present].astype(np.float64)
    return float((a * np.log2(generalized[present] / a)).sum())


def suppression_entropy(counts: np.ndarray) -> float:
    """``sum_v s_v log2(S / s_v)``: ``counts`` the suppressed rows per original value."""
    s = counts[counts > 0].astype(np.float64)
    return float((s * np.log2(s.sum() / s)).sum()) if len(s) else 0.0


def value(metric: str, c: Classes, k: int, kept: np.ndarray | None = None) -> float:
    """LM, CM, DM, AECS or Loss of the classes with those below ``k`` suppressed (or those not
    ``kept``, when given: a class may also fail an l-diversity constraint)."""
    if kept is None:
        kept = c.n >= k
    return {"LM": lm, "CM": cm, "DM": dm, "AECS": aecs, "Loss": arx_loss}[metric](c, kept)


def bound(metric: str, c: Classes, k: int) -> float:
    """A lower bound of the metric at this candidate and at every coarser one (classes only
    merge), itself never decreasing under generalization -- what makes lattice pruning sound.

    Mostly the metric with nothing suppressed. Tighter where it is cheap: for DM a class of
    ``a`` rows ends in a kept class of at least ``max(a, k)`` rows or is suppressed (``N``
    each), so it costs at least ``a max(a, k)``; for AECS at most ``N / k`` classes of ``k``
    rows can be kept, so at most ``min(C, floor(N / k) + 1)`` classes count.
    """
    if metric == "DM":
        n = c.n.astype(np.float64)
        return float((n * np.maximum(n, k)).sum())
    if metric == "AECS":
        N = float(c.n.sum())
        return N / min(len(c.n), int(N // max(k, 1)) + 1)
    return value(metric, c, 0)
