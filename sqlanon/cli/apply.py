"""``sqlanon apply``: :func:`sqlanon.release.apply.apply`: recode another table with a release's rules."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import warnings
from typing import Any, TextIO

from ..errors import PrivacyWarning
from ..release.apply import Applied, apply
from .common import opened
from .options import engine_options
from .words import cli_words


def register(sub: Any) -> None:
    """Add the command's subparser to ``sub``."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser(
        "apply", formatter_class=fmt, help="recode another table with a release's rules (sqlanon.apply)",
        usage="sqlanon apply DB VIEW TABLE [--view OUT] [--replace] [--enforce] [--json] [engine options]",
        description="Recode TABLE in DB with the stored rules of the release published as VIEW (sqlanon.apply),\n"
                    "into a new table OUT laid out like the release's view: each QI replaced by its published\n"
                    "columns, plus eq_class. TABLE (or Parquet/CSV/JSON files) needs the release's QI columns.\n"
                    "Every row is published once, in the region whose box holds its values; a row no rule can\n"
                    "place (say, a category missing from the hierarchy) is published fully generalized with a\n"
                    "NULL eq_class -- never with raw values. The release is reloaded from the database by name,\n"
                    "so it may come from an earlier session.\n\n"
                    "Recoding new rows with a release's rules does not make them k-anonymous: a region that\n"
                    "held k training rows may receive a single new row. apply reports the output's classes\n"
                    "(rows grouped by eq_class), the smallest and how many are below the release's k, with a\n"
                    "warning on stderr when some are. --enforce suppresses those classes as a whole -- and\n"
                    "the classes breaking the release's diversity constraints, if it has any -- publishing\n"
                    "their rows fully generalized with a NULL eq_class, so every class left meets the\n"
                    "release's requirement.",
        epilog="example:\n  sqlanon apply hospital.duckdb patients_anon new_patients --view new_patients_anon --enforce",
    )
    p.add_argument("db", metavar="DB",
                   help="DuckDB database file (must exist) or postgresql:// URL (with --engine spark: the Spark "
                        "database) holding the release")
    p.add_argument("release", metavar="VIEW", help="the release's published view, whose rules are applied")
    p.add_argument("table", metavar="TABLE", help="table or view to recode (schema.table accepted), or files")
    p.add_argument("--view", metavar="OUT", help="name of the table to create (default TABLE_anon)")
    p.add_argument("--replace", action="store_true", help="overwrite an existing table or view named OUT")
    p.add_argument("--enforce", action="store_true",
                   help="suppress every class below the release's k (or breaking its diversity constraints): "
                        "its rows are published fully generalized, eq_class NULL")
    p.add_argument("--json", action="store_true", help="print the result (sqlanon.Applied) as JSON")
    engine_options(p)
    p.set_defaults(run=_apply)


# -- apply ------------------------------------------------------------------------------------
def _apply(args: argparse.Namespace) -> int:
    with opened(args, args.db, read_only=False) as con, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PrivacyWarning)  # reported below, in the CLI's words
        result = apply(con, args.release, args.table, view=args.view, replace=args.replace, enforce=args.enforce)
    for warning in caught:
        if issubclass(warning.category, PrivacyWarning):
            sys.stderr.write(f"sqlanon: warning: {cli_words(str(warning.message))}\n")
        else:
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    if args.json:
        sys.stdout.write(json.dumps(dataclasses.asdict(result), indent=2, default=str) + "\n")
        return 0
    _write_applied(sys.stdout, result)
    return 0


def _write_applied(out: TextIO, result: Applied) -> None:
    """The Applied result as aligned ``label  value`` lines."""
    rows = [("published", f"{result.view} (table: {result.table} recoded with the rules {result.rules})"),
            ("rows", f"{result.rows:,}: {result.placed:,} placed in a region, {result.unplaced:,} unplaced "
                     f"(published fully generalized)")]
    if result.enforced:
        rows.append(("suppressed", f"{result.suppressed_classes:,} classes, {result.suppressed_rows:,} rows (published "
                                   f"fully generalized): enforced {'; '.join(result.enforced)}"))
    rows.append(("classes", f"{result.classes:,}, {result.below_k:,} below the release's k={result.k}"))
    rows.append(("k", f"{result.k} required by the release, {result.k_achieved:,} achieved (smallest class)"
                 + ("" if result.enforced or not result.below_k else "; not enforced (--enforce)")))
    rows.append(("elapsed", f"{result.elapsed:.2f} s"))
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        out.write(f"{label:<{width}}  {value}\n")
