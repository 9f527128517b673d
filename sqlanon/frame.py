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
import json
from typing import Any

import numpy as np
import pandas as pd
from sqlglot import exp

from .api import REQUEST_OPTIONS, Release, Request, anonymize, check_removed
from .engine import engine_for
from .engine import sqlgen as g
from .engine.base import CatalogObject, Engine
from .engine.catalog import free_name
from .engine.duckdb import connect as duckdb_connect
from .errors import FrameError, ObjectExistsError
from .model import manifest_format
from .pipeline import validate
from .request.output import Output
from .request.owned import owned as release_owned

#: The table name the frame is loaded as (in ``con``), unless ``name=`` says otherwise.
FRAME_TABLE = "frame"
#: The key of the comment (a JSON object) on a table this module loaded: only such a table is
#: overwritten by ``replace=True``.
UPLOAD_MARK = "sqlanon_frame"


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
            ``output=`` says otherwise). With ``Output(replace=True)`` it may be a table this
            function loaded before (marked by its comment) -- never another table or a view, and
            not the source of a release other than the one this call replaces.
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
        ObjectExistsError: ``name`` is taken by a view, or by a table this function may not
            overwrite (see ``name``).
        ReadOnlyError: ``con`` is read-only.
        RemovedOptionError: a keyword of the earlier API (as :func:`sqlanon.anonymize`).
        InputError: whatever :func:`sqlanon.anonymize` refuses -- checked on the frame before
            anything is written, so a refused request leaves ``con`` as it was.
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
    progress = options.pop("progress", None)
    check_removed("anonymize_frame", {o: v for o, v in options.items() if o not in REQUEST_OPTIONS})
    engine = engine_for(con)
    view = output.view or f"{name}_anon"  # anonymize's default
    engine.check_writable(f"the frame (loaded as table {name!r}) and its release")
    row = free_name("__sqlanon_row", columns)
    upload = _earlier_upload(engine, name, view, output.replace)
    data = _with_positions(frame, arrow, row)
    output = dataclasses.replace(output, key=row)
    request = Request(name, qid, k, output=output, **options)
    try:
        with engine.frame_as(name, data):  # the request is checked on the frame before anything is written
            spec = validate(engine, request, progress)
    finally:
        engine.cleanup()
    outputs = [spec.outputs.view, spec.outputs.rules, spec.outputs.assignment, spec.outputs.hierarchies]
    if any(o is not None and o.lower() == name.lower() for o in outputs):
        raise ObjectExistsError(f"the release's objects {[o for o in outputs if o]} would overwrite the frame's table "
                                f"{name!r}: pass another name= or output=")
    engine.create_from_frame(name, data, replace=upload)
    engine.set_comment(name, json.dumps({UPLOAD_MARK: 1, "row": row}))
    try:
        release = anonymize(con, name, qid, k, output=output, progress=progress, **options)
    except BaseException:
        if not upload:  # a refused request leaves the connection as it was
            engine.execute(g.drop(name, "TABLE"))
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


def _with_positions(frame: Any, arrow: bool, row: str) -> Any:
    """``frame`` with one more column, ``row``: each row's position (BIGINT), the release's key."""
    n = frame.num_rows if arrow else len(frame)
    positions = np.arange(n, dtype=np.int64)
    if arrow:
        return frame.append_column(row, _pa().array(positions))
    return frame.reset_index(drop=True).assign(**{row: positions})


def _earlier_upload(engine: Engine, name: str, view: str, replace: bool) -> bool:
    """Whether ``name`` is an earlier upload of this function that ``replace`` overwrites; False
    when ``name`` is free.

    Raises:
        ObjectExistsError: ``name`` is a view; or a table, and ``replace`` is False, or it is not
            a table this function loaded (the comment it leaves, and the row position as its
            last column), or it is the source of a release other than ``view``'s (which
            ``replace=True`` replaces): overwriting it would change what that release reads.
    """
    objects = engine.objects()
    taken = engine.taken(name, objects)
    if not taken:
        return False
    found = taken[0]
    if found.kind != "table":
        raise ObjectExistsError(f"{found.name!r} is a {found.kind} in the connection; anonymize_frame loads the frame "
                                "into a table of its own: pass name= another name")
    if not replace:
        raise ObjectExistsError(f"{found.name!r} already exists in the connection: pass name= another table name, or "
                                "replace=True to overwrite an earlier anonymize_frame table")
    if not _uploaded(engine, found):
        raise ObjectExistsError(
            f"{found.name!r} is a table anonymize_frame did not load (or an earlier sqlanon version did, without "
            "saying so); replace=True overwrites only the frame's own table: pass name= another name")
    current, replaced = engine.current(), release_owned(engine, objects, view).names
    readers = sorted(str(document.get("view")) for o in objects
                     if not ((o.catalog, o.schema) == current and o.name.lower() in replaced)
                     and (document := _manifest(engine, o)) is not None
                     and document.get("source_relation") == [found.catalog, found.schema, found.name])
    if readers:
        raise ObjectExistsError(
            f"{found.name!r} is the source of the release(s) {readers} (by their manifests): overwriting it would "
            f"change what they read. Pass name= another name, or view= that release's view to replace it too")
    return True


def _uploaded(engine: Engine, found: CatalogObject) -> bool:
    """Whether the table ``found`` is one this function loaded: its comment says so, and its last
    column is the row position the comment names."""
    try:
        mark = json.loads(engine.comment(found) or "")
    except ValueError:
        return False
    if not isinstance(mark, dict) or mark.get(UPLOAD_MARK) != 1:
        return False
    columns = engine.columns(found.catalog, found.schema, found.name)
    return bool(columns) and columns[-1] == (mark.get("row"), "BIGINT")


def _manifest(engine: Engine, found: CatalogObject) -> dict[str, Any] | None:
    """The release manifest on ``found``, if it is a table carrying one."""
    return manifest_format.decode(engine.comment(found) if found.kind == "table" else None)


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
