"""``replace=True`` drops only what an earlier release owns, never what a forged manifest names.

A release's manifest is a table comment, which anyone who can create a table can write. So a
manifest counts only when it and every object it names agree with a release sqlanon publishes
under the view's name (:mod:`sqlanon.request.owned`): names derived from the view, the rules'
columns from its QIs, the row map's and the hierarchies' columns, a view reading both. A forged
manifest naming any other table never causes it to be dropped, on DuckDB and PostgreSQL.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon import ObjectExistsError
from sqlanon.engine import engine_for
from sqlanon.request.owned import owned
from tests.support import is_postgres, make_people, objects, quote, rows, run

pytestmark = pytest.mark.engines("duckdb", "postgres")

VIEW = "x"
DERIVED = {"view": VIEW, "rules": f"{VIEW}_rules", "rowmap": f"{VIEW}_rowmap", "hierarchies": f"{VIEW}_hierarchies"}
VICTIMS = ("victim_a", "victim_b")
#: ``(name, type)`` of the tables a release of one QI ``age`` (of ``kind``) creates.
RULES = {"numeric": [("region", "BIGINT"), ("size", "BIGINT"), ("age_min", "BIGINT"), ("age_max", "BIGINT"),
                     ("age_lo", "BIGINT"), ("age_hi", "BIGINT"), ("age_null", "BOOLEAN")],
         "hierarchy": [("region", "BIGINT"), ("size", "BIGINT"), ("age", "VARCHAR"), ("age_node", "INTEGER")]}
ROWMAP = [("key0", "BIGINT"), ("region", "BIGINT"), ("rhash", "BIGINT")]
HIERARCHIES = [("qi", "VARCHAR"), ("leaf", "BIGINT"), ("level", "BIGINT"), ("label", "VARCHAR")]
WRONG = [("a", "INTEGER")]


@pytest.fixture
def people(con):
    make_people(con, 100)
    for victim in VICTIMS:
        run(con, f"CREATE TABLE {victim} AS SELECT 42 AS precious")
    return con


def _table(con, name: str, columns: list[tuple[str, str]]) -> None:
    run(con, f"CREATE TABLE {quote(name)} ({', '.join(f'{quote(c)} {t}' for c, t in columns)})")


def _document(kind: str = "numeric", **names) -> dict:
    """A manifest of a release of one QI ``age``, with the object names ``names`` (default: derived)."""
    named = {**DERIVED, "hierarchies": DERIVED["hierarchies"] if kind == "hierarchy" else None, **names}
    return {"sqlanon": 2, "source": "people", **named, "materialized": False, "k": 5,
            "qid": [{"name": "age", "kind": kind, "type": "BIGINT", "has_null": False}],
            "constraints": ["k-anonymity(k=5)"], "constraint_records": [{"type": "KAnonymity", "k": 5}],
            "criterion": "median", "criterion_record": {"type": "Median"}, "selections": [], "key": ["id"],
            "key_declared": True, "guarded": ["age"], "source_relation": None,
            "source_columns": ["id", "age", "zip", "city", "salary"],
            "columns": {"class": "eq_class", "region": "region", "size": "size"}}


def _forge(con, document: dict, rules: list[tuple[str, str]]) -> None:
    """Create ``x_rules`` with ``rules`` columns and ``document`` as its comment."""
    _table(con, DERIVED["rules"], rules)
    text = json.dumps(document).replace("'", "''")
    run(con, f"COMMENT ON TABLE {quote(DERIVED['rules'])} IS '{text}'")


def _intact(con) -> None:
    for victim in VICTIMS:
        assert rows(con, f"SELECT precious FROM {victim}") == [(42,)], victim


def _replace(con) -> sqlanon.Release:
    return sqlanon.anonymize(con, "people", qid=["age"], k=5, output=sqlanon.Output(view=VIEW, replace=True))


@pytest.mark.parametrize("key", ["rules", "rowmap", "hierarchies", "view"])
def test_a_forged_manifest_naming_another_table_drops_nothing(people, key):
    """The manifest on ``x_rules`` names a victim as one of the release's objects: refused, and
    nothing is dropped -- the victim least of all."""
    _forge(people, _document(**{key: VICTIMS[0]}), RULES["numeric"])
    before = objects(people)
    with pytest.raises(ObjectExistsError, match=f"names '{VICTIMS[0]}' as the release's {key}") as info:
        _replace(people)
    assert "not an object of a sqlanon release named 'x'" in str(info.value)
    assert objects(people) == before
    _intact(people)


def test_a_forged_manifest_on_a_table_of_another_shape_drops_nothing(people):
    """Names derived from the view, but ``x_rules`` is not a rules table: it is not dropped."""
    _forge(people, _document(), WRONG)
    before = objects(people)
    with pytest.raises(ObjectExistsError, match=r"whose columns \['a'\] are not those of a release's rules"):
        _replace(people)
    assert objects(people) == before


@pytest.mark.parametrize("what", ["rowmap", "view"])
def test_a_consistent_manifest_never_covers_a_table_of_the_callers(people, what):
    """A well-formed rules table and manifest, but ``x_rowmap`` (or ``x``) is the caller's own table."""
    _forge(people, _document(), RULES["numeric"])
    _table(people, DERIVED[what], WRONG)
    before = objects(people)
    with pytest.raises(ObjectExistsError, match="not taken as a sqlanon release's"):
        _replace(people)
    assert objects(people) == before


def test_a_genuine_release_is_still_replaced(people):
    first = sqlanon.anonymize(people, "people", qid=["age", "city"], k=5,
                              hierarchies={"city": {"*": [f"x{i}" for i in range(5)]}}, output=VIEW)
    assert first.view == VIEW
    second = _replace(people)
    assert sqlanon.verify(people, second.view, ["age"], 5).ok
    assert DERIVED["hierarchies"] not in {o[2] for o in objects(people)}  # the release's own, dropped
    _intact(people)


GENUINE = {
    "live": dict(qid=["age", "zip"]),
    "snapshot": dict(table="plain", qid=["age", "zip"]),
    "hierarchy": dict(qid=["age", "city"], hierarchies={"city": {"*": [f"x{i}" for i in range(5)]}}),
    "suppression": dict(qid=["age", "zip"], suppression=0.05),
    "single": dict(qid=["age", "city"], algorithm=sqlanon.TopDown(),
                   hierarchies={"city": {"*": [f"x{i}" for i in range(5)]}}),
    "published domain": dict(qid=["age", "zip"], published="domain"),
    "renamed columns": dict(table="odd", qid=["age", "region"], output={"class_column": "cls"},
                            hierarchies={"region": {"*": [f"x{i}" for i in range(5)]}}),
}


@pytest.mark.parametrize("options", GENUINE.values(), ids=GENUINE.keys())
def test_every_kind_of_release_owns_its_objects(people, options):
    """What sqlanon publishes is consistent with its manifest, whatever the release: every object
    is owned, so replace=True replaces it (with a hierarchical QI ``region``, the rules' region
    column is ``region_1``: the manifest records it)."""
    run(people, "CREATE TABLE plain AS SELECT * FROM people")
    run(people, "CREATE TABLE odd AS SELECT id, age, city AS region, zip AS size FROM people")
    options = {"table": "people", "k": 5, **options}
    output = options.pop("output", {})
    first = sqlanon.anonymize(people, **options, output=sqlanon.Output(view=VIEW, **output))
    engine = engine_for(people)
    found = owned(engine, engine.objects(), VIEW)
    expected = {first.view, first.rules, f"{VIEW}_rowmap"} | ({DERIVED["hierarchies"]} if "hierarchies" in options else set())
    assert (found.names, found.refused) == (expected, None)
    if options["table"] == "odd":
        assert rows(people, f"SELECT region_1 FROM {first.rules} LIMIT 0") == []
    again = sqlanon.anonymize(people, **options, output=sqlanon.Output(view=VIEW, replace=True, **output))
    assert again.verification.ok
    _intact(people)


def _clean(con) -> None:
    """Drop what an example created (PostgreSQL keeps one schema for all of a test's examples)."""
    mine = set(DERIVED.values())
    for _, _, name, kind in sorted(objects(con), key=lambda o: o[3] != "view"):  # views first
        if name in mine:
            run(con, f"DROP {kind.upper()} {quote(name)}" + (" CASCADE" if is_postgres(con) else ""))


#: Ways a forged manifest departs from a release sqlanon publishes as ``x`` (any one suffices to own nothing).
DEVIATIONS = ("view names another", "rules names another", "rowmap names another", "hierarchies names another",
              "hierarchies without a hierarchical QI", "rules shape", "rowmap shape", "hierarchies shape",
              "view is a table", "view reads another")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["numeric", "hierarchy"]), deviations=st.sets(st.sampled_from(DEVIATIONS), max_size=3),
       victim=st.sampled_from(VICTIMS), rowmap=st.booleans(), hierarchies=st.booleans(), view=st.booleans())
def test_forged_manifests_never_drop_what_the_release_does_not_own(people, kind, deviations, victim, rowmap,
                                                                  hierarchies, view):
    """Any forged manifest over any objects (``rowmap``, ``hierarchies``, ``view``: whether the
    object of that derived name exists): the victims survive, a refusal changes nothing, and
    only a manifest consistent in every object lets ``replace=True`` drop the view's own names."""
    con = people
    hierarchical = kind == "hierarchy"
    if not hierarchical:
        deviations = deviations - {"hierarchies shape"}  # nothing names a hierarchies table to check
    names = {k: victim for k in ("view", "rules", "rowmap", "hierarchies") if f"{k} names another" in deviations}
    if "hierarchies without a hierarchical QI" in deviations:
        names.setdefault("hierarchies", None if hierarchical else DERIVED["hierarchies"])
    rowmap = rowmap or "rowmap shape" in deviations
    view = view or bool({"view is a table", "view reads another"} & deviations)
    hierarchies = hierarchies or "hierarchies shape" in deviations
    try:
        _forge(con, _document(kind, **names), WRONG if "rules shape" in deviations else RULES[kind])
        if rowmap:
            _table(con, DERIVED["rowmap"], WRONG if "rowmap shape" in deviations else ROWMAP)
        if hierarchies:
            _table(con, DERIVED["hierarchies"], WRONG if "hierarchies shape" in deviations else HIERARCHIES)
        if "view is a table" in deviations:
            _table(con, VIEW, WRONG)
        elif view:
            read = [VICTIMS[0]] if "view reads another" in deviations or not rowmap else [DERIVED["rules"], DERIVED["rowmap"]]
            run(con, f"CREATE VIEW {VIEW} AS SELECT 1 AS one FROM " + ", ".join(quote(r) for r in read))
        consistent = not deviations and (not view or rowmap)
        event("replaced" if consistent else "refused")
        before = objects(con)
        if consistent:
            _replace(con)
            gone = {o[2] for o in before - objects(con)}
            assert gone <= ({DERIVED["hierarchies"]} if hierarchical else set())
        else:
            with pytest.raises(ObjectExistsError, match="not an object of a sqlanon release"):
                _replace(con)
            assert objects(con) == before
        _intact(con)
    finally:
        _clean(con)
