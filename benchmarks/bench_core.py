"""Core benchmark: sqlanon.anonymize against a full scan, a tight numpy Mondrian and anonypy.

    python benchmarks/bench_core.py --rows 1000000 10000000 [--k 100] [--dir /tmp/sqlanon-bench]
        [--anonypy-rows 1000000] [--anonypy-timeout 900] [--memory-rows N] [--skip anonypy ...]
    python benchmarks/bench_core.py --quick            # 20,000 rows: a check that it runs

For every N, on the same Agrawal table in an on-disk DuckDB file (``<dir>/agrawal_<N>.duckdb``,
generated once and reused), in one run on one machine:

* scan     the harness's scan-equivalent over the nine QIs (best of ``--repeat`` warm runs of
           ``SELECT sum(q) ... FROM agrawal``), the floor any in-database algorithm is measured
           against;
* sqlanon  ``sqlanon.anonymize(con, "agrawal", qid=QI_COLUMNS, k=k,
           output=sqlanon.Output(view="agrawal_anon", replace=True))`` in a child process: wall time of
           the call (sqlanon's lazily imported names loaded before the clock starts, as the numpy
           child imports its reference first; their time is ``import_s``) and the child's peak RSS;
* numpy    ``reference_mondrian_fast`` (tests/support/reference_mondrian.py) in a child: load time
           (fetchnumpy of the nine columns) and partition time reported separately;
* anonypy  (N <= --anonypy-rows) anonypy 0.2.1's Mondrian in a child: ``Mondrian.partition``
           then ``anonymize`` -- exactly what ``Preserver.anonymize_k_anonymity`` runs -- with
           the nine QIs as numeric features and ``c2`` as the sensitive column it requires; when
           anonypy is not installed (``pip install -e '.[bench]'``) the record says so;
* ratios   sqlanon: ``per_scan``, ``per_numpy`` (against the numpy partition time alone);
           numpy: ``per_scan``; anonypy: ``per_sqlanon`` (partition + publish over sqlanon).

Each child runs alone (the parent holds no DuckDB connection meanwhile); its peak RSS is its own
(interpreter and imports included). Every measurement is a record of ``results/bench_core.jsonl``.
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
ANONYPY_SENSITIVE = "c2"  # anonypy requires one; c2 (2 classes) keeps its output small
KINDS = ("numpy", "sqlanon", "anonypy")  # numpy first: sqlanon's ratio to it is known when recorded
COLUMNS = [
    Column("measurement", "name"), Column("N", "params.rows", ","), Column("seconds", "seconds", ".3f"),
    Column("MiB", "metrics.rss_mib", ".0f"), Column("load s", "metrics.load_s", ".2f"),
    Column("partitions", "metrics.partitions", ","), Column("k min", "metrics.k_achieved"),
    Column("/scan", "ratios.per_scan", ".1f"), Column("/numpy", "ratios.per_numpy", ".2f"),
    Column("/sqlanon", "ratios.per_sqlanon", ".1f"), Column("error", "error"),
]  # fmt: skip


def _select_qis(extra: str = "") -> str:
    return "SELECT " + ", ".join(QI_COLUMNS) + extra + f" FROM {TABLE}"


# ----------------------------------------------------------------------------- children
def child_sqlanon(db: str, k: int, memory_rows: int | None, memory_limit: str | None) -> dict[str, Any]:
    import duckdb

    import sqlanon

    # ``import sqlanon`` loads its public names on first use (pandas, sqlglot, the pipeline): they
    # are loaded here, as the numpy child imports its reference before its clock starts, so the
    # timed call is the anonymization alone (since the lazy names, 0.65 s of every timed call at
    # 1M and 10M rows were these imports). Their time is reported as ``import_s``.
    start = time.perf_counter()
    anonymize, Output, Mondrian, Levels = sqlanon.anonymize, sqlanon.Output, sqlanon.Mondrian, sqlanon.Levels
    imports = time.perf_counter() - start
    extra = {} if memory_rows is None else {"algorithm": Mondrian(strategy=Levels(memory_rows))}
    con = duckdb.connect(db)
    if memory_limit:  # DuckDB's own buffer limit: beyond it temp tables spill to disk
        con.execute("SET memory_limit = $limit", {"limit": memory_limit})
    start = time.perf_counter()
    release = anonymize(con, TABLE, qid=QI_COLUMNS, k=k, output=Output(view="agrawal_anon", replace=True), **extra)
    seconds = time.perf_counter() - start
    start = time.perf_counter()
    con.close()  # may checkpoint what the release persisted: reported, not counted
    return {"s": seconds, "close_s": time.perf_counter() - start, "import_s": imports, "partitions": release.partitions,
            "k_achieved": release.k_achieved, "timings": dict(release.timings)}  # fmt: skip


def child_numpy(db: str, k: int) -> dict[str, Any]:
    import duckdb
    import numpy as np

    from tests.support.reference_mondrian import reference_mondrian_fast

    start = time.perf_counter()
    con = duckdb.connect(db, read_only=True)
    cols = con.execute(_select_qis()).fetchnumpy()
    con.close()
    X = np.column_stack([cols[c] for c in QI_COLUMNS])
    del cols
    load = time.perf_counter() - start
    start = time.perf_counter()
    labels = reference_mondrian_fast(X, k)
    partition = time.perf_counter() - start
    sizes = np.bincount(labels)
    return {"load_s": load, "s": partition, "partitions": len(sizes), "k_achieved": int(sizes.min())}


def child_anonypy(db: str, k: int) -> dict[str, Any]:
    import anonypy
    import duckdb

    start = time.perf_counter()
    con = duckdb.connect(db, read_only=True)
    df = con.execute(_select_qis(f", {ANONYPY_SENSITIVE}")).df()
    con.close()
    load = time.perf_counter() - start
    # Preserver(df, qi, s).anonymize_k_anonymity(k) is these two steps; timed apart.
    start = time.perf_counter()
    parts = anonypy.Mondrian(df, QI_COLUMNS, ANONYPY_SENSITIVE).partition(k)
    partition = time.perf_counter() - start
    start = time.perf_counter()
    published = anonypy.anonymize(df, parts, QI_COLUMNS, ANONYPY_SENSITIVE)
    publish = time.perf_counter() - start
    return {"load_s": load, "partition_s": partition, "publish_s": publish, "s": partition + publish,
            "partitions": len(parts), "k_achieved": min(len(p) for p in parts),
            "published_rows": len(published)}  # fmt: skip


# ----------------------------------------------------------------------------- parent
def measure(n: int, args: Any, rec: harness.Recorder) -> None:
    db = Path(args.dir) / f"agrawal_{n}.duckdb"
    start = time.perf_counter()
    write_duckdb(db, n, table=TABLE)  # no-op when the file already holds this table
    prepare = time.perf_counter() - start
    params = {"rows": n, "k": args.k, "memory_rows": args.memory_rows, "duckdb_memory_limit": args.duckdb_memory_limit}
    scan = harness.duckdb_scan_seconds(db, TABLE, QI_COLUMNS, args.repeat)
    rec.record("scan", {"rows": n, "repeat": args.repeat}, scan, metrics={"prepare_s": prepare})
    seconds: dict[str, float | None] = {}
    for kind in KINDS:
        if kind in args.skip or (kind == "anonypy" and n > args.anonypy_rows):
            continue
        why = harness.missing("anonypy", "anonypy==0.2.1") if kind == "anonypy" else None
        if why:
            print(f"# {why}; the anonypy comparison is skipped", file=sys.stderr, flush=True)
            rec.record(kind, {"rows": n, "k": args.k}, error=why)
            continue
        print(f"# N={n:,}: running {kind} ...", file=sys.stderr, flush=True)
        kwargs: dict[str, Any] = {"db": str(db), "k": args.k}
        if kind == "sqlanon":
            kwargs |= {"memory_rows": args.memory_rows, "memory_limit": args.duckdb_memory_limit}
        timeout = min(filter(None, (args.timeout, args.anonypy_timeout))) if kind == "anonypy" else args.timeout
        out = harness.run_child(__file__, f"child_{kind}", kwargs, timeout)
        seconds[kind] = out.get("s")
        ratios = {"per_scan": harness.ratio(out.get("s"), scan, 1)}
        if kind == "sqlanon":
            ratios["per_numpy"] = harness.ratio(out.get("s"), seconds.get("numpy"))
        if kind == "anonypy":
            ratios["per_sqlanon"] = harness.ratio(out.get("s"), seconds.get("sqlanon"), 1)
        details = {key: out.pop(key) for key in ("timings", "process_s", "close_s", "import_s") if key in out}
        metrics = {key: v for key, v in out.items() if key not in ("s", "error")}
        rec.record(kind, params if kind == "sqlanon" else {"rows": n, "k": args.k}, out.get("s"),
                   ratios, metrics, details, out.get("error"))  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    p = harness.arguments(__doc__, rows=[1_000_000, 10_000_000], quick={"rows": [20_000]}, timeout=True)
    p.add_argument("--k", type=int, default=100)
    p.add_argument("--anonypy-rows", type=int, default=1_000_000, help="largest N for anonypy")
    p.add_argument("--anonypy-timeout", type=float, default=900.0, help="seconds; a slower anonypy run is killed")
    p.add_argument("--memory-rows", type=int, default=None, help="passed to sqlanon.anonymize")
    p.add_argument("--duckdb-memory-limit", default=None,
                   help="SET memory_limit for sqlanon's connection, e.g. 2GB (default: DuckDB's)")
    p.add_argument("--skip", nargs="*", default=[], choices=KINDS)
    args = p.parse_args(argv)
    Path(args.dir).mkdir(parents=True, exist_ok=True)
    rec = harness.Recorder.start(__file__, args, ["anonypy"])
    for n in args.rows:
        measure(n, args, rec)
    print()
    harness.print_table(rec.records, COLUMNS)
    for r in rec.records:
        if r["details"].get("timings"):
            print(f"N={r['params']['rows']:,} {r['name']} timings: {r['details']['timings']}")


if __name__ == "__main__":
    main()
