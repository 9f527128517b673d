"""An engine that records what it is asked to run, for ``sqlanon explain``.

:func:`recording_engine` mixes :class:`Recorder` into the class of the connection's own engine,
so explain records the statements of whichever engine the connection belongs to, rendered in
its dialect, through the same builders a real run uses.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

from sqlglot import exp

from . import engine_for
from . import sqlgen as g
from .base import Engine, Statement


class NeedsData(Exception):
    """A statement needs the result of a write that explain did not run."""


@dataclasses.dataclass
class ExplainEntry:
    """One statement of :func:`explain`: its step, the statement (or a comment), whether
    explain ran it (read-only), and a note."""

    section: str  # the step's title; :func:`explain` numbers the steps that have statements
    statement: Statement
    ran: bool
    note: str = ""


class Recorder:
    """Mixed into an engine's class, so that it records what it is asked to run (see
    :func:`recording_engine`).

    Read-only queries run for real (the catalog lookups and checks of validation, and the domain
    reads); a query reading a temp table that was only recorded runs with that table's
    defining query inlined as a subquery while ``live_reads`` is set, and otherwise raises
    :class:`NeedsData`. Everything else (CREATE, DROP, INSERT, COMMENT, transactions, uploads
    of Python data) is recorded and not run.
    """

    def __init__(self, con: Any) -> None:
        super().__init__(con)
        self.entries: list[ExplainEntry] = []
        self.section = ""
        self.live_reads = True
        self.placeholder = False  # uploads hold stand-in values (the real ones depend on the data)
        self._pending: dict[str, exp.Expression | None] = {}  # recorded temp -> defining query
        self.outputs_free = False  # every output name taken as free (explain writes none of them)

    #: A recorded statement is rendered again when explain prints it: render copies (see
    #: :attr:`Engine.render_in_place`).
    render_in_place = False

    def taken(self, name: str, objects: Any = None) -> list:
        """What creating ``name`` would replace; nothing once :attr:`outputs_free` is set."""
        return [] if self.outputs_free else super().taken(name, objects)  # type: ignore[misc]

    def show(self, statement: Statement, note: str = "") -> None:
        """Record a statement without running it."""
        self.entries.append(ExplainEntry(self.section, statement, False, note))

    def _read(self, statement: Statement) -> Statement:
        """A read-only query to run for real: recorded as run, with recorded temp tables inlined."""
        if not isinstance(statement, exp.Expression):
            return statement
        needed = {t.name for t in statement.find_all(exp.Table)} & set(self._pending)
        if needed and (not self.live_reads or any(self._pending[n] is None for n in needed)):
            self.show(statement, "(its result depends on the data)")
            raise NeedsData(statement)
        self.entries.append(ExplainEntry(self.section, statement, True))
        return self._inline(statement) if needed else statement

    def fetch(self, statement: Statement) -> Any:
        return super().fetch(self._read(statement))  # type: ignore[misc]

    def fetch_described(self, statement: Statement) -> Any:
        return super().fetch_described(self._read(statement))  # type: ignore[misc]

    def fetch_frame(self, statement: Statement) -> Any:
        return super().fetch_frame(self._read(statement))  # type: ignore[misc]

    def execute(self, statement: Statement) -> Any:
        if isinstance(statement, (exp.Query, exp.Describe)):
            return super().execute(self._read(statement))  # type: ignore[misc]
        if isinstance(statement, exp.Create) and statement.kind in ("TABLE", "VIEW") and isinstance(statement.this, exp.Table):
            name = statement.this.name
            if name.startswith(self.prefix) and isinstance(statement.expression, exp.Query):
                self._pending[name] = self._inline(statement.expression)
        self.statements += 1
        self.show(statement)
        return None

    def upload(self, purpose: str, columns: Any, types: Any = None) -> str:
        name = self.temp_name(purpose)
        self._pending[name] = None
        rows = len(next(iter(columns.values()))) if columns else 0
        what = "rows computed by the run" if self.placeholder else f"{rows:,} rows"
        self.show(f"-- upload from Python into temp table {name}: {what} ({', '.join(columns)})")
        return name

    @contextlib.contextmanager
    def transaction(self, undo: Callable[[], None] | None = None) -> Iterator[bool]:
        """Record the transaction a real run opens (its own, or a savepoint in the caller's) and
        its commit; nothing runs. A stop for data explain does not have records no rollback: the
        listing shows what a successful run does."""
        own = not self.in_transaction()
        point = g.ident(f"{self.prefix}publish").sql(self.dialect)
        if own:
            self.show(exp.Transaction())
        elif self.savepoints:
            self.show(f"SAVEPOINT {point}", "inside the caller's transaction")
        else:
            self.show("-- inside the caller's transaction: on an error the run drops what it created")
        yield own
        if own:
            self.show(exp.Commit())
        elif self.savepoints:
            self.show(f"RELEASE SAVEPOINT {point}")

    def upload_placeholder(self, name: str) -> None:
        """Mark ``name`` as a temp table filled from Python with data explain does not have."""
        self._pending[name] = None

    def cleanup(self) -> None:
        while self._temps:
            name = self._temps.pop()
            self.show(g.drop(name, self._kind(name)))

    def _inline(self, query: exp.Expression) -> exp.Expression:
        def swap(node: exp.Expression) -> exp.Expression:
            if isinstance(node, exp.Table) and self._pending.get(node.name) is not None and not node.db:
                alias = node.args.get("alias") or exp.TableAlias(this=g.ident(node.name))
                return exp.Subquery(this=self._pending[node.name].copy(), alias=alias.copy())
            return node

        return query.copy().transform(swap)


def recording_engine(con: Any) -> Any:
    """An engine of ``con``'s kind that records instead of writing (see :class:`Recorder`)."""
    kind = type(engine_for(con))
    cls: type[Engine] = type(f"Recording{kind.__name__}", (Recorder, kind), {})
    return cls(con)
