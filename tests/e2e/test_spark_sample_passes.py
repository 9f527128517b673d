"""A Rothko-S release on Spark costs a fixed number of statements and Spark jobs, whatever the
depth of its tree (issue 51): the sample is drawn with one filtered scan (no top-n sort of the
partition's rows, :func:`sqlanon.mondrian.sample.draw`), a round's statements are fixed, the
executors finish every leaf in one statement, the rules and the row map are written once each.
The draw gives exactly the sorted draw's rows on Spark too, also when it falls back to it.

The executors' checks (:mod:`sqlanon.engine.spark_env`: sqlanon imported there, and the
in-memory finish imported before the first executor finish) are one small job each per Spark
application, no pass over the data: whichever release of the session comes first pays them, so
they are paid before the counted releases here (run alone, the first, deep release counted both:
28 jobs against 26).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sqlglot import exp

import sqlanon
from sqlanon.engine import engine_for
from sqlanon.engine import sqlgen as g
from sqlanon.engine.spark_env import check_executors
from sqlanon.mondrian import sample as sample_mod
from tests.support.spark import spark_jobs

pytestmark = pytest.mark.spark

QID = ["age", "zip", "income"]


def table(n: int, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"id": np.arange(n, dtype=np.int64), "age": rng.integers(18, 90, n).astype(np.int64),
                         "zip": rng.integers(0, 1000, n).astype(np.int64),
                         "income": rng.integers(0, 100_000, n).astype(np.int64)})


def release_and_jobs(spark, k: int, view: str) -> tuple[sqlanon.Release, int]:
    """A keyed Rothko-S release of ``t`` (samples of 300 rows, batches of 300) and the Spark jobs
    it ran (a job group of its own), the executors' once-per-application checks paid before."""
    check_executors(spark)  # once per application: not the release's
    check_executors(spark, finish=True)  # before the application's first executor finish: not the release's
    with spark_jobs(spark) as jobs:
        made = sqlanon.anonymize(spark, "t", qid=QID, k=k, output=sqlanon.Output(view=view, key="id"),
                                 algorithm=sqlanon.Mondrian(strategy=sqlanon.Sample(rows=300, memory_rows=300)))
    return made, len(jobs)


def test_statements_and_jobs_of_a_sample_release_do_not_grow_with_depth(spark):
    """k=2 and k=20 on the same 2,400 rows: the deep tree has many times the regions of the
    shallow one (the executors' finish grows it), in the same rounds, the same statements and
    the same Spark jobs. A statement per level or per region would add dozens."""
    engine_for(spark).create_from_frame("t", table(2400), replace=True)
    deep, deep_jobs = release_and_jobs(spark, 2, "t_deep")
    shallow, shallow_jobs = release_and_jobs(spark, 20, "t_shallow")
    assert deep.outcome.strategy == shallow.outcome.strategy == "sample"
    assert deep.outcome.rounds == shallow.outcome.rounds >= 1
    assert deep.regions > 5 * shallow.regions
    assert deep.statements == shallow.statements
    assert deep_jobs == shallow_jobs > 0
    assert deep.verification.ok and shallow.verification.ok


def test_one_pass_draw_equals_the_sorted_draw_on_spark(spark):
    """The filtered draw's rows and order are the sorted draw's (``ORDER BY hash, key LIMIT``),
    with the partition's true size (one statement) and with a size that lets too few rows
    through (the sorted draw, a second statement)."""
    rng = np.random.default_rng(1)
    n = 1500
    frame = pd.DataFrame({"rid": rng.choice(np.arange(-4 * n, 4 * n, dtype=np.int64), n, replace=False),
                          "pid": rng.integers(0, 2, n).astype(np.int64)})
    engine = engine_for(spark)
    engine.create_from_frame("s", frame, replace=True)
    N = int((frame["pid"] == 1).sum())
    part = exp.select(g.col("rid"), g.col("pid")).from_(g.table("s")).where(
        exp.EQ(this=g.col("pid"), expression=g.lit(1)))
    for rows, seed, total in ((100, 5, N), (1, 0, N), (N - 1, 9, N), (100, 5, N * 10**6)):
        want = {c: v.tolist() for c, v in engine.fetch(engine.sample(part, rows, seed)).items()}
        before = engine.statements
        got = sample_mod.draw(engine, part, rows, seed, total)
        assert {c: np.asarray(v).tolist() for c, v in got.items()} == want
        assert engine.statements - before == (1 if total == N else 2)
