"""Rothko-S against Rothko-T with a small memory budget: passes, time, classes, pruned nodes.

    python benchmarks/bench_sample.py --rows 10000000 [50000000 100000000] [--k 100]
        [--memory-rows 500000] [--sample-rows N] [--criterion median|infogain]
        [--duckdb-memory-limit 2GB] [--dir /tmp/sqlanon-bench] [--confidence 0.95]

For every N, on the same Agrawal table in an on-disk DuckDB file (``<dir>/agrawal_<N>.duckdb``,
generated once and reused; the nine QIs, ``c2`` the InfoGain label), each strategy in a child
process of its own (so its peak RSS is its own):

* levels  ``sqlanon.anonymize(..., strategy="levels", memory_rows=M)``: Rothko-T, SQL levels until
          partitions fit ``M`` rows, then the in-memory finish;
* sample  ``sqlanon.anonymize(..., strategy="sample", memory_rows=M, sample_rows=S)``: Rothko-S
          (S defaults to M).

Before the runs of each N, one read of the whole table (every column, as a run reads them: the
QIs to encode, the others for the publication), first cold and then the best of two more: the
floor of a run's time, and it leaves the file in the page cache for the runs that follow, so
that 10M and 100M start alike. Reported per run: wall seconds of the call and its ratio to that
read, peak RSS, the Release's reads and writes of the working table (TR 1590's I/O model), sample
rounds, pruned tree nodes, partitions handed to Rothko-T, classes, the smallest class, and the
seconds per step. JSON lines (a machine line, a read line per N, one per run), then a table.
"""

from __future__ import annotations

import sqlanon
import argparse
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
from machine import machine, measure_child  # noqa: E402

TABLE = "agrawal"
LABEL = "c2"


def child(db: str, strategy: str, k: int, memory_rows: int, sample_rows: int | None, criterion: str,
          confidence: float, memory_limit: str | None) -> dict[str, Any]:
    import sqlanon

    con = duckdb.connect(db)
    if memory_limit:
        con.execute("SET memory_limit = $limit", {"limit": memory_limit})
    extra: dict[str, Any] = {"target": LABEL} if criterion == "infogain" else {}
    start = time.perf_counter()
    release = sqlanon.anonymize(con, TABLE, qid=QI_COLUMNS, k=k,
                                algorithm=sqlanon.Mondrian(strategy=(sqlanon.Sample(rows=sample_rows, confidence=confidence, memory_rows=memory_rows) if strategy == "sample" else sqlanon.Levels(memory_rows=memory_rows) if strategy == "levels" else "auto")),
                                output=sqlanon.Output(view=f"agrawal_anon_{strategy}", replace=True), **extra)
    seconds = time.perf_counter() - start
    con.close()
    return {"s": seconds, "classes": release.partitions, "k_achieved": release.k_achieved,
            "scans": release.outcome.scans, "writes": release.outcome.writes, "rounds": release.outcome.rounds,
            "pruned": release.outcome.pruned, "rescued": release.outcome.rescued,
            "distance_from_minimal": release.outcome.distance_from_minimal, "timings": dict(release.timings)}


def read_seconds(db: Path) -> dict[str, float]:
    """One read of every column of the table: the first (cold: from disk, as far as the page
    cache does not hold the file) and the best of two more."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        times = []
        for _ in range(3):
            start = time.perf_counter()
            # a hash of every value: min/max or count would be answered from the zone maps
            con.execute(f"SELECT count(*), sum(hash(COLUMNS(*))) FROM {TABLE}").fetchall()
            times.append(time.perf_counter() - start)
        return {"read_cold_s": round(times[0], 3), "read_s": round(min(times[1:]), 3)}
    finally:
        con.close()


def run(db: Path, strategy: str, args: argparse.Namespace) -> dict[str, Any]:
    fd, result = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    cmd = [sys.executable, __file__, "--child", strategy, "--db", str(db), "--k", str(args.k), "--result", result,
           "--memory-rows", str(args.memory_rows), "--criterion", args.criterion, "--confidence", str(args.confidence)]
    if args.sample_rows:
        cmd += ["--sample-rows", str(args.sample_rows)]
    if args.duckdb_memory_limit:
        cmd += ["--duckdb-memory-limit", args.duckdb_memory_limit]
    code, rss, _, wall = measure_child(cmd, None)
    out: dict[str, Any] = {"strategy": strategy, "rss_mib": rss, "process_s": round(wall, 2)}
    try:
        if code != 0:
            out["error"] = f"child exited with {code}"
        else:
            out.update(json.loads(Path(result).read_text()))
    finally:
        os.unlink(result)
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, nargs="+", default=[10_000_000])
    p.add_argument("--k", type=int, default=100)
    p.add_argument("--memory-rows", type=int, default=500_000)
    p.add_argument("--sample-rows", type=int, default=None)
    p.add_argument("--criterion", choices=("median", "infogain"), default="median")
    p.add_argument("--confidence", type=float, default=0.95)
    p.add_argument("--duckdb-memory-limit", default=None)
    p.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "sqlanon-bench"))
    p.add_argument("--strategies", nargs="+", default=["levels", "sample"])
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--db", help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        out = child(args.db, args.child, args.k, args.memory_rows, args.sample_rows, args.criterion,
                    args.confidence, args.duckdb_memory_limit)
        Path(args.result).write_text(json.dumps(out))
        return
    Path(args.dir).mkdir(parents=True, exist_ok=True)
    print(json.dumps({"machine": machine("duckdb", "numpy")}), flush=True)
    records = []
    for n in args.rows:
        db = Path(args.dir) / f"agrawal_{n}.duckdb"
        write_duckdb(db, n, table=TABLE)
        read = read_seconds(db)
        print(json.dumps({"n": n, **read}), flush=True)
        for strategy in args.strategies:
            print(f"# N={n:,}: {strategy} ...", file=sys.stderr, flush=True)
            rec = {"n": n, "k": args.k, "memory_rows": args.memory_rows, "sample_rows": args.sample_rows,
                   "criterion": args.criterion, **run(db, strategy, args)}
            rec["per_read"] = round(rec["s"] / read["read_s"], 1) if "s" in rec else None
            print(json.dumps(rec), flush=True)
            records.append(rec)
    heads = ["n", "strategy", "s", "per_read", "rss_mib", "scans", "writes", "rounds", "pruned", "rescued", "classes", "k_achieved"]
    print("\n" + " | ".join(heads))
    for r in records:
        print(" | ".join(str(round(r[h], 2) if isinstance(r.get(h), float) else r.get(h, r.get("error", "")))
                         for h in heads))


if __name__ == "__main__":
    main()
