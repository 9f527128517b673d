"""Threads for the in-memory finish.

numpy releases the GIL inside its array loops (sorts, gathers, reductions, running sums), so
independent pieces of one level — the frequency groups of each layer of (partition, QI) pairs,
the search for the best cut in disjoint runs of pairs — run on several cores at once. Every
piece computes exactly what it would compute alone and the results are merged in a fixed
order, so the partition never depends on the number of threads.

The number of threads is the connection's DuckDB ``threads`` setting (``SET threads = 1``
makes the whole run single-threaded).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


@lru_cache(maxsize=None)
def _pool(threads: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=threads, thread_name_prefix="sqlanon")


def run_all(fn: Callable[[T], R], items: Iterable[T], threads: int) -> list[R]:
    """``[fn(x) for x in items]``, on up to ``threads`` threads; results in ``items`` order."""
    items = list(items)
    if threads <= 1 or len(items) <= 1:
        return [fn(x) for x in items]
    return list(_pool(threads).map(fn, items))
