"""What a release costs on PostgreSQL (issue 52, "PostgreSQL at its floor"), checked on every
engine, since the statements are the same SQL: the work a release without suppressed rows does
not need is not done.

* The published view is read by one statement -- the verification -- when no row is
  suppressed and no QI publishes ``"domain"`` bounds: the exposed-values statement (every row,
  the view and the rules stacked and grouped once per QI) can count nothing then, and it cost
  17-30 s of a 46 s PostgreSQL run at 1M Agrawal rows (DuckDB: 1.4 s).
* With ``"domain"`` bounds it still runs, and a release whose rows were suppressed is still
  checked (tests/publish/test_suppression.py tampers with such releases).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import sqlanon
from sqlanon.engine import engine_for
from tests.support import quote
from tests.support.db import load_frame

pytestmark = pytest.mark.engines("duckdb", "postgres")


class Logged:
    """An engine of the connection's kind that keeps the SQL of every statement it runs."""

    def __new__(cls, con):
        base = type(engine_for(con))

        class Logging(base):  # type: ignore[misc, valid-type]
            def __init__(self, con) -> None:
                super().__init__(con)
                self.log: list[str] = []

            def _run(self, sql: str) -> None:
                self.log.append(sql)
                return super()._run(sql)

            def _fetch_rows(self, sql: str):
                self.log.append(sql)
                return super()._fetch_rows(sql)

            def _fetch_numpy(self, sql: str):
                self.log.append(sql)
                return super()._fetch_numpy(sql)

        return Logging(con)


def keyless(con, n: int = 600, seed: int = 5) -> str:
    """A table without a key (so its release is a view of a snapshot): three integer QIs."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"age": rng.integers(18, 90, n).astype(np.int32),
                          "zip": rng.integers(0, 500, n).astype(np.int32),
                          "income": rng.integers(0, 90_000, n).astype(np.int32),
                          "note": rng.choice(["a", "b", "c"], n)})
    return load_frame(con, "people", frame)


def view_reads(log: list[str], view: str) -> list[str]:
    """The statements that read the published view (not those that create, drop or describe it)."""
    return [s for s in log if quote(view) in s and not s.lstrip().upper().startswith(("CREATE", "DROP", "COMMENT"))]


def test_a_release_without_suppressed_rows_reads_its_view_once(con):
    keyless(con)
    engine = Logged(con)
    release = sqlanon.anonymize(engine, "people", qid=["age", "zip", "income"], k=10,
                                output=sqlanon.Output(view="people_anon"))
    assert release.verification.ok and release.suppressed == 0 and release.materialized
    reads = view_reads(engine.log, release.view)
    assert len(reads) == 1, reads  # the verification; before issue 52 also the exposed values


def test_domain_bounds_are_still_checked_for_exposed_ends(con):
    keyless(con)
    engine = Logged(con)
    release = sqlanon.anonymize(engine, "people", qid=["age", "zip", "income"], k=10,
                                published={"age": "domain"}, output=sqlanon.Output(view="people_anon"))
    assert release.verification.ok and release.suppressed == 0
    assert len(view_reads(engine.log, release.view)) == 2  # the verification and the exposed values


@pytest.mark.engines("postgres")
def test_the_snapshot_is_not_analyzed(con):
    """A keyless release copies the source into a snapshot and reads it whole; PostgreSQL's
    estimate from the table's size serves its joins, so no ANALYZE samples it (0.7-1.1 s at 1M
    rows). The tables sqlanon builds by joins and uploads are still analyzed."""
    keyless(con)
    engine = Logged(con)
    release = sqlanon.anonymize(engine, "people", qid=["age", "zip", "income"], k=10,
                                output=sqlanon.Output(view="people_anon"))
    assert release.verification.ok and release.materialized
    analyzed = [s for s in engine.log if s.startswith("ANALYZE")]
    snapshots = [s for s in engine.log if s.startswith("CREATE TEMPORARY TABLE") and "_snapshot" in s.split(" AS ")[0]]
    assert snapshots, engine.log
    assert not [s for s in analyzed if "_snapshot" in s], analyzed
    assert any(quote(release.rowmap) in s for s in analyzed), analyzed
