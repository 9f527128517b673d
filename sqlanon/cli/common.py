"""What the commands share: usage errors, reading names, the engine and connection of DB, the progress line."""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from ..engine import POSTGRES_URLS, connect, spark_session
from ..errors import InputError
from ..model.partition import Progress
from ..request.config import DATA_SUFFIXES, ReleaseConfig


class UsageError(Exception):
    """A malformed command line (exit status 2)."""


class _Exit(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


#: The engines of ``--engine``.
ENGINES = ("duckdb", "postgres", "spark")


def locate(args: argparse.Namespace, config: ReleaseConfig | None) -> tuple[str | None, str]:
    """(database or None: in-memory, or Spark's current database; source) from DB [TABLE] and
    the release file."""
    db, table = args.db, args.table
    if db is not None and table is not None:
        return db, table
    if db is not None:
        if is_data_path(db):  # FILES alone: anonymized in memory
            return files_alone(args, db)
        if config is not None:
            return db, config.table
        raise UsageError(f"missing TABLE after DB {db!r} (or give FILES alone: .parquet, .csv, .json)")
    if config is not None:
        return config.database, config.table
    raise UsageError("name the source: DB TABLE, FILES, or --config RELEASE.toml")


def files_alone(args: argparse.Namespace, files: str) -> tuple[None, str]:
    """FILES given without DB: read in place by an in-memory DuckDB, so not with another --engine."""
    if args.engine not in (None, "duckdb"):
        raise UsageError(f"{files!r} without DB: files are read in place by an in-memory DuckDB only; with --engine "
                         f"{args.engine} name DB and a table (load the files into a table first)")
    return None, files


def split_names(values: Sequence[str], option: str = "--qid") -> list[str]:
    names = [n.strip() for v in values for n in v.split(",")]
    if not all(names):
        raise UsageError(f"{option}: empty column name in {','.join(values)!r}")
    return names


def is_data_path(name: str) -> bool:
    return "*" in name or Path(name).suffix.lower() in DATA_SUFFIXES


def engine_name(args: argparse.Namespace, database: str | None) -> str:
    """The engine of ``database``: ``--engine``, else postgres for a postgresql:// URL and duckdb
    otherwise. A usage error when DB or the Spark options do not fit it."""
    url = database is not None and database.startswith(POSTGRES_URLS)
    name = args.engine or ("postgres" if url else "duckdb")
    if name != "spark" and (args.spark_master is not None or args.spark_conf):
        flag = "--spark-master" if args.spark_master is not None else "--spark-conf"
        raise UsageError(f"{flag} goes with --engine spark" + (f", not --engine {name}" if args.engine else ""))
    if name == "postgres" and not url:
        raise UsageError(f"--engine postgres takes a postgresql:// URL as DB, got {database!r}" if database else
                         "--engine postgres needs DB: a postgresql:// URL")
    if url and name != "postgres":
        raise UsageError(f"--engine {name} does not take a postgresql:// URL as DB (that is --engine postgres)")
    return name


def _spark_conf(items: Sequence[str]) -> dict[str, str]:
    """``--spark-conf KEY=VALUE`` ... as a dict."""
    conf = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--spark-conf takes KEY=VALUE, got {item!r}")
        conf[key.strip()] = value
    return conf


def opened(args: argparse.Namespace, database: str | None, read_only: bool) -> contextlib.AbstractContextManager[Any]:
    """The command's connection to ``database`` on the engine of :func:`_engine`, closed at the end.
    With --engine spark: :func:`sqlanon.engine.spark_session` (DB the Spark database, None its
    current one); Spark has no read-only mode, and the commands that open read-only do not write."""
    if engine_name(args, database) == "spark":
        return spark_session(args.spark_master, _spark_conf(args.spark_conf), database)
    return contextlib.closing(_connect(database, read_only))


def _connect(database: str | None, read_only: bool) -> Any:
    """Open a PostgreSQL URL, or an existing DuckDB database file (never create one), or an
    in-memory DuckDB database for None."""
    try:
        return connect(database, read_only=read_only)
    except InputError as e:
        hint = (" (to anonymize files without a database, give them alone and use --out)"
                if database and is_data_path(database) and "not found" in str(e) else "")
        raise UsageError(f"{e}{hint}") from None


class ProgressLine:
    """``progress=`` callback drawing one updating line on stderr, only when it is a terminal."""

    def __init__(self, quiet: bool) -> None:
        self.stream = sys.stderr
        self.enabled = not quiet and isatty(self.stream)
        self.drawn = False
        self.last = 0.0

    def __enter__(self) -> Callable[[Progress], None] | None:
        return self if self.enabled else None

    def __call__(self, p: Progress) -> None:
        now = time.monotonic()
        if (p.open_partitions or p.phase in ("lattice", "genetic")) and now - self.last < 0.1:
            return  # at most ten updates a second
        self.last = now
        if p.message is not None:  # a phase told in words, e.g. "compiling kernels, first use only"
            self.stream.write(f"\rsqlanon: {p.message}, {p.elapsed:.1f} s\x1b[K")
            self.stream.flush()
            self.drawn = True
            return
        if p.phase in ("lattice", "genetic"):  # the single-dimensional searches: count and best so far
            what = "lattice nodes checked" if p.phase == "lattice" else "iterations"
            best = "" if p.best is None else f", best {p.best:.6g}"
            self.stream.write(f"\rsqlanon: {p.level:,} {what}{best}, {p.elapsed:.1f} s\x1b[K")
            self.stream.flush()
            self.drawn = True
            return
        tail = ", publishing and verifying" if p.open_partitions == 0 else ""
        self.stream.write(f"\rsqlanon: level {p.level} ({p.phase}): {p.open_partitions:,} open partitions, "
                          f"{p.rows_finished:,} rows finished, {p.elapsed:.1f} s{tail}\x1b[K")
        self.stream.flush()
        self.drawn = True

    def __exit__(self, *exc: object) -> None:
        if self.drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
