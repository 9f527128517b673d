"""The ``sqlanon`` command. Each subcommand maps onto one entry point of the Python API, and has
a module of its own here (:mod:`sqlanon.cli.anonymize`, :mod:`~sqlanon.cli.verify`, ...); the
flags of a request are generated from :mod:`sqlanon.request.schema` (:mod:`sqlanon.cli.options`).

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

import os
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from ..errors import InputError, SqlanonError
from ..exporting import FORMATS as OUT_FORMATS
from ..request.config import ConfigError
from .common import UsageError, _Exit, isatty
from .macros import install_macros, macros_path
from .parser import build_parser
from .words import FLAGS, cli_words

__all__ = ["FLAGS", "OUT_FORMATS", "UsageError", "build_parser", "cli_words", "install_macros", "macros_path", "main"]


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
        return isatty(self.stream)

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

def _error(e: BaseException, status: int) -> int:
    message = str(e).split("\n-- while running:", 1)[0]  # EngineError: the SQL is not for the terminal
    if isinstance(e, OSError) and e.filename is not None:
        message = f"{e.strerror or e}: {e.filename}"
    if isinstance(e, InputError) and not isinstance(e, ConfigError):  # a release file's errors name its keys
        message = cli_words(message)
    line = " ".join(part.strip() for part in message.splitlines() if part.strip())
    sys.stderr.write(f"sqlanon: error: {line or type(e).__name__}\n")
    return status

