"""The manifest's hierarchies relation is read in one bulk fetch, as stored, and put in order
in this process (:func:`sqlanon.publish.manifest.read`): a reader never relies on the order a
table keeps (a Parquet table on Spark keeps none, and Spark writes it unsorted:
``Engine.sorts_written``), and an engine's ORDER BY is no job of the read. On Spark the sorted
row-by-row read took 3.5-3.9 s of a 17 s release of CUP (ARX's ZIP hierarchy, 600,000 rows)."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd

import sqlanon
from sqlanon.publish import manifest
from tests.support.db import rendered_statements

CITIES = {"north": ["Oslo", "Bergen", "Trondheim"], "south": ["Rome", "Naples", "Bari", "Palermo"]}


def test_hierarchies_read_as_stored_give_the_same_hierarchy(monkeypatch):
    rng = np.random.default_rng(5)
    n = 700
    city = rng.choice([c for cs in CITIES.values() for c in cs], n)
    con = duckdb.connect()
    con.register("f", pd.DataFrame({"age": rng.integers(18, 90, n), "city": city}))
    con.execute("CREATE TABLE people AS SELECT * FROM f")
    rows = [[c, region, "*"] for region, cs in CITIES.items() for c in cs]
    hierarchy = sqlanon.Hierarchy.from_rows(rows)
    release = sqlanon.anonymize(con, "people", qid=["age", "city"], k=20, hierarchies={"city": hierarchy})
    before = manifest.read(con, release.view).hierarchies["city"]
    # the same rows stored in another order: the read orders them itself
    table = manifest.read(con, release.view).hierarchies_table
    con.execute(f'CREATE OR REPLACE TABLE "{table}" AS SELECT * FROM "{table}" ORDER BY level DESC, hash(leaf)')
    statements = rendered_statements(monkeypatch)
    after = manifest.read(con, release.view).hierarchies["city"]
    assert after.to_rows() == before.to_rows()
    reads = [s for s in statements if f'FROM "{table}"' in s or f'."{table}"' in s]
    assert len(reads) == 1 and "ORDER BY" not in reads[0].upper()  # before: sorted by the engine
