"""Workload-aware benchmark: InfoGain and Regression Mondrian against Median, with and without
diversity constraints, on the Agrawal data (the design's yardstick for issue "workload-aware
splitting").

    python benchmarks/bench_workload.py --rows 1000000 10000000 [--k 100] [--dir /tmp/sqlanon-bench]
        [--duckdb-memory-limit 2GB] [--only median infogain ...]

Runs, each in its own child process on the same on-disk DuckDB file (``agrawal_<N>.duckdb``,
generated once by ``agrawal.write_duckdb`` and shared with ``bench_core.py``):

* ``median``            Median Mondrian, the nine QIs;
* ``infogain``          ``target="c2"`` (InfoGain on the C2 label), the nine QIs;
* ``regression``        ``target="r7"`` (LSD on the R7 target), the nine QIs;
* ``median+ldiv``, ``infogain+ldiv``: entropy l-diversity of ``zipcode`` (l = 3), zipcode
  leaving the QIs;
* ``median+var``, ``regression+var``: variance diversity of ``salary`` (v = 1e8, a standard
  deviation of 10,000), salary leaving the QIs;
* the hard cases, targets unrelated to the QIs (C2 and R7 are functions of them, so partitions
  turn pure and settle early): ``infogain-noise``, InfoGain on a random label (``noise``, 'a' or
  'b' by a hash of the row number, added to a temp copy of the table outside the timing), the
  nine QIs; ``regression-loan``, LSD on ``loan`` (drawn independently of every other Agrawal
  attribute), loan leaving the QIs.

Prints per run the wall time of ``anonymize()``, its ratio to ``median`` in the same run, where
the time went (``sql``: the SQL-pushed levels; ``memory``: the in-memory finish; the rest is
encoding, publishing and verifying), the peak RSS of the child, the number of classes and the
quality measure the criterion optimizes (H(C2 | P) in bits for the label, RMSE of R7 for the
target).
"""

from __future__ import annotations

import sqlanon
import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(HERE)]

from agrawal import QI_COLUMNS, write_duckdb  # noqa: E402
from machine import measure_child  # noqa: E402

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
}


def _kwargs(run: str) -> tuple[list[str], dict[str, Any]]:
    import sqlanon

    kw = dict(RUNS[run])
    excluded = set()
    if "sensitive" in kw:
        excluded.add(kw["sensitive"])
    if "constraints" in kw:
        _, column, v = kw["constraints"]
        kw["constraints"] = [sqlanon.VarianceDiversity(column, v)]
        excluded.add(column)
    if kw.get("target") == "loan":
        excluded.add("loan")
    return [q for q in QI_COLUMNS if q not in excluded], kw


def child(db: str, run: str, k: int, memory_limit: str | None) -> dict[str, Any]:
    import sqlanon

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


def run_child(db: Path, run: str, k: int, memory_limit: str | None) -> dict[str, Any]:
    fd, result = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    cmd = [sys.executable, __file__, "--child", run, "--db", str(db), "--k", str(k), "--result", result]
    if memory_limit:
        cmd += ["--duckdb-memory-limit", memory_limit]
    code, rss, _, _ = measure_child(cmd, None)  # the child's own peak RSS
    out: dict[str, Any] = {"rss_mib": rss}
    try:
        if code:
            out["error"] = f"child exited with {code}"
        else:
            out.update(json.loads(Path(result).read_text()))
    finally:
        os.unlink(result)
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    p.add_argument("--k", type=int, default=100)
    p.add_argument("--dir", default="/tmp/sqlanon-bench")
    p.add_argument("--duckdb-memory-limit", default=None)
    p.add_argument("--only", nargs="*", choices=sorted(RUNS), default=list(RUNS))
    p.add_argument("--child", choices=sorted(RUNS), help=argparse.SUPPRESS)
    p.add_argument("--db", help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        out = child(args.db, args.child, args.k, args.duckdb_memory_limit)
        Path(args.result).write_text(json.dumps(out))
        return
    Path(args.dir).mkdir(parents=True, exist_ok=True)
    print(json.dumps({"machine": {"nproc": len(os.sched_getaffinity(0)), "duckdb": duckdb.__version__}}))
    table = []
    for n in args.rows:
        db = Path(args.dir) / f"agrawal_{n}.duckdb"
        write_duckdb(db, n, table=TABLE)
        results = {}
        for run in args.only:
            print(f"# N={n:,}: {run} ...", file=sys.stderr, flush=True)
            results[run] = run_child(db, run, args.k, args.duckdb_memory_limit)
            print(json.dumps({"n": n, "run": run, **results[run]}, default=str), flush=True)
        base = results.get("median", {}).get("s")
        for run, r in results.items():
            timings = r.get("timings") or {}
            table.append((n, run, r.get("s"), (r.get("s") / base) if base and r.get("s") else None,
                          timings.get("partition_sql"), timings.get("partition_memory"), r.get("rss_mib"),
                          r.get("partitions"), r.get("h_c2_bits"), r.get("rmse_r7"), r.get("error")))
    print(f"\n{'N':>11} {'run':>15} {'seconds':>8} {'/median':>8} {'sql':>6} {'memory':>7} {'MiB':>6} {'classes':>8} "
          f"{'H(C2|P)':>8} {'RMSE r7':>9}")
    for n, run, s, ratio, sql, memory, rss, parts, h, rmse, err in table:
        def fmt(v, f):
            return "-" if v is None else format(v, f)
        print(f"{n:>11,} {run:>15} {fmt(s, '8.2f')} {fmt(ratio, '8.2f')} {fmt(sql, '6.1f')} {fmt(memory, '7.1f')} "
              f"{fmt(rss, '6.0f')} {fmt(parts, '8,')} {fmt(h, '8.4f')} {fmt(rmse, '9.0f')}" + (f"  {err}" if err else ""))


if __name__ == "__main__":
    main()
