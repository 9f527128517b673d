"""Issue 53: a ``Release``, ``Verification``, ``Risk`` and ``Metrics`` show as a compact HTML card
in a notebook (``_repr_html_``) and as one short line of text (``repr``): the verdict, the rows,
classes and suppressed rows, the view and the algorithm as it ran -- not a 40-field dump. Names
are escaped (a QI and a view called ``<script>``), the HTML is well-formed, and no repr prints a
value only a suppressed row holds (the check of ``test_suppression_leaks.py``, on the reprs)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pandas as pd
import pytest

import sqlanon
from tests.support.db import load_frame, rows

#: A value only the suppressed row holds: distinctive, so that any printing of it is found.
OUTLIER = 7_654_321
#: The QI's and the view's names: markup, which a card must show as text.
QI = "<script>"
VIEW = "<script>alert(1)</script>"
#: The tags a card may use (no script, no link, no image, no style sheet).
CARD_TAGS = {"div", "span", "code", "table", "tr", "td"}


class _Card(HTMLParser):
    """Parses a card: its tags, its visible text, and whether every tag is closed in order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.open: list[str] = []
        self.misnested: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.open.append(tag)
        self.text.append(" ")  # cells apart

    def handle_startendtag(self, tag, attrs):
        self.tags.append(tag)

    def handle_endtag(self, tag):
        if not self.open or self.open.pop() != tag:
            self.misnested.append(tag)
        self.text.append(" ")

    def handle_data(self, data):
        self.text.append(data)


def card(html_text: str) -> tuple[list[str], str]:
    """The tags and the visible text (runs of white space as one space) of a well-formed card
    (asserted)."""
    parser = _Card()
    parser.feed(html_text)
    parser.close()
    assert parser.misnested == [] and parser.open == [], (parser.misnested, parser.open)
    assert set(parser.tags) <= CARD_TAGS, set(parser.tags) - CARD_TAGS
    return parser.tags, " ".join("".join(parser.text).split())


def _mondrian(con):
    """0..19, 1000 and the outlier, k=10, 10 %: the outlier's row is suppressed."""
    x = list(range(20)) + [1000, OUTLIER]
    load_frame(con, "t", pd.DataFrame({"id": range(len(x)), QI: pd.Series(x, dtype="Int64")}), primary_key="id")
    return sqlanon.anonymize(con, "t", [QI], 10, suppression=0.1, output=sqlanon.Output(VIEW, key="id"))


def _genetic(con):
    """0..39 and the outlier alone in category "c", k=5, 5 %: the genetic search suppresses it."""
    x = list(range(40)) + [OUTLIER]
    y = ["a" if i % 2 else "b" for i in range(40)] + ["c"]
    load_frame(con, "t", pd.DataFrame({"id": range(len(x)), QI: pd.Series(x, dtype="Int64"), "y": y}),
               primary_key="id")
    return sqlanon.anonymize(con, "t", [QI, "y"], 5, suppression=0.05, output=sqlanon.Output(VIEW, key="id"),
                             hierarchies={"y": [["a", "ab", "*"], ["b", "ab", "*"], ["c", "*", "*"]]},
                             algorithm=sqlanon.Genetic(iterations=60, seed=1))


@pytest.fixture(params=[_mondrian, _genetic], ids=["mondrian", "genetic"])
def release(request, con):
    release = request.param(con)
    # the premise: the outlier's row is suppressed (no class), and the release holds
    assert rows(con, f'SELECT v.eq_class FROM "{VIEW}" v JOIN t USING (id) WHERE t."{QI}" = {OUTLIER}') == [(None,)]
    assert release.suppressed >= 1 and release.verification.ok
    return release


def _results(con, release):
    """Every result with a repr, by name: the release, its verification, a re-verification,
    its metrics and its risk."""
    return {"release": release, "verification": release.verification,
            "verify": sqlanon.verify(con, VIEW, list(release.qid), release.k),
            "metrics": sqlanon.metrics(con, release), "risk": sqlanon.risk(con, release)}


def test_text_reprs_are_one_short_line_with_the_key_facts(con, release):
    text = repr(release)
    assert "\n" not in text and len(text) <= 400, text
    assert text.startswith(f"<Release {VIEW!r}: HOLDS;"), text
    for fact in (f"rows {release.rows:,}", f"classes {release.partitions:,}", f"suppressed {release.suppressed:,}",
                 f"smallest class {release.k_achieved:,} (k = {release.k:,})", "requirement k-anonymity(k=",
                 release.algorithm.describe()):
        assert fact in text, (fact, text)
    for field in ("timings", "rowmap", "statements", "outcome", "materialized", "class_column"):
        assert field not in text  # not the dataclass's every field
    for name, result in _results(con, release).items():
        text = repr(result)
        assert "\n" not in text and len(text) <= 400, (name, text)
        assert f"rows {result.rows:,}" in text or f"records {result.rows:,}" in text, (name, text)
        assert f"classes {result.partitions if name == 'release' else result.classes:,}" in text, (name, text)
    assert repr(release.verification).startswith("<Verification 'k-anonymity(k=") and "HOLDS" in repr(release.verification)


def test_html_cards_are_compact_well_formed_and_escape_names(con, release):
    for name, result in _results(con, release).items():
        html_text = result._repr_html_()
        tags, text = card(html_text)
        assert tags.count("tr") <= 16 and len(html_text) <= 6000, (name, tags.count("tr"), len(html_text))
        assert "<script" not in html_text.lower(), name  # the names are escaped ...
        assert QI in text or VIEW in text, name  # ... and shown as text
    tags, text = card(release._repr_html_())
    assert f"Release: {VIEW}" in text and "HOLDS" in text and QI in text
    for label, value in (("rows", f"{release.rows:,}"), ("classes", f"{release.partitions:,}"),
                         ("suppressed", f"{release.suppressed:,}"), ("algorithm", release.algorithm.describe()),
                         ("published as", "a live view (key 'id')")):
        assert re.search(rf"\b{label}\s+{re.escape(value)}", text), (label, value, text)
    assert "timings" not in text and "rowmap" not in text
    _, text = card(release.verification._repr_html_())
    assert "HOLDS" in text and "smallest class" in text and QI in text  # the checked columns


def test_a_failing_verification_says_what_fails(con, release):
    failing = sqlanon.verify(con, VIEW, list(release.qid), 1000)
    assert not failing.ok
    text = repr(failing)
    assert text.startswith("<Verification 'k-anonymity(k=1000)") and "': FAILS; " in text, text
    assert "fails: k-anonymity(k=1000)" in text and f"smallest class {failing.k_achieved:,} (k = 1,000)" in text
    _, shown = card(failing._repr_html_())
    assert "FAILS" in shown and "HOLDS" not in shown and "classes below k" in shown


def test_no_repr_prints_a_value_only_a_suppressed_row_holds(con, release):
    printed = re.compile(r"7[,.\s]?654[,.\s]?321|7\.65\d*e\+?0?6", re.IGNORECASE)
    for name, result in _results(con, release).items():
        for text in (repr(result), result._repr_html_(), card(result._repr_html_())[1]):
            assert not printed.search(text), (name, text)


def test_a_long_requirement_keeps_the_text_repr_short(con, release):
    """Several constraints: the requirement is shortened in the one line, and listed whole in the card."""
    models = [sqlanon.DistinctLDiversity("id", 2), sqlanon.EntropyLDiversity("id", 2),
              sqlanon.RecursiveCLDiversity("id", 3, 2), sqlanon.TCloseness("id", 0.9), sqlanon.DeltaDisclosure("id", 9.0)]
    checked = sqlanon.verify(con, VIEW, list(release.qid), 2, constraints=models)
    assert len(checked.requirement()) > 200
    text = repr(checked)
    assert "\n" not in text and len(text) <= 400 and "…" in text, text
    _, shown = card(checked._repr_html_())
    assert all(m.describe() in shown for m in models), shown
