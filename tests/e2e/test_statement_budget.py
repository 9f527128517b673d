"""A release's statements are bounded independently of the partition tree's depth, of the
number of regions and of the number of QIs (issue 51): the publication writes the rules, the row
map and the view with a fixed number of statements and verifies them with a fixed number more.

On Spark a statement costs a job's fixed work (0.1-0.5 s, seconds on a loaded machine) however
small, so these counts are what a small release costs there; the statements are the same SQL on
every engine, so DuckDB (cheap) checks them too. Also: Rothko-S asked for explicitly
(``Mondrian(strategy=Sample(...))``) publishes the same rules on DuckDB and Spark (its sample is
drawn by a hash every engine computes alike).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import duckdb
import numpy as np
import pandas as pd
import pytest

import sqlanon
import sqlanon.pipeline
from sqlanon.engine import engine_for
from sqlanon.engine import sqlgen as g

QID = ["age", "zip", "income"]

#: The most statements a publication may run on Spark (whose catalog lookups are no statements):
#: measured 8 -- the leaves' upload, the rules, the manifest's comment, the row map, the view,
#: the verification, the exposed values, the leaves' drop -- where it ran 21 before (a "wanted"
#: and a "pidmap" upload, a temp step of the lookups and three drops, and one exposed-values
#: statement per QI: nine for the Agrawal table).
PUBLICATION_SPARK = 9


def table(n: int = 1200, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"id": np.arange(n, dtype=np.int64), "age": rng.integers(18, 90, n).astype(np.int64),
                         "zip": rng.integers(0, 1000, n).astype(np.int64),
                         "income": rng.integers(0, 100_000, n).astype(np.int64),
                         "city": rng.choice(["a", "b", "c"], n)})


def load(con, name: str, frame: pd.DataFrame) -> None:
    engine_for(con).create_from_frame(name, frame, replace=True)


@contextlib.contextmanager
def publication_statements(monkeypatch) -> Iterator[list[int]]:
    """The statements of each publication (:func:`sqlanon.publish.pipeline.publish_release`)
    run inside the block, in order."""
    counts: list[int] = []
    real = sqlanon.pipeline.publish_release

    def spy(engine, *args, **kwargs):
        before = engine.statements
        try:
            return real(engine, *args, **kwargs)
        finally:
            counts.append(engine.statements - before)

    monkeypatch.setattr(sqlanon.pipeline, "publish_release", spy)
    yield counts
    monkeypatch.setattr(sqlanon.pipeline, "publish_release", real)


def release(con, k: int, view: str, qid: list[str] = QID, **algorithm) -> sqlanon.Release:
    """A keyed release of ``deep`` with views of its own (``replace=True`` would add the renames
    and drops of the old objects)."""
    chosen = {"algorithm": sqlanon.Mondrian(**algorithm)} if algorithm else {}
    return sqlanon.anonymize(con, "deep", qid=qid, k=k, output=sqlanon.Output(view=view, key="id"), **chosen)


def rules_of(con, name: str) -> list[tuple]:
    """A rules relation's rows by region, NULL as None, numbers as floats (engine-independent)."""
    from sqlglot import exp

    frame = engine_for(con).fetch_frame(exp.select("*").from_(g.table(name)))
    frame = frame.astype(object).where(frame.notna(), None)
    return sorted((tuple(float(v) if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
                         else v for v in row) for row in frame.values.tolist()), key=repr)


# -- DuckDB ------------------------------------------------------------------------------------

def test_statements_do_not_grow_with_depth_or_regions_duckdb(monkeypatch):
    """k=2 and k=200 on the same 1,200 rows: trees of very different depths (hundreds of
    regions against a few), finished in memory, and the same statements, the publication's too."""
    con = duckdb.connect()
    load(con, "deep", table())
    with publication_statements(monkeypatch) as published:
        deep, shallow = release(con, 2, "deep_2"), release(con, 200, "deep_200")
    assert deep.regions > 50 * shallow.regions
    assert deep.statements == shallow.statements
    assert published[0] == published[1]
    assert deep.verification.ok and shallow.verification.ok


def test_publication_statements_do_not_grow_with_the_qis(monkeypatch):
    """One QI or four (one of them published with ``"domain"`` bounds, suppression allowed: the
    exposed values are checked for every ordered QI, whether or not a row is suppressed): the
    same statements publish and verify them."""
    con = duckdb.connect()
    load(con, "deep", table())
    with publication_statements(monkeypatch) as published:
        one = sqlanon.anonymize(con, "deep", qid=["age"], k=20, suppression=0.02, published={"age": "domain"},
                                output=sqlanon.Output(view="one", key="id"))
        four = sqlanon.anonymize(con, "deep", qid=[*QID, "city"], k=20, suppression=0.02,
                                 published={"zip": "domain"}, output=sqlanon.Output(view="four", key="id"))
    assert one.verification.ok and four.verification.ok and one.regions < four.regions
    assert published[0] == published[1]


def test_exposed_values_are_found_in_any_qi_in_one_statement(monkeypatch):
    """A tampered rules relation printing the largest value of a column (``published="domain"``:
    held by fewer than k rows, never printed) fails verification whichever of three QIs it is
    in, and the check of all three QIs is one statement."""
    from sqlanon.publish import verify as verify_module

    con = duckdb.connect()
    frame = table(400)
    frame.loc[0, ["age", "zip", "income"]] = [500, 50_000, 5_000_000]  # each column's largest value, one row
    load(con, "deep", frame)
    made = sqlanon.anonymize(con, "deep", qid=QID, k=10, published="domain", output=sqlanon.Output(view="v", key="id"))
    assert made.verification.ok and made.verification.exposed == 0
    calls: list[int] = []
    real = verify_module.exposed_values

    def counted(engine, *args, **kwargs):
        before = engine.statements
        out = real(engine, *args, **kwargs)
        calls.append(engine.statements - before)
        return out

    monkeypatch.setattr(verify_module, "exposed_values", counted)
    for column, outlier in (("age", 500), ("zip", 50_000), ("income", 5_000_000)):
        (was,) = con.execute(f'SELECT "{column}_max" FROM "{made.rules}" WHERE region = 0').fetchone()
        con.execute(f'UPDATE "{made.rules}" SET "{column}_max" = ? WHERE region = 0', [outlier])
        checked = sqlanon.verify(con, "v", QID, 10)
        assert not checked.ok and checked.exposed >= 1, column
        con.execute(f'UPDATE "{made.rules}" SET "{column}_max" = ? WHERE region = 0', [was])
    assert sqlanon.verify(con, "v", QID, 10).ok
    assert calls == [1, 1, 1, 1]


# -- Spark -------------------------------------------------------------------------------------

@pytest.mark.spark
@pytest.mark.parametrize("memory_rows", [None, 100])
def test_statements_do_not_grow_with_depth_or_regions_spark(spark, monkeypatch, memory_rows):
    """The same on Spark: with the table in ``memory_rows`` (one executor finish, no SQL level)
    the same statements at k=2 and k=200; with Rothko-S asked for (``Sample``, 100-row samples
    of 1,200 rows: a round's statements, then the executors' finish) as many within a tenth (a
    round's statements are fixed; how many rounds depends on the sample against the leaves).
    The publication costs the same few statements either way."""
    load(spark, "deep", table())
    strategy = {} if memory_rows is None else {"strategy": sqlanon.Sample(rows=memory_rows, memory_rows=memory_rows)}
    with publication_statements(monkeypatch) as published:
        deep, shallow = (release(spark, k, f"deep_{memory_rows}_{k}", **strategy) for k in (2, 200))
    assert deep.regions > 50 * shallow.regions
    assert deep.outcome.strategy == shallow.outcome.strategy == ("levels" if memory_rows is None else "sample")
    if memory_rows is None:
        assert deep.statements == shallow.statements
    else:
        assert abs(deep.statements - shallow.statements) <= 0.1 * shallow.statements
    assert published[0] == published[1] <= PUBLICATION_SPARK
    assert deep.verification.ok and shallow.verification.ok


@pytest.mark.spark
def test_rothko_s_asked_for_publishes_duckdbs_rules(spark):
    """``Mondrian(strategy=Sample(rows, seed))``: the sample is drawn by a hash every engine
    computes alike, so DuckDB and Spark grow, prune and finish the same tree and publish the same
    rules and view (a sample of 150 of 1,200 rows: several rounds)."""
    frame = table()
    duck = duckdb.connect()
    out = {}
    for name, con in (("duckdb", duck), ("spark", spark)):
        load(con, "deep", frame)
        out[name] = release(con, 10, "same", strategy=sqlanon.Sample(rows=150, seed=7, memory_rows=150))
    assert out["duckdb"].outcome.strategy == out["spark"].outcome.strategy == "sample"
    assert out["duckdb"].outcome.rounds == out["spark"].outcome.rounds >= 1
    assert rules_of(duck, "same_rules") == rules_of(spark, "same_rules")
    assert rules_of(duck, "same") == rules_of(spark, "same")
    assert out["spark"].verification.ok


def test_rothko_s_asked_for_publishes_the_same_rules_on_postgres(pg_con):
    """The same on PostgreSQL: its sample is DuckDB's (:meth:`Engine.seeded_hash`), so are its rules."""
    frame = table()
    duck = duckdb.connect()
    out = {}
    for name, con in (("duckdb", duck), ("postgres", pg_con)):
        load(con, "deep", frame)
        out[name] = release(con, 10, "same", strategy=sqlanon.Sample(rows=150, seed=7, memory_rows=150))
    assert out["duckdb"].outcome.rounds == out["postgres"].outcome.rounds >= 1
    assert rules_of(duck, "same_rules") == rules_of(pg_con, "same_rules")
    assert out["postgres"].verification.ok
