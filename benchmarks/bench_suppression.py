"""Mondrian with outlier suppression (issue 19, part 1) on bundled UCI Adult.

    pip install -e '.[bench]'            # scikit-learn
    python benchmarks/bench_suppression.py [--k 10 50 100] [--suppression 0 0.01 0.02 0.05]

For each k and suppression fraction: Median Mondrian (``anonymize(..., suppression=f)``) on
Adult's training rows with Iyengar's eight QIs (age numeric, the seven others with ARX's
hierarchies), then the evaluation protocol of ``bench_protocol.py`` (LeFevre et al., KDD 2006,
Section 5.1): ``apply`` to the test rows, ``regions`` points, a decision tree and the region
majority classifier. A suppressed training row is published fully generalized: its point is
the whole training domain (``domain_fill``), as for an unplaced test row. Printed: rows
suppressed (of the ``floor(f x N)`` allowed), per QI the share of rows generalized to the
whole domain (``metrics().at_root``), the global certainty penalty (``metrics().gcp``: the
average normalized width of a cell, suppressed rows at 1 -- what the budget is spent to lower),
test accuracy, and the seconds of ``anonymize`` (which, with suppression, partitions twice:
once more without it, for ``Release.at_root_before``).
"""

from __future__ import annotations

import sqlanon
import argparse
import sys
import time
import warnings
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import sqlanon  # noqa: E402
from bench_protocol import MAJORITY, adult, apply_function, domain_fill, region_features, region_majority  # noqa: E402


def run(con, task, fold, k: int, fraction: float) -> dict:
    from sklearn.tree import DecisionTreeClassifier

    view = f"sup_k{k}_{int(fraction * 1000)}"
    started = time.perf_counter()
    release = sqlanon.anonymize(con, fold.train, list(task.qid), k, hierarchies=dict(task.hierarchies),
                                suppression=fraction or None, algorithm=sqlanon.Mondrian(sqlanon.Median()),
                                output=sqlanon.Output(view=view, replace=True))
    seconds = time.perf_counter() - started
    m = sqlanon.metrics(con, release)
    applied = apply_function()(con, release, fold.test, view=f"{view}_test", replace=True)
    train = sqlanon.regions(con, release, as_frame=True)
    test = sqlanon.regions(con, release, table=applied.view, as_frame=True)
    x_train, _ = region_features(train, task)
    fill = domain_fill(x_train)
    x_train, _ = region_features(train, task, fill=fill)
    x_test, _ = region_features(test, task, fill=fill)
    tree = DecisionTreeClassifier(random_state=0).fit(x_train, train[task.target])
    accuracy = float((tree.predict(x_test) == test[task.target].to_numpy()).mean())
    majority, _ = region_majority(train[train["eq_class"].notna()], test, task.target)
    return {"k": k, "fraction": fraction, "suppressed": release.suppressed, "allowed": int(fraction * m.rows + 1e-9),
            "classes": m.classes, "at_root": m.at_root, "gcp": m.gcp, "tree": accuracy, MAJORITY: majority, "seconds": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, nargs="+", default=[10, 50, 100])
    parser.add_argument("--suppression", type=float, nargs="+", default=[0.0, 0.01, 0.02, 0.05])
    args = parser.parse_args()
    warnings.simplefilter("ignore", sqlanon.PrivacyWarning)  # apply: new rows are not k-anonymous (expected)
    con = duckdb.connect()
    task, folds = adult(con)
    qid = list(task.qid)
    print("| k | suppression | rows suppressed (allowed) | classes | " + " | ".join(f"{q} at root" for q in qid)
          + " | GCP | decision tree | region majority | anonymize s |")
    print("|---:|---:|---:|---:|" + "---:|" * len(qid) + "---:|---:|---:|---:|")
    for k in args.k:
        for fraction in args.suppression:
            r = run(con, task, folds[0], k, fraction)
            print(f"| {k} | {fraction:.0%} | {r['suppressed']:,} ({r['allowed']:,}) | {r['classes']:,} | "
                  + " | ".join(f"{r['at_root'][q]:.1%}" for q in qid)
                  + f" | {r['gcp']:.4f} | {r['tree']:.4f} | {r[MAJORITY]:.4f} | {r['seconds']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
