"""DataFrames in, DataFrames out: :func:`anonymize_frame` runs :func:`sqlanon.anonymize` on a
pandas DataFrame or a PyArrow table through an embedded (in-memory) DuckDB.

The frame is loaded into a DuckDB table with one extra column, the row's position, which is
the release's key (so the release is a live view, no snapshot note) and puts the published rows
back in the input's order. Only the published QI columns and the class column are read back;
every other column of the result *is* the input's column (same values, same dtype, same pandas
index), so nothing a user did not ask to anonymize changes, not even its type.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd
from sqlglot import exp

from .api import Release, anonymize
from .engine import sqlgen as g
from .engine.duckdb import connect as duckdb_connect
from .errors import FrameError, ObjectExistsError
from .request.output import Output
from .engine.catalog import free_name

#: The table name the frame is loaded as (in ``con``), unless ``name=`` says otherwise.
FRAME_TABLE = "frame"


def anonymize_frame(
    frame: Any,
    qid: Any = None,
    k: int | None = None,
    *,
    con: Any = None,
    name: str = FRAME_TABLE,
    **options: Any,
) -> tuple[Any, Release]:
    """Anonymize a pandas DataFrame or a PyArrow table; return the anonymized frame and its Release.

    Args:
        frame: a ``pandas.DataFrame`` or a ``pyarrow.Table`` (column names: distinct strings).
        qid, k: as for :func:`sqlanon.anonymize`.
        con: the DuckDB connection to work in (default: a new in-memory one, which the Release
            keeps, so ``release.imprecision()`` works; pass your own to keep using the release
            with :func:`sqlanon.metrics`, :func:`sqlanon.apply`, :func:`sqlanon.report`, ...).
        name: the table the frame is loaded as in ``con`` (the view is ``<name>_anon`` unless
            ``output=`` says otherwise).
        **options: every keyword of :func:`sqlanon.anonymize` (``hierarchies=`` as dicts, rows,
            DataFrames or ARX CSV paths; ``sensitive=``/``l=``, ``privacy=``, ``target=``,
            ``algorithm=``, ``selections=``, ``published=``, ``output=``, ...), except
            ``Output(key=...)``: the row position is the key.

    Returns:
        ``(anonymized, release)``. ``anonymized`` is of the input's kind (a DataFrame for a
        DataFrame, with its index; a PyArrow table for a PyArrow table): one row per input row in
        the input's order; each ordered QI ``q`` replaced in place by ``q_min``/``q_max`` (in
        pandas, integer bounds as nullable ``Int64``: ``published="domain"`` has NULL ends), each
        hierarchical QI by its node label; every other column the input's own; then
        ``eq_class``. ``release`` is the :class:`~sqlanon.Release` in ``con``.

    Raises:
        FrameError: ``frame`` is not a DataFrame or a PyArrow table, or its column names are not
            distinct strings; ``Output(key=...)`` was passed.
        InputError: whatever :func:`sqlanon.anonymize` refuses, before any work.
    """
    arrow = _is_arrow(frame)
    if not arrow and not isinstance(frame, pd.DataFrame):
        raise FrameError(f"anonymize_frame takes a pandas DataFrame or a PyArrow Table, got {type(frame).__module__}."
                         f"{type(frame).__name__}; for a table in a database use sqlanon.anonymize(con, table, ...)")
    columns = list(frame.column_names if arrow else frame.columns)
    bad = [c for c in columns if not isinstance(c, str) or not c]
    if bad:
        raise FrameError(f"column names must be non-empty strings, got {bad[:5]!r}; rename them first "
                         "(e.g. frame.columns = frame.columns.map(str))")
    if len({c.lower() for c in columns}) != len(columns):
        raise FrameError(f"column names must be distinct (ignoring case, as SQL compares them): {columns}")
    output = Output.of(options.pop("output", None))
    if output.key is not None or "key" in options:
        raise FrameError("anonymize_frame keys the rows by their position: Output(key=...) is not an option here")
    if not isinstance(name, str) or not name:
        raise FrameError(f"name must be a non-empty string, got {name!r}")
    if con is None:
        con = duckdb_connect(None)
    elif not hasattr(con, "register") or type(con).__module__.split(".")[0] not in ("duckdb", "_duckdb"):
        raise FrameError(f"con must be a DuckDB connection (the frame is loaded into it), got {type(con).__name__}; "
                         "for PostgreSQL or Spark, load the frame into a table and call sqlanon.anonymize")
    row = free_name("__sqlanon_row", columns)
    created = _load(con, name, frame, arrow, row, output.replace)
    try:
        release = anonymize(con, name, qid, k, output=dataclasses.replace(output, key=row), **options)
    except BaseException:
        if created:  # a refused request leaves the connection as it was
            con.execute(g.drop(name, "TABLE").sql(dialect="duckdb"))
        raise
    published = [p for c in columns for p in _published(release, c)] + [release.class_column]
    query = exp.select(*[g.col(c) for c in published]).from_(g.table(release.view)).order_by(g.col(row))
    relation = con.sql(query.sql(dialect="duckdb"))
    # a pyarrow Table: to_arrow_table() since DuckDB 1.4 (fetch_arrow_table() is deprecated there)
    result = relation.to_arrow_table() if hasattr(relation, "to_arrow_table") else relation.fetch_arrow_table()
    return (_arrow_out(frame, result, release) if arrow else _pandas_out(frame, result, release)), release


def _is_arrow(frame: Any) -> bool:
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - pyarrow comes with duckdb's Arrow support
        return False
    return isinstance(frame, pa.Table)


def _load(con: Any, name: str, frame: Any, arrow: bool, row: str, replace: bool) -> bool:
    """Create table ``name`` in ``con`` from ``frame`` plus the row position ``row`` (BIGINT);
    True when it is new (not a replaced one)."""
    n = frame.num_rows if arrow else len(frame)
    positions = np.arange(n, dtype=np.int64)
    if arrow:
        data = frame.append_column(row, _pa().array(positions))
    else:
        data = frame.reset_index(drop=True).assign(**{row: positions})
    found = con.execute("SELECT (SELECT count(*) FROM duckdb_tables() WHERE table_name = $1 AND schema_name = "
                        "current_schema()) + (SELECT count(*) FROM duckdb_views() WHERE view_name = $1 AND "
                        "schema_name = current_schema())", [name]).fetchall()[0][0]
    if found and not replace:
        raise ObjectExistsError(f"{name!r} already exists in the connection: pass name= another table name, or "
                                "replace=True to overwrite it")
    staging = free_name("__sqlanon_frame", [name])
    con.register(staging, data)
    try:
        create = exp.Create(this=g.table(name), kind="TABLE", replace=bool(found),
                            expression=exp.select(exp.Star()).from_(g.table(staging)))
        con.execute(create.sql(dialect="duckdb"))
    finally:
        con.unregister(staging)
    return not found


def _pa() -> Any:
    import pyarrow as pa

    return pa


def _published(release: Release, column: str) -> tuple[str, ...]:
    """The view's columns standing for ``column`` (itself unless it is a QI)."""
    if column not in release.qid:
        return ()
    return (f"{column}_min", f"{column}_max") if column in release.published else (column,)


def _pandas_out(frame: pd.DataFrame, result: Any, release: Release) -> pd.DataFrame:
    """The input's columns, each QI replaced in place by its published columns, then the class."""
    pa = _pa()
    nullable = {pa.int8(): pd.Int8Dtype(), pa.int16(): pd.Int16Dtype(), pa.int32(): pd.Int32Dtype(),
                pa.int64(): pd.Int64Dtype(), pa.bool_(): pd.BooleanDtype()}
    got = result.to_pandas(types_mapper=nullable.get)
    parts: dict[str, Any] = {}
    for c in frame.columns:
        for p in _published(release, c) or (c,):
            # by position: the input's index may repeat labels, which alignment would refuse
            parts[p] = got[p] if c in release.qid else frame[c].reset_index(drop=True)
    parts[release.class_column] = got[release.class_column]
    out = pd.DataFrame(parts)
    out.index = frame.index
    return out


def _arrow_out(frame: Any, result: Any, release: Release) -> Any:
    pa = _pa()
    arrays, names = [], []
    for c in frame.column_names:
        for p in _published(release, c) or (c,):
            names.append(p)
            arrays.append(result.column(p) if c in release.qid else frame.column(c))
    names.append(release.class_column)
    arrays.append(result.column(release.class_column))
    return pa.table(arrays, names=names)
