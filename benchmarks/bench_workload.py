"""Workload-aware benchmark: InfoGain and Regression Mondrian against Median, with and without
diversity constraints, on the Agrawal data (the design's yardstick for issue "workload-aware
splitting").

    python benchmarks/bench_workload.py --rows 1000000 10000000 [--k 100] [--dir /tmp/sqlanon-bench]
        [--duckdb-memory-limit 2GB] [--only median infogain ...] [--memory-rows N] [--level-by-level]
    python benchmarks/bench_workload.py --quick        # 20,000 rows: a check that it runs

Runs, each in its own child process on the same on-disk DuckDB file (``agrawal_<N>.duckdb``,
generated once by ``agrawal.write_duckdb`` and shared with ``bench_core.py``):

* ``median``            Median Mondrian, the nine QIs;
* ``infogain``          ``target="c2"`` (InfoGain on the C2 label), the nine QIs;
* ``regression``        ``target="r7"`` (LSD on the R7 target), the nine QIs;
* ``median+ldiv``, ``infogain+ldiv``: entropy l-diversity of ``zipcode`` (l = 3), zipcode
  leaving the QIs;
* ``median+var``, ``regression+var``: variance diversity of ``salary`` (v = 1e8, a standard
  deviation of 10,000), salary leaving the QIs;
* issue 52's privacy models: ``median+entropy-car`` (entropy l-diversity of ``car``, l = 5),
  ``median+var-loan`` (variance diversity of ``loan``, v = 1e10, a standard deviation of
  100,000), ``median+tclose-elevel`` (t-closeness of ``elevel``, t = 0.2, equal distance), the
  sensitive column leaving the QIs; and the same under the workload criteria:
  ``infogain+entropy-car``, ``regression+var-loan``, ``infogain+tclose-elevel``,
  ``regression+tclose-elevel``;
* the hard cases, targets unrelated to the QIs (C2 and R7 are functions of them, so partitions
  turn pure and settle early): ``infogain-noise``, InfoGain on a random label (``noise``, 'a' or
  'b' by a hash of the row number, added to a temp copy of the table outside the timing), the
  nine QIs; ``regression-loan``, LSD on ``loan`` (drawn independently of every other Agrawal
  attribute), loan leaving the QIs;
* a suppression limit of 1 % (``suppression=0.01``): ``median+supp``, ``infogain+supp`` (C2),
  ``regression+supp`` (R7), the nine QIs.

Records per run the wall time of ``anonymize()``, its ratios to ``median`` in the same run
(``per_median``) and to the harness's scan-equivalent of the nine QIs (``per_scan``), where
the time went (``sql``: the SQL-pushed levels; ``memory``: the in-memory finish; the rest is
encoding, publishing and verifying), the peak RSS of the child, the number of classes and the
quality measure the criterion optimizes (H(C2 | P) in bits for the label, RMSE of R7 for the
target).
"""

from __future__ import annotations

import hashlib
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402  (puts the checkout first on sys.path)
from agrawal import QI_COLUMNS, write_duckdb  # noqa: E402
from harness import Column  # noqa: E402

TABLE = "agrawal"
RUNS: dict[str, dict[str, Any]] = {
    "median": {},
    "infogain": {"target": "c2"},
    "regression": {"target": "r7"},
    "median+ldiv": {"sensitive": "zipcode", "l": 3},
    "infogain+ldiv": {"sensitive": "zipcode", "l": 3, "target": "c2"},
    "median+var": {"constraints": ("variance", "salary", 1e8)},
    "regression+var": {"constraints": ("variance", "salary", 1e8), "target": "r7"},
    "infogain-noise": {"target": "noise"},
    "regression-loan": {"target": "loan"},
    # issue 52's yardsticks for the privacy models in the compiled finish
    "median+entropy-car": {"sensitive": "car", "l": 5},
    "median+var-loan": {"constraints": ("variance", "loan", 1e10)},
    "median+tclose-elevel": {"constraints": ("tcloseness", "elevel", 0.2)},
    "infogain+entropy-car": {"sensitive": "car", "l": 5, "target": "c2"},
    "regression+var-loan": {"constraints": ("variance", "loan", 1e10), "target": "r7"},
    "infogain+tclose-elevel": {"constraints": ("tcloseness", "elevel", 0.2), "target": "c2"},
    "regression+tclose-elevel": {"constraints": ("tcloseness", "elevel", 0.2), "target": "r7"},
    # issue 52: a suppression limit (1 %) in the compiled finish
    "median+supp": {"suppression": 0.01},
    "infogain+supp": {"target": "c2", "suppression": 0.01},
    "regression+supp": {"target": "r7", "suppression": 0.01},
}
COLUMNS = [
    Column("N", "params.rows", ","), Column("run", "name"), Column("seconds", "seconds", ".2f"),
    Column("/median", "ratios.per_median", ".2f"), Column("/scan", "ratios.per_scan", ".0f"),
    Column("sql", "metrics.partition_sql_s", ".1f"), Column("memory", "metrics.partition_memory_s", ".1f"),
    Column("MiB", "metrics.rss_mib", ".0f"), Column("classes", "metrics.partitions", ","),
    Column("H(C2|P)", "metrics.h_c2_bits", ".4f"), Column("RMSE r7", "metrics.rmse_r7", ".0f"),
    Column("rules md5", "metrics.rules_md5"), Column("error", "error"),
]  # fmt: skip


def _kwargs(run: str) -> tuple[list[str], dict[str, Any]]:
    import sqlanon

    kw = dict(RUNS[run])
    excluded = set()
    if "sensitive" in kw:
        excluded.add(kw["sensitive"])
    if "constraints" in kw:
        kind, column, v = kw.pop("constraints")
        kw["privacy"] = [sqlanon.VarianceDiversity(column, v) if kind == "variance" else sqlanon.TCloseness(column, v)]
        excluded.add(column)
    if kw.get("target") == "loan":
        excluded.add("loan")
    return [q for q in QI_COLUMNS if q not in excluded], kw


def child(db: str, run: str, k: int, memory_limit: str | None, memory_rows: int | None = None,
          compiled: bool = True) -> dict[str, Any]:
    import duckdb

    import sqlanon
    from sqlanon.mondrian import builder

    # --level-by-level: the numpy finish level by level (the compiled depth-first ones off)
    builder._MEDIAN_FINISH = builder._WORKLOAD_FINISH = compiled

    qid, kw = _kwargs(run)
    con = duckdb.connect(db)
    if memory_limit:
        con.execute("SET memory_limit = $limit", {"limit": memory_limit})
    table = TABLE
    if kw.get("target") == "noise":
        table = "agrawal_noise"
        con.execute(f"CREATE TEMP TABLE {table} AS SELECT *, CASE WHEN hash(rowid * 7919 + 1) % 2 = 0 "
                    f"THEN 'a' ELSE 'b' END AS noise FROM {TABLE}")
    start = time.perf_counter()
    if memory_rows is not None:  # the in-memory budget is the Levels strategy's
        kw["algorithm"] = sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows))
    release = sqlanon.anonymize(con, table, qid=qid, k=k, output=sqlanon.Output(view="bench_anon", replace=True), **kw)
    seconds = time.perf_counter() - start
    entropy = con.execute(
        "WITH c AS (SELECT eq_class, c2, count(*) AS n FROM bench_anon GROUP BY ALL), "
        "e AS (SELECT sum(n) AS t, sum(n) * ln(sum(n)) - sum(n * ln(n)) AS nh FROM c GROUP BY eq_class) "
        "SELECT sum(nh) / sum(t) / ln(2) FROM e"
    ).fetchall()[0][0]
    rmse = con.execute(
        "SELECT sqrt(avg(sq)) FROM (SELECT (r7 - avg(r7) OVER (PARTITION BY eq_class)) ** 2 AS sq FROM bench_anon)"
    ).fetchall()[0][0]
    # A fingerprint of the recoding, to compare runs of different versions (same data, same rules).
    rules = hashlib.md5(repr(con.execute(f'SELECT * FROM "{release.rules}" ORDER BY ALL').fetchall()).encode()).hexdigest()
    con.close()
    return {"s": seconds, "partitions": release.partitions, "k_achieved": release.k_achieved,
            "h_c2_bits": entropy, "rmse_r7": rmse, "timings": dict(release.timings), "rules_md5": rules}


def main(argv: list[str] | None = None) -> None:
    p = harness.arguments(__doc__, rows=[1_000_000, 10_000_000], quick={"rows": [20_000]}, timeout=True)
    p.add_argument("--k", type=int, default=100)
    p.add_argument("--duckdb-memory-limit", default=None)
    p.add_argument("--only", nargs="*", choices=sorted(RUNS), default=list(RUNS))
    p.add_argument("--memory-rows", type=int, default=None, help="passed to sqlanon.anonymize")
    p.add_argument("--level-by-level", action="store_true",
                   help="switch the compiled depth-first finishes off (the rules must not change: compare rules md5)")
    args = p.parse_args(argv)
    Path(args.dir).mkdir(parents=True, exist_ok=True)
    rec = harness.Recorder.start(__file__, args)
    for n in args.rows:
        db = Path(args.dir) / f"agrawal_{n}.duckdb"
        write_duckdb(db, n, table=TABLE)
        scan = harness.duckdb_scan_seconds(db, TABLE, QI_COLUMNS, args.repeat)
        rec.record("scan", {"rows": n, "repeat": args.repeat}, scan)
        base = None
        for run in args.only:
            print(f"# N={n:,}: {run} ...", file=sys.stderr, flush=True)
            out = harness.run_child(__file__, "child", {"db": str(db), "run": run, "k": args.k,
                                                        "memory_limit": args.duckdb_memory_limit,
                                                        "memory_rows": args.memory_rows,
                                                        "compiled": not args.level_by_level}, args.timeout)
            seconds = out.pop("s", None)
            base = seconds if run == "median" else base
            timings = out.pop("timings", None) or {}
            details = {"timings": timings, "process_s": out.pop("process_s", None)}
            metrics = {key: v for key, v in out.items() if key != "error"}
            metrics |= {f"{step}_s": timings.get(step) for step in ("partition_sql", "partition_memory")}
            params = {"rows": n, "k": args.k, "duckdb_memory_limit": args.duckdb_memory_limit}
            if args.memory_rows is not None:
                params["memory_rows"] = args.memory_rows
            if args.level_by_level:
                params["compiled"] = False
            rec.record(run, params, seconds,
                       {"per_median": harness.ratio(seconds, base), "per_scan": harness.ratio(seconds, scan, 0)},
                       metrics, details, out.get("error"))  # fmt: skip
    print()
    harness.print_table([r for r in rec.records if r["name"] != "scan"], COLUMNS)


if __name__ == "__main__":
    main()
