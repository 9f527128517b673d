"""Rothko-S against Rothko-T with a small memory budget: passes, time, classes, pruned nodes.

    python benchmarks/bench_sample.py --rows 10000000 [50000000 100000000] [--k 100]
        [--memory-rows 500000] [--sample-rows N] [--criterion median|infogain]
        [--duckdb-memory-limit 2GB] [--dir /tmp/sqlanon-bench] [--confidence 0.95]
    python benchmarks/bench_sample.py --quick          # 40,000 rows, memory_rows 5,000

For every N, on the same Agrawal table in an on-disk DuckDB file (``<dir>/agrawal_<N>.duckdb``,
generated once and reused; the nine QIs, ``c2`` the InfoGain label), each strategy in a child
process of its own (so its peak RSS is its own):

* levels  ``sqlanon.anonymize(..., algorithm=Mondrian(strategy=Levels(M)))``: Rothko-T, SQL levels until
          partitions fit ``M`` rows, then the in-memory finish;
* sample  ``sqlanon.anonymize(..., algorithm=Mondrian(strategy=Sample(S, memory_rows=M)))``: Rothko-S
          (S defaults to M).

Before the runs of each N, one read of the whole table (every column, as a run reads them: the
QIs to encode, the others for the publication), first cold (the harness's unmeasured warm-up,
kept as ``read_cold_s``) and then the best of ``--repeat`` more: the floor of a run's time, and
it leaves the file in the page cache for the runs that follow, so that 10M and 100M start alike;
then the harness's scan-equivalent of the nine QIs. Recorded per run: wall seconds of the call and
its ratios to that read (``per_read``) and to the scan (``per_scan``), peak RSS, the Release's
reads and writes of the working table (TR 1590's I/O model), sample rounds, pruned tree nodes,
partitions handed to Rothko-T, classes, the smallest class, and the seconds per step.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402  (puts the checkout first on sys.path)
from agrawal import QI_COLUMNS, write_duckdb  # noqa: E402
from harness import Column  # noqa: E402

TABLE = "agrawal"
LABEL = "c2"
COLUMNS = [
    Column("N", "params.rows", ","), Column("strategy", "name"), Column("seconds", "seconds", ".2f"),
    Column("/read", "ratios.per_read", ".1f"), Column("/scan", "ratios.per_scan", ".0f"),
    Column("MiB", "metrics.rss_mib", ".0f"), Column("scans", "metrics.scans"), Column("writes", "metrics.writes"),
    Column("rounds", "metrics.rounds"), Column("pruned", "metrics.pruned"), Column("rescued", "metrics.rescued"),
    Column("classes", "metrics.classes", ","), Column("k min", "metrics.k_achieved"), Column("error", "error"),
]  # fmt: skip


def child(db: str, strategy: str, k: int, memory_rows: int, sample_rows: int | None, criterion: str,
          confidence: float, memory_limit: str | None) -> dict[str, Any]:
    import duckdb

    import sqlanon

    con = duckdb.connect(db)
    if memory_limit:
        con.execute("SET memory_limit = $limit", {"limit": memory_limit})
    extra: dict[str, Any] = {"target": LABEL} if criterion == "infogain" else {}
    start = time.perf_counter()
    chosen = (sqlanon.Sample(rows=sample_rows, confidence=confidence, memory_rows=memory_rows) if strategy == "sample"
              else sqlanon.Levels(memory_rows=memory_rows) if strategy == "levels" else "auto")
    release = sqlanon.anonymize(con, TABLE, qid=QI_COLUMNS, k=k,
                                algorithm=sqlanon.Mondrian(strategy=chosen),
                                output=sqlanon.Output(view=f"agrawal_anon_{strategy}", replace=True), **extra)
    seconds = time.perf_counter() - start
    con.close()
    return {"s": seconds, "classes": release.partitions, "k_achieved": release.k_achieved,
            "scans": release.outcome.scans, "writes": release.outcome.writes, "rounds": release.outcome.rounds,
            "pruned": release.outcome.pruned, "rescued": release.outcome.rescued,
            "distance_from_minimal": release.outcome.distance_from_minimal, "timings": dict(release.timings)}


def read_seconds(db: Path, repeat: int) -> harness.Timing:
    """Reads of every column of the table: the first (cold: from disk, as far as the page cache
    does not hold the file) and the best of ``repeat`` more."""
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        # a hash of every value: min/max or count would be answered from the zone maps
        return harness.timed(lambda: con.execute(f"SELECT count(*), sum(hash(COLUMNS(*))) FROM {TABLE}").fetchall(),
                             repeat)  # fmt: skip
    finally:
        con.close()


def main(argv: list[str] | None = None) -> None:
    p = harness.arguments(__doc__, rows=[10_000_000], quick={"rows": [40_000], "memory_rows": 5_000}, timeout=True)
    p.add_argument("--k", type=int, default=100)
    p.add_argument("--memory-rows", type=int, default=500_000)
    p.add_argument("--sample-rows", type=int, default=None)
    p.add_argument("--criterion", choices=("median", "infogain"), default="median")
    p.add_argument("--confidence", type=float, default=0.95)
    p.add_argument("--duckdb-memory-limit", default=None)
    p.add_argument("--strategies", nargs="+", default=["levels", "sample"])
    args = p.parse_args(argv)
    Path(args.dir).mkdir(parents=True, exist_ok=True)
    rec = harness.Recorder.start(__file__, args)
    for n in args.rows:
        db = Path(args.dir) / f"agrawal_{n}.duckdb"
        write_duckdb(db, n, table=TABLE)
        read = read_seconds(db, args.repeat)
        rec.record("read", {"rows": n, "repeat": args.repeat}, read.best, metrics={"read_cold_s": read.first})
        scan = harness.duckdb_scan_seconds(db, TABLE, QI_COLUMNS, args.repeat)
        rec.record("scan", {"rows": n, "repeat": args.repeat}, scan)
        for strategy in args.strategies:
            print(f"# N={n:,}: {strategy} ...", file=sys.stderr, flush=True)
            out = harness.run_child(__file__, "child", {
                "db": str(db), "strategy": strategy, "k": args.k, "memory_rows": args.memory_rows,
                "sample_rows": args.sample_rows, "criterion": args.criterion, "confidence": args.confidence,
                "memory_limit": args.duckdb_memory_limit}, args.timeout)  # fmt: skip
            seconds = out.pop("s", None)
            details = {key: out.pop(key, None) for key in ("timings", "process_s", "distance_from_minimal")}
            rec.record(strategy, {"rows": n, "k": args.k, "memory_rows": args.memory_rows,
                                  "sample_rows": args.sample_rows, "criterion": args.criterion,
                                  "confidence": args.confidence, "duckdb_memory_limit": args.duckdb_memory_limit},
                       seconds, {"per_read": harness.ratio(seconds, read.best, 1),
                                 "per_scan": harness.ratio(seconds, scan, 0)},
                       {key: v for key, v in out.items() if key != "error"}, details, out.get("error"))  # fmt: skip
    print()
    harness.print_table([r for r in rec.records if r["name"] not in ("read", "scan")], COLUMNS)


if __name__ == "__main__":
    main()
