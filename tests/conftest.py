"""Shared fixtures and helpers for the sqlanon test suite.

Fixtures:

* ``con``: a fresh in-memory DuckDB connection, closed after the test.
* ``adult``: loads the bundled ARX Adult data (30,162 rows) into table ``adult`` of ``con`` and
  returns ``Adult(con, hierarchies)`` -- a named tuple, so ``con, hierarchies = adult`` works --
  where ``hierarchies`` is ``{column: path of its ARX hierarchy CSV}`` for all nine columns.

Helpers (import them with ``from conftest import ...``):

* :func:`temp_objects`: names of the tables and views sqlanon's engine creates for a run
  (``__sqlanon_<hex>_...``), in any schema; a finished run must leave none.
* :func:`objects`: every user table and view as ``(database, schema, name, kind)``, to assert
  that a failed call wrote nothing.
* :func:`quote`: a DuckDB quoted identifier, for test set-up SQL.
* :func:`make_people`: a small deterministic table with an ``id`` column.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import duckdb
import pytest

DATA = Path(__file__).resolve().parent.parent / "sqlanon" / "data"
ADULT_CSV = DATA / "adult.csv.gz"
ADULT_COLUMNS = ("sex", "age", "race", "marital-status", "education", "native-country",
                 "workclass", "occupation", "salary-class")
ADULT_ROWS = 30_162
ADULT_HIERARCHIES = {c: str(DATA / f"adult_hierarchy_{c}.csv") for c in ADULT_COLUMNS}

TEMP_PREFIX = "__sqlanon_"


def quote(name: str) -> str:
    """A DuckDB quoted identifier (test set-up only; the library builds its own SQL)."""
    return '"' + name.replace('"', '""') + '"'


def temp_objects(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Tables and views (temporary or not, any schema) whose name starts with ``__sqlanon_``."""
    rows = con.execute(
        """
        SELECT table_name FROM duckdb_tables() WHERE starts_with(table_name, $p)
        UNION ALL
        SELECT view_name FROM duckdb_views() WHERE starts_with(view_name, $p)
        """,
        {"p": TEMP_PREFIX},
    ).fetchall()
    return sorted(r[0] for r in rows)


def objects(con: duckdb.DuckDBPyConnection) -> set[tuple[str, str, str, str]]:
    """Every non-internal table and view: ``(database, schema, name, 'table' | 'view')``."""
    rows = con.execute(
        """
        SELECT database_name, schema_name, table_name, 'table' FROM duckdb_tables() WHERE NOT internal
        UNION ALL
        SELECT database_name, schema_name, view_name, 'view' FROM duckdb_views() WHERE NOT internal
        """
    ).fetchall()
    return {tuple(r) for r in rows}


def make_people(con: duckdb.DuckDBPyConnection, n: int = 200, name: str = "people", key: bool = True) -> str:
    """Create ``name``: ``id`` (0..n-1, the PRIMARY KEY unless ``key=False``), ``age`` (i % 90),
    ``zip`` (i % 7), ``city`` ('x0'..'x4'), ``salary`` (i * 10.5). Returns the table name."""
    pk = " PRIMARY KEY" if key else ""
    con.execute(f"CREATE TABLE {quote(name)} (id BIGINT{pk}, age INTEGER, zip INTEGER, city VARCHAR, salary DECIMAL(22, 1))")
    con.execute(
        f"INSERT INTO {quote(name)} SELECT i::BIGINT AS id, (i % 90)::INTEGER AS age, "
        f"(i % 7)::INTEGER AS zip, 'x' || (i % 5) AS city, i * 10.5 AS salary FROM range({int(n)}) t(i)"
    )
    return name


@pytest.fixture
def con():
    """A fresh in-memory DuckDB connection."""
    connection = duckdb.connect()
    try:
        yield connection
    finally:
        connection.close()


class Adult(NamedTuple):
    """What the ``adult`` fixture returns."""

    con: duckdb.DuckDBPyConnection
    hierarchies: dict[str, str]  # column -> ARX hierarchy CSV path, all nine columns


def load_adult(con: duckdb.DuckDBPyConnection, name: str = "adult") -> dict[str, str]:
    """Create table ``name`` from the bundled Adult data (``age`` BIGINT, the rest VARCHAR) and
    return ``{column: hierarchy CSV path}``."""
    con.execute(
        f"CREATE TABLE {quote(name)} AS SELECT * FROM read_csv($path, delim = ';', header = true, "
        "quote = '', columns = $columns)",
        {"path": str(ADULT_CSV),
         "columns": {c: ("BIGINT" if c == "age" else "VARCHAR") for c in ADULT_COLUMNS}},
    )
    return dict(ADULT_HIERARCHIES)


@pytest.fixture
def adult(con) -> Adult:
    """Table ``adult`` (ARX's cleaned UCI Adult, 30,162 rows) in ``con``, as ``(con, hierarchies)``."""
    return Adult(con, load_adult(con))
