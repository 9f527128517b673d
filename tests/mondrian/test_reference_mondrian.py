"""Tests of the Mondrian oracle (tests/support/reference_mondrian.py).

Three kinds of evidence, each able to fail on its own:

* properties checked on many tiny inputs (exhaustively and with hypothesis): the regions
  partition the rows, every region has >= k rows, and every region is final -- no allowed split
  exists on any attribute, recomputed here independently of the oracle's code;
* hand-worked examples with exact expected regions (NULLs, ties, an empty hierarchy child);
* the simple oracle and the fast numpy version agree on random matrices.
"""

from __future__ import annotations

import datetime as dt
import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from tests.support.reference_mondrian import reference_mondrian, reference_mondrian_fast, reference_regions

# A 3-level hierarchy; 'mx' and 'it' are leaves the data below rarely or never contain.
GEO = [
    ["us", "america", "*"],
    ["ca", "america", "*"],
    ["mx", "america", "*"],
    ["de", "europe", "*"],
    ["fr", "europe", "*"],
    ["it", "europe", "*"],
    ["jp", "asia", "*"],
]


def regions(*groups: list[int]) -> set[frozenset[int]]:
    return {frozenset(g) for g in groups}


def from_labels(labels: np.ndarray) -> set[frozenset[int]]:
    return {frozenset(np.flatnonzero(labels == lab).tolist()) for lab in np.unique(labels)}


# ----------------------------------------------------------------------------- properties
def _is_null(v: object) -> bool:
    return v is None or (isinstance(v, float) and v != v)


def _has_allowed_split(values: list, k: int, hierarchy: list[list[str]] | None) -> bool:
    """Whether a region whose column holds `values` could still be split on that column.

    Written independently of the oracle: an ordered column can be cut if some threshold leaves
    >= k rows on both sides (NULL sorts first). A hierarchical column is split at the lowest
    common ancestor of its values' leaves (a final region's node must be that ancestor: at any
    higher node all rows fall into one child, which is an allowed split); the split is allowed
    iff that ancestor is not a leaf and each of its children that receives rows gets >= k.
    """
    n = len(values)
    if hierarchy is None:
        keys = [(0,) if _is_null(v) else (1, v) for v in values]
        return any(k <= sum(key <= t for key in keys) <= n - k for t in set(keys))
    paths = {row[0]: tuple(reversed(row)) for row in hierarchy}
    root = (hierarchy[0][-1],)
    leaf_paths = [root + (None,) if _is_null(v) else paths[str(v)] for v in values]
    depth = 0
    while all(len(p) > depth and p[depth] == leaf_paths[0][depth] for p in leaf_paths):
        depth += 1  # leaf_paths[0][:depth] is the lowest common ancestor
    if depth == len(leaf_paths[0]):
        return False  # all rows share one leaf
    counts: dict[object, int] = {}
    for p in leaf_paths:
        counts[p[depth]] = counts.get(p[depth], 0) + 1
    return all(c >= k for c in counts.values())


def check_properties(
    df: pd.DataFrame, qid: list[str], k: int, hierarchies: dict | None = None
) -> set[frozenset[int]]:
    hierarchies = hierarchies or {}
    result = reference_mondrian(df, qid, k, hierarchies)
    rows = [r for region in result for r in region]
    assert sorted(rows) == list(range(len(df))), "regions must partition the rows"
    for region in result:
        assert len(region) >= k
        for col in qid:
            values = [df[col].iloc[i] for i in sorted(region)]
            assert not _has_allowed_split(values, k, hierarchies.get(col)), (col, sorted(region))
    return result


@pytest.mark.parametrize("k", [1, 2, 3])
def test_exhaustive_one_ordered_column_with_nulls(k: int) -> None:
    for n in range(k, 6):
        for values in itertools.product([None, 0, 1, 2], repeat=n):
            check_properties(pd.DataFrame({"x": pd.Series(values, dtype=object)}), ["x"], k)


def test_exhaustive_two_ordered_columns() -> None:
    cells = list(itertools.product([None, 0, 1], [0, 5]))
    for n in range(1, 5):
        for rows in itertools.product(cells, repeat=n):
            df = pd.DataFrame(rows, columns=["x", "y"], dtype=object)
            for k in range(1, min(n, 2) + 1):
                check_properties(df, ["x", "y"], k)
                check_properties(df, ["y", "x"], k)


def test_exhaustive_one_hierarchical_column() -> None:
    for n in range(1, 5):
        for values in itertools.product([None, "us", "ca", "de", "jp"], repeat=n):
            df = pd.DataFrame({"g": pd.Series(values, dtype=object)})
            for k in range(1, min(n, 2) + 1):
                check_properties(df, ["g"], k, {"g": GEO})


@st.composite
def mixed_tables(draw: st.DrawFn) -> tuple[pd.DataFrame, list[str], int]:
    """Small tables mixing every domain kind, with NULLs, in a random QI order."""
    n = draw(st.integers(1, 30))

    def column(values: list) -> pd.Series:
        return pd.Series(draw(st.lists(st.sampled_from(values), min_size=n, max_size=n)),
                         dtype=object)  # fmt: skip

    day = dt.date(2020, 1, 1)
    df = pd.DataFrame({
        "i": column([None, -3, 0, 1, 2, 40]),
        "f": column([0.5, 1.0, 1.25, 9.0]),
        "s": column([None, "a", "b", "c"]),
        "b": column([True, False]),
        "d": column([None, day, day + dt.timedelta(1), day + dt.timedelta(300)]),
        "t": column([dt.datetime(2020, 1, 1, 0, 0, s) for s in (0, 1, 59)]),
        "g": column([None, "us", "ca", "fr", "de", "jp"]),
    })  # fmt: skip
    qid = draw(st.permutations(list(df.columns)))[: draw(st.integers(1, 7))]
    return df, list(qid), draw(st.integers(1, min(n, 5)))


@settings(max_examples=150, deadline=None)
@given(mixed_tables())
def test_properties_on_mixed_tables(table: tuple[pd.DataFrame, list[str], int]) -> None:
    df, qid, k = table
    check_properties(df, qid, k, {"g": GEO} if "g" in qid else None)


# ----------------------------------------------------------------------------- hand-worked
def test_balanced_cuts_down_to_pairs() -> None:
    # 8 codes: L = 4 is the most balanced cut, then L = 2 in each half; 2 rows cannot split.
    df = pd.DataFrame({"x": [5, 1, 8, 3, 2, 7, 4, 6]})
    assert reference_mondrian(df, ["x"], 2) == regions([1, 4], [3, 6], [0, 7], [5, 2])


def test_equal_width_goes_to_the_first_qi() -> None:
    df = pd.DataFrame({"a": [0, 0, 1, 1], "b": [0, 1, 0, 1]})
    # Both have w = 1; the first in qid is cut, after which neither can be cut with k = 2.
    assert reference_mondrian(df, ["a", "b"], 2) == regions([0, 1], [2, 3])
    assert reference_mondrian(df, ["b", "a"], 2) == regions([0, 2], [1, 3])


def test_equally_balanced_cuts_go_to_the_lower_cut() -> None:
    # counts 1:3, 2:1, 3:3 (n = 7): L = 3 and L = 4 both have |2L - n| = 1 -> the lower cut.
    df = pd.DataFrame({"x": [1, 1, 1, 2, 3, 3, 3]})
    assert reference_mondrian(df, ["x"], 3) == regions([0, 1, 2], [3, 4, 5, 6])


def test_null_sits_one_average_gap_below_the_minimum() -> None:
    # x: values {0, 1, 10}, so num(NULL) = 0 - (10 - 0) / 2 = -5 and x spans 15.
    # Root: both w = 1, x first; counts NULL:2, 0:1, 1:1, 10:4 -> L = 4 (x <= 1).
    # Node rows 0-3: w_x = (1 - (-5)) / 15 = 0.4 < w_y = 5 / 10 = 0.5 -> cut y.
    # (Ranking by codes would give w_x = 2/3 and cut x into {0,1}, {2,3} instead.)
    # Node rows 4-7: x is constant -> cut y.
    df = pd.DataFrame({"x": [None, None, 0, 1, 10, 10, 10, 10], "y": [0, 5, 0, 5, 0, 10, 0, 10]})
    assert reference_mondrian(df, ["x", "y"], 2) == regions([0, 2], [1, 3], [4, 6], [5, 7])
    # With y spanning 3 in rows 0-3: w_y = 0.3 < w_x = 0.4 -> cut x: NULL {0,1} | {2,3}.
    # (num(NULL) = min - 1 would give w_x = 2/11 and cut y instead.)
    df["y"] = [0, 3, 0, 3, 0, 10, 0, 10]
    assert reference_mondrian(df, ["x", "y"], 2) == regions([0, 1], [2, 3], [4, 6], [5, 7])


def test_hierarchy_with_empty_child() -> None:
    # Leaves us=0 ca=1 mx=2 de=3 fr=4 it=5 jp=6. Root -> america (4 rows), europe (3), asia (0):
    # allowed. america -> us 2, ca 2, mx 0: allowed. europe -> de 2, fr 1, it 0: not allowed.
    df = pd.DataFrame({"g": ["us", "us", "ca", "ca", "de", "de", "fr"]})
    found = reference_regions(df, ["g"], 2, {"g": GEO})
    assert {r.rows: r.box["g"] for r in found} == {
        (0, 1): ("*", "america", "us"),  # descends to the leaf: a non-leaf is always a candidate
        (2, 3): ("*", "america", "ca"),
        (4, 5, 6): ("*", "europe"),
    }
    # america and europe each hold a single leaf: they still descend (all rows to one child).
    df = pd.DataFrame({"g": ["us", "us", "de", "de", "de"]})
    found = reference_regions(df, ["g"], 2, {"g": GEO})
    assert {r.rows: r.box["g"] for r in found} == {
        (0, 1): ("*", "america", "us"),
        (2, 3, 4): ("*", "europe", "de"),
    }


def test_hierarchy_with_nulls_and_an_ordered_column() -> None:
    # The NULL leaf is the root's first child: 8 leaves in all.
    df = pd.DataFrame({"g": ["us", "ca", "us", "ca", None, None], "age": [30, 30, 40, 40, 50, 60]})
    h = {"g": GEO}
    # g first (tie w = 1): root -> NULL {4,5}, america {0..3}, europe and asia empty.
    # america: w_g = 3/8 > w_age = 10/30 -> us {0,2}, ca {1,3}, mx empty.
    assert reference_mondrian(df, ["g", "age"], 2, h) == regions([4, 5], [0, 2], [1, 3])
    # age first: L = 2 and L = 4 tie on balance -> lower cut {0,1} | {2..5}; then {0,1} can
    # only descend to america (us 1, ca 1 blocks it); {2..5}: w_g = 1 > w_age -> NULL | america.
    found = reference_regions(df, ["age", "g"], 2, h)
    assert {frozenset(r.rows) for r in found} == regions([0, 1], [2, 3], [4, 5])
    boxes = {r.rows: r.box for r in found}
    assert boxes[(0, 1)] == {"age": (0, 0), "g": ("*", "america")}
    assert boxes[(2, 3)] == {"age": (1, 3), "g": ("*", "america")}
    assert boxes[(4, 5)] == {"age": (1, 3), "g": ("*", None)}


def test_dates_rank_by_days_and_strings_by_codes() -> None:
    d0, d1, d2 = dt.date(2020, 1, 1), dt.date(2020, 1, 2), dt.date(2030, 1, 1)
    df = pd.DataFrame({
        "d": [d0, d1, d0, d1, d2, d2, d2, d2],
        "s": ["a", "b", "b", "a", "c", "c", "c", "c"],
    })  # fmt: skip
    # Root: both w = 1, d first; counts 2, 2, 4 -> L = 4 (d <= 2020-01-02).
    # Rows 0-3: w_d = 1 day / 3653 days, w_s = (1 - 0) / 2 -> cut s: {a} | {b}.
    # (Ranking dates by codes would tie at 1/2 and cut d instead.)
    assert reference_mondrian(df, ["d", "s"], 2) == regions([0, 3], [1, 2], [4, 5, 6, 7])
    # Timestamps behave the same (microseconds), also as a datetime64 column.
    df["d"] = pd.to_datetime(df["d"])
    assert reference_mondrian(df, ["d", "s"], 2) == regions([0, 3], [1, 2], [4, 5, 6, 7])


def test_float_values_match_integer_leaves() -> None:
    h = [["1", "low", "*"], ["2", "low", "*"], ["3", "high", "*"]]
    df = pd.DataFrame({"v": [1.0, 1.0, 2.0, 2.0, None, None]})  # float64 with NaN
    # Leaves: NULL=0, 1, 2, 3. Root -> NULL {4,5}, low {0..3}, high empty; low -> 1 | 2.
    assert reference_mondrian(df, ["v"], 2, {"v": h}) == regions([0, 1], [2, 3], [4, 5])


def test_errors() -> None:
    df = pd.DataFrame({"x": [1, 2, 3]})
    with pytest.raises(ValueError):
        reference_mondrian(df, ["x"], 4)
    with pytest.raises(ValueError):
        reference_mondrian(df, ["nope"], 1)
    with pytest.raises(ValueError):
        reference_mondrian(pd.DataFrame({"g": ["us", "xx"]}), ["g"], 1, {"g": GEO})
    with pytest.raises(ValueError):
        reference_mondrian_fast(np.zeros((3, 2)), 4)


# ----------------------------------------------------------------------------- oracle vs fast
def _agree(X: np.ndarray, k: int) -> None:
    df = pd.DataFrame(X, columns=[f"c{j}" for j in range(X.shape[1])])
    assert from_labels(reference_mondrian_fast(X, k)) == reference_mondrian(df, list(df.columns), k)


@st.composite
def small_matrices(draw: st.DrawFn, dtype: type, elements: st.SearchStrategy) -> tuple:
    n = draw(st.integers(1, 60))
    X = draw(arrays(dtype, (n, draw(st.integers(1, 4))), elements=elements))
    return X, draw(st.integers(1, min(n, 6)))


FLOATS = st.sampled_from([-2.5, -1.0, 0.0, 0.125, 0.5, 3.0, 1e6])  # few values: many ties


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 12).flatmap(lambda top: small_matrices(np.int64, st.integers(0, top))))
def test_fast_matches_oracle_on_small_int_matrices(case: tuple[np.ndarray, int]) -> None:
    _agree(*case)


@settings(max_examples=100, deadline=None)
@given(small_matrices(np.float64, FLOATS))
def test_fast_matches_oracle_on_small_float_matrices(case: tuple[np.ndarray, int]) -> None:
    _agree(*case)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([3, 30, 1000]), st.integers(1, 25))
def test_fast_matches_oracle_on_larger_random_matrices(seed: int, top: int, k: int) -> None:
    # Deeper trees, skewed columns (squared values) and many ties between rows.
    rng = np.random.default_rng(seed)
    X = rng.integers(0, top + 1, (rng.integers(k, 1500), 4))
    X[:, 1] = X[:, 1] ** 2
    _agree(X, k)
