"""A release says how much of its suppression limit it used (issue 52): ``Release.suppression``
holds the rows allowed (``floor(f x N)``) against the rows suppressed, for every recoding that
takes ``suppression=``, on both engines; the command line prints it."""

from __future__ import annotations

import dataclasses
import json

import duckdb
import pytest

import sqlanon
from sqlanon.publish.suppression import Suppression
from tests.mondrian.test_suppression_mondrian import ZIP, motivating
from tests.support.mondrian import load
from tests.support.releases import SUPPRESSING, suppressing_release

pytestmark = pytest.mark.engines("duckdb", "postgres")


@pytest.mark.parametrize("search", sorted(SUPPRESSING))
def test_allowed_against_used_for_every_recoding(con, search):
    release, _ = suppressing_release(con, search)
    s = release.suppression
    assert isinstance(s, Suppression) and s.fraction == 0.2 and s.allowed == 9  # floor(0.2 x 49)
    assert s.used == release.suppressed == release.verification.unplaced and 0 < s.used <= s.allowed
    assert s.unused == s.allowed - s.used
    assert f"{s.used:,} of 9 rows allowed" in s.describe()


def test_no_limit_no_record_and_an_unused_limit(con):
    load(con, motivating())
    plain = sqlanon.anonymize(con, "t", ["zip"], 10, hierarchies={"zip": ZIP})
    assert plain.suppression is None
    # one row short of the branch: nothing suppressed, the whole limit unused
    short = sqlanon.anonymize(con, "t", ["zip"], 10, hierarchies={"zip": ZIP}, suppression=0.18,
                              output=sqlanon.Output(replace=True))
    assert short.suppression == Suppression(0.18, 8, 0) and short.suppression.unused == 8


@pytest.mark.engines("duckdb")
def test_the_command_line_prints_it_and_the_json_holds_it(tmp_path, capsys):
    from sqlanon.cli import main

    path = tmp_path / "z.duckdb"
    with duckdb.connect(str(path)) as con:
        load(con, motivating())
    (tmp_path / "zip.csv").write_text("\n".join(";".join(r) for r in ZIP))
    assert main(["anonymize", str(path), "t", "--qid", "zip", "--k", "10", "--hierarchy", f"zip={tmp_path / 'zip.csv'}",
                 "--suppression", "0.2", "--key", "id"]) == 0
    out = capsys.readouterr().out
    assert "suppression limit" in out and "9 of 9 rows allowed (100% used; suppression=0.2)" in out
    with duckdb.connect(str(path)) as con:
        load(con, motivating())
        release = sqlanon.anonymize(con, "t", ["zip"], 10, hierarchies={"zip": ZIP}, suppression=0.2,
                                    output=sqlanon.Output(replace=True))
    record = json.loads(json.dumps(dataclasses.asdict(release), default=str))
    assert record["suppression"] == {"fraction": 0.2, "allowed": 9, "used": 9}
