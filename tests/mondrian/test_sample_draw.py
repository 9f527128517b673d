"""Rothko-S's sample draw in one filtered scan (issue 51): :func:`sqlanon.mondrian.sample.draw`
fetches the rows whose seeded hash is below a bound and picks the smallest here; it must give
exactly the rows, in the order, of the sorted draw (:meth:`Engine.sample
<sqlanon.engine.base.Engine.sample>`: ``ORDER BY hash, key LIMIT rows``), so that a seeded
``Sample`` stays identical on every engine -- also when too few rows pass the bound and it falls
back to the sorted draw. And a release's sample statements sort nothing in the database.
"""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from sqlglot import exp

import sqlanon
from sqlanon.engine import engine_for
from sqlanon.engine import sqlgen as g
from sqlanon.engine.base import HASH_BITS, Engine
from sqlanon.mondrian import sample as sample_mod
from tests.support import load_frame, run

pytestmark = pytest.mark.engines("duckdb", "postgres")


def ids_table(con, n: int, seed: int) -> None:
    """Table ``s``: ``n`` rows with unique, scattered, partly negative integer keys ``rid`` and
    two groups ``pid`` (the draw reads one of them, as Rothko-S reads one partition)."""
    rng = np.random.default_rng(seed)
    rid = rng.choice(np.arange(-5 * n, 5 * n + 1, dtype=np.int64), size=n, replace=False)
    run(con, 'DROP TABLE IF EXISTS "s"')
    load_frame(con, "s", pd.DataFrame({"rid": rid, "pid": rng.integers(0, 2, n).astype(np.int64),
                                       "x": rng.integers(0, 5, n).astype(np.int64)}))


def partition(pid: int) -> exp.Select:
    return exp.select(g.col("rid"), g.col("pid"), g.col("x")).from_(g.table("s")).where(
        exp.EQ(this=g.col("pid"), expression=g.lit(pid)))


def sorted_draw(engine: Engine, relation: exp.Select, rows: int, seed: int) -> dict[str, list]:
    return {c: v.tolist() for c, v in engine.fetch(engine.sample(relation, rows, seed)).items()}


def one_pass(engine: Engine, relation: exp.Select, rows: int, seed: int, total: int) -> tuple[dict[str, list], int]:
    """:func:`draw`'s rows and how many statements it ran (1: one scan; 2: the fallback)."""
    before = engine.statements
    out = sample_mod.draw(engine, relation, rows, seed, total)
    return {c: np.asarray(v).tolist() for c, v in out.items()}, engine.statements - before


def test_hash_bound_leaves_ten_standard_deviations():
    """``floor(2^62 r / N)``, ``r = rows + 10 sqrt(rows) + 100``; capped at the hash's largest value."""
    assert sample_mod.hash_bound(10_000, 1_000_000) == 2**HASH_BITS * (10_000 + 1_000 + 100) // 1_000_000
    assert sample_mod.hash_bound(2_000_000, 10_000_000) == 2**HASH_BITS * int(2_000_000 + 10 * 2_000_000**0.5 + 100) // 10_000_000
    assert sample_mod.hash_bound(5, 6) == 2**HASH_BITS - 1


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 2500), st.floats(0.0, 1.2), st.integers(0, 2**31 - 1), st.integers(0, 3),
       st.sampled_from(["exact", "overstated", "understated"]))
def test_one_pass_draw_equals_the_sorted_draw(n, share, seed, table_seed, told):
    """Any size, sample share, seed: the same rows in the same order as ``ORDER BY hash, key
    LIMIT rows``. Told the partition's true size, one statement; told a size far too large
    (the bound then lets too few rows through), the sorted draw's result, in a second
    statement; told too small a size, more rows pass and the pick is still the same."""
    con = duckdb.connect()
    ids_table(con, n, table_seed)
    engine = engine_for(con)
    N = int(engine.fetch_rows(exp.select(exp.Count(this=exp.Star())).from_(partition(1).subquery("p")))[0][0])
    assume(N > 0)
    rows = max(1, int(share * N))
    total = {"exact": N, "overstated": N * 10**6, "understated": max(1, N // 3)}[told]
    got, statements = one_pass(engine, partition(1), rows, seed, total)
    assert got == sorted_draw(engine, partition(1), rows, seed)
    if told == "exact" or rows >= total:
        assert statements == 1
    if told == "overstated" and 0 < rows < N:
        assert statements == 2  # the fallback: too few passed


@pytest.mark.parametrize("n, rows, seed", [(2000, 150, 7), (2000, 1, 0), (700, 699, 3), (900, 900, 11)])
def test_one_pass_draw_equals_the_sorted_draw_on_every_engine(con, n, rows, seed):
    """The same on DuckDB and PostgreSQL, with the true size and with the fallback forced."""
    ids_table(con, n, seed)
    engine = engine_for(con)
    N = int(engine.fetch_rows(exp.select(exp.Count(this=exp.Star())).from_(partition(0).subquery("p")))[0][0])
    rows = min(rows, N)
    want = sorted_draw(engine, partition(0), rows, seed)
    assert len(want["rid"]) == rows
    assert one_pass(engine, partition(0), rows, seed, N) == (want, 1)
    assert one_pass(engine, partition(0), rows, seed, N * 10**9)[0] == want


def test_a_release_draws_its_samples_without_sorting(con, monkeypatch):
    """A Rothko-S release (two rounds' worth of samples) fetches no statement ordered by the
    seeded hash: each sample is one filtered scan (before: ``ORDER BY hash, rid LIMIT n``, on
    Spark a top-n sort of every row of the partition)."""
    fetched: list[str] = []
    real = Engine.fetch
    monkeypatch.setattr(Engine, "fetch", lambda self, statement: (fetched.append(self.render(statement)),
                                                                  real(self, statement))[1])
    rng = np.random.default_rng(5)
    n = 3000
    load_frame(con, "t", pd.DataFrame({"a": rng.integers(0, 500, n).astype(np.int64),
                                       "b": rng.integers(0, 90, n).astype(np.int64)}))
    release = sqlanon.anonymize(con, "t", qid=["a", "b"], k=5,
                                algorithm=sqlanon.Mondrian(strategy=sqlanon.Sample(rows=300, memory_rows=300)))
    assert release.outcome.rounds >= 1 and release.verification.ok
    draws = [s for s in fetched if "2147483647" in s]  # the seeded hash's modulus
    assert len(draws) >= release.outcome.rounds
    assert not [s for s in draws if "ORDER BY" in s.upper() or "LIMIT" in s.upper()]
