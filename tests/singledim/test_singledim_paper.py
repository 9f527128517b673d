"""The worked examples of Fung, Wang & Yu (TKDE 2007) come out exactly: Table 1's statistics
(Example 4) with the two QIDs of Fig. 1, and Example 5 (Table 2): Score refines ANY_Sex first
and reaches the final masked table 2e, InfoGain refines ANY_Edu and then stops (Table 2c) --
through the pure refiner and through ``sqlanon.anonymize`` in the database."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest

import sqlanon
from sqlanon.model.hierarchy import Hierarchy
from sqlanon.singledim.tdr import Attribute, Requirement, candidates, refine

EDU = {"ANY_Edu": {"Secondary": {"Junior Sec.": ["9th", "10th"], "Senior Sec.": ["11th", "12th"]},
                   "University": {"Bachelors": None, "Grad School": ["Masters", "Doctorate"]}}}
SEX = {"ANY_Sex": ["M", "F"]}
# Table 1: Education, Sex, Work_Hrs, Y, N
TABLE1 = [("9th", "M", 30, 0, 3), ("10th", "M", 32, 0, 4), ("11th", "M", 35, 2, 3), ("12th", "F", 37, 3, 1),
          ("Bachelors", "F", 42, 4, 2), ("Bachelors", "F", 44, 4, 0), ("Masters", "M", 44, 4, 0),
          ("Masters", "F", 44, 3, 0), ("Doctorate", "F", 44, 1, 0)]
# Table 2a
EDU2 = {"ANY_Edu": ["8th", "9th", "10th"]}
TABLE2 = [("10th", "M", 40, 20, 0), ("10th", "M", 30, 0, 4), ("9th", "M", 30, 0, 2), ("9th", "F", 30, 0, 4),
          ("9th", "F", 40, 0, 6), ("8th", "F", 30, 0, 2), ("8th", "F", 40, 0, 2)]


def compressed(table, edu):
    e, s = Hierarchy.from_dict(edu), Hierarchy.from_dict(SEX)
    hours = sorted({r[2] for r in table})
    codes = np.array([[e.code_of([r[0]])[0], s.code_of([r[1]])[0], hours.index(r[2])] for r in table])
    counts = np.array([[r[3], r[4]] for r in table])
    attrs = [Attribute("hierarchy", e.n_leaves, e), Attribute("hierarchy", s.n_leaves, s),
             Attribute("interval", len(hours), position=np.array(hours, dtype=float))]
    return codes, counts, attrs


def test_table1_statistics():
    """Example 4: InfoGain(ANY_Edu) = 0.2716, AnonyLoss(ANY_Edu) = 18, Score(ANY_Edu) = 0.0143,
    under <{Education, Sex}, 4> and <{Sex, Work_Hrs}, 11> (Example 6)."""
    codes, counts, attrs = compressed(TABLE1, EDU)
    found = {(c.attribute, c.value): c for c in candidates(codes, counts, attrs,
                                                           [Requirement((0, 1), 4), Requirement((1, 2), 11)])}
    edu = found[0, 0]  # ANY_Edu is node 0 of Education
    assert round(edu.gain, 4) == 0.2716
    assert edu.loss == 18
    assert round(edu.score, 4) == 0.0143


def test_example5_statistics():
    """Table 2b: InfoGain 0.6100 / 0.4934 / 0.3958, AnonyLoss 36 / 26 / 28, Score 0.0165 /
    0.0183 / 0.0136 for ANY_Edu, ANY_Sex, [1-99] (all three valid for k = 4)."""
    codes, counts, attrs = compressed(TABLE2, EDU2)
    found = candidates(codes, counts, attrs, [Requirement((0, 1, 2), 4)])
    assert [(c.attribute, c.value) for c in found] == [(0, 0), (1, 0), (2, 0)]
    assert [round(c.gain, 4) for c in found] == [0.6100, 0.4934, 0.3958]
    assert [c.loss for c in found] == [36, 26, 28]
    assert [round(c.score, 4) for c in found] == [0.0165, 0.0183, 0.0136]


def test_example5_sequences():
    codes, counts, attrs = compressed(TABLE2, EDU2)
    req = [Requirement((0, 1, 2), 4)]
    by_score = refine(codes, counts, attrs, req)
    assert [(s.attribute, s.value) for s in by_score.steps] == [(1, 0), (2, 0)]  # ANY_Sex, then [1-99]
    assert by_score.anonymity == (6,) and by_score.complete
    by_gain = refine(codes, counts, attrs, req, use_score=False)
    assert [(s.attribute, s.value) for s in by_gain.steps] == [(0, 0)]  # ANY_Edu, then nothing is valid
    assert by_gain.anonymity == (4,)


@pytest.fixture
def table2():
    con = duckdb.connect()
    con.execute('CREATE TABLE t(id INTEGER PRIMARY KEY, "Education" VARCHAR, "Sex" VARCHAR, "Work_Hrs" INTEGER, '
                '"Class" VARCHAR)')
    i = 0
    for edu, sex, hours, y, n in TABLE2:
        for label, count in (("Y", y), ("N", n)):
            for _ in range(count):
                con.execute("INSERT INTO t VALUES (?, ?, ?, ?, ?)", [i, edu, sex, hours, label])
                i += 1
    return con


def masked(con, view):
    return con.execute(f'SELECT "Education", "Sex", "Work_Hrs_min", "Work_Hrs_max", '
                       f'count(*) FILTER (WHERE "Class" = \'Y\'), count(*) FILTER (WHERE "Class" = \'N\') '
                       f'FROM "{view}" GROUP BY ALL ORDER BY ALL').fetchall()


def test_example5_in_the_database(table2):
    con = table2
    hierarchies = {"Education": EDU2, "Sex": SEX}
    qid = ["Education", "Sex", "Work_Hrs"]
    score = sqlanon.anonymize(con, "t", qid=qid, k=4, target="Class", hierarchies=hierarchies,
                              algorithm=sqlanon.TopDown())
    # Table 2e: ANY_Edu, {M, F} x {[1-40), [40-99)}; intervals published by their bounds
    assert masked(con, score.view) == [("ANY_Edu", "F", 30, 30, 0, 6), ("ANY_Edu", "F", 40, 40, 0, 8),
                                       ("ANY_Edu", "M", 30, 30, 0, 6), ("ANY_Edu", "M", 40, 40, 20, 0)]
    assert score.outcome.refinements == 2 and score.k_achieved == 6 and score.verification.ok
    gain = sqlanon.anonymize(con, "t", qid=qid, k=4, hierarchies=hierarchies,
                             algorithm=sqlanon.TopDown(sqlanon.InfoGain("Class")),
                             output=sqlanon.Output(view="by_gain"))
    # Table 2c: the 24 records of 10th mix 20Y and 4N
    assert masked(con, gain.view) == [("10th", "ANY_Sex", 30, 40, 20, 4), ("8th", "ANY_Sex", 30, 40, 0, 4),
                                      ("9th", "ANY_Sex", 30, 40, 0, 12)]
    assert gain.outcome.refinements == 1 and gain.k_achieved == 4


@pytest.mark.engines("duckdb", "postgres")
def test_example5_on_every_engine(con):
    """The same release on DuckDB and PostgreSQL (the compression is one GROUP BY with FILTER
    counts), published as a live view; with two QIDs the live view re-checks both."""
    from tests.support import frame, load_frame

    records = [(edu, sex, hours, label) for edu, sex, hours, y, n in TABLE2
               for label, count in (("Y", y), ("N", n)) for _ in range(count)]
    df = pd.DataFrame(records, columns=["Education", "Sex", "Work_Hrs", "Class"])
    df.insert(0, "id", range(len(df)))
    load_frame(con, "t", df, primary_key="id")
    hierarchies = {"Education": EDU2, "Sex": SEX}
    release = sqlanon.anonymize(con, "t", qid=["Education", "Sex", "Work_Hrs"], k=4, target="Class",
                                hierarchies=hierarchies, algorithm=sqlanon.TopDown())
    assert not release.materialized and release.outcome.refinements == 2 and release.k_achieved == 6
    got = frame(con, 'SELECT "Sex", "Work_Hrs_min", count(*) AS n FROM t_anon GROUP BY 1, 2 ORDER BY 1, 2')
    assert got.values.tolist() == [["F", 30, 6], ["F", 40, 8], ["M", 30, 6], ["M", 40, 20]]
    two = sqlanon.anonymize(con, "t", target="Class", hierarchies=hierarchies,
                            privacy=[sqlanon.KAnonymity(4, qid=["Education", "Sex"]),
                                     sqlanon.KAnonymity(11, qid=["Sex", "Work_Hrs"])],
                            algorithm=sqlanon.TopDown(), output=sqlanon.Output(view="two"))
    assert two.verification.ok and [q.ok for q in two.verification.qids] == [True, True]
