"""Spark SQL: the same releases as DuckDB's, and every consumer of a release, on a local Spark.

The ``spark`` fixture (conftest) is one local SparkSession for the test session, in a Spark
database of the test's own.
A Spark statement costs ~0.1-0.5 s however small, so this module runs each kind of release once
or a few times rather than a property test per feature; the algorithm itself is the same code
as on DuckDB, whose property tests are in the other modules.
"""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon import datasets
from sqlanon.engine import engine_for
from tests.support.engines import (
    HIERARCHY,
    TABLES,
    WORKLOADS,
    identical,
    load,
    people,
    random_frame,
    rules,
    seeded_frame,
    spark_temp_objects,
    table_of,
)

pytestmark = pytest.mark.spark



# -- identical releases ------------------------------------------------------------------------


@pytest.mark.parametrize("index, workload", list(enumerate(sorted(WORKLOADS))))
def test_every_criterion_and_constraint_publishes_duckdbs_rules(spark, index, workload):
    """Seeded random tables (NULLs, a hierarchy; 120 rows, so the tree has several levels), every
    criterion and constraint family, alternately through the SQL levels (memory_rows=0) and the
    executors' finish in several batches (memory_rows=30): Spark's rules relation and published
    view are DuckDB's, row by row. (A hypothesis example per family would be its simplest one:
    an all-NULL QI that splits nothing.)"""
    frame = seeded_frame(index, 120)
    if workload in ("regression", "targets", "variance"):
        frame["x"] = frame["x"].fillna(0.0)
    identical(spark, frame, ["a", "cat"], k=3 + index % 4, hierarchies={"cat": HIERARCHY},
              memory_rows=30 if index % 2 else 0, **WORKLOADS[workload])


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=TABLES, k=st.integers(2, 12), memory_rows=st.sampled_from([0, 30]))
def test_random_tables_publish_duckdbs_rules(spark, table, k, memory_rows):
    """A float QI with NULLs beside the others (Spark's and DuckDB's float order and hashing)."""
    identical(spark, random_frame(table), ["a", "cat", "x"], k=k, hierarchies={"cat": HIERARCHY},
               memory_rows=memory_rows)


def test_adult_publishes_duckdbs_rules(spark):
    """UCI Adult with its hierarchies, InfoGain, SQL levels then the executors' finish."""
    qid = ["age", "education", "marital-status", "sex"]
    duck = duckdb.connect()
    try:
        out = []
        for con in (duck, spark):
            h = datasets.load_adult(con, "adult")
            out.append(sqlanon.anonymize(con, "adult", qid=qid, k=25, target="salary-class",
                                         hierarchies={q: h[q] for q in qid if q != "age"},
                                         algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=8000))))
        assert rules(duck, out[0]) == rules(spark, out[1])
        assert out[1].materialized  # no key: a view of a snapshot
        assert sqlanon.verify(spark, out[1].view, qid=qid, k=25).ok
    finally:
        duck.close()


# -- every consumer of a release ----------------------------------------------------------------

def test_consumers_agree_with_duckdb(spark):
    """verify, apply (with enforce), metrics, regions, report and imprecision give DuckDB's answers."""
    rng = np.random.default_rng(7)
    n = 500
    frame = pd.DataFrame({"id": np.arange(n), "age": rng.integers(18, 90, n), "zip": rng.integers(100, 140, n),
                          "sex": rng.choice(["F", "M"], n), "dx": rng.choice(["flu", "hiv", "cold", "none"], n)})
    duck = duckdb.connect()
    try:
        answers = []
        for con in (duck, spark):
            load(con, "p", frame)
            load(con, "fresh", frame.sample(150, random_state=1).reset_index(drop=True))
            release = sqlanon.anonymize(con, "p", qid=["age", "zip", "sex"], k=20, sensitive="dx", l=2,
                                        selections=["age < 40 AND sex = 'F'"], output=sqlanon.Output(key="id"))
            v = sqlanon.verify(con, release.view, qid=["age", "zip", "sex"], k=20)
            applied = sqlanon.apply(con, release, "fresh", enforce=True)
            m = sqlanon.metrics(con, release)
            points = sqlanon.regions(con, release, as_frame=True)
            assert release.view in sqlanon.report(con, release, format="markdown")
            imp = sqlanon.imprecision(con, release, ["age BETWEEN 30 AND 50", "zip > 120 AND sex = 'M'"])
            sqlanon.regions(con, release, name="p_regions")
            query = sqlanon.rewrite("SELECT sex, COUNT(*) FROM p WHERE age < 40 AND zip >= 120 GROUP BY sex", release,
                                    con=con)
            counted = sorted(tuple(r) for r in engine_for(con).fetch_rows(query))
            answers.append((v.ok, v.rows, v.k_achieved, applied.rows, applied.placed, applied.suppressed_rows,
                            table_of(con, applied.view), m.dm, m.classes, round(m.gcp, 9),
                            {q: round(x, 9) for q, x in m.ncp.items()}, dict(m.l_distinct), len(points),
                            [(p.returned, p.true) for p in imp.predicates], len(table_of(con, "p_regions")), counted))
        assert answers[0] == answers[1]
    finally:
        duck.close()


def test_the_release_stays_fail_closed_while_the_source_changes(spark):
    """A keyed release is a live view: a row added to the source after the release, or a row
    whose QIs changed (the table rewritten), is published suppressed -- never in a class."""
    frame = people(300)
    load(spark, "p", frame)
    release = sqlanon.anonymize(spark, "p", qid=["age", "zip"], k=10, output=sqlanon.Output(key="id"))
    assert not release.materialized and release.rowmap
    spark.sql("INSERT INTO p VALUES (1000, 30, 3, 'F', 'x', 0.5)")  # a new row
    changed = table_of(spark, release.view)
    assert [r for r in changed if r[0] == 1000.0][0][-1] is None  # the class column: suppressed
    moved = frame.assign(age=np.where(frame["id"] == 0, 89, frame["age"]))
    load(spark, "p", moved)  # the table rewritten: row 0's age changed, row 1000 gone
    rows = {r[0]: r for r in table_of(spark, release.view)}
    assert len(rows) == 300 and rows[0.0][-1] is None and rows[1.0][-1] is not None
    v = sqlanon.verify(spark, release.view, qid=["age", "zip"], k=10, class_column="eq_class")
    assert v.ok and v.rows == 300 and sum(r for _, r, _ in v.suppressed) == 1
    # a temp view as the source: Spark keeps persistent views off temp objects, so a snapshot
    spark.table("p").createOrReplaceTempView("p_now")
    snapshot = sqlanon.anonymize(spark, "p_now", qid=["age", "zip"], k=10, output=sqlanon.Output(key="id"))
    assert snapshot.materialized and snapshot.rowmap == "p_now_anon_rowmap" and snapshot.rows == 300
    assert sorted(r[0] for r in table_of(spark, snapshot.view)) == sorted(r[0] for r in table_of(spark, release.view))


def test_a_table_name_longer_than_a_file_name_is_refused_first(spark):
    """A Spark table is a warehouse directory named after it: a name over 255 bytes failed deep
    in the run (mkdirs). The release's tables are checked before any work; its view and columns
    have no such limit."""
    load(spark, "p", people(60))
    before = {t.name for t in spark.catalog.listTables()}
    with pytest.raises(sqlanon.InputError, match=r"rules relation .* 256 bytes long .* at most 255 bytes"):
        sqlanon.anonymize(spark, "p", qid=["age"], k=5, output="v" * 250)
    assert {t.name for t in spark.catalog.listTables()} == before
    release = sqlanon.anonymize(spark, "p", qid=["age"], k=5, output="v" * 248)  # v..._rowmap: 255 bytes
    assert release.rowmap == "v" * 248 + "_rowmap" and len(table_of(spark, release.view)) == 60


def test_failures_leave_nothing_and_replace_restores(spark, monkeypatch):
    """A release that fails its check leaves nothing behind, and one that was to replace an
    earlier release leaves that release as it was (Spark has no transactions: the old objects
    are moved aside and moved back). The base table is never written."""
    from sqlanon.publish import pipeline

    load(spark, "p", people(200))
    source = table_of(spark, "p")
    first = sqlanon.anonymize(spark, "p", qid=["age", "zip"], k=10, output=sqlanon.Output(key="id"))
    published = table_of(spark, first.view), table_of(spark, first.rules)
    names = {t.name for t in spark.catalog.listTables()}

    def failing(engine, spec):
        raise sqlanon.VerificationError("forced")

    monkeypatch.setattr(pipeline, "verified", failing)
    later = pipeline.publish_release.__defaults__[1:]  # check is the first default; the rest stay
    monkeypatch.setattr(pipeline.publish_release, "__defaults__", (failing, *later))
    with pytest.raises(sqlanon.VerificationError):
        sqlanon.anonymize(spark, "p", qid=["age", "sex"], k=12, output=sqlanon.Output(replace=True, key="id"))
    assert {t.name for t in spark.catalog.listTables()} == names
    assert (table_of(spark, first.view), table_of(spark, first.rules)) == published
    with pytest.raises(sqlanon.VerificationError):
        sqlanon.anonymize(spark, "p", qid=["age", "sex"], k=12, output=sqlanon.Output(view="other", key="id"))
    assert {t.name for t in spark.catalog.listTables()} == names
    assert table_of(spark, "p") == source and spark_temp_objects(spark) == []
