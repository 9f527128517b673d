"""Hierarchy builders in release files: ``[[qi]] hierarchy = { builder = "intervals", ... }``
(the builders of sqlanon.hierarchies, with the arguments of ``sqlanon hierarchy``)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

import sqlanon as sa
from sqlanon import hierarchies
from sqlanon.cli import main
from sqlanon.request.config import ConfigError, load_config

HEAD = '[release]\ntable = "people"\n[privacy]\nk = 10\n'


def write(folder: Path, qis: str, name: str = "release.toml") -> Path:
    path = folder / name
    path.write_text(HEAD + qis, encoding="utf-8")
    return path


@pytest.fixture()
def con():
    con = duckdb.connect()
    con.execute("CREATE TABLE people AS SELECT i AS id, 18 + (i * 7) % 63 AS age, "
                "lpad(CAST(53700 + (i * 13) % 40 AS VARCHAR), 5, '0') AS zip FROM range(600) r(i)")
    yield con
    con.close()


def test_a_builder_is_read_and_kept_as_a_builder(tmp_path):
    path = write(tmp_path, '[[qi]]\nname = "age"\nhierarchy = { builder = "intervals", width = 5, fanout = [2, 3] }\n'
                           '[[qi]]\nname = "zip"\nhierarchy = { builder = "masking", step = 2 }\n')
    config = load_config(path)
    assert config.hierarchies == {"age": hierarchies.builder("intervals", width=5, fanout=[2, 3]),
                                  "zip": hierarchies.builder("masking", step=2)}
    request = sa.Request.from_toml(path)
    assert request.hierarchies == config.hierarchies
    again = tmp_path / "again.toml"
    request.to_toml(again)
    assert "hierarchy = { builder = \"intervals\", width = 5, fanout = [2, 3] }" in again.read_text()
    assert sa.Request.from_toml(again) == request


def test_a_release_with_builders_equals_one_with_the_hand_made_hierarchies(con, tmp_path):
    """The builder in the file builds, from the column's values, what sqlanon hierarchy writes
    (and what hand-written files say): the releases are the same."""
    path = write(tmp_path, '[[qi]]\nname = "age"\nhierarchy = { builder = "intervals", width = 10 }\n'
                           '[[qi]]\nname = "zip"\nhierarchy = { builder = "masking" }\n')
    built = sa.Request.from_toml(path).run(con)
    ages = [r[0] for r in con.execute("SELECT DISTINCT age FROM people").fetchall()]
    zips = [r[0] for r in con.execute("SELECT DISTINCT zip FROM people").fetchall()]
    hand = {"age": tmp_path / "age.csv", "zip": tmp_path / "zip.csv"}
    rows = {"age": [[str(a), f"[{a // 10 * 10}, {a // 10 * 10 + 10})"] for a in sorted(ages)],
            "zip": [[z, z[:4] + "*", z[:3] + "**", z[:2] + "***", z[:1] + "****", "*****"] for z in sorted(zips)]}
    hierarchies.intervals(ages, 10).to_csv(hand["age"])
    hierarchies.masking(zips).to_csv(hand["zip"])
    assert [r[:2] for r in sa.load_hierarchy(str(hand["age"])).to_rows()] == [r[:2] for r in rows["age"]]
    assert sa.load_hierarchy(str(hand["zip"])).to_rows() == rows["zip"]
    by_file = sa.Request("people", ["age", "zip"], 10, hierarchies={q: str(p) for q, p in hand.items()},
                         output="by_file").run(con)
    mine = con.execute(f'SELECT age, zip, count(*) FROM "{built.view}" GROUP BY ALL ORDER BY ALL').fetchall()
    theirs = con.execute(f'SELECT age, zip, count(*) FROM "{by_file.view}" GROUP BY ALL ORDER BY ALL').fetchall()
    assert mine == theirs and built.k_achieved >= 10


def test_an_order_file_is_relative_to_the_release_file(tmp_path):
    (tmp_path / "h").mkdir()
    (tmp_path / "h" / "order.txt").write_text("c\nb\na\n")
    path = write(tmp_path / "h", '[[qi]]\nname = "city"\nhierarchy = { builder = "ordering", order = "order.txt" }\n')
    assert load_config(path).hierarchies["city"] == hierarchies.builder("ordering", order=["c", "b", "a"])


@pytest.mark.parametrize("hierarchy, fragment", [
    ('{ builder = "interval", width = 5 }', "Did you mean 'intervals'"),
    ('{ width = 5 }', "names its builder"),
    ('{ builder = "intervals" }', "intervals needs width="),
    ('{ builder = "masking", width = 3 }', "masking takes mask, step; width= is not one of them"),
    ('{ builder = "quantiles", bins = 0 }', "bins must be an integer >= 1"),
    ('{ builder = "intervals", width = 5, fanout = 1 }', "fanout must be an integer >= 2"),
    ('{ builder = "dates", levels = ["week"] }', "levels must be a list of month"),
    ('{ builder = "masking", mask = "ab" }', "mask must be one character"),
    ('{ builder = "ordering", order = "missing.txt" }', "qi[1].hierarchy.order: file not found"),
])
def test_a_bad_builder_is_a_clear_error_naming_the_key(tmp_path, hierarchy, fragment):
    path = write(tmp_path, f'[[qi]]\nname = "age"\nhierarchy = {hierarchy}\n')
    with pytest.raises(ConfigError) as e:
        load_config(path)
    assert str(e.value).startswith(f"{path}: qi[1].hierarchy") and fragment in str(e.value), str(e.value)


def test_the_command_line_runs_a_release_file_with_builders(tmp_path, capsys):
    db = tmp_path / "h.duckdb"
    with duckdb.connect(str(db)) as disk:
        disk.execute("CREATE TABLE people AS SELECT * FROM (SELECT i AS id, 18 + (i * 7) % 63 AS age FROM range(600) r(i))")
    path = write(tmp_path, '[[qi]]\nname = "age"\nhierarchy = { builder = "quantiles", bins = 8 }\n')
    assert main(["anonymize", str(db), "people", "--config", str(path), "--k", "150"]) == 0
    assert "published" in capsys.readouterr().out
    with duckdb.connect(str(db), read_only=True) as disk:
        labels = {r[0] for r in disk.execute("SELECT DISTINCT age FROM people_anon").fetchall()}
    assert labels and all(label.startswith("[") or label == "*" for label in labels), labels
