"""Single-dimensional releases in the database: every QID's k checked by independent SQL on the
view, single-dimensionality (each QI's published values partition its domain), one row per
source row with the other columns unchanged, anytime stops, Adult, the CLI and release files,
the release tools (apply, regions, metrics, report, verify) and the errors."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.cli import main
from sqlanon.errors import InputError, RecodingError, UnknownColumnError
from sqlanon.request.config import load_config
from tests.support import request_options

TREE = {"*": {"a": ["a1", "a2", "a3"], "b": {"b1": ["b11", "b12"], "b2": ["b21"]}}}
LEAVES = ["a1", "a2", "a3", "b11", "b12", "b21"]


def _load(con, df: pd.DataFrame, name: str = "t") -> None:
    con.execute(f'DROP TABLE IF EXISTS "{name}"')
    con.register("frame", df)
    con.execute(f'CREATE TABLE "{name}" AS SELECT * FROM frame')
    con.unregister("frame")


def _random_table(seed: int, rows: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "id": np.arange(rows),
        "num": rng.integers(0, 12, rows),
        "cat": rng.choice(LEAVES, rows),
        "txt": rng.choice(["p", "q", "r", "s"], rows),
        "day": pd.to_datetime("2020-01-01") + pd.to_timedelta(rng.integers(0, 9, rows), unit="D"),
        "y": rng.choice(["no", "yes"], rows, p=[0.6, 0.4]),
        "other": rng.normal(size=rows),
    })


def _published(q: str, view: pd.DataFrame) -> pd.Series:
    """A QI's published value per row: its label, or its (min, max) bounds."""
    if q in view.columns:
        return view[q].astype(str)
    return view[f"{q}_min"].astype(str) + ".." + view[f"{q}_max"].astype(str)


def check_single(con, release: sqlanon.Release, data: pd.DataFrame, qids) -> None:
    view = con.execute(f'SELECT * FROM "{release.view}" ORDER BY id').df()
    # one row per source row, the other columns unchanged
    assert len(view) == len(data)
    assert view["id"].tolist() == data["id"].tolist()
    assert np.array_equal(view["other"].to_numpy(), data["other"].to_numpy())
    assert view["y"].tolist() == data["y"].tolist()
    # every QID's k, by our own SQL grouping on its published columns
    for columns, k in qids:
        cols = [c for q in columns for c in ([q] if q in view.columns else [f"{q}_min", f"{q}_max"])]
        quoted = ", ".join(f'"{c}"' for c in cols)
        smallest = con.execute(f'SELECT min(n) FROM (SELECT count(*) AS n FROM "{release.view}" GROUP BY {quoted})').fetchone()[0]
        assert smallest >= k, (columns, k, smallest)
    # single-dimensional: each original value is published one way, and ordered QIs' intervals
    # are disjoint and hold their values
    for q in release.qid:
        shown = _published(q, view)
        assert (pd.DataFrame({"v": data[q].astype(str), "p": shown}).groupby("v")["p"].nunique() == 1).all(), q
        if f"{q}_min" in view.columns:
            bounds = view[[f"{q}_min", f"{q}_max"]].drop_duplicates().sort_values(f"{q}_min").to_numpy()
            assert all(bounds[i][1] < bounds[i + 1][0] for i in range(len(bounds) - 1)), q
            assert ((view[f"{q}_min"] <= data[q]) & (data[q] <= view[f"{q}_max"])).all(), q
    assert release.verification.ok
    assert len(release.verification.qids) == len(qids)
    # the release tools work unchanged on a grid of cuts
    m = sqlanon.metrics(con, release)
    assert m.rows == len(data)
    points = sqlanon.regions(con, release, as_frame=True)
    assert len(points) == len(data)
    applied = sqlanon.apply(con, release, "t", view=f"{release.view}_again", replace=True)
    again = con.execute(f'SELECT * FROM "{applied.view}" ORDER BY id').df()
    for q in release.qid:  # the rules recode the same rows the same way
        assert _published(q, again).tolist() == _published(q, view).tolist()


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(seed=st.integers(0, 2**31), rows=st.integers(20, 160), labelled=st.booleans(),
       shape=st.sampled_from(["one", "two", "three"]), k=st.integers(2, 9), steps=st.sampled_from([None, 0, 1, 3]))
def test_random_releases(seed: int, rows: int, labelled: bool, shape: str, k: int, steps: int | None) -> None:
    con = duckdb.connect()
    data = _random_table(seed, rows)
    _load(con, data)
    if shape == "one":
        request = {"qid": ["num", "cat", "txt", "day"], "k": k}
        qids = [(["num", "cat", "txt", "day"], k)]
    elif shape == "two":
        qids = [(["num", "cat"], k), (["cat", "txt", "day"], k + 3)]
        request = {"qids": qids}
    else:
        qids = [(["num"], k + 5), (["txt", "day"], k), (["num", "cat"], 2)]
        request = {"qids": qids}
    heard: list[sqlanon.Progress] = []
    release = sqlanon.anonymize(con, "t", hierarchies={"cat": TREE}, progress=heard.append,
                                target="y" if labelled else None, algorithm=sqlanon.TopDown(max_steps=steps),
                                **request_options(**request))
    assert [p.level for p in heard] == list(range(1, release.outcome.refinements + 1))
    if steps is not None:
        assert release.outcome.refinements <= steps
        assert any("budget" in n for n in release.notes) == (release.outcome.refinements == steps)
    check_single(con, release, data, qids)


def test_several_qids_distort_less_than_their_union():
    """Definition 1's point: <{num, cat}, k> and <{txt, day}, k> separately keep more detail than
    one QID of all four (more classes), and each QID holds."""
    con = duckdb.connect()
    data = _random_table(7, 400)
    _load(con, data)
    union = sqlanon.anonymize(con, "t", qid=["num", "cat", "txt", "day"], k=10, target="y",
                              hierarchies={"cat": TREE}, algorithm=sqlanon.TopDown(), output=sqlanon.Output(view="u"))
    split = sqlanon.anonymize(con, "t", target="y", hierarchies={"cat": TREE},
                              privacy=[sqlanon.KAnonymity(10, qid=["num", "cat"]), sqlanon.KAnonymity(10, qid=["txt", "day"])],
                              algorithm=sqlanon.TopDown(), output=sqlanon.Output(view="s"))
    assert split.partitions > union.partitions
    check_single(con, split, data, [(["num", "cat"], 10), (["txt", "day"], 10)])
    with pytest.raises(RecodingError, match="several QIDs"):  # apply's enforce knows one k
        sqlanon.apply(con, split, "t", view="enforced", enforce=True)
    # verify reads the QIDs from the manifest; a stricter k on a QID fails
    assert sqlanon.verify(con, "s", ["num", "cat", "txt", "day"], 1, class_column="eq_class").ok
    strict = sqlanon.verify(con, "s", ["num", "cat", "txt", "day"], 1, qids=[(["num", "cat"], 10**6)])
    assert not strict.ok and strict.qids[0].violating > 0


def test_adult(adult):
    con, hierarchies = adult
    qid = ["age", "sex", "race", "marital-status", "education", "native-country", "workclass", "occupation"]
    release = sqlanon.anonymize(con, "adult", qid=qid, k=50, target="salary-class",
                                hierarchies={q: hierarchies[q] for q in qid if q != "age"},
                                algorithm=sqlanon.TopDown())
    assert release.verification.ok and release.k_achieved >= 50
    assert release.outcome.refinements >= 5  # the brute-force oracle finds the same five on these data
    # single-dimensional: every age value lies in exactly one published interval
    ages = con.execute(f'SELECT DISTINCT age_min, age_max FROM "{release.view}" ORDER BY 1').fetchall()
    assert all(ages[i][1] < ages[i + 1][0] for i in range(len(ages) - 1))
    report = sqlanon.report(con, release.view, format="json")
    doc = json.loads(report)
    assert doc["verification"]["holds"] and doc["verification"]["qids"][0]["k"] == 50
    assert "QID age, sex, race" in sqlanon.report(con, release.view, format="markdown")
    gain = sqlanon.anonymize(con, "adult", qid=qid, k=50, hierarchies={q: hierarchies[q] for q in qid if q != "age"},
                             algorithm=sqlanon.TopDown(sqlanon.InfoGain("salary-class")),
                             output=sqlanon.Output(view="adult_gain"))
    assert gain.verification.ok and gain.k_achieved >= 50


def test_cli_and_release_file(tmp_path: Path, capsys):
    db = tmp_path / "t.duckdb"
    con = duckdb.connect(str(db))
    _load(con, _random_table(3, 300))
    con.close()
    tree = tmp_path / "cat.csv"
    tree.write_text("a1;a;*\na2;a;*\na3;a;*\nb11;b1;b;*\nb12;b1;b;*\nb21;b2;b;*\n")
    assert main(["anonymize", str(db), "t", "--algorithm", "topdown", "--qids", "num,cat:5", "--qids", "cat,txt:8",
                 "--hierarchy", f"cat={tree}", "--target", "y", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["algorithm"]["name"] == "topdown" and doc["qids"] == [[["num", "cat"], 5], [["cat", "txt"], 8]]
    assert doc["criterion"] == "score('y')"
    toml = tmp_path / "release.toml"
    toml.write_text(f'[release]\ndatabase = "{db}"\ntable = "t"\nview = "from_file"\n'
                    '[algorithm]\nname = "topdown"\nmax_steps = 2\n'
                    f'[[qi]]\nname = "num"\n[[qi]]\nname = "cat"\nhierarchy = "{tree}"\n'
                    f'[privacy]\nqids = [{{ columns = ["num", "cat"], k = 6 }}]\n'
                    f'[workload]\ntarget = ["y"]\ncriterion = "infogain"\n')
    load_config(toml)  # the file loads
    assert sqlanon.Request.from_toml(toml).privacy == (sqlanon.KAnonymity(6, qid=["num", "cat"]),)
    assert main(["anonymize", "--config", str(toml), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["outcome"]["refinements"] <= 2 and doc["criterion"] == "infogain('y')"
    # the reloaded release verifies its QIDs from the manifest
    assert main(["verify", str(db), "from_file", "--qid", "num,cat", "--k", "1", "--class-column", "eq_class"]) == 0
    assert "ok: QID num, cat: k=6" in capsys.readouterr().out
    con = duckdb.connect(str(db))
    v = sqlanon.verify(con, "from_file", ["num", "cat"], 1, class_column="eq_class")
    assert v.ok and [(q.qid, q.k) for q in v.qids] == [(("num", "cat"), 6)]


def test_errors_before_any_work():
    con = duckdb.connect()
    _load(con, _random_table(1, 50))
    before = con.execute("SELECT count(*) FROM duckdb_tables()").fetchone()[0]
    cases = [
        (UnknownColumnError, dict(qids=[(["num", "nope"], 3)], recoding="single")),
        (RecodingError, dict(qids=[(["num"], 3), (["txt"], 3)])),  # several QIDs need TopDown
        (RecodingError, dict(qid=["num"], k=3, recoding="single", selections="num > 3")),
        (RecodingError, dict(qid=["num"], k=3, recoding="single", sensitive="txt", l=2)),
        (RecodingError, dict(qid=["num"], k=3, recoding="single", target=["y", "txt"])),
        (RecodingError, dict(qid=["num"], k=3, criterion=sqlanon.Score("y"))),  # Score is TDR's
        (RecodingError, dict(qid=["num"], k=3, recoding="single", criterion=sqlanon.Median())),
        (InputError, dict(qid=["num"], k=3, qids=[(["num"], 3)], recoding="single")),
        (InputError, dict(qids=[(["num"], 10**6)], recoding="single")),
        (InputError, dict(qids=[("num", 3)], recoding="single")),  # a string is not a column list
        (InputError, dict(qid=["num"], k=3, algorithm="diagonal")),
    ]
    for error, kwargs in cases:
        with pytest.raises(error):
            sqlanon.anonymize(con, "t", **request_options(**kwargs))
    con.execute("UPDATE t SET txt = NULL WHERE id = 0")
    with pytest.raises(RecodingError, match="NULLs and no hierarchy"):
        sqlanon.anonymize(con, "t", qid=["txt"], k=3, algorithm=sqlanon.TopDown())
    assert con.execute("SELECT count(*) FROM duckdb_tables()").fetchone()[0] == before


def test_explain_shows_the_compression(tmp_path: Path, capsys):
    db = tmp_path / "t.duckdb"
    con = duckdb.connect(str(db))
    _load(con, _random_table(5, 100))
    con.close()
    assert main(["explain", str(db), "t", "--algorithm", "topdown", "--qids", "num,txt:5", "--target", "y"]) == 0
    text = capsys.readouterr().out
    assert "single-dimensional (top-down refinement), QIDs ['num', 'txt'] k=5" in text
    assert "Refine: one GROUP BY compresses the rows" in text and "_cells" in text  # the rows placed by a join
    con = duckdb.connect(str(db))
    assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE 't_anon%'").fetchone()[0] == 0


def test_live_view_keeps_every_qid():
    """A keyed source gets a live view; deleting rows until a group of one QID is below its k
    suppresses every row (fully generalized), and verify says why."""
    con = duckdb.connect()
    data = _random_table(11, 300)
    _load(con, data)
    con.execute("ALTER TABLE t ADD PRIMARY KEY (id)")
    qids = [(["num", "cat"], 10), (["txt", "day"], 20)]
    release = sqlanon.anonymize(con, "t", target="y", hierarchies={"cat": TREE},
                                privacy=[sqlanon.KAnonymity(qk, qid=qc) for qc, qk in qids],
                                algorithm=sqlanon.TopDown())
    assert not release.materialized
    check_single(con, release, data, qids)
    # shrink the smallest group of the first QID below 10
    smallest = con.execute(f'SELECT num_min, num_max, cat, count(*) AS n FROM "{release.view}" '
                           f'GROUP BY ALL ORDER BY n LIMIT 1').fetchone()
    doomed = con.execute(f'SELECT id FROM "{release.view}" WHERE num_min = ? AND num_max = ? AND cat = ?',
                         list(smallest[:3])).fetchall()
    for (i,) in doomed[: smallest[3] - 9]:
        con.execute("DELETE FROM t WHERE id = ?", [i])
    shown = con.execute(f'SELECT count(*), count(eq_class), count(DISTINCT cat) FROM "{release.view}"').fetchone()
    assert shown[1] == 0 and shown[2] == 1  # every row suppressed: no class, the hierarchy's root
    v = sqlanon.verify(con, release.view, ["num", "cat", "txt", "day"], 1, class_column="eq_class")
    assert v.ok and v.leaked == 0 and v.suppressed[0][0] == "a QID group below its k"
