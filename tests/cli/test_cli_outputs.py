"""The command line never writes over what it reads, nor over a file without ``--replace``
(issue 49, part 2): ``anonymize --out`` and ``report -o`` refuse a path that is one of the
command's inputs -- the source files, the DuckDB database (and its write-ahead log), a hierarchy,
the release file -- compared as resolved paths (symlinks followed) and as files (hard links),
whatever ``--replace`` says; and an existing file is overwritten only with ``--replace``.

DuckDB only: the inputs that are files (a PostgreSQL database is a URL, not a file).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import duckdb
import pytest

from tests.support import make_people
from tests.support.cli import assert_one_line_error, run

CITY = "x0;low;*\nx1;low;*\nx2;low;*\nx3;high;*\nx4;high;*\n"
CONFIG = '[release]\ntable = "people.csv"\n[[qi]]\nname = "age"\n[privacy]\nk = 5\n'


def digest(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (symlinks as their target's name) with its content's hash."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_symlink():
            out[str(p)] = "-> " + os.readlink(p)
        elif p.is_file():
            out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.fixture
def inputs(tmp_path, capsys) -> Path:
    """``tmp_path`` with ``people.csv`` (and ``part/a.csv``, ``part/b.csv``: its halves),
    ``city.csv`` (a hierarchy), ``release.toml`` and the database ``h.duckdb`` holding ``people``
    and the release ``people_anon``."""
    con = duckdb.connect(str(tmp_path / "h.duckdb"))
    make_people(con, 200)
    con.execute(f"COPY people TO '{tmp_path / 'people.csv'}' (FORMAT CSV, HEADER)")
    (tmp_path / "part").mkdir()
    con.execute(f"COPY (SELECT * FROM people WHERE id < 100) TO '{tmp_path / 'part' / 'a.csv'}' (FORMAT CSV, HEADER)")
    con.execute(f"COPY (SELECT * FROM people WHERE id >= 100) TO '{tmp_path / 'part' / 'b.csv'}' (FORMAT CSV, HEADER)")
    con.close()
    (tmp_path / "city.csv").write_text(CITY)
    (tmp_path / "release.toml").write_text(CONFIG)
    assert run(capsys, "anonymize", tmp_path / "h.duckdb", "people", "--qid", "age", "--k", "5", "--quiet")[0] == 0
    return tmp_path


def _link(tmp: Path, name: str, to: str, hard: bool = False) -> Path:
    """``name`` in ``tmp``: a symbolic (or hard) link to ``to``; the link's path."""
    link = tmp / name
    (os.link if hard else os.symlink)(tmp / to, link)
    return link


# (what, argv after "anonymize" with {t} for the folder, the output path, a fragment of the error)
CASES = [
    ("source file", ["{t}/people.csv", "--qid", "age", "--k", "5"], "{t}/people.csv", "a source file"),
    ("source, by another spelling", ["{t}/people.csv", "--qid", "age", "--k", "5"], "{t}/part/../people.csv",
     "a source file"),
    ("a file of the source glob", ["{t}/part/*.csv", "--qid", "age", "--k", "5"], "{t}/part/b.csv", "a source file"),
    ("source, via a symlink", ["{t}/people.csv", "--qid", "age", "--k", "5"], "link:people.csv", "a source file"),
    ("source, via a hard link", ["{t}/people.csv", "--qid", "age", "--k", "5"], "hard:people.csv", "a source file"),
    ("source given via a symlink", ["link:people.csv", "--qid", "age", "--k", "5"], "{t}/people.csv", "a source file"),
    ("database, via a symlink", ["{t}/h.duckdb", "people", "--qid", "age", "--k", "5", "--view", "v2"],
     "link:h.duckdb", "the database"),
    ("database's write-ahead log", ["{t}/h.duckdb", "people", "--qid", "age", "--k", "5", "--view", "v2"],
     "link:h.duckdb.wal", "the database's write-ahead log"),
    ("database file as the source", ["{t}/h.duckdb", "{t}/people.csv", "--qid", "age", "--k", "5"],
     "{t}/people.csv", "a source file"),
    ("hierarchy", ["{t}/people.csv", "--qid", "age,city", "--k", "5", "--hierarchy", "city={t}/city.csv"],
     "{t}/city.csv", "the hierarchy of 'city'"),
    ("t-closeness hierarchy", ["{t}/people.csv", "--qid", "age", "--k", "5",
                               "--t-closeness", "city:0.9:hierarchical:{t}/city.csv"],
     "{t}/city.csv", "the t-closeness hierarchy of 'city'"),
    ("release file, via a symlink", ["--config", "{t}/release.toml"], "link:release.toml", "the release file"),
]


def _path(tmp: Path, spec: str, n: int) -> str:
    if spec.startswith(("link:", "hard:")):
        kind, _, to = spec.partition(":")
        suffix = ".csv" if not to.endswith(".csv") else ""  # --out needs a data format's suffix
        return str(_link(tmp, f"out{n}{suffix}" if suffix else f"out{n}_{to}", to, hard=kind == "hard"))
    return spec.format(t=tmp)


@pytest.mark.parametrize("what, argv, out, fragment", CASES, ids=[c[0] for c in CASES])
def test_anonymize_never_writes_its_output_over_an_input(capsys, inputs, what, argv, out, fragment):
    """With --replace and without: the command stops before any work, every file as it was."""
    for n, replace in enumerate(([], ["--replace"])):
        args = [_path(inputs, a, 10 + n) if a.startswith("link:") else a.format(t=inputs) for a in argv]
        target = _path(inputs, out, n)
        before = digest(inputs)
        code, text, err = run(capsys, "anonymize", *args, "--out", target, *replace)
        assert (code, text) == (2, ""), err
        assert_one_line_error(err, f"--out {target} is {fragment}", "which this command reads")
        assert digest(inputs) == before


def test_anonymize_refuses_an_existing_out_without_replace(capsys, inputs):
    out = inputs / "anon.csv"
    out.write_text("mine\n")
    code, _, err = run(capsys, "anonymize", inputs / "people.csv", "--qid", "age", "--k", "5", "--out", out)
    assert code == 2
    assert_one_line_error(err, "exists; pass --replace")
    assert out.read_text() == "mine\n"
    assert run(capsys, "anonymize", inputs / "people.csv", "--qid", "age", "--k", "5", "--out", out, "--replace")[0] == 0
    assert out.read_text().startswith("id,age_min,age_max")


@pytest.mark.parametrize("out", ["{t}/h.duckdb", "link:h.duckdb", "hard:h.duckdb", "{t}/h.duckdb.wal"],
                         ids=["database", "symlink", "hard link", "write-ahead log"])
def test_report_never_writes_over_its_database(capsys, inputs, out):
    target = _path(inputs, out, 0)
    before = digest(inputs)
    for replace in ([], ["--replace"]):
        code, text, err = run(capsys, "report", inputs / "h.duckdb", "people_anon", "-o", target, "--format", "json",
                              *replace)
        assert (code, text) == (2, ""), err
        assert_one_line_error(err, f"-o {target} is the database", "which this command reads")
        assert digest(inputs) == before
    with duckdb.connect(str(inputs / "h.duckdb"), read_only=True) as con:  # still a database
        assert con.execute("SELECT count(*) FROM people_anon").fetchone() == (200,)


def test_report_overwrites_a_file_only_with_replace(capsys, inputs):
    out = inputs / "r.md"
    out.write_text("my notes\n")
    code, text, err = run(capsys, "report", inputs / "h.duckdb", "people_anon", "-o", out)
    assert (code, text) == (2, "")
    assert_one_line_error(err, f"-o {out} exists; pass --replace")
    assert out.read_text() == "my notes\n"
    assert run(capsys, "report", inputs / "h.duckdb", "people_anon", "-o", out, "--replace")[0] == 0
    assert out.read_text().startswith("# sqlanon release report")
