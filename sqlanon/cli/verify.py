"""``sqlanon verify``: :func:`sqlanon.verify`, listing the violating classes."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import sys
from typing import Any, TextIO

from ..model.privacy import KAnonymity, PrivacyModel
from ..publish.verify import Verification, verify
from ..publish.violations import Violations, violations
from .common import UsageError, files_alone, is_data_path, opened, split_names
from .options import engine_options, verify_options
from .request import privacy_of

#: Violating classes listed by ``sqlanon verify`` (the rest are counted).
MAX_LISTED = 20


def register(sub: Any) -> None:
    """Add the command's subparser to ``sub``."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser(
        "verify", formatter_class=fmt, help="check k-anonymity of a table or view (sqlanon.verify)",
        usage="sqlanon verify DB RELATION --qid COLS --k N [constraints] [--class-column COL] [--json]\n"
              "                     [engine options]\n"
              "       sqlanon verify FILES --qid COLS --k N [constraints] [--class-column COL] [--json]\n"
              "constraints: [--sensitive COLS --l L [--diversity entropy|distinct|recursive] [--c C]]\n"
              "             [--variance COL=V ...]",
        description="Check that every equivalence class of RELATION over the QIs holds at least N rows, with\n"
                    "one SQL query (sqlanon.verify). A QI published as a range may be named by its base\n"
                    "name: age stands for age_min, age_max. NULLs group together. With --sensitive and --l\n"
                    "every class must also be l-diverse in each sensitive column (entropy l-diversity unless\n"
                    "--diversity says otherwise), with --variance COL=V its variance of COL at least V.\n"
                    "Each check is reported on its own line -- ok or FAILED, with the achieved value of the\n"
                    f"worst class -- and each failed one lists its violating classes, worst first (at most\n"
                    f"{MAX_LISTED}; all are counted). For a sqlanon release the class column and the\n"
                    "suppressed rows are read from its manifest: rows with a NULL class form no class, and\n"
                    "each must be fully generalized, at most the release's suppression limit of them.\n"
                    "The database is opened read-only (Spark has no read-only mode: nothing is written there\n"
                    "either).\n\n"
                    "Exit status: 0 every check holds, 1 one fails, 2 usage or input error (0 exactly when\n"
                    "sqlanon.verify says ok).",
        epilog="examples:\n  sqlanon verify hospital.duckdb patients_anon --qid age,zip,sex --k 10\n"
               "  sqlanon verify hospital.duckdb patients_anon --qid age,zip,sex --k 100 --l 3 --sensitive diagnosis\n"
               "  sqlanon verify hospital.duckdb patients_anon --qid age,zip --k 10 --sensitive diagnosis --l 2 \\\n"
               "      --diversity distinct --variance cost=1e6 --json",
    )
    p.add_argument("db", metavar="DB", help="DuckDB database file or postgresql:// URL (with --engine spark: the "
                                           "Spark database), or FILES (Parquet/CSV/JSON) without DB")
    p.add_argument("relation", nargs="?", metavar="RELATION", help="table or view to check")
    verify_options(p)
    p.add_argument("--json", action="store_true",
                   help="print the result as JSON: the Verification, the failed checks and each one's violating "
                        "classes")
    engine_options(p)
    p.set_defaults(run=_verify)


# -- verify -----------------------------------------------------------------------------------
def _verify(args: argparse.Namespace) -> int:
    qid = split_names(args.qid)
    if args.relation is None:
        if not is_data_path(args.db):
            raise UsageError(f"missing RELATION after DB {args.db!r} (or give FILES alone)")
        database, relation = files_alone(args, args.db)
    else:
        database, relation = args.db, args.relation
    constraints: list[PrivacyModel] = privacy_of(args).constraints
    with opened(args, database, read_only=True) as con:
        result = verify(con, relation, qid, args.k, class_column=args.class_column, constraints=constraints)
        # Per check, the worst class's value and the violating classes, worst first (a release's
        # suppressed rows, as verify judges them, in no class).
        listed = functools.partial(violations, con, relation, qid, limit=MAX_LISTED, class_column=result.class_column)
        k_classes = listed(KAnonymity(args.k)) if result.violating else None
        details = [listed(c) for c in constraints]
    failed = list(result.failures())  # the status is verify's own verdict: ok
    if args.json:
        document = {"relation": relation, "holds": result.ok, "failed": failed, **dataclasses.asdict(result),
                    "violating_classes": _listed(k_classes)}
        document["checks"] = [
            {**dataclasses.asdict(check), "measure": detail.measure, "worst": detail.worst,
             "violating_classes": _listed(detail) if not check.ok else []}
            for check, detail in zip(result.checks, details)
        ]
        sys.stdout.write(json.dumps(document, indent=2, default=str) + "\n")
    else:
        _write_verification(sys.stdout, relation, result, k_classes)
        _write_suppressed(sys.stdout, result)
        for check, detail in zip(result.checks, details):
            _write_check(sys.stdout, check.ok, detail)
        for q in result.qids:  # a single-dimensional release's QIDs, as its manifest records them
            verdict = "ok" if q.ok else "FAILED"
            below = f", {q.violating:,} groups below k" if not q.ok else ""
            sys.stdout.write(f"{verdict}: QID {', '.join(q.qid)}: k={q.k}, smallest group {q.achieved:,}{below}\n")
        checks = 1 + len(constraints) + len(result.qids) + _suppression_checks(result)
        if checks > 1:
            sys.stdout.write(f"ok: {relation}: all {checks} checks hold\n" if result.ok else
                             f"FAILED: {relation}: {len(failed)} of {checks} checks fail: {'; '.join(failed)}\n")
    return 0 if result.ok else 1


def _listed(found: Violations | None) -> list[dict[str, Any]]:
    """Violating classes for JSON: ``size``, ``values`` (the class columns) and, for a
    constraint, ``value`` (its measure)."""
    if found is None:
        return []
    k = found.measure == "rows"
    return [{"size": c.size, **({} if k else {"value": c.value}), "values": dict(c.key)} for c in found.classes]


def _write_check(out: TextIO, ok: bool, found: Violations) -> None:
    """One constraint's verdict with its achieved (worst) value, then its violating classes."""
    worst = "no classes" if found.worst is None else f"worst class {found.worst:.4g} ({found.measure})"
    tail = f", {found.violating:,} violating classes" if found.violating else ""
    out.write(f"{'ok' if ok else 'FAILED'}: {found.constraint}: {worst}{tail}\n")
    if not ok and found.classes:
        _write_classes(out, f"violating classes of {found.constraint}", found, [found.measure, "size"],
                       lambda c: [f"{c.value:.4g}", f"{c.size:,}"])


def _write_classes(out: TextIO, title: str, found: Violations, first: list[str], cells) -> None:
    """``title (shown, order):`` and the listed classes as an aligned table."""
    listed = found.classes
    order = "smallest first" if found.measure == "rows" else "worst first"
    shown = f"{len(listed)} of {found.violating:,}, {order}" if found.violating > len(listed) else order
    out.write(f"{title} ({shown}):\n")
    header = [*first, *listed[0].key]
    rows = [[*cells(c), *("NULL" if v is None else str(v) for v in c.key.values())] for c in listed]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        out.write("  " + "  ".join(c.rjust(w) if i < len(first) else c.ljust(w)
                                   for i, (c, w) in enumerate(zip(row, widths))).rstrip() + "\n")


def _suppression_checks(r: Verification) -> int:
    """The checks of a release's suppressed rows (:func:`_write_suppressed`): fully generalized,
    and within the limit its manifest records."""
    return (1 + (r.suppression_limit is not None)) if r.release and r.unplaced else 0


def _write_suppressed(out: TextIO, r: Verification) -> None:
    """A release's suppressed rows (class column NULL): in no class, so not judged by k; each
    must be fully generalized, and the recoding's at most its suppression limit."""
    if not _suppression_checks(r):
        return
    problems = []
    if r.leaked:
        problems.append(f"{r.leaked:,} not fully generalized")
    if r.suppression_limit is not None and r.recoded > r.suppression_limit:
        problems.append(f"{r.recoded:,} suppressed by the recoding, more than its limit of {r.suppression_limit:,}")
    limit = f", limit {r.suppression_limit:,}" if r.suppression_limit is not None else ""
    what = f"{r.unplaced:,} suppressed rows ({r.class_column} NULL{limit})"
    out.write(f"FAILED: {what}: {'; '.join(problems)}\n" if problems else f"ok: {what}: fully generalized\n")


def _write_verification(out: TextIO, relation: str, r: Verification, listed: Violations | None) -> None:
    """The k-anonymity verdict (the other checks have lines of their own)."""
    over = ", ".join(r.columns)
    problems = []
    if r.violating:
        problems.append(f"{r.violating:,} of {r.classes:,} classes have fewer than {r.k} rows (smallest {r.k_achieved:,})")
    if r.unplaced and not r.release:
        problems.append(f"{r.unplaced:,} rows have no equivalence class")
    if not r.classes and not (r.release and r.unplaced):
        problems.append("it has no rows")
    if not problems:
        out.write(f"ok: {relation} is {r.k}-anonymous over {over}: {r.classes:,} classes, "
                  f"smallest {r.k_achieved:,}, {r.rows:,} rows\n")
        return
    out.write(f"FAILED: {relation} is not {r.k}-anonymous over {over}: {'; '.join(problems)}; {r.rows:,} rows\n")
    if listed is not None and listed.classes:
        _write_classes(out, "violating classes", listed, ["size"], lambda c: [f"{c.size:,}"])
