"""Independent verification of a published relation, in SQL.

It reads only the relation being checked (never the partitioning state), so it checks a release
made by sqlanon, by an older version of it, or by any other tool.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import math

import duckdb
from sqlglot import exp

from . import sqlgen as g
from .constraints import (
    TOLERANCE,
    Constraint,
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    RecursiveCLDiversity,
    VarianceDiversity,
)
from .engine import Engine
from .errors import InputError, UnknownColumnError, did_you_mean
from .spec import Source, _catalog, _find_source, check_int, check_qid
from .workload import check_constraints


@dataclass(frozen=True)
class Verification:
    """The outcome of :func:`verify`.

    Attributes:
        ok: every equivalence class holds at least ``k`` rows.
        k: the requirement checked.
        k_achieved: size of the smallest equivalence class (0 for an empty relation).
        classes: number of equivalence classes.
        rows: rows in the relation.
        violating: classes smaller than ``k``.
        columns: the columns that define the classes.
        unplaced: rows whose ``class_column`` is NULL (0 when no class column was named).
        checks: one :class:`Check` per further constraint verified.
    """

    ok: bool
    k: int
    k_achieved: int
    classes: int
    rows: int
    violating: int
    columns: tuple[str, ...]
    unplaced: int = 0
    checks: tuple[Check, ...] = ()


@dataclass(frozen=True)
class Check:
    """One constraint verified on the published relation: ``achieved`` is the worst class's
    value of the constrained measure (distinct values, entropy l = e^H, variance, or for
    recursive (c,l) the number of violating classes) and ``violating`` the classes that fail."""

    constraint: str
    ok: bool
    achieved: float
    violating: int


def class_columns(columns: Sequence[str], qid: Sequence[str]) -> tuple[str, ...]:
    """The columns standing for each QI: the column itself, or its ``_min``/``_max`` pair."""
    available = set(columns)
    out: list[str] = []
    for name in qid:
        if name in available:
            out.append(name)
        elif f"{name}_min" in available and f"{name}_max" in available:
            out += [f"{name}_min", f"{name}_max"]
        else:
            raise UnknownColumnError(
                f"the relation has neither a column {name!r} nor {name + '_min'!r}/{name + '_max'!r}."
                + did_you_mean(name, columns)
            )
    return tuple(out)


def verify(
    con: duckdb.DuckDBPyConnection,
    relation: str,
    qid: Sequence[str],
    k: int,
    *,
    class_column: str | None = None,
    constraints: Sequence[Constraint] = (),
) -> Verification:
    """Check k-anonymity of ``relation`` over the QIs, in one SQL statement.

    Args:
        con: DuckDB connection.
        relation: table or view to check (e.g. ``release.view``).
        qid: the quasi-identifiers; a QI published as a range may be named by its base name
            (``age`` stands for ``age_min`` and ``age_max``).
        k: the requirement.
        class_column: optionally, a column that every row must have (``eq_class`` of a
            release); rows where it is NULL are counted as ``unplaced`` and fail the check.
        constraints: further constraints to check per class (``DistinctLDiversity``,
            ``EntropyLDiversity``, ``RecursiveCLDiversity``, ``VarianceDiversity``), each with
            its own SQL statement over the relation.

    Rows are grouped on the QI columns with NULLs grouping together (SQL ``GROUP BY``), so
    fully suppressed rows form one class and count like any other.

    Raises:
        InputError: before any query, for a ``con`` that is not a DuckDB connection, a ``k`` that
            is not a positive integer (numpy integers are fine), a malformed ``qid``, or
            ``constraints`` that are not sqlanon constraint objects; ``UnknownTableError`` /
            ``UnknownColumnError`` for a missing relation or column.
    """
    engine = Engine(con)  # checks con first
    try:
        k = check_int("k", k, minimum=1)
    except InputError:
        raise InputError(f"k must be a positive integer, got {k!r}") from None
    qid = check_qid(qid)
    constraints = check_constraints(constraints)
    if class_column is not None and (not isinstance(class_column, str) or not class_column):
        raise InputError(f"class_column must be a column name (or None), got {class_column!r}")
    source = _find_source(engine, _catalog(engine), relation, count=False)
    return verify_source(engine, source, qid, k, class_column=class_column, constraints=constraints)


def verify_source(
    engine: Engine,
    source: Source,
    qid: Sequence[str],
    k: int,
    *,
    class_column: str | None = None,
    constraints: Sequence[Constraint] = (),
) -> Verification:
    """:func:`verify` of a relation already found (``source.ref`` and ``source.column_names``
    are used), with the arguments already checked."""
    columns = class_columns(source.column_names, qid)
    if class_column is not None and class_column not in source.column_names:
        raise UnknownColumnError(f"no column {class_column!r}." + did_you_mean(class_column, source.column_names))
    unplaced_if = (
        exp.Is(this=g.col(class_column), expression=exp.Null()) if class_column else exp.false()
    )
    query = g.template(
        "class_sizes", k=g.lit(k), source=source.ref, columns=[g.col(c) for c in columns], unplaced=unplaced_if
    )
    classes, smallest, total, violating, unplaced = engine.fetch_rows(query)[0]
    checks = tuple(_check(engine, source, columns, c) for c in constraints if not isinstance(c, KAnonymity))
    return Verification(
        ok=int(violating or 0) == 0 and int(classes or 0) > 0 and not unplaced and all(c.ok for c in checks),
        k=k,
        k_achieved=int(smallest or 0),
        classes=int(classes or 0),
        rows=int(total or 0),
        violating=int(violating or 0),
        columns=columns,
        unplaced=int(unplaced or 0),
        checks=checks,
    )


def _check(engine: Engine, source, columns: tuple[str, ...], c: Constraint) -> Check:
    """Verify one diversity constraint on every class of the relation, in SQL."""
    column = (c.class_columns + c.numeric_columns)[0]
    if column not in source.column_names:
        raise UnknownColumnError(f"no column {column!r} to check {c.describe()}." + did_you_mean(column, source.column_names))
    common = {"source": source.ref, "columns": [g.col(x) for x in columns], "sensitive": g.col(column)}
    if isinstance(c, VarianceDiversity):
        _, low, bad = engine.fetch_rows(g.template("check_variance", v=g.lit(float(c.v) * (1 - TOLERANCE)), **common))[0]
        return Check(c.describe(), not bad, float(low or 0.0), int(bad or 0))
    l = c.l if isinstance(c, RecursiveCLDiversity) else 1
    factor = float(c.c) if isinstance(c, RecursiveCLDiversity) else 1.0
    _, distinct, entropy, recursive_bad = engine.fetch_rows(
        g.template("check_sensitive", c=g.lit(factor), l=g.lit(int(l)), **common)
    )[0]
    if isinstance(c, DistinctLDiversity):
        return Check(c.describe(), int(distinct or 0) >= c.l, float(distinct or 0), _count_below(engine, common, c))
    if isinstance(c, EntropyLDiversity):
        ok = float(entropy or 0.0) >= math.log(c.l) - TOLERANCE
        return Check(c.describe(), ok, math.exp(float(entropy or 0.0)), 0 if ok else _count_below(engine, common, c))
    return Check(c.describe(), not recursive_bad, float(recursive_bad or 0), int(recursive_bad or 0))


def _count_below(engine: Engine, common: dict, c: Constraint) -> int:
    """Classes failing a distinct or entropy l-diversity requirement (only computed on failure)."""
    per_class = g.template("class_diversity", **common)
    rows = engine.fetch_rows(per_class)
    if isinstance(c, DistinctLDiversity):
        return sum(1 for distinct, _ in rows if distinct < c.l)
    return sum(1 for _, entropy in rows if entropy < math.log(c.l) - TOLERANCE)

