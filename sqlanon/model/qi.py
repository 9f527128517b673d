"""A quasi-identifier: its column, its kind and (for a categorical one) its hierarchy.

Types are named in the house vocabulary (DuckDB's spelling, which sqlglot renders in every
dialect); each engine's catalog reads its own types into that vocabulary, so the kind of a QI
does not depend on where the table lives.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from .hierarchy import Hierarchy

Kind = Literal["numeric", "temporal", "ordinal", "hierarchy"]

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


@dataclass(frozen=True)
class QI:
    """One quasi-identifier: its column, kind and (for categorical ones) hierarchy."""

    name: str
    position: int
    data_type: str
    kind: Kind
    has_null: bool
    hierarchy: Hierarchy | None = None

    @property
    def ordered(self) -> bool:
        return self.kind != "hierarchy"

    @property
    def published(self) -> tuple[str, ...]:
        """Columns that replace this QI in the view: ``<qi>_min``/``<qi>_max`` or the node label."""
        return (f"{self.name}_min", f"{self.name}_max") if self.ordered else (self.name,)

    @property
    def box_columns(self) -> tuple[str, ...]:
        """Columns of the rules relation holding this QI's region box in the domain."""
        n = self.name
        return (f"{n}_lo", f"{n}_hi", f"{n}_null") if self.ordered else (f"{n}_node",)
