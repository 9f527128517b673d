"""Quiet by default (issue 51): a Spark release prints nothing of sqlanon's own and warns
nothing from sqlanon's code; what a console may show is Spark's (progress bars, log lines) and
PySpark's, which ``docs/guides/spark.md`` ("Quiet") says how to turn off."""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pandas as pd
import pytest

import sqlanon
from sqlanon.engine import engine_for

pytestmark = pytest.mark.spark


def test_a_spark_release_prints_and_warns_nothing_of_its_own(spark, capsys, caplog):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"id": np.arange(300), "age": rng.integers(18, 90, 300), "zip": rng.integers(0, 50, 300)})
    engine_for(spark).create_from_frame("q", frame, replace=True)
    capsys.readouterr()
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.WARNING, logger="sqlanon"):
        warnings.simplefilter("always")
        release = sqlanon.anonymize(spark, "q", qid=["age", "zip"], k=10, output=sqlanon.Output(key="id"))
    out, err = capsys.readouterr()
    assert release.verification.ok
    assert (out, err) == ("", "")  # Python's streams: sqlanon's print and logging (Spark's JVM writes elsewhere)
    assert [w for w in caught if "/sqlanon/" in w.filename.replace("\\", "/")] == []
    assert [r for r in caplog.records if r.name.startswith("sqlanon")] == []
