"""Resolve and validate a request into a frozen :class:`Spec` before any object is written.

Everything a user can get wrong is checked here, with a specific error: the table and the columns
(listing what exists), the QI list, k, the QI types, the hierarchies (naming missing values) and
the output names (refusing to overwrite unless ``replace=True``).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp

from ..engine import engine_for
from ..engine import sqlgen as g
from ..engine.base import Engine, Name
from ..engine.catalog import Source, distinct_values, find_source, free_name, table_rows
from ..errors import (
    HierarchyError,
    InputError,
    ObjectExistsError,
    RecodingError,
    TextOrderWarning,
    UnknownColumnError,
    UnsupportedTypeError,
    did_you_mean,
    warn,
)
from ..hierarchies import built
from ..model import manifest_format
from ..model.hierarchy import Hierarchy, hierarchy_from, leaf_codes
from ..model.qi import QI, box_columns, classify, published_columns
from .checks import case_duplicate, check_free, check_int, check_number, check_qid, short_repr
from .output import Output
from .owned import owned as release_owned
from .published import interval_columns, published_modes, with_bounds
from .single import Single, flat_hierarchy, requirement, resolve_single
from .workload import Workload, resolve_workload

#: The column of the published view holding the equivalence-class (region) id.
EQ_CLASS = manifest_format.EQ_CLASS
#: Default number of rows below which partitions are finished in memory (numpy), for an engine
#: that does not say how much memory it may use (PostgreSQL, Spark: batches on executors).
DEFAULT_MEMORY_ROWS = 2_000_000
#: Bytes of the engine's memory limit per row finished in memory: the finish holds a row's codes,
#: ids and hashes a few times over (about 250 bytes for nine QIs), and takes a quarter of what the
#: engine may use, so DuckDB's default limit (80 % of RAM) finishes a 10M-row table in memory
#: without SQL levels, and ``memory_limit='2GB'`` keeps batches near 2M rows.
BYTES_PER_MEMORY_ROW = 1000
#: The smallest default ``memory_rows``, however small the limit.
MIN_MEMORY_ROWS = 100_000

#: Key types whose values serve directly as the run's BIGINT row id (no snapshot needed).
_DIRECT_KEY_TYPES = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER"}


@dataclass(frozen=True)
class RowIdentity:
    """How a live view finds each source row again: the key columns it joins on.

    A database's own row numbers are no identity: DuckDB renumbers ``rowid`` on CHECKPOINT after
    deletes, so a view joined on it publishes unchanged rows as unplaced and new rows inside old
    classes. Only a key survives changes to the table. ``declared``: the database enforces it
    (PRIMARY KEY or UNIQUE), so the view need not guard against duplicate key values.
    """

    columns: tuple[str, ...]
    declared: bool
    direct: bool  # one integer column: it is the run's row id itself


@dataclass(frozen=True)
class Outputs:
    """Names of the objects a release creates in the connection's current schema, and the names
    of its own columns (derived so that they never collide with the user's columns)."""

    view: str
    rules: str
    assignment: str
    materialize: bool  # publish a view of a snapshot (no key to find rows again) instead of a live view
    hierarchies: str | None = None  # where the hierarchies of hierarchical QIs are kept
    existing: tuple[tuple[str, str], ...] = ()  # (name, kind) of objects replace=True overwrites
    class_column: str = "eq_class"  # the view's equivalence-class column
    region_column: str = "region"  # the rules' region id
    size_column: str = "size"  # the rules' region size


@dataclass(frozen=True)
class Spec:
    """A validated anonymization request."""

    source: Source
    qis: tuple[QI, ...]
    k: int
    outputs: Outputs
    memory_rows: int
    replace: bool
    workload: Workload
    key: RowIdentity | None = None  # None: published as a view of a snapshot
    single: Single | None = None  # a single-dimensional recoding (TDR); None: Mondrian
    suppression: float = 0.0  # the fraction of rows that may be suppressed
    at_root_before: Mapping[str, float] | None = None  # Mondrian's root shares without it (manifest)

    @property
    def suppression_limit(self) -> int:
        """The most rows the release may suppress: ``floor(suppression * rows)`` (0 when the
        request allows none). Mondrian spends it as the root's local budget, the genetic and
        lattice searches as a limit (:mod:`sqlanon.publish.suppression`)."""
        return int(self.suppression * self.source.rows + 1e-9)

    @property
    def hashed(self) -> bool:
        """Whether the working table has a ``qhash`` column (:func:`sqlanon.mondrian.levels.row_columns`):
        only a keyed release's live view compares it."""
        return self.key is not None

    @property
    def guarded_columns(self) -> tuple[str, ...]:
        """The columns whose change after the release unplaces a row in the live view: the QIs
        and every column a constraint judges (a changed sensitive value could break l)."""
        names = [q.name for q in self.qis]
        for c in self.workload.constraints:
            names += [x for x in (*c.class_columns, *c.numeric_columns) if x not in names]
        return tuple(names)



def default_memory_rows(engine: Engine) -> int:
    """``memory_rows`` when none is given: the engine's memory limit (capped by this machine's
    RAM) over :data:`BYTES_PER_MEMORY_ROW`, at least :data:`MIN_MEMORY_ROWS`;
    :data:`DEFAULT_MEMORY_ROWS` when the engine does not say. The partition does not depend on
    it; only where the work happens (SQL levels or memory) does."""
    limit = engine.usable_memory()
    if limit is None:
        return DEFAULT_MEMORY_ROWS
    return max(MIN_MEMORY_ROWS, limit // BYTES_PER_MEMORY_ROW)


def resolve(
    engine: Engine,
    table: str,
    qid: Sequence[str] | None,
    k: int | None,
    *,
    algorithm: Any,
    privacy: Sequence[Any] = (),
    hierarchies: Mapping[str, Any] | None = None,
    output: Output | None = None,
    sensitive: str | Sequence[str] | None = None,
    l: float | None = None,
    target: str | Sequence[str] | None = None,
    selections: str | Sequence[str] | None = None,
    published: Any = None,
    suppression: float | None = None,
) -> Spec:
    """Check the whole request against the database and return it as a :class:`Spec`.

    ``algorithm``: the :class:`~sqlanon.request.algorithm.Algorithm`, already checked against
    the rest of the request (:func:`~sqlanon.request.algorithm.check_fit`); it is asked for its
    criterion, its memory budget and whether it recodes single-dimensionally.

    Raises:
        InputError: (or a subclass) for anything wrong, before any object is created.
    """
    output = output if output is not None else Output()
    single = algorithm.single_dimensional
    qid, k, pairs, privacy = requirement(qid, k, privacy)
    fraction = 0.0
    if suppression is not None:
        fraction = check_number("suppression", suppression, 0.0)
        if fraction >= 1.0:
            raise InputError(f"suppression is the fraction of rows that may be suppressed, in [0, 1); got "
                             f"{suppression!r}")
    memory_rows = algorithm.memory_rows
    replace = output.replace
    qid = check_qid(qid)  # the request's shape first: no query runs for a malformed one
    k = check_int("k", k, minimum=1)
    pairs = pairs or ((tuple(qid), k),)
    extra = [c.min_size for c in privacy if c.size_only]  # k-anonymity: a size is all it asks
    if single and extra:  # a single-dimensional search enforces k through its QIDs: the largest k counts
        k = max(k, *extra)
        pairs = tuple((c, max(kk, k)) if set(c) == set(qid) else (c, kk) for c, kk in pairs)
        pairs += ((tuple(qid), k),) if all(set(c) != set(qid) for c, _ in pairs) else ()
        privacy = tuple(c for c in privacy if not c.size_only)
    objects = engine.objects()
    source = find_source(engine, objects, table, count=False)
    qid = _check_qid(qid, source)
    source, nulls, violations = _counted(engine, source, qid, output.key)
    if k > source.rows:
        raise InputError(
            f"k={k} is larger than the table: {source.name!r} has {source.rows} rows, so no "
            f"partition can hold k of them."
        )
    sized = memory_rows is None  # the default: sized from the engine, the criterion known below
    memory_rows = default_memory_rows(engine) if memory_rows is None else check_int("memory_rows", memory_rows, 0)
    if hierarchies is not None and not isinstance(hierarchies, Mapping):
        raise HierarchyError(f"hierarchies must be a dict {{QI column: hierarchy}}, got {type(hierarchies).__name__} "
                             f"{short_repr(hierarchies)}")
    hierarchies = dict(hierarchies or {})
    unknown = sorted(set(hierarchies) - set(qid))
    if unknown:
        raise HierarchyError(f"hierarchies given for columns that are not QIs: {unknown}; QIs: {qid}")
    # a builder (sqlanon.hierarchies.Builder) builds its hierarchy from the column's values here
    hierarchies = built(hierarchies, lambda q: [row[0] for row in engine.fetch_rows(
        exp.select(g.col(q)).distinct().from_(source.ref))])
    types = dict(source.columns)
    # published= (sqlanon.request.published): a numeric QI whose hierarchy is published as
    # intervals is partitioned as an ordered QI, so its hierarchy leaves the loop below
    modes = published_modes(published, qid, types, hierarchies)
    given, hierarchies = hierarchies, {q: h for q, h in hierarchies.items() if q not in interval_columns(modes)}
    # a categorical QI without a hierarchy is refined from ⊥ by recoding='single' (the loop below)
    ordered = {q: q not in hierarchies and not (single and classify(types[q]) == "ordinal") for q in qid}
    _check_names(engine, source, output.view, output.class_column, ordered)
    qis = []
    suppressed = []
    for position, name in enumerate(qid):
        data_type = types[name]
        if single and name not in hierarchies and classify(data_type) == "ordinal":
            # TDR suppresses a categorical column without a hierarchy (⊥) and discloses values
            suppressed.append(name)
            rows = distinct_values(engine, name, source.ref, False)
            qis.append(QI(name, "hierarchy", data_type, flat_hierarchy(sorted(str(t) for t in rows["t"])),
                          has_null=nulls[name], position=position))
            continue
        if name in hierarchies:
            h = hierarchy_from(hierarchies[name], lambda table: table_rows(engine, table))
            _check_leaves(engine, source, name, h)
            qis.append(QI(name, "hierarchy", data_type, h.with_null_leaf() if nulls[name] else h,
                          has_null=nulls[name], position=position))
            continue
        kind = classify(data_type)
        if kind is None:
            raise UnsupportedTypeError(
                f"QI {name!r} has type {data_type}, which sqlanon cannot generalize. Supported: "
                f"integers, floats, decimals, dates, timestamps, VARCHAR, BOOLEAN, ENUM (ordered), "
                f"or any type with a hierarchy."
            )
        qis.append(QI(name, kind, data_type, has_null=nulls[name], position=position))
    qis = with_bounds(engine, source.ref, qis, modes, given, lambda table: table_rows(engine, table))
    _check_finite(engine, source, qis)
    plan = None
    criterion = algorithm.criterion
    if single:  # (every QID's columns are in the union qid, checked above)
        if algorithm.needs_hierarchies and (suppressed or set(qid) - set(hierarchies)):
            missing = [q for q in qid if q not in hierarchies]
            raise RecodingError(f"{algorithm.describe()} generalizes every QI to a level of its hierarchy: give one "
                                f"for {missing} (hierarchies={{...}})")
        plan, criterion = resolve_single(pairs, source.rows, types, qid, suppressed, nulls, target=target,
                                         criterion=criterion)
        algorithm.check_target(plan.target)
        target = None
    workload = resolve_workload(
        engine, source.ref, types, source.rows, qid, k, sensitive=sensitive, l=l,
        constraints=privacy, target=target, criterion=criterion, selections=selections,
        qis=qis,
    )
    identity = _row_identity(engine, source, output.key, violations)
    if source.temporary and not engine.views_read_temporary:
        identity = None  # a live view reads the source, and Spark keeps persistent views off temp views
    outputs = _outputs(engine, objects, source, tuple(qis), output.view, replace, identity is None,
                       output.class_column, given)
    if sized and not algorithm.takes_depth_first(workload, qis, fraction):
        # on partitions of millions of rows the SQL levels (DuckDB's parallel GROUP BYs) are
        # faster than the level-by-level numpy finish (measured at 10M rows: InfoGain 48 s all in
        # memory against 20-40 s with SQL levels; Median with entropy l-diversity 59.6 s in
        # memory against 5.5 s of SQL levels and 35.2 s in memory); the compiled depth-first
        # finishes are faster than both (InfoGain on C2 at 10M: 22.5 s all in memory, 31.7 s with
        # SQL levels down to 2M rows)
        memory_rows = min(memory_rows, DEFAULT_MEMORY_ROWS)
    for q in qis:  # the request is valid: say how a text QI without a hierarchy is cut
        if q.ordered_by_text:
            warn(TextOrderWarning(text_order_message(q.name)))
    return Spec(source, tuple(qis), k, outputs, memory_rows, replace, workload, identity, plan, fraction)


def text_order_message(name: str) -> str:
    """The :class:`~sqlanon.TextOrderWarning` for the text QI ``name`` without a hierarchy."""
    return (f"QI {name!r} is text without a hierarchy, so it is cut in text order (code points; on PostgreSQL "
            f"the column's collation): a range such as "
            f"'A41'..'A42' also takes in 'A410'. If its values are categories or codes, give it a hierarchy "
            f"(hierarchies={{{name!r}: ...}}), built for instance with sqlanon.hierarchies.ordering(values, "
            f"order=[...]) or sqlanon.hierarchies.masking(values) (command line: sqlanon hierarchy ordering|masking).")


def load_hierarchy(source: Any, con: Any = None) -> Hierarchy:
    """Load a hierarchy from what the user passed.

    Args:
        source: A :class:`Hierarchy` (returned as is); a ``pathlib.Path`` or ``str`` naming an
            existing file (ARX CSV); a pandas DataFrame, a list of rows, or a ``str`` naming a
            table or view in ``con`` (columns leaf -> root); or a nested dict (``from_dict``).
        con: A connection (DuckDB or PostgreSQL), needed only to read a table or view.

    Raises:
        HierarchyError: for any other type, a missing file, a name that is neither a file nor
            a table, or a malformed hierarchy.
        InputError: ``con`` is neither None nor a connection sqlanon can use.
    """
    engine = engine_for(con) if con is not None else None
    return hierarchy_from(source, None if engine is None else lambda table: table_rows(engine, table))


# -- helpers ---------------------------------------------------------------------------------
def _check_qid(qid: Sequence[str], source: Source) -> list[str]:
    qid = check_qid(qid)
    for name in qid:
        if name not in source.column_names:
            raise UnknownColumnError(
                f"table {source.name!r} has no column {name!r}." + did_you_mean(name, source.column_names)
            )
    return qid


#: Float QI types: the only ones whose values can be infinite or NaN.
_FLOAT = re.compile(r"^(FLOAT|REAL|DOUBLE|FLOAT4|FLOAT8)$")


def _check_finite(engine: Engine, source: Source, qis: Sequence[QI]) -> None:
    """Refuse ordered float QIs holding inf, -inf or NaN, or spanning a range that overflows.

    Numeric QIs are measured by their range (the normalized range picks the QI to split, see
    :func:`sqlanon.model.criteria.normalized_range`): an infinite value makes every range that holds
    it infinite and the column's whole range ``inf``, NaN (which DuckDB sorts above ``inf``)
    makes it undefined, and so does a finite range beyond the largest DOUBLE. Ranks would
    still work, but widths compared across QIs would not, silently: refuse instead. One
    aggregate over the float QIs; DECIMAL and integer types cannot hold these values.
    """
    floats = [q for q in qis if q.kind == "numeric" and _FLOAT.match(q.data_type.upper())]
    if not floats:
        return
    aggregates: list[exp.Expression] = []
    for q in floats:
        value = exp.Cast(this=g.col(q.name), to=exp.DataType.build("DOUBLE"))
        finite = exp.Not(this=exp.paren(exp.or_(engine.is_infinite(value.copy()), engine.is_nan(value.copy()))))
        aggregates += [
            exp.Filter(this=exp.Count(this=exp.Star()), expression=exp.Where(this=engine.is_infinite(value.copy()))),
            exp.Filter(this=exp.Count(this=exp.Star()), expression=exp.Where(this=engine.is_nan(value.copy()))),
            exp.Filter(this=exp.Min(this=value.copy()), expression=exp.Where(this=finite.copy())),
            exp.Filter(this=exp.Max(this=value.copy()), expression=exp.Where(this=finite)),
        ]
    row = engine.fetch_rows(exp.select(*aggregates).from_(source.ref))[0]
    for i, q in enumerate(floats):
        infinite, nan, low, high = row[4 * i: 4 * i + 4]
        if infinite or nan:
            parts = [f"{infinite} infinite (inf or -inf)"] * bool(infinite) + [f"{nan} NaN"] * bool(nan)
            raise InputError(
                f"QI {q.name!r} ({q.data_type}) has {int(infinite) + int(nan)} row(s) that are not finite numbers: "
                f"{' and '.join(parts)}. A numeric QI is generalized to ranges, and these make ranges "
                f"infinite or undefined. Filter them out (a view over {source.name!r} WHERE isfinite({q.name})) "
                f"or replace them (e.g. by NULL) first.")
        # 2x: a column with NULLs also measures a gap below its smallest value (domain.ordered_positions)
        if low is not None and not math.isfinite(2.0 * (float(high) - float(low))):
            raise InputError(
                f"QI {q.name!r} ({q.data_type}) spans from {low!r} to {high!r}: its range overflows a DOUBLE, "
                f"so sqlanon cannot measure it. Rescale the column (e.g. divide it in a view over "
                f"{source.name!r}) or filter the extreme rows first.")


def _counted(engine: Engine, source: Source, qid: list[str], key: str | Sequence[str] | None
             ) -> tuple[Source, dict[str, bool], tuple[int, int] | None]:
    """``source`` with its rows counted, whether each QI has NULLs and, for a ``key=`` that
    names columns of a table or view, its violations (:func:`_key_violations`, None for any
    other ``key``: :func:`_row_identity` refuses it later, as it did before this count), in one
    statement: on Spark a statement costs a job's fixed work however small the table. With a
    key the counts are summed over the key's groups."""
    columns = _key_columns(key, source)
    counts = [exp.Count(this=g.col(name)) for name in qid]
    if columns is None:
        rows, *present = engine.fetch_rows(exp.select(exp.Count(this=exp.Star()), *counts).from_(source.ref))[0]
        violations = None
    else:
        names = [free_name(f"c{i}", source.column_names) for i in range(len(qid) + 1)]
        groups, null = _key_groups(source, columns, [exp.Count(this=exp.Star()), *counts], names)
        sums = [exp.Sum(this=g.col(n)) for n in names]
        row = engine.fetch_rows(exp.select(*sums, *_violation_counts(names[0], null)).from_(groups))[0]
        rows, *present = [int(v or 0) for v in row[:len(names)]]
        violations = (int(row[-2] or 0), int(row[-1] or 0))
    rows = int(rows)
    return (dataclasses.replace(source, rows=rows), {name: int(n) < rows for name, n in zip(qid, present)},
            violations)


def _key_columns(key: str | Sequence[str] | None, source: Source) -> tuple[str, ...] | None:
    """The columns of ``key=`` when :func:`_row_identity` would check them against the rows
    (distinct columns of ``source``, a table or view); else None."""
    columns = (key,) if isinstance(key, str) else tuple(key) if isinstance(key, (list, tuple)) else ()
    if (not columns or not all(isinstance(c, str) and c in source.column_names for c in columns)
            or len(set(columns)) != len(columns) or source.kind == "file"):
        return None
    return columns


def _check_leaves(engine: Engine, source: Source, name: str, h: Hierarchy) -> None:
    rows = distinct_values(engine, name, source.ref, classify(types_of(source)[name]) == "numeric")
    bad = leaf_codes(h, rows["v"], rows["t"]) < 0
    missing = sorted({str(t) for t in rows["t"][bad]})
    if missing:
        shown = ", ".join(repr(v) for v in missing[:20])
        more = f" and {len(missing) - 20} more" if len(missing) > 20 else ""
        raise HierarchyError(
            f"the hierarchy for {name!r} misses {len(missing)} value(s) present in the data: "
            f"{shown}{more}. Every value must be a leaf."
        )


def types_of(source: Source) -> dict[str, str]:
    return dict(source.columns)


def _row_identity(engine: Engine, source: Source, key: str | Sequence[str] | None,
                  violations: tuple[int, int] | None = None) -> RowIdentity | None:
    """The key a live view joins the source on: ``key=`` (checked: unique and never NULL now;
    the view also guards against duplicates added later unless the database enforces the key),
    else the table's declared PRIMARY KEY or a UNIQUE key without NULLs; None when there is
    none (the release is then a view of a snapshot). ``violations``: ``key=``'s, counted
    already (:func:`_counted`)."""
    types = dict(source.columns)
    if key is not None:
        columns = (key,) if isinstance(key, str) else tuple(key) if isinstance(key, (list, tuple)) else None
        if not columns or not all(isinstance(c, str) and c for c in columns):
            raise InputError(f"key must be a column name or a list of column names, got {key!r}")
        if len(set(columns)) != len(columns):
            raise InputError(f"key lists a column twice: {list(columns)}")
        for c in columns:
            if c not in types:
                raise UnknownColumnError(f"key column {c!r} is not a column of {source.name!r}."
                                         + did_you_mean(c, source.column_names))
        if source.kind == "file":
            raise InputError(f"key= needs a table or view: files ({source.path!r}) are published as a snapshot "
                             "table; load them into a table with a key for a live view")
        nulls, duplicates = violations if violations is not None else _key_violations(engine, source, columns)
        if nulls or duplicates:
            raise InputError(
                f"key {list(columns)} does not identify the rows of {source.name!r}: "
                f"{nulls} row(s) with a NULL key, {duplicates} key value(s) held by several rows"
            )
        declared = any(set(k) == set(columns) for k in source.keys)
    else:
        usable = [k for k in source.keys if _key_violations(engine, source, k)[0] == 0]
        if not usable:
            return None
        columns, declared = usable[0], True
    direct = len(columns) == 1 and types[columns[0]].upper() in _DIRECT_KEY_TYPES
    return RowIdentity(columns, declared, direct)


def _key_violations(engine: Engine, source: Source, columns: Sequence[str]) -> tuple[int, int]:
    """Rows with a NULL in a key column, and key values held by more than one row: one statement
    over the key's groups (``GROUP BY`` puts NULLs together, so the groups with a NULL hold the
    rows with one)."""
    n = free_name("n", columns)
    groups, null = _key_groups(source, columns, [exp.Count(this=exp.Star())], [n])
    row = engine.fetch_rows(exp.select(*_violation_counts(n, null)).from_(groups))[0]
    return int(row[0] or 0), int(row[1] or 0)


def _key_groups(source: Source, columns: Sequence[str], aggregates: Sequence[exp.Expression], names: Sequence[str]
                ) -> tuple[exp.Subquery, str]:
    """The source's rows grouped by the key ``columns`` (``GROUP BY`` puts NULLs together), with
    ``aggregates`` named ``names`` and whether the group's key holds a NULL; and that flag's name."""
    null = free_name("null", [*source.column_names, *names])
    any_null = exp.or_(*[exp.Is(this=g.col(c), expression=exp.Null()) for c in columns])
    groups = (exp.select(*[g.alias(a, n) for a, n in zip(aggregates, names)], g.alias(any_null, null))
              .from_(source.ref).group_by(*[g.col(c) for c in columns]))
    return exp.Subquery(this=groups, alias=exp.TableAlias(this=g.ident("d"))), null


def _violation_counts(n: str, null: str) -> list[exp.Expression]:
    """Over the key's groups (:func:`_key_groups`, ``n`` their rows): the rows with a NULL in a
    key column, and the key values held by more than one row."""
    nulls = exp.Sum(this=exp.Case().when(g.col(null), g.col(n)).else_(g.lit(0)))
    repeated = exp.Count(this=exp.Case().when(exp.and_(exp.Not(this=g.col(null)),
                                                        exp.GT(this=g.col(n), expression=g.lit(1))), g.lit(1)))
    return [nulls, repeated]


def _outputs(
    engine: Engine, objects: list, source: Source, qis: tuple[QI, ...], view: str | None, replace: bool,
    materialize: bool, class_column: str | None, hierarchies: Mapping[str, Any],
) -> Outputs:
    """Output names, checked as the engine resolves them (:meth:`Engine.taken`: unqualified
    names in the current schema; case-insensitively on DuckDB). ``replace`` only ever replaces the objects of an earlier
    sqlanon release of the same name -- those its manifest lists, when they are consistent with it
    (:mod:`sqlanon.request.owned`) -- never another object, and never one the source reads."""
    view, rules, rowmap, hierarchies_table = release_names(source, view, any(not q.ordered for q in qis))
    names = [view, rules, rowmap] + ([hierarchies_table] if hierarchies_table else [])
    current = engine.current()
    here = {o[2].lower(): o for o in objects if (o[0], o[1]) == current}
    earlier = release_owned(engine, objects, view)
    owned = earlier.names
    reads = _reads(objects, source, current)
    existing = []
    # The new release's names, then what else the release it replaces owns (its row map, say).
    for name in names + sorted(o for o in owned - {n.lower() for n in names} if o in here):
        if (source.catalog, source.schema) == current and name.lower() == source.name.lower():
            raise ObjectExistsError(f"output {name!r} would overwrite the source {source.name!r}; choose another view=")
        hits = check_free(engine, name, replace, option="view= name", objects=objects)
        if not hits:
            continue
        found, kind = hits[0]
        if found.lower() not in owned:
            raise ObjectExistsError(
                f"a {kind} named {found!r} already exists and is not an object of a sqlanon release named "
                f"{view!r}" + (f" ({earlier.refused})" if earlier.refused else "")
                + ": replace=True only replaces a release's own objects; choose another view= name"
            )
        if found.lower() in reads:
            raise ObjectExistsError(
                f"the source {source.name!r} reads {found!r}, which replace=True would drop; choose another view= name"
            )
        if any(isinstance(h, str) and h.lower() == found.lower() for h in hierarchies.values()):
            raise ObjectExistsError(
                f"a hierarchy is read from {found!r}, which replace=True would drop; choose another view= name"
            )
        existing.append((found, kind))
    # (an engine with savepoints restores it: every call inside the caller's transaction rolls
    # back to its own savepoint on failure, see PostgresEngine.session)
    if existing and not engine.savepoints and engine.in_transaction():
        raise InputError(
            "replace=True inside an open transaction: if the new release failed its check, the one it "
            "replaces could not be restored. Commit or roll back first, or choose another view= name."
        )
    rules_names, view_names = _column_names(source, qis)
    outputs = Outputs(view, rules, rowmap, materialize=materialize, hierarchies=hierarchies_table,
                      existing=tuple(existing), class_column=_class_column(class_column, view_names),
                      region_column=free_name("region", rules_names), size_column=free_name("size", rules_names))
    return outputs


def release_names(source: Source, view: str | None, hierarchical: bool) -> tuple[str, str, str, str | None]:
    """The names of a release's objects: its view (``view=``, default ``<source>_anon``), rules
    relation, row map and -- with a hierarchical QI -- hierarchies table."""
    view = view if view is not None else f"{source.name}_anon"
    if not isinstance(view, str) or not view:
        raise InputError(f"view must be a non-empty string, got {view!r}")
    return view, f"{view}_rules", f"{view}_rowmap", f"{view}_hierarchies" if hierarchical else None


def _check_names(engine: Engine, source: Source, view: str | None, class_column: str | None,
                 ordered: Mapping[str, bool]) -> None:
    """Every name the release would create -- its objects, the QIs' published and box columns,
    the class column -- within the engine's limits (:meth:`Engine.check_names`), before any
    work. (The rules' ``region`` and ``size`` and the temp objects' names are sqlanon's own,
    and short; every other column keeps the source's name.)"""
    shorter = ("choose a shorter view= name" if view is not None
               else "pass view= a shorter name (the default is the table's name and '_anon')")
    view, rules, rowmap, hierarchies = release_names(source, view, not all(ordered.values()))
    names = [Name(view, "view", "the release's view", shorter)]
    names += [Name(n, "table", f"the release's {what} of view={view!r}", shorter)
              for n, what in ((rules, "rules relation"), (rowmap, "row map"), (hierarchies, "hierarchies table")) if n]
    rename = "rename the column in a view over the source (and anonymize the view)"
    columns = []
    for q, is_ordered in ordered.items():
        derived = published_columns(q, is_ordered) + box_columns(q, is_ordered)
        names += [Name(c, "column", f"a column of QI {q!r}", rename) for c in derived if c != q]
        columns += published_columns(q, is_ordered)
    view_columns = [c for c in source.column_names if c not in ordered] + columns
    cls = _class_column(class_column, view_columns)
    names.append(Name(cls, "column", "the view's class column", "choose a shorter class_column="))
    engine.check_names(names)


def _reads(objects: list, source: Source, current: tuple[str, str]) -> set[str]:
    """Lower-cased names of every relation the source reads, through views (by name: a view's SQL
    is parsed, and a name in any schema counts, to err on the safe side)."""
    views = {o[2].lower(): o[6] for o in objects if o[3] == "view" and o[6]}
    out: set[str] = set()
    todo = [source.name.lower()] if source.kind == "view" else []
    while todo:
        name = todo.pop()
        try:
            tree = sqlglot.parse_one(views.get(name) or "", read=g.DIALECT)
        except sqlglot.errors.ParseError:
            continue
        for t in tree.find_all(exp.Table) if tree is not None else ():
            found = t.name.lower()
            if found and found not in out:
                out.add(found)
                if found in views:
                    todo.append(found)
    return out


def _class_column(chosen: str | None, view_columns: Sequence[str]) -> str:
    """The view's class column: ``class_column=`` if free, else ``eq_class`` (or ``eq_class_1``,
    ... when the source has a column of that name)."""
    if chosen is None:
        return free_name(EQ_CLASS, view_columns)
    if not isinstance(chosen, str) or not chosen:
        raise InputError(f"class_column must be a non-empty string, got {chosen!r}")
    if chosen.lower() in {c.lower() for c in view_columns}:
        raise ObjectExistsError(f"class_column={chosen!r} collides with a column of the anonymized view; choose another")
    return chosen


def _column_names(source: Source, qis: tuple[QI, ...]) -> tuple[list[str], list[str]]:
    """The QI columns of the rules relation and the columns of the view (without the class
    column), checked distinct (DuckDB compares names case-insensitively). A user column named
    like a QI's published column (``age_min`` beside a QI ``age``) is refused; internal names
    (the class column, the rules' region id and size) are derived around them instead."""
    qi_names = {q.name for q in qis}
    view_cols = [p for c in source.column_names for p in (
        next(q for q in qis if q.name == c).published if c in qi_names else (c,))]
    rules_cols = [c for q in qis for c in q.published + q.box_columns]
    for what, cols in (("anonymized view", view_cols), ("rules relation", rules_cols)):
        clash = case_duplicate(cols)
        if clash:
            raise ObjectExistsError(
                f"the {what} would have duplicate columns {clash[0]!r} and {clash[1]!r} (names are "
                f"case-insensitive): a QI's generalization columns collide with another column; "
                f"rename one in a view over the source first"
            )
    return rules_cols, view_cols
