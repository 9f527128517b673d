"""Checks of the caller's plain arguments (types and ranges), each raising one clear
:class:`~sqlanon.errors.InputError` that names the argument, before any work."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ..engine.base import CatalogObject, Engine
from ..errors import InputError, ObjectExistsError


def check_names(label: str, names: Any, example: str = "") -> list[str]:
    """``names`` as a list of distinct column names, or an :class:`InputError` naming ``label``.

    Any ordered iterable of strings is accepted (a list, a tuple, a pandas Index); a string, a
    mapping or a set is not: a string would be read as one-letter columns, and the order
    matters (for QIs it orders the regions and ties between QIs), which a set does not keep.
    """
    if isinstance(names, str):
        listed = [n.strip() for n in names.split(",") if n.strip()] or [names]  # "age,job": two columns
        raise InputError(f"{label} must be a list of column names, got the string {names!r}; use {listed!r}")
    if isinstance(names, (bytes, Mapping, set, frozenset)) or not isinstance(names, Iterable):
        raise InputError(f"{label} must be a list of column names{example}, got "
                         f"{type(names).__name__} {short_repr(names)}")
    names = list(names)
    seen: set[str] = set()
    for name in names:
        if not isinstance(name, str):
            raise InputError(f"{label}: column names must be strings, got {name!r}")
        if name in seen:
            raise InputError(f"{label}: column {name!r} is listed twice")
        seen.add(name)
    return names


def case_duplicate(columns: Iterable[str]) -> tuple[str, str] | None:
    """The first column whose name equals an earlier one up to case, with that earlier one
    (output columns must differ beyond case: DuckDB compares column names case-insensitively)."""
    seen: dict[str, str] = {}
    for c in columns:
        if c.lower() in seen:
            return c, seen[c.lower()]
        seen[c.lower()] = c
    return None


def check_qid(qid: Any) -> list[str]:
    """The QI list as a list of distinct column names (:func:`check_names`), not empty."""
    qid = check_names("qid", qid, " (e.g. ['age', 'zip'])")
    if not qid:
        raise InputError("qid is empty: name at least one quasi-identifier column")
    return qid


def check_int(label: str, value: Any, minimum: int | None = None) -> int:
    """``value`` as a Python ``int``, or an :class:`InputError` naming ``label``.

    Python and numpy integers are accepted (``k=df["k"].max()`` is an ``np.int64``); the result
    is a Python int, so it can go into JSON (the manifest) and SQL literals. Booleans are refused
    although Python counts them as integers (``k=True`` is a mistake, not 1), and so are floats,
    even integral ones: a count given as ``10.0`` is usually a computed value that only happens
    to be whole.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise InputError(f"{label} must be an integer, got {short_repr(value)}")
    if minimum is not None and value < minimum:
        raise InputError(f"{label} must be at least {minimum}, got {value}")
    return int(value)


def check_number(label: str, value: Any, minimum: float, maximum: float | None = None) -> float:
    """``value`` as a finite Python ``float`` >= ``minimum`` (and <= ``maximum``, if given;
    Python or numpy ints and floats, never booleans), or an :class:`InputError` naming ``label``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not math.isfinite(value) or value < minimum or (maximum is not None and value > maximum):
        bounds = f">= {minimum:g}" if maximum is None else f"from {minimum:g} to {maximum:g}"
        raise InputError(f"{label} must be a number {bounds}, got {short_repr(value)}")
    return float(value)


def check_bool(label: str, value: Any) -> bool:
    """``value`` as a Python ``bool``: a flag such as ``replace=`` given as ``"no"`` or ``1`` would
    otherwise be truthy and overwrite objects."""
    if not isinstance(value, (bool, np.bool_)):
        raise InputError(f"{label} must be True or False, got {short_repr(value)}")
    return bool(value)


def check_callable(label: str, value: Any) -> Callable[..., Any] | None:
    """``value`` if it is None or callable (a callback such as ``progress=``); checked up front, as
    the first call would only come after the first level of the partitioning."""
    if value is not None and not callable(value):
        raise InputError(f"{label} must be a function (or None), got {type(value).__name__} {short_repr(value)}")
    return value


def short_repr(value: Any, limit: int = 80) -> str:
    """``repr(value)``, cut to ``limit`` characters (for error messages)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_free(engine: Engine, name: str, replace: bool, *, option: str = "name",
               objects: Sequence[CatalogObject] | None = None) -> list[tuple[str, str]]:
    """The one name-collision check: ``(name, kind)`` of what creating ``name`` in the current
    schema would replace (:meth:`Engine.taken`); refused unless ``replace``.

    Raises:
        ObjectExistsError: a table or view of that name exists and ``replace`` is False.
    """
    existing = [(o.name, o.kind) for o in engine.taken(name, objects)]
    if existing and not replace:
        found, kind = existing[0]
        raise ObjectExistsError(f"a {kind} named {found!r} already exists; pass replace=True to overwrite it or "
                                f"choose another {option}")
    return existing
