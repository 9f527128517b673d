"""The Spark peer table of benchmarks/report.py (issue 51) on fake records of
bench_peer_mosaicrown: rows/s per core from the records, a peer that failed verify or timed out
said as such, tds-spark's published rate labelled as published, and the README's block between
its markers. Nothing here times anything."""

from __future__ import annotations

from pathlib import Path

from tests.support.bench import bench_module

harness = bench_module("harness")
report = bench_module("report")


def _fake_run(tmp_path: Path) -> None:
    args = harness.arguments("fake", rows=[1_000], quick={"rows": [10]}).parse_args(["--out", str(tmp_path)])
    rec = harness.Recorder.start("/somewhere/bench_peer_mosaicrown.py", args)
    local = {"k": 100, "master": "local[2]", "cores": 2}
    rec.record("mosaicrown", {"rows": 1_000_000, **local, "fragments": 2}, 400.0, {"per_sqlanon": 4.0},
               {"rows_per_s_core": 1_000_000 / 400.0 / 2, "classes": 6_000, "smallest_class": 100, "gcp": 0.21,
                "verify_ok": False, "load_max": 40.6})
    rec.record("sqlanon", {"rows": 1_000_000, **local}, 100.0, metrics={
        "rows_per_s_core": 1_000_000 / 100.0 / 2, "classes": 7_070, "smallest_class": 100, "gcp": 0.1234,
        "verify_ok": True})
    rec.record("mosaicrown", {"rows": 10_000_000, **local, "fragments": 2}, None, error="timed out after 1800 s")


def test_peer_table_rates_verdicts_and_published_row(tmp_path):
    _fake_run(tmp_path)
    table = report.peer_table(report.load_results(tmp_path))
    lines = table.splitlines()
    assert lines[0].startswith("| system | rows | cores | seconds | rows/s per core | classes |")
    # sqlanon first at each size, then the peer; the failed run says why instead of a time
    assert lines[2] == "| sqlanon (Median Mondrian) (Spark local[2]) | 1,000,000 | 2 | 100 | 5,000 | 7,070 | 100 | 0.123 | yes |"
    assert lines[3] == ("| mosaicrown/mondrian (Spark local[2], 2 fragments) | 1,000,000 | 2 | 400 | 1,250 | 6,000 | 100 "
                        "| 0.210 | **no** |")
    assert lines[4].startswith("| mosaicrown/mondrian (Spark local[2], 2 fragments) | 10,000,000 | 2 | "
                               "timed out after 1800 s | - |")
    # tds-spark: 20M rows in 2,305.491 s on 64 cores, labelled as published
    assert lines[5].startswith("| tds-spark (**published**, not run here: ") and "| 20,000,000 | 64 | 2,305 | 136 |" in lines[5]
    assert round(report.TDS_SPARK.rows_per_core) == 136
    assert "micophilip/tds-spark" in table and "not sequential Mondrian" in table
    assert ", up to 41 while 1 of the 3 ran" in table  # the largest sampled load, where a record has one


def test_a_later_run_of_one_system_keeps_the_others(tmp_path):
    _fake_run(tmp_path)
    args = harness.arguments("fake", rows=[1_000], quick={"rows": [10]}).parse_args(["--out", str(tmp_path)])
    rec = harness.Recorder.start("/somewhere/bench_peer_mosaicrown.py", args)
    rec.record("sqlanon", {"rows": 10_000_000, "k": 100, "master": "local[2]", "cores": 2}, 1000.0,
               metrics={"rows_per_s_core": 5_000.0, "classes": 70_000, "smallest_class": 100, "gcp": 0.05,
                        "verify_ok": True})  # fmt: skip
    lines = report.peer_table(report.load_results(tmp_path)).splitlines()
    systems = [(line.split(" | ")[0], line.split(" | ")[1]) for line in lines[2:7]]
    assert systems == [("| sqlanon (Median Mondrian) (Spark local[2])", "1,000,000"),
                       ("| mosaicrown/mondrian (Spark local[2], 2 fragments)", "1,000,000"),
                       ("| sqlanon (Median Mondrian) (Spark local[2])", "10,000,000"),
                       ("| mosaicrown/mondrian (Spark local[2], 2 fragments)", "10,000,000"),
                       ("| tds-spark (**published**, not run here: UCI Adult blown up, k = 100, 16 nodes x 4 vCPUs)",
                        "20,000,000")]


def test_readme_block_is_regenerated_between_its_markers(tmp_path):
    _fake_run(tmp_path)
    results = report.load_results(tmp_path)
    readme = f"intro\n{report.PEERS_START}\nold table\n{report.PEERS_END}\nafter\n"
    out = report.with_peers(readme, results)
    assert out.startswith(f"intro\n{report.PEERS_START}\n| system |") and out.endswith(f"{report.PEERS_END}\nafter\n")
    assert "old table" not in out
    assert report.with_peers(out, results) == out  # idempotent: --check passes after a write
    assert report.peer_table({}).startswith("No `bench_peer_mosaicrown` results yet")


def test_page_has_the_peer_section(tmp_path):
    _fake_run(tmp_path)
    page = report.render(report.load_results(tmp_path))
    assert "## Spark peers" in page and "| tds-spark (**published**" in page
    assert "## `bench_peer_mosaicrown.py`" in page
