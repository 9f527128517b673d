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

from . import sqlgen as g
from .base import CatalogObject, Engine, Statement, short
from .frames import sql_type, write_file
from ..errors import EngineError, InputError, ReadOnlyError

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
                with _without_jit(con):
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
            with _without_jit(con):
                yield
            return
        con.autocommit = True
        try:
            with _without_jit(con):
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
        if isinstance(statement, exp.Create) and statement.kind == "TABLE" and statement.expression is not None:
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
        # A text value that equals the NULL marker is written quoted, which pandas' reader does
        # not tell from the marker: textual columns come with one character in front of every
        # value (NULL stays NULL), taken off after parsing. Positional names (q(c0, c1, ..)),
        # as a query's columns need not have distinct names.
        marked = [_textual(t) for _, t, _ in described]
        if any(marked):
            columns = ", ".join(f"'.' || CAST(q.c{i} AS text)" if m else f"q.c{i}" for i, m in enumerate(marked))
            sql = f"SELECT {columns} FROM ({sql}) AS q({', '.join(f'c{i}' for i in range(len(marked)))})"
        copy_sql = f"COPY ({sql}) TO STDOUT WITH (FORMAT csv, NULL '{_NULL}')"
        with self._cursor(copy_sql) as cursor:
            buffer = io.BytesIO()
            with cursor.copy(copy_sql) as copy:
                for block in copy:
                    buffer.write(block)
        names = [n for n, _, _ in described]
        if buffer.tell() == 0:
            return {n: _empty(t) for n, t, _ in described}
        buffer.seek(0)
        # Integer columns (the codes and ids of the partitioning, most of what is fetched) are
        # parsed by pandas' C reader as nullable Int64: no Python object per value.
        types = {i: ("Int64" if t in _INTEGERS else object) for i, (_, t, _) in enumerate(described)}
        frame = pd.read_csv(buffer, header=None, names=list(range(len(names))), dtype=types,
                            na_values=[_NULL], keep_default_na=False, quotechar='"')
        for i in np.flatnonzero(marked):
            frame[i] = frame[i].str.slice(1)
        return {n: _column(frame[i], t) for i, (n, t, _) in enumerate(described)}

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

    def upload(self, purpose: str, columns: Mapping[str, np.ndarray]) -> str:
        name = self.temp_name(purpose)
        frame = pd.DataFrame({k: np.asarray(v) for k, v in columns.items()})
        # A purpose may be uploaded again in one run (the candidates of every large level):
        # replace the earlier table, as DuckDB's upload does.
        self.execute(g.drop(name, "TABLE"))
        self._load(g.table(name), frame, temporary=True)
        return name

    def create_from_frame(self, name: str, frame: Any, *, replace: bool = False, schema: str | None = None) -> None:
        table = g.table(name, schema)
        if replace:
            self.execute(exp.Drop(tables=[table.copy()], kind="TABLE", exists=True))
        self._load(table, frame, temporary=False)

    def _load(self, table: exp.Table, frame: pd.DataFrame, *, temporary: bool) -> None:
        """``CREATE TABLE`` with the frame's column types, then one ``COPY ... FROM STDIN``."""
        schema = exp.Schema(this=table.copy(), expressions=[
            exp.ColumnDef(this=g.ident(str(c)), kind=exp.DataType.build(sql_type(frame[c]), dialect="duckdb"))
            for c in frame.columns])
        props = exp.Properties(expressions=[exp.TemporaryProperty()]) if temporary else None
        self.execute(exp.Create(this=schema, kind="TABLE", properties=props))
        if not len(frame):
            return
        null = _null_marker(frame)
        text = _csv(frame, null)
        target = table.sql(self.dialect)
        copy_sql = f"COPY {target} FROM STDIN WITH (FORMAT csv, NULL '{null}')"
        self.statements += 1
        with self._cursor(copy_sql) as cursor:
            with cursor.copy(copy_sql) as copy:
                copy.write(text)
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

    def row_ids(self, columns: Sequence[str], table: bool) -> exp.Expression:
        """``row_number() OVER (ORDER BY ctid) - 1`` for a table: storage order, which for a
        table loaded once is the order its rows were loaded (as DuckDB's ``rowid``)."""
        if not table:
            return super().row_ids(columns, table)
        ordered = exp.Window(this=exp.RowNumber(), order=exp.Order(expressions=[exp.Ordered(this=exp.column("ctid"))]))
        return exp.Sub(this=ordered, expression=g.lit(1))

    def seeded_hash(self, key: exp.Expression, seed: int) -> exp.Expression:
        """``hashint8extended(key::bigint, seed)``: PostgreSQL's seeded 64-bit integer hash."""
        return exp.Anonymous(this="hashint8extended", expressions=[
            exp.Cast(this=key, to=exp.DataType.build("BIGINT")), g.lit(seed)])

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


@contextlib.contextmanager
def _without_jit(con: Any) -> Iterator[None]:
    """JIT compilation off for one public call, the caller's setting restored after. sqlanon's
    temp tables have no statistics, so PostgreSQL estimates a join of a few hundred rows at
    billions and JIT-compiles it: about a second per statement, for nothing."""
    if not isinstance(con, psycopg.Connection) or con.closed \
            or con.info.transaction_status not in (pq.TransactionStatus.IDLE, pq.TransactionStatus.INTRANS):
        yield
        return
    old = con.execute("SELECT current_setting('jit', true)").fetchone()[0]
    if old in (None, "off"):
        yield
        return
    con.execute("SET jit = off")
    try:
        yield
    finally:  # in a failed transaction the caller's ROLLBACK undoes the SET
        if not con.closed and con.info.transaction_status in (pq.TransactionStatus.IDLE,
                                                              pq.TransactionStatus.INTRANS):
            con.execute("SELECT set_config('jit', %s, false)", [old])


# -- bulk transfer ---------------------------------------------------------------------------------
def _empty(house: str) -> np.ndarray:
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
