"""The ``sqlanon`` command on Spark: ``--engine spark`` (``--spark-master``, ``--spark-conf``), in process.

``main([...])`` runs as ``tests/cli/test_cli.py`` runs it. The ``spark`` fixture's session is already
running, so the command's ``getOrCreate()`` returns it: the command works in the Spark database
named as DB, and leaves the session running, its current database as it was. An anonymize
costs ~10-20 s on Spark, so one release serves every command of a test.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import sqlanon.cli
import sqlanon.exporting
from sqlanon.engine import engine_for
from tests.support.cli import assert_one_line_error, run

pytestmark = pytest.mark.spark

SPARK = ("--engine", "spark", "--spark-master", "local[2]")


def people(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"id": np.arange(n, dtype=np.int64), "age": rng.integers(20, 70, n),
                         "zip": rng.choice(["10115", "10117", "20095", "80331"], n),
                         "diagnosis": rng.choice(["flu", "cold", "hiv"], n)})


def tables(spark) -> set[str]:
    return {t.name for t in spark.catalog.listTables()}


def rows(spark, name: str) -> list[str]:
    return sorted(repr(tuple(r)) for r in spark.table(name).collect())


def test_anonymize_verify_report_apply(capsys, spark, tmp_path, monkeypatch):
    """One release through every command that opens a database. anonymize publishes a live
    view (--key: Spark has no declared keys) and writes --out; a second anonymize --replace --out
    whose file cannot be written leaves the first release as it was (Spark has no transaction:
    the old objects wait aside); verify, report and explain write nothing; apply recodes new rows."""
    db = spark.catalog.currentDatabase()
    engine_for(spark).create_from_frame("t", people(200, 0))
    engine_for(spark).create_from_frame("new_people", people(60, 1))
    out = tmp_path / "public.csv"
    code, stdout, err = run(capsys, "anonymize", db, "t", "--qid", "age,zip", "--k", "10", "--key", "id",
                            "--out", out, *SPARK)
    assert (code, err) == (0, ""), err
    assert re.search(r"^published +t_anon \(live view of t, key id\)$", stdout, re.M), stdout
    assert re.search(rf"^written to +{re.escape(str(out))}$", stdout, re.M), stdout
    assert len(pd.read_csv(out)) == 200
    assert spark.catalog.currentDatabase() == db  # the session is still the test's, where it was
    release = tables(spark)
    rules = rows(spark, "t_anon_rules")

    def unwritable(con, relation, path):
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(sqlanon.exporting, "write", unwritable)  # the COPY of sqlanon.export
    code, stdout, err = run(capsys, "anonymize", db, "t", "--qid", "age", "--k", "50", "--key", "id",
                            "--out", out, "--replace", *SPARK)
    monkeypatch.undo()
    assert (code, stdout) == (2, "")
    assert_one_line_error(err, "No space left on device")
    assert tables(spark) == release  # the new release dropped, the old one moved back
    assert rows(spark, "t_anon_rules") == rules

    code, stdout, err = run(capsys, "verify", db, "t_anon", "--qid", "age,zip", "--k", "10", *SPARK)
    assert (code, err) == (0, "")
    assert stdout.startswith("ok: t_anon is 10-anonymous over age_min, age_max, zip_min, zip_max: ")

    report = tmp_path / "report.json"
    code, stdout, err = run(capsys, "report", db, "t_anon", "-o", report, *SPARK)
    assert (code, stdout, err) == (0, "", "")
    document = json.loads(report.read_text())
    assert document["metrics"]["rows"] == 200 and document["metrics"]["k_achieved"] >= 10

    code, stdout, err = run(capsys, "explain", db, "t", "--qid", "age,zip", "--k", "10", "--key", "id",
                            "--view", "other", *SPARK)
    assert (code, err) == (0, "") and "CREATE" in stdout
    assert tables(spark) == release  # verify, report and explain wrote nothing

    code, stdout, err = run(capsys, "apply", db, "t_anon", "new_people", "--view", "new_anon", "--json", *SPARK)
    assert code == 0, err
    applied = json.loads(stdout)
    assert (applied["view"], applied["rows"]) == ("new_anon", 60)
    assert spark.table("new_anon").count() == 60
    assert spark.catalog.currentDatabase() == db


def test_usage_errors(capsys, spark, tmp_path):
    """What cannot work is refused in one line, exit 2, before any work: the Spark options
    without --engine spark, the DuckDB macros, files read in place, a Spark database that does
    not exist (the session left running, in the database it was in)."""
    db = spark.catalog.currentDatabase()
    duck = tmp_path / "h.duckdb"
    for argv, fragments in [
        (["verify", duck, "t", "--qid", "a", "--k", "2", "--spark-master", "local[2]"],
         ["--spark-master goes with --engine spark"]),
        (["verify", duck, "t", "--qid", "a", "--k", "2", "--engine", "duckdb", "--spark-conf", "a=b"],
         ["--spark-conf goes with --engine spark, not --engine duckdb"]),
        (["report", "postgresql://me@dbhost/db", "t_anon", "--engine", "spark"],
         ["--engine spark does not take a postgresql:// URL"]),
        (["verify", db, "t", "--qid", "a", "--k", "2", "--engine", "spark", "--spark-conf", "nothing"],
         ["--spark-conf takes KEY=VALUE, got 'nothing'"]),
        (["install-macros", db, *SPARK], ["DuckDB table macros; spark cannot install them"]),
        (["anonymize", tmp_path / "p.parquet", "--qid", "a", "--k", "2", "--out", tmp_path / "o.csv", *SPARK],
         ["files are read in place by an in-memory DuckDB only; with --engine spark name DB and a table"]),
        (["verify", tmp_path / "p.csv", "--qid", "a", "--k", "2", *SPARK], ["in-memory DuckDB only"]),
        (["verify", "no_such_db", "t", "--qid", "a", "--k", "2", *SPARK],
         ["no Spark database named 'no_such_db'.", repr(db)]),
    ]:
        code, out, err = run(capsys, *argv)
        assert (code, out) == (2, ""), argv
        assert_one_line_error(err, *fragments)
    # a table that does not exist: the library's error, after USE; the session goes back to db
    spark.sql("CREATE DATABASE other_db")
    try:
        code, out, err = run(capsys, "verify", "other_db", "t", "--qid", "a", "--k", "2", *SPARK)
    finally:
        spark.sql("DROP DATABASE other_db CASCADE")
    assert (code, out) == (2, "")
    assert_one_line_error(err, "no table or view named 't'")
    assert spark.catalog.currentDatabase() == db and spark.sql("SELECT 1").count() == 1


def test_without_pyspark(capsys, monkeypatch):
    """pyspark is an optional extra: without it, one line saying how to install it (exit 2);
    importing the CLI never imports pyspark."""
    for module in ("pyspark.errors", "pyspark.sql"):
        monkeypatch.setitem(sys.modules, module, None)  # import -> ImportError
    code, out, err = run(capsys, "verify", "hospital", "t", "--qid", "a", "--k", "2", "--engine", "spark")
    assert (code, out) == (2, "")
    assert_one_line_error(err, "pyspark is not installed", 'pip install "sqlanon[spark]"')
    monkeypatch.undo()
    code = "import sys, sqlanon.cli; print(any(m.split('.')[0] == 'pyspark' for m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False", done.stderr
