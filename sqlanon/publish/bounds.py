"""What an ordered QI's published ``q_min``/``q_max`` hold: ``published="data"|"domain"|"hierarchy"``.

Every region of a release has a *box in the domain*: per ordered QI a code interval ``[lo, hi]``
(:mod:`sqlanon.model.domain`: codes number the column's distinct values, NULL first), cut from
its neighbours by the partition's cuts. Its rows have code extents ``[cmin, cmax]`` inside it.
A region publishes, per ordered QI ``q`` (the choice is recorded per QI, :attr:`QI.bounds`):

* ``"data"`` (the default): the class's own smallest and largest value, ``[cmin, cmax]`` -- so the
  class holding the youngest person prints her exact age. NULL sorts first: ``q_min`` is NULL
  when the class holds NULLs, and both are NULL for a class of only NULLs.
* ``"domain"``: the box, i.e. the cut points: ``q_min`` is the cut below the region (the
  largest domain value below its box; *exclusive*), ``q_max`` the cut above it (the largest value
  in its box; inclusive): the region is ``q_min < v <= q_max``. An open end -- the first box
  below, the last above -- is published as **NULL, meaning unbounded**: the column's own minimum
  and maximum are themselves its most identifying values (the oldest person's age, the largest
  income), so they are never printed. A NULL ``q_min`` therefore reads "from the bottom of the
  domain, NULLs included" and a NULL ``q_max`` "to the top"; a region of only NULLs publishes
  NULL, NULL. Cut points are values of the data (Mondrian cuts at a median): the one exposed
  value is the cut itself, which both neighbours share.
* ``"hierarchy"`` (numeric QIs given a hierarchy): the smallest interval of the hierarchy covering
  the class's values (:class:`~sqlanon.model.intervals.Intervals`), ``[its first leaf, its last
  leaf]`` -- e.g. ``[20, 39]`` -- cast to the column's type. NULL as for ``"data"``: ``q_min`` is
  NULL when the class holds NULLs (the interval then covers the box's values), NULL, NULL for a
  class of only NULLs.

An *empty* region -- a hierarchy node no row fell into, kept so that the rules tile the domain --
has no rows, only its box. It publishes the box: under ``"data"`` the domain values its box
spans (``[v_lo, v_hi]``, closed; ``q_min`` NULL when the box admits NULL), under ``"domain"`` its
cut points as above, under ``"hierarchy"`` the smallest interval covering ``[v_lo, v_hi]``. So a
new row that :func:`sqlanon.apply` places there is published with its own region's bounds, not
the training table's.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from ..errors import InputError
from ..model.domain import Domain
from ..model.qi import BOUNDS

#: The choices of ``published=``.
MODES = BOUNDS

Codes = tuple[Literal["codes"], np.ndarray, np.ndarray]
Texts = tuple[Literal["text"], np.ndarray, np.ndarray]


def region_bounds(d: Domain, lo: np.ndarray, hi: np.ndarray, cmin: np.ndarray, cmax: np.ndarray,
                     n: np.ndarray) -> Codes | Texts:
    """The published ``q_min``/``q_max`` of every region for the ordered QI of ``d``: as domain
    codes (``("codes", min, max)``; -1, or code 0 of a column with NULLs, publishes NULL) or, for
    ``"hierarchy"``, as text to cast to the column's type (``("text", min, max)``, None = NULL).

    ``lo``, ``hi``: the regions' boxes (codes, inclusive); ``cmin``, ``cmax``: their rows' code
    extents (-1 for an empty region); ``n``: their row counts.
    """
    first, qi = d.first_value, d.qi
    empty = n == 0
    null_only = hi < first  # the box holds NULL only (code 0 of a column with NULLs)
    if qi.bounds == "data":
        return "codes", np.where(empty, lo, cmin), np.where(empty, hi, cmax)
    if qi.bounds == "domain":
        below = np.where(lo - 1 >= first, lo - 1, -1)  # the cut below the box: its largest lower neighbour
        above = np.where(hi < d.size - 1, hi, -1)  # the cut above: the box's own largest value
        return "codes", np.where(null_only, -1, below), np.where(null_only, -1, above)
    if qi.bounds != "hierarchy" or qi.intervals is None or d.num is None:
        raise InputError(f"QI {qi.name!r}: unknown published bounds {qi.bounds!r}; one of {list(MODES)}")
    # the non-NULL values to cover: the class's, or its box's when it is empty or holds NULLs
    # (its smallest non-NULL value is then unknown: the box's is below it)
    holds_null = np.where(empty, lo < first, cmin < first)
    a = np.where(empty | (cmin < first), np.maximum(lo, first), cmin)
    b = np.where(empty, hi, cmax)
    null_only = b < first  # a class (or empty box) of only NULLs publishes NULL, NULL
    b = np.where(null_only, np.maximum(a, first), b)  # any node will do there
    low, high = qi.intervals.bounds(qi.intervals.covering(d.num[a], d.num[b]))
    none = np.full(len(lo), None, dtype=object)
    return "text", np.where(holds_null, none, low), np.where(null_only, none, high)


def empty_marker(d: Domain, hi: np.ndarray) -> int:
    """The code a NULL-only box stores as its empty range ``q_lo = q_hi`` in the rules: the
    smallest value by default; under ``"domain"`` a cut point (the smallest ``hi`` of a box
    that has a box above it), so the rules relation holds no extreme either -- the smallest
    value only when no value was ever cut (NULL split off the rest alone)."""
    first = d.first_value
    if d.qi.bounds == "domain":
        cuts = hi[(hi >= first) & (hi < d.size - 1)]
        if len(cuts):
            return int(cuts.min())
    return first
