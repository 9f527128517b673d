"""Engine-neutral helpers for test set-up and checks, on a DuckDB or psycopg connection.

* :func:`quote`: a quoted identifier (the same on both engines), for test set-up SQL.
* :func:`rows`, :func:`frame`, :func:`run`: a query's rows / a DataFrame / a statement on either
  engine (``?`` placeholders on both).
* :func:`temp_objects`: names of the tables and views sqlanon's engine creates for a run
  (``__sqlanon_<hex>_...``), in any schema; a finished run must leave none.
* :func:`objects`: every user table and view as ``(database, schema, name, kind)``, to assert
  that a failed call wrote nothing.
* :func:`load_frame`: a table from a pandas DataFrame, with the same column types on DuckDB and
  PostgreSQL; :func:`make_people`: a small deterministic table with an ``id`` column;
  :func:`load_adult`: the bundled ARX Adult data (``ADULT_*``).
* :func:`here`, :func:`describe`, :func:`columns`: where unqualified objects go; a relation's column
  types; its column names. :func:`series`: a FROM item of ``n`` numbered rows on either engine.
* :func:`rendered_statements`: every SQL statement sqlanon's engines render from now on, as run.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import duckdb
import numpy as np
import pandas as pd

DATA = Path(__file__).resolve().parents[2] / "sqlanon" / "data"
ADULT_CSV = DATA / "adult.csv.gz"
ADULT_COLUMNS = ("sex", "age", "race", "marital-status", "education", "native-country",
                 "workclass", "occupation", "salary-class")
ADULT_ROWS = 30_162
ADULT_HIERARCHIES = {c: str(DATA / f"adult_hierarchy_{c}.csv") for c in ADULT_COLUMNS}

TEMP_PREFIX = "__sqlanon_"

#: A hierarchy of :func:`make_people`'s ``city`` column.
CITY = {"*": {"x0-1": ["x0", "x1"], "x2-4": ["x2", "x3", "x4"]}}


def quote(name: str) -> str:
    """A quoted identifier, the same on DuckDB and PostgreSQL (test set-up only; the library
    builds its own SQL)."""
    return '"' + name.replace('"', '""') + '"'


def is_postgres(con) -> bool:
    """Whether ``con`` is a psycopg connection (else DuckDB)."""
    return not isinstance(con, duckdb.DuckDBPyConnection)


def _placeholders(con, sql: str, params: Sequence | None) -> str:
    # Tests write ``?``; psycopg's placeholder is ``%s``, and with parameters a literal ``%``
    # (modulo) must be doubled -- without parameters psycopg sends the text as it is.
    if not is_postgres(con) or params is None:
        return sql
    return sql.replace("%", "%%").replace("?", "%s")


def run(con, sql: str, params: Sequence | None = None) -> None:
    """Execute one set-up statement on either engine (``?`` placeholders). On PostgreSQL it
    joins the connection's open transaction, as a caller's statement would."""
    con.execute(_placeholders(con, sql, params), params)


def rows(con, sql: str, params: Sequence | None = None) -> list[tuple]:
    """A query's rows as tuples on either engine (``?`` placeholders)."""
    return [tuple(r) for r in con.execute(_placeholders(con, sql, params), params).fetchall()]


def frame(con, sql: str, params: Sequence | None = None) -> pd.DataFrame:
    """A query's result as a DataFrame on either engine (``?`` placeholders)."""
    if not is_postgres(con):
        return con.execute(sql, params).df()
    cur = con.execute(_placeholders(con, sql, params), params)
    return pd.DataFrame(cur.fetchall(), columns=[d.name for d in cur.description])


def temp_objects(con) -> list[str]:
    """Tables and views (temporary or not, any schema) whose name starts with ``__sqlanon_``."""
    if is_postgres(con):
        found = rows(con, "SELECT relname FROM pg_class WHERE relkind IN ('r', 'v', 'm', 'p') "
                          "AND starts_with(relname, ?)", [TEMP_PREFIX])
        return sorted(r[0] for r in found)
    found = con.execute(
        """
        SELECT table_name FROM duckdb_tables() WHERE starts_with(table_name, $p)
        UNION ALL
        SELECT view_name FROM duckdb_views() WHERE starts_with(view_name, $p)
        """,
        {"p": TEMP_PREFIX},
    ).fetchall()
    return sorted(r[0] for r in found)


def objects(con) -> set[tuple[str, str, str, str]]:
    """Every user table and view: ``(database, schema, name, 'table' | 'view')``."""
    if is_postgres(con):
        found = rows(con, """
            SELECT current_database(), n.nspname, c.relname,
                   CASE WHEN c.relkind IN ('v', 'm') THEN 'view' ELSE 'table' END
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE c.relkind IN ('r', 'v', 'm', 'p')
              AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'""")
        return set(found)
    found = con.execute(
        """
        SELECT database_name, schema_name, table_name, 'table' FROM duckdb_tables() WHERE NOT internal
        UNION ALL
        SELECT database_name, schema_name, view_name, 'view' FROM duckdb_views() WHERE NOT internal
        """
    ).fetchall()
    return {tuple(r) for r in found}


def make_people(con, n: int = 200, name: str = "people", key: bool = True) -> str:
    """Create ``name`` on either engine: ``id`` (0..n-1, the PRIMARY KEY unless ``key=False``),
    ``age`` (i % 90), ``zip`` (i % 7), ``city`` ('x0'..'x4'), ``salary`` (i * 10.5, DECIMAL(22, 1)).
    Returns the table name."""
    i = np.arange(int(n), dtype=np.int64)
    people = pd.DataFrame({"id": i, "age": (i % 90).astype(np.int32), "zip": (i % 7).astype(np.int32),
                           "city": [f"x{v}" for v in i % 5], "salary": [f"{v * 10.5:.1f}" for v in i]})
    return load_frame(con, name, people, primary_key="id" if key else None, types={"salary": "DECIMAL(22, 1)"})


class Adult(NamedTuple):
    """What the ``adult`` fixture returns."""

    con: object  # the test's connection (DuckDB or psycopg)
    hierarchies: dict[str, str]  # column -> ARX hierarchy CSV path, all nine columns


def load_adult(con, name: str = "adult") -> dict[str, str]:
    """Create table ``name`` from the bundled Adult data (``age`` BIGINT, the rest VARCHAR) on
    either engine and return ``{column: hierarchy CSV path}``."""
    data = pd.read_csv(ADULT_CSV, sep=";", quoting=3, keep_default_na=False,
                       dtype={c: ("int64" if c == "age" else str) for c in ADULT_COLUMNS})
    load_frame(con, name, data[list(ADULT_COLUMNS)],
               types={c: ("BIGINT" if c == "age" else "VARCHAR") for c in ADULT_COLUMNS})
    return dict(ADULT_HIERARCHIES)


# load_frame's column types: DuckDB spelling -> PostgreSQL spelling.
_PG_TYPES = {"BIGINT": "bigint", "INTEGER": "integer", "DOUBLE": "double precision", "VARCHAR": "text",
             "BOOLEAN": "boolean", "DATE": "date", "TIMESTAMP": "timestamp", "TIMESTAMPTZ": "timestamptz"}


def _column_type(column: str, series: pd.Series) -> str:
    """The SQL type (DuckDB spelling, a key of ``_PG_TYPES``) for one DataFrame column."""
    dtype = series.dtype
    if pd.api.types.is_bool_dtype(dtype):
        return "BOOLEAN"
    if pd.api.types.is_integer_dtype(dtype):
        # 64-bit and uint32 need BIGINT; narrower integers fit INTEGER.
        wide = dtype.itemsize >= 8 or (dtype.kind == "u" and dtype.itemsize == 4)
        return "BIGINT" if wide else "INTEGER"
    if pd.api.types.is_float_dtype(dtype):
        return "DOUBLE"
    if isinstance(dtype, pd.DatetimeTZDtype):
        return "TIMESTAMPTZ"
    if pd.api.types.is_datetime64_dtype(dtype):
        return "TIMESTAMP"
    # object / string columns: what the non-null values are (pandas has no date dtype).
    kind = pd.api.types.infer_dtype(series, skipna=True)
    if kind in ("string", "empty"):
        return "VARCHAR"
    if kind == "boolean":
        return "BOOLEAN"
    if kind == "integer":
        return "BIGINT"
    if kind in ("floating", "mixed-integer-float"):
        return "DOUBLE"
    if kind == "date":
        return "DATE"
    if kind in ("datetime", "datetime64"):
        first = series.dropna().iloc[0]
        return "TIMESTAMPTZ" if getattr(first, "tzinfo", None) is not None else "TIMESTAMP"
    raise TypeError(f"load_frame: no SQL type for column {column!r} (values inferred as {kind!r}); "
                    f"pass types={{{column!r}: ...}}")


def _python_value(value):
    """A DataFrame cell as the Python value psycopg adapts; missing (None, NaN, NaT, NA) -> None."""
    if value is None or (np.ndim(value) == 0 and pd.isna(value)):
        return None
    if isinstance(value, pd.Timestamp):
        return value.to_pydatetime()
    if isinstance(value, np.generic):
        return value.item()
    return value


def load_frame(con, name: str, df: pd.DataFrame, *, primary_key: str | Sequence[str] | None = None,
               types: dict[str, str] | None = None) -> str:
    """Create table ``name`` (one identifier, unqualified: on PostgreSQL it lands in the test's
    schema) from ``df`` on a DuckDB or psycopg connection, with the same column types on both:
    integers BIGINT (INTEGER up to 32 bits), floats DOUBLE / double precision, strings VARCHAR /
    text, bool, dates (``datetime.date`` values) DATE, timestamps TIMESTAMP[TZ]. ``types`` overrides
    a column's type (DuckDB spelling, used verbatim when not one of those). Missing values (None,
    NaN, NaT, NA) become NULL; rows are inserted in the frame's order; ``primary_key`` declares a
    PRIMARY KEY on that column or columns. PostgreSQL rows go in by COPY and are committed.
    Returns ``name``."""
    types = dict(types or {})
    unknown = set(types) - set(map(str, df.columns))
    if unknown:
        raise KeyError(f"load_frame: types= names columns not in the frame: {sorted(unknown)}")
    columns = [str(c) for c in df.columns]
    if len(set(columns)) != len(columns):
        raise ValueError(f"load_frame: duplicate column names {columns}")
    sql_types = [types.get(c) or _column_type(c, df[c]) for c in df.columns]
    keys = [primary_key] if isinstance(primary_key, str) else list(primary_key or ())

    if isinstance(con, duckdb.DuckDBPyConnection):
        defs = [f"{quote(c)} {t}" for c, t in zip(columns, sql_types)]
        if keys:
            defs.append(f"PRIMARY KEY ({', '.join(map(quote, keys))})")
        con.execute(f"CREATE TABLE {quote(name)} ({', '.join(defs)})")
        view = f"__load_frame_{uuid.uuid4().hex}"
        frame = df.copy(deep=False)
        frame.columns = columns
        con.register(view, frame)  # DuckDB's pandas scan reads NaN / NaT / None as NULL
        try:
            # INSERT ... SELECT keeps the frame's order (preserve_insertion_order is on by default).
            con.execute(f"INSERT INTO {quote(name)} SELECT {', '.join(map(quote, columns))} FROM {quote(view)}")
        finally:
            con.unregister(view)
        return name

    from psycopg import sql

    defs = [sql.SQL("{} {}").format(sql.Identifier(c), sql.SQL(_PG_TYPES.get(t.upper(), t)))
            for c, t in zip(columns, sql_types)]
    if keys:
        defs.append(sql.SQL("PRIMARY KEY ({})").format(sql.SQL(", ").join(map(sql.Identifier, keys))))
    copy_sql = sql.SQL("COPY {} ({}) FROM STDIN").format(
        sql.Identifier(name), sql.SQL(", ").join(map(sql.Identifier, columns)))
    with con.cursor() as cur:
        cur.execute(sql.SQL("CREATE TABLE {} ({})").format(sql.Identifier(name), sql.SQL(", ").join(defs)))
        with cur.copy(copy_sql) as copy:  # text COPY: psycopg adapts each Python value
            for row in df.itertuples(index=False, name=None):
                copy.write_row([_python_value(v) for v in row])
    con.commit()
    return name


def here(con) -> tuple[str, str]:
    """``(database, schema)`` where unqualified new objects go: ``('memory', 'main')`` on DuckDB,
    the session's database and the test's own schema on PostgreSQL."""
    return tuple(con.execute("SELECT current_database(), current_schema()").fetchone())


def describe(con, name: str) -> list[tuple[str, str]]:
    """``(column, type)`` of a table or view, in the engine's own spelling."""
    if is_postgres(con):
        return rows(con, "SELECT attname::text, format_type(atttypid, atttypmod) FROM pg_attribute "
                         "WHERE attrelid = ?::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
                    [quote(name)])
    return [(r[0], r[1]) for r in con.execute(f"DESCRIBE {quote(name)}").fetchall()]


def series(n: int) -> str:
    """A FROM item of ``n`` rows numbered ``i`` (BIGINT 0..n-1), the same on DuckDB and PostgreSQL."""
    return f"generate_series(CAST(0 AS BIGINT), CAST({n - 1} AS BIGINT)) AS t(i)"


def columns(con, name: str) -> list[str]:
    """The column names of a table or view, in order (either engine)."""
    return list(frame(con, f"SELECT * FROM {quote(name)} LIMIT 0").columns)


def rendered_statements(monkeypatch) -> list[str]:
    """The SQL of every statement an engine renders from now on (each statement it runs is
    rendered once), in order: ``Engine.render`` wrapped through ``monkeypatch``."""
    import sqlanon.engine.base

    statements: list[str] = []
    render = sqlanon.engine.base.Engine.render

    def spy(self, statement):
        sql = render(self, statement)
        statements.append(sql)
        return sql

    monkeypatch.setattr(sqlanon.engine.base.Engine, "render", spy)
    return statements
