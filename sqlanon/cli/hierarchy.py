"""``sqlanon hierarchy``: :mod:`sqlanon.hierarchies`' builders, written as ARX files."""

from __future__ import annotations

import argparse
import glob
import re
import sys
from pathlib import Path
from typing import Any

from .. import hierarchies
from ..errors import HierarchyError
from .common import UsageError, engine_name, is_data_path, opened
from .options import engine_options
from .outputs import database_files, refuse_input


def register(sub: Any) -> None:
    """Add the command's subparser to ``sub``."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser(
        "hierarchy", formatter_class=fmt, help="build a generalization hierarchy from a column (sqlanon.hierarchies)",
        usage="sqlanon hierarchy BUILDER DB TABLE COLUMN -o FILE [--replace] [builder options] [engine options]",
        description="Build a hierarchy from the distinct values of COLUMN (sqlanon.hierarchies, after ARX's builders)\n"
                    "and write it as an ARX file (leaf;level1;...;*), ready for --hierarchy COLUMN=FILE:\n\n"
                    "  intervals  fixed-width nested intervals (--width, --start, --fanout)\n"
                    "  quantiles  intervals of about equal counts, nested (--bins, --fanout)\n"
                    "  ordering   categories grouped in order (--fanout, --order)\n"
                    "  masking    codes masked from the right (--mask, --step)\n"
                    "  dates      dates by calendar (--levels month,quarter,year,decade,century)",
        epilog="example:\n  sqlanon hierarchy masking hospital.duckdb patients zip -o zip.csv\n"
               "  sqlanon hierarchy intervals hospital.duckdb patients age --width 5 -o age.csv",
    )
    p.add_argument("builder", metavar="BUILDER", choices=tuple(hierarchies.BUILDERS),
                   help=f"one of {', '.join(hierarchies.BUILDERS)}")
    p.add_argument("db", metavar="DB", help="DuckDB database file or postgresql:// URL (with --engine spark: the "
                                            "Spark database); ':memory:' for files as TABLE")
    p.add_argument("table", metavar="TABLE", help="a table or view, or (DuckDB) Parquet/CSV/JSON files")
    p.add_argument("column", metavar="COLUMN", help="the column whose values become the leaves")
    p.add_argument("-o", "--out", required=True, type=Path, metavar="FILE", help="the ARX file to write")
    p.add_argument("--replace", action="store_true", help="overwrite FILE if it exists")
    p.add_argument("--width", type=float, help="intervals: the first level's width")
    p.add_argument("--start", type=float, help="intervals: where the first interval starts")
    p.add_argument("--bins", type=int, help="quantiles: how many intervals at the first level")
    p.add_argument("--fanout", metavar="N[,N...]",
                   help="intervals, quantiles, ordering: nodes joined per level (one number, or one per level)")
    p.add_argument("--order", metavar="FILE", type=Path,
                   help="ordering: a file with every value in order, one per line (default: sorted)")
    p.add_argument("--mask", help="masking: the character that replaces a digit (default *)")
    p.add_argument("--step", type=int, help="masking: characters masked per level (default 1)")
    p.add_argument("--levels", help="dates: the levels, fine to coarse (default month,year,decade)")
    engine_options(p)
    p.set_defaults(run=_hierarchy)




def _hierarchy(args: argparse.Namespace) -> int:
    """``sqlanon hierarchy``: read the column's values, build, write the ARX file."""
    out: Path = args.out
    if out.is_dir():
        raise UsageError(f"-o {out} is a directory; name a file in it")
    local = args.db != ":memory:" and engine_name(args, args.db) == "duckdb"
    inputs = (database_files(args.db) if local else []) + ([("the --order file", str(args.order))] if args.order else [])
    if is_data_path(args.table):
        inputs += [("a source file", f) for f in sorted(glob.glob(args.table, recursive=True)) or [args.table]]
    refuse_input("-o", out, inputs)
    if out.exists() and not args.replace:
        raise UsageError(f"-o {out} exists; pass --replace to overwrite it")
    fanout: int | list[int] | None = None
    if args.fanout is not None:
        try:
            fanout = [int(x) for x in args.fanout.split(",")]
        except ValueError:
            raise UsageError(f"--fanout must be a number or numbers separated by commas, got {args.fanout!r}") from None
        if len(fanout) == 1:
            fanout = fanout[0]
    order = None
    if args.order is not None:
        order = [line.strip() for line in args.order.read_text(encoding="utf-8").splitlines() if line.strip()]
    given = {"width": args.width, "start": args.start, "bins": args.bins, "fanout": fanout, "order": order,
             "mask": args.mask, "step": args.step,
             "levels": None if args.levels is None else [x.strip() for x in args.levels.split(",")]}
    try:
        build = hierarchies.builder(args.builder, **{key: value for key, value in given.items()
                                                    if key in hierarchies.BUILDERS[args.builder] and value is not None})
    except HierarchyError as e:  # its arguments are the flags
        raise UsageError(re.sub(r"\b(\w+)=", r"--\1", str(e))) from None
    with opened(args, None if args.db == ":memory:" else args.db, read_only=True) as con:
        values = hierarchies.column_values(con, args.table, args.column)
    built = build.build(values)
    built.to_csv(out)
    sys.stdout.write(f"{out}: {built.n_leaves:,} values under {built.height} levels ({args.builder})\n")
    return 0
