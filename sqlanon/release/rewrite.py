"""Rewrite a query over the source table into one over the release's view (overlap semantics).

LeFevre, DeWitt & Ramakrishnan (KDD 2006, Section 3.4) evaluate a selection over a recoded view
by returning every recoding region that overlaps the query region. :func:`rewrite` turns

    SELECT ... FROM <source> WHERE <predicate>

into the same query over ``<view>``, where the predicate keeps every row whose *published* box
could satisfy it: each QI comparison becomes an overlap test on the published columns (the
semantics of :mod:`sqlanon.release.imprecision`), and predicates on other columns pass through
unchanged. Examples (``age`` an integer QI, ``edu`` a hierarchical QI)::

    age > 40                    ->  age_max >= 41
    age BETWEEN 30 AND 50       ->  age_max >= 30 AND (age_min IS NULL OR age_min <= 50)
    age IS NULL                 ->  age_min IS NULL
    edu = 'Bachelors'           ->  edu IN ('Bachelors', 'Higher education', '*')  -- every node over a leaf asked for

(``age_min`` is NULL when the region holds NULLs, which sort first, so it reads as "from the
bottom of the domain".) A row of no region (``eq_class`` NULL: inserted or updated in the source
after the release, published with every QI NULL) is never returned by a query with a QI
predicate: ``eq_class IS NOT NULL`` is added.

**The WHERE clause.** Top-level ``AND`` conjuncts that do not mention a QI are kept as they are.
The conjuncts that do are read like a selection (:mod:`sqlanon.model.selection`: comparisons,
``BETWEEN``, ``IN``, ``IS [NOT] NULL``, ``AND``, ``OR``, ``NOT`` over one comparison), except
that sub-expressions without a QI may sit inside them (``age > 40 OR diagnosis = 'flu'``). They
are brought to disjunctive normal form, each term being a box over the QIs AND'ed with
pass-through predicates, and a term keeps a row iff the row's region overlaps the term's box and
the row satisfies the term's pass-through predicates. So a row is returned iff *some point of
its published box*, together with its other columns, satisfies the predicate: for a
predicate on QIs only, iff its region overlaps the query region (the paper's semantics); for
``age < 30 AND diagnosis = 'flu'``, iff its region overlaps ``age < 30`` and its diagnosis is
'flu'. (Conditions on one QI are intersected before the overlap test, so ``age > 40 AND age <
30`` returns nothing, although each comparison alone overlaps a region ``[20, 50]``.)

**Hierarchical QIs** are published as a node label: ``label IN (...)`` lists the labels of every
node with a leaf in the query's leaf set (``IS NULL`` for the NULL leaf). If one of those labels
also names a node without such a leaf, the label would be ambiguous and the test goes through the
rules instead: ``eq_class IN (SELECT region FROM <view>_rules WHERE q_node IN (...))``.

**Other clauses.** A bare QI column in the SELECT list, GROUP BY or ORDER BY becomes its
published columns (``age`` -> ``age_min, age_max``; a hierarchical QI keeps its name, now the
node label); ``SELECT *`` is the view's columns. Qualified names (``p.age``) work with the
source's name or alias. ``DISTINCT``, ``LIMIT``, ``OFFSET`` and ``HAVING``/``QUALIFY`` without
QIs pass through.

**Rejected** (:class:`RewriteError`, quoting the offending part): anything but one ``SELECT``
from the release's source (several statements, set operations, CTEs, joins, table functions,
another table), subqueries anywhere, a QI inside an expression or function outside WHERE
(``avg(age)``, ``age + 1``), an alias on an ordered QI (``age AS a``: it becomes two columns),
GROUP BY / ORDER BY by position when an ordered QI is selected (positions would shift), a QI in
HAVING, QUALIFY, DISTINCT ON or a window, and every QI predicate the selection parser rejects
(``NOT`` over ``AND``/``OR`` containing a QI, functions of QIs, comparisons of two columns, ...).
The output is rendered from sqlglot expressions; it is returned, never executed. The query is
read and written in the dialect of the release's engine (DuckDB or PostgreSQL SQL); given a
bare manifest and no connection, DuckDB's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlglot import exp

from ..engine import check_connection, engine_for
from ..engine import sqlgen as g
from ..errors import InputError
from ..model.qi import QI
from ..model.selection import (
    MAX_BOXES,
    SelectionError,
    _Parser,
    _quote,
    _unparen,
    box_intersection,
    check_depth,
    fold_chain,
    parse_sql,
)
from ..publish.manifest import Manifest
from .imprecision import condition_overlap
from .regions import load_release

_CLAUSES = {"expressions", "from_", "where", "group", "order", "limit", "offset", "distinct", "having", "qualify"}

_Term = tuple[dict, tuple[exp.Expression, ...]]  # (box: QI name -> Condition, pass-through predicates)


class RewriteError(SelectionError):
    """A query :func:`rewrite` cannot translate to the anonymized view."""


def rewrite(sql: str, release: Any, *, con: Any = None) -> str:
    """The query ``sql`` over the release's source, rewritten over its view, in the SQL dialect
    of the connection holding the release (DuckDB's for a manifest without ``con``).

    Args:
        sql: ``SELECT ... FROM <source> [WHERE ...] [GROUP BY ...] [ORDER BY ...] [LIMIT ...]``.
        release: a :class:`sqlanon.Release`, the name of a release's view (needs ``con``), or
            a :class:`sqlanon.publish.manifest.Manifest` (or any object with a ``manifest`` attribute).
        con: the connection holding the release (DuckDB or PostgreSQL), to reload it (its QI types and
            hierarchies); default: the connection a ``Release`` was made with in this session.
            Not needed for a manifest.

    Returns:
        The rewritten query as SQL text (not executed).

    Raises:
        RewriteError: for a query outside the supported form (see the module docstring).

    >>> import duckdb, sqlanon
    >>> con = duckdb.connect()
    >>> _ = con.execute("CREATE TABLE patients AS SELECT i AS id, i % 90 AS age, i % 7 AS zip FROM range(1000) t(i)")
    >>> release = sqlanon.anonymize(con, "patients", qid=["age"], k=10)
    >>> rewrite("SELECT count(*) FROM patients WHERE age > 40 AND zip = 3", release)
    'SELECT COUNT(*) FROM "patients_anon" WHERE "age_max" >= 41 AND zip = 3 AND NOT "eq_class" IS NULL'
    """
    if con is not None:  # optional here, but a wrong one is refused even when it is not needed
        check_connection(con)
    if con is None:  # a Release from anonymize() in this session remembers its connection
        con = getattr(release, "_con", None)
    if con is None:
        return _Rewriter(_manifest(release, con)).run(sql).sql(dialect=g.DIALECT)
    engine = engine_for(con)
    return engine.render(_Rewriter(_manifest(release, con), engine.dialect).run(sql))


def _manifest(release: Any, con: Any) -> Manifest:
    if isinstance(release, Manifest):
        return release
    if isinstance(getattr(release, "manifest", None), Manifest):
        return release.manifest
    if con is None:
        raise InputError("rewrite needs con= (the connection holding the release) to reload "
                         "the release's QI types and hierarchies, or a sqlanon.publish.manifest.Manifest")
    return load_release(con, release)


class _Rewriter:
    def __init__(self, m: Manifest, dialect: str = g.DIALECT) -> None:
        self.m = m
        self.dialect = dialect
        self.qis = m.qis
        self.parser = _Parser(self.qis)
        self.qualifiers: set[str] = set()
        self.alias: str | None = None

    # -- the statement ------------------------------------------------------------------------
    def run(self, sql: str) -> exp.Select:
        if not isinstance(sql, str) or not sql.strip():
            raise RewriteError(f"expected a SELECT statement, got {sql!r}")
        parsed = parse_sql(sql, RewriteError, "query", self.dialect)
        for statement in parsed:  # before anything walks it recursively
            check_depth(statement, RewriteError, "query", sql)
        if len(parsed) != 1:
            raise RewriteError(f"expected one SELECT statement, got {len(parsed)}: "
                               + "; ".join(_quote(e) for e in parsed))
        query = parsed[0]
        if not isinstance(query, exp.Select):
            raise RewriteError(f"only a single SELECT can be rewritten, not {_quote(query)}")
        extra = sorted(k for k, v in query.args.items() if v not in (None, [], False) and k not in _CLAUSES)
        if extra:
            what = {"with_": "a WITH clause (CTE)", "joins": "a join", "laterals": "a LATERAL",
                    "pivots": "a PIVOT"}.get(extra[0], f"the {extra[0].rstrip('_').upper()} clause")
            raise RewriteError(f"{what} is not supported: {_quote(query, 200)}")
        for sub in query.find_all(exp.Select, exp.Subquery, exp.Exists):
            if sub is not query:
                raise RewriteError(f"a subquery is not supported: {_quote(sub)}")
        for node in query.find_all(exp.In):
            if node.args.get("query") is not None:
                raise RewriteError(f"a subquery is not supported: {_quote(node)}")
        out = query.copy()
        self.from_(out)
        self.select_list(out)
        self.group_order(out)
        for key in ("having", "qualify", "distinct"):
            if out.args.get(key) is not None:
                self.no_qi(out.args[key], key.upper())
        where = out.args.get("where")
        if where is not None:
            out.set("where", exp.Where(this=self.where(where.this)))
        return out

    def from_(self, query: exp.Select) -> None:
        source = query.args.get("from_")
        if source is None:
            raise RewriteError(f"the query has no FROM: {_quote(query)}")
        table = source.this
        if not isinstance(table, exp.Table) or not isinstance(table.this, exp.Identifier):
            raise RewriteError(f"FROM must name the release's source table {self.m.source!r}, got {_quote(table)}")
        if table.name.lower() != self.m.source.lower():
            raise RewriteError(
                f"the query reads {table.name!r}, but release {self.m.view!r} anonymizes {self.m.source!r}: "
                f"{_quote(table)}")
        self.qualifiers = {table.name.lower()} | ({table.alias.lower()} if table.alias else set())
        # keep the source's alias (or its name, if columns are qualified by it) as the view's
        # alias, so qualified references still bind; new columns are qualified the same way
        qualified = any(c.table for c in query.find_all(exp.Column))
        self.alias = table.alias or (table.name if qualified else None)
        view = exp.alias_(self.m.user_ref(self.m.view), g.ident(self.alias), table=True) if self.alias \
            else self.m.user_ref(self.m.view)
        source.set("this", view)

    # -- QI references -------------------------------------------------------------------------
    def qi_of(self, column: exp.Column) -> QI | None:
        """The QI a column reference names (case-insensitively), None for other columns."""
        if isinstance(column.this, exp.Star):
            return None
        if column.table and column.table.lower() not in self.qualifiers:
            raise RewriteError(f"{_quote(column)} does not refer to the source table (FROM {self.m.source!r})")
        name = column.name.lower()
        return next((q for q in self.qis if q.name.lower() == name), None)

    def has_qi(self, node: exp.Expression) -> bool:
        return any(self.qi_of(c) is not None for c in node.find_all(exp.Column))

    def no_qi(self, node: exp.Expression, where: str) -> None:
        for c in node.find_all(exp.Column):
            if self.qi_of(c) is not None:
                raise RewriteError(f"a QI in {where} is not supported: {_quote(c)} in {_quote(node)}")

    def published(self, qi: QI, like: exp.Column | None = None) -> list[exp.Column]:
        names = [qi.name] if not qi.ordered else [f"{qi.name}_min", f"{qi.name}_max"]
        table = like.table if like is not None and like.table else None
        return [g.col(n, table) for n in names]

    def column(self, name: str) -> exp.Column:
        return g.col(name, self.alias)

    def select_list(self, query: exp.Select) -> None:
        out: list[exp.Expression] = []
        self.expanded = False
        for item in query.expressions:
            inner = item.this if isinstance(item, exp.Alias) else item
            if isinstance(inner, exp.Column) and (qi := self.qi_of(inner)) is not None:
                if qi.ordered:
                    if isinstance(item, exp.Alias):
                        raise RewriteError(
                            f"{_quote(item)}: an ordered QI becomes two columns ({qi.name}_min, {qi.name}_max) "
                            f"and cannot take one alias")
                    out += self.published(qi, inner)
                    self.expanded = True
                else:
                    col = self.published(qi, inner)[0]
                    out.append(exp.alias_(col, item.alias, quoted=True) if isinstance(item, exp.Alias) else col)
                continue
            self.no_qi_in_expression(item)
            out.append(item)
        query.set("expressions", out)

    def no_qi_in_expression(self, node: exp.Expression) -> None:
        for c in node.find_all(exp.Column):
            qi = self.qi_of(c)
            if qi is not None:
                shown = f"{qi.name}_min, {qi.name}_max" if qi.ordered else f"the node label {qi.name}"
                raise RewriteError(
                    f"QI {qi.name!r} inside an expression is not supported: {_quote(node)} (the view "
                    f"publishes {shown}; select the bare column)")

    def group_order(self, query: exp.Select) -> None:
        group = query.args.get("group")
        if group is not None:
            items: list[exp.Expression] = []
            for item in group.expressions:
                items += self.bare_or_plain(item, "GROUP BY")
            group.set("expressions", items)
        order = query.args.get("order")
        if order is not None:
            ordered: list[exp.Expression] = []
            for item in order.expressions:
                target = item.this if isinstance(item, exp.Ordered) else item
                mapped = self.bare_or_plain(target, "ORDER BY")
                for m in mapped:
                    o = item.copy() if isinstance(item, exp.Ordered) else exp.Ordered(this=None)
                    o.set("this", m)
                    ordered.append(o)
            order.set("expressions", ordered)

    def bare_or_plain(self, item: exp.Expression, clause: str) -> list[exp.Expression]:
        if isinstance(item, exp.Column) and (qi := self.qi_of(item)) is not None:
            return list(self.published(qi, item))
        if isinstance(item, exp.Literal) and not item.is_string and self.expanded:
            raise RewriteError(f"{clause} by position ({_quote(item)}) is not supported when an ordered QI "
                               f"is selected: its column becomes two; name the columns")
        self.no_qi_in_expression(item)
        return [item]

    # -- WHERE ---------------------------------------------------------------------------------
    def where(self, predicate: exp.Expression) -> exp.Expression:
        conjuncts = list(_conjuncts(predicate))
        with_qi = [c for c in conjuncts if self.has_qi(c)]
        if not with_qi:
            return predicate
        combined = with_qi[0] if len(with_qi) == 1 else exp.and_(*with_qi, copy=False)
        terms = _dedupe(self.terms(combined))
        overlap = self.render(terms)
        out: list[exp.Expression] = []
        for c in conjuncts:
            if c is with_qi[0]:
                out.append(overlap)
            elif all(c is not w for w in with_qi):  # identity: sqlglot's == compares structure
                out.append(c)
        out.append(exp.Not(this=exp.Is(this=self.column(self.m.class_column), expression=exp.Null())))
        return exp.and_(*out, copy=False)

    def terms(self, node: exp.Expression) -> list[_Term]:
        """DNF of a predicate: boxes over the QIs, each with its pass-through predicates."""
        if not self.has_qi(node):
            return [({}, (node,))]
        bare = _unparen(node)
        if isinstance(bare, (exp.And, exp.Or)):
            return fold_chain(bare, self.terms, _capped, _product)
        if isinstance(bare, exp.Not):
            child = _unparen(bare.this)
            if isinstance(child, (exp.And, exp.Or)):
                raise RewriteError(
                    f"NOT over {'AND' if isinstance(child, exp.And) else 'OR'} with a QI inside is not "
                    f"supported: {_quote(bare)}; flip the comparisons inside instead")
            if isinstance(child, exp.Not):
                return self.terms(child.this)
            return [(box, ()) for box in self.atom(child, True, bare)]
        return [(box, ()) for box in self.atom(bare, False, bare)]

    def atom(self, node: exp.Expression, negate: bool, quoted: exp.Expression) -> list[dict]:
        """One comparison on a QI, through the selection parser (qualifiers removed)."""
        node = node.copy()
        for c in node.find_all(exp.Column):
            if c.table:
                self.qi_of(c)  # checks the qualifier
                c.set("table", None)
        try:
            return self.parser.atom(node, negate, quoted)
        except RewriteError:
            raise
        except SelectionError as e:
            raise RewriteError(str(e)) from None

    def render(self, terms: list[_Term]) -> exp.Expression:
        if not terms:
            return exp.false()
        parts = []
        for box, passthrough in terms:
            tests = [condition_overlap(c, self.column, self.node_overlap) for c in box.values()]
            tests += [p.copy() for p in passthrough]
            parts.append(exp.and_(*tests, copy=False) if len(tests) > 1 else tests[0])
        return exp.or_(*parts, copy=False) if len(parts) > 1 else parts[0]

    def node_overlap(self, qi: QI, nodes: Sequence[int]) -> exp.Expression:
        """The view's label column is one of the nodes' labels (exact when no label is shared
        with a node outside ``nodes``; otherwise by region id through the rules)."""
        h = qi.hierarchy
        assert h is not None
        inside = {int(n) for n in nodes}
        if not inside:
            return exp.false()
        labels = {h.labels[n] for n in inside}
        shared = any(h.labels[n] in labels for n in range(h.n_nodes) if n not in inside)
        column = self.column(qi.name)
        if shared:
            regions = (exp.select(g.col(self.m.region_column)).from_(self.m.user_ref(self.m.rules))
                       .where(exp.In(this=g.col(f"{qi.name}_node"), expressions=[g.lit(n) for n in sorted(inside)])))
            return exp.In(this=self.column(self.m.class_column), query=exp.Subquery(this=regions))
        parts: list[exp.Expression] = []
        texts = sorted(label for label in labels if label is not None)
        if texts:
            parts.append(exp.In(this=column, expressions=[exp.Literal.string(t) for t in texts]))
        if None in labels:  # the NULL leaf is published as NULL
            parts.append(exp.Is(this=column.copy(), expression=exp.Null()))
        return exp.or_(*parts, copy=False) if len(parts) > 1 else parts[0]


def _conjuncts(node: exp.Expression):
    """The top-level AND operands of a predicate, through parentheses, left to right (in a loop:
    a chain of thousands of ANDs is flat, not deep)."""
    stack = [node]
    while stack:
        current = stack.pop()
        bare = _unparen(current)
        if isinstance(bare, exp.And):
            stack += [bare.expression, bare.this]
        else:
            yield current


def _product(left: list[_Term], right: list[_Term], node: exp.Expression) -> list[_Term]:
    out: list[_Term] = []
    for (a, pa), (b, pb) in ((x, y) for x in left for y in right):
        box = box_intersection(a, b)
        if box is not None:
            out.append((box, pa + pb))
            _capped(out, node)
    return out


def _capped(terms: list[_Term], node: exp.Expression) -> list[_Term]:
    if len(terms) > MAX_BOXES:
        raise RewriteError(f"the WHERE clause decomposes into more than {MAX_BOXES} terms at {_quote(node, 200)}")
    return terms


def _dedupe(terms: list[_Term]) -> list[_Term]:
    seen: set = set()
    out = []
    for box, passthrough in terms:
        key = (tuple(sorted(box.items(), key=lambda kv: kv[0])),
               tuple(p.sql(dialect=g.DIALECT) for p in passthrough))
        if key not in seen:
            seen.add(key)
            out.append((box, passthrough))
    return out
