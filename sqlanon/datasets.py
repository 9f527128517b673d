"""Bundled real data for demos, tests and benchmarks (provenance in ``sqlanon/data/README.md``)."""

from __future__ import annotations

import csv
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pandas as pd

from .engine import engine_for
from .engine.calls import serialized
from .errors import InputError
from .model.hierarchy import Hierarchy
from .request.checks import check_free

#: Columns of the ARX copy of UCI Adult, each with a bundled hierarchy.
ADULT_COLUMNS = (
    "sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation",
    "salary-class",
)


def data_path(name: str) -> Path:
    """Path of a bundled data file."""
    return Path(str(resources.files("sqlanon").joinpath("data", name)))


def adult_hierarchies() -> dict[str, Path]:
    """The ARX hierarchy CSV of every Adult column."""
    return {c: data_path(f"adult_hierarchy_{c}.csv") for c in ADULT_COLUMNS}


@serialized
def load_adult(con: Any, table: str = "adult", *, replace: bool = False) -> dict[str, Path]:
    """Create ``table`` with the 30,162 rows of UCI Adult (ARX's cleaned copy) and return the
    hierarchies, ready for ``anonymize(con, table, qid=[...], hierarchies=...)``."""
    frame = pd.read_csv(data_path("adult.csv.gz"), sep=";", dtype={c: "int64" if c == "age" else object
                                                                   for c in ADULT_COLUMNS})
    _create(con, table, frame, replace)
    return adult_hierarchies()


# -- UCI Adult, train and test files ------------------------------------------------------------
#: Columns of ``adult.data`` / ``adult.test.data`` in file order with their SQL types. The label
#: is named ``salary-class`` as in ARX's copy (UCI calls it ``income``).
ADULT_UCI_COLUMNS = MappingProxyType({
    "age": "BIGINT", "workclass": "VARCHAR", "fnlwgt": "BIGINT", "education": "VARCHAR",
    "education-num": "BIGINT", "marital-status": "VARCHAR", "occupation": "VARCHAR",
    "relationship": "VARCHAR", "race": "VARCHAR", "sex": "VARCHAR", "capital-gain": "BIGINT",
    "capital-loss": "BIGINT", "hours-per-week": "BIGINT", "native-country": "VARCHAR",
    "salary-class": "VARCHAR",
})
_ADULT_FILES = MappingProxyType({"train": "adult.data.gz", "test": "adult.test.data.gz"})


@serialized
def load_adult_uci(
    con: Any,
    table: str | None = None,
    *,
    split: str = "train",
    complete: bool = True,
    replace: bool = False,
) -> dict[str, Path]:
    """Create ``table`` (default ``adult_<split>``) from UCI Adult's training or test file, all 15
    columns (:data:`ADULT_UCI_COLUMNS`), and return the ARX hierarchies of :func:`adult_hierarchies`.

    UCI's ``?`` becomes NULL and the test file's labels lose their trailing ``.`` (``>50K.`` ->
    ``>50K``), so both splits share one label domain. With ``complete`` (the default) only rows
    without a missing value are kept, as in Iyengar (KDD 2002, Section 5) and ARX: 30,162
    training and 15,060 test rows; otherwise 32,561 and 16,281. The complete training rows,
    projected on ARX's nine columns, are exactly ARX's ``adult.csv`` (:func:`load_adult`).

    Raises:
        InputError: ``split`` is not ``"train"`` or ``"test"``, or ``table`` is not a name.
        ObjectExistsError: ``table`` exists in the current schema and ``replace`` is False.
    """
    if split not in _ADULT_FILES:
        raise InputError(f"split must be 'train' or 'test', got {split!r}")
    name = f"adult_{split}" if table is None else table
    frame = _read_csv(_ADULT_FILES[split], header=False, columns=ADULT_UCI_COLUMNS, nullstr="?")
    frame["salary-class"] = frame["salary-class"].str.rstrip(".")
    if complete:
        frame = frame.dropna().reset_index(drop=True)
    _create(con, name, frame, replace)
    return adult_hierarchies()


# -- UCI Contraceptive Method Choice ---------------------------------------------------------------
#: Columns of the CMC table in file order, with their SQL types. The nine attributes keep UCI's
#: integer codes; the class is decoded to UCI's labels (:data:`CMC_METHODS`).
CMC_COLUMNS = MappingProxyType({
    "wife_age": "INTEGER",            # years
    "wife_education": "INTEGER",      # 1 = low .. 4 = high
    "husband_education": "INTEGER",   # 1 = low .. 4 = high
    "children": "INTEGER",            # number of children ever born
    "wife_religion": "INTEGER",       # 0 = non-Islam, 1 = Islam
    "wife_working": "INTEGER",        # 0 = yes, 1 = no (UCI's coding)
    "husband_occupation": "INTEGER",  # 1 .. 4
    "standard_of_living": "INTEGER",  # 1 = low .. 4 = high
    "media_exposure": "INTEGER",      # 0 = good, 1 = not good
    "contraceptive_method": "VARCHAR",
})
#: UCI's codes of the class attribute and the labels the table holds.
CMC_METHODS = MappingProxyType({1: "no-use", 2: "long-term", 3: "short-term"})
#: The attributes LeFevre et al. (KDD 2006, Figure 7) generalize with a hierarchy; the other
#: three (wife_age, children, standard_of_living) are continuous.
CMC_HIERARCHICAL = MappingProxyType({
    "wife_education": (1, 2, 3, 4), "husband_education": (1, 2, 3, 4), "wife_religion": (0, 1),
    "wife_working": (0, 1), "husband_occupation": (1, 2, 3, 4), "media_exposure": (0, 1),
})


def cmc_hierarchies() -> dict[str, Hierarchy]:
    """A flat hierarchy (every code a child of ``*``) for each attribute of
    :data:`CMC_HIERARCHICAL`. The paper does not publish its CMC hierarchies; a flat one adds
    no structure of our own (for the binary attributes it is the only hierarchy there is)."""
    return {c: Hierarchy.from_dict({"*": [str(v) for v in codes]}) for c, codes in CMC_HIERARCHICAL.items()}


@serialized
def load_cmc(con: Any, table: str = "cmc", *, replace: bool = False) -> dict[str, Hierarchy]:
    """Create ``table`` with the 1,473 rows of UCI Contraceptive Method Choice (:data:`CMC_COLUMNS`;
    the data has no missing values) and return :func:`cmc_hierarchies`.

    The source file's own header (``WifeAge,...,ContraceptoveMethod``) is skipped; columns are
    named and typed here, and the class code becomes its label (1 ``no-use``, 2 ``long-term``,
    3 ``short-term``).

    Raises:
        InputError: ``table`` is not a name.
        ObjectExistsError: ``table`` exists in the current schema and ``replace`` is False.
    """
    codes = {c: ("INTEGER" if c == "contraceptive_method" else t) for c, t in CMC_COLUMNS.items()}
    frame = _read_csv("cmc.data.gz", header=True, columns=codes)
    frame["contraceptive_method"] = frame["contraceptive_method"].map(dict(CMC_METHODS)).astype(object)
    _create(con, table, frame, replace)
    return cmc_hierarchies()


#: pandas dtypes of the SQL types the bundled tables use (DuckDB types them the same from pandas).
_DTYPES = {"BIGINT": "int64", "INTEGER": "int32", "VARCHAR": object}


def _read_csv(file: str, *, header: bool, columns: dict[str, str] | MappingProxyType,
              nullstr: str | None = None) -> pd.DataFrame:
    """A bundled CSV file with its columns named and typed explicitly (never sniffed), fields
    separated by a comma and optional spaces, no quoting, ``nullstr`` as NULL."""
    return pd.read_csv(data_path(file), sep=",", skipinitialspace=True, quoting=csv.QUOTE_NONE,
                       header=0 if header else None, names=list(columns),
                       dtype={c: _DTYPES[t] for c, t in columns.items()},
                       na_values=[nullstr] if nullstr is not None else None, keep_default_na=False)


def _create(con: Any, name: str, frame: pd.DataFrame, replace: bool) -> None:
    """Create the table ``name`` from ``frame`` (in row order), refusing a taken name before any write."""
    if not isinstance(name, str) or not name:
        raise InputError(f"table must be a non-empty string, got {name!r}")
    engine = engine_for(con)
    check_free(engine, name, replace)
    engine.create_from_frame(name, frame, replace=replace)
