"""The ``sqlanon`` command. Each subcommand maps onto one entry point of the Python API.

=================  ===================================================================
``demo``           :func:`sqlanon.anonymize` on the bundled Adult data (in memory)
``anonymize``      :func:`sqlanon.anonymize` (flags, or a TOML release file:
                   :mod:`sqlanon.request.config`); files in, files out with ``--out``
``verify``         :func:`sqlanon.verify`, listing the violating classes
``explain``        :func:`sqlanon.request.spec.resolve` plus the SQL each step would run
``report``         :func:`sqlanon.release.report.report`: HTML, Markdown or JSON
``apply``          :func:`sqlanon.release.apply.apply`: recode another table with a release's rules
``install-macros`` runs ``sql/macros.sql``: the checks as DuckDB table macros
=================  ===================================================================

DB is a DuckDB database file or a ``postgresql://`` URL; with ``--engine spark`` it names the
Spark database to work in, the session opened by :func:`sqlanon.engine.spark_session`
(``--spark-master``, ``--spark-conf``; a cluster's own settings come from ``spark-defaults.conf``
and ``spark-submit`` as usual). What is DuckDB's alone -- data files read in place, the SQL
macros -- is refused on the other engines.

Exit status: 0 on success, 1 when a check fails (or the database fails), 2 for usage and input
errors. Errors are one line on stderr (``sqlanon: error: ...``), never a traceback, in the
command line's words: the library's messages name its keyword arguments (``pass replace=True``),
which :func:`cli_words` turns into the flags (``pass --replace``). A standard output closed early
(``sqlanon ... | head -1``) is not an error: the command finishes quietly with its own status.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import glob
import json
import os
import re
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from sqlglot import exp

from . import __version__, hierarchies
from .publish import manifest
from .engine import sqlgen as g
from .api import Request, anonymize, request_of
from .pipeline import Release
from .release.apply import Applied, apply
from .algorithms import ALGORITHMS
from .request.config import (
    CRITERIA,
    DATA_SUFFIXES,
    DIVERSITIES,
    KEY_PATHS,
    MODEL_KEYS,
    SCHEMA,
    ConfigError,
    QIConfig,
    ReleaseConfig,
    check_request,
    load_config,
    privacy_constraints,
)
from .model.privacy import DISTANCES, KAnonymity, PrivacyModel
from .engine import POSTGRES_URLS, connect, engine_for, spark_session
from .errors import InputError, PrivacyWarning, SqlanonError
from .model.partition import Progress
from .release.report import FORMATS, collect, render
from .release.risk import check_threshold, risk
from .publish.pipeline import set_aside
from .publish.verify import Verification, verify
from .publish.violations import Violations, violations

#: Violating classes listed by ``sqlanon verify`` (the rest are counted).
MAX_LISTED = 20
#: ``--out`` formats by file suffix: (DuckDB COPY format, extra COPY options).
OUT_FORMATS: dict[str, tuple[str, tuple[tuple[str, Any], ...]]] = {
    ".parquet": ("PARQUET", ()),
    ".csv": ("CSV", (("HEADER", True),)),
    ".tsv": ("CSV", (("HEADER", True), ("DELIMITER", "\t"))),
    ".json": ("JSON", (("ARRAY", True),)),
    ".jsonl": ("JSON", ()),
    ".ndjson": ("JSON", ()),
}
#: The flags of the API's keyword arguments, for :func:`cli_words` (``constraints=`` has no
#: flag of its own: --diversity and --variance build the constraints).
FLAGS = {
    "replace": "--replace", "view": "--view", "memory_rows": "--memory-rows", "class_column": "--class-column",
    "sensitive": "--sensitive", "l": "--l", "k": "--k", "target": "--target", "criterion": "--criterion",
    "selections": "--select", "hierarchies": "--hierarchy", "privacy": "--diversity/--variance/--t-closeness",
    "enforce": "--enforce", "key": "--key", "algorithm": "--algorithm", "qids": "--qids", "max_steps": "--max-steps",
    "max_seconds": "--max-seconds", "published": "--published", "metric": "--metric", "suppression": "--suppression",
    "seed": "--seed", "budget": "--budget", "iterations": "--iterations", "strategy": "--strategy",
    "sample_rows": "--sample-rows", "confidence": "--confidence",
}
# keyword=  (not inside a constraint's description such as "l-diversity('s', l=2)", nor a name)
_KEYWORD = re.compile(r"(?<![\w.'\"(-])(?<!, )(?P<key>" + "|".join(FLAGS) + r")=(?P<value>True\b|\[\.\.\.\])?(?P<next>\S?)")
# bare multi-word identifiers, unambiguous without '=': "memory_rows must be ..."
_BARE = re.compile(r"(?<![\w.'\"-])(?P<key>memory_rows|class_column)\b(?!=)")
#: The engines of ``--engine``.
ENGINES = ("duckdb", "postgres", "spark")
#: The QIs of ``sqlanon demo``: age is numeric, the others use the bundled ARX hierarchies.
DEMO_QID = ("age", "sex", "race", "marital-status", "education", "native-country", "workclass", "occupation")


class UsageError(Exception):
    """A malformed command line (exit status 2)."""


class _Exit(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that raises instead of exiting, so :func:`main` returns the status."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see '{self.prog} --help')")

    def exit(self, status: int = 0, message: str | None = None) -> None:  # type: ignore[override]
        if message:
            sys.stderr.write(message)
        raise _Exit(status)


# -- entry point ------------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``sqlanon`` command line and return its exit status.

    Args:
        argv: the arguments after the program name (default ``sys.argv[1:]``).
    """
    parser = build_parser()
    stdout = sys.stdout
    sys.stdout = guard = _ClosedPipeGuard(stdout)  # type: ignore[assignment]
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
        if not getattr(args, "run", None):
            parser.print_help(sys.stderr)
            return 2
        return args.run(args)
    except _Exit as e:
        return e.status
    except (UsageError, InputError) as e:  # InputError includes ConfigError
        return _error(e, 2)
    except SqlanonError as e:  # VerificationError, EngineError (the database's own errors)
        return _error(e, 1)
    except OSError as e:
        return _error(e, 2)
    except KeyboardInterrupt:
        sys.stderr.write("\nsqlanon: interrupted\n")
        return 130
    finally:
        guard.flush()  # now, so that a reader gone early cannot fail the interpreter's exit
        sys.stdout = stdout


class _ClosedPipeGuard:
    """Standard output that tolerates its reader going away (``sqlanon ... | head -1``).

    The first ``BrokenPipeError`` marks the stream closed: later writes are dropped, and the
    real descriptor is pointed at ``os.devnull`` so that Python's own flush at exit does not
    report it either (the recipe of the ``signal`` module's documentation). The command itself
    carries on -- its database work is done or committed either way -- and returns its status.
    """

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.broken = False

    def write(self, text: str) -> int:
        if not self.broken:
            try:
                self.stream.write(text)
            except BrokenPipeError:
                self._close()
        return len(text)

    def flush(self) -> None:
        if not self.broken:
            try:
                self.stream.flush()
            except BrokenPipeError:
                self._close()
            except (AttributeError, ValueError):  # a stream without flush, or already closed
                pass

    def isatty(self) -> bool:
        return _isatty(self.stream)

    def _close(self) -> None:
        self.broken = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.stream.fileno())
            os.close(devnull)
        except (AttributeError, OSError, ValueError):  # no real descriptor (a test's stream)
            pass

    def __getattr__(self, name: str) -> Any:  # encoding, fileno, ... of the real stream
        return getattr(self.stream, name)


def cli_words(message: str) -> str:
    """A library message in the command line's words: its keyword arguments become flags.

    >>> cli_words("a view named 'x' already exists; pass replace=True to overwrite it or choose another view= name")
    "a view named 'x' already exists; pass --replace to overwrite it or choose another --view name"
    >>> cli_words("sensitive= and l= go together; memory_rows must be at least 0; k=501 is larger")
    '--sensitive and --l go together; --memory-rows must be at least 0; --k 501 is larger'
    >>> cli_words("the whole table does not satisfy entropy l-diversity('s', l=9)")
    "the whole table does not satisfy entropy l-diversity('s', l=9)"
    """
    def keyword(m: re.Match[str]) -> str:
        flag = FLAGS[m.group("key")]
        after = m.group("next")
        return flag + (" " + after if after and after not in ",;:.)]" else after)

    return _BARE.sub(lambda m: FLAGS[m.group("key")], _KEYWORD.sub(keyword, message))


def _error(e: BaseException, status: int) -> int:
    message = str(e).split("\n-- while running:", 1)[0]  # EngineError: the SQL is not for the terminal
    if isinstance(e, OSError) and e.filename is not None:
        message = f"{e.strerror or e}: {e.filename}"
    if isinstance(e, InputError) and not isinstance(e, ConfigError):  # a release file's errors name its keys
        message = cli_words(message)
    line = " ".join(part.strip() for part in message.splitlines() if part.strip())
    sys.stderr.write(f"sqlanon: error: {line or type(e).__name__}\n")
    return status


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``sqlanon`` command (one subparser per subcommand)."""
    fmt = argparse.RawDescriptionHelpFormatter
    parser = _Parser(
        prog="sqlanon", formatter_class=fmt,
        description="Anonymize DuckDB, PostgreSQL or Spark tables in SQL: k-anonymous multidimensional recoding\n"
                    "(Mondrian).",
        epilog="Run 'sqlanon COMMAND --help' for the options of a command.\n"
               "Exit status: 0 ok, 1 a check failed (or the database failed), 2 usage or input error.",
    )
    parser.add_argument("--version", action="version", version=f"sqlanon {__version__}")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")

    p = sub.add_parser(
        "demo", formatter_class=fmt, help="anonymize the bundled UCI Adult data in memory",
        description="Load the bundled UCI Adult data (30,162 rows) into an in-memory DuckDB, anonymize it\n"
                    "(QIs: age as a number; sex, race, marital-status, education, native-country,\n"
                    "workclass, occupation through the bundled ARX hierarchies) and print a report.",
    )
    p.add_argument("--k", type=int, default=10, metavar="N", help="every class holds at least N rows (default 10)")
    p.set_defaults(run=_demo)

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
               "  sqlanon anonymize --config release.toml --k 20\n\n" + _release_file_help(),
    )
    p.add_argument("db", nargs="?", metavar="DB",
                   help="DuckDB database file (must exist) or postgresql:// URL (with --engine spark: the Spark "
                        "database), or FILES")
    p.add_argument("table", nargs="?", metavar="TABLE", help="table or view (schema.table accepted), or files")
    _request_options(p)
    p.add_argument("--out", metavar="FILE",
                   help="also write the published relation to FILE (.parquet, .csv, .tsv, .json, .jsonl, "
                        ".ndjson; .gz for text), checked before any work; required for FILES without DB. "
                        "If writing fails, the release is undone: the database is left as it was")
    p.add_argument("--json", action="store_true", help="print the Release as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress line on stderr")
    _engine_options(p)
    p.set_defaults(run=_anonymize)

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
    p.add_argument("--qid", action="append", required=True, metavar="COLS",
                   help="quasi-identifier columns, comma-separated (repeatable)")
    p.add_argument("--k", type=int, required=True, metavar="N", help="the required smallest class size")
    p.add_argument("--class-column", metavar="COL",
                   help="a column every row must have; NULLs fail the check (default: a release's own class "
                        "column, from its manifest, whose NULLs are its suppressed rows)")
    _privacy_options(p)
    p.add_argument("--json", action="store_true",
                   help="print the result as JSON: the Verification, the failed checks and each one's violating "
                        "classes")
    _engine_options(p)
    p.set_defaults(run=_verify)

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
        epilog=_release_file_help(),
    )
    p.add_argument("db", nargs="?", metavar="DB",
                   help="DuckDB database file or postgresql:// URL (with --engine spark: the Spark database), or FILES")
    p.add_argument("table", nargs="?", metavar="TABLE", help="table or view")
    _request_options(p)
    _engine_options(p)
    p.set_defaults(run=_explain)

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
    _engine_options(p)
    p.set_defaults(run=_report)

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
    _engine_options(p)
    p.set_defaults(run=_apply)

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
    _engine_options(p)
    p.set_defaults(run=_risk)

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
    p.add_argument("builder", metavar="BUILDER", choices=HIERARCHY_BUILDERS,
                   help=f"one of {', '.join(HIERARCHY_BUILDERS)}")
    p.add_argument("db", metavar="DB", help="DuckDB database file or postgresql:// URL (with --engine spark: the "
                                            "Spark database); ':memory:' for files as TABLE")
    p.add_argument("table", metavar="TABLE", help="a table or view, or (DuckDB) Parquet/CSV/JSON files")
    p.add_argument("column", metavar="COLUMN", help="the column whose values become the leaves")
    p.add_argument("-o", "--out", required=True, type=Path, metavar="FILE", help="the ARX file to write")
    p.add_argument("--replace", action="store_true", help="overwrite FILE if it exists")
    p.add_argument("--width", type=float, help="intervals: the first level's width")
    p.add_argument("--start", type=float, help="intervals: where the first interval starts")
    p.add_argument("--bins", type=int, help="quantiles: how many intervals at the first level")
    p.add_argument("--fanout", default="2", metavar="N[,N...]",
                   help="intervals, quantiles, ordering: nodes joined per level (one number, or one per level)")
    p.add_argument("--order", metavar="FILE", type=Path,
                   help="ordering: a file with every value in order, one per line (default: sorted)")
    p.add_argument("--mask", default="*", help="masking: the character that replaces a digit (default *)")
    p.add_argument("--step", type=int, default=1, help="masking: characters masked per level (default 1)")
    p.add_argument("--levels", default="month,year,decade", help="dates: the levels, fine to coarse")
    _engine_options(p)
    p.set_defaults(run=_hierarchy)

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
    _engine_options(p)
    p.set_defaults(run=_install_macros)
    return parser


def _request_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="RELEASE.toml",
                   help="read the request from a TOML release file (see sqlanon.config); flags override it")
    p.add_argument("--qid", action="append", metavar="COLS",
                   help="quasi-identifier columns, comma-separated (repeatable)")
    p.add_argument("--k", type=int, metavar="N", help="every published class holds at least N rows")
    p.add_argument("--hierarchy", action="append", default=[], metavar="COL=PATH",
                   help="ARX hierarchy CSV (or table name) for a categorical QI (repeatable)")
    p.add_argument("--view", metavar="NAME", help="name of the published view (default TABLE_anon)")
    p.add_argument("--replace", action="store_true",
                   help="replace an earlier sqlanon release of that name (never any other object), and --out")
    p.add_argument("--key", metavar="COLS",
                   help="column(s) identifying a source row, comma-separated: the release is a live view that "
                        "stays fail-closed while the table changes (default: the table's declared primary or "
                        "unique key; without one a view of a snapshot is published)")
    p.add_argument("--class-column", metavar="NAME",
                   help="name of the equivalence-class column (default eq_class, or eq_class_1 ... if taken)")
    _privacy_options(p)
    p.add_argument("--target", action="append", default=[], metavar="COLS",
                   help="workload target(s): class labels (InfoGain) and/or numeric columns (Regression); "
                        "without --criterion their types choose, so an integer-coded label means Regression")
    p.add_argument("--criterion", choices=CRITERIA,
                   help="the split criterion: median (no --target), infogain (the --target columns are class "
                        "labels, whatever their type), regression (numeric --target columns) or selection "
                        "(Selection Mondrian: needs --select; inside the query regions the --target columns "
                        "choose). With --select, median/infogain/regression are the criterion inside the query "
                        "regions. Default: from the --target columns' types, median without them")
    p.add_argument("--select", action="append", default=[], metavar="PREDICATE",
                   help="a selection analysts will run, SQL over the QIs, e.g. \"age > 40 AND sex = 'M'\" "
                        "(repeatable): Selection Mondrian first minimizes its imprecision")
    p.add_argument("--memory-rows", type=int, metavar="N",
                   help="finish partitions of at most N rows in memory (0: all in SQL; default: DuckDB memory_limit / 1000 bytes, 2,000,000 on other engines)")
    p.add_argument("--strategy", choices=("auto", "levels", "sample"),
                   help="levels: Rothko-T (SQL levels, then in memory); sample: Rothko-S (the tree grown on a "
                        "seeded sample, the table repartitioned once, splits that fail on the full data pruned); "
                        "auto (default): sample when the table has at least 10M rows and more than 8 times --memory-rows")
    p.add_argument("--sample-rows", type=int, metavar="N", help="rows of a Rothko-S sample (default: --memory-rows)")
    p.add_argument("--confidence", type=float, metavar="P",
                   help="confidence of Rothko-S's hypothesis tests (default 0.95)")
    p.add_argument("--algorithm", choices=tuple(ALGORITHMS),
                   help="mondrian: multidimensional (the default); topdown: single-dimensional top-down "
                        "refinement (every QI cut the same way in every row; --criterion score or infogain with "
                        "one --target, the LM loss without); genetic: Iyengar's genetic algorithm; optimal: the "
                        "optimal full-domain generalization (every QI needs a --hierarchy)")
    p.add_argument("--qids", action="append", metavar="COLS:K",
                   help="with --algorithm topdown: one QID with its own k, e.g. education,sex:4 (repeatable, "
                        "instead of --qid/--k)")
    p.add_argument("--max-steps", type=int, metavar="N", help="with --algorithm topdown: stop after N refinements")
    p.add_argument("--max-seconds", type=float, metavar="S", help="with --algorithm topdown: stop after S seconds")
    p.add_argument("--published", action="append", metavar="MODE|COL=MODE",
                   help="what an ordered QI's _min/_max publish: data (each class's own extremes, the default), "
                        "domain (the cut points; NULL for an open end, so the column's extremes never appear) or "
                        "hierarchy (a numeric QI's --hierarchy intervals); COL=MODE per QI (repeatable)")
    p.add_argument("--metric", metavar="M", help="what --algorithm genetic (LM, CM) or optimal (also DM, AECS, Loss, "
                                                  "Precision, Entropy) minimizes; default CM with --target, else LM")
    p.add_argument("--suppression", type=float, metavar="F",
                   help="the fraction of rows that may be suppressed (default 0): Mondrian spends it as a local "
                        "budget down the tree, --algorithm genetic/optimal as a limit")
    p.add_argument("--seed", type=int, metavar="N",
                   help="the seed of --algorithm genetic and of --strategy sample's sample (default 0)")
    p.add_argument("--budget", type=float, metavar="S", help="with --algorithm genetic: stop after S seconds")
    p.add_argument("--iterations", type=int, metavar="N", help="with --algorithm genetic: stop after N iterations")


def _engine_options(p: argparse.ArgumentParser) -> None:
    """--engine and the Spark session's settings, shared by the commands that open DB."""
    group = p.add_argument_group("engine options")
    group.add_argument("--engine", choices=ENGINES,
                       help="the engine of DB (default: postgres for a postgresql:// URL, else duckdb). With spark, "
                            "DB is the Spark database to work in (it must exist); the session is SparkSession.builder"
                            "...getOrCreate(), stopped at the end")
    group.add_argument("--spark-master", metavar="URL",
                       help="with --engine spark: the master, e.g. local[4], spark://host:7077, yarn (default: "
                            "spark.master from spark-defaults.conf or spark-submit, else local[*])")
    group.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                       help="with --engine spark: a session setting, e.g. spark.sql.warehouse.dir=/data/warehouse "
                            "(repeatable). A cluster's own settings come from spark-defaults.conf and spark-submit "
                            "as usual")


def _privacy_options(p: argparse.ArgumentParser) -> None:
    """The constraints besides k, shared by anonymize, explain and verify."""
    p.add_argument("--sensitive", action="append", default=[], metavar="COLS",
                   help="sensitive column(s) for l-diversity, with --l (comma-separated, repeatable)")
    p.add_argument("--l", type=float, metavar="L",
                   help="l-diversity of each --sensitive column: L >= 1 (an integer for distinct and recursive)")
    p.add_argument("--diversity", choices=DIVERSITIES,
                   help="which l-diversity: entropy (default: every class's entropy >= ln L), distinct (at least "
                        "L distinct values) or recursive (recursive (c,L)-diversity, with --c)")
    p.add_argument("--c", type=float, metavar="C",
                   help="with --diversity recursive: in every class the most frequent value occurs fewer than "
                        "C times as often as the L-th most frequent and rarer ones together (C > 0)")
    p.add_argument("--variance", action="append", default=[], metavar="COL=V",
                   help="variance diversity: every class's variance of the numeric column COL is at least V "
                        "(repeatable)")
    p.add_argument("--t-closeness", action="append", default=[], metavar="COL:T[:DISTANCE[:HIERARCHY]]",
                   help="t-closeness: in every class the Earth Mover's Distance of COL's distribution from the "
                        "whole table's is at most T; DISTANCE equal (default), ordered, or hierarchical with an "
                        "ARX hierarchy CSV over COL's values (repeatable)")
    for key, model in MODEL_KEYS.items():  # the models declared by a key of their own
        p.add_argument(f"--{key.replace('_', '-')}", action="append", default=[], dest=key,
                       metavar=f"COL={model.spec_param.upper()}", help=model.spec_help)


def _release_file_help() -> str:
    """The release-file schema, section by section (from :data:`sqlanon.request.config.SCHEMA`)."""
    lines = ["release file (--config RELEASE.toml; flags override its values; see sqlanon.config):"]
    lines += [f"  {section:<12}{', '.join(keys)}" for section, keys in SCHEMA]
    lines += [f"{'':<14}{name}: {', '.join(kind.keys())}" for name, kind in ALGORITHMS.items()]
    lines.append("  e.g. [privacy] k = 10, sensitive = [\"diagnosis\"], l = 3, diversity = \"recursive\", c = 2,")
    lines.append("       variance = { cost = 1e6 }; [workload] target = [\"hiv\"], criterion = \"infogain\"")
    return "\n".join(lines)


# -- demo -------------------------------------------------------------------------------------
def _demo(args: argparse.Namespace) -> int:
    from .datasets import load_adult

    con = connect(None)
    try:
        hierarchies = load_adult(con, "adult")
        with _ProgressLine(quiet=False) as progress:
            release = anonymize(con, "adult", list(DEMO_QID), args.k,
                                hierarchies={q: hierarchies[q] for q in DEMO_QID if q != "age"},
                                progress=progress)
        out = sys.stdout
        out.write(f"UCI Adult (bundled, {release.rows:,} rows) in an in-memory DuckDB\n")
        out.write(f"QIs: age (numeric); {', '.join(DEMO_QID[1:])} (ARX hierarchies)\n\n")
        _write_summary(out, release)
        out.write("\nfirst rows of the published view:\n")
        out.write(str(engine_for(con).relation(exp.select("*").from_(g.table(release.view)).limit(5))))
        out.write("\n" + render(collect(con, release, targets=["salary-class"]), "markdown"))
    finally:
        con.close()
    return 0


# -- anonymize --------------------------------------------------------------------------------
def _anonymize(args: argparse.Namespace) -> int:
    request = _request(args)
    in_memory = _engine(args, request.database) == "duckdb" and request.database is None
    out = Path(args.out) if args.out else None
    if out is not None:
        _check_out(out, request.replace, _inputs(args, request))
    if in_memory and out is None:
        raise UsageError("files without a database are anonymized in memory: pass --out FILE to keep the result "
                         "(or name a database: sqlanon anonymize DB FILES ...)")
    req = _built(request)
    with _opened(args, request.database, read_only=False) as con:
        with _ProgressLine(quiet=args.quiet or args.json) as progress:
            if out is not None and not in_memory:
                release = _publish_and_export(con, req, out, progress)
            else:
                release = req.run(con, progress)
                if out is not None:  # in memory: nothing outlives the command, whatever happens
                    _export(con, release.view, out)
        recorded = manifest.read(con, release.rules)  # the criterion and constraints the library chose
    if args.json:
        document = _release_document(release)
        document["criterion"] = recorded.criterion
        document["constraints"] = list(recorded.constraints)
        document["in_memory"] = in_memory  # the release itself was not kept
        document["out"] = str(out) if out is not None else None
        sys.stdout.write(json.dumps(document, indent=2, default=str) + "\n")
    else:
        _write_summary(sys.stdout, release, out_file=out, in_memory=in_memory,
                       criterion=recorded.criterion, constraints=recorded.constraints)
    return 0


def _built(config: ReleaseConfig) -> Request:
    """The :class:`~sqlanon.Request` of the flags and the release file; an argument of the
    algorithm or a privacy model they build wrongly is a usage error in the flags' words."""
    try:
        return request_of(config)
    except ConfigError:
        raise
    except (InputError, ValueError) as e:
        where = f"{config.path}: " if config.path else ""
        raise UsageError(f"{where}{cli_words(str(e))}") from None


def _check_out(out: Path, replace: bool, inputs: Sequence[tuple[str, str]]) -> None:
    """Everything about ``--out`` that can be checked before the work: a known format, not one of
    the command's ``inputs`` (:func:`_refuse_input`), an existing writable directory, and no file
    in the way unless ``--replace``."""
    folder = out.parent
    if out.is_dir():
        raise UsageError(f"--out {out} is a directory; name a file in it")
    _refuse_input("--out", out, inputs)
    _out_format(out)
    if out.exists() and not replace:
        raise UsageError(f"--out {out} exists; pass --replace to overwrite it")
    if not folder.is_dir():
        raise UsageError(f"--out {out}: no such directory: {folder}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"--out {out}: the directory {folder} is not writable")


def _inputs(args: argparse.Namespace, request: ReleaseConfig) -> list[tuple[str, str]]:
    """The local files ``anonymize`` reads, as ``(what, path)``: the release file, the DuckDB
    database (and its write-ahead log), the source files (a glob expanded), the hierarchy files."""
    found: list[tuple[str, str]] = [("the release file (--config)", str(args.config))] if args.config else []
    database = request.database
    if database is not None and database != ":memory:" and _engine(args, database) == "duckdb":
        found += _database_files(database)
    if _is_data_path(request.table):
        found += [("a source file", f) for f in sorted(glob.glob(request.table, recursive=True)) or [request.table]]
    found += [(f"the hierarchy of {q.name!r}", q.hierarchy) for q in request.qis if q.hierarchy is not None]
    found += [(f"the t-closeness hierarchy of {column!r}", h) for column, _, _, h in request.t_closeness if h]
    return found


def _database_files(database: str) -> list[tuple[str, str]]:
    """A DuckDB database file and its write-ahead log, as :func:`_inputs` lists them."""
    return [("the database", database), ("the database's write-ahead log", f"{database}.wal")]


def _refuse_input(flag: str, out: Path, inputs: Sequence[tuple[str, str]]) -> None:
    """Refuse an output path that is one of the command's ``inputs`` (``(what, path)``): the same
    path once resolved (symlinks followed, ``..`` and ``~`` undone), or the same file by another
    name (a hard link). Writing there would destroy what the command reads."""
    target = out.expanduser().resolve()
    for what, path in inputs:
        given = Path(path).expanduser()
        if given.resolve() == target or (given.exists() and out.exists() and os.path.samefile(given, out)):
            raise UsageError(f"{flag} {out} is {what} ({path}), which this command reads: it is never overwritten; "
                             f"write to another path")


def _publish_and_export(
    con: Any, req: Request, out: Path, progress: Callable[[Progress], None] | None,
) -> Release:
    """Publish the release in the database and write it to ``out``, both or neither.

    ``_check_out`` has ruled out the failures it can foresee; this handles the rest (the COPY
    itself failing). Without objects to replace, the release is published as usual -- in its
    own short transaction -- and, if the COPY fails, exactly the objects this command created
    (the catalog before and after) are dropped again. Dropping the new release would not bring
    back one that ``--replace`` overwrote, so then the whole run happens in one transaction,
    rolled back on failure. That is kept to this case because a transaction around the run also
    keeps every working table of the partitioning until it ends (about twice the memory for a
    large table partitioned in SQL). An engine without transactions (Spark) moves those objects
    aside instead, as :func:`sqlanon.anonymize` does there (:func:`sqlanon.publish.pipeline.set_aside`).
    """
    engine = engine_for(con)
    existing: tuple[tuple[str, str], ...] = ()
    fresh = dataclasses.replace(req, output=dataclasses.replace(req.output, replace=False))
    if req.output.replace:
        try:  # validates the request as anonymize will, and names what --replace overwrites
            existing = tuple(req.resolve(engine).outputs.existing)
        finally:
            engine.cleanup()
    if not existing:
        return _publish_then_export(con, req, out, progress)
    if not engine.transactions:
        with set_aside(engine, existing):  # moved aside: nothing left to replace
            return _publish_then_export(con, fresh, out, progress)
    partial: Path | None = None
    try:
        with engine.transaction():  # one transaction: a failure (or a failed COMMIT) restores the old release
            for name, kind in existing:
                engine.execute(g.drop(name, kind.upper()))
            release = fresh.run(con, progress)  # dropped above
            partial = _copy(con, release.view, out)
    except BaseException:
        if partial is not None:
            partial.unlink(missing_ok=True)
        raise
    _finish(partial, out)
    return release


def _publish_then_export(
    con: Any, req: Request, out: Path, progress: Callable[[Progress], None] | None,
) -> Release:
    """Publish the release, then write it to ``out``; if writing fails, drop exactly the objects
    the release created (the catalog before and after)."""
    before = _persistent_objects(con)
    release = req.run(con, progress)
    try:
        _export(con, release.view, out)
    except BaseException:
        _drop_new_objects(con, before)
        raise
    return release


def _persistent_objects(con: Any) -> set[tuple[str, str, str, str]]:
    """The database's tables and views (not temporary): ``(catalog, schema, name, kind)``. A new
    engine each time: an engine may keep its listing until it writes itself (Spark)."""
    return {tuple(o[:4]) for o in engine_for(con).objects() if not o.temporary}


def _drop_new_objects(con: Any, before: set[tuple[str, str, str, str]]) -> None:
    """Drop, in one transaction, the tables and views that were not there ``before``."""
    created = sorted(_persistent_objects(con) - before, key=lambda o: o[3] != "view")  # views first
    if not created:
        return
    engine = engine_for(con)
    with engine.transaction():
        for catalog, schema, name, kind in created:
            engine.execute(exp.Drop(tables=[g.table(name, schema, catalog)], kind=kind.upper(), exists=True))


def _release_document(release: Release) -> dict[str, Any]:
    """The Release as a JSON-ready dict (the algorithm with its name; its notes name the command
    line's flags)."""
    document = {**dataclasses.asdict(release), "notes": [cli_words(note) for note in release.notes]}
    if release.algorithm is not None:
        document["algorithm"] = {"name": release.algorithm.name, **document["algorithm"]}
    return document


def _request(args: argparse.Namespace) -> ReleaseConfig:
    """The anonymize/explain request: the release file (if any) overridden by the flags."""
    config = load_config(args.config) if args.config else None
    database, table = _locate(args, config)
    qids = _qids(args.qids) if args.qids else (config.qids if config and not (args.qid or args.k) else ())
    if qids and (args.qid or args.k is not None):
        raise UsageError("give either --qid/--k or --qids COLS:K (each QID with its own k), not both")
    qid = _split(args.qid) if args.qid else list(config.qid if config else [])
    if args.qids:
        qid = []
        for columns, _ in qids:
            qid += [c for c in columns if c not in qid]
    if not qid:
        raise UsageError("name the quasi-identifiers with --qid a,b,c (or [[qi]] in --config)")
    k = args.k if args.k is not None else (config.k if config else None)
    if k is None and not qids:
        raise UsageError("--k N is required (or privacy.k in --config)")
    hierarchies = {n: h for n, h in (config.hierarchies if config else {}).items() if n in qid}
    for item in args.hierarchy:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise UsageError(f"--hierarchy takes COL=PATH, got {item!r}")
        if name not in qid:
            raise UsageError(f"--hierarchy {item!r}: {name!r} is not a QI (QIs: {', '.join(qid)})")
        hierarchies[name] = path
    privacy = _privacy(args, config)
    target = _split(args.target, "--target") if args.target else list(config.target if config else [])
    selections = args.select if args.select else list(config.selections if config else [])
    if not all(s.strip() for s in selections):
        raise UsageError("--select: empty predicate")
    criterion = args.criterion if args.criterion is not None else (config.criterion if config else None)
    given = {"target": bool(args.target), "selections": bool(args.select), "criterion": args.criterion is not None}
    check_request(lambda key, message: UsageError(message), _spelling(args, config, given),
                  **privacy, criterion=criterion, target=target, selections=selections)
    return ReleaseConfig(
        table=table,
        **{key: tuple(value) if isinstance(value, list) else value for key, value in privacy.items()},
        target=tuple(target),
        criterion=criterion,
        selections=tuple(selections),
        qis=tuple(QIConfig(n, hierarchies.get(n)) for n in qid),
        k=k,
        database=database,
        view=args.view if args.view is not None else (config.view if config else None),
        replace=args.replace or (config.replace if config else False),
        path=config.path if config else None,
        key=tuple(_split([args.key], "--key")) if args.key else (config.key if config else None),
        class_column=args.class_column if args.class_column is not None else (config.class_column if config else None),
        qids=tuple(qids),
        published=_published(args.published) if args.published else (config.published if config else None),
        suppression=args.suppression if args.suppression is not None else (config.suppression if config else None),
        algorithm=_algorithm(args, config),
        records=config.records if config else (),
    )


def _algorithm(args: argparse.Namespace, config: ReleaseConfig | None) -> tuple[tuple[str, Any], ...]:
    """The algorithm's flat keys: the release file's ``[algorithm]``, each overridden by its flag
    (``--algorithm`` the name; the flags of the algorithms' arguments, :data:`ALGORITHM_FLAGS`)."""
    record = dict(config.algorithm if config else ())
    if args.algorithm is not None:
        if record.get("name", "mondrian") != args.algorithm:
            record = {}  # another algorithm: the file's arguments are not its
        record["name"] = args.algorithm
    record.update({key: getattr(args, key) for key in ALGORITHM_FLAGS if getattr(args, key, None) is not None})
    return tuple(record.items())


#: The arguments of the algorithm objects that have flags of their own (``--memory-rows``, ...).
ALGORITHM_FLAGS = sorted({key for c in ALGORITHMS.values() for key in c.keys()})


def _published(items: Sequence[str]) -> str | tuple[tuple[str, str], ...]:
    """``--published MODE`` (every ordered QI) or ``--published COL=MODE`` (repeatable)."""
    if len(items) == 1 and "=" not in items[0]:
        return items[0].strip()
    pairs = []
    for item in items:
        name, sep, mode = item.rpartition("=")
        if not sep or not name.strip():
            raise UsageError(f"--published takes one MODE, or COL=MODE per QI (repeatable); got {item!r}")
        pairs.append((name.strip(), mode.strip()))
    return tuple(pairs)


def _qids(items: Sequence[str]) -> list[tuple[tuple[str, ...], int]]:
    """``--qids COLS:K`` values as ``(columns, k)`` pairs."""
    out = []
    for item in items:
        columns, sep, k = item.rpartition(":")
        if not sep or not columns or not k.strip().isdigit():
            raise UsageError(f"--qids takes COLS:K, e.g. education,sex:4; got {item!r}")
        out.append((tuple(_split([columns], "--qids")), int(k)))
    return out


def _privacy(args: argparse.Namespace, config: ReleaseConfig | None) -> dict[str, Any]:
    """The constraint settings (``sensitive``, ``l``, ``diversity``, ``c``, ``variance``): each
    flag overrides the release file's key; checked one by one here, together by
    :func:`sqlanon.request.config.check_request`."""
    if args.l is not None and not args.l >= 1:
        raise UsageError(f"--l must be a number >= 1, got {args.l:g}")
    if args.c is not None and not args.c > 0:
        raise UsageError(f"--c must be a number > 0, got {args.c:g}")
    variance = []
    for item in args.variance:
        column, sep, value = item.rpartition("=")
        try:
            v = float(value)
        except ValueError:
            v = float("nan")
        if not sep or not column or not v >= 0 or v == float("inf"):
            raise UsageError(f"--variance takes COL=V with V a number >= 0, got {item!r}")
        variance.append((column, v))

    def pick(flag: Any, key: str, empty: Any = None) -> Any:
        return flag if flag not in (None, []) else (getattr(config, key) if config else empty)

    closeness = [_t_closeness(item) for item in args.t_closeness]
    try:
        models = [model.from_flag(item) for key, model in MODEL_KEYS.items() for item in getattr(args, key)]
    except InputError as e:
        raise UsageError(str(e)) from None

    return {
        "sensitive": _split(args.sensitive, "--sensitive") if args.sensitive else list(config.sensitive if config else []),
        "l": pick(args.l, "l"),
        "diversity": pick(args.diversity, "diversity"),
        "c": pick(args.c, "c"),
        "variance": variance or list(config.variance if config else []),
        "t_closeness": closeness or list(config.t_closeness if config else []),
        "models": models or list(config.models if config else []),
    }


def _t_closeness(item: str) -> tuple[str, float, str, str | None]:
    """``--t-closeness COL:T[:DISTANCE[:HIERARCHY]]`` as ``(column, t, distance, hierarchy)``."""
    column, _, rest = item.partition(":")
    t_text, _, rest = rest.partition(":")
    distance, _, hierarchy = rest.partition(":")
    try:
        t = float(t_text)
    except ValueError:
        t = float("nan")
    if not column or not t >= 0 or (distance or "equal") not in DISTANCES or (
            (distance == "hierarchical") != bool(hierarchy)):
        raise UsageError(f"--t-closeness takes COL:T[:equal|ordered|hierarchical:HIERARCHY.csv] with T >= 0, got {item!r}")
    return column, t, distance or "equal", hierarchy or None


def _spelling(args: argparse.Namespace, config: ReleaseConfig | None, given: dict[str, bool] | None = None):
    """How a usage error names a request key: its flag, or its release-file key when the value
    came from the file (the flags override the file, so a contradiction may mix both)."""
    flags = {"sensitive": "--sensitive", "l": "--l", "diversity": "--diversity", "c": "--c",
             "variance": "--variance", "target": "--target", "criterion": "--criterion", "selections": "--select"}
    from_flags = {"sensitive": bool(args.sensitive), "l": args.l is not None, "diversity": args.diversity is not None,
                  "c": args.c is not None, "variance": bool(args.variance), **(given or {})}

    def spell(key: str) -> str:
        return flags[key] if config is None or from_flags.get(key) else KEY_PATHS[key]

    return spell


def _locate(args: argparse.Namespace, config: ReleaseConfig | None) -> tuple[str | None, str]:
    """(database or None: in-memory, or Spark's current database; source) from DB [TABLE] and
    the release file."""
    db, table = args.db, args.table
    if db is not None and table is not None:
        return db, table
    if db is not None:
        if _is_data_path(db):  # FILES alone: anonymized in memory
            return _files_alone(args, db)
        if config is not None:
            return db, config.table
        raise UsageError(f"missing TABLE after DB {db!r} (or give FILES alone: .parquet, .csv, .json)")
    if config is not None:
        return config.database, config.table
    raise UsageError("name the source: DB TABLE, FILES, or --config RELEASE.toml")


def _files_alone(args: argparse.Namespace, files: str) -> tuple[None, str]:
    """FILES given without DB: read in place by an in-memory DuckDB, so not with another --engine."""
    if args.engine not in (None, "duckdb"):
        raise UsageError(f"{files!r} without DB: files are read in place by an in-memory DuckDB only; with --engine "
                         f"{args.engine} name DB and a table (load the files into a table first)")
    return None, files


def _split(values: Sequence[str], option: str = "--qid") -> list[str]:
    names = [n.strip() for v in values for n in v.split(",")]
    if not all(names):
        raise UsageError(f"{option}: empty column name in {','.join(values)!r}")
    return names


def _is_data_path(name: str) -> bool:
    return "*" in name or Path(name).suffix.lower() in DATA_SUFFIXES


def _engine(args: argparse.Namespace, database: str | None) -> str:
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


def _opened(args: argparse.Namespace, database: str | None, read_only: bool) -> contextlib.AbstractContextManager[Any]:
    """The command's connection to ``database`` on the engine of :func:`_engine`, closed at the end.
    With --engine spark: :func:`sqlanon.engine.spark_session` (DB the Spark database, None its
    current one); Spark has no read-only mode, and the commands that open read-only do not write."""
    if _engine(args, database) == "spark":
        return spark_session(args.spark_master, _spark_conf(args.spark_conf), database)
    return contextlib.closing(_connect(database, read_only))


def _connect(database: str | None, read_only: bool) -> Any:
    """Open a PostgreSQL URL, or an existing DuckDB database file (never create one), or an
    in-memory DuckDB database for None."""
    try:
        return connect(database, read_only=read_only)
    except InputError as e:
        hint = (" (to anonymize files without a database, give them alone and use --out)"
                if database and _is_data_path(database) and "not found" in str(e) else "")
        raise UsageError(f"{e}{hint}") from None


def _out_format(out: Path) -> list[tuple[str, Any]]:
    """COPY options for ``--out``, from the file's suffix (``.gz`` compresses text formats)."""
    suffixes = [s.lower() for s in out.suffixes]
    gzip = bool(suffixes) and suffixes[-1] == ".gz"
    ext = suffixes[-2] if gzip and len(suffixes) > 1 else (suffixes[-1] if suffixes else "")
    if ext not in OUT_FORMATS or (gzip and ext == ".parquet"):
        raise UsageError(f"--out {out}: unknown format; use .parquet, .csv, .tsv, .json, .jsonl or .ndjson "
                         f"(.gz for compressed text)")
    name, extra = OUT_FORMATS[ext]
    return [("FORMAT", name), *extra] + ([("COMPRESSION", "gzip")] if gzip else [])


def _export(con: Any, relation: str, out: Path) -> None:
    """``COPY relation TO out``, written to a temporary file first so a failure leaves nothing."""
    _finish(_copy(con, relation, out), out)


def _copy(con: Any, relation: str, out: Path) -> Path:
    """``COPY relation`` to a hidden file next to ``out`` (removed if the COPY fails); returns it."""
    params = [
        exp.CopyParameter(this=exp.var(key), expression=exp.var(value) if key == "FORMAT" else g.lit(value))
        for key, value in _out_format(out)
    ]
    partial = out.with_name(f".{out.name}.sqlanon-partial")
    try:
        engine_for(con).export(exp.select("*").from_(g.table(relation)), str(partial), params)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return partial


def _finish(partial: Path, out: Path) -> None:
    """Move the written file into place (atomically, in the same directory)."""
    try:
        os.replace(partial, out)
    finally:
        partial.unlink(missing_ok=True)


def _write_summary(
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


class _ProgressLine:
    """``progress=`` callback drawing one updating line on stderr, only when it is a terminal."""

    def __init__(self, quiet: bool) -> None:
        self.stream = sys.stderr
        self.enabled = not quiet and _isatty(self.stream)
        self.drawn = False
        self.last = 0.0

    def __enter__(self) -> Callable[[Progress], None] | None:
        return self if self.enabled else None

    def __call__(self, p: Progress) -> None:
        now = time.monotonic()
        if (p.open_partitions or p.phase in ("lattice", "genetic")) and now - self.last < 0.1:
            return  # at most ten updates a second
        self.last = now
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


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


# -- verify -----------------------------------------------------------------------------------
def _verify(args: argparse.Namespace) -> int:
    qid = _split(args.qid)
    if args.relation is None:
        if not _is_data_path(args.db):
            raise UsageError(f"missing RELATION after DB {args.db!r} (or give FILES alone)")
        database, relation = _files_alone(args, args.db)
    else:
        database, relation = args.db, args.relation
    privacy = _privacy(args, None)
    check_request(lambda key, message: UsageError(message), _spelling(args, None), **privacy,
                  criterion=None, target=(), selections=())
    constraints: list[PrivacyModel] = privacy_constraints(**privacy)
    with _opened(args, database, read_only=True) as con:
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


# -- explain ----------------------------------------------------------------------------------
def _explain(args: argparse.Namespace) -> int:
    request = _request(args)
    req = _built(request)
    if req.algorithm is not None and req.algorithm.record().get("strategy") == "sample":
        raise UsageError("explain shows the statements of --strategy levels; Rothko-S's statements depend on "
                         "its sample (run anonymize and read the report's partitioning line)")
    with _opened(args, request.database, read_only=True) as con:
        text = req.explain(con)
    sys.stdout.write(text)
    return 0


# -- report -----------------------------------------------------------------------------------
#: ``--format`` implied by the suffix of ``-o``.
REPORT_SUFFIXES = {".html": "html", ".htm": "html", ".md": "markdown", ".markdown": "markdown", ".json": "json"}


def _report(args: argparse.Namespace) -> int:
    out = Path(args.output) if args.output else None
    if out is not None:
        _check_report_out(args, out)
    fmt = args.format or (REPORT_SUFFIXES.get(out.suffix.lower()) if out is not None else None) or "markdown"
    columns = {key: _split(value, option) if value is not None else None for key, value, option in (
        ("targets", args.target, "--target"), ("numeric_targets", args.numeric_target, "--numeric-target"),
        ("sensitive", args.sensitive, "--sensitive"))}
    if args.select is not None and not all(s.strip() for s in args.select):
        raise UsageError("--select: empty predicate")
    with _opened(args, args.db, read_only=True) as con:
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
    local = args.db != ":memory:" and _engine(args, args.db) == "duckdb"
    _refuse_input("-o", out, _database_files(args.db) if local else [])
    if out.exists() and not args.replace:
        raise UsageError(f"-o {out} exists; pass --replace to overwrite it")


# -- hierarchy --------------------------------------------------------------------------------
HIERARCHY_BUILDERS = ("intervals", "quantiles", "ordering", "masking", "dates")


def _hierarchy(args: argparse.Namespace) -> int:
    """``sqlanon hierarchy``: read the column's values, build, write the ARX file."""
    out: Path = args.out
    if out.is_dir():
        raise UsageError(f"-o {out} is a directory; name a file in it")
    local = args.db != ":memory:" and _engine(args, args.db) == "duckdb"
    inputs = (_database_files(args.db) if local else []) + ([("the --order file", str(args.order))] if args.order else [])
    if _is_data_path(args.table):
        inputs += [("a source file", f) for f in sorted(glob.glob(args.table, recursive=True)) or [args.table]]
    _refuse_input("-o", out, inputs)
    if out.exists() and not args.replace:
        raise UsageError(f"-o {out} exists; pass --replace to overwrite it")
    try:
        fanout: int | list[int] = [int(x) for x in args.fanout.split(",")]
    except ValueError:
        raise UsageError(f"--fanout must be a number or numbers separated by commas, got {args.fanout!r}") from None
    if len(fanout) == 1:
        fanout = fanout[0]
    needed = {"intervals": ("width",), "quantiles": ("bins",)}.get(args.builder, ())
    for option in needed:
        if getattr(args, option) is None:
            raise UsageError(f"{args.builder} needs --{option}")
    order = None
    if args.order is not None:
        order = [line.strip() for line in args.order.read_text(encoding="utf-8").splitlines() if line.strip()]
    with _opened(args, None if args.db == ":memory:" else args.db, read_only=True) as con:
        values = hierarchies.column_values(con, args.table, args.column)
    build = {
        "intervals": lambda: hierarchies.intervals(values, args.width, start=args.start, fanout=fanout),
        "quantiles": lambda: hierarchies.quantiles(values, args.bins, fanout=fanout),
        "ordering": lambda: hierarchies.ordering(values, fanout, order=order),
        "masking": lambda: hierarchies.masking(values, mask=args.mask, step=args.step),
        "dates": lambda: hierarchies.dates(values, [x.strip() for x in args.levels.split(",")]),
    }
    built = build[args.builder]()
    built.to_csv(out)
    sys.stdout.write(f"{out}: {built.n_leaves:,} values under {built.height} levels ({args.builder})\n")
    return 0


# -- apply ------------------------------------------------------------------------------------
def _apply(args: argparse.Namespace) -> int:
    with _opened(args, args.db, read_only=False) as con, warnings.catch_warnings(record=True) as caught:
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


# -- install-macros ---------------------------------------------------------------------------
def macros_path() -> Path:
    """``sql/macros.sql``: ``sqlanon/sql`` in the wheel, ``../sql`` in a source checkout."""
    return g._sql_dir() / "macros.sql"


def install_macros(con: Any) -> list[tuple[str, list[str]]]:
    """Run ``sql/macros.sql`` on ``con`` (DuckDB: they are DuckDB table macros); return the
    installed macros and their parameters."""
    return engine_for(con).install_macros(macros_path().read_text(encoding="utf-8"), "sqlanon_")


def _install_macros(args: argparse.Namespace) -> int:
    if _engine(args, args.db) == "spark":  # refused before a session starts (the library's words, on postgres)
        raise UsageError("sqlanon's SQL macros are DuckDB table macros; spark cannot install them "
                         "(use the Python API or the CLI on spark)")
    with _opened(args, args.db, read_only=False) as con:
        installed = install_macros(con)
    sys.stdout.write(f"installed {len(installed)} macros into {args.db}:\n")
    for name, params in installed:
        sys.stdout.write(f"  {name}({', '.join(params)})\n")
    return 0


# -- risk -------------------------------------------------------------------------------------
def _threshold(text: str) -> float:
    """``--threshold``: a risk, so a finite number from 0 to 1 (``nan`` would put no record at risk)."""
    try:
        return check_threshold(float(text))
    except (ValueError, InputError):
        raise argparse.ArgumentTypeError(f"must be a number from 0 to 1, got {text!r}") from None


def _risk(args: argparse.Namespace) -> int:
    qid = _split(args.qid) if args.qid else None
    with _opened(args, args.db, read_only=args.population is None) as con:  # a release's population is applied
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
