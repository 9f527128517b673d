"""The encoded domain of a QI: integer codes, so every split works on intervals of codes.

* Ordered QIs (numbers, dates, timestamps, text, booleans): the distinct non-NULL values in
  ascending order get codes ``0..m-1``; if the column has NULLs, NULL gets code 0 and the values
  shift by one (NULL sorts before every value).
* Hierarchical QIs: leaves get their DFS pre-order code (see :mod:`sqlanon.model.hierarchy`), so
  every hierarchy node covers a contiguous interval of codes; NULL is an implicit first leaf.

A partition's box is then one code interval per QI, a cut is a code, and the working table holds
small integers whatever the source types are. The code tables themselves are built in the
database by :mod:`sqlanon.mondrian.encode`, so published bounds keep their exact types.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .qi import QI


@dataclass(frozen=True)
class Domain:
    """The encoded domain of one QI.

    Attributes:
        qi: the QI.
        size: number of codes.
        table: temp table mapping values to codes: ``(v, code)`` for ordered QIs (``v`` in the
            source type; NULL is not stored, it is code 0), ``(t, code)`` for hierarchical QIs
            (``t`` the value as text); None when the domain holds its ``values`` instead.
        num: for ordered QIs, a float position per code used to measure ranges (numbers as they
            are, dates and timestamps in microseconds, text and booleans by rank); None for
            hierarchies.
        values: the non-NULL values by code (``values[code - first_value]``), when this process
            coded them from fetched rows (:func:`sqlanon.mondrian.encode.code_fetched`): the
            rules then look their bounds up here (:func:`sqlanon.publish.rules.create_rules`),
            and there is no ``table``. None otherwise.
    """

    qi: QI
    size: int
    table: str | None
    num: np.ndarray | None
    values: np.ndarray | None = None

    @property
    def first_value(self) -> int:
        """The code of the smallest non-NULL value."""
        return 1 if self.qi.has_null else 0

    @property
    def code_type(self) -> type:
        """The narrowest integer type holding every code, -1 and, for a hierarchy, every node id
        (int32 but for domains past 2^31): arrays of codes held for a whole phase -- the batches'
        leaves, the rules' columns -- take half the memory of int64."""
        h = self.qi.hierarchy
        largest = max(self.size, h.n_nodes if h is not None else 0)
        return np.int32 if largest < 2**31 else np.int64


@dataclass(frozen=True)
class Visibility:
    """What the published rows of a release hold, for :class:`sqlanon.publish.bounds.Shown`: per
    QI the codes only suppressed rows hold (sorted; empty for a hierarchical QI or without
    suppression), and
    ``count(i, code)``, the published rows holding ``code`` on QI ``i`` (asked only for the
    smallest published code of a QI published ``"domain"``)."""

    hidden: tuple[np.ndarray, ...]
    count: Callable[[int, int], int]


def ordered_positions(values: np.ndarray, qi: QI) -> np.ndarray:
    """Positions of the codes for range measurement, NULL first.

    NULL sits one average gap below the smallest value: ``num(NULL) = v_1 - (v_m - v_1)/(m - 1)``
    (a gap of 1 when there is one value), so a partition mixing NULL and values has a range.
    Text and booleans are measured by rank, where NULL is simply rank 0.
    """
    if qi.kind == "ordinal":  # ranked by code, which already counts NULL as rank 0
        return np.arange(len(values) + int(qi.has_null), dtype=np.float64)
    if not qi.has_null:
        return values
    m = len(values)
    gap = (values[-1] - values[0]) / (m - 1) if m > 1 else 1.0
    return np.concatenate(([values[0] - gap if m else 0.0], values))

