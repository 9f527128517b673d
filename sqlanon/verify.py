"""Independent verification of a published relation, in SQL.

It reads only the relation being checked (never the partitioning state), so it checks a release
made by sqlanon, by an older version of it, or by any other tool.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import duckdb
from sqlglot import exp

from . import sqlgen as g
from .engine import Engine
from .errors import InputError, UnknownColumnError, did_you_mean
from .spec import _catalog, _find_source


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
    """

    ok: bool
    k: int
    k_achieved: int
    classes: int
    rows: int
    violating: int
    columns: tuple[str, ...]
    unplaced: int = 0


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

    Rows are grouped on the QI columns with NULLs grouping together (SQL ``GROUP BY``), so
    fully suppressed rows form one class and count like any other.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InputError(f"k must be a positive integer, got {k!r}")
    if isinstance(qid, str) or not qid:
        raise InputError("qid must be a non-empty list of column names")
    engine = Engine(con)
    source = _find_source(engine, _catalog(engine), relation, count=False)
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
    return Verification(
        ok=int(violating or 0) == 0 and int(classes or 0) > 0 and not unplaced,
        k=k,
        k_achieved=int(smallest or 0),
        classes=int(classes or 0),
        rows=int(total or 0),
        violating=int(violating or 0),
        columns=columns,
        unplaced=int(unplaced or 0),
    )

