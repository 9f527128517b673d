"""``explain`` is :func:`sqlanon.pipeline.run` on the recording engine: it lists every SQL level
and every upload a run makes, not a sample of them (issue 50, "explain is the same call on the
recording engine")."""

from __future__ import annotations

import re

import duckdb
import numpy as np
import pandas as pd
import pytest

import sqlanon


@pytest.fixture
def con():
    rng = np.random.default_rng(7)
    n = 3000
    frame = pd.DataFrame({"id": np.arange(n), "age": rng.integers(0, 90, n), "zip": rng.integers(0, 40, n),
                          "y": rng.choice(["a", "b"], n)})
    con = duckdb.connect()
    con.register("frame", frame)
    con.execute("CREATE TABLE people AS SELECT * FROM frame")
    con.unregister("frame")
    yield con
    con.close()


@pytest.mark.parametrize("memory_rows", [0, 500])
def test_explain_lists_every_level_and_the_regions_of_the_run(con, memory_rows):
    request = sqlanon.Request("people", ["age", "zip"], 20,
                              algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=memory_rows)))
    listing = request.explain(con)
    assert not con.execute("SELECT * FROM duckdb_tables() WHERE table_name <> 'people'").fetchall()
    release = request.run(con)
    levels = re.findall(r"temp table __sqlanon_\w+_splits\d+:", listing)  # each SQL level uploads its splits
    assert release.outcome.writes > 1 and len(levels) == release.outcome.writes  # every SQL level, not the root's alone
    # the leaves' table that publication writes the rules and the row map from: one row per region
    regions = re.search(r"temp table __sqlanon_\w+_leafmap: ([\d,]+) rows", listing)
    assert regions is not None and int(regions.group(1).replace(",", "")) == release.regions
