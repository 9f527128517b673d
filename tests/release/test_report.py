"""The release report: its numbers against sqlanon.metrics / sqlanon.verify and brute-force pandas
oracles, the three renderings, and the HTML rendered by headless Chromium (screenshot and DOM)."""

from __future__ import annotations

import json
import math
import re
import shutil
import struct
import subprocess
import zlib
from fractions import Fraction
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

import sqlanon
from sqlanon.publish import manifest
from sqlanon.publish.view import CHANGED
from sqlanon.release.imprecision import imprecision as imprecision_of
from sqlanon.release.report import (
    WIDTH_BUCKETS,
    class_size_bins,
    collect,
    recorded_constraints,
    release_workload,
    render,
    report,
)
from tests.support import (
    ADULT_COLUMNS,
    ADULT_CSV,
    ADULT_HIERARCHIES,
    frame,
    is_postgres,
    load_adult,
    load_frame,
    quote,
    rows,
    run,
)

pytestmark = pytest.mark.engines("duckdb", "postgres")

ADULT_QID = ["age", "sex", "education", "marital-status"]


def _load_adult_keyed(con, key: str) -> dict[str, str]:
    """Adult (as the ``adult`` fixture loads it) with a first column ``key`` numbering its rows
    from 0, in file order."""
    data = pd.read_csv(ADULT_CSV, sep=";", quoting=3, keep_default_na=False,
                       dtype={c: ("int64" if c == "age" else str) for c in ADULT_COLUMNS})[list(ADULT_COLUMNS)]
    data.insert(0, key, np.arange(len(data), dtype=np.int64))
    load_frame(con, "adult", data, types={c: ("BIGINT" if c in ("age", key) else "VARCHAR") for c in data.columns})
    return dict(ADULT_HIERARCHIES)


def _adult_release(con, key: bool):
    """Adult, InfoGain on salary-class with entropy 2-diversity of occupation. Adult has no key:
    without one the release is a view of a snapshot; with ``key`` an ``id`` numbering Adult's rows is
    added and passed as ``key=``, and the release is a live view with a row map."""
    if key:
        hierarchies = _load_adult_keyed(con, "id")
    else:
        hierarchies = load_adult(con)
    release = sqlanon.anonymize(con, "adult", ADULT_QID, 20, hierarchies={q: hierarchies[q] for q in ADULT_QID[1:]},
                                sensitive="occupation", l=2, target="salary-class",
                                output=sqlanon.Output(key="id" if key else None))
    assert release.materialized is not key and release.key == (("id",) if key else None)
    return con, release


@pytest.fixture
def adult_release(con):
    """The snapshot release: its metrics are bit-for-bit reproducible (over a live view DuckDB's
    parallel aggregation may sum floats in another order from one read to the next)."""
    return _adult_release(con, key=False)


@pytest.fixture
def adult_live_release(con):
    """The live-view release (a view and a row map)."""
    return _adult_release(con, key=True)


# -- numbers --------------------------------------------------------------------------------------
def test_json_metrics_are_exactly_metrics_as_dict(adult_release):
    con, release = adult_release
    document = json.loads(report(con, release, format="json"))
    # default: the release's own workload (criterion's target, constrained sensitive column)
    assert document["metrics"] == sqlanon.metrics(con, release, targets=["salary-class"],
                                                  sensitive=["occupation"]).as_dict()
    document = json.loads(report(con, release.view, format="json", targets=["race"],
                                 sensitive=["workclass", "occupation"]))
    assert document["metrics"] == sqlanon.metrics(con, release, targets=["race"],
                                                  sensitive=["workclass", "occupation"]).as_dict()
    assert document["requirement"] == {"k": 20, "constraints": ["k-anonymity(k=20)",
                                                                "entropy l-diversity('occupation', l=2)"],
                                       "criterion": "infogain('salary-class')"}
    v = sqlanon.verify(con, release.view, ADULT_QID, 20, class_column="eq_class",
                       constraints=[sqlanon.EntropyLDiversity("occupation", 2)])
    assert document["verification"]["holds"] is True
    assert {k: document["verification"][k] for k in ("ok", "k_achieved", "classes", "rows", "violating")} == \
        {"ok": v.ok, "k_achieved": v.k_achieved, "classes": v.classes, "rows": v.rows, "violating": v.violating}
    assert [c["achieved"] for c in document["verification"]["checks"]] == [c.achieved for c in v.checks]


def test_class_sizes_and_objects_against_pandas(adult_live_release):
    con, release = adult_live_release
    data = collect(con, release)
    view = frame(con, f"SELECT eq_class FROM {quote(release.view)}")
    sizes = view["eq_class"].value_counts().value_counts().sort_index()
    assert data.class_sizes == tuple((int(s), int(c)) for s, c in sizes.items())
    bins = class_size_bins(data.class_sizes)
    assert bins[0][0] == data.class_sizes[0][0] and bins[-1][1] == data.class_sizes[-1][0]
    assert all(a[1] + 1 == b[0] for a, b in zip(bins, bins[1:]))  # contiguous, inclusive bounds
    assert sum(b[2] for b in bins) == data.metrics.classes and sum(b[3] for b in bins) == len(view)
    counts = {o.role: (o.name, o.kind, o.rows) for o in data.objects}
    for role, name in (("rules", release.rules), ("row map", release.rowmap), ("hierarchies", release.hierarchies)):
        assert counts[role] == (name, "table", con.execute(f"SELECT count(*) FROM {quote(name)}").fetchone()[0])
    assert counts["published"] == (release.view, "view", len(view))
    assert data.timings == release.timings and data.elapsed == release.elapsed
    assert collect(con, release.view).timings is None  # by name: the manifest has no timings



def test_summary_preview_and_published_values_against_pandas(adult_live_release):
    """The board's view: the preview is the view's first rows in class order, each QI's published
    values are counted exactly (pandas groupby), the summary card comes first and the full
    metrics table last, folded."""
    con, release = adult_live_release
    data = collect(con, release)
    view = frame(con, f"SELECT * FROM {quote(release.view)}")
    columns = list(data.preview[0])
    assert columns == list(view.columns) and len(data.preview[1]) == 8
    order = [release.class_column, *(c for c in columns if c != release.class_column)]
    expected = view.sort_values(order, na_position="last", kind="stable").head(8)
    assert [tuple(row) for row in data.preview[1]] == [tuple(None if pd.isna(v) else v for v in row)
                                                        for row in expected.itertuples(index=False)]
    for qi in ADULT_QID:
        cols = [f"{qi}_min", f"{qi}_max"] if qi == "age" else [qi]  # age ordered, the others hierarchical
        counts = view.groupby(cols, dropna=False).size()
        distinct, top = data.bands[qi]
        assert distinct == len(counts), qi
        assert [rows for _, rows in top] == sorted(counts.tolist(), reverse=True)[:len(top)], qi
        assert sum(rows for _, rows in top) <= len(view)
    document = json.loads(render(data, "json"))
    assert document["published_values"]["sex"]["distinct"] == data.bands["sex"][0]
    assert document["preview"]["columns"] == columns
    html_text = render(data, "html")
    assert html_text.index('id="summary"') < html_text.index('id="preview"') < html_text.index('id="published-values"') \
        < html_text.index('id="requirement"') < html_text.index('id="metrics"')
    assert "<details>" in html_text[html_text.index('id="metrics"'):] and 'class="mark"' in html_text
    assert f">k = {release.k}<" in html_text
    md = render(data, "markdown")
    assert md.index("## Summary: HOLDS") < md.index("## What an analyst sees") < md.index("## All metrics")


@pytest.mark.engines("duckdb")
def test_k_mark_sits_where_k_falls_on_the_histogram():
    from sqlanon.release.report import _k_mark
    bins = [(10, 19, 5, 70), (20, 29, 3, 70), (30, 30, 1, 30)]
    assert _k_mark(bins, 10) == (0.0, "k = 10")      # every class at least k: the first bar's left edge
    assert _k_mark(bins, 25) == (1.5, "k = 25")      # inside the second bin, halfway
    assert _k_mark(bins, 40) == (3.0, "k = 40")      # beyond every bar (a failing release)


@pytest.mark.parametrize("sizes", [[(5, 3)], [(5, 1), (7, 2), (30, 1)], [(k, k % 3 + 1) for k in range(10, 200, 7)],
                                   [(10, 5), (11, 2), (5000, 1)]])
def test_class_size_bins_partition_the_distribution(sizes):
    bins = class_size_bins(sizes)
    assert 1 <= len(bins) <= 24
    for size, _count in sizes:
        (owner,) = [b for b in bins if b[0] <= size <= b[1]]
    assert sum(b[2] for b in bins) == sum(c for _, c in sizes)
    assert sum(b[3] for b in bins) == sum(s * c for s, c in sizes)


def _cell_loss_oracle(con, view: str, rules: str, qi: str, kind: str, m) -> list[Fraction]:
    """Per row of the view, the NCP cell loss of ``qi``, exactly, in plain Python (the definition
    in sqlanon.metrics; integer QI bounds, so the losses are fractions)."""
    if kind == "hierarchy":
        h = m.hierarchies[qi]
        rows = con.execute(f"SELECT v.eq_class, r.{quote(qi + '_node')} FROM {quote(view)} v "
                           f"LEFT JOIN {quote(rules)} r ON r.region = v.eq_class").fetchall()
        return [Fraction(1) if cls is None else Fraction(int(h.leaf_hi[node] - h.leaf_lo[node]), h.n_leaves - 1)
                for cls, node in rows]
    lo_col, hi_col = quote(qi + "_min"), quote(qi + "_max")
    bounds = [b for row in con.execute(f"SELECT {lo_col}, {hi_col} FROM {quote(rules)} WHERE size > 0").fetchall()
              for b in row if b is not None]
    low, high = min(bounds), max(bounds)
    out = []
    for cls, lo, hi in con.execute(f"SELECT eq_class, {lo_col}, {hi_col} FROM {quote(view)}").fetchall():
        if cls is None:
            out.append(Fraction(1))  # suppressed
        elif hi is None:
            out.append(Fraction(0))  # a class of NULLs only
        else:
            out.append(Fraction(hi - (low if lo is None else lo), high - low))
    return out


def _bucket(loss: Fraction) -> int:
    return 0 if loss <= 0 else 10 if loss >= 1 else math.ceil(loss * 10)


def test_width_distribution_against_a_brute_force_oracle(con, tmp_path):
    """Integer QI over 0..100 (exact tenths are frequent: the bucket edges are exact), NULLs, a
    hierarchy, and rows inserted after the release (suppressed: loss 1; fully generalized, so the
    live view still meets its requirement and the report lists them)."""
    (tmp_path / "c.csv").write_text("a;ab;*\nb;ab;*\nc;cd;*\nd;cd;*\n")
    rng = np.random.default_rng(7)
    n = 600
    age = rng.integers(0, 101, n).astype(object)
    age[:4] = None  # fewer than k NULLs: they share a class with small ages (age_min NULL counts as L)
    c = rng.choice(list("abcd"), n, p=[0.45, 0.45, 0.07, 0.03])  # rare c, d: some classes keep node cd
    load_frame(con, "t", pd.DataFrame({"id": np.arange(n), "age": pd.Series(age, dtype=object), "c": c}),
               types={"id": "INTEGER", "age": "INTEGER", "c": "VARCHAR"})
    # key="id": a live view, which shows the rows inserted after the release (suppressed)
    release = sqlanon.anonymize(con, "t", ["age", "c"], 9, hierarchies={"c": str(tmp_path / "c.csv")},
                                output=sqlanon.Output(key="id"))
    con.execute("INSERT INTO t VALUES (9999, 50, 'a'), (10000, 51, 'b')")  # no class: suppressed
    data = collect(con, release.view)
    m = manifest.read(con, release.view)
    assert data.metrics.suppressed == 2
    for qi, kind in (("age", "numeric"), ("c", "hierarchy")):
        losses = _cell_loss_oracle(con, release.view, release.rules, qi, kind, m)
        expected = [0] * len(WIDTH_BUCKETS)
        for loss in losses:
            expected[_bucket(loss)] += 1
        assert data.widths[qi] == tuple(expected), qi
        assert data.metrics.ncp[qi] == pytest.approx(float(sum(losses) / len(losses)), rel=1e-12)
        assert len({_bucket(x) for x in losses}) >= 2, qi  # more than one bucket is exercised
    ages = _cell_loss_oracle(con, release.view, release.rules, "age", "numeric", m)
    assert Fraction(1, 5) in ages  # exactly on a bucket edge: in (0.1, 0.2], not the next
    assert con.execute("SELECT count(*) FROM t_anon WHERE age_min IS NULL AND age_max IS NOT NULL "
                       "AND eq_class IS NOT NULL").fetchone()[0]
    # the suppressed rows are fully generalized: the root, and the release's bounds (age_min NULL: a
    # class holds NULLs, and NULL sorts first)
    top = con.execute("SELECT max(age_max) FROM t_anon_rules WHERE size > 0").fetchone()[0]
    assert con.execute("SELECT id, age_min, age_max, c FROM t_anon WHERE eq_class IS NULL ORDER BY id").fetchall() == [
        (9999, None, top, "*"), (10000, None, top, "*")]
    # so the release still meets its requirement (as sqlanon.verify --class-column eq_class): the
    # suppressed rows form no class, none leaks, and the report says why they are suppressed
    v = data.verification
    assert data.holds and v.unplaced == 2 and v.leaked == 0 and v.violating == 0
    assert v.suppressed == ((CHANGED, 2, 0),)
    assert v == sqlanon.verify(con, release.view, ["age", "c"], 9, class_column="eq_class")
    text = render(data, "markdown")
    assert "## Requirement: HOLDS" in text and f"2 row(s): {CHANGED}" in text


def test_every_constraint_is_rebuilt_and_rechecked(con):
    i = np.arange(2000, dtype=np.int64)
    load_frame(con, "p", pd.DataFrame({"id": i, "age": i % 50, "zip": i % 7, "disease": [f"d{v}" for v in i % 5],
                                       "salary": (i * 37) % 1000}))
    constraints = [sqlanon.DistinctLDiversity("disease", 3), sqlanon.EntropyLDiversity("disease", 2.5),
                   sqlanon.RecursiveCLDiversity("disease", 3, 2), sqlanon.VarianceDiversity("salary", 1000.0)]
    release = sqlanon.anonymize(con, "p", ["age", "zip"], 10, privacy=constraints)
    rebuilt, unchecked = recorded_constraints(manifest.read(con, release.view))
    assert rebuilt == constraints and unchecked == ()
    assert release_workload(manifest.read(con, release.view)) == {
        "targets": [], "numeric_targets": [], "sensitive": ["disease", "salary"]}
    data = collect(con, release)
    direct = sqlanon.verify(con, release.view, ["age", "zip"], 10, class_column="eq_class", constraints=constraints)
    assert data.verification == direct and data.holds
    assert data.metrics.min_variance["salary"] is not None  # numeric sensitive: variance reported
    document = json.loads(report(con, release, format="json", numeric_targets=["id"]))
    assert document["metrics"] == sqlanon.metrics(con, release, numeric_targets=["id"],
                                                  sensitive=["disease", "salary"]).as_dict()
    # a constraint this version cannot rebuild is listed, and the verdict says so
    comment = _comment(con, "p_anon_rules")
    document = json.loads(comment)
    document["constraints"].append("delta-presence('disease', delta=0.2)")  # a kind of a later version
    document["constraint_records"].append({"type": "DeltaPresence", "sensitive": "disease", "delta": 0.2})
    con.execute(f"COMMENT ON TABLE p_anon_rules IS {_sql_string(json.dumps(document))}")
    data = collect(con, release.view)
    assert data.unchecked == ("delta-presence('disease', delta=0.2)",) and not data.holds
    assert "Requirement: NOT FULLY CHECKED" in render(data, "markdown")
    assert "not re-checked" in render(data, "html")


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _comment(con, table: str) -> str:
    """The comment on ``table`` (where a release keeps its manifest)."""
    if is_postgres(con):
        return rows(con, "SELECT obj_description(?::regclass, 'pg_class')", [quote(table)])[0][0]
    return rows(con, "SELECT comment FROM duckdb_tables() WHERE table_name = ?", [table])[0][0]


def _people(con, name: str, n: int = 500) -> None:
    i = np.arange(n, dtype=np.int64)
    load_frame(con, name, pd.DataFrame({"id": i, "age": i % 50}))


def test_failing_requirement_after_deletes(con):
    """A live view follows deletes and suppresses a class that falls below k (the requirement
    holds); a snapshot whose own rows are deleted fails it, and the report says FAILS."""
    _people(con, "p")
    release = sqlanon.anonymize(con, "p", ["age"], 10, output=sqlanon.Output(key="id"))  # a live view: it follows the deletes
    smallest = con.execute("SELECT eq_class FROM p_anon GROUP BY eq_class ORDER BY count(*), eq_class LIMIT 1").fetchone()[0]
    members = [r[0] for r in rows(con, "SELECT key0 FROM p_anon_rowmap WHERE region = ? ORDER BY key0", [smallest])]
    assert len(members) == 10
    run(con, "DELETE FROM p WHERE id IN (SELECT key0 FROM p_anon_rowmap WHERE region = ? ORDER BY key0 LIMIT 3)",
        [smallest])
    # the class's 7 remaining rows are suppressed as a whole, fully generalized
    low, high = con.execute("SELECT min(age_min), max(age_max) FROM p_anon_rules WHERE size > 0").fetchone()
    assert sorted(con.execute("SELECT id, age_min, age_max FROM p_anon WHERE eq_class IS NULL").fetchall()) == [
        (i, low, high) for i in members[3:]]
    data = collect(con, release)
    v = data.verification
    assert data.holds and v.violating == 0 and v.leaked == 0 and v.unplaced == 7 and v.rows == 497
    assert v.suppressed == (("class below k=10", 7, 1),)
    html_text = render(data, "html")
    assert '<div class="verdict ok">HOLDS</div>' in html_text and "7 row(s) in 1 class(es): class below k=10" in html_text
    # a snapshot (no key) does not follow the source; deleting from the snapshot itself breaks
    # its smallest class, and the re-check fails
    _people(con, "q")
    release = sqlanon.anonymize(con, "q", ["age"], 10)
    assert release.materialized and release.rowmap == "q_anon_rowmap"
    con.execute("DELETE FROM q WHERE id < 100")
    assert con.execute("SELECT count(*) FROM q_anon").fetchone()[0] == 500
    smallest = con.execute("SELECT eq_class FROM q_anon GROUP BY eq_class ORDER BY count(*), eq_class LIMIT 1").fetchone()[0]
    run(con, "DELETE FROM q_anon_rowmap WHERE id IN (SELECT id FROM q_anon WHERE eq_class = ? ORDER BY id LIMIT 3)",
        [smallest])
    data = collect(con, release)
    assert not data.holds and data.verification.violating == 1 and data.verification.suppressed == ()
    html_text = render(data, "html")
    assert '<div class="verdict bad">FAILS</div>' in html_text


def test_renderings_show_requirement_verdict_and_escape_names(con):
    """Names with markup and pipes come out as text, never as HTML or table syntax."""
    i = np.arange(300, dtype=np.int64)
    load_frame(con, "w<b>", pd.DataFrame({"a<i>g&e": i, "s|x": i % 3, "lab<el>": [f"v{v}" for v in i % 4]}))
    release = sqlanon.anonymize(con, "w<b>", ["a<i>g&e"], 10, target="lab<el>")
    html_text = report(con, release, format="html")
    assert "<i>" not in html_text and "<b>" not in html_text.replace("<b>no</b>", "")
    assert "a&lt;i&gt;g&amp;e" in html_text and "HOLDS" in html_text and "k-anonymity(k=10)" in html_text
    for forbidden in ("<script", "<link", "<img", "src=", "url(", "@import"):
        assert forbidden not in html_text.lower()
    assert html_text.count("<svg") == 4  # risk, class sizes, widths, timings
    md = report(con, release, format="markdown", sensitive=["s|x"])
    assert "## Requirement: HOLDS" in md and "| k-anonymity(k=10) |" in md
    assert "l_distinct[s\\|x]" in md  # the pipe escaped in the table cell
    for line in md.splitlines():
        if line.startswith("| l_distinct"):
            assert line.replace("\\|", "").count("|") == 4  # three cells
    assert "Not recorded" in report(con, release.view, format="markdown")


def test_imprecision_per_selection(adult):
    """The release's own selections by default, any others on request: sqlanon.imprecision's figures."""
    con, hierarchies = adult
    own = ["age > 40 AND sex = 'Male'", "education = 'Higher education'"]
    release = sqlanon.anonymize(con, "adult", ["age", "sex", "education"], 25,
                                hierarchies={"education": hierarchies["education"]}, selections=own)
    for asked in (None, ["age BETWEEN 30 AND 50", "sex = 'Female'"], ()):
        predicates = own if asked is None else list(asked)
        document = json.loads(report(con, release, format="json", selections=asked))
        figures = imprecision_of(con, release.view, predicates).predicates if predicates else ()
        assert document["selections"] == [{"predicate": p.text, "returned": p.returned, "true": p.true,
                                           "imprecision": p.imprecision} for p in figures]
    assert any(p.imprecision > 0 for p in imprecision_of(con, release.view, ["age BETWEEN 30 AND 50"]).predicates)
    md = report(con, release, format="markdown")
    assert "## Imprecision per selection" in md and "| `education = 'Higher education'` |" in md
    page = report(con, release, format="html", selections=["age BETWEEN 30 AND 50"])
    assert 'id="selections"' in page and page.count("<svg") == 5 and "selected +" in page
    assert 'id="selections"' not in report(con, release, format="html", selections=())
    with pytest.raises(sqlanon.InputError, match="race"):
        report(con, release, selections=["race = 'White'"])  # not a QI of this release


def test_input_errors(adult_release):
    con, release = adult_release
    with pytest.raises(sqlanon.InputError, match="format must be one of html, markdown, json"):
        report(con, release, format="pdf")
    with pytest.raises(sqlanon.InputError, match="quasi-identifier 'age'"):
        report(con, release, targets=["age_min"])
    with pytest.raises(sqlanon.UnknownColumnError, match="Did you mean 'occupation'"):
        report(con, release, sensitive=["ocupation"])
    with pytest.raises(sqlanon.InputError, match="not a sqlanon release"):
        report(con, "adult")
    with pytest.raises(sqlanon.InputError, match="list of predicates"):
        report(con, release, selections="age > 3")


def _assert_same_document(a, b, path: str = "") -> None:
    """Two JSON documents are equal, floats to a relative 1e-12."""
    assert type(a) is type(b), path
    if isinstance(a, dict):
        assert list(a) == list(b), path
        for key in a:
            _assert_same_document(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_same_document(x, y, f"{path}[{i}]")
    elif isinstance(a, float):
        assert math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-300), (path, a, b)
    else:
        assert a == b, (path, a, b)


def test_same_report_on_both_engines(pg_con):
    """One small table, the same release on DuckDB and on PostgreSQL: the markdown, JSON and HTML
    reports are the same text (read by name, so neither carries the run's timings)."""
    rng = np.random.default_rng(3)
    n = 400
    data = pd.DataFrame({"id": np.arange(n), "age": pd.Series(np.where(rng.random(n) < 0.02, None,
                                                                      rng.integers(17, 90, n)), dtype=object),
                         "zip": rng.integers(1000, 1100, n), "sex": rng.choice(["F", "M"], n),
                         "dx": rng.choice(["flu", "hiv", "cold", "none"], n), "pay": rng.integers(0, 5000, n) / 4,
                         "y": rng.choice(["yes", "no"], n)})
    duck = duckdb.connect()
    try:
        reports = []
        for con in (duck, pg_con):
            load_frame(con, "p", data, primary_key="id", types={"age": "INTEGER"})
            sqlanon.anonymize(con, "p", ["age", "zip", "sex"], 15, sensitive="dx", l=2, target="y",
                              selections=["age > 40 AND sex = 'F'"], output=sqlanon.Output(key="id"))
            run(con, "DELETE FROM p WHERE id < 7")  # a live view: some classes now suppressed
            reports.append({f: report(con, "p_anon", format=f, numeric_targets=["pay"], sensitive=["dx", "pay"])
                            for f in ("markdown", "json", "html")})
        # the one difference: the times (of the publication, of the report)
        times = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?([+-]\d\d:\d\d|Z)?")
        for f in ("markdown", "html"):
            (duck_text, duck_times), (pg_text, pg_times) = (times.subn("<time>", r[f]) for r in reports)
            assert duck_text == pg_text and duck_times == pg_times > 0, f
        # JSON: the same document but for the float metrics of a DOUBLE column (rmse, min_variance of
        # "pay"), whose sums each engine adds up in its own order: equal to a relative 1e-12
        _assert_same_document(*(json.loads(times.sub("<time>", r["json"])) for r in reports))
        document = json.loads(reports[0]["json"])
        assert document["verification"]["rows"] == n - 7 and document["selections"]
    finally:
        duck.close()


# -- headless Chromium -------------------------------------------------------------------------
def read_png(path: Path) -> np.ndarray:
    """A tiny PNG decoder (8-bit RGB/RGBA, not interlaced): ``(height, width, channels)`` uint8."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, [], None
    while pos < len(data):
        (size,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + size]
        pos += 12 + size
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
    width, height, depth, color, _, _, interlace = header
    assert depth == 8 and color in (2, 6) and interlace == 0, header
    ch = 3 if color == 2 else 4
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), np.uint8).reshape(height, width * ch + 1)
    out = np.zeros((height, width * ch), np.uint8)
    prev = np.zeros(width * ch, np.uint8)
    for y in range(height):
        kind, line = raw[y, 0], raw[y, 1:]
        if kind == 0:
            cur = line.copy()
        elif kind == 1:  # Sub: a running sum per channel
            cur = (np.cumsum(line.reshape(width, ch).astype(np.int64), axis=0) % 256).astype(np.uint8).ravel()
        elif kind == 2:  # Up
            cur = line + prev
        else:  # Average, Paeth: sequential along the row
            buf, up = bytearray(line.tobytes()), prev.tobytes()
            for i in range(len(buf)):
                a = buf[i - ch] if i >= ch else 0
                b = up[i]
                c = up[i - ch] if i >= ch else 0
                if kind == 3:
                    buf[i] = (buf[i] + ((a + b) >> 1)) & 255
                else:
                    pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                    buf[i] = (buf[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
            cur = np.frombuffer(bytes(buf), np.uint8)
        out[y] = cur
        prev = cur
    return out.reshape(height, width, ch)


def _chromium(*args: str, profile: Path) -> subprocess.CompletedProcess:
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    assert binary, "headless Chromium is needed (Debian: apt-get install -y chromium; .ci/run installs it)"
    return subprocess.run(
        [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={profile}", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.engines("duckdb")  # rendering is engine-independent: both engines' pages are compared above
def test_html_renders_in_headless_chromium(adult_live_release, tmp_path):
    con, release = adult_live_release
    page = tmp_path / "report.html"
    page.write_text(report(con, release, format="html"), encoding="utf-8")
    shot = tmp_path / "report.png"
    done = _chromium(f"--screenshot={shot}", "--window-size=1200,2400", page.as_uri(), profile=tmp_path / "p1")
    assert shot.is_file(), done.stderr
    pixels = read_png(shot)
    assert pixels.shape[:2] == (2400, 1200)
    rgb = pixels[:, :, :3].astype(np.int64)
    assert rgb.std() > 10  # not blank
    colours = np.unique(rgb.reshape(-1, 3) @ np.array([1 << 16, 1 << 8, 1]))
    assert len(colours) > 50  # text, tables and plots, not a flat page
    # the plots' bars are painted: their fill colour (#4c78a8) covers a visible area
    bars = np.all(rgb == (0x4C, 0x78, 0xA8), axis=2)
    assert bars.sum() > 5000
    # the verdict badge (#1a7f37) is painted near the top
    assert np.all(rgb[:600] == (0x1A, 0x7F, 0x37), axis=2).sum() > 500
    done = _chromium("--dump-dom", page.as_uri(), profile=tmp_path / "p2")
    assert done.returncode == 0, done.stderr
    dom = done.stdout
    assert dom.count("<svg") == 4 and dom.count('class="bar"') >= 10
    assert "Equivalence classes by size" in dom and "HOLDS" in dom and "adult_anon_rowmap" in dom
