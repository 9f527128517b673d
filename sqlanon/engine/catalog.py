"""The catalog as the request sees it: the relation a name binds to (:class:`Source`: a table or
view, or data files DuckDB reads in place), a relation's rows and distinct values, and names
free of the user's.

Every lookup goes through the engine (:meth:`Engine.find <sqlanon.engine.base.Engine.find>`,
:meth:`~sqlanon.engine.base.Engine.objects`, :meth:`~sqlanon.engine.base.Engine.current`), so a
name binds here as it binds in SQL.
"""

from __future__ import annotations

import glob
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from sqlglot import exp

from ..errors import EngineError, HierarchyError, InputError, UnknownTableError, did_you_mean
from . import sqlgen as g
from .base import CatalogObject, Engine

#: File extensions that make a name a data-file source (only DuckDB reads them in place).
DATA_SUFFIXES = (".parquet", ".csv", ".tsv", ".gz", ".json", ".jsonl", ".ndjson")


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
    reader: exp.Table | None = None  # for files: the engine's relation reading them
    keys: tuple[tuple[str, ...], ...] = ()  # declared PRIMARY KEY / UNIQUE column sets, PK first
    temporary: bool = False  # a temp table or view of the session

    @property
    def ref(self) -> exp.Table:
        if self.reader is not None:
            return self.reader.copy()
        return g.table(self.name, self.schema, self.catalog)

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c for c, _ in self.columns)


def find_source(engine: Engine, objects: Sequence[CatalogObject], table: str, count: bool = True) -> Source:
    """The relation ``table`` names, as the engine binds it in SQL (:meth:`Engine.find`), or the
    data files it names (DuckDB reads them in place); ``objects`` (:meth:`Engine.objects`) for
    the "did you mean" of an unknown name; ``count``: its rows are counted (else -1).

    Raises:
        InputError: ``table`` is not a non-empty string; UnknownTableError: nothing is named so.
    """
    if not isinstance(table, str) or not table:
        raise InputError(f"table must be a non-empty string, got {table!r}")
    found = engine.find(table)  # the one relation lookup: as the engine binds the name in SQL
    if found is None and is_file(table):
        return file_source(engine, table, count)
    if found is None:
        if Path(table.replace("*", "x")).suffix.lower() in DATA_SUFFIXES and not engine.reads_files:
            engine.file_source(table)  # the engine's own refusal: it reads no files in place
        check_path(table)
        raise UnknownTableError(
            f"no table or view named {table!r}." + did_you_mean(table, {o[2] for o in objects})
        )
    return source_of(engine, found, count)


def check_path(name: str) -> None:
    """For a name no relation answers that reads as a path of data files -- a folder in it, a
    glob, a data suffix, or an existing file -- the error about the files: not found, no file
    matching the glob, or a suffix sqlanon does not read (listing those it does), never the
    catalog's tables. The files are not opened (their lines are never quoted)."""
    suffix = Path(name.replace("*", "x")).suffix.lower()
    if not ("/" in name or "\\" in name or "*" in name or suffix in DATA_SUFFIXES or Path(name).exists()):
        return
    if "://" in name:  # a URL: DuckDB's extensions read it, or say why not
        return
    if suffix not in DATA_SUFFIXES:
        kind = f"the suffix {suffix!r}" if suffix else "a name without a suffix"
        raise InputError(f"no table or view named {name!r}, and {kind} is not a data file sqlanon reads "
                         f"(Parquet, CSV or JSON files: {', '.join(DATA_SUFFIXES)})")
    if "*" in name:
        raise UnknownTableError(f"no files match {name!r} (and no table or view has that name)")
    raise UnknownTableError(f"file not found: {name!r} (and no table or view has that name)")


def source_of(engine: Engine, found: CatalogObject, count: bool = True) -> Source:
    """The :class:`Source` of a catalog relation: its columns, keys and (if ``count``) rows."""
    catalog, schema, name, kind = found.catalog, found.schema, found.name, found.kind
    columns = tuple(engine.columns(catalog, schema, name))
    ref = g.table(name, schema, catalog)
    rows = int(engine.scalar(exp.select(exp.Count(this=exp.Star())).from_(ref))) if count else -1
    keys: tuple[tuple[str, ...], ...] = ()
    if kind == "table":
        keys = tuple(engine.keys(catalog, schema, name))
    return Source(catalog, schema, name, kind, columns, rows, keys=keys, temporary=found.temporary)


def is_file(table: str) -> bool:
    """Whether ``table`` names data files to read: an existing file with a data suffix, or a glob
    with one that matches a file (a URL's glob is DuckDB's to expand)."""
    suffix = Path(table.replace("*", "x")).suffix.lower()
    if suffix not in DATA_SUFFIXES:
        return False
    if "*" in table:
        return "://" in table or any(Path(f).is_file() for f in glob.iglob(table, recursive=True))
    return Path(table).is_file()


def file_source(engine: Engine, path: str, count: bool) -> Source:
    """Parquet, CSV or JSON files read in place (a glob reads several)."""
    reader = engine.file_source(path)
    columns = tuple(engine.describe(exp.select("*").from_(reader.copy())))
    rows = int(engine.scalar(exp.select(exp.Count(this=exp.Star())).from_(reader.copy()))) if count else -1
    stem = Path(path).name.split(".")[0].replace("*", "") or "files"
    return Source("", "", stem, "file", columns, rows, path, reader)


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


def table_rows(engine: Engine, name: str) -> list[tuple[Any, ...]] | None:
    """Every row of the table or view ``name`` binds to (columns in table order); None if
    there is none."""
    found = engine.find(name)
    if found is None:
        return None
    try:
        return engine.fetch_rows(exp.select("*").from_(found.ref))
    except EngineError as e:
        raise HierarchyError(f"cannot read hierarchy table {name!r}: {e}") from e


def free_name(base: str, taken: Iterable[str]) -> str:
    """``base``, or ``base_1``, ``base_2``, ... : the first not in ``taken`` (case-insensitively,
    as DuckDB compares names), so an internal column never collides with a user's."""
    used = {t.lower() for t in taken}
    name, i = base, 0
    while name.lower() in used:
        i += 1
        name = f"{base}_{i}"
    return name
