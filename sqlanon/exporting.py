"""Writing a release to a file: ``COPY`` of the published relation, both or neither.

:func:`export` writes a published relation (a :class:`~sqlanon.Release`, or a view's name) to
a Parquet, CSV or JSON file; given a :class:`~sqlanon.Request` it publishes the release *and*
writes it, as one step: if writing fails, the release is undone and the database is left as it
was (the objects the run created are dropped; one that ``replace`` overwrote is back). The file
is written under a hidden name next to ``path`` and moved into place, so a failure never leaves
a partial file. Every check that needs no data (:func:`check_path`) runs before any work.

>>> import duckdb, pathlib, tempfile, sqlanon
>>> con = duckdb.connect()
>>> _ = con.execute("CREATE TABLE t AS SELECT i AS id, i % 50 AS age FROM range(200) r(i)")
>>> with tempfile.TemporaryDirectory() as folder:
...     release = export(con, sqlanon.Request("t", qid=["age"], k=10), pathlib.Path(folder, "t.csv"))
...     sorted(p.name for p in pathlib.Path(folder).iterdir())
['t.csv']
>>> release.k_achieved >= 10
True
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sqlglot import exp

from .engine import engine_for
from .engine import sqlgen as g
from .errors import ExportError
from .model.partition import Progress
from .pipeline import Release
from .publish.pipeline import set_aside

#: Formats by file suffix: (DuckDB COPY format, extra COPY options); ``.gz`` compresses text.
FORMATS: dict[str, tuple[str, tuple[tuple[str, Any], ...]]] = {
    ".parquet": ("PARQUET", ()),
    ".csv": ("CSV", (("HEADER", True),)),
    ".tsv": ("CSV", (("HEADER", True), ("DELIMITER", "\t"))),
    ".json": ("JSON", (("ARRAY", True),)),
    ".jsonl": ("JSON", ()),
    ".ndjson": ("JSON", ()),
}


def copy_options(path: Path) -> list[tuple[str, Any]]:
    """The COPY options of ``path``, from its suffix (``.gz`` compresses the text formats).

    Raises:
        ExportError: an unknown suffix (or a compressed Parquet file)."""
    suffixes = [s.lower() for s in path.suffixes]
    gzip = bool(suffixes) and suffixes[-1] == ".gz"
    ext = suffixes[-2] if gzip and len(suffixes) > 1 else (suffixes[-1] if suffixes else "")
    if ext not in FORMATS or (gzip and ext == ".parquet"):
        raise ExportError(f"{path}: unknown format; use .parquet, .csv, .tsv, .json, .jsonl or .ndjson "
                          f"(.gz for compressed text)")
    name, extra = FORMATS[ext]
    return [("FORMAT", name), *extra] + ([("COMPRESSION", "gzip")] if gzip else [])


def check_path(path: str | os.PathLike[str], replace: bool = False) -> Path:
    """Everything about an output path that can be checked before the work: a known format,
    not a directory, an existing writable directory, and no file in the way unless ``replace``.

    Raises:
        ExportError: naming the problem."""
    out = Path(path)
    if out.is_dir():
        raise ExportError(f"{out} is a directory; name a file in it")
    copy_options(out)
    if out.exists() and not replace:
        raise ExportError(f"{out} exists; pass replace=True to overwrite it")
    folder = out.parent
    if not folder.is_dir():
        raise ExportError(f"{out}: no such directory: {folder}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ExportError(f"{out}: the directory {folder} is not writable")
    return out


def export(con: Any, source: Any, path: str | os.PathLike[str], *, replace: bool = False,
           progress: Callable[[Progress], None] | None = None) -> Release | str:
    """Write ``source`` to ``path`` (Parquet, CSV, TSV, JSON or JSON lines by its suffix; ``.gz``
    compresses text), both or neither.

    Args:
        con: the connection (an engine that can ``COPY`` to a file: DuckDB, Spark).
        source: a :class:`~sqlanon.Request` (published, then written; if writing fails the
            release is undone), a :class:`~sqlanon.Release` or the name of a relation (written).
        path: the file to write; it is never left half-written.
        replace: overwrite an existing file.
        progress: as for :func:`sqlanon.anonymize` (a request only).

    Returns:
        The :class:`~sqlanon.Release` for a request or a release; the relation's name otherwise.

    Raises:
        ExportError: (before any work) a path :func:`check_path` refuses.
    """
    out = check_path(path, replace)
    if isinstance(source, str):
        write(con, source, out)
        return source
    if isinstance(source, Release):
        write(con, source.view, out)
        return source
    return publish_and_write(con, source, out, progress)


def write(con: Any, relation: str, out: Path) -> None:
    """``COPY relation TO out``, written to a hidden file first so a failure leaves nothing."""
    _finish(_copy(con, relation, out), out)


def publish_and_write(con: Any, request: Any, out: Path,
                      progress: Callable[[Progress], None] | None = None) -> Release:
    """Publish ``request``'s release in the database and write it to ``out``, both or neither.

    Without objects to replace, the release is published as usual -- in its own short
    transaction -- and, if the COPY fails, exactly the objects the run created (the catalog
    before and after) are dropped again. Dropping the new release would not bring back one that
    ``replace`` overwrote, so then the whole run happens in one transaction, rolled back on
    failure. That is kept to this case because a transaction around the run also keeps every
    working table of the partitioning until it ends (about twice the memory for a large table
    partitioned in SQL). An engine without transactions (Spark) moves those objects aside
    instead, as :func:`sqlanon.anonymize` does there (:func:`sqlanon.publish.pipeline.set_aside`).
    """
    engine = engine_for(con)
    existing: tuple[tuple[str, str], ...] = ()
    fresh = dataclasses.replace(request, output=dataclasses.replace(request.output, replace=False))
    if request.output.replace:
        try:  # validates the request as anonymize will, and names what replace overwrites
            existing = tuple(request.resolve(engine).outputs.existing)
        finally:
            engine.cleanup()
    if not existing:
        return _publish_then_write(con, request, out, progress)
    if not engine.transactions:
        with set_aside(engine, existing):  # moved aside: nothing left to replace
            return _publish_then_write(con, fresh, out, progress)
    partial: Path | None = None
    try:
        with engine.transaction():  # one transaction: a failure (or a failed COMMIT) restores the old release
            for name, kind in existing:
                engine.execute(g.drop(name, kind.upper()))
            release = fresh.run(con, progress)  # dropped above
            partial = _copy(con, release.view, out)
    except BaseException:
        if partial is not None:
            partial.unlink(missing_ok=True)
        raise
    _finish(partial, out)
    return release


def _publish_then_write(con: Any, request: Any, out: Path, progress: Callable[[Progress], None] | None) -> Release:
    """Publish the release, then write it to ``out``; if writing fails, drop exactly the objects
    the release created (the catalog before and after)."""
    before = persistent_objects(con)
    release = request.run(con, progress)
    try:
        write(con, release.view, out)
    except BaseException:
        drop_new_objects(con, before)
        raise
    return release


def persistent_objects(con: Any) -> set[tuple[str, str, str, str]]:
    """The database's tables and views (not temporary): ``(catalog, schema, name, kind)``. A new
    engine each time: an engine may keep its listing until it writes itself (Spark)."""
    return {tuple(o[:4]) for o in engine_for(con).objects() if not o.temporary}


def drop_new_objects(con: Any, before: set[tuple[str, str, str, str]]) -> None:
    """Drop, in one transaction, the tables and views that were not there ``before``."""
    created: Sequence[tuple[str, str, str, str]] = sorted(persistent_objects(con) - before,
                                                          key=lambda o: o[3] != "view")  # views first
    if not created:
        return
    engine = engine_for(con)
    with engine.transaction():
        for catalog, schema, name, kind in created:
            engine.execute(exp.Drop(tables=[g.table(name, schema, catalog)], kind=kind.upper(), exists=True))


def _copy(con: Any, relation: str, out: Path) -> Path:
    """``COPY relation`` to a hidden file next to ``out`` (removed if the COPY fails); returns it."""
    params = [
        exp.CopyParameter(this=exp.var(key), expression=exp.var(value) if key == "FORMAT" else g.lit(value))
        for key, value in copy_options(out)
    ]
    partial = out.with_name(f".{out.name}.sqlanon-partial")
    try:
        engine_for(con).export(exp.select("*").from_(g.table(relation)), str(partial), params)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return partial


def _finish(partial: Path, out: Path) -> None:
    """Move the written file into place (atomically, in the same directory)."""
    try:
        os.replace(partial, out)
    finally:
        partial.unlink(missing_ok=True)
