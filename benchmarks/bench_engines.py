"""Engine benchmark: the same anonymize() on DuckDB and on PostgreSQL, in one run.

    python benchmarks/bench_engines.py --rows 1000000 [--k 100] [--postgres URL]
        [--memory-rows default 0] [--dir /tmp/sqlanon-bench] [--engines duckdb postgres]
    python benchmarks/bench_engines.py --quick         # 20,000 rows

The Agrawal table (``agrawal.py``, the nine integer QIs of the other benchmarks) of N rows is
loaded once per engine, outside every measurement:

* DuckDB     the on-disk file ``<dir>/agrawal_<N>.duckdb`` (``agrawal.write_duckdb``, shared
             with ``bench_core.py``; reused when it already holds the table);
* PostgreSQL a database of its own (``--database``, default ``sqlanon_bench``) created on the
             server of ``--postgres`` (default ``$SQLANON_POSTGRES_URL``), loaded by ``COPY ...
             FROM STDIN`` (the engine's ``create_from_frame``, then one COPY per 1M-row block),
             then ``ANALYZE``; the database is dropped at the end (``--keep-database`` keeps it).

Then, per engine, one **scan-equivalent** (the harness's: the best of ``--repeat`` warm runs of
``SELECT sum(salary), ..., sum(loan) FROM agrawal`` after one unmeasured run; PostgreSQL may use
its parallel workers). And per engine, criterion (``median``: no target; ``infogain``:
``target="c2"``, the Agrawal C2 label) and ``--memory-rows`` value, one child process (the
harness's, so that each peak RSS is its own) runs
``sqlanon.anonymize(con, "agrawal", qid=QI_COLUMNS, k=k, output=sqlanon.Output(view="agrawal_anon", replace=True))``
and reports: wall time, SQL statements (``release.statements``), the seconds and statements of
every SQL level and of the in-memory finish (from the ``progress`` callback), the seconds spent
inside the driver (every statement timed) and the slowest statements, and the child's peak RSS
(the Python process only -- PostgreSQL's server works in other processes, whose memory is not
counted). Both engines' rules relations are compared row by row for each criterion; the
PostgreSQL record says whether they are identical (``rules_identical``).

Records: ``scan`` per engine and N (with the load seconds and, for PostgreSQL, the server's
version and settings), one record per configuration (ratio ``per_scan``: against that engine's
own scan), then a table, the SQL levels of every run and the slowest statements.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import duckdb  # noqa: E402
import numpy as np  # noqa: E402

import harness  # noqa: E402  (puts the checkout first on sys.path)
from agrawal import BLOCK, QI_COLUMNS, _rows, write_duckdb  # noqa: E402
from harness import Column  # noqa: E402

TABLE = "agrawal"
VIEW = "agrawal_anon"
CRITERIA: dict[str, dict[str, Any]] = {"median": {}, "infogain": {"target": "c2"}}
ENGINES = ("duckdb", "postgres")
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


def rules_rows(engine: Any, rules: str) -> list[list[Any]]:
    """The rules relation, ordered, in the normalization of tests/e2e/test_engines.py."""
    frame = engine.fetch_frame(f'SELECT * FROM "{rules}" ORDER BY 1')
    frame = frame.astype(object).where(frame.notna(), None)
    return [[float(v) if isinstance(v, (float, np.floating)) else v for v in row] for row in frame.values.tolist()]


# ----------------------------------------------------------------------------- one configuration
def one(engine_name: str, where: str, criterion: str, k: int, memory_rows: int | None) -> dict[str, Any]:
    """Inside the child: one anonymize(), what it cost, and its rules (``rules``)."""
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
    rss_before = harness.peak_rss_mib()
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
        "k_achieved": release.k_achieved, "rss_before_mib": rss_before,
        "sql_levels": len(sql), "sql_level_s": [lv["s"] for lv in sql],
        "sql_level_statements": [lv["statements"] for lv in sql],
        "sql_level_open": [lv["open"] for lv in sql],
        "memory_levels": len(memory), "memory_statements": sum(lv["statements"] for lv in memory),
        "driver_s": sum(t for t, _, _ in log), "driver_calls": len(log),
        "slowest": [{"s": round(t, 3), "level": lv, "sql": s[:300]} for t, lv, s in slowest], "rules": rules,
    }  # fmt: skip
    return out


def run_one(engine: str, where: str, criterion: str, k: int, memory_rows: int | None,
            timeout: float | None) -> tuple[dict[str, Any], list[list[Any]] | None]:
    """One configuration in a fresh interpreter: its results and rules, or an error and None."""
    out = harness.run_child(__file__, "one", {"engine_name": engine, "where": where, "criterion": criterion,
                                              "k": k, "memory_rows": memory_rows}, timeout)  # fmt: skip
    return out, out.pop("rules", None)


# ----------------------------------------------------------------------------- loading
def load_postgres(admin_url: str, database: str, n: int, repeat: int) -> tuple[str, float, float]:
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
        scan = harness.scan_seconds(lambda sql: con.execute(sql).fetchall(), TABLE, QI_COLUMNS, repeat, "postgres")
    return url, load_s, scan


def load_duckdb(directory: str, n: int, repeat: int) -> tuple[str, float, float]:
    path = Path(directory) / f"agrawal_{n}.duckdb"
    start = time.perf_counter()
    write_duckdb(path, n, table=TABLE)  # a no-op when the file already holds this table
    load_s = time.perf_counter() - start
    return str(path), load_s, harness.duckdb_scan_seconds(path, TABLE, QI_COLUMNS, repeat)


def pg_server(admin_url: str) -> dict[str, Any]:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as con:
        out = {"postgres": con.execute("SHOW server_version").fetchone()[0]}
        for name in PG_SETTINGS:
            out[name] = con.execute(f"SHOW {name}").fetchone()[0]
    return out


# ----------------------------------------------------------------------------- report
COLUMNS = [
    Column("N", "params.rows", ","), Column("engine", "params.engine"), Column("criterion", "params.criterion"),
    Column("mem rows", "params.memory_rows"), Column("load s", "details.load_s", ".1f"),
    Column("scan s", "details.scan_s", ".3f"), Column("anon s", "seconds", ".2f"), Column("/scan", "ratios.per_scan", ".0f"),
    Column("stmts", "metrics.statements", ","), Column("driver s", "metrics.driver_s", ".2f"),
    Column("encode", "metrics.encode_s", ".2f"), Column("sql lv", "metrics.sql_levels"),
    Column("sql s", "metrics.partition_sql_s", ".2f"), Column("s/lv", "metrics.s_per_sql_level", ".2f"),
    Column("memory s", "metrics.partition_memory_s", ".2f"), Column("publish", "metrics.publish_verify_s", ".2f"),
    Column("MiB", "metrics.rss_mib", ".0f"), Column("classes", "metrics.partitions", ","),
    Column("k min", "metrics.k_achieved"), Column("rules identical", "metrics.rules_identical"),
]  # fmt: skip
#: What a configuration's record shows as metrics (the table's columns); the rest goes to its details.
METRICS = ("statements", "driver_s", "sql_levels", "s_per_sql_level", "encode_s", "partition_sql_s",
           "partition_memory_s", "publish_verify_s", "rss_mib", "partitions", "k_achieved")


def main(argv: list[str] | None = None) -> None:
    p = harness.arguments(__doc__, rows=[1_000_000], quick={"rows": [20_000]}, timeout=True)
    p.add_argument("--k", type=int, default=100)
    p.add_argument("--memory-rows", nargs="+", default=["default", "0"],
                   help="Mondrian(strategy=Levels(memory_rows)) values to run; 'default' passes none (2,000,000), "
                        "0 keeps every level in SQL")
    p.add_argument("--engines", nargs="+", choices=ENGINES, default=list(ENGINES))
    p.add_argument("--criteria", nargs="+", choices=sorted(CRITERIA), default=list(CRITERIA))
    p.add_argument("--postgres", default=os.environ.get("SQLANON_POSTGRES_URL"),
                   help="server URL (default $SQLANON_POSTGRES_URL); the benchmark creates its own database")
    p.add_argument("--database", default="sqlanon_bench", help="PostgreSQL database to create (and drop)")
    p.add_argument("--keep-database", action="store_true")
    args = p.parse_args(argv)

    engines = list(args.engines)
    if "postgres" in engines:
        why = ("no --postgres and no $SQLANON_POSTGRES_URL" if not args.postgres else
               harness.missing("psycopg", "psycopg[binary]"))  # fmt: skip
        if why:
            print(f"# {why}: PostgreSQL skipped", file=sys.stderr)
            engines.remove("postgres")
    memory_values = [None if m == "default" else int(m) for m in args.memory_rows]
    Path(args.dir).mkdir(parents=True, exist_ok=True)
    rec = harness.Recorder.start(__file__, args, ["psycopg"])
    server = pg_server(args.postgres) if "postgres" in engines else {}
    if server:
        print("# PostgreSQL " + ", ".join(f"{s}={v}" for s, v in server.items()), flush=True)

    slow: list[str] = []
    try:
        for n in args.rows:
            where: dict[str, tuple[str, float, float]] = {}
            for engine in engines:
                print(f"# N={n:,}: loading {engine} ...", file=sys.stderr, flush=True)
                where[engine] = (load_duckdb(args.dir, n, args.repeat) if engine == "duckdb"
                                 else load_postgres(args.postgres, args.database, n, args.repeat))  # fmt: skip
                rec.record("scan", {"rows": n, "engine": engine, "repeat": args.repeat}, where[engine][2],
                           metrics={"load_s": where[engine][1]},
                           details={"server": server} if engine == "postgres" else None)  # fmt: skip
            for memory_rows in memory_values:
                for criterion in args.criteria:
                    rules: dict[str, Any] = {}
                    for engine in engines:
                        print(f"# N={n:,}: {engine} {criterion} memory_rows={memory_rows} ...",
                              file=sys.stderr, flush=True)  # fmt: skip
                        out, rules[engine] = run_one(engine, where[engine][0], criterion, args.k,
                                                     memory_rows, args.timeout)  # fmt: skip
                        out |= {f"{step}_s": v for step, v in (out.get("timings") or {}).items()}
                        out |= {"load_s": where[engine][1], "scan_s": where[engine][2]}
                        levels = out.get("sql_level_s") or []
                        out["s_per_sql_level"] = round(sum(levels) / len(levels), 3) if levels else None
                        if engine == "postgres" and "duckdb" in rules:
                            a, b = rules["duckdb"], rules["postgres"]
                            out["rules_identical"] = None if a is None or b is None else a == b
                            out["rules"] = None if a is None or b is None else len(a)
                        seconds = out.get("s")
                        rec.record(criterion, {"rows": n, "engine": engine, "criterion": criterion, "k": args.k,
                                               "memory_rows": "default" if memory_rows is None else memory_rows},
                                   seconds, {"per_scan": harness.ratio(seconds, where[engine][2], 1)},
                                   {m: out.get(m) for m in (*METRICS, "rules_identical", "rules") if m in out},
                                   {key: v for key, v in out.items() if key not in METRICS and key != "error"},
                                   out.get("error"))  # fmt: skip
                        slow += [f"N={n:,} {engine} {criterion} memory_rows={rec.records[-1]['params']['memory_rows']}: "
                                 f"{s['s']:.3f} s (level {s['level']}) {s['sql'][:160]}"
                                 for s in (out.get("slowest") or [])[:3]]  # fmt: skip
    finally:
        if "postgres" in engines and not args.keep_database:
            import psycopg

            with psycopg.connect(args.postgres, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{args.database}"')

    runs = [r for r in rec.records if r["name"] != "scan"]
    print(f"\nk = {args.k}; DuckDB: on-disk file in {args.dir}")
    harness.print_table(runs, COLUMNS)
    print()
    for r in runs:
        head = f"N={r['params']['rows']:,} {r['params']['engine']} {r['name']} memory_rows={r['params']['memory_rows']}"
        if r["error"]:
            print(f"{head}: {r['error']}")
            continue
        d, m = r["details"], r["metrics"]
        print(f"{head}: SQL levels s {d['sql_level_s']} (statements {d['sql_level_statements']}); "
              f"in-memory finish {m.get('partition_memory_s')} s in {d['memory_levels']} levels "
              f"({d['memory_statements']} statements)")  # fmt: skip
    if slow:
        print("\nslowest statements:")
        for line in slow:
            print("  " + line)


if __name__ == "__main__":
    main()
