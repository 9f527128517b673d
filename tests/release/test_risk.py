"""Re-identification risk (prosecutor, journalist, marketer) against hand-computed tables, on a
raw table and on a release, on DuckDB and PostgreSQL (and Spark, in test_risk_spark)."""

from __future__ import annotations

import pandas as pd
import pytest

import sqlanon
from sqlanon.cli import main
from tests.support import load_frame

pytestmark = pytest.mark.engines("duckdb", "postgres")

# classes on (q, z): (1,a) x3, (2,b) x2, (3,c) x1, (4,NULL) x1 -- NULLs group together
SAMPLE = pd.DataFrame({"id": range(7), "q": [1, 1, 1, 2, 2, 3, 4], "z": ["a", "a", "a", "b", "b", "c", None]})
# the population adds (3,c) x2, (2,b) x1 and someone outside the sample: F = 3, 3, 3, 1
POPULATION = pd.concat([SAMPLE, pd.DataFrame({"id": range(7, 11), "q": [3, 3, 2, 5], "z": ["c", "c", "b", "e"]})])


def test_hand_computed_raw_table(con):
    load_frame(con, "t", SAMPLE, primary_key="id")
    load_frame(con, "pop", POPULATION, primary_key="id")
    r = sqlanon.risk(con, "t", qid=["q", "z"])
    assert (r.rows, r.classes, r.suppressed, r.release) == (7, 4, 0, False)
    assert r.highest == 1.0 and r.average == pytest.approx(4 / 7) and r.unique == pytest.approx(2 / 7)
    assert r.at_risk(0.4) == pytest.approx(4 / 7)  # 1/2 and 1/1 exceed .4: 2 + 1 + 1 records
    assert r.at_risk(0.5) == pytest.approx(2 / 7) and r.at_risk(1.0) == 0.0
    assert r.journalist is None and r.marketer is None
    p = sqlanon.risk(con, "t", qid=["q", "z"], population="pop")
    # journalist: 1/F = 1/3 for six records, 1 for (4, NULL); success = (3/3 + 2/3 + 1/3 + 1/1) / 7
    assert p.journalist.highest == 1.0 and p.journalist.unique == pytest.approx(1 / 7)
    assert p.journalist.average == pytest.approx(max(4 / 10, 3 / 7)) and p.marketer == pytest.approx(3 / 7)
    assert p.journalist.at_risk(0.5) == pytest.approx(1 / 7)


def test_release_before_and_after(con):
    """k = 2 on one QI: every class has at least two records, so the highest risk is at most 1/2,
    and the classes are the release's (the view's class column)."""
    frame = pd.DataFrame({"id": range(12), "age": [20, 21, 22, 23, 30, 31, 32, 33, 40, 41, 50, 51]})
    load_frame(con, "t", frame, primary_key="id")
    before = sqlanon.risk(con, "t", qid=["age"])
    assert before.highest == 1.0 and before.unique == 1.0 and before.average == 1.0
    release = sqlanon.anonymize(con, "t", qid=["age"], k=2, output=sqlanon.Output(view="t_anon", replace=True))
    after = sqlanon.risk(con, release)
    assert after.release and after.qid == ("age",) and after.rows == 12 and after.suppressed == 0
    assert after.classes == release.partitions and after.highest == pytest.approx(1 / release.k_achieved)
    assert after.average == pytest.approx(release.partitions / 12) and after.unique == 0.0
    assert sqlanon.risk(con, "t_anon").classes == after.classes  # by the view's name
    # the population (here the table itself) recoded by the release's rules: F = f
    journalist = sqlanon.risk(con, release, population="t")
    assert journalist.journalist.highest == after.highest and journalist.marketer == pytest.approx(after.average)


def test_cli_risk(capsys, tmp_path):
    import duckdb

    path = tmp_path / "db.duckdb"
    db = duckdb.connect(str(path))
    load_frame(db, "t", SAMPLE, primary_key="id")
    db.close()
    assert main(["risk", str(path), "t", "--qid", "q,z", "--threshold", "0.4"]) == 0
    out = capsys.readouterr().out
    assert "highest" in out and "0.571" in out and "records at risk" in out
    assert main(["risk", str(path), "t", "--qid", "q,z", "--json"]) == 0
    import json

    document = json.loads(capsys.readouterr().out)
    assert document["prosecutor"]["highest"] == 1.0 and document["classes"] == 4


def test_a_threshold_is_a_number_from_0_to_1(con, capsys, tmp_path):
    """Issue 49: ``--threshold nan`` was accepted (and put no record at risk); so were inf and
    numbers outside [0, 1]. The library and the command line refuse them."""
    load_frame(con, "t", SAMPLE, primary_key="id")
    r = sqlanon.risk(con, "t", qid=["q", "z"])
    for bad in (float("nan"), float("inf"), -0.1, 1.5, "0.4", True, None):
        with pytest.raises(sqlanon.InputError, match="threshold must be a number from 0 to 1"):
            r.at_risk(bad)
        with pytest.raises(sqlanon.InputError, match="threshold must be a number from 0 to 1"):
            r.prosecutor.at_risk(bad)
    assert r.at_risk(0) == 1.0 and r.at_risk(1) == 0.0
    for text in ("nan", "inf", "-inf", "-0.1", "1.5", "x"):
        # refused before any connection: the database named need not exist
        assert main(["risk", str(tmp_path / "none.duckdb"), "t", f"--threshold={text}"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("sqlanon: error: argument --threshold: must be a number from 0 to 1") and text in err


def test_bad_requests(con):
    load_frame(con, "t", SAMPLE, primary_key="id")
    with pytest.raises(sqlanon.InputError, match="qid"):
        sqlanon.risk(con, "t")
    with pytest.raises(sqlanon.UnknownColumnError):
        sqlanon.risk(con, "t", qid=["nope"])
    with pytest.raises(sqlanon.UnknownTableError):
        sqlanon.risk(con, "t", qid=["q"], population="nowhere")


@pytest.mark.spark
def test_spark_raw_table_and_release(spark):
    """The same hand-computed values on Spark, and a release's classes."""
    from sqlanon.engine import engine_for

    engine_for(spark).create_from_frame("t", SAMPLE, replace=True)
    engine_for(spark).create_from_frame("pop", POPULATION, replace=True)
    r = sqlanon.risk(spark, "t", qid=["q", "z"], population="pop")
    assert (r.rows, r.classes) == (7, 4) and r.average == pytest.approx(4 / 7) and r.unique == pytest.approx(2 / 7)
    assert r.journalist.highest == 1.0 and r.marketer == pytest.approx(3 / 7)
    release = sqlanon.anonymize(spark, "t", qid=["q"], k=2, output=sqlanon.Output(view="t_anon"))
    after = sqlanon.risk(spark, release)
    assert after.release and after.classes == release.partitions and after.highest == pytest.approx(1 / release.k_achieved)
    # the measures' GROUP BY and window ranks on Spark: the table's own classes, by hand
    got = sqlanon.measures(spark, "t", qid=["q", "z"], sensitive="q").of("q")
    assert got.l_distinct == 1 and got.t_equal == pytest.approx(1 - 1 / 7)  # a class of one value: 1 - q(value)
