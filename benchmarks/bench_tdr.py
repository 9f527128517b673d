"""Single-dimensional recoding (top-down refinement, Fung, Wang & Yu, TKDE 2007) against
InfoGain and Median Mondrian, and TDR's scalability.

    python benchmarks/bench_tdr.py [--k 5 10 25 50 100 250 500] [--only quality adult1m agrawal]
        [--adult-rows 1000000] [--rows 1000000 10000000] [--dir /tmp/sqlanon-bench]
    python benchmarks/bench_tdr.py --quick             # k = 50, Adult blown up to 100,000, Agrawal 20,000

* ``quality``: the Adult protocol of ``bench_protocol.py`` (UCI train -> anonymize, apply the
  rules to UCI test, classifiers learn from regions): TDR (``algorithm=TopDown()``, Score), InfoGain
  and Median Mondrian side by side per k: test accuracy, CM and LM of the training release,
  anonymize time.
* ``adult1m``: TKDE 2007, Section 5.3: UCI train + test (45,222 complete rows) blown up to
  1,000,000 rows -- for each record, variations in which q ~ U[1, 14] randomly chosen attributes
  take values drawn uniformly from their domain -- all 14 attributes as one QID, k = 50, target
  ``salary-class``. The six continuous attributes are intervals, the seven with an ARX hierarchy
  use it, ``relationship`` (no hierarchy) is suppressed and disclosed (``⊥``). The paper: about
  80 s excluding I/O; reported here end to end in DuckDB and per step.
* ``agrawal``: the nine Agrawal QIs, k = 100, target ``c2``, for the growth curve (``--rows``),
  with the ratio ``per_scan`` to the harness's scan-equivalent of the nine QIs.

Each scalability run is a child process of the harness (its own memory, no warm caches); every
release is a record (``quality``: the protocol's, named for the criterion; ``adult1m`` and
``agrawal``: seconds end to end, the steps in the details).
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
import sqlanon  # noqa: E402
from sqlanon import datasets  # noqa: E402

ALL_K = (5, 10, 25, 50, 100, 250, 500)
CONTINUOUS = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week")
HIERARCHICAL = ("workclass", "education", "marital-status", "occupation", "race", "sex", "native-country")
ADULT14 = (*CONTINUOUS, *HIERARCHICAL, "relationship")


def quality(rec: harness.Recorder, ks: tuple[int, ...]) -> None:
    """The Adult protocol for TDR, InfoGain Mondrian and Median Mondrian."""
    import bench_protocol as bp

    con = duckdb.connect()
    task, folds = bp.adult(con)
    models = bp.classifiers(0, len(os.sched_getaffinity(0)))
    runs = []
    for k in ks:
        for criterion in ("tdr", "infogain", "median"):
            runs.append(bp.run_release(con, task, folds[0], k, criterion, models))
            bp.record_release(rec, runs[-1])
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
    return {"rows": release.rows, "qis": len(qid), "s": wall, "steps": dict(release.timings),
            "refinements": release.outcome.refinements, "classes": release.partitions, "rules": release.regions,
            "k_achieved": release.k_achieved}  # fmt: skip


def scalability_run(rec: harness.Recorder, name: str, db: Path, table: str, qid: list[str], k: int, target: str,
              hierarchies: dict[str, str], timeout: float | None, scan: float | None = None) -> None:
    """One scalability run in a fresh process (its own memory, no warm caches), recorded."""
    out = harness.run_child(__file__, "child", {"db": str(db), "table": table, "qid": qid, "k": k, "target": target,
                                                "hierarchies": hierarchies}, timeout)  # fmt: skip
    seconds, details = out.pop("s", None), {key: out.pop(key, None) for key in ("steps", "process_s")}
    rec.record(name, {"table": table, "rows": out.get("rows"), "k": k, "target": target}, seconds,
               {"per_scan": harness.ratio(seconds, scan, 0)} if scan else None,
               {key: v for key, v in out.items() if key != "error"}, details, out.get("error"))  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = harness.arguments(__doc__, rows=[1_000_000, 10_000_000], timeout=True,
                               quick={"k": [50], "adult_rows": 100_000, "rows": [20_000]})  # fmt: skip
    parser.add_argument("--k", type=int, nargs="+", default=list(ALL_K))
    parser.add_argument("--only", nargs="+", choices=("quality", "adult1m", "agrawal"),
                        default=["quality", "adult1m", "agrawal"])
    parser.add_argument("--adult-rows", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    if "quality" in args.only:
        harness.require("sklearn", "scikit-learn", "the quality part trains scikit-learn classifiers "
                        "(--only adult1m agrawal runs without it)")
    rec = harness.Recorder.start(__file__, args, ["scikit-learn"])
    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    if "quality" in args.only:
        quality(rec, tuple(args.k))
    if "adult1m" in args.only:
        db = directory / f"adult_blown_up_{args.adult_rows}.duckdb"
        start = time.perf_counter()
        blown_up_adult(db, args.adult_rows)
        print(f"# adult blown up to {args.adult_rows:,} rows in {time.perf_counter() - start:.1f} s", flush=True)
        hierarchies = {c: str(p) for c, p in datasets.adult_hierarchies().items() if c in HIERARCHICAL}
        scalability_run(rec, "adult1m", db, "adult1m", list(ADULT14), 50, "salary-class", hierarchies, args.timeout)
    if "agrawal" in args.only:
        from agrawal import QI_COLUMNS, write_duckdb

        for n in args.rows:
            db = directory / f"agrawal_{n}.duckdb"
            write_duckdb(db, n)
            scan = harness.duckdb_scan_seconds(db, "agrawal", QI_COLUMNS, args.repeat)
            rec.record("scan", {"rows": n, "repeat": args.repeat}, scan)
            scalability_run(rec, "agrawal", db, "agrawal", list(QI_COLUMNS), 100, "c2", {}, args.timeout, scan)


if __name__ == "__main__":
    main()
