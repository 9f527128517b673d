"""Tests for sqlanon.hierarchy: DFS layout, lookups, constructors, errors and the bundled data."""

from __future__ import annotations

import gzip
import uuid
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlanon import load_hierarchy
from sqlanon.errors import HierarchyError
from sqlanon.model.hierarchy import Hierarchy
from tests.support import ADULT_COLUMNS, ADULT_ROWS, is_postgres, load_frame, rows, run

DATA = Path(__file__).resolve().parents[2] / "sqlanon" / "data"

# Pure hierarchy tests take no connection; those reading a hierarchy (or data) from the database
# run on both engines.
pytestmark = pytest.mark.engines("duckdb", "postgres")

# A tree with leaves at depths 1, 2 and 3.
TREE = {"*": {"Europe": ["French", "Greek"],
              "Asia": {"East": ["Chinese", "Japanese"], "India": None},
              "Other": None}}
ROWS = [["French", "Europe", "*"], ["Greek", "Europe", "*"],
        ["Chinese", "East", "Asia", "*"], ["Japanese", "East", "Asia", "*"],
        ["India", "Asia", "*"], ["Other", "*"]]


def q(name: str) -> str:
    """A quoted identifier (DuckDB and PostgreSQL), for test set-up only."""
    return '"' + name.replace('"', '""') + '"'


def frame(rows: list[list[str]]) -> pd.DataFrame:
    """Ragged rows as a frame, short rows padded with None (as a ragged table or CSV loads)."""
    width = max(map(len, rows))
    return pd.DataFrame([r + [None] * (width - len(r)) for r in rows])


def naive_path(h: Hierarchy, node: int) -> list[int]:
    path = [node]
    while h.parent[path[-1]] >= 0:
        path.append(int(h.parent[path[-1]]))
    return path[::-1]


def check_invariants(h: Hierarchy) -> None:
    n = h.n_nodes
    assert h.parent[0] == -1 and h.depth[0] == 0
    assert h.leaf_lo[0] == 0 and h.leaf_hi[0] == h.n_leaves - 1
    for a in (h.parent, h.depth, h.leaf_lo, h.leaf_hi, h.leaf_node, h.ancestors):
        assert a.dtype == np.int32
    assert len(h.labels) == len(h.children) == len(h.parent) == len(h.depth) == n
    assert np.array_equal(h.leaf_node, [i for i in range(n) if not h.children[i]])
    assert h.leaves == tuple(h.labels[i] for i in h.leaf_node)
    assert np.array_equal(h.leaf_lo[h.leaf_node], np.arange(h.n_leaves))
    assert np.array_equal(h.leaf_hi[h.leaf_node], np.arange(h.n_leaves))
    size = [1] * n  # subtree sizes, to check pre-order numbering
    for i in range(n - 1, 0, -1):
        size[h.parent[i]] += size[i]
    for p, kids in enumerate(h.children):
        if not kids:
            continue
        assert kids[0] == p + 1, "pre-order: the first child follows its parent"
        assert all(h.parent[c] == p and h.depth[c] == h.depth[p] + 1 for c in kids)
        assert h.leaf_lo[p] == h.leaf_lo[kids[0]] and h.leaf_hi[p] == h.leaf_hi[kids[-1]]
        for a, b in zip(kids, kids[1:]):  # disjoint, ordered, and together the parent's interval
            assert h.leaf_lo[b] == h.leaf_hi[a] + 1
            assert b == a + size[a], "pre-order: a sibling follows the previous subtree"
    assert len({(h.parent[i], h.labels[i]) for i in range(1, n)}) == n - 1, "siblings unique"
    # ancestors and node_path against a naive parent walk
    assert h.ancestors.shape == (h.n_leaves, int(h.depth.max()) + 1)
    for code, leaf in enumerate(h.leaf_node):
        path = naive_path(h, int(leaf))
        expect = path + [int(leaf)] * (h.ancestors.shape[1] - len(path))
        assert h.ancestors[code].tolist() == expect
        assert h.node_path(int(leaf)) == tuple(h.labels[i] for i in path)


def check_child_of(h: Hierarchy) -> None:
    pairs = [(p, c) for p in range(h.n_nodes) if h.children[p]
             for c in range(h.leaf_lo[p], h.leaf_hi[p] + 1)]
    if not pairs:
        return
    nodes, codes = (np.array(x, dtype=np.int32) for x in zip(*pairs))
    expect = []
    for p, c in pairs:
        path = naive_path(h, int(h.leaf_node[c]))
        expect.append(path[path.index(p) + 1])
    assert h.child_of(nodes, codes).tolist() == expect


# ---- layout ---------------------------------------------------------------------------------


def test_hand_built_tree_arrays() -> None:
    h = Hierarchy.from_dict(TREE)
    assert h.labels == ("*", "Europe", "French", "Greek", "Asia", "East", "Chinese", "Japanese",
                        "India", "Other")
    assert h.parent.tolist() == [-1, 0, 1, 1, 0, 4, 5, 5, 4, 0]
    assert h.depth.tolist() == [0, 1, 2, 2, 1, 2, 3, 3, 2, 1]
    assert h.children == ((1, 4, 9), (2, 3), (), (), (5, 8), (6, 7), (), (), (), ())
    assert h.leaf_lo.tolist() == [0, 0, 0, 1, 2, 2, 2, 3, 4, 5]
    assert h.leaf_hi.tolist() == [5, 1, 0, 1, 4, 3, 2, 3, 4, 5]
    assert h.leaves == ("French", "Greek", "Chinese", "Japanese", "India", "Other")
    assert h.leaf_node.tolist() == [2, 3, 6, 7, 8, 9]
    assert h.ancestors.tolist() == [[0, 1, 2, 2], [0, 1, 3, 3], [0, 4, 5, 6], [0, 4, 5, 7],
                                    [0, 4, 8, 8], [0, 9, 9, 9]]
    assert (h.n_leaves, h.n_nodes, h.height) == (6, 10, 3)
    assert [h.is_leaf(i) for i in range(10)] == [False, False, True, True, False, False,
                                                 True, True, True, True]
    assert h.node_path(7) == ("*", "Asia", "East", "Japanese")
    assert h.node_path(0) == ("*",)
    assert h.child_of(np.array([0, 0, 4, 4, 5]), np.array([5, 3, 4, 2, 3])).tolist() == \
        [9, 4, 8, 5, 7]
    assert h.to_rows() == ROWS
    check_invariants(h)
    check_child_of(h)
    with pytest.raises(ValueError):
        h.parent[0] = 3  # arrays are read-only


def test_same_label_under_two_parents_is_two_nodes() -> None:
    h = Hierarchy.from_rows([["a", "Other", "X", "*"], ["b", "Other", "Y", "*"],
                             ["c", "Other", "X", "*"]])
    assert h.labels == ("*", "X", "Other", "a", "c", "Y", "Other", "b")
    assert h.leaves == ("a", "c", "b")  # DFS order, not row order
    assert h.code_of(["a", "b", "c"]).tolist() == [0, 2, 1]
    check_invariants(h)


def test_single_node_hierarchy() -> None:
    h = Hierarchy.from_rows([["*"]])
    assert (h.labels, h.leaves, h.ancestors.tolist(), h.height) == (("*",), ("*",), [[0]], 0)
    n = h.with_null_leaf()
    assert n.labels == ("*", None, "*") and n.leaves == (None, "*")
    check_invariants(n)


def test_code_of_and_missing() -> None:
    h = Hierarchy.from_rows([[str(a), "young" if a < 40 else "old", "*"] for a in range(17, 91)]
                            + [["1", "*"], ["True", "*"]])
    assert h.code_of(["17", 17, 17.0, np.float64(17.0), np.int64(17), Decimal("17"),
                      Decimal("17.0")]).tolist() == [0] * 7
    assert h.code_of([39.5, " 17", "017", None, float("nan"), pd.NA, 16]).tolist() == [-1] * 7
    assert h.code_of([1, True, 1.0, "True"]).tolist() == [74, 75, 74, 75]
    assert h.code_of(pd.Series([90.0, 18.0])).tolist() == [73, 1]
    assert h.code_of([]).dtype == np.int32
    assert h.missing([17, 39.5, "x", None, 5, "x", 18.0, float("nan")]) == \
        [None, "39.5", "5", "x"]
    assert h.missing(range(17, 91)) == []


def test_with_null_leaf_shifts_codes() -> None:
    h = Hierarchy.from_dict(TREE)
    n = h.with_null_leaf()
    assert n.has_null_leaf and not h.has_null_leaf
    assert n.labels == ("*", None) + h.labels[1:]
    assert n.children[0] == (1, 2, 5, 10) and n.children[1] == ()
    assert n.leaves == (None,) + h.leaves
    assert n.code_of(list(h.leaves)).tolist() == (h.code_of(list(h.leaves)) + 1).tolist()
    assert n.code_of([None, float("nan"), "French"]).tolist() == [0, 0, 1]
    assert h.code_of([None]).tolist() == [-1]
    assert n.missing([None, "French"]) == [] and h.missing([None, "French"]) == [None]
    assert n.parent.tolist() == [-1, 0] + [p + 1 if p > 0 else 0 for p in h.parent[1:]]
    assert n.ancestors[1:, :].tolist() == [[a + (a > 0) for a in r] for r in h.ancestors.tolist()]
    assert n.node_path(8) == h.node_path(7)
    assert n.with_null_leaf() is n
    check_invariants(n)
    check_child_of(n)


# ---- constructors -----------------------------------------------------------------------------


def test_constructors_agree(tmp_path: Path) -> None:
    expect = Hierarchy.from_dict(TREE)
    assert Hierarchy.from_rows(ROWS) == expect
    assert Hierarchy.from_rows(tuple(map(tuple, ROWS))) == expect
    assert Hierarchy.from_rows([[f"  {c}\t" for c in r] for r in ROWS]) == expect

    csv_text = "\n".join(";".join(r) for r in ROWS)
    variants = {"plain.csv": csv_text + "\n", "crlf.csv": csv_text.replace("\n", "\r\n"),
                "bom.csv": "\ufeff" + csv_text, "comma.csv": csv_text.replace(";", ","),
                "blank_end.csv": csv_text + "\n\n\n"}
    for name, text in variants.items():
        (tmp_path / name).write_bytes(text.encode("utf-8"))
        assert Hierarchy.from_csv(tmp_path / name) == expect, name
        assert load_hierarchy(tmp_path / name) == expect, name
        assert load_hierarchy(str(tmp_path / name)) == expect, name
    (tmp_path / "tab.csv").write_text(csv_text.replace(";", "\t"))
    assert Hierarchy.from_csv(tmp_path / "tab.csv", sep="\t") == expect

    df = frame(ROWS)
    assert df.shape == (6, 4) and df.isna().any(axis=None)
    assert Hierarchy.from_dataframe(df) == expect
    assert load_hierarchy(df) == expect

    assert load_hierarchy(ROWS) == expect and load_hierarchy(tuple(ROWS)) == expect
    assert load_hierarchy(TREE) == expect and load_hierarchy(expect) is expect
    assert Hierarchy.from_dict(TREE["*"]) == expect  # several top-level keys: implicit "*"


def test_tables_and_views_agree(con) -> None:
    """A table or view named in the connection (read through the engine) is the same hierarchy;
    the name binds as the engine binds it in SQL."""
    expect = Hierarchy.from_dict(TREE)
    name = 'my "hier" table'
    load_frame(con, name, frame(ROWS).set_axis(["leaf", "l1", "l2", "l3"], axis=1),
               types={c: "VARCHAR" for c in ("leaf", "l1", "l2", "l3")})
    assert rows(con, f"SELECT count(*) FROM {q(name)} WHERE l3 IS NULL") == [(4,)]  # ragged: NULLs
    assert load_hierarchy(name, con) == expect
    # PostgreSQL: a schema outside the fixture's own, created in the open transaction (never
    # committed) and rolled back below; the suffix keeps it apart from any other test's.
    schema = "sch ema" + (f" {uuid.uuid4().hex[:8]}" if is_postgres(con) else "")
    run(con, f"CREATE SCHEMA {q(schema)}")
    try:
        run(con, f"CREATE VIEW {q(schema)}.{q('v')} AS SELECT * FROM {q(name)}")
        assert load_hierarchy(f"{schema}.v", con) == expect
        run(con, f"CREATE TABLE {q('a.b')} AS SELECT * FROM {q(name)}")
        assert load_hierarchy("a.b", con) == expect  # the whole name wins over schema.table
    finally:
        if is_postgres(con):
            con.rollback()


def test_table_with_integer_leaves_matches_double_data(con) -> None:
    i = np.arange(12)
    load_frame(con, "h", pd.DataFrame({"leaf": i[:10].astype(np.int32),
                                       "band": np.where(i[:10] < 5, "low", "high"), "root": "*"}))
    load_frame(con, "d", pd.DataFrame({"x": i.astype(float)}))
    h = load_hierarchy("h", con)
    assert h.leaves == tuple(str(i) for i in range(10))
    data = [r[0] for r in rows(con, "SELECT x FROM d ORDER BY x")]
    assert all(isinstance(v, float) for v in data)
    assert h.code_of(data).tolist() == list(range(10)) + [-1, -1]
    assert h.missing(data) == ["10.0", "11.0"]


def test_from_dict_shapes() -> None:
    assert Hierarchy.from_dict({"x": None}).labels == ("x",)
    assert Hierarchy.from_dict({"a": None, "b": None}).labels == ("*", "a", "b")
    h = Hierarchy.from_dict({"*": {"a": ("1", "2"), "b": {"3": None}, 4: [5.0]}})
    assert h.labels == ("*", "a", "1", "2", "b", "3", "4", "5")


# ---- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("rows", "parts"), [
    ([], ["empty hierarchy"]),
    ([["a", "*"], []], ["row 2 is empty"]),
    ([["a", "*"], [None, None]], ["row 2 is empty"]),
    ([["a", "*"], ["", "*"]], ["row 2, column 1 is empty"]),
    ([["a", "*"], ["b", None, "*"]], ["row 2, column 2 is empty"]),
    ([["a", "*"], ["b", float("nan"), "*"]], ["row 2, column 2 is empty"]),
    ([["a", "x", "*"], ["b", " \t", "*"]], ["row 2, column 2", "whitespace"]),
    ([["a", "*"], ["b", "*"], ["c", "Root"]], ["row 3", "'Root'", "'*'", "root"]),
    ([["a", "x", "*"], ["b", "*"], ["a", "y", "*"]], ["row 3", "'a'", "twice", "row 1"]),
    ([["a", "*"], [" a ", "*"]], ["row 2", "'a'", "twice"]),
    ([["Europe", "*"], ["b", "*"], ["French", "Europe", "*"]],
     ["row 3", "'Europe'", "row 1", "* > Europe"]),
    ([["French", "Europe", "*"], ["b", "*"], ["Europe", "*"]],
     ["row 3", "'Europe'", "row 1", "* > Europe"]),
    ([["a", "*"], ["*"]], ["row 2", "'*'", "row 1"]),
])
def test_row_errors(rows: list, parts: list[str]) -> None:
    with pytest.raises(HierarchyError) as e:
        Hierarchy.from_rows(rows)
    for p in parts:
        assert p in str(e.value), (p, str(e.value))


def test_file_and_frame_errors(tmp_path: Path) -> None:
    f = tmp_path / "bad.csv"
    f.write_text("a;x;*\nb;y;*\na;z;*\n")
    with pytest.raises(HierarchyError, match=r"bad\.csv: hierarchy row 3: leaf 'a' is listed twice"):
        Hierarchy.from_csv(f)
    f.write_text("a;x;*\n\nb;y;*\n")
    with pytest.raises(HierarchyError, match="row 2 is empty"):
        load_hierarchy(f)
    f.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(HierarchyError, match="cannot read hierarchy file"):
        Hierarchy.from_csv(f)
    with pytest.raises(HierarchyError, match="nope.csv' does not exist"):
        load_hierarchy(tmp_path / "nope.csv")
    with pytest.raises(HierarchyError, match="no columns"):
        Hierarchy.from_dataframe(pd.DataFrame())
    with pytest.raises(HierarchyError, match="row 2, column 1 is empty"):
        load_hierarchy(pd.DataFrame([["a", "*"], [None, "*"]]))


@pytest.mark.parametrize(("tree", "parts"), [
    ({}, ["empty hierarchy"]),
    ({"*": {"a": []}}, ["* > a", "no children"]),
    ({"*": {"a": {}}}, ["* > a", "no children"]),
    ({"*": {"a": 5}}, ["* > a", "int"]),
    ({"*": ["x", ["y"]]}, ["*", "leaf values only"]),
    ({"*": {"a": ["x"], "b": ["x"]}}, ["'x'", "twice", "row 2"]),
    ({"*": {"a": ["x", None]}}, ["row 2, column 1 is empty"]),
])
def test_dict_errors(tree: dict, parts: list[str]) -> None:
    with pytest.raises(HierarchyError) as e:
        Hierarchy.from_dict(tree)
    for p in parts:
        assert p in str(e.value), (p, str(e.value))


def test_load_errors(tmp_path: Path) -> None:
    with pytest.raises(HierarchyError, match=r"from a int; expected a Hierarchy.*DataFrame"):
        load_hierarchy(42)
    with pytest.raises(HierarchyError, match="list of rows"):
        load_hierarchy(["a", "b"])
    with pytest.raises(HierarchyError, match=r"'nowhere' is neither an existing file nor a "
                                             r"table or view \(no connection"):
        load_hierarchy("nowhere")


def test_load_errors_from_the_connection(con) -> None:
    for name in ["nowhere", "x'; DROP TABLE t; --", 'a"b', "s.t", "a.b.c.d"]:
        with pytest.raises(HierarchyError, match="neither an existing file nor a table or view "
                                                 r"\(the connection has no table"):
            load_hierarchy(name, con)
    run(con, "CREATE TABLE dup AS SELECT * FROM (VALUES ('a', '*'), ('a', '*')) t(l, r)")
    with pytest.raises(HierarchyError, match="table 'dup': hierarchy row 2: leaf 'a'"):
        load_hierarchy("dup", con)


# ---- bundled data -------------------------------------------------------------------------------


def test_bundled_adult_csv_header() -> None:
    data = pd.read_csv(DATA / "adult.csv.gz", sep=";", dtype=str, keep_default_na=False)
    assert list(data.columns) == list(ADULT_COLUMNS) and len(data) == ADULT_ROWS


def test_bundled_adult_hierarchies_cover_the_data(adult) -> None:
    con = adult.con
    assert rows(con, "SELECT count(*) FROM adult") == [(ADULT_ROWS,)]
    leaves = {"age": 100, "education": 16, "marital-status": 7, "native-country": 41,
              "occupation": 14, "race": 5, "salary-class": 2, "sex": 2, "workclass": 8}
    for col in ADULT_COLUMNS:
        h = load_hierarchy(adult.hierarchies[col])
        assert h == load_hierarchy(DATA / f"adult_hierarchy_{col}.csv")
        assert h.labels[0] == "*" and h.n_leaves == leaves[col], col
        check_invariants(h)
        check_child_of(h)
        values = [r[0] for r in rows(con, f"SELECT DISTINCT {q(col)} FROM adult")]
        assert h.missing(values) == [], col
        assert (h.code_of(values) >= 0).all(), col
    age = load_hierarchy(str(DATA / "adult_hierarchy_age.csv"))
    doubles = [r[0] for r in rows(con, "SELECT DISTINCT CAST(age AS DOUBLE PRECISION) FROM adult")]
    assert doubles and all(isinstance(v, float) for v in doubles)
    assert (age.code_of(doubles) >= 0).all()
    assert age.node_path(int(age.leaf_node[age.code_of([39])[0]])) == \
        ("*", "20-39", "30-39", "35-39", "39")


def test_bundled_files() -> None:
    lines = {f: gzip.decompress((DATA / f).read_bytes()).decode().splitlines()
             for f in ("adult.csv.gz", "adult.data.gz", "adult.test.data.gz")}
    assert len(lines["adult.csv.gz"]) == 30163
    assert sum(1 for x in lines["adult.data.gz"] if x) == 32561
    assert sum(1 for x in lines["adult.test.data.gz"] if x) == 16281
    assert (DATA / "README.md").is_file()
    assert sum(p.stat().st_size for p in DATA.iterdir()) < 2_000_000


# ---- property-based -----------------------------------------------------------------------------

_shapes = st.recursive(st.none(), lambda ch: st.lists(ch, min_size=1, max_size=4), max_leaves=25)


@st.composite
def trees(draw: st.DrawFn) -> dict:
    counter = iter(range(10_000))

    def to_dict(shape: list) -> dict | list:
        if all(s is None for s in shape) and draw(st.booleans()):
            return [f"L{next(counter)}" for _ in shape]
        # inner labels repeat across parents ("n0" under many nodes): identity is the path
        return {(f"L{next(counter)}" if s is None else f"n{i}"): (None if s is None else to_dict(s))
                for i, s in enumerate(shape)}

    shape = draw(_shapes)
    return {"root": None if shape is None else to_dict(shape)}


def naive_leaves(tree: dict) -> list[str]:
    out = []
    for k, v in tree.items():
        out += [k] if v is None else list(v) if isinstance(v, list) else naive_leaves(v)
    return out


@settings(max_examples=150, deadline=None)
@given(trees())
def test_random_trees_round_trip(tree: dict) -> None:
    h = Hierarchy.from_dict(tree)
    assert list(h.leaves) == naive_leaves(tree)
    rows = h.to_rows()
    assert Hierarchy.from_rows(rows) == h
    assert Hierarchy.from_dataframe(frame(rows)) == h
    assert h.code_of(list(h.leaves)).tolist() == list(range(h.n_leaves))
    check_invariants(h)
    check_child_of(h)
    n = h.with_null_leaf()
    assert n.code_of(list(h.leaves)).tolist() == list(range(1, h.n_leaves + 1))
    check_invariants(n)
    check_child_of(n)


# ---- a stored hierarchy reads back exactly (issue 49, part 4) ------------------------------------
_LABEL = st.text(st.characters(blacklist_categories=("Cs",)), max_size=4)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_LABEL, _LABEL), min_size=1, max_size=8, unique_by=lambda p: p[1]))
def test_verbatim_rows_rebuild_any_labels(pairs) -> None:
    # leaves are any text (empty, spaces, ``*``, newlines), and so are the groups above them
    tree: dict = {}
    for group, leaf in pairs:
        tree.setdefault(group, {})[leaf] = {}
    h = Hierarchy._build("*", tree)
    assert Hierarchy.from_rows(h.to_rows(), verbatim=True) == h
    assert Hierarchy.from_rows([[leaf, group, "*"] for group, leaf in pairs], verbatim=True) == h


def test_verbatim_keeps_what_loading_strips_and_refuses() -> None:
    rows = [["", "*"], ["  ", "*"], [" a ", "*"]]
    with pytest.raises(HierarchyError, match="row 1, column 1 is empty"):
        Hierarchy.from_rows(rows)
    h = Hierarchy.from_rows(rows, verbatim=True)
    assert h.leaves == ("", "  ", " a ") and h.code_of(["  ", " a", " a "]).tolist() == [1, -1, 2]
    # the structure is still checked, and a stored cell is text
    with pytest.raises(HierarchyError, match="listed twice"):
        Hierarchy.from_rows([["", "*"], ["", "*"]], verbatim=True)
    with pytest.raises(HierarchyError, match="not a label"):
        Hierarchy.from_rows([["a", None, "*"]], verbatim=True)


def test_labels_sqlanon_adds_are_no_value_of_the_column() -> None:
    from sqlanon.model.hierarchy import unused_label
    from sqlanon.request.single import flat_hierarchy
    from sqlanon.singledim.cuts import disclosure_hierarchy

    assert unused_label("*", ["a"]) == "*" and unused_label("*", ["*", "**"]) == "***"
    assert flat_hierarchy(["*", "a"]).labels == ("**", "*", "a")
    # "⊥" disclosed while other values stay hidden: the hidden group is a node of its own
    h, code = disclosure_hierarchy(["⊥", "*", "b", "c"], np.array([True, True, False, False]))
    assert h.labels == ("**", "⊥", "*", "⊥⊥", "b", "c")
    assert [h.leaves[c] for c in code] == ["⊥", "*", "b", "c"]
    assert Hierarchy.from_rows(h.to_rows(), verbatim=True) == h
