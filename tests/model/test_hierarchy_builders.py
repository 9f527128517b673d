"""Hierarchy builders (sqlanon.hierarchies): each checked against a hand-written hierarchy, the
interval ones as property tests (every leaf inside each interval on its path, the intervals
nested), all through the ARX CSV round trip, and used by real releases."""

from __future__ import annotations

import datetime as dt
import re

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon import Hierarchy, HierarchyError
from sqlanon import hierarchies as H


def test_intervals_match_a_hand_written_hierarchy() -> None:
    built = H.intervals([3, 17, 12, 25, 3, None, 38], width=10)
    assert built == Hierarchy.from_rows([
        ["3", "[0, 10)", "[0, 20)", "*"],
        ["12", "[10, 20)", "[0, 20)", "*"],
        ["17", "[10, 20)", "[0, 20)", "*"],
        ["25", "[20, 30)", "[20, 40)", "*"],
        ["38", "[30, 40)", "[20, 40)", "*"],
    ])


def test_intervals_with_a_start_and_fanouts_per_level() -> None:
    built = H.intervals([1.5, 4, 9], width=2.5, start=-1, fanout=[2])
    assert built.to_rows() == [
        ["1.5", "[1.5, 4)", "[1.5, 6.5)", "*"],
        ["4", "[4, 6.5)", "[1.5, 6.5)", "*"],
        ["9", "[9, 11.5)", "[9, 11.5)", "*"],
    ]


def test_quantiles_cut_at_equal_counts_and_close_the_last_interval() -> None:
    built = H.quantiles(list(range(8)), bins=4, fanout=2)
    assert built == Hierarchy.from_rows([
        ["0", "[0, 2)", "[0, 4)", "*"], ["1", "[0, 2)", "[0, 4)", "*"],
        ["2", "[2, 4)", "[0, 4)", "*"], ["3", "[2, 4)", "[0, 4)", "*"],
        ["4", "[4, 6)", "[4, 7]", "*"], ["5", "[4, 6)", "[4, 7]", "*"],
        ["6", "[6, 7]", "[4, 7]", "*"], ["7", "[6, 7]", "[4, 7]", "*"],
    ])


def test_ordering_groups_in_order() -> None:
    built = H.ordering(["Masters", "Bachelors", "HS-grad", "Doctorate", "Preschool"], 2,
                       order=["Preschool", "HS-grad", "Bachelors", "Masters", "Doctorate"])
    assert built == Hierarchy.from_rows([
        ["Preschool", "Preschool..HS-grad", "Preschool..Masters", "*"],
        ["HS-grad", "Preschool..HS-grad", "Preschool..Masters", "*"],
        ["Bachelors", "Bachelors..Masters", "Preschool..Masters", "*"],
        ["Masters", "Bachelors..Masters", "Preschool..Masters", "*"],
        ["Doctorate", "Doctorate", "Doctorate", "*"],
    ])


def test_masking_matches_a_hand_written_zip_hierarchy() -> None:
    built = H.masking(["53715", "53703", "53715", "10001"], step=2)
    assert built == Hierarchy.from_rows([
        ["10001", "100**", "1****", "*****"],
        ["53703", "537**", "5****", "*****"],
        ["53715", "537**", "5****", "*****"],
    ])


def test_dates_by_calendar() -> None:
    built = H.dates([dt.date(2024, 3, 17), "2019-12-31", dt.date(2024, 1, 2)], levels=["month", "year", "decade"])
    assert built == Hierarchy.from_rows([
        ["2019-12-31", "2019-12", "2019", "2010s", "*"],
        ["2024-01-02", "2024-01", "2024", "2020s", "*"],
        ["2024-03-17", "2024-03", "2024", "2020s", "*"],
    ])
    assert H.dates(["2024-05-01"], levels=["quarter", "century"]).to_rows() == [["2024-05-01", "2024-Q2", "2000s", "*"]]


@pytest.mark.parametrize("call, message", [
    (lambda: H.intervals([], width=5), "no values"),
    (lambda: H.intervals(["a"], width=5), "finite number"),
    (lambda: H.intervals([1], width=0), "width must be a positive number"),
    (lambda: H.intervals([1], width=5, start=3), "above the smallest value"),
    (lambda: H.intervals([1, 9], width=5, fanout=1), "fanout must be an integer >= 2"),
    (lambda: H.quantiles([1, 2], bins=0), "bins must be a positive integer"),
    (lambda: H.ordering(["a", "b"], order=["a"]), "order misses 1 value"),
    (lambda: H.masking("53715"), "not one string"),
    (lambda: H.masking(["1"], mask="**"), "one character"),
    (lambda: H.dates(["2024-01-01"], levels=["year", "month"]), "from fine to coarse"),
    (lambda: H.dates(["soon"]), "is not a date"),
])
def test_bad_input_gets_a_clear_error(call, message: str) -> None:
    with pytest.raises(HierarchyError, match=re.escape(message)):
        call()


def _bounds(label: str) -> tuple[float, float, bool]:
    lo, hi = label[1:-1].split(", ")
    return float(lo), float(hi), label.endswith("]")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-500, 500), min_size=1, max_size=60), st.integers(1, 40),
       st.integers(2, 4), st.booleans())
def test_interval_hierarchies_hold_their_leaves_and_nest(values, width, fanout, by_quantile) -> None:
    built = H.quantiles(values, bins=width, fanout=fanout) if by_quantile else H.intervals(values, width, fanout=fanout)
    rows = built.to_rows()
    assert sorted(int(r[0]) for r in rows) == sorted(set(values))
    assert [int(r[0]) for r in rows] == sorted(set(values))  # leaves ascend: nodes are intervals
    for row in rows:
        assert row[-1] == "*"
        leaf = int(row[0])
        spans = [_bounds(label) for label in row[1:-1]]
        for lo, hi, closed in spans:
            assert lo <= leaf and (leaf <= hi if closed else leaf < hi)
        for (lo, hi, _), (lo2, hi2, _) in zip(spans, spans[1:]):
            assert lo2 <= lo and hi <= hi2
    assert Hierarchy.from_rows(rows) == built


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(alphabet="0123456789", min_size=1, max_size=6), min_size=1, max_size=30))
def test_masking_round_trips_through_arx_csv(tmp_path_factory, codes) -> None:
    built = H.masking(codes)
    path = tmp_path_factory.mktemp("h") / "zip.csv"
    built.to_csv(path)
    assert Hierarchy.from_csv(path) == built
    assert sorted(built.leaves) == sorted(set(codes))


def test_builders_serve_real_releases() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE p AS SELECT i AS id, 20 + i % 50 AS age, lpad(CAST(53700 + i % 37 AS VARCHAR), 5, '0') AS zip, "
                "DATE '2020-01-01' + CAST(i % 700 AS INTEGER) AS visit FROM range(2000) t(i)")
    ages, zips, visits = (list(c) for c in zip(*con.execute("SELECT age, zip, visit FROM p").fetchall()))
    release = sqlanon.anonymize(con, "p", qid=["age", "zip", "visit"], k=20,
                                hierarchies={"age": H.intervals(ages, 5), "zip": H.masking(zips), "visit": H.dates(visits)},
                                published="hierarchy", output=sqlanon.Output(key="id"))
    assert release.verification.ok and release.k_achieved >= 20
    shown = con.execute("SELECT DISTINCT age_min, age_max FROM p_anon").fetchall()
    assert all(lo <= hi for lo, hi in shown)
    assert {z for (z,) in con.execute("SELECT DISTINCT zip FROM p_anon").fetchall()} <= {
        label for label in H.masking(zips).labels}


def test_the_command_line_writes_the_builders_arx_files(tmp_path, capsys) -> None:
    from sqlanon.cli import main

    db = tmp_path / "h.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE patients AS SELECT i AS id, 20 + i % 60 AS age, CAST(53700 + i % 40 AS VARCHAR) AS zip, "
                "DATE '2020-01-01' + CAST(i % 900 AS INTEGER) AS admitted FROM range(5000) t(i)")
    con.execute(f"COPY patients TO '{tmp_path / 'p.parquet'}'")
    ages, zips, days = (list(c) for c in zip(*con.execute("SELECT age, zip, admitted FROM patients").fetchall()))
    con.close()
    zip_csv, age_csv, day_csv = tmp_path / "zip.csv", tmp_path / "age.csv", tmp_path / "days.csv"
    assert main(["hierarchy", "masking", str(db), "patients", "zip", "-o", str(zip_csv)]) == 0
    assert Hierarchy.from_csv(zip_csv) == H.masking(zips)
    assert main(["hierarchy", "intervals", ":memory:", str(tmp_path / "p.parquet"), "age", "--width", "5",
                 "--fanout", "2,3", "-o", str(age_csv)]) == 0
    assert Hierarchy.from_csv(age_csv) == H.intervals(ages, 5, fanout=[2, 3])
    assert main(["hierarchy", "dates", str(db), "patients", "admitted", "--levels", "quarter,year", "-o", str(day_csv)]) == 0
    assert Hierarchy.from_csv(day_csv) == H.dates(days, ["quarter", "year"])
    capsys.readouterr()
    # never overwritten without --replace, never the database, a missing option named
    before = zip_csv.read_text()
    assert main(["hierarchy", "masking", str(db), "patients", "zip", "--step", "2", "-o", str(zip_csv)]) == 2
    assert zip_csv.read_text() == before and "pass --replace" in capsys.readouterr().err
    assert main(["hierarchy", "masking", str(db), "patients", "zip", "-o", str(db), "--replace"]) == 2
    assert "never overwritten" in capsys.readouterr().err and duckdb.connect(str(db)).execute(
        "SELECT count(*) FROM patients").fetchone() == (5000,)
    assert main(["hierarchy", "quantiles", str(db), "patients", "age", "-o", str(tmp_path / "q.csv")]) == 2
    assert "needs --bins" in capsys.readouterr().err
    assert main(["hierarchy", "masking", str(db), "patients", "zipp", "-o", str(tmp_path / "x.csv")]) == 2
    assert "no column 'zipp'" in capsys.readouterr().err
    # and the file serves a release
    assert main(["anonymize", str(db), "patients", "--qid", "age,zip", "--k", "20", "--key", "id",
                 "--hierarchy", f"zip={zip_csv}"]) == 0
