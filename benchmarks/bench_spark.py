"""Spark benchmark (issue 15): the same anonymize() on Spark in local mode and on DuckDB, in one
run, both from the same Parquet files.

    python benchmarks/bench_spark.py --rows 1000000 10000000 30000000 [--k 100] [--dir /tmp/sqlanon-bench]
        [--masters 'local[2]' 'local[1]'] [--criteria median infogain] [--memory-rows N [--strategy sample]]
        [--shuffle-partitions 8] [--driver-memory 8g] [--timeout S]
    python benchmarks/bench_spark.py --quick           # 20,000 rows, local[2] only, median
    python benchmarks/bench_spark.py --cup /work/data/cup --masters 'local[2]'   # the CUP table (63,441 rows)

Needs PySpark and Java (``pip install pyspark``); the script says so and stops when either is missing.

The Agrawal table (``agrawal.py``: the nine integer QIs, the C2 label, ...) of N rows (each
``--rows``, smallest first) is written
once as Parquet, ``<dir>/agrawal_<N>_rg<R>.parquet/part-*.parquet`` (one file per 1M-row block in
row groups of ``R`` = ``--row-group`` rows, so Spark can split a file between cores; with a
first BIGINT column ``id``, the row number, used as the key; reused when present), and loaded,
outside every measurement, into

* DuckDB: the on-disk file ``<dir>/agrawal_<N>_parquet.duckdb`` (``CREATE TABLE agrawal AS
  SELECT * FROM read_parquet(...)``; reused when it already holds the table);
* Spark:  in each child, a fresh ``SparkSession`` (``--masters``; ``spark.ui.enabled=false``,
  ``spark.driver.memory`` set before the JVM starts -- in local mode the executors are threads
  of the driver JVM --, ``spark.sql.shuffle.partitions``, Arrow enabled, a warehouse directory
  of its own under ``<dir>/spark-warehouse``, deleted afterwards), then ``CREATE TABLE agrawal
  USING parquet LOCATION '<the Parquet directory>'`` and a ``count(*)``. Spark's catalog holds no
  keys, so ``key="id"`` is what gives a live view; DuckDB gets the same ``key="id"``.

Per criterion (``median``: no target; ``infogain``: ``target="c2"``) and engine, one child
process (the harness's ``run_child``) runs ``sqlanon.anonymize(con,
"agrawal", qid=QI_COLUMNS, k=k, output=sqlanon.Output(view="agrawal_anon", replace=True, key="id"))`` and reports:

* start-up apart from the run: Spark's session (JVM) start, the table's registration and the
  check of the executors' Python (``probe_s``: :func:`sqlanon.engine.spark_env.check_executors`,
  one job per Spark application, the release then finds it done);
* ``s``: the wall time of anonymize(); ``release.statements``; ``release.timings`` (validate,
  encode, partition_sql, partition_memory -- the in-memory finish, on Spark the executors'
  ``groupBy(b).applyInArrow`` with its reads and writes --, publish_verify) and the statements of
  each of those phases; on Spark ``jobs``: the Spark jobs of the release (a job group), and
  ``floors``: its seconds over Spark's own scan-and-write of the source (a ``CREATE TABLE ...
  USING parquet AS SELECT *``, the fastest of one before and one after the run);
* each SQL level's seconds, statements and open partitions (the ``progress`` callback; DuckDB also
  reports its in-memory levels, Spark's run on the executors and report nothing);
* ``driver_s``: seconds inside the engine's calls (every statement timed, outermost call only);
* on Spark the batches of the in-memory finish (rows per batch; each batch is a task of its own,
  :func:`sqlanon.engine.spark_tasks.hash_labels`), the rows of the busiest core when the tasks
  start in order on the first free core (``busiest_core_rows``: the finish's critical path) and
  the tasks of the stages of its jobs (Spark's status tracker);
* rows/s per core: N / s / cores (the ``local[n]`` of the master; DuckDB's ``threads``);
* memory: a sampler thread in the child reads ``/proc`` of the child's process tree every second:
  ``self_mib`` (the Python child's ``VmHWM``), ``jvm_mib`` (the JVM's), ``workers_mib`` (sum of
  the ``VmHWM`` of Spark's Python workers) and ``tree_mib`` (the largest sum of ``VmRSS`` over the
  tree at one sample). ``rss_mib`` (the harness's: the Python child's own ``VmHWM``) is kept too;
* on Spark, measured after the run on the warm session, the latency of a trivial statement
  (median of 3 of a tiny ``CREATE TABLE ... USING parquet AS``, a tiny fetch, a ``DROP``).

After each criterion the rules relations (``agrawal_anon_rules``, ordered by region; NULL and NaN
as None, numbers as floats) of DuckDB and of every Spark master are compared row by row.

Records (``results/bench_spark.jsonl``): one per configuration and size (name: the engine's
label; ratio ``per_duckdb``: its time over DuckDB's in the same run). Prints a table, whether the
rules are identical, the ratios Spark/DuckDB per criterion, each run's levels and phases, the
slowest calls, and two tables of the issue's targets (issue 51), from this run's measurements only:

* **scaling**: per criterion and master, each N's seconds, floors and microseconds per row, and
  its time per row over the smallest N's (target: within 1.2x from 1M to 10M to 30M rows);
* **cores**: per criterion and N, the narrowest master's time over the widest's, end to end and
  for the executor finish (``partition_memory``; target ``local[1]`` / ``local[2]`` >= 1.7), with
  the finish's batches.

(The 100M-row, 64-core extrapolation this script printed before was removed: it costed Rothko-T's
SQL levels and a ``groupBy(b)`` placement of batches that Spark's releases no longer run.)
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import duckdb  # noqa: E402
import numpy as np  # noqa: E402

import harness  # noqa: E402  (puts the checkout first on sys.path)
from agrawal import QI_COLUMNS, write_parquet  # noqa: E402
from harness import Column  # noqa: E402

TABLE = "agrawal"
VIEW = "agrawal_anon"
KEY = "id"
SEED = 0
CRITERIA: dict[str, dict[str, Any]] = {"median": {}, "infogain": {"target": "c2"}, "regression": {"target": "r7"}}
#: ``--cup DIR``: the held-out CUP table (``DIR/cup.csv``, 63,441 rows, never committed: see its
#: PROVENANCE.md) instead of Agrawal: its QIs (ZIP with ARX's hierarchy), and per criterion the
#: target -- InfoGain's class label is ``MINRAMNT`` as text (58 labels; CUP has no text column
#: beside its QIs), Regression's the numeric ``RAMNTALL``.
CUP_QID = ["ZIP", "AGE", "GENDER", "STATE", "INCOME"]
CUP_HIERARCHIES = {"ZIP": "cup_hierarchy_ZIP.csv"}
CUP_CRITERIA: dict[str, dict[str, Any]] = {"median": {}, "infogain": {"target": "MINRAMNT_CLASS"},
                                           "regression": {"target": "RAMNTALL"}}
#: The Spark job group of a release (its jobs are counted).
RELEASE_JOBS = "sqlanon-bench-release"
#: The Spark job group of the in-memory finish (its stages' tasks are counted).
MAP_GROUPS = "sqlanon-bench-map-groups"


# ----------------------------------------------------------------------------- paths and loading
def parquet_dir(directory: str, n: int, row_group: int | None = None) -> Path:
    return Path(directory) / (f"agrawal_{n}.parquet" if not row_group else f"agrawal_{n}_rg{row_group}.parquet")


#: Rows per Parquet row group of the Spark runs' tables. Spark splits a file's reads only between
#: row groups: with pyarrow's default (one row group per 1M-row file) every pass over a 1M-row
#: table -- the floor's too -- was one task on one core whatever the master, so ``local[2]``
#: could not beat ``local[1]`` there. 131,072 rows (about 5 MB): eight per file.
ROW_GROUP = 131_072


def cup_parquet(directory: str, cup: str) -> tuple[Path, int]:
    """The CUP table (``cup/cup.csv``) as ``<directory>/cup.parquet/part-00000.parquet``, with a
    first BIGINT column ``id`` (the row number, the key), ``ZIP`` as five-digit text (the
    hierarchy's leaves) and ``MINRAMNT_CLASS`` (``MINRAMNT`` as text, InfoGain's class label);
    and its rows."""
    import pandas as pd

    frame = pd.read_csv(Path(cup) / "cup.csv", sep=";")
    frame.insert(0, KEY, np.arange(len(frame), dtype=np.int64))
    frame["MINRAMNT_CLASS"] = frame["MINRAMNT"].astype(str)
    frame["ZIP"] = [f"{z:05d}" for z in frame["ZIP"]]  # as ARX's hierarchy spells them: five digits
    for c in frame.columns:  # plain object strings: Spark and DuckDB read them as VARCHAR alike
        if not pd.api.types.is_numeric_dtype(frame[c]):
            frame[c] = frame[c].astype(object)
    out = Path(directory) / "cup.parquet"
    out.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(out / "part-00000.parquet", index=False)
    return out, len(frame)


def load_duckdb(directory: str, n: int, parquet: Path, stem: str | None = None) -> tuple[str, float]:
    """The on-disk DuckDB file holding the Parquet rows as table ``agrawal`` (a no-op when it
    already does: the table comment records n and the seed, the count makes sure); ``stem``
    names the file of another table (``cup``)."""
    stem = stem or f"agrawal_{n}"
    path = Path(directory) / f"{stem}_parquet.duckdb"
    tag = f"{stem} parquet n={n} seed={SEED}"
    start = time.perf_counter()
    con = duckdb.connect(str(path))
    try:
        found = con.execute("SELECT comment FROM duckdb_tables() WHERE schema_name = 'main' AND table_name = ?",
                            [TABLE]).fetchall()  # fmt: skip
        if not (found and found[0][0] == tag and con.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0] == n):
            files = str(parquet / "*.parquet").replace("'", "''")
            con.execute(f"CREATE OR REPLACE TABLE {TABLE} AS SELECT * FROM read_parquet('{files}')")
            con.execute(f"COMMENT ON TABLE {TABLE} IS '{tag}'")
            con.execute("CHECKPOINT")
    finally:
        con.close()  # the children open the file read-write: no other process may hold it
    return str(path), time.perf_counter() - start


def master_cores(master: str) -> int:
    m = re.fullmatch(r"local\[(\d+|\*)(?:,\s*\d+)?\]", master.strip())
    if master.strip() == "local":
        return 1
    if m is None:
        raise SystemExit(f"--masters: only local, local[n] and local[*] are benchmarked here, not {master!r}")
    return len(os.sched_getaffinity(0)) if m.group(1) == "*" else int(m.group(1))


def java_version() -> str:
    try:
        out = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    lines = (out.stderr or out.stdout).strip().splitlines()
    return lines[0] if lines else "unknown"


# ----------------------------------------------------------------------------- inside a child
def spark_session(master: str, warehouse: str, shuffle: int, driver_memory: str) -> Any:
    from pyspark.sql import SparkSession

    return (SparkSession.builder.master(master).appName("sqlanon-bench-spark")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.memory", driver_memory)  # before the JVM starts: it is the executors' too
            .config("spark.sql.shuffle.partitions", str(shuffle))
            .config("spark.sql.warehouse.dir", warehouse)
            .config("spark.sql.execution.arrow.pyspark.enabled", "true")
            .getOrCreate())  # fmt: skip


def timed_engine(con: Any) -> Any:
    """The connection's sqlanon engine with every call that reaches the database timed (``.log``:
    seconds, level, what; only the outermost call when one calls another) and the batches of
    :meth:`map_groups` recorded (``.groups``: rows per batch)."""
    from sqlanon.engine import engine_for

    base = type(engine_for(con))
    names = [m for m in ("_run", "_fetch_numpy", "_fetch_rows", "_arrow", "_save", "map_groups") if hasattr(base, m)]

    class Timed(base):  # type: ignore[misc, valid-type]
        def __init__(self, con: Any) -> None:
            super().__init__(con)
            self.log: list[tuple[float, int, str]] = []
            self.level = 0
            self.depth = 0
            self.groups: list[list[int]] = []

    def timed(name: str) -> Any:
        method = getattr(base, name)

        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            if name == "map_groups":  # (rows, groups, function, ...): the rows of every batch
                function = args[2]
                self.groups.append(np.bincount(function.batch_of, weights=function.open_.n,
                                               minlength=args[1]).astype(np.int64).tolist())  # fmt: skip
            spark = name == "map_groups" and hasattr(self.con, "sparkContext")
            if spark:  # its jobs, to count the tasks of their stages afterwards
                release_group = self.con.sparkContext.getLocalProperty("spark.jobGroup.id")
                self.con.sparkContext.setJobGroup(MAP_GROUPS, "sqlanon map_groups")
            self.depth += 1
            start = time.perf_counter()
            try:
                return method(self, *args, **kwargs)
            finally:
                self.depth -= 1
                if spark:  # the release's group again
                    self.con.sparkContext.setLocalProperty("spark.jobGroup.id", release_group)
                if not self.depth:
                    what = args[0] if args and isinstance(args[0], str) else name
                    self.log.append((time.perf_counter() - start, self.level, what))

        return wrapper

    for name in names:
        setattr(Timed, name, timed(name))
    return Timed(con)


class TreeMemory:
    """Samples ``/proc`` of this process and its descendants every ``every`` seconds: the peak
    (``VmHWM``) of each process and the largest sum of ``VmRSS`` at one sample."""

    def __init__(self, every: float = 1.0) -> None:
        self.every = every
        self.hwm: dict[int, tuple[str, int]] = {}  # pid -> (command, KiB)
        self.tree_peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> TreeMemory:
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            self.sample()

    @staticmethod
    def _tree() -> list[int]:
        children: dict[int, list[int]] = {}
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry.name}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
            children.setdefault(ppid, []).append(int(entry.name))
        out, todo = [], [os.getpid()]
        while todo:
            pid = todo.pop()
            out.append(pid)
            todo += children.get(pid, [])
        return out

    def sample(self) -> None:
        total = 0
        for pid in self._tree():
            try:
                status = Path(f"/proc/{pid}/status").read_text()
                command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
            if "VmHWM" not in fields:  # a zombie
                continue
            hwm, rss = (int(fields[f].split()[0]) for f in ("VmHWM", "VmRSS"))
            name = "java" if os.path.basename(command[0].decode(errors="replace")) == "java" else \
                "self" if pid == os.getpid() else fields.get("Name", "?").strip()
            self.hwm[pid] = (name, max(hwm, self.hwm.get(pid, ("", 0))[1]))
            total += rss
        self.tree_peak = max(self.tree_peak, total)

    def report(self) -> dict[str, Any]:
        def mib(kib: float) -> float:
            return round(kib / 1024, 1)

        java = [kib for name, kib in self.hwm.values() if name == "java"]
        workers = [kib for pid, (name, kib) in self.hwm.items() if name not in ("java", "self")]
        return {"self_mib": mib(self.hwm.get(os.getpid(), ("", 0))[1]),
                "jvm_mib": mib(max(java)) if java else None,
                "workers_mib": mib(sum(workers)) if workers else None, "worker_processes": len(workers),
                "tree_mib": mib(self.tree_peak)}  # fmt: skip


def rules_rows(engine: Any, rules: str) -> list[list[Any]]:
    """The rules relation ordered by region; NULL/NaN as None, numbers (not booleans) as floats."""
    from sqlglot import exp

    from sqlanon.engine import sqlgen as g

    frame = engine.fetch_frame(exp.select(exp.Star()).from_(g.table(rules)).order_by(g.col("region")))
    frame = frame.astype(object).where(frame.notna(), None)

    def plain(v: Any) -> Any:
        if isinstance(v, (bool, np.bool_)):
            return bool(v)
        if isinstance(v, (int, float, np.integer, np.floating)):
            return None if v != v else float(v)
        return v

    return [[plain(v) for v in row] for row in frame.values.tolist()]


def stage_tasks(spark: Any, group: str) -> list[int]:
    """Tasks of every stage of the jobs of a job group (in job order), as Spark's status store
    kept them."""
    tracker = spark.sparkContext.statusTracker()
    out = []
    for job in sorted(tracker.getJobIdsForGroup(group)):
        info = tracker.getJobInfo(job)
        for stage in sorted(info.stageIds) if info else ():
            stage_info = tracker.getStageInfo(stage)
            if stage_info is not None:
                out.append(stage_info.numTasks)
    return out


def in_order(tasks: list[int], cores: int) -> int:
    """Rows of the busiest core when ``tasks`` (rows each) run in their order, each on the first
    free core, as Spark's scheduler starts a stage's tasks: the finish's critical path."""
    load = [0] * cores
    for t in tasks:
        load[load.index(min(load))] += t
    return max(load)


def statement_latency(spark: Any, repeats: int = 3) -> dict[str, float]:
    """Median seconds of a tiny CTAS (a Parquet table of 10 rows), a tiny fetch, a DROP."""
    name = "__bench_latency"
    out: dict[str, list[float]] = {"ctas": [], "fetch": [], "drop": []}
    for _ in range(repeats):
        for step, run in (("ctas", lambda: spark.sql(f"CREATE TABLE {name} USING parquet AS SELECT id FROM range(10)")),
                          ("fetch", lambda: spark.sql(f"SELECT sum(id) AS s FROM {name}").toArrow()),
                          ("drop", lambda: spark.sql(f"DROP TABLE {name}"))):  # fmt: skip
            start = time.perf_counter()
            run()
            out[step].append(time.perf_counter() - start)
    return {f"latency_{step}_s": round(statistics.median(v), 4) for step, v in out.items()}


def scan_write_floor(spark: Any) -> float:
    """Seconds of Spark's own scan-and-write of the source: ``CREATE TABLE ... USING parquet AS
    SELECT * FROM agrawal`` in the same session (the table dropped after)."""
    name = "__bench_floor"
    start = time.perf_counter()
    spark.sql(f"CREATE TABLE {name} USING parquet AS SELECT * FROM {TABLE}")
    seconds = time.perf_counter() - start
    spark.sql(f"DROP TABLE {name}")
    return round(seconds, 3)


def one(engine_name: str, where: str, criterion: str, k: int, memory_rows: int | None, master: str,
        shuffle: int, driver_memory: str, warehouse: str, cup: str | None = None,
        strategy: str = "levels") -> dict[str, Any]:
    """Inside the child: start the engine, one anonymize(), what it cost and its rules (``rules``)."""
    warnings.filterwarnings("ignore", category=FutureWarning)  # PySpark on pandas 3
    with TreeMemory() as memory:
        out: dict[str, Any] = {}
        start = time.perf_counter()
        if engine_name == "duckdb":
            con = duckdb.connect(where)
            out["cores"] = int(con.execute("SELECT current_setting('threads')").fetchone()[0])
            out["start_s"] = round(time.perf_counter() - start, 3)
        else:
            con = spark_session(master, warehouse, shuffle, driver_memory)
            con.sparkContext.setLogLevel("ERROR")
            out["session_s"] = round(time.perf_counter() - start, 3)
            out["cores"] = con.sparkContext.defaultParallelism
            start = time.perf_counter()
            con.sql(f"CREATE TABLE {TABLE} USING parquet LOCATION '{where}'")
            out["table_rows"] = con.sql(f"SELECT count(*) FROM {TABLE}").collect()[0][0]
            out["register_s"] = round(time.perf_counter() - start, 3)
            from sqlanon.engine.spark_env import check_executors

            start = time.perf_counter()
            check_executors(con)  # once per Spark application, whatever it runs: not a release's
            out["probe_s"] = round(time.perf_counter() - start, 3)
            out["start_s"] = round(out["session_s"] + out["register_s"] + out["probe_s"], 3)
            floors = [scan_write_floor(con)]
        if engine_name == "spark":
            con.sparkContext.setJobGroup(RELEASE_JOBS, "the release")
        result_out = run_anonymize(con, engine_name, criterion, k, memory_rows, cup, strategy)
        if engine_name == "spark":
            con.sparkContext.setLocalProperty("spark.jobGroup.id", None)
            tracker = con.sparkContext.statusTracker()  # the release's jobs, its executor finish's too
            result_out["out"]["jobs"] = sum(len(tracker.getJobIdsForGroup(g)) for g in (RELEASE_JOBS, MAP_GROUPS))
        out.update(result_out.pop("out"))
        rules = result_out["rules"]
        if engine_name == "spark":
            out["shuffle_partitions"] = shuffle
            if out["groups"]:  # each batch is a task of its own (map_groups' hash_labels), run in order
                g = len(out["groups"])
                out["batch_task"] = list(range(g))
                out["largest_task_rows"] = int(max(out["groups"]))
                out["busy_tasks"] = g
                out["busiest_core_rows"] = in_order(out["groups"], out["cores"])
            out["finish_stage_tasks"] = stage_tasks(con, MAP_GROUPS)
            out.update(statement_latency(con))
            floors.append(scan_write_floor(con))
            out["floor_runs_s"] = floors
            out["floor_s"] = min(floors)
            out["floors"] = round(out["s"] / out["floor_s"], 2)
        memory.sample()
    out.update(memory.report())
    if engine_name == "spark":
        con.stop()
    else:
        start = time.perf_counter()
        con.close()  # DuckDB may checkpoint the persisted release: reported, not counted
        out["close_s"] = round(time.perf_counter() - start, 3)
    return out | {"rules": rules}


def run_anonymize(con: Any, engine_name: str, criterion: str, k: int, memory_rows: int | None,
                  cup: str | None = None, strategy: str = "levels") -> dict[str, Any]:
    import resource

    import sqlanon
    import sqlanon.pipeline

    engine = timed_engine(con)
    levels: list[dict[str, Any]] = []
    mark = {"t": 0.0, "statements": 0}
    phases: dict[str, int] = {}

    class Laps(sqlanon.pipeline.Laps):  # the statements of each phase of release.timings
        def __call__(self, step: str) -> None:
            super().__call__(step)
            phases[step] = engine.statements - sum(phases.values())
            if step == "encode":  # the partitioner starts now: its first level counts from here
                mark["statements"] = engine.statements

    def progress(p: Any) -> None:  # after each level; p.elapsed counts from the partitioner's start
        levels.append({"phase": p.phase, "level": p.level, "open": p.open_partitions, "finished": p.rows_finished,
                       "s": round(p.elapsed - mark["t"], 4), "statements": engine.statements - mark["statements"]})
        mark["t"], mark["statements"] = p.elapsed, engine.statements
        engine.level = p.level

    sqlanon.pipeline.Laps = Laps  # type: ignore[misc]
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    qid, criteria = (CUP_QID, CUP_CRITERIA) if cup else (QI_COLUMNS, CRITERIA)
    hierarchies = {q: str(Path(cup) / f) for q, f in CUP_HIERARCHIES.items()} if cup else None
    release = sqlanon.anonymize(engine, TABLE, qid=qid, k=k, progress=progress, hierarchies=hierarchies,
                                output=sqlanon.Output(view=VIEW, replace=True, key=KEY),
                                **({} if memory_rows is None else {"algorithm": sqlanon.Mondrian(
                                    strategy=sqlanon.Sample(memory_rows=memory_rows) if strategy == "sample"
                                    else sqlanon.Levels(memory_rows))}),
                                **criteria[criterion])  # fmt: skip
    seconds = time.perf_counter() - start
    log = list(engine.log)
    rules = rules_rows(engine, release.rules)
    sql = [lv for lv in levels if lv["phase"] == "sql"]
    mem = [lv for lv in levels if lv["phase"] == "memory"]
    slowest = sorted(log, key=lambda x: x[0], reverse=True)[:5]
    out = {
        "s": seconds, "statements": release.statements, "timings": dict(release.timings),
        "phase_statements": phases, "partitions": release.partitions, "k_achieved": release.k_achieved,
        "rows": release.rows, "strategy": release.outcome.strategy, "scans": release.outcome.scans,
        "writes": release.outcome.writes,
        "rss_before_mib": round(rss_before / 1024, 1),
        "sql_levels": len(sql), "sql_level_s": [lv["s"] for lv in sql],
        "sql_level_statements": [lv["statements"] for lv in sql], "sql_level_open": [lv["open"] for lv in sql],
        "rows_finished_sql": sql[-1]["finished"] if sql else 0,
        "memory_levels": len(mem), "memory_level_s": [lv["s"] for lv in mem],
        "driver_s": sum(t for t, _, _ in log), "driver_calls": len(log),
        "slowest": [{"s": round(t, 3), "level": lv, "sql": s[:300]} for t, lv, s in slowest],
    }  # fmt: skip
    out["groups"] = engine.groups[-1] if engine.groups else []
    out.update(task_summary(getattr(engine, "task_times", [])))
    return {"out": out, "rules": rules}


def task_summary(tasks: list[Any]) -> dict[str, Any]:
    """What the executor finish's tasks (:class:`sqlanon.engine.spark_tasks.TaskTime`, one per
    batch) spent in Python: ``finish_tasks`` (per task: group, worker process, rows, start
    relative to the first, seconds converting the Arrow input, finishing, building the output),
    ``finish_python_s`` (sum of the tasks' seconds in Python), ``finish_span_s`` (first start to
    last end) and ``finish_overlap`` (their ratio: how many tasks' Python ran at once on average;
    at most the cores), ``finish_workers`` (distinct Python worker processes)."""
    if not tasks:
        return {}
    first = min(t.start for t in tasks)
    ends = [t.start + t.convert_s + t.finish_s + t.out_s for t in tasks]
    busy = sum(t.convert_s + t.finish_s + t.out_s for t in tasks)
    span = max(ends) - first
    return {"finish_tasks": [{"group": t.group, "worker": t.worker, "rows": t.rows, "at_s": round(t.start - first, 2),
                              "convert_s": round(t.convert_s, 3), "finish_s": round(t.finish_s, 3),
                              "out_s": round(t.out_s, 3)} for t in sorted(tasks, key=lambda t: t.start)],
            "finish_python_s": round(busy, 2), "finish_span_s": round(span, 2),
            "finish_overlap": round(busy / span, 2) if span > 0 else None,
            "finish_workers": len({t.worker for t in tasks})}


def run_one(engine: str, where: str, criterion: str, args: argparse.Namespace, master: str | None,
            memory_rows: int | None) -> tuple[dict[str, Any], list[list[Any]] | None]:
    """One configuration in a fresh interpreter; its results and rules, or an error."""
    scratch = None
    if engine == "spark":  # a warehouse of the child's own: the release's managed tables land there
        root = Path(args.dir) / "spark-warehouse"
        root.mkdir(parents=True, exist_ok=True)
        scratch = tempfile.mkdtemp(prefix=f"{criterion}-", dir=root)

    try:
        out = harness.run_child(__file__, "one", {
            "engine_name": engine, "where": where, "criterion": criterion, "k": args.k, "memory_rows": memory_rows,
            "master": master, "shuffle": args.shuffle_partitions, "driver_memory": args.driver_memory,
            "warehouse": scratch, "cup": args.cup, "strategy": args.strategy}, args.timeout)  # fmt: skip
        return out, out.pop("rules", None)
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


# ----------------------------------------------------------------------------- report
COLUMNS = [
    Column("N", "n", ","), Column("engine", "label"), Column("criterion", "criterion"),
    Column("mem rows", "memory_rows_run", ","), Column("cores", "cores"), Column("start s", "start_s", ".1f"),
    Column("anon s", "s", ".2f"), Column("rows/s/core", "rows_per_s_core", ",.0f"), Column("stmts", "statements", ","),
    Column("driver s", "driver_s", ".2f"), Column("validate", "validate_s", ".2f"), Column("encode", "encode_s", ".2f"),
    Column("sql lv", "sql_levels"), Column("sql s", "partition_sql_s", ".2f"), Column("s/lv", "s_per_sql_level", ".2f"),
    Column("memory s", "partition_memory_s", ".2f"), Column("finish r/s/core", "finish_rows_per_s_core", ",.0f"),
    Column("publish", "publish_verify_s", ".2f"), Column("py MiB", "self_mib", ".0f"), Column("JVM MiB", "jvm_mib", ".0f"),
    Column("workers MiB", "workers_mib", ".0f"), Column("tree MiB", "tree_mib", ".0f"),
    Column("classes", "partitions", ","), Column("k min", "k_achieved"), Column("floor s", "floor_s", ".2f"),
    Column("floors", "floors", ".1f"), Column("jobs", "jobs"), Column("passes r/w", "passes"),
]  # fmt: skip
#: What a configuration's record keeps as metrics (scalars); the rest goes to its details.
METRICS = ("cores", "start_s", "rows_per_s_core", "statements", "driver_s", "sql_levels", "s_per_sql_level",
           "finish_rows_per_s_core", "validate_s", "encode_s", "partition_sql_s", "partition_memory_s",
           "publish_verify_s", "rss_mib", "self_mib", "jvm_mib", "workers_mib", "tree_mib", "partitions", "k_achieved",
           "rules_identical", "floor_s", "floors", "jobs", "scans", "writes", "finish_python_s", "finish_span_s",
           "finish_overlap")


def times(a: float | None, b: float | None) -> str:
    """``a / b`` as text ("1.23x"), ``-`` when either is missing."""
    r = harness.ratio(a, b)
    return "-" if r is None else f"{r:.2f}x"


def scaling_lines(by: dict[tuple[int, str], dict[str, dict[str, Any]]], sizes: list[int], labels: list[str],
                  criteria: list[str]) -> list[str]:
    """The scaling table (issue 51: time per row from 1M to 10M to 30M rows within 1.2x): per
    criterion and configuration, each size's seconds, floors and microseconds per row, and its
    time per row over the smallest size's. Only this run's measurements."""
    lines = ["scaling (time per row over the smallest N's; target <= 1.2x):",
             f"  {'criterion':<10} {'engine':<16} {'N':>12} {'anon s':>9} {'floor s':>8} {'floors':>7} "
             f"{'us/row':>8} {'per row / first':>15}"]
    for criterion in criteria:
        for label in labels:
            first = None
            for n in sizes:
                r = by.get((n, criterion), {}).get(label)
                if not r or not r.get("s"):
                    continue
                per_row = r["s"] / n
                first = per_row if first is None else first
                lines.append(f"  {criterion:<10} {label:<16} {n:>12,} {r['s']:>9.1f} {r.get('floor_s') or 0:>8.2f} "
                             f"{r.get('floors') or 0:>7.1f} {per_row * 1e6:>8.2f} {per_row / first:>14.2f}x")
    return lines


def cores_lines(by: dict[tuple[int, str], dict[str, dict[str, Any]]], sizes: list[int], narrow: str, wide: str,
                criteria: list[str], ideal: float) -> list[str]:
    """The cores table (issue 51: executor finish ``local[1]`` / ``local[2]`` >= 1.7): per
    criterion and size, the narrow master's seconds over the wide one's, end to end, for the
    executor finish (``partition_memory``) and for the rest, with the finish's batches (rows) on
    the wide master. Only this run's measurements."""
    lines = [f"cores: spark {narrow} / spark {wide} (ideal {ideal:.0f}x; target for the finish >= 1.7x):",
             f"  {'criterion':<10} {'N':>12} {'anon':>7} {'finish':>7} {'finish s':>17} {'other':>7}  finish batches"]
    for criterion in criteria:
        for n in sizes:
            runs = by.get((n, criterion), {})
            lo, hi = runs.get(f"spark {narrow}"), runs.get(f"spark {wide}")
            if not lo or not hi or not lo.get("s") or not hi.get("s"):
                continue
            f_lo, f_hi = lo.get("partition_memory_s"), hi.get("partition_memory_s")
            other = [r["s"] - (r.get("partition_memory_s") or 0.0) for r in (lo, hi)]
            lines.append(f"  {criterion:<10} {n:>12,} {times(lo['s'], hi['s']):>7} {times(f_lo, f_hi):>7} "
                         f"{(f'{f_lo:.1f}/{f_hi:.1f}' if f_lo and f_hi else '-'):>17} {times(*other):>7}  "
                         f"{hi.get('groups')}; Python s {lo.get('finish_python_s')}/{hi.get('finish_python_s')}, "
                         f"overlap {lo.get('finish_overlap')}/{hi.get('finish_overlap')}")
    return lines


def main(argv: list[str] | None = None) -> None:
    p = harness.arguments(__doc__, rows=[1_000_000], timeout=True, quick={
        "rows": [20_000], "masters": ["local[2]"], "criteria": ["median"]})  # fmt: skip
    p.add_argument("--k", type=int, default=100)
    p.add_argument("--masters", nargs="+", default=["local[2]", "local[1]"], help="Spark masters (local modes)")
    p.add_argument("--criteria", nargs="+", choices=sorted(CRITERIA), default=list(CRITERIA))
    p.add_argument("--memory-rows", default="default",
                   help="Mondrian(strategy=Levels(memory_rows)) (or Sample(memory_rows=...), --strategy); "
                        "'default' passes none (2,000,000; Spark's 'auto' then runs Rothko-S above it)")
    p.add_argument("--strategy", choices=["levels", "sample"], default="levels",
                   help="with --memory-rows: Rothko-T (Levels) or Rothko-S (Sample, its sample the memory_rows "
                        "budget: what Spark's 'auto' runs above memory_rows)")
    p.add_argument("--shuffle-partitions", type=int, default=8,
                   help="spark.sql.shuffle.partitions (Spark's 200 is for clusters; the same for every master)")
    p.add_argument("--driver-memory", default="8g", help="spark.driver.memory (local mode: the executors' too)")
    p.add_argument("--skip-duckdb", action="store_true", help="Spark only (no ratios, no rule comparison)")
    p.add_argument("--row-group", type=int, default=ROW_GROUP,
                   help=f"rows per Parquet row group of the Agrawal files (default {ROW_GROUP:,}; 0: pyarrow's, one "
                        f"per 1M-row file, which Spark reads with one task per file)")
    p.add_argument("--cup", metavar="DIR", help="the CUP table (DIR/cup.csv and its ARX hierarchies; never "
                   "committed) instead of Agrawal: its QIs ZIP (hierarchy), AGE, GENDER, STATE, INCOME")
    args = p.parse_args(argv)
    memory_rows = None if args.memory_rows == "default" else int(args.memory_rows)
    harness.require("pyspark", "pyspark", "the Spark engine runs in PySpark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise SystemExit("bench_spark.py: Java is not installed (Spark needs a JVM: e.g. apt-get install "
                         "default-jre-headless, or set JAVA_HOME)")

    from sqlanon.request.spec import DEFAULT_MEMORY_ROWS

    sizes = sorted(set(args.rows))
    if args.cup:
        cup_files, cup_rows = cup_parquet(args.dir, args.cup)
        sizes = [cup_rows]
    cores = {m: master_cores(m) for m in args.masters}
    memory = DEFAULT_MEMORY_ROWS if memory_rows is None else memory_rows
    widest = max(args.masters, key=lambda m: cores[m])
    narrowest = min(args.masters, key=lambda m: cores[m])
    Path(args.dir).mkdir(parents=True, exist_ok=True)
    recorder = harness.Recorder.start(__file__, args, ["pyspark", "pyarrow"])
    info = recorder.machine
    info["java"] = java_version()
    settings = {"spark.sql.shuffle.partitions": args.shuffle_partitions, "spark.driver.memory": args.driver_memory,
                "spark.ui.enabled": False, "spark.sql.execution.arrow.pyspark.enabled": True}
    print(f"# {info['java']}; " + ", ".join(f"{key}={v}" for key, v in settings.items()), flush=True)

    records: list[dict[str, Any]] = []
    by: dict[tuple[int, str], dict[str, dict[str, Any]]] = {}
    identical: list[str] = []
    for n in sizes:
        print(f"# N={n:,}: writing/reusing Parquet ...", file=sys.stderr, flush=True)
        start = time.perf_counter()
        parquet = cup_files if args.cup else write_parquet(parquet_dir(args.dir, n, args.row_group), n, seed=SEED,
                                                           id_column=KEY, row_group=args.row_group)
        parquet_s = time.perf_counter() - start
        duck_where, duck_load_s = (load_duckdb(args.dir, n, parquet, "cup" if args.cup else None)
                                   if not args.skip_duckdb else ("", 0.0))
        for criterion in args.criteria:
            rules: dict[str, Any] = {}
            done: list[dict[str, Any]] = []
            configs = ([("duckdb", None)] if not args.skip_duckdb else []) + [("spark", m) for m in args.masters]
            for engine, master in configs:
                label = "duckdb" if engine == "duckdb" else f"spark {master}"
                print(f"# N={n:,}: {label} {criterion} ...", file=sys.stderr, flush=True)
                where = duck_where if engine == "duckdb" else str(parquet)
                out, rules[label] = run_one(engine, where, criterion, args, master, memory_rows)
                timings = out.get("timings") or {}
                rec = {"n": n, "engine": engine, "master": master, "label": label, "criterion": criterion,
                       "memory_rows": "default" if memory_rows is None else memory_rows,
                       "memory_rows_run": memory, "parquet_s": round(parquet_s, 2),
                       **({"duckdb_load_s": round(duck_load_s, 2)} if engine == "duckdb" else {}),
                       **out, **{f"{step}_s": v for step, v in timings.items()}}  # fmt: skip
                rec.setdefault("rows", n)
                if rec.get("scans") is not None:
                    rec["passes"] = f"{rec['scans']}/{rec['writes']}"
                if rec.get("s"):
                    rec["rows_per_s_core"] = round(n / rec["s"] / rec["cores"], 1)
                    rows_mem = n - rec.get("rows_finished_sql", 0)
                    if timings.get("partition_memory"):
                        rec["finish_rows_per_s_core"] = round(rows_mem / timings["partition_memory"] / rec["cores"], 1)
                levels = rec.get("sql_level_s") or []
                rec["s_per_sql_level"] = round(sum(levels) / len(levels), 3) if levels else None
                records.append(rec)
                done.append(rec)
                by.setdefault((n, criterion), {})[label] = rec
            if "duckdb" in rules:
                for label in rules:
                    if label == "duckdb":
                        continue
                    a, b = rules["duckdb"], rules[label]
                    verdict = ("yes" if a is not None and a == b else
                               "NOT COMPARED (a run failed)" if a is None or b is None else "NO")  # fmt: skip
                    extra = f" ({len(a)} rules)" if a is not None and b is not None else ""
                    if verdict == "NO":
                        diff = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
                        extra += f"; {len(a)} vs {len(b)} rules, first difference at row {diff}"
                    identical.append(f"N={n:,} {criterion}: rules of duckdb and {label} identical: {verdict}{extra}")
                    by[(n, criterion)][label]["rules_identical"] = None if a is None or b is None else a == b
            duck_s = by.get((n, criterion), {}).get("duckdb", {}).get("s")
            for rec in done:
                recorder.record(rec["label"], {
                    "rows": n, "engine": rec["engine"], "master": rec["master"], "criterion": criterion,
                    "k": args.k, "memory_rows": rec["memory_rows_run"], "key": KEY, "strategy": args.strategy,
                    "shuffle_partitions": args.shuffle_partitions, "driver_memory": args.driver_memory},
                    rec.get("s"), {"per_duckdb": None if rec["engine"] == "duckdb" else harness.ratio(rec.get("s"), duck_s)},
                    {m: rec.get(m) for m in METRICS}, {key: v for key, v in rec.items() if key not in METRICS},
                    rec.get("error"))  # fmt: skip

    print(f"N = {', '.join(f'{n:,}' for n in sizes)}, k = {args.k}, memory_rows = {args.memory_rows} "
          f"(strategy {args.strategy}), key = {KEY!r}; Parquet under {args.dir}; DuckDB: on-disk file loaded from it; "
          f"Spark: spark.sql.shuffle.partitions={args.shuffle_partitions} (small, for local mode, the same for every "
          f"master), spark.driver.memory={args.driver_memory}, Arrow on, UI off, in-memory catalog")
    harness.print_table(records, COLUMNS)
    print("\nstart s: DuckDB connect; Spark session (JVM) start + CREATE TABLE ... USING parquet + count(*), not in "
          "anon s. rows/s/core = N / anon s / cores. floors = anon s / floor s, Spark's own CTAS of the source as "
          "Parquet in the same session (the faster of one before and one after the run). py MiB: the Python child's "
          "VmHWM (the record's rss_mib, the harness's measure); JVM MiB: the JVM's VmHWM; workers MiB: sum of the "
          "VmHWM of Spark's Python workers; tree MiB: largest sum of VmRSS over the child's process tree (1 s samples).")
    print()
    for line in identical:
        print(line)
    if not args.skip_duckdb:
        print()
        for (n, criterion), runs in by.items():
            duck = runs.get("duckdb", {})
            print(f"N={n:,} {criterion}: " + "; ".join(
                f"spark {m} / duckdb: anon {times(runs.get(f'spark {m}', {}).get('s'), duck.get('s'))}"
                for m in args.masters))
    print()
    labels = [f"spark {m}" for m in args.masters] + ([] if args.skip_duckdb else ["duckdb"])
    for line in scaling_lines(by, sizes, labels, args.criteria):
        print(line)
    if narrowest != widest:
        print()
        for line in cores_lines(by, sizes, narrowest, widest, args.criteria, cores[widest] / cores[narrowest]):
            print(line)
    print()
    for r in records:
        head = f"N={r['n']:,} {r['label']} {r['criterion']}"
        if r.get("error"):
            print(f"{head}: {r['error']}")
            continue
        line = (f"{head}: SQL levels s {r['sql_level_s']} (statements {r['sql_level_statements']}, open "
                f"{r['sql_level_open']}); phases {r['timings']} statements {r['phase_statements']}")
        if r["engine"] == "spark":
            line += (f"; finish batches (rows) {r.get('groups')}, one task each (largest {r.get('largest_task_rows'):,} "
                     f"rows, busiest core {r.get('busiest_core_rows', 0):,} rows; tasks of the "
                     f"finish's stages {r.get('finish_stage_tasks')}); latency "
                     f"CTAS/fetch/DROP {r.get('latency_ctas_s')}/{r.get('latency_fetch_s')}/{r.get('latency_drop_s')} s"
                     if r.get("groups") else "")  # fmt: skip
            if r.get("finish_tasks"):
                line += (f"; the finish's Python: {r['finish_python_s']} s over a span of {r['finish_span_s']} s "
                         f"(overlap {r['finish_overlap']}x, {r['finish_workers']} worker processes; per task "
                         f"at/convert/finish/out s: " + ", ".join(
                             f"{t['at_s']}/{t['convert_s']}/{t['finish_s']}/{t['out_s']}" for t in r["finish_tasks"]) + ")")
        else:
            line += (f"; {r['memory_levels']} in-memory levels, {sum(r['memory_level_s']):.2f} s (the first "
                     f"{r['memory_level_s'][:1]} s includes the first batch's fetch); finish batches (rows) {r.get('groups')}")
        print(line)
    print("\nslowest calls:")
    for r in records:
        for s in (r.get("slowest") or [])[:3]:
            print(f"  N={r['n']:,} {r['label']} {r['criterion']}: {s['s']:.3f} s (level {s['level']}) {s['sql'][:160]}")


if __name__ == "__main__":
    main()
