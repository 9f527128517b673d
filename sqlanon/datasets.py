"""Bundled real data for demos, tests and benchmarks (provenance in ``sqlanon/data/README.md``)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import duckdb
from sqlglot import exp

from . import sqlgen as g

#: Columns of the ARX copy of UCI Adult, each with a bundled hierarchy.
ADULT_COLUMNS = (
    "sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation",
    "salary-class",
)


def data_path(name: str) -> Path:
    """Path of a bundled data file."""
    return Path(str(resources.files("sqlanon").joinpath("data", name)))


def adult_hierarchies() -> dict[str, Path]:
    """The ARX hierarchy CSV of every Adult column."""
    return {c: data_path(f"adult_hierarchy_{c}.csv") for c in ADULT_COLUMNS}


def load_adult(con: duckdb.DuckDBPyConnection, table: str = "adult", *, replace: bool = False) -> dict[str, Path]:
    """Create ``table`` with the 30,162 rows of UCI Adult (ARX's cleaned copy) and return the
    hierarchies, ready for ``anonymize(con, table, qid=[...], hierarchies=...)``."""
    reader = exp.Anonymous(
        this="read_csv",
        expressions=[
            g.lit(str(data_path("adult.csv.gz"))),
            exp.PropertyEQ(this=exp.var("delim"), expression=g.lit(";")),
            exp.PropertyEQ(this=exp.var("header"), expression=exp.true()),
        ],
    )
    query = exp.select("*").from_(exp.Table(this=reader))
    con.execute(g.create_table_as(table, query, temporary=False, replace=replace).sql(dialect=g.DIALECT))
    return adult_hierarchies()
