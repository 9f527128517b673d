"""Concurrency: threads sharing one connection run one after the other; two runs publishing the
same name at the same time leave exactly one release and one ObjectExistsError."""

from __future__ import annotations

import threading

import duckdb
import pytest

import sqlanon
from tests.support import make_people, rows, temp_objects

pytestmark = pytest.mark.engines("duckdb", "postgres")


def _run_all(targets) -> list[object]:
    results: list[object] = [None] * len(targets)
    barrier = threading.Barrier(len(targets))

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = targets[i]()
        except Exception as e:  # collected: the test asserts on them
            results[i] = e

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(targets))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_threads_sharing_a_connection_are_serialized(con):
    make_people(con, 3000)
    results = _run_all([
        lambda: sqlanon.anonymize(con, "people", ["age", "zip"], k=10, output=sqlanon.Output(view="a")),
        lambda: sqlanon.anonymize(con, "people", ["age"], k=20, output=sqlanon.Output(view="b")),
        lambda: sqlanon.verify(con, "people", ["age"], 1),
    ])
    assert all(not isinstance(r, Exception) for r in results), results
    assert results[0].verification.ok and results[1].verification.ok and results[2].ok


@pytest.mark.parametrize("replace", [False, True])
def test_racing_publications_of_one_name(con, engine_name, tmp_path, replace):
    if engine_name == "duckdb":  # on disk, as a shared database is
        con = duckdb.connect(str(tmp_path / "db.duckdb"))
    make_people(con, 3000)  # committed on PostgreSQL: the other connections see it
    if replace:
        sqlanon.anonymize(con, "people", ["age"], k=5, output=sqlanon.Output(view="pub"))
    if engine_name == "duckdb":
        cursors = [con.cursor(), con.cursor()]
    else:  # two sessions of their own on the same database and schema (the DSN keeps search_path)
        import psycopg

        cursors = [psycopg.connect(con.info.dsn), psycopg.connect(con.info.dsn)]
    try:
        results = _run_all([
            lambda c=c, k=k: sqlanon.anonymize(c, "people", ["age", "zip"], k=k,
                                               output=sqlanon.Output(view="pub", replace=replace))
            for c, k in zip(cursors, (10, 11))
        ])
    finally:
        for c in cursors:
            c.close()
    won = [r for r in results if isinstance(r, sqlanon.Release)]
    lost = [r for r in results if not isinstance(r, sqlanon.Release)]
    if engine_name == "postgres" and replace:
        # PostgreSQL does not refuse the second transaction: its DROP waits on the first one's
        # lock, then finds and drops the first one's new objects, as replace=True asks. Both
        # runs return; the release that stands is whole and is one of the two.
        assert len(won) == 2 and not lost, results
        standing = sqlanon.publish.manifest.read(con, "pub").k
        assert standing in {r.k for r in won}
        winner = next(r for r in won if r.k == standing)
    else:
        assert len(won) == 1 and len(lost) == 1, results
        assert isinstance(lost[0], sqlanon.ObjectExistsError), repr(lost[0])
        winner = won[0]
    check = sqlanon.verify(con, "pub", ["age", "zip"], winner.k, class_column="eq_class")
    assert check.ok and check.rows == 3000
    assert sqlanon.publish.manifest.read(con, "pub").k == winner.k
    assert rows(con, "SELECT count(*) FROM pub_rules WHERE size > 0") == [(winner.partitions,)]
    assert temp_objects(con) == []


@pytest.mark.engines("duckdb")
@pytest.mark.parametrize("memory_rows, strategy", [(5000, "levels"), (400, "levels"), (400, "sample")],
                         ids=["working-view", "sql-levels", "sample"])
def test_a_source_changed_while_the_run_reads_it(tmp_path, monkeypatch, memory_rows, strategy):
    """DuckDB reads a keyless table in place, in one transaction (no copy of it): another
    connection that deletes, inserts, updates and checkpoints while the run encodes does not
    reach the release. Every published row is a row the run started with, with its own non-QI
    value inside its own class's QI ranges (a row id read twice alike), and nothing is left."""
    import numpy as np
    import pandas as pd

    con = duckdb.connect(str(tmp_path / "db.duckdb"))
    rng = np.random.default_rng(7)
    frame = pd.DataFrame({"a": rng.integers(0, 100, 3000), "b": rng.integers(0, 40, 3000)})
    frame["payload"] = frame["a"] * 1000 + frame["b"]
    con.execute("CREATE TABLE people AS SELECT * FROM frame")
    con.execute("CHECKPOINT")
    other = con.cursor()
    real = sqlanon.pipeline.build_domains

    def meanwhile(engine, spec, source, *here):  # inside the run's transaction, before the working table
        domains = real(engine, spec, source, *here)
        other.execute("DELETE FROM people WHERE a < 50")
        other.execute("INSERT INTO people SELECT 1000 + range, 0, -1 FROM range(500)")
        other.execute("UPDATE people SET payload = -2 WHERE b = 3")
        try:  # refused while the run's transaction has written its temp tables; either way no renumbering
            other.execute("CHECKPOINT")
        except duckdb.TransactionException as e:
            assert "other write transactions" in str(e)
        return domains

    monkeypatch.setattr(sqlanon.pipeline, "build_domains", meanwhile)
    release = sqlanon.anonymize(con, "people", ["a", "b"], k=10,
                                algorithm=sqlanon.Mondrian(strategy=(
                                    sqlanon.Sample(memory_rows=memory_rows) if strategy == "sample"
                                    else sqlanon.Levels(memory_rows=memory_rows) if strategy == "levels" else "auto")),
                                output=sqlanon.Output(view="pub"))
    assert release.verification.ok and release.rows == 3000
    published = con.execute("SELECT payload, a_min, a_max, b_min, b_max FROM pub").fetchdf()
    assert sorted(published["payload"]) == sorted(frame["payload"])
    inside = ((published["a_min"] <= published["payload"] // 1000) & (published["payload"] // 1000 <= published["a_max"])
              & (published["b_min"] <= published["payload"] % 1000) & (published["payload"] % 1000 <= published["b_max"]))
    assert inside.all()
    kept = int((frame["a"] >= 50).sum())
    assert rows(con, "SELECT count(*), min(a) FROM people") == [(kept + 500, 50)]  # the other connection's changes stand
    assert temp_objects(con) == []
