"""Output paths: checked before any work, never one of the command's inputs."""

from __future__ import annotations

import argparse
import glob
import os
from collections.abc import Sequence
from pathlib import Path

from ..errors import ExportError
from ..exporting import check_path
from ..request.config import ReleaseConfig
from .common import UsageError, engine_name, is_data_path
from .words import cli_words


def check_out(out: Path, replace: bool, inputs: Sequence[tuple[str, str]]) -> None:
    """Everything about ``--out`` that can be checked before the work: not one of the command's
    ``inputs`` (:func:`refuse_input`), then what :func:`sqlanon.exporting.check_path` checks
    (a known format, an existing writable directory, no file in the way unless ``--replace``)."""
    refuse_input("--out", out, inputs)
    try:
        check_path(out, replace)
    except ExportError as e:
        raise UsageError(f"--out {cli_words(str(e))}") from None


def inputs_of(args: argparse.Namespace, request: ReleaseConfig) -> list[tuple[str, str]]:
    """The local files ``anonymize`` reads, as ``(what, path)``: the release file, the DuckDB
    database (and its write-ahead log), the source files (a glob expanded), the hierarchy files."""
    found: list[tuple[str, str]] = [("the release file (--config)", str(args.config))] if args.config else []
    database = request.database
    if database is not None and database != ":memory:" and engine_name(args, database) == "duckdb":
        found += database_files(database)
    if is_data_path(request.table):
        found += [("a source file", f) for f in sorted(glob.glob(request.table, recursive=True)) or [request.table]]
    found += [(f"the hierarchy of {q.name!r}", q.hierarchy) for q in request.qis if isinstance(q.hierarchy, str)]
    found += [(f"the t-closeness hierarchy of {column!r}", h) for column, _, _, h in request.t_closeness if h]
    return found


def database_files(database: str) -> list[tuple[str, str]]:
    """A DuckDB database file and its write-ahead log, as :func:`_inputs` lists them."""
    return [("the database", database), ("the database's write-ahead log", f"{database}.wal")]


def refuse_input(flag: str, out: Path, inputs: Sequence[tuple[str, str]]) -> None:
    """Refuse an output path that is one of the command's ``inputs`` (``(what, path)``): the same
    path once resolved (symlinks followed, ``..`` and ``~`` undone), or the same file by another
    name (a hard link). Writing there would destroy what the command reads."""
    target = out.expanduser().resolve()
    for what, path in inputs:
        given = Path(path).expanduser()
        if given.resolve() == target or (given.exists() and out.exists() and os.path.samefile(given, out)):
            raise UsageError(f"{flag} {out} is {what} ({path}), which this command reads: it is never overwritten; "
                             f"write to another path")
