"""The published Spark Mondrian (mosaicrown/mondrian, Unibg Seclab) and sqlanon on the same local
Spark and the same Agrawal table, in one run (issue 51).

    python benchmarks/bench_peer_mosaicrown.py --peer /tmp/mosaicrown --python /tmp/venv/bin/python
        [--rows 1000000 10000000] [--k 100] [--master 'local[2]'] [--fragments 2]
        [--peer-timeout 1800] [--timeout S] [--dir /tmp/sqlanon-bench]

``--peer`` is a checkout of https://github.com/mosaicrown/mondrian (none of its code is in this
repository); ``--python`` an interpreter with pandas 2 for it (it assigns strings into integer
columns, which pandas 3 refuses; its requirements pin pandas 2.1.4): ``python -m venv
--system-site-packages DIR && DIR/bin/pip install "pandas<3" treelib binpacking``.

Per ``--rows`` N, the Agrawal table of ``bench_spark.py`` (``<dir>/agrawal_<N>.parquet``: a key
``id`` and the nine integer QIs, among other columns) is anonymized with k = ``--k`` twice, each
in a process of its own on the same Spark master (``--master``, ``spark.driver.memory=8g``, the
UI and progress bars off):

* **sqlanon**: a fresh ``SparkSession``, ``CREATE TABLE agrawal USING parquet LOCATION ...``, then
  ``sqlanon.anonymize(spark, "agrawal", qid=QI_COLUMNS, k=k, output=sqlanon.Output(view=...,
  key="id"))`` (Median Mondrian, the library's defaults); then ``sqlanon.metrics`` (classes,
  smallest class, NCP per QI, GCP) and ``sqlanon.verify`` of the view over the nine QIs, both in
  Spark SQL.
* **mosaicrown**: its ``distributed/anonymize.py`` as it is, with a job file written here: the key
  ``id`` an identifier (dropped), the nine QIs, ``K = k``, no l-diversity, its ``mondrian``
  fragmentation (Mondrian cuts on the driver; its default ``quantile`` writes into a read-only
  array under numpy 2) into ``--fragments`` fragments, its default column score (``span``), and
  none of its own measures (they would re-read its output inside its timer; ``--peer-measures``
  asks for its discernability penalty and GCP). Killed (its whole process group, the JVM
  included) after ``--peer-timeout`` seconds.

Its fragments are cut on the driver and each is anonymized by its own pandas Mondrian on an
executor, so its result is not sequential Mondrian: classes never cross a fragment border.
Its output (one row per source row, each QI a string: ``"v"`` or ``"[lo-hi]"``, the class's
observed bounds) is loaded into DuckDB and measured by our own SQL: ``sqlanon.verify`` over the
nine QIs with that k (rows with the same published values form one class), the classes (distinct
published QI tuples), and NCP / GCP by ``sqlanon.metrics``'s formula for an ordered QI:
``(hi - lo) / (U - L)`` per cell, ``L`` and ``U`` the source column's smallest and largest value,
NCP the mean over rows, GCP the mean of the NCPs.

Both times run from the session's start to a written result (the JVM start included: mosaicrown's
own timer starts before its session, so ours is ``start_s`` + ``anonymize()``); rows/s per core
is N / seconds / the master's cores. Records (``results/bench_peer_mosaicrown.jsonl``): per N one
``sqlanon`` and one ``mosaicrown`` (ratio ``per_sqlanon``: its seconds over ours), or the reason one
failed or timed out; each with ``load_max``, the largest 1-minute load average sampled while it ran.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import duckdb  # noqa: E402

import harness  # noqa: E402  (puts the checkout first on sys.path)
import sqlanon  # noqa: E402
from agrawal import QI_COLUMNS, write_parquet  # noqa: E402

TABLE, VIEW, KEY = "agrawal", "agrawal_anon", "id"


def master_cores(master: str) -> int:
    """The cores of a ``local[n]`` master (``local[*]``: this machine's)."""
    found = re.fullmatch(r"local\[(\d+|\*)\]", master)
    if not found:
        raise SystemExit(f"--master {master}: a local[n] master (this benchmark compares on one machine)")
    return (os.cpu_count() or 1) if found.group(1) == "*" else int(found.group(1))


class LoadSampler:
    """The largest 1-minute load average seen while the block runs (sampled every ``every``
    seconds): on a shared machine the load when a record is written says little about the
    minutes before it."""

    def __init__(self, every: float = 5.0) -> None:
        self.every, self.peak = every, os.getloadavg()[0]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> LoadSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, os.getloadavg()[0])

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            self.peak = max(self.peak, os.getloadavg()[0])


# ----------------------------------------------------------------------------- sqlanon, in a child
def ours(where: str, k: int, master: str, driver_memory: str, warehouse: str) -> dict[str, Any]:
    """Inside the child: a fresh session, the table registered, one anonymize(), its metrics and
    verify(), all in Spark SQL."""
    import warnings

    from pyspark.sql import SparkSession

    warnings.filterwarnings("ignore", category=FutureWarning)  # PySpark on pandas 3
    start = time.perf_counter()
    spark = (SparkSession.builder.master(master).appName("sqlanon-bench-peer")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", driver_memory).config("spark.sql.warehouse.dir", warehouse)
             .config("spark.sql.execution.arrow.pyspark.enabled", "true").getOrCreate())  # fmt: skip
    spark.sparkContext.setLogLevel("ERROR")
    spark.sql(f"CREATE TABLE {TABLE} USING parquet LOCATION '{where}'")
    start_s = time.perf_counter() - start
    begin = time.perf_counter()
    release = sqlanon.anonymize(spark, TABLE, qid=QI_COLUMNS, k=k,
                                output=sqlanon.Output(view=VIEW, replace=True, key=KEY))
    anonymize_s = time.perf_counter() - begin
    begin = time.perf_counter()
    m = sqlanon.metrics(spark, release)
    v = sqlanon.verify(spark, release.view, qid=QI_COLUMNS, k=k)
    measure_s = time.perf_counter() - begin
    spark.stop()
    return {"start_s": round(start_s, 3), "anonymize_s": round(anonymize_s, 3), "measure_s": round(measure_s, 3),
            "rows": m.rows, "classes": m.classes, "smallest_class": m.k_achieved, "gcp": m.gcp,
            "ncp": dict(m.ncp), "verify_ok": bool(v.ok), "k_achieved": v.k_achieved,
            "statements": release.statements, "timings": dict(release.timings)}  # fmt: skip


# ----------------------------------------------------------------------------- the peer
def job_file(directory: Path, parquet: Path, out: Path, k: int, fragments: int, fragmentation: str,
             measures: bool) -> Path:
    """The peer's job description (its ``config/*.json`` format)."""
    job = {"input": str(parquet), "output": str(out), "fraction": 1, "id_columns": [KEY], "redact": False,
           "quasiid_columns": QI_COLUMNS, "sensitive_columns": [], "column_score": "span",
           "fragmentation": fragmentation, "fragments": fragments, "K": k,
           "measures": ["discernability_penalty", "global_certainty_penalty"] if measures else []}  # fmt: skip
    path = directory / f"mosaicrown_job_{out.stem}.json"
    path.write_text(json.dumps(job, indent=2))
    return path


def run_peer(peer: Path, job: Path, master: str, fragments: int, timeout: float | None,
             python: str, driver_memory: str) -> tuple[float, str, str | None]:
    """Wall seconds, output and error (``None`` when it succeeded) of the peer's ``anonymize.py`` on
    ``master``, run by ``python`` in a session of its own: a timeout kills the whole process group
    (the JVM it starts included)."""
    code = peer / "distributed"
    env = dict(os.environ, PYTHONPATH=str(code / "mondrian"), PYSPARK_PYTHON=python, PYSPARK_DRIVER_PYTHON=python,
               PYSPARK_SUBMIT_ARGS=f"--master {master} --driver-memory {driver_memory} --conf spark.ui.enabled=false "
                                   f"--conf spark.ui.showConsoleProgress=false pyspark-shell")  # fmt: skip
    with tempfile.TemporaryFile("w+") as log:
        start = time.perf_counter()
        proc = subprocess.Popen([python, str(code / "anonymize.py"), str(job), str(fragments), "0", "0"],
                                cwd=code, env=env, stdout=log, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)  # fmt: skip
        error = None
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            error = f"timed out after {timeout:.0f} s"
        seconds = time.perf_counter() - start
        log.seek(0)
        text = log.read()
    if error is None and proc.returncode != 0:
        tail = [ln for ln in text.splitlines() if ln.strip()][-3:]
        error = f"exited with {proc.returncode}: {' | '.join(tail)}"[:400]
    return seconds, text, error


def peer_versions(peer: Path, python: str) -> dict[str, str | None]:
    """The peer's commit and its interpreter's pandas and Python versions."""
    def ask(*cmd: str) -> str | None:
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None

    return {"peer_commit": ask("git", "-C", str(peer), "rev-parse", "HEAD"),
            "peer_pandas": ask(python, "-c", "import pandas; print(pandas.__version__)"),
            "peer_python": ask(python, "-c", "import platform; print(platform.python_version())")}


def peer_sql(qi: str) -> tuple[str, str]:
    """The lower and upper bound of one of the peer's published cells: ``"v"`` (both ``v``) or
    ``"[lo-hi]"``; any other text fails the cast."""
    col = f'"{qi}"'
    bound = [f"CAST(CASE WHEN starts_with({col}, '[') THEN regexp_extract({col}, '^\\[(-?[0-9.]+)-(-?[0-9.]+)\\]$', {i}) "
             f"ELSE {col} END AS DOUBLE)" for i in (1, 2)]
    return bound[0], bound[1]


def check_output(out: Path, source: Path, k: int) -> dict[str, Any]:
    """The peer's output in DuckDB: rows, classes, the smallest, our verify(), NCP per QI and GCP."""
    con = duckdb.connect()
    try:
        files, src = (str(p / "*.parquet").replace("'", "''") for p in (out, source))
        con.execute(f"CREATE TABLE peer AS SELECT * FROM read_parquet('{files}')")
        qi = ", ".join(f'"{c}"' for c in QI_COLUMNS)
        rows, classes, smallest = con.execute(
            f"SELECT sum(n), count(*), min(n) FROM (SELECT count(*) AS n FROM peer GROUP BY {qi})").fetchone()
        v = sqlanon.verify(con, "peer", qid=QI_COLUMNS, k=k)
        spans = con.execute("SELECT " + ", ".join(f'max("{c}") - min("{c}")' for c in QI_COLUMNS)
                            + f" FROM read_parquet('{src}')").fetchone()  # fmt: skip
        losses = []
        for c, span in zip(QI_COLUMNS, spans, strict=True):
            lo, hi = peer_sql(c)
            losses.append(f"avg(({hi} - {lo}) / {float(span)})" if span else "0.0")
        ncp = dict(zip(QI_COLUMNS, con.execute("SELECT " + ", ".join(losses) + " FROM peer").fetchone(), strict=True))
        return {"rows": int(rows), "classes": int(classes), "smallest_class": int(smallest),
                "verify_ok": bool(v.ok), "k_achieved": v.k_achieved,
                "gcp": sum(ncp.values()) / len(ncp), "ncp": ncp}  # fmt: skip
    finally:
        con.close()


# ----------------------------------------------------------------------------- the run
def main(argv: list[str] | None = None) -> None:
    p = harness.arguments(__doc__, rows=[1_000_000], timeout=True, quick={"rows": [20_000]})
    p.add_argument("--peer", type=Path, required=True, help="a checkout of mosaicrown/mondrian")
    p.add_argument("--python", default=sys.executable,
                   help="the peer's interpreter (driver and executors), with pandas 2 (default: this one)")
    p.add_argument("--k", type=int, default=100)
    p.add_argument("--master", default="local[2]")
    p.add_argument("--driver-memory", default="8g", help="spark.driver.memory (local mode: the executors' too)")
    p.add_argument("--fragments", type=int, default=2, help="its WORKERS argument: fragments cut on the driver")
    p.add_argument("--fragmentation", choices=["quantile", "mondrian"], default="mondrian",
                   help="its fragmentation (its default 'quantile' writes into a read-only array under numpy 2 / "
                        "pandas 3 copy-on-write: quantile_buckets, bins[0] = -inf)")
    p.add_argument("--peer-timeout", type=float, default=1800.0, help="seconds before the peer is killed")
    p.add_argument("--peer-measures", action="store_true",
                   help="also its own discernability penalty and GCP (computed inside its timer)")
    p.add_argument("--skip", nargs="*", choices=["sqlanon", "mosaicrown"], default=[])
    args = p.parse_args(argv)
    if not (args.peer / "distributed" / "anonymize.py").is_file():
        raise SystemExit(f"--peer {args.peer}: no distributed/anonymize.py (a checkout of mosaicrown/mondrian?)")
    harness.require("pyspark", "pyspark", "both run on Spark")
    cores = master_cores(args.master)
    versions = peer_versions(args.peer, args.python)
    recorder = harness.Recorder.start(__file__, args, ["pyspark", "pyarrow"])
    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    for n in args.rows:
        parquet = write_parquet(directory / f"agrawal_{n}.parquet", n, seed=0, id_column=KEY)
        params = {"rows": n, "k": args.k, "master": args.master, "cores": cores}
        mine: float | None = None
        if "sqlanon" not in args.skip:
            root = directory / "spark-warehouse"
            root.mkdir(parents=True, exist_ok=True)
            scratch = tempfile.mkdtemp(prefix="peer-", dir=root)
            try:
                with LoadSampler() as load:
                    out = harness.run_child(__file__, "ours", {"where": str(parquet), "k": args.k,
                                                               "master": args.master, "driver_memory": args.driver_memory,
                                                               "warehouse": scratch}, args.timeout)  # fmt: skip
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
            error = out.pop("error", None)
            if error is None:
                mine = out["start_s"] + out["anonymize_s"]
            details = {key: out.pop(key) for key in ("ncp", "timings") if key in out}
            recorder.record("sqlanon", params, mine, error=error, details=details,
                            metrics={**out, "rows_per_s_core": None if mine is None else n / mine / cores,
                                     "load_max": load.peak})
        if "mosaicrown" in args.skip:
            continue
        out_dir = directory / f"mosaicrown_out_{n}_{args.k}.parquet"
        shutil.rmtree(out_dir, ignore_errors=True)
        job = job_file(directory, parquet, out_dir, args.k, args.fragments, args.fragmentation, args.peer_measures)
        with LoadSampler() as load:
            wall, text, error = run_peer(args.peer, job, args.master, args.fragments, args.peer_timeout, args.python,
                                         args.driver_memory)
        peer_params = {**params, "fragments": args.fragments, "fragmentation": args.fragmentation, **versions}
        if error is not None:
            recorder.record("mosaicrown", peer_params, None, error=error, metrics={"wall_s": wall, "load_max": load.peak},
                            details={"output_tail": text[-3000:]})
            continue
        own = re.search(r"--- ([0-9.]+) seconds ---", text)
        seconds = float(own.group(1)) if own else wall
        dp = re.search(r"Discernability Penalty = ([0-9.E+-]+)", text)
        gcp = re.search(r"Global Certainty Penalty = ([0-9.]+)", text)
        checked = check_output(out_dir, parquet, args.k)
        ncp = checked.pop("ncp")
        recorder.record("mosaicrown", peer_params, seconds, ratios={"per_sqlanon": harness.ratio(seconds, mine)},
                        metrics={"wall_s": wall, "rows_per_s_core": n / seconds / cores, "load_max": load.peak, **checked,
                                 "own_dp": float(dp.group(1)) if dp else None,
                                 "own_gcp": float(gcp.group(1)) if gcp else None},
                        details={"ncp": ncp})  # fmt: skip


if __name__ == "__main__":
    main()
