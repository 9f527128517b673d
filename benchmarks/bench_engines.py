"""Engine benchmark: the same anonymize() on DuckDB and on PostgreSQL, in one run.

    python benchmarks/bench_engines.py --rows 1000000 [--k 100] [--postgres URL]
        [--memory-rows default 0] [--dir /tmp/sqlanon-bench] [--engines duckdb postgres]

The Agrawal table (``agrawal.py``, the nine integer QIs of the other benchmarks) of N rows is
loaded once per engine, outside every measurement:

* DuckDB     the on-disk file ``<dir>/agrawal_<N>.duckdb`` (``agrawal.write_duckdb``, shared
             with ``bench_core.py``; reused when it already holds the table);
* PostgreSQL a database of its own (``--database``, default ``sqlanon_bench``) created on the
             server of ``--postgres`` (default ``$SQLANON_POSTGRES_URL``), loaded by ``COPY ...
             FROM STDIN`` (the engine's ``create_from_frame``, then one COPY per 1M-row block),
             then ``ANALYZE``; the database is dropped at the end (``--keep-database`` keeps it).

Then, per engine, one **scan-equivalent**: the median of 3 warm runs of ``SELECT sum(salary),
..., sum(loan) FROM agrawal`` (after one unmeasured run). And per engine, criterion (``median``:
no target; ``infogain``: ``target="c2"``, the Agrawal C2 label) and ``--memory-rows`` value, one
child process (this script with ``--one``, so that each peak RSS is its own) runs
``sqlanon.anonymize(con, "agrawal", qid=QI_COLUMNS, k=k, view="agrawal_anon", replace=True)``
and reports: wall time, SQL statements (``release.statements``), the seconds and statements of
every SQL level and of the in-memory finish (from the ``progress`` callback), the seconds spent
inside the driver (every statement timed) and the slowest statements, and the child's peak RSS
(``ru_maxrss`` from ``os.wait4``: the Python process only -- PostgreSQL's server works in other
processes, whose memory is not counted). Both engines' rules relations are compared row by row
for each criterion; the run prints whether they are identical.

Prints a machine line (with the PostgreSQL server's version and memory settings), one JSON line
per configuration, then a table.
"""

from __future__ import annotations

import sqlanon
import argparse
import json
import os
import pickle
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(HERE)]  # run from a checkout without installing

from agrawal import BLOCK, QI_COLUMNS, _rows, write_duckdb  # noqa: E402
from machine import machine, run_child  # noqa: E402

TABLE = "agrawal"
VIEW = "agrawal_anon"
CRITERIA: dict[str, dict[str, Any]] = {"median": {}, "infogain": {"target": "c2"}}
ENGINES = ("duckdb", "postgres")
SCAN = "SELECT " + ", ".join(f"sum({c})" for c in QI_COLUMNS) + f" FROM {TABLE}"
PG_SETTINGS = ("shared_buffers", "work_mem", "temp_buffers", "max_parallel_workers_per_gather", "jit")


# ----------------------------------------------------------------------------- connections
def pg_url(base: str, database: str) -> str:
    from psycopg.conninfo import make_conninfo

    return make_conninfo(base, dbname=database)


def connect(engine: str, where: str) -> Any:
    if engine == "duckdb":
        return duckdb.connect(where)
    import psycopg

    return psycopg.connect(where)


def timed_engine(con: Any) -> Any:
    """The connection's sqlanon engine, with every statement timed (``.log``: seconds, level,
    SQL) and the current level set by the progress callback. anonymize() accepts an engine in
    place of the connection and then counts its statements on it."""
    from sqlanon.engine import engine_for

    base = type(engine_for(con))

    class Timed(base):  # type: ignore[misc, valid-type]
        def __init__(self, con: Any) -> None:
            super().__init__(con)
            self.log: list[tuple[float, int, str]] = []
            self.level = 0

        def _timed(self, method: Any, sql: str) -> Any:
            start = time.perf_counter()
            try:
                return method(sql)
            finally:
                self.log.append((time.perf_counter() - start, self.level, sql))

        def _run(self, sql: str) -> None:
            return self._timed(super()._run, sql)

        def _fetch_numpy(self, sql: str) -> Any:
            return self._timed(super()._fetch_numpy, sql)

        def _fetch_rows(self, sql: str) -> Any:
            return self._timed(super()._fetch_rows, sql)

    return Timed(con)


def scan_seconds(con: Any, repeats: int = 3) -> float:
    """Median of ``repeats`` warm full scans summing the nine QIs (one unmeasured run first)."""
    def once() -> float:
        start = time.perf_counter()
        con.execute(SCAN).fetchall()
        return time.perf_counter() - start

    once()
    return statistics.median(once() for _ in range(repeats))


def rules_rows(engine: Any, rules: str) -> list[list[Any]]:
    """The rules relation, ordered, in the normalization of tests/test_engines.py."""
    frame = engine.fetch_frame(f'SELECT * FROM "{rules}" ORDER BY 1')
    frame = frame.astype(object).where(frame.notna(), None)
    return [[float(v) if isinstance(v, (float, np.floating)) else v for v in row] for row in frame.values.tolist()]


# ----------------------------------------------------------------------------- one configuration
def one(engine_name: str, where: str, criterion: str, k: int, memory_rows: int | None,
        result: str, rules_out: str) -> None:
    """Inside the child: one anonymize() and what it cost."""
    import resource

    import sqlanon

    con = connect(engine_name, where)
    engine = timed_engine(con)
    levels: list[dict[str, Any]] = []
    mark = {"t": 0.0, "statements": 0}

    def progress(p: Any) -> None:  # after each level; p.elapsed counts from the partitioner's start
        levels.append({"phase": p.phase, "level": p.level, "open": p.open_partitions,
                       "s": round(p.elapsed - mark["t"], 4),
                       "statements": engine.statements - mark["statements"]})  # fmt: skip
        mark["t"], mark["statements"] = p.elapsed, engine.statements
        engine.level = p.level

    # The first level counts from the partitioner's start (after encoding), statements too.
    from sqlanon.mondrian import builder

    init = builder.Partitioner.__init__

    def started(self: Any, *a: Any, **kw: Any) -> None:
        init(self, *a, **kw)
        mark["statements"] = engine.statements

    builder.Partitioner.__init__ = started  # type: ignore[method-assign]
    extra = {} if memory_rows is None else {"algorithm": sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows))}
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    release = sqlanon.anonymize(engine, TABLE, qid=QI_COLUMNS, k=k, progress=progress,
                                output=sqlanon.Output(view=VIEW, replace=True), **extra, **CRITERIA[criterion])  # fmt: skip
    seconds = time.perf_counter() - start
    log = list(engine.log)
    rules = rules_rows(engine, release.rules)
    start = time.perf_counter()
    con.close()  # DuckDB may checkpoint the persisted release: reported, not counted
    close_s = time.perf_counter() - start
    sql = [lv for lv in levels if lv["phase"] == "sql"]
    memory = [lv for lv in levels if lv["phase"] == "memory"]
    slowest = sorted(log, reverse=True)[:5]
    out = {
        "s": seconds, "close_s": close_s, "statements": release.statements,
        "timings": dict(release.timings), "partitions": release.partitions,
        "k_achieved": release.k_achieved, "rss_before_mib": round(rss_before / 1024, 1),
        "sql_levels": len(sql), "sql_level_s": [lv["s"] for lv in sql],
        "sql_level_statements": [lv["statements"] for lv in sql],
        "sql_level_open": [lv["open"] for lv in sql],
        "memory_levels": len(memory), "memory_statements": sum(lv["statements"] for lv in memory),
        "driver_s": sum(t for t, _, _ in log), "driver_calls": len(log),
        "slowest": [{"s": round(t, 3), "level": lv, "sql": s[:300]} for t, lv, s in slowest],
    }  # fmt: skip
    Path(result).write_text(json.dumps(out, default=str))
    Path(rules_out).write_bytes(pickle.dumps(rules))


def run_one(engine: str, where: str, criterion: str, k: int, memory_rows: int | None,
            timeout: float | None) -> tuple[dict[str, Any], list[list[Any]] | None]:
    """One configuration in a fresh interpreter; its peak RSS (MiB) and rules, or an error."""

    def command(result: str, rules_out: str) -> list[str]:
        return [sys.executable, __file__, "--one", engine, criterion, "--where", where, "--k", str(k),
                "--result", result, "--rules-out", rules_out,
                "--memory-rows", "default" if memory_rows is None else str(memory_rows)]  # fmt: skip

    return run_child(command, timeout)


# ----------------------------------------------------------------------------- loading
def load_postgres(admin_url: str, database: str, n: int) -> tuple[str, float, float]:
    """Create ``database`` (dropped first if it exists) and load n Agrawal rows by COPY, then
    ANALYZE. Returns the database's URL, the load seconds and the scan-equivalent."""
    import psycopg

    from sqlanon.engine import engine_for

    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{database}"')
        admin.execute(f'CREATE DATABASE "{database}"')
    url = pg_url(admin_url, database)
    start = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as con:
        engine = engine_for(con)
        for first in range(0, n, BLOCK):
            frame = _rows(first, min(n, first + BLOCK), seed=0)
            if first == 0:  # CREATE TABLE with the frame's types, then COPY
                engine.create_from_frame(TABLE, frame)
                continue
            text = frame.to_csv(index=False, header=False, float_format="%.17g", lineterminator="\n")
            with con.cursor() as cursor, cursor.copy(f"COPY {TABLE} FROM STDIN WITH (FORMAT csv)") as copy:
                copy.write(text)
        con.execute(f"ANALYZE {TABLE}")
        load_s = time.perf_counter() - start
        scan = scan_seconds(con)
    return url, load_s, scan


def load_duckdb(directory: str, n: int) -> tuple[str, float, float]:
    path = Path(directory) / f"agrawal_{n}.duckdb"
    start = time.perf_counter()
    write_duckdb(path, n, table=TABLE)  # a no-op when the file already holds this table
    load_s = time.perf_counter() - start
    con = duckdb.connect(str(path), read_only=True)
    try:
        scan = scan_seconds(con)
    finally:
        con.close()  # the children open the file read-write: no other process may hold it
    return str(path), load_s, scan


def pg_server(admin_url: str) -> dict[str, Any]:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as con:
        out = {"postgres": con.execute("SHOW server_version").fetchone()[0]}
        for name in PG_SETTINGS:
            out[name] = con.execute(f"SHOW {name}").fetchone()[0]
    return out


# ----------------------------------------------------------------------------- report
def fmt(v: Any, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def print_table(records: list[dict[str, Any]]) -> None:
    cols = [  # (heading, key, format)
        ("N", "n", ","), ("engine", "engine", ""), ("criterion", "criterion", ""),
        ("mem rows", "memory_rows", ""), ("load s", "load_s", ".1f"), ("scan s", "scan_s", ".3f"),
        ("anon s", "s", ".2f"), ("/scan", "per_scan", ".0f"), ("stmts", "statements", ","),
        ("driver s", "driver_s", ".2f"), ("encode", "encode_s", ".2f"), ("sql lv", "sql_levels", ""),
        ("sql s", "partition_sql_s", ".2f"), ("s/lv", "s_per_sql_level", ".2f"),
        ("memory s", "partition_memory_s", ".2f"), ("publish", "publish_verify_s", ".2f"),
        ("MiB", "rss_mib", ".0f"), ("classes", "partitions", ","), ("k min", "k_achieved", ""),
    ]  # fmt: skip
    cells = [[h for h, _, _ in cols]] + [[fmt(r.get(key), f) for _, key, f in cols] for r in records]
    widths = [max(len(row[i]) for row in cells) for i in range(len(cols))]
    for row in cells:
        print("  ".join(c.rjust(w) for c, w in zip(row, widths)))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, nargs="+", default=[1_000_000])
    p.add_argument("--k", type=int, default=100)
    p.add_argument("--memory-rows", nargs="+", default=["default", "0"],
                   help="anonymize(memory_rows=...) values to run; 'default' passes none (2,000,000), "
                        "0 keeps every level in SQL")
    p.add_argument("--engines", nargs="+", choices=ENGINES, default=list(ENGINES))
    p.add_argument("--criteria", nargs="+", choices=sorted(CRITERIA), default=list(CRITERIA))
    p.add_argument("--dir", default="/tmp/sqlanon-bench", help="where the DuckDB files live")
    p.add_argument("--postgres", default=os.environ.get("SQLANON_POSTGRES_URL"),
                   help="server URL (default $SQLANON_POSTGRES_URL); the benchmark creates its own database")
    p.add_argument("--database", default="sqlanon_bench", help="PostgreSQL database to create (and drop)")
    p.add_argument("--keep-database", action="store_true")
    p.add_argument("--timeout", type=float, default=None, help="seconds per configuration")
    p.add_argument("--one", nargs=2, metavar=("ENGINE", "CRITERION"), help=argparse.SUPPRESS)
    p.add_argument("--where", help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    p.add_argument("--rules-out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.one:  # inside a measurement process
        memory_rows = None if args.memory_rows[0] == "default" else int(args.memory_rows[0])
        one(args.one[0], args.where, args.one[1], args.k, memory_rows, args.result, args.rules_out)
        return

    engines = [e for e in args.engines if e != "postgres" or args.postgres]
    if "postgres" in args.engines and not args.postgres:
        print("# no --postgres and no $SQLANON_POSTGRES_URL: PostgreSQL skipped", file=sys.stderr)
    memory_values = [None if m == "default" else int(m) for m in args.memory_rows]
    Path(args.dir).mkdir(parents=True, exist_ok=True)
    info = machine("psycopg", "sqlanon")
    server = pg_server(args.postgres) if "postgres" in engines else {}
    print(json.dumps({"machine": info, "postgres_server": server}), flush=True)

    records: list[dict[str, Any]] = []
    identical: list[str] = []
    slow: list[str] = []
    try:
        for n in args.rows:
            where: dict[str, tuple[str, float, float]] = {}
            for engine in engines:
                print(f"# N={n:,}: loading {engine} ...", file=sys.stderr, flush=True)
                where[engine] = (load_duckdb(args.dir, n) if engine == "duckdb"
                                 else load_postgres(args.postgres, args.database, n))  # fmt: skip
            for memory_rows in memory_values:
                for criterion in args.criteria:
                    rules: dict[str, Any] = {}
                    for engine in engines:
                        print(f"# N={n:,}: {engine} {criterion} memory_rows={memory_rows} ...",
                              file=sys.stderr, flush=True)  # fmt: skip
                        out, rules[engine] = run_one(engine, where[engine][0], criterion, args.k,
                                                     memory_rows, args.timeout)  # fmt: skip
                        timings = out.get("timings") or {}
                        rec = {"n": n, "engine": engine, "criterion": criterion,
                               "memory_rows": "default" if memory_rows is None else memory_rows,
                               "load_s": round(where[engine][1], 2), "scan_s": round(where[engine][2], 4),
                               **out, **{f"{step}_s": v for step, v in timings.items()}}  # fmt: skip
                        rec["per_scan"] = round(rec["s"] / rec["scan_s"], 1) if rec.get("s") else None
                        levels = rec.get("sql_level_s") or []
                        rec["s_per_sql_level"] = round(sum(levels) / len(levels), 3) if levels else None
                        records.append(rec)
                        print(json.dumps(rec, default=str), flush=True)
                        slow += [f"N={n:,} {engine} {criterion} memory_rows={rec['memory_rows']}: "
                                 f"{s['s']:.3f} s (level {s['level']}) {s['sql'][:160]}"
                                 for s in (rec.get("slowest") or [])[:3]]  # fmt: skip
                    if len(rules) == 2:
                        a, b = rules.values()
                        verdict = ("identical" if a is not None and a == b else
                                   "NOT COMPARED (a run failed)" if a is None or b is None else "DIFFERENT")
                        identical.append(f"N={n:,} {criterion} memory_rows="
                                         f"{'default' if memory_rows is None else memory_rows}: rules relations "
                                         f"{verdict} on DuckDB and PostgreSQL"
                                         + (f" ({len(a)} rules)" if a is not None and b is not None else ""))  # fmt: skip
    finally:
        if "postgres" in engines and not args.keep_database:
            import psycopg

            with psycopg.connect(args.postgres, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{args.database}"')

    print(f"\nmachine: {info['nproc']} cores ({info['cpu']}), {info['memory_gib']} GiB; python {info['python']}, "
          f"duckdb {info['duckdb']}, psycopg {info['psycopg']}, numpy {info['numpy']}, pandas {info['pandas']}; "
          + (f"PostgreSQL {server['postgres']} (" + ", ".join(f"{s}={server[s]}" for s in PG_SETTINGS) + ")"
             if server else "no PostgreSQL")
          + f"; k = {args.k}; DuckDB: on-disk file in {args.dir}")  # fmt: skip
    print_table(records)
    print()
    for line in identical:
        print(line)
    for r in records:
        head = f"N={r['n']:,} {r['engine']} {r['criterion']} memory_rows={r['memory_rows']}"
        if r.get("error"):
            print(f"{head}: {r['error']}")
            continue
        print(f"{head}: SQL levels s {r['sql_level_s']} (statements {r['sql_level_statements']}); "
              f"in-memory finish {r.get('partition_memory_s')} s in {r['memory_levels']} levels "
              f"({r['memory_statements']} statements)")  # fmt: skip
    if slow:
        print("\nslowest statements:")
        for line in slow:
            print("  " + line)


if __name__ == "__main__":
    main()
