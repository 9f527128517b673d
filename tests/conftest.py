"""Fixtures of the sqlanon test suite (the helpers are in :mod:`tests.support`).

* ``con``: the one connection fixture, parametrized by engine: a fresh in-memory DuckDB
  connection, or a psycopg connection (not autocommit) whose ``search_path`` is a fresh schema of
  its own, dropped after the test. Which engines a test runs on is its ``engines`` marker
  (``pytestmark = pytest.mark.engines("duckdb", "postgres")`` for a module); without one, DuckDB
  only -- kept for what is DuckDB's alone (files, macros, rowid) and for the heavy property tests
  whose engine-independence ``tests/e2e/test_engines.py`` checks once. Ids are ``[duckdb]``/``[postgres]``.
* ``adult``: loads the bundled ARX Adult data (30,162 rows) into table ``adult`` of ``con`` and
  returns ``Adult(con, hierarchies)`` -- a named tuple, so ``con, hierarchies = adult`` works --
  where ``hierarchies`` is ``{column: path of its ARX hierarchy CSV}`` for all nine columns.
* ``people``: table ``people`` (100 rows, :func:`tests.support.db.make_people`) in ``con``.
* ``new_schema``: makes schemas the test may use, dropped after it on PostgreSQL.

Both engines (see :mod:`tests.support.pg_server` for where the PostgreSQL server comes from):

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
from pathlib import Path

import duckdb
import pytest
from hypothesis import settings

from tests.support import pg_server
from tests.support.db import Adult, here, is_postgres, load_adult, make_people, quote, run
from tests.support.spark import SPARK_MASTER, sqlanon_zip

# Hypothesis: tests keep their own max_examples; the profile sets what they share. "ci" (loaded
# when $CI is set, or with --hypothesis-profile=ci) draws the same examples on every run
# (derandomize: a CI run is reproducible and its time stable, a failure is one rerun away);
# "dev" (otherwise) draws new ones each run. No deadline in either: a loaded machine is no bug.
settings.register_profile("ci", deadline=None, derandomize=True, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if pg_server.in_ci() else "dev")


@pytest.fixture
def people(con) -> str:
    """Table ``people`` (100 rows) of :func:`tests.support.db.make_people` in ``con``; returns its name."""
    return make_people(con, 100)


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
    # pytest-xdist's own (registered here too, so a run without xdist knows it).
    config.addinivalue_line("markers", "xdist_group(name): with --dist loadgroup, one worker runs the group's tests")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's hook of this name reads the groups
def pytest_collection_modifyitems(items) -> None:
    """The tests that use Spark form one ``xdist_group``: under pytest-xdist (the README's test
    command: ``-n logical --dist loadgroup``) one worker runs them all, so a test session starts one
    Spark (a JVM, its warm-up and, on ``local-cluster``, its executors), not one per worker."""
    spark = pytest.mark.xdist_group("spark")
    for item in items:
        if "spark_session" in getattr(item, "fixturenames", ()):
            item.add_marker(spark)


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
