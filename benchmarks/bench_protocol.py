"""The model-evaluation protocol of LeFevre, DeWitt & Ramakrishnan (*Workload-Aware
Anonymization*, KDD 2006, Section 5.1), with Iyengar's CM and LM (KDD 2002, Section 3) beside it.

    pip install -e '.[bench]'            # scikit-learn (an optional extra, not a dependency)
    python benchmarks/bench_protocol.py [--quick] [--k 5 10 25 ...] [--datasets adult cmc]
        [--folds 10] [--seed 0]

The protocol, for every data set, fold, k and criterion (Median or InfoGain Mondrian):

1. the data is split into a training and a test set (Adult: UCI's ``adult.data`` /
   ``adult.test.data``; CMC: stratified 10-fold cross-validation);
2. ``sqlanon.anonymize`` chooses the recoding from the training set only (``target=`` the class
   label for InfoGain, ``criterion=sqlanon.Median()`` for Median);
3. ``sqlanon.release.apply.apply`` recodes the test set with the same stored rules;
4. both are turned into points by ``sqlanon.regions`` ("learning from regions", Section 5.2:
   per QI the region's lower and upper bound; a hierarchical QI as its node's leaf-code
   interval in the hierarchy's DFS order), the classifiers are trained on the training points
   and tested on the test points.

Data sets (bundled, ``sqlanon.datasets``):

* **Adult** (``load_adult_uci``): the rows without missing values, 30,162 for training and
  15,060 for testing, as in Iyengar (KDD 2002, Section 5); his eight QIs (age, workclass,
  education, marital-status, occupation, race, sex, native-country); age is numeric, the seven
  others are generalized with ARX's hierarchies (Iyengar treated education as numeric and used
  his own trees); target ``salary-class``.
* **CMC** (``load_cmc``): 1,473 rows, the nine attributes as QIs, as in the paper's Figure 7:
  wife_age, children and standard_of_living continuous, the six others with a flat hierarchy
  (the paper does not publish its hierarchies); target ``contraceptive_method`` (3 classes).

Classifiers (scikit-learn, default settings, fixed seeds; the paper used Weka's J48, naive
Bayes, random forests and SMO): ``DecisionTreeClassifier``, ``GaussianNB`` (Gaussian on the
coordinates; the paper discretized), ``RandomForestClassifier(n_estimators=100)`` and
``LogisticRegression`` on standardized features. ``region majority`` predicts the majority
training label of the test row's region (the classifier implicit in Iyengar's CM).

Original-data baselines train the same classifiers on the same rows without anonymization:
*ordinal* -- age as a number, each categorical QI as its leaf code in the hierarchy's DFS order
(the regions representation of an unanonymized row, one column per QI instead of two equal
ones); *one-hot* -- age as a number, each categorical QI as one 0/1 column per leaf.

A test row the rules cannot place (``Applied.unplaced``: an unseen category, say) would have
NULL coordinates; it is given the whole training domain (each ``__lo`` its training minimum, each
``__hi`` its training maximum) and counted in the output. A test row can also fall in an *empty*
region (a hierarchy node no training row reached, kept so that the rules tile the domain):
``apply`` publishes it with that node and the whole training range of the ordered QIs; the
region-majority classifier gives such rows (and unplaced ones: no training class) the overall
training majority. Both counts are printed (``unplaced test rows``, ``test rows in no training
class``; means per fold).

Metrics of each anonymized training set (``sqlanon.metrics``): classes, average class size,
H(C|P) in bits (KDD 2006, Section 5.1), Iyengar's CM (share of rows not of their class's majority
label) and LM. ``sqlanon.metrics`` reports LM as Iyengar's *sum* over the QIs (0..|QI|); the
figures Iyengar plots (LM 0.21-0.49, "very poor values around 0.8") can only be the per-column
average, so the comparison table shows ``LM / |QI|`` (= GCP) next to them.

Records (``results/bench_protocol.jsonl``): one per release (name: the criterion; seconds: its
``anonymize``; metrics: the metrics above and each classifier's test accuracy, ``acc_<name>``)
and one per original-data baseline (name ``original (ordinal)`` / ``original (one-hot)``).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402  (puts the checkout first on sys.path)

harness.require("sklearn", "scikit-learn", "the evaluation protocol trains scikit-learn classifiers")
import duckdb  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from sklearn.ensemble import RandomForestClassifier  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import StratifiedKFold  # noqa: E402
from sklearn.naive_bayes import GaussianNB  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.tree import DecisionTreeClassifier  # noqa: E402
from sqlglot import exp  # noqa: E402

import sqlanon  # noqa: E402
from harness import Column  # noqa: E402
from sqlanon import datasets  # noqa: E402
from sqlanon.engine import sqlgen as g  # noqa: E402
from sqlanon.model.hierarchy import Hierarchy  # noqa: E402
from sqlanon.request.spec import load_hierarchy  # noqa: E402

ALL_K = (5, 10, 25, 50, 100, 250, 500)
QUICK_K = (10, 100)
CRITERIA = ("median", "infogain")
CRITERION_NAMES = {"median": "Median", "infogain": "InfoGain", "tdr": "TDR (single)"}
MAJORITY = "region majority"

ADULT_QID = ("age", "workclass", "education", "marital-status", "occupation", "race", "sex", "native-country")
ADULT_TARGET = "salary-class"
CMC_TARGET = "contraceptive_method"
CMC_QID = tuple(c for c in datasets.CMC_COLUMNS if c != CMC_TARGET)

# Iyengar (KDD 2002, Section 5), as published: CM "around 0.18" for k = 10..500 when CM is
# optimized (Figure 6); LM "from 0.21 to 0.49 as k ranges from 10 to 500" when LM is optimized
# (Figure 7). Only these figures are in the text; the plotted points in between are not.
IYENGAR_CM = {k: "≈0.18" for k in (10, 25, 50, 100, 250, 500)}
IYENGAR_LM = {10: "0.21", 25: "(0.21–0.49)", 50: "(0.21–0.49)", 100: "(0.21–0.49)", 250: "(0.21–0.49)", 500: "0.49"}


# -- tasks and folds ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Task:
    """A data set's QIs, class label and hierarchies (for its categorical QIs)."""

    name: str
    qid: tuple[str, ...]
    target: str
    hierarchies: Mapping[str, Hierarchy]


@dataclass(frozen=True)
class Fold:
    """One train/test split, as two tables holding the QIs and the target."""

    index: int
    train: str
    test: str


def _project(con: duckdb.DuckDBPyConnection, source: str, name: str, columns: Sequence[str]) -> None:
    query = exp.select(*(g.col(c) for c in columns)).from_(g.table(source))
    con.execute(g.create_table_as(name, query, temporary=False, replace=True).sql(dialect=g.DIALECT))


def adult(con: duckdb.DuckDBPyConnection) -> tuple[Task, list[Fold]]:
    paths = datasets.load_adult_uci(con, "adult_train_full", split="train", replace=True)
    datasets.load_adult_uci(con, "adult_test_full", split="test", replace=True)
    columns = (*ADULT_QID, ADULT_TARGET)
    _project(con, "adult_train_full", "adult_train", columns)
    _project(con, "adult_test_full", "adult_test", columns)
    hierarchies = {q: load_hierarchy(paths[q]) for q in ADULT_QID if q != "age"}
    return Task("adult", ADULT_QID, ADULT_TARGET, hierarchies), [Fold(0, "adult_train", "adult_test")]


def cmc(con: duckdb.DuckDBPyConnection, folds: int, use: int, seed: int) -> tuple[Task, list[Fold]]:
    """Stratified ``folds``-fold cross-validation of CMC; only the first ``use`` folds are built."""
    hierarchies = datasets.load_cmc(con, "cmc", replace=True)
    frame = con.execute(exp.select("*").from_(g.table("cmc")).sql(dialect=g.DIALECT)).df()
    split = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    out = []
    for i, (train_idx, test_idx) in enumerate(split.split(frame, frame[CMC_TARGET])):
        if i >= use:
            break
        for part, idx in (("train", train_idx), ("test", test_idx)):
            name = f"cmc_f{i}_{part}"
            con.execute(g.drop(name, "TABLE").sql(dialect=g.DIALECT))
            con.from_df(frame.iloc[np.sort(idx)].reset_index(drop=True)).to_table(name)
        out.append(Fold(i, f"cmc_f{i}_train", f"cmc_f{i}_test"))
    return Task("cmc", CMC_QID, CMC_TARGET, hierarchies), out


# -- features ---------------------------------------------------------------------------------------
def original_features(frame: pd.DataFrame, task: Task, encoding: str) -> pd.DataFrame:
    """Unanonymized rows: ``ordinal`` (one number per QI: the value, or the leaf's DFS code) or
    ``one-hot`` (numeric QIs as numbers, one 0/1 column per leaf of each categorical QI)."""
    out: dict[str, Any] = {}
    for q in task.qid:
        h = task.hierarchies.get(q)
        if h is None:
            out[q] = frame[q].astype(float).to_numpy()
            continue
        codes = h.code_of(frame[q])
        if (codes < 0).any():
            raise ValueError(f"{task.name}: values of {q} outside its hierarchy: {h.missing(frame[q])}")
        if encoding == "ordinal":
            out[q] = codes.astype(float)
        else:
            for code, leaf in enumerate(h.leaves):
                out[f"{q}={leaf}"] = (codes == code).astype(float)
    return pd.DataFrame(out)


def region_columns(task: Task) -> list[str]:
    return [f"{q}__{side}" for q in task.qid for side in ("lo", "hi")]


def region_features(points: pd.DataFrame, task: Task, fill: pd.Series | None = None) -> tuple[pd.DataFrame, int]:
    """The 2d coordinates as floats; with ``fill``, rows with a NULL coordinate get ``fill``
    (the training domain) there. Returns the features and the number of such rows."""
    x = points[region_columns(task)].astype(float)
    missing = int(x.isna().any(axis=1).sum())
    if fill is not None and missing:
        x = x.fillna(fill)
    return x, missing


def domain_fill(x: pd.DataFrame) -> pd.Series:
    """Each ``__lo`` at its smallest training value, each ``__hi`` at its largest."""
    return pd.Series({c: (x[c].min() if c.endswith("__lo") else x[c].max()) for c in x.columns})


# -- classifiers ------------------------------------------------------------------------------------
def classifiers(seed: int, jobs: int) -> dict[str, Callable[[], Any]]:
    return {
        "decision tree": lambda: DecisionTreeClassifier(random_state=seed),
        "naive Bayes": lambda: GaussianNB(),
        "random forest": lambda: RandomForestClassifier(n_estimators=100, random_state=seed, n_jobs=jobs),
        "logistic regression": lambda: make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)),
    }


def evaluate(models: Mapping[str, Callable[[], Any]], x_train: pd.DataFrame, y_train: pd.Series,
             x_test: pd.DataFrame, y_test: pd.Series) -> tuple[dict[str, float], dict[str, float]]:
    """Test accuracy and fit+predict seconds of every classifier."""
    accuracy, seconds = {}, {}
    for name, make in models.items():
        start = time.perf_counter()
        model = make().fit(x_train, y_train)
        accuracy[name] = float(np.mean(model.predict(x_test) == y_test.to_numpy()))
        seconds[name] = time.perf_counter() - start
    return accuracy, seconds


def region_majority(train: pd.DataFrame, test: pd.DataFrame, target: str) -> tuple[float, int]:
    """Accuracy of predicting each test row's label by its region's training majority (ties to
    the smallest label); rows of no training region get the overall training majority.
    Returns the accuracy and the number of such rows."""
    counts = train.groupby(["eq_class", target]).size().reset_index(name="n")
    counts = counts.sort_values(["eq_class", "n", target], ascending=[True, False, True])
    majority = counts.drop_duplicates("eq_class").set_index("eq_class")[target]
    overall = train[target].value_counts().sort_index().idxmax()
    predicted = test["eq_class"].map(majority)
    fallback = int(predicted.isna().sum())
    predicted = predicted.fillna(overall)
    return float(np.mean(predicted.to_numpy() == test[target].to_numpy())), fallback


# -- one release ------------------------------------------------------------------------------------
def apply_function() -> Callable[..., Any]:
    try:
        from sqlanon.release.apply import apply
    except ImportError as e:
        raise SystemExit(f"sqlanon.apply is not available ({e}); the anonymized runs need it") from e
    return apply


def run_release(con: duckdb.DuckDBPyConnection, task: Task, fold: Fold, k: int, criterion: str,
                models: Mapping[str, Callable[[], Any]], request: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One release of the protocol; ``request``: the anonymize() arguments instead of the
    criterion's own (e.g. the single-dimensional searches, ``bench_singledim.py``)."""
    view = f"{task.name}_f{fold.index}_k{k}_{criterion}"
    if request is None:
        request = ({"target": task.target} if criterion == "infogain" else
                   {"target": task.target, "algorithm": sqlanon.TopDown()} if criterion == "tdr" else
                   {"algorithm": sqlanon.Mondrian(sqlanon.Median())})
    times: dict[str, float] = {}

    start = time.perf_counter()
    release = sqlanon.anonymize(con, fold.train, list(task.qid), k, hierarchies=dict(task.hierarchies),
                                output=sqlanon.Output(view=view, replace=True), **request)
    times["anonymize"] = time.perf_counter() - start

    start = time.perf_counter()
    m = sqlanon.metrics(con, release, targets=[task.target])
    times["metrics"] = time.perf_counter() - start

    start = time.perf_counter()
    train_points = sqlanon.regions(con, release, as_frame=True)
    times["regions_train"] = time.perf_counter() - start

    start = time.perf_counter()
    applied = apply_function()(con, release, fold.test, view=f"{view}_test", replace=True)
    times["apply"] = time.perf_counter() - start

    start = time.perf_counter()
    test_points = sqlanon.regions(con, release, table=applied.view, as_frame=True)
    times["regions_test"] = time.perf_counter() - start

    x_train, _ = region_features(train_points, task)
    x_test, filled = region_features(test_points, task, fill=domain_fill(x_train))
    accuracy, fit_seconds = evaluate(models, x_train, train_points[task.target], x_test, test_points[task.target])
    accuracy[MAJORITY], no_region = region_majority(train_points, test_points, task.target)
    times.update({f"fit {name}": s for name, s in fit_seconds.items()})
    return {
        "dataset": task.name, "fold": fold.index, "k": k, "criterion": criterion,
        "train_rows": m.rows, "test_rows": len(test_points), "classes": m.classes,
        "k_achieved": m.k_achieved, "avg_class_size": m.avg_class_size,
        "cond_entropy": m.cond_entropy[task.target], "entropy": m.entropy[task.target],
        "cm": m.cm[task.target], "lm": m.lm, "lm_per_qi": m.lm / len(task.qid), "gcp": m.gcp,
        "unplaced": applied.unplaced, "filled": filled, "no_region": no_region,
        "accuracy": accuracy, "seconds": times, "suppressed": m.suppressed,
    }  # fmt: skip


def run_baselines(con: duckdb.DuckDBPyConnection, task: Task, fold: Fold,
                  models: Mapping[str, Callable[[], Any]]) -> list[dict[str, Any]]:
    train = con.execute(exp.select("*").from_(g.table(fold.train)).sql(dialect=g.DIALECT)).df()
    test = con.execute(exp.select("*").from_(g.table(fold.test)).sql(dialect=g.DIALECT)).df()
    out = []
    for encoding in ("ordinal", "one-hot"):
        accuracy, seconds = evaluate(models, original_features(train, task, encoding), train[task.target],
                                     original_features(test, task, encoding), test[task.target])
        out.append({"dataset": task.name, "fold": fold.index, "encoding": encoding,
                    "train_rows": len(train), "test_rows": len(test), "accuracy": accuracy,
                    "seconds": {f"fit {n}": s for n, s in seconds.items()}})
    return out


# -- report -----------------------------------------------------------------------------------------
def _mean_sd(values: Sequence[float], digits: int = 3, sd: bool = False) -> str:
    mean = statistics.fmean(values)
    if sd and len(values) > 1:
        return f"{mean:.{digits}f} ± {statistics.stdev(values):.{digits}f}"
    return f"{mean:.{digits}f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Rows of cells under ``header`` as a Markdown table (the harness's printer)."""
    columns = [Column(h, str(i)) for i, h in enumerate(header)]
    return harness.table([{str(i): c for i, c in enumerate(row)} for row in rows], columns, markdown=True)


def accuracy_table(name: str, runs: list[dict], baselines: list[dict], models: Sequence[str]) -> str:
    cv = len({r["fold"] for r in baselines}) > 1
    columns = [*models, MAJORITY]
    rows = []
    for encoding in ("ordinal", "one-hot"):
        chosen = [b for b in baselines if b["dataset"] == name and b["encoding"] == encoding]
        rows.append(["–", f"original ({encoding})",
                     *(_mean_sd([b["accuracy"][c] for b in chosen], sd=cv) for c in models), "–"])
    for k in sorted({r["k"] for r in runs if r["dataset"] == name}):
        for criterion in CRITERION_NAMES:
            chosen = [r for r in runs if r["dataset"] == name and r["k"] == k and r["criterion"] == criterion]
            if chosen:
                rows.append([k, CRITERION_NAMES[criterion],
                             *(_mean_sd([r["accuracy"][c] for r in chosen], sd=cv) for c in columns)])
    return _table(["k", "training data", *columns], rows)


def metrics_table(name: str, runs: list[dict]) -> str:
    rows = []
    for k in sorted({r["k"] for r in runs if r["dataset"] == name}):
        for criterion in CRITERION_NAMES:
            chosen = [r for r in runs if r["dataset"] == name and r["k"] == k and r["criterion"] == criterion]
            if not chosen:
                continue

            def avg(key: str, digits: int = 3) -> str:
                return _mean_sd([r[key] for r in chosen], digits)

            def seconds(key: str) -> str:
                return _mean_sd([r["seconds"][key] for r in chosen], 2)

            rows.append([k, CRITERION_NAMES[criterion], avg("classes", 1), avg("avg_class_size", 1),
                         avg("cond_entropy"), avg("cm"), avg("lm"), avg("lm_per_qi"),
                         avg("unplaced", 1), avg("no_region", 1), seconds("anonymize"), seconds("apply"),
                         seconds("regions_test")])
    return _table(["k", "criterion", "classes", "avg class", "H(C|P) bits", "CM", "LM (sum)", "LM / |QI|",
                   "unplaced test rows", "test rows in no training class", "anonymize s", "apply s", "regions(test) s"],
                  rows)


def iyengar_table(runs: list[dict]) -> str:
    by = {(r["k"], r["criterion"]): r for r in runs if r["dataset"] == "adult"}
    rows = []
    for k in sorted({k for k, _ in by}):
        ig, md = by.get((k, "infogain")), by.get((k, "median"))
        rows.append([k, f"{ig['cm']:.3f}" if ig else "–", f"{md['cm']:.3f}" if md else "–", IYENGAR_CM.get(k, "–"),
                     f"{md['lm_per_qi']:.3f}" if md else "–", f"{ig['lm_per_qi']:.3f}" if ig else "–",
                     IYENGAR_LM.get(k, "–")])
    return _table(["k", "CM InfoGain", "CM Median", "Iyengar CM (GA optimizing CM)", "LM/8 Median",
                   "LM/8 InfoGain", "Iyengar LM (GA optimizing LM)"], rows)


def time_table(runs: list[dict], baselines: list[dict], wall: Mapping[str, float]) -> str:
    rows = []
    for name in wall:
        chosen = [r for r in runs if r["dataset"] == name]
        steps = {}
        for r in chosen:
            for step, s in r["seconds"].items():
                steps[step] = steps.get(step, 0.0) + s
        base = sum(s for b in baselines if b["dataset"] == name for s in b["seconds"].values())
        fit = sum(s for step, s in steps.items() if step.startswith("fit "))
        rows.append([name, len(chosen), f"{steps.get('anonymize', 0):.1f}", f"{steps.get('metrics', 0):.1f}",
                     f"{steps.get('regions_train', 0) + steps.get('regions_test', 0):.1f}",
                     f"{steps.get('apply', 0):.1f}", f"{fit:.1f}", f"{base:.1f}", f"{wall[name]:.1f}"])
    return _table(["data set", "releases", "anonymize s", "metrics s", "regions s", "apply s",
                   "classifiers s", "baselines s", "wall s"], rows)


# -- records ----------------------------------------------------------------------------------------
#: The scalars of a release kept as metrics (the per-step seconds go to the details).
RELEASE_METRICS = ("train_rows", "test_rows", "classes", "k_achieved", "avg_class_size", "cond_entropy", "entropy",
                   "cm", "lm", "lm_per_qi", "gcp", "unplaced", "filled", "no_region", "suppressed")


def _accuracy(accuracy: Mapping[str, float]) -> dict[str, float]:
    return {"acc_" + name.replace(" ", "_"): a for name, a in accuracy.items()}


def record_release(rec: harness.Recorder, run: Mapping[str, Any], **params: Any) -> dict[str, Any]:
    """One release of the protocol (:func:`run_release`) as a record named for its criterion."""
    return rec.record(run["criterion"], {"dataset": run["dataset"], "fold": run["fold"], "k": run["k"], **params},
                      run["seconds"]["anonymize"], None,
                      {**{m: run[m] for m in RELEASE_METRICS if m in run}, **_accuracy(run["accuracy"])},
                      {"seconds": run["seconds"]})  # fmt: skip


def record_baseline(rec: harness.Recorder, base: Mapping[str, Any]) -> dict[str, Any]:
    """One original-data baseline (:func:`run_baselines`) as a record."""
    return rec.record(f"original ({base['encoding']})", {"dataset": base["dataset"], "fold": base["fold"]}, None, None,
                      {"train_rows": base["train_rows"], "test_rows": base["test_rows"], **_accuracy(base["accuracy"])},
                      {"seconds": base["seconds"]})  # fmt: skip


# -- main ---------------------------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    parser = harness.arguments(__doc__, quick={"k": list(QUICK_K), "use_folds": 2})
    parser.add_argument("--k", type=int, nargs="+", default=list(ALL_K), help=f"values of k (default {ALL_K})")
    parser.add_argument("--datasets", nargs="+", choices=("adult", "cmc"), default=("adult", "cmc"))
    parser.add_argument("--criteria", nargs="+", choices=CRITERIA, default=CRITERIA)
    parser.add_argument("--folds", type=int, default=10, help="CMC cross-validation folds (default 10)")
    parser.add_argument("--use-folds", type=int, default=None, help="run only the first N CMC folds")
    parser.add_argument("--seed", type=int, default=0, help="seed of the folds and the classifiers")
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)), help="random forest n_jobs")
    args = parser.parse_args(argv)
    ks = tuple(args.k)
    use = args.use_folds if args.use_folds is not None else args.folds
    models = classifiers(args.seed, args.jobs)
    rec = harness.Recorder.start(__file__, args, ["scikit-learn"])

    con = duckdb.connect()
    runs: list[dict] = []
    baselines: list[dict] = []
    wall: dict[str, float] = {}
    for name in args.datasets:
        start = time.perf_counter()
        task, folds = adult(con) if name == "adult" else cmc(con, args.folds, use, args.seed)
        for fold in folds:
            for base in run_baselines(con, task, fold, models):
                baselines.append(base)
                record_baseline(rec, base)
            for k in ks:
                for criterion in args.criteria:
                    runs.append(run_release(con, task, fold, k, criterion, models))
                    record_release(rec, runs[-1], seed=args.seed)
        wall[name] = time.perf_counter() - start

    for name in args.datasets:
        folds = {b["fold"] for b in baselines if b["dataset"] == name}
        how = "UCI train/test" if name == "adult" else f"{len(folds)} of {args.folds} stratified folds, mean ± sd"
        print(f"\n### {name}: test accuracy ({how})\n")
        print(accuracy_table(name, runs, baselines, list(models)))
        print(f"\n### {name}: anonymized training sets (mean over folds) and recoding times\n")
        print(metrics_table(name, runs))
    if "adult" in args.datasets:
        print("\n### adult: Iyengar's metrics on the training set (LM as the per-QI average)\n")
        print(iyengar_table(runs))
    print("\n### time\n")
    print(time_table(runs, baselines, wall))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
