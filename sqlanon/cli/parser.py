"""The argument parser of the ``sqlanon`` command: one subparser per command, each added by its
module (``register``); a request's flags come from :mod:`sqlanon.request.schema`
(:mod:`sqlanon.cli.options`)."""

from __future__ import annotations

import argparse
import sys

from .. import __version__
from . import anonymize, apply, demo, hierarchy, macros, report, risk, verify
from .common import UsageError, _Exit


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that raises instead of exiting, so :func:`sqlanon.cli.main` returns the
    status."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see '{self.prog} --help')")

    def exit(self, status: int = 0, message: str | None = None) -> None:  # type: ignore[override]
        if message:
            sys.stderr.write(message)
        raise _Exit(status)


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
    for register in (demo.register, anonymize.register, verify.register, anonymize.register_explain, report.register,
                     apply.register, risk.register, hierarchy.register, macros.register):
        register(sub)
    return parser
