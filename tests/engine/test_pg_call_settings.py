"""The settings of one public call on PostgreSQL (:func:`sqlanon.engine.postgres._call_settings`):
``work_mem`` raised for the call's table-sized sorts (issue 52: at 1M Agrawal rows a snapshot
sorted by ``ctid`` spilled to temp files under the default 4 MB), JIT off, and the
caller's values back afterwards -- a value set with ``SET LOCAL`` inside the caller's
transaction stays local to it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import sqlanon
from sqlanon.engine.postgres import CALL_WORK_MEM
from tests.support import load_frame


def people(con) -> None:
    rng = np.random.default_rng(2)
    load_frame(con, "p", pd.DataFrame({"age": rng.integers(18, 90, 300), "zip": rng.integers(0, 40, 300)}))


def size(con, setting: str = "work_mem") -> int:
    return con.execute(f"SELECT pg_size_bytes(current_setting('{setting}'))").fetchone()[0]


def during(con) -> tuple[list[int], object]:
    """A progress callback that reads ``work_mem`` on the run's own connection at each level."""
    seen: list[int] = []
    return seen, lambda _progress: seen.append(size(con))


@pytest.mark.parametrize("session, raised", [("3MB", True), ("1GB", False)])
def test_work_mem_for_the_call_and_restored(pg_con, session, raised):
    """A session value below the call's is raised for the call (before issue 52: the session's
    3 MB), a larger one is left as it is; either way the session's value is back afterwards."""
    people(pg_con)
    pg_con.commit()
    pg_con.autocommit = True
    pg_con.execute(f"SET work_mem = '{session}'")
    before = size(pg_con)
    seen, progress = during(pg_con)
    release = sqlanon.anonymize(pg_con, "p", qid=["age", "zip"], k=5, progress=progress)
    assert release.verification.ok and seen
    assert set(seen) == ({CALL_WORK_MEM} if raised else {before})
    assert size(pg_con) == before
    assert pg_con.execute("SHOW jit").fetchone()[0] in ("on", "off")  # readable, untouched otherwise


def test_a_callers_local_setting_stays_local(pg_con):
    """Inside the caller's transaction the call's setting is local to it, and the caller's
    ``SET LOCAL`` value is what remains after the call, until the transaction ends."""
    people(pg_con)
    pg_con.commit()
    pg_con.execute("SET work_mem = '2MB'")
    pg_con.commit()
    pg_con.execute("SET LOCAL work_mem = '5MB'")
    seen, progress = during(pg_con)
    release = sqlanon.anonymize(pg_con, "p", qid=["age", "zip"], k=5, progress=progress)
    assert release.verification.ok and min(seen) >= CALL_WORK_MEM
    assert size(pg_con) == 5 * 2**20
    pg_con.commit()
    assert size(pg_con) == 2 * 2**20
