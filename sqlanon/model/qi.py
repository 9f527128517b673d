"""A quasi-identifier: its column, its kind and (for a categorical one) its hierarchy.

Types are named in the house vocabulary (DuckDB's spelling, which sqlglot renders in every
dialect); each engine's catalog reads its own types into that vocabulary, so the kind of a QI
does not depend on where the table lives.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Literal

from sqlglot import exp

from ..errors import InputError
from .hierarchy import Hierarchy
from .intervals import Intervals

Kind = Literal["numeric", "temporal", "ordinal", "hierarchy"]
KINDS = ("numeric", "temporal", "ordinal", "hierarchy")
_INTEGER = re.compile(r"^U?(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT)$")

_NUMERIC = re.compile(
    r"^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT|"
    r"FLOAT|REAL|DOUBLE|DECIMAL(\(\d+,\s*\d+\))?)$"
)
_TEMPORAL = re.compile(r"^(DATE|TIMESTAMP(_S|_MS|_NS)?|TIMESTAMP WITH TIME ZONE)$")
# "NULL" is the type DuckDB gives a column of only NULLs (it is ordered trivially).
_ORDINAL = re.compile(r'^(VARCHAR|BOOLEAN|ENUM\(.*\)|"?NULL"?)$', re.S)


def classify(data_type: str) -> Kind | None:
    """The kind of an (unhierarchied) QI of this DuckDB type, or None if unsupported."""
    t = data_type.upper()
    if _NUMERIC.match(t):
        return "numeric"
    if _TEMPORAL.match(t):
        return "temporal"
    if _ORDINAL.match(t):
        return "ordinal"
    return None


#: The choices of ``published=``: what an ordered QI's ``<name>_min``/``<name>_max`` publish
#: (:attr:`QI.bounds`, :mod:`sqlanon.publish.bounds`).
BOUNDS = ("data", "domain", "hierarchy")


@dataclass(frozen=True)
class QI:
    """One quasi-identifier — the one QI type of the request, the builder, the published view,
    a reloaded release and the selection parser.

    Attributes:
        name: the column.
        kind: ``"numeric" | "temporal" | "ordinal"`` (ordered: published as ``<name>_min`` /
            ``<name>_max``) or ``"hierarchy"`` (published as the node label).
        data_type: the column's type, house spelling (``INTEGER``, ``DATE``, ``ENUM('a', 'b')``).
        hierarchy: the generalization hierarchy, exactly for kind ``"hierarchy"`` (with the NULL
            leaf when the column has NULLs).
        has_null: whether the column held NULLs when the release was made.
        position: the QI's index in the request (-1 for one made outside a request).
        bounds: what an ordered QI's ``<name>_min``/``<name>_max`` publish
            (:mod:`sqlanon.publish.bounds`): ``"data"`` (the class's own smallest and largest
            value), ``"domain"`` (the region's box: the cut points, NULL for an open end) or
            ``"hierarchy"`` (the smallest interval of :attr:`intervals` covering the class).
            ``"data"`` for hierarchical QIs, which publish their node label.
        intervals: for ``bounds="hierarchy"``, the numeric hierarchy whose intervals are
            published (only while publishing; a reloaded release reads its bounds from the rules).
    """

    name: str
    kind: Kind
    data_type: str
    hierarchy: Hierarchy | None = None
    has_null: bool = False
    position: int = -1
    bounds: str = "data"
    intervals: Intervals | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InputError(f"QI {self.name!r}: unknown kind {self.kind!r}; one of {list(KINDS)}")
        if (self.kind == "hierarchy") != (self.hierarchy is not None):
            raise InputError(f"QI {self.name!r}: a hierarchy is needed exactly for kind 'hierarchy'")

    @property
    def ordered(self) -> bool:
        return self.kind != "hierarchy"

    @property
    def unbounded_ends(self) -> bool:
        """Whether a NULL ``q_min``/``q_max`` means "no bound" (``bounds="domain"``: an open end
        of the domain, below or above every value) rather than "the class holds NULLs"."""
        return self.ordered and self.bounds == "domain"

    @property
    def published(self) -> tuple[str, ...]:
        """Columns that replace this QI in the view: ``<qi>_min``/``<qi>_max`` or the node label."""
        return published_columns(self.name, self.ordered)

    @property
    def box_columns(self) -> tuple[str, ...]:
        """Columns of the rules relation holding this QI's region box in the domain."""
        return box_columns(self.name, self.ordered)

    @property
    def root_label(self) -> str | None:
        """The label a suppressed row shows for a hierarchical QI (its root); None if ordered."""
        return None if self.hierarchy is None else self.hierarchy.labels[0]

    @property
    def type_upper(self) -> str:
        return self.data_type.upper().strip()

    @property
    def ordered_by_text(self) -> bool:
        """A text QI without a hierarchy: an ordered QI cut between values in text order (code
        points on DuckDB and Spark, the column's collation on PostgreSQL), so a range
        ``'A41'..'A42'`` takes in ``'A410'``. Numbers, dates, booleans and enums have their own
        order; a QI given a hierarchy is generalized through it."""
        return self.kind == "ordinal" and (self.type_upper.startswith("VARCHAR") or self.type_upper == "TEXT")

    @property
    def integer(self) -> bool:
        """Integer types: selection bounds are normalized to closed integers."""
        return self.kind == "numeric" and bool(_INTEGER.match(self.type_upper))

    @property
    def enum_labels(self) -> tuple[str, ...] | None:
        """The labels of an ENUM type in their order, None for other types."""
        if not self.type_upper.startswith("ENUM"):
            return None
        return enum_labels(self.data_type)

    def key(self, value: Any) -> Any:
        """The sort key of a value of this (ordered) QI: the value, or an enum label's position."""
        labels = self.enum_labels
        return labels.index(value) if labels is not None else value


@functools.cache
def enum_labels(data_type: str) -> tuple[str, ...]:
    """The labels of an ENUM type name, in order (sqlglot reads the type; nothing runs)."""
    return tuple(e.this for e in exp.DataType.build(data_type, dialect="duckdb").expressions)


def published_columns(name: str, ordered: bool) -> tuple[str, ...]:
    """The view's (and the rules') columns standing for the QI ``name``: ``<name>_min``/``<name>_max``
    for an ordered QI, the node label ``<name>`` for a hierarchical one (:attr:`QI.published`)."""
    return (f"{name}_min", f"{name}_max") if ordered else (name,)


def box_columns(name: str, ordered: bool) -> tuple[str, ...]:
    """The rules' columns holding the region box of the QI ``name`` (:attr:`QI.box_columns`)."""
    return (f"{name}_lo", f"{name}_hi", f"{name}_null") if ordered else (f"{name}_node",)
