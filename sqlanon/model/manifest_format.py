"""The release manifest's document format: the JSON a release stores about itself (see
:mod:`sqlanon.publish.manifest`), decoded without a database so that resolving a new release's
names (:mod:`sqlanon.request.spec`) and reloading a release read it the same way.

Format 2 records the criterion and the constraints as structured records
(:func:`~sqlanon.model.criteria.criterion_record`, :func:`~sqlanon.model.privacy.to_record`);
format 1 (releases of sqlanon 0.1) recorded the criterion only as its ``describe()`` text.

The names and columns of the objects a release creates are facts of the format too
(:func:`object_names`, :func:`table_columns`): :mod:`sqlanon.request.owned` checks a manifest
against them before ``replace=True`` drops anything it names.
"""

from __future__ import annotations

import json
from typing import Any

from .qi import box_columns, published_columns

#: The format written now, and every format this version reads.
FORMAT = 2
READABLE = (1, 2)
#: The document keys naming the release's own database objects.
OBJECT_KEYS = ("view", "rules", "rowmap", "hierarchies")
#: The view's class column unless the source has a column of that name (the manifest records it).
EQ_CLASS = "eq_class"
#: A live view's row map: ``(key0.., region, rhash)`` (:func:`rowmap_key` names the key's columns).
ROWMAP_REGION, ROWMAP_HASH = "region", "rhash"
#: The hierarchies table of a release with hierarchical QIs (one row per leaf and level).
HIERARCHY_COLUMNS = ("qi", "leaf", "level", "label")


def decode(comment: str | None) -> dict[str, Any] | None:
    """The manifest document stored as ``comment``, or None if it is not one this version reads."""
    try:
        document = json.loads(comment) if comment else None
    except (TypeError, ValueError):
        return None
    if not isinstance(document, dict) or document.get("sqlanon") not in READABLE:
        return None
    return document


def object_names(view: str) -> dict[str, str]:
    """The names of the objects of a release whose view is ``view``, by :data:`OBJECT_KEYS`: they
    are always derived from the view's name (the hierarchies table exists only for a release
    with hierarchical QIs)."""
    return {"view": view, "rules": f"{view}_rules", "rowmap": f"{view}_rowmap", "hierarchies": f"{view}_hierarchies"}


def rowmap_key(i: int) -> str:
    """The row map's column holding the ``i``-th key column."""
    return f"key{i}"


def table_columns(document: dict[str, Any]) -> dict[str, tuple[str, ...]] | None:
    """The columns, in order, of the tables the release recorded in ``document`` created --
    ``"rules"``, ``"rowmap"`` and (with hierarchical QIs) ``"hierarchies"`` -- as
    :mod:`sqlanon.publish.rules` and :mod:`sqlanon.publish.manifest` write them: the rules
    ``(region, size, per QI its published and box columns)``; a live view's row map
    ``(key0.., region, rhash)``, a snapshot's the source's non-QI columns and the class column.
    None when the document does not say enough to tell (a malformed or partial manifest)."""
    try:
        qis = [(str(q["name"]), q["kind"] != "hierarchy") for q in document["qid"]]
        columns = document.get("columns") or {}
        region, size = str(columns.get("region", "region")), str(columns.get("size", "size"))
        key = document.get("key")
        if key:
            rowmap = tuple(rowmap_key(i) for i in range(len(key))) + (ROWMAP_REGION, ROWMAP_HASH)
        else:
            source = document["source_columns"]
            names = {n for n, _ in qis}
            rowmap = tuple(str(c) for c in source if c not in names) + (str(columns.get("class", EQ_CLASS)),)
    except (KeyError, TypeError, AttributeError):
        return None
    rules = (region, size) + tuple(c for n, ordered in qis for c in published_columns(n, ordered) + box_columns(n, ordered))
    out = {"rules": rules, "rowmap": rowmap}
    if not all(ordered for _, ordered in qis):
        out["hierarchies"] = HIERARCHY_COLUMNS
    return out
