"""``sqlanon anonymize`` and ``sqlanon explain``: a request from flags and a release file,
published (and written with ``--out``, :func:`sqlanon.export`) or explained."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from ..api import Request, request_of
from ..errors import InputError
from ..exporting import publish_and_write, write
from ..pipeline import Release
from ..publish import manifest
from ..request.config import ConfigError, ReleaseConfig
from .common import ProgressLine, UsageError, engine_name, opened
from .options import engine_options, release_file_help, request_options
from .outputs import check_out, inputs_of
from .request import request_of_args
from .words import cli_words


def register(sub: Any) -> None:
    """Add ``anonymize`` to ``sub``."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser(
        "anonymize", formatter_class=fmt, help="publish a k-anonymous view of a table (sqlanon.anonymize)",
        usage="sqlanon anonymize DB TABLE --qid COLS --k N [options]\n"
              "       sqlanon anonymize FILES --qid COLS --k N --out FILE [options]\n"
              "       sqlanon anonymize [DB [TABLE]] --config RELEASE.toml [options]",
        description="Publish a k-anonymous multidimensional recoding of TABLE in DB as a view, with its\n"
                    "rules relation (sqlanon.anonymize), verified before it is handed over.\n\n"
                    "FILES (a Parquet, CSV or JSON path or glob) without DB: the files are anonymized in an\n"
                    "in-memory DuckDB and the published table is written to --out; nothing else is kept.\n"
                    "With --config the request comes from a TOML release file; flags override its values.",
        epilog="examples:\n"
               "  sqlanon anonymize hospital.duckdb patients --qid age,zip,sex --k 10\n"
               "  sqlanon anonymize postgresql://me@dbhost/hospital patients --qid age,zip --k 10\n"
               "  sqlanon anonymize hospital.duckdb patients --qid age,nation --k 50 \\\n"
               "      --hierarchy nation=nation.csv --view patients_public --replace\n"
               "  sqlanon anonymize patients.parquet --qid age,zip --k 10 --out public.parquet\n"
               "  sqlanon anonymize --engine spark --spark-master yarn hospital patients --qid age,zip --k 10 \\\n"
               "      --key patient_id\n"
               "  sqlanon anonymize hospital.duckdb patients --qid age,zip --k 20 --sensitive diagnosis \\\n"
               "      --l 3 --diversity recursive --c 2 --variance cost=1e6 --target hiv --criterion infogain\n"
               "  sqlanon anonymize --config release.toml --k 20\n\n" + release_file_help(),
    )
    p.add_argument("db", nargs="?", metavar="DB",
                   help="DuckDB database file (must exist) or postgresql:// URL (with --engine spark: the Spark "
                        "database), or FILES")
    p.add_argument("table", nargs="?", metavar="TABLE", help="table or view (schema.table accepted), or files")
    request_options(p)
    p.add_argument("--out", metavar="FILE",
                   help="also write the published relation to FILE (.parquet, .csv, .tsv, .json, .jsonl, "
                        ".ndjson; .gz for text), checked before any work; required for FILES without DB. "
                        "If writing fails, the release is undone: the database is left as it was")
    p.add_argument("--json", action="store_true", help="print the Release as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress line on stderr")
    engine_options(p)
    p.set_defaults(run=_anonymize)



def register_explain(sub: Any) -> None:
    """Add ``explain`` to ``sub``."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser(
        "explain", formatter_class=fmt, help="validate a request and print the SQL it would run",
        usage="sqlanon explain DB TABLE --qid COLS --k N [options]\n"
              "       sqlanon explain FILES --qid COLS --k N [options]\n"
              "       sqlanon explain [DB [TABLE]] --config RELEASE.toml [options]",
        description="Validate an anonymize request against the database (sqlanon.request.spec.resolve) and print\n"
                    "the SQL each step runs, in the engine's dialect, without running anything that writes\n"
                    "(the database is opened read-only; Spark has no read-only mode: nothing is written there\n"
                    "either). Statements marked [ran] are the read-only lookups explain itself ran; per-level\n"
                    "statements are shown for the root level; values that depend on the data are said to.\n"
                    "The steps are numbered in the order they run; a step the request does not need (a\n"
                    "snapshot of a table with row ids, say) is left out.",
        epilog=release_file_help(),
    )
    p.add_argument("db", nargs="?", metavar="DB",
                   help="DuckDB database file or postgresql:// URL (with --engine spark: the Spark database), or FILES")
    p.add_argument("table", nargs="?", metavar="TABLE", help="table or view")
    request_options(p)
    engine_options(p)
    p.set_defaults(run=_explain)


# -- anonymize --------------------------------------------------------------------------------
def _anonymize(args: argparse.Namespace) -> int:
    request = request_of_args(args)
    in_memory = engine_name(args, request.database) == "duckdb" and request.database is None
    out = Path(args.out) if args.out else None
    if out is not None:
        check_out(out, request.replace, inputs_of(args, request))
    if in_memory and out is None:
        raise UsageError("files without a database are anonymized in memory: pass --out FILE to keep the result "
                         "(or name a database: sqlanon anonymize DB FILES ...)")
    req = built(request)
    with opened(args, request.database, read_only=False) as con:
        with ProgressLine(quiet=args.quiet or args.json) as progress:
            if out is not None and not in_memory:
                release = publish_and_write(con, req, out, progress)
            else:
                release = req.run(con, progress)
                if out is not None:  # in memory: nothing outlives the command, whatever happens
                    write(con, release.view, out)
        recorded = manifest.read(con, release.rules)  # the criterion and constraints the library chose
    if args.json:
        document = release_document(release)
        document["criterion"] = recorded.criterion
        document["constraints"] = list(recorded.constraints)
        document["in_memory"] = in_memory  # the release itself was not kept
        document["out"] = str(out) if out is not None else None
        sys.stdout.write(json.dumps(document, indent=2, default=str) + "\n")
    else:
        write_summary(sys.stdout, release, out_file=out, in_memory=in_memory,
                       criterion=recorded.criterion, constraints=recorded.constraints)
    return 0


def built(config: ReleaseConfig) -> Request:
    """The :class:`~sqlanon.Request` of the flags and the release file; an argument of the
    algorithm or a privacy model they build wrongly is a usage error in the flags' words."""
    try:
        return request_of(config)
    except ConfigError:
        raise
    except (InputError, ValueError) as e:
        where = f"{config.path}: " if config.path else ""
        raise UsageError(f"{where}{cli_words(str(e))}") from None


def release_document(release: Release) -> dict[str, Any]:
    """The Release as a JSON-ready dict (the algorithm with its name; its notes name the command
    line's flags)."""
    document = {**dataclasses.asdict(release), "notes": [cli_words(note) for note in release.notes]}
    if release.algorithm is not None:
        document["algorithm"] = {"name": release.algorithm.name, **document["algorithm"]}
    return document


def write_summary(
    stream: TextIO, release: Release, *, out_file: Path | None = None, in_memory: bool = False,
    criterion: str | None = None, constraints: Sequence[str] = (),
) -> None:
    """The release as aligned ``label  value`` lines."""
    kind = (f"view of a snapshot of {release.table}" if release.materialized
            else f"live view of {release.table}, key {', '.join(release.key or ())}")
    where = ", in memory, not kept" if in_memory else ""
    rows = [
        ("published", f"{release.view} ({kind}{where})"),
        ("rules", release.rules),
    ]
    if release.rowmap:
        rows.append(("row map", release.rowmap))
    if release.hierarchies:
        rows.append(("hierarchies", release.hierarchies))
    if out_file is not None:
        rows.append(("written to", str(out_file)))
    rows += [
        ("QIs", ", ".join(release.qid)),
        ("rows", f"{release.rows:,}"),
        ("classes", f"{release.partitions:,} ({release.regions:,} rules)"),
        ("k", f"{release.k} required, {release.k_achieved:,} achieved (smallest class, verified)"),
    ]
    rows += [(f"QID {','.join(q.qid)}", f"k={q.k} required, {q.achieved:,} achieved (verified)")
             for q in release.verification.qids]
    if release.suppression is not None:
        rows.append(("suppression limit", release.suppression.describe()))
    told = release.outcome.summary(release.suppressed) if release.outcome is not None else []
    rows += [line for line in told if line[0] != "partitioning"]
    bounds = {q: m for q, m in getattr(release, "published", {}).items() if m != "data"}
    if bounds:
        rows.append(("published bounds", ", ".join(f"{q}: {m}" for q, m in bounds.items())))
    rows += [line for line in told if line[0] == "partitioning"]
    others = [c for c in constraints if not c.startswith("k-anonymity(")]
    if others:
        rows.append(("constraints", "; ".join(others) + " (verified)"))
    if criterion is not None:
        rows.append(("criterion", criterion))
    rows.append(("elapsed", f"{release.elapsed:.2f} s"))
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        stream.write(f"{label:<{width}}  {value}\n")
    for note in release.notes:  # the library's words, with the command line's flags
        stream.write(f"note: {cli_words(note)}\n")


# -- explain ----------------------------------------------------------------------------------
def _explain(args: argparse.Namespace) -> int:
    request = request_of_args(args)
    req = built(request)
    if req.algorithm is not None and req.algorithm.record().get("strategy") == "sample":
        raise UsageError("explain shows the statements of --strategy levels; Rothko-S's statements depend on "
                         "its sample (run anonymize and read the report's partitioning line)")
    with opened(args, request.database, read_only=True) as con:
        text = req.explain(con)
    sys.stdout.write(text)
    return 0
