"""The executors' check of a release finds the in-memory finish; only a release that finishes on
the executors imports it there (:mod:`sqlanon.engine.spark_env`, issue 51).

A worker's ``import sqlanon.mondrian.builder`` (numba and its cached kernels) was most of the
check's seconds, paid by every release, while a small table's release is finished on the driver
and runs no Python on the executors. Here the executors' Python finds a ``numba`` that fails to
import (a package of that name first on its path): the check of every release passes, a small
release is published, and a release that finishes on the executors is refused before its
finish's job with the error that names the cause and the fix.
"""

from __future__ import annotations

import importlib.util
import stat
import sys

import numpy as np
import pandas as pd
import pytest

import sqlanon
from sqlanon import SparkEnvironmentError
from sqlanon.engine import engine_for, spark_env
from sqlanon.engine.spark_env import check_executors
from tests.support.engines import spark_temp_objects

pytestmark = pytest.mark.spark


@pytest.fixture
def broken_numba_python(spark, monkeypatch, tmp_path) -> str:
    """The session's Python workers run this driver's interpreter from a directory holding a
    ``numba`` package whose import fails (a worker's first path entry is its working
    directory), with no earlier check remembered."""
    (tmp_path / "numba").mkdir()
    (tmp_path / "numba" / "__init__.py").write_text('raise ImportError("this numba is broken")\n')
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\ncd "{tmp_path}" && exec "{sys.executable}" "$@"\n')
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(spark_env, "_checked", {})
    monkeypatch.setattr(spark.sparkContext, "pythonExec", str(python))
    return str(python)


def people(spark) -> None:
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"id": np.arange(300, dtype=np.int64), "age": rng.integers(20, 70, 300),
                          "zip": rng.integers(0, 50, 300)})
    engine_for(spark).create_from_frame("finish_people", frame, replace=True)


def test_the_check_finds_the_finish_and_imports_it_only_when_asked(spark, broken_numba_python):
    found = check_executors(spark)  # numba found, not imported
    assert found.python == (sys.executable,)
    with pytest.raises(SparkEnvironmentError, match="this numba is broken") as caught:
        check_executors(spark, finish=True)
    assert "PYSPARK_PYTHON" in str(caught.value) and "org.apache" not in str(caught.value)


def test_a_release_finished_on_the_driver_runs_no_finish_on_the_executors(spark, broken_numba_python):
    people(spark)
    release = sqlanon.anonymize(spark, "finish_people", qid=["age", "zip"], k=10,
                                output=sqlanon.Output(view="finish_small", replace=True, key="id"))
    assert release.verification.ok and release.rows == 300


def test_a_release_finished_on_the_executors_imports_the_finish_first(spark, broken_numba_python):
    people(spark)
    with pytest.raises(SparkEnvironmentError, match="this numba is broken"):
        sqlanon.anonymize(spark, "finish_people", qid=["age", "zip"], k=10,
                          algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(100)),
                          output=sqlanon.Output(view="finish_large", replace=True, key="id"))
    assert spark_temp_objects(spark) == []
    assert not spark.catalog.tableExists("finish_large_rules")


def test_the_names_the_check_finds_are_modules():
    """What the check finds are modules of this sqlanon and its dependencies (a misspelled
    name would refuse every release)."""
    for name in (*spark_env.FINISH_MODULES, *spark_env.FINISH_DEPENDENCIES, *spark_env.EXECUTOR_MODULES):
        assert importlib.util.find_spec(name) is not None, name
