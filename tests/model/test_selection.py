"""The selection parser: SQL predicates -> boxes over the QIs (KDD 2006, Section 3.4).

Oracles: tables of accepted predicates with the boxes written out by hand, tables of rejected
ones with their errors, and a hypothesis property comparing the rebuilt predicate, run by
DuckDB, with the engine (DuckDB and PostgreSQL) running the original text and with a plain-Python
three-valued evaluation of the generated predicate.
"""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlanon.engine import engine_for
from sqlanon.engine import sqlgen as g
from sqlanon.errors import InputError
from sqlanon.model.hierarchy import Hierarchy
from sqlanon.model.qi import QI
from sqlanon.model.selection import (
    MAX_BOXES,
    Bound,
    IsNull,
    Members,
    Range,
    SelectionError,
    parse_selection,
)
from tests.support import load_frame, rows, run, sql_logic

EDU = Hierarchy.from_dict({"*": {"school": {"primary": ["p1", "p2"], "secondary": ["s1"]},
                                 "higher": ["bsc", "msc", "phd"]}})
# a label naming two nodes with different leaves, and one naming a chain (same leaves twice)
AMBIG = Hierarchy.from_rows([["a1", "x", "*"], ["a2", "x", "*"], ["b1", "y", "*"], ["x", "z", "*"],
                             ["c", "c", "*"]])
AGE = QI("age", "numeric", "INTEGER")
X = QI("x", "numeric", "DOUBLE")
F = QI("f", "numeric", "FLOAT")
DEC = QI("dec", "numeric", "DECIMAL(10,2)")
S = QI("s", "ordinal", "VARCHAR")
B = QI("b", "ordinal", "BOOLEAN")
E = QI("e", "ordinal", "ENUM('z', 'a', 'm')")
D = QI("d", "temporal", "DATE")
TS = QI("ts", "temporal", "TIMESTAMP")
TZ = QI("tz", "temporal", "TIMESTAMP WITH TIME ZONE")
EDUQ = QI("edu", "hierarchy", "VARCHAR", EDU)
AMB = QI("amb", "hierarchy", "VARCHAR", AMBIG)
NUMH = QI("nh", "hierarchy", "BIGINT", Hierarchy.from_dict({"*": {"low": ["1", "2"], "high": ["3", "39"]}}))
ZIP = QI("zip code", "numeric", "BIGINT")
QIS = (AGE, X, F, DEC, S, B, E, D, TS, TZ, EDUQ, AMB, NUMH, ZIP)

# The parser's own tests take no connection; those running a parsed selection's SQL (rendered in
# the connection's dialect) run on both engines.
pytestmark = pytest.mark.engines("duckdb", "postgres")


def dialect(con) -> str:
    return engine_for(con).dialect


def shape(selection):
    """Boxes as plain tuples: Range -> (name, low, low_closed, high, high_closed), IsNull ->
    (name, 'NULL'), Members -> (name, frozenset of leaves)."""
    out = []
    for box in selection.boxes:
        conds = []
        for c in box.conditions:
            if isinstance(c, Range):
                conds.append((c.name, c.low and c.low.value, c.low and c.low.closed,
                              c.high and c.high.value, c.high and c.high.closed))
            elif isinstance(c, IsNull):
                conds.append((c.name, "NULL"))
            else:
                conds.append((c.name, frozenset(c.leaves)))
        out.append(tuple(conds))
    return out


def r(name, lo=None, lo_closed=None, hi=None, hi_closed=None):
    return (name, lo, lo_closed, hi, hi_closed)


ALL_EDU = frozenset(EDU.leaves)
ACCEPTED = [
    ("age > 40", [(r("age", 41, True),)]),
    ("age >= 40", [(r("age", 40, True),)]),
    ("age < 18", [(r("age", None, None, 17, True),)]),
    ("40 < age", [(r("age", 41, True),)]),
    ("40 >= age", [(r("age", None, None, 40, True),)]),
    ("age = 3", [(r("age", 3, True, 3, True),)]),
    ("age = 3.5", []),  # no integer
    ("age > 3.5", [(r("age", 4, True),)]),
    ("age <= -2.5", [(r("age", None, None, -3, True),)]),
    ("age > 1e1", [(r("age", 11, True),)]),
    ("age > '7'::INTEGER", [(r("age", 8, True),)]),
    ("age > CAST(7 AS BIGINT)", [(r("age", 8, True),)]),
    ("age <> 3", [(r("age", None, None, 2, True),), (r("age", 4, True),)]),
    ("age != 3", [(r("age", None, None, 2, True),), (r("age", 4, True),)]),
    ("age BETWEEN 30 AND 50", [(r("age", 30, True, 50, True),)]),
    ("age BETWEEN 50 AND 30", []),
    ("age BETWEEN SYMMETRIC 50 AND 30", [(r("age", 30, True, 50, True),)]),
    ("age NOT BETWEEN 30 AND 50", [(r("age", None, None, 29, True),), (r("age", 51, True),)]),
    ("age IN (5, 1, 5)", [(r("age", 1, True, 1, True),), (r("age", 5, True, 5, True),)]),
    ("age NOT IN (1, 3)", [(r("age", None, None, 0, True),), (r("age", 2, True, 2, True),),
                           (r("age", 4, True),)]),
    ("NOT age IN (1, 2)", [(r("age", None, None, 0, True),), (r("age", 3, True),)]),
    ("age IS NULL", [(("age", "NULL"),)]),
    ("age IS NOT NULL", [(r("age"),)]),
    ("NOT (age IS NULL)", [(r("age"),)]),
    ("NOT age < 3", [(r("age", 3, True),)]),
    ("NOT NOT age < 3", [(r("age", None, None, 2, True),)]),
    ("NOT (age = 3)", [(r("age", None, None, 2, True),), (r("age", 4, True),)]),
    ("age > 40 AND s = 'M'", [(r("age", 41, True), r("s", "M", True, "M", True))]),
    ("s = 'M' AND age > 40", [(r("age", 41, True), r("s", "M", True, "M", True))]),  # QI order
    ("age > 10 AND age < 20 AND age >= 12", [(r("age", 12, True, 19, True),)]),
    ("age > 5 AND age < 3", []),
    ("age IS NULL AND age > 3", []),
    ("age < 18 OR age >= 65", [(r("age", None, None, 17, True),), (r("age", 65, True),)]),
    ("age < 30 OR age < 18", [(r("age", None, None, 29, True),)]),  # contained box dropped
    ("age < 18 OR age < 18", [(r("age", None, None, 17, True),)]),
    ("(age < 3 OR age > 10) AND (s = 'a' OR b)" .replace(" OR b", " OR s = 'b'"),
     [(r("age", None, None, 2, True), r("s", "a", True, "a", True)),
      (r("age", None, None, 2, True), r("s", "b", True, "b", True)),
      (r("age", 11, True), r("s", "a", True, "a", True)),
      (r("age", 11, True), r("s", "b", True, "b", True))]),
    ("((age > 3))", [(r("age", 4, True),)]),
    ('"zip code" = 53706', [(r("zip code", 53706, True, 53706, True),)]),
    ("AGE > 3", [(r("age", 4, True),)]),  # case-insensitive, as DuckDB
    ("x > 0.1", [(r("x", 0.1, False),)]),
    ("x <= -1", [(r("x", None, None, -1.0, True),)]),
    ("f > 0.1", [(r("f", 0.10000000149011612, False),)]),  # FLOAT precision, as DuckDB compares
    ("dec >= 1.25", [(r("dec", Decimal("1.25"), True),)]),
    ("s >= 'b' AND s < 'd'", [(r("s", "b", True, "d", False),)]),
    ("s = 'it''s'", [(r("s", "it's", True, "it's", True),)]),
    ("b = TRUE", [(r("b", True, True, True, True),)]),
    ("b < TRUE", [(r("b", None, None, True, False),)]),
    ("e IN ('m', 'z')", [(r("e", "z", True, "z", True),), (r("e", "m", True, "m", True),)]),  # enum order
    ("e <> 'a'", [(r("e", None, None, "a", False),), (r("e", "a", False),)]),
    ("d >= DATE '2020-01-01'", [(r("d", date(2020, 1, 1), True),)]),
    ("d < '2020-02-01'", [(r("d", None, None, date(2020, 2, 1), False),)]),
    ("d BETWEEN '2020-01-01'::DATE AND CAST('2020-12-31' AS DATE)",
     [(r("d", date(2020, 1, 1), True, date(2020, 12, 31), True),)]),
    ("ts > TIMESTAMP '2020-01-01 10:30'", [(r("ts", datetime(2020, 1, 1, 10, 30), False),)]),
    ("ts > DATE '2020-01-01'", [(r("ts", datetime(2020, 1, 1), False),)]),
    ("ts <= '2020-01-01 10:30:00.5'", [(r("ts", None, None, datetime(2020, 1, 1, 10, 30, 0, 500000), True),)]),
    ("tz >= TIMESTAMPTZ '2020-01-01 10:00+02'",
     [(r("tz", datetime(2020, 1, 1, 8, 0, tzinfo=timezone.utc), True),)]),
    ("tz < '2020-01-01 10:00:00+00:00'", [(r("tz", None, None, datetime(2020, 1, 1, 10, tzinfo=timezone.utc), False),)]),
    ("edu = 'bsc'", [(("edu", frozenset({"bsc"})),)]),
    ("edu = 'school'", [(("edu", frozenset({"p1", "p2", "s1"})),)]),
    ("edu IN ('primary', 'phd')", [(("edu", frozenset({"p1", "p2", "phd"})),)]),
    ("edu <> 'higher'", [(("edu", frozenset({"p1", "p2", "s1"})),)]),
    ("edu NOT IN ('school', 'msc')", [(("edu", frozenset({"bsc", "phd"})),)]),
    ("edu = '*'", [(("edu", ALL_EDU),)]),
    ("edu IS NULL", [(("edu", frozenset({None})),)]),
    ("edu IS NOT NULL", [(("edu", ALL_EDU),)]),
    ("edu = 'school' AND edu <> 'p1'", [(("edu", frozenset({"p2", "s1"})),)]),
    ("edu = 'school' AND edu = 'higher'", []),
    ("edu = 'primary' OR edu = 'school'", [(("edu", frozenset({"p1", "p2", "s1"})),)]),
    ("amb = 'c'", [(("amb", frozenset({"c"})),)]),  # a chain: two nodes, same leaves
    ("amb = 'y'", [(("amb", frozenset({"b1"})),)]),
    ("nh = 39", [(("nh", frozenset({"39"})),)]),
    ("nh = 39.0", [(("nh", frozenset({"39"})),)]),
    ("nh IN ('low', 3)", [(("nh", frozenset({"1", "2", "3"})),)]),
    ("age > 40 AND edu = 'higher' OR d IS NULL",
     [(r("age", 41, True), ("edu", frozenset({"bsc", "msc", "phd"}))), (("d", "NULL"),)]),
]


@pytest.mark.parametrize("text, boxes", ACCEPTED, ids=[t for t, _ in ACCEPTED])
def test_accepted(text, boxes):
    selection = parse_selection(text, QIS)
    assert selection.text == text
    assert shape(selection) == boxes


REJECTED = [
    ("1=1; DROP TABLE patients", "exactly one predicate, got 2 statements"),
    ("age > 3; DROP TABLE patients", "got 2 statements"),
    ("age > 1 AND 1=1; DELETE FROM patients", "'DELETE FROM patients'"),
    ("DROP TABLE patients", "a predicate, not a statement: 'DROP TABLE patients'"),
    ("SELECT * FROM patients", "not a statement"),
    ("age = 1 UNION SELECT 1", "not a statement"),
    ("age > (SELECT 1)", "a subquery is not supported: '(SELECT 1)'"),
    ("age IN (SELECT age FROM patients)", "a subquery is not supported"),
    ("EXISTS (SELECT 1)", "a subquery is not supported"),
    ("lower(s) = 'm'", "a function call is not supported: 'LOWER(s)'"),
    ("s = lower('M')", "a function call is not supported: \"LOWER('M')\""),
    ("CAST(age AS VARCHAR) = '3'", "a cast of a column is not supported"),
    ("age > income", "comparing two columns is not supported: 'age > income'"),
    ("age = x", "comparing two columns"),
    ("income > 3", "'income' is not a quasi-identifier, in 'income > 3'"),
    ("agee > 3", "Did you mean 'age'?"),
    ("t.age > 3", "qualified column 't.age'"),
    ("NOT (age < 3 OR s = 'M')", "NOT over OR is not supported: \"NOT (age < 3 OR s = 'M')\""),
    ("NOT (age < 3 AND age > 1)", "NOT over AND is not supported"),
    ("age + 1 > 3", "an arithmetic expression is not supported: 'age + 1'"),
    ("age > 1 + 2", "an arithmetic expression is not supported: '1 + 2'"),
    ("1 = 1", "must have a QI on one side: '1 = 1'"),
    ("TRUE", "not a comparison"),
    ("age", "not a comparison"),
    ("age LIKE '1%'", "not a comparison of a QI with literals: \"age LIKE '1%'\""),
    ("age IS DISTINCT FROM 3", "not a comparison"),
    ("age = NULL", "comparing with NULL is never true in SQL; use age IS [NOT] NULL"),
    ("age IN (1, NULL)", "comparing with NULL"),
    ("age = 'x'", "type mismatch: \"'x'\" is a string but 'age' is INTEGER"),
    ("age = TRUE", "type mismatch"),
    ("x > DATE '2020-01-01'", "type mismatch"),
    ("s = 3", "type mismatch: '3' is a number but 's' is VARCHAR"),
    ("b = 1", "type mismatch"),
    ("d > TIMESTAMP '2020-01-01 10:00'", "is a TIMESTAMP but 'd' is DATE"),
    ("d > 'yesterday'", "cannot read \"'yesterday'\" as DATE"),
    ("ts > '2020-01-01 10:00:00.123456789'", "finer than microseconds"),
    ("tz > '2020-01-01 10:00'", "needs an explicit UTC offset"),
    ("tz > TIMESTAMP '2020-01-01 10:00'", "needs a literal with an explicit UTC offset"),
    ("e > 'a'", "on ENUM QI 'e' is not supported"),
    ("e = 'q'", "'q' is not a value of 'e'"),
    ("edu = 'college'", "'college' is neither a value nor a node of the hierarchy of 'edu'"),
    ("edu > 'bsc'", "> is not defined on hierarchical QI 'edu'"),
    ("edu BETWEEN 'a' AND 'b'", "BETWEEN is not defined on hierarchical QI"),
    ("amb = 'x'", "'x' names 2 nodes of the hierarchy of 'amb' with different leaves"),
    ("age > '3x'::INTEGER", "'3x' is not a number"),
    ("age = 0x10", "not a comparison"),
    ("age > 3 OR", "cannot parse selection"),
    ("", "non-empty"),
    ("   ", "non-empty"),
    ("age = ANY([1, 2])", "expected a literal"),
    ("age IS TRUE", "only IS NULL / IS NOT NULL"),
]


@pytest.mark.parametrize("text, message", REJECTED, ids=[t or "empty" for t, _ in REJECTED])
def test_rejected(text, message):
    with pytest.raises(SelectionError) as info:
        parse_selection(text, QIS)
    assert message in str(info.value)
    assert isinstance(info.value, InputError)


def test_too_many_boxes():
    many = "x NOT IN (1, 2, 3, 4) AND s NOT IN ('a', 'b', 'c', 'd')"  # 5 x 5 boxes
    assert len(parse_selection(many, P_QIS).boxes) == 25
    assert len(parse_selection(many + " AND age NOT IN (1, 2, 3, 4)", P_QIS).boxes) == 50  # integers: 2
    many += " AND d NOT IN ('2020-01-01', '2020-01-02', '2020-01-03', '2020-01-04')"  # x 5
    assert len(parse_selection(many + " AND age <> 3", P_QIS).boxes) == 250  # x 2
    with pytest.raises(SelectionError, match=f"more than {MAX_BOXES} boxes"):
        parse_selection(many + " AND age NOT IN (1, 3, 5)", P_QIS)  # x 4
    # just under the cap is fine
    ok = " OR ".join(f"age = {i}" for i in range(MAX_BOXES))
    assert len(parse_selection(ok, (AGE,)).boxes) == MAX_BOXES


def test_predicate_is_rebuilt_not_copied(con):
    """Comments, casing and quoting tricks from the text never reach the rebuilt SQL."""
    sel = parse_selection("age > 3 /* '); DROP TABLE x; -- */ AND s = 'a''); DROP TABLE x; --'", QIS)
    sql = sel.predicate().sql(dialect=dialect(con))
    assert sql == "\"age\" >= 4 AND \"s\" = 'a''); DROP TABLE x; --'"
    run(con, "CREATE TABLE t (age INTEGER, s VARCHAR)")
    run(con, "INSERT INTO t VALUES (5, 'a''); DROP TABLE x; --'), (5, 'a')")
    assert rows(con, f"SELECT count(*) FROM t WHERE {sql}") == [(1,)]


def test_empty_selection_predicate_is_false():
    sel = parse_selection("age > 5 AND age < 3", QIS)
    assert sel.boxes == () and sel.predicate().sql() == "FALSE" and not sel.contains({"age": 4})


def test_predicate_literals_are_typed():
    sql = parse_selection("d >= '2020-01-01' AND ts < TIMESTAMP '2021-01-01' AND tz > "
                          "'2020-01-01 00:00+01' AND e = 'a' AND nh IN ('low', 39)", QIS).predicate().sql("duckdb")
    assert "\"d\" >= CAST('2020-01-01' AS DATE)" in sql
    assert "\"ts\" < CAST('2021-01-01 00:00:00' AS TIMESTAMP)" in sql
    assert "\"tz\" > CAST('2020-01-01 00:00:00+01:00' AS TIMESTAMPTZ)" in sql
    assert "\"e\" = CAST('a' AS ENUM('z', 'a', 'm'))" in sql
    assert "\"nh\" IN (1, 2, 39)" in sql


def test_qis_from_spec_and_manifest(adult):
    import sqlanon
    from sqlanon.engine import engine_for
    from sqlanon.publish import manifest
    con, hierarchies = adult
    request = sqlanon.Request("adult", ["age", "education"], 10, hierarchies={"education": hierarchies["education"]})
    spec = request.resolve(engine_for(con))
    from_spec = spec.qis
    assert [(q.name, q.kind, q.data_type) for q in from_spec] == [("age", "numeric", "BIGINT"),
                                                                    ("education", "hierarchy", "VARCHAR")]
    release = sqlanon.anonymize(con, "adult", ["age", "education"], 50,
                                hierarchies={"education": hierarchies["education"]})
    from_manifest = manifest.read(con, release.view).qis
    assert from_manifest == from_spec
    sel = parse_selection("age BETWEEN 30 AND 40 AND education = 'Higher education'", from_manifest)
    [(n,)] = rows(con, f"SELECT count(*) FROM adult WHERE {sel.predicate().sql(dialect(con))}")
    [(expected,)] = rows(
        con, "SELECT count(*) FROM adult WHERE age BETWEEN 30 AND 40 AND education IN ('Bachelors', 'Masters', "
             "'Doctorate', 'Prof-school', 'Assoc-acdm', 'Assoc-voc', 'Some-college')")
    assert n == expected > 0


def test_selection_qi_validation():
    with pytest.raises(InputError):
        QI("a", "categorical", "VARCHAR")
    with pytest.raises(InputError):
        QI("a", "hierarchy", "VARCHAR")
    with pytest.raises(InputError):
        parse_selection("a > 1", ())


# -- property: the rebuilt predicate selects what the original text selects ----------------------
ROWS = 160
_rng = random.Random(7)
_EDU_VALUES = list(EDU.leaves) + [None]
DATA = [
    {
        "id": i,
        "age": _rng.choice([None, *range(-2, 13)]),
        "x": _rng.choice([None, -1.5, 0.0, 0.1, 0.3, 2.25, 7.0]),
        "s": _rng.choice([None, "", "a", "ab", "b", "c", "it's"]),
        "d": _rng.choice([None, *(date(2020, 1, 1) + timedelta(days=k) for k in (0, 1, 31, 365))]),
        "edu": _rng.choice(_EDU_VALUES),
    }
    for i in range(ROWS)
]
P_QIS = (AGE, X, S, D, EDUQ)
_LITERALS = {
    "age": st.sampled_from(["-2", "0", "3", "3.5", "7", "12", "-1.5", "'5'::INTEGER"]),
    "x": st.sampled_from(["-1.5", "0", "0.1", "0.3", "1", "2.25", "7"]),
    "s": st.sampled_from(["''", "'a'", "'ab'", "'b'", "'bb'", "'it''s'"]),
    "d": st.sampled_from(["DATE '2020-01-01'", "'2020-01-02'", "CAST('2020-02-01' AS DATE)", "DATE '2021-06-01'"]),
}
_EDU_LABELS = ["p1", "p2", "s1", "bsc", "msc", "phd"]          # leaves: DuckDB can run the text
_EDU_NODES = ["school", "primary", "secondary", "higher", "*"]  # inner nodes: only the oracle can


def _sql_value(text):
    """The Python value of one of the literals above (test-side, independent of the parser)."""
    if text.startswith("DATE") or text.startswith("CAST"):
        return date.fromisoformat(text.split("'")[1])
    if text.endswith("::INTEGER"):
        return int(text.split("'")[1])
    if text.startswith("'"):
        inner = text[1:-1].replace("''", "'")
        try:
            return date.fromisoformat(inner)
        except ValueError:
            return inner
    return Decimal(text)


@st.composite
def atoms(draw, inner_nodes):
    col = draw(st.sampled_from(["age", "x", "s", "d", "edu"]))
    if col == "edu":
        labels = _EDU_LABELS + (_EDU_NODES if inner_nodes else [])
        op = draw(st.sampled_from(["=", "<>", "IN", "NOT IN", "IS NULL", "IS NOT NULL"]))
        if op.startswith("IS"):
            return (col, op, ())
        k = 1 if op in ("=", "<>") else draw(st.integers(1, 3))
        return (col, op, tuple(f"'{draw(st.sampled_from(labels))}'" for _ in range(k)))
    op = draw(st.sampled_from(["=", "<>", "<", "<=", ">", ">=", "BETWEEN", "NOT BETWEEN", "IN", "NOT IN",
                               "IS NULL", "IS NOT NULL"]))
    lit = _LITERALS[col]
    k = {"IS NULL": 0, "IS NOT NULL": 0, "BETWEEN": 2, "NOT BETWEEN": 2}.get(op, 1)
    if op in ("IN", "NOT IN"):
        k = draw(st.integers(1, 3))
    return (col, op, tuple(draw(lit) for _ in range(k)))


def predicates(inner_nodes):
    leaf = st.one_of(atoms(inner_nodes), st.tuples(st.just("NOT"), atoms(inner_nodes)))
    return st.recursive(leaf, lambda sub: st.tuples(st.sampled_from(["AND", "OR"]), sub, sub), max_leaves=6)


def render(p, flip):
    return sql_logic.render(p, flip)


def _edu_leaves(label):
    return sql_logic.leaves_under(EDU, label)


def evaluate(p, row):
    """SQL three-valued logic in plain Python: True, False or None (see tests/support/sql_logic.py)."""
    return sql_logic.evaluate(p, row, _compare)


def _compare(col, op, vals, v):
    """One comparison on a non-NULL value."""
    if col == "edu":  # a label stands for the leaves under it
        named = set().union(*(_edu_leaves(t.strip("'")) for t in vals))
        return (v in named) if op in ("=", "IN") else (v not in named)
    xs = [_sql_value(t) for t in vals]
    if col == "x":
        xs = [float(a) for a in xs]  # DuckDB compares a DOUBLE column with the literal as DOUBLE
    if op == "=":
        return v == xs[0]
    if op == "<>":
        return v != xs[0]
    if op in ("<", "<=", ">", ">="):
        return {"<": v < xs[0], "<=": v <= xs[0], ">": v > xs[0], ">=": v >= xs[0]}[op]
    if op == "BETWEEN":
        return xs[0] <= v <= xs[1]
    if op == "NOT BETWEEN":
        return not (xs[0] <= v <= xs[1])
    if op == "IN":
        return v in xs
    return v not in xs


@pytest.fixture
def table(con):
    """Table ``t`` of DATA in ``con``."""
    columns = ("id", "age", "x", "s", "d", "edu")
    load_frame(con, "t", pd.DataFrame([[r[c] for c in columns] for r in DATA], columns=list(columns), dtype=object),
               types={"id": "INTEGER", "age": "INTEGER", "x": "DOUBLE", "s": "VARCHAR", "d": "DATE",
                      "edu": "VARCHAR"})
    return con


def _ids(con, where):
    return {r[0] for r in rows(con, f"SELECT id FROM t WHERE {where}")}


# Fewer examples on PostgreSQL: the parser is engine-independent, the point there is that the
# rebuilt SQL means the same in PostgreSQL's dialect.
EXAMPLES = {"duckdb": (300, 150), "postgres": (150, 75)}


def test_predicate_selects_what_the_text_selects(table, engine_name):
    sql_dialect = dialect(table)

    @settings(max_examples=EXAMPLES[engine_name][0], deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(p=predicates(inner_nodes=False), flip=st.booleans())
    def check(p, flip):
        text = render(p, flip)
        try:
            sel = parse_selection(text, P_QIS)
        except SelectionError as e:
            assert "NOT over" in str(e) or "more than" in str(e)
            return
        rebuilt = _ids(table, sel.predicate().sql(dialect=sql_dialect))
        assert rebuilt == _ids(table, text)  # the engine on the original text (leaves only)
        assert rebuilt == {r["id"] for r in DATA if evaluate(p, r) is True}
        assert rebuilt == {r["id"] for r in DATA if sel.contains(r)}

    check()


def test_inner_nodes_select_their_leaves(table, engine_name):
    sql_dialect = dialect(table)

    @settings(max_examples=EXAMPLES[engine_name][1], deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(p=predicates(inner_nodes=True))
    def check(p):
        text = render(p, False)
        try:
            sel = parse_selection(text, P_QIS)
        except SelectionError as e:
            assert "NOT over" in str(e) or "more than" in str(e)
            return
        rebuilt = _ids(table, sel.predicate().sql(dialect=sql_dialect))
        assert rebuilt == {r["id"] for r in DATA if evaluate(p, r) is True}
        assert rebuilt == {r["id"] for r in DATA if sel.contains(r)}

    check()


def test_boxes_are_a_cover_without_redundancy():
    """Every box selects something the other boxes do not (contained boxes were dropped)."""
    sel = parse_selection("age < 30 OR age < 18 OR (age < 5 AND s = 'a') OR age > 60 OR s = 'b'", P_QIS)
    assert len(sel.boxes) == 3
    for i, box in enumerate(sel.boxes):
        others = [b for j, b in enumerate(sel.boxes) if j != i]
        own = [r for r in DATA + [{"age": 70, "s": "z"}, {"age": 20, "s": "b"}, {"age": 50, "s": "b"}]
               if box.contains(r) and not any(o.contains(r) for o in others)]
        assert own, box


def _rebuilt_vs_original(con, table, qis, texts):
    for text in texts:
        sel = parse_selection(text, qis)
        rebuilt = {r[0] for r in rows(con, f"SELECT id FROM {table} WHERE {sel.predicate().sql(dialect(con))}")}
        original = {r[0] for r in rows(con, f"SELECT id FROM {table} WHERE {text}")}
        assert rebuilt == original and rebuilt, text


@pytest.mark.engines("duckdb")  # DuckDB's ENUM type (a PostgreSQL enum column is no ordered QI)
def test_enum_in_duckdb(con):
    """ENUM equality by label: rebuilt vs original text."""
    con.execute("CREATE TYPE col AS ENUM ('z', 'a', 'm')")
    con.execute("CREATE TABLE u AS SELECT i AS id, (['z', 'a', 'm'])[1 + i % 3]::col AS e FROM range(48) r(i)")
    qis = (QI("e", "ordinal", con.execute("SELECT typeof(e) FROM u LIMIT 1").fetchone()[0]),)
    _rebuilt_vs_original(con, "u", qis, ["e IN ('a', 'm')", "e <> 'z'", "e NOT IN ('a')"])


def test_timestamps_against_the_engine(con):
    """TIMESTAMP and TIMESTAMPTZ literals: rebuilt (in the engine's dialect) vs original text."""
    hours = pd.to_timedelta(range(48), unit="h")
    load_frame(con, "u", pd.DataFrame({"id": range(48), "ts": pd.Timestamp("2020-01-01") + hours,
                                       "tz": pd.Timestamp("2020-01-01", tz="UTC") + hours}))
    found = engine_for(con).find("u")
    assert dict(engine_for(con).columns(found.catalog, found.schema, found.name)) == {
        "id": "BIGINT", "ts": "TIMESTAMP", "tz": "TIMESTAMP WITH TIME ZONE"}
    qis = (QI("ts", "temporal", "TIMESTAMP"), QI("tz", "temporal", "TIMESTAMP WITH TIME ZONE"))
    _rebuilt_vs_original(con, "u", qis, [
        "ts BETWEEN '2020-01-01 05:00' AND TIMESTAMP '2020-01-01 09:30'", "ts > DATE '2020-01-02'",
        "tz >= TIMESTAMPTZ '2020-01-01 12:00+02' AND tz < '2020-01-02 00:00:00+00:00'",
        "NOT (tz < '2020-01-01 03:00+00')"])


def test_column_callback():
    sel = parse_selection("age > 3 OR s = 'a'", P_QIS)
    sql = sel.predicate(lambda name: g.col(name, "src")).sql("duckdb")
    assert sql == "\"src\".\"age\" >= 4 OR \"src\".\"s\" = 'a'"
    assert isinstance(sel.boxes[0].conditions[0], Range) and sel.boxes[0].conditions[0].low == Bound(4, True)
    assert isinstance(parse_selection("edu = 'school'", P_QIS).boxes[0].conditions[0], Members)
