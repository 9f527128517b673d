"""One schema (sqlanon/request/schema.py): every Request field and every algorithm argument has
a CLI flag and a release-file key; the parser's flags, the release file's keys and cli_words
are the schema's; a request survives kwargs -> Request -> TOML -> Request."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import sqlanon as sa
from sqlanon.algorithms import ALGORITHMS
from sqlanon.cli import FLAGS, build_parser, cli_words
from sqlanon.model.privacy import MODELS
from sqlanon.request import schema
from sqlanon.request.config import SCHEMA, ReleaseConfig

#: The flags a command has besides the request's (the command line's own).
OWN_FLAGS = {"-h", "--help", "--config", "--out", "--json", "--quiet", "--engine", "--spark-master", "--spark-conf"}


def _flags(command: str) -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return {s for action in sub.choices[command]._actions for s in action.option_strings}


def test_every_request_field_has_a_flag_and_a_key():
    fed = {o.field for o in schema.OPTIONS if o.flag is not None and o.toml is not None}
    missing = {f.name for f in dataclasses.fields(sa.Request)} - fed
    assert not missing, f"Request fields without an option in sqlanon/request/schema.py: {missing}"


def test_every_algorithm_argument_has_a_flag_and_a_key():
    assert schema.ALGORITHM_NAMES == tuple(ALGORITHMS)
    arguments = {key for kind in ALGORITHMS.values() for key in kind.keys()}
    assert arguments == set(schema.ALGORITHM_KEYS), "an algorithm argument without an option (or an option of none)"
    for key in arguments:
        option = schema.OPTIONS_BY_NAME[key]
        assert option.toml == f"algorithm.{key}" and option.flag == f"--{key.replace('_', '-')}"


def test_every_privacy_model_with_a_key_of_its_own_has_an_option():
    keyed = {m.spec_key for m in MODELS.values() if m.spec_key is not None}
    assert keyed and keyed <= set(schema.OPTIONS_BY_NAME)
    for key in keyed:
        assert schema.OPTIONS_BY_NAME[key].toml == f"privacy.{key}"


def test_the_parsers_flags_are_the_schemas():
    request_flags = {o.flag for o in schema.FLAGGED}
    for command in ("anonymize", "explain"):
        assert _flags(command) - OWN_FLAGS == request_flags, command
    privacy = {o.flag for o in schema.PRIVACY}
    assert privacy | {"--qid", "--k", "--class-column"} == _flags("verify") - OWN_FLAGS


def test_the_release_files_keys_are_the_schemas():
    listed = dict(SCHEMA)
    for section in ("release", "privacy", "workload"):
        assert listed[f"[{section}]"] == schema.section_keys(section)
    assert listed["[[qi]]"] == schema.section_keys("qi") == ("name", "hierarchy")
    names = {f.name for f in dataclasses.fields(ReleaseConfig)}
    for option in schema.OPTIONS:  # every option lands in a ReleaseConfig field (or a record of one)
        assert option.toml is not None and option.section in schema.SECTIONS, option
        assert (option.name in names or option.section in ("qi", "algorithm")
                or option.name in ("model", *(m.spec_key for m in MODELS.values()))), option


def test_every_release_file_key_has_a_reader():
    from sqlanon.request.config import _READERS, READ_APART

    for option in schema.OPTIONS:
        assert option.section == "algorithm" or (option.name in _READERS) != (option.name in READ_APART), option


def test_cli_words_names_every_flag_of_a_keyword():
    assert FLAGS["selections"] == "--select" and FLAGS["hierarchies"] == "--hierarchy"
    for option in schema.OPTIONS:
        if option.keyword is None:
            continue
        assert cli_words(f"pass {option.keyword}=x here") == f"pass {option.flag} x here", option
    assert cli_words("max_steps must be at least 1") == "--max-steps must be at least 1"


# -- round trip: kwargs -> Request -> TOML -> Request ----------------------------------------------------
NAMES = st.sampled_from(["age", "zip", "sex", "city", "date of birth", "ünï"])
COLUMNS = st.lists(NAMES, min_size=1, max_size=4, unique=True)
NUMBERS = st.floats(0.5, 50, allow_nan=False).map(lambda x: round(x, 3))
LS = st.floats(1, 20, allow_nan=False).map(lambda x: round(x, 3))

BUILDERS = st.one_of(
    st.builds(lambda w, f: sa.hierarchies.builder("intervals", width=w, fanout=f), NUMBERS,
              st.one_of(st.integers(2, 5), st.lists(st.integers(2, 4), min_size=1, max_size=3))),
    st.builds(lambda b: sa.hierarchies.builder("quantiles", bins=b), st.integers(1, 20)),
    st.builds(lambda o: sa.hierarchies.builder("ordering", order=o),
              st.lists(st.text("abcxyz", min_size=1, max_size=3), min_size=1, max_size=4, unique=True)),
    st.builds(lambda m, s: sa.hierarchies.builder("masking", mask=m, step=s), st.sampled_from("*#x"),
              st.integers(1, 3)),
    st.builds(lambda lv: sa.hierarchies.builder("dates", levels=lv),
              st.sampled_from([["month", "year"], ["quarter", "decade", "century"], ["year"]])),
)
MODELS_OF = st.one_of(
    st.builds(sa.DistinctLDiversity, NAMES, st.integers(1, 5)),
    st.builds(sa.EntropyLDiversity, NAMES, LS),
    st.builds(sa.RecursiveCLDiversity, NAMES, NUMBERS, st.integers(1, 4)),
    st.builds(sa.VarianceDiversity, NAMES, NUMBERS),
    st.builds(sa.TCloseness, NAMES, st.floats(0, 1).map(lambda x: round(x, 3))),
    st.builds(sa.DeltaDisclosure, NAMES, NUMBERS),
    st.builds(sa.BetaLikeness, NAMES, NUMBERS, st.booleans()),
)
CRITERIA = st.sampled_from([None, sa.Median(), sa.InfoGain("label"), sa.Regression("income")])
ALGORITHM = st.one_of(
    st.just(None),
    st.builds(sa.Mondrian, CRITERIA, st.one_of(
        st.just("auto"), st.builds(sa.Levels, st.one_of(st.none(), st.integers(0, 10**6))),
        st.builds(sa.Sample, st.one_of(st.none(), st.integers(1, 10**6)), st.sampled_from([0.9, 0.95, 0.99]),
                  st.integers(0, 9), st.one_of(st.none(), st.integers(0, 10**6))))),
    st.builds(sa.TopDown, st.sampled_from([None, sa.Score("label"), sa.InfoGain("label")]),
              st.one_of(st.none(), st.integers(1, 100)), st.one_of(st.none(), NUMBERS)),
    st.builds(lambda m, b, i, s: sa.Genetic(m, *((b, None) if i is None else (None, i)), s),  # budget or iterations
              st.sampled_from([None, "LM", "CM"]), st.one_of(st.none(), NUMBERS),
              st.one_of(st.none(), st.integers(1, 100)), st.integers(0, 9)),
    st.builds(sa.Optimal, st.sampled_from([None, "LM", "DM", "Loss"])),
)


@st.composite
def requests(draw) -> dict:
    qid = draw(COLUMNS)
    kwargs: dict = {"qid": qid, "k": draw(st.integers(1, 100)), "privacy": []}
    if draw(st.booleans()):  # several QIDs, each with its k, instead of k: together they cover the QIs
        first = draw(st.lists(st.sampled_from(qid), min_size=1, unique=True))
        kwargs["k"], kwargs["privacy"] = None, [sa.KAnonymity(draw(st.integers(1, 30)), qid=first)]
        if set(first) != set(qid):
            rest = [q for q in qid if q not in first]
            kwargs["privacy"].append(sa.KAnonymity(draw(st.integers(1, 30)), qid=rest + first[:1]))
    if draw(st.booleans()):
        kwargs["privacy"] += draw(st.lists(MODELS_OF, max_size=3, unique=True))
    if draw(st.booleans()):
        kwargs["sensitive"], kwargs["l"] = draw(st.lists(NAMES, min_size=1, max_size=2, unique=True)), draw(LS)
    if draw(st.booleans()):
        kwargs["suppression"] = draw(st.floats(0, 0.99).map(lambda x: round(x, 4)))
    kwargs["algorithm"] = draw(ALGORITHM)
    if draw(st.booleans()) and (kwargs["algorithm"] is None or kwargs["algorithm"].criterion is None):
        kwargs["target"] = draw(st.lists(st.sampled_from(["label", "income"]), min_size=1, unique=True))
    if draw(st.booleans()):
        kwargs["hierarchies"] = {q: draw(BUILDERS) for q in draw(st.lists(st.sampled_from(qid), unique=True))}
    if draw(st.booleans()):
        kwargs["published"] = draw(st.one_of(st.sampled_from(["data", "domain", "hierarchy"]),
                                             st.fixed_dictionaries({qid[0]: st.sampled_from(["domain", "data"])})))
    if draw(st.booleans()):
        kwargs["selections"] = draw(st.lists(st.sampled_from(["age > 40", "sex = 'M' AND age < 30"]), min_size=1,
                                             unique=True))
    if draw(st.booleans()):
        kwargs["output"] = sa.Output(draw(st.sampled_from([None, "public", "people anon"])), draw(st.booleans()),
                                     draw(st.sampled_from([None, "id", ("id", "site")])),
                                     draw(st.sampled_from([None, "cls"])))
    return kwargs


@settings(max_examples=150, deadline=None)
@given(requests())
def test_a_request_survives_its_release_file(kwargs):
    request = sa.Request("people", **kwargs)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "release.toml")
        request.to_toml(path)
        assert sa.Request.from_toml(path) == request, path.read_text()


# -- every flag overrides its release-file key --------------------------------------------------------
#: A value of each flag and what the request it builds then holds (a flag without a row here fails).
S = ["--sensitive", "s", "--l", "2"]
SAMPLES = {
    "qid": (["--qid", "a,b"], lambda c: c.qid == ("a", "b")),
    "k": (["--k", "7"], lambda c: c.k == 7),
    "hierarchy": (["--hierarchy", "a=h.csv"], lambda c: c.hierarchies == {"a": "h.csv"}),
    "view": (["--view", "v"], lambda c: c.view == "v"),
    "replace": (["--replace"], lambda c: c.replace is True),
    "key": (["--key", "id,x"], lambda c: c.key == ("id", "x")),
    "class_column": (["--class-column", "cls"], lambda c: c.class_column == "cls"),
    "sensitive": (S, lambda c: c.sensitive == ("s",)),
    "l": (["--sensitive", "s", "--l", "2.5"], lambda c: c.l == 2.5),
    "diversity": ([*S, "--diversity", "distinct"], lambda c: c.diversity == "distinct"),
    "c": ([*S, "--diversity", "recursive", "--c", "3"], lambda c: c.c == 3),
    "variance": (["--variance", "s=4"], lambda c: c.variance == (("s", 4.0),)),
    "t_closeness": (["--t-closeness", "s:0.2"], lambda c: c.t_closeness == (("s", 0.2, "equal", None),)),
    "delta_disclosure": (["--delta-disclosure", "s=1.5"], lambda c: c.models == (sa.DeltaDisclosure("s", 1.5),)),
    "beta_likeness": (["--beta-likeness", "s=1"], lambda c: c.models == (sa.BetaLikeness("s", 1.0),)),
    "target": (["--target", "y"], lambda c: c.target == ("y",)),
    "criterion": (["--criterion", "median"], lambda c: c.criterion == "median"),
    "selections": (["--select", "a > 1"], lambda c: c.selections == ("a > 1",)),
    "memory_rows": (["--memory-rows", "10"], lambda c: dict(c.algorithm).get("memory_rows") == 10),
    "strategy": (["--strategy", "sample"], lambda c: dict(c.algorithm).get("strategy") == "sample"),
    "sample_rows": (["--sample-rows", "9"], lambda c: dict(c.algorithm).get("sample_rows") == 9),
    "confidence": (["--confidence", "0.9"], lambda c: dict(c.algorithm).get("confidence") == 0.9),
    "algorithm": (["--algorithm", "genetic"], lambda c: dict(c.algorithm) == {"name": "genetic"}),
    "qids": (["--qids", "a,b:3", "--qids", "c,a:4"], lambda c: c.qids == ((("a", "b"), 3), (("c", "a"), 4))),
    "max_steps": (["--max-steps", "3"], lambda c: dict(c.algorithm).get("max_steps") == 3),
    "max_seconds": (["--max-seconds", "1.5"], lambda c: dict(c.algorithm).get("max_seconds") == 1.5),
    "published": (["--published", "domain"], lambda c: c.published == "domain"),
    "metric": (["--metric", "LM"], lambda c: dict(c.algorithm).get("metric") == "LM"),
    "suppression": (["--suppression", "0.1"], lambda c: c.suppression == 0.1),
    "seed": (["--seed", "4"], lambda c: dict(c.algorithm).get("seed") == 4),
    "budget": (["--budget", "2"], lambda c: dict(c.algorithm).get("budget") == 2.0),
    "iterations": (["--iterations", "5"], lambda c: dict(c.algorithm).get("iterations") == 5),
}
FILE = '[release]\ntable = "t"\nview = "w"\n[[qi]]\nname = "a"\n[[qi]]\nname = "b"\n[[qi]]\nname = "c"\n[privacy]\nk = 5\n'


def test_every_flag_has_a_sample_here():
    assert set(SAMPLES) == {o.name for o in schema.FLAGGED}


def test_every_flag_overrides_its_release_file_key(tmp_path):
    from sqlanon.cli.request import request_of_args

    path = tmp_path / "release.toml"
    path.write_text(FILE)
    base = request_of_args(build_parser().parse_args(["anonymize", "--config", str(path)]))
    assert (base.table, base.qid, base.k, base.view) == ("t", ("a", "b", "c"), 5, "w")
    for name, (argv, holds) in SAMPLES.items():
        request = request_of_args(build_parser().parse_args(["anonymize", "--config", str(path), *argv]))
        assert holds(request), (name, request)
        assert not holds(base), name  # the file alone does not hold it: the flag did it
