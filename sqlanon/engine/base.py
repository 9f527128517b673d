"""The engine adapter: the one place that talks to the database.

It renders sqlglot expressions in its dialect, executes them, fetches results as numpy arrays,
uploads numpy arrays as temp tables, and hands out run-unique temp names that it drops in
:meth:`Engine.cleanup`. Everything else in sqlanon builds expressions and never touches the
connection, so that another engine (PostgreSQL, Spark SQL) needs only another adapter.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import uuid
import weakref
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any, TypeVar

import duckdb
import numpy as np
import pandas as pd
from sqlglot import exp

from . import sqlgen as g
from ..errors import EngineError, InputError, ReadOnlyError

Statement = exp.Expression | str

#: The connection types sqlanon accepts, and how error messages name them.
CONNECTION_TYPES: tuple[type, ...] = (duckdb.DuckDBPyConnection,)
_ACCEPTED = "a duckdb.DuckDBPyConnection (duckdb.connect(...))"


def check_connection(con: Any) -> duckdb.DuckDBPyConnection:
    """``con`` if it is a connection sqlanon can use, else an :class:`InputError` naming the
    accepted types.

    Every public entry point builds an :class:`Engine` first, so checking here refuses a wrong
    ``con`` before anything is read or written (instead of an ``AttributeError`` from deep inside
    a run). The check is by type: duck-typed stand-ins would fail later, mid-run.
    """
    if not isinstance(con, CONNECTION_TYPES):
        raise InputError(f"con must be {_ACCEPTED}, got {type(con).__name__} {_short(con)}")
    return con


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class Engine:
    """A DuckDB connection plus the temp objects of one run.

    Args:
        con: an open DuckDB connection; sqlanon never closes it.

    Raises:
        InputError: ``con`` is not a supported connection (see :func:`check_connection`).
    """

    dialect = "duckdb"

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = check_connection(con)
        self.prefix = f"__sqlanon_{uuid.uuid4().hex[:10]}_"
        self._temps: list[str] = []
        self.statements = 0

    # -- rendering and execution -------------------------------------------------------------
    def render(self, statement: Statement) -> str:
        """SQL text of ``statement`` in this engine's dialect."""
        if isinstance(statement, str):
            return statement
        return statement.sql(dialect=self.dialect)

    def execute(self, statement: Statement) -> duckdb.DuckDBPyConnection:
        """Run one statement; database errors are re-raised with the SQL that failed."""
        sql = self.render(statement)
        self.statements += 1
        try:
            return self.con.execute(sql)
        except duckdb.Error as e:  # the engine's own errors, never ours
            raise EngineError(str(e), sql) from e

    def fetch(self, statement: Statement) -> dict[str, np.ndarray]:
        """Run a query and return its columns as numpy arrays (masked arrays become NaN/None)."""
        result = self.execute(statement).fetchnumpy()
        return {name: _plain(col) for name, col in result.items()}

    def fetch_rows(self, statement: Statement) -> list[tuple[Any, ...]]:
        """Run a query and return its rows as Python tuples."""
        return self.execute(statement).fetchall()

    def scalar(self, statement: Statement) -> Any:
        """Run a query and return the first column of its first row."""
        rows = self.execute(statement).fetchall()  # fetch all: DuckDB refuses new work while a result is open
        return rows[0][0] if rows else None

    def in_transaction(self) -> bool:
        """Whether the caller has an explicit transaction open.

        DuckDB's Python API does not say, and a failed ``BEGIN`` would abort the caller's
        transaction; but in autocommit mode every statement gets a new transaction id, while
        inside a transaction the id stays the same.
        """
        probe = exp.select(exp.func("txid_current"))
        return self.scalar(probe) == self.scalar(probe)

    def check_writable(self, what: str) -> None:
        """Refuse, before any work, when the connection's current database is read-only.

        sqlanon creates its persistent objects (a release, an applied table) unqualified, so in
        the current database and schema. Temp tables still work on a read-only database
        (``duckdb.connect(path, read_only=True)``), so without this check a run would only fail
        when it publishes, after all the partitioning. ``what`` names what would be written.

        Raises:
            ReadOnlyError: naming the database, its file and the schema the objects would go to.
        """
        where = exp.EQ(this=g.col("database_name"), expression=exp.func("current_database"))
        cursor = self.execute(exp.select(exp.Star(), exp.func("current_schema"))
                              .from_(exp.Table(this=exp.Anonymous(this="duckdb_databases"))).where(where))
        names = [d[0] for d in cursor.description]
        rows = cursor.fetchall()
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
    def temp_name(self, purpose: str) -> str:
        """A run-unique name for a temp object; it is dropped by :meth:`cleanup`."""
        name = f"{self.prefix}{purpose}"
        self._temps.append(name)
        return name

    def upload(self, purpose: str, columns: Mapping[str, np.ndarray]) -> str:
        """Create a temp table from numpy columns and return its name."""
        name = self.temp_name(purpose)
        frame = pd.DataFrame({k: np.asarray(v) for k, v in columns.items()})
        view = f"{name}_src"
        self.con.register(view, frame)
        try:
            self.execute(g.create_table_as(name, exp.select("*").from_(g.table(view)), replace=True))
        finally:
            self.con.unregister(view)
        return name

    def drop_temp(self, name: str) -> None:
        """Drop one temp table now (large intermediates are not kept to the end of the run)."""
        self.execute(g.drop(name, "TABLE"))
        if name in self._temps:
            self._temps.remove(name)

    def threads(self) -> int:
        """The connection's DuckDB ``threads`` setting: how many cores this run may use."""
        return max(1, int(self.con.execute("SELECT current_setting('threads')").fetchall()[0][0]))

    def cleanup(self) -> None:
        """Drop every temp object of this run; safe to call twice and after errors."""
        while self._temps:
            name = self._temps.pop()
            try:
                self.con.execute(self.render(g.drop(name, "TABLE")))
            except duckdb.Error:  # a dead connection: nothing left to clean
                pass


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


# -- one caller per connection -----------------------------------------------------------------
_LOCKS: weakref.WeakKeyDictionary[Any, threading.RLock] = weakref.WeakKeyDictionary()
_LOCKS_GUARD = threading.Lock()

F = TypeVar("F", bound=Callable[..., Any])


def connection_lock(con: Any) -> AbstractContextManager[Any]:
    """The lock of one connection. A DuckDB connection has one result set at a time, so two
    threads sharing it would read each other's results; sqlanon's entry points take this lock
    and run one after the other on a connection (re-entrant: an entry point may call another).
    Different connections (cursors) run in parallel; publication is atomic across them."""
    try:
        with _LOCKS_GUARD:
            lock = _LOCKS.get(con)
            if lock is None:
                lock = _LOCKS[con] = threading.RLock()
        return lock
    except TypeError:  # not a connection at all: the entry point's own check says so
        return contextlib.nullcontext()


def serialized(function: F) -> F:
    """Decorate a public entry point whose first argument is the connection: see
    :func:`connection_lock`."""

    @functools.wraps(function)
    def wrapper(con: Any, *args: Any, **kwargs: Any) -> Any:
        with connection_lock(con):
            return function(con, *args, **kwargs)

    return wrapper  # type: ignore[return-value]
