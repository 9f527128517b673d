"""SQL's three-valued logic in plain Python, and predicate trees as SQL text, for the
oracles of the selection tests.

A predicate is a tree: ``("AND", p, q)``, ``("OR", p, q)``, ``("NOT", p)`` or a comparison
``(column, op, values)``. :func:`evaluate` gives True, False or None (unknown) the way SQL
would; the caller's ``compare(column, op, values, value)`` judges a comparison on a non-NULL
value, so each test keeps its own literal and hierarchy semantics.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


def evaluate(p: tuple, row: Mapping[str, Any], compare: Callable[[str, str, Any, Any], bool]) -> bool | None:
    if p[0] in ("AND", "OR"):
        x, y = evaluate(p[1], row, compare), evaluate(p[2], row, compare)
        if p[0] == "AND":
            return False if False in (x, y) else (None if None in (x, y) else True)
        return True if True in (x, y) else (None if None in (x, y) else False)
    if p[0] == "NOT":
        v = evaluate(p[1], row, compare)
        return None if v is None else not v
    col, op, vals = p
    v = row[col]
    if op == "IS NULL":
        return v is None
    if op == "IS NOT NULL":
        return v is not None
    if v is None:
        return None
    return compare(col, op, vals, v)


def render(p: tuple, flip: bool = False, literal: Callable[[str, Any], str] = lambda col, v: str(v)) -> str:
    """The predicate as SQL text; ``flip`` puts the literal on the left of ``<``, ``<=``, ``>``,
    ``>=``; ``literal(column, value)`` writes one value."""
    if p[0] in ("AND", "OR"):
        return f"({render(p[1], flip, literal)} {p[0]} {render(p[2], flip, literal)})"
    if p[0] == "NOT":
        return f"NOT ({render(p[1], flip, literal)})"
    col, op, vals = p
    vals = [literal(col, v) for v in vals]
    if op.startswith("IS"):
        return f"{col} {op}"
    if op in ("IN", "NOT IN"):
        return f"{col} {op} ({', '.join(vals)})"
    if op.endswith("BETWEEN"):
        return f"{col} {op} {vals[0]} AND {vals[1]}"
    if flip and op in ("<", "<=", ">", ">="):  # literal on the left
        mirrored = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}[op]
        return f"{vals[0]} {mirrored} {col}"
    return f"{col} {op} {vals[0]}"


def leaves_under(h: Any, label: str) -> set[str]:
    """The leaves under the node labelled ``label`` of hierarchy ``h`` (labels unique in ``h``)."""
    node = h.labels.index(label)
    return set(h.leaves[h.leaf_lo[node]: h.leaf_hi[node] + 1])
