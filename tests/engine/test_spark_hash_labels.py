"""The labels that give each batch of Spark's executor finish a task of its own
(:func:`sqlanon.engine.spark_tasks.hash_labels`): Spark's own ``hash`` and hash partitioning agree
with the driver's computation, so ``repartition(groups, "b")`` sends each batch to its own
partition without a range partitioner's sampling pass over the rows."""

from __future__ import annotations

import pytest

from sqlanon.engine.spark_tasks import hash_labels, spark_hash_long

pytestmark = pytest.mark.spark


def test_spark_hash_long_is_sparks_hash(spark):
    values = [0, 1, 5, -1, 2**31, -(2**31) - 1, 2**40, 123_456_789, 2**63 - 1, -(2**63)]
    rows = spark.sql("SELECT x, hash(x) FROM VALUES " + ", ".join(f"(CAST({v} AS BIGINT))" for v in values)
                     + " AS t(x)").collect()
    assert {r[0]: r[1] for r in rows} == {v: spark_hash_long(v) for v in values}


@pytest.mark.parametrize("groups", [1, 2, 5, 16, 50])
def test_each_batch_gets_a_partition_of_its_own(spark, groups):
    """Rows labelled by batch and hash-partitioned into ``groups`` partitions: one batch per
    partition, every partition used."""
    labels = hash_labels(groups)
    assert len(set(labels)) == groups
    frame = spark.sql("SELECT CAST(x AS BIGINT) AS b FROM VALUES " + ", ".join(f"({x})" for x in labels * 3)
                      + " AS t(x)").repartition(groups, "b")
    per_partition = frame.rdd.glom().map(lambda rows: sorted({r.b for r in rows})).collect()
    assert sorted(len(p) for p in per_partition) == [1] * groups
    assert [p[0] for p in per_partition] == labels
