"""A small table's release on Spark (issue 51: "small tables take one pass"): its rows are fetched
once, coded and finished on the driver -- no code table per numeric QI, no executor finish --,
its uploads are temp views, its root bounds one aggregate; the Spark jobs it runs are bounded,
and it publishes DuckDB's rules and view for every criterion, an l-diversity model and suppression.
"""

from __future__ import annotations

import pytest

import sqlanon
from sqlanon.engine.spark import SparkEngine
from tests.support.engines import identical, load, people
from tests.support.spark import spark_jobs

pytestmark = pytest.mark.spark

#: The most Spark jobs a 600-row Median release with a key may run (validation, encoding,
#: publication and verification together): 54 measured (local[2]) before a key's two checks
#: became one statement; a 3,000-row release ran 76 before the driver's finish -- the executor
#: finish, one code table per QI, uploads written as Parquet, one scalar subquery (a job each)
#: per root bound in the view and in the verification.
SMALL_RELEASE_JOBS = 56
#: The most statements the same release may run (21 at 3,000 rows, 25 before).
SMALL_RELEASE_STATEMENTS = 21



def test_a_small_release_runs_a_bounded_number_of_jobs_and_no_executor_finish(spark, monkeypatch):
    """The table fits ``memory_rows``: one fetch of its working view, the finish on the driver
    (the executors' ``map_groups`` is never called), and few jobs and statements in all."""
    def no_executor_finish(*args, **kwargs):
        raise AssertionError("a small table is finished on the driver, not by an executor job")

    monkeypatch.setattr(SparkEngine, "map_groups", no_executor_finish)
    load(spark, "small", people(600))
    with spark_jobs(spark) as jobs:
        release = sqlanon.anonymize(spark, "small", qid=["age", "zip", "sex"], k=20,
                                    output=sqlanon.Output(view="small_anon", key="id"))
    assert release.verification.ok and release.rows == 600 and release.partitions > 1
    assert release.algorithm.strategy.name == "levels"
    assert len(jobs) <= SMALL_RELEASE_JOBS, len(jobs)
    assert release.statements <= SMALL_RELEASE_STATEMENTS, release.statements


@pytest.mark.parametrize("options", [
    {},
    {"target": "label"},
    {"target": "x"},
    {"sensitive": "label", "l": 2},
    {"constraints": [sqlanon.DistinctLDiversity("label", 2)], "target": "x"},
], ids=["median", "infogain", "regression", "entropy-l", "distinct-l-regression"])
def test_a_small_release_publishes_duckdbs_rules(spark, options):
    """Median, InfoGain and Regression, with and without l-diversity, on a table finished on the
    driver: Spark's rules relation and view are DuckDB's, row by row."""
    identical(spark, people(500, seed=4), ["age", "zip", "sex"], k=15, **options)


def test_a_small_release_with_suppression_publishes_duckdbs_rules(spark):
    """Suppression (its rows published with the root bounds, now one aggregate of the rules):
    the same rules and view as DuckDB's."""
    frame = people(300, seed=5)
    frame.loc[:4, "age"] = 200  # a few outliers, suppressed rather than widening every class
    identical(spark, frame, ["age", "zip", "sex"], k=25, suppression=0.05)
