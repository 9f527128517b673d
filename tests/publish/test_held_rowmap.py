"""A keyless release whose rows were all finished in memory from rows held in this process
(issue 52, "The core, again") writes its row map -- the published snapshot -- from the arrays
held here (:class:`sqlanon.publish.rules.HeldRowMap`): the rows' leaves are never uploaded and
the leaves' table is never joined to them. DuckDB writes the class beside the snapshot's rows by
position (a ``POSITIONAL JOIN`` that checks every row's id and fails when one is out of place);
the other engines upload ``(rid, class)`` and join it by id. Either way the release is the one
the SQL levels publish (``memory_rows=0``), on every engine.
"""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest

import sqlanon
from sqlanon.engine import engine_for
from sqlanon.errors import EngineError
from tests.support import quote
from tests.support.db import load_frame, rendered_statements

pytestmark = pytest.mark.engines("duckdb", "postgres")

QID = ["age", "zip", "income"]


def people(con, n: int = 1500, seed: int = 11) -> str:
    """A keyless table: three integer QIs and two columns the snapshot keeps (text, double)."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"age": rng.integers(18, 90, n).astype(np.int32),
                          "note": rng.choice(["a", "b", "c", "d"], n),
                          "zip": rng.integers(0, 400, n).astype(np.int32),
                          "score": rng.normal(size=n).round(6),
                          "income": rng.integers(0, 90_000, n).astype(np.int32)})
    return load_frame(con, "people", frame)


def rows(con, sql: str) -> list[tuple]:
    cursor = con.execute(sql)
    return sorted(cursor.fetchall(), key=repr)


def published(con, release) -> tuple[list[tuple], list[tuple], list[tuple]]:
    """The release's rules, its view's rows and its snapshot's rows (each sorted)."""
    return (rows(con, f"SELECT * FROM {quote(release.rules)}"), rows(con, f"SELECT * FROM {quote(release.view)}"),
            rows(con, f"SELECT * FROM {quote(release.rowmap)}"))


def levels(con, table: str, view: str):
    """The same request through the SQL levels (no row finished in memory)."""
    return sqlanon.anonymize(con, table, qid=QID, k=10, output=sqlanon.Output(view=view),
                             algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=0)))


def rowmap_statement(statements: list[str], release) -> str:
    created = [s for s in statements if s.startswith("CREATE TABLE") and quote(release.rowmap) in s.split(" AS ")[0]]
    assert len(created) == 1, created
    return created[0]


def test_the_held_row_map_publishes_what_the_sql_levels_publish(con, monkeypatch):
    people(con)
    statements = rendered_statements(monkeypatch)
    held = sqlanon.anonymize(con, "people", qid=QID, k=10, output=sqlanon.Output(view="held"))
    written = rowmap_statement(statements, held)
    assert held.verification.ok and held.materialized and held.partitions > 20
    # the rows' leaves were not uploaded, and the row map joins no leaves' table
    assert not [s for s in statements if "_leaves0" in s], [s for s in statements if "_leaves0" in s]
    assert "_leafmap" not in written, written
    if engine_for(con).name == "duckdb":
        assert "POSITIONAL JOIN" in written and " ON " not in written, written
    sql = levels(con, "people", "sql")
    assert published(con, held) == published(con, sql)


@pytest.mark.engines("duckdb")
def test_deleted_rows_and_rows_of_the_callers_transaction_stay_in_place(con):
    """Row ids with gaps (deleted rows) and, inside the caller's transaction, appended rows
    (DuckDB numbers those from about 2^55): each row keeps its class."""
    people(con)
    con.execute("DELETE FROM people WHERE income % 7 = 0")
    con.execute("BEGIN")
    con.execute("INSERT INTO people SELECT age + 1, note, zip, score, income + 1 FROM people WHERE zip < 100")
    held = sqlanon.anonymize(con, "people", qid=QID, k=10, output=sqlanon.Output(view="held"))
    sql = levels(con, "people", "sql")
    assert held.verification.ok
    assert published(con, held) == published(con, sql)
    con.execute("COMMIT")


@pytest.mark.engines("duckdb")
def test_without_insertion_order_duckdb_joins_by_id(con, monkeypatch):
    """With ``preserve_insertion_order`` off a scan may list rows in any order: the row map is
    joined by id, and the release is the same."""
    people(con)
    con.execute("SET preserve_insertion_order = false")
    statements = rendered_statements(monkeypatch)
    held = sqlanon.anonymize(con, "people", qid=QID, k=10, output=sqlanon.Output(view="held"))
    written = rowmap_statement(statements, held)
    assert "POSITIONAL" not in written and " ON " in written, written
    assert published(con, held) == published(con, levels(con, "people", "sql"))


@pytest.mark.engines("duckdb")
def test_a_row_out_of_place_fails_the_statement(con):
    """The positional write compares every row's id with the array's: rows stored in another
    order than the ids fail the statement, and nothing is written."""
    from sqlglot import exp

    from sqlanon.engine import sqlgen as g

    con.execute("CREATE TABLE r AS SELECT 9 - i AS rid, i * 10 AS v FROM range(10) t(i)")  # ids stored descending
    engine = engine_for(con)
    query = exp.select(g.alias(g.col("v", "b"), "v")).from_(exp.alias_(g.table("r"), g.ident("b"), table=True))
    with pytest.raises(EngineError, match="out of place"):
        engine.create_beside("out", query, g.col("rid", "b"), np.arange(10, dtype=np.int64),
                             {"c": np.arange(10, dtype=np.int64)})
    assert not con.execute("SELECT * FROM duckdb_tables() WHERE table_name = 'out'").fetchall()
    # in order, the same call writes each row's value beside it
    con.execute("CREATE TABLE s AS SELECT i AS rid, i * 10 AS v FROM range(10) t(i)")
    query = exp.select(g.alias(g.col("v", "b"), "v")).from_(exp.alias_(g.table("s"), g.ident("b"), table=True))
    engine.create_beside("out", query, g.col("rid", "b"), np.arange(10, dtype=np.int64),
                         {"c": np.arange(10, dtype=np.int64) * 3})
    assert con.execute("SELECT v, c FROM out ORDER BY v").fetchall() == [(10 * i, 3 * i) for i in range(10)]


def test_duckdb_and_postgres_publish_the_same(con):
    """The held path on this engine against DuckDB's (PostgreSQL: ids are ``ctid``, written by
    an upload and a join; DuckDB: by position)."""
    people(con)
    release = sqlanon.anonymize(con, "people", qid=QID, k=10, output=sqlanon.Output(view="held"))
    reference = duckdb.connect()
    people(reference)
    expected = sqlanon.anonymize(reference, "people", qid=QID, k=10, output=sqlanon.Output(view="held"))
    assert published(con, release) == published(reference, expected)  # rules, view and snapshot
