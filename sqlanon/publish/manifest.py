"""The release manifest: what a release stores about itself, so it can be reloaded by name.

A release is self-describing in the database, without Python state: the rules relation carries a
JSON comment (the engine's comment on ``<view>_rules``) with the request (source, QIs with their
kinds and types, k, the constraints and the criterion as structured records, object names), and
hierarchical QIs keep their hierarchies in ``<view>_hierarchies`` (one row per leaf and level,
ARX layout in long form). The document's format is :mod:`sqlanon.model.manifest_format`.
Recoding other tables with the same rules and computing metrics later start from here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlglot import exp

from ..engine import engine_for
from ..engine import sqlgen as g
from ..engine.base import Engine
from ..errors import InputError
from ..model import manifest_format
from ..model.criteria import Criterion, criterion_from_record, criterion_record
from ..model.hierarchy import Hierarchy
from ..model.privacy import PrivacyModel, from_record, to_record
from ..model.qi import QI
from ..request.spec import EQ_CLASS, Spec
from .view import LiveView


@dataclass(frozen=True)
class Manifest:
    """A release as recorded in the database."""

    view: str
    rules: str
    rowmap: str | None
    hierarchies_table: str | None
    materialized: bool
    source: str
    k: int
    qis: tuple[QI, ...]  # hierarchical ones with their hierarchies
    hierarchies: Mapping[str, Hierarchy]
    constraints: tuple[str, ...]  # describe() texts, for people
    criterion: str  # describe() text, for people
    selections: tuple[str, ...] = ()  # the workload's selection predicates (Selection Mondrian)
    key: tuple[str, ...] | None = None  # the live view's key (None: a view of a snapshot)
    key_declared: bool = True
    guarded: tuple[str, ...] = ()  # the columns the row map's hash covers
    constraint_objects: tuple[PrivacyModel, ...] = ()  # exact, from the records this version reads
    # describe() texts of recorded constraints this version cannot read back (a newer kind, or a
    # format-1 release, which recorded texts only): reported unchecked, refused by enforce.
    unknown_constraints: tuple[str, ...] = ()
    criterion_object: Criterion | None = None  # exact; None only for a format-1 release
    class_column: str = EQ_CLASS
    region_column: str = "region"
    size_column: str = "size"
    source_relation: tuple[str, str, str] | None = None  # (catalog, schema, name) of a catalog source
    source_columns: tuple[str, ...] = ()
    # Where the release's objects are: the catalog and schema its rules relation was found in
    # (None for a manifest not read from a database), and whether their unqualified names find
    # them there (for the connection, when read), so SQL given back to the user may use them.
    catalog: str | None = None
    schema: str | None = None
    bare: bool = True
    recoding: str = "multi"  # "single": top-down refinement (a grid of cuts)
    qids: tuple[tuple[tuple[str, ...], int], ...] = ()  # its <QID, k> pairs, each verified on its own
    suppression_limit: int | None = None  # rows the recoding may suppress (None: not recorded)
    levels: tuple[int, ...] | None = None  # a full-domain release's level per QI
    at_root_before: Mapping[str, float] | None = None  # Mondrian with suppression: root shares without it

    @property
    def qid(self) -> tuple[str, ...]:
        return tuple(q.name for q in self.qis)

    def ref(self, name: str) -> exp.Table:
        """A reference to one of the release's objects (``m.view``, ``m.rules``, ...), qualified
        with its catalog and schema: two schemas may hold releases of the same name, and an
        unqualified name would bind whichever comes first on the search path."""
        return g.table(name, self.schema, self.catalog)

    def user_ref(self, name: str) -> exp.Table:
        """:meth:`ref` for SQL given back to the user: unqualified when the name finds the
        release's object anyway (the common case reads like the user's own SQL)."""
        return g.table(name) if self.bare else self.ref(name)


    def live_view(self) -> LiveView | None:
        """What the live view was built from (None for a snapshot or an older manifest)."""
        if self.key is None or self.rowmap is None or self.source_relation is None:
            return None
        catalog, schema, name = self.source_relation
        return LiveView(g.table(name, schema, catalog), self.source_columns, self.qis, self.key,
                        self.key_declared,
                        self.guarded, self.k, self.constraint_objects, self.ref(self.rowmap), self.ref(self.rules),
                        self.region_column, self.size_column, self.class_column,
                        self.qids if any(set(c) != set(self.qid) for c, _ in self.qids) else ())


def write(engine: Engine, spec: Spec) -> None:
    """Store the manifest of a release being published (inside its transaction)."""
    table = spec.outputs.hierarchies
    if table:
        qi, leaf, level, label = [], [], [], []
        for q in spec.qis:
            if q.hierarchy is None:
                continue
            for code, row in enumerate(r for r in q.hierarchy.to_rows() if r[0] is not None):
                for depth, cell in enumerate(row):
                    qi.append(q.name)
                    leaf.append(code)
                    level.append(depth)
                    label.append(cell)
        upload = engine.upload("hierarchies", dict(zip(manifest_format.HIERARCHY_COLUMNS, (qi, leaf, level, label))))
        query = exp.select("*").from_(g.table(upload))
        if engine.sorts_written:  # Engine.sorts_written
            query = query.order_by(g.col("qi"), g.col("leaf"), g.col("level"))
        engine.execute(g.create_table_as(table, query, temporary=False))
        engine.drop_temp(upload)
    document = {
        "sqlanon": manifest_format.FORMAT,
        "source": spec.source.path or spec.source.name,
        "view": spec.outputs.view,
        "rules": spec.outputs.rules,
        "rowmap": spec.outputs.assignment,
        "hierarchies": table,
        "materialized": spec.outputs.materialize,
        "k": spec.k,
        "qid": [{"name": q.name, "kind": q.kind, "type": q.data_type, "has_null": q.has_null,
                 **({"bounds": q.bounds} if q.bounds != "data" else {})} for q in spec.qis],
        "constraints": [c.describe() for c in spec.workload.constraints],
        "constraint_records": [to_record(c) for c in spec.workload.constraints],
        "criterion": spec.workload.criterion.describe(),
        "criterion_record": criterion_record(spec.workload.criterion),
        "selections": list(spec.workload.selections),
        "key": list(spec.key.columns) if spec.key else None,
        "key_declared": spec.key.declared if spec.key else None,
        "guarded": list(spec.guarded_columns),
        "source_relation": [spec.source.catalog, spec.source.schema, spec.source.name],
        "source_columns": list(spec.source.column_names),
        "columns": {"class": spec.outputs.class_column, "region": spec.outputs.region_column,
                    "size": spec.outputs.size_column},
        "recoding": "single" if spec.single is not None else "multi",
        "qids": [[list(c), k] for c, k in spec.single.qids] if spec.single is not None else [],
        "suppression_limit": spec.suppression_limit,
        "levels": list(spec.single.levels) if spec.single is not None and spec.single.levels is not None else None,
        "at_root_before": dict(spec.at_root_before) if spec.at_root_before is not None else None,
    }
    engine.set_comment(spec.outputs.rules, json.dumps(document))


def read(con: Any, view: str, *, location: tuple[str, str] | None = None) -> Manifest:
    """Reload the manifest of the release whose view (or rules relation) is named ``view``.

    ``view`` is resolved as the engine binds a name (:meth:`~sqlanon.engine.base.Engine.find`): ``schema.view`` (or
    ``catalog.schema.view``) in that schema, an unqualified name along the search path, so
    exactly one rules relation is read, never another schema's release of the same name.
    ``location``: ``(catalog, schema)`` to look in instead (where a :class:`~sqlanon.Release`
    was created). The objects named in the manifest are read in the schema the rules relation
    is in (:meth:`Manifest.ref`).

    Raises:
        InputError: ``view`` names no release (or a view, not its rules relation, shadows it).
    """
    engine = engine_for(con)
    if not isinstance(view, str) or not view:
        raise InputError(f"release must be the name of a release's view, got {view!r}")
    suffix = "" if view.endswith("_rules") else "_rules"
    rules = view + suffix
    if location is not None:
        found = next((o for o in engine.objects() if (o.catalog, o.schema) == tuple(location)
                      and o.name.lower() == rules.lower()), None)
    else:
        found = engine.find(view, suffix)
    document = manifest_format.decode(engine.comment(found) if found is not None and found.kind == "table" else None)
    if document is None:
        where = f" (found {found.kind} {found.catalog}.{found.schema}.{found.name})" if found else ""
        raise InputError(
            f"{view!r} is not a sqlanon release: no rules relation {rules!r} with a sqlanon manifest{where}"
        )
    assert found is not None
    here = (found.catalog, found.schema)
    bare = all((hit := engine.find(document[key])) is not None and (hit.catalog, hit.schema) == here
               for key in ("view", "rules"))
    recorded = document["qid"]
    columns = document.get("columns") or {}
    hierarchies: dict[str, Hierarchy] = {}
    if document["hierarchies"]:
        # fetched in bulk as stored, and put in order here: on Spark a row-by-row fetch sorted by
        # the engine took 3.5-3.9 s of a 17 s release of CUP (ARX's ZIP hierarchy: 100,000
        # leaves, 600,000 rows), the sort a job of its own
        table = engine.fetch(
            exp.select(g.col("qi"), g.col("leaf"), g.col("level"), g.col("label"))
            .from_(g.table(document["hierarchies"], found.schema, found.catalog))
        )
        qi_of, leaf_of, label_of = (np.asarray(table[c]) for c in ("qi", "leaf", "label"))
        order = np.lexsort((np.asarray(table["level"]), leaf_of, qi_of.astype(str)))
        paths: dict[str, dict[int, list[str]]] = {}
        for qi, leaf, label in zip(qi_of[order].tolist(), leaf_of[order].tolist(), label_of[order].tolist()):
            paths.setdefault(qi, {}).setdefault(leaf, []).append(label)
        for q in recorded:
            if q["kind"] == "hierarchy":
                h = Hierarchy.from_rows([paths[q["name"]][i] for i in sorted(paths[q["name"]])], verbatim=True)
                hierarchies[q["name"]] = h.with_null_leaf() if q["has_null"] else h
    qis = tuple(QI(q["name"], q["kind"], q["type"], hierarchies.get(q["name"]), has_null=q["has_null"], position=i,
                   bounds=q.get("bounds", "data"))  # published= (sqlanon.publish.bounds)
                for i, q in enumerate(recorded))
    known, unknown = _constraints(document["constraints"], document.get("constraint_records"))
    return Manifest(
        view=document["view"], rules=document["rules"], rowmap=document["rowmap"],
        hierarchies_table=document["hierarchies"], materialized=document["materialized"],
        source=document["source"], k=document["k"], qis=qis, hierarchies=hierarchies,
        constraints=tuple(document["constraints"]), criterion=document["criterion"],
        selections=tuple(document.get("selections", ())),
        key=tuple(document["key"]) if document.get("key") else None,
        key_declared=bool(document.get("key_declared", True)),
        guarded=tuple(document.get("guarded", ())),
        constraint_objects=known, unknown_constraints=unknown,
        criterion_object=_criterion(document.get("criterion_record")),
        class_column=columns.get("class", EQ_CLASS), region_column=columns.get("region", "region"),
        size_column=columns.get("size", "size"),
        source_relation=tuple(document["source_relation"]) if document.get("source_relation") else None,
        source_columns=tuple(document.get("source_columns", ())),
        catalog=found.catalog, schema=found.schema, bare=bare,
        recoding=document.get("recoding", "multi"),
        qids=tuple((tuple(c), int(k)) for c, k in document.get("qids", ())),
        suppression_limit=document.get("suppression_limit"),
        levels=tuple(document["levels"]) if document.get("levels") is not None else None,
        at_root_before=document.get("at_root_before"),
    )


def _constraints(texts: list, records: list | None) -> tuple[tuple[PrivacyModel, ...], tuple[str, ...]]:
    """The recorded constraints this version reads, as objects; and the ``describe()`` texts of
    those it cannot (all but k-anonymity's when there are no records: format 1)."""
    if records is None or len(records) != len(texts):
        return (), tuple(t for t in texts if not t.startswith("k-anonymity("))
    known: list[PrivacyModel] = []
    unknown: list[str] = []
    for text, record in zip(texts, records):
        try:
            known.append(from_record(record))
        except (TypeError, ValueError):
            unknown.append(text)
    return tuple(known), tuple(unknown)


def _criterion(record: dict | None) -> Criterion | None:
    """The recorded criterion; None for a format-1 release or a record this version does not know."""
    try:
        return criterion_from_record(record) if record is not None else None
    except ValueError:
        return None
