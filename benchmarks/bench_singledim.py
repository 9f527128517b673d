"""The single-dimensional searches side by side on Adult: Iyengar's genetic algorithm (CM and
LM), top-down refinement, the optimal full-domain lattice (DM and CM) and InfoGain Mondrian, and
the lattice's rolling up in numpy against SQL ``GROUP BY``.

    python benchmarks/bench_singledim.py [--k 10 25 50 100 250 500] [--budget 30]
        [--suppression 0.02] [--only quality lattice9 rollup]

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
  one SQL ``GROUP BY`` over the table with each QI's hierarchy level joined (DuckDB).
"""

from __future__ import annotations

import sqlanon
import argparse
import json
import os
import sys
import time
from pathlib import Path

import duckdb
import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(HERE)]

import sqlanon  # noqa: E402
from sqlanon import datasets  # noqa: E402
from sqlanon.model.hierarchy import Hierarchy  # noqa: E402
from sqlanon.request.spec import load_hierarchy  # noqa: E402
from sqlanon.singledim.lattice import Lattice  # noqa: E402

ALL_K = (10, 25, 50, 100, 250, 500)
NUMERIC_QID = ("age", "workclass", "education-num", "marital-status", "occupation", "race", "sex", "native-country")
HIERARCHY_QID = ("age", "workclass", "education", "marital-status", "occupation", "race", "sex", "native-country")
TARGET = "salary-class"
NAMES = {"ga_cm": "GA (CM)", "ga_lm": "GA (LM)", "tdr": "TDR (single)", "lattice_dm": "lattice (DM)",
         "lattice_cm": "lattice (CM)", "infogain": "InfoGain"}


def quality(ks: tuple[int, ...], budget: float, suppression: float) -> None:
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
            rec = bp.run_release(con, task, folds[fold], k, criterion, models, request=request)
            runs.append(rec)
            print(json.dumps({"k": k, "criterion": criterion, "classes": rec["classes"], "cm": round(rec["cm"], 4),
                              "lm": round(rec["lm"], 4), "lm_per_qi": round(rec["lm_per_qi"], 4),
                              "suppressed": rec["suppressed"],
                              "accuracy": {c: round(a, 4) for c, a in rec["accuracy"].items()},
                              "anonymize_s": round(rec["seconds"]["anonymize"], 2)}), flush=True)
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


def lattice9() -> None:
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
        print(json.dumps({"metric": metric, "levels": list(found.best.levels), "value": found.best.value,
                          "suppressed": found.best.suppressed, "checked": found.checked, "pruned": found.pruned,
                          "nodes": found.size, "search_s": round(search, 2), "anonymize_s": round(total, 2),
                          "release_levels": list(release.outcome.levels.values())}), flush=True)


def rollup(nodes: int = 30) -> None:
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
    print(json.dumps({"nodes": nodes, "numpy_from_bottom_ms": round(numpy_s * 1e3, 2),
                      "numpy_one_rollup_ms": round(step_s * 1e3, 3), "sql_group_by_ms": round(sql_s * 1e3, 2)}))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--k", type=int, nargs="+", default=list(ALL_K))
    parser.add_argument("--budget", type=float, default=30.0)
    parser.add_argument("--suppression", type=float, default=0.02)
    parser.add_argument("--only", nargs="+", default=["rollup", "lattice9", "quality"],
                        choices=("quality", "lattice9", "rollup"))
    args = parser.parse_args(argv)
    if "rollup" in args.only:
        rollup()
    if "lattice9" in args.only:
        lattice9()
    if "quality" in args.only:
        quality(tuple(args.k), args.budget, args.suppression)


if __name__ == "__main__":
    main()
