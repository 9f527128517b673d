"""``sqlanon install-macros``: ``sql/macros.sql``, the checks as DuckDB table macros."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..engine import engine_for
from ..engine import sqlgen as g
from .common import UsageError, engine_name, opened
from .options import engine_options


def register(sub: Any) -> None:
    """Add the command's subparser to ``sub``."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser(
        "install-macros", formatter_class=fmt, help="install the SQL check macros into a database",
        description="Run sql/macros.sql on DB: DuckDB table macros that check any table, view or file without\n"
                    "Python (the same as `duckdb DB < sql/macros.sql`):\n\n"
                    "  sqlanon_class_sizes(tbl, cols)\n"
                    "  sqlanon_k_check(tbl, cols, k)\n"
                    "  sqlanon_distinct_l_check(tbl, cols, sensitive, l)\n"
                    "  sqlanon_entropy_l_check(tbl, cols, sensitive, l)\n"
                    "  sqlanon_variance_check(tbl, cols, sensitive, v)",
        epilog="example:\n  sqlanon install-macros hospital.duckdb\n"
               "  duckdb hospital.duckdb \"SELECT * FROM sqlanon_k_check('patients_anon', "
               "['age_min', 'age_max', 'sex'], 10)\"",
    )
    p.add_argument("db", metavar="DB",
                   help="DuckDB database file (must exist); PostgreSQL and Spark have no table macros")
    engine_options(p)
    p.set_defaults(run=_install_macros)


# -- install-macros ---------------------------------------------------------------------------
def macros_path() -> Path:
    """``sql/macros.sql``: ``sqlanon/sql`` in the wheel, ``../sql`` in a source checkout."""
    return g._sql_dir() / "macros.sql"


def install_macros(con: Any) -> list[tuple[str, list[str]]]:
    """Run ``sql/macros.sql`` on ``con`` (DuckDB: they are DuckDB table macros); return the
    installed macros and their parameters."""
    return engine_for(con).install_macros(macros_path().read_text(encoding="utf-8"), "sqlanon_")


def _install_macros(args: argparse.Namespace) -> int:
    if engine_name(args, args.db) == "spark":  # refused before a session starts (the library's words, on postgres)
        raise UsageError("sqlanon's SQL macros are DuckDB table macros; spark cannot install them "
                         "(use the Python API or the CLI on spark)")
    with opened(args, args.db, read_only=False) as con:
        installed = install_macros(con)
    sys.stdout.write(f"installed {len(installed)} macros into {args.db}:\n")
    for name, params in installed:
        sys.stdout.write(f"  {name}({', '.join(params)})\n")
    return 0
