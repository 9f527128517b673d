"""Around every public call: one caller per connection at a time, and the engine's session.

Entry points take the connection first and are decorated with :func:`serialized`.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import weakref
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, TypeVar


def session(con: Any) -> AbstractContextManager[Any]:
    """The engine's context around one public call (PostgreSQL: autocommit when the caller has
    no transaction open, see :meth:`sqlanon.engine.postgres.PostgresEngine.session`)."""
    con = getattr(con, "con", con)  # an Engine passed on by another entry point
    if (type(con).__module__ or "").startswith("psycopg"):
        from .postgres import PostgresEngine

        return PostgresEngine.session(con)
    return contextlib.nullcontext()


# -- one caller per connection -----------------------------------------------------------------
_LOCKS: weakref.WeakKeyDictionary[Any, threading.RLock] = weakref.WeakKeyDictionary()
_LOCKS_GUARD = threading.Lock()

F = TypeVar("F", bound=Callable[..., Any])


def connection_lock(con: Any) -> AbstractContextManager[Any]:
    """The lock of one connection. A connection has one result set at a time, so two threads
    sharing it would read each other's results; sqlanon's entry points take this lock and run
    one after the other on a connection (re-entrant: an entry point may call another).
    Different connections run in parallel; publication is atomic across them."""
    try:
        with _LOCKS_GUARD:
            lock = _LOCKS.get(con)
            if lock is None:
                lock = _LOCKS[con] = threading.RLock()
        return lock
    except TypeError:  # not a connection at all: the entry point's own check says so
        return contextlib.nullcontext()


def serialized(function: F) -> F:
    """Decorate a public entry point whose first argument is the connection: see
    :func:`connection_lock`."""

    @functools.wraps(function)
    def wrapper(con: Any, *args: Any, **kwargs: Any) -> Any:
        with connection_lock(con), session(con):
            return function(con, *args, **kwargs)

    return wrapper  # type: ignore[return-value]
