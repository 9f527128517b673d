"""Requests and releases the tests share: :func:`request_options` writes a test's table of cases
as :func:`sqlanon.anonymize` arguments; :func:`suppressing_release` makes a release with
suppressed rows by each search of :data:`SUPPRESSING`."""

from __future__ import annotations

import numpy as np
import pandas as pd

import sqlanon
from tests.support.db import load_frame


def request_options(**options) -> dict:
    """Keyword arguments of :func:`sqlanon.anonymize` from a test's table of cases written with
    the algorithms' and the output's arguments side by side (``memory_rows``, ``strategy``,
    ``sample_rows``, ``criterion``, ``constraints``, ``recoding``, ``view``, ``key``, ...): each
    is put into its object (``Mondrian``/``Levels``/``Sample``, ``TopDown``, ``Output``,
    ``privacy=``), as the call site would write it."""
    out = dict(options)
    output = {k: out.pop(k) for k in ("view", "replace", "key", "class_column") if k in out}
    if output:
        out["output"] = sqlanon.Output(**output)
    if "constraints" in out:
        out["privacy"] = list(out.pop("constraints"))
    if "qids" in out:
        out["privacy"] = [sqlanon.KAnonymity(k, qid=c) for c, k in out.pop("qids")] + out.get("privacy", [])
    criterion = out.pop("criterion", None)
    if out.pop("recoding", "multi") == "single":
        search = out.pop("search", "tdr")
        kind = {"tdr": sqlanon.TopDown, "genetic": sqlanon.Genetic, "optimal": sqlanon.Optimal}[search]
        args = {k: out.pop(k) for k in ("max_steps", "max_seconds", "metric", "budget", "iterations", "seed") if k in out}
        out.pop("memory_rows", None)
        out["algorithm"] = kind(criterion, **args) if criterion is not None else kind(**args)
        return out
    strategy = out.pop("strategy", None)
    memory = {"memory_rows": out.pop("memory_rows")} if "memory_rows" in out else {}
    sample = {new: out.pop(old) for old, new in (("sample_rows", "rows"), ("confidence", "confidence"),
                                                   ("seed", "seed")) if old in out}
    if strategy == "sample" or (strategy is None and sample):
        chosen = sqlanon.Sample(**sample, **memory)
    elif strategy == "levels" or memory:
        chosen = sqlanon.Levels(**memory)
    else:
        chosen = "auto" if strategy is None else strategy  # "auto", or a wrong value the object refuses
    if criterion is not None or chosen != "auto":
        out["algorithm"] = sqlanon.Mondrian(criterion, chosen)
    return out


#: A ZIP hierarchy of three branches (``11``, ``12`` under ``1*``, ...; root ``*``).
ZIP = [[f"{a}{b}", f"{a}*", "*"] for a in "123" for b in "12"]
#: The searches that suppress rows: ``anonymize`` keyword arguments by name.
SUPPRESSING = {
    "mondrian": {},
    "optimal": {"algorithm": sqlanon.Optimal(metric="LM")},
    "genetic": {"algorithm": sqlanon.Genetic(metric="LM", seed=1, iterations=200)},
}


def suppressing_release(con, search: str, key: str | None = None, view: str = "t_anon"):
    """Table ``t`` (49 rows: ``id``; ``zip``, four leaves of 10 rows and branch ``3*`` of 9;
    ``age`` = id % 7, but 1000 for id 48) and its release ``view`` by ``SUPPRESSING[search]``
    with ``k=10`` and ``suppression=0.2`` (limit floor(0.2 x 49) = 9): branch ``3*`` cannot form
    a class, so the search suppresses rows (Mondrian the age outlier). Returns ``(release, qid)``
    (the optimal lattice needs a hierarchy per QI: zip alone)."""
    z = ["11"] * 10 + ["12"] * 10 + ["21"] * 10 + ["22"] * 10 + ["31"] * 9
    age = np.arange(len(z)) % 7
    age[48] = 1000
    load_frame(con, "t", pd.DataFrame({"id": np.arange(len(z)), "zip": z, "age": age}))
    qid = ["zip"] if search == "optimal" else ["zip", "age"]
    release = sqlanon.anonymize(con, "t", qid, 10, hierarchies={"zip": ZIP}, suppression=0.2,
                                **SUPPRESSING[search], output=sqlanon.Output(view=view, key=key))
    assert release.suppressed > 0 and release.verification.ok and release.verification.suppression_limit == 9
    return release, qid
