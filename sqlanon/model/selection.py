"""Selection predicates as query regions: SQL text parsed into hyper-rectangles over the QIs.

LeFevre, DeWitt & Ramakrishnan (*Workload-Aware Anonymization*, KDD 2006, Section 3.4): a
selection ``Pr_i`` over the quasi-identifiers defines a query region ``R_i`` of the domain;
the paper handles regions that are hyper-rectangles, and selections that decompose into
several hyper-rectangles as several queries. :func:`parse_selection` reads a predicate written
in SQL (DuckDB dialect) and returns that decomposition: a :class:`Selection` is an OR of
:class:`QueryBox` es, each box an AND of at most one :class:`Condition` per QI.

Accepted, on QIs only (``q`` a QI column, ``v`` a literal of its type):

* ordered QIs (numbers, dates, timestamps, text, booleans, enums without a hierarchy):
  ``q = v``, ``q < v``, ``q <= v``, ``q > v``, ``q >= v`` (either side), ``q <> v`` / ``q != v``
  (two boxes: ``q < v`` OR ``q > v``), ``q [NOT] BETWEEN [SYMMETRIC] a AND b``,
  ``q [NOT] IN (v, ...)`` (one box per value; NOT IN: the open intervals between the values),
  ``q IS [NOT] NULL``. ENUM QIs take only ``=``, ``<>``, ``IN``, ``NOT IN`` and ``IS [NOT]
  NULL``: DuckDB compares an ENUM with a text literal as text while the release orders it by
  label position, so a range on an ENUM would mean two different things;
* hierarchical QIs: ``q = v``, ``q <> v``, ``q [NOT] IN (...)``, ``q IS [NOT] NULL``, where
  ``v`` is a leaf (a value of the column) or the label of an inner node, which stands for the
  leaves under it (``education = 'Higher education'`` selects every row whose education
  generalizes to that node; never NULL: only ``IS NULL`` selects the NULL leaf a column with
  NULLs gets under the root). A label naming several nodes with different leaves is rejected
  (list the leaves instead); ``<>`` and ``NOT IN`` select the non-NULL leaves not named;
* ``AND``, ``OR``, parentheses, and ``NOT`` over a single comparison (flipped: ``NOT q < v`` is
  ``q >= v``; ``NOT q IN (...)`` is ``q NOT IN (...)``; ``NOT q IS NULL`` is ``q IS NOT NULL``).
  ``NOT`` over ``AND``/``OR`` is rejected (write it with the comparisons flipped);
* literals: numbers (``-1.5``, ``1e3``), strings, ``TRUE``/``FALSE``, ``DATE '...'``,
  ``TIMESTAMP '...'``, ``TIMESTAMPTZ '...'`` and casts of literals (``'40'::INTEGER``). A
  literal must be of the QI's type: a number for a numeric QI, a date (or a string that is one)
  for a DATE, a timestamp, a date (midnight) or a string for a TIMESTAMP, a timestamp *with an
  explicit UTC offset* for a TIMESTAMP WITH TIME ZONE (the session time zone is not assumed),
  a string for text, ``TRUE``/``FALSE`` for a boolean, a label of the type for an enum. Values
  beyond microseconds are rejected.

The predicate is brought to disjunctive normal form: AND distributes over OR, the conditions of
a box on one QI are intersected, boxes whose intersection is empty are dropped (a selection
may end up with no box: it selects nothing), duplicate boxes and boxes contained in another
box of the same selection are dropped (the OR is unchanged). More than :data:`MAX_BOXES` boxes
(at any step) is an error. Boxes of one selection may overlap; ``Selection.predicate`` ORs them
(a row counts once).

**Integer QIs** (TINYINT ... UHUGEINT) get closed integer bounds: ``age > 40`` is
``Range(age, [41, ...))``, ``age < 3.5`` is ``age <= 3``, and ``age = 3.5`` is empty, so a box
is empty exactly when it holds no integer. FLOAT/REAL and DOUBLE QIs compare a literal after
converting it to the column's precision, as DuckDB does; DECIMAL QIs compare exactly.

**NULL**: SQL comparisons are never true for NULL, so a :class:`Range` never holds NULL
(``Range(q)`` with no bounds is ``q IS NOT NULL``) and ``IS NULL`` is the separate condition
:class:`IsNull` on an ordered QI, or ``None`` in :class:`Members` on a hierarchical one.
Comparing with a NULL literal (``q = NULL``, ``q IN (1, NULL)``) is rejected: it selects
nothing in SQL and is almost always a mistake for ``IS NULL``.

**Rejected** with a :class:`SelectionError` quoting the offending part: a column that is not a
QI, a qualified column (``t.age``), a function call (``lower(sex) = 'm'``), a subquery, an
arithmetic expression, a comparison between two columns or between two literals, a QI compared
with a literal of another type, an unknown hierarchy or enum value, an operator other than the
ones above (``LIKE``, ``IS DISTINCT FROM``, ...), and anything that is not exactly one
expression (``1=1; DROP TABLE patients``). Nothing from the text is ever executed or copied
into SQL: the text is parsed with sqlglot, Python values are extracted, and
:meth:`Selection.predicate` builds a fresh expression from those values.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any, Union

import numpy as np
import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from ..engine import sqlgen as g
from ..errors import InputError, did_you_mean
from .qi import QI, classify

#: Largest number of boxes (hyper-rectangles) one selection may decompose into.
MAX_BOXES = 256
#: Deepest nesting of a selection (or of a query :func:`sqlanon.rewrite` reads): parentheses,
#: NOT, casts, function calls, each operand of an operator are one level each, a chain of one
#: operator (``a AND b AND c``) is one level. sqlglot's parser and the walks over the parsed
#: tree recurse once per level (the parser some 25 Python frames per parenthesis), so a predicate
#: nested thousands deep would end in a RecursionError; real ones nest a few levels.
MAX_DEPTH = 32

_FLOAT32 = re.compile(r"^(FLOAT|REAL|FLOAT4)$")
_FLOAT64 = re.compile(r"^(DOUBLE|FLOAT8)$")
_TIMESTAMP = re.compile(r"^TIMESTAMP(_S|_MS|_NS)?$")
_TIMESTAMPTZ = re.compile(r"^(TIMESTAMP WITH TIME ZONE|TIMESTAMPTZ)$")
_FRACTION = re.compile(r"[.,](\d+)")


class SelectionError(InputError):
    """A selection predicate that cannot be read as a union of boxes over the QIs."""


# -- the QIs and the result --------------------------------------------------------------------
@dataclass(frozen=True)
class Bound:
    """One end of a :class:`Range`: a value and whether the range includes it."""

    value: Any
    closed: bool


@dataclass(frozen=True)
class Range:
    """Non-NULL values of an ordered QI between two bounds (``None``: unbounded on that side).

    ``Range(q)`` with no bounds is ``q IS NOT NULL``. Integer QIs always have closed integer
    bounds (see the module docstring).
    """

    qi: QI
    low: Bound | None = None
    high: Bound | None = None

    @property
    def name(self) -> str:
        return self.qi.name

    def is_empty(self) -> bool:
        if self.low is None or self.high is None:
            return False
        lo, hi = self.qi.key(self.low.value), self.qi.key(self.high.value)
        return lo > hi or (lo == hi and not (self.low.closed and self.high.closed))

    def contains(self, value: Any) -> bool:
        """Whether ``value`` (a Python value of the column; None is NULL) satisfies the range."""
        if _is_null(value):
            return False
        v = self.qi.key(value)
        if self.low is not None:
            lo = self.qi.key(self.low.value)
            if v < lo or (v == lo and not self.low.closed):
                return False
        if self.high is not None:
            hi = self.qi.key(self.high.value)
            if v > hi or (v == hi and not self.high.closed):
                return False
        return True

    def predicate(self, column: exp.Expression) -> exp.Expression:
        parts: list[exp.Expression] = []
        if self.low is not None and self.high is not None and self.low.closed and self.high.closed \
                and self.qi.key(self.low.value) == self.qi.key(self.high.value):
            return exp.EQ(this=column.copy(), expression=literal(self.qi, self.low.value))
        if self.low is not None:
            op = exp.GTE if self.low.closed else exp.GT
            parts.append(op(this=column.copy(), expression=literal(self.qi, self.low.value)))
        if self.high is not None:
            op = exp.LTE if self.high.closed else exp.LT
            parts.append(op(this=column.copy(), expression=literal(self.qi, self.high.value)))
        if not parts:
            return exp.Not(this=exp.Is(this=column.copy(), expression=exp.Null()))
        return exp.and_(*parts, copy=False)


@dataclass(frozen=True)
class IsNull:
    """``q IS NULL`` on an ordered QI."""

    qi: QI

    @property
    def name(self) -> str:
        return self.qi.name

    def is_empty(self) -> bool:
        return False

    def contains(self, value: Any) -> bool:
        return _is_null(value)

    def predicate(self, column: exp.Expression) -> exp.Expression:
        return exp.Is(this=column.copy(), expression=exp.Null())


@dataclass(frozen=True)
class Members:
    """Leaves of a hierarchical QI (labels; ``None`` is NULL), inner nodes expanded to theirs."""

    qi: QI
    leaves: frozenset[str | None]

    @property
    def name(self) -> str:
        return self.qi.name

    def is_empty(self) -> bool:
        return not self.leaves

    def contains(self, value: Any) -> bool:
        """Whether a value of the column (matched to a leaf as text, like the release) is in."""
        h = self.qi.hierarchy
        assert h is not None
        if _is_null(value):
            return None in self.leaves
        code = int(h.code_of([value])[0])
        return code >= 0 and h.leaves[code] in self.leaves

    def leaf_codes(self) -> np.ndarray:
        """The leaf codes (DFS order of the QI's hierarchy) of the members, sorted."""
        h = self.qi.hierarchy
        assert h is not None
        index = {leaf: i for i, leaf in enumerate(h.leaves)}
        return np.array(sorted(index[x] for x in self.leaves if x in index), dtype=np.int64)

    def predicate(self, column: exp.Expression) -> exp.Expression:
        values = sorted(x for x in self.leaves if x is not None)
        parts: list[exp.Expression] = []
        if values:
            parts.append(_leaf_membership(self.qi, column, values))
        if None in self.leaves:
            parts.append(exp.Is(this=column.copy(), expression=exp.Null()))
        if not parts:
            return exp.false()
        return exp.or_(*parts, copy=False) if len(parts) > 1 else parts[0]


Condition = Union[Range, IsNull, Members]


@dataclass(frozen=True)
class QueryBox:
    """One hyper-rectangle: the AND of its conditions (at most one per QI, in QI order); QIs
    without a condition are unconstrained."""

    conditions: tuple[Condition, ...]

    def condition(self, name: str) -> Condition | None:
        """The condition on QI ``name``, None if the box does not constrain it."""
        return next((c for c in self.conditions if c.name == name), None)

    def contains(self, row: Mapping[str, Any]) -> bool:
        """Whether a row (``{qi: value}``; missing QIs are unconstrained) is in the box."""
        return all(c.contains(row.get(c.name)) for c in self.conditions)

    def predicate(self, column: Callable[[str], exp.Expression]) -> exp.Expression:
        """The box as a boolean over the original values; ``column(name)`` gives a QI's column."""
        if not self.conditions:
            return exp.true()
        return exp.and_(*[c.predicate(column(c.name)) for c in self.conditions], copy=False)


@dataclass(frozen=True)
class Selection:
    """A selection predicate as the OR of its boxes (KDD 2006, Section 3.4: query regions).

    Attributes:
        text: the predicate as given.
        boxes: the hyper-rectangles; no box means the predicate selects nothing.
    """

    text: str
    boxes: tuple[QueryBox, ...]

    def contains(self, row: Mapping[str, Any]) -> bool:
        """Whether a row (``{qi: value}``) satisfies the predicate (as SQL would select it)."""
        return any(b.contains(row) for b in self.boxes)

    def predicate(self, column: Callable[[str], exp.Expression] = g.col) -> exp.Expression:
        """The predicate rebuilt from the extracted values: the OR of the box predicates
        (FALSE without boxes); ``column(name)`` gives a QI's column expression."""
        if not self.boxes:
            return exp.false()
        parts = [b.predicate(column) for b in self.boxes]
        return exp.or_(*parts, copy=False) if len(parts) > 1 else parts[0]


# -- parsing ---------------------------------------------------------------------------------
_Box = dict  # QI name -> Condition, while building


def parse_selection(text: str, qis: Sequence[QI]) -> Selection:
    """Parse a selection predicate into its boxes (see the module docstring for the grammar).

    Args:
        text: a SQL boolean expression over QI columns, e.g. ``"age > 40 AND sex = 'M'"``.
        qis: the QIs the predicate may use.

    Raises:
        SelectionError: quoting the part that is not supported.

    >>> q = [QI("age", "numeric", "INTEGER")]
    >>> parse_selection("age < 18 OR age >= 65", q).predicate().sql("duckdb")
    '"age" <= 17 OR "age" >= 65'
    """
    return selection_from_expression(parse_expression(text), qis, text)


def parse_expression(text: str) -> exp.Expression:
    """Exactly one SQL expression (not a statement list), parsed with sqlglot (DuckDB dialect)."""
    if not isinstance(text, str) or not text.strip():
        raise SelectionError(f"a selection must be a non-empty SQL predicate, got {text!r}")
    parsed = parse_sql(text, SelectionError, "selection")
    if len(parsed) != 1:
        shown = "; ".join(_quote(e) for e in parsed)
        raise SelectionError(
            f"a selection must be exactly one predicate, got {len(parsed)} statements in {text!r}: {shown}")
    if isinstance(parsed[0], (exp.Query, exp.DDL, exp.DML, exp.Command, exp.Transaction, exp.Commit,
                              exp.Rollback, exp.Set, exp.Use, exp.Pragma, exp.Describe, exp.Drop, exp.Alter,
                              exp.Insert, exp.Update, exp.Delete, exp.Create, exp.Copy)):
        raise SelectionError(f"a selection is a predicate, not a statement: {_quote(parsed[0])}")
    return parsed[0]


def parse_sql(text: str, error: type[SelectionError], what: str, dialect: str = g.DIALECT) -> list[exp.Expression]:
    """The statements of ``text``, parsed by sqlglot in ``dialect``; a syntax error, or nesting
    too deep for the parser (it recurses per level), raises ``error`` naming ``what``."""
    try:
        parsed = [e for e in sqlglot.parse(text, read=dialect) if e is not None]
    except (ParseError, TokenError) as e:
        raise error(f"cannot parse {what} {text!r}: {_first_line(e)}") from None
    except RecursionError:
        raise too_deep(error, what, text) from None
    # One tree whatever the dialect: sqlglot reads PostgreSQL's ``x IS NOT NULL`` as a negated
    # IS (DuckDB's as NOT over IS), and the parsers here know the NOT form.
    return [e.transform(_plain_not) for e in parsed]


def _plain_not(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.Is) and node.args.get("negate"):
        return exp.Not(this=exp.Is(this=node.this, expression=node.expression))
    return node


def selection_from_expression(node: exp.Expression, qis: Sequence[QI], text: str | None = None) -> Selection:
    """:func:`parse_selection` for an already parsed expression."""
    if isinstance(qis, (str, bytes, Mapping)) or not isinstance(qis, Iterable):
        raise InputError(f"qis must be a list of QI objects, got {type(qis).__name__} {qis!r}")
    check_depth(node, SelectionError, "selection", text)  # before anything walks it recursively
    parser = _Parser(tuple(qis))
    text = node.sql(dialect=g.DIALECT) if text is None else text
    boxes = parser.dnf(node)
    return Selection(text, _simplify(boxes, parser.qis))


class _Parser:
    def __init__(self, qis: tuple[QI, ...]) -> None:
        if not qis:
            raise InputError("a selection needs at least one QI")
        bad = [q for q in qis if not isinstance(q, QI)]
        if bad:
            raise InputError(f"the QIs of a selection must be QI objects, got {bad[0]!r}")
        self.qis = qis
        self.by_name = {q.name: q for q in qis}

    # boolean structure -> list of boxes (DNF)
    def dnf(self, node: exp.Expression, negated: exp.Expression | None = None) -> list[_Box]:
        node = _unparen(node)
        if isinstance(node, (exp.And, exp.Or)):
            if negated is not None:
                raise SelectionError(
                    f"NOT over {'AND' if isinstance(node, exp.And) else 'OR'} is not supported: "
                    f"{_quote(negated)}; flip the comparisons inside instead")
            return fold_chain(node, self.dnf, _capped, _product)
        if isinstance(node, exp.Not):
            return self.dnf(node.this, None if negated is not None else node)
        return [dict(b) for b in self.atom(node, negated is not None, negated or node)]

    # one comparison -> boxes with one condition each (several for <>, NOT IN, ...)
    def atom(self, node: exp.Expression, negate: bool, quoted: exp.Expression) -> list[_Box]:
        if isinstance(node, exp.Is):
            qi = self.column(node.this, quoted)
            if not isinstance(node.expression, exp.Null):
                raise SelectionError(f"only IS NULL / IS NOT NULL are supported: {_quote(quoted)}")
            return self.nullness(qi, not negate)
        if isinstance(node, exp.Between):
            qi = self.column(node.this, quoted)
            self.need_order(qi, quoted, "BETWEEN")
            lo, hi = self.value(node.args["low"], qi, quoted), self.value(node.args["high"], qi, quoted)
            if node.args.get("symmetric") and qi.key(lo) > qi.key(hi):
                lo, hi = hi, lo
            if negate:
                return self.ranges(qi, [(None, Bound(lo, False)), (Bound(hi, False), None)])
            return self.ranges(qi, [(Bound(lo, True), Bound(hi, True))])
        if isinstance(node, exp.In):
            if node.args.get("query") is not None or node.args.get("unnest") is not None:
                raise SelectionError(f"a subquery is not supported: {_quote(quoted)}")
            if node.args.get("field") is not None or not node.expressions:
                raise SelectionError(f"IN needs a list of literals: {_quote(quoted)}")
            qi = self.column(node.this, quoted)
            values = [self.value(v, qi, quoted) for v in node.expressions]
            return self.membership(qi, values, negate, quoted)
        ops = {exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}
        if type(node) in ops:
            op = ops[type(node)]
            left, right = _unparen(node.this), _unparen(node.expression)
            lcol, rcol = isinstance(left, exp.Column), isinstance(right, exp.Column)
            if lcol and rcol:
                raise SelectionError(f"comparing two columns is not supported: {_quote(quoted)}")
            if not lcol and not rcol:
                self.explain_operand(left, quoted)
                self.explain_operand(right, quoted)
                raise SelectionError(f"a comparison must have a QI on one side: {_quote(quoted)}")
            if rcol:  # literal op column: mirror it
                left, right = right, left
                op = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(op, op)
            qi = self.column(left, quoted)
            value = self.value(right, qi, quoted)
            if negate:
                op = {"=": "<>", "<>": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}[op]
            if op in ("=", "<>"):
                return self.membership(qi, [value], op == "<>", quoted)
            self.need_order(qi, quoted, op)
            bound = {"<": (None, Bound(value, False)), "<=": (None, Bound(value, True)),
                     ">": (Bound(value, False), None), ">=": (Bound(value, True), None)}[op]
            return self.ranges(qi, [bound])
        self.explain_operand(node, quoted)
        raise SelectionError(f"not a comparison of a QI with literals: {_quote(quoted)}")

    def nullness(self, qi: QI, is_null: bool) -> list[_Box]:
        if qi.ordered:
            return [{qi.name: IsNull(qi) if is_null else Range(qi)}]
        h = qi.hierarchy
        assert h is not None
        leaves = frozenset([None]) if is_null else frozenset(x for x in h.leaves if x is not None)
        return [{qi.name: Members(qi, leaves)}] if leaves else []

    def membership(self, qi: QI, values: list[Any], negate: bool, quoted: exp.Expression) -> list[_Box]:
        if not qi.ordered:
            named: set[str | None] = set()
            for v in values:
                named |= self.leaves(qi, v, quoted)
            h = qi.hierarchy
            assert h is not None
            if negate:  # SQL: NOT IN / <> is never true for NULL
                named = {x for x in h.leaves if x is not None} - named
            return [{qi.name: Members(qi, frozenset(named))}] if named else []
        labels = qi.enum_labels
        if labels is not None:
            unknown = [v for v in values if v not in labels]
            if unknown:
                raise SelectionError(f"{unknown[0]!r} is not a value of {qi.name!r} ({qi.data_type}): {_quote(quoted)}")
        distinct = sorted({qi.key(v): v for v in values}.items())
        points = [v for _, v in distinct]
        if not negate:
            return self.ranges(qi, [(Bound(v, True), Bound(v, True)) for v in points])
        edges = [None] + [Bound(v, False) for v in points] + [None]
        return self.ranges(qi, list(zip(edges[:-1], edges[1:])))

    def ranges(self, qi: QI, bounds: list[tuple[Bound | None, Bound | None]]) -> list[_Box]:
        out = []
        for lo, hi in bounds:
            r = make_range(qi, lo, hi)
            if not r.is_empty():
                out.append({qi.name: r})
        return out

    def need_order(self, qi: QI, quoted: exp.Expression, op: str) -> None:
        if not qi.ordered:
            raise SelectionError(
                f"{op} is not defined on hierarchical QI {qi.name!r} (use =, <>, IN, NOT IN or "
                f"IS [NOT] NULL): {_quote(quoted)}")
        if qi.enum_labels is not None:
            raise SelectionError(
                f"{op} on ENUM QI {qi.name!r} is not supported (DuckDB compares an ENUM with text "
                f"as text, the release orders it by label position); use = or IN: {_quote(quoted)}")

    # operands
    def column(self, node: exp.Expression, quoted: exp.Expression) -> QI:
        node = _unparen(node)
        if not isinstance(node, exp.Column) or isinstance(node.this, exp.Star):
            self.explain_operand(node, quoted)
            raise SelectionError(f"expected a QI column, got {_quote(node)} in {_quote(quoted)}")
        if node.table:
            raise SelectionError(
                f"qualified column {_quote(node)} is not supported in a selection; write the bare "
                f"QI name: {_quote(quoted)}")
        return self.resolve(node.name, quoted)

    def resolve(self, name: str, quoted: exp.Expression) -> QI:
        if name in self.by_name:
            return self.by_name[name]
        folded = [q for q in self.qis if q.name.lower() == name.lower()]
        if len(folded) == 1:  # DuckDB resolves identifiers case-insensitively
            return folded[0]
        raise SelectionError(
            f"{name!r} is not a quasi-identifier, in {_quote(quoted)}: a selection may only use "
            f"the QIs." + did_you_mean(name, self.by_name))

    def value(self, node: exp.Expression, qi: QI, quoted: exp.Expression) -> Any:
        node = _unparen(node)
        if isinstance(node, exp.Null):
            raise SelectionError(
                f"comparing with NULL is never true in SQL; use {qi.name} IS [NOT] NULL: {_quote(quoted)}")
        self.explain_operand(node, quoted)
        raw = _raw_literal(node)
        if raw is None:
            raise SelectionError(f"expected a literal, got {_quote(node)} in {_quote(quoted)}")
        return _coerce(raw, qi, node, quoted)

    def leaves(self, qi: QI, value: Any, quoted: exp.Expression) -> set[str | None]:
        """The leaves named by a leaf or node label of a hierarchical QI."""
        h = qi.hierarchy
        assert h is not None
        texts = _label_texts(value)
        nodes = next(([i for i, lab in enumerate(h.labels) if lab == t] for t in texts
                      if t in h.labels), [])
        if not nodes:
            raise SelectionError(
                f"{texts[0]!r} is neither a value nor a node of the hierarchy of {qi.name!r}: "
                f"{_quote(quoted)}." + did_you_mean(texts[0], {x for x in h.labels if x is not None}))
        spans = {(int(h.leaf_lo[i]), int(h.leaf_hi[i])) for i in nodes}
        if len(spans) > 1:
            paths = "; ".join(" > ".join(map(str, h.node_path(i))) for i in nodes)
            raise SelectionError(
                f"{texts[0]!r} names {len(nodes)} nodes of the hierarchy of {qi.name!r} with different "
                f"leaves ({paths}); list the leaves you mean with IN: {_quote(quoted)}")
        lo, hi = spans.pop()
        # SQL: `q = v` is never true for NULL, so the NULL leaf (under the root) is not named
        return set(h.leaves[lo: hi + 1]) - {None}

    def explain_operand(self, node: exp.Expression, quoted: exp.Expression) -> None:
        """Raise a specific error for operands that are never accepted."""
        for sub in node.walk():
            if isinstance(sub, (exp.Subquery, exp.Select, exp.Query, exp.Exists)):
                raise SelectionError(f"a subquery is not supported: {_quote(sub)} in {_quote(quoted)}")
        if isinstance(node, (exp.Func, exp.Anonymous)) and not isinstance(node, exp.Cast):
            raise SelectionError(f"a function call is not supported: {_quote(node)} in {_quote(quoted)}")
        if isinstance(node, exp.Cast) and node.find(exp.Column):
            raise SelectionError(f"a cast of a column is not supported: {_quote(node)} in {_quote(quoted)}")
        if isinstance(node, exp.Binary) and not isinstance(node, (exp.Connector, exp.Predicate)):
            raise SelectionError(f"an arithmetic expression is not supported: {_quote(node)} in {_quote(quoted)}")
        if isinstance(node, exp.Column) and isinstance(node.this, exp.Star):
            raise SelectionError(f"* is not a QI: {_quote(quoted)}")


def make_range(qi: QI, low: Bound | None, high: Bound | None) -> Range:
    """A range, with closed integer bounds for integer QIs and float bounds for float QIs."""
    if qi.integer:
        if low is not None:
            v = low.value
            low = Bound(int(math.ceil(v)) if low.closed else int(math.floor(v)) + 1, True)
        if high is not None:
            v = high.value
            high = Bound(int(math.floor(v)) if high.closed else int(math.ceil(v)) - 1, True)
    return Range(qi, low, high)


# -- literals --------------------------------------------------------------------------------
def _raw_literal(node: exp.Expression) -> tuple[str, Any] | None:
    """``(family, value)`` of a literal node: number (int or Decimal), string, bool, date,
    timestamp, timestamptz or enum; None if the node is not a literal."""
    node = _unparen(node)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return "string", node.this
        return "number", _number(node.this, node)
    if isinstance(node, exp.Neg):
        inner = _raw_literal(node.this)
        if inner is None or inner[0] != "number":
            return None
        return "number", -inner[1]
    if isinstance(node, exp.Boolean):
        return "bool", bool(node.this)
    if isinstance(node, exp.Cast):
        inner = _raw_literal(node.this)
        if inner is None:
            return None
        return _cast(inner, node.to, node)
    return None


def _number(text: str, node: exp.Expression) -> int | Decimal:
    try:
        d = Decimal(text)
    except InvalidOperation:
        raise SelectionError(f"{text!r} is not a number: {_quote(node)}") from None
    if not d.is_finite():
        raise SelectionError(f"{text!r} is not a finite number: {_quote(node)}")
    return int(d) if d == d.to_integral_value() and "." not in text and "e" not in text.lower() else d


def _cast(raw: tuple[str, Any], to: exp.DataType, node: exp.Expression) -> tuple[str, Any]:
    family, value = raw
    t = to.this
    T = exp.DataType.Type
    text = value if family == "string" else None
    try:
        if t in exp.DataType.NUMERIC_TYPES:
            if family == "number":
                return "number", value
            if family == "string":
                return "number", _number(value.strip(), node)
        elif t in exp.DataType.TEXT_TYPES:
            if family == "string":
                return "string", value
        elif t == T.BOOLEAN:
            if family == "bool":
                return "bool", value
            if family == "string" and value.strip().lower() in ("true", "false", "t", "f"):
                return "bool", value.strip().lower() in ("true", "t")
        elif t == T.DATE:
            if family == "date":
                return "date", value
            if text is not None:
                return "date", date.fromisoformat(text.strip())
        elif t in (T.TIMESTAMP, T.TIMESTAMPNTZ, T.DATETIME, T.TIMESTAMP_S, T.TIMESTAMP_MS, T.TIMESTAMP_NS):
            if family in ("timestamp", "date"):
                return "timestamp", _as_datetime(value)
            if text is not None:
                v = _timestamp(text, node)
                if v.tzinfo is None:
                    return "timestamp", v
        elif t in (T.TIMESTAMPTZ, T.TIMESTAMPLTZ):
            if family == "timestamptz":
                return family, value
            if text is not None:
                v = _timestamp(text, node)
                if v.tzinfo is None:
                    raise SelectionError(
                        f"a TIMESTAMP WITH TIME ZONE literal needs an explicit UTC offset (the session "
                        f"time zone is not assumed): {_quote(node)}")
                return "timestamptz", v
        elif t == T.ENUM:
            if family == "string":
                labels = [e.this for e in to.expressions]
                if value not in labels:
                    raise SelectionError(f"{value!r} is not a label of {to.sql(g.DIALECT)}: {_quote(node)}")
                return "string", value
    except SelectionError:
        raise
    except ValueError as e:  # date/datetime parsing
        raise SelectionError(f"cannot read {_quote(node)}: {e}") from None
    raise SelectionError(f"unsupported cast {_quote(node)}")


def _timestamp(text: str, node: exp.Expression) -> datetime:
    m = _FRACTION.search(text.split(" ", 1)[-1].split("T", 1)[-1])
    if m and len(m.group(1)) > 6:
        raise SelectionError(f"timestamps finer than microseconds are not supported: {_quote(node)}")
    return datetime.fromisoformat(text.strip())


def _as_datetime(value: date | datetime) -> datetime:
    return value if isinstance(value, datetime) else datetime(value.year, value.month, value.day)


def _coerce(raw: tuple[str, Any], qi: QI, node: exp.Expression, quoted: exp.Expression) -> Any:
    """The literal as a value of the QI's type, or a type-mismatch error."""
    family, value = raw
    t = qi.type_upper

    def mismatch() -> SelectionError:
        shown = {"number": "a number", "string": "a string", "bool": "a boolean", "date": "a DATE",
                 "timestamp": "a TIMESTAMP", "timestamptz": "a TIMESTAMP WITH TIME ZONE"}[family]
        return SelectionError(f"type mismatch: {_quote(node)} is {shown} but {qi.name!r} is {qi.data_type}: "
                              f"{_quote(quoted)}")

    try:
        if qi.kind == "hierarchy":
            return value
        if qi.kind == "numeric":
            if family != "number":
                raise mismatch()
            if _FLOAT64.match(t):
                return float(value)
            if _FLOAT32.match(t):
                return float(np.float32(float(value)))
            return value
        if t == "DATE":
            if family == "date":
                return value
            if family == "string":
                return date.fromisoformat(value.strip())
            raise mismatch()
        if _TIMESTAMP.match(t):
            if family in ("timestamp", "date"):
                return _as_datetime(value)
            if family == "string":
                v = _timestamp(value, node)
                if v.tzinfo is None:
                    return v
            raise mismatch()
        if _TIMESTAMPTZ.match(t):
            if family == "timestamptz":
                return value
            if family == "string":
                v = _timestamp(value, node)
                if v.tzinfo is not None:
                    return v
                raise SelectionError(
                    f"a TIMESTAMP WITH TIME ZONE literal needs an explicit UTC offset (the session time "
                    f"zone is not assumed): {_quote(node)} in {_quote(quoted)}")
            if family == "timestamp":
                raise SelectionError(
                    f"a TIMESTAMP WITH TIME ZONE QI needs a literal with an explicit UTC offset "
                    f"(TIMESTAMPTZ '2020-01-01 00:00+00'): {_quote(quoted)}")
            raise mismatch()
        if t == "BOOLEAN":
            if family == "bool":
                return value
            raise mismatch()
        if qi.kind == "ordinal" and (t.startswith("VARCHAR") or t.startswith("ENUM") or t == "TEXT"):
            if family == "string":
                return value
            raise mismatch()
    except SelectionError:
        raise
    except ValueError as e:  # date/datetime parsing
        raise SelectionError(f"cannot read {_quote(node)} as {qi.data_type} for {qi.name!r}: {e}") from None
    raise SelectionError(f"QI {qi.name!r} of type {qi.data_type} cannot be compared with literals: {_quote(quoted)}")


def _label_texts(value: Any) -> list[str]:
    """Texts a literal may match a hierarchy label by: as written, then integral (``39.0``
    matches ``39``), like the release matches data values."""
    if isinstance(value, bool):
        return [str(value).lower()]
    if isinstance(value, (int, Decimal)):
        texts = [str(value)]
        if isinstance(value, Decimal) and value == value.to_integral_value():
            texts.append(str(int(value)))
        return texts
    if isinstance(value, datetime):
        return [value.isoformat(sep=" ")]
    if isinstance(value, date):
        return [value.isoformat()]
    return [str(value)]


def literal(qi: QI, value: Any) -> exp.Expression:
    """A fresh SQL literal for a value of the QI (never text copied from the predicate)."""
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, (int, np.integer)):
        return exp.Literal.number(str(int(value)))
    if isinstance(value, Decimal):
        return exp.Literal.number(format(value, "f"))
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            raise InputError(f"cannot compare {qi.name!r} with {value!r}")
        return exp.Literal.number(repr(float(value)))
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            return exp.Cast(this=exp.Literal.string(value.isoformat(sep=" ")), to=exp.DataType.build("TIMESTAMPTZ"))
        return exp.Cast(this=exp.Literal.string(value.isoformat(sep=" ")), to=exp.DataType.build("TIMESTAMP"))
    if isinstance(value, date):
        return exp.Cast(this=exp.Literal.string(value.isoformat()), to=exp.DataType.build("DATE"))
    if isinstance(value, str):
        if qi.enum_labels is not None:  # compare by label position, as the release orders it
            return exp.Cast(this=exp.Literal.string(value), to=exp.DataType.build(qi.data_type, dialect=g.DIALECT))
        return exp.Literal.string(value)
    raise InputError(f"cannot write a literal for {value!r} ({type(value).__name__})")


def _leaf_membership(qi: QI, column: exp.Expression, leaves: list[str]) -> exp.Expression:
    """``column IN (leaves)`` with leaves typed like the column: numbers for numeric columns
    (leaves that are not numbers match no value), text for text, otherwise the column as text
    (the release matched such values to leaves by their text)."""

    base = classify(qi.data_type)
    if base == "numeric":
        numbers = []
        for leaf in leaves:
            try:
                d = Decimal(leaf)
            except InvalidOperation:
                continue
            if d.is_finite():
                numbers.append(exp.Literal.number(format(d, "f")))
        if not numbers:
            return exp.false()
        return exp.In(this=column.copy(), expressions=numbers)
    if qi.type_upper.startswith("VARCHAR") or qi.type_upper == "TEXT":
        return exp.In(this=column.copy(), expressions=[exp.Literal.string(x) for x in leaves])
    text = exp.Cast(this=column.copy(), to=exp.DataType.build("VARCHAR"))
    return exp.In(this=text, expressions=[exp.Literal.string(x) for x in leaves])


# -- DNF helpers -----------------------------------------------------------------------------
def _intersect(a: Condition, b: Condition) -> Condition | None:
    """The intersection of two conditions on one QI, None if empty."""
    if isinstance(a, Members) and isinstance(b, Members):
        m = Members(a.qi, a.leaves & b.leaves)
        return None if m.is_empty() else m
    if isinstance(a, IsNull) or isinstance(b, IsNull):
        return a if isinstance(a, IsNull) and isinstance(b, IsNull) else None
    assert isinstance(a, Range) and isinstance(b, Range)
    qi = a.qi
    low = _tighter(qi, a.low, b.low, max)
    high = _tighter(qi, a.high, b.high, min)
    r = Range(qi, low, high)
    return None if r.is_empty() else r


def _tighter(qi: QI, x: Bound | None, y: Bound | None, pick) -> Bound | None:
    if x is None or y is None:
        return y if x is None else x
    kx, ky = qi.key(x.value), qi.key(y.value)
    if kx == ky:
        return Bound(x.value, x.closed and y.closed)
    return x if pick(kx, ky) == kx else y


def _subset(a: Condition, b: Condition) -> bool:
    """Whether condition ``a`` selects a subset of ``b`` (same QI)."""
    if isinstance(a, Members) and isinstance(b, Members):
        return a.leaves <= b.leaves
    if isinstance(a, IsNull) or isinstance(b, IsNull):
        return isinstance(a, IsNull) and isinstance(b, IsNull)
    assert isinstance(a, Range) and isinstance(b, Range)
    return _intersect(a, b) == a


def _box_subset(a: _Box, b: _Box) -> bool:
    return all(name in a and _subset(a[name], c) for name, c in b.items())


def box_intersection(a: _Box, b: _Box) -> _Box | None:
    """The AND of two boxes: conditions on the same QI intersected; None when it is empty."""
    box = dict(a)
    for name, c in b.items():
        if name in box:
            c = _intersect(box[name], c)
            if c is None:
                return None
        box[name] = c
    return box


def _product(left: list[_Box], right: list[_Box], node: exp.Expression) -> list[_Box]:
    out: list[_Box] = []
    for x, y in itertools.product(left, right):
        box = box_intersection(x, y)
        if box is not None:
            out.append(box)
            _capped(out, node)
    return out


def _capped(boxes: list[_Box], node: exp.Expression) -> list[_Box]:
    if len(boxes) > MAX_BOXES:
        raise SelectionError(
            f"the selection decomposes into more than {MAX_BOXES} boxes (hyper-rectangles) at "
            f"{_quote(node, 200)}; simplify it or split it into several selections")
    return boxes


def _simplify(boxes: list[_Box], qis: tuple[QI, ...]) -> tuple[QueryBox, ...]:
    """Drop duplicates and boxes inside another box (first kept); conditions in QI order."""
    kept: list[_Box] = []
    for i, box in enumerate(boxes):
        inside = any(
            _box_subset(box, other) and (not _box_subset(other, box) or j < i)
            for j, other in enumerate(boxes) if j != i)
        if not inside:
            kept.append(box)
    order = {q.name: i for i, q in enumerate(qis)}
    return tuple(QueryBox(tuple(sorted(b.values(), key=lambda c: order[c.name]))) for b in kept)


# -- nesting ---------------------------------------------------------------------------------
def chain_operands(node: exp.Expression) -> list[exp.Expression]:
    """The operands of a chain of one binary operator, left to right (``a AND b AND c`` parses
    as ``(a AND b) AND c``; a parenthesized operand is one operand), collected in a loop."""
    out: list[exp.Expression] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if type(n) is type(node):
            stack += [n.expression, n.this]  # popped left first
        else:
            out.append(n)
    return out


def fold_chain(node: exp.Expression, part, capped, product) -> list:
    """The DNF of an AND/OR chain from the DNF of each operand (``part``): an OR concatenates
    the operands' terms (``capped`` bounds their number), an AND takes their ``product``. A long
    chain is walked in a loop, not recursively."""
    operands = iter(chain_operands(node))
    terms = part(next(operands))
    for operand in operands:
        more = part(operand)
        terms = capped(terms + more, node) if isinstance(node, exp.Or) else product(terms, more, node)
    return terms


def nesting_depth(node: exp.Expression) -> int:
    """Levels of ``node``'s tree as :data:`MAX_DEPTH` counts them, computed in a loop."""
    deepest = 0
    stack = [(node, 1)]
    while stack:
        n, depth = stack.pop()
        deepest = max(deepest, depth)
        for child in n.iter_expressions():
            chained = isinstance(n, exp.Binary) and type(child) is type(n)  # one more link of a chain
            stack.append((child, depth if chained else depth + 1))
    return deepest


def check_depth(node: exp.Expression, error: type[SelectionError], what: str, text: str | None = None) -> None:
    """Refuse a parsed ``node`` nested more than :data:`MAX_DEPTH` levels deep."""
    if nesting_depth(node) > MAX_DEPTH:
        raise too_deep(error, what, text if text is not None else node.sql(dialect=g.DIALECT))


def too_deep(error: type[SelectionError], what: str, text: str) -> SelectionError:
    """The error for a ``what`` (selection, query) nested too deeply to read."""
    shown = text if len(text) <= 120 else text[:117] + "..."
    return error(
        f"the {what} is too deeply nested: at most {MAX_DEPTH} levels of parentheses, NOT, casts, "
        f"function calls and operators are supported ({len(text)} characters: {shown!r}); "
        f"write it flatter, e.g. without redundant parentheses or double negations")


# -- small helpers ---------------------------------------------------------------------------
def _unparen(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _quote(node: exp.Expression, limit: int = 120) -> str:
    """The offending part, as SQL, for error messages."""
    text = node.sql(dialect=g.DIALECT)
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def _first_line(e: Exception) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


def _is_null(v: Any) -> bool:
    if v is None:
        return True
    if isinstance(v, (float, np.floating)):
        return math.isnan(v)
    return type(v).__name__ in ("NAType", "NaTType")
