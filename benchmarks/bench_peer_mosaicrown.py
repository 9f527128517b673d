"""The published Spark Mondrian (mosaicrown/mondrian, Unibg Seclab) on the Agrawal table, side by
side with sqlanon (issue 51).

    python benchmarks/bench_peer_mosaicrown.py --peer /tmp/mosaicrown [--rows 1000000] [--k 100]
        [--master 'local[2]'] [--fragments 2] [--dir /tmp/sqlanon-bench]

``--peer`` is a checkout of https://github.com/mosaicrown/mondrian (none of its code is in this
repository). Its ``distributed/anonymize.py`` runs as it is, in a child process, on the same local
Spark as ``bench_spark.py`` (``--master``, ``spark.driver.memory=8g``, the UI off), with a job
file written here: input the Agrawal Parquet directory of ``bench_spark.py``
(``<dir>/agrawal_<N>.parquet``; the key ``id`` an identifier, dropped (its ``redact`` fails under
pandas 3)), the nine integer QIs,
``K = k``, no l-diversity, its ``mondrian`` fragmentation (Mondrian cuts on the driver; its default
``quantile`` fails under numpy 2 / pandas 3) into ``--fragments`` fragments,
its default column score (``span``), and its discernability penalty and GCP measures; ``--python``
runs it in an environment of its own (it needs pandas 2: ``python -m venv --system-site-packages
DIR && DIR/bin/pip install "pandas<3" treelib binpacking``). Its output
(one row per source row, each QI a generalized string) is written as Parquet, loaded into DuckDB
and checked by our own SQL: ``sqlanon.verify`` over the nine QI columns with that k (rows with the
same published values form one class), and the classes counted (distinct published QI tuples).

Its fragments are cut on the driver (quantiles of one QI) and each is anonymized by its own Mondrian
on an executor, so its result is not sequential Mondrian: classes never cross a fragment border.

Records (``results/bench_peer_mosaicrown.jsonl``): one per run, named ``mosaicrown``, with the
wall time of its process (JVM start included, as its own timer counts from before the session),
its own reported time, the classes, the smallest class, whether verify passed, DP and GCP as it
prints them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import duckdb  # noqa: E402

import harness  # noqa: E402  (puts the checkout first on sys.path)
import sqlanon  # noqa: E402
from agrawal import QI_COLUMNS, write_parquet  # noqa: E402


def job_file(directory: Path, parquet: Path, out: Path, k: int, fragments: int, fragmentation: str) -> Path:
    """The peer's job description (its ``config/*.json`` format)."""
    job = {"input": str(parquet), "output": str(out), "fraction": 1, "id_columns": ["id"], "redact": False,
           "quasiid_columns": QI_COLUMNS, "sensitive_columns": [], "column_score": "span",
           "fragmentation": fragmentation, "fragments": fragments, "K": k,
           "measures": ["discernability_penalty", "global_certainty_penalty"]}
    path = directory / f"mosaicrown_job_{k}.json"
    path.write_text(json.dumps(job, indent=2))
    return path


def run_peer(peer: Path, job: Path, master: str, fragments: int, timeout: float | None,
             python: str) -> tuple[float, str]:
    """Wall seconds and output of the peer's ``anonymize.py`` on ``master``, run by ``python``."""
    code = peer / "distributed"
    env = dict(os.environ, PYTHONPATH=str(code / "mondrian"), PYSPARK_PYTHON=python,
               PYSPARK_SUBMIT_ARGS=f"--master {master} --driver-memory 8g --conf spark.ui.enabled=false "
                                   f"--conf spark.ui.showConsoleProgress=false pyspark-shell")
    start = time.perf_counter()
    done = subprocess.run([python, str(code / "anonymize.py"), str(job), str(fragments), "0", "0"],
                          cwd=code, env=env, capture_output=True, text=True, timeout=timeout)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"the peer failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return seconds, done.stdout


def check_output(out: Path, k: int) -> dict[str, object]:
    """The peer's output in DuckDB: classes, the smallest, and our verify()."""
    con = duckdb.connect()
    try:
        files = str(out / "*.parquet").replace("'", "''")
        con.execute(f"CREATE TABLE peer AS SELECT * FROM read_parquet('{files}')")
        qi = ", ".join(f'"{c}"' for c in QI_COLUMNS)
        rows, classes, smallest = con.execute(
            f"SELECT sum(n), count(*), min(n) FROM (SELECT count(*) AS n FROM peer GROUP BY {qi})").fetchone()
        v = sqlanon.verify(con, "peer", qid=QI_COLUMNS, k=k)
        return {"rows": int(rows), "classes": int(classes), "smallest_class": int(smallest), "verify_ok": bool(v.ok),
                "k_achieved": v.k_achieved}
    finally:
        con.close()


def main(argv: list[str] | None = None) -> None:
    p = harness.arguments(__doc__, rows=1_000_000, timeout=True, quick={"rows": 20_000})
    p.add_argument("--peer", type=Path, required=True, help="a checkout of mosaicrown/mondrian")
    p.add_argument("--k", type=int, default=100)
    p.add_argument("--master", default="local[2]")
    p.add_argument("--fragments", type=int, default=2, help="its WORKERS argument: fragments cut on the driver")
    p.add_argument("--fragmentation", choices=["quantile", "mondrian"], default="mondrian",
                   help="its fragmentation (its default 'quantile' writes into a read-only array under numpy 2 / "
                        "pandas 3 copy-on-write: quantile_buckets, bins[0] = -inf)")
    p.add_argument("--python", default=sys.executable,
                   help="the peer's interpreter (driver and executors): it assigns strings into integer columns, "
                        "which pandas 3 refuses, so a pandas 2 environment (its requirements pin pandas 2.1.4)")
    args = p.parse_args(argv)
    if not (args.peer / "distributed" / "anonymize.py").is_file():
        raise SystemExit(f"--peer {args.peer}: no distributed/anonymize.py (a checkout of mosaicrown/mondrian?)")
    recorder = harness.Recorder.start(__file__, args, ["pyspark", "pyarrow"])
    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    parquet = write_parquet(directory / f"agrawal_{args.rows}.parquet", args.rows, seed=0, id_column="id")
    out = directory / f"mosaicrown_out_{args.rows}_{args.k}.parquet"
    job = job_file(directory, parquet, out, args.k, args.fragments, args.fragmentation)
    seconds, text = run_peer(args.peer, job, args.master, args.fragments, args.timeout, args.python)
    own = re.search(r"--- ([0-9.]+) seconds ---", text)
    dp = re.search(r"Discernability Penalty = ([0-9.E+-]+)", text)
    gcp = re.search(r"Global Certainty Penalty = ([0-9.]+)", text)
    checked = check_output(out, args.k)
    recorder.record("mosaicrown", {"rows": args.rows, "k": args.k, "master": args.master, "fragments": args.fragments,
                                   "fragmentation": args.fragmentation},
                    seconds, metrics={"own_s": float(own.group(1)) if own else None,
                                      "dp": float(dp.group(1)) if dp else None,
                                      "gcp": float(gcp.group(1)) if gcp else None, **checked})


if __name__ == "__main__":
    main()
