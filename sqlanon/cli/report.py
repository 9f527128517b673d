"""``sqlanon report``: :func:`sqlanon.release.report.report`: HTML, Markdown or JSON."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from ..release.report import FORMATS, collect, render
from .common import UsageError, engine_name, opened, split_names
from .options import engine_options
from .outputs import database_files, refuse_input


def register(sub: Any) -> None:
    """Add the command's subparser to ``sub``."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser(
        "report", formatter_class=fmt, help="write a release's report: HTML, Markdown or JSON (sqlanon.report)",
        usage="sqlanon report DB VIEW [--format html|markdown|json] [-o FILE] [options]",
        description="Report on the release published as VIEW in DB (sqlanon.report): the requirement (k and the\n"
                    "constraints recorded with the release) and whether it holds -- re-checked now on the view\n"
                    "with sqlanon.verify -- the metrics (sqlanon.metrics), the distribution of equivalence-class\n"
                    "sizes, per-QI generalization widths, imprecision per selection, and the SQL objects with\n"
                    "their row counts. HTML is one self-contained file with the plots inline (SVG); Markdown\n"
                    "reads in a terminal; JSON holds every number (its \"metrics\" is sqlanon.metrics(...).as_dict()).\n"
                    "Without --target/--numeric-target/--sensitive/--select the release's own workload is used\n"
                    "(the criterion's targets, the constrained columns, the selections it was made for).\n"
                    "The database is opened read-only (Spark has no read-only mode: nothing is written there\n"
                    "either).\n\n"
                    "Exit status: 0 the report was written and the requirement holds, 1 it was written and the\n"
                    "requirement fails (or the database failed), 2 usage or input error.",
        epilog="examples:\n"
               "  sqlanon report hospital.duckdb patients_anon --format html -o report.html\n"
               "  sqlanon report hospital.duckdb patients_anon            # Markdown on stdout\n"
               "  sqlanon report hospital.duckdb patients_anon -o report.json --target hiv \\\n"
               "      --select \"age > 40 AND sex = 'M'\"",
    )
    p.add_argument("db", metavar="DB",
                   help="DuckDB database file or postgresql:// URL (with --engine spark: the Spark database) "
                        "holding the release")
    p.add_argument("view", metavar="VIEW", help="the release's published view (or its rules relation)")
    p.add_argument("--format", choices=FORMATS,
                   help="html (one file, plots inline), markdown or json; default: from -o's suffix "
                        "(.html/.htm, .md/.markdown, .json), else markdown")
    p.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE (never the database; an existing "
                                                          "FILE only with --replace); default: standard output")
    p.add_argument("--replace", action="store_true", help="overwrite FILE (-o) if it exists")
    p.add_argument("--target", action="append", metavar="COLS",
                   help="class label column(s) for CM and the entropies (comma-separated, repeatable)")
    p.add_argument("--numeric-target", action="append", metavar="COLS",
                   help="numeric column(s) predicted by the class mean, for RMSE (comma-separated, repeatable)")
    p.add_argument("--sensitive", action="append", metavar="COLS",
                   help="sensitive column(s) for achieved l and variance (comma-separated, repeatable)")
    p.add_argument("--select", action="append", metavar="PREDICATE",
                   help="a selection (SQL over the QIs) whose imprecision is reported (repeatable)")
    engine_options(p)
    p.set_defaults(run=_report)


# -- report -----------------------------------------------------------------------------------
#: ``--format`` implied by the suffix of ``-o``.
REPORT_SUFFIXES = {".html": "html", ".htm": "html", ".md": "markdown", ".markdown": "markdown", ".json": "json"}


def _report(args: argparse.Namespace) -> int:
    out = Path(args.output) if args.output else None
    if out is not None:
        _check_report_out(args, out)
    fmt = args.format or (REPORT_SUFFIXES.get(out.suffix.lower()) if out is not None else None) or "markdown"
    columns = {key: split_names(value, option) if value is not None else None for key, value, option in (
        ("targets", args.target, "--target"), ("numeric_targets", args.numeric_target, "--numeric-target"),
        ("sensitive", args.sensitive, "--sensitive"))}
    if args.select is not None and not all(s.strip() for s in args.select):
        raise UsageError("--select: empty predicate")
    with opened(args, args.db, read_only=True) as con:
        data = collect(con, args.view, selections=args.select, **columns)
    text = render(data, fmt)
    if out is None:
        sys.stdout.write(text)
    else:
        partial = out.with_name(f".{out.name}.sqlanon-partial")
        try:
            partial.write_text(text, encoding="utf-8")
            os.replace(partial, out)
        finally:
            partial.unlink(missing_ok=True)
    if not data.holds:
        sys.stderr.write(f"sqlanon: the requirement does not hold on {data.view} (see the report)\n")
        return 1
    return 0


def _check_report_out(args: argparse.Namespace, out: Path) -> None:
    """``-o``: not a directory, not the database the report reads, no file in the way unless ``--replace``."""
    if out.is_dir():
        raise UsageError(f"-o {out} is a directory; name a file in it")
    local = args.db != ":memory:" and engine_name(args, args.db) == "duckdb"
    refuse_input("-o", out, database_files(args.db) if local else [])
    if out.exists() and not args.replace:
        raise UsageError(f"-o {out} exists; pass --replace to overwrite it")
