"""The request's options, once: for each, the :class:`~sqlanon.Request` field it sets, its
release-file key (``section.key``), its command-line flag, its help and how a flag's text is
read.

Everything that lists the options is generated from :data:`OPTIONS`: the flags of ``sqlanon
anonymize``/``explain``/``verify`` (:mod:`sqlanon.cli.options`), the keys a release file may
hold (:mod:`sqlanon.request.config`), where a key lives for its error messages
(:data:`KEY_PATHS`), and :func:`sqlanon.cli.words.cli_words`, which says a library message in
the command line's words (``memory_rows=`` as ``--memory-rows``). Adding an option is adding a
row here (a test fails for a Request field or an algorithm argument without one).

>>> OPTIONS_BY_NAME["memory_rows"].toml, OPTIONS_BY_NAME["memory_rows"].flag
('algorithm.memory_rows', '--memory-rows')
>>> section_keys("workload")
('target', 'criterion', 'selections')
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ..model.privacy import MODELS

#: The l-diversity variants (``privacy.diversity``, ``--diversity``); entropy is the default.
DIVERSITIES = ("entropy", "distinct", "recursive")
#: The criteria (``workload.criterion``, ``--criterion``).
CRITERIA = ("median", "infogain", "regression", "selection", "score")
#: The algorithms by name (``algorithm.name``, ``--algorithm``; :data:`sqlanon.algorithms.ALGORITHMS`).
ALGORITHM_NAMES = ("mondrian", "topdown", "genetic", "optimal")
#: Mondrian's strategies by name (``algorithm.strategy``, ``--strategy``).
STRATEGY_NAMES = ("auto", "levels", "sample")


@dataclass(frozen=True)
class Option:
    """One option of a request.

    Attributes:
        name: its name in :class:`~sqlanon.request.config.ReleaseConfig` (and the key of
            :data:`OPTIONS_BY_NAME`).
        field: the :class:`~sqlanon.Request` field it sets (``output`` for the output's parts,
            ``privacy`` for a privacy model's, ``algorithm`` for an algorithm's argument).
        toml: ``section.key`` in a release file (``qi.name``: a key of each ``[[qi]]`` entry).
        flag: the command-line flag (``--k``); ``DB``/``TABLE`` for the positional arguments;
            None for a key only a release file holds.
        help: the flag's help.
        metavar: the flag's value in the help.
        kind: how the flag is read: ``"text"``, ``"int"``, ``"float"``, ``"choice"`` (one of
            :attr:`choices`), ``"list"`` (repeatable; comma-separated names for ``columns``),
            ``"switch"`` (no value).
        choices: the values of a ``"choice"``.
        keyword: the keyword of the Python API that library messages name (``selections=``),
            which :func:`sqlanon.cli.words.cli_words` turns into :attr:`flag`; None: messages do
            not name it as a keyword.
    """

    name: str
    field: str
    toml: str | None
    flag: str | None
    help: str = ""
    metavar: str | None = None
    kind: str = "text"
    choices: tuple[str, ...] = ()
    keyword: str | None = None

    @property
    def section(self) -> str | None:
        return None if self.toml is None else self.toml.split(".", 1)[0]

    @property
    def key(self) -> str | None:
        """Its key inside its section."""
        return None if self.toml is None else self.toml.split(".", 1)[1]

    @property
    def dest(self) -> str:
        """The attribute argparse stores the flag's value under."""
        return self.name

    def argparse_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``add_argument`` for :attr:`flag`."""
        out: dict[str, Any] = {"dest": self.dest, "help": self.help}
        if self.kind == "switch":
            return {**out, "action": "store_true"}
        out["metavar"] = self.metavar
        if self.kind == "int":
            out["type"] = int
        elif self.kind == "float":
            out["type"] = float
        elif self.kind == "choice":
            out["choices"] = self.choices
            out.pop("metavar")
        elif self.kind == "list":
            out.update(action="append", default=[])
        return out


def _models() -> tuple[Option, ...]:
    """The privacy models declared by a key of their own
    (:attr:`~sqlanon.model.privacy.PrivacyModel.spec_key`): ``privacy.<key>``, ``--<key>``."""
    return tuple(Option(m.spec_key, "privacy", f"privacy.{m.spec_key}", f"--{m.spec_key.replace('_', '-')}",
                        m.spec_help, f"COL={m.spec_param.upper()}", "list")
                 for m in MODELS.values() if m.spec_key is not None)


#: The privacy options besides k (shared by anonymize, explain and verify), in help order.
PRIVACY = (
    Option("sensitive", "sensitive", "privacy.sensitive", "--sensitive",
           "sensitive column(s) for l-diversity, with --l (comma-separated, repeatable)", "COLS", "list",
           keyword="sensitive"),
    Option("l", "l", "privacy.l", "--l",
           "l-diversity of each --sensitive column: L >= 1 (an integer for distinct and recursive)", "L", "float",
           keyword="l"),
    Option("diversity", "privacy", "privacy.diversity", "--diversity",
           "which l-diversity: entropy (default: every class's entropy >= ln L), distinct (at least L distinct "
           "values) or recursive (recursive (c,L)-diversity, with --c)", kind="choice", choices=DIVERSITIES),
    Option("c", "privacy", "privacy.c", "--c",
           "with --diversity recursive: in every class the most frequent value occurs fewer than C times as often "
           "as the L-th most frequent and rarer ones together (C > 0)", "C", "float"),
    Option("variance", "privacy", "privacy.variance", "--variance",
           "variance diversity: every class's variance of the numeric column COL is at least V (repeatable)",
           "COL=V", "list"),
    Option("t_closeness", "privacy", "privacy.t_closeness", "--t-closeness",
           "t-closeness: in every class the Earth Mover's Distance of COL's distribution from the whole table's is "
           "at most T; DISTANCE equal (default), ordered, or hierarchical with an ARX hierarchy CSV over COL's "
           "values (repeatable)", "COL:T[:DISTANCE[:HIERARCHY]]", "list"),
    *_models(),
)

#: Every option of a request, in help order (the flags of ``sqlanon anonymize``).
OPTIONS: tuple[Option, ...] = (
    Option("database", "table", "release.database", "DB"),
    Option("table", "table", "release.table", "TABLE"),
    Option("qid", "qid", "qi.name", "--qid", "quasi-identifier columns, comma-separated (repeatable)", "COLS",
           "list"),
    Option("k", "k", "privacy.k", "--k", "every published class holds at least N rows", "N", "int", keyword="k"),
    Option("hierarchy", "hierarchies", "qi.hierarchy", "--hierarchy",
           "ARX hierarchy CSV (or table name) for a categorical QI (repeatable); a release file may name a builder "
           "instead ({ builder = \"intervals\", width = 10 })", "COL=PATH", "list", keyword="hierarchies"),
    Option("view", "output", "release.view", "--view", "name of the published view (default TABLE_anon)", "NAME",
           keyword="view"),
    Option("replace", "output", "release.replace", "--replace",
           "replace an earlier sqlanon release of that name (never any other object), and --out", kind="switch",
           keyword="replace"),
    Option("key", "output", "release.key", "--key",
           "column(s) identifying a source row, comma-separated: the release is a live view that stays fail-closed "
           "while the table changes (default: the table's declared primary or unique key; without one a view of a "
           "snapshot is published)", "COLS", keyword="key"),
    Option("class_column", "output", "release.class_column", "--class-column",
           "name of the equivalence-class column (default eq_class, or eq_class_1 ... if taken)", "NAME",
           keyword="class_column"),
    *PRIVACY,
    Option("model", "privacy", "privacy.model", None,
           "privacy models as the manifest records them ({ type = \"DistinctLDiversity\", sensitive = \"dx\", "
           "l = 2 }): a release file only"),
    Option("target", "target", "workload.target", "--target",
           "workload target(s): class labels (InfoGain) and/or numeric columns (Regression); without --criterion "
           "their types choose, so an integer-coded label means Regression", "COLS", "list", keyword="target"),
    Option("criterion", "algorithm", "workload.criterion", "--criterion",
           "the split criterion: median (no --target), infogain (the --target columns are class labels, whatever "
           "their type), regression (numeric --target columns) or selection (Selection Mondrian: needs --select; "
           "inside the query regions the --target columns choose). With --select, median/infogain/regression are "
           "the criterion inside the query regions. Default: from the --target columns' types, median without them",
           kind="choice", choices=CRITERIA, keyword="criterion"),
    Option("selections", "selections", "workload.selections", "--select",
           "a selection analysts will run, SQL over the QIs, e.g. \"age > 40 AND sex = 'M'\" (repeatable): "
           "Selection Mondrian first minimizes its imprecision", "PREDICATE", "list", keyword="selections"),
    Option("memory_rows", "algorithm", "algorithm.memory_rows", "--memory-rows",
           "finish partitions of at most N rows in memory (0: all in SQL; default: DuckDB memory_limit / 1000 "
           "bytes, 2,000,000 on other engines)", "N", "int", keyword="memory_rows"),
    Option("strategy", "algorithm", "algorithm.strategy", "--strategy",
           "levels: Rothko-T (SQL levels, then in memory); sample: Rothko-S (the tree grown on a seeded sample, the "
           "table repartitioned once, splits that fail on the full data pruned); auto (default): sample when the "
           "table has at least 10M rows and more than 8 times --memory-rows", kind="choice", choices=STRATEGY_NAMES,
           keyword="strategy"),
    Option("sample_rows", "algorithm", "algorithm.sample_rows", "--sample-rows",
           "rows of a Rothko-S sample (default: --memory-rows)", "N", "int", keyword="sample_rows"),
    Option("confidence", "algorithm", "algorithm.confidence", "--confidence",
           "confidence of Rothko-S's hypothesis tests (default 0.95)", "P", "float", keyword="confidence"),
    Option("algorithm", "algorithm", "algorithm.name", "--algorithm",
           "mondrian: multidimensional (the default); topdown: single-dimensional top-down refinement (every QI cut "
           "the same way in every row; --criterion score or infogain with one --target, the LM loss without); "
           "genetic: Iyengar's genetic algorithm; optimal: the optimal full-domain generalization (every QI needs a "
           "--hierarchy)", kind="choice", choices=ALGORITHM_NAMES, keyword="algorithm"),
    Option("qids", "privacy", "privacy.qids", "--qids",
           "with --algorithm topdown: one QID with its own k, e.g. education,sex:4 (repeatable, instead of "
           "--qid/--k)", "COLS:K", "list", keyword="qids"),
    Option("max_steps", "algorithm", "algorithm.max_steps", "--max-steps",
           "with --algorithm topdown: stop after N refinements", "N", "int", keyword="max_steps"),
    Option("max_seconds", "algorithm", "algorithm.max_seconds", "--max-seconds",
           "with --algorithm topdown: stop after S seconds", "S", "float", keyword="max_seconds"),
    Option("published", "published", "release.published", "--published",
           "what an ordered QI's _min/_max publish: data (each class's own extremes, the default), domain (the cut "
           "points; NULL for an open end, so the column's extremes never appear) or hierarchy (a numeric QI's "
           "--hierarchy intervals); COL=MODE per QI (repeatable)", "MODE|COL=MODE", "list", keyword="published"),
    Option("metric", "algorithm", "algorithm.metric", "--metric",
           "what --algorithm genetic (LM, CM) or optimal (also DM, AECS, Loss, Precision, Entropy) minimizes; "
           "default CM with --target, else LM", "M", keyword="metric"),
    Option("suppression", "suppression", "release.suppression", "--suppression",
           "the fraction of rows that may be suppressed (default 0): Mondrian spends it as a local budget down the "
           "tree, --algorithm genetic/optimal as a limit", "F", "float", keyword="suppression"),
    Option("seed", "algorithm", "algorithm.seed", "--seed",
           "the seed of --algorithm genetic and of --strategy sample's sample (default 0)", "N", "int",
           keyword="seed"),
    Option("budget", "algorithm", "algorithm.budget", "--budget", "with --algorithm genetic: stop after S seconds",
           "S", "float", keyword="budget"),
    Option("iterations", "algorithm", "algorithm.iterations", "--iterations",
           "with --algorithm genetic: stop after N iterations", "N", "int", keyword="iterations"),
)

#: :data:`OPTIONS` by name.
OPTIONS_BY_NAME = MappingProxyType({o.name: o for o in OPTIONS})
#: The release-file sections, in the order a release file writes them.
SECTIONS = ("release", "qi", "privacy", "workload", "algorithm")
#: The options whose flags are the command line's own (not ``DB``/``TABLE``, not file-only keys).
FLAGGED = tuple(o for o in OPTIONS if o.flag is not None and o.flag.startswith("--"))
#: The arguments of the algorithm objects (``[algorithm]`` keys but ``name``).
ALGORITHM_KEYS = tuple(o.key for o in OPTIONS if o.section == "algorithm" and o.key != "name")
#: Where each option lives in a release file, by name (for error messages).
KEY_PATHS = MappingProxyType({o.name: o.toml for o in OPTIONS if o.toml is not None})


def section_keys(section: str) -> tuple[str, ...]:
    """The keys of a release-file section, in order."""
    return tuple(o.key for o in OPTIONS if o.section == section)  # type: ignore[misc]


def keyword_flags() -> dict[str, str]:
    """The flag of each keyword of the Python API that library messages name (``view=`` ->
    ``--view``); ``privacy=`` names the flags of the privacy models besides k."""
    out = {o.keyword: o.flag for o in OPTIONS if o.keyword is not None and o.flag is not None}
    out["privacy"] = "/".join(o.flag for o in PRIVACY if o.field == "privacy" and o.kind in ("choice", "list"))
    return out  # type: ignore[return-value]
