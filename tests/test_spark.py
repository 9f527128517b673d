"""Spark SQL: the same releases as DuckDB's, and every consumer of a release, on a local Spark.

One SparkSession (``local[2]``) serves the module; each test works in a Spark database of its
own, dropped after it. Spark needs Java and the ``spark`` extra: without them these tests skip
with the reason -- except in CI (``$CI`` set), where they fail (``.ci/run`` installs both).
A Spark statement costs ~0.1-0.5 s however small, so this module runs each kind of release once
or a few times rather than a property test per feature; the algorithm itself is the same code
as on DuckDB, whose property tests are in the other modules.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon import datasets
from sqlanon.engine import engine_for
from sqlanon.engine import sqlgen as g
from tests.test_engines import HIERARCHY, TABLES, WORKLOADS

import pg_server

TEMP_PREFIX = "__sqlanon_"


@pytest.fixture(scope="module")
def session():
    """A local Spark session for the module (Spark's own temp files in a directory of ours)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError as e:
        reason = f'Spark tests need pyspark: pip install ".[test]" (or "sqlanon[spark]") ({e})'
        pytest.fail(reason, pytrace=False) if pg_server.in_ci() else pytest.skip(reason)
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        reason = "Spark tests need Java 17 (Debian: apt-get install openjdk-17-jre-headless)"
        pytest.fail(reason, pytrace=False) if pg_server.in_ci() else pytest.skip(reason)
    where = tempfile.mkdtemp(prefix="sqlanon-spark-")
    spark = (SparkSession.builder.master("local[2]").appName("sqlanon-tests")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.default.parallelism", "2")
             .config("spark.sql.warehouse.dir", os.path.join(where, "warehouse"))
             .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={where}")
             .config("spark.local.dir", os.path.join(where, "local"))
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        yield spark
    finally:
        spark.stop()
        shutil.rmtree(where, ignore_errors=True)


@pytest.fixture
def spark(session):
    """The session, working in a fresh database of this test's own (dropped after it)."""
    database = f"t_{uuid.uuid4().hex[:10]}"
    session.sql(f"CREATE DATABASE {database}")
    session.catalog.setCurrentDatabase(database)
    try:
        yield session
    finally:
        session.catalog.setCurrentDatabase("default")
        session.sql(f"DROP DATABASE {database} CASCADE")


def table_of(spark, name: str) -> list[tuple]:
    """A relation's rows sorted, NULL as None, numbers as floats (engine-independent)."""
    return _plain(engine_for(spark).fetch_frame(sqlanon_select(name)))


def sqlanon_select(name: str):
    from sqlglot import exp

    return exp.select("*").from_(g.table(name))


def _plain(frame: pd.DataFrame) -> list[tuple]:
    frame = frame.astype(object).where(frame.notna(), None)
    out = [tuple(float(v) if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) else v
                 for v in row) for row in frame.values.tolist()]
    return sorted(out, key=repr)


def rules(con, release) -> list[tuple]:
    return _plain(engine_for(con).fetch_frame(sqlanon_select(release.rules)))


def load(con, name: str, frame: pd.DataFrame) -> None:
    engine_for(con).create_from_frame(name, frame, replace=True)


def temp_objects(spark) -> list[str]:
    return sorted(t.name for t in spark.catalog.listTables() if t.name.startswith(TEMP_PREFIX))


def people(n: int = 400, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "id": np.arange(n, dtype=np.int64),
        "age": rng.integers(17, 90, n).astype(np.int64),
        "zip": rng.integers(0, 40, n).astype(np.int64),
        "sex": rng.choice(["F", "M"], n),
        "label": rng.choice(["x", "y", "z"], n),
        "x": np.round(rng.normal(0, 2, n), 2),
    })


# -- identical releases ------------------------------------------------------------------------

@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_every_criterion_and_constraint_publishes_duckdbs_rules(spark, workload):
    """Every criterion and constraint family: Spark's rules relation is DuckDB's, row by row --
    through the SQL levels and the executors' finish in several batches (memory_rows=60)."""
    frame = people()
    frame["a"], frame["cat"] = frame["age"] % 31, np.array(list("abcde"))[frame["zip"] % 5]
    duck = duckdb.connect()
    try:
        out = []
        for con in (duck, spark):
            load(con, "t", frame)
            out.append(sqlanon.anonymize(con, "t", qid=["a", "cat", "zip"], k=8, hierarchies={"cat": HIERARCHY},
                                         memory_rows=60, key="id", **WORKLOADS[workload]))
        assert rules(duck, out[0]) == rules(spark, out[1])
        assert out[1].verification.ok and out[1].rows == len(frame)
        assert sqlanon.verify(spark, out[1].view, qid=["a", "cat", "zip"], k=8).ok
        assert temp_objects(spark) == []
    finally:
        duck.close()


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=TABLES, k=st.integers(2, 12), memory_rows=st.sampled_from([0, 50]))
def test_random_tables_publish_duckdbs_rules(spark, table, k, memory_rows):
    """Random tables with NULLs in a numeric and a float column, a hierarchy, both paths."""
    a, cat, x, label = table
    frame = pd.DataFrame({"id": np.arange(len(a)), "a": pd.array(a, dtype="Int64"), "cat": cat,
                          "x": pd.array(x, dtype="Float64"), "label": label})
    duck = duckdb.connect()
    try:
        out = []
        for con in (duck, spark):
            load(con, "t", frame)
            out.append(sqlanon.anonymize(con, "t", qid=["a", "cat", "x"], k=k, hierarchies={"cat": HIERARCHY},
                                         memory_rows=memory_rows, view="t_anon", replace=True, key="id"))
        assert rules(duck, out[0]) == rules(spark, out[1])
        assert table_of(duck, "t_anon") == table_of(spark, "t_anon")
    finally:
        duck.close()


def test_adult_publishes_duckdbs_rules(spark):
    """UCI Adult with its hierarchies, InfoGain, SQL levels then the executors' finish."""
    qid = ["age", "education", "marital-status", "sex"]
    duck = duckdb.connect()
    try:
        out = []
        for con in (duck, spark):
            h = datasets.load_adult(con, "adult")
            out.append(sqlanon.anonymize(con, "adult", qid=qid, k=25, memory_rows=8000, target="salary-class",
                                         hierarchies={q: h[q] for q in qid if q != "age"}))
        assert rules(duck, out[0]) == rules(spark, out[1])
        assert out[1].materialized  # no key: a snapshot table
        assert sqlanon.verify(spark, out[1].view, qid=qid, k=25).ok
    finally:
        duck.close()
