"""The Engine: the one boundary between sqlanon and a database.

Everything else in sqlanon builds sqlglot expressions and calls engine methods; an engine
renders them in its dialect, runs them, fetches results as numpy arrays, owns the run's temp
objects and transactions, and answers for what engines spell differently: row identity and
hashing, epochs of temporal values, type names, the catalog, where a manifest is stored,
sampling and threads. One subclass per engine (:mod:`.duckdb`, :mod:`.postgres`); pick one with
:func:`sqlanon.engine.engine_for`.
"""

from __future__ import annotations

import abc
import contextlib
import math
import os
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from sqlglot import exp

from ..errors import EngineError, InputError
from . import sqlgen as g

Statement = exp.Expression | str
#: ``function(b, columns) -> (rows, small)`` of :meth:`Engine.map_groups`.
GroupFunction = Callable[[int, dict[str, np.ndarray]], tuple[dict[str, np.ndarray], dict[str, np.ndarray]]]


@dataclass(frozen=True)
class CatalogObject:
    """A table or view the connection can see, as the catalog spells it.

    ``comment`` is the object's comment (a release's manifest lives on its rules table);
    ``sql`` a view's definition (which relations it reads), None for tables."""

    catalog: str
    schema: str
    name: str
    kind: str  # "table" | "view"
    temporary: bool
    comment: str | None = None
    sql: str | None = None

    def __getitem__(self, i: int) -> Any:  # positional reads, as the catalog rows were tuples
        return (self.catalog, self.schema, self.name, self.kind, self.temporary, self.comment, self.sql)[i]

    @property
    def ref(self) -> exp.Table:
        return g.table(self.name, self.schema, self.catalog)


@dataclass(frozen=True)
class Name:
    """A name sqlanon is about to create, checked by :meth:`Engine.check_names`.

    ``kind``: ``"table"``, ``"view"`` or ``"column"``; ``what``: what the name is, for the error
    (``"the rules relation of view='x'"``); ``remedy``: what the caller can change."""

    name: str
    kind: str
    what: str
    remedy: str


class Engine(abc.ABC):
    """A connection of one engine plus the temp objects of one run.

    Subclasses set :attr:`name` and :attr:`dialect` and implement the abstract methods; the
    shared machinery (rendering, statement counting, temp names, cleanup, the transaction
    helper) lives here.

    Args:
        con: an open connection of the engine's driver; sqlanon never closes it.
    """

    name: ClassVar[str]
    #: The engine's name for people, in messages (``PostgreSQL``).
    title: ClassVar[str]
    dialect: ClassVar[str]
    #: Whether the engine can roll back to a savepoint inside the caller's transaction (else
    #: a failed step inside the caller's transaction is undone by dropping what it created).
    savepoints: ClassVar[bool] = False
    #: Whether the engine has transactions at all (Spark has none: every statement is final, and
    #: a failed step is undone by dropping what it created).
    transactions: ClassVar[bool] = True
    #: Whether rows live in other processes (Spark's executors): :meth:`map_groups` then runs
    #: its function there, and the function must not hold anything of this process.
    distributed: ClassVar[bool] = False
    #: Whether a persistent view may read a temp table or view (Spark refuses to create one).
    views_read_temporary: ClassVar[bool] = True
    #: Whether many small lookup joins go a few QIs per statement (the rules'
    #: :func:`sqlanon.publish.rules.create_rules`, at most ``LOOKUP_ROWS`` rows looked up in
    #: one): an engine that holds every hash table of a statement at once, in a memory budget the
    #: run's temp tables may fill.
    split_lookups: ClassVar[bool] = False
    #: Whether Rothko-S's first round reads the encoding's view over the source instead of a
    #: written working table (:func:`sqlanon.mondrian.encode.reads_work_as_view`): an engine
    #: that applies the sample's filter on the hash (:func:`sqlanon.mondrian.sample.draw`)
    #: before the view's code lookups, so that only the sampled rows are encoded twice.
    #: PostgreSQL encoded every row for the sample (measured before the filter): at 1M Agrawal
    #: rows (``memory_rows`` 100,000) its run took 19.4-19.9 s through the view against 17.0-17.8 s
    #: with the table (the sample step 7.6 s against 2.8 s).
    samples_views: ClassVar[bool] = False
    #: The most rows a run fetches into this process to finish in memory here, encoding them as
    #: it fetches them (:func:`sqlanon.mondrian.encode.reads_work_as_view`), when they also fit
    #: ``memory_rows``. No limit here: the engine's rows come to this process anyway; a
    #: distributed engine's finish otherwise runs where the rows are (:meth:`map_groups`).
    driver_rows: ClassVar[float] = math.inf
    #: Whether a keyless release's snapshot is written in class order (each statement of
    #: :func:`sqlanon.publish.rules._publish_snapshot` sorted by its rows' region, and the one of
    #: :func:`sqlanon.publish.rules._publish_held`; without the sort the held write at 10M
    #: Agrawal rows took 3.9-4.0 s of publication CPU against 3.5-3.6 s with it): an engine
    #: whose grouping and joins then find a class's rows one after another in its caches. The
    #: verification through the view, which groups the rows by their published QIs, took
    #: 4.7 s against 14.3 s at 100M Agrawal rows in DuckDB (0.37 s against 0.74 s at 10M); the
    #: sorts cost about what they save at 10M and 6 s at 100M.
    clusters_snapshot: ClassVar[bool] = False
    #: Whether the small relations a release writes are written sorted: the rules in region
    #: order, the hierarchies by QI, leaf and level. Every reader orders what it reads; the
    #: order only keeps a class's rule (a leaf's path) where a scan finds it next.
    sorts_written: ClassVar[bool] = True

    #: The longest name the engine keeps, in UTF-8 bytes, per kind of object (``"table"``,
    #: ``"view"``, ``"column"``); a kind not listed has no limit. See :meth:`check_names`.
    name_limits: ClassVar[Mapping[str, int]] = {}
    #: What happens to a longer name on this engine, for the error of :meth:`check_names`.
    name_limit_reason: ClassVar[str] = ""

    def __init__(self, con: Any) -> None:
        self.con = con
        self.prefix = f"__sqlanon_{uuid.uuid4().hex[:10]}_"
        self._temps: list[str] = []
        self._views: set[str] = set()  # the temp objects that are views
        self.statements = 0

    # -- rendering and execution -------------------------------------------------------------
    #: Render without sqlglot's defensive copy of the whole tree (a third of the rendering time:
    #: about 0.12 s of a 1M-row DuckDB run's 100 statements). Only where rendering leaves the
    #: tree as it was: every statement is built for one execution, but a dialect's generator may
    #: rewrite a tree in place (PostgreSQL's ``STRING_AGG(... ORDER BY ...)`` rendered a second
    #: time lost its argument). Checked for DuckDB's generator: every statement of runs of each
    #: criterion, constraint, strategy and recoding rendered identically twice.
    render_in_place: ClassVar[bool] = False

    def render(self, statement: Statement) -> str:
        """SQL text of ``statement`` in this engine's dialect."""
        if isinstance(statement, str):
            return statement
        return statement.sql(dialect=self.dialect, copy=not self.render_in_place)

    def execute(self, statement: Statement) -> None:
        """Run one statement; database errors are re-raised as :class:`EngineError` with the SQL."""
        sql = self.render(statement)
        self.statements += 1
        self._run(sql)

    def fetch(self, statement: Statement) -> dict[str, np.ndarray]:
        """Run a query and return its columns as numpy arrays (NULL: NaN in floats, else None)."""
        sql = self.render(statement)
        self.statements += 1
        return self._fetch_numpy(sql)

    def fetch_rows(self, statement: Statement) -> list[tuple[Any, ...]]:
        """Run a query and return its rows as Python tuples (small results only)."""
        return self.fetch_described(statement)[1]

    def fetch_described(self, statement: Statement) -> tuple[list[str], list[tuple[Any, ...]]]:
        """Run a query and return its column names and rows."""
        sql = self.render(statement)
        self.statements += 1
        return self._fetch_rows(sql)

    def fetch_frame(self, statement: Statement) -> Any:
        """Run a query and return a pandas DataFrame."""
        import pandas as pd

        columns = self.fetch(statement)
        return pd.DataFrame({k: v for k, v in columns.items()})

    def scalar(self, statement: Statement) -> Any:
        """Run a query and return the first column of its first row."""
        rows = self.fetch_rows(statement)
        return rows[0][0] if rows else None

    @abc.abstractmethod
    def _run(self, sql: str) -> None:
        """Execute SQL text, translating the driver's errors into :class:`EngineError`."""

    @abc.abstractmethod
    def _fetch_numpy(self, sql: str) -> dict[str, np.ndarray]:
        """Columns of a query's result as numpy arrays, fetched in bulk (never row by row)."""

    @abc.abstractmethod
    def _fetch_rows(self, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        """Column names and rows of a (small) query result."""

    def run_script(self, text: str) -> None:
        """Run SQL text of several statements as the engine reads it (installing macros)."""
        raise EngineError(f"{self.name} does not run SQL scripts", text[:200])

    # -- transactions -------------------------------------------------------------------------
    @abc.abstractmethod
    def in_transaction(self) -> bool:
        """Whether the caller has a transaction open on the connection."""

    def _begin(self) -> None:
        self.execute(exp.Transaction())

    def begin_snapshot(self) -> exp.Expression:
        """The statement beginning a transaction whose every statement reads the database as
        its first did (:meth:`transaction` with ``snapshot``). Here: a plain ``BEGIN`` (DuckDB's
        transactions read one snapshot)."""
        return exp.Transaction()

    def _commit(self) -> None:
        self.execute(exp.Commit())

    def _rollback(self) -> None:
        self.execute(exp.Rollback())

    def _savepoint(self) -> str:
        raise NotImplementedError

    def _release_savepoint(self, name: str) -> None:
        raise NotImplementedError

    def _rollback_to(self, name: str) -> None:
        raise NotImplementedError

    @contextlib.contextmanager
    def transaction(self, undo: Callable[[], None] | None = None, *, snapshot: bool = False) -> Iterator[bool]:
        """All statements inside run as one unit: the engine's own transaction (committed at the
        end, rolled back on any error), or, when the caller has one open, inside the caller's —
        where an error rolls back to a savepoint if the engine has them, else ``undo`` (drop
        what the block created) runs. Yields whether the transaction is this block's own. An
        engine without transactions runs ``undo`` on any error. ``snapshot``: an own
        transaction reads one snapshot of the database in every statement
        (:meth:`begin_snapshot`); a caller's is what it is (:meth:`reads_fetched_in_place`
        checks it)."""
        if self.transactions and not self.in_transaction():
            self.execute(self.begin_snapshot()) if snapshot else self._begin()
            try:
                yield True
            except BaseException:
                with contextlib.suppress(Exception):
                    self._rollback()
                raise
            self._commit()
            return
        if self.savepoints and self.transactions:
            point = self._savepoint()
            try:
                yield False
            except BaseException:
                with contextlib.suppress(Exception):
                    self._rollback_to(point)
                raise
            self._release_savepoint(point)
            return
        try:
            yield False
        except BaseException:
            if undo is not None:
                with contextlib.suppress(Exception):
                    undo()
            raise

    def lost_race(self, error: EngineError) -> bool:
        """Whether ``error`` is the database refusing this run's objects because another
        transaction created the same names at the same time (DuckDB: a write-write conflict)."""
        return "conflict" in str(error).lower()

    def step_done(self, step: str) -> None:
        """A step of the run (a lap of its timings: ``"encode"``, ...) ended. Nothing here; the
        recording engine of ``sqlanon explain`` titles the statements it recorded by it."""

    def check_environment(self) -> None:
        """Refuse, before any work, when what runs outside the database cannot run sqlanon's
        code (Spark: the executors' Python, :mod:`.spark_env`). Nothing to check here."""

    @contextlib.contextmanager
    def planned_for(self, rows: int) -> Iterator[None]:
        """The statements inside plan for a run over a source of ``rows`` rows (the engine's
        own settings, restored after). Nothing by default."""
        yield

    @abc.abstractmethod
    def check_writable(self, what: str) -> None:
        """Refuse, before any work, when the current database cannot be written
        (:class:`~sqlanon.errors.ReadOnlyError` naming where ``what`` would be written)."""

    def check_names(self, names: Iterable[Name]) -> None:
        """Refuse, before any work, a name longer than the engine keeps (:attr:`name_limits`,
        counted in UTF-8 bytes, as the engines count: ``é`` is two). PostgreSQL would cut it
        without an error, so a release would name objects it cannot find again, or two derived
        names (``<qi>_min``, ``<qi>_max``) would become one.

        Raises:
            InputError: naming the first such name, what it is, its length and the limit.
        """
        for n in names:
            limit = self.name_limits.get(n.kind)
            size = len(n.name.encode("utf-8"))
            if limit is not None and size > limit:
                raise InputError(
                    f"{n.what} would be named {n.name!r}, which is {size} bytes long (UTF-8); {self.title} keeps "
                    f"{n.kind} names of at most {limit} bytes ({self.name_limit_reason}): {n.remedy}")

    # -- temp objects -------------------------------------------------------------------------
    def temp_name(self, purpose: str) -> str:
        """A run-unique name for a temp object; it is dropped by :meth:`cleanup`."""
        name = f"{self.prefix}{purpose}"
        self._temps.append(name)
        return name

    def create_table(self, name: str, query: exp.Expression, *, temporary: bool = True,
                     replace: bool = False) -> None:
        """``CREATE [OR REPLACE] [TEMP] TABLE name AS query``."""
        self.execute(g.create_table_as(name, query, temporary=temporary, replace=replace))

    def create_temp(self, purpose: str, query: exp.Expression) -> str:
        """A new temp table holding ``query``'s result; returns its name."""
        name = self.temp_name(purpose)
        self.create_table(name, query)
        return name

    def create_temp_view(self, purpose: str, query: exp.Expression) -> str:
        """A new temp view of ``query`` (a relation read once need not be written); returns its
        name. Dropped like the temp tables."""
        name = self.temp_name(purpose)
        self._views.add(name)
        self.execute(g.create_view(name, query, temporary=True))
        return name

    @abc.abstractmethod
    def upload(self, purpose: str, columns: Mapping[str, np.ndarray],
               types: Mapping[str, str] | None = None) -> str:
        """Create a temp table from numpy columns (in bulk) and return its name. ``types``: the
        house types of some columns (else the arrays' own, :func:`sqlanon.engine.frames.sql_type`)."""

    def hold(self, name: str, columns: Mapping[str, np.ndarray]) -> bool:
        """Make ``name`` readable as ``columns`` in this session, writing nothing (no table,
        not even a temporary one), for :mod:`sqlanon.engine.recording`'s reads of an upload
        explain did not run; :meth:`let_go` ends it. False where the engine cannot: explain then
        reads the upload as its values, inlined. Here: cannot (DuckDB can)."""
        return False

    def let_go(self, name: str) -> None:
        """End :meth:`hold` of ``name``."""

    def codes_here(self, data_type: str) -> bool:
        """Whether a QI of the house type ``data_type`` is coded in this process from its
        fetched values when the run's rows are fetched anyway (:func:`sqlanon.mondrian.encode.codes_here`),
        rather than by a code table built and joined in the database. Here: never; each engine
        names its own (DuckDB integers; PostgreSQL integers and floats; Spark integers, floats
        and text)."""
        return False

    @abc.abstractmethod
    def create_from_frame(self, name: str, frame: Any, *, replace: bool = False,
                          schema: str | None = None) -> None:
        """Create a persistent table ``name`` from a pandas DataFrame (datasets, tests)."""

    def create_beside(self, name: str, rows: exp.Select, rid: exp.Column, ids: np.ndarray,
                      columns: Mapping[str, np.ndarray], order: str | None = None) -> None:
        """Create the persistent table ``name``: each row of ``rows`` (a query over one stored
        relation, its unique integer row id ``rid``) followed by the ``columns`` at its id
        (``columns[c][j]`` belongs to the row whose id is ``ids[j]``; every row has one), in
        the order of the column ``order`` if given. Here: the arrays uploaded, then joined to
        the rows by id in one statement."""
        values = self.upload("beside", {"rid": ids, **columns})
        u = exp.alias_(g.table(values), g.ident("u"), table=True)
        query = rows.copy().join(u, on=exp.EQ(this=g.col("rid", "u"), expression=rid.copy()), join_type="left")
        query = query.select(*[g.alias(g.col(c, "u"), c) for c in columns], copy=False)
        if order is not None:
            query = query.order_by(g.col(order), copy=False)
        self.execute(g.create_table_as(name, query, temporary=False))
        self.drop_temp(values)

    def map_groups(
        self, rows: Callable[[int | None], exp.Expression], groups: int, function: GroupFunction,
        kept: Sequence[str], small: Sequence[str], purpose: str,
    ) -> tuple[str, dict[str, np.ndarray]]:
        """Run the pure ``function(b, columns)`` on the rows of each group ``b`` in
        ``0..groups-1`` where the rows are, keep its first result (integer columns ``kept``, one
        row per input row at most) as a temp table and return the table's name and the second
        results (integer columns ``small``: a few rows per group) concatenated, by group, in the
        integer types the function gave them (a distributed engine may widen them to int64).

        ``rows(b)`` is the query of group ``b``'s rows; ``rows(None)`` the rows of every group
        with the group number in a column ``b``. Here each group is fetched into this process
        in turn (so memory holds one group); a distributed engine runs the groups on its
        workers and only the small results come back.
        """
        table: str | None = None
        results: list[dict[str, np.ndarray]] = []
        for b in range(groups):
            out, little = function(b, self.fetch(rows(b)))
            chunk = self.upload(f"{purpose}{b}", {c: out[c] for c in kept})
            if table is None:
                table = chunk
            else:
                self.execute(exp.insert(exp.select("*").from_(g.table(chunk)), g.table(table)))
                self.drop_temp(chunk)
            results.append(little)
        assert table is not None, "map_groups needs at least one group"
        return table, joined(results, small)

    def drop_temp(self, name: str) -> None:
        """Drop one temp table (or view) now (large intermediates are not kept to the end of the run)."""
        self.execute(g.drop(name, self._kind(name)))
        if name in self._temps:
            self._temps.remove(name)

    def _kind(self, name: str) -> str:
        return "VIEW" if name in self._views else "TABLE"

    def cleanup(self) -> None:
        """Drop every temp object of this run; safe to call twice and after errors."""
        while self._temps:
            name = self._temps.pop()
            with contextlib.suppress(Exception):  # a dead connection: nothing left to clean
                self._run(self.render(g.drop(name, self._kind(name))))

    # -- what engines spell differently -------------------------------------------------------
    @abc.abstractmethod
    def row_hash(self, values: Sequence[exp.Expression]) -> exp.Expression:
        """An integer fingerprint of a row's values (NULL-aware), stored at release time so a live
        view notices changed rows."""

    @abc.abstractmethod
    def epoch_us(self, value: exp.Expression, data_type: str) -> exp.Expression:
        """Microseconds since 1970-01-01 of a date or timestamp of the house type ``data_type``
        (``DATE``, ``TIMESTAMP``: wall-clock time read as UTC, ``TIMESTAMP WITH TIME ZONE``: the
        instant), as a number, the same on every engine whatever the session's time zone."""

    @abc.abstractmethod
    def is_infinite(self, value: exp.Expression) -> exp.Expression:
        """A predicate: the DOUBLE ``value`` is ``inf`` or ``-inf``."""

    @abc.abstractmethod
    def is_nan(self, value: exp.Expression) -> exp.Expression:
        """A predicate: the DOUBLE ``value`` is NaN."""

    @abc.abstractmethod
    def code_type(self, size: int) -> str:
        """The narrowest integer type (house spelling) holding codes ``0..size-1``."""

    def row_ids(self, columns: Sequence[str], table: bool) -> exp.Expression:
        """An expression giving every row of a relation a distinct integer, for the snapshot a
        run reads (``table``: the relation is a table; ``columns``: its columns). The ids are no
        identity of the source (the engine may renumber its rows) and the partitioning does not
        depend on them; engines number a table's rows in storage order where they can, so a
        snapshot lists rows in the order they were loaded."""
        return exp.Sub(this=exp.Window(this=exp.RowNumber()), expression=g.lit(1))

    def reads_in_place(self, columns: Sequence[str], table: bool) -> bool:
        """Whether a run may read the source itself, numbered by :meth:`row_ids`, inside one
        transaction instead of copying it into a snapshot first: true when the ids are a column
        of the table's storage that stays fixed while a transaction is open, so every statement
        of the transaction numbers the rows alike. Here: no (a ``row_number()`` over a scan
        numbers them in whatever order each statement reads them)."""
        return False

    def reads_fetched_in_place(self, source: exp.Table) -> bool:
        """Whether a run whose rows are fetched into this process once (the in-memory finish of
        a table within ``memory_rows``, :func:`sqlanon.mondrian.encode.codes_here`) may read the
        table ``source`` itself inside one transaction (:meth:`transaction` with ``snapshot``),
        its rows numbered by :meth:`in_place_ids`, where :meth:`reads_in_place` says no: ids that
        stay fixed while that transaction is open, though they need not be ``0..n-1`` -- such a
        run's ids never leave it (no sample is drawn by them, the published snapshot holds none).
        Here: no."""
        return False

    def in_place_ids(self, columns: Sequence[str]) -> exp.Expression:
        """The row ids of a table read in place (:meth:`reads_in_place`,
        :meth:`reads_fetched_in_place`); ``columns``: its columns. Here: :meth:`row_ids`."""
        return self.row_ids(columns, True)

    def broadcast(self, query: exp.Select, small: Sequence[tuple[str, int]]) -> exp.Select:
        """``query`` with its joins of the relations aliased ``small`` (``(alias, rows)``: a
        lookup table of that many rows) planned as broadcasts where the engine plans joins
        itself no better. Here: unchanged (DuckDB and PostgreSQL plan them well)."""
        return query

    def sample(self, relation: exp.Expression, rows: int, seed: int, key: str = "rid") -> exp.Expression:
        """A query drawing ``rows`` rows of ``relation`` (all of them if it has fewer) uniformly
        at random without replacement, the same rows for the same ``seed`` on every run and
        every engine plan: the rows with the smallest :meth:`seeded_hash` of their unique
        integer ``key`` (ties by the key). A hash behaves as a random permutation of the rows, so
        its first ``rows`` are a simple random sample — what a reservoir sample draws (TR 1590,
        Section 3) — and unlike ``TABLESAMPLE`` or ``rand()`` the draw does not depend on
        threads, partitions or storage order. One scan; the engine keeps a top-``rows`` heap
        (Spark a ``TakeOrderedAndProject``). Rothko-S fetches the same rows with a filter on the
        hash and no sort in the database (:func:`sqlanon.mondrian.sample.draw`)."""
        source = relation if isinstance(relation, exp.Table) else exp.Subquery(
            this=relation, alias=exp.TableAlias(this=g.ident("sampled")))
        return (exp.select(exp.Star()).from_(source)
                .order_by(self.seeded_hash(g.col(key), seed), g.col(key)).limit(rows))

    def seeded_hash(self, key: exp.Expression, seed: int) -> exp.Expression:
        """A hash of the integer ``key`` mixed with ``seed``, in ``[0, 2^HASH_BITS)``, the same
        number on every engine, so a seeded sample (Rothko-S) draws the same rows on DuckDB,
        PostgreSQL and Spark and their releases are identical: two 31-bit halves, each murmur3's
        32-bit finalizer (``x ^= x >> 16; x *= m1; x ^= x >> 13; x *= m2; x ^= x >> 16``) with the
        products taken modulo the prime ``2^31 - 1``, so every intermediate value fits a BIGINT
        and no engine overflows or rounds. The seed picks the offsets added to the key."""
        x = exp.Cast(this=key, to=exp.DataType.build("BIGINT"))
        residue = _mod(exp.Add(this=_mod(x, HASH_PRIME), expression=g.lit(HASH_PRIME)), HASH_PRIME)  # >= 0
        halves = []
        for half, (m1, m2) in enumerate(HASH_MULTIPLIERS):
            offset = (seed * 2_654_435_761 + half * 40_503 + 1) % HASH_PRIME
            h: exp.Expression = _mod(exp.Add(this=residue.copy(), expression=g.lit(offset)), HASH_PRIME)
            for shift, multiplier in ((16, m1), (13, m2), (16, None)):
                h = exp.Paren(this=exp.BitwiseXor(this=h, expression=exp.Paren(
                    this=exp.BitwiseRightShift(this=h.copy(), expression=g.lit(shift)))))
                if multiplier is not None:
                    h = _mod(exp.Mul(this=h, expression=g.lit(multiplier)), HASH_PRIME)
            halves.append(h)
        return exp.Add(this=exp.Mul(this=halves[0], expression=g.lit(2**31)), expression=halves[1])

    def memory_limit(self) -> int | None:
        """The bytes this engine is configured to use, if it says (None: unknown): what the
        default ``memory_rows`` is sized from (:func:`sqlanon.request.spec.default_memory_rows`)."""
        return None

    def usable_memory(self) -> int | None:
        """:meth:`memory_limit`, capped by this machine's RAM (a limit may be set higher, or
        shown as "no limit"); None when the engine does not say."""
        limit = self.memory_limit()
        if limit is not None and hasattr(os, "sysconf") and "SC_PHYS_PAGES" in os.sysconf_names:
            limit = min(limit, os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
        return limit

    def join_rows(self) -> int | None:
        """The most rows of a table-sized join (the published snapshot: the run's rows joined with
        their regions by row id) to run in one statement, or None: no limit, the engine spills
        such joins itself (PostgreSQL's work_mem, Spark's shuffle). See
        :func:`sqlanon.publish.rules.rid_chunks`."""
        return None

    def workers(self) -> int:
        """How many groups of :meth:`map_groups` run at once: one here (fetched in turn)."""
        return 1

    def threads(self) -> int:
        """How many cores this run may use for in-memory work: this process's."""
        return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)

    #: Whether :meth:`file_source` reads data files in place (DuckDB); the others refuse.
    reads_files = False

    def file_source(self, path: str) -> exp.Table:
        """A relation reading data files in place; engines that cannot refuse clearly."""

        raise InputError(f"{path!r} looks like a data file, which only the DuckDB engine reads in place; "
                         f"on {self.name} load it into a table first")

    @abc.abstractmethod
    def export(self, query: exp.Expression, path: str, params: Sequence[exp.CopyParameter]) -> None:
        """Write ``query``'s result to the file ``path`` in the format ``params`` name (DuckDB's
        ``COPY ... TO`` options)."""

    def install_macros(self, script: str, prefix: str) -> list[tuple[str, list[str]]]:
        """Install SQL table macros; only DuckDB has them."""

        raise InputError(f"sqlanon's SQL macros are DuckDB table macros; {self.name} cannot install them "
                         f"(use the Python API or the CLI on {self.name})")

    # -- catalog ------------------------------------------------------------------------------
    @abc.abstractmethod
    def objects(self) -> list[CatalogObject]:
        """Every table and view the connection can see (temp ones included)."""

    @abc.abstractmethod
    def columns(self, catalog: str, schema: str, name: str) -> list[tuple[str, str]]:
        """``(name, type)`` of a relation's columns in order; types in the house spelling
        (DuckDB's, which sqlglot renders in any dialect), so QI kinds are engine-independent."""

    @abc.abstractmethod
    def keys(self, catalog: str, schema: str, name: str) -> list[tuple[str, ...]]:
        """A table's declared keys, PRIMARY KEY first, then UNIQUE constraints."""

    @abc.abstractmethod
    def current(self) -> tuple[str, str]:
        """``(catalog, schema)`` where unqualified new objects are created."""

    #: Whether names differing only in case are one object (DuckDB). PostgreSQL keeps quoted
    #: names apart ("Foo" and foo are two tables), so a collision there is an exact match.
    case_insensitive_names: ClassVar[bool] = True

    def taken(self, name: str, objects: Sequence[CatalogObject] | None = None) -> list[CatalogObject]:
        """The tables and views of the current schema that creating ``name`` there collides
        with (``objects``: the catalog already read, to spare a lookup)."""
        here = self.current()
        fold = str.lower if self.case_insensitive_names else (lambda n: n)
        return [o for o in (self.objects() if objects is None else objects)
                if (o.catalog, o.schema) == here and fold(o.name) == fold(name)]

    @abc.abstractmethod
    def find(self, name: str, suffix: str = "") -> CatalogObject | None:
        """The table or view ``name + suffix`` binds to, as the engine binds a name in SQL."""

    @abc.abstractmethod
    def describe(self, query: exp.Expression) -> list[tuple[str, str]]:
        """``(name, type)`` of a query's columns, house spelling."""

    # -- where a manifest lives --------------------------------------------------------------
    @abc.abstractmethod
    def set_comment(self, table: str, text: str) -> None:
        """Store ``text`` as the comment of the table ``name`` (in the current schema)."""

    def comment(self, found: CatalogObject) -> str | None:
        """The stored comment of a table."""
        return found.comment


def short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."



def joined(parts: list[dict[str, np.ndarray]], columns: Sequence[str]) -> dict[str, np.ndarray]:
    """``{c: the parts' columns c concatenated}``, emptying ``parts`` column by column: each
    column's parts are let go once it is joined, so the parts and the whole are never held at
    once (at 100M rows the leaves of the in-memory finish are 250 MB either way)."""
    out = {c: np.concatenate([part.pop(c) for part in parts]) for c in columns}
    parts.clear()
    return out


#: :meth:`Engine.seeded_hash`: its values are below ``2^HASH_BITS``; products are reduced modulo
#: the Mersenne prime ``HASH_PRIME`` (below 2^31, so a product of two residues is below 2^62).
HASH_BITS = 62
HASH_PRIME = 2**31 - 1
#: murmur3's fmix32 multipliers (reduced modulo ``HASH_PRIME``), and a second pair for the other half.
HASH_MULTIPLIERS = ((0x85EBCA6B % HASH_PRIME, 0xC2B2AE35 % HASH_PRIME), (0x7FEB352D, 0x846CA68B % HASH_PRIME))


def _mod(value: exp.Expression, modulus: int) -> exp.Paren:
    """``(value % modulus)``, parenthesized (operator precedence differs between dialects)."""
    return exp.Paren(this=exp.Mod(this=exp.Paren(this=value), expression=g.lit(modulus)))
