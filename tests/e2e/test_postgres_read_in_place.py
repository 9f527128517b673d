"""PostgreSQL reads a plain table in place when a run fetches its rows once (issue 52): one
``REPEATABLE READ`` transaction reads the source, its rows numbered by ``ctid``
(:meth:`PostgresEngine.reads_fetched_in_place`), and copies only the columns the publication
takes -- instead of first copying all of it into a snapshot sorted by ``ctid`` (1.9-3 s of a
PostgreSQL run at 1M Agrawal rows).

Only such a run: its row ids never leave it (no sample is drawn by them, the published snapshot
holds none). Every other run -- SQL levels, Rothko-S, whose seeded sample draws the same rows
as DuckDB's by ids ``0..n-1`` -- still numbers a snapshot in ``ctid`` order. Checked here: the
release is the snapshot path's and DuckDB's, the ids stay fixed inside the transaction while
another connection deletes, updates and vacuums, and a caller's ``READ COMMITTED``
transaction, a partitioned table, an inheritance parent and ``"domain"`` bounds still copy."""

from __future__ import annotations

import duckdb
import numpy as np
import psycopg
import pytest

import sqlanon
from sqlanon.engine import engine_for
from sqlanon.engine import sqlgen as g
from tests.e2e.test_postgres_fast_path import Logged, keyless
from tests.e2e.test_postgres_held_values import rules

pytestmark = pytest.mark.engines("postgres")

QI = ["age", "zip", "income"]


def sorted_copies(log: list[str]) -> list[str]:
    """The statements that number the source by sorting it (the snapshot a run copies)."""
    return [s for s in log if "ORDER BY ctid" in s]


def published(con, view: str) -> list[tuple]:
    return con.execute(f'SELECT * FROM "{view}" ORDER BY 1, 2, 3, 4, 5, 6, 7, 8').fetchall()


@pytest.mark.parametrize("target", [None, "note"])
@pytest.mark.parametrize("keyed", [False, True])
def test_a_fetched_run_reads_a_plain_table_in_place_and_releases_alike(con, keyed, target):
    name = keyless(con)
    if keyed:  # a key of two columns, not one integer column: the run still numbers its rows
        con.execute(f'ALTER TABLE "{name}" ADD COLUMN id BIGSERIAL')
        con.execute(f'ALTER TABLE "{name}" ADD UNIQUE (id, note)')
        con.commit()
    extra = {"target": target} if target else {}
    engine = Logged(con)
    release = sqlanon.anonymize(engine, name, qid=QI, k=10, output=sqlanon.Output(view="people_anon"), **extra)
    assert release.verification.ok and release.materialized != keyed
    assert not sorted_copies(engine.log), sorted_copies(engine.log)  # before issue 52: the snapshot's
    assert any("ISOLATION LEVEL REPEATABLE READ" in s for s in engine.log)
    mine, mine_rules = published(con, "people_anon"), rules(con, release)
    # the same request read through a snapshot (a caller's READ COMMITTED transaction)
    with con.transaction():
        copied = Logged(con)
        again = sqlanon.anonymize(copied, name, qid=QI, k=10, output=sqlanon.Output(view="people_anon2"), **extra)
        assert sorted_copies(copied.log), copied.log
        theirs, their_rules = published(con, "people_anon2"), rules(con, again)
    assert mine == theirs and mine_rules == their_rules
    duck = duckdb.connect()
    try:
        assert rules(duck, sqlanon.anonymize(duck, keyless(duck), qid=QI, k=10, **extra)) == mine_rules
    finally:
        duck.close()


@pytest.mark.parametrize("request_", [
    {"algorithm": sqlanon.Mondrian(strategy=sqlanon.Levels(0))},
    {"algorithm": sqlanon.Mondrian(strategy=sqlanon.Sample(rows=200, seed=3))},
    {"published": {"age": "domain"}},
], ids=["sql-levels", "sample", "domain-bounds"])
def test_other_runs_still_number_a_sorted_snapshot(con, request_):
    """Runs whose ids are seen (a seeded sample draws by them), or whose publication reads the
    source again (the check of ``"domain"`` ends), keep ids ``0..n-1`` in ``ctid`` order."""
    name = keyless(con)
    engine = Logged(con)
    release = sqlanon.anonymize(engine, name, qid=QI, k=10, **request_)
    assert release.verification.ok
    assert sorted_copies(engine.log) and not any("REPEATABLE READ" in s for s in engine.log)


def test_partitioned_and_inherited_tables_are_copied(con):
    """Their scans repeat ``ctid`` values across partitions or children."""
    name = keyless(con)
    con.execute('CREATE TABLE part (age BIGINT, zip BIGINT, income BIGINT, note TEXT) PARTITION BY RANGE (age)')
    con.execute("CREATE TABLE part_a PARTITION OF part FOR VALUES FROM (0) TO (50)")
    con.execute("CREATE TABLE part_b PARTITION OF part FOR VALUES FROM (50) TO (1000)")
    con.execute(f'INSERT INTO part SELECT age, zip, income, note FROM "{name}"')
    con.execute("CREATE TABLE parent (age BIGINT, zip BIGINT, income BIGINT, note TEXT)")
    con.execute("CREATE TABLE child () INHERITS (parent)")
    con.execute(f'INSERT INTO parent SELECT age, zip, income, note FROM "{name}" WHERE age < 50')
    con.execute(f'INSERT INTO child SELECT age, zip, income, note FROM "{name}" WHERE age >= 50')
    con.commit()
    for table in ("part", "parent"):
        engine = Logged(con)
        release = sqlanon.anonymize(engine, table, qid=QI, k=10, output=sqlanon.Output(view=f"{table}_anon"))
        assert release.verification.ok and release.rows == 600
        assert sorted_copies(engine.log)


def test_ctid_ids_stay_fixed_inside_a_repeatable_read_transaction(con):
    con.execute("CREATE TABLE t AS SELECT x FROM generate_series(0, 29999) AS x")
    con.commit()
    con.autocommit = True  # as a public call runs without the caller's transaction (PostgresEngine.session)
    engine = engine_for(con)
    assert engine.reads_fetched_in_place(g.table("t"))
    ids = engine.in_place_ids(["x"]).sql("postgres")
    other = psycopg.connect(con.info.dsn, autocommit=True)
    try:
        with engine.transaction(snapshot=True):
            con.execute(f"CREATE TEMP VIEW numbered AS SELECT {ids} AS rid, x FROM t")
            before = engine.fetch("SELECT rid, x FROM numbered")
            other.execute("DELETE FROM t WHERE x < 20000")
            other.execute("UPDATE t SET x = x + 1000000 WHERE x % 2 = 0")
            other.execute("INSERT INTO t SELECT generate_series(5000000, 5000999)")
            other.execute("VACUUM t")
            after = engine.fetch("SELECT rid, x FROM numbered")
        assert all(np.array_equal(before[c], after[c]) for c in ("rid", "x"))
        assert np.array_equal(np.sort(after["x"]), np.arange(30000)) and len(set(after["rid"].tolist())) == 30000
        # a caller's READ COMMITTED transaction sees each statement's rows: the source is copied
        with con.transaction():
            assert not engine.reads_fetched_in_place(g.table("t"))
        with con.transaction():
            con.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            assert engine.reads_fetched_in_place(g.table("t"))
    finally:
        other.close()


def test_row_ids_go_up_as_tids_and_come_back(con):
    """A fetched ``ctid`` is held as one integer and uploaded as a ``tid`` again, binary or CSV."""
    con.execute("CREATE TABLE t AS SELECT x, x::text AS s FROM generate_series(0, 999) AS x")
    con.commit()
    engine = engine_for(con)
    got = engine.fetch("SELECT ctid AS rid, x FROM t")
    for extra in ({}, {"s": np.array([str(v) for v in got["x"]], dtype=object)}):  # binary, then CSV
        up = engine.upload("tids", {"rid": got["rid"], "x": got["x"], **extra})
        same = con.execute(f'SELECT count(*) FROM t JOIN "{up}" u ON u.rid = t.ctid AND u.x = t.x').fetchone()[0]
        assert same == 1000
    con.rollback()
