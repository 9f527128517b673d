"""Recode another table with a release's stored rules, in SQL (KDD 2006, Section 5).

LeFevre, DeWitt & Ramakrishnan (*Workload-Aware Anonymization*, KDD 2006, Sections 5.1-5.3)
evaluate a release the way it is used: anonymize the training set, recode the test set with
*the same* generalization, learn on the first and test on the second. :func:`apply` does the
recoding for any table with the release's QI columns: every row gets the region whose box holds
its QI values, and is published exactly as the release's view publishes the rows of that region.

**The rules' boxes.** The rules relation (:mod:`sqlanon.publish.rules`) stores per region and ordered QI
``q`` the box ``q_lo < v <= q_hi`` (NULL = unbounded) and ``q_null`` (NULLs fall here), per
hierarchical QI the node ``q_node``. Both become intervals ``(a, b]`` of integer *positions*:

* ordered QI: NULL sorts before every value (as in :mod:`sqlanon.model.domain`), so NULL is position
  0 and the ``m`` distinct non-NULL bounds ``q_lo``/``q_hi`` of the rules are positions
  ``1..m`` in ascending order; ``+inf`` is ``m + 1`` and ``-1`` lies before NULL. A box is
  ``(-1, pos(q_hi)]`` with ``q_null``, ``(pos(q_lo), pos(q_hi)]`` without (``pos(NULL q_lo) =
  0``: every value but no NULL; ``pos(NULL q_hi) = m + 1``), and the NULL-only box
  (``q_lo = q_hi``) is ``(-1, 0]``. A value ``v`` of *any* table lies in ``(a, b]`` iff
  ``value(a) < v <= value(b)``, so values between or outside the training values fall in the
  box that covers them (the boxes are open-ended at both ends of the domain);
* hierarchical QI: leaves are coded in DFS pre-order, so node ``x`` is the leaf-code interval
  ``(leaf_lo(x) - 1, leaf_hi(x)]`` (:mod:`sqlanon.model.hierarchy`).

**The partition tree, reconstructed.** Mondrian's regions are the leaves of a tree of binary
cuts and hierarchy node splits (a node's children are consecutive leaf-code intervals), so they
form a *guillotine* tiling: every set of boxes of a subtree is separated into two non-empty
sides by one cut ``position <= c`` on one QI. :func:`guillotine` rebuilds such a tree from the
boxes alone (the cuts the partitioner took are not stored, and are not needed): level by level,
vectorized over all open nodes, it sorts each node's boxes on every QI by ``a``, finds the
valid cuts (a prefix whose largest ``b`` is at most the next box's ``a``: no box straddles the
cut) and takes the most balanced one (most boxes on the smaller side; ties to the first QI, then
the lower cut). The depth is about ``log2(regions)`` (14 for 7,070 regions, 18 for 76,994 on
Agrawal data) whatever the depth of the original tree. Rules whose boxes are not a guillotine
tiling (not produced by sqlanon, or edited) are refused.

**The walk: one statement, one hash join per level.** The internal nodes (QI, cut value in the
QI's own type, left and right child) and, as pass-through entries, the leaves (``left = right =
region``) are a small temp table. One ``CREATE TABLE AS`` reads the table once and chains one
inner join per tree level: level ``L`` joins the node table on ``node = cur_L`` and computes
``cur_(L+1) = CASE WHEN v_attr IS NULL OR v_attr <= cut THEN left ELSE right END`` (the
hierarchical ``v`` is the value's leaf code, from one join with the table's distinct values);
the last join fetches the region's published columns. DuckDB pipelines the probes, so the table
is scanned once and never rewritten. Cut values of QIs with the same type share one column (a
probe fetches four or five columns), and each level tests only the QIs its nodes cut, the one
cutting most training rows first (the ``CASE attr`` branches run in order on the rows still
unmatched; the last needs no test). Every key the walk can reach is in the node table, so the
inner joins drop no row; the row count is checked anyway, and a mismatch rolls back.

Measured on this project's 2-core machine (Agrawal, nine integer QIs, rules from 1M training
rows; ``benchmarks/bench_apply.py``, best of 3, quiet machine): ``apply`` recodes a fresh
1M-row table in 0.45 s with 7,070 rules (tree depth 14) and 0.95 s with 76,994 (depth 18), a
10M-row table in 3.4 s and 4.5 s, against 1.4 s to copy that table (``CREATE TABLE AS SELECT
*``); writing the 22-column output is about half of it. On the same 1M rows and 7,070 rules a
plain range join against the boxes (DuckDB's inequality join) took 143 s, and one nested
``CASE`` of the same balanced tree 1.9 s (38 s with 76,994 rules on a loaded machine, after 215
s to build the expression). Dropped after measuring: node arrays as DuckDB lists indexed per
level (1.3-2.5x slower), left joins (about 1.5x slower than inner ones), heap-numbered node ids
computed in the expression (4-5x slower: each level repeats the previous levels' arithmetic),
two tree levels per join and one node table per level (no faster); ordering the branches
gained 10-15 %.

**What each row gets.** Output columns: the table's columns in order, each QI replaced in place
by its published columns (``q_min``/``q_max``, or the node label), then ``eq_class`` -- the
release view's layout. The tree is checked against the boxes before the walk (no box overlaps
another, each leaf's cell is exactly its box, each box's corner reaches its leaf), so the region
a row reaches holds its values. Then:

* placed in a region with rows: ``eq_class`` = the region, the QIs its published columns, as in
  the view (on the training table itself the output equals the view);
* placed in an *empty* region (a hierarchy node no training row fell in, kept so the rules tile
  the domain): ``eq_class`` = the region, hierarchical QIs its node label, ordered QIs the
  region's *box* as its rules store it (:mod:`sqlanon.publish.bounds`: under ``published="data"``
  the training values its box spans, under ``"domain"`` its cut points, under ``"hierarchy"``
  the smallest interval covering them) -- not the training table's overall bounds, which would
  tell a learner nothing. (Rules of releases made before this stored NULL there: such a region's
  ordered QIs are then fully generalized, as below);
* an *unknown* hierarchical value -- no leaf of the hierarchy (an unseen category), or NULL in
  a hierarchical QI whose training column had no NULLs (so the hierarchy has no NULL leaf) --
  places nothing on its own QI; ordered QIs place every value, NULL included (NULL sorts first)
  and NaN (sorted after every number). The row is **placed at the root** of that QI when its
  other values place it: when exactly one region's box holds them whatever the unknown value is
  -- the walk meets no cut on that QI, so that region's box spans the QI's whole domain (its
  node is the root, or a node above every leaf). Such a row is published exactly as that
  region's other rows (its ``eq_class``, its label, its bounds): it joins their class, truthful
  on every QI, and adds no new class. When a cut on the unknown QI decides between regions the
  row could be in, choosing one would publish a node the row's value is not known to be under,
  so the row is *not placed*;
* not placed: **fully generalized**: ``eq_class`` NULL, every hierarchical QI
  the root's label, every ordered QI the bounds of the whole training table, ``q_min`` = the
  smallest published ``q_min`` of the release's non-empty regions (NULL when the training column
  had NULLs, as in the view: NULL sorts first) and ``q_max`` the largest ``q_max``.

No raw QI value is ever published (every QI column comes from the rules) and no row is dropped.

**What it guarantees, and what it does not.** The rules make the *training* table k-anonymous;
new rows recoded with them are not: a region that held k training rows may receive one new row
(a k = 10 release applied to 6,344 new rows gave 3,536 classes, all below 10). So :class:`Applied`
reports the output's classes (rows grouped by ``eq_class``, NULL left out), the smallest one
(``k_achieved``) and how many are below the release's k (``below_k``), and :func:`apply` warns
with a :class:`~sqlanon.errors.PrivacyWarning` when some are. ``enforce=True`` suppresses every
class below k -- and every class breaking one of the release's diversity constraints, read back
from its manifest's records (:func:`sqlanon.model.privacy.from_record`) -- as a whole, in the same
transaction: its rows are published like unplaced rows (``eq_class`` NULL, every QI fully
generalized as above). Afterwards every class of the output holds at least k rows and meets the
release's constraints; the suppressed rows are one fully generalized group, as everywhere in
sqlanon.

**Rows placed at the root, and "the class still meets the requirement".** A row placed at the
root joins a class whose rows all publish the same values, so the class is judged with it:

* without ``enforce``, apply guarantees nothing about classes, and the requirement it reports is
  k: a row added to a class never makes it smaller, so rows placed at the root are always
  placed, and counted in ``classes``, ``k_achieved`` and ``below_k`` like the others;
* with ``enforce``, the requirement is k *and* the release's constraints, and diversity is not
  monotone (one more row of the majority value lowers a class's entropy). A class that meets
  them with its rows placed at the root keeps them (they may even bring it to k); one that fails
  with them but meets every constraint without them loses only them (they are suppressed, the
  class stays as the plain recoding would have had it); one that fails either way is
  suppressed whole, as before.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlglot import exp

from ..engine import engine_for
from ..engine import sqlgen as g
from ..engine.base import Engine, Name
from ..engine.calls import serialized
from ..engine.catalog import Source, distinct_values, find_source
from ..errors import (
    InputError,
    ObjectExistsError,
    PrivacyWarning,
    RecodingError,
    SqlanonError,
    UnknownColumnError,
    UnsupportedTypeError,
    did_you_mean,
)
from ..laps import Laps
from ..model.hierarchy import Hierarchy, leaf_codes
from ..model.privacy import BAD, SIZE, KAnonymity, PrivacyModel, beyond_k
from ..model.qi import QI, classify
from ..model.tiling import Tree, guillotine
from ..publish.manifest import Manifest
from ..publish.view import root_bound
from ..request.checks import case_duplicate, check_bool, check_free
from .regions import load_release

_BIGINT = exp.DataType.build("BIGINT")
_VARCHAR = exp.DataType.build("VARCHAR")


@dataclass(frozen=True)
class Applied:
    """What :func:`apply` created.

    Attributes:
        view: the new table: the input's rows, recoded.
        rules: the release's rules relation that recoded them.
        table: the input table (or file path).
        rows: rows of the input = rows of ``view``.
        placed: rows the rules placed in a region (their ``eq_class`` is the region's, unless
            ``enforce`` suppressed them), rows with an unknown hierarchical value placed at the
            root included.
        unplaced: rows no rule can place, published fully generalized (``eq_class`` NULL).
        elapsed: wall-clock seconds of the call.
        depth: levels of the reconstructed partition tree (hash joins of the walk).
        timings: seconds per step (``validate``, ``tree``, ``walk``).
        k: the release's k.
        classes: equivalence classes of the output: its rows grouped by ``eq_class``, the
            suppressed and unplaced rows (``eq_class`` NULL) left out.
        k_achieved: rows in the smallest of those classes (0 when there are none). Recoding does
            not preserve k: this may be far below ``k`` unless ``enforce`` was asked for.
        below_k: classes of the output with fewer than ``k`` rows (0 after ``enforce``).
        enforced: the constraints ``enforce`` applied (``describe()`` texts: k-anonymity and the
            release's diversity constraints); empty without ``enforce``.
        suppressed_classes: classes ``enforce`` suppressed whole (below k, or breaking a
            constraint): no row of theirs is left in a class.
        suppressed_rows: rows ``enforce`` suppressed (those classes' rows, and rows placed at the
            root that broke a class meeting the requirement without them), published fully
            generalized with ``eq_class`` NULL.
    """

    view: str
    rules: str
    table: str
    rows: int
    placed: int
    unplaced: int
    elapsed: float
    depth: int = 0
    timings: Mapping[str, float] = field(default_factory=dict)
    k: int = 0
    classes: int = 0
    k_achieved: int = 0
    below_k: int = 0
    enforced: tuple[str, ...] = ()
    suppressed_classes: int = 0
    suppressed_rows: int = 0


@serialized
def apply(
    con: Any,
    release: Any,
    table: str,
    *,
    view: str | None = None,
    replace: bool = False,
    enforce: bool = False,
) -> Applied:
    """Recode ``table`` with the rules of ``release`` into a new table (see the module docstring).

    Args:
        con: the DuckDB or PostgreSQL (psycopg) connection holding the release; ``table`` is only read.
        release: a :class:`sqlanon.Release`, or the name of a release's view (or rules
            relation), reloaded from the database (:func:`sqlanon.publish.manifest.read`).
        table: a table or view with the release's QI columns (same names; numbers for numeric
            QIs, dates or timestamps for temporal ones, the same type for text, boolean and
            enum QIs, anything for hierarchical ones, matched to leaves by text), or the path or
            glob of Parquet, CSV or JSON files.
        view: name of the TABLE to create (default ``<table>_anon``), in the current schema.
        replace: overwrite an existing table or view of that name -- never the release's own
            objects, its source or ``table``.
        enforce: suppress, as a whole, every class of the output with fewer than the release's
            k rows or breaking one of the release's diversity constraints (``table`` then needs
            the constrained sensitive columns): its rows are published fully generalized with
            ``eq_class`` NULL, so every remaining class meets the release's requirement. A class
            that meets it without its rows placed at the root (an unknown hierarchical value, see
            the module docstring) loses only those rows.

    Returns:
        An :class:`Applied`: with the output's classes, smallest class and classes below k.

    Warns:
        PrivacyWarning: some class of the output has fewer than the release's k rows (never
            after ``enforce``).

    Raises:
        InputError: not a release, or rules that do not tile the domain as a guillotine
            partition; ``UnknownTableError`` (with close names) / ``UnknownColumnError`` for a
            missing table or QI column; ``UnsupportedTypeError`` for a QI column whose type
            cannot be compared with the release's; ``ObjectExistsError`` when the output name
            is taken or protected, or an output column would collide with a column of
            ``table``; with ``enforce``, a constraint of the manifest this version cannot read
            back, or a constrained column ``table`` lacks; ``ReadOnlyError`` when the current
            database is read-only. All before anything is written.

    Example:
        >>> import duckdb, sqlanon
        >>> from sqlanon.release.apply import apply
        >>> con = duckdb.connect()
        >>> _ = con.execute("CREATE TABLE train AS SELECT i AS id, i % 90 AS age, i % 7 AS zip FROM range(1000) t(i)")
        >>> _ = con.execute("CREATE TABLE test AS SELECT i AS id, i % 120 AS age, NULL::INT AS zip FROM range(500) t(i)")
        >>> release = sqlanon.anonymize(con, "train", qid=["age", "zip"], k=10)
        >>> applied = apply(con, release, "test")  # ages up to 119, zip NULL: all placed
        >>> applied.view, applied.rows, applied.placed, applied.unplaced
        ('test_anon', 500, 500, 0)
    """
    lap = Laps()

    engine = engine_for(con)
    engine.check_environment()  # Spark: the executors' Python imports this sqlanon
    engine.check_writable("the recoded table")
    replace = check_bool("replace", replace)
    m = load_release(con, release)
    objects = engine.objects()
    source = find_source(engine, objects, table, count=False)
    layout = _layout(m, source)
    name, existing = _output_name(engine, m, source, objects, view, replace)
    rule_types = _rules_types(engine, m)
    if not isinstance(enforce, bool):
        raise InputError(f"enforce must be True or False, got {enforce!r}")
    enforced = _enforced_constraints(m, source) if enforce else ()
    lap("validate")
    try:
        bounds = {q.name: _bounds_table(engine, m, i, q) for i, q in enumerate(m.qis) if q.kind != "hierarchy"}
        region, size, a, b, lo, hi = _boxes(engine, m, bounds)
        tree = guillotine(a, b, lo, hi)
        if not np.array_equal(tree.locate(b), np.arange(len(region))):  # each box's corner reaches it
            raise SqlanonError("internal error: the partition tree does not reach every region")
        nodes = _node_table(engine, m, tree, region, bounds, rule_types)
        codes = {q.name: _leaf_code_table(engine, i, q, m.hierarchies[q.name], source)
                 for i, q in enumerate(m.qis) if q.kind == "hierarchy"}
        targets, root = _targets_table(engine, m), _root_table(engine, m)
        lap("tree")
        order = _branch_order(tree, size, len(m.qis))
        # enforce judges the rows placed with an unknown hierarchical value apart (_suppress)
        marker = f"{engine.prefix}at_root" if enforced and codes else None
        query = _walk_query(engine, m, source, layout, tree, region, order, nodes, codes, targets, root, rule_types,
                            marker)
        suppress = (lambda staging: _suppress(engine, m, staging, enforced, root, marker)) if enforced else None
        rows, placed, (suppressed_classes, suppressed_rows) = _create(engine, name, existing, query, source, m.class_column,
                                                                      suppress)
        lap("walk")
        classes, k_achieved, below_k = _class_sizes(engine, name, m.k, m.class_column)
        lap("classes")
    finally:
        engine.cleanup()
    applied = Applied(view=name, rules=m.rules, table=source.path or source.name, rows=int(rows),
                      placed=int(placed), unplaced=int(rows) - int(placed),
                      elapsed=lap.elapsed, depth=tree.depth, timings=lap.timings, k=m.k, classes=classes,
                      k_achieved=k_achieved, below_k=below_k, enforced=tuple(c.describe() for c in enforced),
                      suppressed_classes=suppressed_classes, suppressed_rows=suppressed_rows)
    if below_k:
        warnings.warn(PrivacyWarning(
            f"the recoded rows are not {m.k}-anonymous: {below_k:,} of {classes:,} classes of {name!r} hold fewer "
            f"than {m.k} rows, the release's k (smallest {k_achieved:,}); a release's rules do not make new rows "
            f"k-anonymous. Pass enforce=True to suppress those classes."), stacklevel=2)
    return applied


# -- what apply guarantees ---------------------------------------------------------------------
def _enforced_constraints(m: Manifest, source: Source) -> tuple[PrivacyModel, ...]:
    """k-anonymity with the release's k and the release's other constraints, from the manifest's
    records; refuses constraints this version cannot read back and constrained columns the
    input lacks."""
    out: list[PrivacyModel] = [KAnonymity(m.k)]
    if any(set(columns) != set(m.qid) for columns, _ in m.qids):
        raise RecodingError(f"cannot enforce release {m.view!r}: it has several QIDs, each with its own k, and "
                            f"enforce suppresses classes below one k; check the output per QID with "
                            f"sqlanon.verify(con, view, qid, 1, qids=[...]) instead")
    if m.unknown_constraints:
        raise InputError(f"cannot enforce the constraint {', '.join(map(repr, m.unknown_constraints))} of release "
                         f"{m.view!r}: this "
                         f"version cannot read them back (a newer kind, or a manifest of sqlanon 0.1, which recorded "
                         f"them only as text); publish the release again to enforce them")
    for c in beyond_k(m.constraint_objects, m.k):  # the release's k: already first
        text = c.describe()
        for column in c.class_columns + c.numeric_columns:
            if column not in source.column_names:
                where = source.path or source.name
                raise UnknownColumnError(
                    f"{where!r} has no column {column!r}, which release {m.view!r} constrains ({text}): enforcing "
                    f"the release's requirement needs it." + did_you_mean(column, source.column_names))
        out.append(c)
    return tuple(out)


def _suppress(
    engine: Engine, m: Manifest, name: str, constraints: Sequence[PrivacyModel], root: str | None,
    marker: str | None = None,
) -> tuple[str, tuple[int, int]]:
    """Suppress what breaks a constraint in the new table ``name``: its rows get ``eq_class``
    NULL and every QI fully generalized (the hierarchy's root label; the bounds of the whole
    training table from ``root``), as unplaced rows are. ``marker`` (a boolean column, dropped
    here) flags the rows placed with an unknown hierarchical value: a class that fails with them
    but meets every constraint without them loses only them; a class that fails either way is
    suppressed as a whole. The rows are rewritten into a new table (Spark's Parquet tables have
    no ``UPDATE``), which replaces ``name``. Returns the table now holding the rows and
    ``(classes, rows)`` suppressed: classes no row of which is left, and rows."""
    cls = m.class_column
    placed = exp.Not(this=exp.Is(this=g.col(cls), expression=exp.Null()))

    def failing(where: exp.Expression) -> str:
        """A temp table of the classes that break a constraint over the rows ``where`` holds."""
        parts = [exp.select(g.col(cls)).from_(exp.Subquery(
            this=c.per_class(g.table(name), [cls], where=where), alias=exp.TableAlias(this=g.ident("c"))))
            .where(g.col(BAD)) for c in constraints]
        union = parts[0]
        for more in parts[1:]:
            union = exp.union(union, more, distinct=True)
        bad = engine.temp_name(f"suppressed{engine.statements}")
        engine.execute(g.create_table_as(bad, union))
        return bad

    every = failing(placed)  # the classes as apply placed them
    fails = int(engine.scalar(exp.select(exp.Count(this=exp.Star())).from_(g.table(every))))
    if not fails and marker is None:
        return name, (0, 0)
    n, x, y, f = "n", "x", "y", "f"
    # a row is suppressed when its class fails, unless it is a row placed at the root whose
    # class meets every constraint without such rows (then only those go)
    suppressed: exp.Expression = exp.Not(this=exp.Is(this=g.col(cls, x), expression=exp.Null()))
    if marker is not None:
        regular = failing(exp.and_(placed.copy(), exp.Not(this=g.col(marker))))
        suppressed = exp.and_(suppressed, exp.or_(g.col(marker, n), exp.Not(this=exp.Is(
            this=g.col(cls, y), expression=exp.Null()))))
    generalized: dict[str, exp.Expression] = {cls: exp.Null()}
    for i, q in enumerate(m.qis):
        if q.kind == "hierarchy":
            generalized[q.name] = exp.Cast(this=g.lit(m.hierarchies[q.name].labels[0]), to=_VARCHAR)
            continue
        for part in ("min", "max"):
            generalized[f"{q.name}_{part}"] = g.col(f"g{part}{i}", f)
    columns = [c for c, _ in engine.describe(exp.select(exp.Star()).from_(g.table(name))) if c != marker]
    query = exp.select(*[
        g.alias(exp.Case().when(suppressed.copy(), generalized[c]).else_(g.col(c, n)), c) if c in generalized
        else g.col(c, n) for c in columns
    ]).from_(exp.alias_(g.table(name), g.ident(n), table=True)).join(
        exp.alias_(g.table(every), g.ident(x), table=True),
        on=exp.EQ(this=g.col(cls, n), expression=g.col(cls, x)), join_type="left")
    if marker is not None:
        query = query.join(exp.alias_(g.table(regular), g.ident(y), table=True),
                           on=exp.EQ(this=g.col(cls, n), expression=g.col(cls, y)), join_type="left")
    if root is not None:
        query = query.join(exp.alias_(g.table(root), g.ident(f), table=True), join_type="cross")
    rewritten = engine.temp_name("enforced")
    engine.execute(g.create_table_as(rewritten, query, temporary=False))
    before, after = (engine.fetch_rows(exp.select(
        exp.Count(this=g.col(cls)), exp.Count(this=exp.Distinct(expressions=[g.col(cls)]))).from_(g.table(t)))[0]
        for t in (name, rewritten))
    engine.execute(g.drop(name, "TABLE"))
    return rewritten, (int(before[1]) - int(after[1]), int(before[0]) - int(after[0]))


def _class_sizes(engine: Engine, name: str, k: int, cls: str) -> tuple[int, int, int]:
    """``(classes, smallest, below k)`` of the new table: its rows grouped by the class column
    ``cls``, NULL (unplaced or suppressed) left out."""
    placed = exp.Not(this=exp.Is(this=g.col(cls), expression=exp.Null()))
    per = exp.Subquery(this=KAnonymity(k).per_class(g.table(name), [cls], where=placed),
                       alias=exp.TableAlias(this=g.ident("c")))
    classes, smallest, below = engine.fetch_rows(exp.select(
        exp.Count(this=exp.Star()), exp.Min(this=g.col(SIZE)),
        exp.Filter(this=exp.Count(this=exp.Star()), expression=exp.Where(this=g.col(BAD))),
    ).from_(per))[0]
    return int(classes or 0), int(smallest or 0), int(below or 0)


# -- validation --------------------------------------------------------------------------------
def _layout(m: Manifest, source: Source) -> list[tuple[str, QI | None]]:
    """The output columns in order: ``(input column, its QI or None)``; checks QI columns,
    their types and output column collisions."""
    types = dict(source.columns)
    where = source.path or source.name
    missing = [q.name for q in m.qis if q.name not in types]
    if missing:
        raise UnknownColumnError(
            f"{where!r} lacks the QI column(s) {missing} of release {m.view!r}."
            + did_you_mean(missing[0], types))
    for q in m.qis:
        why = _incompatible(q, types[q.name])
        if why:
            raise UnsupportedTypeError(
                f"column {q.name!r} of {where!r} has type {types[q.name]}, but QI {q.name!r} of release "
                f"{m.view!r} has type {q.data_type} ({q.kind}): {why}")
    qis = {q.name: q for q in m.qis}
    layout = [(c, qis.get(c)) for c, _ in source.columns]
    out = [p for c, q in layout for p in ((c,) if q is None else _published(q))] + [m.class_column]
    clash = case_duplicate(out)
    if clash:
        raise ObjectExistsError(
            f"the output would have duplicate columns {clash[0]!r} and {clash[1]!r} (names are "
            f"case-insensitive): a column of {where!r} collides with a QI's published column or "
            f"{m.class_column!r}; rename it in a view over the table first")
    return layout


def _incompatible(q: QI, data_type: str) -> str | None:
    """Why a column of ``data_type`` cannot be placed by the boxes of QI ``q`` (None if it can)."""
    if q.kind == "hierarchy":
        return None  # matched to leaves by text, like the training values
    kind = classify(data_type)
    if data_type.strip('"').upper() == "NULL" or q.data_type.strip('"').upper() == "NULL":
        return None  # only NULLs on one side: they compare with anything
    if q.kind in ("numeric", "temporal"):
        return None if kind == q.kind else f"its boxes compare {q.kind} values"
    # text, booleans and enums order by their own type (an enum by position, not by text)
    return None if data_type == q.data_type else "ordered text, boolean and enum QIs need the same type"


def _published(q: QI) -> tuple[str, ...]:
    return (q.name,) if q.kind == "hierarchy" else (f"{q.name}_min", f"{q.name}_max")


def _output_name(
    engine: Engine, m: Manifest, source: Source, objects: list, view: str | None, replace: bool
) -> tuple[str, list[tuple[str, str]]]:
    """The output table's name and the objects ``replace`` drops (:func:`check_free`)."""
    name = view if view is not None else f"{source.name}_anon"
    if not isinstance(name, str) or not name:
        raise InputError(f"view must be a non-empty string, got {name!r}")
    engine.check_names([Name(name, "table", "the recoded table", "choose a shorter view= name" if view is not None
                             else "pass view= a shorter name (the default is the table's name and '_anon')")])
    protected = {n.lower() for n in (m.view, m.rules, m.rowmap, m.hierarchies_table, m.source) if n}
    current = engine.current()
    if name.lower() in protected:
        raise ObjectExistsError(
            f"{name!r} is an object of release {m.view!r} (or its source); it is never replaced: "
            "choose another view= name")
    if source.path is None and (source.catalog, source.schema) == current and name.lower() == source.name.lower():
        raise ObjectExistsError(f"output {name!r} would overwrite the input {source.name!r}; choose another view=")
    return name, check_free(engine, name, replace, option="view= name", objects=objects)


def _rules_types(engine: Engine, m: Manifest) -> dict[str, str]:
    """The rules relation's column types; refuses a rules relation that lacks columns."""
    rows = engine.describe(exp.select("*").from_(m.ref(m.rules)))
    types = {r[0]: r[1] for r in rows}
    parts = {"hierarchy": ("", "_node")}
    ordered = ("_min", "_max", "_lo", "_hi", "_null")
    needed = [m.region_column, m.size_column] + [q.name + p for q in m.qis for p in parts.get(q.kind, ordered)]
    missing = [c for c in needed if c not in types]
    if missing:
        raise InputError(f"the rules relation {m.rules!r} lacks the column(s) {missing}: not a sqlanon rules relation")
    return types


# -- the boxes ---------------------------------------------------------------------------------
def _bounds_table(engine: Engine, m: Manifest, i: int, q: QI) -> str:
    """Temp ``(v, r)``: the distinct non-NULL bounds ``q_lo``/``q_hi`` of the rules, ranked from 1
    in the database's own order (so positions and SQL comparisons agree)."""
    name = engine.temp_name(f"bounds{i}")
    rules = m.ref(m.rules)
    values = exp.union(exp.select(g.alias(g.col(f"{q.name}_lo"), "v")).from_(rules.copy()),
                       exp.select(g.alias(g.col(f"{q.name}_hi"), "v")).from_(rules.copy()), distinct=True)
    rank = exp.Window(this=exp.RowNumber(), order=exp.Order(expressions=[exp.Ordered(this=g.col("v"))]))
    query = (exp.select(g.col("v"), g.alias(rank, "r"))
             .from_(exp.Subquery(this=values, alias=exp.TableAlias(this=g.ident("u"))))
             .where(exp.Not(this=exp.Is(this=g.col("v"), expression=exp.Null()))))
    engine.execute(g.create_table_as(name, query))
    return name


def _boxes(engine: Engine, m: Manifest, bounds: Mapping[str, str]) -> tuple[np.ndarray, ...]:
    """Region ids, their sizes, the boxes as position intervals ``(a, b]`` and the domain
    ``(lo, hi]`` (see the module docstring)."""
    r = "r"
    query = exp.select(g.alias(g.col(m.region_column, r), "region"), g.alias(g.col(m.size_column, r), "size")).from_(
        exp.alias_(m.ref(m.rules), g.ident(r), table=True))
    sizes: dict[str, int] = {}
    for i, q in enumerate(m.qis):
        if q.kind == "hierarchy":
            query = query.select(g.alias(g.col(f"{q.name}_node", r), f"n{i}"), copy=False)
            continue
        sizes[q.name] = int(engine.scalar(exp.select(exp.Count(this=exp.Star())).from_(g.table(bounds[q.name]))))
        for side in ("lo", "hi"):
            alias = f"{side}{i}"
            query = query.join(
                exp.alias_(g.table(bounds[q.name]), g.ident(alias), table=True), join_type="left",
                on=exp.EQ(this=g.col("v", alias), expression=g.col(f"{q.name}_{side}", r)), copy=False,
            ).select(g.alias(g.col("r", alias), f"{side}{i}"), copy=False)
        empty = exp.Coalesce(this=exp.EQ(this=g.col(f"{q.name}_lo", r), expression=g.col(f"{q.name}_hi", r)),
                             expressions=[exp.false()])
        null = exp.Coalesce(this=g.col(f"{q.name}_null", r), expressions=[exp.false()])
        query = query.select(g.alias(null, f"null{i}"), g.alias(empty, f"empty{i}"), copy=False)
    got = engine.fetch(query.order_by(g.col(m.region_column, r)))
    region = np.asarray(got["region"])
    if len(region) == 0:
        raise InputError(f"the rules relation {m.rules!r} is empty")
    if region.dtype.kind not in "iu" or region.min() < 0 or len(np.unique(region)) != len(region):
        raise InputError(f"the rules relation {m.rules!r} has duplicate, negative or non-integer region numbers: "
                         "not a sqlanon rules relation")
    n, d = len(region), len(m.qis)
    a, b = np.empty((n, d), np.int64), np.empty((n, d), np.int64)
    dom_lo, dom_hi = np.full(d, -1, np.int64), np.empty(d, np.int64)
    for i, q in enumerate(m.qis):
        if q.kind == "hierarchy":
            h = m.hierarchies[q.name]
            node = np.asarray(got[f"n{i}"], dtype=np.float64)
            if np.isnan(node).any() or node.min() < 0 or node.max() >= h.n_nodes:
                raise InputError(f"the rules relation {m.rules!r} names nodes that hierarchy {q.name!r} does not have")
            node = node.astype(np.int64)
            a[:, i], b[:, i] = h.leaf_lo[node].astype(np.int64) - 1, h.leaf_hi[node]
            dom_hi[i] = h.n_leaves - 1
            continue
        top = dom_hi[i] = sizes[q.name] + 1  # +inf
        lo = np.asarray(got[f"lo{i}"], dtype=np.float64)
        hi = np.asarray(got[f"hi{i}"], dtype=np.float64)
        null = np.asarray(got[f"null{i}"], dtype=bool)
        empty = np.asarray(got[f"empty{i}"], dtype=bool)
        a[:, i] = np.where(empty | null, -1, np.nan_to_num(lo, nan=0.0))
        b[:, i] = np.where(empty, 0, np.nan_to_num(hi, nan=float(top)))
    if (a >= b).any():
        raise InputError(f"the rules relation {m.rules!r} has an empty box: not a sqlanon rules relation")
    size = np.nan_to_num(np.asarray(got["size"], dtype=np.float64))
    return region.astype(np.int64), size, a, b, dom_lo, dom_hi


# -- temp tables for the walk ------------------------------------------------------------------
def _cut_groups(m: Manifest, rule_types: Mapping[str, str]) -> dict[int, str]:
    """The cut column of each QI: QIs of one type share one (fewer columns per probe)."""
    types: dict[str, str] = {}
    out = {}
    for i, q in enumerate(m.qis):
        t = "BIGINT" if q.kind == "hierarchy" else rule_types[f"{q.name}_hi"]
        out[i] = types.setdefault(t, f"c{len(types)}")
    return out


def _node_table(
    engine: Engine, m: Manifest, tree: Tree, region: np.ndarray, bounds: Mapping[str, str],
    rule_types: Mapping[str, str],
) -> str:
    """Temp ``(node, attr, l, r, c0, c1, ...)``: internal nodes (negative keys) with the cut
    value in its QI's type, and leaves (key = region) as pass-through entries (``l = r``)."""
    internal = len(tree.attr)

    def ref(child: np.ndarray) -> np.ndarray:
        return np.where(child >= 0, region[np.maximum(child, 0)], child)

    upload = engine.upload("tree", {
        "node": np.concatenate([-np.arange(1, internal + 1, dtype=np.int64), region]),
        "attr": np.concatenate([tree.attr, np.full(len(region), -1)]).astype(np.int64),
        "cut": np.concatenate([tree.cut, np.zeros(len(region), np.int64)]).astype(np.int64),
        "l": np.concatenate([ref(tree.left), region]).astype(np.int64),
        "r": np.concatenate([ref(tree.right), region]).astype(np.int64),
    })
    u = "u"
    groups = _cut_groups(m, rule_types)
    query = exp.select(
        g.col("node", u), g.alias(exp.Cast(this=g.col("attr", u), to=exp.DataType.build("SMALLINT")), "attr"),
        g.col("l", u), g.col("r", u)).from_(exp.alias_(g.table(upload), g.ident(u), table=True))
    cases: dict[str, exp.Case] = {}
    for i, q in enumerate(m.qis):
        if q.kind == "hierarchy":
            value: exp.Expression = g.col("cut", u)
        else:
            alias = f"b{i}"
            on = exp.and_(exp.EQ(this=g.col("r", alias), expression=g.col("cut", u)),
                          exp.EQ(this=g.col("attr", u), expression=g.lit(i)))
            query = query.join(exp.alias_(g.table(bounds[q.name]), g.ident(alias), table=True),
                               on=on, join_type="left", copy=False)
            value = g.col("v", alias)  # cut position 0 (the NULL point) has no bound: NULL
        column = groups[i]
        cases[column] = cases.get(column, exp.Case(this=g.col("attr", u))).when(g.lit(i), value)
    for column, case in cases.items():
        query = query.select(g.alias(case, column), copy=False)
    name = engine.temp_name("nodes")
    engine.execute(g.create_table_as(name, query))
    engine.drop_temp(upload)
    return name


def _leaf_code_table(engine: Engine, i: int, q: QI, h: Hierarchy, source: Source) -> str:
    """Temp ``(t, code)``: the leaf code of each distinct non-NULL value of the input's column
    that is a leaf, matched as anonymize matches (:func:`sqlanon.model.hierarchy.leaf_codes`).
    Named by the QI's index ``i``, not its name: a temp name stays within every engine's limit."""
    types = dict(source.columns)
    rows = distinct_values(engine, q.name, source.ref, classify(types[q.name]) == "numeric")
    codes = leaf_codes(h, rows["v"], rows["t"]) if len(rows["t"]) else np.zeros(0, np.int32)
    known = codes >= 0
    return engine.upload(f"leaves{i}", {"t": np.asarray(rows["t"], dtype=object)[known],
                                               "code": codes[known].astype(np.int64)})


def _targets_table(engine: Engine, m: Manifest) -> str:
    """Temp ``(region, size, p0, p1, ...)``: each region's published columns (``min<i>``,
    ``max<i>`` per ordered QI, ``p<i>`` the label per hierarchical QI)."""
    r = "r"
    query = exp.select(g.alias(g.col(m.region_column, r), "region"), g.alias(g.col(m.size_column, r), "size")).from_(
        exp.alias_(m.ref(m.rules), g.ident(r), table=True))
    for i, q in enumerate(m.qis):
        parts = (((q.name, f"p{i}"),) if q.kind == "hierarchy"
                 else ((f"{q.name}_min", f"min{i}"), (f"{q.name}_max", f"max{i}")))
        query = query.select(*[g.alias(g.col(c, r), a) for c, a in parts], copy=False)
    name = engine.temp_name("targets")
    engine.execute(g.create_table_as(name, query))
    return name


def _root_table(engine: Engine, m: Manifest) -> str | None:
    """Temp, one row: the fully generalized bounds ``gmin<i>``, ``gmax<i>`` of every ordered QI:
    the bounds of the whole training table, i.e. the smallest ``q_min`` of the non-empty regions
    (NULL if any is NULL: NULL sorts first) and the largest ``q_max``. None without ordered QIs."""
    query = exp.select()
    ordered = [(i, q) for i, q in enumerate(m.qis) if q.kind != "hierarchy"]
    if not ordered:
        return None
    for i, q in ordered:
        lowest = root_bound(m.ref(m.rules), m.size_column, f"{q.name}_min", lowest=True)
        highest = root_bound(m.ref(m.rules), m.size_column, f"{q.name}_max", lowest=False, unbounded=q.unbounded_ends)
        query = query.select(g.alias(lowest, f"gmin{i}"), g.alias(highest, f"gmax{i}"), copy=False)
    name = engine.temp_name("root")
    engine.execute(g.create_table_as(name, query))
    return name


def _branch_order(tree: Tree, size: np.ndarray, d: int) -> list[list[int]]:
    """Per tree level, the QIs its nodes cut, most training rows first: DuckDB evaluates the
    ``CASE attr WHEN ...`` branches in order on the rows still unmatched, so this order makes
    most rows take the first branch."""
    weight = tree.weights(size) + 1e-9  # empty regions still count as used
    out = []
    for level in range(tree.depth):
        at = tree.level == level
        per_qi = np.bincount(tree.attr[at], weights=weight[at], minlength=d)
        out.append([int(i) for i in np.argsort(-per_qi, kind="stable") if per_qi[i] > 0])
    return out


# -- the statement -----------------------------------------------------------------------------
def _walk_query(
    engine: Engine, m: Manifest, source: Source, layout: list[tuple[str, QI | None]], tree: Tree,
    region: np.ndarray, order: list[list[int]], nodes: str, codes: Mapping[str, str], targets: str,
    root: str | None, rule_types: Mapping[str, str], marker: str | None = None,
) -> exp.Select:
    """``SELECT`` of the recoded table: leaf codes, one join per tree level, the region's columns.

    A row whose hierarchical value is unknown (NULL without a NULL leaf, or no leaf) is placed
    when the walk meets no cut on that QI (its region then spans the QI's whole domain). With
    ``marker``, a last column of that name is TRUE for such rows (enforce judges them apart)."""
    x, w, t, f = "x", "w", "t", "f"
    tmp = engine.prefix  # run-unique: internal column names cannot collide with the input's
    inner = exp.select(*[g.alias(g.col(c, x), c) for c, _ in source.columns]).from_(
        exp.alias_(source.ref, g.ident(x), table=True))
    value: dict[int, exp.Expression] = {}
    known: list[exp.Expression] = []  # hierarchical values that are leaves
    for i, q in enumerate(m.qis):
        if q.kind != "hierarchy":
            value[i] = g.col(q.name, w)
            continue
        alias = f"k{i}"
        on = exp.EQ(this=exp.Cast(this=g.col(q.name, x), to=_VARCHAR),
                    expression=exp.Cast(this=g.col("t", alias), to=_VARCHAR))
        inner = inner.join(exp.alias_(g.table(codes[q.name]), g.ident(alias), table=True), on=on,
                           join_type="left", copy=False)
        null_code = int(m.hierarchies[q.name].code_of([None])[0])  # -1: no NULL leaf
        code = exp.Case().when(exp.Is(this=g.col(q.name, x), expression=exp.Null()),
                               g.lit(null_code) if null_code >= 0 else exp.Null()).else_(g.col("code", alias))
        inner = inner.select(g.alias(exp.Cast(this=code, to=_BIGINT), f"{tmp}code{i}"), copy=False)
        value[i] = g.col(f"{tmp}code{i}", w)
        known.append(exp.Not(this=exp.Is(this=value[i].copy(), expression=exp.Null())))

    # One inner join per level: every key the walk can reach is in the node table (checked by
    # counting the rows written), and inner joins probe faster than left joins here.
    query = exp.select().from_(exp.Subquery(this=inner, alias=exp.TableAlias(this=g.ident(w))))
    groups = _cut_groups(m, rule_types)
    cur: exp.Expression = g.lit(int(tree.root) if tree.root < 0 else int(region[tree.root]))
    undecided: list[exp.Expression] = []  # a cut on a hierarchical QI whose value is unknown
    for level in range(tree.depth):
        n = f"n{level}"
        query = query.join(exp.alias_(g.table(nodes), g.ident(n), table=True), join_type="inner",
                           on=exp.EQ(this=g.col("node", n), expression=cur), copy=False)
        tests = []
        for i in order[level]:
            if m.qis[i].kind == "hierarchy":
                undecided.append(exp.and_(exp.EQ(this=g.col("attr", n), expression=g.lit(i)),
                                          exp.Is(this=value[i].copy(), expression=exp.Null())))
            below: exp.Expression = exp.LTE(this=value[i].copy(), expression=g.col(groups[i], n))
            if m.qis[i].kind != "hierarchy":  # NULL sorts first: always on the low side
                below = exp.or_(exp.Is(this=value[i].copy(), expression=exp.Null()), below)
            tests.append((i, below))
        # The last QI of the level needs no attr check: the other entries reaching it are
        # pass-through leaves, whose two children are the leaf itself.
        test = tests[-1][1]
        if len(tests) > 1:
            test = exp.Case(this=g.col("attr", n), ifs=[exp.If(this=g.lit(i), true=t) for i, t in tests[:-1]],
                            default=test)
        cur = exp.Case().when(test, g.col("l", n)).else_(g.col("r", n))
    query = query.join(exp.alias_(g.table(targets), g.ident(t), table=True), join_type="left",
                       on=exp.EQ(this=g.col("region", t), expression=cur), copy=False)
    if root is not None:
        query = query.join(exp.alias_(g.table(root), g.ident(f), table=True), join_type="cross", copy=False)

    # The published columns: the region's, or fully generalized (see the module docstring). An
    # unknown hierarchical value took the right branch at each cut on its QI (NULL <= c is not
    # true): the region reached is the row's only when no such cut was met.
    placed = exp.and_(exp.Not(this=exp.Is(this=g.col("region", t), expression=exp.Null())),
                      *([exp.Not(this=exp.paren(exp.or_(*undecided)))] if undecided else []))
    with_rows = exp.and_(placed.copy(), exp.GT(this=g.col("size", t), expression=g.lit(0)))
    select: list[exp.Expression] = []
    for column, q in layout:
        if q is None:
            select.append(g.alias(g.col(column, w), column))
            continue
        i = m.qis.index(q)
        if q.kind == "hierarchy":
            label = exp.Cast(this=g.lit(m.hierarchies[q.name].labels[0]), to=_VARCHAR)
            select.append(g.alias(exp.Case().when(placed.copy(), g.col(f"p{i}", t)).else_(label), q.name))
            continue
        # an empty region publishes its box (stored in its rules since issue 19); rules of an
        # older release stored NULL, NULL there, which still reads as fully generalized
        stored = exp.or_(with_rows.copy(), exp.and_(placed.copy(), exp.or_(
            *[exp.Not(this=exp.Is(this=g.col(f"{p}{i}", t), expression=exp.Null())) for p in ("min", "max")])))
        for part in ("min", "max"):
            select.append(g.alias(exp.Case().when(stored.copy(), g.col(f"{part}{i}", t))
                                  .else_(g.col(f"g{part}{i}", f)), f"{q.name}_{part}"))
    select.append(g.alias(exp.Case().when(placed.copy(), g.col("region", t)), m.class_column))
    if marker is not None:
        unknown = exp.Not(this=exp.paren(exp.and_(*known))) if known else exp.false()
        select.append(g.alias(exp.Coalesce(this=exp.and_(placed, unknown), expressions=[exp.false()]), marker))
    return query.select(*select, copy=False)


def _create(
    engine: Engine, name: str, existing: list[tuple[str, str]], query: exp.Select, source: Source,
    class_column: str, suppress: Callable[[str], tuple[str, tuple[int, int]]] | None = None,
) -> tuple[int, int, tuple[int, int]]:
    """Create the table ``name`` from ``query`` as one unit (a transaction: the engine's own or
    the caller's; without transactions, what was created is dropped on failure): the rows go to
    a staging table, ``suppress(staging)`` (enforce) runs on it, and only then is what ``replace``
    overwrites dropped and the staging table renamed ``name``; returns ``(rows, placed,
    (suppressed classes, suppressed rows))``. A row count that differs from the input's stops
    everything before the old table is touched."""
    staging = engine.temp_name("applied")

    def undo() -> None:
        engine.execute(g.drop(staging, "TABLE"))
        if not existing:  # a table replace=True overwrote is dropped only after every check
            engine.execute(g.drop(name, "TABLE"))

    with engine.transaction(undo=undo):
        engine.execute(g.create_table_as(staging, query, temporary=False))
        rows, placed = engine.fetch_rows(
            exp.select(exp.Count(this=exp.Star()), exp.Count(this=g.col(class_column))).from_(g.table(staging)))[0]
        expected = engine.scalar(exp.select(exp.Count(this=exp.Star())).from_(source.ref))
        if rows != expected:
            raise SqlanonError(f"internal error: {rows} rows recoded for {expected} input rows; nothing was created")
        suppressed = (0, 0)
        if suppress is not None:
            staging, suppressed = suppress(staging)
        for found, kind in existing:
            engine.execute(g.drop(found, kind.upper()))
        engine.execute(exp.Alter(this=g.table(staging), kind="TABLE", actions=[exp.AlterRename(this=g.table(name))]))
    return int(rows), int(placed), suppressed
