"""The engine boundary: nothing outside ``sqlanon/engine`` reaches a driver, and DuckDB and
PostgreSQL publish identical rules relations for the same table and arguments."""

from __future__ import annotations

import ast
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon import datasets
from sqlanon.engine import engine_for
from tests.support import load_frame, request_options
from tests.support.engines import HIERARCHY, TABLES, WORKLOADS, random_frame

PACKAGE = Path(sqlanon.__file__).parent
DRIVERS = {"duckdb", "psycopg", "_duckdb", "pyspark", "py4j"}


def test_nothing_outside_the_engine_package_reaches_a_driver():
    """No module outside ``sqlanon/engine`` imports a driver or reads an engine's raw connection
    (``.con``): the engine is the one boundary."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] == "engine":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                offenders += [f"{path.name}: import {a.name}" for a in node.names if a.name.split(".")[0] in DRIVERS]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] in DRIVERS:
                offenders.append(f"{path.name}: from {node.module} import ...")
            elif isinstance(node, ast.Attribute) and node.attr == "con":
                offenders.append(f"{path.name}:{node.lineno}: .con")
    assert not offenders, offenders


def test_the_core_import_needs_no_postgres_driver():
    """``import sqlanon`` and a DuckDB run never import psycopg (the core install has none)."""
    import subprocess
    import sys

    code = ("import sys, duckdb, sqlanon; con = duckdb.connect(); "
            "con.execute('CREATE TABLE t AS SELECT i AS id, i % 50 AS a FROM range(200) t(i)'); "
            "sqlanon.anonymize(con, 't', qid=['a'], k=10); print('psycopg' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def _rules(con, release) -> list[list]:
    frame = engine_for(con).fetch_frame(f'SELECT * FROM "{release.rules}" ORDER BY 1')
    frame = frame.astype(object).where(frame.notna(), None)
    return [[float(v) if isinstance(v, (float, np.floating)) else v for v in row] for row in frame.values.tolist()]


@settings(max_examples=18, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=TABLES, k=st.integers(2, 12), memory_rows=st.sampled_from([0, 10**6]),
       workload=st.sampled_from(sorted(WORKLOADS)))
def test_duckdb_and_postgres_publish_identical_rules(pg_con, table, k, memory_rows, workload):
    """Random tables (NULLs, a hierarchy, every criterion and constraint family, SQL levels or
    memory): the rules relations are identical, box by box, size by size, bound by bound."""
    frame = random_frame(table)
    extra = WORKLOADS[workload]
    if workload in ("regression", "targets", "variance"):
        frame["x"] = frame["x"].fillna(0.0)
    if workload in ("entropy-l", "distinct-l", "recursive-cl") and frame["label"].nunique() < 2:
        return
    pg_con.execute("DROP TABLE IF EXISTS t CASCADE")
    pg_con.commit()
    duck = duckdb.connect()
    releases = []
    try:
        for con in (duck, pg_con):
            load_frame(con, "t", frame, primary_key="id")
            try:
                releases.append(sqlanon.anonymize(con, "t", qid=["a", "cat"], k=k, hierarchies={"cat": HIERARCHY},
                                                  **request_options(memory_rows=memory_rows, view="t_anon",
                                                                    replace=True, **extra)))
            except sqlanon.InputError as e:
                releases.append(type(e).__name__)
        if isinstance(releases[0], str):
            assert releases[1] == releases[0]
            return
        assert _rules(duck, releases[0]) == _rules(pg_con, releases[1])
        assert sqlanon.verify(pg_con, releases[1].view, qid=["a", "cat"], k=k).ok
    finally:
        duck.close()
        pg_con.rollback()
        pg_con.execute("DROP VIEW IF EXISTS t_anon CASCADE")
        pg_con.commit()


@pytest.mark.parametrize("extra", [{}, {"target": "salary-class"}], ids=["median", "infogain"])
@pytest.mark.parametrize("memory_rows", [0, None], ids=["sql-levels", "memory"])
def test_adult_identical_rules_on_both_engines(pg_con, extra, memory_rows):
    """UCI Adult with its hierarchies: identical rules on DuckDB and PostgreSQL."""
    qid = ["age", "education", "marital-status", "sex"]
    duck = duckdb.connect()
    try:
        out = []
        for con in (duck, pg_con):
            h = datasets.load_adult(con, "adult")
            out.append((con, sqlanon.anonymize(con, "adult", qid=qid, k=25,
                                               hierarchies={q: h[q] for q in qid if q != "age"},
                                               **request_options(memory_rows=memory_rows, **extra))))
        assert _rules(*out[0]) == _rules(*out[1])
        assert sqlanon.verify(pg_con, out[1][1].view, qid=qid, k=25).ok
    finally:
        duck.close()


def test_consumers_agree_on_both_engines(pg_con):
    """verify, apply, metrics, regions and report give the same answers on PostgreSQL as on DuckDB."""
    rng = np.random.default_rng(7)
    n = 600
    frame = pd.DataFrame({"id": np.arange(n), "age": rng.integers(18, 90, n), "zip": rng.integers(100, 140, n),
                          "sex": rng.choice(["F", "M"], n), "dx": rng.choice(["flu", "hiv", "cold", "none"], n)})
    duck = duckdb.connect()
    try:
        answers = []
        for con in (duck, pg_con):
            load_frame(con, "p", frame, primary_key="id")
            load_frame(con, "fresh", frame.sample(200, random_state=1).reset_index(drop=True), primary_key="id")
            release = sqlanon.anonymize(con, "p", qid=["age", "zip", "sex"], k=20, sensitive="dx", l=2)
            v = sqlanon.verify(con, release.view, qid=["age", "zip", "sex"], k=20)
            applied = sqlanon.apply(con, release, "fresh")
            m = sqlanon.metrics(con, release)
            points = sqlanon.regions(con, release, as_frame=True)
            assert release.view in sqlanon.report(con, release, format="markdown")
            answers.append((v.ok, v.rows, v.k_achieved, applied.rows, applied.placed,
                            m.dm, m.classes, round(m.gcp, 9), {q: round(v, 9) for q, v in m.ncp.items()},
                            {s: v for s, v in m.l_distinct.items()}, len(points)))
        assert answers[0] == answers[1]
    finally:
        duck.close()


def test_text_follows_the_column_collation_on_postgres(pg_con):
    """Text QIs order by the column's collation on PostgreSQL (DuckDB's order, by code point, is
    the C collation's): under an ICU collation the release is another partition than DuckDB's,
    but a valid and self-consistent one -- verified, every row placed by apply, its boxes
    ordered as the database compares the values."""
    import psycopg.errors

    words = ["apple", "Banana", "cherry", "Date", "éclair", "fig", "Grape", "_x", "Zed", "zoo", "10", "9"]
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"id": np.arange(1200), "name": rng.choice(words, 1200), "age": rng.integers(18, 90, 1200)})
    load_frame(pg_con, "t", frame, primary_key="id")
    try:
        pg_con.execute('ALTER TABLE t ALTER COLUMN name TYPE text COLLATE "und-x-icu"')
    except psycopg.errors.UndefinedObject:
        pytest.skip("this PostgreSQL has no ICU collations")
    pg_con.commit()
    release = sqlanon.anonymize(pg_con, "t", qid=["name", "age"], k=40,
                                algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=0)))
    assert sqlanon.verify(pg_con, release.view, qid=["name", "age"], k=40).ok
    order = [r[0] for r in pg_con.execute("SELECT DISTINCT name FROM t ORDER BY name").fetchall()]
    assert order != sorted(words)  # the collation is not code-point order
    # every class's published range holds exactly the names the database orders between its ends
    for lo, hi, names in pg_con.execute(
            f'SELECT name_min, name_max, array_agg(DISTINCT t.name) FROM "{release.view}" v JOIN t USING (id) '
            f"GROUP BY eq_class, name_min, name_max").fetchall():
        assert set(names) <= set(order[order.index(lo):order.index(hi) + 1])
    applied = sqlanon.apply(pg_con, release, "t", view="t_again")
    assert (applied.rows, applied.placed) == (1200, 1200)


def test_postgres_moves_any_text_exactly(pg_con):
    """Uploads and fetches go through CSV ``COPY`` with ``\\N`` for NULL: a text value that is
    the marker (or empty, or quoted, or on two lines) must still arrive as itself, not NULL."""
    from sqlglot import exp

    engine = engine_for(pg_con)
    values = np.array(["\\N", None, "", "\\NN", '"', "a,b", "x\ny", " ", "NULL", "é"], dtype=object)
    name = engine.upload("texts", {"i": np.arange(len(values)), "v": values})
    stored = pg_con.execute(f'SELECT v FROM "{name}" ORDER BY i').fetchall()
    assert [r[0] for r in stored] == values.tolist()
    fetched = engine.fetch(exp.select("i", "v", exp.Null().as_("z")).from_(name).order_by("i"))
    assert fetched["v"].tolist() == values.tolist() and fetched["z"].tolist() == [None] * len(values)
    engine.cleanup()


def test_sql_levels_with_many_partitions_on_both_engines(pg_con):
    """Levels asking for more than 256 pairs upload their candidates, again at every such level:
    PostgreSQL replaces the earlier upload (it once failed with 'already exists')."""
    rng = np.random.default_rng(3)
    n = 12000
    frame = pd.DataFrame({"id": np.arange(n), "a": rng.integers(0, 5000, n), "b": rng.integers(0, 5000, n)})
    duck = duckdb.connect()
    try:
        out = []
        for con in (duck, pg_con):
            load_frame(con, "many", frame, primary_key="id")
            out.append((con, sqlanon.anonymize(con, "many", qid=["a", "b"], k=3,
                                               algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=0)))))
        assert out[1][1].partitions > 1024
        assert _rules(*out[0]) == _rules(*out[1])
    finally:
        duck.close()


def test_enum_qis_order_by_declaration_on_both_engines(pg_con):
    """An enum QI (DuckDB ENUM, PostgreSQL enum type) is ordered by its labels' declared
    positions on both engines: identical rules; selections and rewrite compare by position."""
    labels = ["sad", "ok", "happy", "it's"]
    duck = duckdb.connect()
    try:
        out = []
        for con in (duck, pg_con):
            run = con.execute
            run("CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy', 'it''s')")
            frame = pd.DataFrame({"id": np.arange(600), "m": [labels[i % 4] for i in range(600)],
                                  "age": np.arange(600) % 50})
            load_frame(con, "t", frame, primary_key="id", types={"m": "mood"})
            release = sqlanon.anonymize(con, "t", qid=["m", "age"], k=30, selections=["m IN ('ok', 'happy') AND age < 20"])
            assert sqlanon.verify(con, release.view, qid=["m", "age"], k=30).ok
            query = sqlanon.rewrite("SELECT count(*) FROM t WHERE m = 'happy' AND age >= 10", release)
            out.append((_rules(con, release), con.execute(query).fetchall()[0][0],
                        sqlanon.imprecision(con, release, ["m <> 'sad' AND age > 10"]).total))
        assert out[0] == out[1]
        assert out[0][1] >= 120  # every 'happy' row with age >= 10 is returned
    finally:
        duck.close()


def test_duckdb_upload_lets_go_of_its_arrays_inside_a_transaction():
    """A frame registered with DuckDB is a catalog entry that an open transaction keeps until
    its commit; the publication uploads its regions inside one, so the upload must not hold
    them there (at 100M rows, 200 MB through the whole publication)."""
    import gc
    import weakref

    con = duckdb.connect()
    engine = engine_for(con)
    values = np.arange(100_000, dtype=np.int64)
    labels = np.array(["a", None] * 50_000, dtype=object)
    held = [weakref.ref(values), weakref.ref(labels)]
    con.execute("BEGIN")
    name = engine.upload("held", {"v": values, "s": labels})
    del values, labels
    gc.collect()
    assert [ref() is None for ref in held] == [True, True]
    assert con.execute(f'SELECT count(*), sum(v), count(s) FROM "{name}"').fetchall() == [(100_000, 4_999_950_000, 50_000)]
    assert [r[:2] for r in con.execute(f'DESCRIBE "{name}"').fetchall()] == [("v", "BIGINT"), ("s", "VARCHAR")]
    con.execute("ROLLBACK")


def test_duckdb_row_ids_stay_fixed_inside_a_transaction(tmp_path):
    """What :meth:`DuckDBEngine.reads_in_place` rests on: inside one transaction a table's
    ``rowid`` numbers the rows alike in every statement, while another connection deletes,
    inserts and checkpoints (outside one, DuckDB may renumber rows after deletes)."""
    con = duckdb.connect(str(tmp_path / "db.duckdb"))
    con.execute("CREATE TABLE t AS SELECT range AS x FROM range(300000)")
    con.execute("CHECKPOINT")
    assert engine_for(con).reads_in_place(["x"], True)
    assert not engine_for(con).reads_in_place(["x", "RowId"], True) and not engine_for(con).reads_in_place(["x"], False)
    other = con.cursor()
    con.execute("BEGIN")
    con.execute("CREATE TEMP VIEW numbered AS SELECT rowid AS rid, x FROM t")
    before = con.execute("SELECT rid, x FROM numbered ORDER BY rid").fetchnumpy()
    other.execute("DELETE FROM t WHERE x < 200000")
    other.execute("INSERT INTO t SELECT range + 10000000 FROM range(1000)")
    other.execute("CHECKPOINT")
    after = con.execute("SELECT rid, x FROM numbered ORDER BY rid").fetchnumpy()
    ranged = con.execute("SELECT min(x), count(*) FROM numbered WHERE rid >= 150000 AND rid < 160000").fetchall()
    con.execute("COMMIT")
    assert np.array_equal(before["rid"], after["rid"]) and np.array_equal(before["x"], after["x"])
    assert np.array_equal(after["rid"], after["x"]) and ranged == [(150000, 10000)]
    assert con.execute("SELECT count(*), min(x) FROM t").fetchall() == [(101000, 200000)]


def test_joined_concatenates_by_column_and_lets_go_of_the_parts():
    from sqlanon.engine.base import joined

    parts = [{"a": np.array([1, 2], np.int32), "b": np.array([5])}, {"a": np.array([3]), "b": np.array([6, 7])}]
    out = joined(parts, ["a", "b"])
    assert parts == []
    assert out["a"].tolist() == [1, 2, 3] and out["b"].tolist() == [5, 6, 7]
    assert out["a"].dtype == np.int64 and out["b"].dtype == np.int64  # numpy's promotion of int32 and int64
    flags = joined([{"f": np.array([True])}, {"f": np.array([False, True])}], ["f"])["f"]
    assert flags.dtype == bool and flags.tolist() == [True, False, True]  # no cast: the leaves' flags stay flags


def test_duckdb_renders_every_statement_of_a_run_alike_twice(monkeypatch):
    """DuckDB renders without sqlglot's defensive copy (``Engine.render_in_place``), which is
    safe only while its generator leaves a tree as it found it: every statement of runs of each
    kind renders the same before, during and after the in-place rendering."""
    from sqlanon.engine import base

    changed: list[tuple[str, str]] = []
    real = base.Engine.render

    def render(self, statement):
        if isinstance(statement, str):
            return statement
        before = statement.sql(dialect=self.dialect)
        once = real(self, statement)
        after = statement.sql(dialect=self.dialect)
        if not before == once == after:
            changed.append((before, after))
        return once

    monkeypatch.setattr(base.Engine, "render", render)
    con = duckdb.connect()
    rng = np.random.default_rng(5)
    n = 1500
    con.register("src", pd.DataFrame({
        "id": np.arange(n), "age": rng.integers(0, 90, n), "zip": rng.integers(100, 160, n).astype(str),
        "day": pd.to_datetime("2020-01-01") + pd.to_timedelta(rng.integers(0, 900, n), unit="D"),
        "sex": rng.choice(["M", "F"], n), "dis": rng.choice(["a", "b", "c"], n), "y": rng.normal(size=n)}))
    con.execute("CREATE TABLE t AS SELECT * FROM src")
    con.execute("CREATE TABLE tk (id INTEGER PRIMARY KEY, age INTEGER, zip VARCHAR, sex VARCHAR, dis VARCHAR)")
    con.execute("INSERT INTO tk SELECT id, age, zip, sex, dis FROM src")
    runs = [{}, {"sensitive": "dis", "l": 2}, {"target": "y", "memory_rows": 0}, {"suppression": 0.05},
            {"strategy": "sample", "sample_rows": 400, "memory_rows": 400}, {"selections": ["age > 40 AND sex = 'M'"]},
            {"recoding": "single"}]
    for i, kw in enumerate(runs):
        sqlanon.anonymize(con, "t", qid=["age", "zip", "day", "sex"], k=10, **request_options(view=f"v{i}", **kw))
        sqlanon.anonymize(con, "tk", qid=["age", "zip", "sex"], k=10, output=sqlanon.Output(view=f"w{i}"),
                          **{"sensitive": "dis", "l": 2} if i == 1 else {})
    assert not changed, changed[:3]
