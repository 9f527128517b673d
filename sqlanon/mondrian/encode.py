"""Encode the source into the working table: one code table per QI in the database, then one
statement that writes every row's codes (see :mod:`sqlanon.model.domain` for the encoding).

Where the run's rows are fetched into this process anyway (:func:`codes_here`), the QIs of the
types the engine names (:meth:`Engine.codes_here <sqlanon.engine.base.Engine.codes_here>`) are
fetched as values and coded here instead (:func:`code_fetched`): no code table is built from the
source, no row is joined with one, and the domains keep the distinct values (no code table)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sqlglot import exp

from ..engine import sqlgen as g
from ..engine.base import Engine
from ..engine.catalog import distinct_values
from ..model.domain import Domain, ordered_positions
from ..model.hierarchy import leaf_codes
from ..model.qi import QI, classify
from ..request.spec import Spec


def codes_here(engine: Engine, spec: Spec, strategy: str) -> frozenset[int]:
    """The positions of the QIs this process codes from their fetched values (:func:`code_fetched`):
    the ordered QIs of the types :meth:`Engine.codes_here` names, when the working table is a
    view whose rows are fetched once for the in-memory finish anyway (Rothko-T on a table that
    fits ``memory_rows``, :func:`reads_work_as_view`). Empty otherwise."""
    if strategy != "levels" or not reads_work_as_view(engine, spec, strategy):
        return frozenset()
    return frozenset(q.position for q in spec.qis if q.ordered and engine.codes_here(q.data_type))


def build_domains(engine: Engine, spec: Spec, source: exp.Table,
                  here: frozenset[int] = frozenset()) -> tuple[Domain | None, ...]:
    """Create one code table per QI (temp) and return the domains; None for the QIs of ``here``
    (:func:`codes_here`), whose domains :func:`code_fetched` makes from the fetched rows.

    The positions of every ordered QI's codes come back in one statement (a UNION ALL of the
    code tables, each row tagged with its QI): one round trip instead of one per QI."""
    tables = {qi.position: code_table(engine, qi.name, source, qi.has_null, f"dom{qi.position}")
              for qi in spec.qis if qi.ordered and qi.position not in here}
    values = _positions(engine, spec, tables)
    return tuple(
        None if qi.position in here else
        Domain(qi, len(values[qi.position]) + int(qi.has_null), tables[qi.position],
               ordered_positions(values[qi.position], qi), held_integers(engine, qi, values[qi.position]))
        if qi.ordered else _hierarchical(engine, qi, source)
        for qi in spec.qis
    )


def held_integers(engine: Engine, qi: QI, positions: np.ndarray) -> np.ndarray | None:
    """An integer QI's values in code order (:attr:`Domain.values`) on a distributed engine,
    from the positions :func:`_positions` fetched anyway (the values as DOUBLE, exact up to
    2^53): the rules then print its bounds without looking codes up in the code table
    (:func:`sqlanon.publish.rules.values_here`). On Spark each of those lookups is a broadcast
    join of its own: the rules of nine integer QIs took 16 jobs and 21.5 s at 1M Agrawal rows
    (a load of 9). None elsewhere, and for values past 2^53."""
    if not engine.distributed or not qi.integer or (len(positions) and np.abs(positions).max() > 2.0**53):
        return None
    return positions.astype(np.int64)


def code_fetched(engine: Engine, spec: Spec, domains: Sequence[Domain | None],
                 rows: dict[str, np.ndarray]) -> tuple[tuple[Domain, ...], dict[str, np.ndarray]]:
    """The domains of the QIs coded here (``domains[i]`` None) and ``rows`` (the working view
    fetched, :func:`encode`) with their values ``v<i>`` (and NULL flags ``n<i>``) replaced by
    codes ``q<i>``.

    The codes are what the code table would give (:func:`code_table`, :func:`_codes`). The
    domain keeps the values (:attr:`Domain.values`), from which the rules print their bounds in
    the QI's own type (:func:`sqlanon.publish.rules.values_here`); the code table ``(v, code)``
    is uploaded, in that type, only for a QI published ``"domain"``. The class columns of
    :func:`classes_here` are coded alike (their values ``cv<j>`` and NULL flags ``cn<j>``
    replaced by codes ``k<j>``)."""
    out: list[Domain] = []
    for i, (qi, d) in enumerate(zip(spec.qis, domains)):
        if d is not None:
            out.append(d)
            continue
        first = int(qi.has_null)
        distinct, rows[f"q{i}"] = _codes(rows.pop(f"v{i}"), rows.pop(f"n{i}", None), first)
        positions = distinct.astype(np.float64) if qi.kind == "numeric" else np.zeros(len(distinct))  # text: by rank
        # The rules print values from ``distinct`` (Domain.values); only a QI published "domain" looks
        # a code up in its table (sqlanon.publish.suppression.visibility). At 1M Agrawal rows on
        # PostgreSQL the nine uploads were 1.27M rows, each table analyzed.
        table = engine.upload(f"dom{qi.position}", {"v": distinct, "code": np.arange(first, first + len(distinct))},
                              types={"v": qi.data_type}) if qi.bounds == "domain" else None
        out.append(Domain(qi, len(distinct) + first, table, ordered_positions(positions, qi), distinct))
    for j in classes_here(engine, spec, domains):
        stat = spec.workload.class_stats[j]
        distinct, rows[f"k{j}"] = _codes(rows.pop(f"cv{j}"), rows.pop(f"cn{j}", None), int(stat.nulls))
        if len(distinct) + int(stat.nulls) != stat.size:
            raise AssertionError(f"class column {stat.name!r}: {len(distinct)} values coded here, "
                                 f"{stat.size - int(stat.nulls)} counted")
    return tuple(out), rows


def ranked(values: np.ndarray, first: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` with the ranks counted from ``first``: the
    distinct values in ascending order and each value's rank among them (an integer array).
    Integers spanning at most :data:`COUNTED_SPAN` values (or twice their number) are counted
    rather than sorted: one pass marks the values present, a running sum of the marks ranks
    them, and one gather looks each value's rank up, in 32 bits (the finishes' width). 10M
    Agrawal values of ``hvalue`` (1.2M distinct): about 0.1 s where the sort takes about 1 s."""
    low, high = (int(values.min()), int(values.max())) if values.dtype.kind in "iu" and len(values) else (0, -1)
    span = high - low + 1
    if not 0 < span <= max(COUNTED_SPAN, 2 * len(values)) or span >= 2**31:
        distinct, inverse = np.unique(values, return_inverse=True)
        return distinct, inverse.reshape(-1) + first
    # value - low in the values' own width is exact modulo 2^bits, and below 2^31: read unsigned
    offset = (values - values.dtype.type(low)).view(f"u{values.dtype.itemsize}")
    if values.dtype.itemsize == 8:
        offset = offset.view(np.int64)
    present = np.bincount(offset, minlength=span).astype(bool)
    rank = np.cumsum(present, dtype=np.int32)
    rank += np.int32(first - 1)
    return (np.flatnonzero(present) + low).astype(values.dtype), rank[offset]


#: :func:`ranked` counts integers spanning at most this many values (or twice their number).
COUNTED_SPAN = 1 << 22


def code_table(engine: Engine, column: str, source: exp.Table, has_null: bool, purpose: str) -> str:
    """A temp table ``(v, code)``: the column's distinct non-NULL values in ascending order,
    coded from 0 — or from 1 when the column has NULLs, which take code 0."""
    name = engine.temp_name(purpose)
    distinct = (
        exp.select(g.alias(g.col(column), "v"))
        .distinct()
        .from_(source)
        .where(exp.Not(this=exp.Is(this=g.col(column), expression=exp.Null())))
    )
    rank = exp.Window(this=exp.RowNumber(), order=exp.Order(expressions=[exp.Ordered(this=g.col("v"))]))
    offset = int(has_null) - 1  # row_number() starts at 1
    query = exp.select(g.col("v"), g.alias(exp.Add(this=rank, expression=g.lit(offset)), "code")).from_(
        exp.Subquery(this=distinct, alias=exp.TableAlias(this=g.ident("d")))
    )
    engine.execute(g.create_table_as(name, query))
    return name


def _positions(engine: Engine, spec: Spec, tables: dict[int, str]) -> dict[int, np.ndarray]:
    """Each ordered QI's value per non-NULL code, as a float (numbers as they are, dates and
    timestamps in microseconds, text and booleans by code), in code order."""
    if not tables:
        return {}
    parts: list[exp.Select] = []
    for qi in spec.qis:
        if qi.position not in tables:
            continue
        if qi.kind == "numeric":
            position: exp.Expression = exp.Cast(this=g.col("v"), to=exp.DataType.build("DOUBLE"))
        elif qi.kind == "temporal":
            position = engine.epoch_us(g.col("v"), qi.data_type)
        else:
            position = g.col("code")
        parts.append(exp.select(
            g.alias(g.lit(qi.position), "q"), g.col("code"),
            g.alias(exp.Cast(this=position, to=exp.DataType.build("DOUBLE")), "x"),
        ).from_(g.table(tables[qi.position])))
    union: exp.Query = parts[0]
    for part in parts[1:]:
        union = exp.union(union, part, distinct=False)
    rows = engine.fetch(union)
    q = np.asarray(rows["q"], dtype=np.int64)
    code = np.asarray(rows["code"], dtype=np.int64)
    x = np.asarray(rows["x"], dtype=np.float64)
    out: dict[int, np.ndarray] = {}
    for qi in spec.qis:
        if qi.position not in tables:
            continue
        mine = q == qi.position
        values = np.empty(int(mine.sum()), dtype=np.float64)
        values[code[mine] - int(qi.has_null)] = x[mine]  # codes of non-NULL values: dense from first_value
        out[qi.position] = values
    return out


def _hierarchical(engine: Engine, qi: QI, source: exp.Table) -> Domain:
    h = qi.hierarchy
    assert h is not None
    rows = distinct_values(engine, qi.name, source, classify(qi.data_type) == "numeric")
    codes = leaf_codes(h, rows["v"], rows["t"])
    name = engine.upload(f"dom{qi.position}", {"t": np.asarray(rows["t"], dtype=object), "code": codes})
    return Domain(qi, h.n_leaves, name, None)


def encode(engine: Engine, spec: Spec, domains: Sequence[Domain | None], source: exp.Table, rid: exp.Expression,
           *, view: bool = False) -> str:
    """Create the working table: one row per source row (see :mod:`sqlanon.mondrian.levels`).

    ``rid``, ``pid``, ``qhash`` (a fingerprint of the row's QI and constraint columns, so the
    live view can refuse rows that changed after the release; only with a key,
    :func:`~sqlanon.mondrian.levels.row_columns`), the QI codes
    ``q0..``, the codes of the class columns ``k0..`` and the centered numeric columns ``t0..``
    (integers when exact).

    ``view``: a temp *view* over the source and the code tables instead of a table
    (:func:`reads_work_as_view`): the rows are encoded by the statements that read them, and
    the encoded table is never written on its own.

    A QI whose domain is None is coded by this process (:func:`code_fetched`): the view holds
    its value ``v<i>`` (NULL as 0, and a flag ``n<i>`` when the column has NULLs) in place of
    ``q<i>``; so does a class column of :func:`classes_here` (``cv<j>``, ``cn<j>`` in place of
    ``k<j>``): no code table is built for it.
    """
    select = [g.alias(rid, "rid"), g.alias(exp.Cast(this=g.lit(0), to=exp.DataType.build("BIGINT")), "pid")]
    if spec.hashed:
        select.append(g.alias(_fingerprint(engine, spec), "qhash"))
    query = exp.select(*select).from_(exp.alias_(source, g.ident("b"), table=True))
    lookups: list[tuple[str, int]] = []  # (alias, rows) of each code table joined
    for i, (qi, d) in enumerate(zip(spec.qis, domains)):
        alias = f"d{i}"
        value = g.col(qi.name, "b")
        if d is None:  # coded by this process, from the value
            query = _select_value(query, value, qi.data_type, qi.has_null, f"v{i}", f"n{i}")
            continue
        start = dense_start(d)
        if start is not None:  # every integer of its range: the code is arithmetic, no lookup
            code: exp.Expression = exp.Add(
                this=exp.Sub(this=exp.Cast(this=value, to=exp.DataType.build("BIGINT")), expression=g.lit(start)),
                expression=g.lit(d.first_value))
        else:
            lookups.append((alias, d.size))
            if d.qi.ordered:
                on: exp.Expression = exp.EQ(this=value, expression=g.col("v", alias))
            else:
                on = exp.EQ(this=exp.Cast(this=value, to=exp.DataType.build("VARCHAR")), expression=g.col("t", alias))
            query = query.join(exp.alias_(g.table(d.table), g.ident(alias), table=True), on=on, join_type="left",
                               copy=False)  # no copy: the loop grows one tree
            code = g.col("code", alias)
        query = query.select(g.alias(_as_code(engine, code, d.size), f"q{i}"), copy=False)
    classes = classes_here(engine, spec, domains)
    for j, stat in enumerate(spec.workload.class_stats):
        alias = f"k{j}"
        box = spec.workload.indicator(stat.name)
        if box is not None:  # Selection Mondrian: 1 if the row lies in the query region
            # CASE, not CAST(boolean AS integer): PostgreSQL has no such cast
            inside = exp.Case().when(box.predicate(lambda c: g.col(c, "b")), g.lit(1)).else_(g.lit(0))
            code_type = exp.DataType.build(engine.code_type(2), dialect=g.DIALECT)
            query = query.select(g.alias(exp.Cast(this=inside, to=code_type), alias), copy=False)
            continue
        if j in classes:  # coded by this process, from the value (code_fetched)
            query = _select_value(query, g.col(stat.name, "b"), classes[j], stat.nulls, f"cv{j}", f"cn{j}")
            continue
        table = code_table(engine, stat.name, source, stat.nulls, f"class{j}")
        lookups.append((alias, stat.size))
        on = exp.EQ(this=g.col(stat.name, "b"), expression=g.col("v", alias))
        query = query.join(exp.alias_(g.table(table), g.ident(alias), table=True), on=on, join_type="left", copy=False)
        query = query.select(g.alias(_as_code(engine, g.col("code", alias), stat.size), alias), copy=False)
    for j, stat in enumerate(spec.workload.numeric_stats):
        kind = "BIGINT" if stat.exact else "DOUBLE"
        value = exp.Cast(this=g.col(stat.name, "b"), to=exp.DataType.build(kind))
        center = exp.Cast(this=g.lit(int(stat.center) if stat.exact else stat.center), to=exp.DataType.build(kind))
        query = query.select(g.alias(exp.Sub(this=value, expression=center), f"t{j}"), copy=False)
    query = engine.broadcast(query, lookups)
    if view:
        return engine.create_temp_view("work", query)
    return engine.create_temp("work", query)


def _select_value(query: exp.Select, value: exp.Expression, data_type: str, nulls: bool, name: str,
                  flag: str) -> exp.Select:
    """``query`` with a column ``name`` of ``value`` for this process to code (NULL as 0 of
    ``data_type``) and, when the column has ``nulls``, its NULL flag ``flag``."""
    zero = exp.Cast(this=g.lit(0), to=exp.DataType.build(data_type, dialect=g.DIALECT))
    query = query.select(g.alias(exp.Coalesce(this=value, expressions=[zero]), name), copy=False)
    if nulls:
        query = query.select(g.alias(exp.Is(this=value.copy(), expression=exp.Null()), flag), copy=False)
    return query


def classes_here(engine: Engine, spec: Spec, domains: Sequence[Domain | None]) -> dict[int, str]:
    """The class columns (by position in ``spec.workload.class_stats``, with their house types)
    this process codes from their fetched values, as it codes the QIs whose domains are None
    (:func:`codes_here`): those of the types :meth:`Engine.codes_here` names, when any QI is
    coded here (the working view's rows are fetched). A selection's indicator is no column."""
    if all(d is not None for d in domains):
        return {}
    types = dict(spec.source.columns)
    return {j: types[stat.name] for j, stat in enumerate(spec.workload.class_stats)
            if spec.workload.indicator(stat.name) is None and engine.codes_here(types[stat.name])}


def _codes(values: np.ndarray, null: np.ndarray | None, first: int) -> tuple[np.ndarray, np.ndarray]:
    """``(distinct, codes)``: the distinct non-NULL ``values`` (``null``: their NULL flags) in
    ascending order, and each value's code, counted from ``first`` (NULL: 0) -- what
    :func:`code_table` numbers (:func:`ranked`: numbers order alike everywhere; NaN and
    infinities are refused before any work, and -0.0 is 0.0 as in SQL's ``DISTINCT``; text in
    code point order, which is the byte order of its UTF-8 that Spark and DuckDB sort by)."""
    if values.dtype.kind == "f":
        values = values + 0.0  # -0.0 + 0.0 is 0.0: one value, as DISTINCT sees it
    present = values if null is None else values[~null]
    distinct, inverse = ranked(present, first)
    if null is None:
        return distinct, inverse
    codes = np.zeros(len(values), dtype=inverse.dtype)
    codes[~null] = inverse
    return distinct, codes


def _as_code(engine: Engine, code: exp.Expression, size: int) -> exp.Expression:
    """A working-table code column: ``code`` in the engine's narrowest type for ``size`` codes,
    NULL (a NULL value, or no match in a code table) as code 0 -- NULL's code whenever the
    column has NULLs."""
    whole = exp.Coalesce(this=code, expressions=[g.lit(0)])
    return exp.Cast(this=whole, to=exp.DataType.build(engine.code_type(size), dialect=g.DIALECT))


def dense_start(d: Domain) -> int | None:
    """The smallest value of an integer QI whose non-NULL values are every integer from it to
    the largest, else None. Its codes are then arithmetic, ``code = value - start +
    first_value`` (the rank among the distinct values), and encoding needs no join with its code
    table: at 100M Agrawal rows the lookups of the seven such QIs (salary, loan, age, ...) cost
    16 s of the working table's 26 s of join time."""
    if d.num is None or not d.qi.integer or d.size <= d.first_value:
        return None
    values = d.num[d.first_value:]
    low, high = float(values[0]), float(values[-1])
    exact = max(abs(low), abs(high)) < 2**53  # the positions are floats: exact integers only below 2^53
    return int(low) if exact and high - low == len(values) - 1 else None


def _fingerprint(engine: Engine, spec: Spec) -> exp.Expression:
    """The row's ``qhash``: what the live view of a keyed source compares (:mod:`sqlanon.publish.view`).
    A keyless source has none: its release is a view of a snapshot that nothing compares (hashing
    the guarded columns of every row cost 16 ms per 1M rows)."""
    return engine.row_hash([g.col(c, "b") for c in spec.guarded_columns])


def reads_work_as_view(engine: Engine, spec: Spec, strategy: str) -> bool:
    """Whether a multidimensional run's working table is a temp view (:func:`encode`), without a
    suppression budget (the publication reads the suppressed rows' codes from the working table,
    once per QI: over a view each read encodes the rows again; at 10M Agrawal rows the
    publication took 8.4 s instead of 5.9 s):

    - Rothko-T (``"levels"``) on a table that fits ``memory_rows`` (and, on a distributed engine,
      :attr:`Engine.driver_rows <sqlanon.engine.base.Engine.driver_rows>`): no SQL level, the
      in-memory finish reads the working table once, encoding the rows as it fetches them, and
      runs in this process (on Spark: one fetch instead of an executor job, its reads and writes);
    - Rothko-S (``"sample"``) on an engine whose sample filters before the view's lookups
      (:attr:`Engine.samples_views <sqlanon.engine.base.Engine.samples_views>`): its first round
      reads the working table twice, the sample and the rewrite (:mod:`sqlanon.mondrian.sample`),
      and the rewrite then writes it. Over a view the rewrite encodes, walks the tree and sorts
      in one statement, and the encoded rows are not written first: at 100M Agrawal rows under
      DuckDB's ``memory_limit='2GB'`` that saves writing the table (9.8 s) and reading it back
      from the spill (5.7 s); the runs took 114.6-122.1 s against 134.5-165.4 s. Only when both
      reads see the same rows: the run's snapshot, or the source read in place inside the
      caller's transaction, which it holds until the first rewrite
      (:func:`sqlanon.mondrian.sample.run_sample`) -- not a source read directly by its integer
      key. Not on a distributed engine: Spark's executors would read the view twice more (the
      rewrite's range partitioning samples the rows first).

    The caller holds the transaction over the source's reads until the view is no longer read.
    """
    if spec.single is not None or spec.suppression:
        return False
    if strategy == "sample":
        return not engine.distributed and engine.samples_views and not (spec.key is not None and spec.key.direct)
    return strategy == "levels" and 0 < spec.source.rows <= min(spec.memory_rows, engine.driver_rows)
