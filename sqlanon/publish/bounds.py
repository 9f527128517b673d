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

**What a release may print** (:class:`Shown`, issue 49). Suppression hides outliers, so no value
held only by suppressed rows is printed -- neither as a class's bound nor as a box edge of the
rules: a box edge (a cut) at a code only suppressed rows hold moves down to the largest code a
published row holds (the boxes still tile the domain, and each published row stays in its box:
the map is monotone and passes no published code); an edge with no published code above it
becomes the open end (the suppressed outliers beyond the last published value were that end); a
bound ``"data"`` prints of an empty region, or of a single-dimensional interval, is the nearest
code a published row holds inside it. A box left without a published code is no region any more
(it held only suppressed rows, or none). Under ``"domain"`` the column's smallest published value
is never a cut when fewer than k published rows hold it (with NULLs in the lowest class, a cut
there printed it): that edge moves to the open end below, so the lowest class then holds NULL
only in its box (it publishes NULL, NULL) and its few rows at that value fall in the box above
for :func:`sqlanon.apply`. Without suppression and such a minimum every map is the identity.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..errors import InputError
from ..model.domain import Domain, Visibility
from ..model.qi import BOUNDS

#: The choices of ``published=``.
MODES = BOUNDS

Codes = tuple[Literal["codes"], np.ndarray, np.ndarray]
Texts = tuple[Literal["text"], np.ndarray, np.ndarray]


@dataclass(frozen=True)
class Shown:
    """The codes an ordered QI's bounds and box edges may print (module docstring).

    ``hidden``: sorted codes (>= the first non-NULL code) held only by suppressed rows;
    ``floor``: the smallest code a cut may print (the smallest published code, or the next one
    when fewer than k rows hold it under ``"domain"``). NULL (code 0 of a column with NULLs) is
    never a printed value: codes below ``first`` map to themselves.
    """

    first: int
    size: int
    hidden: np.ndarray
    floor: int

    @classmethod
    def of(cls, d: Domain, hidden: np.ndarray | None = None) -> Shown:
        h = np.zeros(0, np.int64) if hidden is None else np.unique(np.asarray(hidden, dtype=np.int64))
        h = h[(h >= d.first_value) & (h < d.size)]
        out = cls(d.first_value, d.size, h, d.first_value)
        return cls(out.first, out.size, h, int(out.up(np.array([out.first]))[0]))

    def _runs(self) -> tuple[np.ndarray, np.ndarray]:
        """The first and last code of the run of consecutive hidden codes each hidden code is in."""
        h = self.hidden
        starts = np.ones(len(h), dtype=bool)
        starts[1:] = h[1:] != h[:-1] + 1
        first = h[np.maximum.accumulate(np.where(starts, np.arange(len(h)), 0))]
        ends = np.ones(len(h), dtype=bool)
        ends[:-1] = starts[1:]
        idx = np.where(ends, np.arange(len(h)), len(h))
        last = h[np.minimum.accumulate(idx[::-1])[::-1]]
        return first, last

    def _find(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        h = self.hidden
        pos = np.minimum(np.searchsorted(h, c), len(h) - 1)
        return pos, (h[pos] == c) & (c >= self.first)

    def down(self, c: np.ndarray) -> np.ndarray:
        """The largest published code <= ``c`` (``first - 1`` when none; NULL codes as they are)."""
        c = np.asarray(c, dtype=np.int64)
        if not len(self.hidden):
            return c
        pos, hit = self._find(c)
        return np.where(hit, self._runs()[0][pos] - 1, c)

    def up(self, c: np.ndarray) -> np.ndarray:
        """The smallest published code >= ``c`` (``size`` when none; NULL codes as they are)."""
        c = np.asarray(c, dtype=np.int64)
        if not len(self.hidden):
            return c
        pos, hit = self._find(c)
        return np.where(hit, self._runs()[1][pos] + 1, c)

    @property
    def top(self) -> int:
        """The largest published non-NULL code (below ``first`` when none)."""
        return int(self.down(np.array([self.size - 1]))[0])

    def raised(self, floor: int) -> Shown:
        """The same with cuts printed from ``floor`` up."""
        return Shown(self.first, self.size, self.hidden, floor)

    def cut(self, c: np.ndarray) -> np.ndarray:
        """Where a box edge ``c`` (the largest code below it) goes: edges inside the non-NULL
        codes move to the largest printable code below, to the open end above (``size - 1``)
        when no published code is above, or to the bottom (``first - 1``) when none is printable
        below; the ends stay, and so does the NULL edge (``first - 1`` of a column with NULLs)
        unless no non-NULL code is published at all: then it too has no published code above
        and moves to the open end, so a NULL-only box takes in the hidden codes (it needs no
        empty-range marker, which would print one of them) and the boxes above it are none."""
        c = np.asarray(c, dtype=np.int64)
        inner = (c >= self.first) & (c < self.size - 1)
        if self.first > 0 and self.top < self.first:
            inner |= c == self.first - 1
        v = self.down(c)
        moved = np.where(v >= self.top, self.size - 1, np.where(v < self.floor, self.first - 1, v))
        return np.where(inner, moved, c)

    def box(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The boxes ``[lo, hi]`` with their edges moved (:meth:`cut`); ``lo > hi`` for a box left
        without a code."""
        return self.cut(np.asarray(lo, dtype=np.int64) - 1) + 1, self.cut(hi)


def shown_codes(d: Domain, i: int, visibility: Visibility | None, k: int, lo: np.ndarray, hi: np.ndarray,
                null_only: bool) -> Shown:
    """The :class:`Shown` of ordered QI ``i`` (domain ``d``) over the boxes ``[lo, hi]``: under
    ``"domain"`` the smallest published value is printed only when at least ``k`` published
    rows hold it; it is counted only when an edge would print it (or the empty-range marker of
    a NULL-only box, ``null_only``, might)."""
    s = Shown.of(d, None if visibility is None else visibility.hidden[i])
    if visibility is None or d.qi.bounds != "domain" or s.floor >= s.top:
        return s
    edges = np.concatenate((np.asarray(lo, np.int64) - 1, np.asarray(hi, np.int64)))
    edges = edges[(edges >= s.first) & (edges < s.size - 1)]
    if not (null_only or (s.cut(edges) == s.floor).any()):
        return s
    if visibility.count(i, s.floor) >= k:
        return s
    return s.raised(int(s.up(np.array([s.floor + 1]))[0]))


def region_bounds(d: Domain, lo: np.ndarray, hi: np.ndarray, cmin: np.ndarray, cmax: np.ndarray,
                  n: np.ndarray, shown: Shown | None = None) -> Codes | Texts:
    """The published ``q_min``/``q_max`` of every region for the ordered QI of ``d``: as domain
    codes (``("codes", min, max)``; -1, or code 0 of a column with NULLs, publishes NULL) or, for
    ``"hierarchy"``, as text to cast to the column's type (``("text", min, max)``, None = NULL).

    ``lo``, ``hi``: the regions' boxes (codes, inclusive; their edges already moved by
    :meth:`Shown.box`); ``cmin``, ``cmax``: their rows' code extents (-1 for an empty region);
    ``n``: their row counts; ``shown``: the printable codes (default: every code) -- a printed
    value is the nearest published code inside (:meth:`Shown.up`, :meth:`Shown.down`).
    """
    first, qi = d.first_value, d.qi
    s = shown if shown is not None else Shown.of(d)
    empty = n == 0
    null_only = hi < first  # the box holds NULL only (code 0 of a column with NULLs)
    if qi.bounds == "data":
        low, high = s.up(np.where(empty, lo, cmin)), s.down(np.where(empty, hi, cmax))
        none = empty & (lo >= first) & (high < low)  # a box without a published value: NULL, NULL
        return "codes", np.where(none, -1, low), np.where(none, -1, high)
    if qi.bounds == "domain":
        below = np.where(lo - 1 >= first, lo - 1, -1)  # the cut below the box: its largest lower neighbour
        above = np.where(hi < d.size - 1, hi, -1)  # the cut above: the box's own largest value
        return "codes", np.where(null_only, -1, below), np.where(null_only, -1, above)
    if qi.bounds != "hierarchy" or qi.intervals is None or d.num is None:
        raise InputError(f"QI {qi.name!r}: unknown published bounds {qi.bounds!r}; one of {list(MODES)}")
    # the non-NULL values to cover: the class's, or its box's when it is empty or holds NULLs
    # (its smallest non-NULL value is then unknown: the box's is below it)
    holds_null = np.where(empty, lo < first, cmin < first)
    a = s.up(np.where(empty | (cmin < first), np.maximum(lo, first), cmin))
    b = s.down(np.where(empty, hi, cmax))
    a = np.where(a > b, np.maximum(b, first), a)  # no published value in an empty box: as a NULL-only one
    a = np.minimum(a, d.size - 1)
    null_only = b < first  # a class (or empty box) of only NULLs publishes NULL, NULL
    b = np.where(null_only, np.maximum(a, first), b)  # any node will do there
    low, high = qi.intervals.bounds(qi.intervals.covering(d.num[a], d.num[b]))
    none = np.full(len(lo), None, dtype=object)
    return "text", np.where(holds_null, none, low), np.where(null_only, none, high)


def empty_marker(d: Domain, hi: np.ndarray, shown: Shown | None = None) -> int:
    """The code a NULL-only box stores as its empty range ``q_lo = q_hi`` in the rules: the
    smallest published value by default; under ``"domain"`` a cut point (the smallest ``hi`` of
    a box that has a box above it), so the rules relation holds no extreme either -- else the
    smallest printable value below the largest (:attr:`Shown.floor`), and the smallest value
    only when no value was ever cut and none is printable (NULL split off the rest alone)."""
    s = shown if shown is not None else Shown.of(d)
    first = d.first_value
    if d.qi.bounds == "domain":
        cuts = hi[(hi >= first) & (hi < d.size - 1)]
        if len(cuts):
            return int(cuts.min())
        if s.floor < s.top:
            return s.floor
    smallest = int(s.up(np.array([first]))[0])
    return smallest if smallest < d.size else first
