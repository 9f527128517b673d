"""What each ``published=`` choice costs and what empty regions now publish (issue 19), on Adult.

    pip install -e '.[bench]'            # scikit-learn
    python benchmarks/bench_published.py [--k 10 50]
    python benchmarks/bench_published.py --quick       # k = 50

For each k and each choice for ``age`` (``data``, ``domain``, ``hierarchy`` with ARX's age
hierarchy), InfoGain Mondrian (target ``salary-class``) on UCI Adult's training rows (Iyengar's
eight QIs, the seven categorical ones with ARX's hierarchies), ``apply`` to the test rows,
``regions`` points, a scikit-learn ``DecisionTreeClassifier`` (default settings, seed 0; a NULL
coordinate -- an open end under ``domain`` -- is replaced by the column's training mean). Printed:
NCP of age, test accuracy, the test rows that fall in an *empty* region (a hierarchy node no
training row reached) and the tree's accuracy on them with their box published (now) and with
the training table's overall age range instead (what ``apply`` published before issue 19). One
record per (k, choice).
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
from harness import Column  # noqa: E402
from sqlanon import datasets  # noqa: E402

QID = ["age", "workclass", "education", "marital-status", "occupation", "race", "sex", "native-country"]
TARGET = "salary-class"


def run(con, k: int, published: str, hierarchies: dict) -> dict:
    from sklearn.tree import DecisionTreeClassifier

    chosen = {q: hierarchies[q] for q in QID if q != "age"}
    if published == "hierarchy":
        chosen["age"] = hierarchies["age"]
    started = time.perf_counter()
    release = sqlanon.anonymize(con, "train", qid=QID, k=k, hierarchies=chosen, target=TARGET,
                                published={"age": published}, output=sqlanon.Output(view="tr", replace=True))
    elapsed = time.perf_counter() - started
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sqlanon.PrivacyWarning)
        sqlanon.apply(con, release, "test", view="te", replace=True)
    train = sqlanon.regions(con, release, table="tr", as_frame=True)
    test = sqlanon.regions(con, release, table="te", as_frame=True)
    features = [f"{q}__{s}" for q in QID for s in ("lo", "hi")]
    means = train[features].astype(float).mean()

    def points(frame):
        return frame[features].astype(float).fillna(means).to_numpy()

    tree = DecisionTreeClassifier(random_state=0).fit(points(train), train[TARGET])
    truth = test[TARGET].to_numpy()
    right = tree.predict(points(test)) == truth
    empty = {r for (r,) in con.execute("SELECT region FROM tr_rules WHERE size = 0").fetchall()}
    in_empty = test["eq_class"].isin(empty).to_numpy()
    before = test.copy()  # the training table's overall age range, as apply published before
    before.loc[in_empty, "age__lo"], before.loc[in_empty, "age__hi"] = train["age__lo"].min(), train["age__hi"].max()
    right_before = tree.predict(points(before)) == truth
    return {"k": k, "published": published, "seconds": elapsed,
            "ncp_age": round(sqlanon.metrics(con, release).ncp["age"], 4), "accuracy": round(float(right.mean()), 4),
            "empty_rows": int(in_empty.sum()), "empty_share": round(float(in_empty.mean()), 4),
            "empty_accuracy_box": round(float(right[in_empty].mean()), 4) if in_empty.any() else None,
            "empty_accuracy_overall_range": round(float(right_before[in_empty].mean()), 4) if in_empty.any() else None,
            "rest_accuracy": round(float(right[~in_empty].mean()), 4)}


COLUMNS = [
    Column("k", "params.k"), Column("age published", "params.published"), Column("anonymize s", "seconds", ".2f"),
    Column("NCP age", "metrics.ncp_age"), Column("DT accuracy", "metrics.accuracy"),
    Column("test rows in empty regions", "metrics.empty_rows", ","), Column("share", "metrics.empty_share", ".1%"),
    Column("DT on them: box", "metrics.empty_accuracy_box"),
    Column("DT on them: overall range (before)", "metrics.empty_accuracy_overall_range"),
    Column("DT on the rest", "metrics.rest_accuracy"),
]  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = harness.arguments(__doc__, quick={"k": [50]})
    parser.add_argument("--k", type=int, nargs="+", default=[10, 50])
    args = parser.parse_args(argv)
    rec = harness.Recorder.start(__file__, args, ["scikit-learn"])
    con = duckdb.connect()
    hierarchies = datasets.load_adult_uci(con, "train", split="train")
    datasets.load_adult_uci(con, "test", split="test")
    for k in args.k:
        for published in ("data", "domain", "hierarchy"):
            r = run(con, k, published, {q: str(p) for q, p in hierarchies.items()})
            rec.record("infogain", {"dataset": "adult", "k": k, "published": published}, r.pop("seconds"), None,
                       {key: v for key, v in r.items() if key not in ("k", "published")})  # fmt: skip
    print()
    print(harness.table(rec.records, COLUMNS, markdown=True))


if __name__ == "__main__":
    main()
