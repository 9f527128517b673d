"""The bundled data loaders against plain-Python parses of the bundled files.

Oracles: each gzip file is read again with ``gzip`` and string splitting, and the loaded table
must equal it row for row; the complete rows of ``adult.data`` must be ARX's ``adult.csv``.
"""

from __future__ import annotations

import csv
import gzip
from collections import Counter

import pytest

import sqlanon
from sqlanon import datasets, load_hierarchy
from tests.support import ADULT_COLUMNS, ADULT_ROWS, DATA, is_postgres, quote, rows, run

pytestmark = pytest.mark.engines("duckdb", "postgres")

# The loaders' SQL types (DuckDB spelling) as PostgreSQL's information_schema spells them.
_PG_SPELLING = {"BIGINT": "bigint", "INTEGER": "integer", "VARCHAR": "text"}


def _types(con, table):
    """Column -> type in the engine's own spelling, in table order."""
    if is_postgres(con):
        found = rows(con, "SELECT column_name, data_type FROM information_schema.columns "
                          "WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position",
                     [table])
        return dict(found)
    return {r[0]: r[1] for r in rows(con, f"DESCRIBE {quote(table)}")}


def _expected_types(con, columns):
    """``columns`` (DuckDB spelling) as ``con``'s engine spells them."""
    if is_postgres(con):
        return {c: _PG_SPELLING[t] for c, t in columns.items()}
    return dict(columns)


def _rows(con, table):
    return rows(con, f"SELECT * FROM {quote(table)}")


def _same_rows(con, table, expected):
    """The table holds ``expected``: in that order on DuckDB (a table scan keeps insertion order);
    as a multiset on PostgreSQL, whose heap has no row order (COPY may put a later row into free
    space of an earlier page)."""
    got = _rows(con, table)
    if is_postgres(con):
        return len(got) == len(expected) and Counter(got) == Counter(expected)
    return got == expected


def _parse_uci_adult(name):
    """Rows of a UCI Adult file as typed tuples: ``?`` -> None, label without the final ``.``."""
    types = list(datasets.ADULT_UCI_COLUMNS.values())
    out = []
    with gzip.open(DATA / name, "rt", encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            cells = line.split(", ")
            assert len(cells) == 15, line
            row = [None if c == "?" else (int(c) if t == "BIGINT" else c) for c, t in zip(cells, types)]
            row[-1] = row[-1].rstrip(".")
            out.append(tuple(row))
    return out


@pytest.mark.parametrize("split, file, complete_rows, all_rows, incomplete", [
    ("train", "adult.data.gz", 30_162, 32_561, 2_399),
    ("test", "adult.test.data.gz", 15_060, 16_281, 1_221),
])
def test_adult_uci_matches_the_file(con, split, file, complete_rows, all_rows, incomplete):
    expected = _parse_uci_adult(file)
    hierarchies = datasets.load_adult_uci(con, "full", split=split, complete=False)
    assert _same_rows(con, "full", expected)                   # every row, in file order (DuckDB)
    assert len(expected) == all_rows
    assert sum(None in r for r in expected) == incomplete
    assert _types(con, "full") == _expected_types(con, datasets.ADULT_UCI_COLUMNS)

    datasets.load_adult_uci(con, split=split)                  # default name, complete rows
    assert _same_rows(con, f"adult_{split}", [r for r in expected if None not in r])
    assert len(_rows(con, f"adult_{split}")) == complete_rows
    assert {r[-1] for r in expected} == {"<=50K", ">50K"}
    # The ARX hierarchies returned cover every value the benchmark generalizes with them.
    assert hierarchies == datasets.adult_hierarchies()
    for column in ADULT_COLUMNS:
        if column == "age":
            continue
        values = [r[0] for r in rows(con, f"SELECT DISTINCT {quote(column)} FROM adult_{split}")]
        assert load_hierarchy(hierarchies[column]).missing(values) == []


def test_complete_adult_train_is_arx_adult(con):
    datasets.load_adult_uci(con, "train")
    datasets.load_adult(con, "arx")
    cols = ", ".join(quote(c) for c in ADULT_COLUMNS)
    train = Counter(rows(con, f"SELECT {cols} FROM train"))
    arx = Counter(rows(con, f"SELECT {cols} FROM arx"))
    assert sum(arx.values()) == ADULT_ROWS
    assert train == arx


def test_cmc_matches_the_file(con):
    with gzip.open(DATA / "cmc.data.gz", "rt", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader)
        expected = [tuple(int(c) for c in r[:9]) + (datasets.CMC_METHODS[int(r[9])],) for r in reader]
    assert len(header) == 10 and header[0] == "WifeAge"
    hierarchies = datasets.load_cmc(con)
    assert _same_rows(con, "cmc", expected)
    assert len(expected) == 1_473
    assert _types(con, "cmc") == _expected_types(con, datasets.CMC_COLUMNS)
    assert Counter(r[-1] for r in expected) == {"no-use": 629, "long-term": 333, "short-term": 511}
    assert set(hierarchies) == set(datasets.CMC_HIERARCHICAL)
    for column, h in hierarchies.items():
        values = [r[0] for r in rows(con, f"SELECT DISTINCT {quote(column)} FROM cmc")]
        assert h.missing(values) == []
        assert sorted(map(int, h.leaves)) == sorted(values)        # flat: exactly the codes seen
        assert h.height == 1


def test_cmc_anonymizes_with_its_hierarchies(con):
    hierarchies = datasets.load_cmc(con)
    qid = [c for c in datasets.CMC_COLUMNS if c != "contraceptive_method"]
    release = sqlanon.anonymize(con, "cmc", qid=qid, k=25, hierarchies=hierarchies,
                                target="contraceptive_method")
    assert release.k_achieved >= 25 and release.rows == 1_473
    for column in datasets.CMC_HIERARCHICAL:   # published as a code or the root label
        labels = {r[0] for r in rows(con, f"SELECT DISTINCT {quote(column)} FROM cmc_anon")}
        assert labels <= {"*"} | {str(v) for v in datasets.CMC_HIERARCHICAL[column]}


def test_loader_errors(con, engine_name):
    with pytest.raises(sqlanon.InputError, match="split"):
        datasets.load_adult_uci(con, split="validation")
    with pytest.raises(sqlanon.InputError, match="table"):
        datasets.load_cmc(con, "")
    run(con, "CREATE TABLE cmc AS SELECT 1 AS x")
    with pytest.raises(sqlanon.ObjectExistsError, match="replace=True"):
        datasets.load_cmc(con)
    assert _rows(con, "cmc") == [(1,)]                          # untouched
    if engine_name == "duckdb":  # DuckDB names are case-insensitive: CMC is cmc
        with pytest.raises(sqlanon.ObjectExistsError):
            datasets.load_adult_uci(con, "CMC", split="test")
    else:  # PostgreSQL keeps quoted names apart: "CMC" is a table beside cmc
        datasets.load_adult_uci(con, "CMC", split="test")
        assert _rows(con, "cmc") == [(1,)]
    datasets.load_cmc(con, replace=True)
    assert len(_rows(con, "cmc")) == 1_473
