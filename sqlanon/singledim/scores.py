"""The arithmetic of top-down refinement (Fung, Wang & Yu, *Anonymizing Classification Data for
Privacy Preservation*, TKDE 2007, Section 3.2), as small vectorized functions.

A refinement ``v -> child(v)`` is judged by what it gains and by the anonymity it costs:

* ``InfoGain(v) = I(R_v) - sum_c |R_c|/|R_v| I(R_c)`` (eq. 2), ``I`` the class entropy in bits
  (eq. 3); for disclosing a suppressed value ``⊥ -> {v, ⊥}`` the children are ``R_v`` and the
  remaining ``R'_⊥`` (eq. 5). Computed from sums of ``|R| I(R)``
  (:func:`sqlanon.model.criteria.weighted_entropy`), so a piece's statistic is its class counts.
* without a class label, the gain is the drop of Iyengar's loss metric LM (KDD 2002, Section 4.1):
  every row loses the normalized width of its generalized value (:func:`lm_gain`).
* ``AnonyLoss(v) = avg_j {A(QID_j) - A_v(QID_j)}`` over the QIDs holding ``v``'s attribute (eq. 4).
* ``Score(v) = InfoGain(v) / (AnonyLoss(v) + 1)`` (eq. 1), or the gain alone.
"""

from __future__ import annotations

import numpy as np

from ..model.criteria import weighted_entropy

#: Scores within this relative distance of the best are tied (broken by QI, then value order):
#: the same refinement must win however the floating-point sums were ordered.
TIE = 1e-12


def info_gain(parent: np.ndarray, children: np.ndarray) -> np.ndarray:
    """``InfoGain = (|R_v| I(R_v) - sum_c |R_c| I(R_c)) / |R_v|`` in bits (TKDE 2007, eq. 2/5).

    Args:
        parent: (K, m) class counts of each candidate's records ``R_v``.
        children: (K,) the sum over each candidate's children of ``|R_c| I(R_c)``
            (:func:`piece_entropy`).
    """
    n = parent.sum(axis=1).astype(np.float64)
    return (weighted_entropy(parent) - children) / np.maximum(n, 1.0)


def piece_entropy(counts: np.ndarray) -> np.ndarray:
    """``|R_c| I(R_c)`` in bits of each piece, from its (P, m) class counts."""
    return weighted_entropy(counts)


def beneficial(parent: np.ndarray) -> np.ndarray:
    """A refinement is beneficial when its records hold more than one class (Section 3.1)."""
    return (parent > 0).sum(axis=1) > 1


def anony_loss(anonymity: np.ndarray, after: np.ndarray, member: np.ndarray) -> np.ndarray:
    """``AnonyLoss = avg {A(QID_j) - A_v(QID_j)}`` over the QIDs that hold the attribute (eq. 4).

    Args:
        anonymity: (p,) ``A(QID_j)`` now.
        after: (K, p) ``A_v(QID_j)`` after each candidate (any value where ``member`` is False).
        member: (p,) which QIDs hold the candidates' attribute (at least one).
    """
    loss = (anonymity[None, :] - np.minimum(after, anonymity[None, :])).astype(np.float64)
    return loss[:, member].mean(axis=1)


def score(gain: np.ndarray, loss: np.ndarray) -> np.ndarray:
    """``Score = InfoGain / (AnonyLoss + 1)`` (TKDE 2007, eq. 1)."""
    return gain / (loss + 1.0)


def best_cut(counts: np.ndarray, width: np.ndarray | None) -> tuple[int, float]:
    """The optimal binary cut of one interval: ``(t, gain)``, left child the first ``t + 1`` codes.

    Args:
        counts: (V, m) class counts per code of the interval, in code order (V >= 2, every code
            has rows: the interval holds every row of its values).
        width: None to maximize InfoGain (TKDE 2007, Section 3.1.3: "the optimal split ... that
            maximizes the information gain", exact from the counts per value); else (V,) the
            positions of the codes, normalized by the column's span, to maximize the LM gain
            ``n w(v) - n_L w(L) - n_R w(R)`` (:func:`lm_gain`). Ties go to the lowest cut.
    """
    left = np.cumsum(counts, axis=0)[:-1]
    total = counts.sum(axis=0)
    n = float(total.sum())
    if width is None:
        children = weighted_entropy(left) + weighted_entropy(total[None, :] - left)
        gains = (float(weighted_entropy(total[None, :])[0]) - children) / n
    else:
        rows = counts.sum(axis=1).astype(np.float64)
        nl = np.cumsum(rows)[:-1]
        gains = n * (width[-1] - width[0]) - nl * (width[:-1] - width[0]) - (n - nl) * (width[-1] - width[1:])
    top = gains.max()
    t = int(np.flatnonzero(gains >= top - TIE * max(1.0, abs(top)))[0])
    return t, float(gains[t])


def lm_gain(rows: np.ndarray, before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """LM gain ``sum_rows (loss(before) - loss(after))`` per candidate (Iyengar, KDD 2002):
    ``rows`` (P,) rows of each piece, ``before``/``after`` (P,) normalized widths of the value
    before and after the refinement (interval width / span; hierarchy ``(leaves - 1) /
    (all leaves - 1)``; a suppressed value ``(|⊥| - 1) / (|D| - 1)``, a disclosed one 0)."""
    return rows * (before - after)
