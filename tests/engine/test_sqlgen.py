"""sqlanon.sqlgen: names become quoted identifiers, values become literals, templates splice
expressions (never text), and the packaged templates parse and run."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
import sqlglot
from sqlglot import exp

from sqlanon.engine import sqlgen as g
from sqlanon.publish.verify import class_sizes_query

NAMES = [
    "plain",
    "zip code",
    'pa"tients',
    "it's",
    "âge",
    "名前",
    'x"; DROP TABLE t; --',
    "x'); DROP TABLE t; --",
    "a.b",
    "select",
    "   ",
    'q""q',
]


def render(e: exp.Expression) -> str:
    return e.sql(dialect="duckdb")


def parse(sql: str) -> exp.Expression:
    return sqlglot.parse_one(sql, read="duckdb")


@pytest.mark.parametrize("name", NAMES)
def test_identifiers_round_trip(name):
    query = exp.select(g.alias(g.col(name, name), name)).from_(g.table(name, name, name))
    sql = render(query)
    parsed = parse(sql)
    assert isinstance(parsed, exp.Select)
    table = parsed.find(exp.Table)
    assert (table.name, table.db, table.catalog) == (name, name, name)
    column = parsed.find(exp.Column)
    assert (column.name, column.table) == (name, name)
    assert parsed.find(exp.Alias).alias == name
    # one statement only: nothing in the name escaped its quotes
    assert len(sqlglot.parse(sql, read="duckdb")) == 1


@pytest.mark.parametrize("name", NAMES)
def test_identifiers_work_in_duckdb(name):
    con = duckdb.connect()
    try:
        con.execute(render(g.create_table_as(name, exp.select(g.alias(g.lit(1), name)), temporary=False)))
        assert con.execute(render(exp.select(g.col(name)).from_(g.table(name)))).fetchall() == [(1,)]
        assert con.execute("SELECT table_name FROM duckdb_tables()").fetchall() == [(name,)]
        assert con.execute("SELECT column_name FROM duckdb_columns() WHERE table_name = ?", [name]).fetchall() == [(name,)]
        con.execute(render(g.drop(name, "TABLE")))
        assert con.execute("SELECT count(*) FROM duckdb_tables()").fetchone()[0] == 0
    finally:
        con.close()


def test_identifier_is_always_quoted():
    assert render(g.ident("a")) == '"a"'
    assert render(g.col("a", "t")) == '"t"."a"'
    assert render(g.col("a")) == '"a"'
    assert render(g.table("t", "s", "c")) == '"c"."s"."t"'
    assert render(g.table("t")) == '"t"'
    assert render(g.ident('a"b')) == '"a""b"'
    assert render(g.alias(g.col("a"), 'x"y')) == '"a" AS "x""y"'


@pytest.mark.parametrize(
    ("value", "sql", "back"),
    [
        ("it's", "'it''s'", "it's"),
        ("'; DROP TABLE t; --", "'''; DROP TABLE t; --'", "'; DROP TABLE t; --"),
        ('a"b', "'a\"b'", 'a"b'),
        ("âge", "'âge'", "âge"),
        (3, "3", 3),
        (-2, "-2", -2),
        (1.5, "1.5", 1.5),
        (True, "TRUE", True),
        (None, "NULL", None),
    ],
)
def test_literals(value, sql, back):
    literal = g.lit(value)
    assert render(literal) == sql
    con = duckdb.connect()
    try:
        assert con.execute(f"SELECT {render(literal)}").fetchone()[0] == back
    finally:
        con.close()


def test_backslashes_are_not_escapes():
    value = "a\\'b\\"
    con = duckdb.connect()
    try:
        assert con.execute(f"SELECT {render(g.lit(value))}").fetchone()[0] == value
    finally:
        con.close()


def test_in_list_and_case():
    assert render(g.in_list(g.col("a"), [1, "b'"])) == "\"a\" IN (1, 'b''')"
    assert render(g.case_on(g.col("a"), {1: g.lit("x"), 2: g.lit("y")})) == \
        "CASE \"a\" WHEN 1 THEN 'x' WHEN 2 THEN 'y' END"


def test_create_table_as_temporary_renders_temporary():
    query = exp.select(g.alias(g.lit(1), "a"))
    assert render(g.create_table_as("t", query, temporary=True)) == 'CREATE TEMPORARY TABLE "t" AS SELECT 1 AS "a"'
    assert render(g.create_table_as("t", query)) == 'CREATE TEMPORARY TABLE "t" AS SELECT 1 AS "a"'
    assert render(g.create_table_as("t", query, temporary=False)) == 'CREATE TABLE "t" AS SELECT 1 AS "a"'
    assert render(g.create_table_as("t", query, temporary=False, replace=True)) == \
        'CREATE OR REPLACE TABLE "t" AS SELECT 1 AS "a"'


def test_create_table_as_temporary_is_temporary_in_duckdb():
    con = duckdb.connect()
    try:
        con.execute(render(g.create_table_as("t", exp.select(g.alias(g.lit(1), "a")), temporary=True)))
        con.execute(render(g.create_table_as("p", exp.select(g.alias(g.lit(1), "a")), temporary=False)))
        assert sorted(con.execute("SELECT table_name, temporary FROM duckdb_tables()").fetchall()) == [
            ("p", False), ("t", True)]
    finally:
        con.close()


def test_create_view_and_drop():
    query = exp.select(g.alias(g.lit(1), "a"))
    assert render(g.create_view("v", query)) == 'CREATE VIEW "v" AS SELECT 1 AS "a"'
    assert render(g.create_view("v", query, replace=True)) == 'CREATE OR REPLACE VIEW "v" AS SELECT 1 AS "a"'
    assert render(g.drop("v", "VIEW")) == 'DROP VIEW IF EXISTS "v"'
    assert render(g.drop("t", "TABLE")) == 'DROP TABLE IF EXISTS "t"'


# -- templates -------------------------------------------------------------------------------
@pytest.fixture
def templates(tmp_path, monkeypatch):
    """A private template directory; the template cache is cleared around the test."""
    monkeypatch.setattr(g, "_sql_dir", lambda: tmp_path)
    g._template.cache_clear()
    yield tmp_path
    g._template.cache_clear()


def test_template_splices_lists_into_select_and_group_by(templates):
    (templates / "t_splice.sql").write_text(
        "-- a header comment\nSELECT count(*) AS n, :cols FROM :src GROUP BY :cols HAVING count(*) >= :k\n",
        encoding="utf-8")
    cols = [g.col("a b"), g.col('c"d')]
    tree = g.template("t_splice", cols=cols, src=g.table("my table"), k=g.lit(2))
    assert render(tree) == ('SELECT COUNT(*) AS n, "a b", "c""d" FROM "my table" GROUP BY "a b", "c""d" '
                            "HAVING COUNT(*) >= 2")
    # the inputs are copied, not adopted: the caller's expressions are untouched
    assert cols[0].parent is None and render(cols[0]) == '"a b"'
    con = duckdb.connect()
    try:
        con.execute('CREATE TABLE "my table" AS SELECT * FROM (VALUES (1, 1), (1, 1), (2, 1)) t("a b", "c""d")')
        assert con.execute(render(tree)).fetchall() == [(2, 1, 1)]  # (1, 1) twice; (2, 1) once is below k
    finally:
        con.close()


def test_template_placeholder_cannot_be_first_in_select(templates):
    """Documented limitation: sqlglot reads ``SELECT :name`` as DuckDB's prefix alias."""
    (templates / "t_first.sql").write_text("SELECT :cols FROM :src GROUP BY :cols", encoding="utf-8")
    with pytest.raises(sqlglot.errors.ParseError):
        g.template("t_first", cols=[g.col("a"), g.col("b")], src=g.table("t"))


def test_template_single_expression_and_single_item_list(templates):
    (templates / "t_one.sql").write_text("SELECT 0 AS z, :x AS v FROM :src WHERE :cond", encoding="utf-8")
    a = g.template("t_one", x=g.lit(1), src=g.table("t"), cond=exp.true())
    b = g.template("t_one", x=[g.lit(1)], src=[g.table("t")], cond=[exp.true()])
    assert render(a) == render(b) == 'SELECT 0 AS z, 1 AS v FROM "t" WHERE TRUE'


def test_template_list_in_a_single_slot_is_refused(templates):
    (templates / "t_slot.sql").write_text("SELECT a FROM t WHERE :cond", encoding="utf-8")
    with pytest.raises(ValueError, match="exactly one expression"):
        g.template("t_slot", cond=[exp.true(), exp.false()])


def test_template_missing_placeholder_raises_key_error(templates):
    (templates / "t_missing.sql").write_text("SELECT 0 AS z, :a, :b FROM :src", encoding="utf-8")
    with pytest.raises(KeyError) as info:
        g.template("t_missing", a=g.lit(1))
    assert "t_missing" in str(info.value)
    assert "'b'" in str(info.value) and "'src'" in str(info.value)


def test_template_values_are_never_text(templates):
    (templates / "t_text.sql").write_text("SELECT 0 AS z, :v AS v", encoding="utf-8")
    evil = "1; DROP TABLE t; --"
    tree = g.template("t_text", v=g.lit(evil))
    assert render(tree) == "SELECT 0 AS z, '1; DROP TABLE t; --' AS v"
    assert len(sqlglot.parse(render(tree), read="duckdb")) == 1


def test_template_is_not_mutated_between_uses(templates):
    (templates / "t_reuse.sql").write_text("SELECT 0 AS z, :cols FROM t", encoding="utf-8")
    first = render(g.template("t_reuse", cols=[g.col("a"), g.col("b")]))
    second = render(g.template("t_reuse", cols=[g.col("c")]))
    assert (first, second) == ('SELECT 0 AS z, "a", "b" FROM t', 'SELECT 0 AS z, "c" FROM t')


SQL_FILES = sorted(p.stem for p in (Path(__file__).resolve().parents[2] / "sql").glob("*.sql"))
PACKAGED = [name for name in SQL_FILES if name != "macros"]  # macros.sql is a script, not a template


def test_packaged_templates_are_found():
    assert SQL_FILES == sorted(p.stem for p in g._sql_dir().glob("*.sql"))
    assert {"catalog_columns", "catalog_objects", "class_sizes"} <= set(PACKAGED)


@pytest.mark.parametrize("name", PACKAGED)
def test_packaged_templates_parse(name):
    g._template.cache_clear()
    tree = g._template(name)
    assert isinstance(tree, exp.Query)
    # the rendered template parses back to the same tree
    assert parse(render(tree)) == tree


def test_catalog_templates_run():
    con = duckdb.connect()
    try:
        con.execute("CREATE TABLE \"it's\" (\"a b\" INTEGER, c VARCHAR)")
        con.execute("CREATE VIEW v AS SELECT 1 AS x")
        objects = con.execute(render(g.template("catalog_objects"))).fetchall()
        assert sorted((o[2], o[3]) for o in objects) == [("it's", "table"), ("v", "view")]
        columns = g.template("catalog_columns", catalog=g.lit("memory"), schema=g.lit("main"), name=g.lit("it's"))
        assert con.execute(render(columns)).fetchall() == [("a b", "INTEGER"), ("c", "VARCHAR")]
    finally:
        con.close()


def test_class_sizes_template_runs():
    con = duckdb.connect()
    try:
        con.execute("CREATE TABLE r AS SELECT * FROM (VALUES (1, 'x', 0), (1, 'x', 0), (1, 'x', NULL), "
                    "(2, 'y', 1), (NULL, NULL, 2), (NULL, NULL, 2)) t(a, \"b c\", cls)")
        query = class_sizes_query(g.table("r"), ["a", "b c"], 2, class_column="cls")
        # classes (1,x):3 (2,y):1 (NULL,NULL):2 -> 3 classes, smallest 1, 6 rows, 1 below k, 1 unplaced;
        # not a release: no suppressed (nor leaked) rows
        assert con.execute(render(query)).fetchall() == [(3, 1, 6, 1, 1, None, None)]
    finally:
        con.close()
