"""Mondrian with outlier suppression (issue 19, part 1) on bundled UCI Adult.

    pip install -e '.[bench]'            # scikit-learn
    python benchmarks/bench_suppression.py [--k 10 50 100] [--suppression 0 0.01 0.02 0.05]
    python benchmarks/bench_suppression.py --quick     # k = 50, suppression 0 and 2 %

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
once more without it, for ``Release.at_root_before``). One record per (k, fraction); the share
of rows at the root is a metric per QI (``at_root_<qi>``).
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402  (puts the checkout first on sys.path)

harness.require("sklearn", "scikit-learn", "the evaluation trains a scikit-learn decision tree")
import duckdb  # noqa: E402

import sqlanon  # noqa: E402
from bench_protocol import MAJORITY, adult, apply_function, domain_fill, region_features, region_majority  # noqa: E402
from harness import Column  # noqa: E402


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


def main(argv: list[str] | None = None) -> None:
    parser = harness.arguments(__doc__, quick={"k": [50], "suppression": [0.0, 0.02]})
    parser.add_argument("--k", type=int, nargs="+", default=[10, 50, 100])
    parser.add_argument("--suppression", type=float, nargs="+", default=[0.0, 0.01, 0.02, 0.05])
    args = parser.parse_args(argv)
    rec = harness.Recorder.start(__file__, args, ["scikit-learn"])
    warnings.simplefilter("ignore", sqlanon.PrivacyWarning)  # apply: new rows are not k-anonymous (expected)
    con = duckdb.connect()
    task, folds = adult(con)
    qid = list(task.qid)
    for k in args.k:
        for fraction in args.suppression:
            r = run(con, task, folds[0], k, fraction)
            rec.record("median", {"dataset": "adult", "k": k, "suppression": fraction}, r["seconds"], None,
                       {"suppressed": r["suppressed"], "allowed": r["allowed"], "classes": r["classes"],
                        "gcp": r["gcp"], "acc_decision_tree": r["tree"], "acc_region_majority": r[MAJORITY],
                        **{f"at_root_{q}": r["at_root"][q] for q in qid}})  # fmt: skip
    columns = [Column("k", "params.k"), Column("suppression", "params.suppression", ".0%"),
               Column("rows suppressed", "metrics.suppressed", ","), Column("allowed", "metrics.allowed", ","),
               Column("classes", "metrics.classes", ","),
               *(Column(f"{q} at root", f"metrics.at_root_{q}", ".1%") for q in qid),
               Column("GCP", "metrics.gcp", ".4f"), Column("decision tree", "metrics.acc_decision_tree", ".4f"),
               Column(MAJORITY, "metrics.acc_region_majority", ".4f"), Column("anonymize s", "seconds", ".2f")]  # fmt: skip
    print()
    print(harness.table(rec.records, columns, markdown=True))


if __name__ == "__main__":
    main()
