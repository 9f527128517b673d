r"""Release files: an anonymization request declared in TOML, for ``sqlanon anonymize --config``.

Schema (every key is checked; unknown keys are rejected with a "did you mean"):

.. code-block:: toml

    [release]
    database = "hospital.duckdb"  # optional: a DuckDB file or a postgresql:// URL; omit it when `table`
                                  # names files (then use --out)
    table = "patients"            # required: a table or view, or Parquet/CSV/JSON path or glob
    view = "patients_anon"        # optional: the published view (default <table>_anon)
    replace = false               # optional: replace an earlier sqlanon release of this name
    key = ["id"]                  # optional: the column(s) identifying a row (default: the table's
                                  # declared primary/unique key; without one a view of a snapshot)
    class_column = "eq_class"     # optional: the name of the equivalence-class column
    published = "domain"          # optional: data (default), domain, hierarchy, or { qi = mode }
    suppression = 0.01            # optional: the fraction of rows that may be suppressed

    [[qi]]                        # one entry per quasi-identifier, in order
    name = "age"

    [[qi]]
    name = "nationality"
    hierarchy = "nationality.csv" # optional: ARX CSV (leaf;level1;...;*), or a builder (below)

    [[qi]]
    name = "zip"
    hierarchy = { builder = "masking", step = 1 }  # built from the column's values
                                  # (sqlanon.hierarchies.Builder): intervals (width, start, fanout),
                                  # quantiles (bins, fanout), ordering (fanout, order: the values or
                                  # a file of them), masking (mask, step), dates (levels)

    [privacy]
    k = 50                        # required (unless qids): an integer >= 1
    qids = [{ columns = ["age", "sex"], k = 10 }]  # optional, topdown only: several QIDs, each its k
    sensitive = ["diagnosis"]     # optional, with l: l-diversity of each of these columns
    l = 3                         # optional, with sensitive: a number >= 1 (an integer unless entropy)
    diversity = "entropy"         # optional: entropy (default), distinct, or recursive (with c)
    c = 2                         # recursive only: recursive (c,l)-diversity, a number > 0
    variance = { salary = 1e6 }   # optional: variance diversity, column = smallest class variance
    t_closeness = { diagnosis = 0.2 }  # optional: t-closeness, column = t (equal distance), or
                                  # column = { t = 0.2, distance = "ordered" | "hierarchical", hierarchy = "dx.csv" }
    delta_disclosure = { diagnosis = 1.5 }  # optional: delta-disclosure privacy, column = delta
    beta_likeness = { diagnosis = 1.0 }     # optional: beta-likeness, column = beta, or
                                  # column = { beta = 1.0, enhanced = true }
    model = [{ type = "DistinctLDiversity", sensitive = "dx", l = 2 }]  # optional: privacy models
                                  # as the manifest records them (sqlanon.model.privacy.to_record)

    [workload]                    # optional
    target = ["hiv"]              # optional: class labels (InfoGain) and/or numeric targets (Regression)
    criterion = "infogain"        # optional: median, infogain, regression or selection; default: from
                                  # the targets' types (numeric: regression), median without targets
    selections = ["age > 40 AND sex = 'M'"]  # optional: SQL predicates on the QIs (Selection Mondrian)

    [algorithm]                   # optional: the algorithm object and its arguments
    name = "mondrian"             # mondrian (default), topdown, genetic or optimal
    strategy = "sample"           # mondrian: auto (default), levels (Rothko-T) or sample (Rothko-S)
    memory_rows = 2000000         # mondrian: partitions this small are finished in memory
    sample_rows = 1000000         # mondrian, sample: rows of a Rothko-S sample (default memory_rows)
    confidence = 0.95             # mondrian, sample: confidence of Rothko-S's hypothesis tests
    seed = 0                      # mondrian, sample: seed of the sample; genetic: seed of the GA
    # topdown: max_steps, max_seconds; genetic: metric, budget, iterations, seed; optimal: metric

Relative paths (``database``, ``table`` when it names files, ``hierarchy``) are resolved against
the directory of the TOML file, so a release file and its hierarchies can be moved together.
Keys planned for later releases (``privacy.t``, t-closeness) are recognized and rejected with a
"not supported yet" error. ``[workload] criterion`` names the criterion instead of letting the
targets' types choose it (an integer-coded class label is numeric: ``criterion = "infogain"``
keeps it a label); with selections, median/infogain/regression are the criterion inside the
query regions, and ``selection`` asks for selections explicitly. The
selections are checked here only for their TOML shape; :func:`sqlanon.anonymize` parses them
against the table's QIs before any work (:mod:`sqlanon.model.selection`).

Errors are :class:`ConfigError` (an :class:`~sqlanon.errors.InputError`) naming the file and the
key path, e.g. ``release.toml: privacy.k: must be an integer >= 1, got "ten"`` or
``release.toml: qi[2].hierarchy: file not found: ./edu.csv``; ``qi[N]`` counts the ``[[qi]]``
entries from 1.

>>> import pathlib, tempfile
>>> with tempfile.TemporaryDirectory() as folder:
...     path = pathlib.Path(folder, "release.toml")
...     _ = path.write_text('[release]\ntable = "people"\n[[qi]]\nname = "age"\n[privacy]\nk = 5\n')
...     config = load_config(path)
>>> config.table, config.qid, config.k, config.algorithm
('people', ('age',), 5, ())
"""

from __future__ import annotations

import json
import math
import os
import stat
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..engine.catalog import DATA_SUFFIXES
from ..errors import HierarchyError, InputError, did_you_mean
from ..hierarchies import Builder
from ..model.criteria import Criterion, InfoGain, Median, Regression, Score
from ..model.privacy import (
    DISTANCES,
    MODELS,
    DistinctLDiversity,
    EntropyLDiversity,
    PrivacyModel,
    RecursiveCLDiversity,
    TCloseness,
    VarianceDiversity,
)
from .schema import ALGORITHM_KEYS, CRITERIA, DIVERSITIES, KEY_PATHS, OPTIONS, SECTIONS, section_keys

_SECTIONS = {"release": "a table", "qi": "an array of tables ([[qi]])", "privacy": "a table"}
_OPTIONAL_SECTIONS = {"workload": "a table", "algorithm": "a table"}
# The keys of each section (sqlanon.request.schema.OPTIONS).
_RELEASE_KEYS = section_keys("release")
_QI_KEYS = section_keys("qi")
_PRIVACY_KEYS = section_keys("privacy")
_WORKLOAD_KEYS = section_keys("workload")
#: Keys of [release] that moved to [algorithm] (the algorithm object's arguments).
_MOVED_KEYS = (*ALGORITHM_KEYS, "recoding", "search")
#: The privacy models declared by a key of their own, ``{ column = parameter or table }``
#: (:attr:`~sqlanon.model.privacy.PrivacyModel.spec_key`), by key.
MODEL_KEYS = {m.spec_key: m for m in MODELS.values() if m.spec_key is not None}
# Sections that are keys of another section, named so that the error says where they go.
_MOVED_SECTIONS = {"selections": "workload.selections", "target": "workload.target",
                   "criterion": "workload.criterion"}
# Recognized so that release files written for later versions fail clearly, not as typos.
_LATER_PRIVACY: dict[str, str] = {}
_LATER_WORKLOAD: dict[str, str] = {}
#: Every section of a release file and its keys, for help texts and errors.
SCHEMA = (("[release]", _RELEASE_KEYS), ("[[qi]]", _QI_KEYS), ("[privacy]", _PRIVACY_KEYS),
          ("[workload]", _WORKLOAD_KEYS), ("[algorithm]", ("name", "and the algorithm's arguments")))


class ConfigError(InputError):
    """A release file is missing, is not TOML, or does not follow the schema."""


@dataclass(frozen=True)
class QIConfig:
    """One ``[[qi]]`` entry: the column and, optionally, its hierarchy: a file (absolute path)
    or a builder (:class:`sqlanon.hierarchies.Builder`)."""

    name: str
    hierarchy: str | Builder | None = None


@dataclass(frozen=True)
class ReleaseConfig:
    """A validated release file (or the same request built from command-line flags).

    Attributes:
        table: the source (table, view, or file path/glob; file paths made absolute).
        qis: the quasi-identifiers, in order.
        k: the k of k-anonymity.
        database: the DuckDB file (absolute) or the PostgreSQL URL (as given), or None for files in,
            files out.
        view, replace, key, class_column: as for :class:`sqlanon.Output` (None = its default).
        sensitive, l: l-diversity of each sensitive column (both or neither).
        diversity: which l-diversity: ``entropy`` (None: the default), ``distinct`` or
            ``recursive`` (recursive (c,l)-diversity, with ``c``).
        c: the c of recursive (c,l)-diversity.
        variance: variance diversity: ``(column, smallest class variance)`` pairs.
        target: the workload's target columns.
        criterion: ``median``, ``infogain``, ``regression``, ``selection`` or ``score`` (single
            recoding); None lets the targets' types choose (as ``target=`` does).
        qids: several QIDs, each with its own k (``KAnonymity(k, qid=...)``); with ``qids`` the
            request has no ``k``.
        selections: the workload's selection predicates (SQL text over the QIs).
        path: the TOML file it was read from, if any.
        suppression, published: as for :func:`sqlanon.anonymize` (None = its default).
        algorithm: ``[algorithm]``: ``(key, value)`` pairs, ``name`` and the algorithm's own
            arguments (:func:`sqlanon.algorithms.algorithm_of` builds and checks the object).
        records: ``[[privacy.model]]``: privacy models as records
            (:func:`sqlanon.model.privacy.from_record`).
        models: the privacy models declared by a key of their own (:data:`MODEL_KEYS`), checked.
    """

    table: str
    qis: tuple[QIConfig, ...]
    k: int | None
    database: str | None = None
    view: str | None = None
    replace: bool = False
    sensitive: tuple[str, ...] = ()
    l: float | None = None
    target: tuple[str, ...] = ()
    selections: tuple[str, ...] = ()
    path: str | None = field(default=None, compare=False)
    diversity: str | None = None
    c: float | None = None
    variance: tuple[tuple[str, float], ...] = ()
    criterion: str | None = None
    key: tuple[str, ...] | None = None
    class_column: str | None = None
    qids: tuple[tuple[tuple[str, ...], int], ...] = ()
    published: str | tuple[tuple[str, str], ...] | None = None  # published=: one mode, or (QI, mode) pairs
    suppression: float | None = None
    algorithm: tuple[tuple[str, Any], ...] = ()
    records: tuple[tuple[tuple[str, Any], ...], ...] = ()
    t_closeness: tuple[tuple[str, float, str, str | None], ...] = ()  # (column, t, distance, hierarchy file)
    models: tuple[PrivacyModel, ...] = ()  # the models of MODEL_KEYS, checked

    @property
    def qid(self) -> tuple[str, ...]:
        return tuple(q.name for q in self.qis)

    @property
    def hierarchies(self) -> dict[str, str | Builder]:
        """``{qi: hierarchy file or builder}`` for the QIs that have one."""
        return {q.name: q.hierarchy for q in self.qis if q.hierarchy is not None}

    @property
    def constraints(self) -> list[PrivacyModel]:
        """The privacy constraints besides k-anonymity, as objects (for ``sqlanon.verify``)."""
        return privacy_constraints(self.sensitive, self.l, self.diversity, self.c, self.variance, self.t_closeness,
                                   self.models)


def privacy_constraints(
    sensitive: tuple[str, ...] | list[str], l: float | None, diversity: str | None, c: float | None,
    variance: tuple[tuple[str, float], ...] | list[tuple[str, float]],
    t_closeness: Sequence[tuple[str, float, str, str | None]] = (),
    models: Sequence[PrivacyModel] = (),
) -> list[PrivacyModel]:
    """The constraint objects of a checked request (see :func:`check_request`): l-diversity of
    each sensitive column in the chosen variant, then variance diversity of each column, then
    t-closeness ``(column, t, distance, hierarchy file)``, then the ``models`` (already objects)."""
    out: list[PrivacyModel] = []
    for column in sensitive if l is not None else ():
        if diversity == "distinct":
            out.append(DistinctLDiversity(column, int(l)))
        elif diversity == "recursive":
            out.append(RecursiveCLDiversity(column, float(c if c is not None else 0.0), int(l)))
        else:
            out.append(EntropyLDiversity(column, float(l)))
    out += [VarianceDiversity(column, float(v)) for column, v in variance]
    out += [TCloseness(column, float(t), distance, hierarchy) for column, t, distance, hierarchy in t_closeness]
    return out + list(models)


def criterion_object(criterion: str | None, target: tuple[str, ...] | list[str]) -> Criterion | None:
    """The ``criterion=`` of a named criterion (None: ``target=`` chooses, and ``selection``
    leaves the criterion inside the query regions to the targets too)."""
    if criterion == "median":
        return Median()
    if criterion == "infogain":
        return InfoGain(*target)
    if criterion == "regression":
        return Regression(*target)
    if criterion == "score":
        return Score(*target)
    return None


def check_request(fail, spell, *, sensitive: Any, l: Any, diversity: Any, c: Any, variance: Any,
                  criterion: Any, target: Any, selections: Any, t_closeness: Any = (), models: Any = ()) -> None:
    """Reject contradictory privacy and workload settings, in the words of the caller.

    Shared by release files and command-line flags, so both refuse the same requests.

    Args:
        fail: ``fail(key, message)`` returns the exception to raise for a request key
            (``"sensitive"``, ``"l"``, ``"diversity"``, ``"c"``, ``"variance"``, ``"criterion"``,
            ``"target"``, ``"selections"``).
        spell: ``spell(key)`` is how the message names a key (``l``, ``--l``).
    """
    if bool(sensitive) != (l is not None):
        raise fail("l" if sensitive else "sensitive",
                   f"{spell('sensitive')} and {spell('l')} go together (l-diversity of each sensitive column)")
    if diversity is not None and l is None:
        raise fail("diversity", f"{spell('diversity')} {diversity} needs {spell('sensitive')} and {spell('l')}")
    if diversity in ("distinct", "recursive") and l is not None and float(l) != int(l):
        raise fail("l", f"{spell('l')} must be an integer for {diversity} l-diversity, got {l:g}")
    if diversity == "recursive" and c is None:
        raise fail("c", f"{spell('diversity')} recursive needs {spell('c')} (recursive (c,l)-diversity)")
    if c is not None and diversity != "recursive":
        raise fail("c", f"{spell('c')} is the c of recursive (c,l)-diversity: it needs {spell('diversity')} recursive")
    if criterion == "median" and target:
        raise fail("criterion", f"{spell('criterion')} median takes no {spell('target')} (Median Mondrian ignores "
                                f"targets; name infogain or regression)")
    if criterion in ("infogain", "regression") and not target:
        raise fail("criterion", f"{spell('criterion')} {criterion} needs {spell('target')} columns")
    if criterion == "selection" and not selections:
        raise fail("criterion", f"{spell('criterion')} selection needs {spell('selections')} (the predicates "
                                f"analysts will run)")


#: The largest release file read (bytes): a request is a few hundred bytes; anything this large
#: is not one (and a device such as /dev/zero would never end).
MAX_CONFIG_BYTES = 1 << 20


def load_config(path: str | os.PathLike[str]) -> ReleaseConfig:
    """Read and validate a TOML release file.

    Raises:
        ConfigError: the file cannot be read (missing, not a regular file, larger than
            :data:`MAX_CONFIG_BYTES`, not UTF-8), is not TOML (nested too deeply included), or
            breaks the schema; the message names the file and the key path, never its lines.
    """
    file = Path(path)
    label = str(path)
    text = _read_text(file, label)
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{label}: not valid TOML: {e}") from None
    except RecursionError:  # tomllib parses nested arrays and inline tables recursively
        raise ConfigError(f"{label}: not valid TOML: arrays or tables nested too deeply") from None
    return _parse(document, file.resolve().parent, label)


def _read_text(file: Path, label: str) -> str:
    """The text of a release file: a regular file of at most :data:`MAX_CONFIG_BYTES` bytes, in
    UTF-8 (checked on the open file, then read no further than the cap; opened without blocking,
    so a FIFO is refused rather than waited on)."""
    try:
        with open(os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as stream:
            if not stat.S_ISREG(os.fstat(stream.fileno()).st_mode):
                raise ConfigError(f"{label}: not a regular file (a release file is a TOML file)")
            data = stream.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(f"{label}: release file not found") from None
    except IsADirectoryError:
        raise ConfigError(f"{label}: not a regular file (a release file is a TOML file)") from None
    except OSError as e:
        raise ConfigError(f"{label}: cannot read the release file: {e.strerror or e}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{label}: larger than {MAX_CONFIG_BYTES:,} bytes: not a release file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{label}: not a UTF-8 text file (byte {e.start})") from None


# -- validation ------------------------------------------------------------------------------
def _parse(document: dict[str, Any], base: Path, label: str) -> ReleaseConfig:
    def fail(key: str, message: str) -> ConfigError:
        return ConfigError(f"{label}: {key}: {message}")

    for key in document:
        if key == "constraints":
            raise fail(key, "not a section: constraints are keys of [privacy] (sensitive, l, diversity, c, "
                            "variance)")
        if key in _MOVED_SECTIONS:
            raise fail(key, f"not a section: write it as {_MOVED_SECTIONS[key]} = ... under [workload]")
        if key not in _SECTIONS and key not in _OPTIONAL_SECTIONS:
            raise fail(key, "unknown section." + did_you_mean(key, [*_SECTIONS, *_OPTIONAL_SECTIONS]))
    for key, what in _SECTIONS.items():
        if key not in document:
            raise fail(key, f"missing: the release file needs {what} '{key}'")

    release = _table(document["release"], "release", fail)
    for key in _MOVED_KEYS:
        if key in release:
            raise fail(f"release.{key}", "moved: the algorithm's arguments go under [algorithm] (name = \"mondrian\", "
                                         "\"topdown\", \"genetic\" or \"optimal\", and its keys)")
    _known(release, "release", _RELEASE_KEYS, {}, fail)
    if "table" not in release:
        raise fail("release.table", "missing: name the table, view or files to anonymize")
    qis = _qis(document["qi"], base, fail)
    privacy = _table(document["privacy"], "privacy", fail)
    if "t" in privacy:
        raise fail("privacy.t", "t-closeness is written t_closeness = { column = t }")
    _known(privacy, "privacy", _PRIVACY_KEYS, _LATER_PRIVACY, fail)
    workload = _table(document.get("workload", {}), "workload", fail)
    _known(workload, "workload", _WORKLOAD_KEYS, _LATER_WORKLOAD, fail)
    algorithm = _table(document.get("algorithm", {}), "algorithm", fail)
    for name, value in algorithm.items():
        if isinstance(value, (dict, list)):
            raise fail(f"algorithm.{name}", f"must be a string, a number or a boolean, got {_show(value)}")
    sections = {"release": release, "privacy": privacy, "workload": workload}
    values: dict[str, Any] = {}
    for option in OPTIONS:  # each key by its option's reader (_READERS)
        body = sections.get(option.section)  # type: ignore[arg-type]
        if body is not None and option.key in body and option.name in _READERS:
            values[option.name] = _READERS[option.name](body[option.key], option.toml, base, fail)
    qids = _qids(privacy.get("qids"), [q.name for q in qis], fail)
    if qids and "k" in privacy:
        raise fail("privacy.k", "give either k or qids (each QID with its own k), not both")
    if "k" not in privacy and not qids:
        raise fail("privacy.k", "missing: every class must hold at least k rows")
    request = ReleaseConfig(qis=qis, k=None if qids else _integer(privacy["k"], "privacy.k", 1, fail), qids=qids,
                            path=label, algorithm=tuple(algorithm.items()), models=_models(privacy, fail),
                            records=_records(privacy.get("model", []), "privacy.model", fail), **values)
    check_request(lambda key, message: fail(KEY_PATHS[key], message), lambda key: key,
                  sensitive=request.sensitive, l=request.l, diversity=request.diversity, c=request.c,
                  variance=request.variance, criterion=request.criterion, target=request.target,
                  selections=request.selections)
    return request


def _qis(entries: Any, base: Path, fail) -> tuple[QIConfig, ...]:
    """The ``[[qi]]`` entries: each a column, once, and optionally its hierarchy (a file, or a
    builder: :func:`_builder`)."""
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise fail("qi", f"must be an array of tables ([[qi]] entries), got {_show(entries)}")
    if not entries:
        raise fail("qi", "empty: declare at least one [[qi]] entry")
    qis: list[QIConfig] = []
    seen: dict[str, int] = {}
    for i, entry in enumerate(entries, 1):
        where = f"qi[{i}]"
        _known(entry, where, _QI_KEYS, {}, fail)
        if "name" not in entry:
            raise fail(f"{where}.name", "missing: the QI's column name")
        name = _string(entry["name"], f"{where}.name", fail)
        if name in seen:
            raise fail(f"{where}.name", f"{_show(name)} is already declared as qi[{seen[name]}]")
        seen[name] = i
        hierarchy = entry.get("hierarchy")
        if isinstance(hierarchy, dict):
            hierarchy = _builder(hierarchy, f"{where}.hierarchy", base, fail)
        elif hierarchy is not None:
            hierarchy = _file(hierarchy, f"{where}.hierarchy", base, fail)
        qis.append(QIConfig(name, hierarchy))
    return tuple(qis)


def _file(value: Any, key: str, base: Path, fail) -> str:
    """A file that must exist, relative to the release file's directory; made absolute."""
    resolved = _resolve(base, _string(value, key, fail))
    if not resolved.is_file():
        raise fail(key, f"file not found: {value} (looked for {resolved})")
    return str(resolved)


def _source(value: Any, key: str, base: Path, fail) -> str:
    """``release.table``: a table or view, or files (a path or glob, made absolute)."""
    table = _string(value, key, fail)
    return str(_resolve(base, table)) if Path(table.replace("*", "x")).suffix.lower() in DATA_SUFFIXES else table


def _database(value: Any, key: str, base: Path, fail) -> str:
    """``release.database``: a DuckDB file (made absolute), ``:memory:`` or a PostgreSQL URL."""
    database = _string(value, key, fail)
    if database != ":memory:" and not database.startswith(("postgresql://", "postgres://")):  # a URL is no path
        database = str(_resolve(base, database))
    return database


def _row_key(value: Any, key: str, base: Path, fail) -> tuple[str, ...]:
    names = _names([value] if isinstance(value, str) else value, key, fail)
    if not names:
        raise fail(key, "empty: name the column(s) that identify a row, or leave key out")
    return tuple(names)


def _boolean(value: Any, key: str, base: Path, fail) -> bool:
    if not isinstance(value, bool):
        raise fail(key, f"must be true or false, got {_show(value)}")
    return value


def _number(test, words: str):
    """A reader of a number for which ``test(value)`` holds (as a float)."""
    def read(value: Any, key: str, base: Path, fail) -> float:
        if not _is_number(value) or not test(value):
            raise fail(key, f"must be a number {words}, got {_show(value)}")
        return float(value)
    return read


#: How each key of a release file is read and checked, by option name
#: (:data:`sqlanon.request.schema.OPTIONS`): ``read(value, "section.key", base, fail)``. The
#: QIs, ``k``/``qids``, the privacy models and ``[algorithm]`` are read on their own.
_READERS: dict[str, Any] = {
    "database": _database,
    "table": _source,
    "view": lambda v, key, base, fail: _string(v, key, fail),
    "replace": _boolean,
    "key": _row_key,
    "class_column": lambda v, key, base, fail: _string(v, key, fail),
    "published": lambda v, key, base, fail: _published(v, fail),
    "suppression": _number(lambda x: 0 <= x < 1, "in [0, 1)"),
    "sensitive": lambda v, key, base, fail: tuple(_names(v, key, fail)),
    "l": _number(lambda x: x >= 1, ">= 1"),
    "diversity": lambda v, key, base, fail: _choice(v, key, DIVERSITIES, fail),
    "c": _number(lambda x: x > 0, "> 0"),
    "variance": lambda v, key, base, fail: _variance(v, key, fail),
    "t_closeness": lambda v, key, base, fail: _closeness(v, key, base, fail),
    "target": lambda v, key, base, fail: tuple(_names(v, key, fail)),
    "criterion": lambda v, key, base, fail: _choice(v, key, CRITERIA, fail),
    "selections": lambda v, key, base, fail: tuple(_predicates(v, key, fail)),
}
#: The options read on their own (not by :data:`_READERS`).
READ_APART = frozenset({"qid", "hierarchy", "k", "qids", "model", *MODEL_KEYS})


def _published(value: Any, fail) -> str | tuple[tuple[str, str], ...] | None:
    """``release.published``: ``"data"``, ``"domain"`` or ``"hierarchy"``, or a table
    ``{ age = "hierarchy", hours = "domain" }`` (checked against the QIs by anonymize)."""
    from ..model.qi import BOUNDS as MODES

    if value is None:
        return None
    if isinstance(value, str):
        return _choice(value, "release.published", MODES, fail)
    if isinstance(value, dict) and value:
        return tuple((str(q), _choice(m, f"release.published.{q}", MODES, fail)) for q, m in value.items())
    raise fail("release.published", f"must be one of {list(MODES)} or a table {{ qi = mode }}, got {_show(value)}")


def _builder(value: dict[str, Any], key: str, base: Path, fail) -> Builder:
    """``qi[N].hierarchy = { builder = "intervals", width = 10, ... }``: a hierarchy built from
    the column's values (:class:`sqlanon.hierarchies.Builder`, the arguments of ``sqlanon
    hierarchy``); ``order`` may name a file of the values in order, one per line (relative to the
    release file)."""
    spec = dict(value)
    order = spec.get("order")
    if isinstance(order, str):
        text = Path(_file(order, f"{key}.order", base, fail)).read_text(encoding="utf-8")
        spec["order"] = [line.strip() for line in text.splitlines() if line.strip()]
    try:
        return Builder.from_record(spec)
    except HierarchyError as e:
        raise fail(key, str(e)) from None


def _records(value: Any, key: str, fail) -> tuple[tuple[tuple[str, Any], ...], ...]:
    """``privacy.model``: an array of privacy-model records, ``{ type = "...", ... }`` (checked
    when the request is built, :func:`sqlanon.model.privacy.from_record`)."""
    if not isinstance(value, list) or not all(isinstance(v, dict) and "type" in v for v in value):
        raise fail(key, f"must be an array of {{ type = \"...\", ... }} tables, got {_show(value)}")
    return tuple(tuple(v.items()) for v in value)


def _qids(value: Any, declared: list[str], fail) -> tuple[tuple[tuple[str, ...], int], ...]:
    """``privacy.qids``: an array of ``{ columns = [...], k = N }`` over the declared QIs, which
    must each belong to some QID."""
    if value is None:
        return ()
    if not isinstance(value, list) or not value or not all(isinstance(v, dict) for v in value):
        raise fail("privacy.qids", f"must be an array of {{ columns = [...], k = N }} tables, got {_show(value)}")
    out = []
    for i, entry in enumerate(value, 1):
        where = f"privacy.qids[{i}]"
        _known(entry, where, ("columns", "k"), {}, fail)
        if "columns" not in entry or "k" not in entry:
            raise fail(where, "needs columns = [...] and k = N")
        columns = _names(entry["columns"], f"{where}.columns", fail)
        if not columns:
            raise fail(f"{where}.columns", "empty: a QID needs at least one column")
        for c in columns:
            if c not in declared:
                raise fail(f"{where}.columns", f"{_show(c)} is not a declared [[qi]]." + did_you_mean(c, declared))
        out.append((tuple(columns), _integer(entry["k"], f"{where}.k", 1, fail)))
    unused = [q for q in declared if not any(q in c for c, _ in out)]
    if unused:
        raise fail("privacy.qids", f"the [[qi]] {unused[0]!r} is in no QID: add it to one or drop it")
    return tuple(out)


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


def _choice(value: Any, key: str, choices: tuple[str, ...], fail) -> str:
    if not isinstance(value, str) or value not in choices:
        hint = did_you_mean(value, choices) if isinstance(value, str) else f" Available: {', '.join(choices)}."
        raise fail(key, f"must be one of {', '.join(choices)}, got {_show(value)}." + hint)
    return value


def _variance(value: Any, key: str, fail) -> tuple[tuple[str, float], ...]:
    """``{column = smallest variance, ...}``: variance diversity of each column."""
    if not isinstance(value, dict):
        raise fail(key, f"must be a table of column = smallest variance, e.g. {{ salary = 1e6 }}, got {_show(value)}")
    out = []
    for column, v in value.items():
        if not column:
            raise fail(key, "empty column name")
        if not _is_number(v) or v < 0:
            raise fail(f"{key}.{column}", f"must be a number >= 0, got {_show(v)}")
        out.append((column, float(v)))
    return tuple(out)


def _closeness(value: Any, key: str, base: Path, fail) -> tuple[tuple[str, float, str, str | None], ...]:
    """``{column = t}`` or ``{column = { t = ..., distance = ..., hierarchy = "file.csv" }}``:
    t-closeness of each column (a relative hierarchy path is relative to the release file)."""
    if not isinstance(value, dict):
        raise fail(key, f"must be a table of column = t, e.g. {{ diagnosis = 0.2 }}, got {_show(value)}")
    out = []
    for column, v in value.items():
        spec = v if isinstance(v, dict) else {"t": v}
        unknown = sorted(set(spec) - {"t", "distance", "hierarchy"})
        if unknown:
            raise fail(f"{key}.{column}.{unknown[0]}", "unknown key. It takes t, distance, hierarchy")
        t = spec.get("t")
        if not _is_number(t) or t < 0:
            raise fail(f"{key}.{column}", f"t must be a number >= 0, got {_show(t)}")
        distance = _choice(spec.get("distance", "equal"), f"{key}.{column}.distance", DISTANCES, fail)
        hierarchy = spec.get("hierarchy")
        if (distance == "hierarchical") != (hierarchy is not None):
            raise fail(f"{key}.{column}", "hierarchy goes with distance = \"hierarchical\" (and only with it)")
        if hierarchy is not None:
            hierarchy = _file(hierarchy, f"{key}.{column}.hierarchy", base, fail)
        out.append((column, float(t), distance, hierarchy))
    return tuple(out)


def _models(privacy: dict[str, Any], fail) -> tuple[PrivacyModel, ...]:
    """The models declared by their own keys (:data:`MODEL_KEYS`): ``{ column = number }`` or
    ``{ column = { parameter = value, ... } }``."""
    out = []
    for key, model in MODEL_KEYS.items():
        value = privacy.get(key, {})
        if not isinstance(value, dict):
            raise fail(f"privacy.{key}", f"must be a table of column = {model.spec_param}, e.g. "
                                         f"{{ diagnosis = 1.5 }}, got {_show(value)}")
        for column, spec in value.items():
            try:
                out.append(model.from_spec(column, spec))
            except InputError as e:
                raise fail(f"privacy.{key}.{column}", str(e)) from None
    return tuple(out)


def _predicates(value: Any, key: str, fail) -> list[str]:
    """A list of SQL predicates (one string is one predicate), each a non-empty string; an entry
    is named ``key[i]`` (from 1) in errors. Parsing them needs the table: anonymize does it."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list):
        raise fail(key, f"must be a list of SQL predicates, got {_show(value)}")
    for i, item in enumerate(items, 1):
        if not isinstance(item, str) or not item.strip():
            raise fail(f"{key}[{i}]", f"must be a non-empty SQL predicate string, got {_show(item)}")
    return items


def _names(value: Any, key: str, fail) -> list[str]:
    """A column name or a list of them."""
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
        raise fail(key, f"must be a column name or a list of them, got {_show(value)}")
    return names


def _table(value: Any, key: str, fail) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise fail(key, f"must be a table ([{key}]), got {_show(value)}")
    return value


def _known(table: dict[str, Any], where: str, keys: tuple[str, ...], later: dict[str, str], fail) -> None:
    for key in table:
        if key in later:
            raise fail(f"{where}.{key}", f"not supported yet ({later[key]} is planned; this version "
                                         f"reads {', '.join(keys)})")
        if key not in keys:
            raise fail(f"{where}.{key}", "unknown key." + did_you_mean(key, keys))


def _string(value: Any, key: str, fail) -> str:
    if not isinstance(value, str) or not value.strip():
        raise fail(key, f"must be a non-empty string, got {_show(value)}")
    return value


def _integer(value: Any, key: str, minimum: int, fail) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise fail(key, f"must be an integer >= {minimum}, got {_show(value)}")
    return value


def _resolve(base: Path, path: str) -> Path:
    p = Path(path).expanduser()
    return p if p.is_absolute() else base / p


def _show(value: Any) -> str:
    """A value as it reads in TOML, for error messages."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return str(value)


def document(c: ReleaseConfig, base: Path) -> dict[str, Any]:
    """``c`` as a release file's sections (what :func:`dumps` writes; :func:`load_config` reads
    it back), key by key from :data:`sqlanon.request.schema.OPTIONS`: each option's value at its
    ``section.key`` (tuples as arrays; left out when unset). A hierarchy file below ``base`` (the
    release file's directory) is written relative to it; a builder as its table."""
    sections: dict[str, Any] = {name: {} for name in SECTIONS}
    sections["qi"] = [{"name": q.name, **({} if q.hierarchy is None else {"hierarchy": _hierarchy_entry(q.hierarchy, base)})}
                      for q in c.qis]
    sections["algorithm"] = dict(c.algorithm)
    for option in OPTIONS:
        if option.section in ("qi", "algorithm"):
            continue
        value = _WRITERS[option.name](c) if option.name in _WRITERS else getattr(c, option.name)
        if not (value is None or value is False or (isinstance(value, (tuple, list, dict)) and not value)):
            sections[option.section][option.key] = list(value) if isinstance(value, tuple) else value
    return {name: body for name, body in sections.items() if body or name in _SECTIONS}


def _hierarchy_entry(hierarchy: str | Builder, base: Path) -> str | dict[str, Any]:
    if isinstance(hierarchy, Builder):
        return hierarchy.record()
    resolved = Path(hierarchy).resolve()
    try:
        return str(resolved.relative_to(base))
    except ValueError:
        return str(resolved)


#: How :func:`document` writes the options whose TOML value is not their value as it is.
_WRITERS: dict[str, Any] = {
    "published": lambda c: dict(c.published) if isinstance(c.published, tuple) else c.published,
    "variance": lambda c: dict(c.variance),
    "t_closeness": lambda c: {column: {"t": t, "distance": d, "hierarchy": h} for column, t, d, h in c.t_closeness},
    "qids": lambda c: [{"columns": list(columns), "k": k} for columns, k in c.qids],
    "model": lambda c: [dict(r) for r in c.records] + [m.record() for m in c.models],
    **{key: (lambda c: None) for key in MODEL_KEYS},  # their models are written as records (model)
}


def dumps(document: dict[str, Any]) -> str:
    """A release file's TOML text: each section a table (``qi`` an array of tables), values
    strings, numbers, booleans, arrays and inline tables (:func:`load_config` reads it back)."""
    lines: list[str] = []
    for section, body in document.items():
        entries = body if isinstance(body, list) else [body]
        for entry in entries:
            lines += ["", f"[[{section}]]" if isinstance(body, list) else f"[{section}]"]
            lines += [f"{_key(k)} = {_value(v)}" for k, v in entry.items() if v is not None]  # TOML has no null
    return "\n".join(lines).lstrip() + "\n"


def _key(key: str) -> str:
    return key if key.replace("_", "").replace("-", "").isalnum() and key.isascii() else json.dumps(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value) if math.isfinite(value) else ("nan" if value != value else "inf" if value > 0 else "-inf")
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items() if v is not None) + " }"
    raise ConfigError(f"a release file cannot hold {value!r}")

