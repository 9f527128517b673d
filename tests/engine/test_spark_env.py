"""The Spark executors' Python, checked before any work (:mod:`sqlanon.engine.spark_env`).

Each test points the session's Python workers at another interpreter the way PySpark itself
reads it (``SparkContext.pythonExec``, read when a Python function is created), so one session
serves them all: a virtual environment without sqlanon's dependencies (the ``python3`` of a
virtual environment that is not activated, issue 51), a Python that cannot even start PySpark's
worker (``python -I -S``), an interpreter that does not exist, and one that imports another
sqlanon version. Each must give a :class:`SparkEnvironmentError` naming the cause and the fix,
before anonymize runs a statement -- not a Java stack minutes in.
"""

from __future__ import annotations

import re
import shutil
import stat
import sys
import time
import venv
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import sqlanon
from sqlanon import SparkEnvironmentError
from sqlanon.engine import engine_for, spark_env
from sqlanon.engine.spark import SparkEngine
from sqlanon.engine.spark_env import check_executors, same_machine

pytestmark = pytest.mark.spark

#: Every error names these fixes (the message may word the rest as the master needs).
FIXES = ("PYSPARK_PYTHON", "docs/guides/spark.md")
CLUSTER_FIXES = ("spark.archives", "--py-files")


def script(path: Path, text: str) -> str:
    """An executable shell script at ``path``."""
    path.write_text("#!/bin/sh\n" + text + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(path)


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory) -> str:
    """The Python of a fresh virtual environment: no site packages, so no numpy, no sqlglot."""
    where = tmp_path_factory.mktemp("bare") / "venv"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(where)
    return str(where / "bin" / "python")


@pytest.fixture
def executors_run(spark, monkeypatch):
    """``executors_run(python)``: the session's Python workers run ``python`` for this test
    (what ``PYSPARK_PYTHON`` sets when a session starts), with no earlier check remembered."""
    monkeypatch.setattr(spark_env, "_checked", {})

    def use(python: str) -> None:
        monkeypatch.setattr(spark.sparkContext, "pythonExec", python)

    return use


def people(spark) -> None:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"id": np.arange(300, dtype=np.int64), "age": rng.integers(20, 70, 300),
                          "zip": rng.choice(["10115", "10117", "20095"], 300)})
    engine_for(spark).create_from_frame("people", frame)


def refused_before_any_statement(spark, monkeypatch, *fragments: str) -> str:
    """anonymize, apply-free: raises SparkEnvironmentError with ``fragments`` in seconds, having run
    no SQL statement and left no table behind; returns the message."""
    people(spark)
    before = {t.name for t in spark.catalog.listTables()}
    ran: list[str] = []
    frame = SparkEngine._frame
    monkeypatch.setattr(SparkEngine, "_frame", lambda self, sql: ran.append(sql) or frame(self, sql))
    started = time.perf_counter()
    with pytest.raises(SparkEnvironmentError) as caught:
        sqlanon.anonymize(spark, "people", qid=["age", "zip"], k=10)
    assert time.perf_counter() - started < 60
    assert ran == [] and {t.name for t in spark.catalog.listTables()} == before
    message = str(caught.value)
    for fragment in (*fragments, *FIXES):
        assert fragment in message, message
    assert "\tat " not in message and "Traceback" not in message and "org.apache" not in message, message
    return message


def test_an_executor_python_without_sqlanons_dependencies(spark, monkeypatch, executors_run, bare_python):
    """Issue 51's failure: the executors' Python lacks what sqlanon imports (sqlglot, numpy, ...)
    or sqlanon itself -- refused before any statement, naming the interpreter and the import."""
    executors_run(bare_python)
    message = refused_before_any_statement(spark, monkeypatch, "cannot import sqlanon", "ModuleNotFoundError",
                                           f"Their Python: {bare_python!r}")
    assert re.search(r"No module named '(sqlanon|sqlglot|numpy|duckdb|pandas|numba)'", message), message


def test_an_executor_python_that_cannot_start_pyspark(spark, monkeypatch, executors_run, tmp_path):
    """An isolated Python (``-I -S``: no PYTHONPATH, no site) cannot start PySpark's worker."""
    python = script(tmp_path / "isolated-python", f'exec "{sys.executable}" -I -S "$@"')
    executors_run(python)
    refused_before_any_statement(spark, monkeypatch, "cannot start PySpark's worker", "No module named 'pyspark'")


def test_an_executor_python_that_does_not_exist(spark, monkeypatch, executors_run, tmp_path):
    missing = str(tmp_path / "no-such-python")
    executors_run(missing)
    refused_before_any_statement(spark, monkeypatch, f"their Python {missing!r} cannot be started")


def test_another_sqlanon_version_on_the_executors(spark, monkeypatch, executors_run, tmp_path):
    """The executors import a whole sqlanon of another version (first on their path): refused,
    naming both versions and where the executors' copy is."""
    other = tmp_path / "other"
    shutil.copytree(Path(sqlanon.__file__).parent, other / "sqlanon", ignore=shutil.ignore_patterns("__pycache__"))
    init = other / "sqlanon" / "__init__.py"
    version = other / "sqlanon" / "version.py"
    version.write_text(re.sub(r'__version__ = "[^"]*"', '__version__ = "0.0.1"', version.read_text()))
    # A worker's first path entry is its working directory (python -m pyspark.daemon).
    executors_run(script(tmp_path / "other-python", f'cd "{other}" && exec "{sys.executable}" "$@"'))
    message = refused_before_any_statement(spark, monkeypatch, "they import sqlanon 0.0.1", str(init),
                                           f"this driver runs sqlanon {sqlanon.__version__}")
    for fragment in CLUSTER_FIXES:
        assert fragment in message, message


def test_apply_and_report_check_too(spark, executors_run, bare_python):
    """apply and report refuse the same way, before reading the release."""
    executors_run(bare_python)
    with pytest.raises(SparkEnvironmentError, match="cannot import sqlanon"):
        sqlanon.apply(spark, "no_such_release", "no_such_table")
    with pytest.raises(SparkEnvironmentError, match="cannot import sqlanon"):
        sqlanon.report(spark, "no_such_release")


def test_a_local_master_defaults_the_executors_to_the_drivers_python(spark, monkeypatch, executors_run):
    """Nothing chosen (no PYSPARK_PYTHON, Spark's default ``python3``) on a local master: the
    executors run the driver's own interpreter, and the check finds this sqlanon there. A
    choice of the user's stays."""
    context = spark.sparkContext
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    executors_run("python3")
    found = check_executors(spark)
    assert context.pythonExec == sys.executable
    assert found.python == (sys.executable,) and found.python_version == (".".join(map(str, sys.version_info[:3])),)
    monkeypatch.setenv("PYSPARK_PYTHON", "python3")
    executors_run("python3")
    spark_env._default_to_driver_python(spark)
    assert context.pythonExec == "python3"


def test_a_success_is_checked_once_per_interpreter(spark, monkeypatch, executors_run):
    executors_run(sys.executable)
    found = check_executors(spark)
    monkeypatch.setattr(spark_env, "_probe", lambda spark: pytest.fail("probed again"))
    assert check_executors(spark) is found
    executors_run(sys.executable + "-other")  # another interpreter: probed again
    with pytest.raises(pytest.fail.Exception, match="probed again"):
        check_executors(spark)


@pytest.mark.parametrize("master, same", [
    ("local", True), ("local[2]", True), ("local[*]", True), ("local[2,3]", True),
    ("local-cluster[2,1,1024]", True), ("localhost", False), ("yarn", False),
    ("spark://host:7077", False), ("k8s://https://host:6443", False),
])
def test_same_machine(master, same):
    assert same_machine(master) is same


def test_the_python_version_spark_refuses():
    """PySpark 4.3's words when the executors' Python has another minor version than the driver's
    (seen with a Python 3.12 executor under a 3.11 driver), in one line."""
    spark_said = (
        "An exception was thrown from the Python worker:\nTraceback (most recent call last):\n"
        '  File ".../pyspark.zip/pyspark/worker_util.py", line 93, in check_python_version\n'
        "pyspark.errors.exceptions.base.PySparkRuntimeError: [PYTHON_VERSION_MISMATCH] Python in worker has "
        "different version: 3.12 than that in driver: 3.11, PySpark cannot run with different minor versions.\n"
        "Please check environment variables PYSPARK_PYTHON and PYSPARK_DRIVER_PYTHON are correctly set.")
    assert spark_env._worker_cause(RuntimeError(spark_said)) == (
        "their Python is version 3.12, this driver's 3.11 (PySpark runs only the driver's minor version)")
