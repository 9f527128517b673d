"""Shared fixtures and helpers for the sqlanon test suite.

Fixtures:

* ``con``: the one connection fixture, parametrized by engine: a fresh in-memory DuckDB
  connection, or a psycopg connection (not autocommit) whose ``search_path`` is a fresh schema of
  its own, dropped after the test. Which engines a test runs on is its ``engines`` marker
  (``pytestmark = pytest.mark.engines("duckdb", "postgres")`` for a module); without one, DuckDB
  only -- kept for what is DuckDB's alone (files, macros, rowid) and for the heavy property tests
  whose engine-independence ``test_engines.py`` checks once. Ids are ``[duckdb]``/``[postgres]``.
* ``adult``: loads the bundled ARX Adult data (30,162 rows) into table ``adult`` of ``con`` and
  returns ``Adult(con, hierarchies)`` -- a named tuple, so ``con, hierarchies = adult`` works --
  where ``hierarchies`` is ``{column: path of its ARX hierarchy CSV}`` for all nine columns.

Helpers (import them with ``from conftest import ...``):

* :func:`temp_objects`: names of the tables and views sqlanon's engine creates for a run
  (``__sqlanon_<hex>_...``), in any schema; a finished run must leave none.
* :func:`objects`: every user table and view as ``(database, schema, name, kind)``, to assert
  that a failed call wrote nothing.
* :func:`quote`: a quoted identifier (the same on both engines), for test set-up SQL.
* :func:`rows`, :func:`frame`, :func:`run`: a query's rows / a DataFrame / a statement on either
  engine (``?`` placeholders on both).
* :func:`make_people`: a small deterministic table with an ``id`` column.
* :func:`suppressing_release`: a small table and a release of it with suppressed rows, by
  Mondrian or a single-dimensional search (``SUPPRESSING``).
* :func:`load_frame`: a table from a pandas DataFrame, with the same column types on DuckDB and
  PostgreSQL.

Both engines (see ``tests/pg_server.py`` for where the PostgreSQL server comes from):

* ``engine_name``: the engine of this run of the test (from its ``engines`` marker).
* ``spark``: a local SparkSession (one per test session; ``$SQLANON_SPARK_MASTER`` chooses the
  master, e.g. ``local-cluster[2,1,1024]``) working in a Spark database of the test's own;
  modules that use it are marked ``spark``.
* ``pg_con``: the psycopg connection alone; ``postgres_url``: the session's server URL. Without
  a server they skip with the reason (how to provide one) -- except in CI (``$CI`` set) or when
  ``$SQLANON_POSTGRES_URL`` is given, where they fail.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import duckdb
import numpy as np
import pandas as pd
import pytest

import pg_server
import sqlanon

DATA = Path(__file__).resolve().parent.parent / "sqlanon" / "data"
ADULT_CSV = DATA / "adult.csv.gz"
ADULT_COLUMNS = ("sex", "age", "race", "marital-status", "education", "native-country",
                 "workclass", "occupation", "salary-class")
ADULT_ROWS = 30_162
ADULT_HIERARCHIES = {c: str(DATA / f"adult_hierarchy_{c}.csv") for c in ADULT_COLUMNS}

TEMP_PREFIX = "__sqlanon_"


def quote(name: str) -> str:
    """A quoted identifier, the same on DuckDB and PostgreSQL (test set-up only; the library
    builds its own SQL)."""
    return '"' + name.replace('"', '""') + '"'


def is_postgres(con) -> bool:
    """Whether ``con`` is a psycopg connection (else DuckDB)."""
    return not isinstance(con, duckdb.DuckDBPyConnection)


def _placeholders(con, sql: str, params: Sequence | None) -> str:
    # Tests write ``?``; psycopg's placeholder is ``%s``, and with parameters a literal ``%``
    # (modulo) must be doubled -- without parameters psycopg sends the text as it is.
    if not is_postgres(con) or params is None:
        return sql
    return sql.replace("%", "%%").replace("?", "%s")


def run(con, sql: str, params: Sequence | None = None) -> None:
    """Execute one set-up statement on either engine (``?`` placeholders). On PostgreSQL it
    joins the connection's open transaction, as a caller's statement would."""
    con.execute(_placeholders(con, sql, params), params)


def rows(con, sql: str, params: Sequence | None = None) -> list[tuple]:
    """A query's rows as tuples on either engine (``?`` placeholders)."""
    return [tuple(r) for r in con.execute(_placeholders(con, sql, params), params).fetchall()]


def frame(con, sql: str, params: Sequence | None = None) -> pd.DataFrame:
    """A query's result as a DataFrame on either engine (``?`` placeholders)."""
    if not is_postgres(con):
        return con.execute(sql, params).df()
    cur = con.execute(_placeholders(con, sql, params), params)
    return pd.DataFrame(cur.fetchall(), columns=[d.name for d in cur.description])


def request_options(**options) -> dict:
    """Keyword arguments of :func:`sqlanon.anonymize` from a test's table of cases written with
    the algorithms' and the output's arguments side by side (``memory_rows``, ``strategy``,
    ``sample_rows``, ``criterion``, ``constraints``, ``recoding``, ``view``, ``key``, ...): each
    is put into its object (``Mondrian``/``Levels``/``Sample``, ``TopDown``, ``Output``,
    ``privacy=``), as the call site would write it."""
    import sqlanon

    out = dict(options)
    output = {k: out.pop(k) for k in ("view", "replace", "key", "class_column") if k in out}
    if output:
        out["output"] = sqlanon.Output(**output)
    if "constraints" in out:
        out["privacy"] = list(out.pop("constraints"))
    if "qids" in out:
        out["privacy"] = [sqlanon.KAnonymity(k, qid=c) for c, k in out.pop("qids")] + out.get("privacy", [])
    criterion = out.pop("criterion", None)
    if out.pop("recoding", "multi") == "single":
        search = out.pop("search", "tdr")
        kind = {"tdr": sqlanon.TopDown, "genetic": sqlanon.Genetic, "optimal": sqlanon.Optimal}[search]
        args = {k: out.pop(k) for k in ("max_steps", "max_seconds", "metric", "budget", "iterations", "seed") if k in out}
        out.pop("memory_rows", None)
        out["algorithm"] = kind(criterion, **args) if criterion is not None else kind(**args)
        return out
    strategy = out.pop("strategy", None)
    memory = {"memory_rows": out.pop("memory_rows")} if "memory_rows" in out else {}
    sample = {new: out.pop(old) for old, new in (("sample_rows", "rows"), ("confidence", "confidence"),
                                                   ("seed", "seed")) if old in out}
    if strategy == "sample" or (strategy is None and sample):
        chosen = sqlanon.Sample(**sample, **memory)
    elif strategy == "levels" or memory:
        chosen = sqlanon.Levels(**memory)
    else:
        chosen = "auto" if strategy is None else strategy  # "auto", or a wrong value the object refuses
    if criterion is not None or chosen != "auto":
        out["algorithm"] = sqlanon.Mondrian(criterion, chosen)
    return out


def temp_objects(con) -> list[str]:
    """Tables and views (temporary or not, any schema) whose name starts with ``__sqlanon_``."""
    if is_postgres(con):
        found = rows(con, "SELECT relname FROM pg_class WHERE relkind IN ('r', 'v', 'm', 'p') "
                          "AND starts_with(relname, ?)", [TEMP_PREFIX])
        return sorted(r[0] for r in found)
    found = con.execute(
        """
        SELECT table_name FROM duckdb_tables() WHERE starts_with(table_name, $p)
        UNION ALL
        SELECT view_name FROM duckdb_views() WHERE starts_with(view_name, $p)
        """,
        {"p": TEMP_PREFIX},
    ).fetchall()
    return sorted(r[0] for r in found)


def objects(con) -> set[tuple[str, str, str, str]]:
    """Every user table and view: ``(database, schema, name, 'table' | 'view')``."""
    if is_postgres(con):
        found = rows(con, """
            SELECT current_database(), n.nspname, c.relname,
                   CASE WHEN c.relkind IN ('v', 'm') THEN 'view' ELSE 'table' END
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE c.relkind IN ('r', 'v', 'm', 'p')
              AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'""")
        return set(found)
    found = con.execute(
        """
        SELECT database_name, schema_name, table_name, 'table' FROM duckdb_tables() WHERE NOT internal
        UNION ALL
        SELECT database_name, schema_name, view_name, 'view' FROM duckdb_views() WHERE NOT internal
        """
    ).fetchall()
    return {tuple(r) for r in found}


def make_people(con, n: int = 200, name: str = "people", key: bool = True) -> str:
    """Create ``name`` on either engine: ``id`` (0..n-1, the PRIMARY KEY unless ``key=False``),
    ``age`` (i % 90), ``zip`` (i % 7), ``city`` ('x0'..'x4'), ``salary`` (i * 10.5, DECIMAL(22, 1)).
    Returns the table name."""
    i = np.arange(int(n), dtype=np.int64)
    people = pd.DataFrame({"id": i, "age": (i % 90).astype(np.int32), "zip": (i % 7).astype(np.int32),
                           "city": [f"x{v}" for v in i % 5], "salary": [f"{v * 10.5:.1f}" for v in i]})
    return load_frame(con, name, people, primary_key="id" if key else None, types={"salary": "DECIMAL(22, 1)"})


#: A ZIP hierarchy of three branches (``11``, ``12`` under ``1*``, ...; root ``*``).
ZIP = [[f"{a}{b}", f"{a}*", "*"] for a in "123" for b in "12"]
#: The searches that suppress rows: ``anonymize`` keyword arguments by name.
SUPPRESSING = {
    "mondrian": {},
    "optimal": {"algorithm": sqlanon.Optimal(metric="LM")},
    "genetic": {"algorithm": sqlanon.Genetic(metric="LM", seed=1, iterations=200)},
}


def suppressing_release(con, search: str, key: str | None = None, view: str = "t_anon"):
    """Table ``t`` (49 rows: ``id``; ``zip``, four leaves of 10 rows and branch ``3*`` of 9;
    ``age`` = id % 7, but 1000 for id 48) and its release ``view`` by ``SUPPRESSING[search]``
    with ``k=10`` and ``suppression=0.2`` (limit floor(0.2 x 49) = 9): branch ``3*`` cannot form
    a class, so the search suppresses rows (Mondrian the age outlier). Returns ``(release, qid)``
    (the optimal lattice needs a hierarchy per QI: zip alone)."""
    z = ["11"] * 10 + ["12"] * 10 + ["21"] * 10 + ["22"] * 10 + ["31"] * 9
    age = np.arange(len(z)) % 7
    age[48] = 1000
    load_frame(con, "t", pd.DataFrame({"id": np.arange(len(z)), "zip": z, "age": age}))
    qid = ["zip"] if search == "optimal" else ["zip", "age"]
    release = sqlanon.anonymize(con, "t", qid, 10, hierarchies={"zip": ZIP}, suppression=0.2,
                                **SUPPRESSING[search], output=sqlanon.Output(view=view, key=key))
    assert release.suppressed > 0 and release.verification.ok and release.verification.suppression_limit == 9
    return release, qid


class Adult(NamedTuple):
    """What the ``adult`` fixture returns."""

    con: object  # the test's connection (DuckDB or psycopg)
    hierarchies: dict[str, str]  # column -> ARX hierarchy CSV path, all nine columns


def load_adult(con, name: str = "adult") -> dict[str, str]:
    """Create table ``name`` from the bundled Adult data (``age`` BIGINT, the rest VARCHAR) on
    either engine and return ``{column: hierarchy CSV path}``."""
    data = pd.read_csv(ADULT_CSV, sep=";", quoting=3, keep_default_na=False,
                       dtype={c: ("int64" if c == "age" else str) for c in ADULT_COLUMNS})
    load_frame(con, name, data[list(ADULT_COLUMNS)],
               types={c: ("BIGINT" if c == "age" else "VARCHAR") for c in ADULT_COLUMNS})
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


ENGINES = ("duckdb", "postgres")


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "spark: runs on a local Spark (the spark fixture; -m 'not spark' leaves them out)")
    config.addinivalue_line("markers", "engines(*names): the engines the test's ``con`` runs on "
                                       "(default: duckdb only)")


def pytest_generate_tests(metafunc) -> None:
    """Parametrize ``engine_name`` (and so ``con``) by the test's ``engines`` marker."""
    if "engine_name" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("engines")
    names = marker.args if marker else ("duckdb",)
    unknown = set(names) - set(ENGINES)
    if unknown:
        raise ValueError(f"engines marker names unknown engines {sorted(unknown)}; known: {ENGINES}")
    metafunc.parametrize("engine_name", names, ids=list(names), indirect=True)


@pytest.fixture
def engine_name(request) -> str:
    """The engine of this run (see the ``engines`` marker); CI runs both where a test asks for
    both (a missing server there fails, see ``postgres_url``)."""
    return request.param


@pytest.fixture
def con(engine_name, request):
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


def here(con) -> tuple[str, str]:
    """``(database, schema)`` where unqualified new objects go: ``('memory', 'main')`` on DuckDB,
    the session's database and the test's own schema on PostgreSQL."""
    return tuple(con.execute("SELECT current_database(), current_schema()").fetchone())


def describe(con, name: str) -> list[tuple[str, str]]:
    """``(column, type)`` of a table or view, in the engine's own spelling."""
    if is_postgres(con):
        return rows(con, "SELECT attname::text, format_type(atttypid, atttypmod) FROM pg_attribute "
                         "WHERE attrelid = ?::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
                    [quote(name)])
    return [(r[0], r[1]) for r in con.execute(f"DESCRIBE {quote(name)}").fetchall()]


@pytest.fixture
def new_schema(con):
    """``new_schema(name)`` creates a schema and returns its name: ``name`` on DuckDB (the database
    is the test's own); on PostgreSQL ``<the test's schema>_<name>`` (the database is the
    session's), dropped after the test."""
    made: list[str] = []

    def make(name: str) -> str:
        if is_postgres(con):
            name = f"{here(con)[1]}_{name}"
        run(con, f"CREATE SCHEMA {quote(name)}")
        made.append(name)
        return name

    yield make
    if made and is_postgres(con) and not con.closed:
        con.rollback()
        for name in made:
            run(con, f"DROP SCHEMA IF EXISTS {quote(name)} CASCADE")
        con.commit()


# --------------------------------------------------------------------------------------------
# Spark
# --------------------------------------------------------------------------------------------

#: The master the Spark tests run on: ``local[2]``, or what ``$SQLANON_SPARK_MASTER`` names, e.g.
#: ``local-cluster[2,1,1024]`` (two executor JVMs of one core and 1 GB, each with Python workers of
#: its own: tasks, results and the finish's functions cross process boundaries as on a cluster).
SPARK_MASTER = os.environ.get("SQLANON_SPARK_MASTER") or "local[2]"


def sqlanon_zip(path: Path) -> Path:
    """``path``: a zip of the sqlanon package these tests import, laid out as its wheel (the
    package, and ``sql/`` as ``sqlanon/sql``): what ``docs/guides/spark.md`` ships with
    ``--py-files`` (``spark.submit.pyFiles``) to executors that have sqlanon's dependencies."""
    import zipfile

    import sqlanon

    package = Path(sqlanon.__file__).parent
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for f in sorted(package.rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts:
                z.write(f, (Path("sqlanon") / f.relative_to(package)).as_posix())
        templates = package.parent / "sql"  # a source checkout; an installed package has sqlanon/sql
        if templates.is_dir() and not (package / "sql").is_dir():
            for f in sorted(templates.rglob("*.sql")):
                z.write(f, (Path("sqlanon/sql") / f.relative_to(templates)).as_posix())
    return path


@pytest.fixture(scope="session")
def spark_session():
    """One Spark session on :data:`SPARK_MASTER` for the test session, its warehouse and temp
    files in a directory of ours. On ``local-cluster[...]`` sqlanon is shipped to the executors
    as a zip (:func:`sqlanon_zip`), and the fixture checks that they import it from there. Spark
    needs Java and the ``spark`` extra: without them the tests that use it skip with the reason
    -- except in CI (``$CI`` set), where they fail (``.ci/run`` installs both)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError as e:
        reason = f'Spark tests need pyspark: pip install ".[test]" (or "sqlanon[spark]") ({e})'
        pytest.fail(reason, pytrace=False) if pg_server.in_ci() else pytest.skip(reason)
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        reason = "Spark tests need Java 17 (Debian: apt-get install openjdk-17-jre-headless)"
        pytest.fail(reason, pytrace=False) if pg_server.in_ci() else pytest.skip(reason)
    where = tempfile.mkdtemp(prefix="sqlanon-spark-")
    builder = (SparkSession.builder.master(SPARK_MASTER).appName("sqlanon-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.default.parallelism", "2")
               .config("spark.sql.warehouse.dir", os.path.join(where, "warehouse"))
               .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={where}")
               .config("spark.local.dir", os.path.join(where, "local")))
    cluster = SPARK_MASTER.startswith("local-cluster[")
    if cluster:
        shipped = sqlanon_zip(Path(where) / "sqlanon.zip")
        builder = builder.config("spark.submit.pyFiles", str(shipped)).config("spark.executor.memory", "768m")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        if cluster:
            from sqlanon.engine.spark_env import check_executors

            found = check_executors(spark)
            assert all(shipped.name in location for location in found.location), (
                f"the executors import sqlanon from {found.location}, not from the shipped {shipped.name}")
        yield spark
    finally:
        app = spark.sparkContext.applicationId
        spark.stop()
        shutil.rmtree(where, ignore_errors=True)
        if cluster:  # the workers' directory of the application (executor logs, the shipped zip)
            from pyspark.find_spark_home import _find_spark_home

            work = os.path.join(_find_spark_home(), "work")
            shutil.rmtree(os.path.join(work, app), ignore_errors=True)
            with contextlib.suppress(OSError):  # unless other applications' are there
                os.rmdir(work)


@pytest.fixture
def spark(spark_session):
    """The session, working in a fresh database of this test's own (dropped after it)."""
    database = f"t_{uuid.uuid4().hex[:10]}"
    spark_session.sql(f"CREATE DATABASE {database}")
    spark_session.catalog.setCurrentDatabase(database)
    try:
        yield spark_session
    finally:
        spark_session.catalog.setCurrentDatabase("default")
        spark_session.sql(f"DROP DATABASE {database} CASCADE")
