"""PostgreSQL through psycopg 3 (``pip install "sqlanon[postgres]"``).

Results come back in bulk through ``COPY (query) TO STDOUT`` as CSV parsed by pandas' C
reader (never row by row); uploads go the other way through ``COPY ... FROM STDIN``. Types are
read from the catalog into the house spelling (:meth:`columns`), so a QI has the same kind on
every engine. Traps measured on PostgreSQL and handled here or in the builders: ``LOG(2, p)`` is
spelled ``LN``, every subquery has an alias, there is no ``CREATE OR REPLACE TABLE``, a view
over a temp object becomes temporary, and a statement costs ~ms, so statements stay per level.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import psycopg
from psycopg import pq
from sqlglot import exp

from ..errors import EngineError, InputError, ReadOnlyError
from . import sqlgen as g
from .base import CatalogObject, Engine, Statement, short
from .frames import sql_type, write_file

#: PostgreSQL type names (``format_type``) -> the house spelling; others are upper-cased as is.
_TYPES = {
    "smallint": "SMALLINT", "integer": "INTEGER", "bigint": "BIGINT", "real": "FLOAT",
    "double precision": "DOUBLE", "numeric": "DECIMAL", "text": "VARCHAR", "boolean": "BOOLEAN",
    "date": "DATE", "timestamp without time zone": "TIMESTAMP",
    "timestamp with time zone": "TIMESTAMP WITH TIME ZONE", "int2": "SMALLINT", "int4": "INTEGER",
    "int8": "BIGINT", "float4": "FLOAT", "float8": "DOUBLE", "bool": "BOOLEAN", "varchar": "VARCHAR",
    "bpchar": "VARCHAR", "timestamp": "TIMESTAMP", "timestamptz": "TIMESTAMP WITH TIME ZONE",
    "name": "VARCHAR",
}
_INTEGERS = {"SMALLINT", "INTEGER", "BIGINT"}
_FLOATS = {"FLOAT", "DOUBLE"}
_NULL = r"\N"
#: The fixed-width house types and their layout in PostgreSQL's binary COPY (big-endian).
_WIRE: dict[str, Any] = {"SMALLINT": ">i2", "INTEGER": ">i4", "BIGINT": ">i8", "FLOAT": ">f4", "DOUBLE": ">f8",
                         "BOOLEAN": "?", "TID": np.dtype([("block", ">u4"), ("item", ">u2")])}
#: A ``tid`` (a row's ``ctid``) as held here: one int64 ``block << 16 | item``, its dtype tagged so
#: that an upload stores it as a ``tid`` again (:meth:`PostgresEngine.upload`).
_TID = np.dtype(np.int64, metadata={"house": "TID"})
#: The header of a binary COPY: signature, flags, no header extension.
_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"
_HEADER = _SIGNATURE + bytes(8)
_TRAILER = b"\xff\xff"


def house_type(pg_type: str) -> str:
    """The house spelling of a PostgreSQL type name (``numeric(10,2)`` -> ``DECIMAL(10,2)``,
    ``character varying(20)`` -> ``VARCHAR``)."""
    t = pg_type.strip().lower()
    if t in _TYPES:
        return _TYPES[t]
    m = re.fullmatch(r"numeric\((\d+),\s*(\d+)\)", t)
    if m:
        return f"DECIMAL({m.group(1)},{m.group(2)})"
    if re.fullmatch(r"numeric\((\d+)\)", t):
        return "DECIMAL"
    if t.startswith(("character varying", "character(", "varchar", "char(")) or t == "character":
        return "VARCHAR"
    if t.startswith("timestamp") and "with time zone" in t:
        return "TIMESTAMP WITH TIME ZONE"
    if t.startswith("timestamp"):
        return "TIMESTAMP"
    return pg_type.upper()


class PostgresEngine(Engine):
    """A ``psycopg.Connection`` plus the temp objects of one run."""

    name = "postgres"
    title = "PostgreSQL"
    #: NAMEDATALEN - 1 (:meth:`Engine.check_names`)
    name_limits = {"table": 63, "view": 63, "column": 63}
    name_limit_reason = "it cuts a longer name to that many bytes without an error"
    dialect = "postgres"
    case_insensitive_names = False
    savepoints = True

    def __init__(self, con: Any) -> None:
        if not isinstance(con, psycopg.Connection):
            raise InputError(f"con must be a psycopg.Connection, got {type(con).__name__} {short(con)}")
        if con.closed:
            raise InputError("the PostgreSQL connection is closed")
        super().__init__(con)
        self._points = 0

    @staticmethod
    @contextlib.contextmanager
    def session(con: Any) -> Iterator[None]:
        """Around one public call: when the caller has no transaction open, statements run in
        autocommit mode (a published release is durable on return, and nothing is left open);
        inside the caller's transaction everything runs in it, for the caller to commit, after a
        savepoint: an error rolls back to it, so the caller's transaction stays usable (a failed
        statement would abort it) and holds nothing of the failed call."""
        if not isinstance(con, psycopg.Connection) or con.closed:
            yield
            return
        if not con.autocommit and con.info.transaction_status == pq.TransactionStatus.INTRANS:
            point = f"__sqlanon_call_{os.urandom(5).hex()}"
            con.execute(f'SAVEPOINT "{point}"')
            try:
                with _call_settings(con):
                    yield
            except BaseException:
                if con.info.transaction_status in (pq.TransactionStatus.INTRANS, pq.TransactionStatus.INERROR):
                    with contextlib.suppress(psycopg.Error):
                        con.execute(f'ROLLBACK TO SAVEPOINT "{point}"')
                        con.execute(f'RELEASE SAVEPOINT "{point}"')
                raise
            if con.info.transaction_status == pq.TransactionStatus.INTRANS:
                con.execute(f'RELEASE SAVEPOINT "{point}"')
            return
        if con.autocommit or con.info.transaction_status != pq.TransactionStatus.IDLE:
            with _call_settings(con):
                yield
            return
        con.autocommit = True
        try:
            with _call_settings(con):
                yield
        finally:
            if not con.closed and con.info.transaction_status == pq.TransactionStatus.IDLE:
                con.autocommit = False

    # -- execution ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def _cursor(self, sql: str) -> Iterator[psycopg.Cursor]:
        with self.con.cursor() as cursor:
            try:
                yield cursor
            except psycopg.Error as e:  # the engine's own errors, never ours
                raise EngineError(str(e).strip(), sql) from e

    def _run(self, sql: str) -> None:
        with self._cursor(sql) as cursor:
            cursor.execute(sql)

    def execute(self, statement: Any) -> None:
        super().execute(statement)
        if isinstance(statement, exp.Create) and statement.kind == "TABLE" and statement.expression is not None \
                and not _copies_one_relation(statement.expression):
            self._analyze(statement.this)

    def _analyze(self, table: exp.Expression) -> None:
        """Statistics of a table sqlanon just filled. PostgreSQL gathers none by itself for temp
        tables (autovacuum skips them) nor right after a load: the planner then assumes ~2,000
        rows per table, costs a join of a few small tables above ``jit_above_cost`` and spends
        seconds JIT-compiling a statement that runs in milliseconds."""
        sql = f"ANALYZE {table.sql(self.dialect)}"
        self.statements += 1
        self._run(sql)

    def _fetch_rows(self, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        with self._cursor(sql) as cursor:
            cursor.execute(sql)
            names = [d.name for d in cursor.description or ()]
            return names, cursor.fetchall() if cursor.description else []

    def _describe_sql(self, sql: str) -> list[tuple[str, str, int]]:
        """``(name, house type, oid)`` of a query's columns, from its description (no rows)."""
        probe = f"SELECT * FROM ({sql}) AS q LIMIT 0"
        with self._cursor(probe) as cursor:
            cursor.execute(probe)
            out = []
            for d in cursor.description or ():
                info = self.con.adapters.types.get(d.type_code)
                base = info.name if info is not None else "text"
                if base == "numeric" and d.precision is not None and d.scale is not None:
                    base = f"numeric({d.precision},{d.scale})"
                out.append((d.name, house_type(base), d.type_code))
            return out

    def _fetch_numpy(self, sql: str) -> dict[str, np.ndarray]:
        described = self._describe_sql(sql)
        if described and all(t in _WIRE for _, t, _ in described):
            return self._fetch_binary(sql, described)
        # A text value that equals the NULL marker is written quoted, which pandas' reader does
        # not tell from the marker: textual columns come with one character in front of every
        # value (NULL stays NULL), taken off after parsing. Positional names (q(c0, c1, ..)),
        # as a query's columns need not have distinct names.
        marked = [_textual(t) for _, t, _ in described]
        if any(marked):
            columns = ", ".join(f"'.' || CAST(q.c{i} AS text)" if m else f"q.c{i}" for i, m in enumerate(marked))
            sql = f"SELECT {columns} FROM ({sql}) AS q({', '.join(f'c{i}' for i in range(len(marked)))})"
        copy_sql = f"COPY ({sql}) TO STDOUT WITH (FORMAT csv, NULL '{_NULL}')"
        buffer = io.BytesIO(self._copy_out(copy_sql))
        names = [n for n, _, _ in described]
        if not buffer.getbuffer().nbytes:
            return {n: _empty(t) for n, t, _ in described}
        # Integer columns are parsed by pandas' C reader as nullable Int64: no Python object per value.
        types = {i: ("Int64" if t in _INTEGERS else object) for i, (_, t, _) in enumerate(described)}
        frame = pd.read_csv(buffer, header=None, names=list(range(len(names))), dtype=types,
                            na_values=[_NULL], keep_default_na=False, quotechar='"')
        for i in np.flatnonzero(marked):
            frame[i] = frame[i].str.slice(1)
        return {n: _column(frame[i], t) for i, (n, t, _) in enumerate(described)}

    def _copy_out(self, copy_sql: str) -> bytearray:
        """The whole output of one ``COPY ... TO STDOUT``, appended block by block to one buffer
        (a block is a row: keeping 1M blocks to join them at the end took 3.3 s, appending 0.7-1.2 s)."""
        out = bytearray()
        with self._cursor(copy_sql) as cursor:
            with cursor.copy(copy_sql) as copy:
                while block := copy.read():
                    out += block
        return out

    def _fetch_binary(self, sql: str, described: list[tuple[str, str, int]]) -> dict[str, np.ndarray]:
        """A result of fixed-width columns only (integers, floats, booleans) through ``COPY ...
        (FORMAT binary)``, read by numpy as one array of fixed-size records (:func:`_records`):
        no text is written or parsed. A row holding a NULL has a shorter record; then the query
        runs once more with each column split into its value (``COALESCE``d) and a NULL flag, so
        every record is full again. At 1M rows of 12 integer columns the CSV path took 11-15 s
        (server, transfer and pandas' parser) on a loaded machine, binary 2.5 s."""
        houses = [t for _, t, _ in described]
        data = self._copy_out(f"COPY ({sql}) TO STDOUT WITH (FORMAT binary)")
        rows = _records(data, [_WIRE[t] for t in houses])
        if rows is not None:
            return {n: _native(rows[f"v{j}"], t) for j, (n, t, _) in enumerate(described)}
        # a NULL somewhere: every column as (value, is NULL), value and flag never NULL
        inner = [g.ident(f"c{j}") for j in range(len(described))]
        split: list[exp.Expression] = []
        for j, house in enumerate(houses):
            # the column's own type: COALESCE(smallint, 0) would be an integer, 4 bytes wide
            zero = exp.false() if house == "BOOLEAN" else exp.Cast(
                this=g.lit("(0,0)"), to=exp.DataType.build("tid", udt=True)) if house == "TID" else exp.Cast(
                this=g.lit(0), to=exp.DataType.build(house, dialect="duckdb"))
            split += [exp.Coalesce(this=g.col(f"c{j}"), expressions=[zero]),
                      exp.Is(this=g.col(f"c{j}"), expression=exp.Null())]
        columns = ", ".join(e.sql(self.dialect) for e in split)
        alias = exp.TableAlias(this=g.ident("q"), columns=inner).sql(self.dialect)
        data = self._copy_out(f"COPY (SELECT {columns} FROM ({sql}) AS {alias}) TO STDOUT WITH (FORMAT binary)")
        rows = _records(data, [w for t in houses for w in (_WIRE[t], "?")])
        if rows is None:
            raise EngineError("PostgreSQL's binary COPY gave records of an unexpected layout", sql)
        return {n: _with_nulls(_native(rows[f"v{2 * j}"], t), rows[f"v{2 * j + 1}"])
                for j, (n, t, _) in enumerate(described)}

    def fetch_frame(self, statement: Any) -> pd.DataFrame:
        return pd.DataFrame(self.fetch(statement))

    # -- transactions -------------------------------------------------------------------------
    def in_transaction(self) -> bool:
        return self.con.info.transaction_status != pq.TransactionStatus.IDLE

    def _savepoint(self) -> str:
        self._points += 1
        name = f"{self.prefix}sp{self._points}"
        self._run(f"SAVEPOINT {g.ident(name).sql(self.dialect)}")
        return name

    def _release_savepoint(self, name: str) -> None:
        self._run(f"RELEASE SAVEPOINT {g.ident(name).sql(self.dialect)}")

    def _rollback_to(self, name: str) -> None:
        self._run(f"ROLLBACK TO SAVEPOINT {g.ident(name).sql(self.dialect)}")

    def lost_race(self, error: EngineError) -> bool:
        """PostgreSQL makes a concurrent CREATE of the same name wait for the other transaction
        and then fails it as a duplicate: ``relation already exists`` (42P07, 42710), or a
        unique violation of the catalog's name index (23505 on ``pg_class``/``pg_type``);
        a serialization failure or deadlock (40001, 40P01) is the same race."""
        cause = error.__cause__
        state = getattr(cause, "sqlstate", None)
        if state in ("42P07", "42710", "40001", "40P01"):
            return True
        diag = getattr(cause, "diag", None)
        return state == "23505" and (getattr(diag, "constraint_name", None) or "").startswith("pg_")

    def check_writable(self, what: str) -> None:
        read_only, database, schema = self.fetch_rows(exp.select(
            exp.func("current_setting", g.lit("transaction_read_only")), exp.func("current_database"),
            exp.func("current_schema")))[0]
        if read_only == "on" or self.con.read_only:
            raise ReadOnlyError(
                f"the PostgreSQL connection to {database!r} is read-only, and {what} would be written to "
                f"it, in schema {schema}. Nothing was done: use a connection that may write there.")

    # -- temp objects -------------------------------------------------------------------------
    def create_table(self, name: str, query: exp.Expression, *, temporary: bool = True,
                     replace: bool = False) -> None:
        if replace:  # PostgreSQL has no CREATE OR REPLACE TABLE
            self.execute(g.drop(name, "TABLE"))
        self.execute(g.create_table_as(name, query, temporary=temporary))

    def upload(self, purpose: str, columns: Mapping[str, np.ndarray],
               types: Mapping[str, str] | None = None) -> str:
        name = self.temp_name(purpose)
        types = {**{k: "TID" for k, v in columns.items() if _is_tid(v)}, **(types or {})}
        frame = pd.DataFrame({k: np.asarray(v) for k, v in columns.items()}, copy=False)
        # A purpose may be uploaded again in one run (the candidates of every large level):
        # replace the earlier table, as DuckDB's upload does.
        self.execute(g.drop(name, "TABLE"))
        self._load(g.table(name), frame, temporary=True, types=types)
        return name

    def create_from_frame(self, name: str, frame: Any, *, replace: bool = False, schema: str | None = None) -> None:
        table = g.table(name, schema)
        if replace:
            self.execute(exp.Drop(tables=[table.copy()], kind="TABLE", exists=True))
        self._load(table, frame, temporary=False)

    def _load(self, table: exp.Table, frame: pd.DataFrame, *, temporary: bool,
              types: Mapping[str, str] | None = None) -> None:
        """``CREATE TABLE`` with the frame's column types (or ``types``, house spelling), then
        one ``COPY ... FROM STDIN``: binary when every column is a number or boolean without
        NaN (:func:`_binary_rows`), else CSV (a NaN becomes NULL either way)."""
        houses = {str(c): (types or {}).get(str(c)) or sql_type(frame[c]) for c in frame.columns}
        schema = exp.Schema(this=table.copy(), expressions=[exp.ColumnDef(this=g.ident(c), kind=(
            exp.DataType.build("tid", udt=True) if t == "TID" else exp.DataType.build(t, dialect="duckdb")))
            for c, t in houses.items()])
        props = exp.Properties(expressions=[exp.TemporaryProperty()]) if temporary else None
        self.execute(exp.Create(this=schema, kind="TABLE", properties=props))
        if not len(frame):
            return
        target = table.sql(self.dialect)
        payload = _binary_rows(frame, list(houses.values()))
        if payload is not None:
            copy_sql = f"COPY {target} FROM STDIN WITH (FORMAT binary)"
        else:
            tids = [c for c, t in houses.items() if t == "TID"]
            if tids:
                frame = frame.assign(**{c: _tid_text(frame[c].to_numpy()) for c in tids})
            null = _null_marker(frame)
            payload = _csv(frame, null).encode()
            copy_sql = f"COPY {target} FROM STDIN WITH (FORMAT csv, NULL '{null}')"
        self.statements += 1
        with self._cursor(copy_sql) as cursor:
            with cursor.copy(copy_sql) as copy:
                copy.write(payload)
        self._analyze(table)

    # -- what PostgreSQL spells its own way -------------------------------------------------------
    def row_hash(self, values: Sequence[exp.Expression]) -> exp.Expression:
        """``hashtextextended(ROW(v1, ..)::text, 0)``: the row's text form tells NULL from ''."""
        row = exp.Cast(this=exp.Anonymous(this="ROW", expressions=list(values)), to=exp.DataType.build("TEXT"))
        return exp.Anonymous(this="hashtextextended", expressions=[row, g.lit(0)])

    def epoch_us(self, value: exp.Expression, data_type: str) -> exp.Expression:
        seconds = exp.Extract(this=exp.var("EPOCH"), expression=value)
        return exp.Cast(this=exp.Mul(this=seconds, expression=g.lit(1_000_000)), to=exp.DataType.build("BIGINT"))

    def is_infinite(self, value: exp.Expression) -> exp.Expression:
        infinities = [exp.Cast(this=g.lit(v), to=exp.DataType.build("DOUBLE")) for v in ("Infinity", "-Infinity")]
        return exp.In(this=value, expressions=infinities)

    def is_nan(self, value: exp.Expression) -> exp.Expression:
        return exp.EQ(this=value, expression=exp.Cast(this=g.lit("NaN"), to=exp.DataType.build("DOUBLE")))

    def code_type(self, size: int) -> str:
        return "SMALLINT" if size <= 2**15 else "INTEGER"

    def codes_here(self, data_type: str) -> bool:
        """Integers and floats: fetched as binary fields (:meth:`_fetch_binary`) and coded with
        numpy, their code tables uploaded. At 1M Agrawal rows (nine integer QIs) building the code
        tables from the snapshot took 7-9 s, their positions' fetch 5-6 s and the view's fetch
        (a join with each code table) 11-17 s of a 47-55 s run on a loaded machine."""
        return data_type in _INTEGERS or data_type in _FLOATS

    def row_ids(self, columns: Sequence[str], table: bool) -> exp.Expression:
        """``row_number() OVER (ORDER BY ctid) - 1`` for a table: storage order, which for a
        table loaded once is the order its rows were loaded (as DuckDB's ``rowid``)."""
        if not table:
            return super().row_ids(columns, table)
        ordered = exp.Window(this=exp.RowNumber(), order=exp.Order(expressions=[exp.Ordered(this=exp.column("ctid"))]))
        return exp.Sub(this=ordered, expression=g.lit(1))

    def reads_fetched_in_place(self, source: exp.Table) -> bool:
        """A plain table -- not a partitioned one, nor the parent of inherited tables (their
        rows repeat their ``ctid``), nor a foreign one -- numbered by its ``ctid``
        (:meth:`in_place_ids`) and read in one ``REPEATABLE READ`` transaction
        (:meth:`begin_snapshot`), or in the caller's if it is one (or ``SERIALIZABLE``): every
        statement then reads the snapshot the first took, and a row version visible in a
        snapshot keeps its ``ctid`` while the snapshot is in use (VACUUM keeps it; VACUUM FULL
        and CLUSTER wait for the lock the first read takes). Under ``READ COMMITTED`` each
        statement reads the rows committed when it starts: no. The run then copies no snapshot
        of the whole table sorted by ``ctid`` (1.9-3 s at 1M Agrawal rows), only the columns the
        publication takes, unsorted."""
        caller = self.in_transaction()  # before the catalog read below, which may open one
        found = self.fetch_rows(exp.select(
            g.col("relkind"), g.col("relhassubclass"), exp.func("current_setting", g.lit("transaction_isolation"))
        ).from_(g.table("pg_class", "pg_catalog")).where(exp.EQ(
            this=g.col("oid"), expression=exp.func("to_regclass", g.lit(source.sql(self.dialect))))))
        return any(kind == "r" and not inherited and (not caller or isolation in ("repeatable read", "serializable"))
                   for kind, inherited, isolation in found)

    def in_place_ids(self, columns: Sequence[str]) -> exp.Expression:
        """The row's ``ctid`` (a ``tid``, fetched as one integer ``block << 16 | item``,
        :func:`_native`): no window over the table sorted by ``ctid`` in the statements that read it."""
        return exp.column("ctid")

    def begin_snapshot(self) -> exp.Expression:
        return exp.Transaction(modes=["ISOLATION LEVEL REPEATABLE READ"])

    def export(self, query: exp.Expression, path: str, params: Sequence[exp.CopyParameter]) -> None:
        """PostgreSQL's COPY writes files on the server: the rows are fetched and written here (:func:`.frames.write_file`)."""
        write_file(self.fetch_frame(query), path, params)

    # -- catalog ------------------------------------------------------------------------------
    def objects(self) -> list[CatalogObject]:
        return [CatalogObject(c, s, n, k, bool(t), comment, sql)
                for c, s, n, k, t, comment, sql in self.fetch_rows(g.template("postgres/catalog_objects"))]

    def columns(self, catalog: str, schema: str, name: str) -> list[tuple[str, str]]:
        """Types in the house spelling; an enum type as ``ENUM('a', 'b')`` in declaration order,
        so an enum QI is ordered by position as on DuckDB."""
        return [(c, f"ENUM({labels})" if labels is not None else house_type(t)) for c, t, labels in self.fetch_rows(
            g.template("postgres/catalog_columns", schema=g.lit(schema), name=g.lit(name)))]

    def render(self, statement: Statement) -> str:
        """PostgreSQL SQL. A cast to an enum type (the house's ``ENUM('a', 'b')``, which has no
        PostgreSQL spelling) is left to PostgreSQL: a string literal compared with an enum
        column takes the column's type, and so its order."""
        if isinstance(statement, exp.Expression) and any(
                c.to.this == exp.DataType.Type.ENUM for c in statement.find_all(exp.Cast)):
            statement = statement.transform(
                lambda n: n.this if isinstance(n, exp.Cast) and n.to.this == exp.DataType.Type.ENUM else n)
        return super().render(statement)

    def keys(self, catalog: str, schema: str, name: str) -> list[tuple[str, ...]]:
        return [tuple(cols) for _, cols in self.fetch_rows(
            g.template("postgres/catalog_keys", schema=g.lit(schema), name=g.lit(name)))]

    def current(self) -> tuple[str, str]:
        database, schema = self.fetch_rows(exp.select(exp.func("current_database"), exp.func("current_schema")))[0]
        return database, schema or "public"

    def search_path(self) -> list[tuple[str, str]]:
        """``(database, schema)`` in the order PostgreSQL looks up an unqualified name: its temp
        schema, pg_catalog, then the ``search_path`` schemas that exist."""
        database, schemas = self.fetch_rows(exp.select(
            exp.func("current_database"), exp.func("current_schemas", exp.true())))[0]
        temp = self.scalar(exp.select(g.col("nspname")).from_(g.table("pg_namespace", "pg_catalog")).where(
            exp.EQ(this=g.col("oid"), expression=exp.func("pg_my_temp_schema"))))
        out = []
        for s in schemas:
            out.append((database, "pg_temp" if temp is not None and s == str(temp) else s))
        if temp is not None and (database, "pg_temp") not in out:
            out.insert(0, (database, "pg_temp"))
        return out

    def find(self, name: str, suffix: str = "") -> CatalogObject | None:
        """As PostgreSQL binds a name: the whole name as one identifier along the search path,
        then ``schema.name`` / ``database.schema.name``. Names match exactly first, then
        case-insensitively (as an unquoted name would be folded)."""
        visible = self.objects()
        path = self.search_path()
        for exact in (True, False):
            def same(a: str, b: str) -> bool:
                return a == b if exact else a.lower() == b.lower()
            named = {(o.catalog, o.schema): o for o in visible if same(o.name, name + suffix)}
            hit = next((named[where] for where in path if where in named), None)
            if hit is not None:
                return hit
            parts = name.split(".")
            if len(parts) in (2, 3):
                last = parts[-1] + suffix
                for o in visible:
                    if same(o.name, last) and same(o.schema, parts[-2]) and (len(parts) == 2 or same(o.catalog, parts[0])):
                        return o
        return None

    def describe(self, query: exp.Expression) -> list[tuple[str, str]]:
        self.statements += 1
        return [(n, t) for n, t, _ in self._describe_sql(self.render(query))]

    def set_comment(self, table: str, text: str) -> None:
        self.execute(exp.Comment(this=g.table(table), kind="TABLE", expression=g.lit(text)))


def _copies_one_relation(query: exp.Expression) -> bool:
    """Whether a ``CREATE TABLE AS`` query copies the rows of one stored relation (a snapshot:
    no join, filter, grouping, DISTINCT, LIMIT or set operation), whose statistics
    :meth:`PostgresEngine._analyze` need not gather: PostgreSQL estimates a table it never analyzed from its size on disk (its
    pages by the row width: 0.6M of 1M Agrawal rows), close enough for the joins that read it
    (the row map's plan at 1M rows was the same hash join, 4.1-4.2 s either way), and the ANALYZE
    of the 1M-row snapshot took 0.7-1.1 s on a loaded machine."""
    if not isinstance(query, exp.Select) or any(query.args.get(a) for a in (
            "joins", "where", "group", "having", "distinct", "limit")):
        return False
    source = query.args.get("from_")
    return source is not None and isinstance(source.this, exp.Table)


#: The least ``work_mem`` of one public call (:func:`_call_settings`).
CALL_WORK_MEM = 256 * 2**20


@contextlib.contextmanager
def _call_settings(con: Any) -> Iterator[None]:
    """Settings for one public call, the caller's restored after:

    * JIT compilation off. sqlanon's temp tables have no statistics, so PostgreSQL estimates a
      join of a few hundred rows at billions and JIT-compiles it: about a second per statement,
      for nothing.
    * ``work_mem`` at least :data:`CALL_WORK_MEM` (the default is 4 MB): a snapshot numbered in
      ``ctid`` order sorts the whole table, which spills to temp files under 4 MB (at 1M Agrawal
      rows, machine load 25: 2.3-2.7 s against 3.2-3.3 s; the row map's hash join took 6.0 s
      either way). A limit per sort or hash, not memory taken: a small statement uses what it
      needs."""
    if not isinstance(con, psycopg.Connection) or con.closed \
            or con.info.transaction_status not in (pq.TransactionStatus.IDLE, pq.TransactionStatus.INTRANS):
        yield
        return
    jit, work_mem, size = con.execute("SELECT current_setting('jit', true), current_setting('work_mem'), "
                                      "pg_size_bytes(current_setting('work_mem'))").fetchone()
    changed: dict[str, tuple[str, str]] = {}  # setting -> (the caller's value, the call's)
    if jit not in (None, "off"):
        changed["jit"] = (jit, "off")
    if size < CALL_WORK_MEM:
        changed["work_mem"] = (work_mem, f"{CALL_WORK_MEM // 1024}kB")
    # inside the caller's transaction for that transaction only (SET LOCAL), so a value the
    # caller set with SET LOCAL is restored as such; else for the session
    local = con.info.transaction_status == pq.TransactionStatus.INTRANS
    for name, (_, value) in changed.items():
        con.execute("SELECT set_config(%s, %s, %s)", [name, value, local])
    try:
        yield
    finally:  # in a failed transaction the caller's ROLLBACK undoes the SET
        if not con.closed and con.info.transaction_status in (pq.TransactionStatus.IDLE,
                                                              pq.TransactionStatus.INTRANS):
            for name, (old, _) in changed.items():
                con.execute("SELECT set_config(%s, %s, %s)", [name, old, local])


# -- bulk transfer ---------------------------------------------------------------------------------
def _empty(house: str) -> np.ndarray:
    if house == "TID":
        return np.zeros(0, _TID)
    if house in _INTEGERS:
        return np.zeros(0, np.int64)
    if house in _FLOATS or house.startswith("DECIMAL"):
        return np.zeros(0, np.float64)
    if house == "BOOLEAN":
        return np.zeros(0, bool)
    return np.zeros(0, object)


def _column(values: pd.Series, house: str) -> np.ndarray:
    """One CSV column as the numpy array DuckDB's ``fetchnumpy`` would give (NULL: NaN in
    floats, None elsewhere)."""
    missing = values.isna().to_numpy()
    if house in _FLOATS or house.startswith("DECIMAL"):
        return pd.to_numeric(values, errors="raise").astype(np.float64).to_numpy()
    if house in _INTEGERS:
        if not missing.any():
            return values.to_numpy(dtype=np.int64)
        out = np.empty(len(values), object)
        out[~missing] = values[~missing].to_numpy(dtype=np.int64)
        out[missing] = None
        return out
    if house == "BOOLEAN":
        flags = values.map({"t": True, "f": False})
        if not missing.any():
            return flags.astype(bool).to_numpy()
        out = flags.to_numpy(dtype=object, copy=True)
        out[missing] = None
        return out
    if house in ("DATE", "TIMESTAMP"):
        parsed = pd.to_datetime(values, errors="coerce")
        return parsed.to_numpy()
    out = values.to_numpy(dtype=object, copy=True)
    out[missing] = None
    return out


def _textual(house: str) -> bool:
    """Whether a column of this house type is fetched as text whose value may be any string
    (so also the NULL marker): every type but numbers, booleans, dates and timestamps."""
    return not (house in _INTEGERS or house in _FLOATS or house.startswith("DECIMAL")
                or house in ("BOOLEAN", "DATE", "TIMESTAMP", "TIMESTAMP WITH TIME ZONE"))


def _null_marker(frame: pd.DataFrame) -> str:
    """The NULL marker of an upload: ``\\N``, lengthened while it is one of the frame's strings
    (``COPY ... FROM`` reads an unquoted field equal to the marker as NULL, and pandas quotes a
    string only when it must)."""
    texts = {v for c in frame.columns if frame[c].dtype == object or pd.api.types.is_string_dtype(frame[c])
             for v in frame[c] if isinstance(v, str)}
    marker = _NULL
    while marker in texts:
        marker += "N"
    return marker


def _layout(wires: Sequence[str]) -> np.dtype:
    """One record of a binary COPY whose fields have the fixed-width types ``wires``: the field
    count, then each field's length and value (packed, big-endian)."""
    return np.dtype([("fields", ">i2")] + [(f"{part}{j}", t) for j, w in enumerate(wires)
                                           for part, t in (("n", ">i4"), ("v", w))])


def _records(data: bytes | bytearray, wires: Sequence[str]) -> np.ndarray | None:
    """The rows of a binary ``COPY ... TO STDOUT`` as one array of records of :func:`_layout`
    (a view of ``data``), or None when some record is not of that layout: a NULL field has no
    value (its length is -1), so its record is shorter. Every record's field count and field
    lengths are checked, so a shorter record is never read as a full one."""
    if not data.startswith(_SIGNATURE) or not data.endswith(_TRAILER):
        raise EngineError("PostgreSQL's binary COPY gave no binary COPY header or trailer", "COPY ... (FORMAT binary)")
    start = len(_SIGNATURE) + 4
    start += 4 + int.from_bytes(data[start:start + 4], "big")  # the header extension, if any
    layout = _layout(wires)
    body = len(data) - start - len(_TRAILER)
    if body % layout.itemsize:
        return None
    rows = np.frombuffer(data, layout, count=body // layout.itemsize, offset=start)
    if (rows["fields"] != len(wires)).any():
        return None
    for j, w in enumerate(wires):
        if (rows[f"n{j}"] != np.dtype(w).itemsize).any():
            return None
    return rows


def _native(values: np.ndarray, house: str) -> np.ndarray:
    """A binary column in the types of the CSV path (:func:`_column`): int64, float64 or bool; a
    ``tid`` as :data:`_TID`."""
    if house == "TID":
        return ((values["block"].astype(np.int64) << 16) | values["item"]).view(_TID)
    return values.astype(np.int64 if house in _INTEGERS else np.float64 if house in _FLOATS else bool)


def _is_tid(values: Any) -> bool:
    return isinstance(values, np.ndarray) and (values.dtype.metadata or {}).get("house") == "TID"


def _tid_text(values: np.ndarray) -> np.ndarray:
    """:data:`_TID` values as ``tid`` text, ``(block,item)``, for a CSV upload."""
    v = np.asarray(values, dtype=np.int64)
    return np.array([f"({b},{i})" for b, i in zip((v >> 16).tolist(), (v & 0xFFFF).tolist())], dtype=object)


def _with_nulls(values: np.ndarray, null: np.ndarray) -> np.ndarray:
    """``values`` with NULL where ``null``: NaN in floats, else None in an object array."""
    if not null.any():
        return values
    if values.dtype.kind == "f":
        values[null] = np.nan
        return values
    out = values.astype(object)
    out[null] = None
    return out


def _binary_rows(frame: pd.DataFrame, houses: Sequence[str]) -> bytes | None:
    """The frame as the payload of ``COPY ... FROM STDIN (FORMAT binary)`` into columns of the
    house types ``houses``, or None when a column is not a number or boolean that the type holds
    exactly (objects, nullable or temporal columns, values out of range) or is a float column
    with NaN (the CSV path writes NaN as NULL). One record array, written column by column."""
    columns = []
    for c, house in zip(frame.columns, houses):
        if house not in _WIRE:
            return None
        values = frame[c].to_numpy()
        if house == "TID":  # :data:`_TID` values
            tid = np.empty(len(values), _WIRE["TID"])
            tid["block"], tid["item"] = values.astype(np.int64) >> 16, values.astype(np.int64) & 0xFFFF
            columns.append(tid)
            continue
        if values.dtype.kind not in "iufb" or (values.dtype.kind == "f" and np.isnan(values).any()):
            return None
        wire = np.dtype(_WIRE[house])
        cast = values.astype(wire)
        if wire.kind != "f" and not np.array_equal(cast, values):
            return None
        columns.append(cast)
    rows = np.empty(len(frame), _layout([_WIRE[h] for h in houses]))
    rows["fields"] = len(columns)
    for j, values in enumerate(columns):
        rows[f"n{j}"] = values.dtype.itemsize
        rows[f"v{j}"] = values
    return _HEADER + rows.tobytes() + _TRAILER


def _csv(frame: pd.DataFrame, null: str = _NULL) -> str:
    """The frame as CSV for ``COPY ... FROM STDIN`` (floats exact, NULL as ``null``)."""
    return frame.to_csv(index=False, header=False, na_rep=null, float_format="%.17g", lineterminator="\n")


def connect(url: str, *, read_only: bool = False) -> psycopg.Connection:
    """Open a PostgreSQL connection from a ``postgresql://`` URL, in autocommit mode: each call's
    work is committed on return (a statement run between calls must not open a transaction that
    the next call would join and closing the connection would roll back). ``read_only``: every
    transaction of the session is read-only, enforced by the server."""
    try:
        con = psycopg.connect(url, autocommit=True)
        if read_only:
            con.execute("SET default_transaction_read_only = on")
    except psycopg.Error as e:
        raise InputError(f"cannot connect to {_without_password(url)}: {str(e).strip()}") from None
    con.read_only = read_only or None
    return con


def _without_password(url: str) -> str:
    """``url`` with its password (``user:secret@`` or ``password=secret``) shown as ``***``, for
    messages that end up on terminals and in logs."""
    url = re.sub(r"^([A-Za-z][\w+.-]*://[^/@:?#]*):[^/@?#]*@", r"\1:***@", url)
    return re.sub(r"([?&]password=)[^&#]*", r"\1***", url)
