"""Issue 53: a text QI without a hierarchy is cut in text order (code points: a range ``A41..A42``
takes in ``A410``). Resolving the request warns once per such QI with a ``TextOrderWarning`` (a
``UserWarning``) naming the QI and the fix, and the report says which QIs were ordered by their
text; QIs with a hierarchy, numbers, dates, booleans and enums are left alone."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

import sqlanon
from sqlanon import TextOrderWarning
from tests.support.db import load_frame, rows

ROOT = Path(__file__).resolve().parents[2]
#: A hierarchy for the ``code`` column of :func:`_table`.
CODE = [[f"C{v}", "C", "*"] for v in range(6)]


def _table(con, purpose: str = "purpose") -> None:
    """``t``: ``id``; text ``purpose`` (A40..A411) and ``code`` (C0..C5); integer ``age``;
    boolean ``ok``; date ``day``."""
    i = np.arange(240)
    load_frame(con, "t", pd.DataFrame({
        "id": i, purpose: [f"A4{v}" for v in i % 12], "code": [f"C{v}" for v in i % 6], "age": i % 40,
        "ok": i % 2 == 0, "day": [datetime.date(2020, 1, 1) + datetime.timedelta(days=int(v)) for v in i % 50]}),
        primary_key="id")


def _text_order(caught) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, TextOrderWarning)]


@pytest.mark.engines("duckdb", "postgres")
def test_a_text_qi_without_a_hierarchy_warns_once_naming_it_and_the_fix(con):
    _table(con)
    with pytest.warns(TextOrderWarning) as caught:
        release = sqlanon.anonymize(con, "t", ["purpose", "code", "age", "ok", "day"], 10, hierarchies={"code": CODE})
    assert release.verification.ok
    messages = _text_order(caught)
    assert len(messages) == 1, messages  # purpose only: code has a hierarchy; a number, a boolean, a date
    message = messages[0]
    assert message.startswith("QI 'purpose' is text without a hierarchy")
    assert "'A41'..'A42' also takes in 'A410'" in message
    assert "hierarchies={'purpose': ...}" in message and "sqlanon.hierarchies.ordering(" in message
    assert issubclass(TextOrderWarning, UserWarning) and TextOrderWarning is sqlanon.errors.TextOrderWarning
    # attributed to the caller's line, as Python's warnings are, not to a line inside sqlanon
    assert [w.filename for w in caught if w.category is TextOrderWarning] == [__file__]


def test_one_warning_per_text_qi_in_request_order_and_on_explain(con):
    _table(con)
    con.execute("CREATE TABLE u AS SELECT *, code || 'x' AS other FROM t")
    with pytest.warns(TextOrderWarning) as caught:
        sqlanon.anonymize(con, "u", ["other", "age", "purpose"], 10)
    assert [m.split(" is text")[0] for m in _text_order(caught)] == ["QI 'other'", "QI 'purpose'"]
    with pytest.warns(TextOrderWarning) as caught:  # resolving is where it is said: explain resolves too
        sqlanon.Request("t", ["purpose", "age"], 10).explain(con)
    assert len(_text_order(caught)) == 1


def test_no_warning_with_a_hierarchy_or_for_numbers_dates_booleans_and_enums(con):
    _table(con)
    con.execute("CREATE TABLE e AS SELECT *, CAST(CASE WHEN age < 20 THEN 'lo' ELSE 'hi' END AS "
                "ENUM('lo', 'hi')) AS level FROM t")
    purposes = [[f"A4{v}", "A4", "*"] for v in range(12)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", TextOrderWarning)
        sqlanon.anonymize(con, "e", ["purpose", "code", "age", "ok", "day", "level"], 10,
                          hierarchies={"purpose": purposes, "code": sqlanon.hierarchies.masking([f"C{v}" for v in range(6)])})
        # a single-dimensional search takes a text QI without a hierarchy as one category (⊥), not in order
        sqlanon.anonymize(con, "t", ["purpose", "age"], 10, algorithm=sqlanon.TopDown(), output="single")
        # a request that fails its checks gets its error only
        with pytest.raises(sqlanon.InputError, match="larger than the table"):
            sqlanon.anonymize(con, "t", ["purpose"], 10_000)


def test_the_range_the_warning_describes():
    """What the warning says, on the data: A41, A410 and A42 sort before A5, so the class
    ``A41..A42`` holds the A410 rows."""
    con = duckdb.connect()
    purposes = ["A41"] * 5 + ["A410"] * 5 + ["A42"] * 5 + ["A5"] * 15
    load_frame(con, "t", pd.DataFrame({"id": range(len(purposes)), "purpose": purposes}), primary_key="id")
    with pytest.warns(TextOrderWarning, match="'A41'..'A42' also takes in 'A410'"):
        release = sqlanon.anonymize(con, "t", ["purpose"], 15)
    assert rows(con, f'SELECT DISTINCT t.purpose, v.purpose_min, v.purpose_max FROM "{release.view}" v JOIN t USING (id) '
                     "WHERE t.purpose LIKE 'A4%' ORDER BY 1") == [("A41", "A41", "A42"), ("A410", "A41", "A42"),
                                                                ("A42", "A41", "A42")]


def test_the_report_names_the_qis_ordered_by_their_text(con):
    name = "pur<pose>"  # escaped in the HTML like every name
    _table(con, name)
    with pytest.warns(TextOrderWarning):
        release = sqlanon.anonymize(con, "t", [name, "code", "age"], 10, hierarchies={"code": CODE},
                                    output="text_anon")
    note = "Ordered by their text (no hierarchy): "
    for source in (release, release.view):  # from the Release, and reloaded by name
        document = json.loads(sqlanon.report(con, source, format="json"))
        assert document["release"]["ordered_by_text"] == [name]
        assert f"{note}`{name}`. Their ranges follow text order" in sqlanon.report(con, source, format="markdown")
        page = sqlanon.report(con, source, format="html")
        assert f'<p id="text-order">{note}<code>pur&lt;pose&gt;</code>.' in page and "<pose>" not in page
    with warnings.catch_warnings():
        warnings.simplefilter("error", TextOrderWarning)
        other = sqlanon.anonymize(con, "t", ["code", "age"], 10, hierarchies={"code": CODE}, output="coded_anon")
    assert json.loads(sqlanon.report(con, other, format="json"))["release"]["ordered_by_text"] == []
    assert note not in sqlanon.report(con, other, format="markdown")
    assert 'id="text-order"' not in sqlanon.report(con, other, format="html")


def test_the_command_line_shows_the_warning_once_on_stderr(tmp_path):
    db = tmp_path / "t.duckdb"
    con = duckdb.connect(str(db))
    _table(con)
    con.close()
    done = subprocess.run([sys.executable, "-m", "sqlanon", "anonymize", str(db), "t", "--qid", "purpose,age",
                           "--k", "10", "--replace"], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("TextOrderWarning: QI 'purpose' is text without a hierarchy") == 1, done.stderr
    assert done.stderr.count("Warning") == 1, done.stderr
