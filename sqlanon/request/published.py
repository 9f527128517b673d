"""Resolve ``published=``: what each ordered QI's ``q_min``/``q_max`` publish
(:mod:`sqlanon.publish.bounds`), checked before any work.

* a string applies to every ordered QI: ``"data"`` (the default), ``"domain"``, or
  ``"hierarchy"`` -- every *numeric* QI given a hierarchy then keeps its numeric cuts (it is
  partitioned as an ordered QI, not by the hierarchy's nodes) and publishes the smallest
  interval of its hierarchy covering each class; every other ordered QI must then be named in a
  dict, as no hierarchy says what to publish for it;
* a dict ``{qi: mode}`` chooses per QI (unnamed ordered QIs publish ``"data"``).

Hierarchical QIs (categories with a hierarchy) always publish their node label.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from sqlglot import exp

from ..engine import sqlgen as g
from ..engine.base import Engine
from ..errors import HierarchyError, InputError
from ..model.hierarchy import hierarchy_from
from ..model.intervals import Intervals
from ..model.qi import BOUNDS as MODES
from ..model.qi import QI, classify
from .checks import short_repr


def published_modes(published: Any, qid: Sequence[str], types: Mapping[str, str],
                    hierarchies: Mapping[str, Any]) -> dict[str, str]:
    """``{qi: mode}`` for every QI the request names, from ``published=`` (module docstring).
    A numeric QI mapped to ``"hierarchy"`` is one whose hierarchy is read as intervals."""
    if published is None:
        return {}
    if isinstance(published, str):
        if published not in MODES:
            raise InputError(f"published must be one of {list(MODES)} (or a dict {{QI: one of them}}), got {published!r}")
        if published == "data":
            return {}
        if published == "domain":
            return {q: "domain" for q in qid if q not in hierarchies}
        intervals = [q for q in qid if q in hierarchies and classify(types[q]) == "numeric"]
        if not intervals:
            raise InputError("published='hierarchy' publishes the intervals of a numeric QI's hierarchy, but no numeric "
                             "QI has one: pass hierarchies={'age': 'age.csv'} for a numeric QI, or published='domain'")
        plain = [q for q in qid if q not in hierarchies]
        if plain:
            raise InputError(f"published='hierarchy' needs a hierarchy for every ordered QI, and {plain} have none: "
                             f"choose per QI, e.g. published={{{intervals[0]!r}: 'hierarchy', {plain[0]!r}: 'domain'}}")
        return {q: "hierarchy" for q in intervals}
    if not isinstance(published, Mapping):
        raise InputError(f"published must be one of {list(MODES)} or a dict {{QI: one of them}}, got "
                         f"{type(published).__name__} {short_repr(published)}")
    out: dict[str, str] = {}
    for name, mode in published.items():
        if name not in qid:
            raise InputError(f"published names {name!r}, which is not a QI; QIs: {list(qid)}")
        if mode not in MODES:
            raise InputError(f"published[{name!r}] must be one of {list(MODES)}, got {mode!r}")
        numeric = classify(types[name]) == "numeric"
        if mode == "hierarchy" and not (numeric and name in hierarchies):
            why = "it has no hierarchy" if name not in hierarchies else f"it is not numeric ({types[name]})"
            raise InputError(f"published[{name!r}] = 'hierarchy' needs a numeric QI with a hierarchy, and {why}")
        if mode != "hierarchy" and name in hierarchies:
            if mode == "data":
                continue  # a hierarchical QI publishes its node label, as always
            raise InputError(f"published[{name!r}] = {mode!r}: {name!r} has a hierarchy, so it is published as its node "
                             f"label; 'domain' applies to ordered QIs (for a numeric one, 'hierarchy' publishes its "
                             f"hierarchy's intervals)")
        if mode != "data":
            out[name] = mode
    return out


def interval_columns(modes: Mapping[str, str]) -> set[str]:
    """The QIs whose hierarchy is read as intervals (kept ordered, not partitioned by node)."""
    return {q for q, m in modes.items() if m == "hierarchy"}


def with_bounds(engine: Engine, source: exp.Table, qis: Sequence[QI], modes: Mapping[str, str],
                hierarchies: Mapping[str, Any], read_table: Any) -> list[QI]:
    """The QIs with their published bounds; an interval hierarchy is loaded, checked
    (:meth:`Intervals.of`) and must cover every value of its column (one query)."""
    out = []
    for q in qis:
        mode = modes.get(q.name, "data") if q.ordered else "data"  # (TDR makes plain text hierarchical)
        if mode == "hierarchy":
            h = hierarchy_from(hierarchies[q.name], read_table)
            intervals = Intervals.of(q.name, h, q.integer)
            low, high = engine.fetch_rows(exp.select(
                exp.Cast(this=exp.Min(this=g.col(q.name)), to=exp.DataType.build("DOUBLE")),
                exp.Cast(this=exp.Max(this=g.col(q.name)), to=exp.DataType.build("DOUBLE"))).from_(source.copy()))[0]
            if low is not None and (float(low) < intervals.low or float(high) > intervals.high):
                raise HierarchyError(
                    f"the hierarchy of {q.name!r} spans [{h.leaves[0]}, {h.leaves[-1]}], but the column has values "
                    f"outside it: its intervals must cover every value (extend its first or last interval)")
            q = replace(q, bounds=mode, intervals=intervals)
        elif mode != "data":
            q = replace(q, bounds=mode)
        out.append(q)
    return out
