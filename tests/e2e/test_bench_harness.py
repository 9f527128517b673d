"""The benchmark harness (benchmarks/harness.py) and report (benchmarks/report.py) on fake
measurements: the record's schema, the results file, the child runner, the scan policy, the
table printer and the rendered performance page. Nothing here times sqlanon."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support.bench import bench_module

#: The record's fields, spelled out here so that a change to the schema fails this test.
FIELDS = {"schema", "script", "run", "name", "params", "seconds", "ratios", "metrics", "details", "error",
          "quick", "command", "machine", "load_avg", "git", "timestamp"}


harness = bench_module("harness")
report = bench_module("report")


def _recorder(tmp_path: Path, script: str, *extra: str):
    args = harness.arguments("fake", rows=[1_000], quick={"rows": [10]}).parse_args(["--out", str(tmp_path), *extra])
    return harness.Recorder.start(script, args), args


def _fake_core(tmp_path: Path, *extra: str) -> list[dict]:
    rec, _ = _recorder(tmp_path, "/somewhere/bench_core.py", *extra)
    rec.record("scan", {"rows": 10_000_000, "repeat": 3}, 0.025)
    rec.record("numpy", {"rows": 10_000_000, "k": 100}, 6.87, {"per_scan": 274.8}, {"rss_mib": 1096.0})
    rec.record("sqlanon", {"rows": 10_000_000, "k": 100}, 8.02, {"per_scan": 320.8, "per_numpy": 1.17},
               {"rss_mib": 1986.0, "partitions": 76_773}, {"timings": {"encode": 1.39}})
    rec.record("sqlanon", {"rows": 1_000_000, "k": 100}, 1.22, {"per_scan": 305.0, "per_numpy": 2.74},
               {"rss_mib": 559.0, "partitions": 7_070})
    rec.record("anonypy", {"rows": 1_000_000, "k": 100}, 67.2, {"per_sqlanon": 55.1}, {"partitions": 7_111})
    rec.record("anonypy", {"rows": 10_000_000, "k": 100}, error="anonypy is not installed: pip install anonypy")
    return rec.records


def test_record_schema_and_file(tmp_path):
    records = _fake_core(tmp_path)
    lines = (tmp_path / "bench_core.jsonl").read_text().splitlines()
    assert len(lines) == len(records) == 6
    first = json.loads(lines[2])
    assert set(first) == FIELDS
    assert first["schema"] == harness.SCHEMA == 1
    assert (first["script"], first["name"], first["quick"]) == ("bench_core", "sqlanon", False)
    assert first["params"] == {"rows": 10_000_000, "k": 100}
    assert first["seconds"] == 8.02 and first["ratios"] == {"per_scan": 320.8, "per_numpy": 1.17}
    assert first["metrics"] == {"rss_mib": 1986.0, "partitions": 76_773}
    assert first["details"] == {"timings": {"encode": 1.39}} and first["error"] is None
    assert {"cores", "cpu", "memory_gib", "python", "duckdb", "numpy", "sqlanon"} <= set(first["machine"])
    assert first["machine"]["cores"] >= 1 and first["machine"]["duckdb"]
    assert len(first["load_avg"]) == 3 and set(first["git"]) == {"commit", "dirty"}
    assert first["timestamp"].endswith("+00:00") and first["command"].startswith("python benchmarks/bench_core.py")
    assert len({json.loads(line)["run"] for line in lines}) == 1  # one invocation, one run id
    assert harness.load(tmp_path / "bench_core.jsonl") == records
    assert json.loads(lines[-1])["error"].startswith("anonypy is not installed")


@pytest.mark.parametrize("breakage, message", [
    (lambda r: r.pop("ratios"), "missing \\['ratios'\\]"),
    (lambda r: r.update(extra=1), "unknown \\['extra'\\]"),
    (lambda r: r.update(seconds="8.02"), "field 'seconds'"),
    (lambda r: r.update(quick=1), "field 'quick'"),
    (lambda r: r["params"].update(rows=[1, 2]), "params\\['rows'\\] is a list"),
    (lambda r: r["ratios"].update(per_scan="fast"), "ratios\\['per_scan'\\]"),
    (lambda r: r["machine"].pop("cores"), "machine lacks \\['cores'\\]"),
    (lambda r: r.update(load_avg=[0.5]), "load_avg"),
    (lambda r: r.update(schema=2), "schema 2"),
    (lambda r: r.update(timestamp="yesterday"), "timestamp"),
    (lambda r: r["git"].update(branch="x"), "not commit and dirty"),
    (lambda r: r["git"].update(note=3), "not commit and dirty"),
])
def test_a_broken_record_is_named(tmp_path, breakage, message):
    _fake_core(tmp_path)
    path = tmp_path / "bench_core.jsonl"
    lines = path.read_text().splitlines()
    broken = json.loads(lines[3])
    breakage(broken)
    lines[3] = json.dumps(broken)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(harness.SchemaError, match=message) as caught:
        harness.load(path)
    assert "bench_core.jsonl:4:" in str(caught.value)
    assert report.main(["--results", str(tmp_path), "--page", str(tmp_path / "page.md")]) == 2
    assert not (tmp_path / "page.md").exists()


def test_a_record_of_another_tree_may_say_so(tmp_path):
    """A run of another tree (a git archive of an older commit) says how in git's "note"."""
    _fake_core(tmp_path)
    path = tmp_path / "bench_core.jsonl"
    lines = path.read_text().splitlines()
    noted = json.loads(lines[3])
    noted["git"]["note"] = "git archive of f6da116"
    lines[3] = json.dumps(noted)
    path.write_text("\n".join(lines) + "\n")
    assert harness.load(path)[3]["git"]["note"] == "git archive of f6da116"


def test_record_refuses_a_non_scalar_metric(tmp_path):
    rec, _ = _recorder(tmp_path, "bench_x.py")
    with pytest.raises(harness.SchemaError, match="put it in details"):
        rec.record("m", {"rows": 1}, 1.0, metrics={"timings": {"encode": 1.0}})
    assert not (tmp_path / "bench_x.jsonl").exists()


def test_page_and_headline(tmp_path, capsys):
    _fake_core(tmp_path)
    rec, _ = _recorder(tmp_path, "bench_view.py", "--quick")
    rec.record("live view", {"rows": 10, "release": "k", "query": "full read"}, 0.042, {"per_table": 7.13},
               {"classes": 128})
    rec.record("table", {"rows": 10, "release": "k", "query": "full read"}, 0.006, {"per_table": 1.0},
               {"classes": 128})
    results = report.load_results(tmp_path)
    assert set(results) == {"bench_core", "bench_view"}

    line = report.headline(results)
    assert line == ("On a {c}-core machine sqlanon anonymizes 10,000,000 rows (k = 100, nine QIs) inside DuckDB in "
                    "8.02 s, 1.17x the time of a tight in-memory numpy Mondrian given the data already loaded; "
                    "anonypy takes 55.1x as long at 1,000,000 rows ([performance](docs/performance.md))."
                    ).format(c=results["bench_core"][0]["machine"]["cores"])

    page_path = tmp_path / "docs" / "performance.md"
    readme = tmp_path / "README.md"  # a copy: the test never writes the repository's README
    readme.write_text(report.README.read_text())
    files = ["--results", str(tmp_path), "--page", str(page_path), "--readme", str(readme)]
    capsys.readouterr()
    assert report.main(files) == 0
    assert capsys.readouterr().out.strip() == line
    page = page_path.read_text()
    assert page.startswith("# Performance\n") and report.MARK in page
    assert page.index("## `bench_core.py`") < page.index("## `bench_view.py`")  # the headline's script first
    assert "Core benchmark: sqlanon.anonymize against a full scan" in page  # the script's own docstring
    assert "| measurement | rows | repeat | seconds | /scan | /numpy | /sqlanon | rss_mib | partitions | error |" in page
    assert "| sqlanon | 10,000,000 | - | 8.02 | 321 | 1.17 | - | 1,986 | 76,773 | - |" in page
    assert "| anonypy | 10,000,000 | - | - | - | - | - | - | - | anonypy is not installed: pip install anonypy |" in page
    assert "Parameters: k = 100." in page  # one value in the five records that have it: said once
    view = page[page.index("## `bench_view.py`"):]
    assert report.QUICK_NOTE in view and report.QUICK_NOTE not in page[:page.index("## `bench_view.py`")]
    assert "Parameters: rows = 10, release = k, query = full read." in view
    assert "| live view | 0.042 | 7.13 | 128 |" in view
    assert report.main([*files, "--check"]) == 0
    page_path.write_text(page + "edited by hand\n")
    assert report.main([*files, "--check"]) == 1


def test_headline_says_quick_and_missing(tmp_path):
    assert report.headline({}).startswith("No `bench_core` results yet")
    _fake_core(tmp_path, "--quick")
    line = report.headline(report.load_results(tmp_path))
    assert line.startswith("Quick run only (10,000,000 rows; not a performance claim): On a")


def test_latest_full_run_wins_over_a_later_quick_one(tmp_path):
    _fake_core(tmp_path)
    rec, _ = _recorder(tmp_path, "bench_core.py", "--quick")
    rec.record("sqlanon", {"rows": 10, "k": 100}, 0.5, {"per_scan": 900.0, "per_numpy": 99.0})
    run = report.latest_run(report.load_results(tmp_path)["bench_core"])
    assert {r["quick"] for r in run} == {False} and len(run) == 6


def test_headline_keeps_the_largest_comparison_over_later_smaller_or_unreferenced_runs(tmp_path):
    """A later run of 1M alone, or of 300M without the numpy reference, does not replace the
    headline of the run that compared 10M; anonypy's ratio comes from the run that measured it."""
    _fake_core(tmp_path)
    rec, _ = _recorder(tmp_path, "bench_core.py")
    rec.record("sqlanon", {"rows": 1_000_000, "k": 100}, 1.69, {"per_scan": 690.0, "per_numpy": 4.27})
    rec, _ = _recorder(tmp_path, "bench_core.py")
    rec.record("sqlanon", {"rows": 300_000_000, "k": 100}, 1335.8, {"per_scan": 2389.3})
    line = report.headline(report.load_results(tmp_path))
    assert "10,000,000 rows" in line and "8.02 s, 1.17x" in line and "anonypy takes 55.1x" in line
    rec, _ = _recorder(tmp_path, "bench_core.py")  # a newer comparison at 10M wins, without a peer of its own
    rec.record("sqlanon", {"rows": 10_000_000, "k": 100}, 7.85, {"per_scan": 368.4, "per_numpy": 1.68})
    line = report.headline(report.load_results(tmp_path))
    assert "7.85 s, 1.68x" in line and "anonypy takes 55.1x as long at 1,000,000 rows" in line
    path = tmp_path / "bench_core.jsonl"  # a later run on an overloaded machine does not replace it
    rec, _ = _recorder(tmp_path, "bench_core.py")
    rec.record("sqlanon", {"rows": 10_000_000, "k": 100}, 54.5, {"per_scan": 2000.0, "per_numpy": 2.79})
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for r in records:  # the runs above on a quiet machine, the last one on an overloaded one
        r["load_avg"] = [0.5, 0.5, 0.5] if r is not records[-1] else [4.0 * r["machine"]["cores"] + 1, 20.0, 20.0]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert "7.85 s, 1.68x" in report.headline(report.load_results(tmp_path))
    records[-1]["load_avg"] = [0.5, 0.5, 0.5]  # quiet too: the latest wins
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert "54.5 s, 2.79x" in report.headline(report.load_results(tmp_path))


def test_quick_fills_only_what_was_not_given():
    parser = harness.arguments("fake", rows=[1_000_000], quick={"rows": [20_000]})
    assert parser.parse_args(["--quick"]).rows == [20_000]
    assert parser.parse_args(["--quick", "--rows", "500"]).rows == [500]
    assert parser.parse_args([]).rows == [1_000_000]
    assert parser.parse_args([]).repeat == harness.REPEAT == 3


def test_scan_policy_is_best_of_warm_runs():
    times = iter([5.0, 3.0, 1.0, 2.0])  # warm-up, then three runs
    clock = {"now": 0.0}

    def fetch(sql: str) -> None:
        assert sql == 'SELECT SUM("a"), SUM("b c") FROM "t"'
        clock["now"] += next(times)

    real = harness.time.perf_counter
    harness.time.perf_counter = lambda: clock["now"]
    try:
        assert harness.scan_seconds(fetch, "t", ["a", "b c"], repeat=3) == 1.0
    finally:
        harness.time.perf_counter = real


def test_scan_sql_runs_on_duckdb():
    import duckdb

    con = duckdb.connect()
    con.execute('CREATE TABLE "my t" (a INTEGER, "b c" INTEGER)')
    con.execute('INSERT INTO "my t" VALUES (1, 2), (3, 4)')
    assert con.execute(harness.scan_sql("my t", ["a", "b c"])).fetchall() == [(4, 6)]


def test_child_reports_its_own_peak_and_failures(tmp_path):
    script = tmp_path / "fake_bench.py"
    script.write_text("def work(n):\n    return {'s': 0.5, 'n': n}\n\n"
                      "def fail():\n    raise RuntimeError('the measured thing broke')\n\n"
                      "def hang():\n    import time\n    time.sleep(60)\n")
    ok = harness.run_child(script, "work", {"n": 3})
    assert ok["s"] == 0.5 and ok["n"] == 3 and "error" not in ok
    assert 1 < ok["rss_mib"] < 2_000 and ok["process_s"] > 0
    bad = harness.run_child(script, "fail")
    assert bad["error"].startswith("child exited with 1: RuntimeError: the measured thing broke")
    slow = harness.run_child(script, "hang", timeout=1)
    assert slow["error"] == "timed out after 1 s"


def test_table_printer():
    rows = [{"name": "a", "params": {"n": 1_000}, "seconds": 1.23456, "ratios": {}},
            {"name": "bb", "params": {"n": 20}, "seconds": None, "ratios": {"per_scan": 3.0}}]
    columns = [harness.Column("what", "name"), harness.Column("N", "params.n", ","),
               harness.Column("s", "seconds", ".2f"), harness.Column("/scan", "ratios.per_scan", ".1f")]
    assert harness.table(rows, columns).splitlines() == ["what      N     s  /scan", "   a  1,000  1.23      -",
                                                        "  bb     20     -    3.0"]
    assert harness.table(rows, columns, markdown=True).splitlines() == [
        "| what | N | s | /scan |", "|---|---:|---:|---:|", "| a | 1,000 | 1.23 | - |", "| bb | 20 | - | 3.0 |"]


def test_missing_peer_is_a_sentence():
    assert harness.missing("json") is None
    assert harness.missing("no_such_module_xyz", "nosuch==1.0") == (
        "nosuch==1.0 is not installed: pip install -e '.[bench]' (or pip install nosuch==1.0)")
    with pytest.raises(SystemExit, match="no_such_module_xyz is not installed"):
        harness.require("no_such_module_xyz")


def test_no_password_in_the_command(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["bench_engines.py", "--postgres", "postgresql://bob:s3cret@db:5432/x"])
    rec, _ = _recorder(tmp_path, "bench_engines.py")
    record = rec.record("scan", {"rows": 1}, 0.1)
    assert record["command"] == "python benchmarks/bench_engines.py --postgres postgresql://bob:***@db:5432/x"
    assert "s3cret" not in (tmp_path / "bench_engines.jsonl").read_text()
