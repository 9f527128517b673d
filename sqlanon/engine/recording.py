"""An engine that records what it is asked to run, for ``sqlanon explain``.

:func:`recording_engine` mixes :class:`Recorder` into the class of the connection's own engine,
so that :func:`sqlanon.pipeline.run` on it records the statements of whichever engine the
connection belongs to, rendered in its dialect, through the same builders a real run uses:
what explain lists is by construction what a run executes.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from sqlglot import exp

from . import engine_for
from . import sqlgen as g
from .base import CatalogObject, Engine, GroupFunction, Statement
from .frames import sql_type

#: The most rows of an upload that the recording keeps to answer reads of it (inlined as
#: ``VALUES``); a read of a larger one depends on data explain does not hold.
INLINE_ROWS = 20_000


class NeedsData(Exception):
    """A statement needs the result of a write that explain did not run."""


@dataclasses.dataclass
class ExplainEntry:
    """One statement of :func:`explain`: the step it belongs to (the name of the run's lap that
    ended it, ``""`` while the step runs), the statement (or a comment), whether explain ran it
    (read-only), and a note."""

    step: str
    statement: Statement
    ran: bool
    note: str = ""


class Recorder:
    """Mixed into an engine's class, so that it records what it is asked to run (see
    :func:`recording_engine`).

    Read-only queries run for real (the catalog lookups and checks of validation, the domain
    reads, the statistics of every level and the rows of the finish), with each table the
    recording created inlined as the query that defines it, and each upload read as the rows the
    engine holds for the session without writing them (:meth:`Engine.hold`: DuckDB), else as its
    values when it has at most :data:`INLINE_ROWS` rows: the run takes the decisions a real run
    takes. Everything else (CREATE, DROP, INSERT, COMMENT, transactions, uploads) is recorded and
    not run; a query that needs a larger upload the engine cannot hold raises :class:`NeedsData`.
    Held uploads keep a deep tree's reads small: inlined as values, every level's statistics
    carried the splits of all the levels above it (Adult, k=5, SQL levels only: 248 s).
    """

    def __init__(self, con: Any) -> None:
        super().__init__(con)
        self.entries: list[ExplainEntry] = []
        self._defined: dict[str, exp.Expression | None] = {}  # recorded object -> defining query
        self._created: dict[str, CatalogObject] = {}  # what the recording created, as the catalog would list it
        self.outputs_free = False  # every output name taken as free (explain writes none of them)
        self.stopped = False  # a read needed data explain does not hold
        self._quiet = False  # a read already recorded (and inlined) by the caller
        self._held: dict[str, exp.Select] = {}  # uploaded name -> its rows as the engine holds them (Engine.hold)
        self._holding: list[str] = []  # the names the engine holds, to let go at the end

    #: A recorded statement is rendered again when explain prints it: render copies (see
    #: :attr:`Engine.render_in_place`).
    render_in_place = False

    def taken(self, name: str, objects: Any = None) -> list:
        """What creating ``name`` would replace; nothing once :attr:`outputs_free` is set."""
        return [] if self.outputs_free else super().taken(name, objects)  # type: ignore[misc]

    def check_writable(self, what: str) -> None:
        """Nothing: explain writes nothing, so a read-only database (``sqlanon explain`` opens it
        so) does not stop it."""

    def step_done(self, step: str) -> None:
        """The run's step ``step`` ended: its statements are the ones recorded since the last."""
        for e in self.entries:
            if not e.step:
                e.step = step

    def show(self, statement: Statement, note: str = "") -> None:
        """Record a statement without running it."""
        self.entries.append(ExplainEntry("", statement, False, note))

    def _read(self, statement: Statement) -> Statement:
        """A read-only query to run for real: recorded as run, with recorded objects inlined."""
        if not isinstance(statement, exp.Expression) or self._quiet:
            return statement
        inlined = self._runnable(statement)
        self.entries.append(ExplainEntry("", statement, True))
        return inlined

    def _runnable(self, statement: exp.Expression) -> exp.Expression:
        """``statement`` inlined (:meth:`_inline`); :class:`NeedsData` when it reads an object
        defined by no query (an upload too large to inline that the engine cannot hold)."""
        inlined = self._inline(statement)
        if any(t.name in self._defined for t in inlined.find_all(exp.Table)):
            self.show(statement, "(its result depends on the data)")
            self.stopped = True
            raise NeedsData(statement)
        return inlined

    def fetch(self, statement: Statement) -> Any:
        return super().fetch(self._read(statement))  # type: ignore[misc]

    def fetch_described(self, statement: Statement) -> Any:
        return super().fetch_described(self._read(statement))  # type: ignore[misc]

    def fetch_frame(self, statement: Statement) -> Any:
        return super().fetch_frame(self._read(statement))  # type: ignore[misc]

    def execute(self, statement: Statement) -> Any:
        if isinstance(statement, (exp.Query, exp.Describe)):
            return super().execute(self._read(statement))  # type: ignore[misc]
        target = statement.this.find(exp.Table) if isinstance(statement, (exp.Create, exp.Insert)) else None
        if isinstance(statement, exp.Create) and target is not None and statement.kind in ("TABLE", "VIEW"):
            query = statement.expression
            self._defined[target.name] = without_ctes(self._inline(query)) if isinstance(query, exp.Query) else None
            catalog, schema = self.current()
            kind = statement.kind.lower()
            self._created[target.name] = CatalogObject(
                catalog, schema, target.name, kind, statement.find(exp.TemporaryProperty) is not None,
                sql=self.render(statement) if kind == "view" else None)
        elif isinstance(statement, exp.Comment) and isinstance(statement.this, exp.Table) \
                and statement.this.name in self._created:
            found = self._created[statement.this.name]
            self._created[found.name] = dataclasses.replace(found, comment=statement.expression.name)
        elif isinstance(statement, exp.Insert) and target is not None \
                and (target.name in self._defined or target.name in self._held):
            # an upload appended to is read as its held rows and what was appended
            held = self._held.pop(target.name, None)
            before, query = held if held is not None else self._defined[target.name], statement.expression
            self._defined[target.name] = (
                exp.union(*(exp.select(exp.Star()).from_(q.subquery(f"part{i}")) for i, q in
                            enumerate((before.copy(), self._inline(query)))), distinct=False)
                if before is not None and isinstance(query, exp.Query) else None)
        self.statements += 1
        self.show(statement)
        return None

    # -- the catalog, with what the recording created --------------------------------------
    def objects(self) -> list[CatalogObject]:
        listed = [o for o in super().objects() if o.name not in self._created]  # type: ignore[misc]
        return listed + list(self._created.values())

    def find(self, name: str, suffix: str = "") -> CatalogObject | None:
        created = self._created.get(name + suffix)
        return created if created is not None and "." not in name else super().find(name, suffix)  # type: ignore[misc]

    def columns(self, catalog: str, schema: str, name: str) -> list[tuple[str, str]]:
        if name in self._created and (catalog, schema) == self.current():  # the catalog a run would read
            query = self._runnable(exp.select(exp.Star()).from_(g.table(name)))
            return self._unrecorded(lambda: super(Recorder, self).describe(query))  # type: ignore[misc]
        return super().columns(catalog, schema, name)  # type: ignore[misc]

    def keys(self, catalog: str, schema: str, name: str) -> list[tuple[str, ...]]:
        if name in self._created and (catalog, schema) == self.current():
            return []
        return super().keys(catalog, schema, name)  # type: ignore[misc]

    def comment(self, found: CatalogObject) -> str | None:
        if found.name in self._created and (found.catalog, found.schema) == self.current():
            return self._created[found.name].comment
        return super().comment(found)  # type: ignore[misc]

    def describe(self, query: exp.Expression) -> list[tuple[str, str]]:
        """Recorded as the ``DESCRIBE`` it is, run with the recorded objects inlined."""
        inlined = self._read(exp.Describe(this=query)).this
        # an engine that describes through a query of its own: not recorded twice
        return self._unrecorded(lambda: super(Recorder, self).describe(inlined))  # type: ignore[misc]

    def _unrecorded(self, read: Callable[[], Any]) -> Any:
        """``read()``, its queries run as they are and not recorded (the caller inlined them)."""
        self._quiet = True
        try:
            return read()
        finally:
            self._quiet = False

    def upload(self, purpose: str, columns: Mapping[str, np.ndarray], types: Mapping[str, str] | None = None) -> str:
        name = self.temp_name(purpose)
        rows = len(next(iter(columns.values()))) if columns else 0
        # Held under a name of its own: a later upload of the same name must not change what the
        # tables defined from this one read (a run's CREATE TABLE ... AS reads it once).
        held = f"{name}__held{len(self._holding)}"
        if columns and self.hold(held, columns):
            self._holding.append(held)
            self._held[name] = held_query(held, columns, types or {}, self.dialect)
            self._defined.pop(name, None)
        else:
            self._held.pop(name, None)
            self._defined[name] = values(columns, types or {}) if rows <= INLINE_ROWS else None
        self.show(f"-- upload from Python into temp table {name}: {rows:,} rows computed by the run "
                  f"({', '.join(columns)})")
        return name

    def map_groups(self, rows: Callable[[int | None], exp.Expression], groups: int, function: GroupFunction,
                   kept: Sequence[str], small: Sequence[str], purpose: str) -> tuple[str, dict[str, np.ndarray]]:
        """Every group in this process (:meth:`Engine.map_groups`), whatever the engine: a
        distributed engine's workers would write."""
        return Engine.map_groups(self, rows, groups, function, kept, small, purpose)  # type: ignore[arg-type]

    def create_beside(self, name: str, rows: exp.Select, rid: exp.Column, ids: np.ndarray,
                      columns: Mapping[str, np.ndarray], order: str | None = None) -> None:
        """Recorded as :meth:`Engine.create_beside`'s upload and join, whatever the engine (an
        engine's own write, such as DuckDB's by position, would run its statement)."""
        Engine.create_beside(self, name, rows, rid, ids, columns, order)  # type: ignore[arg-type]

    @contextlib.contextmanager
    def transaction(self, undo: Callable[[], None] | None = None, *, snapshot: bool = False) -> Iterator[bool]:
        """Record the transaction a real run opens (its own, or a savepoint in the caller's) and
        its commit; nothing runs. A stop for data explain does not have records no rollback: the
        listing shows what a successful run does."""
        own = not self.in_transaction()
        point = g.ident(f"{self.prefix}publish").sql(self.dialect)
        if own:
            self.show(self.begin_snapshot() if snapshot else exp.Transaction())
        elif self.savepoints:
            self.show(f"SAVEPOINT {point}", "inside the caller's transaction")
        else:
            self.show("-- inside the caller's transaction: on an error the run drops what it created")
        yield own
        if own:
            self.show(exp.Commit())
        elif self.savepoints:
            self.show(f"RELEASE SAVEPOINT {point}")

    def cleanup(self) -> None:
        self.step_done("stopped" if self.stopped else "unfinished")
        for held in self._holding:
            self.let_go(held)
        self._holding.clear()
        self._held.clear()
        while self._temps:
            name = self._temps.pop()
            self.show(g.drop(name, self._kind(name)))

    def _inline(self, query: exp.Expression) -> exp.Expression:
        """``query`` with every object the recording defined by a query read as that query."""
        def swap(node: exp.Expression) -> exp.Expression:
            if isinstance(node, exp.Table) and self._defined.get(node.name) is not None:
                alias = node.args.get("alias") or exp.TableAlias(this=g.ident(node.name))
                return exp.Subquery(this=self._defined[node.name].copy(), alias=alias.copy())
            if isinstance(node, exp.Table) and node.name in self._held:
                alias = node.args.get("alias") or exp.TableAlias(this=g.ident(node.name))
                return exp.Subquery(this=self._held[node.name].copy(), alias=alias.copy())
            return node

        return query.copy().transform(swap)


def without_ctes(query: exp.Expression) -> exp.Expression:
    """``query`` with each reference to one of its CTEs replaced by the CTE's query: a
    definition inlined twice into one statement must not define a CTE twice (Spark's SQL, as
    sqlglot writes it, has every CTE at the top)."""
    key = next((k for k in ("with_", "with") if query.args.get(k) is not None), None)
    if key is None:
        return query
    query = query.copy()
    bodies: dict[str, exp.Expression] = {}

    def swap(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Table) and not node.db and node.name in bodies:
            alias = node.args.get("alias") or exp.TableAlias(this=g.ident(node.name))
            return exp.Subquery(this=bodies[node.name].copy(), alias=alias.copy())
        return node

    for cte in query.ctes:  # each may read the ones before it
        bodies[cte.alias] = cte.this.copy().transform(swap)
    query.set(key, None)
    return query.transform(swap)


def held_query(held: str, columns: Mapping[str, np.ndarray], types: Mapping[str, str], dialect: str) -> exp.Select:
    """``SELECT c, CAST(t AS type) AS t, ... FROM held``: a held upload read as the table the run
    uploads (columns in ``types`` cast to their house type, as :meth:`Engine.upload` does)."""
    return exp.select(*[g.alias(exp.Cast(this=g.col(c), to=exp.DataType.build(types[c], dialect=dialect))
                                if c in types else g.col(c), c) for c in columns]).from_(g.table(held))


def values(columns: Mapping[str, np.ndarray], types: Mapping[str, str]) -> exp.Select:
    """``SELECT CAST(c AS type) AS c, ... FROM (VALUES ...)``: uploaded columns as a query (no
    rows: one row of NULLs filtered out)."""
    names = list(columns)
    kinds = {c: types.get(c) or sql_type(pd.Series(np.asarray(columns[c]))) for c in names}
    n = len(next(iter(columns.values()))) if names else 0
    cells = [[_literal(v) for v in _python(np.asarray(columns[c]))] if n else [exp.Null()] for c in names]
    rows = [exp.Tuple(expressions=[cells[j][i] for j in range(len(names))]) for i in range(max(n, 1))]
    table = exp.Values(expressions=rows, alias=exp.TableAlias(this=g.ident("v"), columns=[g.ident(c) for c in names]))
    query = exp.select(*[g.alias(exp.Cast(this=g.col(c, "v"), to=exp.DataType.build(kinds[c], dialect=g.DIALECT)), c)
                         for c in names]).from_(table)
    return query if n else query.where(exp.false())


def _python(array: np.ndarray) -> list[Any]:
    """An array's values as Python values (datetimes as datetimes, not as integers)."""
    return list(pd.Series(array).astype(object)) if array.dtype.kind == "M" else array.tolist()


def _literal(value: Any) -> exp.Expression:
    """A literal of an uploaded value (NaN and infinities as the engine's text casts read them)."""
    if value is pd.NaT:
        return exp.Null()
    if value is None or (isinstance(value, float) and value != value):
        return exp.Null() if value is None else exp.Cast(this=g.lit("NaN"), to=exp.DataType.build("DOUBLE"))
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return exp.Cast(this=g.lit("Infinity" if value > 0 else "-Infinity"), to=exp.DataType.build("DOUBLE"))
    if isinstance(value, (pd.Timestamp, np.datetime64)):
        value = pd.Timestamp(value).to_pydatetime()
    return g.lit(value)


def recording_engine(con: Any) -> Any:
    """An engine of ``con``'s kind that records instead of writing (see :class:`Recorder`)."""
    kind = type(engine_for(con))
    cls: type[Engine] = type(f"Recording{kind.__name__}", (Recorder, kind), {})
    return cls(con)
