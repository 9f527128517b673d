"""Errors raised by sqlanon.

Every error is a :class:`SqlanonError`; the subclasses say which part of the request was wrong
so that callers (and the command line) can react without parsing messages. Input errors are
raised before any object is created in the database.
"""

from __future__ import annotations

import difflib
import os
import sys
import warnings
from collections.abc import Iterable


class SqlanonError(Exception):
    """Base class of every error sqlanon raises."""


class InputError(SqlanonError, ValueError):
    """The request is malformed: a bad parameter, an impossible requirement."""


class UnknownTableError(InputError):
    """The named table or view does not exist."""


class UnknownColumnError(InputError):
    """A named column does not exist in the table."""


class UnsupportedTypeError(InputError):
    """A quasi-identifier has a type sqlanon cannot generalize."""


class HierarchyError(InputError):
    """A generalization hierarchy is malformed or misses values of the data."""


class ObjectExistsError(InputError):
    """An output name collides with an existing table, view or column."""


class RecodingError(InputError):
    """The request combines ``recoding="single"`` (top-down refinement) with something it does
    not support, or several QIDs (``qids=``) with the multidimensional recoding."""


class RemovedOptionError(InputError):
    """A keyword of an earlier API: the message names the object that takes it now."""


class ExportError(InputError):
    """An output file that cannot be written (:func:`sqlanon.export`): an unknown format, a
    directory, a missing or read-only directory, or a file in the way without ``replace=True``."""


class ReadOnlyError(InputError):
    """The database the request would write to (a release, an applied table) is read-only."""


class EngineError(SqlanonError):
    """The database rejected a statement; the message carries the SQL that failed."""

    def __init__(self, message: str, sql: str) -> None:
        super().__init__(f"{message}\n-- while running:\n{sql}")
        self.sql = sql


class SparkEnvironmentError(SqlanonError):
    """The Spark executors' Python cannot run sqlanon's code (it cannot start, cannot import
    sqlanon or its dependencies, or imports another version): found by one small job before a
    run on Spark does any work (:mod:`sqlanon.engine.spark_env`). The message names the fix."""


class VerificationError(SqlanonError):
    """The published view failed its independent privacy check (it has been dropped)."""


class FrameError(InputError):
    """:func:`sqlanon.anonymize_frame` was given something that is not a pandas DataFrame or a
    PyArrow table, or a frame whose column names a database cannot hold."""


class PrivacyWarning(UserWarning):
    """Something was published that does not meet the privacy requirement one might assume.

    Raised through :func:`warnings.warn`, never as an exception: e.g. :func:`sqlanon.apply`
    recoding new rows with a release's rules, which does not make them k-anonymous. Filter it
    with ``warnings.simplefilter("error", sqlanon.PrivacyWarning)`` to make it fatal.
    """


class TextOrderWarning(UserWarning):
    """A text QI without a hierarchy is ordered by its text: a range of codes such as
    ``'A41'..'A42'`` takes in ``'A410'`` (code-point order), rarely what a category means.

    Warned once per such QI when a request is resolved (before any work); the fix is a
    hierarchy for the QI (:mod:`sqlanon.hierarchies` builds one: ``ordering`` to keep an order
    of your choosing, ``masking`` for codes). Silence it with
    ``warnings.simplefilter("ignore", sqlanon.TextOrderWarning)`` when text order is meant.
    """


def warn(warning: Warning) -> None:
    """:func:`warnings.warn` attributed to the first caller outside sqlanon, as Python 3.12's
    ``skip_file_prefixes`` does: the message names the user's line, and Python's default filter
    shows it once per line of theirs."""
    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame, level = sys._getframe(1), 2  # level 2: warn's caller
    while frame.f_back is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1
    warnings.warn(warning, stacklevel=level)


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """A ``did you mean ...?`` hint followed by the available names, for error messages."""
    options = sorted(choices)
    close = difflib.get_close_matches(name, options, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    shown = ", ".join(repr(o) for o in options[:50])
    more = f" (and {len(options) - 50} more)" if len(options) > 50 else ""
    return f"{hint} Available: {shown}{more}."
