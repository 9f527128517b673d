"""Failing closed, nothing lost: a run that fails half-way (a crash in the partitioner, in
publishing, a failed verification) propagates its error, leaves no temp object, publishes nothing
and leaves an earlier release that it was about to replace intact; the source table is never
modified; inside a caller's transaction it rolls back to the call and keeps the caller's work."""

from __future__ import annotations

import re

import pytest

import sqlanon
import sqlanon.datasets
import sqlanon.mondrian.builder
import sqlanon.pipeline
import sqlanon.publish.manifest
import sqlanon.publish.pipeline
from sqlanon import (
    EngineError,
    InputError,
    SqlanonError,
    UnknownColumnError,
    Verification,
    VerificationError,
)
from tests.support import here, is_postgres, objects, quote, rows, run, temp_objects
from tests.support.db import CITY, columns, series
from tests.support.refusal import usable

pytestmark = pytest.mark.engines("duckdb", "postgres")


# -- fail closed, nothing lost ---------------------------------------------------------------
def snapshot(con, table: str):
    """Everything observable about a base table: its rows by their physical address (DuckDB's
    rowid; PostgreSQL's ctid and the transaction that wrote each row version, xmin) and its
    catalog entry and columns."""
    if is_postgres(con):
        data = rows(con, f"SELECT ctid::text, xmin::text, * FROM {quote(table)} ORDER BY ctid")
        meta = rows(con, "SELECT c.oid::bigint, c.relname, c.relkind, c.relpersistence, c.relnatts, c.relfilenode, "
                         "obj_description(c.oid, 'pg_class'), ARRAY(SELECT pg_get_constraintdef(k.oid) FROM pg_constraint k "
                         "WHERE k.conrelid = c.oid ORDER BY k.oid)::text FROM pg_class c "
                         "WHERE c.relname = ? AND c.relnamespace = current_schema()::regnamespace", [table])
        types = rows(con, "SELECT attname, format_type(atttypid, atttypmod), attnotnull FROM pg_attribute "
                          "WHERE attrelid = to_regclass(?) AND attnum > 0 ORDER BY attnum", [quote(table)])
        return data, meta, types
    data = con.execute(f"SELECT rowid, * FROM {quote(table)} ORDER BY rowid").fetchall()
    meta = con.execute(
        "SELECT * EXCLUDE (database_oid, schema_oid) FROM duckdb_tables() WHERE table_name = ?", [table]
    ).fetchall()
    types = con.execute(f"DESCRIBE {quote(table)}").fetchall()
    return data, meta, types


def view_sql(con, view: str) -> list[tuple]:
    """A view's stored definition."""
    if is_postgres(con):
        return rows(con, "SELECT definition FROM pg_views WHERE viewname = ? AND schemaname = current_schema()", [view])
    return rows(con, "SELECT sql FROM duckdb_views() WHERE view_name = ?", [view])


def release_state(con, view: str) -> dict:
    """An earlier release as data: its view definition and output, its rules and row map."""
    return {
        "definition": view_sql(con, view),
        "view": con.execute(f"SELECT * FROM {quote(view)} ORDER BY id").fetchall(),
        "view_columns": columns(con, view),
        "rules": con.execute(f"SELECT * FROM {quote(view + '_rules')} ORDER BY region").fetchall(),
        "rowmap": con.execute(f"SELECT * FROM {quote(view + '_rowmap')} ORDER BY key0").fetchall(),
    }


@pytest.fixture
def mixed(con) -> str:
    """500 rows (490 after a DELETE: physical row addresses with gaps), committed: the tests
    start outside any transaction (PostgreSQL: sqlanon's own transaction, in autocommit)."""
    run(con, "CREATE TABLE mixed (id BIGINT PRIMARY KEY, age BIGINT, day DATE, city VARCHAR, note DOUBLE PRECISION)")
    run(con,
        "INSERT INTO mixed SELECT i AS id, CASE WHEN mod(i, 9) = 0 THEN NULL ELSE mod(i, 37) END AS age, "
        "DATE '2001-01-01' + CAST(mod(i, 100) AS INTEGER) AS day, 'x' || mod(i, 5) AS city, i / 3.0 AS note "
        f"FROM {series(500)}"
    )
    run(con, "DELETE FROM mixed WHERE mod(id, 50) = 7")  # rowids with gaps
    con.commit()
    return "mixed"


@pytest.mark.parametrize("memory_rows", [None, 0])
def test_source_table_is_unchanged(con, mixed, memory_rows):
    before = snapshot(con, mixed)
    release = sqlanon.anonymize(con, mixed, qid=["age", "day", "city"], k=5, hierarchies={"city": CITY},
                                algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=memory_rows)),
                                output=sqlanon.Output(key="id"))
    assert release.rows == 490
    assert snapshot(con, mixed) == before
    assert temp_objects(con) == []
    database, schema = here(con)
    assert objects(con) - {(database, schema, "mixed", "table")} == {
        (database, schema, "mixed_anon", "view"),
        (database, schema, "mixed_anon_rules", "table"),
        (database, schema, "mixed_anon_rowmap", "table"),
        (database, schema, "mixed_anon_hierarchies", "table"),
    }


def test_source_view_and_its_table_are_unchanged(con, mixed):
    run(con, "CREATE VIEW mixed_v AS SELECT * FROM mixed WHERE id < 400")
    con.commit()
    before = snapshot(con, mixed)
    definition = view_sql(con, "mixed_v")
    assert definition
    release = sqlanon.anonymize(con, "mixed_v", qid=["age", "day"], k=5)
    assert release.materialized
    assert snapshot(con, mixed) == before
    assert view_sql(con, "mixed_v") == definition
    assert temp_objects(con) == []


def _raise_after(real):
    def wrapper(*args, **kwargs):
        real(*args, **kwargs)
        raise RuntimeError("injected failure")
    return wrapper


def _raise(*args, **kwargs):
    raise RuntimeError("injected failure")


# (module, attribute, replacement factory, memory_rows): each crashes at a different step
CRASHES = {
    "encode": (sqlanon.pipeline, "encode", lambda real: _raise, None),
    "run_sql": (sqlanon.mondrian.builder, "repartition", lambda real: _raise, 0),
    "run_memory": (sqlanon.mondrian.builder.Partitioner, "run_memory", lambda real: _raise, None),
    "create_rules": (sqlanon.publish.pipeline, "create_rules", _raise_after, None),
    "rowmap_query": (sqlanon.publish.pipeline, "rowmap_query", _raise_after, None),
    "publish": (sqlanon.publish.pipeline, "publish", _raise_after, None),
    "publish_sql_path": (sqlanon.publish.pipeline, "publish", _raise_after, 0),
}


def no_transaction_left(con) -> None:
    """On PostgreSQL, a run begun outside any transaction leaves none open, and the connection
    as the caller had it (not in autocommit mode)."""
    if is_postgres(con):
        from psycopg import pq

        assert con.info.transaction_status == pq.TransactionStatus.IDLE and not con.autocommit


@pytest.mark.parametrize("step", sorted(CRASHES))
def test_crash_mid_run_publishes_nothing(con, mixed, monkeypatch, step):
    target, attribute, factory, memory_rows = CRASHES[step]
    before_objects, before_source = objects(con), snapshot(con, mixed)
    con.commit()  # PostgreSQL: end the reads' transaction, so the run is in a transaction of its own
    monkeypatch.setattr(target, attribute, factory(getattr(target, attribute)))
    with pytest.raises(RuntimeError, match="injected failure"):
        sqlanon.anonymize(con, mixed, qid=["age", "day"], k=5,
                          algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=memory_rows)))
    no_transaction_left(con)
    assert temp_objects(con) == []
    assert objects(con) == before_objects
    assert snapshot(con, mixed) == before_source


@pytest.mark.parametrize("step", sorted(CRASHES))
def test_crash_mid_run_keeps_the_earlier_release(con, mixed, monkeypatch, step):
    target, attribute, factory, memory_rows = CRASHES[step]
    earlier = sqlanon.anonymize(con, mixed, qid=["age"], k=5)
    state, before_objects = release_state(con, earlier.view), objects(con)
    con.commit()  # PostgreSQL: end the reads' transaction, so the run is in a transaction of its own
    monkeypatch.setattr(target, attribute, factory(getattr(target, attribute)))
    with pytest.raises(RuntimeError, match="injected failure"):
        sqlanon.anonymize(con, mixed, qid=["age", "day", "city"], k=7, hierarchies={"city": CITY},
                          algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=memory_rows)),
                          output=sqlanon.Output(replace=True))
    no_transaction_left(con)
    assert temp_objects(con) == []
    assert objects(con) == before_objects
    assert release_state(con, earlier.view) == state
    monkeypatch.undo()
    # and the connection is usable: no transaction left open
    again = sqlanon.anonymize(con, mixed, qid=["age", "day"], k=5, output=sqlanon.Output(replace=True))
    assert again.verification.ok


def failing_verification(**overrides):
    fields = dict(ok=False, k=5, k_achieved=3, classes=10, rows=490, violating=2, columns=("age_min", "age_max"))
    fields.update(overrides)
    result = Verification(**fields)
    return lambda *args, **kwargs: result


@pytest.mark.parametrize(
    ("overrides", "fragment"),
    [
        ({}, "2 equivalence class(es) smaller than k=5 (smallest 3)"),
        ({"violating": 0, "k_achieved": 5, "rows": 489}, "489 published rows for 490 source rows"),
        ({"violating": 0, "k_achieved": 5, "unplaced": 4}, "4 rows without an equivalence class"),
    ],
)
def test_failed_verification_publishes_nothing(con, mixed, monkeypatch, overrides, fragment):
    before = objects(con)
    monkeypatch.setattr(sqlanon.publish.pipeline, "verify_source", failing_verification(**overrides))
    with pytest.raises(VerificationError) as info:
        sqlanon.anonymize(con, mixed, qid=["age", "day"], k=5)
    assert fragment in str(info.value)
    assert "'mixed_anon'" in str(info.value)
    usable(con)  # PostgreSQL: raised inside the transaction objects() opened
    assert objects(con) == before
    assert temp_objects(con) == []


def test_failed_verification_keeps_the_earlier_release(con, mixed, monkeypatch):
    earlier = sqlanon.anonymize(con, mixed, qid=["age"], k=5)
    state, before = release_state(con, earlier.view), objects(con)
    monkeypatch.setattr(sqlanon.publish.pipeline, "verify_source", failing_verification())
    with pytest.raises(VerificationError):
        sqlanon.anonymize(con, mixed, qid=["age", "day"], k=5, output=sqlanon.Output(replace=True))
    usable(con)
    assert objects(con) == before
    assert release_state(con, earlier.view) == state
    assert temp_objects(con) == []


def test_no_temp_objects_after_success(con, mixed):
    sqlanon.anonymize(con, mixed, qid=["age", "day", "city"], k=3, hierarchies={"city": CITY})
    sqlanon.anonymize(con, mixed, qid=["age", "day"], k=3,
                      algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=50)),
                      output=sqlanon.Output(view="second"))
    run(con, "CREATE VIEW mv AS SELECT * FROM mixed")
    sqlanon.anonymize(con, "mv", qid=["age"], k=3)  # the snapshot path
    assert temp_objects(con) == []


def test_temp_objects_exist_during_a_run_and_carry_the_prefix(con, mixed, monkeypatch):
    """The emptiness checks above are meaningful: mid-run, temp_objects() sees the run's tables."""
    seen: list[list[str]] = []
    real = sqlanon.mondrian.builder.Partitioner.run_memory

    def spy(self, *args, **kwargs):
        seen.append(temp_objects(con))
        temporary = ("SELECT relname FROM pg_class WHERE relpersistence = 't' AND relkind IN ('r', 'v', 'p')"
                     if is_postgres(con) else "SELECT table_name FROM duckdb_tables() WHERE temporary "
                     "UNION ALL SELECT view_name FROM duckdb_views() WHERE temporary AND NOT internal")
        seen.append([r[0] for r in con.execute(temporary).fetchall()])
        return real(self, *args, **kwargs)

    monkeypatch.setattr(sqlanon.mondrian.builder.Partitioner, "run_memory", spy)
    sqlanon.anonymize(con, mixed, qid=["age", "day"], k=5)
    ours, all_temporary = seen[0], seen[1]
    assert ours and sorted(all_temporary) == ours
    assert all(re.fullmatch(r"__sqlanon_[0-9a-f]{10}_\w+", name) for name in ours), ours
    assert len({name[:21] for name in ours}) == 1  # one run, one prefix
    assert temp_objects(con) == []


def test_temp_names_do_not_collide_with_user_objects(con, mixed):
    # A user object with the prefix is not ours to drop.
    run(con, "CREATE TABLE __sqlanon_user AS SELECT 1 AS a")
    sqlanon.anonymize(con, mixed, qid=["age"], k=5)
    assert temp_objects(con) == ["__sqlanon_user"]


def begin(con) -> None:
    """Open a transaction as a caller would: DuckDB's ``begin()``; psycopg opens one with the
    first statement (the connection is not in autocommit mode)."""
    if is_postgres(con):
        from psycopg import pq

        con.commit()
        rows(con, "SELECT 1")
        assert con.info.transaction_status == pq.TransactionStatus.INTRANS
    else:
        con.begin()


def test_anonymize_inside_a_caller_transaction(con, mixed):
    begin(con)
    release = sqlanon.anonymize(con, mixed, qid=["age"], k=5)
    con.commit()
    assert con.execute(f"SELECT count(*) FROM {release.view}").fetchone()[0] == 490
    assert temp_objects(con) == []


def test_anonymize_inside_a_caller_transaction_that_rolls_back(con, mixed):
    before = objects(con)
    begin(con)
    sqlanon.anonymize(con, mixed, qid=["age"], k=5)
    con.rollback()
    assert objects(con) == before and temp_objects(con) == []


def test_crash_inside_a_caller_transaction_publishes_nothing(con, mixed, monkeypatch):
    before = objects(con)
    monkeypatch.setattr(sqlanon.publish.pipeline, "publish", _raise_after(sqlanon.publish.pipeline.publish))
    begin(con)
    with pytest.raises(RuntimeError, match="injected failure"):
        sqlanon.anonymize(con, mixed, qid=["age"], k=5)
    usable(con)
    con.commit()
    assert objects(con) == before and temp_objects(con) == []


def test_crash_inside_a_caller_transaction_keeps_the_earlier_release(con, mixed, monkeypatch):
    earlier = sqlanon.anonymize(con, mixed, qid=["age"], k=5)
    state = release_state(con, earlier.view)
    monkeypatch.setattr(sqlanon.publish.pipeline, "publish", _raise_after(sqlanon.publish.pipeline.publish))
    begin(con)
    with pytest.raises((RuntimeError, SqlanonError)):
        sqlanon.anonymize(con, mixed, qid=["age", "day"], k=5, output=sqlanon.Output(replace=True))
    usable(con)
    con.commit()
    assert release_state(con, earlier.view) == state


def _sql_error_after(real):
    """``real`` (whose first argument is the engine), then a statement the database rejects."""
    def wrapper(engine, *args, **kwargs):
        out = real(engine, *args, **kwargs)
        engine.execute("SELECT * FROM __sqlanon_test_no_such_table")
        return out
    return wrapper


# PostgreSQL alone: DuckDB has no savepoints, and a failed statement aborts its caller's transaction
@pytest.mark.engines("postgres")
@pytest.mark.parametrize("step", ["encode", "publish"])
def test_database_error_inside_a_caller_transaction_rolls_back_to_the_call(con, mixed, monkeypatch, step):
    earlier = sqlanon.anonymize(con, mixed, qid=["age"], k=5)
    state = release_state(con, earlier.view)
    begin(con)
    run(con, "CREATE TABLE mine AS SELECT 42 AS answer")
    before = objects(con)
    module = sqlanon.pipeline if step == "encode" else sqlanon.publish.pipeline
    monkeypatch.setattr(module, step, _sql_error_after(getattr(module, step)))
    with pytest.raises(EngineError, match="__sqlanon_test_no_such_table"):
        sqlanon.anonymize(con, mixed, qid=["age", "day"], k=5, output=sqlanon.Output(replace=True))
    usable(con)
    assert objects(con) == before and temp_objects(con) == []
    assert release_state(con, earlier.view) == state
    con.commit()
    assert rows(con, "SELECT answer FROM mine") == [(42,)]
    assert release_state(con, earlier.view) == state


@pytest.mark.engines("postgres")  # psycopg's transaction states; DuckDB's caller transactions are above
@pytest.mark.parametrize("failure", ["input", "crash"])
def test_failure_keeps_the_callers_own_work_in_its_transaction(con, mixed, monkeypatch, failure):
    """sqlanon rolls back to its savepoint, not the caller's transaction: what the caller did
    before the call is still there, and commits."""
    begin(con)
    run(con, "CREATE TABLE mine AS SELECT 42 AS answer")
    run(con, "UPDATE mixed SET city = 'changed' WHERE id = 0")
    if failure == "crash":
        monkeypatch.setattr(sqlanon.publish.pipeline, "publish", _raise_after(sqlanon.publish.pipeline.publish))
    with pytest.raises((RuntimeError, UnknownColumnError)):
        sqlanon.anonymize(con, mixed, qid=["age", "nope" if failure == "input" else "day"], k=5)
    usable(con)
    assert temp_objects(con) == []
    con.commit()
    assert rows(con, "SELECT answer FROM mine") == [(42,)]
    assert rows(con, "SELECT city FROM mixed WHERE id = 0") == [("changed",)]
    assert "mixed_anon" not in {o[2] for o in objects(con)}


@pytest.mark.engines("postgres")  # psycopg's autocommit switch, which sqlanon sets for a call outside a transaction
def test_failure_outside_a_transaction_leaves_the_connection_as_it_was(con, mixed):
    with pytest.raises(UnknownColumnError):
        sqlanon.anonymize(con, mixed, qid=["nope"], k=5)
    no_transaction_left(con)
    with pytest.raises(InputError):
        sqlanon.anonymize(con, mixed, qid=["age"], k=0)
    no_transaction_left(con)
    assert sqlanon.anonymize(con, mixed, qid=["age"], k=5).verification.ok
    no_transaction_left(con)
