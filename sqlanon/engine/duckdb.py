"""DuckDB: the embedded engine (and the reference every other engine must match)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
from sqlglot import exp

from ..errors import EngineError, InputError, ReadOnlyError
from . import duckdb_names
from . import sqlgen as g
from .base import CatalogObject, Engine, short

#: What DuckDB quotes of the data in its errors: a CSV reader's error quotes the file's line it
#: failed on (``Original Line: ...``), and a failed cast the value (``Could not convert string
#: "..." to 'BIGINT'``). A file read in place may be anything (a path typed by mistake, another
#: user's file), and a table's values are what is being anonymized: neither is repeated.
_QUOTED_LINE = re.compile(r"^Original Line:.*(?:\n|$)", re.MULTILINE)
_QUOTED_VALUE = re.compile(r"(Could not convert string ).*( to '[^'\n]*')")


def redacted(message: str) -> str:
    """DuckDB's error ``message`` without the data it quotes (:data:`_QUOTED_LINE`).

    >>> redacted('CSV Error on Line: 3\\nOriginal Line: 5,secret\\nCould not convert string "secret" to \\'BIGINT\\'')
    "CSV Error on Line: 3\\nCould not convert string (a value) to 'BIGINT'"
    """
    return _QUOTED_VALUE.sub(r"\1(a value)\2", _QUOTED_LINE.sub("", message))


#: The integer house types (:meth:`DuckDBEngine.codes_here`).
INTEGERS = frozenset({"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT"})

#: File extensions DuckDB reads in place, and the reader of each.
READERS = {".parquet": "read_parquet", ".csv": "read_csv", ".tsv": "read_csv", ".gz": "read_csv",
           ".json": "read_json", ".jsonl": "read_json", ".ndjson": "read_json"}


class DuckDBEngine(Engine):
    """A ``duckdb.DuckDBPyConnection`` plus the temp objects of one run."""

    name = "duckdb"
    reads_files = True
    title = "DuckDB"
    dialect = "duckdb"

    #: The rules' lookups a few QIs per statement (at most ``LOOKUP_ROWS`` codes looked up): the
    #: 36 lookup joins of nine QIs in one statement ran out of memory at 10M rows under
    #: memory_limit='300MB' (the run's temp tables fill the buffer pool, and every join's hash
    #: table is held at once).
    split_lookups = True
    #: The sample's hash filter runs before the view's lookups (:meth:`sample`): Rothko-S's first
    #: round rewrites from the view (100M Agrawal rows under memory_limit='2GB': 114.6-122.1 s
    #: against 134.5-165.4 s from a written table).
    samples_views = True
    clusters_snapshot = True  # see Engine.clusters_snapshot
    render_in_place = True  # see Engine.render_in_place

    def __init__(self, con: Any) -> None:
        if not isinstance(con, duckdb.DuckDBPyConnection):
            raise InputError(f"con must be a duckdb.DuckDBPyConnection, got {type(con).__name__} {short(con)}")
        super().__init__(con)

    # -- execution ----------------------------------------------------------------------------
    def _cursor(self, sql: str) -> duckdb.DuckDBPyConnection:
        try:
            return self.con.execute(sql)
        except duckdb.Error as e:  # the engine's own errors, never ours
            raise EngineError(redacted(str(e)), sql) from e

    def _run(self, sql: str) -> None:
        self._cursor(sql)

    def _fetch_numpy(self, sql: str) -> dict[str, np.ndarray]:
        result = self._cursor(sql).fetchnumpy()
        return {name: _plain(col) for name, col in result.items()}

    def _fetch_rows(self, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        cursor = self._cursor(sql)
        names = [d[0] for d in cursor.description or ()]
        return names, cursor.fetchall()  # fetch all: DuckDB refuses new work while a result is open

    def fetch_frame(self, statement: Any) -> pd.DataFrame:
        sql = self.render(statement)
        self.statements += 1
        return self._cursor(sql).df()

    def relation(self, statement: Any) -> Any:
        """A lazy ``duckdb.DuckDBPyRelation`` over a query (DuckDB's own result type)."""
        return self.con.sql(self.render(statement))

    def run_script(self, text: str) -> None:
        self.statements += 1
        self._cursor(text)

    # -- transactions -------------------------------------------------------------------------
    def in_transaction(self) -> bool:
        """DuckDB's Python API does not say, and a failed ``BEGIN`` would abort the caller's
        transaction; but in autocommit mode every statement gets a new transaction id, while
        inside a transaction the id stays the same."""
        probe = exp.select(exp.func("txid_current"))
        return self.scalar(probe) == self.scalar(probe)

    def check_writable(self, what: str) -> None:
        """Temp tables still work on a read-only database (``duckdb.connect(path,
        read_only=True)``), so without this check a run would only fail when it publishes."""
        where = exp.EQ(this=g.col("database_name"), expression=exp.func("current_database"))
        names, rows = self.fetch_described(exp.select(exp.Star(), exp.func("current_schema"))
                                           .from_(exp.Table(this=exp.Anonymous(this="duckdb_databases"))).where(where))
        if not rows or "readonly" not in names:  # an engine version without the column cannot tell
            return
        row = dict(zip(names, rows[0]))
        if row["readonly"]:
            name, schema = row["database_name"], rows[0][-1]
            path = f" ({row['path']})" if row.get("path") else ""
            raise ReadOnlyError(
                f"database {name!r}{path} is read-only (opened with read_only=True), and {what} would be "
                f"written to it, in schema {name}.{schema}. Nothing was done: open the database without "
                f"read_only=True to write there.")

    # -- temp objects -------------------------------------------------------------------------
    def upload(self, purpose: str, columns: Mapping[str, np.ndarray],
               types: Mapping[str, str] | None = None) -> str:
        name = self.temp_name(purpose)
        # copy=False: the frame wraps the arrays (pandas would copy them into blocks; at 100M rows
        # the rules' 727K regions x 47 columns made that copy the run's peak memory)
        frame = pd.DataFrame({k: np.asarray(v) for k, v in columns.items()}, copy=False)
        self._from_frame(name, frame, temporary=True, replace=True, types=types)
        return name

    def create_from_frame(self, name: str, frame: Any, *, replace: bool = False, schema: str | None = None) -> None:
        self._from_frame(name, frame, temporary=False, replace=replace, schema=schema)

    def _from_frame(self, name: str, frame: pd.DataFrame, *, temporary: bool, replace: bool,
                    schema: str | None = None, types: Mapping[str, str] | None = None) -> None:
        # Read through a relation (DuckDBPyRelation.query), not a registered view: a registered
        # frame is a catalog entry, and inside a transaction (the publication) DuckDB keeps a
        # dropped entry -- and with it the frame's arrays -- until the commit (at 100M rows the
        # rules' 727K regions held about 200 MB through the whole publication). The relation
        # lets go of the frame when the statement ends.
        view = f"{self.prefix}frame"
        columns: list[exp.Expression] = [exp.Star()] if not types else [
            g.alias(exp.Cast(this=g.col(str(c)), to=exp.DataType.build(types[str(c)], dialect=self.dialect))
                    if str(c) in types else g.col(str(c)), str(c)) for c in frame.columns]
        create = g.create_table_as(name, exp.select(*columns).from_(g.table(view)), temporary=temporary, replace=replace)
        if schema:
            create.this.set("db", g.ident(schema))
        sql = self.render(create)
        self.statements += 1
        try:  # a pandas DataFrame, or a PyArrow table (sqlanon.anonymize_frame)
            (self.con.from_df(frame) if isinstance(frame, pd.DataFrame) else self.con.from_arrow(frame)).query(view, sql)
        except duckdb.Error as e:  # the engine's own errors, never ours
            raise EngineError(redacted(str(e)), sql) from e

    def hold(self, name: str, columns: Mapping[str, np.ndarray]) -> bool:
        """A registered frame: a Python object the connection reads, not a catalog write (it
        works on a database opened read-only). Its arrays are copies: the run may reuse the
        arrays it uploaded, which a table would not see."""
        self.con.register(name, pd.DataFrame({k: np.array(v, copy=True) for k, v in columns.items()}, copy=False))
        return True

    def let_go(self, name: str) -> None:
        with contextlib.suppress(duckdb.Error):  # a closed connection holds nothing
            self.con.unregister(name)

    def create_beside(self, name: str, rows: exp.Select, rid: exp.Column, ids: np.ndarray,
                      columns: Mapping[str, np.ndarray], order: str | None = None) -> None:
        """A ``POSITIONAL JOIN`` of the rows with the arrays, when both list the rows in the same
        order: the ids strictly ascending, and DuckDB keeping a table's storage order in a scan
        (``preserve_insertion_order``, the default) -- a table written from a scan (the run's
        snapshot) lists its rows in the order of the ids it was numbered with. Each row's id is
        compared with the array's all the same, and a row out of place fails the statement
        (``error()``): a class is never written beside another row. At 10M Agrawal rows the
        hash join by id took 1.2 s of CPU of the 2.9 s statement; the positional one adds
        nothing to writing the table. Else :meth:`Engine.create_beside`'s join."""
        ids = np.asarray(ids)
        if not (len(ids) and bool((ids[1:] > ids[:-1]).all()) and self._preserves_order()):
            super().create_beside(name, rows, rid, ids, columns, order)
            return
        view = f"{self.prefix}frame"
        key = f"{self.prefix}id"
        frame = pd.DataFrame({key: ids, **{c: np.asarray(v) for c, v in columns.items()}}, copy=False)
        same = exp.EQ(this=g.col(key, "f"), expression=rid.copy())
        misplaced = exp.Anonymous(this="error", expressions=[g.lit("sqlanon: a row and its class are out of place")])
        query = rows.copy().join(exp.Join(this=exp.alias_(g.table(view), g.ident("f"), table=True), method="POSITIONAL"))
        query = query.select(*[g.alias(exp.Case().when(same.copy(), g.col(c, "f")).else_(misplaced.copy()), c)
                               for c in columns], copy=False)
        if order is not None:
            query = query.order_by(g.col(order), copy=False)
        sql = self.render(g.create_table_as(name, query, temporary=False))
        self.statements += 1
        try:  # through a relation, as _from_frame: nothing of the frame stays in the catalog
            self.con.from_df(frame).query(view, sql)
        except duckdb.Error as e:
            raise EngineError(redacted(str(e)), sql) from e

    def _preserves_order(self) -> bool:
        """DuckDB's ``preserve_insertion_order`` setting."""
        setting = self.scalar(exp.select(exp.func("current_setting", g.lit("preserve_insertion_order"))))
        return str(setting).lower() in ("true", "1")

    @contextlib.contextmanager
    def frame_as(self, name: str, frame: Any) -> Iterator[None]:
        """Inside the block ``frame`` (a pandas DataFrame or a PyArrow table) is the temporary
        view ``name``, which an unqualified ``name`` binds to before a table of that name
        (:mod:`sqlanon.engine.duckdb_names`): a request on the frame is checked against it
        before anything is written. Nothing is left in the catalog after the block."""
        self.con.register(name, frame)
        try:
            yield
        finally:
            self.con.unregister(name)

    # -- what DuckDB spells its own way ---------------------------------------------------------
    def row_hash(self, values: Sequence[exp.Expression]) -> exp.Expression:
        return exp.Anonymous(this="hash", expressions=list(values))  # a UBIGINT

    def epoch_us(self, value: exp.Expression, data_type: str) -> exp.Expression:
        return exp.Anonymous(this="epoch_us", expressions=[value])

    def is_infinite(self, value: exp.Expression) -> exp.Expression:
        return exp.Anonymous(this="isinf", expressions=[value])

    def is_nan(self, value: exp.Expression) -> exp.Expression:
        return exp.Anonymous(this="isnan", expressions=[value])

    def code_type(self, size: int) -> str:
        """The working table is rewritten at every SQL level, so its width is what a level costs."""
        return "UTINYINT" if size <= 2**8 else "USMALLINT" if size <= 2**16 else "INTEGER"

    def codes_here(self, data_type: str) -> bool:
        """Integers: where the run's rows are fetched anyway, their values are fetched and
        counted here (:func:`sqlanon.mondrian.encode.ranked`) rather than ranked by a ``DISTINCT``
        per QI and joined with its code table in the view. At 10M Agrawal rows the code tables
        of hvalue, loan, salary and commission cost about 1.3 s of CPU; counting all nine QIs
        here about 0.5 s. Other types keep their code tables (a float or text column is sorted
        to be ranked, which DuckDB does on every core)."""
        return data_type in INTEGERS

    def row_ids(self, columns: Sequence[str], table: bool) -> exp.Expression:
        """A table's ``rowid`` (storage order) unless a column of that name hides it."""
        if table and "rowid" not in {c.lower() for c in columns}:
            return exp.column("rowid")
        return super().row_ids(columns, table)

    def reads_in_place(self, columns: Sequence[str], table: bool) -> bool:
        """A table's ``rowid`` inside a transaction: a transaction reads the version of the
        table it began with, under the row ids that version had, even when another connection
        deletes rows and checkpoints meanwhile (``tests/e2e/test_engines.py`` checks this)."""
        return table and "rowid" not in {c.lower() for c in columns}

    def memory_limit(self) -> int | None:
        """The connection's DuckDB ``memory_limit`` setting in bytes (DuckDB shows it as e.g.
        ``'18.8 GiB'``; "no limit" is shown as some PiB, capped by the caller)."""
        return parse_bytes(str(self.scalar(exp.select(exp.func("current_setting", g.lit("memory_limit"))))))

    #: Bytes of DuckDB memory per row of a table-sized join in one statement (the row-id hash
    #: table and what the run's temp tables keep resident): 10M rows under memory_limit='2GB'.
    bytes_per_joined_row = 200

    def join_rows(self) -> int | None:
        """:meth:`usable_memory` / :attr:`bytes_per_joined_row` rows (10M with ``memory_limit='2GB'``).
        At 100M rows under 2GB the published snapshot's single join ran out of memory while the
        run's temp tables filled the buffer pool; five joins of 20M rows each completed, in 57 s
        against the single join's 90 s when it ran alone. Over temp tables DuckDB held 0.75 GiB
        beyond its limit in a 20M-row join, 0.5 GiB in a 10M-row one and 0.14 GiB in a 5M-row
        one (43.6 s, 43.0 s and 53.5 s for all 100M rows): 10M keeps the run under 3 GB."""
        limit = self.usable_memory()
        return None if limit is None else max(1, limit // self.bytes_per_joined_row)

    def threads(self) -> int:
        """The connection's DuckDB ``threads`` setting."""
        return max(1, int(self.scalar(exp.select(exp.func("current_setting", g.lit("threads"))))))

    def file_source(self, path: str) -> exp.Table:
        reader = READERS[Path(path.replace("*", "x")).suffix.lower()]
        return exp.Table(this=exp.Anonymous(this=reader, expressions=[g.lit(path)]))

    def export(self, query: exp.Expression, path: str, params: Sequence[exp.CopyParameter]) -> None:
        self.execute(exp.Copy(this=exp.Subquery(this=query), kind=False, files=[g.lit(path)], params=list(params)))

    def install_macros(self, script: str, prefix: str) -> list[tuple[str, list[str]]]:
        self.run_script(script)
        functions = exp.Table(this=exp.Anonymous(this="duckdb_functions"))
        query = (
            exp.select(g.col("function_name"), g.col("parameters")).distinct().from_(functions)
            .where(exp.and_(
                exp.Anonymous(this="starts_with", expressions=[g.col("function_name"), g.lit(prefix)]),
                exp.EQ(this=g.col("function_type"), expression=g.lit("table_macro")),
                exp.EQ(this=g.col("database_name"), expression=exp.func("current_database")),
            ))
            .order_by(g.col("function_name"))
        )
        return [(name, list(params)) for name, params in self.fetch_rows(query)]

    # -- catalog ------------------------------------------------------------------------------
    def objects(self) -> list[CatalogObject]:
        return [CatalogObject(c, s, n, k, bool(t), comment, sql)
                for c, s, n, k, t, comment, sql in self.fetch_rows(g.template("catalog_objects"))]

    def columns(self, catalog: str, schema: str, name: str) -> list[tuple[str, str]]:
        return [(c, t) for c, t in self.fetch_rows(
            g.template("catalog_columns", catalog=g.lit(catalog), schema=g.lit(schema), name=g.lit(name)))]

    def keys(self, catalog: str, schema: str, name: str) -> list[tuple[str, ...]]:
        return [tuple(cols) for _, cols in self.fetch_rows(
            g.template("catalog_keys", catalog=g.lit(catalog), schema=g.lit(schema), name=g.lit(name)))]

    def current(self) -> tuple[str, str]:
        row = self.fetch_rows(exp.select(exp.func("current_database"), exp.func("current_schema")))[0]
        return row[0], row[1]

    def find(self, name: str, suffix: str = "") -> CatalogObject | None:
        return duckdb_names.find(self, name, suffix)

    def search_path(self) -> list[tuple[str, str]]:
        return duckdb_names.search_path(self)

    def describe(self, query: exp.Expression) -> list[tuple[str, str]]:
        return [(row[0], row[1]) for row in self.fetch_rows(exp.Describe(this=query))]

    def set_comment(self, table: str, text: str) -> None:
        self.execute(exp.Comment(this=g.table(table), kind="TABLE", expression=g.lit(text)))


def _plain(col: np.ndarray) -> np.ndarray:
    """DuckDB returns masked arrays for nullable columns; unmask (NULL -> None/NaN)."""
    if isinstance(col, np.ma.MaskedArray):
        if not col.mask.any():
            return col.data
        if col.dtype.kind in "fc":
            return col.filled(np.nan)
        out = col.data.astype(object)
        out[col.mask] = None
        return out
    return col


def connect(database: str | None, *, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open an existing database file (never create one), or an in-memory database for None."""
    if database is None or database == ":memory:":
        return duckdb.connect()
    if not Path(database).is_file():
        raise InputError(f"database file not found: {database}")
    try:
        return duckdb.connect(database, read_only=read_only)
    except duckdb.Error as e:
        raise InputError(f"cannot open database {database}: {e}") from None


_UNITS = {"": 1, "b": 1, "byte": 1, "bytes": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12, "pb": 10**15,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "pib": 2**50}


def parse_bytes(text: str) -> int | None:
    """``'18.8 GiB'`` -> bytes, as DuckDB prints a memory size (None for anything else).

    >>> parse_bytes("1.5 GiB"), parse_bytes("476.8 MiB"), parse_bytes("2GB"), parse_bytes("none")
    (1610612736, 499961036, 2000000000, None)
    """
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([a-zA-Z]*)\s*", text)
    if m is None or m.group(2).lower() not in _UNITS:
        return None
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])
