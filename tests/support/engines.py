"""What every engine must publish alike, and the comparisons of a release across engines.

* :data:`TABLES`, :data:`HIERARCHY`, :data:`WORKLOADS`: random tables (hypothesis), a hierarchy
  of their ``cat`` column, and every criterion and constraint family as ``anonymize`` arguments;
  :func:`random_frame` makes a table of them a DataFrame.
* :func:`people`: a deterministic table with a key, ordered and text QIs, a label and a number.
* :func:`load`, :func:`rules`, :func:`table_of`: a table created, a release's rules and a
  relation read on any engine (Spark included), normalized to compare across engines.
* :func:`identical`: DuckDB and another engine publish the same rules and view for a frame (or
  refuse it alike).
"""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
from hypothesis import strategies as st

import sqlanon
from sqlanon.engine import engine_for
from sqlanon.engine import sqlgen as g
from tests.support.db import TEMP_PREFIX
from tests.support.releases import request_options

TABLES = st.integers(min_value=40, max_value=160).flatmap(lambda n: st.tuples(
    st.lists(st.one_of(st.none(), st.integers(0, 30)), min_size=n, max_size=n),
    st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), min_size=n, max_size=n),
    st.lists(st.one_of(st.none(), st.floats(-5, 5, allow_nan=False).map(lambda x: round(x, 2))), min_size=n, max_size=n),
    st.lists(st.sampled_from(["x", "y", "z"]), min_size=n, max_size=n),
))


HIERARCHY = {"*": {"ab": ["a", "b"], "cde": ["c", "d", "e"]}}


#: Every criterion and constraint family, as anonymize() arguments.
WORKLOADS = {
    "median": {},
    "infogain": {"target": "label"},
    "regression": {"target": "x"},
    "targets": {"criterion": sqlanon.Targets(("label",), ("x",))},
    "selections": {"selections": ["a < 10 OR cat = 'e'"], "target": "label"},
    "entropy-l": {"sensitive": "label", "l": 2},
    "distinct-l": {"constraints": [sqlanon.DistinctLDiversity("label", 2)]},
    "recursive-cl": {"constraints": [sqlanon.RecursiveCLDiversity("label", 3, 2)]},
    "variance": {"constraints": [sqlanon.VarianceDiversity("x", 0.5)]},
    "t-closeness": {"constraints": [sqlanon.TCloseness("label", 0.3, "ordered")]},
}


def table_of(spark, name: str) -> list[tuple]:
    """A relation's rows sorted, NULL as None, numbers as floats (engine-independent)."""
    return _plain(engine_for(spark).fetch_frame(sqlanon_select(name)))


def sqlanon_select(name: str):
    from sqlglot import exp

    return exp.select("*").from_(g.table(name))


def _plain(frame: pd.DataFrame) -> list[tuple]:
    frame = frame.astype(object).where(frame.notna(), None)
    out = [tuple(float(v) if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) else v
                 for v in row) for row in frame.values.tolist()]
    return sorted(out, key=repr)


def rules(con, release) -> list[tuple]:
    return _plain(engine_for(con).fetch_frame(sqlanon_select(release.rules)))


def load(con, name: str, frame: pd.DataFrame) -> None:
    engine_for(con).create_from_frame(name, frame, replace=True)


def spark_temp_objects(spark) -> list[str]:
    return sorted(t.name for t in spark.catalog.listTables() if t.name.startswith(TEMP_PREFIX))


def people(n: int = 400, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "id": np.arange(n, dtype=np.int64),
        "age": rng.integers(17, 90, n).astype(np.int64),
        "zip": rng.integers(0, 40, n).astype(np.int64),
        "sex": rng.choice(["F", "M"], n),
        "label": rng.choice(["x", "y", "z"], n),
        "x": np.round(rng.normal(0, 2, n), 2),
    })


def identical(spark, frame: pd.DataFrame, qid: list[str], **kwargs) -> None:
    """DuckDB and Spark publish the same rules and view for ``frame`` (or refuse it alike)."""
    duck = duckdb.connect()
    try:
        out = []
        for con in (duck, spark):
            load(con, "t", frame)
            try:
                out.append(sqlanon.anonymize(con, "t", qid=qid,
                                             output=sqlanon.Output(view="t_anon", replace=True, key="id"),
                                             **request_options(**kwargs)))
            except sqlanon.InputError as e:
                out.append(type(e).__name__)
        if isinstance(out[0], str):
            assert out[1] == out[0]
            return
        assert rules(duck, out[0]) == rules(spark, out[1])
        assert table_of(duck, "t_anon") == table_of(spark, "t_anon")
        assert out[1].verification.ok and out[1].rows == len(frame) and spark_temp_objects(spark) == []
    finally:
        duck.close()


def seeded_frame(seed: int, n: int) -> pd.DataFrame:
    """A table of :data:`TABLES`' shape drawn from a seeded generator: ``a`` 0..30 and ``x`` in
    [-5, 5] each with about a tenth NULL, ``cat`` over the hierarchy's leaves, ``label`` x/y/z."""
    rng = np.random.default_rng(seed)
    a = [None if rng.random() < 0.1 else int(v) for v in rng.integers(0, 31, n)]
    x = [None if rng.random() < 0.1 else round(float(v), 2) for v in rng.uniform(-5, 5, n)]
    cat = [str(v) for v in rng.choice(list("abcde"), n)]
    label = [str(v) for v in rng.choice(list("xyz"), n)]
    return random_frame((a, cat, x, label))


def random_frame(table) -> pd.DataFrame:
    a, cat, x, label = table
    return pd.DataFrame({"id": np.arange(len(a)), "a": pd.array(a, dtype="Int64"), "cat": cat,
                         "x": pd.array(x, dtype="Float64"), "label": label})
