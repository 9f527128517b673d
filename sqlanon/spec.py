"""Resolve and validate a request into a frozen :class:`Spec` before any object is written.

Everything a user can get wrong is checked here, with a specific error: the table and the columns
(listing what exists), the QI list, k, the QI types, the hierarchies (naming missing values) and
the output names (refusing to overwrite unless ``replace=True``).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from sqlglot import exp

from . import sqlgen as g
from .engine import Engine
from .errors import (
    HierarchyError,
    InputError,
    ObjectExistsError,
    UnknownColumnError,
    UnknownTableError,
    UnsupportedTypeError,
    did_you_mean,
)
from .hierarchy import Hierarchy, leaf_codes, load_hierarchy
from .workload import Workload, resolve_workload

Kind = Literal["numeric", "temporal", "ordinal", "hierarchy"]

#: The column of the published view holding the equivalence-class (region) id.
EQ_CLASS = "eq_class"
#: Default number of rows below which partitions are finished in memory (numpy).
DEFAULT_MEMORY_ROWS = 2_000_000

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


#: File extensions DuckDB reads directly, and the reader for each.
_READERS = {".parquet": "read_parquet", ".csv": "read_csv", ".tsv": "read_csv", ".gz": "read_csv",
            ".json": "read_json", ".jsonl": "read_json", ".ndjson": "read_json"}


@dataclass(frozen=True)
class Source:
    """The relation to anonymize: a table or view in the catalog, or files DuckDB reads."""

    catalog: str
    schema: str
    name: str
    kind: Literal["table", "view", "file"]
    columns: tuple[tuple[str, str], ...]  # (name, DuckDB type) in order
    rows: int
    path: str | None = None  # for files: the path or glob

    @property
    def ref(self) -> exp.Table:
        if self.path is not None:
            reader = _READERS[Path(self.path.replace("*", "x")).suffix.lower()]
            return exp.Table(this=exp.Anonymous(this=reader, expressions=[g.lit(self.path)]))
        return g.table(self.name, self.schema, self.catalog)

    @property
    def has_rowid(self) -> bool:
        """Only base tables have a stable row identity (``rowid``) a live view can join on."""
        return self.kind == "table"

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c for c, _ in self.columns)


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


@dataclass(frozen=True)
class Outputs:
    """Names of the objects a release creates in the connection's current schema."""

    view: str
    rules: str
    assignment: str
    materialize: bool  # publish a table (the source has no stable row id) instead of a view
    hierarchies: str | None = None  # where the hierarchies of hierarchical QIs are kept
    existing: tuple[tuple[str, str], ...] = ()  # (name, kind) of objects replace=True overwrites


@dataclass(frozen=True)
class Spec:
    """A validated anonymization request."""

    source: Source
    qis: tuple[QI, ...]
    k: int
    outputs: Outputs
    memory_rows: int
    replace: bool
    workload: Workload


def resolve(
    engine: Engine,
    table: str,
    qid: Sequence[str],
    k: int,
    *,
    hierarchies: Mapping[str, Any] | None = None,
    view: str | None = None,
    replace: bool = False,
    memory_rows: int | None = None,
    sensitive: str | Sequence[str] | None = None,
    l: float | None = None,
    constraints: Sequence[Any] = (),
    target: str | Sequence[str] | None = None,
    criterion: Any = None,
    selections: str | Sequence[str] | None = None,
) -> Spec:
    """Check the whole request against the database and return it as a :class:`Spec`.

    Raises:
        InputError: (or a subclass) for anything wrong, before any object is created.
    """
    qid = check_qid(qid)  # the request's shape first: no query runs for a malformed one
    k = check_int("k", k, minimum=1)
    replace = check_bool("replace", replace)
    objects = _catalog(engine)
    source = _find_source(engine, objects, table)
    qid = _check_qid(qid, source)
    if k > source.rows:
        raise InputError(
            f"k={k} is larger than the table: {source.name!r} has {source.rows} rows, so no "
            f"partition can hold k of them."
        )
    memory_rows = (
        DEFAULT_MEMORY_ROWS if memory_rows is None else check_int("memory_rows", memory_rows, 0)
    )
    if hierarchies is not None and not isinstance(hierarchies, Mapping):
        raise HierarchyError(f"hierarchies must be a dict {{QI column: hierarchy}}, got {type(hierarchies).__name__} "
                             f"{_shown(hierarchies)}")
    hierarchies = dict(hierarchies or {})
    unknown = sorted(set(hierarchies) - set(qid))
    if unknown:
        raise HierarchyError(f"hierarchies given for columns that are not QIs: {unknown}; QIs: {qid}")
    types = dict(source.columns)
    nulls = _null_presence(engine, source, qid)
    qis = []
    for position, name in enumerate(qid):
        data_type = types[name]
        if name in hierarchies:
            h = load_hierarchy(hierarchies[name], con=engine.con)
            _check_leaves(engine, source, name, h)
            qis.append(QI(name, position, data_type, "hierarchy", nulls[name],
                          h.with_null_leaf() if nulls[name] else h))
            continue
        kind = classify(data_type)
        if kind is None:
            raise UnsupportedTypeError(
                f"QI {name!r} has type {data_type}, which sqlanon cannot generalize. Supported: "
                f"integers, floats, decimals, dates, timestamps, VARCHAR, BOOLEAN, ENUM (ordered), "
                f"or any type with a hierarchy."
            )
        qis.append(QI(name, position, data_type, kind, nulls[name]))
    _check_finite(engine, source, qis)
    workload = resolve_workload(
        engine, source.ref, types, source.rows, qid, k, sensitive=sensitive, l=l,
        constraints=constraints, target=target, criterion=criterion, selections=selections,
        qis=qis,
    )
    outputs = _outputs(engine, objects, source, tuple(qis), view, replace)
    return Spec(source, tuple(qis), k, outputs, memory_rows, replace, workload)


# -- helpers ---------------------------------------------------------------------------------
def _catalog(engine: Engine) -> list[tuple[str, str, str, str, bool]]:
    return engine.fetch_rows(g.template("catalog_objects"))


def _find_source(engine: Engine, objects: list, table: str, count: bool = True) -> Source:
    if not isinstance(table, str) or not table:
        raise InputError(f"table must be a non-empty string, got {table!r}")
    current = _current(engine)
    matches = [o for o in objects if o[2] == table]
    if not matches and 1 < len(table.split(".")) <= 3:  # schema.table or catalog.schema.table
        parts = table.split(".")
        matches = [o for o in objects if list(o[3 - len(parts) : 3]) == parts]
    if not matches:
        matches = [o for o in objects if o[2].lower() == table.lower()]
    if not matches and _is_file(table):
        return _file_source(engine, table, count)
    # The current schema shadows temp objects, which shadow other schemas (DuckDB's lookup order).
    preferred = [o for o in matches if tuple(o[:2]) == current] or [o for o in matches if o[0] == "temp"]
    if preferred:
        matches = preferred
    if len(matches) != 1:
        if matches:
            where = ", ".join(f"{o[0]}.{o[1]}.{o[2]}" for o in matches)
            raise UnknownTableError(f"{table!r} is ambiguous: {where}; qualify it as schema.table")
        raise UnknownTableError(
            f"no table or view named {table!r}." + did_you_mean(table, {o[2] for o in objects})
        )
    catalog, schema, name, kind, _ = matches[0]
    columns = tuple(
        (c, t)
        for c, t in engine.fetch_rows(
            g.template("catalog_columns", catalog=g.lit(catalog), schema=g.lit(schema), name=g.lit(name))
        )
    )
    ref = g.table(name, schema, catalog)
    rows = int(engine.scalar(exp.select(exp.Count(this=exp.Star())).from_(ref))) if count else -1
    return Source(catalog, schema, name, kind, columns, rows)


def _is_file(table: str) -> bool:
    suffix = Path(table.replace("*", "x")).suffix.lower()
    return suffix in _READERS and ("*" in table or Path(table).is_file())


def _file_source(engine: Engine, path: str, count: bool) -> Source:
    """Parquet, CSV or JSON files read in place (a glob reads several)."""
    probe = Source("", "", "", "file", (), -1, path)
    described = engine.fetch_rows(exp.Describe(this=exp.select("*").from_(probe.ref)))
    columns = tuple((r[0], r[1]) for r in described)
    rows = int(engine.scalar(exp.select(exp.Count(this=exp.Star())).from_(probe.ref))) if count else -1
    stem = Path(path).name.split(".")[0].replace("*", "") or "files"
    return Source("", "", stem, "file", columns, rows, path)


def check_qid(qid: Any) -> list[str]:
    """The QI list as a list of distinct column names, or an :class:`InputError`.

    Any ordered iterable of strings is accepted (a list, a tuple, a pandas Index); a string, a
    mapping or a set is not: a string would be read as one-letter columns, and the QI order
    matters (it orders the regions and ties between QIs), which a set does not keep.
    """
    if isinstance(qid, str):
        raise InputError(f"qid must be a list of column names, got the string {qid!r}; use [{qid!r}]")
    if isinstance(qid, (bytes, Mapping, set, frozenset)) or not isinstance(qid, Iterable):
        raise InputError(f"qid must be a list of column names (e.g. ['age', 'zip']), got "
                         f"{type(qid).__name__} {_shown(qid)}")
    qid = list(qid)
    if not qid:
        raise InputError("qid is empty: name at least one quasi-identifier column")
    seen: set[str] = set()
    for name in qid:
        if not isinstance(name, str):
            raise InputError(f"QI names must be strings, got {name!r}")
        if name in seen:
            raise InputError(f"QI {name!r} is listed twice in qid")
        seen.add(name)
    return qid


def _check_qid(qid: Sequence[str], source: Source) -> list[str]:
    qid = check_qid(qid)
    for name in qid:
        if name not in source.column_names:
            raise UnknownColumnError(
                f"table {source.name!r} has no column {name!r}." + did_you_mean(name, source.column_names)
            )
    return qid


def check_int(label: str, value: Any, minimum: int | None = None) -> int:
    """``value`` as a Python ``int``, or an :class:`InputError` naming ``label``.

    Python and numpy integers are accepted (``k=df["k"].max()`` is an ``np.int64``); the result
    is a Python int, so it can go into JSON (the manifest) and SQL literals. Booleans are refused
    although Python counts them as integers (``k=True`` is a mistake, not 1), and so are floats,
    even integral ones: a count given as ``10.0`` is usually a computed value that only happens
    to be whole.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise InputError(f"{label} must be an integer, got {_shown(value)}")
    if minimum is not None and value < minimum:
        raise InputError(f"{label} must be at least {minimum}, got {value}")
    return int(value)


def check_number(label: str, value: Any, minimum: float) -> float:
    """``value`` as a finite Python ``float`` >= ``minimum`` (Python or numpy ints and floats,
    never booleans), or an :class:`InputError` naming ``label``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not math.isfinite(value) or value < minimum:
        raise InputError(f"{label} must be a number >= {minimum:g}, got {_shown(value)}")
    return float(value)


def check_bool(label: str, value: Any) -> bool:
    """``value`` as a Python ``bool``: a flag such as ``replace=`` given as ``"no"`` or ``1`` would
    otherwise be truthy and overwrite objects."""
    if not isinstance(value, (bool, np.bool_)):
        raise InputError(f"{label} must be True or False, got {_shown(value)}")
    return bool(value)


def check_callable(label: str, value: Any) -> Callable[..., Any] | None:
    """``value`` if it is None or callable (a callback such as ``progress=``); checked up front, as
    the first call would only come after the first level of the partitioning."""
    if value is not None and not callable(value):
        raise InputError(f"{label} must be a function (or None), got {type(value).__name__} {_shown(value)}")
    return value


def _shown(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


#: Float QI types: the only ones whose values can be infinite or NaN.
_FLOAT = re.compile(r"^(FLOAT|REAL|DOUBLE|FLOAT4|FLOAT8)$")


def _check_finite(engine: Engine, source: Source, qis: Sequence[QI]) -> None:
    """Refuse ordered float QIs holding inf, -inf or NaN, or spanning a range that overflows.

    Numeric QIs are measured by their range (the normalized range picks the QI to split, see
    :func:`sqlanon.criteria.normalized_range`): an infinite value makes every range that holds
    it infinite and the column's whole range ``inf``, NaN (which DuckDB sorts above ``inf``)
    makes it undefined, and so does a finite range beyond the largest DOUBLE. Ranks would
    still work, but widths compared across QIs would not, silently: refuse instead. One
    aggregate over the float QIs; DECIMAL and integer types cannot hold these values.
    """
    floats = [q for q in qis if q.kind == "numeric" and _FLOAT.match(q.data_type.upper())]
    if not floats:
        return
    aggregates: list[exp.Expression] = []
    for q in floats:
        value = exp.Cast(this=g.col(q.name), to=exp.DataType.build("DOUBLE"))
        finite = exp.Anonymous(this="isfinite", expressions=[value.copy()])
        aggregates += [
            exp.Filter(this=exp.Count(this=exp.Star()),
                       expression=exp.Where(this=exp.Anonymous(this="isinf", expressions=[value.copy()]))),
            exp.Filter(this=exp.Count(this=exp.Star()),
                       expression=exp.Where(this=exp.Anonymous(this="isnan", expressions=[value.copy()]))),
            exp.Filter(this=exp.Min(this=value.copy()), expression=exp.Where(this=finite.copy())),
            exp.Filter(this=exp.Max(this=value.copy()), expression=exp.Where(this=finite)),
        ]
    row = engine.fetch_rows(exp.select(*aggregates).from_(source.ref))[0]
    for i, q in enumerate(floats):
        infinite, nan, low, high = row[4 * i: 4 * i + 4]
        if infinite or nan:
            parts = [f"{infinite} infinite (inf or -inf)"] * bool(infinite) + [f"{nan} NaN"] * bool(nan)
            raise InputError(
                f"QI {q.name!r} ({q.data_type}) has {int(infinite) + int(nan)} row(s) that are not finite numbers: "
                f"{' and '.join(parts)}. A numeric QI is generalized to ranges, and these make ranges "
                f"infinite or undefined. Filter them out (a view over {source.name!r} WHERE isfinite({q.name})) "
                f"or replace them (e.g. by NULL) first.")
        # 2x: a column with NULLs also measures a gap below its smallest value (domain.ordered_positions)
        if low is not None and not math.isfinite(2.0 * (float(high) - float(low))):
            raise InputError(
                f"QI {q.name!r} ({q.data_type}) spans from {low!r} to {high!r}: its range overflows a DOUBLE, "
                f"so sqlanon cannot measure it. Rescale the column (e.g. divide it in a view over "
                f"{source.name!r}) or filter the extreme rows first.")


def _null_presence(engine: Engine, source: Source, qid: list[str]) -> dict[str, bool]:
    counts = [exp.Count(this=g.col(name)) for name in qid]
    row = engine.fetch_rows(exp.select(*counts).from_(source.ref))[0]
    return {name: int(n) < source.rows for name, n in zip(qid, row)}


def _check_leaves(engine: Engine, source: Source, name: str, h: Hierarchy) -> None:
    rows = distinct_values(engine, name, source.ref, classify(types_of(source)[name]) == "numeric")
    bad = leaf_codes(h, rows["v"], rows["t"]) < 0
    missing = sorted({str(t) for t in rows["t"][bad]})
    if missing:
        shown = ", ".join(repr(v) for v in missing[:20])
        more = f" and {len(missing) - 20} more" if len(missing) > 20 else ""
        raise HierarchyError(
            f"the hierarchy for {name!r} misses {len(missing)} value(s) present in the data: "
            f"{shown}{more}. Every value must be a leaf."
        )


def distinct_values(engine: Engine, column: str, source: exp.Table, numeric: bool) -> dict[str, np.ndarray]:
    """Distinct non-NULL values of a column (``v``) with their text form (``t``).

    Only numbers are fetched as values (so ``39.0`` can match a leaf ``39``); other types are
    matched by the database's text form (fetching e.g. TIMESTAMPTZ values would need pytz).
    """
    text = exp.Cast(this=g.col(column), to=exp.DataType.build("VARCHAR"))
    return engine.fetch(
        exp.select(
            g.alias(g.col(column) if numeric else text.copy(), "v"),
            g.alias(text, "t"),
        )
        .distinct()
        .from_(source)
        .where(exp.Not(this=exp.Is(this=g.col(column), expression=exp.Null())))
    )


def types_of(source: Source) -> dict[str, str]:
    return dict(source.columns)


def _outputs(
    engine: Engine, objects: list, source: Source, qis: tuple[QI, ...], view: str | None, replace: bool
) -> Outputs:
    """Output names, checked like DuckDB resolves them: unqualified names in the current schema,
    compared case-insensitively."""
    view = view if view is not None else f"{source.name}_anon"
    if not isinstance(view, str) or not view:
        raise InputError(f"view must be a non-empty string, got {view!r}")
    hierarchies = f"{view}_hierarchies" if any(not q.ordered for q in qis) else None
    names = [view, f"{view}_rules"] + ([f"{view}_rowmap"] if source.has_rowid else []) + ([hierarchies] if hierarchies else [])
    current = _current(engine)
    here = {o[2].lower(): (o[2], o[3]) for o in objects if (o[0], o[1]) == current}
    existing = []
    for name in names:
        if (source.catalog, source.schema) == current and name.lower() == source.name.lower():
            raise ObjectExistsError(f"output {name!r} would overwrite the source {source.name!r}; choose another view=")
        if name.lower() in here:
            found, kind = here[name.lower()]
            if not replace:
                raise ObjectExistsError(
                    f"a {kind} named {found!r} already exists; pass replace=True to overwrite it or "
                    f"choose another view= name"
                )
            existing.append((found, kind))
    if existing and engine.in_transaction():
        raise InputError(
            "replace=True inside an open transaction: if the new release failed its check, the one it "
            "replaces could not be restored. Commit or roll back first, or choose another view= name."
        )
    _unique_columns(source, qis)
    return Outputs(view, names[1], f"{view}_rowmap", materialize=not source.has_rowid, hierarchies=hierarchies,
                   existing=tuple(existing))


def _unique_columns(source: Source, qis: tuple[QI, ...]) -> None:
    """The view's and the rules' columns must be distinct (DuckDB compares them case-insensitively)."""
    qi_names = {q.name for q in qis}
    view_cols = [c for c in source.column_names if c not in qi_names] + [p for q in qis for p in q.published]
    rules_cols = ["region", "size"] + [c for q in qis for c in q.published + q.box_columns]
    for what, cols in (("anonymized view", view_cols + [EQ_CLASS]), ("rules relation", rules_cols)):
        seen: dict[str, str] = {}
        for c in cols:
            if c.lower() in seen:
                raise ObjectExistsError(
                    f"the {what} would have duplicate columns {c!r} and {seen[c.lower()]!r} (names are "
                    f"case-insensitive): a QI's generalization columns collide with another column; "
                    f"rename one in a view over the source first"
                )
            seen[c.lower()] = c


def _current(engine: Engine) -> tuple[str, str]:
    row = engine.fetch_rows(exp.select(exp.func("current_database"), exp.func("current_schema")))[0]
    return row[0], row[1]
