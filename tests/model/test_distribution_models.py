"""delta-disclosure and beta-likeness as enforceable privacy models, end to end.

The definitions are ARX's (``DDisclosurePrivacy``, ``BasicBLikeness``, ``EnhancedBLikeness``):
with ``p`` a value's share in a class and ``q`` its share in the whole table, every value
*present* in a class must have ``|log2(p / q)| < delta``, resp. ``(p - q) / q <= beta`` (enhanced:
``<= min(beta, -ln q)``). The oracles below judge classes from those texts, with pandas, never
through the model objects; Mondrian (every memory path) and the lattice search are compared with
brute force on small tables.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.errors import InputError, RecodingError
from sqlanon.model.hierarchy import Hierarchy
from sqlanon.model.privacy.likeness import LikenessTest
from sqlanon.model.stats import ClassStats
from sqlanon.mondrian import sample as sample_mod
from sqlanon.mondrian.hypotheses import sample_constraints
from sqlanon.publish import manifest
from sqlanon.request import spec as spec_mod
from sqlanon.singledim.lattice import Lattice
from tests.support import frame, load_frame, run
from tests.support.lattice import FLAT, SMALL, TREE, _brute, _compressed, _generalized, _random_frame
from tests.support.mondrian import load, partition_of
from tests.support.reference_mondrian import reference_mondrian


# -- the oracle: ARX's definitions -------------------------------------------------------------
def fails(class_values: pd.Series, whole: pd.Series, model) -> bool:
    """Whether a class (its sensitive values) breaks ``model``, the table being ``whole``: from
    ARX's definitions, value by value over the values present in the class (NULL a value)."""
    p = class_values.fillna("<NULL>").value_counts() / len(class_values)
    q = whole.fillna("<NULL>").value_counts() / len(whole)
    for v in p.index:
        if isinstance(model, sqlanon.DeltaDisclosure):
            if abs(math.log2(Fraction(int(class_values.fillna("<NULL>").eq(v).sum()) * len(whole),
                                      len(class_values) * int(whole.fillna("<NULL>").eq(v).sum())))) >= model.delta:
                return True
        else:
            bound = min(model.beta, -math.log(q[v])) if model.enhanced else model.beta
            if (p[v] - q[v]) / q[v] > bound + 1e-9:
                return True
    return False


def oracle(df: pd.DataFrame, model):
    """``ok(rows)`` for the reference Mondrian: the child's rows satisfy ``model``."""
    column = df[model.sensitive]
    return lambda rows: not fails(column.iloc[list(rows)], column, model)


MODELS = [sqlanon.DeltaDisclosure("s", 1.0), sqlanon.DeltaDisclosure("s", 0.6), sqlanon.BetaLikeness("s", 1.0),
          sqlanon.BetaLikeness("s", 0.5), sqlanon.BetaLikeness("s", 2.0, enhanced=True)]


class _One:
    def counts(self, stats, column):
        return stats.counts[0]

    def moments(self, stats, column):
        raise AssertionError


# -- the numpy judgement -----------------------------------------------------------------------
@settings(max_examples=300, deadline=None)
@given(st.data())
def test_verdicts_match_arx(data):
    """Random table distributions and classes inside them: the vectorized verdict of every
    class at once equals ARX's definition class by class."""
    m = data.draw(st.integers(1, 5))
    table = np.array(data.draw(st.lists(st.integers(1, 30), min_size=m, max_size=m)))
    size = data.draw(st.integers(1, 6))
    classes = np.array([[data.draw(st.integers(0, int(t))) for t in table] for _ in range(size)])
    values = pd.Series(np.repeat([f"v{j}" for j in range(m)], table))
    model = data.draw(st.sampled_from([sqlanon.DeltaDisclosure("s", data.draw(st.floats(0.05, 3))),
                                       sqlanon.BetaLikeness("s", data.draw(st.floats(0.05, 3))),
                                       sqlanon.BetaLikeness("s", data.draw(st.floats(0.05, 3)), enhanced=True)]))
    bound = model.with_reference([f"v{j}" for j in range(m)], table)
    got = bound.allowed(ClassStats(classes.sum(axis=1), (classes,)), _One())
    for row, verdict in zip(classes, got):
        if row.sum() == 0:
            assert verdict  # an empty class is no class
            continue
        members = pd.Series(np.repeat([f"v{j}" for j in range(m)], row))
        assert verdict == (not fails(members, values, model)), (row, table, model)


def test_thresholds_as_arx_compares_them():
    """delta is strict (``|log2(p/q)| < delta``), beta is not (``(p-q)/q <= beta``): a class of
    {a, a} in a table half a has p/q = 2 for a -- 1 bit."""
    table, cls = np.array([2, 2]), np.array([[2, 0]])
    stats = ClassStats(np.array([2]), (cls,))
    assert not sqlanon.DeltaDisclosure("s", 1.0).with_reference(["a", "b"], table).allowed(stats, _One())[0]
    assert sqlanon.DeltaDisclosure("s", 1.0 + 1e-12).with_reference(["a", "b"], table).allowed(stats, _One())[0]
    assert sqlanon.BetaLikeness("s", 1.0).with_reference(["a", "b"], table).allowed(stats, _One())[0]
    assert not sqlanon.BetaLikeness("s", 0.999).with_reference(["a", "b"], table).allowed(stats, _One())[0]
    # enhanced: -ln(1/2) = 0.69 < 1 bounds the increase of a
    assert not sqlanon.BetaLikeness("s", 1.0, True).with_reference(["a", "b"], table).allowed(stats, _One())[0]
    # an absent value is not judged: {a} alone in a table of a and a rare b
    assert sqlanon.DeltaDisclosure("s", 0.2).with_reference(["a", "b"], np.array([99, 1])).allowed(
        ClassStats(np.array([1]), (np.array([[1, 0]]),)), _One())[0]
    with pytest.raises(ValueError, match="no reference distribution"):
        sqlanon.DeltaDisclosure("s", 1.0).allowed(stats, _One())


# -- Mondrian against brute force --------------------------------------------------------------
@st.composite
def small_tables(draw):
    n = draw(st.integers(6, 40))
    cols = {"q0": pd.Series(draw(st.lists(st.integers(0, draw(st.integers(1, 12))), min_size=n, max_size=n)),
                            dtype="Int64")}
    hierarchies = {}
    if draw(st.booleans()):
        leaves = [f"v{i}" for i in range(draw(st.integers(2, 5)))]
        cols["q1"] = pd.Series(draw(st.lists(st.sampled_from(leaves), min_size=n, max_size=n)), dtype=object)
        groups = draw(st.lists(st.integers(0, 1), min_size=len(leaves), max_size=len(leaves)))
        hierarchies["q1"] = [[leaf, f"g{g}", "*"] for leaf, g in zip(leaves, groups)]
    cols["s"] = pd.Series(draw(st.lists(st.sampled_from(["flu", "hiv", "cold", None]), min_size=n, max_size=n)),
                          dtype=object)
    model = draw(st.sampled_from(MODELS))
    return pd.DataFrame(cols), list(cols)[:-1], draw(st.integers(1, max(1, n // 4))), hierarchies, model


@pytest.mark.engines("duckdb")
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_tables(), st.sampled_from([0, 5, 10**9]))
def test_mondrian_equals_brute_force(case, memory_rows):
    """Mondrian with the model (SQL levels, in-memory finish, or both) partitions exactly as
    the reference Mondrian judging each child by ARX's definition; and verify agrees."""
    df, qid, k, hierarchies, model = case
    con = duckdb.connect()
    data = load(con, df).drop(columns=["id"])
    release = sqlanon.anonymize(con, "t", qid=qid, k=k, hierarchies=hierarchies, privacy=[model],
                                algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=memory_rows)))
    assert partition_of(con, release.view) == reference_mondrian(data, qid, k, hierarchies, ok=oracle(data, model))
    (check,) = release.verification.checks
    assert release.verification.ok and check.ok and check.constraint == model.describe()


def test_the_model_is_really_judged():
    """On a skewed table the model changes Mondrian's partition (and every class holds)."""
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"a": rng.integers(0, 60, 600),
                       "s": np.where(rng.random(600) < 0.8, "common", rng.choice(["r1", "r2", "r3"], 600))})
    df.loc[df["a"] < 10, "s"] = "r1"  # a corner where r1 dominates
    con = duckdb.connect()
    load(con, df)
    plain = partition_of(con, sqlanon.anonymize(con, "t", qid=["a"], k=5, output="plain").view)
    for model in (sqlanon.DeltaDisclosure("s", 1.0), sqlanon.BetaLikeness("s", 1.0)):
        release = sqlanon.anonymize(con, "t", qid=["a"], k=5, output=sqlanon.Output(view="m", replace=True),
                                    privacy=[model])
        view = frame(con, 'SELECT "eq_class", "s" FROM "m"')
        assert not any(fails(rows["s"], df["s"], model) for _, rows in view.groupby("eq_class"))
        assert partition_of(con, release.view) != plain


# -- the lattice against brute force -----------------------------------------------------------
@pytest.mark.parametrize("model", MODELS, ids=str)
@pytest.mark.parametrize("seed", [0, 1])
def test_lattice_equals_brute_force(model, seed):
    """The optimal full-domain node with the model judging each class (a failing class is
    suppressed) is brute force's, over several metrics, k and suppression limits."""
    df = _random_frame(seed, 120)
    df["d"] = np.random.default_rng(seed + 7).choice(["d1", "d2", "d3", "d4"], len(df), p=[0.55, 0.25, 0.15, 0.05])
    model = dataclasses.replace(model, sensitive="d")
    qid = ["t", "s", "f"]
    hierarchies = [Hierarchy.from_dict(TREE), Hierarchy.from_dict(SMALL), Hierarchy.from_dict(FLAT)]
    codes, y = _compressed(df, qid, hierarchies, "lab")
    vectors = np.column_stack([h.code_of(df[q].tolist()) for q, h in zip(qid, hierarchies)])
    _, inverse = np.unique(vectors, axis=0, return_inverse=True)
    values, value_codes = np.unique(df["d"], return_inverse=True)
    sensitive = np.zeros((len(codes), len(values)), dtype=np.int64)
    np.add.at(sensitive, (inverse.ravel(), value_codes), 1)
    bound = model.with_reference(list(values), np.bincount(value_codes))
    lattice = Lattice(codes, y, hierarchies, {"d": sensitive}, [bound])
    nodes = _generalized(df, qid, hierarchies, "lab")
    failing = {}
    for levels, gen in nodes:
        verdict = {key: fails(rows, df["d"], model) for key, rows in df["d"].groupby([gen[q] for q in qid])}
        failing[levels] = pd.Series([verdict[tuple(r)] for r in gen[qid].itertuples(index=False)], index=gen.index)
    assert any(f.any() for f in failing.values())
    for metric in ("DM", "LM", "AECS"):
        for k, fraction in ((2, 0.05), (4, 0.2), (3, 0.5)):
            limit = int(fraction * len(df))
            found = lattice.search(metric, k, limit).best
            expected = _brute(df, qid, hierarchies, metric, k, limit, "lab", nodes, failing)
            if expected is None:
                assert found is None
                continue
            assert found is not None and found.levels == expected[1] and found.suppressed == expected[3] <= limit
            assert found.value == pytest.approx(expected[2], rel=1e-9, abs=1e-12)


def test_lattice_release_and_variance_refused():
    """search='optimal' publishes a verified release with the model; a model that needs
    moments (variance diversity) is refused before any work."""
    df = _random_frame(4, 300)
    df["d"] = np.random.default_rng(4).choice(["d1", "d2", "d3"], len(df), p=[0.6, 0.3, 0.1])
    con = duckdb.connect()
    load_frame(con, "t", df)
    common = {"qid": ["t", "s", "f"], "k": 4, "hierarchies": {"t": TREE, "s": SMALL, "f": FLAT},
              "algorithm": sqlanon.Optimal(), "suppression": 0.1}
    for model in (sqlanon.DeltaDisclosure("d", 1.2), sqlanon.BetaLikeness("d", 0.8, enhanced=True)):
        release = sqlanon.anonymize(con, "t", **common, output=sqlanon.Output(view="t_anon", replace=True),
                                    privacy=[model])
        assert release.verification.ok and release.verification.checks[0].constraint == model.describe()
        view = frame(con, 'SELECT "eq_class", "d" FROM "t_anon" WHERE "eq_class" IS NOT NULL')
        assert not any(fails(rows["d"], df["d"], model) for _, rows in view.groupby("eq_class"))
    with pytest.raises(RecodingError, match="needs the column's moments"):
        sqlanon.anonymize(con, "t", **common, output="v", privacy=[sqlanon.VarianceDiversity("id", 1.0)])


# -- Rothko-S ----------------------------------------------------------------------------------
def _tables(con) -> set[str]:
    return {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}


def test_delta_disclosure_needs_the_exact_path(monkeypatch):
    """No sound sample test: strategy=Sample(...) is refused before any work; 'auto', where it
    would sample, partitions with Rothko-T instead (and beta-likeness, which has a test, samples)."""
    con = duckdb.connect()
    rng = np.random.default_rng(1)
    load_frame(con, "t", pd.DataFrame({"id": np.arange(4000), "a": rng.integers(0, 400, 4000),
                                       "b": rng.integers(0, 50, 4000), "s": rng.choice(list("pqrs"), 4000)}))
    before = _tables(con)
    with pytest.raises(InputError, match="cannot judge delta-disclosure"):
        sqlanon.anonymize(con, "t", qid=["a", "b"], k=5, privacy=[sqlanon.DeltaDisclosure("s", 1.0)],
                          algorithm=sqlanon.Mondrian(strategy=sqlanon.Sample(rows=500, memory_rows=400)))
    assert _tables(con) == before
    monkeypatch.setattr(sample_mod, "AUTO_MIN_ROWS", 1000)
    monkeypatch.setattr(spec_mod, "default_memory_rows", lambda engine: 400)  # "auto" samples 4,000 rows
    delta = sqlanon.anonymize(con, "t", qid=["a", "b"], k=5, output="d", privacy=[sqlanon.DeltaDisclosure("s", 1.0)],
                              algorithm=sqlanon.Mondrian())
    beta = sqlanon.anonymize(con, "t", qid=["a", "b"], k=5, output="b", privacy=[sqlanon.BetaLikeness("s", 1.0)],
                             algorithm=sqlanon.Mondrian())
    assert delta.algorithm.strategy == sqlanon.Levels(400)
    assert beta.algorithm.strategy == sqlanon.Sample(400, memory_rows=400)
    assert delta.verification.ok and beta.verification.ok and beta.verification.checks[0].ok
    view = frame(con, 'SELECT "eq_class", "s" FROM "b"')
    whole = frame(con, 'SELECT "s" FROM "t"')["s"]
    assert not any(fails(rows["s"], whole, sqlanon.BetaLikeness("s", 1.0)) for _, rows in view.groupby("eq_class"))


def test_beta_likeness_sample_test():
    """The one-sided proportion test per value: the model itself on the whole partition; on a
    sample, a child well inside every bound passes, one at or above a bound fails, and the
    test is more cautious than the model."""
    model = sqlanon.BetaLikeness("s", 1.0).with_reference(["a", "b", "c"], np.array([500, 300, 200]))
    assert sample_constraints([model], 1000, 1000, 0.95, 2) == (model,)
    (test,) = sample_constraints([model], 10_000, 1000, 0.95, 2)
    assert isinstance(test, LikenessTest) and test.min_size == 2
    children = np.array([[50, 30, 20],   # the table's shares: passes
                         [55, 5, 40],    # c at its bound 0.4 (= 2 q_c): the model passes, the test cannot
                         [40, 45, 15],   # b at 0.45 < 0.6: both pass
                         [10, 10, 80],   # c at 0.8 > 0.4: both fail
                         [1, 0, 0],      # one row: no test possible
                         [0, 0, 0]])     # empty: no class
    stats = ClassStats(children.sum(axis=1), (children,))
    assert model.allowed(stats, _One()).tolist() == [True, True, True, False, True, True]
    assert test.allowed(stats, _One()).tolist() == [True, False, True, False, False, True]


# -- verify, the live view, apply ----------------------------------------------------------------
@pytest.mark.engines("duckdb", "postgres")
@pytest.mark.parametrize("model", [sqlanon.DeltaDisclosure("s", 1.0), sqlanon.BetaLikeness("s", 0.7, enhanced=True)],
                         ids=str)
def test_verify_catches_a_tampered_view(con, model):
    """A release verifies; a copy of its view where one class's sensitive values were all set to
    one value fails verify, with the violating classes counted as the oracle counts them; the
    manifest records the model exactly (its text and its record)."""
    rng = np.random.default_rng(5)
    df = pd.DataFrame({"id": np.arange(400), "a": rng.integers(0, 80, 400), "s": rng.choice(list("pqrst"), 400)})
    load_frame(con, "t", df, primary_key="id")
    release = sqlanon.anonymize(con, "t", qid=["a"], k=8, output=sqlanon.Output(view="t_anon", replace=True),
                                privacy=[model])
    assert release.verification.ok and release.verification.checks[0].ok
    recorded = manifest.read(con, "t_anon")
    assert recorded.constraint_objects[1:] == (model,) and recorded.constraints[1] == model.describe()
    again = sqlanon.verify(con, "t_anon", ["a"], 8, class_column="eq_class", constraints=[model])
    assert again.ok and again.checks[0].measure == model.measure
    run(con, 'DROP TABLE IF EXISTS "tampered"')
    run(con, 'CREATE TABLE "tampered" AS SELECT "a_min", "a_max", "eq_class", '
             'CASE WHEN "eq_class" = (SELECT min("eq_class") FROM "t_anon") THEN \'p\' ELSE "s" END AS "s" '
             'FROM "t_anon"')
    tampered = frame(con, 'SELECT * FROM "tampered"')
    expected = sum(fails(rows["s"], tampered["s"], model) for _, rows in tampered.groupby("eq_class"))
    result = sqlanon.verify(con, "tampered", ["a"], 8, constraints=[model])
    assert expected >= 1 and not result.ok and result.checks[0].violating == expected


def test_live_view_and_apply_enforce_the_model():
    """The live view re-measures the model when read: after deletes, a class that drifted is
    suppressed as a whole with the model's reason; apply(enforce=True) suppresses the same
    kind of class in new data."""
    con = duckdb.connect()
    balanced = (["a"] * 10 + ["b"] * 10) * 3
    df = pd.DataFrame({"id": np.arange(60), "q": [1] * 20 + [2] * 20 + [3] * 20, "s": balanced})
    load_frame(con, "t", df, primary_key="id")
    model = sqlanon.BetaLikeness("s", 0.4)
    release = sqlanon.anonymize(con, "t", qid=["q"], k=10, output="t_anon", privacy=[model])
    assert not release.materialized and release.partitions == 3
    # class q=3 keeps its ten a's: the table is 3/5 a, the class all a: (1 - 3/5) / (3/5) = 0.67 > 0.4;
    # the other classes are half b, the table 2/5 b: (1/2 - 2/5) / (2/5) = 0.25
    run(con, 'DELETE FROM "t" WHERE "q" = 3 AND "s" = \'b\'')
    after = frame(con, 'SELECT * FROM "t_anon" ORDER BY "id"')
    assert after["eq_class"].notna().tolist() == [True] * 40 + [False] * 10
    checked = sqlanon.verify(con, "t_anon", ["q"], 10, class_column="eq_class", constraints=[model])
    assert checked.ok and [r for r in checked.suppressed if "beta" in r[0]] == [(f"violates {model.describe()}", 10, 1)]
    load_frame(con, "new", frame(con, 'SELECT * FROM "t"'))
    applied = sqlanon.apply(con, release, "new", view="new_anon", enforce=True)
    assert applied.enforced == ("k-anonymity(k=10)", model.describe()) and applied.suppressed_rows == 10


# -- report, CLI, release file, argument checks ----------------------------------------------------
def test_report_line():
    con = duckdb.connect()
    rng = np.random.default_rng(8)
    load_frame(con, "t", pd.DataFrame({"id": np.arange(300), "a": rng.integers(0, 50, 300),
                                       "s": rng.choice(list("pqr"), 300)}))
    model = sqlanon.DeltaDisclosure("s", 1.5)
    release = sqlanon.anonymize(con, "t", qid=["a"], k=5, privacy=[model])
    text = sqlanon.report(con, release, format="markdown")
    achieved = release.verification.checks[0].achieved
    assert f"| {model.describe()} | worst class {achieved:.4g} (max |log2(p/q)|)" in text.replace("\\|", "|")


def test_cli_and_release_file(tmp_path, capsys):
    from sqlanon.cli import main

    path = tmp_path / "db.duckdb"
    db = duckdb.connect(str(path))
    rng = np.random.default_rng(2)
    load_frame(db, "t", pd.DataFrame({"id": np.arange(300), "age": rng.integers(0, 60, 300),
                                      "s": rng.choice(list("abcd"), 300)}), primary_key="id")
    db.close()
    assert main(["anonymize", str(path), "t", "--qid", "age", "--k", "4", "--delta-disclosure", "s=1.2",
                 "--beta-likeness", "s=1,enhanced=true"]) == 0
    capsys.readouterr()
    args = ["verify", str(path), "t_anon", "--qid", "age", "--k", "4", "--class-column", "eq_class"]
    assert main(args + ["--delta-disclosure", "s=1.2", "--beta-likeness", "s=1,enhanced=true"]) == 0
    out = capsys.readouterr().out
    assert "delta-disclosure('s', delta=1.2)" in out and "enhanced beta-likeness('s', beta=1)" in out
    assert main(args + ["--beta-likeness", "s=0.001"]) == 1
    for bad in (["--delta-disclosure", "s"], ["--delta-disclosure", "s=x"], ["--delta-disclosure", "s=0"],
                ["--beta-likeness", "s=1,nope=2"]):
        assert main(args + bad) == 2, bad
    config = tmp_path / "release.toml"
    config.write_text(f'[release]\ndatabase = "{path}"\ntable = "t"\nview = "t2"\n[[qi]]\nname = "age"\n'
                      '[privacy]\nk = 4\ndelta_disclosure = { s = 1.5 }\n'
                      'beta_likeness = { s = { beta = 2.0, enhanced = true } }\n')
    assert main(["anonymize", "--config", str(config)]) == 0
    db = duckdb.connect(str(path), read_only=True)
    assert manifest.read(db, "t2").constraint_objects[1:] == (sqlanon.DeltaDisclosure("s", 1.5),
                                                              sqlanon.BetaLikeness("s", 2.0, True))
    db.close()
    from sqlanon.request.config import ConfigError, load_config

    for body, fragment in [("delta_disclosure = 3", "must be a table"),
                           ("beta_likeness = { s = -1 }", "privacy.beta_likeness.s: BetaLikeness beta must be"),
                           ("beta_likeness = { s = { beta = 1, strength = 2 } }", "unknown parameter 'strength'")]:
        config.write_text(f'[release]\ntable = "t"\n[[qi]]\nname = "age"\n[privacy]\nk = 4\n{body}\n')
        with pytest.raises(ConfigError, match=fragment.replace("(", r"\(")):
            load_config(config)


@pytest.mark.parametrize("model, fragment", [
    (sqlanon.DeltaDisclosure("s", 0), "delta must be a number > 0"),
    (sqlanon.DeltaDisclosure("s", float("nan")), "delta must be a number > 0"),
    (sqlanon.BetaLikeness("s", 0.0), "beta must be a number > 0"),
    (sqlanon.BetaLikeness("s", 1.0, enhanced="yes"), "enhanced must be True or False"),
    (sqlanon.DeltaDisclosure("", 1.0), "sensitive column's name"),
    (sqlanon.BetaLikeness("nope", 1.0), "'nope'"),
], ids=str)
def test_bad_models_fail_before_any_work(model, fragment):
    con = duckdb.connect()
    load_frame(con, "t", pd.DataFrame({"id": np.arange(20), "a": np.arange(20), "s": list("ab") * 10}))
    before = _tables(con)
    with pytest.raises(InputError, match=fragment):
        sqlanon.anonymize(con, "t", qid=["a"], k=2, privacy=[model])
    assert _tables(con) == before
