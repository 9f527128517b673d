"""Spark SQL through a ``pyspark.sql.SparkSession`` (``pip install "sqlanon[spark]"``).

The algorithm, the SQL builders and every decision are the ones DuckDB runs; this module
answers for what Spark spells or does its own way:

* a query costs ~0.1-0.5 s however small, so statements stay per level, never per partition;
* temp objects are managed Parquet tables in the session's current database (``CREATE TABLE
  ... USING parquet AS``), dropped at the end of the run: a temp *view* is a plan, and chaining
  one per level grows the plan at every level; a persistent view may not read temp objects;
* there are no transactions: a failed step is undone by dropping what it created (see
  :meth:`Engine.transaction`), and ``replace=True`` moves the old release aside until the new
  one has passed its check (:mod:`sqlanon.publish.pipeline`);
* there are no declared keys: a live view needs ``key=``, else the release is a snapshot;
* results come back as Arrow (``DataFrame.toArrow``), never row by row; the in-memory finish
  runs on the executors (:meth:`map_groups`: ``groupBy(b).applyInArrow``), so the table's rows
  never pass through the driver;
* ``UPDATE`` does not exist on Parquet tables: writers build a new table instead.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from sqlglot import exp

from ..errors import EngineError, InputError
from . import sqlgen as g
from .base import CatalogObject, Engine, GroupFunction, Statement, short
from .frames import sql_type, write_file
from .spark_env import check_executors
from .spark_tasks import PACKED, TaskTime, arrow_column, group_task, hash_labels, unpack

try:  # the JVM's errors reach Python as py4j errors when PySpark has no class for them
    from py4j.protocol import Py4JError
except ImportError:  # pragma: no cover - Spark Connect has no py4j
    Py4JError = PySparkException  # type: ignore[misc,assignment]

#: Spark type names (``DataType.simpleString``) -> the house spelling.
_TYPES = {
    "tinyint": "TINYINT", "smallint": "SMALLINT", "int": "INTEGER", "bigint": "BIGINT", "float": "FLOAT",
    "double": "DOUBLE", "string": "VARCHAR", "boolean": "BOOLEAN", "date": "DATE",
    "timestamp": "TIMESTAMP WITH TIME ZONE", "timestamp_ntz": "TIMESTAMP", "binary": "BLOB", "void": "NULL",
}
_PARQUET = exp.FileFormatProperty(this=exp.var("PARQUET"))
#: The house types of QIs the driver codes from their fetched values (:meth:`SparkEngine.codes_here`).
_CODED_HERE = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "FLOAT", "DOUBLE", "VARCHAR"}


def house_type(spark_type: str) -> str:
    """The house spelling of a Spark type name (``decimal(10,2)`` -> ``DECIMAL(10,2)``,
    ``varchar(20)`` -> ``VARCHAR``, ``timestamp`` -> ``TIMESTAMP WITH TIME ZONE``: Spark's
    ``TIMESTAMP`` is an instant, its ``TIMESTAMP_NTZ`` the wall-clock type)."""
    t = spark_type.strip().lower()
    if t in _TYPES:
        return _TYPES[t]
    m = re.fullmatch(r"decimal\((\d+),\s*(\d+)\)", t)
    if m:
        return f"DECIMAL({m.group(1)},{m.group(2)})"
    if t.startswith(("varchar", "char")):
        return "VARCHAR"
    return spark_type.upper()


class SparkEngine(Engine):
    """A ``SparkSession`` plus the temp objects of one run."""

    name = "spark"
    title = "Spark"
    #: A table is a directory of the warehouse named after it, and a file name holds at most 255
    #: bytes (NAME_MAX; measured: a 256-byte name fails in mkdirs). Views and columns live in the
    #: catalog and the Parquet schema, with no limit met (5,000 bytes worked).
    name_limits = {"table": 255}
    name_limit_reason = "a table is a directory named after it, and a file name holds at most 255 bytes"
    dialect = "spark"
    transactions = False
    distributed = True
    #: A sort is two more Spark jobs (the range bounds sampled, then the rows shuffled): two of
    #: the rules statement's three at 3,000 rows, and 2.5-3 s of CUP's ZIP hierarchy table;
    #: a Parquet table keeps no order for a reader.
    sorts_written = False
    views_read_temporary = False

    def __init__(self, con: Any) -> None:
        if not isinstance(con, SparkSession):
            raise InputError(f"con must be a pyspark.sql.SparkSession, got {type(con).__name__} {short(con)}")
        super().__init__(con)
        self._catalog: list[CatalogObject] | None = None  # objects(), until this run writes
        self._where: tuple[str, str] = ("", "")
        #: The tasks of the last :meth:`map_groups`, by group (:class:`~sqlanon.engine.spark_tasks.TaskTime`).
        self.task_times: list[TaskTime] = []

    # -- rendering and execution -------------------------------------------------------------
    def render(self, statement: Statement) -> str:
        """Spark SQL. A temp table becomes a managed Parquet table of the run (sqlglot would
        write a temp *view*, which is a plan, not data)."""
        if isinstance(statement, exp.Create) and statement.kind == "TABLE" and statement.expression is not None:
            props = statement.args.get("properties")
            if props is not None and any(isinstance(p, exp.TemporaryProperty) for p in props.expressions):
                statement = statement.copy()
                statement.set("properties", exp.Properties(expressions=[_PARQUET.copy()]))
        return super().render(statement)

    def _frame(self, sql: str) -> DataFrame:
        try:
            return self.con.sql(sql)
        except (PySparkException, Py4JError) as e:  # the engine's own errors, never ours
            raise EngineError(_message(e), sql) from e

    def _run(self, sql: str) -> None:
        self._catalog = None
        self._frame(sql)  # commands run when the statement is read

    def execute(self, statement: Statement) -> None:
        if isinstance(statement, exp.Create) and statement.kind == "TABLE" and statement.args.get("replace"):
            # Parquet tables have no CREATE OR REPLACE: drop, then create
            statement = statement.copy()
            statement.set("replace", False)
            super().execute(exp.Drop(tables=[statement.this.copy()], kind="TABLE", exists=True))
        super().execute(statement)

    def _arrow(self, sql: str) -> pa.Table:
        frame = self._frame(sql)
        try:
            return frame.toArrow()
        except (PySparkException, Py4JError) as e:
            raise EngineError(_message(e), sql) from e

    def _fetch_numpy(self, sql: str) -> dict[str, np.ndarray]:
        table = self._arrow(sql)
        return {name: arrow_column(table.column(i)) for i, name in enumerate(table.column_names)}

    def _fetch_rows(self, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        frame = self._frame(sql)
        try:
            rows = frame.collect()
        except (PySparkException, Py4JError) as e:
            raise EngineError(_message(e), sql) from e
        return list(frame.columns), [tuple(r) for r in rows]

    def fetch_frame(self, statement: Any) -> pd.DataFrame:
        sql = self.render(statement)
        self.statements += 1
        return self._arrow(sql).to_pandas()

    # -- transactions: none -------------------------------------------------------------------
    def in_transaction(self) -> bool:
        return False

    def check_environment(self) -> None:
        """The executors import this driver's sqlanon and find its in-memory finish (one small
        job per application, :func:`.spark_env.check_executors`; a local master defaults them to
        the driver's interpreter). The finish itself is imported there before its first job
        (:meth:`map_groups`): a release finished on the driver never runs it there."""
        check_executors(self.con)

    @contextlib.contextmanager
    def planned_for(self, rows: int) -> Iterator[None]:
        """A source that fits the driver (:attr:`driver_rows`): adaptive execution off and as
        many shuffle partitions as the executors have cores. Adaptive execution runs each
        stage of a statement as a Spark job of its own and plans the rest again after it (the
        verification of a 3,000-row release: 11 jobs, 6 without); what it adapts to (skew,
        partitions to coalesce, a join to broadcast) hardly exists on rows this few. Without it
        every shuffle has ``spark.sql.shuffle.partitions`` tasks (200 by default): as many as
        the cores, which is where it coalesces small shuffles to. At 3,000 rows a release ran
        11-12 Spark jobs instead of 18-21, in 7-11 s instead of 10-16 s on a loaded machine."""
        if not 0 < rows <= self.driver_rows:
            yield
            return
        with _setting(self.con, "spark.sql.adaptive.enabled", "false"), \
                _setting(self.con, "spark.sql.shuffle.partitions", str(self.workers())):
            yield

    def check_writable(self, what: str) -> None:
        """Spark sessions have no read-only mode; a catalog that refuses writes says so when the
        first table is created, before anything of the release exists."""

    # -- temp objects -------------------------------------------------------------------------
    #: Uploads of up to this many rows are temp views over the uploaded data (no file written: a
    #: 60,000-row upload took 0.2-0.4 s against 1.1-2.0 s saved as a Parquet table on a loaded
    #: machine, and was read as fast); larger ones are Parquet tables, read from files.
    view_rows = 1_000_000
    #: The driver finishes a table of up to this many rows (and ``memory_rows``) after one fetch of
    #: its working view (:attr:`Engine.driver_rows`): a small release then runs no executor job of
    #: its own, whose fixed cost (a range repartition, Python workers, a table written and read
    #: back) dominates below a million rows.
    driver_rows = 1_000_000

    def upload(self, purpose: str, columns: Mapping[str, np.ndarray],
               types: Mapping[str, str] | None = None) -> str:
        """A temp view over the uploaded rows when they are few (:attr:`view_rows`), else a
        managed Parquet table."""
        name = self.temp_name(purpose)
        frame = pd.DataFrame({k: np.asarray(v) for k, v in columns.items()})
        if len(frame) > self.view_rows:
            self._save(g.table(name), frame, types)
            return name
        self._views.add(name)
        self.statements += 1
        self._catalog = None
        try:
            self._data(frame, types).createOrReplaceTempView(name)
        except (PySparkException, Py4JError) as e:
            raise EngineError(_message(e), f"-- upload a DataFrame as the temp view {name}") from e
        return name

    def codes_here(self, data_type: str) -> bool:
        """Integers, floats and text: the in-memory finish of a small table fetches the working
        view's rows once, and coding their values with numpy spares one code table per QI or
        class column built from the source (a statement of 1-1.8 s each at 3,000 rows) and its
        join. Text orders alike: Spark compares strings by the bytes of their UTF-8, which is
        the order of their code points, Python's."""
        return data_type in _CODED_HERE

    def create_from_frame(self, name: str, frame: Any, *, replace: bool = False, schema: str | None = None) -> None:
        if not replace and self.con.catalog.tableExists(g.table(name, schema).sql(self.dialect)):
            raise EngineError(f"a table named {name!r} already exists", f"-- save a DataFrame as {name}")
        self._save(g.table(name, schema), frame)

    def _save(self, table: exp.Table, frame: pd.DataFrame, types: Mapping[str, str] | None = None) -> None:
        """A managed Parquet table holding ``frame`` (replacing one of that name), its columns of
        ``types`` where given: built on the driver, so for small data only (boxes, maps, test tables)."""
        self.statements += 1
        self._catalog = None
        try:
            self._data(frame, types).write.mode("overwrite").format("parquet").saveAsTable(table.sql(self.dialect))
        except (PySparkException, Py4JError) as e:
            raise EngineError(_message(e), f"-- save a DataFrame as {table.sql(self.dialect)}") from e

    def _data(self, frame: pd.DataFrame, types: Mapping[str, str] | None = None) -> DataFrame:
        """``frame`` as a Spark DataFrame, its columns of ``types`` where given."""
        schema = T.StructType([T.StructField(str(c), _spark_type((types or {}).get(str(c)) or sql_type(frame[c])))
                               for c in frame.columns])
        return self.con.createDataFrame(_plain_frame(frame, schema), schema=schema)

    def map_groups(
        self, rows: Callable[[int | None], exp.Expression], groups: int, function: GroupFunction,
        kept: Sequence[str], small: Sequence[str], purpose: str,
    ) -> tuple[str, dict[str, np.ndarray]]:
        """``groupBy(b).applyInArrow``: each group is finished by one task on an executor
        (:func:`~sqlanon.engine.spark_tasks.group_task`). Both results of a group travel as one
        Arrow table into one temp table: the kept rows as rows, the small results packed in one
        more row. The kept rows are read through a temp view of that table (no copy: at 10M
        rows a copy was a read and a write of every row); only the packed cells come back to
        the driver. The table stays to the run's cleanup, as the view reads it."""
        check_executors(self.con, finish=True)  # their Python imports the finish (once per application)
        sql = self.render(rows(None))
        schema = T.StructType([T.StructField(c, T.LongType(), True) for c in kept]
                              + [T.StructField(PACKED, T.BinaryType(), True)])

        both = self.temp_name(f"{purpose}_all")
        self.statements += 1
        self._catalog = None
        try:
            # One task per batch: groupBy alone hashes batches into shuffle partitions (several
            # batches to a task, idle cores), adaptive execution merges small partitions (every
            # batch in one task), and range partitioning reads every row once more to sample
            # its bounds. Each batch is relabelled with a number Spark's hash partitioning into
            # ``groups`` partitions sends to a partition of its own (hash_labels), so the rows
            # move once, straight to their batch's task, and groupBy needs no other shuffle.
            labels = hash_labels(groups)
            label = F.element_at(F.array(*[F.lit(x).cast("bigint") for x in labels]), F.col("b").cast("int") + 1)
            with _setting(self.con, "spark.sql.adaptive.coalescePartitions.enabled", "false"):
                task = group_task(function, kept, small, labels)
                self._frame(sql).withColumn("b", label).repartition(groups, "b").groupBy("b") \
                    .applyInArrow(task, schema).write.format("parquet").saveAsTable(g.table(both).sql(self.dialect))
        except (PySparkException, Py4JError) as e:
            raise EngineError(_message(e), sql) from e
        packed = g.col(PACKED)
        table = self.create_temp_view(purpose, exp.select(*[g.col(c) for c in kept]).from_(g.table(both))
                                      .where(exp.Is(this=packed, expression=exp.Null())))
        cells = self._arrow(self.render(exp.select(packed.copy()).from_(g.table(both))
                                        .where(exp.Not(this=exp.Is(this=packed.copy(), expression=exp.Null())))))
        self.statements += 1
        unpacked = sorted((unpack(cell, small) for cell in cells.column(0).to_pylist()), key=lambda p: p[0])
        self.task_times = [p[2] for p in unpacked if p[2] is not None]
        parts = [p[1] for p in unpacked]  # by group, as the base engine gives them
        return table, {c: np.concatenate([p[c] for p in parts]) if parts else np.zeros(0, np.int64) for c in small}

    def workers(self) -> int:
        """The executors' cores (``defaultParallelism``): each group of :meth:`map_groups` is a
        task, and as many run at once."""
        return max(1, int(self.con.sparkContext.defaultParallelism))

    # -- what Spark spells its own way ----------------------------------------------------------
    def row_hash(self, values: Sequence[exp.Expression]) -> exp.Expression:
        """``xxhash64(v1, v1 IS NULL, ...)``: Spark's hashes skip NULL arguments, so each value's
        NULL flag goes in too (else ``(NULL, 'a')`` and ``('a', NULL)`` would collide)."""
        args: list[exp.Expression] = []
        for v in values:
            args += [v.copy(), exp.Is(this=v.copy(), expression=exp.Null())]
        return exp.Anonymous(this="xxhash64", expressions=args)

    def epoch_us(self, value: exp.Expression, data_type: str) -> exp.Expression:
        """An instant (``TIMESTAMP WITH TIME ZONE``, Spark's ``TIMESTAMP``) by ``unix_micros``;
        a date or wall-clock timestamp as the microseconds from 1970-01-01 00:00 in
        ``TIMESTAMP_NTZ`` arithmetic, which no session time zone shifts."""
        if "ZONE" in data_type.upper():
            return exp.Anonymous(this="unix_micros", expressions=[value])
        epoch = exp.Cast(this=g.lit("1970-01-01 00:00:00"), to=exp.DataType.build("TIMESTAMP_NTZ", dialect="spark"))
        wall = exp.Cast(this=value, to=exp.DataType.build("TIMESTAMP_NTZ", dialect="spark"))
        return exp.Anonymous(this="timestampdiff", expressions=[exp.var("MICROSECOND"), epoch, wall])

    def is_infinite(self, value: exp.Expression) -> exp.Expression:
        infinities = [exp.Cast(this=g.lit(v), to=exp.DataType.build("DOUBLE")) for v in ("Infinity", "-Infinity")]
        return exp.In(this=value, expressions=infinities)

    def is_nan(self, value: exp.Expression) -> exp.Expression:
        return exp.Anonymous(this="isnan", expressions=[value])

    def code_type(self, size: int) -> str:
        return "SMALLINT" if size <= 2**15 else "INTEGER"

    def row_ids(self, columns: Sequence[str], table: bool) -> exp.Expression:
        """``monotonically_increasing_id()``: distinct without moving every row to one task (a
        window over the whole table would); the run reads them once, from its snapshot."""
        return exp.Anonymous(this="monotonically_increasing_id", expressions=[])

    #: A lookup table up to this many rows is broadcast to every task (Spark's own limit is 512M).
    broadcast_rows = 10_000_000

    def broadcast(self, query: exp.Select, small: Sequence[tuple[str, int]]) -> exp.Select:
        """A ``BROADCAST`` hint for each lookup table of at most :attr:`broadcast_rows` rows.
        Spark sizes a table by its files and would shuffle the whole scan by each large
        domain's values, once per join (the encoding at 10M rows: 34 s without the hints, 27 s with)."""
        hints = [exp.JoinHint(this="BROADCAST", expressions=[exp.to_identifier(alias)])
                 for alias, rows in small if rows <= self.broadcast_rows]
        if not hints:
            return query
        query = query.copy()
        query.set("hint", exp.Hint(expressions=hints))
        return query

    def export(self, query: exp.Expression, path: str, params: Sequence[exp.CopyParameter]) -> None:
        """The rows are fetched and written here (the CLI's ``--out`` is for results that fit in
        memory) (:func:`.frames.write_file`)."""
        write_file(self.fetch_frame(query), path, params)

    # -- catalog ------------------------------------------------------------------------------
    def current(self) -> tuple[str, str]:
        return self.con.catalog.currentCatalog(), self.con.catalog.currentDatabase()

    def objects(self) -> list[CatalogObject]:
        """Tables and views of the current database, and the session's temp views (as if in
        the current database: an unqualified name binds to them first). Listing costs ~0.2 s,
        so the list is kept until this engine next writes (one public call's reads share it)."""
        if self._catalog is not None and self._where == self.current():
            return list(self._catalog)
        catalog, database = self.current()
        out = []
        for t in self._tables(database):
            kind = "view" if t.tableType in ("VIEW", "TEMPORARY") or t.isTemporary else "table"
            sql = self._view_text(t.name, None if t.isTemporary else database) if kind == "view" else None
            # a temp view has no catalog or database: it is named unqualified
            where = ("", "") if t.isTemporary else (catalog, database)
            out.append(CatalogObject(*where, t.name, kind, bool(t.isTemporary), t.description, sql))
        self._catalog, self._where = out, (catalog, database)
        return list(out)

    def _tables(self, database: str) -> list[Any]:
        """The tables and views of ``database`` and the session's temp views, as
        ``Catalog.getTable`` describes them (type, temporary, comment). Listed by ``SHOW
        TABLES``, a command whose rows come back without a Spark job: ``Catalog.listTables``
        iterates its result with ``toLocalIterator``, which runs jobs (two or three per listing,
        five of a 3,000-row release's 26)."""
        where = g.ident(database).sql(self.dialect)
        show = exp.Command(this="SHOW", expression=exp.Literal.string(f"TABLES IN {where}"))  # sqlglot has no SHOW for Spark
        try:
            out = []
            for row in self.con.sql(self.render(show)).collect():  # (namespace, tableName, isTemporary)
                name = g.ident(row[1]).sql(self.dialect)
                with contextlib.suppress(PySparkException, Py4JError):  # dropped meanwhile: not listed
                    out.append(self.con.catalog.getTable(name if row[2] else f"{where}.{name}"))
            return out
        except (PySparkException, Py4JError) as e:
            raise EngineError(_message(e), f"-- list the tables of {database}") from e

    def _view_text(self, name: str, database: str | None) -> str | None:
        describe = exp.Describe(this=g.table(name, database), style="EXTENDED")
        try:
            rows = self.con.sql(self.render(describe)).collect()
        except (PySparkException, Py4JError):
            return None
        return next((r[1] for r in rows if r[0] in ("View Text", "View Original Text")), None)

    def columns(self, catalog: str, schema: str, name: str) -> list[tuple[str, str]]:
        query = exp.select(exp.Star()).from_(g.table(name, schema or None, catalog or None))
        return [(f.name, house_type(f.dataType.simpleString())) for f in self._frame(self.render(query)).schema.fields]

    def keys(self, catalog: str, schema: str, name: str) -> list[tuple[str, ...]]:
        """Spark's catalog holds no enforced keys: a live view needs ``key=``."""
        return []

    case_insensitive_names = True

    def taken(self, name: str, objects: Sequence[CatalogObject] | None = None) -> list[CatalogObject]:
        """Tables and views of the current database named ``name``, and a temp view of that
        name: an unqualified name would read the temp view instead of the new object."""
        listed = self.objects() if objects is None else objects
        return super().taken(name, listed) + [o for o in listed if o.temporary and o.name.lower() == name.lower()]

    def find(self, name: str, suffix: str = "") -> CatalogObject | None:
        """As Spark binds a name: a temp view of the session, then the current database; a
        dotted name as ``database.name`` or ``catalog.database.name``. Case-insensitively."""
        catalog, database = self.current()
        whole = (name + suffix).lower()
        for o in self.objects():
            if o.name.lower() == whole:
                return o
        parts = name.split(".")
        if len(parts) in (2, 3) and all(parts):
            db = parts[-2]
            if len(parts) == 3 and parts[0].lower() != catalog.lower():
                return None  # another catalog: not listed through the session catalog
            try:
                tables = [t for t in self._tables(db) if not t.isTemporary]
            except EngineError:
                return None
            for t in tables:
                if t.name.lower() == (parts[-1] + suffix).lower():
                    kind = "view" if t.tableType == "VIEW" else "table"
                    return CatalogObject(catalog, db, t.name, kind, False, t.description,
                                         self._view_text(t.name, db) if kind == "view" else None)
        return None

    def search_path(self) -> list[tuple[str, str]]:
        return [self.current()]

    def describe(self, query: exp.Expression) -> list[tuple[str, str]]:
        self.statements += 1
        return [(f.name, house_type(f.dataType.simpleString())) for f in self._frame(self.render(query)).schema.fields]

    def set_comment(self, table: str, text: str) -> None:
        self.execute(exp.Comment(this=g.table(table), kind="TABLE", expression=g.lit(text)))


@contextlib.contextmanager
def _setting(spark: SparkSession, key: str, value: str) -> Iterator[None]:
    """A session setting for the statements inside, the caller's restored after."""
    old = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        if old is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, old)


def _message(error: BaseException) -> str:
    """The first lines of a Spark error (its JVM stack trace is not for users)."""
    text = str(error).strip()
    return "\n".join(text.splitlines()[:3]) if text else type(error).__name__


def _spark_type(house: str) -> T.DataType:
    """The Spark type of a house type name (for frames saved as tables)."""
    return T._parse_datatype_string(exp.DataType.build(house, dialect="duckdb").sql("spark").lower())


def _plain_frame(frame: pd.DataFrame, schema: T.StructType) -> pd.DataFrame:
    """``frame`` with object columns of integers turned into nullable integers, which Arrow
    carries as the declared type (Spark refuses an object column for a LONG field)."""
    out = {}
    for f, c in zip(schema.fields, frame.columns):
        column = frame[c]
        if column.dtype == object and isinstance(f.dataType, (T.LongType, T.IntegerType, T.ShortType)):
            column = column.astype("Int64")
        out[c] = column
    return pd.DataFrame(out)
