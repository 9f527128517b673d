"""What an earlier release owns: the objects ``replace=True`` may drop.

A release records itself in a manifest, a comment on its rules table
(:mod:`sqlanon.publish.manifest`) -- and anyone who can create a table can write such a comment.
A comment alone proves nothing, so an earlier release named ``view`` (in the current schema)
owns its objects only when the manifest and every object it names agree with what sqlanon
publishes under that name:

* the manifest's object names are the ones derived from the view
  (:func:`~sqlanon.model.manifest_format.object_names`): ``<view>_rules``, ``<view>_rowmap`` and
  ``<view>_hierarchies`` (or none), never another name;
* the rules relation is a persistent table whose columns are exactly those its recorded QIs give
  it; the row map and the hierarchies table, where they exist, are persistent tables of exactly
  the columns a release of that manifest writes
  (:func:`~sqlanon.model.manifest_format.table_columns`);
* the view, where it exists, is a view that reads the rules and the row map.

Anything else -- a name the view does not derive, a table of another shape, a table where the
view should be -- and the release owns nothing: ``replace=True`` then drops nothing, and the
caller is told why. So a forged manifest can make ``replace=True`` drop at most objects that
carry the names the caller asked to replace and the exact shape of a release's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from ..engine.base import CatalogObject, Engine
from ..model import manifest_format


@dataclass(frozen=True)
class Owned:
    """The objects of the earlier release named ``view``: ``names`` lower-cased (what
    ``replace=True`` may drop), and ``refused``: why a manifest found there was not taken as a
    release's (None when there is none, or it was)."""

    names: frozenset[str] = frozenset()
    refused: str | None = None


def owned(engine: Engine, objects: Sequence[CatalogObject], view: str) -> Owned:
    """The objects of the current schema that the earlier release named ``view`` owns (see the
    module's docstring); ``objects``: the catalog already read."""
    fold = str.lower if engine.case_insensitive_names else (lambda n: n)
    current = engine.current()
    here = {fold(o.name): o for o in objects if (o.catalog, o.schema) == current}
    expected = manifest_format.object_names(view)
    rules = here.get(fold(expected["rules"]))
    document = manifest_format.decode(engine.comment(rules) if rules is not None and rules.kind == "table" else None)
    if document is None:
        return Owned()
    assert rules is not None
    why = _inconsistency(engine, here, fold, rules, document, expected)
    if why is not None:
        return Owned(refused=f"the manifest on {rules.name!r} {why}, so it is not taken as a sqlanon release's")
    names = {str(document[k]) for k in manifest_format.OBJECT_KEYS if document.get(k)}
    return Owned(frozenset(here[fold(n)].name.lower() for n in names if fold(n) in here))


def _inconsistency(engine: Engine, here: dict[str, CatalogObject], fold, rules: CatalogObject, document: dict,
                   expected: dict[str, str]) -> str | None:
    """Why ``document`` (the manifest on ``rules``) is not that of a release of those names, or None."""
    for key in manifest_format.OBJECT_KEYS:
        named = document.get(key)
        if named is None and key == "hierarchies":
            continue
        if not isinstance(named, str) or fold(named) != fold(expected[key]):
            return f"names {named!r} as the release's {key}, where {expected[key]!r} is derived from the view"
    shapes = manifest_format.table_columns(document)
    if shapes is None:
        return "does not record the release's columns"
    if ("hierarchies" in shapes) != bool(document.get("hierarchies")):
        return "does not match its QIs: a hierarchies table exactly when a QI has a hierarchy"
    for key, columns in shapes.items():
        found = rules if key == "rules" else here.get(fold(expected[key]))
        if found is None:
            continue  # nothing to drop
        if found.kind != "table" or found.temporary:
            return f"names {found.name!r}, which is a {'temporary ' if found.temporary else ''}{found.kind}, not a table"
        actual = [name for name, _ in engine.columns(found.catalog, found.schema, found.name)]
        if [fold(c) for c in actual] != [fold(c) for c in columns]:
            return (f"names {found.name!r}, whose columns {actual} are not those of a release's {key} "
                    f"{list(columns)}")
    published = here.get(fold(expected["view"]))
    if published is not None:
        if published.kind != "view":
            return f"names {published.name!r}, which is a {published.kind}, not a view"
        reads = _reads(engine, published)
        missing = [expected[k] for k in ("rules", "rowmap") if fold(expected[k]) not in {fold(t) for t in reads}]
        if missing:
            return f"names {published.name!r}, a view that does not read {missing}"
    return None


def _reads(engine: Engine, found: CatalogObject) -> set[str]:
    """The names of the relations a view's SQL reads (empty when it cannot be read)."""
    try:
        tree = sqlglot.parse_one(found.sql or "", read=engine.dialect)
    except sqlglot.errors.SqlglotError:
        return set()
    return {t.name for t in tree.find_all(exp.Table) if t.name} if tree is not None else set()
