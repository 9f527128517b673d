"""Single-dimensional recoding (top-down refinement, Fung, Wang & Yu, TKDE 2007) against
InfoGain and Median Mondrian, and TDR's scalability.

    python benchmarks/bench_tdr.py [--k 5 10 25 50 100 250 500] [--only quality adult1m agrawal]
        [--agrawal-rows 1000000 10000000] [--dir /tmp/sqlanon-bench]

* ``quality``: the Adult protocol of ``bench_protocol.py`` (UCI train -> anonymize, apply the
  rules to UCI test, classifiers learn from regions): TDR (``recoding="single"``, Score), InfoGain
  and Median Mondrian side by side per k: test accuracy, CM and LM of the training release,
  anonymize time.
* ``adult1m``: TKDE 2007, Section 5.3: UCI train + test (45,222 complete rows) blown up to
  1,000,000 rows -- for each record, variations in which q ~ U[1, 14] randomly chosen attributes
  take values drawn uniformly from their domain -- all 14 attributes as one QID, k = 50, target
  ``salary-class``. The six continuous attributes are intervals, the seven with an ARX hierarchy
  use it, ``relationship`` (no hierarchy) is suppressed and disclosed (``⊥``). The paper: about
  80 s excluding I/O; reported here end to end in DuckDB and per step.
* ``agrawal``: the nine Agrawal QIs, k = 100, target ``c2``, for the growth curve.

Each scalability run is a child process (``benchmarks/machine.py``), printing JSON lines.
"""

from __future__ import annotations

import sqlanon
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(HERE)]

import sqlanon  # noqa: E402
from sqlanon import datasets  # noqa: E402
from machine import machine  # noqa: E402

ALL_K = (5, 10, 25, 50, 100, 250, 500)
CONTINUOUS = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week")
HIERARCHICAL = ("workclass", "education", "marital-status", "occupation", "race", "sex", "native-country")
ADULT14 = (*CONTINUOUS, *HIERARCHICAL, "relationship")


def quality(ks: tuple[int, ...]) -> None:
    """The Adult protocol for TDR, InfoGain Mondrian and Median Mondrian."""
    import bench_protocol as bp

    con = duckdb.connect()
    task, folds = bp.adult(con)
    models = bp.classifiers(0, len(os.sched_getaffinity(0)))
    runs = []
    for k in ks:
        for criterion in ("tdr", "infogain", "median"):
            rec = bp.run_release(con, task, folds[0], k, criterion, models)
            runs.append(rec)
            print(json.dumps({"k": k, "criterion": criterion, "classes": rec["classes"],
                              "cm": round(rec["cm"], 4), "lm_per_qi": round(rec["lm_per_qi"], 4),
                              "accuracy": {c: round(a, 4) for c, a in rec["accuracy"].items()},
                              "anonymize_s": round(rec["seconds"]["anonymize"], 3)}), flush=True)
    print("\n### adult: test accuracy (UCI train/test)\n")
    print(bp.accuracy_table("adult", runs, bp.run_baselines(con, task, folds[0], models), list(models)))
    print("\n### adult: training releases\n")
    print(bp.metrics_table("adult", runs))


def blown_up_adult(path: Path, rows: int, seed: int = 0) -> None:
    """Adult blown up as in TKDE 2007, Section 5.3 (module docstring), written once to ``path``."""
    con = duckdb.connect(str(path))
    if "adult1m" in {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()} and \
            con.execute('SELECT count(*) FROM adult1m').fetchone()[0] == rows:
        con.close()
        return
    datasets.load_adult_uci(con, "train", split="train", replace=True)
    datasets.load_adult_uci(con, "test", split="test", replace=True)
    base = con.execute("SELECT * FROM train UNION ALL SELECT * FROM test").df()
    rng = np.random.default_rng(seed)
    n = len(base)
    domains = {c: base[c].unique() for c in ADULT14}
    extra = rows - n
    source = rng.integers(0, n, extra)
    variant = base.iloc[source].reset_index(drop=True)
    q = rng.integers(1, len(ADULT14) + 1, extra)  # how many attributes each variation changes
    ranks = np.argsort(rng.random((extra, len(ADULT14))), axis=1)  # a random order of the attributes
    for j, c in enumerate(ADULT14):
        change = ranks[:, j] < q
        values = domains[c][rng.integers(0, len(domains[c]), int(change.sum()))]
        variant.loc[change, c] = values
    import pandas as pd
    frame = pd.concat([base, variant], ignore_index=True)  # noqa: F841 (DuckDB scans it by name)
    con.execute("CREATE OR REPLACE TABLE adult1m AS SELECT * FROM frame")
    con.close()


def child(db: str, table: str, qid: list[str], k: int, target: str, hierarchies: dict[str, str]) -> dict[str, Any]:
    con = duckdb.connect(db)
    start = time.perf_counter()
    release = sqlanon.anonymize(con, table, qid=qid, k=k, target=target, hierarchies=hierarchies,
                                algorithm=sqlanon.TopDown(), output=sqlanon.Output(view=f"{table}_tdr", replace=True))
    wall = time.perf_counter() - start
    return {"table": table, "rows": release.rows, "k": k, "qis": len(qid), "seconds": round(wall, 2),
            "steps": {s: round(t, 2) for s, t in release.timings.items()}, "refinements": release.outcome.refinements,
            "classes": release.partitions, "rules": release.regions, "k_achieved": release.k_achieved}


def run_child(db: Path, table: str, qid: list[str], k: int, target: str, hierarchies: dict[str, str]) -> None:
    """One scalability run in a fresh process (its own memory, no warm caches); prints its JSON."""
    cmd = [sys.executable, __file__, "--child", json.dumps([str(db), table, qid, k, target, hierarchies])]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        print(out.stderr[-3000:], file=sys.stderr)
        return
    rec = json.loads(out.stdout.strip().splitlines()[-1])
    print(json.dumps(rec | {"load_avg_1m": round(os.getloadavg()[0], 2)}), flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--k", type=int, nargs="+", default=list(ALL_K))
    parser.add_argument("--only", nargs="+", choices=("quality", "adult1m", "agrawal"),
                        default=["quality", "adult1m", "agrawal"])
    parser.add_argument("--adult-rows", type=int, default=1_000_000)
    parser.add_argument("--agrawal-rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--dir", type=Path, default=Path("/tmp/sqlanon-bench"))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(*json.loads(args.child))))
        return
    info = machine()
    print(f"machine: {info['nproc']} cores ({info['cpu']}), {info['memory_gib']} GiB; DuckDB {info['duckdb']}, "
          f"numpy {info['numpy']}; load average {os.getloadavg()}", flush=True)
    args.dir.mkdir(parents=True, exist_ok=True)
    if "quality" in args.only:
        quality(tuple(args.k))
    if "adult1m" in args.only:
        db = args.dir / "adult_blown_up.duckdb"
        start = time.perf_counter()
        blown_up_adult(db, args.adult_rows)
        print(f"adult blown up to {args.adult_rows:,} rows in {time.perf_counter() - start:.1f} s", flush=True)
        hierarchies = {c: str(p) for c, p in datasets.adult_hierarchies().items() if c in HIERARCHICAL}
        run_child(db, "adult1m", list(ADULT14), 50, "salary-class", hierarchies)
    if "agrawal" in args.only:
        from agrawal import QI_COLUMNS, write_duckdb
        for n in args.agrawal_rows:
            db = args.dir / f"agrawal_{n}.duckdb"
            write_duckdb(db, n)
            run_child(db, "agrawal", list(QI_COLUMNS), 100, "c2", {})


if __name__ == "__main__":
    main()
