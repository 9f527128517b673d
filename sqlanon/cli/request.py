"""The request of ``anonymize`` and ``explain``: the release file's values overridden by the flags,
option by option (:mod:`sqlanon.request.schema`)."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import InputError
from ..model.privacy import DISTANCES
from ..request.config import MODEL_KEYS, QIConfig, ReleaseConfig, check_request, load_config
from ..request.schema import ALGORITHM_KEYS, FLAGGED, OPTIONS_BY_NAME, Option
from .common import UsageError, locate, split_names


def request_of_args(args: argparse.Namespace) -> ReleaseConfig:
    """The anonymize/explain request: the release file (if any) overridden by the flags, option
    by option (:data:`sqlanon.request.schema.OPTIONS`)."""
    config = load_config(args.config) if args.config else None
    database, table = locate(args, config)
    flags = _flag_values(args)
    values = {f.name: getattr(config, f.name) for f in dataclasses.fields(ReleaseConfig)} if config else {}
    values.update({name: value for name, value in flags.items() if name in _OVERRIDES})
    qids = flags.get("qids", config.qids if config and not ("qid" in flags or "k" in flags) else ())
    if qids and ("qid" in flags or "k" in flags):
        raise UsageError("give either --qid/--k or --qids COLS:K (each QID with its own k), not both")
    qid = flags.get("qid", list(config.qid if config else []))
    if "qids" in flags:
        qid = []
        for columns, _ in qids:
            qid += [c for c in columns if c not in qid]
    if not qid:
        raise UsageError("name the quasi-identifiers with --qid a,b,c (or [[qi]] in --config)")
    k = flags.get("k", config.k if config else None)
    if k is None and not qids:
        raise UsageError("--k N is required (or privacy.k in --config)")
    hierarchies = {n: h for n, h in (config.hierarchies if config else {}).items() if n in qid}
    for name, path in flags.get("hierarchy", ()):
        if name not in qid:
            raise UsageError(f"--hierarchy {name}={path}: {name!r} is not a QI (QIs: {', '.join(qid)})")
        hierarchies[name] = path
    if any(key in flags for key in MODEL_KEYS):  # the models' flags together replace the file's models
        values["models"] = tuple(m for key in MODEL_KEYS for m in flags.get(key, ()))
    values.update(table=table, database=database, qis=tuple(QIConfig(n, hierarchies.get(n)) for n in qid), k=k,
                  qids=tuple(qids), algorithm=_algorithm(args, config), replace=bool(values.get("replace")))
    request = ReleaseConfig(**values)
    check_request(lambda key, message: UsageError(message), spelling(flags, config),
                  **privacy_settings(request), criterion=request.criterion, target=request.target,
                  selections=request.selections)
    return request


def privacy_settings(request: ReleaseConfig) -> dict[str, Any]:
    """The privacy settings of :func:`~sqlanon.request.config.check_request` and
    :func:`~sqlanon.request.config.privacy_constraints`."""
    return {key: getattr(request, key) for key in ("sensitive", "l", "diversity", "c", "variance", "t_closeness",
                                                   "models")}


def privacy_of(args: argparse.Namespace) -> ReleaseConfig:
    """verify's privacy flags as a request (for :func:`privacy_settings`), each checked."""
    flags = _flag_values(args)
    values = {name: value for name, value in flags.items() if name in _OVERRIDES}
    values["models"] = tuple(m for key in MODEL_KEYS for m in flags.get(key, ()))
    request = ReleaseConfig(table="", qis=(), k=None, **values)
    check_request(lambda key, message: UsageError(message), spelling(flags, None), **privacy_settings(request),
                  criterion=None, target=(), selections=())
    return request


def _flag_values(args: argparse.Namespace) -> dict[str, Any]:
    """The flags given, by option name, each read (:data:`_READERS`) and checked on its own."""
    out = {}
    for option in FLAGGED:
        raw = getattr(args, option.dest, None)
        if raw is None or raw is False or raw == []:  # not given (0 is given)
            continue
        read = _READERS.get(option.name) or (_model_reader(option) if option.name in MODEL_KEYS else None)
        out[option.name] = read(raw) if read is not None else raw
    return out


def _algorithm(args: argparse.Namespace, config: ReleaseConfig | None) -> tuple[tuple[str, Any], ...]:
    """The algorithm's flat keys: the release file's ``[algorithm]``, each overridden by its flag
    (``--algorithm`` the name; the flags of the algorithms' arguments,
    :data:`~sqlanon.request.schema.ALGORITHM_KEYS`)."""
    record = dict(config.algorithm if config else ())
    if args.algorithm is not None:
        if record.get("name", "mondrian") != args.algorithm:
            record = {}  # another algorithm: the file's arguments are not its
        record["name"] = args.algorithm
    record.update({key: getattr(args, key) for key in ALGORITHM_KEYS if getattr(args, key, None) is not None})
    return tuple(record.items())


def _published(items: Sequence[str]) -> str | tuple[tuple[str, str], ...]:
    """``--published MODE`` (every ordered QI) or ``--published COL=MODE`` (repeatable)."""
    if len(items) == 1 and "=" not in items[0]:
        return items[0].strip()
    pairs = []
    for item in items:
        name, sep, mode = item.rpartition("=")
        if not sep or not name.strip():
            raise UsageError(f"--published takes one MODE, or COL=MODE per QI (repeatable); got {item!r}")
        pairs.append((name.strip(), mode.strip()))
    return tuple(pairs)


def _qids(items: Sequence[str]) -> tuple[tuple[tuple[str, ...], int], ...]:
    """``--qids COLS:K`` values as ``(columns, k)`` pairs."""
    out = []
    for item in items:
        columns, sep, k = item.rpartition(":")
        if not sep or not columns or not k.strip().isdigit():
            raise UsageError(f"--qids takes COLS:K, e.g. education,sex:4; got {item!r}")
        out.append((tuple(split_names([columns], "--qids")), int(k)))
    return tuple(out)


def _variance(items: Sequence[str]) -> tuple[tuple[str, float], ...]:
    """``--variance COL=V`` values as ``(column, V)`` pairs."""
    out = []
    for item in items:
        column, sep, value = item.rpartition("=")
        try:
            v = float(value)
        except ValueError:
            v = float("nan")
        if not sep or not column or not v >= 0 or v == float("inf"):
            raise UsageError(f"--variance takes COL=V with V a number >= 0, got {item!r}")
        out.append((column, v))
    return tuple(out)


def _at_least(flag: str, minimum: float, strict: bool = False) -> Callable[[float], float]:
    def read(value: float) -> float:
        if not (value > minimum if strict else value >= minimum):
            raise UsageError(f"{flag} must be a number {'>' if strict else '>='} {minimum:g}, got {value:g}")
        return value
    return read


def _hierarchies(items: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """``--hierarchy COL=PATH`` values as ``(column, path)`` pairs."""
    out = []
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise UsageError(f"--hierarchy takes COL=PATH, got {item!r}")
        out.append((name, path))
    return tuple(out)


def _selections(items: Sequence[str]) -> tuple[str, ...]:
    if not all(s.strip() for s in items):
        raise UsageError("--select: empty predicate")
    return tuple(items)


def _model_reader(option: Option) -> Callable[[Sequence[str]], tuple[Any, ...]]:
    """A privacy model's own flag (``--delta-disclosure COL=NUMBER[,PARAM=VALUE]``)."""
    def read(items: Sequence[str]) -> tuple[Any, ...]:
        try:
            return tuple(MODEL_KEYS[option.name].from_flag(item) for item in items)
        except InputError as e:
            raise UsageError(str(e)) from None
    return read


def _t_closeness(item: str) -> tuple[str, float, str, str | None]:
    """``--t-closeness COL:T[:DISTANCE[:HIERARCHY]]`` as ``(column, t, distance, hierarchy)``."""
    column, _, rest = item.partition(":")
    t_text, _, rest = rest.partition(":")
    distance, _, hierarchy = rest.partition(":")
    try:
        t = float(t_text)
    except ValueError:
        t = float("nan")
    if not column or not t >= 0 or (distance or "equal") not in DISTANCES or (
            (distance == "hierarchical") != bool(hierarchy)):
        raise UsageError(f"--t-closeness takes COL:T[:equal|ordered|hierarchical:HIERARCHY.csv] with T >= 0, got {item!r}")
    return column, t, distance or "equal", hierarchy or None


def spelling(flags: dict[str, Any], config: ReleaseConfig | None) -> Callable[[str], str]:
    """How a usage error names a request key: its flag, or its release-file key when the value
    came from the file (the flags override the file, so a contradiction may mix both)."""
    def spell(key: str) -> str:
        option = OPTIONS_BY_NAME[key]
        return option.flag if config is None or key in flags else option.toml  # type: ignore[return-value]

    return spell


def _split(flag: str) -> Callable[[Sequence[str]], tuple[str, ...]]:
    return lambda items: tuple(split_names(items, flag))


#: How a flag's text becomes its request value (flags not named here: as argparse read them).
_READERS: dict[str, Callable[[Any], Any]] = {
    "qid": _split("--qid"), "sensitive": _split("--sensitive"), "target": _split("--target"),
    "key": lambda text: tuple(split_names([text], "--key")), "hierarchy": _hierarchies, "selections": _selections,
    "variance": _variance, "t_closeness": lambda items: tuple(_t_closeness(i) for i in items), "qids": _qids,
    "published": _published, "l": _at_least("--l", 1), "c": _at_least("--c", 0, strict=True),
}
#: The options a flag sets as it is, overriding the release file's value.
_OVERRIDES = frozenset(o.name for o in FLAGGED if o.field not in ("qid", "k", "hierarchies", "algorithm")
                       and o.name not in MODEL_KEYS and o.name != "qids") | {"criterion"}
