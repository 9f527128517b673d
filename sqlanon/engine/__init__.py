"""The engine boundary: the only code that talks to a database driver.

An :class:`~sqlanon.engine.base.Engine` renders sqlglot expressions in its dialect, executes
them, fetches results as numpy arrays, owns temp objects, transactions, the catalog, row hashing
and the other things engines spell differently. Everything outside this package builds
expressions and calls engine methods; nothing else imports ``duckdb``, ``psycopg`` or ``pyspark``.
:func:`engine_for` picks the engine of a connection; :func:`connect` opens one from a path or URL.
"""

from __future__ import annotations

from typing import Any

from ..errors import InputError
from .base import Engine, short

#: The connections sqlanon accepts, as error messages name them.
ACCEPTED = ("a duckdb.DuckDBPyConnection (duckdb.connect(...)), a psycopg 3 connection (psycopg.connect(...)) "
            "or a pyspark.sql.SparkSession")


def engine_for(con: Any) -> Engine:
    """A new :class:`Engine` for ``con``, by the driver the connection comes from.

    The driver module is imported only when a connection of it is passed, so the core install
    needs no PostgreSQL driver.

    Raises:
        InputError: ``con`` is not a connection sqlanon can use (checked by type, before any work).
    """
    if isinstance(con, Engine):  # already one (an entry point called by another)
        return con
    module = type(con).__module__ or ""
    if module.startswith(("duckdb", "_duckdb")):
        from .duckdb import DuckDBEngine

        return DuckDBEngine(con)
    if module.startswith("psycopg"):
        from .postgres import PostgresEngine

        return PostgresEngine(con)
    if module.startswith("pyspark"):
        from .spark import SparkEngine

        return SparkEngine(con)
    raise InputError(f"con must be {ACCEPTED}, got {type(con).__name__} {short(con)}")


def check_connection(con: Any) -> Any:
    """``con`` if sqlanon can use it, else the :class:`InputError` of :func:`engine_for`."""
    engine_for(con)
    return con


def connect(target: str | None, *, read_only: bool = False) -> Any:
    """Open a connection: a ``postgresql://`` (or ``postgres://``) URL with psycopg, else a DuckDB
    database file (None or ``:memory:``: an in-memory database)."""
    if target and target.startswith(("postgresql://", "postgres://")):
        try:
            from .postgres import connect as pg_connect
        except ImportError as e:  # psycopg is the optional extra "postgres"
            raise InputError(f"cannot connect to a PostgreSQL URL: its driver psycopg 3 is not installed ({e}); "
                             f'pip install "sqlanon[postgres]"') from None

        return pg_connect(target, read_only=read_only)
    from .duckdb import connect as duck_connect

    return duck_connect(target, read_only=read_only)
