"""The optimal full-domain lattice (``search="optimal"``) and ARX's metrics.

* every ARX expectation of ``TestUtilityMetrics`` for Adult, k = 5 (DM, DM*, AECS, Loss, Precision,
  non-uniform entropy, height; 0 % and 5 % suppression) is reproduced by
  :mod:`sqlanon.model.utility` / :class:`~sqlanon.singledim.lattice.Lattice`;
* the search's optimum equals brute force over the whole lattice -- computed here independently
  with pandas from the hierarchies' ARX rows -- on small random tables and on Adult, for every
  metric, several k and suppression limits;
* with distinct / entropy / recursive (c, l)-diversity: the optimum equals brute force whose
  classes are judged by pandas from the definitions (fixed tables and hypothesis), the
  suppressed rows may grow upward (why nothing is tagged), Adult, DuckDB / PostgreSQL / Spark,
  ``apply(enforce=True)``, the CLI and release files, the refusals of TDR and the GA;
* the published release: one row per source row, every kept class >= k, the suppressed rows
  fully generalized with class NULL and at most the limit, on DuckDB and PostgreSQL (snapshot and
  live view) and Spark; the request's errors.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.errors import InputError, RecodingError
from sqlanon.model import utility
from sqlanon.model.hierarchy import Hierarchy
from sqlanon.model.privacy import DistinctLDiversity, EntropyLDiversity, RecursiveCLDiversity
from sqlanon.singledim.lattice import Lattice
from tests.support import ADULT_COLUMNS, ADULT_CSV, ADULT_HIERARCHIES, frame, load_frame, run
from tests.support.lattice import FLAT, SMALL, TREE, _brute, _compressed, _generalized, _random_frame

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "reference_TestUtilityMetrics_adult_k5.json"


def _adult_frame() -> pd.DataFrame:
    return pd.read_csv(ADULT_CSV, sep=";", dtype=str)


# -- ARX's own expectations --------------------------------------------------------------------
def test_arx_reference_values():
    ref = json.loads(REFERENCE.read_text())
    qid = ref["qid"]
    hierarchies = [Hierarchy.from_csv(ADULT_HIERARCHIES[q]) for q in qid]
    codes, y = _compressed(_adult_frame(), qid, hierarchies)
    lattice = Lattice(codes, y, hierarchies)
    k = ref["k"]
    compared = 0
    for case in ref["cases"]:
        name = case["metric"]
        for node in case["nodes"]:
            levels = node["levels"]
            t, _ = lattice.table(levels)
            c = lattice.classes(t, True)
            kept = c.n >= k
            S = utility.suppressed_rows(c.n, k)
            heights = lattice.heights.astype(float)
            if name.startswith("createLossMetric"):  # ARX's RANK aggregate: per QI, rounded down, descending
                got = sorted((math.floor(v * 1e10) / 1e10 for v in utility.loss_per_qi(c, kept)), reverse=True)
                assert got == pytest.approx(json.loads(node["expected"]), abs=1e-8), (name, levels)
                compared += 1
                continue
            got = {
                "createAECSMetric()": lambda: utility.aecs(c, kept),
                "createDiscernabilityMetric(false)": lambda: utility.dm(c, kept),
                "createDiscernabilityMetric(true)": lambda: utility.dm(c, np.ones_like(kept)),
                "createEntropyMetric()": lambda: lattice.entropy(levels, t, k),
                "createEntropyMetric(false)": lambda: lattice.entropy(levels, t, k),
                "createEntropyMetric(true)": lambda: lattice.entropy(levels, None, k),
                "createHeightMetric()": lambda: float(sum(levels)),
                "createPrecisionMetric(false)": lambda: utility.precision(lattice.total, S, np.array(levels, float), heights),
                "createPrecisionMetric(true)": lambda: utility.precision(lattice.total, 0, np.array(levels, float), heights),
            }[name]()
            expected = float(node["expected"])
            assert abs(got - expected) <= 1e-8 * max(1.0, abs(expected)), (name, case["suppression"], levels, got)
            # the search's own evaluation of the node agrees
            short = {"createAECSMetric()": "AECS", "createDiscernabilityMetric(false)": "DM",
                     "createEntropyMetric()": "Entropy", "createEntropyMetric(false)": "Entropy",
                     "createPrecisionMetric(false)": "Precision"}.get(name)
            if short:
                assert lattice.metric(short, levels, t, k) == pytest.approx(expected, rel=1e-10)
            compared += 1
    assert compared == sum(len(c["nodes"]) for c in ref["cases"]) == 177


# -- brute force, independently ----------------------------------------------------------------


def _diversity_fails(gen: pd.DataFrame, qid, sensitive: pd.Series, kind: str, l: float, c: float = 0.0) -> pd.Series:
    """Per row: whether its class fails distinct / entropy / recursive (c, l)-diversity of
    ``sensitive`` -- with pandas, from the definitions (Machanavajjhala et al.), not the
    constraint objects."""
    frame = gen[list(qid)].assign(_s=sensitive.to_numpy())
    counts = frame.groupby(list(qid) + ["_s"]).size()
    verdict = {}
    for cls, per in counts.groupby(level=list(range(len(qid)))):
        x = np.sort(per.to_numpy())[::-1].astype(float)
        if kind == "distinct":
            ok = len(x) >= l
        elif kind == "entropy":
            p = x / x.sum()
            ok = -(p * np.log(p)).sum() >= math.log(l) - 1e-9
        else:
            ok = x[0] < c * x[int(l) - 1:].sum()
        verdict[cls if isinstance(cls, tuple) else (cls,)] = not ok
    return pd.Series([verdict[tuple(r)] for r in frame[list(qid)].itertuples(index=False)], index=gen.index)


@pytest.mark.parametrize("seed", [0, 1])
def test_optimum_equals_brute_force_random(seed):
    df = _random_frame(seed, 60 + 20 * seed)
    qid = ["t", "s", "f"]
    hierarchies = [Hierarchy.from_dict(TREE), Hierarchy.from_dict(SMALL), Hierarchy.from_dict(FLAT)]
    codes, y = _compressed(df, qid, hierarchies, "lab")
    lattice = Lattice(codes, y, hierarchies)
    nodes = _generalized(df, qid, hierarchies, "lab")
    for metric in utility.METRICS:
        for k, fraction in ((2, 0.0), (4, 0.05), (6, 0.2)):
            limit = int(fraction * len(df))
            found = lattice.search(metric, k, limit).best
            expected = _brute(df, qid, hierarchies, metric, k, limit, "lab", nodes)
            assert found is not None and expected is not None
            assert found.levels == expected[1], (metric, k, fraction)
            assert found.value == pytest.approx(expected[2], rel=1e-9, abs=1e-12)
            assert found.suppressed == expected[3] <= limit


DIVERSITY = {"distinct": DistinctLDiversity("d", 3), "entropy": EntropyLDiversity("d", 2.5),
             "recursive": RecursiveCLDiversity("d", 2.0, 3)}


@pytest.mark.parametrize("kind", sorted(DIVERSITY))
@pytest.mark.parametrize("seed", [0, 1])
def test_optimum_with_diversity_equals_brute_force(kind, seed):
    """l-diversity: a class is kept only with >= k rows and the sensitive column diverse enough,
    judged here by pandas from the definitions; the search's optimum over every metric and
    several k and suppression limits is the brute-force one -- and differs from k's alone
    somewhere, so the constraint is really judged."""
    df = _random_frame(seed, 90 + 30 * seed)
    rng = np.random.default_rng(seed + 10)
    df["d"] = rng.choice(["d1", "d2", "d3", "d4", "d5"], len(df), p=[0.4, 0.25, 0.15, 0.1, 0.1])
    qid = ["t", "s", "f"]
    hierarchies = [Hierarchy.from_dict(TREE), Hierarchy.from_dict(SMALL), Hierarchy.from_dict(FLAT)]
    codes, y = _compressed(df, qid, hierarchies, "lab")
    vectors = np.column_stack([h.code_of(df[q].tolist()) for q, h in zip(qid, hierarchies)])
    keys, inverse = np.unique(vectors, axis=0, return_inverse=True)
    assert (keys == codes).all()
    sensitive = np.zeros((len(keys), 5), dtype=np.int64)
    np.add.at(sensitive, (inverse.ravel(), pd.factorize(df["d"], sort=True)[0]), 1)
    constraint = DIVERSITY[kind]
    lattice = Lattice(codes, y, hierarchies, {"d": sensitive}, [constraint])
    plain = Lattice(codes, y, hierarchies)
    nodes = _generalized(df, qid, hierarchies, "lab")
    l = constraint.l
    fails = {levels: _diversity_fails(gen, qid, df["d"], kind, l, getattr(constraint, "c", 0.0))
             for levels, gen in nodes}
    assert any(f.any() for f in fails.values()) and not all(f.any() for f in fails.values())
    differs = 0
    for metric in utility.METRICS:
        for k, fraction in ((2, 0.05), (4, 0.1), (3, 0.3)):
            limit = int(fraction * len(df))
            found = lattice.search(metric, k, limit).best
            expected = _brute(df, qid, hierarchies, metric, k, limit, "lab", nodes, fails)
            assert found is not None and expected is not None
            assert found.levels == expected[1], (metric, k, fraction)
            assert found.value == pytest.approx(expected[2], rel=1e-9, abs=1e-12)
            assert found.suppressed == expected[3] <= limit
            differs += found.levels != plain.search(metric, k, limit).best.levels
    assert differs > 0


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), rows=st.integers(30, 90), metric=st.sampled_from(utility.METRICS),
       kind=st.sampled_from(sorted(DIVERSITY)), l=st.sampled_from([1.5, 2, 3]), k=st.integers(1, 6),
       fraction=st.sampled_from([0.0, 0.05, 0.2, 0.5]))
def test_diversity_property(seed, rows, metric, kind, l, k, fraction):
    """Hypothesis: any small table (three sensitive values, skewed), any variant and parameter:
    the search's optimum is brute force's (None for both when no node satisfies)."""
    df = _random_frame(seed, rows)
    df["d"] = np.random.default_rng(seed).choice(["d1", "d2", "d3"], rows, p=[0.6, 0.3, 0.1])
    qid = ["t", "s", "f"]
    hierarchies = [Hierarchy.from_dict(TREE), Hierarchy.from_dict(SMALL), Hierarchy.from_dict(FLAT)]
    codes, y = _compressed(df, qid, hierarchies, "lab")
    vectors = np.column_stack([h.code_of(df[q].tolist()) for q, h in zip(qid, hierarchies)])
    _, inverse = np.unique(vectors, axis=0, return_inverse=True)
    values, sensitive_codes = np.unique(df["d"], return_inverse=True)
    sensitive = np.zeros((len(codes), len(values)), dtype=np.int64)
    np.add.at(sensitive, (inverse.ravel(), sensitive_codes), 1)
    c = 2.0
    constraint = {"distinct": DistinctLDiversity("d", int(l)), "entropy": EntropyLDiversity("d", float(l)),
                  "recursive": RecursiveCLDiversity("d", c, int(l))}[kind]
    nodes = _generalized(df, qid, hierarchies, "lab")
    fails = {levels: _diversity_fails(gen, qid, df["d"], kind, constraint.l, c) for levels, gen in nodes}
    limit = int(fraction * rows)
    found = Lattice(codes, y, hierarchies, {"d": sensitive}, [constraint]).search(metric, k, limit).best
    expected = _brute(df, qid, hierarchies, metric, k, limit, "lab", nodes, fails)
    if expected is None:
        assert found is None
        return
    assert found is not None and found.levels == expected[1] and found.suppressed == expected[3] <= limit
    assert found.value == pytest.approx(expected[2], rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("metric,k,fraction", [("DM", 50, 0.02), ("LM", 10, 0.01), ("AECS", 25, 0.04),
                                               ("Entropy", 5, 0.04), ("CM", 20, 0.01)])
def test_optimum_equals_brute_force_adult(metric, k, fraction):
    """Five Adult QIs (240 nodes): the search against every node evaluated from the bottom
    (the random tables above check the evaluation itself against pandas)."""
    df = _adult_frame()
    qid = ["sex", "age", "race", "marital-status", "education"]
    hierarchies = [Hierarchy.from_csv(ADULT_HIERARCHIES[q]) for q in qid]
    codes, y = _compressed(df, qid, hierarchies, "salary-class")
    lattice = Lattice(codes, y, hierarchies)
    limit = int(fraction * len(df))
    found = lattice.search(metric, k, limit)
    candidates = []
    for levels in lattice.all_nodes():
        t, _ = lattice.table(levels)
        S = utility.suppressed_rows(t.n, k)
        if S <= limit:
            if metric == "Precision":
                v = utility.precision(lattice.total, S, np.array(levels, float), lattice.heights.astype(float))
            elif metric == "Entropy":
                v = lattice.entropy(levels, t, k)
            else:
                v = utility.value(metric, lattice.classes(t, True), k)
            candidates.append((v, sum(levels), levels))
    best = min(candidates, key=lambda c: (round(c[0], 9), c[1], c[2]))
    assert found.best is not None and found.best.levels == best[2] and found.best.value == pytest.approx(best[0])
    assert found.checked + found.pruned <= lattice.size


def test_progress_and_pruning():
    df = _adult_frame()
    qid = list(ADULT_COLUMNS)
    hierarchies = [Hierarchy.from_csv(ADULT_HIERARCHIES[q]) for q in qid]
    codes, y = _compressed(df, qid, hierarchies)
    seen = []
    found = Lattice(codes, y, hierarchies).search("LM", 5, int(0.04 * len(df)), lambda n, best: seen.append((n, best)))
    assert found.pruned > 0 and found.checked < found.size == 12960
    assert seen[-1][0] == found.checked and seen[-1][1] == found.best
    assert [n for n, _ in seen] == sorted(n for n, _ in seen)


# -- the published release -----------------------------------------------------------------------
def _people(rows: int = 400, seed: int = 5) -> pd.DataFrame:
    df = _random_frame(seed, rows)
    return df


def _check_release(con, release, df: pd.DataFrame, k: int, fraction: float) -> pd.DataFrame:
    view = frame(con, f'SELECT * FROM "{release.view}" ORDER BY id')
    assert len(view) == len(df) and view["id"].tolist() == df["id"].tolist()
    assert view["lab"].tolist() == df["lab"].tolist()
    cls = view["eq_class"]
    suppressed = view[cls.isna()]
    assert len(suppressed) == release.suppressed <= int(fraction * len(df))
    for q in release.qid:  # fully generalized
        assert (suppressed[q] == "*").all()
    sizes = view[cls.notna()].groupby("eq_class").size()
    assert (sizes >= k).all()
    # full-domain: every kept row shows its value's ancestor at the node's level
    trees = {"t": Hierarchy.from_dict(TREE), "s": Hierarchy.from_dict(SMALL), "f": Hierarchy.from_dict(FLAT)}
    kept = view[cls.notna()]
    for q in release.qid:
        rows = {r[0]: r for r in trees[q].to_rows()}
        expected = df.loc[cls.notna().to_numpy(), q].map(lambda v: rows[v][release.outcome.levels[q]])
        assert kept[q].tolist() == expected.tolist()
    assert release.verification.ok and release.verification.unplaced == release.suppressed
    return view


@pytest.mark.engines("duckdb", "postgres")
@pytest.mark.parametrize("key", [None, "id"])
def test_release(con, key):
    df = _people()
    load_frame(con, "t", df)
    hierarchies = {"t": TREE, "s": SMALL, "f": FLAT}
    release = sqlanon.anonymize(con, "t", qid=["t", "s", "f"], k=12, hierarchies=hierarchies, target="lab",
                                suppression=0.05, algorithm=sqlanon.Optimal(metric="LM"),
                                output=sqlanon.Output(key=key))
    assert release.outcome.search == "optimal" and release.outcome.metric == "LM" and release.materialized == (key is None)
    hs = [Hierarchy.from_dict(x) for x in (TREE, SMALL, FLAT)]
    codes, y = _compressed(df, ["t", "s", "f"], hs)
    best = Lattice(codes, y, hs).search("LM", 12, int(0.05 * len(df))).best
    assert tuple(release.outcome.levels.values()) == best.levels and release.outcome.score == best.value
    assert release.suppressed == best.suppressed > 0  # the optimum suppresses here
    _check_release(con, release, df, 12, 0.05)
    m = sqlanon.metrics(con, release, targets=["lab"])
    assert m.lm == pytest.approx(best.value) and m.suppressed == release.suppressed
    assert m.aecs == pytest.approx(len(df) / (m.classes + 1))
    levels = np.array(best.levels, dtype=float)
    assert m.precision == pytest.approx(np.mean(((400 - best.suppressed) * levels / [3, 2, 1] + best.suppressed) / 400))
    if key is not None:
        assert release.verification.suppressed == (("suppressed by the recoding", release.suppressed, 0),)
    again = sqlanon.verify(con, release.view, ["t", "s", "f"], 12, class_column="eq_class")
    assert again.ok and again.unplaced == release.suppressed and again.leaked == 0
    assert again.suppression_limit == 20  # floor(0.05 * 400), from the manifest
    if key is None:  # a snapshot suppressing more than the limit fails verification
        big = frame(con, f'SELECT eq_class, count(*) AS n FROM "{release.view}" WHERE eq_class IS NOT NULL '
                         f'GROUP BY eq_class ORDER BY n DESC').iloc[0]
        # its snapshot edited: the view shows the class's rows suppressed, fully generalized
        run(con, f'UPDATE "{release.rowmap}" SET eq_class = NULL WHERE eq_class = {int(big["eq_class"])}')
        tampered = sqlanon.verify(con, release.view, ["t", "s", "f"], 12, class_column="eq_class")
        assert not tampered.ok and tampered.leaked == 0 and tampered.unplaced == release.suppressed + big["n"]


def test_adult_all_nine_columns(adult):
    con, hierarchies = adult
    release = sqlanon.anonymize(con, "adult", qid=list(ADULT_COLUMNS), k=5, hierarchies=hierarchies,
                                suppression=0.04, algorithm=sqlanon.Optimal(metric="DM"))
    assert release.outcome.levels == {"sex": 0, "age": 0, "race": 1, "marital-status": 2, "education": 3,
                              "native-country": 2, "workclass": 2, "occupation": 1, "salary-class": 1}
    assert release.suppressed == 105 and release.outcome.score == 7220555.0 and release.verification.ok
    assert sqlanon.metrics(con, release).dm == 7220555


def test_metric_cm_and_loss_on_adult(adult):
    con, hierarchies = adult
    qid = ["age", "education", "marital-status", "sex"]
    r = sqlanon.anonymize(con, "adult", qid=qid, k=50, hierarchies={q: hierarchies[q] for q in qid},
                          target="salary-class", suppression=0.01, algorithm=sqlanon.Optimal(metric="cm"))
    m = sqlanon.metrics(con, r, targets=["salary-class"])
    assert r.outcome.metric == "CM" and m.cm["salary-class"] == pytest.approx(r.outcome.score)
    loss = sqlanon.anonymize(con, "adult", qid=qid, k=50, hierarchies={q: hierarchies[q] for q in qid},
                             suppression=0.01, algorithm=sqlanon.Optimal(metric="LM"),
                             output=sqlanon.Output(view="adult_lm"))
    assert sqlanon.metrics(con, loss).lm == pytest.approx(loss.outcome.score)


@pytest.mark.spark
def test_spark_equals_duckdb(spark):
    from sqlanon.engine import engine_for

    """The lattice's release (with suppressed rows) on Spark equals DuckDB's (the GA publishes
    through the same code: only its search differs, which runs in numpy)."""
    df = _people(400, 5)
    df["d"] = np.random.default_rng(3).choice(["d1", "d2", "d3", "d4"], len(df), p=[0.55, 0.2, 0.15, 0.1])
    out = []
    for con in (duckdb.connect(), spark):
        engine_for(con).create_from_frame("t", df, replace=True)
        release = sqlanon.anonymize(con, "t", qid=["t", "s", "f"], k=12,
                                    hierarchies={"t": TREE, "s": SMALL, "f": FLAT}, suppression=0.05,
                                    algorithm=sqlanon.Optimal(metric="LM"),
                                    output=sqlanon.Output(view="t_opt", replace=True))
        assert release.verification.ok and release.suppressed == 10
        view = engine_for(con).fetch_frame("SELECT * FROM t_opt ORDER BY id")
        out.append((release.outcome.levels, release.suppressed, view.astype(object).where(view.notna(), None).values.tolist()))
        # recursive (c, l)-diversity: the sensitive value counts come from the same GROUP BY
        diverse = sqlanon.anonymize(con, "t", qid=["t", "s", "f"], k=8,
                                    hierarchies={"t": TREE, "s": SMALL, "f": FLAT}, suppression=0.15,
                                    privacy=[RecursiveCLDiversity("d", 1.5, 2)],
                                    algorithm=sqlanon.Optimal(metric="LM"),
                                    output=sqlanon.Output(view="t_div", replace=True))
        assert diverse.verification.ok and diverse.verification.checks[0].ok and diverse.suppressed == 60
        out.append((diverse.outcome.levels, diverse.suppressed))
    assert out[:2] == out[2:]


def test_errors(con):
    df = _people(50)
    load_frame(con, "t", df)
    with pytest.raises(RecodingError, match="hierarchy"):
        sqlanon.anonymize(con, "t", qid=["t", "s", "id"], k=5, hierarchies={"t": TREE, "s": SMALL},
                          algorithm=sqlanon.Optimal())
    with pytest.raises(InputError, match="metric"):
        sqlanon.anonymize(con, "t", qid=["t", "s"], k=5, hierarchies={"t": TREE, "s": SMALL},
                          algorithm=sqlanon.Optimal(metric="XYZ"))
    with pytest.raises(RecodingError, match="target"):
        sqlanon.anonymize(con, "t", qid=["t", "s"], k=5, hierarchies={"t": TREE, "s": SMALL},
                          algorithm=sqlanon.Optimal(metric="CM"))
    with pytest.raises(InputError, match="suppression"):
        sqlanon.anonymize(con, "t", qid=["t", "s"], k=5, hierarchies={"t": TREE, "s": SMALL}, suppression=1.5,
                          algorithm=sqlanon.Optimal())
    with pytest.raises(sqlanon.RemovedOptionError, match="Optimal"):  # the flat search= names its object
        sqlanon.anonymize(con, "t", qid=["t", "s"], k=5, hierarchies={"t": TREE, "s": SMALL}, search="optimal")
    with pytest.raises(RecodingError, match="suppression="):
        sqlanon.anonymize(con, "t", qid=["t", "s"], k=5, hierarchies={"t": TREE, "s": SMALL}, suppression=0.1,
                          algorithm=sqlanon.TopDown())
    with pytest.raises(TypeError, match="seed"):  # the genetic algorithm's seed: the lattice takes none
        sqlanon.Optimal(seed=3)


def _cli_files(tmp_path):
    """A DuckDB file with table ``t`` (:func:`_people`, 200 rows) and the two hierarchy files."""
    db = tmp_path / "t.duckdb"
    con = duckdb.connect(str(db))
    con.register("frame", _people(200))
    con.execute("CREATE TABLE t AS SELECT * FROM frame")
    con.close()
    files = []
    for name, tree in (("t", TREE), ("s", SMALL)):
        path = tmp_path / f"{name}.csv"
        path.write_text("".join(";".join(r) + "\n" for r in Hierarchy.from_dict(tree).to_rows()))
        files.append(path)
    return db, *files


def test_cli_and_release_file(tmp_path, capsys):
    import json as _json

    from sqlanon.cli import main

    db, tree, small = _cli_files(tmp_path)
    assert main(["anonymize", str(db), "t", "--qid", "t,s", "--k", "10", "--algorithm", "optimal",
                 "--metric", "LM", "--suppression", "0.05", "--hierarchy", f"t={tree}", "--hierarchy", f"s={small}",
                 "--json"]) == 0
    doc = _json.loads(capsys.readouterr().out)
    assert doc["outcome"]["search"] == "optimal" and doc["outcome"]["metric"] == "LM"
    assert set(doc["outcome"]["levels"]) == {"t", "s"}
    assert doc["suppressed"] <= 10 and doc["verification"]["ok"]
    toml = tmp_path / "release.toml"
    toml.write_text(f'[release]\ndatabase = "{db}"\ntable = "t"\nview = "ga"\nsuppression = 0.02\n'
                    f'[algorithm]\nname = "genetic"\nmetric = "CM"\nseed = 4\niterations = 50\n'
                    f'[[qi]]\nname = "t"\nhierarchy = "{tree}"\n[[qi]]\nname = "s"\nhierarchy = "{small}"\n'
                    f'[privacy]\nk = 8\n[workload]\ntarget = ["lab"]\n')
    assert sqlanon.Request.from_toml(toml).algorithm == sqlanon.Genetic(metric="CM", iterations=50, seed=4)
    assert main(["anonymize", "--config", str(toml), "--json"]) == 0
    doc = _json.loads(capsys.readouterr().out)
    assert doc["outcome"]["search"] == "genetic" and doc["outcome"]["metric"] == "CM" and doc["suppressed"] <= 4
    assert main(["anonymize", str(db), "t", "--qid", "t,s", "--k", "10", "--algorithm", "optimal",
                 "--metric", "LM", "--hierarchy", f"t={tree}", "--hierarchy", f"s={small}", "--view", "text"]) == 0
    out = capsys.readouterr().out
    assert "levels t=" in out and "suppressed" in out


# -- l-diversity: suppression, the release, the request ---------------------------------------
def test_diversity_suppression_grows_upward():
    """Why the search tags no node as satisfying (lattice module docstring): with entropy
    l-diversity the suppressed rows may *grow* when generalizing. Class x = {a, b} is 2-diverse,
    class y = {a x 10} is not; their union {a x 11, b} is not either: 10 rows suppressed at the
    bottom, 12 at the top -- so with a limit of 10 only the bottom satisfies."""
    h = Hierarchy.from_dict({"*": ["x", "y"]})
    codes = np.array([[h.code_of(["x"])[0]], [h.code_of(["y"])[0]]])
    y = np.array([[2], [10]])
    sensitive = np.array([[1, 1], [10, 0]])  # rows of a, b
    lattice = Lattice(codes, y, [h], {"d": sensitive}, [EntropyLDiversity("d", 2)])
    suppressed = [int(t.n[~lattice.kept(t, 1)].sum()) for t in (lattice.table((0,))[0], lattice.table((1,))[0])]
    assert suppressed == [10, 12]
    found = lattice.search("DM", 1, 10)
    assert found.best.levels == (0,) and found.best.suppressed == 10 and found.best.value == 4 + 12 * 10
    assert lattice.search("DM", 1, 9).best is None


def _diverse_classes(view: pd.DataFrame, sensitive: str, l: float) -> bool:
    """Every kept class of a published view has entropy of ``sensitive`` >= ln l (pandas)."""
    kept = view[view["eq_class"].notna()]
    p = kept.groupby("eq_class")[sensitive].value_counts(normalize=True)
    entropy = (-p * np.log(p)).groupby(level=0).sum()
    return bool((entropy >= math.log(l) - 1e-9).all())


def test_adult_entropy_l_diversity_on_occupation(adult):
    """Adult, five QIs, entropy 4-diversity of occupation within 2 % suppression: the release is
    the optimum over every node (each judged from the bottom), differs from k's alone (whose
    optimum has classes that are not 4-diverse), and its kept classes are 4-diverse (pandas)."""
    con, hierarchies = adult
    qid = ["age", "education", "marital-status", "sex", "race"]
    release = sqlanon.anonymize(con, "adult", qid=qid, k=5, hierarchies={q: hierarchies[q] for q in qid},
                                suppression=0.02, sensitive="occupation", l=4, algorithm=sqlanon.Optimal(metric="DM"))
    assert release.verification.ok and release.verification.unplaced == release.suppressed
    [check] = release.verification.checks
    assert check.ok and check.achieved >= 4 - 1e-9 and "entropy" in check.constraint
    df = _adult_frame()
    hs = [Hierarchy.from_csv(ADULT_HIERARCHIES[q]) for q in qid]
    codes, y = _compressed(df, qid, hs)
    vectors = np.column_stack([h.code_of(df[q].tolist()) for q, h in zip(qid, hs)])
    _, inverse = np.unique(vectors, axis=0, return_inverse=True)
    occupation, values = pd.factorize(df["occupation"], sort=True)
    sensitive = np.zeros((len(codes), len(values)), dtype=np.int64)
    np.add.at(sensitive, (inverse.ravel(), occupation), 1)
    lattice = Lattice(codes, y, hs, {"occupation": sensitive}, [EntropyLDiversity("occupation", 4)])
    limit = int(0.02 * len(df))
    candidates = []
    for levels in lattice.all_nodes():
        t, _ = lattice.table(levels)
        kept = lattice.kept(t, 5)
        S = int(t.n[~kept].sum())
        if S <= limit:
            candidates.append((utility.value("DM", lattice.classes(t, False), 5, kept), sum(levels), levels, S))
    best = min(candidates)
    assert tuple(release.outcome.levels.values()) == best[2]
    assert release.outcome.score == best[0] and release.suppressed == best[3]
    plain = Lattice(codes, y, hs).search("DM", 5, limit).best
    assert plain.levels != best[2] and plain.value < best[0]
    view = frame(con, f'SELECT * FROM "{release.view}"')
    assert len(view) == len(df) and (view[view["eq_class"].isna()][qid] == "*").all().all()
    assert _diverse_classes(view, "occupation", 4) and view.groupby("eq_class").size().min() >= 5
    assert sqlanon.metrics(con, release).dm == release.outcome.score


@pytest.mark.engines("duckdb", "postgres")
@pytest.mark.parametrize("key", [None, "id"])
def test_release_with_diversity(con, key):
    """Entropy and recursive (c, l)-diversity end to end (snapshot and live view): the node the
    lattice finds on the test's own compressed table, the view verified in SQL with the
    suppressed rows excluded, its kept classes diverse by pandas."""
    df = _people()
    df["d"] = np.random.default_rng(3).choice(["d1", "d2", "d3", "d4"], len(df), p=[0.55, 0.2, 0.15, 0.1])
    load_frame(con, "t", df)
    hs = [Hierarchy.from_dict(x) for x in (TREE, SMALL, FLAT)]
    codes, y = _compressed(df, ["t", "s", "f"], hs, "lab")
    vectors = np.column_stack([h.code_of(df[q].tolist()) for q, h in zip(["t", "s", "f"], hs)])
    _, inverse = np.unique(vectors, axis=0, return_inverse=True)
    sensitive = np.zeros((len(codes), 4), dtype=np.int64)
    np.add.at(sensitive, (inverse.ravel(), pd.factorize(df["d"], sort=True)[0]), 1)
    suppressed = []
    for options, constraint in (({"sensitive": "d", "l": 2.5}, EntropyLDiversity("d", 2.5)),
                                ({"privacy": [RecursiveCLDiversity("d", 1.5, 2)]}, RecursiveCLDiversity("d", 1.5, 2))):
        release = sqlanon.anonymize(con, "t", qid=["t", "s", "f"], k=8,
                                    hierarchies={"t": TREE, "s": SMALL, "f": FLAT}, target="lab", suppression=0.15,
                                    algorithm=sqlanon.Optimal(metric="LM"),
                                    output=sqlanon.Output(view="t_div", replace=True, key=key), **options)
        best = Lattice(codes, y, hs, {"d": sensitive}, [constraint]).search("LM", 8, int(0.15 * len(df))).best
        plain = Lattice(codes, y, hs).search("LM", 8, int(0.15 * len(df))).best
        assert best.levels != plain.levels  # the requirement matters here
        assert tuple(release.outcome.levels.values()) == best.levels and release.suppressed == best.suppressed
        assert release.verification.ok and release.verification.checks[0].ok
        assert release.verification.unplaced == release.suppressed
        view = frame(con, 'SELECT * FROM "t_div" ORDER BY id')
        assert view["id"].tolist() == df["id"].tolist() and view["d"].tolist() == df["d"].tolist()
        if isinstance(constraint, EntropyLDiversity):
            assert _diverse_classes(view, "d", 2.5)
        again = sqlanon.verify(con, "t_div", ["t", "s", "f"], 8, class_column="eq_class", constraints=[constraint])
        assert again.ok and again.unplaced == release.suppressed
        suppressed.append(release.suppressed)
        if key is None:  # the manifest records the constraint: apply enforces it on the same rows alike
            applied = sqlanon.apply(con, release, "t", view="t_again", replace=True, enforce=True)
            assert applied.enforced[1] == constraint.describe() and applied.suppressed_rows == release.suppressed
    assert suppressed[0] == 0 < suppressed[1]  # recursive (1.5, 2) suppresses 60 rows at its optimum


def test_diversity_errors(con):
    df = _people(60)
    load_frame(con, "t", df)
    common = {"qid": ["t", "s"], "k": 5, "hierarchies": {"t": TREE, "s": SMALL}}
    for algorithm in (sqlanon.TopDown(), sqlanon.Genetic()):  # k-anonymity only: Mondrian() or Optimal() judge more
        with pytest.raises(RecodingError, match="judges k-anonymity"):
            sqlanon.anonymize(con, "t", sensitive="f", l=2, algorithm=algorithm, **common)
        with pytest.raises(RecodingError, match="judges k-anonymity"):
            sqlanon.anonymize(con, "t", privacy=[DistinctLDiversity("f", 2)], algorithm=algorithm, **common)
    from sqlanon.model.privacy import VarianceDiversity
    with pytest.raises(RecodingError, match="needs the column's moments"):
        sqlanon.anonymize(con, "t", privacy=[VarianceDiversity("id", 1.0)], algorithm=sqlanon.Optimal(), **common)
    with pytest.raises(RecodingError, match="selections"):
        sqlanon.anonymize(con, "t", selections="t = 'a11'", algorithm=sqlanon.Optimal(), **common)
    with pytest.raises(InputError, match="sensitive= and l= go together"):
        sqlanon.anonymize(con, "t", sensitive="f", algorithm=sqlanon.Optimal(), **common)


def test_cli_diversity(tmp_path, capsys):
    import json as _json

    from sqlanon.cli import main

    db, tree, _ = _cli_files(tmp_path)
    base = ["anonymize", str(db), "t", "--qid", "t", "--k", "5", "--algorithm", "optimal",
            "--suppression", "0.05", "--hierarchy", f"t={tree}", "--sensitive", "s", "--json"]
    assert main(base + ["--l", "3", "--diversity", "recursive", "--c", "2"]) == 0
    doc = _json.loads(capsys.readouterr().out)
    assert doc["outcome"]["search"] == "optimal" and doc["verification"]["ok"] and doc["suppressed"] <= 10
    assert "recursive" in doc["verification"]["checks"][0]["constraint"]
    toml = tmp_path / "release.toml"
    toml.write_text(f'[release]\ndatabase = "{db}"\ntable = "t"\nview = "div"\nsuppression = 0.05\n'
                    f'[algorithm]\nname = "optimal"\nmetric = "DM"\n'
                    f'[[qi]]\nname = "t"\nhierarchy = "{tree}"\n'
                    f'[privacy]\nk = 5\nsensitive = ["s"]\nl = 4\ndiversity = "distinct"\n')
    assert main(["anonymize", "--config", str(toml), "--json"]) == 0
    doc = _json.loads(capsys.readouterr().out)
    assert doc["outcome"]["search"] == "optimal" and doc["verification"]["ok"]
    assert "distinct" in doc["verification"]["checks"][0]["constraint"]
