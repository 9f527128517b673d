"""Hierarchy builders: generalization hierarchies made from a column's values, as ARX's builders
make them (Prasser & Kohlmayer, *Putting Statistical Disclosure Control into Practice: The ARX
Data Anonymization Tool*, 2015: interval-, order-, redaction- and date-based builders).

Each builder takes the values (any iterable; NULLs and NaNs are left out: sqlanon places NULL
itself) and returns a :class:`~sqlanon.Hierarchy` whose leaves are the distinct values as text,
ready for ``hierarchies={col: ...}`` or :meth:`~sqlanon.Hierarchy.to_csv` (ARX's
``leaf;level1;...;root`` format):

* :func:`intervals` — fixed-width intervals ``[lo, lo + width)``, nested: each level above joins
  ``fanout`` adjacent intervals of the level below;
* :func:`quantiles` — the same over intervals cut at the values' quantiles (about equal counts);
* :func:`ordering` — categories in an order (default: sorted), grouped ``fanout`` at a time;
* :func:`masking` — codes (ZIP, ICD) masked one character more per level, from the right;
* :func:`dates` — dates generalized to month, quarter, year, decade, century.

:func:`column_values` reads a column's distinct values from a table, a view or files in the
database (one ``SELECT DISTINCT``), for the builders and for ``sqlanon hierarchy`` on the
command line, which writes the hierarchy as an ARX file.

Interval hierarchies have ascending leaves and contiguous nodes, so a numeric QI may publish
them (``published="hierarchy"``, :mod:`sqlanon.model.intervals`).

>>> from sqlanon import hierarchies
>>> h = hierarchies.intervals([23, 27, 31, 38, 44], width=10)
>>> h.to_rows()[0], h.to_rows()[-1]
(['23', '[20, 30)', '[20, 40)', '*'], ['44', '[40, 50)', '[40, 50)', '*'])
>>> hierarchies.masking(["53715", "53703", "10001"]).to_rows()[-1]
['53715', '5371*', '537**', '53***', '5****', '*****']
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np

from .errors import HierarchyError
from .model.hierarchy import Hierarchy

ROOT = "*"
DATE_LEVELS = ("month", "quarter", "year", "decade", "century")


def intervals(values: Iterable[Any], width: float, *, start: float | None = None,
              fanout: int | Sequence[int] = 2) -> Hierarchy:
    """Fixed-width nested intervals over numeric ``values`` (ARX's interval-based builder).

    The first level cuts the line into ``[start + i * width, start + (i + 1) * width)``
    (``start`` defaults to the largest multiple of ``width`` at or below the smallest value);
    only intervals holding a value are kept. Each level above joins ``fanout`` adjacent
    intervals of the level below, ``[lo of the first, hi of the last)``, until one is left, which
    becomes the root ``*``.

    Args:
        values: numbers (a column's values; repeats and NULLs are fine).
        width: the first level's interval width, > 0.
        start: where the first interval starts (at most the smallest value).
        fanout: how many intervals each level joins: one int for every level, or one per level
            (the levels then stop there, under the root).

    Raises:
        HierarchyError: no values, a value that is not a finite number, a width that is not
            positive, a start above the smallest value, a fanout below 2.
    """
    numbers = _numbers(values, "intervals")
    if not (isinstance(width, (int, float, Decimal)) and not isinstance(width, bool)
            and math.isfinite(width) and width > 0):
        raise HierarchyError(f"intervals: width must be a positive number, got {width!r}")
    lo = math.floor(numbers[0] / width) * width if start is None else start
    if lo > numbers[0]:
        raise HierarchyError(f"intervals: start={start!r} is above the smallest value {numbers[0]!r}")
    index = np.floor((np.asarray(numbers, dtype=float) - lo) / width).astype(np.int64)
    bins = sorted(set(index.tolist()))
    edges = [(lo + b * width, lo + (b + 1) * width) for b in bins]
    return _nested(numbers, [bins.index(int(i)) for i in index], edges, fanout)


def quantiles(values: Iterable[Any], bins: int, *, fanout: int | Sequence[int] = 2) -> Hierarchy:
    """Nested intervals cut at the quantiles of numeric ``values``: about ``bins`` intervals of
    about equal counts (fewer where values repeat), then grouped as :func:`intervals` does.

    The cut points are the distinct values at ranks ``round(i * n / bins)`` of the sorted
    (repeated) values, so an interval is ``[cut_i, cut_{i+1})`` and the last one is closed at the
    largest value.

    Raises:
        HierarchyError: no values, a non-numeric value, ``bins`` below 1, a fanout below 2.
    """
    numbers = _numbers(values, "quantiles")
    if not isinstance(bins, int) or isinstance(bins, bool) or bins < 1:
        raise HierarchyError(f"quantiles: bins must be a positive integer, got {bins!r}")
    ordered = np.sort(np.asarray(_all_numbers(values), dtype=float))
    ranks = [min(round(i * len(ordered) / bins), len(ordered) - 1) for i in range(bins)]
    cuts = sorted(set(float(ordered[r]) for r in ranks))
    top = float(ordered[-1])
    edges = [(cuts[i], cuts[i + 1] if i + 1 < len(cuts) else top) for i in range(len(cuts))]
    where = np.searchsorted(np.asarray(cuts), np.asarray(numbers, dtype=float), side="right") - 1
    return _nested(numbers, [int(i) for i in where], edges, fanout, closed_last=True)


def ordering(values: Iterable[Any], fanout: int | Sequence[int] = 2, *,
             order: Sequence[Any] | None = None) -> Hierarchy:
    """Categories grouped in order (ARX's order-based builder): the values sorted (or in
    ``order``), each level joining ``fanout`` consecutive nodes of the level below into a group
    labelled ``first..last`` (a group of one keeps its member's label), up to the root ``*``.

    Args:
        values: the column's values.
        fanout: group size per level (one int for every level, or one per level).
        order: every distinct value, in the order to group them (default: sorted as text, or as
            numbers when all values are numbers).

    Raises:
        HierarchyError: no values, ``order`` missing some value or listing one twice.
    """
    distinct = _distinct_texts(values, "ordering")
    if order is not None:
        wanted = [_text(v) for v in order if not _is_null(v)]
        if len(set(wanted)) != len(wanted):
            raise HierarchyError("ordering: order lists a value twice")
        missing = sorted(set(distinct) - set(wanted))
        if missing:
            raise HierarchyError(f"ordering: order misses {len(missing)} value(s) of the data, e.g. {missing[:5]}")
        distinct = [v for v in wanted if v in set(distinct)]
    nodes: list[tuple[str, list[Any]]] = [(v, []) for v in distinct]
    for size in _fanouts(fanout, "ordering"):
        if len(nodes) == 1:
            break
        nodes = [(_span(group), group) for group in _chunks(nodes, size)]
    return _from_tree(nodes)


def masking(values: Iterable[Any], *, mask: str = "*", pad: str = " ", step: int = 1) -> Hierarchy:
    """Codes masked from the right (ARX's redaction-based builder): level ``j`` replaces the last
    ``j * step`` characters by ``mask``, until the whole code is masked, which is the root.
    Shorter codes are padded on the left with ``pad`` to the longest one's length first (so
    ``"123"`` and ``"1234"`` align on their last digit); the leaves keep the values unpadded.

    Raises:
        HierarchyError: no values, a ``mask`` or ``pad`` that is not one character, a step below 1.
    """
    if not (isinstance(mask, str) and len(mask) == 1 and isinstance(pad, str) and len(pad) == 1):
        raise HierarchyError(f"masking: mask and pad must be one character each, got {mask!r}, {pad!r}")
    if not isinstance(step, int) or isinstance(step, bool) or step < 1:
        raise HierarchyError(f"masking: step must be a positive integer, got {step!r}")
    distinct = _distinct_texts(values, "masking")
    size = max(len(v) for v in distinct)
    rows = []
    for v in distinct:
        padded = v.rjust(size, pad)
        levels = [padded[: max(size - j, 0)] + mask * min(j, size) for j in range(step, size + step, step)]
        rows.append([v, *levels])
    return _checked(rows, "masking")


def dates(values: Iterable[Any], levels: Sequence[str] = ("month", "year", "decade")) -> Hierarchy:
    """Dates generalized by calendar (ARX's date-based builder): each value (a ``date``,
    ``datetime`` or ISO text) under its ``month`` (``2024-03``), ``quarter`` (``2024-Q1``),
    ``year`` (``2024``), ``decade`` (``2020s``) and ``century`` (``2000s``), for the ``levels``
    asked (in that order), then the root ``*``. Leaves are the values' own text (``2024-03-17``,
    as DuckDB, PostgreSQL and Spark print a DATE).

    Raises:
        HierarchyError: no values, a value that is not a date, an unknown level or levels out of
            order.
    """
    asked = list(levels)
    unknown = [lv for lv in asked if lv not in DATE_LEVELS]
    if unknown or not asked:
        raise HierarchyError(f"dates: levels must be a non-empty ordered subset of {list(DATE_LEVELS)}, got {asked}")
    if [DATE_LEVELS.index(lv) for lv in asked] != sorted(DATE_LEVELS.index(lv) for lv in set(asked)):
        raise HierarchyError(f"dates: levels must go from fine to coarse without repeats ({list(DATE_LEVELS)}), got {asked}")
    labels: dict[str, Callable[[dt.date], str]] = {
        "month": lambda d: f"{d.year:04d}-{d.month:02d}",
        "quarter": lambda d: f"{d.year:04d}-Q{(d.month - 1) // 3 + 1}",
        "year": lambda d: f"{d.year:04d}",
        "decade": lambda d: f"{d.year // 10 * 10:04d}s",
        "century": lambda d: f"{d.year // 100 * 100:04d}s",
    }
    rows = []
    for v in _distinct_values(values, "dates"):
        day = _as_date(v)
        rows.append([_text(v), *(labels[lv](day) for lv in asked), ROOT])
    rows.sort(key=lambda r: _as_date(r[0]))
    return _checked(rows, "dates")


#: Each builder's arguments and their defaults (:data:`REQUIRED`: none), as ``sqlanon hierarchy``
#: names its flags and a release file its keys (``hierarchy = { builder = "intervals", width = 10 }``).
REQUIRED = object()
BUILDERS: dict[str, dict[str, Any]] = {
    "intervals": {"width": REQUIRED, "start": None, "fanout": 2},
    "quantiles": {"bins": REQUIRED, "fanout": 2},
    "ordering": {"fanout": 2, "order": None},
    "masking": {"mask": "*", "step": 1},
    "dates": {"levels": ("month", "year", "decade")},
}


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _is_count(v: Any, least: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= least


#: What each argument takes: (check, in words).
_ARGUMENTS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "width": (lambda v: _is_number(v) and v > 0, "a positive number"),
    "start": (_is_number, "a number"),
    "bins": (lambda v: _is_count(v, 1), "an integer >= 1"),
    "fanout": (lambda v: _is_count(v, 2) or (isinstance(v, tuple) and bool(v) and all(_is_count(x, 2) for x in v)),
               "an integer >= 2 or a list of them (one per level)"),
    "order": (lambda v: isinstance(v, tuple) and bool(v) and all(isinstance(x, str) for x in v),
              "a non-empty list of the values, in order"),
    "mask": (lambda v: isinstance(v, str) and len(v) == 1, "one character"),
    "step": (lambda v: _is_count(v, 1), "an integer >= 1"),
    "levels": (lambda v: isinstance(v, tuple) and bool(v) and all(x in DATE_LEVELS for x in v),
               f"a list of {', '.join(DATE_LEVELS)}, fine to coarse"),
}


@dataclass(frozen=True)
class Builder:
    """A hierarchy to build from the column's distinct values when the request is checked
    against the database: a builder of this module by name and its arguments (as
    :data:`BUILDERS` names them). It goes where a hierarchy goes (``hierarchies={"age":
    builder("intervals", width=10)}``) and a release file keeps it as
    ``hierarchy = { builder = "intervals", width = 10 }``.

    >>> b = builder("intervals", width=10, fanout=[2, 2])
    >>> b.record()
    {'builder': 'intervals', 'width': 10, 'fanout': [2, 2]}
    >>> b.build([23, 27, 31, 38, 44]).to_rows()[0]
    ['23', '[20, 30)', '[20, 40)', '*']
    """

    name: str
    arguments: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if self.name not in BUILDERS:
            from .errors import did_you_mean

            raise HierarchyError(f"builder must be one of {', '.join(BUILDERS)}, got {self.name!r}."
                                 + did_you_mean(str(self.name), list(BUILDERS)))
        takes = BUILDERS[self.name]
        given = dict(self.arguments)
        for key, value in given.items():
            if key not in takes:
                raise HierarchyError(f"{self.name} takes {', '.join(takes)}; {key}= is not one of them")
            check, words = _ARGUMENTS[key]
            if not check(value):
                raise HierarchyError(f"{self.name}: {key} must be {words}, got {value!r}")
        missing = [key for key, default in takes.items() if default is REQUIRED and key not in given]
        if missing:
            raise HierarchyError(f"{self.name} needs {missing[0]}=")
        object.__setattr__(self, "arguments", tuple((k, given[k]) for k in takes if k in given))

    def build(self, values: Iterable[Any]) -> Hierarchy:
        """The hierarchy of ``values`` (a column's values)."""
        given = dict(self.arguments)
        fanout = given.pop("fanout", 2)
        if self.name == "intervals":
            return intervals(values, given["width"], start=given.get("start"), fanout=fanout)
        if self.name == "quantiles":
            return quantiles(values, given["bins"], fanout=fanout)
        if self.name == "ordering":
            return ordering(values, fanout, order=given.get("order"))
        if self.name == "masking":
            return masking(values, **given)
        return dates(values, **given)

    def record(self) -> dict[str, Any]:
        """``{"builder": name, argument: value, ...}`` (lists for tuples): a release file's
        ``hierarchy`` table; :meth:`from_record` inverts it."""
        return {"builder": self.name, **{k: list(v) if isinstance(v, tuple) else v for k, v in self.arguments}}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Builder:
        """The builder of a ``{ builder = "...", ... }`` table (lists as tuples)."""
        rest = dict(record)
        if "builder" not in rest:
            raise HierarchyError(f"a hierarchy table names its builder: builder = one of {', '.join(BUILDERS)}")
        name = rest.pop("builder")
        return builder(name, **rest)


def builder(name: str, **arguments: Any) -> Builder:
    """A :class:`Builder`: ``builder("masking", step=2)``; lists are kept as tuples.

    Raises:
        HierarchyError: an unknown builder, an argument it does not take or of the wrong kind,
            or a required argument missing (``width`` of intervals, ``bins`` of quantiles)."""
    return Builder(name, tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in arguments.items()))


def built(hierarchies: Mapping[str, Any], values: Callable[[str], list[Any]]) -> dict[str, Any]:
    """``hierarchies`` with each :class:`Builder` replaced by the hierarchy it builds from the
    column's values (``values(column)``); every other hierarchy as given."""
    return {q: h.build(values(q)) if isinstance(h, Builder) else h for q, h in hierarchies.items()}


def column_values(con: Any, table: str, column: str) -> list[Any]:
    """The distinct values of ``column`` in ``table`` (a table or view of the connection's
    database, or -- on DuckDB -- Parquet/CSV/JSON files), NULL included, in one statement.

    Raises:
        UnknownTableError, UnknownColumnError: (listing what exists) for a missing table or column.
    """
    from sqlglot import exp

    from .engine import engine_for
    from .engine import sqlgen as g
    from .engine.catalog import find_source
    from .errors import UnknownColumnError, did_you_mean

    engine = engine_for(con)
    source = find_source(engine, engine.objects(), table, count=False)
    if column not in source.column_names:
        raise UnknownColumnError(f"{table!r} has no column {column!r}." + did_you_mean(column, source.column_names))
    return [row[0] for row in engine.fetch_rows(exp.select(g.col(column)).distinct().from_(source.ref))]


# -- helpers ---------------------------------------------------------------------------------------
def _is_null(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or type(v).__name__ in ("NAType", "NaTType")


def _text(v: Any) -> str:
    """A value as a hierarchy leaf: its text, an integral float as the integer (``39.0`` -> ``39``)."""
    if isinstance(v, (float, np.floating, Decimal)) and math.isfinite(v) and float(v).is_integer():
        return str(int(v))
    if isinstance(v, np.generic):
        return str(v.item())
    return str(v)


def _as_date(v: Any) -> dt.date:
    """A date from a ``date``/``datetime``/pandas ``Timestamp`` or ISO text (``2024-03-17``)."""
    if isinstance(v, dt.date):
        return v
    if hasattr(v, "to_pydatetime"):
        return v.to_pydatetime()
    try:
        return dt.date.fromisoformat(str(v)[:10])
    except ValueError:
        raise HierarchyError(f"dates: {v!r} is not a date (expected a date or ISO text YYYY-MM-DD)") from None


def _distinct_values(values: Iterable[Any], where: str) -> list[Any]:
    if isinstance(values, (str, bytes)):
        raise HierarchyError(f"{where}: values must be a collection of values, not one string")
    seen: dict[str, Any] = {}
    for v in values:
        if not _is_null(v):
            seen.setdefault(_text(v), v)
    if not seen:
        raise HierarchyError(f"{where}: no values (NULLs are left out)")
    return list(seen.values())


def _distinct_texts(values: Iterable[Any], where: str) -> list[str]:
    distinct = _distinct_values(values, where)
    if all(isinstance(v, (int, float, Decimal, np.number)) and not isinstance(v, bool) for v in distinct):
        distinct.sort()
    else:
        distinct.sort(key=_text)
    return [_text(v) for v in distinct]


def _all_numbers(values: Iterable[Any]) -> list[float]:
    return [float(v) for v in values if not _is_null(v)]


def _numbers(values: Iterable[Any], where: str) -> list[Any]:
    distinct = _distinct_values(values, where)
    bad = [v for v in distinct if not (isinstance(v, (int, float, Decimal, np.number)) and not isinstance(v, bool)
                                       and math.isfinite(float(v)))]
    if bad:
        raise HierarchyError(f"{where}: every value must be a finite number, got {bad[0]!r}")
    return sorted(distinct, key=float)


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def _fanouts(fanout: int | Sequence[int], where: str) -> Iterable[int]:
    sizes = [fanout] if isinstance(fanout, int) else list(fanout)
    if not sizes or any(not isinstance(s, int) or isinstance(s, bool) or s < 2 for s in sizes):
        raise HierarchyError(f"{where}: fanout must be an integer >= 2 or a list of them, got {fanout!r}")
    if isinstance(fanout, int):
        while True:
            yield fanout
    yield from sizes


def _chunks(items: list[Any], size: int) -> list[list[Any]]:
    return [items[i:i + size] for i in range(0, len(items), size)]


def _span(group: list[tuple[str, list[Any]]]) -> str:
    first, last = group[0][0], group[-1][0]
    if len(group) == 1:
        return first
    return f"{first.split('..')[0]}..{last.split('..')[-1]}"


def _nested(numbers: list[Any], bin_of: list[int], edges: list[tuple[float, float]],
            fanout: int | Sequence[int], closed_last: bool = False) -> Hierarchy:
    """Leaves (the numbers) under their base interval, base intervals grouped by ``fanout``."""
    def label(lo: float, hi: float, last: bool) -> str:
        return f"[{_num(lo)}, {_num(hi)}{']' if closed_last and last else ')'}"

    base: list[tuple[str, list[Any], float, float]] = []
    for b, (lo, hi) in enumerate(edges):
        leaves = [(_text(v), []) for v, i in zip(numbers, bin_of) if i == b]
        if leaves:
            base.append((label(lo, hi, b == len(edges) - 1), leaves, lo, hi))
    level = base
    for size in _fanouts(fanout, "intervals"):
        if len(level) == 1:
            break
        grouped = []
        for group in _chunks(level, size):
            lo, hi = group[0][2], group[-1][3]
            grouped.append((label(lo, hi, hi == base[-1][3]),
                            [(g[0], g[1]) for g in group], lo, hi))
        level = grouped
    return _from_tree([(n[0], n[1]) for n in level])


def _from_tree(top: list[tuple[str, list[Any]]]) -> Hierarchy:
    """Rows ``[leaf, ..., *]`` from nested ``(label, children)`` nodes under one root."""
    rows: list[list[str]] = []

    def walk(node: tuple[str, list[Any]], above: list[str]) -> None:
        name, children = node
        if not children:
            rows.append([name, *above])
            return
        for child in children:
            walk(child, [name, *above])

    if len(top) == 1 and top[0][1]:
        walk(top[0], [ROOT])
        # the single top group is the root itself: drop its label, keep "*"
        rows[:] = [r[:-2] + [ROOT] if len(r) > 2 else r for r in rows]
    else:
        for node in top:
            walk(node, [ROOT])
    return _checked(rows, "hierarchy")


def _checked(rows: list[list[str]], where: str) -> Hierarchy:
    try:
        return Hierarchy.from_rows(rows)
    except HierarchyError as e:  # a builder's own bug shows its name
        raise HierarchyError(f"{where}: {e}") from None
