"""``sqlanon demo``: :func:`sqlanon.anonymize` on the bundled Adult data, in memory."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from sqlglot import exp

from ..api import anonymize
from ..engine import connect, engine_for
from ..engine import sqlgen as g
from ..release.report import collect, render
from .anonymize import write_summary
from .common import ProgressLine

#: The QIs of ``sqlanon demo``: age is numeric, the others use the bundled ARX hierarchies.
DEMO_QID = ("age", "sex", "race", "marital-status", "education", "native-country", "workclass", "occupation")


def register(sub: Any) -> None:
    """Add the command's subparser to ``sub``."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser(
        "demo", formatter_class=fmt, help="anonymize the bundled UCI Adult data in memory",
        description="Load the bundled UCI Adult data (30,162 rows) into an in-memory DuckDB, anonymize it\n"
                    "(QIs: age as a number; sex, race, marital-status, education, native-country,\n"
                    "workclass, occupation through the bundled ARX hierarchies) and print a report.",
    )
    p.add_argument("--k", type=int, default=10, metavar="N", help="every class holds at least N rows (default 10)")
    p.set_defaults(run=_demo)


# -- demo -------------------------------------------------------------------------------------
def _demo(args: argparse.Namespace) -> int:
    from ..datasets import load_adult

    con = connect(None)
    try:
        hierarchies = load_adult(con, "adult")
        with ProgressLine(quiet=False) as progress:
            release = anonymize(con, "adult", list(DEMO_QID), args.k,
                                hierarchies={q: hierarchies[q] for q in DEMO_QID if q != "age"},
                                progress=progress)
        out = sys.stdout
        out.write(f"UCI Adult (bundled, {release.rows:,} rows) in an in-memory DuckDB\n")
        out.write(f"QIs: age (numeric); {', '.join(DEMO_QID[1:])} (ARX hierarchies)\n\n")
        write_summary(out, release)
        out.write("\nfirst rows of the published view:\n")
        out.write(str(engine_for(con).relation(exp.select("*").from_(g.table(release.view)).limit(5))))
        out.write("\n" + render(collect(con, release, targets=["salary-class"]), "markdown"))
    finally:
        con.close()
    return 0
