"""The ``sqlanon`` command end to end: ``main(argv)`` in process, and ``python -m sqlanon``.

Every run works on a real database given as the command line gets it -- the ``target`` fixture:
a DuckDB file in ``tmp_path``, or a ``postgresql://`` URL of the test's own schema (the schema
in the URL's ``options``, as a user whose tables live in a schema of their own writes it) -- or
on Parquet/CSV files. A test reads and sets up the database through :func:`connected`, which
closes (DuckDB opens a file once per process configuration) or commits (the CLI's PostgreSQL
connection is another session) before the command runs. What is DuckDB's alone -- files as the
source, the SQL macros -- is refused on PostgreSQL with one clear line (tests at the end).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote as url_quote

import duckdb
import numpy as np
import pandas as pd
import pytest

import sqlanon
from sqlanon import explain as explain_module
from sqlanon.cli import build_parser, main
from sqlanon.engine import base as engine
from sqlanon.engine import engine_for
from sqlanon.release.imprecision import imprecision as imprecision_of
from tests.support import SUPPRESSING, frame, load_frame, make_people, objects, rows, suppressing_release
from tests.support import run as run_sql
from tests.support.cli import assert_one_line_error, run

ROOT = Path(__file__).absolute().parents[2]  # the checkout, whatever is installed
HIERARCHY = "x0;low;*\nx1;low;*\nx2;low;*\nx3;high;*\nx4;high;*\n"
COMMANDS = ["demo", "anonymize", "verify", "explain", "report", "apply", "install-macros"]

pytestmark = pytest.mark.engines("duckdb", "postgres")


def is_url(target: str) -> bool:
    return target.startswith(("postgresql://", "postgres://"))


def url_of(con) -> str:
    """``postgresql://user@host:port/dbname?options=-csearch_path%3D<schema>``: the database and
    schema of the psycopg connection ``con``, as a URL for the command line."""
    info = con.info
    schema = rows(con, "SELECT current_schema()")[0][0]
    con.commit()  # nothing of the test's stays open while the command runs
    user = url_quote(info.user, safe="") + (":" + url_quote(info.password, safe="") if info.password else "")
    host = info.host
    # a Unix socket directory is a query parameter; a TCP host goes in the authority
    where = ((f"{user}@{host}:{info.port}", "") if not host.startswith("/")
             else (user + "@", f"&host={url_quote(host)}&port={info.port}"))
    return (f"postgresql://{where[0]}/{url_quote(info.dbname, safe='')}"
            f"?options={url_quote(f'-csearch_path={schema}', safe='')}{where[1]}")


@pytest.fixture
def target(engine_name, con, tmp_path) -> str:
    """The database of this test as the command line takes it: an (empty) DuckDB file, or the
    URL of the PostgreSQL test schema of ``con`` (see :func:`url_of`)."""
    if engine_name == "postgres":
        return url_of(con)
    path = str(tmp_path / "h.duckdb")
    duckdb.connect(path).close()
    return path


@contextlib.contextmanager
def connected(target: str, read_only: bool = False) -> Iterator:
    """A connection of the test's own to ``target`` (a DuckDB file or a URL), for set-up and
    independent reads: closed at the end, and committed first (PostgreSQL) unless it failed."""
    if is_url(target):
        import psycopg

        con = psycopg.connect(target)
        try:
            yield con
            con.commit()
        finally:
            con.close()
        return
    con = duckdb.connect(target, read_only=read_only)
    try:
        yield con
    finally:
        con.close()


def home(target: str) -> tuple[str, str]:
    """(catalog, schema) where a command run on ``target`` creates its objects."""
    with connected(target, read_only=True) as c:
        return rows(c, "SELECT current_database(), current_schema()")[0]


@pytest.fixture
def db(target, tmp_path) -> str:
    """``target`` with ``people`` (500 rows: id, age, zip, city, salary), and ``city.csv`` (a
    hierarchy of city) in ``tmp_path``."""
    with connected(target) as c:
        make_people(c, 500)
    (tmp_path / "city.csv").write_text(HIERARCHY)
    return target


def sql_objects(target: str) -> set:
    with connected(target, read_only=True) as c:
        return objects(c)


def table_rows(con, sql: str) -> tuple[list[str], list[tuple]]:
    """(column names, rows) of a query on a DuckDB or psycopg connection."""
    cur = con.execute(sql)
    names = [d[0] for d in cur.description]
    return names, [tuple(r) for r in cur.fetchall()]


# -- help ---------------------------------------------------------------------------------------
def test_top_level_help_lists_every_command(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0 and out.startswith("usage: sqlanon")
    for command in COMMANDS:
        assert command in out
    assert run(capsys)[0] == 2  # no command: help on stderr, usage error
    code, out, _ = run(capsys, "--version")
    assert (code, out.strip()) == (0, f"sqlanon {sqlanon.__version__}")


@pytest.mark.parametrize("command", COMMANDS)
def test_help_of_every_command_is_complete(capsys, command):
    code, out, err = run(capsys, command, "--help")
    assert (code, err) == (0, "")
    assert out.startswith(f"usage: sqlanon {command}")
    sub = build_parser()._subparsers._group_actions[0].choices[command]
    for action in sub._actions:
        for option in action.option_strings:
            assert option in out
        if action.help:
            assert action.help.split()[0] in out
    if command in ("anonymize", "explain"):
        assert "--config" in out and "RELEASE.toml" in out
    if command == "verify":
        assert "0 every check holds, 1 one fails, 2" in out
    if command == "install-macros":
        assert "sqlanon_k_check(tbl, cols, k)" in out
    if command == "report":
        assert "--format {html,markdown,json}" in out and "-o FILE, --output FILE" in out
        assert "0 the report was written and the requirement holds, 1" in out
    if command == "apply":
        assert "usage: sqlanon apply DB VIEW TABLE" in out and "--view OUT" in out
    if command in ("anonymize", "explain"):
        assert "--select PREDICATE" in out


@pytest.mark.engines("duckdb")  # flags/file -> manifest; selections on PostgreSQL: tests/model/test_selection*.py
def test_select_reaches_the_library(capsys, db, tmp_path):
    """--select (repeatable) and [workload] selections give Selection Mondrian; both land in the manifest."""
    from sqlanon.publish import manifest

    predicates = ["age > 40 AND zip = 3", "age < 10"]
    code, _, err = run(capsys, "anonymize", db, "people", "--qid", "age,zip", "--k", "5",
                       "--select", predicates[0], "--select", predicates[1], "--view", "sel")
    assert (code, err) == (0, ""), err
    path = tmp_path / "r.toml"
    path.write_text(f'[release]\ndatabase = "{db}"\ntable = "people"\nview = "sel_file"\n[[qi]]\nname = "age"\n'
                    f'[[qi]]\nname = "zip"\n[privacy]\nk = 5\n[workload]\nselections = {json.dumps(predicates)}\n')
    assert run(capsys, "anonymize", "--config", path)[0] == 0
    with connected(db, read_only=True) as con:
        for view in ("sel", "sel_file"):
            m = manifest.read(con, view)
            assert m.selections == tuple(predicates) and m.criterion.startswith("selections(")
        imprecision = imprecision_of(con, "sel", predicates)
    assert all(p.imprecision >= 0 for p in imprecision.predicates)
    code, out, err = run(capsys, "explain", db, "people", "--qid", "age,zip", "--k", "5", "--select", predicates[0])
    assert (code, err) == (0, "")
    before = sql_objects(db)
    for bad, fragment in (("city = 'x0'", "city"), ("age > 1; DROP TABLE people", "DROP"), ("  ", "empty predicate")):
        code, out, err = run(capsys, "anonymize", db, "people", "--qid", "age", "--k", "5", "--select", bad,
                             "--view", "bad")
        assert (code, out) == (2, "")
        assert_one_line_error(err, fragment)
    assert sql_objects(db) == before


# flags -> manifest; constraints and criteria on PostgreSQL: tests/e2e/test_api.py, tests/mondrian/test_workload.py
@pytest.mark.engines("duckdb")
def test_workload_flags_reach_the_library(capsys, db):
    """--sensitive/--l give entropy l-diversity, --target the criterion; both land in the manifest."""
    from sqlanon.publish import manifest

    code, out, err = run(capsys, "anonymize", db, "people", "--qid", "age,zip", "--k", "5",
                         "--sensitive", "city", "--l", "1.5", "--target", "id", "--view", "wl")
    assert (code, err) == (0, ""), err
    with connected(db, read_only=True) as con:
        m = manifest.read(con, "wl")
    assert m.constraints == ("k-anonymity(k=5)", "entropy l-diversity('city', l=1.5)")
    assert m.criterion == "regression('id')"
    code, _, err = run(capsys, "anonymize", db, "people", "--qid", "age", "--k", "5", "--sensitive", "city")
    assert code == 2
    assert_one_line_error(err, "--sensitive and --l go together")
    # k=100: the first level's stats statement is what is checked; at k=5 the recording engine's
    # explain of every further level cost ~100 s of CPU (it inlines each level's table into the next).
    code, out, err = run(capsys, "explain", db, "people", "--qid", "age", "--k", "100", "--target", "city",
                         "--memory-rows", "0")
    # the class counts of the target are in the stats statement: one per city (five), none without it
    assert code == 0 and set(re.findall(r'AS "k0_(\d+)"', out)) == {"0", "1", "2", "3", "4"}
    code, out, err = run(capsys, "explain", db, "people", "--qid", "age", "--k", "100", "--memory-rows", "0")
    assert code == 0 and not re.findall(r'AS "k0_(\d+)"', out)


# -- anonymize ----------------------------------------------------------------------------------
def test_anonymize_a_table_in_a_database_file(capsys, db, tmp_path):
    code, out, err = run(capsys, "anonymize", db, "people", "--qid", "age,zip", "--qid", "city", "--k", "10",
                         "--hierarchy", f"city={tmp_path / 'city.csv'}")
    assert (code, err) == (0, "")
    assert re.search(r"^published\s+people_anon \(live view of people, key id\)$", out, re.M)
    assert re.search(r"^rules\s+people_anon_rules$", out, re.M)
    assert re.search(r"^rows\s+500$", out, re.M)
    assert re.search(r"^k\s+10 required, \d+ achieved", out, re.M)
    assert re.search(r"^elapsed\s+[\d.]+ s$", out, re.M)
    with connected(db) as con:
        check = sqlanon.verify(con, "people_anon", ["age", "zip", "city"], 10)
        assert check.ok and check.rows == 500
        assert sqlanon.publish.manifest.read(con, "people_anon").hierarchies["city"].n_leaves == 5


# CLI plumbing, the same on every engine; the engine's part of it runs on PostgreSQL in test_anonymize_a_table_in_a_database_file
@pytest.mark.engines("duckdb")
def test_anonymize_json_is_the_release(capsys, db):
    code, out, _ = run(capsys, "anonymize", db, "people", "--qid", "age,zip", "--k", "7", "--view", "pub",
                       "--memory-rows", "0", "--json")
    assert code == 0
    release = json.loads(out)
    assert set(release) >= {f.name for f in sqlanon.Release.__dataclass_fields__.values()} - {"con"}
    assert (release["view"], release["rules"], release["k"], release["qid"]) == ("pub", "pub_rules", 7, ["age", "zip"])
    assert release["k_achieved"] >= 7 and release["verification"]["ok"] is True and release["out"] is None


# CLI plumbing, the same on every engine; the engine's part of it runs on PostgreSQL in test_library_errors_speak_in_flags
@pytest.mark.engines("duckdb")
def test_anonymize_refuses_to_overwrite_without_replace(capsys, db):
    assert run(capsys, "anonymize", db, "people", "--qid", "age", "--k", "5")[0] == 0
    before = sql_objects(db)
    code, _, err = run(capsys, "anonymize", db, "people", "--qid", "age", "--k", "9")
    assert code == 2
    assert_one_line_error(err, "'people_anon' already exists")
    assert sql_objects(db) == before
    code, out, _ = run(capsys, "anonymize", db, "people", "--qid", "age", "--k", "9", "--replace", "--json")
    assert code == 0 and json.loads(out)["k"] == 9


@pytest.mark.parametrize(
    "argv, fragments",
    [
        (["{db}", "peple", "--qid", "age", "--k", "5"], ["no table or view named 'peple'", "Did you mean 'people'?"]),
        (["{db}", "people", "--qid", "age,zap", "--k", "5"], ["no column 'zap'", "Did you mean 'zip'?"]),
        (["{db}", "people", "--qid", "age", "--k", "0"], ["k must be at least 1"]),
        (["{db}", "people", "--qid", "age", "--k", "ten"], ["--k: invalid int value: 'ten'"]),
        (["{db}", "people", "--qid", "age"], ["--k N is required"]),
        (["{db}", "people", "--k", "5"], ["--qid"]),
        (["{db}", "people", "--qid", "age,,zip", "--k", "5"], ["empty column name"]),
        (["{db}", "people", "--qid", "age", "--k", "5", "--hierarchy", "city"], ["COL=PATH"]),
        (["{db}", "people", "--qid", "age", "--k", "5", "--hierarchy", "city=c.csv"], ["'city' is not a QI"]),
        (["{db}", "people", "--qid", "city", "--k", "5", "--hierarchy", "city=nope.csv"], ["'nope.csv'"]),
        (["{db}", "people", "--qid", "age", "--k", "501"], ["larger than the table"]),
        (["{db}", "--qid", "age", "--k", "5"], ["missing TABLE"]),
        (["missing.duckdb", "people", "--qid", "age", "--k", "5"], ["database file not found: missing.duckdb"]),
        (["--qid", "age", "--k", "5"], ["name the source"]),
        (["--config", "nope.toml"], ["nope.toml: release file not found"]),
    ],
)
def test_anonymize_usage_and_input_errors(capsys, db, argv, fragments):
    before = sql_objects(db)
    code, out, err = run(capsys, "anonymize", *[a.format(db=db) for a in argv])
    assert (code, out) == (2, "")
    assert_one_line_error(err, *fragments)
    assert sql_objects(db) == before  # nothing written


def test_anonymize_from_a_release_file(capsys, db, tmp_path):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "city.csv").write_text(HIERARCHY)
    database = db if is_url(db) else "../h.duckdb"  # a file's path is relative to the release file
    (tmp_path / "conf" / "release.toml").write_text(
        f'[release]\ndatabase = "{database}"\ntable = "people"\nview = "from_file"\n\n'
        '[[qi]]\nname = "age"\n\n[[qi]]\nname = "city"\nhierarchy = "city.csv"\n\n[privacy]\nk = 12\n'
    )
    config = str(tmp_path / "conf" / "release.toml")
    code, out, _ = run(capsys, "anonymize", "--config", config, "--json")
    release = json.loads(out)
    assert code == 0 and (release["view"], release["k"], release["qid"]) == ("from_file", 12, ["age", "city"])
    assert release["hierarchies"] == "from_file_hierarchies"
    # Flags override the file: k, view, and the QIs (a QI dropped from --qid loses its hierarchy).
    code, out, _ = run(capsys, "anonymize", "--config", config, "--k", "30", "--view", "other", "--qid", "age,zip",
                       "--json")
    release = json.loads(out)
    assert code == 0 and (release["view"], release["k"], release["qid"], release["hierarchies"]) == \
        ("other", 30, ["age", "zip"], None)
    # Positional DB TABLE override the file's source.
    code, out, _ = run(capsys, "anonymize", db, "people", "--config", config, "--view", "third", "--json")
    assert code == 0 and json.loads(out)["view"] == "third"


def test_release_file_errors_name_the_key(capsys, db, tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(f'[release]\ndatabase = "{db}"\ntable = "people"\n[[qi]]\nname = "age"\n[privacy]\nk = "ten"\n')
    code, _, err = run(capsys, "anonymize", "--config", path)
    assert code == 2
    assert_one_line_error(err, f'{path}: privacy.k: must be an integer >= 1, got "ten"')
    path.write_text('[release]\ntable = "people"\n[[qi]]\nname = "age"\n[privacy]\nk = 5\nt = 0.2\n')
    code, _, err = run(capsys, "explain", "--config", path)
    assert code == 2
    assert_one_line_error(err, "privacy.t: t-closeness is written t_closeness = { column = t }")


@pytest.mark.parametrize("source, out", [("people.parquet", "anon.parquet"), ("people.csv", "anon.csv"),
                                         ("people.parquet", "anon.jsonl"), ("people.csv", "anon.csv.gz")])
def test_files_in_files_out(capsys, tmp_path, source, out):
    con = duckdb.connect()
    make_people(con, 300)
    con.execute(f"COPY people TO '{tmp_path / 'people.parquet'}' (FORMAT PARQUET)")
    con.execute(f"COPY people TO '{tmp_path / 'people.csv'}' (FORMAT CSV, HEADER)")
    con.close()
    before = set(os.listdir(tmp_path))
    code, text, err = run(capsys, "anonymize", tmp_path / source, "--qid", "age,zip", "--k", "10",
                          "--out", tmp_path / out)
    assert (code, err) == (0, "")
    assert re.search(r"^published\s+people_anon \(view of a snapshot of people, in memory, not kept\)$", text, re.M)
    assert re.search(rf"^written to\s+{re.escape(str(tmp_path / out))}$", text, re.M)
    assert set(os.listdir(tmp_path)) == before | {out}  # no leftovers (partial files, databases)
    check = sqlanon.verify(duckdb.connect(), str(tmp_path / out), ["age", "zip"], 10, class_column="eq_class")
    assert check.ok and check.rows == 300
    code, text, _ = run(capsys, "verify", tmp_path / out, "--qid", "age,zip", "--k", "10")
    assert code == 0 and text.startswith("ok: ")
    # The output exists now: refused without --replace, overwritten with it.
    code, _, err = run(capsys, "anonymize", tmp_path / source, "--qid", "age", "--k", "10", "--out", tmp_path / out)
    assert code == 2
    assert_one_line_error(err, "exists; pass --replace")
    assert run(capsys, "anonymize", tmp_path / source, "--qid", "age", "--k", "10", "--out", tmp_path / out,
               "--replace")[0] == 0


def test_files_need_out_and_a_known_format(capsys, tmp_path):
    con = duckdb.connect()
    make_people(con, 50)
    con.execute(f"COPY people TO '{tmp_path / 'p.parquet'}' (FORMAT PARQUET)")
    con.close()
    code, _, err = run(capsys, "anonymize", tmp_path / "p.parquet", "--qid", "age", "--k", "5")
    assert code == 2
    assert_one_line_error(err, "pass --out FILE")
    code, _, err = run(capsys, "anonymize", tmp_path / "p.parquet", "--qid", "age", "--k", "5", "--out", tmp_path / "x.xlsx")
    assert code == 2
    assert_one_line_error(err, "unknown format")
    assert sorted(os.listdir(tmp_path)) == ["p.parquet"]


def test_database_release_also_written_out(capsys, db, tmp_path):
    code, _, _ = run(capsys, "anonymize", db, "people", "--qid", "age", "--k", "25", "--out", tmp_path / "pub.parquet")
    assert code == 0
    with connected(db) as con:
        from_view = table_rows(con, "SELECT * FROM people_anon ORDER BY id")
    reader = duckdb.connect()  # the file is read independently of the engine that wrote it
    try:
        from_file = table_rows(reader, f"SELECT * FROM read_parquet('{tmp_path / 'pub.parquet'}') ORDER BY id")
    finally:
        reader.close()
    assert from_file == from_view and len(from_view[1]) == 500


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.engines("duckdb")  # the terminal's progress line: CLI plumbing, the same on every engine
def test_progress_only_on_a_terminal(capsys, db, monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["anonymize", db, "people", "--qid", "age,zip", "--k", "5", "--memory-rows", "100"]) == 0
    drawn = terminal.getvalue()
    assert drawn.startswith("\rsqlanon: level 1 (sql): ") and "open partitions" in drawn and "rows finished" in drawn
    assert drawn.endswith("\r\x1b[K") and "\n" not in drawn  # one updating line, erased at the end
    quiet = _Terminal()
    monkeypatch.setattr(sys, "stderr", quiet)
    assert main(["anonymize", db, "people", "--qid", "age", "--k", "5", "--view", "q", "--quiet"]) == 0
    assert quiet.getvalue() == ""
    monkeypatch.undo()
    assert run(capsys, "anonymize", db, "people", "--qid", "age", "--k", "5", "--view", "piped")[2] == ""


# -- verify -------------------------------------------------------------------------------------
def test_verify_exit_codes(capsys, db):
    assert run(capsys, "anonymize", db, "people", "--qid", "age,zip", "--k", "10")[0] == 0
    code, out, err = run(capsys, "verify", db, "people_anon", "--qid", "age,zip", "--k", "10", "--class-column", "eq_class")
    assert (code, err) == (0, "")
    assert out.startswith("ok: people_anon is 10-anonymous over age_min, age_max, zip_min, zip_max: ")
    code, out, _ = run(capsys, "verify", db, "people", "--qid", "zip", "--k", "72")  # zip = i % 7: 72 x 3, 71 x 4
    assert code == 1
    assert out.splitlines() == [
        "FAILED: people is not 72-anonymous over zip: 4 of 7 classes have fewer than 72 rows (smallest 71); 500 rows",
        "violating classes (smallest first):",
        "  size  zip",
        *[f"    71  {z}" for z in range(3, 7)],
    ]
    for argv, fragment in [(["people", "--qid", "zap", "--k", "3"], "Did you mean 'zip'?"),
                           (["people", "--qid", "zip"], "--k"),
                           (["people", "--qid", "zip", "--k", "0"], "k must be a positive integer"),
                           (["nope", "--qid", "zip", "--k", "3"], "no table or view named 'nope'"),
                           (["--qid", "zip", "--k", "3"], "missing RELATION")]:
        code, _, err = run(capsys, "verify", db, *argv)
        assert code == 2, argv
        assert_one_line_error(err, fragment)
    code, _, err = run(capsys, "verify", "missing.duckdb", "t", "--qid", "a", "--k", "2")
    assert code == 2
    assert_one_line_error(err, "database file not found")


def test_verify_lists_at_most_20_violating_classes_smallest_first(capsys, db):
    code, out, _ = run(capsys, "verify", db, "people", "--qid", "age,city", "--k", "7", "--json")
    assert code == 1
    result = json.loads(out)
    with connected(db, read_only=True) as con:
        people = frame(con, "SELECT age, city FROM people")
    sizes = people.groupby(["age", "city"]).size()
    small = sizes[sizes < 7]
    assert (result["ok"], result["violating"], result["classes"]) == (False, len(small), len(sizes))
    listed = result["violating_classes"]
    assert len(listed) == 20 < len(small)
    assert [c["size"] for c in listed] == sorted(small.tolist())[:20]
    for c in listed:
        assert sizes[(c["values"]["age"], c["values"]["city"])] == c["size"]


def test_verify_counts_rows_without_a_class(capsys, db):
    i = np.arange(10)
    with connected(db) as con:
        load_frame(con, "r", pd.DataFrame({"a": i % 2, "eq_class": pd.array([None, *[1] * 9], dtype="Int64")}))
    code, out, _ = run(capsys, "verify", db, "r", "--qid", "a", "--k", "2", "--class-column", "eq_class")
    assert code == 1 and "1 rows have no equivalence class" in out
    assert "violating classes" not in out


@pytest.mark.parametrize("search", SUPPRESSING)
def test_verify_exits_with_the_verdict_of_a_release_with_suppression(capsys, target, search):
    """Issue 49: a valid release with suppressed rows verifies ok and exits 0, with or without
    --class-column (the manifest says which column and how many rows may be suppressed); a
    tampered one exits 1 and says why. The exit status is sqlanon.verify's ok."""
    with connected(target) as c:
        release, qid = suppressing_release(c, search)
        suppressed = release.suppressed
    args = ["verify", target, "t_anon", "--qid", ",".join(qid), "--k", "10"]
    for extra in ([], ["--class-column", "eq_class"]):
        code, out, err = run(capsys, *args, *extra)
        assert (code, err) == (0, ""), out
        assert f"ok: {suppressed:,} suppressed rows (eq_class NULL, limit 9): fully generalized" in out
        assert out.splitlines()[-1] == f"ok: t_anon: all {2 + len(release.verification.qids) + 1} checks hold"
    code, out, _ = run(capsys, *args, "--json")
    document = json.loads(out)
    assert code == 0 and document["ok"] and document["holds"] and document["failed"] == []
    assert (document["release"], document["unplaced"]) == (True, suppressed)
    # tampered: the view replaced by a copy in which a suppressed row has a class of its own
    with connected(target) as c:
        run_sql(c, "CREATE TABLE copied AS SELECT * FROM t_anon")
        run_sql(c, "DROP VIEW t_anon")
        run_sql(c, "ALTER TABLE copied RENAME TO t_anon")
        run_sql(c, "UPDATE t_anon SET eq_class = -1 WHERE id = (SELECT min(id) FROM t_anon WHERE eq_class IS NULL)")
    code, out, err = run(capsys, *args)
    assert (code, err) == (1, "")
    assert out.startswith("FAILED: t_anon is not 10-anonymous") and "classes have fewer than 10 rows (smallest 1)" in out
    assert "violating classes (smallest first):" in out
    # more rows suppressed than the release's limit (each fully generalized, in no class)
    with connected(target) as c:
        run_sql(c, "UPDATE t_anon SET eq_class = NULL WHERE eq_class = -1")
        published = [col for col in frame(c, "SELECT * FROM t_anon LIMIT 0").columns if col not in ("id", "eq_class")]
        root = rows(c, f"SELECT {', '.join(published)} FROM t_anon WHERE eq_class IS NULL LIMIT 1")[0]
        run_sql(c, f"UPDATE t_anon SET eq_class = NULL, {', '.join(f'{col} = ?' for col in published)} "
                   f"WHERE eq_class = (SELECT min(eq_class) FROM t_anon)", list(root))
    code, out, _ = run(capsys, *args, "--class-column", "eq_class")
    assert code == 1
    assert "more than its limit of 9" in out and "suppression limit (9 rows)" in out.splitlines()[-1]


def test_notes_name_the_command_lines_flags(capsys, db):
    """Issue 49: the note on a release without a key said "Pass key=" -- the Python keyword -- to a
    user of the command line; it names --key (in the summary and in --json)."""
    with connected(db) as c:
        make_people(c, 100, name="plain", key=False)
    code, out, _ = run(capsys, "anonymize", db, "plain", "--qid", "age,zip", "--k", "10")
    note = next(line for line in out.splitlines() if line.startswith("note: "))
    assert code == 0 and "(no declared PRIMARY KEY or UNIQUE key, no --key)" in note
    assert note.endswith("Pass --key (or declare a key) for a live view.") and "key=" not in note
    code, out, _ = run(capsys, "anonymize", db, "plain", "--qid", "age,zip", "--k", "10", "--view", "p2", "--json")
    notes = json.loads(out)["notes"]
    assert code == 0 and len(notes) == 1 and "Pass --key" in notes[0] and "key=" not in notes[0]


# -- explain ------------------------------------------------------------------------------------
def test_explain_does_not_stop_at_output_names_in_use(capsys, db):
    """Issue 49: explain refused when the output view existed, though it writes nothing. It shows
    the statements and notes that anonymize would refuse; anonymize still does."""
    assert run(capsys, "anonymize", db, "people", "--qid", "age,zip", "--k", "10")[0] == 0
    before = sql_objects(db)
    code, out, err = run(capsys, "explain", db, "people", "--qid", "age,zip", "--k", "10")
    assert (code, err) == (0, "")
    assert ("-- note: view 'people_anon', table 'people_anon_rules', table 'people_anon_rowmap' exist already: "
            "anonymize refuses this request as it stands") in out
    assert "CREATE VIEW" in out.upper() and sql_objects(db) == before
    code, _, err = run(capsys, "anonymize", db, "people", "--qid", "age,zip", "--k", "10")
    assert code == 2 and "--replace" in err and sql_objects(db) == before
    # with --replace the request is anonymize's own: no note, the earlier release's objects dropped
    code, out, err = run(capsys, "explain", db, "people", "--qid", "age,zip", "--k", "10", "--replace")
    assert (code, err) == (0, "") and "-- note:" not in out and "DROP" in out and sql_objects(db) == before


def test_explain_runs_nothing_that_writes(capsys, db, tmp_path):
    before = sql_objects(db)
    code, out, err = run(capsys, "explain", db, "people", "--qid", "age,zip,city", "--k", "10",
                         "--hierarchy", f"city={tmp_path / 'city.csv'}", "--memory-rows", "100")
    assert (code, err) == (0, "")
    assert sql_objects(db) == before
    for heading in ("1. Validate the request", "2. Encode", "3. Partition in SQL", "4. Finish in memory",
                    "5. Publish in one transaction", "6. Clean up"):
        assert f"-- == {heading}" in out
    assert "Snapshot" not in out  # a base table needs none
    assert "-- [ran]" in out and 'CREATE VIEW "people_anon" AS' in out and "COMMIT;" in out
    assert 'CREATE TABLE "people_anon_hierarchies"' in out and "city (hierarchy, 5 leaves)" in out
    levels = out.split("-- == 3. Partition in SQL")[1].split("-- == 4.")[0]
    assert 'GROUP BY' in levels and '"pid" IN (0)' in levels  # the root level's frequency groups, as run
    # Data-dependent inputs are said to be.
    assert "rows computed by the run" in out


def test_explain_files_and_in_memory_sources(capsys, tmp_path):
    con = duckdb.connect()
    make_people(con, 100)
    con.execute(f"COPY people TO '{tmp_path / 'p.parquet'}' (FORMAT PARQUET)")
    con.close()
    code, out, _ = run(capsys, "explain", tmp_path / "p.parquet", "--qid", "age", "--k", "5")
    assert code == 0
    assert "-- == 2. Encode" in out and "READ_PARQUET(" in out and "_snapshot" in out
    assert "_splits" not in out and "_work" in out  # 100 rows, at most memory_rows: no SQL level rewrites the work
    assert sorted(os.listdir(tmp_path)) == ["p.parquet"]


def test_explain_validates_like_anonymize(capsys, db):
    code, _, err = run(capsys, "explain", db, "people", "--qid", "age,zap", "--k", "5")
    assert code == 2
    assert_one_line_error(err, "Did you mean 'zip'?")


def _normalized(sql: str) -> str:
    sql = re.sub(r"__sqlanon_[0-9a-f]{10}_", "__sqlanon_RUN_", sql)
    return re.sub(r"(work|splits)\d+", r"\1N", sql)


@pytest.mark.parametrize("memory_rows", [0, None])
def test_explain_shows_the_statements_anonymize_runs(db, monkeypatch, memory_rows):
    """Honesty: every statement explain prints (root-level ones included) is one that a real
    run executes, up to the run-unique temp names."""
    with connected(db) as con:
        request = sqlanon.Request("people", ["age", "zip"], 20,
                                  algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=memory_rows)))
        _, entries = explain_module.explain_entries(con, request)
        dialect = engine_for(con).dialect  # explain prints, and the engine runs, the engine's own SQL
        shown = {_normalized(e.statement.sql(dialect=dialect)) for e in entries if not isinstance(e.statement, str)}
        ran: list[str] = []
        real = engine.Engine.render

        def spy(self, statement):  # every statement an engine runs is rendered once
            sql = real(self, statement)
            ran.append(_normalized(sql))
            return sql

        monkeypatch.setattr(engine.Engine, "render", spy)
        request.run(con)
    missing = shown - set(ran)
    assert not missing, missing
    assert any(s.startswith('CREATE VIEW "people_anon"') for s in shown)
    assert any("GROUP BY" in s and '"pid" IN (0)' in s for s in shown) == (memory_rows == 0)


# -- install-macros and demo ---------------------------------------------------------------------
@pytest.mark.engines("duckdb")  # DuckDB table macros; PostgreSQL's refusal: test_install_macros_is_refused_on_postgres
def test_install_macros(capsys, db):
    code, out, _ = run(capsys, "install-macros", db)
    assert code == 0
    assert out.splitlines()[0] == f"installed 5 macros into {db}:"
    assert "  sqlanon_k_check(tbl, cols, k)" in out.splitlines()
    with connected(db) as con:
        row = rows(con, "SELECT ok, k_achieved FROM sqlanon_k_check('people', ['zip'], 71)")
        assert row == [(True, 71)]
    code, _, err = run(capsys, "install-macros", Path(db).with_name("nope.duckdb"))
    assert code == 2
    assert_one_line_error(err, "database file not found")


def test_demo(capsys):
    code, out, _ = run(capsys, "demo", "--k", "20")
    assert code == 0
    assert "UCI Adult (bundled, 30,162 rows)" in out
    assert re.search(r"^k\s+20 required, \d+ achieved", out, re.M)
    assert "first rows of the published view" in out and "eq_class" in out
    assert "HOLDS" in out and "cm[salary-class]" in out  # the release's report, in Markdown


# -- report -------------------------------------------------------------------------------------
@pytest.fixture
def released(capsys, db) -> str:
    """``db`` with the release ``people_anon``: k = 10, entropy l-diversity of city, Regression on id."""
    code, _, err = run(capsys, "anonymize", db, "people", "--qid", "age,zip", "--k", "10", "--sensitive", "city",
                       "--l", "1.5", "--target", "id")
    assert (code, err) == (0, ""), err
    return db


def _metrics(db: str, **columns) -> dict:
    with connected(db, read_only=True) as con:
        return _rounded(sqlanon.metrics(con, "people_anon", **columns).as_dict())


def _rounded(value):
    """Floats to 12 significant digits, in nested dicts and lists: a sum the database computes in
    parallel may differ in its last bit from one run to the next."""
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def test_report_formats_and_outputs(capsys, released, tmp_path):
    db = released
    code, out, err = run(capsys, "report", db, "people_anon")  # Markdown on standard output
    assert (code, err) == (0, "")
    assert out.startswith("# sqlanon release report: `people_anon`") and "## Requirement: HOLDS" in out
    assert "| entropy l-diversity('city', l=1.5) |" in out
    for name, marker in (("r.html", "<!DOCTYPE html>"), ("r.md", "# sqlanon release report"), ("r.json", "{")):
        code, out, err = run(capsys, "report", db, "people_anon", "-o", tmp_path / name)
        assert (code, out, err) == (0, "", "")
        assert (tmp_path / name).read_text(encoding="utf-8").startswith(marker)
    assert (tmp_path / "r.html").read_text(encoding="utf-8").count("<svg") == 3  # risk, sizes, widths (no timings)
    # JSON: the release's own workload by default, exactly sqlanon.metrics(...).as_dict()
    document = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert _rounded(document["metrics"]) == _metrics(db, numeric_targets=["id"], sensitive=["city"])
    assert document["verification"]["holds"] is True and document["selections"] == []
    code, out, _ = run(capsys, "report", db, "people_anon", "--format", "json", "--target", "city",
                       "--numeric-target", "id,salary", "--sensitive", "city", "--select", "age > 40",
                       "--select", "zip = 3")
    document = json.loads(out)
    assert code == 0 and _rounded(document["metrics"]) == _metrics(db, targets=["city"], numeric_targets=["id", "salary"],
                                                         sensitive=["city"])
    with connected(db, read_only=True) as con:
        expected = imprecision_of(con, "people_anon", ["age > 40", "zip = 3"]).predicates
    assert document["selections"] == [{"predicate": p.text, "returned": p.returned, "true": p.true,
                                       "imprecision": p.imprecision} for p in expected]
    code, out, _ = run(capsys, "report", db, "people_anon", "--format", "markdown", "-o", tmp_path / "x.html")
    assert code == 0 and (tmp_path / "x.html").read_text(encoding="utf-8").startswith("# sqlanon")


def test_report_exit_status_when_the_requirement_fails(capsys, db, tmp_path):
    """A live view cannot break its requirement (it suppresses); a snapshot edited by hand can."""
    with connected(db) as con:
        run_sql(con, "CREATE TABLE plain AS SELECT * FROM people")  # no key: a snapshot release
    code, _, err = run(capsys, "anonymize", db, "plain", "--qid", "age,zip", "--k", "10", "--view", "people_anon")
    assert (code, err) == (0, ""), err
    with connected(db) as con:
        run_sql(con, "DELETE FROM people_anon_rowmap WHERE eq_class = 0 AND id > "
                     "(SELECT min(id) FROM people_anon_rowmap WHERE eq_class = 0)")
    code, out, err = run(capsys, "report", db, "people_anon", "-o", tmp_path / "r.json")
    assert (code, out) == (1, "")
    assert err == "sqlanon: the requirement does not hold on people_anon (see the report)\n"
    document = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert document["verification"]["holds"] is False and document["verification"]["violating"] == 1


REPORT_ERRORS = [
    (["{db}", "people_anon", "--format", "pdf"], ["invalid choice: 'pdf'"]),
    (["{db}"], ["the following arguments are required: VIEW"]),
    (["{db}", "people"], ["'people' is not a sqlanon release"]),
    (["{db}", "nope"], ["'nope' is not a sqlanon release"]),
    (["missing.duckdb", "people_anon"], ["database file not found: missing.duckdb"]),
    (["{db}", "people_anon", "--target", "age"], ["quasi-identifier 'age'"]),
    (["{db}", "people_anon", "--sensitive", "cty"], ["no column 'cty'", "Did you mean 'city'?"]),
    (["{db}", "people_anon", "--numeric-target", "city"], ["RMSE needs a numeric column"]),
    (["{db}", "people_anon", "--target", "id,,city"], ["--target: empty column name"]),
    (["{db}", "people_anon", "--select", "salary > 3"], ["salary"]),
    (["{db}", "people_anon", "-o", "{tmp}/no/such/dir/r.html"], ["No such file or directory"]),
]


def test_report_usage_and_input_errors(capsys, released, tmp_path):
    for argv, fragments in REPORT_ERRORS:  # one release for all (a release per case costs seconds on PostgreSQL)
        code, out, err = run(capsys, "report", *[a.format(db=released, tmp=tmp_path) for a in argv])
        assert (code, out) == (2, ""), argv
        assert_one_line_error(err, *fragments)
        assert not (tmp_path / "no").exists()


# -- apply --------------------------------------------------------------------------------------
# CLI plumbing, the same on every engine; the engine's part of it runs on PostgreSQL in
# test_apply_reports_k_and_enforces_it (apply costs ~15 s there)
@pytest.mark.engines("duckdb")
def test_apply(capsys, db):
    assert run(capsys, "anonymize", db, "people", "--qid", "age,zip", "--k", "10")[0] == 0
    with connected(db) as con:
        make_people(con, 120, "new_people")
        run_sql(con, "UPDATE new_people SET age = age + 1000 WHERE id < 5")  # beyond the training domain
    code, out, err = run(capsys, "apply", db, "people_anon", "new_people", "--view", "new_anon")
    assert code == 0 and err.startswith("sqlanon: warning: the recoded rows are not 10-anonymous: "), err
    assert re.search(r"^published\s+new_anon \(table: new_people recoded with the rules people_anon_rules\)$", out, re.M)
    assert re.search(r"^rows\s+120: 120 placed in a region, 0 unplaced", out, re.M)
    # the training table recoded with its own rules is the view; --json is the Applied result
    code, out, err = run(capsys, "apply", db, "people_anon", "people")  # default name: taken by the release
    assert code == 2
    assert_one_line_error(err, "'people_anon' is an object of release 'people_anon'")
    code, out, _ = run(capsys, "apply", db, "people_anon", "people", "--view", "again", "--json")
    document = json.loads(out)
    assert code == 0 and (document["view"], document["rows"], document["placed"]) == ("again", 500, 500)
    with connected(db, read_only=True) as con:
        recoded = frame(con, "SELECT * FROM again ORDER BY id")
        pd.testing.assert_frame_equal(recoded, frame(con, "SELECT * FROM people_anon ORDER BY id"))
        # values beyond the training domain land in the open-ended top region: its bounds, never raw values
        assert rows(con, "SELECT max(age_max), count(eq_class) FROM new_anon WHERE id < 5") == [(89, 5)]
    before = sql_objects(db)
    code, _, err = run(capsys, "apply", db, "people_anon", "new_people", "--view", "new_anon")
    assert code == 2
    assert_one_line_error(err, "new_anon")
    for argv, fragment in ((["people_anon", "nope"], "no table or view named 'nope'"),
                           (["people", "new_people"], "'people' is not a sqlanon release"),
                           (["people_anon"], "the following arguments are required: TABLE")):
        code, out, err = run(capsys, "apply", db, *argv)
        assert (code, out) == (2, "")
        assert_one_line_error(err, fragment)
    assert sql_objects(db) == before
    assert run(capsys, "apply", db, "people_anon", "new_people", "--view", "new_anon", "--replace")[0] == 0


# -- as a program -------------------------------------------------------------------------------
def sqlanon_process(*argv: object, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "sqlanon", *map(str, argv)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


# a process per command costs ~5 s on PostgreSQL; one runs there: test_a_schema_qualified_table_on_a_plain_url
@pytest.mark.engines("duckdb")
def test_python_m_sqlanon(db, tmp_path):
    done = sqlanon_process("anonymize", db, "people", "--qid", "age,zip", "--k", "10", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")  # piped stderr: no progress line
    assert "people_anon" in done.stdout
    done = sqlanon_process("verify", db, "people_anon", "--qid", "age,zip", "--k", "1000", cwd=tmp_path)
    assert done.returncode == 1 and done.stdout.startswith("FAILED: ")
    done = sqlanon_process("verify", db, "nope", "--qid", "age", "--k", "2", cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert_one_line_error(done.stderr, "no table or view named 'nope'")


# a process per command costs ~5 s on PostgreSQL; one runs there: test_a_schema_qualified_table_on_a_plain_url
@pytest.mark.engines("duckdb")
def test_python_m_sqlanon_report(db, tmp_path):
    assert sqlanon_process("anonymize", db, "people", "--qid", "age,zip", "--k", "10", cwd=tmp_path).returncode == 0
    done = sqlanon_process("report", db, "people_anon", "--format", "html", "-o", "report.html", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "HOLDS" in page and page.count("<svg") == 3  # risk, sizes, widths
    done = sqlanon_process("report", db, "people_anon", cwd=tmp_path)  # Markdown on a pipe
    assert done.returncode == 0 and "## Requirement: HOLDS" in done.stdout
    done = sqlanon_process("report", db, "people", cwd=tmp_path)
    assert done.returncode == 2
    assert_one_line_error(done.stderr, "'people' is not a sqlanon release")


def test_python_m_sqlanon_files(tmp_path):
    con = duckdb.connect()
    make_people(con, 200)
    con.execute(f"COPY people TO '{tmp_path / 'in.csv'}' (FORMAT CSV, HEADER)")
    con.close()
    done = sqlanon_process("anonymize", "in.csv", "--qid", "age,city", "--k", "8", "--out", "out.parquet", "--json",
                           cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["out"] == "out.parquet"
    assert sorted(os.listdir(tmp_path)) == ["in.csv", "out.parquet"]
    assert sqlanon.verify(duckdb.connect(), str(tmp_path / "out.parquet"), ["age", "city"], 8).ok


# the same path on PostgreSQL: test_verify_says_which_check_failed, test_verify_reaches_every_constraint
@pytest.mark.engines("duckdb")
def test_verify_entropy_l_diversity(capsys, db):
    """``--sensitive/--l``: exit 0 when every class is l-diverse, 1 naming the check when not;
    the verdict agrees with the Python ``verify``."""
    assert run(capsys, "anonymize", db, "people", "--qid", "age,zip", "--k", "10", "--sensitive", "city",
               "--l", "1.5")[0] == 0
    args = ["verify", db, "people_anon", "--qid", "age,zip", "--k", "10", "--sensitive", "city"]
    code, out, err = run(capsys, *args, "--l", "1.5")
    assert (code, err) == (0, "")
    assert "ok: entropy l-diversity('city', l=1.5)" in out
    with connected(db, read_only=True) as con:
        strict = sqlanon.verify(con, "people_anon", ["age", "zip"], 10,
                                constraints=[sqlanon.EntropyLDiversity("city", 50)]).checks[0]
    code, out, _ = run(capsys, *args, "--l", "50")
    assert code == 1 and not strict.ok
    assert (f"FAILED: entropy l-diversity('city', l=50): worst class {strict.achieved:.4g} (l = e^entropy), "
            f"{strict.violating:,} violating classes") in out
    code, out, _ = run(capsys, *args, "--l", "50", "--json")
    assert code == 1 and json.loads(out)["holds"] is False
    for extra, fragment in [(["--l", "2"], "go together"), (["--sensitive", "city", "--l", "0.5"], "--l must be")]:
        code, _, err = run(capsys, "verify", db, "people_anon", "--qid", "age,zip", "--k", "10", *extra)
        assert code == 2
        assert_one_line_error(err, fragment)


# -- verify: which check failed -------------------------------------------------------------------
def _entropy_per_class(db: str) -> "pd.Series":
    """exp(entropy of city) per class of people_anon, by hand."""
    with connected(db, read_only=True) as con:
        published = frame(con, "SELECT age_min, age_max, zip_min, zip_max, city FROM people_anon")

    def l_of(cities):
        p = cities.value_counts(normalize=True).to_numpy()
        return float(np.exp(-(p * np.log(p)).sum()))
    return published.groupby(["age_min", "age_max", "zip_min", "zip_max"])["city"].apply(l_of)


def test_verify_says_which_check_failed(capsys, db):
    """k holds, entropy l-diversity does not: the k line says ok, the constraint's line says
    FAILED with its achieved value, and its violating classes are listed worst first, in text
    and in JSON (checked against a count by hand)."""
    assert run(capsys, "anonymize", db, "people", "--qid", "age,zip", "--k", "10")[0] == 0
    per_class = _entropy_per_class(db)
    l = float(np.sort(per_class.to_numpy())[3]) + 1e-6  # a few classes below l
    failing = per_class[per_class < l].sort_values(kind="stable")
    args = ["verify", db, "people_anon", "--qid", "age,zip", "--k", "10", "--sensitive", "city", "--l", f"{l!r}"]
    code, out, err = run(capsys, *args)
    assert (code, err) == (1, "")
    lines = out.splitlines()
    assert lines[0].startswith("ok: people_anon is 10-anonymous over age_min, age_max, zip_min, zip_max: ")
    assert "not 10-anonymous" not in out and ": ;" not in out
    name = f"entropy l-diversity('city', l={l!r})"
    assert lines[1] == f"FAILED: {name}: worst class {failing.iloc[0]:.4g} (l = e^entropy), {len(failing)} violating classes"
    assert lines[2] == f"violating classes of {name} (worst first):"
    assert lines[3].split() == ["l", "=", "e^entropy", "size", "age_min", "age_max", "zip_min", "zip_max"]
    listed = [line.split() for line in lines[4:4 + len(failing)]]
    assert [float(row[0]) for row in listed] == pytest.approx(failing.round(3).tolist(), abs=1e-3)
    assert {tuple(int(v) for v in row[2:]) for row in listed} == set(failing.index)
    assert lines[-1] == f"FAILED: people_anon: 1 of 2 checks fail: {name}"
    code, out, _ = run(capsys, *args, "--json")
    document = json.loads(out)
    assert code == 1 and document["holds"] is False and document["failed"] == [name]
    assert document["violating_classes"] == []  # k holds
    (check,) = document["checks"]
    assert (check["constraint"], check["ok"], check["violating"], check["measure"]) == (name, False, len(failing),
                                                                                      "l = e^entropy")
    assert check["worst"] == pytest.approx(failing.iloc[0])
    assert [c["value"] for c in check["violating_classes"]] == pytest.approx(failing.tolist())
    assert {tuple(c["values"].values()) for c in check["violating_classes"]} == set(failing.index)
    # both fail: each is named, k's classes are listed too
    code, out, _ = run(capsys, *args[:-4], "--k", "17", "--sensitive", "city", "--l", f"{l!r}")
    assert code == 1 and out.startswith("FAILED: people_anon is not 17-anonymous over")
    assert out.splitlines()[-1] == f"FAILED: people_anon: 2 of 2 checks fail: k-anonymity(k=17); {name}"


VERIFY_CONSTRAINTS = [
    (["--sensitive", "city", "--l", "4", "--diversity", "distinct"], sqlanon.DistinctLDiversity("city", 4)),
    (["--sensitive", "city", "--l", "5", "--diversity", "distinct"], sqlanon.DistinctLDiversity("city", 5)),
    (["--sensitive", "city", "--l", "2", "--diversity", "recursive", "--c", "0.6"],
     sqlanon.RecursiveCLDiversity("city", 0.6, 2)),
    (["--sensitive", "city", "--l", "2", "--diversity", "recursive", "--c", "3"],
     sqlanon.RecursiveCLDiversity("city", 3.0, 2)),
    (["--variance", "salary=500000"], sqlanon.VarianceDiversity("salary", 500000.0)),
    (["--variance", "salary=5e6"], sqlanon.VarianceDiversity("salary", 5e6)),
]


def test_verify_reaches_every_constraint(capsys, db):
    """--diversity distinct|entropy|recursive --c and --variance COL=V check what the Python
    verify checks with the same constraint objects (one release for every case)."""
    assert run(capsys, "anonymize", db, "people", "--qid", "age,zip", "--k", "10")[0] == 0
    verdicts = set()
    for flags, constraint in VERIFY_CONSTRAINTS:
        with connected(db, read_only=True) as con:
            expected = sqlanon.verify(con, "people_anon", ["age", "zip"], 10, constraints=[constraint]).checks[0]
        code, out, err = run(capsys, "verify", db, "people_anon", "--qid", "age,zip", "--k", "10", *flags, "--json")
        assert (code, err) == (0 if expected.ok else 1, ""), flags
        (check,) = json.loads(out)["checks"]
        assert (check["constraint"], check["ok"], check["violating"]) == (constraint.describe(), expected.ok,
                                                                          expected.violating)
        assert len(check["violating_classes"]) == min(20, expected.violating)
        verdicts.add(expected.ok)
    assert verdicts == {True, False}  # the cases hold and fail


@pytest.mark.parametrize("flags, fragment", [
    (["--sensitive", "city", "--l", "2", "--diversity", "recursive"], "--diversity recursive needs --c"),
    (["--sensitive", "city", "--l", "2", "--c", "2"], "--c is the c of recursive (c,l)-diversity"),
    (["--sensitive", "city", "--l", "1.5", "--diversity", "distinct"], "--l must be an integer for distinct"),
    (["--diversity", "distinct"], "--diversity distinct needs --sensitive and --l"),
    (["--sensitive", "city", "--l", "2", "--diversity", "recursive", "--c", "0"], "--c must be a number > 0"),
    (["--variance", "salary"], "--variance takes COL=V"),
    (["--variance", "salary=-1"], "--variance takes COL=V"),
    (["--diversity", "entropie"], "invalid choice: 'entropie'"),
])
@pytest.mark.engines("duckdb")  # usage errors: refused before the database is opened, the same on every engine
def test_constraint_flag_errors(capsys, db, flags, fragment):
    for command in (["verify", db, "people"], ["anonymize", db, "people"], ["explain", db, "people"]):
        before = sql_objects(db)
        code, out, err = run(capsys, *command, "--qid", "age,zip", "--k", "10", *flags)
        assert (code, out) == (2, ""), command
        assert_one_line_error(err, fragment)
        assert sql_objects(db) == before


# flags/file -> manifest (8 releases); constraints on PostgreSQL: test_verify_reaches_every_constraint, tests/e2e/test_api.py
@pytest.mark.engines("duckdb")
def test_every_constraint_reaches_anonymize(capsys, db, tmp_path):
    """Each constraint kind from flags and from a release file lands in the manifest, and the
    summary prints the constraints and the criterion."""
    from sqlanon.publish import manifest

    cases = [
        (["--sensitive", "city", "--l", "3", "--diversity", "distinct"], "distinct l-diversity('city', l=3)",
         'sensitive = "city"\nl = 3\ndiversity = "distinct"\n'),
        (["--sensitive", "city", "--l", "2", "--diversity", "recursive", "--c", "3"],
         "recursive (c,l)-diversity('city', c=3, l=2)", 'sensitive = "city"\nl = 2\ndiversity = "recursive"\nc = 3\n'),
        (["--sensitive", "city", "--l", "2.5", "--diversity", "entropy"], "entropy l-diversity('city', l=2.5)",
         'sensitive = "city"\nl = 2.5\n'),
        (["--variance", "salary=1000"], "variance diversity('salary', v=1000)", "variance = { salary = 1000 }\n"),
    ]
    for i, (flags, described, toml) in enumerate(cases):
        code, out, err = run(capsys, "anonymize", db, "people", "--qid", "age,zip", "--k", "10", *flags,
                             "--view", f"flags{i}")
        assert (code, err) == (0, ""), err
        assert re.search(rf"^constraints\s+{re.escape(described)} \(verified\)$", out, re.M), out
        assert re.search(r"^criterion\s+median$", out, re.M)
        path = tmp_path / f"r{i}.toml"
        path.write_text(f'[release]\ndatabase = "{db}"\ntable = "people"\nview = "file{i}"\n[[qi]]\nname = "age"\n'
                        f'[[qi]]\nname = "zip"\n[privacy]\nk = 10\n{toml}')
        code, out, err = run(capsys, "anonymize", "--config", path, "--json")
        assert (code, err) == (0, ""), err
        assert json.loads(out)["constraints"] == ["k-anonymity(k=10)", described]
        with connected(db, read_only=True) as con:
            for view in (f"flags{i}", f"file{i}"):
                assert manifest.read(con, view).constraints == ("k-anonymity(k=10)", described)


# -- the criterion ---------------------------------------------------------------------------------
@pytest.fixture
def labelled(db) -> str:
    """``db`` with ``patients``: QIs age and zip, an integer-coded class label ``y`` (1/2), a
    text label ``ward``."""
    i = np.arange(600, dtype=np.int64)
    patients = pd.DataFrame({"id": i, "age": i % 90, "zip": i % 7, "y": (1 + (i * 7 % 11 > 5)).astype(np.int32),
                             "ward": [f"w{v}" for v in i % 3]})
    with connected(db) as con:
        load_frame(con, "patients", patients)
    return db


# flags/file -> manifest (8 releases); the criterion's validation on PostgreSQL: test_criterion_contradictions_are_usage_errors
@pytest.mark.engines("duckdb")
def test_criterion_is_chosen_explicitly(capsys, labelled, tmp_path):
    """An integer-coded label runs Regression when the types choose; --criterion infogain (or
    criterion = "infogain" in the release file) runs InfoGain; the summary says which."""
    from sqlanon.publish import manifest

    db = labelled
    base = ["anonymize", db, "patients", "--qid", "age,zip", "--k", "10"]
    runs = {
        "auto": (["--target", "y"], "regression('y')"),
        "infogain": (["--target", "y", "--criterion", "infogain"], "infogain('y')"),
        "regression": (["--target", "y", "--criterion", "regression"], "regression('y')"),
        "median": (["--criterion", "median"], "median"),
        "selection": (["--criterion", "selection", "--select", "age > 40", "--target", "y"],
                      "selections(['age > 40'], then=regression('y'))"),
        "sel_infogain": (["--criterion", "infogain", "--select", "age > 40", "--target", "y"],
                         "selections(['age > 40'], then=infogain('y'))"),
    }
    for view, (flags, described) in runs.items():
        code, out, err = run(capsys, *base, *flags, "--view", view)
        assert (code, err) == (0, ""), err
        assert re.search(rf"^criterion\s+{re.escape(described)}$", out, re.M), out
    path = tmp_path / "r.toml"
    path.write_text(f'[release]\ndatabase = "{db}"\ntable = "patients"\nview = "from_file"\n[[qi]]\nname = "age"\n'
                    '[[qi]]\nname = "zip"\n[privacy]\nk = 10\n[workload]\ntarget = "y"\ncriterion = "infogain"\n')
    code, out, _ = run(capsys, "anonymize", "--config", path, "--json")
    assert code == 0 and json.loads(out)["criterion"] == "infogain('y')"
    with connected(db, read_only=True) as con:
        for view, (_, described) in runs.items():
            assert manifest.read(con, view).criterion == described
        assert manifest.read(con, "from_file").criterion == "infogain('y')"
    # the flag overrides the file's criterion
    code, out, _ = run(capsys, "anonymize", "--config", path, "--criterion", "regression", "--view", "over", "--json")
    assert code == 0 and json.loads(out)["criterion"] == "regression('y')"


CRITERION_CONTRADICTIONS = [
    (["--criterion", "median", "--target", "y"], "--criterion median takes no --target"),
    (["--criterion", "infogain"], "--criterion infogain needs --target columns"),
    (["--criterion", "regression"], "--criterion regression needs --target columns"),
    (["--criterion", "selection"], "--criterion selection needs --select"),
    (["--criterion", "selection", "--target", "y"], "--criterion selection needs --select"),
    (["--criterion", "regression", "--target", "ward"], "'ward' has type VARCHAR"),
    (["--criterion", "info", "--target", "y"], "invalid choice: 'info'"),
]


def test_criterion_contradictions_are_usage_errors(capsys, labelled):
    before = sql_objects(labelled)
    for flags, fragment in CRITERION_CONTRADICTIONS:  # one database for all (set-up costs on PostgreSQL)
        for command in ("anonymize", "explain"):
            code, out, err = run(capsys, command, labelled, "patients", "--qid", "age,zip", "--k", "10", *flags)
            assert (code, out) == (2, ""), (command, flags)
            assert_one_line_error(err, fragment)
            assert sql_objects(labelled) == before


def test_contradictions_between_file_and_flags_name_both(capsys, labelled, tmp_path):
    path = tmp_path / "r.toml"
    path.write_text(f'[release]\ndatabase = "{labelled}"\ntable = "patients"\n[[qi]]\nname = "age"\n'
                    '[privacy]\nk = 10\n[workload]\ncriterion = "median"\n')
    code, _, err = run(capsys, "anonymize", "--config", path, "--target", "y")
    assert code == 2
    assert_one_line_error(err, "workload.criterion median takes no --target")


# -- messages in the command line's words ---------------------------------------------------------------
def test_library_errors_speak_in_flags(capsys, db):
    assert run(capsys, "anonymize", db, "people", "--qid", "age", "--k", "5")[0] == 0
    code, _, err = run(capsys, "anonymize", db, "people", "--qid", "age", "--k", "5")
    assert code == 2
    assert_one_line_error(err, "'people_anon' already exists; pass --replace to overwrite it or choose another --view name")
    code, _, err = run(capsys, "anonymize", db, "people", "--qid", "age", "--k", "5", "--view", "v", "--memory-rows", "-1")
    assert code == 2
    assert_one_line_error(err, "--memory-rows must be at least 0")
    code, _, err = run(capsys, "anonymize", db, "people", "--qid", "age", "--k", "501", "--view", "v")
    assert code == 2
    assert_one_line_error(err, "--k 501 is larger than the table")
    code, _, err = run(capsys, "apply", db, "people_anon", "people", "--view", "people_anon_rules")
    assert code == 2
    assert_one_line_error(err, "choose another --view name")
    code, _, err = run(capsys, "apply", db, "people_anon", "people", "--view", "people")
    assert code == 2
    assert_one_line_error(err, "never replaced: choose another --view name")
    # a constraint's own description keeps its keywords
    code, _, err = run(capsys, "anonymize", db, "people", "--qid", "age", "--k", "5", "--view", "v",
                       "--sensitive", "city", "--l", "50")
    assert code == 2
    assert_one_line_error(err, "does not satisfy entropy l-diversity('city', l=50)")
    assert "--l" not in err


# -- help, explain, closed pipes -----------------------------------------------------------------------
@pytest.mark.parametrize("command", ["anonymize", "explain"])
def test_release_file_help_lists_every_section_and_key(capsys, command):
    from sqlanon.request.config import SCHEMA

    code, out, _ = run(capsys, command, "--help")
    assert code == 0
    for section, keys in SCHEMA:
        line = next((line for line in out.splitlines() if line.strip().startswith(section + " ")), None)
        assert line is not None, (section, out)
        assert [k.strip() for k in line.strip()[len(section):].split(",")] == list(keys)
    assert "[workload]" in out and "criterion" in out
    for flag in ("--criterion", "--diversity", "--c C", "--variance COL=V"):
        assert flag in out


def _headings(out: str) -> list[int]:
    return [int(m.group(1)) for m in re.finditer(r"^-- == (\d+)\. ", out, re.M)]


@pytest.mark.parametrize("extra", [
    [],
    ["--memory-rows", "0"],
    ["--memory-rows", "100", "--qid", "city", "--hierarchy", "city={tmp}/city.csv"],
    ["--target", "salary", "--select", "age > 40"],
    ["--sensitive", "city", "--l", "2", "--diversity", "distinct", "--variance", "salary=10", "--memory-rows", "50"],
])
def test_explain_steps_are_numbered_without_gaps(capsys, db, tmp_path, extra):
    code, out, err = run(capsys, "explain", db, "people", "--qid", "age,zip", "--k", "10",
                         *[e.format(tmp=tmp_path) for e in extra])
    assert (code, err) == (0, ""), err
    numbers = _headings(out)
    # validate, encode, publish and clean up at least: a step that runs no statement has no
    # heading (PostgreSQL's in-place read fetches the rows in the encode step, and a held row
    # map leaves the in-memory finish without a statement)
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= 4, numbers
    assert "Publish in one transaction" in out and "Clean up" in out


def test_explain_steps_of_files_are_numbered_without_gaps(capsys, tmp_path):
    con = duckdb.connect()
    make_people(con, 100)
    con.execute(f"COPY people TO '{tmp_path / 'p.parquet'}' (FORMAT PARQUET)")
    con.close()
    code, out, err = run(capsys, "explain", tmp_path / "p.parquet", "--qid", "age,zip", "--k", "10")
    assert (code, err) == (0, ""), err
    numbers = _headings(out)
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= 5, numbers


class _ClosedPipe(io.StringIO):
    """A standard output whose reader has gone (``| head -1``)."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self) -> None:
        raise BrokenPipeError(32, "Broken pipe")


@pytest.mark.engines("duckdb")  # closed-pipe handling: CLI plumbing, the same on every engine
def test_a_closed_stdout_is_not_an_error(capsys, db, monkeypatch):
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    assert main(["explain", db, "people", "--qid", "age,zip", "--k", "10"]) == 0
    assert main(["anonymize", db, "people", "--qid", "age", "--k", "10", "--json"]) == 0
    assert main(["verify", db, "people_anon", "--qid", "age", "--k", "10"]) == 0
    assert main(["verify", db, "people_anon", "--qid", "age", "--k", "1000"]) == 1  # its own status
    assert main(["--help"]) == 0
    assert capsys.readouterr().err == ""
    assert sql_objects(db) >= {(*home(db), "people_anon", "view")}  # the work was done


@pytest.mark.engines("duckdb")  # closed-pipe handling: CLI plumbing, the same on every engine
def test_python_m_sqlanon_into_a_closed_pipe(db, tmp_path):
    """``sqlanon explain ... | head -1``: the reader is gone before sqlanon writes; exit 0, and
    nothing on stderr (no traceback, no 'Exception ignored' at exit)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-m", "sqlanon", "explain", db, "people", "--qid", "age,zip",
                                "--k", "10"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    process.stdout.close()  # the reader goes away at once
    stderr = process.stderr.read().decode()
    assert (process.wait(timeout=120), stderr) == (0, "")


# -- --out: checked before the work, undone after a late failure ------------------------------------------
def test_out_is_checked_before_any_work(capsys, db, tmp_path, monkeypatch):
    before = sql_objects(db)
    for out, fragment in ((tmp_path / "no" / "such" / "x.parquet", "no such directory"),
                          (tmp_path, "is a directory"),
                          (tmp_path / "x.xlsx", "unknown format")):
        code, text, err = run(capsys, "anonymize", db, "people", "--qid", "age", "--k", "10", "--out", out)
        assert (code, text) == (2, "")
        assert_one_line_error(err, fragment)
        assert sql_objects(db) == before  # nothing published
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: False if Path(path) == tmp_path / "ro" else
                        real_access(path, mode))
    (tmp_path / "ro").mkdir()
    code, _, err = run(capsys, "anonymize", db, "people", "--qid", "age", "--k", "10", "--out", tmp_path / "ro" / "x.csv")
    assert code == 2
    assert_one_line_error(err, "is not writable")
    assert sql_objects(db) == before and not (tmp_path / "no").exists()


def _view_rows(db: str, view: str) -> list:
    with connected(db, read_only=True) as con:
        return rows(con, f'SELECT * FROM "{view}" ORDER BY id')


def test_a_failed_copy_leaves_the_database_as_before(capsys, db, tmp_path, monkeypatch):
    """The COPY itself fails after the release was published: the new release is dropped again,
    and a release --replace was overwriting is back, unchanged."""
    from sqlanon import cli

    out = tmp_path / "pub.parquet"
    files = sorted(os.listdir(tmp_path))  # city.csv (and the DuckDB file)
    monkeypatch.setitem(cli.OUT_FORMATS, ".parquet", ("PARQUET", (("COMPRESSION", "bogus"),)))
    before = sql_objects(db)
    code, text, err = run(capsys, "anonymize", db, "people", "--qid", "age", "--k", "10", "--out", out)
    assert (code, text) == (1, "")
    assert_one_line_error(err, "compression")
    assert sql_objects(db) == before and sorted(os.listdir(tmp_path)) == files
    # over an existing release, with --replace
    assert run(capsys, "anonymize", db, "people", "--qid", "age,zip", "--k", "20")[0] == 0
    published, view_rows = sql_objects(db), _view_rows(db, "people_anon")
    code, _, err = run(capsys, "anonymize", db, "people", "--qid", "age", "--k", "5", "--replace", "--out", out)
    assert code == 1
    assert_one_line_error(err, "compression")
    assert sql_objects(db) == published and _view_rows(db, "people_anon") == view_rows
    assert sorted(os.listdir(tmp_path)) == files
    with connected(db, read_only=True) as con:
        assert sqlanon.publish.manifest.read(con, "people_anon").k == 20
    # and when the COPY works, --replace with --out replaces the release and writes the file
    monkeypatch.undo()
    code, text, err = run(capsys, "anonymize", db, "people", "--qid", "age", "--k", "5", "--replace", "--out", out,
                          "--json")
    assert (code, err) == (0, "") and json.loads(text)["k"] == 5
    with connected(db, read_only=True) as con:
        assert sqlanon.publish.manifest.read(con, "people_anon").k == 5
    assert duckdb.connect().execute(f"SELECT count(*) FROM read_parquet('{out}')").fetchone()[0] == 500
    assert sorted(os.listdir(tmp_path)) == sorted([*files, "pub.parquet"])


# -- apply: what it guarantees ------------------------------------------------------------------------
def test_apply_reports_k_and_enforces_it(capsys, db):
    assert run(capsys, "anonymize", db, "people", "--qid", "age,zip", "--k", "10", "--sensitive", "city",
               "--l", "2")[0] == 0
    i = np.arange(150, dtype=np.int64)
    fresh = pd.DataFrame({"id": i, "age": (i * 37) % 90, "zip": (i * i) % 7, "city": [f"x{v}" for v in i % 4],
                          "salary": [f"{v * 1.5:.1f}" for v in i]})
    with connected(db) as con:
        load_frame(con, "fresh", fresh, types={"salary": "DECIMAL(22, 1)"})
    code, out, err = run(capsys, "apply", db, "people_anon", "fresh", "--view", "plain")
    assert code == 0
    assert re.fullmatch(r"sqlanon: warning: the recoded rows are not 10-anonymous: \d+ of \d+ classes of 'plain' "
                        r"hold fewer than 10 rows, the release's k \(smallest \d+\); a release's rules do not make "
                        r"new rows k-anonymous\. Pass --enforce to suppress those classes\.\n", err), err
    with connected(db, read_only=True) as con:
        sizes = [n for n, in rows(con, "SELECT count(*) FROM plain GROUP BY eq_class")]
    below = sum(n < 10 for n in sizes)
    assert re.search(rf"^classes\s+{len(sizes)}, {below} below the release's k=10$", out, re.M), out
    assert re.search(rf"^k\s+10 required by the release, {min(sizes)} achieved \(smallest class\); not enforced", out,
                     re.M)
    code, out, err = run(capsys, "apply", db, "people_anon", "fresh", "--view", "kept", "--enforce", "--json")
    assert (code, err) == (0, "")
    applied = json.loads(out)
    assert applied["enforced"] == ["k-anonymity(k=10)", "entropy l-diversity('city', l=2)"]
    assert applied["below_k"] == 0 and applied["suppressed_classes"] >= below and applied["k"] == 10
    with connected(db, read_only=True) as con:
        kept = rows(con, "SELECT count(*) FROM kept WHERE eq_class IS NOT NULL GROUP BY eq_class")
        assert min(n for n, in kept) == applied["k_achieved"] >= 10 and len(kept) == applied["classes"]
        assert rows(con, "SELECT count(*) FROM kept WHERE eq_class IS NULL") == [(applied["suppressed_rows"],)]
        run_sql(con, "CREATE TEMP VIEW kept_rows AS SELECT * FROM kept WHERE eq_class IS NOT NULL")
        assert sqlanon.verify(con, "kept_rows", ["age", "zip"], 10, class_column="eq_class",
                              constraints=[sqlanon.EntropyLDiversity("city", 2)]).ok
    code, out, _ = run(capsys, "apply", db, "people_anon", "fresh", "--view", "kept2", "--enforce")
    assert code == 0 and re.search(r"^suppressed\s+\d+ classes, \d+ rows \(published fully generalized\): enforced "
                                   r"k-anonymity\(k=10\); entropy l-diversity\('city', l=2\)$", out, re.M), out


def test_key_and_class_column_flags(capsys, db):
    with connected(db) as con:
        run_sql(con, "CREATE TABLE plain AS SELECT * FROM people")  # no declared key
    code, out, err = run(capsys, "anonymize", db, "plain", "--qid", "age,zip", "--k", "10",
                         "--key", "id", "--class-column", "grp")
    assert (code, err) == (0, ""), err
    assert re.search(r"^published\s+plain_anon \(live view of plain, key id\)$", out, re.M)
    with connected(db) as con:
        columns = [r[0] for r in rows(con, "SELECT column_name FROM information_schema.columns WHERE table_name = "
                                            "'plain_anon' AND table_schema = current_schema() ORDER BY ordinal_position")]
        assert columns[-1] == "grp"
        assert sqlanon.verify(con, "plain_anon", ["age", "zip"], 10, class_column="grp").ok
    code, out, err = run(capsys, "anonymize", db, "plain", "--qid", "age", "--k", "10", "--key", "zip", "--view", "x")
    assert code == 2 and "does not identify" in err


# -- PostgreSQL: what is DuckDB's alone is refused clearly; a database out of reach is one line ------------
DATA_FILE_REFUSED = "looks like a data file, which only the DuckDB engine reads in place; on postgres load it into a table first"


@pytest.mark.engines("postgres")
def test_files_as_the_source_are_refused_on_postgres(capsys, db, tmp_path):
    """A Parquet/CSV path where a table goes: DuckDB reads it in place, PostgreSQL cannot; every
    command that takes a source says so in one line (exit 2) and writes nothing."""
    con = duckdb.connect()
    make_people(con, 50)
    con.execute(f"COPY people TO '{tmp_path / 'p.parquet'}' (FORMAT PARQUET)")
    con.execute(f"COPY people TO '{tmp_path / 'p.csv'}' (FORMAT CSV, HEADER)")
    con.close()
    assert run(capsys, "anonymize", db, "people", "--qid", "age,zip", "--k", "10")[0] == 0
    (tmp_path / "r.toml").write_text(f'[release]\ndatabase = "{db}"\ntable = "p.csv"\n[[qi]]\nname = "age"\n'
                                     '[privacy]\nk = 5\n')
    before, files = sql_objects(db), sorted(os.listdir(tmp_path))
    parquet, csv = str(tmp_path / "p.parquet"), str(tmp_path / "p.csv")
    for argv in (["anonymize", db, parquet, "--qid", "age", "--k", "5"],
                 ["anonymize", db, csv, "--qid", "age", "--k", "5", "--out", tmp_path / "o.csv"],
                 ["anonymize", "--config", tmp_path / "r.toml"],
                 ["explain", db, parquet, "--qid", "age", "--k", "5"],
                 ["verify", db, parquet, "--qid", "age", "--k", "5"],
                 ["apply", db, "people_anon", csv, "--view", "applied"]):
        code, out, err = run(capsys, *argv)
        assert (code, out) == (2, ""), argv
        assert_one_line_error(err, DATA_FILE_REFUSED)
    assert sql_objects(db) == before and sorted(os.listdir(tmp_path)) == files


@pytest.mark.engines("postgres")
def test_install_macros_is_refused_on_postgres(capsys, db):
    """The macros are DuckDB table macros: on a PostgreSQL URL, one line (exit 2), nothing created;
    the library's own error is an InputError saying so."""
    before = sql_objects(db)
    code, out, err = run(capsys, "install-macros", db)
    assert (code, out) == (2, "")
    assert_one_line_error(err, "sqlanon's SQL macros are DuckDB table macros; postgres cannot install them")
    assert sql_objects(db) == before
    from sqlanon.cli import install_macros
    from sqlanon.errors import InputError

    with connected(db) as con, pytest.raises(InputError, match="DuckDB table macros; postgres cannot"):
        install_macros(con)


@pytest.mark.engines("postgres")
def test_a_schema_qualified_table_on_a_plain_url(db, tmp_path):
    """``python -m sqlanon`` with a URL: without the schema in the URL (search_path the server's
    default), a schema-qualified source is read where it is."""
    url = re.sub(r"\?options=[^&]*&?", "?", db).rstrip("?")
    assert "search_path" not in url and url != db
    schema = home(db)[1]
    done = sqlanon_process("verify", url, f"{schema}.people", "--qid", "zip", "--k", "71", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith(f"ok: {schema}.people is 71-anonymous over zip: 7 classes, smallest 71, 500 rows")


UNREACHABLE = "postgresql://sqlanon:hunter2@127.0.0.1:1/nowhere"  # port 1: nothing listens, refused at once


@pytest.mark.parametrize("argv", [
    ["anonymize", UNREACHABLE, "people", "--qid", "age", "--k", "5"],
    ["explain", UNREACHABLE, "people", "--qid", "age", "--k", "5"],
    ["verify", UNREACHABLE, "people", "--qid", "age", "--k", "5"],
    ["report", UNREACHABLE, "people_anon"],
    ["apply", UNREACHABLE, "people_anon", "people"],
    ["install-macros", UNREACHABLE],
])
def test_an_unreachable_database_is_one_line(capsys, tmp_path, argv):
    """A server refusing the connection: one line naming the URL (its password hidden), exit 2;
    the same through a release file."""
    pytest.importorskip("psycopg")
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert_one_line_error(err, "cannot connect to postgresql://sqlanon:***@127.0.0.1:1/nowhere: ", "refused")
    assert "hunter2" not in err
    if argv[0] == "anonymize":
        (tmp_path / "r.toml").write_text(f'[release]\ndatabase = "{UNREACHABLE}"\ntable = "people"\n'
                                         '[[qi]]\nname = "age"\n[privacy]\nk = 5\n')
        code, out, err = run(capsys, "anonymize", "--config", tmp_path / "r.toml")
        assert (code, out) == (2, "")
        assert_one_line_error(err, "cannot connect to postgresql://sqlanon:***@127.0.0.1:1/nowhere: ")


def test_a_url_without_psycopg_is_one_line(capsys, monkeypatch):
    """PostgreSQL's driver is an optional extra: without it a URL gets one line saying how to
    install it (exit 2), never an ImportError's traceback."""
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg -> ImportError
    monkeypatch.delitem(sys.modules, "sqlanon.engine.postgres", raising=False)
    for argv in (["verify", UNREACHABLE, "people", "--qid", "age", "--k", "5"], ["install-macros", UNREACHABLE]):
        code, out, err = run(capsys, *argv)
        assert (code, out) == (2, "")
        assert_one_line_error(err, "cannot connect to a PostgreSQL URL: its driver psycopg 3 is not installed",
                              'pip install "sqlanon[postgres]"')
