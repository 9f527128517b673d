"""Threads for the in-memory finish.

numpy releases the GIL inside its array loops (sorts, gathers, reductions, running sums), so
independent pieces of one level — the frequency groups of each layer of (partition, QI) pairs,
the search for the best cut in disjoint runs of pairs — run on several cores at once. Every
piece computes exactly what it would compute alone and the results are merged in a fixed
order, so the partition never depends on the number of threads.

The number of threads is the connection's DuckDB ``threads`` setting (``SET threads = 1``
makes the whole run single-threaded).

:func:`small_pages` keeps numpy from asking for transparent huge pages while a batch is fetched
and finished (see there); :func:`return_free_memory` gives the C heap's free pages back to the
kernel once the finish is done.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from typing import TypeVar

import numpy as np

T = TypeVar("T")
R = TypeVar("R")


@lru_cache(maxsize=None)
def _pool(threads: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=threads, thread_name_prefix="sqlanon")


def run_all(fn: Callable[[T], R], items: Iterable[T], threads: int,
            cost: Callable[[T], float] | None = None) -> list[R]:
    """``[fn(x) for x in items]``, on up to ``threads`` threads; results in ``items`` order.

    ``cost``: the items are started largest first (Graham's LPT rule), so one large item taken
    last does not leave the other threads idle (the widest QI of a 10M-row batch holds 60 % of
    its codes: scanned last, its histogram kept one thread busy while the other waited)."""
    items = list(items)
    if threads <= 1 or len(items) <= 1:
        return [fn(x) for x in items]
    if cost is None:
        return list(_pool(threads).map(fn, items))
    order = sorted(range(len(items)), key=lambda i: -cost(items[i]))
    done = list(_pool(threads).map(fn, [items[i] for i in order]))
    out: list[R] = [done[0]] * len(items)
    for i, r in zip(order, done):
        out[i] = r
    return out


@contextlib.contextmanager
def small_pages() -> Iterator[None]:
    """Inside the block numpy does not advise the kernel to back its large arrays with
    transparent huge pages (``madvise(MADV_HUGEPAGE)``, its default on Linux). Where the kernel
    has to compact memory to find huge pages — the engine's buffer pool beside us fragments it —
    every first touch of a new array stalls: at 10M rows the batch's 360 MB of codes took 0.9 s
    to fill instead of 0.2 s, and the fetch and finish 0.65 s longer in all. A batch's arrays are
    written once and read a few times, so small pages cost it nothing measurable. Nested and
    concurrent blocks share one switch (the setting is the process's); numpy's previous setting
    is restored when the last one ends. A numpy without the switch runs the block unchanged."""
    global _small_users, _small_was
    switch = getattr(getattr(getattr(np, "_core", None), "multiarray", None), "_set_madvise_hugepage", None)
    if switch is None:
        yield
        return
    with _small_lock:
        if _small_users == 0:
            _small_was = bool(switch(False))
        _small_users += 1
    try:
        yield
    finally:
        with _small_lock:
            _small_users -= 1
            if _small_users == 0:
                switch(_small_was)


_small_lock = threading.Lock()
_small_users = 0  # blocks inside small_pages now
_small_was = True  # numpy's setting before the first of them


def return_free_memory() -> None:
    """Give the free pages of the C heap back to the kernel (glibc's ``malloc_trim(0)``).

    The finish allocates and frees many arrays below glibc's mmap threshold (which rises to
    32 MB as large blocks are freed), so they come from the heap, and freed heap pages stay
    resident: after the finish of 100M rows the heap held 0.29 GiB free through the whole
    publication, the run's peak. Called where a phase that made such arrays ends and memory
    is needed next: after the in-memory batches (before their leaves become matrices), when
    the publication starts (before the rules' arrays) and after the rules (before its longest
    statements); each call took a few milliseconds at 100M rows. A C library without
    ``malloc_trim`` (not glibc) is left as is.
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@lru_cache(maxsize=None)
def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    try:
        return getattr(ctypes.CDLL(name), "malloc_trim", None) if name else None
    except OSError:
        return None
