"""An independent, deliberately simple Mondrian oracle (k-anonymity only).

sqlanon pushes Mondrian into SQL; this module states the same algorithm in plain Python so the
tests can demand that both produce *exactly* the same partition. Clarity wins over speed here,
except in :func:`reference_mondrian_fast`, the tight numpy yardstick used by the benchmarks.

Specification (shared with the library)
---------------------------------------
Domain encoding per quasi-identifier (QI):

* hierarchical QI: ARX rows ``[leaf, level1, ..., root]``. A node is its path from the root;
  children are ordered by first appearance reading the rows top to bottom; leaves are numbered
  in DFS pre-order, so every node covers a contiguous interval of leaf codes. A NULL value maps
  to an implicit extra leaf, the *first* child of the root (leaf code 0), present only if the
  column has NULLs.
* ordered QI: the sorted distinct non-null values get codes ``0..m-1``; a NULL, if present,
  gets code 0 and shifts the others by one. ``num(code)`` is the value used for ranking:
  numbers -> float, dates -> days since 1970-01-01, timestamps -> microseconds since the epoch,
  anything else (strings, booleans) -> the code itself. On a numeric/temporal column with NULLs
  ``num(NULL) = num(v_1) - (num(v_m) - num(v_1)) / (m - 1)`` (a gap of 1 when ``m == 1``), i.e.
  NULL sits one average gap below the smallest value.

A partition with rows R (n = |R|):

1. candidates: an ordered QI whose codes in R satisfy ``cmin < cmax``, with normalized range
   ``w = (num(cmax) - num(cmin)) / (num(ncodes - 1) - num(0))`` (0 if the denominator is 0);
   a hierarchical QI whose node is not a leaf, with ``w = leaves(node) / leaves(root)``.
2. candidates are tried by ``w`` descending, ties by position in ``qid``.
3. ordered split: distinct codes ``u_0 < ... < u_{p-1}`` with cumulative counts ``L_j``; cut j
   (rows with code <= u_j go left) is allowed iff ``L_j >= k and n - L_j >= k``; the allowed cut
   minimizing ``(|2 L_j - n|, j)`` wins. Hierarchical split: one child partition per child node
   (empty ones included); allowed iff every child has 0 or >= k rows.
   The first candidate with an allowed split is split; if there is none, R is a region.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np
import pandas as pd

Node = tuple  # a hierarchy node: its path of labels from the root; the NULL leaf's label is None


@dataclass(frozen=True)
class OrderedDomain:
    """An ordered QI: a code per row and ``num(code)`` for every code."""

    codes: np.ndarray  # int64, one code per row position
    nums: list[float]  # nums[c] = num(c)


@dataclass(frozen=True)
class HierarchyDomain:
    """A hierarchical QI: a leaf code per row and the tree with each node's leaf interval."""

    codes: np.ndarray  # int64 leaf code per row position
    root: Node
    children: dict[Node, list[Node]]  # only internal nodes appear as keys
    interval: dict[Node, tuple[int, int]]  # node -> (first, last) leaf code it covers


Domain = OrderedDomain | HierarchyDomain


@dataclass(frozen=True)
class Region:
    """A final partition: its row positions and its box (per QI: a code interval or a node)."""

    rows: tuple[int, ...]
    box: dict[str, tuple]


# ----------------------------------------------------------------------------- encoding
def _num(v: object) -> float | None:
    """The ranking value of a non-null value, or None if it is neither numeric nor temporal."""
    if isinstance(v, (bool, np.bool_)):  # bool is an int subclass, but ranks by its code
        return None
    if isinstance(v, (int, float, np.integer, np.floating)):
        return float(v)
    if isinstance(v, dt.datetime):  # before dt.date: datetime (and pd.Timestamp) subclass it
        epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc if v.tzinfo else None)
        return float((v - epoch) // dt.timedelta(microseconds=1))
    if isinstance(v, dt.date):
        return float((v - dt.date(1970, 1, 1)).days)
    return None


def _ordered_domain(values: list) -> OrderedDomain:
    is_null = [bool(pd.isna(v)) for v in values]
    distinct = sorted({v for v, null in zip(values, is_null) if not null})
    offset = 1 if any(is_null) else 0  # NULL takes code 0 and shifts the rest
    code_of = {v: i + offset for i, v in enumerate(distinct)}
    codes = np.array([0 if null else code_of[v] for v, null in zip(values, is_null)], np.int64)

    nums = [_num(v) for v in distinct]
    if any(x is None for x in nums):  # strings, booleans, ...: rank by the code itself
        return OrderedDomain(codes, [float(c) for c in range(len(distinct) + offset)])
    if offset:  # NULL sits one average gap below the smallest value
        m = len(nums)
        gap = (nums[-1] - nums[0]) / (m - 1) if m > 1 else 1.0
        nums = [nums[0] - gap if m else 0.0] + nums
    return OrderedDomain(codes, nums)


def _leaf_text(v: object, leaves: dict[str, int]) -> str:
    """The text of the leaf that value v denotes (a float 3.0 may be spelled '3.0' or '3')."""
    texts = [str(v)]
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        texts.append(str(int(v)))
    for text in texts:
        if text in leaves:
            return text
    raise ValueError(f"value {v!r} is not a leaf of its hierarchy")


def _hierarchy_domain(values: list, rows: list[list[str]]) -> HierarchyDomain:
    root: Node = (rows[0][-1],)
    children: dict[Node, list[Node]] = {}
    for row in rows:
        if row[-1] != root[0]:
            raise ValueError(f"hierarchy row {row!r} does not end with the root {root[0]!r}")
        path: Node = ()
        for label in reversed(row):  # walk root -> leaf, recording children in first-seen order
            child = path + (label,)
            if path and child not in children.setdefault(path, []):
                children[path].append(child)
            path = child
    is_null = [bool(pd.isna(v)) for v in values]
    if any(is_null):
        # The implicit NULL leaf: the root's first child, so it takes leaf code 0.
        children.setdefault(root, []).insert(0, root + (None,))

    interval: dict[Node, tuple[int, int]] = {}

    def number(node: Node, first: int) -> int:
        """Number the leaves under node in DFS pre-order from `first`; return the next code."""
        nxt = first
        for child in children.get(node, []):
            nxt = number(child, nxt)
        if node not in children:  # a leaf
            nxt = first + 1
        interval[node] = (first, nxt - 1)
        return nxt

    number(root, 0)
    leaves: dict[str, int] = {}
    for node, (first, _) in interval.items():
        if node not in children and node[-1] is not None:
            if node[-1] in leaves:
                raise ValueError(f"leaf {node[-1]!r} appears twice in the hierarchy")
            leaves[node[-1]] = first
    codes = np.array(
        [0 if null else leaves[_leaf_text(v, leaves)] for v, null in zip(values, is_null)],
        np.int64,
    )
    return HierarchyDomain(codes, root, children, interval)


# ----------------------------------------------------------------------------- splitting
def _width(dom: Domain, rows: np.ndarray, node: tuple) -> float | None:
    """Normalized range w of a candidate attribute, None if it is not a candidate."""
    if isinstance(dom, HierarchyDomain):
        if node not in dom.children:
            return None
        first, last = dom.interval[node]
        root_first, root_last = dom.interval[dom.root]
        return (last - first + 1) / (root_last - root_first + 1)
    codes = dom.codes[rows]
    cmin, cmax = int(codes.min()), int(codes.max())
    if cmin == cmax:
        return None
    denominator = dom.nums[-1] - dom.nums[0]
    return (dom.nums[cmax] - dom.nums[cmin]) / denominator if denominator else 0.0


def _splits(dom: Domain, rows: np.ndarray, node: tuple, ok) -> list[tuple]:
    """Every allowed split on one attribute: ``(children, balance, cut)`` with children a list of
    (rows, box); ``ok(rows)`` judges a non-empty child."""
    n = len(rows)
    codes = dom.codes[rows]
    if isinstance(dom, HierarchyDomain):
        parts = []
        for child in dom.children[node]:
            first, last = dom.interval[child]
            parts.append((rows[(codes >= first) & (codes <= last)], child))
        return [] if any(len(p) and not ok(p) for p, _ in parts) else [(parts, 0, -1)]
    out = []
    lo, hi = node
    for cut in np.unique(codes)[:-1]:
        left, right = rows[codes <= cut], rows[codes > cut]
        if ok(left) and ok(right):
            out.append(([(left, (lo, int(cut))), (right, (int(cut) + 1, hi))], abs(2 * len(left) - n), int(cut)))
    return out


def _levels(value) -> tuple[float, ...]:
    return tuple(value) if isinstance(value, tuple) else (value,)


def _mondrian(
    domains: list[Domain], rows: np.ndarray, state: tuple, ok, impurity, min_gain: float, out: list[tuple],
    weak=None,
) -> None:
    if len(rows) == 0:  # an empty hierarchy child: a partition, but never split or returned
        return
    candidates = []
    for i, dom in enumerate(domains):
        w = _width(dom, rows, state[i])
        if w is not None:
            candidates.append((-w, i))  # sorts by w descending, then QI position ascending
    options = []  # (rank position, balance, cut, children, normalized impurity, gain)
    for r, (_, i) in enumerate(sorted(candidates)):
        for children, balance, cut in _splits(domains[i], rows, state[i], ok):
            if impurity is None:
                options.append((r, balance, cut, i, children, 0.0, 0.0))
                continue
            # Levels compared lexicographically (one level unless impurity returns a tuple).
            base = _levels(impurity(rows, rows))
            total = [sum(t) for t in zip(*(_levels(impurity(c, rows)) for c, _ in children if len(c)))]
            key = tuple(round(t / (b if b > 0 else 1.0) / 1e-12) * 1e-12 for t, b in zip(total, base))
            gain = tuple((b - t) / len(rows) for t, b in zip(total, base))
            options.append((r, balance, cut, i, children, key, gain))
        if options and impurity is None:
            break  # Median: the first attribute (in rank order) with an allowed split
    if not options:
        out.append((rows, state))
        return
    if impurity is None:
        best = min(options, key=lambda o: (o[1], o[2]))
    else:
        best = min(options, key=lambda o: (o[5], o[0], o[1], o[2]))
        if (weak(best[6]) if weak is not None else best[6][0] < min_gain):
            best = min(options, key=lambda o: (o[0], o[1], o[2]))
    _, _, _, i, children, _, _ = best
    for child_rows, child_node in children:
        _mondrian(domains, child_rows, state[:i] + (child_node,) + state[i + 1 :], ok, impurity, min_gain, out, weak)


def reference_regions(
    df: pd.DataFrame, qid: list[str], k: int, hierarchies: dict[str, list[list[str]]] | None = None,
    *, ok=None, impurity=None, min_gain: float = 0.0, weak=None,
) -> list[Region]:
    """Mondrian regions of ``df`` with their boxes, in depth-first (left to right) order.

    A box maps each QI to its code interval ``(lo, hi)`` (ordered QI) or its node path
    (hierarchical QI; the NULL leaf's label is None).

    Beyond k-anonymity, ``ok(rows) -> bool`` may judge every non-empty child (its row
    positions), and ``impurity(rows, partition_rows) -> float`` turns Median into a workload
    criterion: among every allowed split of every candidate attribute, the smallest total
    impurity of the children normalized by the partition's own (rounded to 1e-12), ties by rank
    position, balance, cut; a best split gaining less than ``min_gain`` per row gives way to the
    Median choice (rank position, balance, cut). ``impurity`` may return a tuple of levels,
    compared lexicographically (Selection Mondrian: imprecision, then the inner criterion);
    ``weak(gains) -> bool`` then replaces the ``min_gain`` test.
    """
    hierarchies = hierarchies or {}
    if not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    if not qid or len(set(qid)) != len(qid):
        raise ValueError(f"qid must name distinct columns, got {qid!r}")
    missing = [c for c in [*qid, *hierarchies] if c not in df.columns or c not in qid]
    if missing:
        raise ValueError(f"unknown quasi-identifier(s): {missing}")
    if len(df) < k:
        raise ValueError(f"the table has {len(df)} rows, fewer than k = {k}")

    domains: list[Domain] = []
    root_state: list[tuple] = []
    for col in qid:
        values = df[col].tolist()  # positional, Python scalars (Timestamps for datetime64)
        if col in hierarchies:
            dom = _hierarchy_domain(values, hierarchies[col])
            root_state.append(dom.root)
        else:
            dom = _ordered_domain(values)
            root_state.append((0, len(dom.nums) - 1))
        domains.append(dom)

    out: list[tuple] = []
    k = int(k)

    def judge(rows: np.ndarray) -> bool:
        return len(rows) >= k and (ok is None or ok(rows))

    _mondrian(domains, np.arange(len(df)), tuple(root_state), judge, impurity, min_gain, out, weak)
    return [Region(tuple(int(r) for r in rows), dict(zip(qid, state))) for rows, state in out]


def reference_mondrian(
    df: pd.DataFrame, qid: list[str], k: int, hierarchies: dict[str, list[list[str]]] | None = None,
    **workload,
) -> set[frozenset[int]]:
    """The Mondrian partition of ``df``: the set of regions, each a frozenset of row positions."""
    return {frozenset(r.rows) for r in reference_regions(df, qid, k, hierarchies, **workload)}


# ----------------------------------------------------------------------------- fast numpy
def _choose_cut(node: np.ndarray, k: int, denom: np.ndarray) -> np.ndarray | None:
    """Boolean mask of the left child of the winning cut of ``node`` (m rows), or None.

    Candidates are tried by ``w = (max - min) / (column range of the whole table)`` descending,
    ties by column index. On one column, with ``t = ceil(m/2) - 1`` and ``v`` the t-th smallest
    value (0-based), only two cuts can win:

    * ``col < v``:  ``L = count(col < v)`` is the largest achievable left size ``<= t < m/2``;
    * ``col <= v``: ``L = count(col <= v)`` is the smallest achievable left size ``>= m/2``.

    The allowed left sizes are the achievable ones inside ``[k, m - k]``, an interval symmetric
    about m/2, and ``|2L - m|`` falls as L rises towards m/2 and grows past it. So if ``col < v``
    is not allowed no smaller cut is either (it would be < k), and if ``col <= v`` is not
    allowed no larger cut is (it would be > m - k): then the column has no allowed cut at all.
    Between the two the tie goes to the smaller L, i.e. the lower cut, as in the oracle.
    """
    m = len(node)
    lo, hi = node.min(0), node.max(0)  # one pass per bound for all columns
    w = (hi.astype(np.float64) - lo.astype(np.float64)) / denom
    t = (m + 1) // 2 - 1
    for j in np.argsort(-w, kind="stable"):  # stable: ties by column index
        if lo[j] == hi[j]:
            continue  # not a candidate: a single value in this node
        col = node[:, j]
        v = np.partition(col, t)[t]  # O(m) selection instead of a sort
        best = None
        for mask in (col < v, col <= v):  # smaller L first, so it wins ties
            size = int(np.count_nonzero(mask))
            if k <= size <= m - k and (best is None or abs(2 * size - m) < best[0]):
                best = (abs(2 * size - m), mask)
        if best is not None:
            return best[1]
    return None


def reference_mondrian_fast(X: np.ndarray, k: int) -> np.ndarray:
    """Mondrian region label (int64, arbitrary numbering) per row of an (n, d) numeric matrix.

    Same semantics as :func:`reference_mondrian` for ordered numeric QIs without NULLs. Works
    depth-first with an explicit stack over contiguous slices of a reordered copy of X: a node
    is ``X[lo:hi]``, and splitting it moves its left child's rows to the front of the slice.
    Cost: per tree level O(n d) for min/max and the reordering, O(n) for the selections.
    """
    # Column-major, so each column of a node X[lo:hi] is contiguous: the per-node min/max and
    # the selection on one column then stream through memory (about 10x faster than row-major).
    X = np.array(X, copy=True, order="F")
    if X.ndim != 2:
        raise ValueError("X must be an (n, d) matrix")
    n = len(X)
    if k < 1 or n < k:
        raise ValueError(f"need 1 <= k <= n, got k = {k}, n = {n}")
    full = X.max(0).astype(np.float64) - X.min(0).astype(np.float64)
    denom = np.where(full > 0, full, 1.0)  # a constant column has w = 0, as in the oracle
    rows = np.arange(n, dtype=np.int64)  # original position of each row of the reordered X
    labels = np.empty(n, dtype=np.int64)
    regions = 0
    stack = [(0, n)]
    while stack:
        lo, hi = stack.pop()
        # Fewer than 2k rows can never be split: both sides would need k rows.
        mask = _choose_cut(X[lo:hi], k, denom) if hi - lo >= 2 * k else None
        if mask is None:
            labels[rows[lo:hi]] = regions
            regions += 1
            continue
        # Left rows first, then right rows. One index array gathers every column (contiguous,
        # column by column: faster than boolean-indexing twice or gathering 2-D rows).
        order = np.concatenate((np.flatnonzero(mask), np.flatnonzero(~mask)))
        mid = lo + int(np.count_nonzero(mask))
        for j in range(X.shape[1]):
            X[lo:hi, j] = X[lo:hi, j][order]  # the right-hand side is a copy, so this is safe
        rows[lo:hi] = rows[lo:hi][order]
        stack.append((mid, hi))
        stack.append((lo, mid))
    return labels
