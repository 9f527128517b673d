"""pycanon's measures (k, l-diversity, entropy and recursive (c,l), t-closeness, delta-disclosure,
beta-likeness) computed by sqlanon in SQL agree with pycanon's own on shared data: the bundled
Adult data anonymized with sqlanon, and random tables with a numeric sensitive column. pycanon
is a test-only dependency (its functions loop in pandas per class, so the tables are small)."""

from __future__ import annotations

import math

import duckdb
import numpy as np
import pandas as pd
import pytest
from pycanon import anonymity

import sqlanon
from sqlanon.engine import engine_for
from tests.support import ADULT_CSV as ADULT
from tests.support import load_frame

# pycanon groups by a one-element list, which pandas 3 warns about (harmless here)
pytestmark = [pytest.mark.engines("duckdb", "postgres"),
              pytest.mark.filterwarnings("ignore:In a future version, the keys of `groups`")]


def pycanon_recursive_c(view: pd.DataFrame, qi: list[str], s: str, l: int) -> float:
    """pycanon's recursive c, restated from its source: counts sorted *ascending*."""
    worst = 0.0
    for _, rows in view.groupby(qi, dropna=False):
        r = np.sort(rows[s].value_counts(dropna=False).to_numpy())
        worst = max(worst, np.floor(r[0] / r[l - 1:].sum() + 1))
    return worst


def agree(view: pd.DataFrame, got: sqlanon.Measures, qi: list[str], s: str, numeric: bool) -> None:
    mine = got.of(s)
    assert got.k == anonymity.k_anonymity(view, qi)
    assert mine.l_distinct == anonymity.l_diversity(view, qi, [s])
    assert int(mine.l_entropy + 1e-12) == anonymity.entropy_l_diversity(view, qi, [s])
    c, l = anonymity.recursive_c_l_diversity(view, qi, [s])
    assert l == mine.recursive_l
    if l > 1:  # ours follows the paper (most frequent first); pycanon's sorts ascending
        assert c == pycanon_recursive_c(view, qi, s, l)
        assert mine.recursive_c >= 1
    t = anonymity.t_closeness(view, qi, [s])
    assert (mine.t_ordered if numeric else mine.t_equal) == pytest.approx(t, abs=1e-12)
    assert mine.delta == pytest.approx(anonymity.delta_disclosure(view, qi, [s]), abs=1e-12)
    assert mine.beta_basic == pytest.approx(anonymity.basic_beta_likeness(view, qi, [s]), abs=1e-12)
    assert mine.beta_enhanced == pytest.approx(anonymity.enhanced_beta_likeness(view, qi, [s]), abs=1e-12)


def test_adult_release_agrees_with_pycanon():
    """1,500 Adult rows anonymized (k = 50, entropy l-diversity of occupation): each measure of
    the published view, from sqlanon's SQL, equals pycanon's on the same view."""
    con = duckdb.connect()
    adult = pd.read_csv(ADULT, sep=";").head(1500)
    adult.insert(0, "id", np.arange(len(adult)))
    load_frame(con, "adult", adult, primary_key="id")
    release = sqlanon.anonymize(con, "adult", qid=["age", "sex", "race"], k=50, sensitive="occupation", l=3,
                                output=sqlanon.Output(view="adult_anon", replace=True))
    view = engine_for(con).fetch_frame('SELECT * FROM "adult_anon"')
    got = sqlanon.measures(con, release, sensitive=["occupation", "salary-class"])
    assert got.classes == release.partitions and got.rows == 1500 and got.suppressed == 0
    for s in ("occupation", "salary-class"):
        agree(view, got, ["eq_class"], s, numeric=False)
    assert got.of("occupation").l_entropy >= 3 - 1e-9  # the requirement it was made with


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_tables_agree_with_pycanon(seed):
    """Raw (unanonymized) relations grouped on their QI columns, a numeric sensitive column
    (pycanon's ordered t-closeness) and a text one (equal)."""
    rng = np.random.default_rng(seed)
    n = 300
    frame = pd.DataFrame({"a": rng.integers(0, 5, n), "b": rng.choice(["x", "y"], n),
                          "num": rng.choice([10, 20, 35, 50, 80], n, p=[0.4, 0.3, 0.15, 0.1, 0.05]),
                          "cat": rng.choice(["p", "q", "r", "s"], n)})
    con = duckdb.connect()
    load_frame(con, "r", frame)
    got = sqlanon.measures(con, "r", qid=["a", "b"], sensitive=["num", "cat"])
    agree(frame, got, ["a", "b"], "num", numeric=True)
    agree(frame, got, ["a", "b"], "cat", numeric=False)


def test_both_engines_measure_the_same(con):
    """The SQL runs on PostgreSQL as on DuckDB: a release's measures are the same numbers."""
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"id": np.arange(200), "a": rng.integers(0, 30, 200), "s": rng.choice(["x", "y", "z", None], 200)})
    load_frame(con, "t", frame, primary_key="id")
    release = sqlanon.anonymize(con, "t", qid=["a"], k=8, output=sqlanon.Output(view="t_anon", replace=True))
    got = sqlanon.measures(con, release, sensitive="s", hierarchies={"s": {"*": {"xy": ["x", "y"], "z": ["z"]}}})
    duck = duckdb.connect()
    load_frame(duck, "t", frame, primary_key="id")
    want = sqlanon.measures(duck, sqlanon.anonymize(duck, "t", qid=["a"], k=8, output=sqlanon.Output(view="t_anon")),
                            sensitive="s",
                            hierarchies={"s": {"*": {"xy": ["x", "y"], "z": ["z"]}}})
    assert (got.k, got.classes, got.rows) == (want.k, want.classes, want.rows)
    for field, value in vars(want.of("s")).items():
        mine = getattr(got.of("s"), field)
        assert mine == pytest.approx(value, abs=1e-12, nan_ok=True), field
    assert want.of("s").t_hierarchical is not None


def test_hand_computed():
    con = duckdb.connect()
    con.execute("CREATE TABLE r AS SELECT * FROM (VALUES (1, 'a'), (1, 'a'), (2, 'b'), (2, 'b'), (2, 'a')) v(q, s)")
    got = sqlanon.measures(con, "r", qid=["q"], sensitive="s").of("s")
    # q = (3/5, 2/5); class 1 = (1, 0), class 2 = (1/3, 2/3): delta |ln((1/3) / (3/5))| = ln(9/5)
    assert got.l_distinct == 1 and math.isnan(got.recursive_c)
    assert got.t_equal == pytest.approx(0.4) and got.t_ordered == pytest.approx(0.4)
    assert got.delta == pytest.approx(math.log(9 / 5)) and got.beta_basic == pytest.approx((2 / 3 - 2 / 5) / (2 / 5))
    assert got.beta_enhanced == pytest.approx(max(min(2 / 3, -math.log(0.6)), min(2 / 3, -math.log(0.4))))
