"""Random selections over a small table ``t(id, a INTEGER, b INTEGER, h hierarchical, v)``, their
value by SQL three-valued logic in plain Python, and the releases they are asked of (for the
imprecision and rewrite tests, ``tests/release/``).

* :data:`H` / :data:`HIER`: the hierarchy of ``h``; :func:`atoms`, :func:`predicates`: random
  predicates (hypothesis) as :mod:`tests.support.sql_logic` trees; :func:`render` their SQL,
  :func:`evaluate` their value on a row.
* :func:`box_points`: every point of a region's published box.
* :func:`tables`, :func:`make_table`, :func:`release_for`: random tables, created and released.
* :func:`example_connection`, :func:`examples`: a clean connection and the number of examples for
  one hypothesis example on the test's engine.
"""

from __future__ import annotations

import contextlib
import itertools

import duckdb
import pandas as pd
from hypothesis import strategies as st

import sqlanon
from sqlanon.model.hierarchy import Hierarchy
from tests.support import sql_logic
from tests.support.db import is_postgres, quote, run

H = {"*": {"school": {"primary": ["p1", "p2"], "secondary": ["s1"]}, "higher": ["bsc", "msc", "phd"]}}


HIER = Hierarchy.from_dict(H)


H_LABELS = ["p1", "p2", "s1", "bsc", "msc", "phd", "school", "primary", "secondary", "higher", "*"]


INT_LITS = ["-1", "0", "2", "3", "3.5", "5", "7", "9", "10"]


LOW = -2  # below every literal: every point below it behaves like it


INT_COLS = ("a", "b")


@st.composite
def atoms(draw, cols=("a", "b", "h")):
    col = draw(st.sampled_from(cols))
    if col == "h":
        op = draw(st.sampled_from(["=", "<>", "IN", "NOT IN", "IS NULL", "IS NOT NULL"]))
        if op.startswith("IS"):
            return (col, op, ())
        k = 1 if op in ("=", "<>") else draw(st.integers(1, 3))
        return (col, op, tuple(draw(st.sampled_from(H_LABELS)) for _ in range(k)))
    op = draw(st.sampled_from(["=", "<>", "<", "<=", ">", ">=", "BETWEEN", "NOT BETWEEN", "IN", "NOT IN",
                               "IS NULL", "IS NOT NULL"]))
    k = {"IS NULL": 0, "IS NOT NULL": 0, "BETWEEN": 2, "NOT BETWEEN": 2}.get(op, 1)
    if op in ("IN", "NOT IN"):
        k = draw(st.integers(1, 3))
    return (col, op, tuple(draw(st.sampled_from(INT_LITS)) for _ in range(k)))


def predicates(cols=("a", "b", "h"), max_leaves=4):
    leaf = st.one_of(atoms(cols), st.tuples(st.just("NOT"), atoms(cols)))
    return st.recursive(leaf, lambda sub: st.tuples(st.sampled_from(["AND", "OR"]), sub, sub), max_leaves=max_leaves)


def render(p):
    return sql_logic.render(p, literal=lambda col, v: f"'{v}'" if col == "h" else str(v))


def under(label):
    """Leaves under the node labelled ``label`` of H."""
    return sql_logic.leaves_under(HIER, label)


def evaluate(p, row):
    """SQL three-valued logic: True, False or None (see tests/support/sql_logic.py)."""
    return sql_logic.evaluate(p, row, _compare)


def _compare(col, op, vals, v):
    """One comparison on a non-NULL value."""
    if col == "h":
        named = set().union(*(under(x) for x in vals))
        return (v in named) if op in ("=", "IN") else (v not in named)
    xs = [float(x) for x in vals]
    return {"=": lambda: v == xs[0], "<>": lambda: v != xs[0], "<": lambda: v < xs[0], "<=": lambda: v <= xs[0],
            ">": lambda: v > xs[0], ">=": lambda: v >= xs[0], "BETWEEN": lambda: xs[0] <= v <= xs[1],
            "NOT BETWEEN": lambda: not (xs[0] <= v <= xs[1]), "IN": lambda: v in xs,
            "NOT IN": lambda: v not in xs}[op]()


def box_points(region, hierarchy):
    """Every point of a region's published box (the enumeration described in the module doc)."""
    axes = []
    for c in INT_COLS:
        lo, hi = region[f"{c}_min"], region[f"{c}_max"]
        lo = None if pd.isna(lo) else int(lo)
        hi = None if pd.isna(hi) else int(hi)
        points = [None] if lo is None else []
        if hi is not None:
            points += list(range(LOW if lo is None else lo, hi + 1))
        axes.append(points)
    node = int(region["h_node"])
    axes.append(list(hierarchy.leaves[hierarchy.leaf_lo[node]: hierarchy.leaf_hi[node] + 1]))
    return ({"a": a, "b": b, "h": h} for a, b, h in itertools.product(*axes))


def make_table(con, rows, name="t"):
    run(con, f"CREATE TABLE {quote(name)} (id INTEGER, a INTEGER, b INTEGER, h VARCHAR, v VARCHAR)")
    if not rows:
        return
    insert = f"INSERT INTO {quote(name)} VALUES (?, ?, ?, ?, ?)"
    if is_postgres(con):  # in the test's open transaction
        with con.cursor() as cur:
            cur.executemany(insert.replace("?", "%s"), rows)
    else:
        con.executemany(insert, rows)


@contextlib.contextmanager
def example_connection(con):
    """A clean connection for one hypothesis example on ``con``'s engine: a new in-memory DuckDB,
    or ``con`` itself on PostgreSQL, whose open transaction (table, release, everything) is
    rolled back after the example."""
    if not is_postgres(con):
        fresh = duckdb.connect()
        try:
            yield fresh
        finally:
            fresh.close()
        return
    try:
        yield con
    finally:
        con.rollback()


def examples(engine_name, duckdb_examples, postgres_examples):
    """``max_examples`` by engine: PostgreSQL runs fewer (each example is a release on the server)."""
    return duckdb_examples if engine_name == "duckdb" else postgres_examples


@st.composite
def tables(draw):
    n = draw(st.integers(4, 40))
    a = st.one_of(st.none(), st.integers(0, 9))
    b = st.one_of(st.none(), st.integers(0, 4))
    h = st.sampled_from([None] + list(HIER.leaves))
    rows = [(i, draw(a), draw(b), draw(h), draw(st.sampled_from(["x", "y", None]))) for i in range(n)]
    k = draw(st.integers(1, max(1, n // 3)))
    return rows, k


def release_for(con, rows, k, name="t"):
    make_table(con, rows, name)
    return sqlanon.anonymize(con, name, qid=["a", "b", "h"], k=k, hierarchies={"h": H})
