"""Core benchmark: sqlanon.anonymize against a full scan, a tight numpy Mondrian and anonypy.

    python benchmarks/bench_core.py --rows 1000000 10000000 [--k 100] [--dir /tmp/sqlanon-bench]
        [--anonypy-rows 1000000] [--anonypy-timeout 900] [--memory-rows N] [--skip anonypy ...]

For every N, on the same Agrawal table in an on-disk DuckDB file (``<dir>/agrawal_<N>.duckdb``,
generated once and reused), in one run on one machine:

* scan     best of 3 wall times of ``SELECT sum(q) ... FROM agrawal`` over the nine QIs: one
           "scan-equivalent", the floor any in-database algorithm is measured against;
* sqlanon  ``sqlanon.anonymize(con, "agrawal", qid=QI_COLUMNS, k=k, view="agrawal_anon",
           replace=True)`` in a child process: wall time of the call and the child's peak RSS;
* numpy    ``reference_mondrian_fast`` (tests/reference_mondrian.py) in a child: load time
           (fetchnumpy of the nine columns) and partition time reported separately;
* anonypy  (N <= --anonypy-rows) anonypy 0.2.1's Mondrian in a child: ``Mondrian.partition``
           then ``anonymize`` -- exactly what ``Preserver.anonymize_k_anonymity`` runs -- with
           the nine QIs as numeric features and ``c2`` as the sensitive column it requires;
* ratios   sqlanon / scan, sqlanon / numpy partition time, anonypy (partition + publish) /
           sqlanon.

Each child runs alone (the parent holds no DuckDB connection meanwhile), so its peak RSS
(``ru_maxrss`` from ``os.wait4``) is its own, interpreter and imports included. Results are
printed as JSON lines (one per N, after a machine line) and as a table at the end.
"""

from __future__ import annotations

import sqlanon
import argparse
import importlib.metadata
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# Run from a checkout without installing: the library, the generator and the numpy oracle.
sys.path[:0] = [str(ROOT), str(HERE), str(ROOT / "tests")]

from agrawal import QI_COLUMNS, write_duckdb  # noqa: E402
from machine import machine, measure_child  # noqa: E402

TABLE = "agrawal"
ANONYPY_SENSITIVE = "c2"  # anonypy requires one; c2 (2 classes) keeps its output small
SELECT_QIS = "SELECT " + ", ".join(QI_COLUMNS) + f" FROM {TABLE}"


# ----------------------------------------------------------------------------- children
def child_sqlanon(db: str, k: int, memory_rows: int | None, memory_limit: str | None) -> dict[str, Any]:
    import sqlanon

    extra = {} if memory_rows is None else {"algorithm": sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows))}
    con = duckdb.connect(db)
    if memory_limit:  # DuckDB's own buffer limit: beyond it temp tables spill to disk
        con.execute("SET memory_limit = $limit", {"limit": memory_limit})
    start = time.perf_counter()
    release = sqlanon.anonymize(con, TABLE, qid=QI_COLUMNS, k=k,
                                output=sqlanon.Output(view="agrawal_anon", replace=True), **extra)
    seconds = time.perf_counter() - start
    start = time.perf_counter()
    con.close()  # may checkpoint what the release persisted: reported, not counted
    return {
        "s": seconds,
        "close_s": time.perf_counter() - start,
        "partitions": getattr(release, "partitions", None),
        "k_achieved": getattr(release, "k_achieved", None),
        "timings": getattr(release, "timings", None),
        "version": getattr(sqlanon, "__version__", None),
    }


def child_numpy(db: str, k: int) -> dict[str, Any]:
    from reference_mondrian import reference_mondrian_fast

    start = time.perf_counter()
    con = duckdb.connect(db, read_only=True)
    cols = con.execute(SELECT_QIS).fetchnumpy()
    con.close()
    X = np.column_stack([cols[c] for c in QI_COLUMNS])
    del cols
    load = time.perf_counter() - start
    start = time.perf_counter()
    labels = reference_mondrian_fast(X, k)
    partition = time.perf_counter() - start
    sizes = np.bincount(labels)
    return {"load_s": load, "partition_s": partition, "partitions": len(sizes),
            "k_achieved": int(sizes.min()), "dtype": str(X.dtype)}  # fmt: skip


def child_anonypy(db: str, k: int) -> dict[str, Any]:
    import anonypy

    start = time.perf_counter()
    con = duckdb.connect(db, read_only=True)
    df = con.execute(SELECT_QIS.replace(" FROM", f", {ANONYPY_SENSITIVE} FROM")).df()
    con.close()
    load = time.perf_counter() - start
    # Preserver(df, qi, s).anonymize_k_anonymity(k) is these two steps; timed apart.
    start = time.perf_counter()
    parts = anonypy.Mondrian(df, QI_COLUMNS, ANONYPY_SENSITIVE).partition(k)
    partition = time.perf_counter() - start
    start = time.perf_counter()
    published = anonypy.anonymize(df, parts, QI_COLUMNS, ANONYPY_SENSITIVE)
    publish = time.perf_counter() - start
    return {"load_s": load, "partition_s": partition, "publish_s": publish,
            "s": partition + publish, "partitions": len(parts),
            "k_achieved": min(len(p) for p in parts), "published_rows": len(published),
            "version": importlib.metadata.version("anonypy")}  # fmt: skip


CHILDREN = {"sqlanon": child_sqlanon, "numpy": child_numpy, "anonypy": child_anonypy}


def run_child(kind: str, db: Path, k: int, memory_rows: int | None,
              timeout: float | None = None, memory_limit: str | None = None) -> dict[str, Any]:  # fmt: skip
    """Run one measurement in a fresh interpreter; add its peak RSS (MiB) and any error."""
    fd, result = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    cmd = [sys.executable, __file__, "--child", kind, "--db", str(db), "--k", str(k),
           "--result", result]  # fmt: skip
    if memory_rows is not None:
        cmd += ["--memory-rows", str(memory_rows)]
    if memory_limit:
        cmd += ["--duckdb-memory-limit", memory_limit]
    returncode, rss, timed_out, seconds = measure_child(cmd, timeout)
    out: dict[str, Any] = {"rss_mib": rss, "process_s": seconds}
    try:
        if timed_out:
            out["error"] = f"timed out after {timeout:.0f} s"
        elif returncode != 0:
            out["error"] = f"child exited with {returncode}"
        else:
            out.update(json.loads(Path(result).read_text()))
        out = {key: round(v, 4) if isinstance(v, float) else v for key, v in out.items()}
    finally:
        os.unlink(result)
    return out


# ----------------------------------------------------------------------------- parent
def scan_seconds(db: Path, repeats: int = 3) -> float:
    """Best wall time of one full scan summing all nine QI columns."""
    sql = "SELECT " + ", ".join(f"sum({c})" for c in QI_COLUMNS) + f" FROM {TABLE}"
    con = duckdb.connect(str(db), read_only=True)
    try:
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            con.execute(sql).fetchall()
            best = min(best, time.perf_counter() - start)
        return best
    finally:
        con.close()


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a is not None and b else None


def measure(n: int, args: argparse.Namespace) -> dict[str, Any]:
    db = Path(args.dir) / f"agrawal_{n}.duckdb"
    start = time.perf_counter()
    write_duckdb(db, n, table=TABLE)  # no-op when the file already holds this table
    rec: dict[str, Any] = {"n": n, "k": args.k, "memory_rows": args.memory_rows,
                           "duckdb_memory_limit": args.duckdb_memory_limit,
                           "prepare_s": round(time.perf_counter() - start, 2),
                           "scan_s": round(scan_seconds(db), 4)}  # fmt: skip
    for kind in ("sqlanon", "numpy", "anonypy"):
        if kind in args.skip or (kind == "anonypy" and n > args.anonypy_rows):
            continue
        timeout = args.anonypy_timeout if kind == "anonypy" else None
        print(f"# N={n:,}: running {kind} ...", file=sys.stderr, flush=True)
        limit = args.duckdb_memory_limit if kind == "sqlanon" else None
        for key, value in run_child(kind, db, args.k, args.memory_rows, timeout, limit).items():
            rec[f"{kind}_{key}"] = value
    rec["sqlanon_per_scan"] = ratio(rec.get("sqlanon_s"), rec["scan_s"])
    rec["sqlanon_per_numpy"] = ratio(rec.get("sqlanon_s"), rec.get("numpy_partition_s"))
    rec["anonypy_per_sqlanon"] = ratio(rec.get("anonypy_s"), rec.get("sqlanon_s"))
    return rec


def print_table(records: list[dict[str, Any]]) -> None:
    cols = [  # (heading, key, format)
        ("N", "n", "{:,}"), ("scan s", "scan_s", "{:.3f}"),
        ("sqlanon s", "sqlanon_s", "{:.2f}"), ("sqlanon MiB", "sqlanon_rss_mib", "{:.0f}"),
        ("numpy load s", "numpy_load_s", "{:.2f}"), ("numpy s", "numpy_partition_s", "{:.2f}"),
        ("numpy MiB", "numpy_rss_mib", "{:.0f}"), ("anonypy s", "anonypy_s", "{:.1f}"),
        ("sqlanon/scan", "sqlanon_per_scan", "{:.1f}"),
        ("sqlanon/numpy", "sqlanon_per_numpy", "{:.2f}"),
        ("anonypy/sqlanon", "anonypy_per_sqlanon", "{:.1f}"),
        ("partitions sqlanon", "sqlanon_partitions", "{:,}"),
        ("numpy", "numpy_partitions", "{:,}"), ("anonypy", "anonypy_partitions", "{:,}"),
    ]  # fmt: skip
    cells = [[h for h, _, _ in cols]]
    for rec in records:
        cells.append([fmt.format(rec[key]) if rec.get(key) is not None else "-"
                      for _, key, fmt in cols])  # fmt: skip
    widths = [max(len(row[i]) for row in cells) for i in range(len(cols))]
    for row in cells:
        print("  ".join(c.rjust(w) for c, w in zip(row, widths)))
    for rec in records:
        for kind in ("sqlanon", "numpy", "anonypy"):
            if rec.get(f"{kind}_error"):
                print(f"N={rec['n']:,} {kind}: {rec[f'{kind}_error']}")
        if rec.get("sqlanon_timings"):
            print(f"N={rec['n']:,} sqlanon timings: {rec['sqlanon_timings']}")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    p.add_argument("--k", type=int, default=100)
    p.add_argument("--dir", default="/tmp/sqlanon-bench", help="where the DuckDB files live")
    p.add_argument("--anonypy-rows", type=int, default=1_000_000, help="largest N for anonypy")
    p.add_argument("--anonypy-timeout", type=float, default=900.0, help="seconds")
    p.add_argument("--memory-rows", type=int, default=None, help="passed to sqlanon.anonymize")
    p.add_argument("--duckdb-memory-limit", default=None,
                   help="SET memory_limit for sqlanon's connection, e.g. 2GB (default: DuckDB's)")
    p.add_argument("--skip", nargs="*", default=[], choices=sorted(CHILDREN))
    p.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    p.add_argument("--db", help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.child:  # inside a measurement process
        extra = (args.memory_rows, args.duckdb_memory_limit) if args.child == "sqlanon" else ()
        out = CHILDREN[args.child](args.db, args.k, *extra)
        Path(args.result).write_text(json.dumps(out, default=str))
        return

    Path(args.dir).mkdir(parents=True, exist_ok=True)
    info = machine("anonypy")
    print(json.dumps({"machine": info}), flush=True)
    records = []
    for n in args.rows:
        records.append(measure(n, args))
        print(json.dumps(records[-1], default=str), flush=True)
    print(f"\nmachine: {info['nproc']} cores ({info['cpu']}), {info['memory_gib']} GiB; "
          f"duckdb {info['duckdb']}, numpy {info['numpy']}, pandas {info['pandas']}, "
          f"anonypy {info['anonypy']}, python {info['python']}; k = {args.k}")  # fmt: skip
    print_table(records)


if __name__ == "__main__":
    main()
