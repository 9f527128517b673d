"""Where DuckDB finds a table or view by name, so a name means to sqlanon what it means in SQL.

An unqualified name is looked up along the search path: the temp schema first, then the entries
of the ``search_path`` setting (``SET schema = 's1'`` or ``USE db.s1`` set it; without entries, the
current schema), then the current database's ``main`` schema, then the system schemas. The first
schema holding a table or view of that name (compared case-insensitively, as DuckDB compares
identifiers) wins, even if a later schema holds a release of the same name. ``x.name`` is
schema ``x`` of a database on the search path (of the current one if none has it) or database
``x`` (the schemas of ``x`` the setting names, else ``main``); ``catalog.schema.name`` is exact.

A name is tried whole first (one identifier may contain dots, like the view ``"a.b"``), then split
at its dots, as :func:`sqlanon.release.regions.resolve_relation` and the hierarchy-table lookup do.
"""

from __future__ import annotations

from sqlglot import exp

from ..errors import InputError
from . import sqlgen as g
from .base import CatalogObject as Found
from .base import Engine


def search_path(engine: Engine) -> list[tuple[str, str]]:
    """``(catalog, schema)`` in the order DuckDB looks up an unqualified name (see the module
    docstring). Entries naming no existing schema are left out."""
    return _path(engine)[0]


def _path(engine: Engine) -> tuple[list[tuple[str, str]], list[tuple[str, str]], str]:
    """The search path, the entries of the ``search_path`` setting that name their database
    (``db.schema``), and the current database."""
    database, schema, setting = engine.fetch_rows(exp.select(
        exp.func("current_database"), exp.func("current_schema"),
        exp.func("current_setting", g.lit("search_path"))))[0]
    schemas = {(c.lower(), s.lower()): (c, s) for c, s in engine.fetch_rows(
        exp.select(g.col("database_name"), g.col("schema_name"))
        .from_(exp.Table(this=exp.Anonymous(this="duckdb_schemas"))))}
    entries: list[tuple[str, str]] = []
    explicit: list[tuple[str, str]] = []
    for parts in _path_entries(setting or ""):
        if len(parts) == 2:
            entries.append((parts[0], parts[1]))
            explicit.append((parts[0], parts[1]))
        elif len(parts) == 1 and (database.lower(), parts[0].lower()) in schemas:
            entries.append((database, parts[0]))
        elif len(parts) == 1:  # a database name stands for its main schema
            entries.append((parts[0], "main"))
    order = [("temp", "main")] + (entries or [(database, schema)]) + [(database, "main"), ("system", "main"),
                                                                      ("system", "pg_catalog")]
    path: list[tuple[str, str]] = []
    for c, s in order:
        key = (c.lower(), s.lower())
        if key in schemas and schemas[key] not in path:
            path.append(schemas[key])
    return path, explicit, database


def find(engine: Engine, name: str, suffix: str = "") -> Found | None:
    """The table or view ``name + suffix`` binds to, as DuckDB would bind ``name`` (whole, then
    split at dots; see the module docstring), or None if nothing of that name is visible.

    ``suffix`` goes on the last part: ``find(e, "s1.anon", "_rules")`` finds ``s1.anon_rules``.

    Raises:
        InputError: ``x.name`` where both a schema and a database called ``x`` hold the object
            (DuckDB refuses that reference as ambiguous).
    """
    visible = engine.objects()
    path, explicit, database = _path(engine)
    hit = first(visible, path, name + suffix)
    if hit is not None:
        return hit
    parts = name.split(".")
    last = (parts[-1] + suffix).lower()
    if len(parts) == 3:
        wanted = (parts[0].lower(), parts[1].lower(), last)
        return next((o for o in visible if (o.catalog.lower(), o.schema.lower(), o.name.lower()) == wanted), None)
    if len(parts) != 2:
        return None
    x = parts[0].lower()
    # x as a schema: in each database the search path has a schema x in (else the current one);
    # x as a database: the schemas of x the search_path setting names (else its main schema)
    as_schema = [(c, s) for c, s in path if s.lower() == x] or [(database, parts[0])]
    as_database = [(c, s) for c, s in explicit if c.lower() == x] or [(parts[0], "main")]
    named = [o for o in visible if o.name.lower() == last]
    hits = []
    for places in (as_schema, as_database):
        keys = [(c.lower(), s.lower()) for c, s in places]
        found = [o for o in named if (o.catalog.lower(), o.schema.lower()) in keys]
        found.sort(key=lambda o: keys.index((o.catalog.lower(), o.schema.lower())))
        if found:
            hits.append(found[0])
    if len(hits) > 1 and hits[0] != hits[1]:
        where = " and ".join(f"{o.catalog}.{o.schema}.{o.name}" for o in hits)
        raise InputError(f"{name!r} is ambiguous: {where}; name it as database.schema.name")
    return hits[0] if hits else None


def first(visible: list[Found], path: list[tuple[str, str]], name: str) -> Found | None:
    """What the unqualified ``name`` binds to: the object of the first schema on ``path``
    (:func:`search_path`) among ``visible`` ones (:func:`objects`) that has that name."""
    named = {(o.catalog, o.schema): o for o in visible if o.name.lower() == name.lower()}
    return next((named[where] for where in path if where in named), None)


def _path_entries(setting: str) -> list[list[str]]:
    """The ``search_path`` setting as entries of one or two parts: comma-separated, each
    ``schema`` or ``catalog.schema``, with DuckDB's double quotes (``memory."we,ird"``)."""
    entries: list[list[str]] = []
    parts: list[str] = []
    current, quoted, i = "", False, 0
    while i < len(setting):
        ch = setting[i]
        if quoted:
            if ch == '"' and setting[i + 1: i + 2] == '"':  # an escaped quote
                current += '"'
                i += 1
            elif ch == '"':
                quoted = False
            else:
                current += ch
        elif ch == '"':
            quoted = True
        elif ch == ".":
            parts.append(current)
            current = ""
        elif ch == ",":
            entries.append(parts + [current])
            parts, current = [], ""
        else:
            current += ch
        i += 1
    entries.append(parts + [current])
    return [[p.strip() for p in e] for e in entries if any(p.strip() for p in e)]
