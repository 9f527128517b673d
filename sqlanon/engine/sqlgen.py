"""Every SQL statement sqlanon runs, built as sqlglot expressions or read from ``sql/`` templates.

User-supplied names only ever become quoted identifiers (:func:`ident`, :func:`col`,
:func:`table`) and user-supplied values only ever become literals (:func:`lit`); nothing is
assembled with string formatting. Templates in ``sql/`` use ``:name`` placeholders that are
replaced by expressions through sqlglot, never by text substitution.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import sqlglot
from sqlglot import exp

DIALECT = "duckdb"


# -- building blocks -------------------------------------------------------------------------
def ident(name: str) -> exp.Identifier:
    """A quoted identifier: any name (quotes, spaces, unicode) is safe."""
    return exp.to_identifier(name, quoted=True)


def col(name: str, table_alias: str | None = None) -> exp.Column:
    """A quoted column reference, optionally qualified by a table alias."""
    return exp.Column(this=ident(name), table=ident(table_alias) if table_alias else None)


def table(name: str, schema: str | None = None, catalog: str | None = None) -> exp.Table:
    """A quoted, optionally qualified, table reference."""
    return exp.Table(
        this=ident(name),
        db=ident(schema) if schema else None,
        catalog=ident(catalog) if catalog else None,
    )


def lit(value: Any) -> exp.Expression:
    """A literal for a Python value (never interpolated into SQL text)."""
    return exp.convert(value)


def alias(expression: exp.Expression, name: str) -> exp.Alias:
    return exp.alias_(expression, ident(name))


def create_table_as(
    name: str, query: exp.Expression, *, temporary: bool = True, replace: bool = False
) -> exp.Create:
    """``CREATE [OR REPLACE] [TEMP] TABLE name AS query``.

    Built by hand because ``Select.ctas(properties={"temporary": True})`` drops TEMPORARY when
    rendered for DuckDB.
    """
    props = exp.Properties(expressions=[exp.TemporaryProperty()]) if temporary else None
    return exp.Create(
        this=table(name), kind="TABLE", expression=query, properties=props, replace=replace
    )


def create_view(name: str, query: exp.Expression, *, replace: bool = False, temporary: bool = False) -> exp.Create:
    """``CREATE [OR REPLACE] [TEMP] VIEW name AS query``."""
    props = exp.Properties(expressions=[exp.TemporaryProperty()]) if temporary else None
    return exp.Create(this=table(name), kind="VIEW", expression=query, replace=replace, properties=props)


def drop(name: str, kind: str) -> exp.Drop:
    return exp.Drop(tables=[table(name)], kind=kind, exists=True)



def in_list(expression: exp.Expression, values: Iterable[Any]) -> exp.In:
    return exp.In(this=expression, expressions=[lit(v) for v in values])


def case_on(selector: exp.Expression, branches: Mapping[Any, exp.Expression]) -> exp.Case:
    """``CASE selector WHEN k THEN v ... END``."""
    case = exp.Case(this=selector)
    for key, value in branches.items():
        case = case.when(lit(key), value)
    return case


# -- templates -------------------------------------------------------------------------------
def _sql_dir() -> Path:
    """``sql/`` ships inside the wheel as ``sqlanon/sql``; in a source checkout it is ``../sql``."""
    packaged = resources.files("sqlanon").joinpath("sql")
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[2] / "sql"


@functools.cache
def _template(name: str) -> exp.Expression:
    text = (_sql_dir() / f"{name}.sql").read_text(encoding="utf-8")
    # Header comments document the file; they are not sent to the database.
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
    # An engine's own templates (sql/<engine>/...) are written in its dialect; the rest in DuckDB's.
    folder = name.split("/")[0] if "/" in name else None
    return sqlglot.parse_one(body, read=folder or DIALECT)


def template(
    template_name: str, /, **values: exp.Expression | Sequence[exp.Expression]
) -> exp.Expression:
    """The ``sql/<name>.sql`` template with its ``:placeholders`` replaced by expressions.

    A placeholder standing alone in a list (``GROUP BY :cols``, ``SELECT 1 AS one, :cols``) may
    be replaced by a sequence of expressions, which are spliced into the list. (A placeholder
    cannot be the first item of a SELECT list: sqlglot reads ``SELECT :name`` as an alias.)
    """
    tree = _template(template_name).copy()

    def replace(node: exp.Expression) -> exp.Expression | list[exp.Expression]:
        if isinstance(node, exp.Placeholder) and node.name in values:
            value = values[node.name]
            if isinstance(value, exp.Expression):
                return value.copy()
            return [v.copy() for v in value]
        return node

    missing = {p.name for p in tree.find_all(exp.Placeholder)} - set(values)
    if missing:
        raise KeyError(f"template {template_name!r} needs values for {sorted(missing)}")
    return _splice(tree, replace)


def _splice(node: exp.Expression, replace) -> exp.Expression:
    """Replace placeholders, splicing sequences into the argument lists that hold them."""
    for key, child in list(node.args.items()):
        if isinstance(child, list):
            new: list[Any] = []
            for item in child:
                if isinstance(item, exp.Expression):
                    r = replace(item)
                    if isinstance(r, list):
                        new.extend(r)
                        continue
                    new.append(_splice(r, replace) if r is item else r)
                else:
                    new.append(item)
            node.set(key, new)
        elif isinstance(child, exp.Expression):
            r = replace(child)
            if isinstance(r, list):
                if len(r) != 1:
                    raise ValueError(f"placeholder :{child.name} takes exactly one expression, got {len(r)}")
                r = r[0]
            node.set(key, _splice(r, replace) if r is child else r)
    return node
