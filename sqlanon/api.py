"""The public entry points: a :class:`Request` is the whole anonymization request as one frozen
value; :func:`anonymize` runs one (``Request(...).run(con)``) through the pipeline
(:func:`sqlanon.pipeline.run`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any

from .algorithms import CRITERION_NAMES, REMOVED, algorithm_of, default_algorithm
from .engine.base import Engine
from .engine.calls import serialized
from .errors import InputError, RemovedOptionError
from .explain import explain
from .hierarchies import Builder
from .model.partition import Progress
from .model.privacy import Constraint, EntropyLDiversity, KAnonymity, check_models, from_record
from .pipeline import Release, run
from .request import config
from .request.algorithm import Algorithm, check_fit
from .request.output import Output
from .request.single import requirement
from .request.spec import Spec, resolve


@dataclass(frozen=True)
class Request:
    """One anonymization request, as a value: what to anonymize (``table``), the requirement
    (``qid``, ``k``, ``privacy``, ``suppression``), how (``algorithm``), the workload and
    generalization (``target``, ``sensitive``/``l``, ``hierarchies``, ``published``,
    ``selections``) and what to publish (``output``). Arguments as for :func:`anonymize`;
    lists are kept as tuples, so two requests asking the same are equal.

    >>> import sqlanon as sa
    >>> req = sa.Request("patients", qid=["age", "zip"], k=50, algorithm=sa.Mondrian())
    >>> req.k, req.qid
    (50, ('age', 'zip'))

    :meth:`run` publishes it, :meth:`explain` shows the SQL it runs, :meth:`to_toml` /
    :meth:`from_toml` keep it in a release file (``Request.from_toml(p) == req``).
    """

    table: str
    qid: tuple[str, ...] | None = None
    k: int | None = None
    privacy: tuple[Constraint, ...] = ()
    suppression: float | None = None
    algorithm: Algorithm | None = None
    target: tuple[str, ...] | None = None
    sensitive: tuple[str, ...] | None = None
    l: float | None = None
    hierarchies: Mapping[str, Any] | None = None
    published: str | Mapping[str, str] | None = None
    selections: tuple[str, ...] = ()
    output: Output = field(default_factory=Output)

    def __post_init__(self) -> None:
        def tupled(value: Any) -> Any:  # a list of names as a tuple; anything else as given (checked later)
            return (value,) if isinstance(value, str) else tuple(value) if isinstance(value, (list, tuple)) else value

        if isinstance(self.qid, (list, tuple)):
            object.__setattr__(self, "qid", tuple(self.qid))
        object.__setattr__(self, "privacy", tuple(check_models(self.privacy, "privacy=")))
        for name in ("target", "sensitive", "selections"):
            object.__setattr__(self, name, tupled(getattr(self, name)))
        if self.selections is None:
            object.__setattr__(self, "selections", ())
        for name in ("hierarchies", "published"):
            value = getattr(self, name)
            if isinstance(value, Mapping):  # none given is None: the same request
                object.__setattr__(self, name, MappingProxyType(dict(value)) if value else None)
        object.__setattr__(self, "output", Output.of(self.output))
        if self.algorithm is None:
            object.__setattr__(self, "algorithm", default_algorithm())
        elif not isinstance(self.algorithm, Algorithm):
            raise InputError(f"algorithm= takes sqlanon.Mondrian(...), TopDown(...), Genetic(...) or Optimal(...), "
                             f"got {self.algorithm!r}")
        if self.qid is None:  # the QIs are the union of the models' QIDs
            try:
                union = requirement(None, self.k, self.privacy)[0]
            except InputError:
                union = None  # reported by check()
            if union is not None:
                object.__setattr__(self, "qid", tuple(union))

    @property
    def models(self) -> tuple[Any, ...]:
        """Every privacy model asked for besides ``k``: ``privacy`` and the ``sensitive``/``l``
        shortcut's entropy l-diversity."""
        shortcut = ()
        if isinstance(self.sensitive, tuple) and self.l is not None and all(isinstance(s, str) for s in self.sensitive):
            shortcut = tuple(EntropyLDiversity(s, self.l) for s in self.sensitive)  # type: ignore[arg-type]
        return tuple(self.privacy) + shortcut

    def check(self) -> None:
        """Every rule between the options, without the database (:func:`check_fit`).

        Raises:
            InputError: (or a subclass) for a request that no table could satisfy."""
        assert self.algorithm is not None
        _, _, pairs, _ = requirement(self.qid, self.k, self.privacy)
        union = {c for columns, _ in pairs for c in columns}
        several = len({frozenset(c) for c, _ in pairs}) > 1 or any(set(c) != union for c, _ in pairs)
        check_fit(self.algorithm, self.models,
                  suppression=self.suppression, selections=self.selections, several_qids=several)

    def resolve(self, engine: Engine) -> Spec:
        """The request checked against the database (:func:`sqlanon.request.spec.resolve`)."""
        self.check()
        return resolve(engine, self.table, self.qid, self.k, algorithm=self.algorithm, privacy=self.privacy,
                       hierarchies=self.hierarchies, output=self.output, sensitive=self.sensitive, l=self.l,
                       target=self.target, selections=self.selections or None, published=self.published,
                       suppression=self.suppression)

    def run(self, con: Any, progress: Callable[[Progress], None] | None = None) -> Release:
        """Publish the release (:func:`anonymize`)."""
        return run(con, self, progress)

    def explain(self, con: Any) -> str:
        """The SQL :meth:`run` would run, step by step, without running what writes
        (:func:`sqlanon.explain.explain`)."""
        return explain(con, self)

    def to_toml(self, path: str | Path) -> None:
        """Write the request as a release file (:mod:`sqlanon.request.config`); a hierarchy
        file below the file's directory is written relative to it (and read back absolute)."""
        text = config.dumps(config.document(config_of(self), Path(path).resolve().parent))
        Path(path).write_text(text, encoding="utf-8")

    @classmethod
    def from_toml(cls, path: str | Path) -> Request:
        """Read a release file (:mod:`sqlanon.request.config`) as a request."""
        return request_of(config.load_config(path))


#: The keywords of :func:`anonymize` that go into the :class:`Request` as they are (besides
#: ``table``, ``qid``, ``k`` and ``output``).
REQUEST_OPTIONS = frozenset(f.name for f in fields(Request)) - {"table", "qid", "k", "output"}


@serialized
def anonymize(
    con: Any,
    table: str,
    qid: Sequence[str] | None = None,
    k: int | None = None,
    *,
    privacy: Sequence[Constraint] = (),
    suppression: float | None = None,
    algorithm: Algorithm | None = None,
    target: str | Sequence[str] | None = None,
    sensitive: str | Sequence[str] | None = None,
    l: float | None = None,
    hierarchies: Mapping[str, Any] | None = None,
    published: str | Mapping[str, str] | None = None,
    selections: str | Sequence[str] | None = None,
    output: str | Output | None = None,
    progress: Callable[[Progress], None] | None = None,
    **removed: Any,
) -> Release:
    """Publish a k-anonymous recoding of ``table``: ``Request(...).run(con)``.

    Args:
        con: a DuckDB connection, a PostgreSQL (psycopg) connection or a Spark session; the
            source is read, never written.
        table: table or view to anonymize (``schema.table`` accepted), or the path (or glob) of
            Parquet, CSV or JSON files, which DuckDB reads in place.
        qid: the quasi-identifier columns (default: the union of the ``KAnonymity(k, qid=...)``
            models' QIDs).
        k: every published equivalence class holds at least ``k`` rows.
        privacy: further privacy models: :class:`~sqlanon.DistinctLDiversity`,
            :class:`~sqlanon.EntropyLDiversity`, :class:`~sqlanon.RecursiveCLDiversity`,
            :class:`~sqlanon.VarianceDiversity`, :class:`~sqlanon.TCloseness`,
            :class:`~sqlanon.DeltaDisclosure`, :class:`~sqlanon.BetaLikeness`, and
            :class:`~sqlanon.KAnonymity` (``KAnonymity(k, qid=[...])``: several QIDs, each with its
            own k, for :class:`~sqlanon.TopDown`). Each is verified on the published view.
            Rothko-S (``Mondrian(strategy=Sample(...))``) refuses delta-disclosure, which has no
            sound sample test; ``"auto"`` then partitions with Rothko-T.
        suppression: the fraction of rows that may be suppressed (default 0): published with
            every QI fully generalized and class NULL, verified in SQL. Mondrian spends it as a
            local budget carried down the tree, only where no ordinary split exists
            (:mod:`sqlanon.mondrian.suppression`); :class:`~sqlanon.Genetic` and
            :class:`~sqlanon.Optimal` take it as a limit.
        algorithm: :class:`~sqlanon.Mondrian` (the default: ``Mondrian()``, Median Mondrian or
            what ``target=`` chooses), :class:`~sqlanon.TopDown`, :class:`~sqlanon.Genetic` or
            :class:`~sqlanon.Optimal`; each checks its own arguments.
        target: the workload's target column(s): class labels give InfoGain Mondrian, numeric
            columns Regression (LSD) Mondrian, both together :class:`~sqlanon.Targets`; for the
            single-dimensional algorithms, the class label.
        sensitive, l: entropy l-diversity of each ``sensitive`` column (KDD 2006, Section 3.1):
            in every class the sensitive values' entropy is at least ``ln l``.
        hierarchies: generalization hierarchy per categorical QI: an ARX CSV path
            (``leaf;level1;...;*``), a pandas DataFrame, a nested dict, rows, or a table name.
            QIs without one are ordered domains (numbers, dates, timestamps, text, booleans).
        published: what an ordered QI's ``q_min``/``q_max`` publish (:mod:`sqlanon.publish.bounds`):
            ``"data"`` (default: each class's own smallest and largest value), ``"domain"`` (the
            region's box: its cut points, ``q_min < v <= q_max``, NULL for an open end),
            ``"hierarchy"`` (a numeric QI given a hierarchy publishes the smallest interval of
            its hierarchy covering the class), or a dict ``{qi: mode}``.
        selections: the SQL predicates analysts will run (over the QIs; see
            :mod:`sqlanon.model.selection`): Selection Mondrian (KDD 2006, Section 3.4) first
            splits to minimize their imprecision, then continues with the criterion.
        output: the view's name, or :class:`~sqlanon.Output` (``view``, ``replace``, ``key``,
            ``class_column``).
        progress: called after every tree level with a :class:`~sqlanon.Progress` (single-
            dimensional: after every refinement, lattice node batch or generation).

    Returns:
        The :class:`Release`.

    Raises:
        InputError: (and subclasses) for a bad request, before anything is written; among them
            :class:`~sqlanon.ReadOnlyError` when the current database is read-only and
            :class:`~sqlanon.errors.RemovedOptionError` for a keyword of the earlier API (its
            message names the object that takes it now).
        VerificationError: if the published relation fails the independent check (it is
            dropped and any replaced objects are restored).
    """
    check_removed("anonymize", removed)
    request = Request(table, qid, k, privacy=privacy, suppression=suppression, algorithm=algorithm, target=target,
                      sensitive=sensitive, l=l, hierarchies=hierarchies, published=published,
                      selections=selections or (), output=output)
    return run(con, request, progress)


def check_removed(caller: str, given: Mapping[str, Any]) -> None:
    """Refuse the keywords of the earlier API (:data:`sqlanon.algorithms.REMOVED`), naming what
    takes each now; any other unknown keyword is the ``TypeError`` Python raises."""
    for name in given:
        if name in REMOVED:
            raise RemovedOptionError(f"{name}= is no longer a keyword of {caller}(): {REMOVED[name]}")
        raise TypeError(f"{caller}() got an unexpected keyword argument {name!r}")


def request_of(c: config.ReleaseConfig) -> Request:
    """The :class:`~sqlanon.Request` of a release file (or of the command line's flags)."""
    criterion = config.criterion_object(c.criterion, c.target)
    try:
        algorithm = algorithm_of(dict(c.algorithm), criterion)
    except InputError as e:  # in the file's words: where the argument was
        if c.path is None:
            raise
        raise config.ConfigError(f"{c.path}: algorithm: {e}") from None
    entropy = (c.diversity or "entropy") == "entropy"
    shortcut = entropy and (bool(c.sensitive) or c.l is not None)  # sensitive=/l=: entropy l-diversity
    models = config.privacy_constraints(() if shortcut else c.sensitive, None if shortcut else c.l, c.diversity, c.c,
                                        c.variance, c.t_closeness, c.models)
    models = [KAnonymity(k, qid=columns) for columns, k in c.qids] + models + [from_record(dict(r)) for r in c.records]
    return Request(
        c.table, c.qid, c.k, privacy=tuple(models), suppression=c.suppression, algorithm=algorithm,
        target=None if criterion is not None or not c.target else c.target,
        sensitive=c.sensitive if shortcut else None, l=c.l if shortcut else None,
        hierarchies=c.hierarchies or None,
        published=c.published if isinstance(c.published, str) or c.published is None else dict(c.published),
        selections=c.selections, output=Output(c.view, c.replace, c.key, c.class_column))


def config_of(request: Request) -> config.ReleaseConfig:
    """The release file of ``request`` (:func:`request_of` inverts it).

    Raises:
        InputError: a part of the request a release file cannot hold (a hierarchy given as an
            object rather than a file or a builder, a criterion with ``min_gain``, ...)."""
    assert request.algorithm is not None
    hierarchies = dict(request.hierarchies or {})
    qis = []
    for name in request.qid or ():
        h = hierarchies.get(name)
        if h is not None and not isinstance(h, Builder):
            if not isinstance(h, (str, Path)) or not Path(h).is_file():
                raise InputError(f"the hierarchy of {name!r} is not a file, which a release file can name; save it "
                                 f"as an ARX CSV file first (or give a sqlanon.hierarchies.builder(...))")
            h = str(h)
        qis.append(config.QIConfig(name, h))
    entries = [m.release_entry() for m in request.privacy]  # the model says where it goes
    criterion, criterion_name, targets = request.algorithm.criterion, None, ()
    if criterion is not None:
        if type(criterion) not in CRITERION_NAMES or getattr(criterion, "min_gain", 0.0):
            raise InputError(f"a release file names the criterion (median, infogain, regression, score) with its "
                             f"targets; it cannot hold {criterion.describe()}")
        criterion_name, targets = CRITERION_NAMES[type(criterion)], tuple(getattr(criterion, "targets", ()))
    out = request.output
    return config.ReleaseConfig(
        table=request.table, qis=tuple(qis), k=request.k, view=out.view, replace=out.replace,
        key=(out.key,) if isinstance(out.key, str) else None if out.key is None else tuple(out.key),
        class_column=out.class_column, sensitive=tuple(request.sensitive or ()), l=request.l,
        target=tuple(request.target) if request.target is not None else targets, criterion=criterion_name,
        selections=tuple(request.selections),
        qids=tuple((tuple(e["columns"]), e["k"]) for key, e in entries if key == "qids"),  # type: ignore[misc]
        records=tuple(tuple(e.items()) for key, e in entries if key == "model"),
        published=request.published if isinstance(request.published, str) or request.published is None
        else tuple(request.published.items()),
        suppression=request.suppression, algorithm=tuple(request.algorithm.record().items()))
