"""The engine boundary: the only code that talks to a database driver.

An :class:`~sqlanon.engine.base.Engine` renders sqlglot expressions in its dialect, executes
them, fetches results as numpy arrays, owns temp objects, transactions, the catalog, row hashing
and the other things engines spell differently. Everything outside this package builds
expressions and calls engine methods; nothing else imports ``duckdb``, ``psycopg`` or ``pyspark``.
:func:`engine_for` picks the engine of a connection; :func:`connect` opens one from a path or URL,
:func:`spark_session` a Spark session.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

from ..errors import InputError, did_you_mean
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


#: How a PostgreSQL URL starts (:func:`connect`).
POSTGRES_URLS = ("postgresql://", "postgres://")


def connect(target: str | None, *, read_only: bool = False) -> Any:
    """Open a connection: a ``postgresql://`` (or ``postgres://``) URL with psycopg, else a DuckDB
    database file (None or ``:memory:``: an in-memory database). A Spark session is opened by
    :func:`spark_session`."""
    if target and target.startswith(POSTGRES_URLS):
        try:
            from .postgres import connect as pg_connect
        except ImportError as e:  # psycopg is the optional extra "postgres"
            raise InputError(f"cannot connect to a PostgreSQL URL: its driver psycopg 3 is not installed ({e}); "
                             f'pip install "sqlanon[postgres]"') from None

        return pg_connect(target, read_only=read_only)
    from .duckdb import connect as duck_connect

    return duck_connect(target, read_only=read_only)


@contextlib.contextmanager
def spark_session(master: str | None = None, conf: Mapping[str, str] | None = None,
                  database: str | None = None) -> Iterator[Any]:
    """The ``pyspark.sql.SparkSession`` of ``SparkSession.builder.master(master).config(...)
    .getOrCreate()``, working in the Spark database ``database`` (when given), as a context.

    ``master`` and ``conf`` are the builder's: without a master, Spark's own configuration
    (``spark-defaults.conf``, ``spark-submit``) decides, else ``local[*]``. When a session is
    already running in this process, ``getOrCreate`` returns it (only runtime SQL settings of
    ``conf`` then apply) and it is left running at the end, its current database put back; a
    session this call started is stopped at the end. On a local master the executors' Python
    defaults to this interpreter unless ``PYSPARK_PYTHON`` is set (:mod:`.spark_env`, checked
    by the first release's call).

    Raises:
        InputError: pyspark is not installed, the session cannot start, or ``database`` does not
            exist (checked before anything runs in it).
    """
    try:
        from pyspark.errors import PySparkException
        from pyspark.sql import SparkSession
    except ImportError as e:  # pyspark is the optional extra "spark"
        raise InputError(f"cannot open a Spark session: pyspark is not installed ({e}); "
                         f'pip install "sqlanon[spark]"') from None
    try:
        running: Any = SparkSession.active()
    except PySparkException:  # none in this process
        running = None
    builder = SparkSession.builder
    if master is not None:
        builder = builder.master(master)
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    try:
        session = builder.getOrCreate()
    except Exception as e:  # no Java, a bad master URL, a bad setting: the JVM's error, one line
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise InputError(f"cannot start a Spark session{f' (master {master})' if master else ''}: {first}") from None
    started = running is None
    previous = session.catalog.currentDatabase() if database is not None and not started else None
    try:
        if database is not None:
            if not session.catalog.databaseExists(database):
                names = [d.name for d in session.catalog.listDatabases()]
                raise InputError(f"no Spark database named {database!r}." + did_you_mean(database, names))
            session.catalog.setCurrentDatabase(database)
        yield session
    finally:
        if started:
            session.stop()
        elif previous is not None:
            with contextlib.suppress(PySparkException):  # unless the command dropped it
                session.catalog.setCurrentDatabase(previous)
