"""Shared fixtures and helpers for the sqlanon test suite.

Fixtures:

* ``con``: a fresh in-memory DuckDB connection, closed after the test.
* ``adult``: loads the bundled ARX Adult data (30,162 rows) into table ``adult`` of ``con`` and
  returns ``Adult(con, hierarchies)`` -- a named tuple, so ``con, hierarchies = adult`` works --
  where ``hierarchies`` is ``{column: path of its ARX hierarchy CSV}`` for all nine columns.

Helpers (import them with ``from conftest import ...``):

* :func:`temp_objects`: names of the tables and views sqlanon's engine creates for a run
  (``__sqlanon_<hex>_...``), in any schema; a finished run must leave none.
* :func:`objects`: every user table and view as ``(database, schema, name, kind)``, to assert
  that a failed call wrote nothing.
* :func:`quote`: a DuckDB quoted identifier, for test set-up SQL.
* :func:`make_people`: a small deterministic table with an ``id`` column.
* :func:`load_frame`: a table from a pandas DataFrame, with the same column types on DuckDB and
  PostgreSQL.

Both engines (see ``tests/pg_server.py`` for where the PostgreSQL server comes from):

* ``engine_name``: ``"duckdb"`` and ``"postgres"``; a test that uses it, or ``any_con``, runs once
  per engine (ids ``[duckdb]``, ``[postgres]``).
* ``any_con``: an in-memory DuckDB connection, or a psycopg connection (not autocommit) whose
  ``search_path`` is a fresh schema of its own, dropped after the test.
* ``pg_con``: that psycopg connection alone; ``postgres_url``: the session's server URL. Without
  a server they skip with the reason (how to provide one) -- except in CI (``$CI`` set) or when
  ``$SQLANON_POSTGRES_URL`` is given, where they fail.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import duckdb
import numpy as np
import pandas as pd
import pytest

import pg_server

DATA = Path(__file__).resolve().parent.parent / "sqlanon" / "data"
ADULT_CSV = DATA / "adult.csv.gz"
ADULT_COLUMNS = ("sex", "age", "race", "marital-status", "education", "native-country",
                 "workclass", "occupation", "salary-class")
ADULT_ROWS = 30_162
ADULT_HIERARCHIES = {c: str(DATA / f"adult_hierarchy_{c}.csv") for c in ADULT_COLUMNS}

TEMP_PREFIX = "__sqlanon_"


def quote(name: str) -> str:
    """A DuckDB quoted identifier (test set-up only; the library builds its own SQL)."""
    return '"' + name.replace('"', '""') + '"'


def temp_objects(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Tables and views (temporary or not, any schema) whose name starts with ``__sqlanon_``."""
    rows = con.execute(
        """
        SELECT table_name FROM duckdb_tables() WHERE starts_with(table_name, $p)
        UNION ALL
        SELECT view_name FROM duckdb_views() WHERE starts_with(view_name, $p)
        """,
        {"p": TEMP_PREFIX},
    ).fetchall()
    return sorted(r[0] for r in rows)


def objects(con: duckdb.DuckDBPyConnection) -> set[tuple[str, str, str, str]]:
    """Every non-internal table and view: ``(database, schema, name, 'table' | 'view')``."""
    rows = con.execute(
        """
        SELECT database_name, schema_name, table_name, 'table' FROM duckdb_tables() WHERE NOT internal
        UNION ALL
        SELECT database_name, schema_name, view_name, 'view' FROM duckdb_views() WHERE NOT internal
        """
    ).fetchall()
    return {tuple(r) for r in rows}


def make_people(con: duckdb.DuckDBPyConnection, n: int = 200, name: str = "people", key: bool = True) -> str:
    """Create ``name``: ``id`` (0..n-1, the PRIMARY KEY unless ``key=False``), ``age`` (i % 90),
    ``zip`` (i % 7), ``city`` ('x0'..'x4'), ``salary`` (i * 10.5). Returns the table name."""
    pk = " PRIMARY KEY" if key else ""
    con.execute(f"CREATE TABLE {quote(name)} (id BIGINT{pk}, age INTEGER, zip INTEGER, city VARCHAR, salary DECIMAL(22, 1))")
    con.execute(
        f"INSERT INTO {quote(name)} SELECT i::BIGINT AS id, (i % 90)::INTEGER AS age, "
        f"(i % 7)::INTEGER AS zip, 'x' || (i % 5) AS city, i * 10.5 AS salary FROM range({int(n)}) t(i)"
    )
    return name


@pytest.fixture
def con():
    """A fresh in-memory DuckDB connection."""
    connection = duckdb.connect()
    try:
        yield connection
    finally:
        connection.close()


class Adult(NamedTuple):
    """What the ``adult`` fixture returns."""

    con: duckdb.DuckDBPyConnection
    hierarchies: dict[str, str]  # column -> ARX hierarchy CSV path, all nine columns


def load_adult(con: duckdb.DuckDBPyConnection, name: str = "adult") -> dict[str, str]:
    """Create table ``name`` from the bundled Adult data (``age`` BIGINT, the rest VARCHAR) and
    return ``{column: hierarchy CSV path}``."""
    con.execute(
        f"CREATE TABLE {quote(name)} AS SELECT * FROM read_csv($path, delim = ';', header = true, "
        "quote = '', columns = $columns)",
        {"path": str(ADULT_CSV),
         "columns": {c: ("BIGINT" if c == "age" else "VARCHAR") for c in ADULT_COLUMNS}},
    )
    return dict(ADULT_HIERARCHIES)


@pytest.fixture
def adult(con) -> Adult:
    """Table ``adult`` (ARX's cleaned UCI Adult, 30,162 rows) in ``con``, as ``(con, hierarchies)``."""
    return Adult(con, load_adult(con))


# --------------------------------------------------------------------------------------------
# Both engines: DuckDB and PostgreSQL
# --------------------------------------------------------------------------------------------

def _pg_missing(reason: str) -> None:
    """Skip, or fail when PostgreSQL was asked for: in CI, or with an explicit URL."""
    if pg_server.in_ci() or os.environ.get(pg_server.ENV_URL, "").strip():
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres_url():
    """The session's PostgreSQL server: ``$SQLANON_POSTGRES_URL``, else a throwaway local one."""
    try:
        import psycopg  # noqa: F401  (the optional extra; the core install is DuckDB-only)
    except ImportError:
        _pg_missing('PostgreSQL tests need psycopg 3: pip install ".[test]" (or "sqlanon[postgres]")')
    with pg_server.provide() as (url, reason):  # raises in CI when there is no server
        if url is None:
            pytest.skip(reason)
        yield url


@pytest.fixture(scope="session")
def pg_database(postgres_url):
    """Conninfo of a database of this session's own (dropped at the end), so a shared server given
    by URL keeps nothing of ours. Without the CREATEDB privilege: the URL's database (the per-test
    schemas still keep tests apart)."""
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import make_conninfo

    name = f"sqlanon_test_{uuid.uuid4().hex[:12]}"
    try:
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    except psycopg.errors.InsufficientPrivilege:
        yield postgres_url
        return
    except psycopg.OperationalError as exc:
        error = f"cannot connect to PostgreSQL at {postgres_url}: {exc}"
    else:
        error = None
    if error:  # a URL that does not answer is a failure, never a skip (failing outside the except
        pytest.fail(error, pytrace=False)  # block keeps the report to one message)
    try:
        yield make_conninfo(postgres_url, dbname=name)
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            # FORCE (PostgreSQL 13+): a connection a test leaked must not make teardown fail.
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture(scope="session")
def _pg_admin(pg_database):
    """An autocommit connection that creates and drops the per-test schemas."""
    import psycopg

    with psycopg.connect(pg_database, autocommit=True) as admin:
        # A test that leaks a connection holding locks would hang DROP SCHEMA; fail instead.
        admin.execute("SET lock_timeout = '10s'")
        yield admin


@pytest.fixture
def pg_con(pg_database, _pg_admin):
    """A psycopg connection (not autocommit) whose ``search_path`` is only a fresh schema
    ``t_<hex>``: what a test creates is invisible to the others and dropped (CASCADE) after it.
    A schema per test, not a database: CREATE DATABASE costs 50-100 ms."""
    import psycopg
    from psycopg import sql

    schema = f"t_{uuid.uuid4().hex}"
    _pg_admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    # As connection options, search_path survives RESET ALL / DISCARD ALL in the test.
    # synchronize_seqscans=off: a plain scan starts at the table's first page, so an unordered
    # SELECT returns a load_frame table in insertion order (as DuckDB does), however large.
    connection = psycopg.connect(pg_database, options=f"-c search_path={schema} -c synchronize_seqscans=off")
    try:
        yield connection
    finally:
        connection.close()
        _pg_admin.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@pytest.fixture(params=["duckdb", "postgres"])
def engine_name(request) -> str:
    """Each engine in turn; CI runs both (a missing server there fails, see ``postgres_url``)."""
    return request.param


@pytest.fixture
def any_con(engine_name, request):
    """A fresh connection of ``engine_name``: in-memory DuckDB, or ``pg_con``."""
    if engine_name == "postgres":
        yield request.getfixturevalue("pg_con")  # requested only here: DuckDB runs need no server
        return
    connection = duckdb.connect()
    try:
        yield connection
    finally:
        connection.close()


# load_frame's column types: DuckDB spelling -> PostgreSQL spelling.
_PG_TYPES = {"BIGINT": "bigint", "INTEGER": "integer", "DOUBLE": "double precision", "VARCHAR": "text",
             "BOOLEAN": "boolean", "DATE": "date", "TIMESTAMP": "timestamp", "TIMESTAMPTZ": "timestamptz"}


def _column_type(column: str, series: pd.Series) -> str:
    """The SQL type (DuckDB spelling, a key of ``_PG_TYPES``) for one DataFrame column."""
    dtype = series.dtype
    if pd.api.types.is_bool_dtype(dtype):
        return "BOOLEAN"
    if pd.api.types.is_integer_dtype(dtype):
        # 64-bit and uint32 need BIGINT; narrower integers fit INTEGER.
        wide = dtype.itemsize >= 8 or (dtype.kind == "u" and dtype.itemsize == 4)
        return "BIGINT" if wide else "INTEGER"
    if pd.api.types.is_float_dtype(dtype):
        return "DOUBLE"
    if isinstance(dtype, pd.DatetimeTZDtype):
        return "TIMESTAMPTZ"
    if pd.api.types.is_datetime64_dtype(dtype):
        return "TIMESTAMP"
    # object / string columns: what the non-null values are (pandas has no date dtype).
    kind = pd.api.types.infer_dtype(series, skipna=True)
    if kind in ("string", "empty"):
        return "VARCHAR"
    if kind == "boolean":
        return "BOOLEAN"
    if kind == "integer":
        return "BIGINT"
    if kind in ("floating", "mixed-integer-float"):
        return "DOUBLE"
    if kind == "date":
        return "DATE"
    if kind in ("datetime", "datetime64"):
        first = series.dropna().iloc[0]
        return "TIMESTAMPTZ" if getattr(first, "tzinfo", None) is not None else "TIMESTAMP"
    raise TypeError(f"load_frame: no SQL type for column {column!r} (values inferred as {kind!r}); "
                    f"pass types={{{column!r}: ...}}")


def _python_value(value):
    """A DataFrame cell as the Python value psycopg adapts; missing (None, NaN, NaT, NA) -> None."""
    if value is None or (np.ndim(value) == 0 and pd.isna(value)):
        return None
    if isinstance(value, pd.Timestamp):
        return value.to_pydatetime()
    if isinstance(value, np.generic):
        return value.item()
    return value


def load_frame(con, name: str, df: pd.DataFrame, *, primary_key: str | Sequence[str] | None = None,
               types: dict[str, str] | None = None) -> str:
    """Create table ``name`` (one identifier, unqualified: on PostgreSQL it lands in the test's
    schema) from ``df`` on a DuckDB or psycopg connection, with the same column types on both:
    integers BIGINT (INTEGER up to 32 bits), floats DOUBLE / double precision, strings VARCHAR /
    text, bool, dates (``datetime.date`` values) DATE, timestamps TIMESTAMP[TZ]. ``types`` overrides
    a column's type (DuckDB spelling, used verbatim when not one of those). Missing values (None,
    NaN, NaT, NA) become NULL; rows are inserted in the frame's order; ``primary_key`` declares a
    PRIMARY KEY on that column or columns. PostgreSQL rows go in by COPY and are committed.
    Returns ``name``."""
    types = dict(types or {})
    unknown = set(types) - set(map(str, df.columns))
    if unknown:
        raise KeyError(f"load_frame: types= names columns not in the frame: {sorted(unknown)}")
    columns = [str(c) for c in df.columns]
    if len(set(columns)) != len(columns):
        raise ValueError(f"load_frame: duplicate column names {columns}")
    sql_types = [types.get(c) or _column_type(c, df[c]) for c in df.columns]
    keys = [primary_key] if isinstance(primary_key, str) else list(primary_key or ())

    if isinstance(con, duckdb.DuckDBPyConnection):
        defs = [f"{quote(c)} {t}" for c, t in zip(columns, sql_types)]
        if keys:
            defs.append(f"PRIMARY KEY ({', '.join(map(quote, keys))})")
        con.execute(f"CREATE TABLE {quote(name)} ({', '.join(defs)})")
        view = f"__load_frame_{uuid.uuid4().hex}"
        frame = df.copy(deep=False)
        frame.columns = columns
        con.register(view, frame)  # DuckDB's pandas scan reads NaN / NaT / None as NULL
        try:
            # INSERT ... SELECT keeps the frame's order (preserve_insertion_order is on by default).
            con.execute(f"INSERT INTO {quote(name)} SELECT {', '.join(map(quote, columns))} FROM {quote(view)}")
        finally:
            con.unregister(view)
        return name

    from psycopg import sql

    defs = [sql.SQL("{} {}").format(sql.Identifier(c), sql.SQL(_PG_TYPES.get(t.upper(), t)))
            for c, t in zip(columns, sql_types)]
    if keys:
        defs.append(sql.SQL("PRIMARY KEY ({})").format(sql.SQL(", ").join(map(sql.Identifier, keys))))
    copy_sql = sql.SQL("COPY {} ({}) FROM STDIN").format(
        sql.Identifier(name), sql.SQL(", ").join(map(sql.Identifier, columns)))
    with con.cursor() as cur:
        cur.execute(sql.SQL("CREATE TABLE {} ({})").format(sql.Identifier(name), sql.SQL(", ").join(defs)))
        with cur.copy(copy_sql) as copy:  # text COPY: psycopg adapts each Python value
            for row in df.itertuples(index=False, name=None):
                copy.write_row([_python_value(v) for v in row])
    con.commit()
    return name
