"""TOML release files: the schema, path resolution, and errors that name the key path."""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

import duckdb
import pytest

import sqlanon
from sqlanon.request.config import MAX_CONFIG_BYTES, ConfigError, QIConfig, ReleaseConfig, load_config

HIERARCHY = "x0;low;*\nx1;low;*\nx2;low;*\nx3;high;*\nx4;high;*\n"

FULL = """
[release]
database = "data/h.duckdb"
table = "people"
view = "people_public"
replace = true

[[qi]]
name = "age"

[[qi]]
name = "city"
hierarchy = "hier/city.csv"

[privacy]
k = 7

[algorithm]
memory_rows = 50
"""

MINIMAL = """
[release]
table = "people"

[[qi]]
name = "age"

[privacy]
k = 5
"""


def write(folder: Path, text: str, name: str = "release.toml") -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_full_release_file(tmp_path):
    (tmp_path / "hier").mkdir()
    (tmp_path / "hier" / "city.csv").write_text(HIERARCHY)
    config = load_config(write(tmp_path, FULL))
    assert config == ReleaseConfig(
        table="people",
        qis=(QIConfig("age"), QIConfig("city", str(tmp_path / "hier" / "city.csv"))),
        k=7,
        database=str(tmp_path / "data" / "h.duckdb"),  # relative to the TOML file's folder
        view="people_public",
        replace=True,
        algorithm=(("memory_rows", 50),),
    )
    assert config.qid == ("age", "city")
    assert sqlanon.Request.from_toml(tmp_path / "release.toml") == sqlanon.Request(
        "people", ["age", "city"], 7, hierarchies={"city": str(tmp_path / "hier" / "city.csv")},
        algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=50)),
        output=sqlanon.Output("people_public", replace=True))


def test_minimal_release_file_uses_the_library_defaults(tmp_path):
    config = load_config(write(tmp_path, MINIMAL))
    assert config.database is None
    assert sqlanon.Request.from_toml(tmp_path / "release.toml") == sqlanon.Request("people", ["age"], 5)


def test_paths_resolve_against_the_file_not_the_working_directory(tmp_path, monkeypatch):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "city.csv").write_text(HIERARCHY)
    write(tmp_path / "conf", MINIMAL.replace('"people"', '"in/*.parquet"').replace(
        'name = "age"', 'name = "age"\n\n[[qi]]\nname = "city"\nhierarchy = "city.csv"'))
    monkeypatch.chdir(tmp_path)
    config = load_config(Path("conf") / "release.toml")
    assert config.table == str(tmp_path / "conf" / "in" / "*.parquet")  # files: resolved too
    assert config.hierarchies == {"city": str(tmp_path / "conf" / "city.csv")}


def test_a_release_file_runs(tmp_path):
    (tmp_path / "city.csv").write_text(HIERARCHY)
    con = duckdb.connect()
    con.execute("CREATE TABLE people AS SELECT i AS id, i % 90 AS age, 'x' || (i % 5) AS city FROM range(300) t(i)")
    text = MINIMAL.replace('name = "age"', 'name = "age"\n\n[[qi]]\nname = "city"\nhierarchy = "city.csv"')
    release = sqlanon.Request.from_toml(write(tmp_path, text)).run(con)
    assert release.k_achieved >= 5 and release.hierarchies == "people_anon_hierarchies"


@pytest.mark.parametrize(
    "edit, message",
    [
        (("k = 5", 'k = "ten"'), 'privacy.k: must be an integer >= 1, got "ten"'),
        (("k = 5", "k = 0"), "privacy.k: must be an integer >= 1, got 0"),
        (("k = 5", "k = 2.5"), "privacy.k: must be an integer >= 1, got 2.5"),
        (("k = 5", "k = true"), "privacy.k: must be an integer >= 1, got true"),
        (("k = 5", "kk = 5"), "privacy.kk: unknown key. Did you mean 'k'?"),
        (("k = 5", "k = 5\nl = 2"), "privacy.sensitive: sensitive and l go together"),
        (("k = 5", "k = 5\nsensitive = 'disease'"), "privacy.l: sensitive and l go together"),
        (("k = 5", "k = 5\nt = 0.2"), "privacy.t: t-closeness is written t_closeness = { column = t }"),
        (("k = 5", "k = 5\nt_closeness = { d = 0.2, e = { t = 0.1, distance = 'hierarchical' } }"),
         "privacy.t_closeness.e: hierarchy goes with distance"),
        (("k = 5", "k = 5\nc = 2"), "privacy.c: c is the c of recursive (c,l)-diversity: it needs diversity recursive"),
        (("k = 5", "k = 5\nsensitive = 'd'\nl = 2\nc = 0\ndiversity = 'recursive'"),
         "privacy.c: must be a number > 0, got 0"),
        (("k = 5", "k = 5\nsensitive = 'd'\nl = 2\ndiversity = 'recursive'"),
         "privacy.c: diversity recursive needs c (recursive (c,l)-diversity)"),
        (("k = 5", "k = 5\nsensitive = 'd'\nl = 1.5\ndiversity = 'distinct'"),
         "privacy.l: l must be an integer for distinct l-diversity, got 1.5"),
        (("k = 5", "k = 5\ndiversity = 'distinct'"), "privacy.diversity: diversity distinct needs sensitive and l"),
        (("k = 5", "k = 5\nsensitive = 'd'\nl = 2\ndiversity = 'entropie'"),
         'privacy.diversity: must be one of entropy, distinct, recursive, got "entropie". Did you mean \'entropy\'?'),
        (("k = 5", "k = 5\nvariance = 3"), "privacy.variance: must be a table of column = smallest variance"),
        (("k = 5", "k = 5\nvariance = { salary = -1 }"), "privacy.variance.salary: must be a number >= 0, got -1"),
        (("[privacy]", "[workload]\ncriterion = 'info'\ntarget = 'y'\n[privacy]"),
         'workload.criterion: must be one of median, infogain, regression, selection, score, got "info". Did you mean '
         "'infogain'?"),
        (("[privacy]", "[workload]\ncriterion = 'median'\ntarget = 'y'\n[privacy]"),
         "workload.criterion: criterion median takes no target"),
        (("[privacy]", "[workload]\ncriterion = 'infogain'\n[privacy]"),
         "workload.criterion: criterion infogain needs target columns"),
        (("[privacy]", "[workload]\ncriterion = 'selection'\ntarget = 'y'\n[privacy]"),
         "workload.criterion: criterion selection needs selections"),
        (("[privacy]", "[criterion]\nx = 1\n[privacy]"), "criterion: not a section: write it as workload.criterion"),
        (("k = 5", "k = 5\nsensitive = 'd'\nl = 0.5"), "privacy.l: must be a number >= 1"),
        (("[privacy]\nk = 5", ""), "privacy: missing"),
        (("[privacy]\nk = 5", "[privacy]"), "privacy.k: missing"),
        (("[privacy]", "[privcy]"), "privcy: unknown section. Did you mean 'privacy'?"),
        (("[privacy]", "[constraints]\nl = 2\n[privacy]"), "constraints: not a section: constraints are keys of [privacy]"),
        (("[privacy]", "[workload]\nselections = 3\n[privacy]"), "workload.selections: must be a list of SQL predicates, got 3"),
        (("[privacy]", "[workload]\nselections = ['a > 1', 2]\n[privacy]"),
         "workload.selections[2]: must be a non-empty SQL predicate string, got 2"),
        (("[privacy]", "[workload]\nselections = ['a > 1', ' ']\n[privacy]"),
         'workload.selections[2]: must be a non-empty SQL predicate string, got " "'),
        (("[privacy]", "[workload]\nselection = ['a > 1']\n[privacy]"),
         "workload.selection: unknown key. Did you mean 'selections'?"),
        (("[privacy]", "[selections]\nx = 1\n[privacy]"), "selections: not a section: write it as workload.selections"),
        (("[privacy]", "[workload]\ntarget = 3\n[privacy]"), "workload.target: must be a column name"),
        (('table = "people"', 'tabel = "people"'), "release.tabel: unknown key. Did you mean 'table'?"),
        (('table = "people"', 'view = "v"'), "release.table: missing"),
        (('table = "people"', 'table = ""'), 'release.table: must be a non-empty string, got ""'),
        (('table = "people"', "table = 3"), "release.table: must be a non-empty string, got 3"),
        (('table = "people"', 'table = "people"\nreplace = "yes"'), 'release.replace: must be true or false, got "yes"'),
        (('table = "people"', 'table = "people"\nmemory_rows = 50'),
         "release.memory_rows: moved: the algorithm's arguments go under [algorithm]"),
        (('table = "people"', 'table = "people"\nrecoding = "single"'), "release.recoding: moved"),
        (("[privacy]", "[algorithm]\nstrategy = { name = 'sample' }\n[privacy]"), "algorithm.strategy: must be a string"),
        (('table = "people"', 'table = "people"\nview = ["a"]'), "release.view: must be a non-empty string, got an array"),
        (('[release]\ntable = "people"', 'release = "people"'), "release: must be a table ([release]), got \"people\""),
        (('[[qi]]\nname = "age"', ""), "qi: missing"),
        (('name = "age"', 'nam = "age"'), "qi[1].nam: unknown key. Did you mean 'name'?"),
        (('name = "age"', 'hierarchy = "h.csv"'), "qi[1].name: missing"),
        (('name = "age"', 'name = "age"\n[[qi]]\nname = "age"'), 'qi[2].name: "age" is already declared as qi[1]'),
        (('name = "age"', 'name = "age"\n[[qi]]\nname = "city"\nhierarchy = "nope.csv"'),
         "qi[2].hierarchy: file not found: nope.csv"),
        (("k = 5", "k = 5\n[oops"), "not valid TOML"),
    ],
)
def test_errors_name_the_key_path(tmp_path, edit, message):
    old, new = edit
    assert old in MINIMAL
    path = write(tmp_path, MINIMAL.replace(old, new, 1))
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert message in str(info.value)
    assert str(info.value).startswith(f"{path}: ")  # the file comes first
    assert "\n" not in str(info.value)  # one line: the CLI prints it as is


@pytest.mark.parametrize("value, message", [
    ("[]", "qi: empty: declare at least one [[qi]] entry"),
    ('"age"', 'qi: must be an array of tables ([[qi]] entries), got "age"'),
    ('["age"]', "qi: must be an array of tables ([[qi]] entries), got an array"),
])
def test_qi_must_be_entries(tmp_path, value, message):
    text = f"qi = {value}\n" + MINIMAL.replace('[[qi]]\nname = "age"', "")  # top-level keys come first
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config(write(tmp_path, text))


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="release file not found"):
        load_config(tmp_path / "nope.toml")


def _loaded_within(path, seconds: float = 20.0) -> BaseException:
    """The error ``load_config(path)`` raises, failing the test if it does not return in time
    (a FIFO would block its open, a device its read, forever)."""
    outcome: list[BaseException] = []

    def load() -> None:
        try:
            load_config(path)
        except BaseException as e:  # the test inspects it
            outcome.append(e)

    worker = threading.Thread(target=load, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"load_config({str(path)!r}) did not return"
    assert outcome, "no error"
    return outcome[0]


def test_a_release_file_is_a_small_regular_file(tmp_path):
    """Issue 49: --config /dev/zero read until the kernel killed the process; a FIFO blocked.
    Only regular files are read, and at most MAX_CONFIG_BYTES of them."""
    fifo = tmp_path / "pipe.toml"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/zero"), tmp_path):
        error = _loaded_within(path)
        assert isinstance(error, ConfigError) and "not a regular file" in str(error), error
    big = write(tmp_path, MINIMAL + "#" * MAX_CONFIG_BYTES, "big.toml")
    with pytest.raises(ConfigError, match=f"larger than {MAX_CONFIG_BYTES:,} bytes"):
        load_config(big)
    assert load_config(write(tmp_path, MINIMAL + "#" * (MAX_CONFIG_BYTES - len(MINIMAL) - 1), "edge.toml")).k == 5
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"[release]\ntable = \"\xff\"\n")
    with pytest.raises(ConfigError, match="not a UTF-8 text file"):
        load_config(binary)


def test_deeply_nested_arrays_are_a_config_error(tmp_path):
    """Issue 49: 10,000 nested arrays gave a RecursionError traceback (tomllib recurses)."""
    path = write(tmp_path, '[release]\ntable = "t"\nx = ' + "[" * 10_000 + "]" * 10_000 + "\n")
    with pytest.raises(ConfigError, match="nested too deeply"):
        load_config(path)


def test_errors_never_quote_the_file(tmp_path):
    """A file that is not a release file (here a password file) is refused without its lines."""
    path = tmp_path / "passwd"
    path.write_text("root:x:0:0:secret-gecos:/root:/bin/bash\nalice:x:1000:1000:another-secret:/home:/bin/sh\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert "secret" not in str(info.value) and "bin/bash" not in str(info.value)


def test_config_errors_are_input_errors():
    assert issubclass(ConfigError, sqlanon.InputError) and issubclass(ConfigError, sqlanon.SqlanonError)


def test_workload_keys_reach_the_request(tmp_path):
    path = tmp_path / "r.toml"
    path.write_text('[release]\ntable = "t"\n[[qi]]\nname = "a"\n[privacy]\nk = 5\nsensitive = "s"\nl = 2\n'
                    '[workload]\ntarget = ["y", "z"]\n')
    request = sqlanon.Request.from_toml(path)
    assert (request.sensitive, request.l, request.target) == (("s",), 2.0, ("y", "z"))
    path.write_text('[release]\ntable = "t"\n[[qi]]\nname = "a"\n[privacy]\nk = 5\n')
    request = sqlanon.Request.from_toml(path)
    assert (request.sensitive, request.l, request.target, request.privacy) == (None, None, None, ())


def test_selections_reach_the_request(tmp_path):
    path = tmp_path / "r.toml"
    path.write_text('[release]\ntable = "t"\n[[qi]]\nname = "a"\n[privacy]\nk = 5\n'
                    '[workload]\nselections = ["a > 1 AND a < 5", "a = 7"]\n')
    config = load_config(path)
    assert config.selections == ("a > 1 AND a < 5", "a = 7")
    assert sqlanon.Request.from_toml(path).selections == ("a > 1 AND a < 5", "a = 7")
    path.write_text(path.read_text().replace('["a > 1 AND a < 5", "a = 7"]', '"a > 1"'))  # one predicate
    assert sqlanon.Request.from_toml(path).selections == ("a > 1",)


def test_selections_from_a_release_file_run(tmp_path):
    """The predicates are parsed by anonymize against the QIs: a bad one fails before any write."""
    con = duckdb.connect()
    con.execute("CREATE TABLE people AS SELECT i AS id, i % 90 AS age, i % 7 AS zip FROM range(400) t(i)")
    text = MINIMAL.replace('name = "age"', 'name = "age"\n[[qi]]\nname = "zip"') + \
        '[workload]\nselections = ["age > 40 AND zip = 3"]\n'
    release = sqlanon.Request.from_toml(write(tmp_path, text)).run(con)
    assert release.selections == ("age > 40 AND zip = 3",) and release.k_achieved >= 5
    bad = text.replace("zip = 3", "id = 3").replace('table = "people"', 'table = "people"\nview = "bad"')
    with pytest.raises(sqlanon.InputError, match="id"):
        sqlanon.Request.from_toml(write(tmp_path, bad)).run(con)
    assert con.execute("SELECT count(*) FROM duckdb_views() WHERE view_name = 'bad'").fetchone()[0] == 0


def test_every_constraint_and_criterion_reaches_the_request(tmp_path):
    """The l-diversity variants, variance diversity and a named criterion become the API's
    objects: entropy through sensitive=/l=, the others through privacy= and the algorithm's
    criterion."""
    path = tmp_path / "r.toml"
    head = '[release]\ntable = "t"\n[[qi]]\nname = "a"\n[privacy]\nk = 5\n'
    cases = [
        ('sensitive = ["s", "u"]\nl = 3\ndiversity = "distinct"\n',
         {"privacy": [sqlanon.DistinctLDiversity("s", 3), sqlanon.DistinctLDiversity("u", 3)]}),
        ('sensitive = "s"\nl = 2\ndiversity = "recursive"\nc = 1.5\n',
         {"privacy": [sqlanon.RecursiveCLDiversity("s", 1.5, 2)]}),
        ('sensitive = "s"\nl = 2.5\ndiversity = "entropy"\nvariance = { x = 4, "odd name" = 0.5 }\n',
         {"sensitive": ["s"], "l": 2.5,
          "privacy": [sqlanon.VarianceDiversity("x", 4.0), sqlanon.VarianceDiversity("odd name", 0.5)]}),
        ('[workload]\ntarget = "y"\ncriterion = "infogain"\n', {"algorithm": sqlanon.Mondrian(sqlanon.InfoGain("y"))}),
        ('[workload]\ntarget = ["y", "z"]\ncriterion = "regression"\n',
         {"algorithm": sqlanon.Mondrian(sqlanon.Regression("y", "z"))}),
        ('[workload]\ncriterion = "median"\nselections = "a > 1"\n',
         {"algorithm": sqlanon.Mondrian(sqlanon.Median()), "selections": ["a > 1"]}),
        ('[workload]\ntarget = "y"\ncriterion = "selection"\nselections = "a > 1"\n',
         {"target": ["y"], "selections": ["a > 1"]}),
    ]
    for text, expected in cases:
        path.write_text(head + text)
        assert sqlanon.Request.from_toml(path) == sqlanon.Request("t", ["a"], 5, **expected), text
    path.write_text(head + 'sensitive = "s"\nl = 2\ndiversity = "recursive"\nc = 3\nvariance = { x = 1 }\n')
    assert load_config(path).constraints == [sqlanon.RecursiveCLDiversity("s", 3.0, 2), sqlanon.VarianceDiversity("x", 1.0)]


def test_key_and_class_column_in_a_release_file(tmp_path):
    path = tmp_path / "r.toml"
    path.write_text('[release]\ntable = "t"\nkey = ["id", "part"]\nclass_column = "grp"\n'
                    '[[qi]]\nname = "age"\n[privacy]\nk = 5\n')
    config = load_config(path)
    assert config.key == ("id", "part") and config.class_column == "grp"
    output = sqlanon.Request.from_toml(path).output
    assert output.key == ("id", "part") and output.class_column == "grp"
    path.write_text('[release]\ntable = "t"\nkey = []\n[[qi]]\nname = "age"\n[privacy]\nk = 5\n')
    with pytest.raises(sqlanon.InputError, match="release.key"):
        load_config(path)


def test_a_request_round_trips_through_a_release_file(tmp_path):
    """kwargs -> Request -> TOML -> Request: the same value, for every algorithm and the privacy
    models, the output, the workload and the generalization options."""
    (tmp_path / "city.csv").write_text(HIERARCHY)
    city = str(tmp_path / "city.csv")
    requests = [
        sqlanon.Request("people", ["age", "city"], 50, hierarchies={"city": city}),
        sqlanon.Request("people", qid=["age", "zip", "sex"], k=50, suppression=0.01, target="readmitted",
                        privacy=[sqlanon.EntropyLDiversity("diagnosis", 3), sqlanon.TCloseness("diagnosis", 0.2),
                                 sqlanon.DistinctLDiversity("drug", 2), sqlanon.VarianceDiversity("cost", 1e6),
                                 sqlanon.RecursiveCLDiversity("diagnosis", 1.5, 2)],
                        algorithm=sqlanon.Mondrian(strategy=sqlanon.Sample(rows=1_000_000, confidence=0.9, seed=3)),
                        published={"age": "domain"}, selections=["age > 40"],
                        output=sqlanon.Output("public", replace=True, key=["id"], class_column="grp")),
        sqlanon.Request("people", ["age", "zip"], 10, sensitive="diagnosis", l=3,
                        algorithm=sqlanon.Mondrian(sqlanon.InfoGain("readmitted"), sqlanon.Levels(memory_rows=1000))),
        sqlanon.Request("adult", ["age", "city"], 10, hierarchies={"city": city}, algorithm=sqlanon.Optimal(metric="Loss")),
        sqlanon.Request("adult", ["age", "city"], 100, hierarchies={"city": city}, suppression=0.02,
                        algorithm=sqlanon.Genetic(metric="CM", budget=60, seed=4), target="salary"),
        sqlanon.Request("cup", hierarchies={"city": city},
                        algorithm=sqlanon.TopDown(sqlanon.Score("donor"), max_steps=100, max_seconds=5.0),
                        privacy=[sqlanon.KAnonymity(30, qid=["city", "age"]), sqlanon.KAnonymity(10, qid=["age", "state"])]),
    ]
    for i, request in enumerate(requests):
        path = tmp_path / f"r{i}.toml"
        request.to_toml(path)
        assert sqlanon.Request.from_toml(path) == request, path.read_text()
    with pytest.raises(sqlanon.InputError, match="not a file"):
        sqlanon.Request("t", ["a"], 5, hierarchies={"a": {"*": ["x"]}}).to_toml(tmp_path / "bad.toml")


def test_the_flat_keywords_name_the_object_that_takes_them():
    """Each keyword of the earlier API is refused with one line naming its object, before any
    work (no connection is even looked at)."""
    expected = {"recoding": "TopDown", "search": "Optimal", "metric": "Genetic(metric=", "budget": "Genetic(budget=",
                "iterations": "Genetic(iterations=", "strategy": "Mondrian(strategy=", "sample_rows": "Sample(rows=",
                "confidence": "Sample(confidence=", "qids": "KAnonymity(k, qid=", "max_steps": "TopDown(max_steps=",
                "max_seconds": "TopDown(max_seconds=", "criterion": "Mondrian(criterion)", "constraints": "privacy=",
                "memory_rows": "Levels(memory_rows=", "seed": "Sample(seed=", "view": "Output(view=",
                "replace": "replace=True", "key": "key=", "class_column": "class_column="}
    for name, named in expected.items():
        with pytest.raises(sqlanon.RemovedOptionError) as info:
            sqlanon.anonymize(object(), "t", ["a"], 5, **{name: 1})
        assert named in str(info.value) and "\n" not in str(info.value), (name, str(info.value))
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        sqlanon.anonymize(object(), "t", ["a"], 5, colour=1)
