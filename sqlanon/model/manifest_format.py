"""The release manifest's document format: the JSON a release stores about itself (see
:mod:`sqlanon.publish.manifest`), decoded without a database so that resolving a new release's
names (:mod:`sqlanon.request.spec`) and reloading a release read it the same way.

Format 2 records the criterion and the constraints as structured records
(:func:`~sqlanon.model.criteria.criterion_record`, :func:`~sqlanon.model.privacy.to_record`);
format 1 (releases of sqlanon 0.1) recorded the criterion only as its ``describe()`` text.
"""

from __future__ import annotations

import json
from typing import Any

#: The format written now, and every format this version reads.
FORMAT = 2
READABLE = (1, 2)
#: The document keys naming the release's own database objects.
OBJECT_KEYS = ("view", "rules", "rowmap", "hierarchies")


def decode(comment: str | None) -> dict[str, Any] | None:
    """The manifest document stored as ``comment``, or None if it is not one this version reads."""
    try:
        document = json.loads(comment) if comment else None
    except (TypeError, ValueError):
        return None
    if not isinstance(document, dict) or document.get("sqlanon") not in READABLE:
        return None
    return document


def release_objects(document: dict[str, Any] | None, view: str) -> set[str]:
    """Lower-cased names of the objects the release named ``view`` owns, as its manifest lists
    them; empty when ``document`` is not that release's manifest."""
    if document is None or str(document.get("view", "")).lower() != view.lower():
        return set()
    return {str(document[k]).lower() for k in OBJECT_KEYS if document.get(k)}
