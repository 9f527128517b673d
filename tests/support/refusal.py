"""A request refused before any work: the call raises the error, the catalog is unchanged, no
``__sqlanon_`` temp object is left, and on PostgreSQL the caller's transaction is still usable."""

from __future__ import annotations

import pytest

import sqlanon
from sqlanon import SqlanonError
from tests.support.db import is_postgres, objects, rows, temp_objects


def usable(con) -> None:
    """On PostgreSQL, the caller's transaction is open and still usable: sqlanon rolled back to
    its savepoint, never leaving the transaction aborted (DuckDB: nothing to check)."""
    if is_postgres(con):
        from psycopg import pq

        assert con.info.transaction_status == pq.TransactionStatus.INTRANS
        assert rows(con, "SELECT 1") == [(1,)]


def refused(con, exc: type[SqlanonError], table: str = "people", **kwargs) -> str:
    """Call anonymize, expecting exactly ``exc``; check nothing was written; return the message."""
    before = objects(con)
    args = {"table": table, "qid": ["age", "zip"], "k": 5}
    args.update(kwargs)
    output = {key: args.pop(key) for key in ("view", "replace", "key", "class_column") if key in args}
    with pytest.raises(SqlanonError) as info:  # (the objects check their own arguments: built inside)
        if output:
            args["output"] = sqlanon.Output(**output)
        if "memory_rows" in args:
            args["algorithm"] = sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=args.pop("memory_rows")))
        sqlanon.anonymize(con, **args)
    assert type(info.value) is exc, f"{type(info.value).__name__}: {info.value}"
    usable(con)  # on PostgreSQL objects() above opened the caller's transaction: sqlanon ran in it
    assert objects(con) == before
    assert temp_objects(con) == []
    return str(info.value)


def refused_call(con, exc: type[SqlanonError], call, *args, **kwargs) -> str:
    """Run ``call``, expecting ``exc`` (or a subclass); check nothing was written; return the message."""
    before = objects(con)
    with pytest.raises(exc) as info:
        call(*args, **kwargs)
    if is_postgres(con):  # raised inside the transaction objects() opened: still usable
        assert rows(con, "SELECT 1") == [(1,)]
    assert objects(con) == before
    assert temp_objects(con) == []
    return str(info.value)
