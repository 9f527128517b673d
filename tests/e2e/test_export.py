"""sqlanon.export: a release written to a file, both or neither (from Python, without the CLI)."""

from __future__ import annotations

import os

import duckdb
import pandas as pd
import pytest

import sqlanon as sa
from sqlanon import exporting as export_module
from sqlanon.engine import engine_for


@pytest.fixture()
def con(tmp_path):
    (tmp_path / "db").mkdir()
    con = duckdb.connect(str(tmp_path / "db" / "h.duckdb"))
    con.execute("CREATE TABLE people AS SELECT i AS id, 20 + i % 47 AS age, 'c' || (i % 9) AS city FROM range(400) r(i)")
    yield con
    con.close()


def objects(con) -> list[tuple]:
    return sorted(con.execute("SELECT table_name, table_type FROM information_schema.tables").fetchall())


def test_a_request_is_published_and_written(con, tmp_path):
    out = tmp_path / "public.csv"
    release = sa.export(con, sa.Request("people", qid=["age"], k=10), out)
    assert isinstance(release, sa.Release) and release.k_achieved >= 10
    written = pd.read_csv(out)
    assert len(written) == 400 and set(written.columns) >= {"age_min", "age_max", "eq_class"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["db", "public.csv"]  # no partial file left


def test_a_release_or_a_view_is_written(con, tmp_path):
    release = sa.Request("people", qid=["age"], k=20).run(con)
    assert sa.export(con, release, tmp_path / "r.parquet") is release
    assert sa.export(con, release.view, tmp_path / "v.jsonl.gz") == release.view
    assert len(pd.read_parquet(tmp_path / "r.parquet")) == len(pd.read_json(tmp_path / "v.jsonl.gz", lines=True)) == 400


@pytest.mark.parametrize("name, fragment", [("x.xlsx", "unknown format"), ("x.parquet.gz", "unknown format"),
                                           ("no/such/x.csv", "no such directory"), ("", "is a directory")])
def test_a_bad_path_is_refused_before_any_work(con, tmp_path, name, fragment):
    before = objects(con)
    with pytest.raises(sa.ExportError, match=fragment):
        sa.export(con, sa.Request("people", qid=["age"], k=10), tmp_path / name)
    assert objects(con) == before


def test_an_existing_file_only_with_replace(con, tmp_path):
    out = tmp_path / "public.csv"
    out.write_text("mine\n")
    before = objects(con)
    with pytest.raises(sa.ExportError, match="exists; pass replace=True"):
        sa.export(con, sa.Request("people", qid=["age"], k=10), out)
    assert out.read_text() == "mine\n" and objects(con) == before
    sa.export(con, sa.Request("people", qid=["age"], k=10), out, replace=True)
    assert out.read_text().startswith("id,")


def _failing_copy(monkeypatch, con):
    """The engine's COPY fails after the release was published (a full disk, say), having
    written part of its file."""
    def export(self, query, path, params):
        with open(path, "w") as partial:
            partial.write("half")
        raise OSError(28, "No space left on device", path)

    monkeypatch.setattr(type(engine_for(con)), "export", export)


def test_a_failure_midway_leaves_no_new_objects_and_no_file(con, tmp_path, monkeypatch):
    out = tmp_path / "public.parquet"
    before = objects(con)
    _failing_copy(monkeypatch, con)
    with pytest.raises(OSError, match="No space left"):
        sa.export(con, sa.Request("people", qid=["age"], k=10), out)
    assert objects(con) == before  # the release it published is dropped again
    assert sorted(os.listdir(tmp_path)) == ["db"]


def test_a_failure_midway_brings_back_the_release_it_replaced(con, tmp_path, monkeypatch):
    out = tmp_path / "public.parquet"
    old = sa.Request("people", qid=["age", "city"], k=25).run(con)
    published, rows = objects(con), con.execute(f'SELECT * FROM "{old.view}" ORDER BY id').fetchall()
    _failing_copy(monkeypatch, con)
    request = sa.Request("people", qid=["age"], k=5, output=sa.Output(replace=True))
    with pytest.raises(OSError, match="No space left"):
        sa.export(con, request, out)
    assert objects(con) == published
    assert con.execute(f'SELECT * FROM "{old.view}" ORDER BY id').fetchall() == rows
    assert sa.publish.manifest.read(con, old.view).k == 25
    assert sorted(os.listdir(tmp_path)) == ["db"]
    monkeypatch.undo()
    release = sa.export(con, request, out)  # and when writing works, the release is replaced and written
    assert release.k == 5 and len(pd.read_parquet(out)) == 400


def test_an_engine_failure_in_the_copy_leaves_nothing(con, tmp_path, monkeypatch):
    """A COPY the database itself refuses (a bad option) raises its error and leaves nothing."""
    monkeypatch.setitem(export_module.FORMATS, ".parquet", ("PARQUET", (("COMPRESSION", "bogus"),)))
    before = objects(con)
    with pytest.raises(sa.SqlanonError):
        sa.export(con, sa.Request("people", qid=["age"], k=10), tmp_path / "p.parquet")
    assert objects(con) == before and sorted(os.listdir(tmp_path)) == ["db"]
