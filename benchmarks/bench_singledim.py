"""The single-dimensional searches side by side on Adult: Iyengar's genetic algorithm (CM and
LM), top-down refinement, the optimal full-domain lattice (DM and CM) and InfoGain Mondrian, and
the lattice's rolling up in numpy against SQL ``GROUP BY``.

    python benchmarks/bench_singledim.py [--k 10 25 50 100 250 500] [--budget 30]
        [--suppression 0.02] [--only quality lattice9 rollup]
    python benchmarks/bench_singledim.py --quick       # k = 100, a 5 s GA budget

* ``quality``: the evaluation protocol of ``bench_protocol.py`` (UCI Adult train -> anonymize,
  rules applied to UCI test, classifiers learn from regions) with Iyengar's eight QIs (age,
  workclass, education, marital-status, occupation, race, sex, native-country; target
  ``salary-class``). As in Iyengar (KDD 2002, Section 5) the GA and TDR and InfoGain Mondrian
  treat age and education as numeric (``education-num``, UCI's numeric coding of education)
  and the six others through ARX's hierarchies; the lattice needs a hierarchy for every QI, so
  it uses ARX's age and education hierarchies. Per k: CM and LM of the training release (LM as
  the sum over the 8 QIs and per QI), suppressed rows, test accuracy, anonymize time. The GA
  runs ``--budget`` seconds (seed 0) with ``suppression=--suppression``; the lattice the same
  suppression limit.
* ``lattice9``: the lattice on ARX's Adult, all nine columns, k = 5, 4 % suppression (ARX's
  example setting), each metric: time and node count.
* ``rollup``: one lattice node's class sizes, rolled up in numpy from the compressed table vs.
  one SQL ``GROUP BY`` over the table with each QI's hierarchy level joined (DuckDB); the ratio
  ``sql_per_numpy``.

Records: ``rollup`` (seconds: numpy's roll-up from the bottom, per node), ``lattice9 <metric>``
(seconds: the whole ``anonymize``), and per k one release of ``quality`` per search (named as in
the tables: ``ga_cm``, ``tdr``, ...), with the protocol's metrics and accuracies.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import duckdb  # noqa: E402
import numpy as np  # noqa: E402

import harness  # noqa: E402  (puts the checkout first on sys.path)
import sqlanon  # noqa: E402
from sqlanon import datasets  # noqa: E402
from sqlanon.model.hierarchy import Hierarchy  # noqa: E402
from sqlanon.request.spec import load_hierarchy  # noqa: E402
from sqlanon.singledim.lattice import Lattice  # noqa: E402

ROOT = harness.ROOT

ALL_K = (10, 25, 50, 100, 250, 500)
NUMERIC_QID = ("age", "workclass", "education-num", "marital-status", "occupation", "race", "sex", "native-country")
HIERARCHY_QID = ("age", "workclass", "education", "marital-status", "occupation", "race", "sex", "native-country")
TARGET = "salary-class"
NAMES = {"ga_cm": "GA (CM)", "ga_lm": "GA (LM)", "tdr": "TDR (single)", "lattice_dm": "lattice (DM)",
         "lattice_cm": "lattice (CM)", "infogain": "InfoGain"}


def quality(rec: harness.Recorder, ks: tuple[int, ...], budget: float, suppression: float) -> None:
    import bench_protocol as bp

    bp.CRITERION_NAMES.update(NAMES)
    con = duckdb.connect()
    paths = datasets.load_adult_uci(con, "adult_train_full", split="train", replace=True)
    datasets.load_adult_uci(con, "adult_test_full", split="test", replace=True)
    for name, qid in (("numeric", NUMERIC_QID), ("hier", HIERARCHY_QID)):
        bp._project(con, "adult_train_full", f"train_{name}", (*qid, TARGET))
        bp._project(con, "adult_test_full", f"test_{name}", (*qid, TARGET))
    numeric = bp.Task("adult", NUMERIC_QID, TARGET, {q: load_hierarchy(paths[q]) for q in NUMERIC_QID
                                                     if q not in ("age", "education-num")})
    full = bp.Task("adult", HIERARCHY_QID, TARGET, {q: load_hierarchy(paths[q]) for q in HIERARCHY_QID})
    folds = {"numeric": bp.Fold(0, "train_numeric", "test_numeric"), "hier": bp.Fold(0, "train_hier", "test_hier")}
    models = bp.classifiers(0, len(os.sched_getaffinity(0)))
    single = {"suppression": suppression}
    plans = [
        ("ga_cm", numeric, "numeric", {**single, "algorithm": sqlanon.Genetic(metric="CM", budget=budget),
                                       "target": TARGET}),
        ("ga_lm", numeric, "numeric", {**single, "algorithm": sqlanon.Genetic(metric="LM", budget=budget)}),
        ("tdr", numeric, "numeric", {"algorithm": sqlanon.TopDown(), "target": TARGET}),
        ("lattice_dm", full, "hier", {**single, "algorithm": sqlanon.Optimal(metric="DM")}),
        ("lattice_cm", full, "hier", {**single, "algorithm": sqlanon.Optimal(metric="CM"), "target": TARGET}),
        ("infogain", numeric, "numeric", {"target": TARGET}),
    ]
    runs = []
    for k in ks:
        for criterion, task, fold, request in plans:
            runs.append(bp.run_release(con, task, folds[fold], k, criterion, models, request=request))
            bp.record_release(rec, runs[-1], budget=budget if criterion.startswith("ga") else None,
                              suppression=request.get("suppression"))  # fmt: skip
    print("\n### adult: test accuracy (UCI train/test)\n")
    print(bp.accuracy_table("adult", runs, bp.run_baselines(con, numeric, folds["numeric"], models), list(models)))
    print("\n### adult: training releases\n")
    print(bp.metrics_table("adult", runs))


def _arx_adult() -> tuple[list[str], list[Hierarchy], np.ndarray, np.ndarray, duckdb.DuckDBPyConnection]:
    con = duckdb.connect()
    con.execute(f"CREATE TABLE adult AS SELECT * FROM read_csv('{ROOT / 'sqlanon' / 'data' / 'adult.csv.gz'}', "
                "delim=';', header=true, all_varchar=true)")
    qid = list(datasets_columns())
    hierarchies = [Hierarchy.from_csv(ROOT / "sqlanon" / "data" / f"adult_hierarchy_{q}.csv") for q in qid]
    frame = con.execute("SELECT * FROM adult").df()
    codes = np.column_stack([h.code_of(frame[q].tolist()) for q, h in zip(qid, hierarchies)])
    keys, inverse = np.unique(codes, axis=0, return_inverse=True)
    return qid, hierarchies, keys, np.bincount(inverse.ravel())[:, None], con


def datasets_columns() -> tuple[str, ...]:
    return ("sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation",
            "salary-class")


def lattice9(rec: harness.Recorder) -> None:
    qid, hierarchies, keys, counts, con = _arx_adult()
    h = {q: str(ROOT / "sqlanon" / "data" / f"adult_hierarchy_{q}.csv") for q in qid}
    for metric in ("DM", "AECS", "Loss", "Precision", "Entropy", "LM"):
        start = time.perf_counter()
        found = Lattice(keys, counts, hierarchies).search(metric, 5, int(0.04 * 30162))
        search = time.perf_counter() - start
        start = time.perf_counter()
        release = sqlanon.anonymize(con, "adult", qid=qid, k=5, hierarchies=h, suppression=0.04,
                                    algorithm=sqlanon.Optimal(metric=metric),
                                    output=sqlanon.Output(view=f"adult_{metric.lower()}", replace=True))
        total = time.perf_counter() - start
        rec.record(f"lattice9 {metric}", {"dataset": "adult (ARX)", "k": 5, "suppression": 0.04, "metric": metric},
                   total, {"search_per_anonymize": harness.ratio(search, total)},
                   {"value": found.best.value, "suppressed": found.best.suppressed, "checked": found.checked,
                    "pruned": found.pruned, "nodes": found.size, "search_s": search},
                   {"levels": list(found.best.levels), "release_levels": list(release.outcome.levels.values())})  # fmt: skip


def rollup(rec: harness.Recorder, nodes: int = 30) -> None:
    """Class sizes of random nodes: numpy roll-up from the compressed table vs SQL GROUP BY with
    each QI's level joined (a table (leaf, label) per QI and level)."""
    qid, hierarchies, keys, counts, con = _arx_adult()
    lattice = Lattice(keys, counts, hierarchies)
    for q, h in zip(qid, hierarchies):
        rows = h.to_rows()
        for level in range(h.height + 1):
            con.execute(f'CREATE TABLE "h_{q}_{level}" (leaf VARCHAR, label VARCHAR)')
            con.executemany(f'INSERT INTO "h_{q}_{level}" VALUES (?, ?)', [(r[0], r[min(level, len(r) - 1)]) for r in rows])
    rng = np.random.default_rng(0)
    chosen = [tuple(int(rng.integers(0, h.height + 1)) for h in hierarchies) for _ in range(nodes)]
    start = time.perf_counter()
    numpy_sizes = [np.sort(lattice.table(levels)[0].n) for levels in chosen]
    numpy_s = (time.perf_counter() - start) / nodes
    start = time.perf_counter()
    sql_sizes = []
    for levels in chosen:
        joins = " ".join(f'JOIN "h_{q}_{l}" j{i} ON j{i}.leaf = a."{q}"' for i, (q, l) in enumerate(zip(qid, levels)))
        group = ", ".join(f"j{i}.label" for i in range(len(qid)))
        sql_sizes.append(np.sort(con.execute(f"SELECT count(*) FROM adult a {joins} GROUP BY {group}").fetchnumpy()
                                 ["count_star()"]))
    sql_s = (time.perf_counter() - start) / nodes
    assert all(np.array_equal(a, b) for a, b in zip(numpy_sizes, sql_sizes))
    # the search's own step: one roll-up from a parent node
    t, _ = lattice.table(chosen[0])
    start = time.perf_counter()
    for j in range(len(qid)):
        lattice.roll(t, j)
    step_s = (time.perf_counter() - start) / len(qid)
    rec.record("rollup", {"dataset": "adult (ARX)", "nodes": nodes}, numpy_s, {"sql_per_numpy": harness.ratio(sql_s, numpy_s, 1)},
               {"numpy_from_bottom_ms": numpy_s * 1e3, "numpy_one_rollup_ms": step_s * 1e3,
                "sql_group_by_ms": sql_s * 1e3})  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = harness.arguments(__doc__, quick={"k": [100], "budget": 5.0})
    parser.add_argument("--k", type=int, nargs="+", default=list(ALL_K))
    parser.add_argument("--budget", type=float, default=30.0)
    parser.add_argument("--suppression", type=float, default=0.02)
    parser.add_argument("--only", nargs="+", default=["rollup", "lattice9", "quality"],
                        choices=("quality", "lattice9", "rollup"))
    args = parser.parse_args(argv)
    if "quality" in args.only:
        harness.require("sklearn", "scikit-learn", "the quality part trains scikit-learn classifiers "
                        "(--only rollup lattice9 runs without it)")
    rec = harness.Recorder.start(__file__, args, ["scikit-learn"])
    if "rollup" in args.only:
        rollup(rec)
    if "lattice9" in args.only:
        lattice9(rec)
    if "quality" in args.only:
        quality(rec, tuple(args.k), args.budget, args.suppression)


if __name__ == "__main__":
    main()
