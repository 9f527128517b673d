"""``sqlanon risk``: :func:`sqlanon.release.risk.risk`."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..errors import InputError
from ..release.risk import check_threshold, risk
from .common import opened, split_names
from .options import engine_options


def register(sub: Any) -> None:
    """Add the command's subparser to ``sub``."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser(
        "risk", formatter_class=fmt, help="re-identification risk of a table or a release (sqlanon.risk)",
        usage="sqlanon risk DB TABLE [--qid COLS] [--population TABLE] [--threshold T] [--json] [engine options]",
        description="Measure the re-identification risk of TABLE in SQL (sqlanon.release.risk): the prosecutor\n"
                    "model (highest = 1/smallest class, average = classes/records, records alone in their\n"
                    "class, records whose risk exceeds --threshold), and with --population the journalist and\n"
                    "marketer models. A release's view is grouped on its class column (its suppressed rows\n"
                    "left out and counted); any other table on --qid.",
    )
    p.add_argument("db", metavar="DB", help="DuckDB database file or postgresql:// URL (with --engine spark: the "
                                            "Spark database)")
    p.add_argument("table", metavar="TABLE", help="a table, or a release's view")
    p.add_argument("--qid", action="append", metavar="COLS", help="QI columns (default for a release: its QIs)")
    p.add_argument("--population", metavar="TABLE", help="the population the data was drawn from (journalist, "
                                                          "marketer); for a release it is recoded by a temporary apply")
    p.add_argument("--threshold", type=_threshold, default=0.2, metavar="T",
                   help="records at risk: those whose risk exceeds T, a number from 0 to 1 (default 0.2)")
    p.add_argument("--json", action="store_true", help="print the Risk as JSON")
    engine_options(p)
    p.set_defaults(run=_risk)


# -- risk -------------------------------------------------------------------------------------
def _threshold(text: str) -> float:
    """``--threshold``: a risk, so a finite number from 0 to 1 (``nan`` would put no record at risk)."""
    try:
        return check_threshold(float(text))
    except (ValueError, InputError):
        raise argparse.ArgumentTypeError(f"must be a number from 0 to 1, got {text!r}") from None


def _risk(args: argparse.Namespace) -> int:
    qid = split_names(args.qid) if args.qid else None
    with opened(args, args.db, read_only=args.population is None) as con:  # a release's population is applied
        result = risk(con, args.table, qid=qid, population=args.population)
    models = [("prosecutor", result.prosecutor)] + ([("journalist", result.journalist)] if result.journalist else [])
    if args.json:
        document = {"relation": result.relation, "release": result.release, "qid": list(result.qid),
                    "rows": result.rows, "suppressed": result.suppressed, "classes": result.classes,
                    "threshold": args.threshold, "marketer": result.marketer}
        for name, m in models:
            document[name] = {"highest": m.highest, "average": m.average, "unique": m.unique,
                              "at_risk": m.at_risk(args.threshold)}
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
        return 0
    what = "release" if result.release else "table"
    out = [f"{what} {result.relation}: {result.rows} records in {result.classes} classes over "
           f"{', '.join(result.qid)}" + (f" ({result.suppressed} suppressed rows left out)" if result.suppressed else "")]
    for name, m in models:
        out += [f"{name}:", f"  highest risk       {m.highest:.4f}", f"  average risk       {m.average:.4f}",
                f"  unique records     {m.unique:.4f}", f"  records at risk    {m.at_risk(args.threshold):.4f} "
                f"(risk > {args.threshold:g})"]
    if result.marketer is not None:
        out.append(f"marketer:\n  expected re-identified share {result.marketer:.4f}")
    sys.stdout.write("\n".join(out) + "\n")
    return 0
