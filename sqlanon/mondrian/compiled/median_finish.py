"""The in-memory finish of Median Mondrian under k-anonymity and privacy models, depth-first in
compiled loops.

:meth:`Partitioner.run_memory <sqlanon.mondrian.builder.Partitioner.run_memory>` finishes a
batch level by level with frequency groups, the engine every criterion shares. For the default
request — the :class:`~sqlanon.model.criteria.Median` criterion, k-anonymity and any privacy
models that have a compiled face (:meth:`~sqlanon.model.privacy.base.Constraint.face`), every QI
ordered, with or without a suppression budget — each split depends on nothing but its partition's
rows (and its budget), so :func:`finish` grows the
batch's partitions depth-first instead (like ``reference_mondrian_fast`` in
``tests/reference_mondrian.py``, LeFevre et al., ICDE 2006): a partition's rows are a
contiguous run of a row-major copy of the codes, a split moves its left child's rows to the
front of the run in place (computing both children's code extents on the way), and once a
partition fits in the CPU caches all its descendants are finished there. The loops release
the GIL: after a few splits the open partitions are shared out over ``threads`` threads.

**Why it is exact** — the same decision as :meth:`Partitioner.decide` with
:func:`sqlanon.mondrian.split.evaluate`, step by step:

* Candidates (:func:`sqlanon.model.criteria.rank`): none in a partition of fewer than
  ``2 min_size`` rows; else the QIs with ``cmin < cmax``, widest normalized range first —
  ``w = (num[cmax] - num[cmin]) / (num[-1] - num[0])`` (0 when that span is 0), the same
  float64 operations as numpy's, so the same values — ties by QI position (the first of the
  largest ``w`` in position order is the first of a stable sort of ``-w``).
* The cut of one QI (:func:`sqlanon.mondrian.split._most_balanced` under k-anonymity alone):
  among the cuts ``c`` (present codes but the largest; ``L(c)`` rows ``<= c``) with
  ``least <= L <= n - least`` (``least = max(1, min_size)``), the smallest ``(|2L - n|, c)``.
  ``L`` grows with ``c``, so the unconstrained smallest ``(|2L - n|, c)`` is either the
  median code ``v`` (the ``ceil(n/2)``-th smallest: the first with ``2L >= n``) or the largest
  code below it, whichever is more balanced (the lower on a tie); and the window is symmetric
  about ``n/2``, so if that cut is outside it every cut is (each is at least as unbalanced): the
  QI has no allowable cut, and the next one in rank order is asked. ``v`` comes from a
  histogram of the run's codes when its code range is at most about twice its rows, else from
  a quickselect; then one pass counts the rows below ``v`` and finds the largest code below it.
* Under privacy models beyond k (:func:`_model_cut`), the cut of one QI is
  :func:`sqlanon.mondrian.split._most_balanced`'s: among the cuts in the size window whose both
  children pass every model, the smallest ``(|2L - n|, c)``. The cuts are met in that order
  walking outwards from the median (on each side balance grows with the distance; of equal
  balance the left cut, the lower code, first), so the first allowable cut met is it. A child is
  judged by the model's compiled face (:mod:`sqlanon.model.privacy.compiled`) from its value
  counts or integer moments, the same float operations as the numpy judgement; the sensitive
  values of each row move with its codes. Usually the cut nearest the median passes, judged
  after one pass over the rows; only otherwise are the rows sorted by code for the walk.
* **A suppression budget** (:mod:`sqlanon.mondrian.suppression`): a partition with budget
  ``b > 0`` is a candidate whatever its size; when no QI has an ordinary cut, each QI's best
  suppressing cut (:func:`_trim`, :func:`_trim_models` under privacy models: one side fails,
  at most ``b`` rows, positive gain; the fewest suppressed rows per gain, then the most
  balanced, then the lowest cut) is compared with the earlier QIs' (strictly cheaper wins, so
  rank order breaks ties), and the cheapest is taken: its failing side is a suppressed leaf.
  The children's budgets are :func:`~sqlanon.mondrian.suppression.share_budget`'s for two
  children (:func:`_shares`). The same float64 operations on the same extents as numpy's.
* A partition whose candidates have no allowable cut is a leaf with its rows' extents.

Only the numbering comes out of the loops differently — and is put back: the level-by-level
path gives each level's children consecutive ids in (parent, child) order, so after the
depth-first growth the nodes are numbered breadth-first exactly that way (:func:`_number`),
and the leaves are listed in the order that path records them (by level, then id). The rules,
regions and ids are therefore identical to the general path's (``tests/mondrian/test_median_finish.py``
compares them on random tables; ``builder._MEDIAN_FINISH = False`` forces the general path).

Everything else takes the general path: other criteria, models without a compiled face (the
hierarchical t-closeness, Rothko-S's sample tests), variance diversity over a column summed in
floats, entropy l-diversity on batches beyond the ``c ln c`` table, hierarchical QIs, and the
sampling strategy's grower.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence

import numpy as np
from numba import njit

from ...model.criteria import Criterion, Median
from ...model.domain import Domain
from ...model.parallel import run_all
from ...model.privacy import Constraint
from ...model.privacy.base import DISTINCT, ENTROPY, Face
from ...model.privacy.compiled import passes, table
from ...model.summaries import XLOGX_ROWS


def applies(criterion: Criterion, constraints: Sequence[Constraint], domains: Sequence[Domain],
            budget: np.ndarray, exact: Callable[[str], bool] = lambda column: False, rows: int = 0) -> bool:
    """Whether :func:`finish` gives the partition of this request (see the module docstring).

    ``exact(column)``: whether a numeric column's moments are summed as integers; ``rows``: the
    largest partition to finish."""
    chosen = faces(constraints, exact)
    return (_takes(criterion, constraints) and chosen is not None and len(domains) > 0
            and all(d.num is not None for d in domains)
            and (rows < XLOGX_ROWS or not any(f.kind == ENTROPY for f in chosen)))


def takes(criterion: Criterion, constraints: Sequence[Constraint], exact: Callable[[str], bool]) -> bool:
    """The request's part of :func:`applies` (what a request can be asked before its batches):
    Median under k-anonymity and privacy models that have a compiled face reading columns summed
    as ``exact`` says."""
    return _takes(criterion, constraints) and faces(constraints, exact) is not None


def _takes(criterion: Criterion, constraints: Sequence[Constraint]) -> bool:
    """The request's part of :func:`applies`: Median under k-anonymity and privacy models that
    have a compiled face."""
    return type(criterion) is Median and len(constraints) > 0 and \
        all(c.size_only or c.face() is not None for c in constraints)


def faces(constraints: Sequence[Constraint], exact: Callable[[str], bool]) -> list[Face] | None:
    """The compiled faces of the constraints beyond size (k-anonymity is the size window); None
    when one has none, or reads moments that are not summed as integers."""
    out = []
    for c in constraints:
        if c.size_only:
            continue
        face = c.face()
        if face is None or (face.numeric and not exact(face.column)):
            return None
        out.append(face)
    return out


def finish(codes: np.ndarray, seg_n: np.ndarray, domains: Sequence[Domain], min_size: int,
           threads: int = 1, inplace: bool = False, models: Sequence[Face] = (),
           values: Mapping[str, np.ndarray] | None = None,
           sizes: Mapping[str, int] | None = None, budget: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Grow the partitions of a batch to their leaves.

    Args:
        codes: (d, M) the batch's QI codes, rows partition by partition (``seg_n`` rows each).
        seg_n: rows of each open partition (all > 0), in batch order.
        min_size: the fewest rows a class may have (k, or more: the models' ``min_size``).
        inplace: the rows of ``codes`` may be reordered in place (when ``codes.T`` is a
            row-major int32 array, no copy is made).
        models: the compiled faces of the privacy models beyond k (:func:`faces`): every child
            of a split must pass them all.
        values: the column each face reads, by name, in batch row order: value codes
            (0..size-1) of a class column, integer (centered) values of a numeric one.
        sizes: each class column's number of value codes.
        budget: the rows each open partition may still suppress (``suppression=``, k-anonymity
            alone: :func:`_trim`); None: none may.

    Returns the node table restricted to the nodes made (roots first, ``0..R-1`` in batch
    order): ``parent``, ``child`` (0 left, 1 right), ``depth``, ``n``, ``attr`` (split QI, -1
    for a leaf), ``cut``, ``cmin``/``cmax`` (extents; boxes: :func:`boxes`), ``budget`` (the
    rows a node may suppress), ``suppressed`` (a suppressed leaf: its rows are published
    suppressed), plus ``row`` and ``leaf``: each batch row (by position) and the index of its
    leaf in the table.
    """
    nums = [np.asarray(dom.num, dtype=np.float64) for dom in domains]
    return _finish(codes, seg_n, nums, max(dom.size for dom in domains), min_size, threads, inplace,
                   Models.of(models, values or {}, sizes or {}, codes.shape[1], int(seg_n.max(initial=0))),
                   budget)


class Models:
    """The faces' arrays (:func:`sqlanon.model.privacy.compiled.table`) and the rows' sensitive
    values ``Y`` (M, class columns then numeric ones; int64), which move with the rows."""

    def __init__(self, Y: np.ndarray, ncls: int, arrays: tuple[np.ndarray, ...]) -> None:
        self.Y, self.ncls, self.arrays = Y, ncls, arrays

    @classmethod
    def of(cls, models: Sequence[Face], values: Mapping[str, np.ndarray], sizes: Mapping[str, int], M: int,
           largest: int) -> Models:
        counted = list(dict.fromkeys(f.column for f in models if not f.numeric))
        numeric = list(dict.fromkeys(f.column for f in models if f.numeric))
        Y = np.empty((M, len(counted) + len(numeric)), dtype=np.int64)
        for i, name in enumerate(counted + numeric):
            Y[:, i] = values[name]
        cols = [counted.index(f.column) if not f.numeric else numeric.index(f.column) for f in models]
        return cls(Y, len(counted), table(models, cols, [sizes[c] for c in counted], max(largest, 1)))

    def scratch(self, rows: int) -> tuple[np.ndarray, ...]:
        """One thread's work arrays: the rows' code order, value counts and moments of four
        classes (:func:`_model_cut`), and a buffer of one column's counts."""
        sizes = self.arrays[6]
        T = self.Y.shape[1] - self.ncls
        return (np.empty(rows if len(self.arrays[0]) else 0, dtype=np.int64),
                np.zeros((4, int(sizes.sum())), dtype=np.int64), np.zeros((4, T, 3), dtype=np.int64),
                np.zeros(max(1, int(sizes.max(initial=1))), dtype=np.int64))



def warm(models: bool = False) -> None:
    """Load the compiled loops (from numba's cache, compiling them on first use after an
    install) by finishing a two-row batch: the same argument types as every real batch, under
    k alone or (``models``) under a privacy model's face (one specialization serves every
    model). Run on a thread while the engine encodes (:func:`warm_in_background`), it takes the
    loading — about 0.5 s, most of it numba's own imports — off the run's path."""
    faces = [Face(DISTINCT, "y", p=(1.0,))] if models else []
    # k = 1: one split
    _finish(np.array([[0, 1]], dtype=np.int32), np.array([2], dtype=np.int64), [np.array([0.0, 1.0])], 2, 1,
            models=Models.of(faces, {"y": np.zeros(2, dtype=np.int64)}, {"y": 1}, 2, 2))


def warm_in_background(criterion: Criterion, constraints: Sequence[Constraint],
                       ordered: bool) -> threading.Thread | None:
    """Start :func:`warm` on a daemon thread when the request may take this finish (what
    :func:`applies` asks of the request, and ``ordered``: every QI is ordered; the domains and
    the budget are not known yet), once per process, for the request's specialization (k alone,
    or privacy models). The
    engine's statements release the GIL, so the loading runs beside them. Nothing waits for
    the thread: numba's compiler lock makes a finish that starts meanwhile wait for the load."""
    global _warmed
    if _warmed or not (ordered and _takes(criterion, constraints)):
        return None
    _warmed = True
    models = not all(c.size_only for c in constraints)
    thread = threading.Thread(target=_warm_quietly, args=(models,), name="sqlanon-warm", daemon=True)
    thread.start()
    return thread


def _warm_quietly(models: bool) -> None:
    global _warmed
    try:
        warm(models)
    except Exception:  # noqa: BLE001 - only a head start: the run's own call loads (and reports) again
        _warmed = False


#: Whether :func:`warm_in_background` has run in this process.
_warmed = False


def _finish(codes: np.ndarray, seg_n: np.ndarray, nums: Sequence[np.ndarray], widest: int, min_size: int,
            threads: int = 1, inplace: bool = False, models: Models | None = None,
            budget: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """:func:`finish` with each QI's code positions ``nums``, the largest domain size ``widest``
    and the privacy models' faces ``models``."""
    if models is None:
        models = Models.of((), {}, {}, codes.shape[1], 1)
    d, M = codes.shape
    R = len(seg_n)
    least = max(1, int(min_size))
    X = np.ascontiguousarray(codes.T if inplace else codes.T.copy(), dtype=np.int32)  # a split moves whole rows
    rid = np.arange(M, dtype=np.int64)
    leaf_of = np.empty(M, dtype=np.int64)
    num = np.concatenate(nums)
    num_off = np.concatenate(([0], np.cumsum([len(x) for x in nums])[:-1])).astype(np.int64)
    span = np.array([float(x[-1] - x[0]) if len(x) else 0.0 for x in nums])
    start = np.concatenate(([0], np.cumsum(seg_n)[:-1])).astype(np.int64)

    # Node table: roots, then the nodes the first phase makes, then one area per thread. Every
    # node made holds >= least rows but the suppressed leaves (at least a row each, at most the
    # budget's rows in all: a chain of trims may cut one row at a time), so an area that
    # finishes r rows makes <= 2 (r / least + B) nodes.
    threads = max(1, int(threads))
    spent = min(int(budget.sum()), M) if budget is not None else 0
    cap1 = 2 * (M // least + spent) + 2
    cap = R + cap1 + threads * cap1
    t = NodeTable(cap, d)
    t.start[:R], t.n[:R], t.depth[:R], t.parent[:R] = start, seg_n, 0, -1
    if budget is not None:
        t.budget[:R] = budget
    _extents(X, start, seg_n.astype(np.int64), t.cmin, t.cmax)
    hist_size = min(widest, 2 * int(seg_n.max(initial=0)) + 64) + 1

    def run(todo: np.ndarray, first: int, defer: int) -> tuple[int, np.ndarray]:
        hist = np.zeros(hist_size, dtype=np.int32)
        rows = int(t.n[todo].max(initial=0))
        scratch = np.empty(rows, dtype=np.int32)
        deferred = np.empty(len(todo) + 2 * (M // least) + 2, dtype=np.int64)
        kinds, *faces = models.arrays
        used, nd = _grow(X, models.Y, rid, leaf_of, todo, first, defer, *t.arrays(), num, num_off, span, least,
                         2 * int(min_size), hist, scratch, deferred, models.ncls, kinds if len(kinds) else None,
                         *faces, *models.scratch(rows), int(min_size), t.budget, t.suppressed)
        return used, deferred[:nd]

    roots = np.arange(R, dtype=np.int64)
    areas = [(R, 0)]  # (first node, nodes made) per call
    if threads > 1 and M >= 2 * PARALLEL_ROWS:
        # First phase: split the partitions larger than a slice of the batch, defer the rest.
        defer = max(M // (8 * threads), 1)
        big = t.n[roots] > defer
        used, todo = run(roots[big], R, defer)
        todo = np.concatenate((roots[~big], todo))
        areas[0] = (R, used)
        todo = todo[np.argsort(-t.n[todo], kind="stable")]
        share = _share(t.n[todo], threads)
        firsts = [R + cap1 * (i + 1) for i in range(threads)]
        done = run_all(lambda i: run(todo[share == i], firsts[i], -1)[0], range(threads), threads)
        areas += list(zip(firsts, done))
    else:
        used, _ = run(roots, R, -1)
        areas[0] = (R, used)
    made = np.concatenate([roots] + [np.arange(f, f + u, dtype=np.int64) for f, u in areas])
    out = t.take(made)
    at = np.empty(cap, dtype=np.int64)
    at[made] = np.arange(len(made))
    out["parent"] = np.where(out["parent"] >= 0, at[np.maximum(out["parent"], 0)], -1)
    out["row"], out["leaf"] = rid, at[leaf_of]
    return out


#: Below this many batch rows the finish runs on one thread.
PARALLEL_ROWS = 50_000


def _share(n: np.ndarray, threads: int) -> np.ndarray:
    """Thread of each open partition (sorted by rows, largest first): the least loaded one."""
    load = np.zeros(threads, dtype=np.int64)
    out = np.empty(len(n), dtype=np.int64)
    for i, rows in enumerate(n.tolist()):
        out[i] = int(np.argmin(load))
        load[out[i]] += rows
    return out


class NodeTable:
    """The node table (one row per partition made): arrays the compiled loops fill."""

    fields = ("parent", "child", "depth", "start", "n", "attr", "cut")

    def __init__(self, cap: int, d: int) -> None:
        self.budget = np.zeros(cap, dtype=np.int64)
        self.suppressed = np.zeros(cap, dtype=np.bool_)
        self.parent = np.full(cap, -1, dtype=np.int64)
        self.child = np.zeros(cap, dtype=np.int64)
        self.depth = np.zeros(cap, dtype=np.int64)
        self.start = np.zeros(cap, dtype=np.int64)
        self.n = np.zeros(cap, dtype=np.int64)
        self.attr = np.full(cap, -1, dtype=np.int64)
        self.cut = np.full(cap, -1, dtype=np.int64)
        self.cmin = np.zeros((cap, d), dtype=np.int64)
        self.cmax = np.zeros((cap, d), dtype=np.int64)

    def arrays(self) -> tuple[np.ndarray, ...]:
        return (*(getattr(self, f) for f in self.fields), self.cmin, self.cmax)

    def take(self, idx: np.ndarray) -> dict[str, np.ndarray]:
        return {f: getattr(self, f)[idx] for f in (*self.fields, "cmin", "cmax", "budget", "suppressed")}


def boxes(nodes: dict[str, np.ndarray], root_lo: np.ndarray, root_hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every node's box ``[lo, hi]``: its root's, narrowed on the split QI at each split on the
    way down (left child ``[lo, cut]``, right ``[cut + 1, hi]``), level by level."""
    parent, depth = nodes["parent"], nodes["depth"]
    R = len(root_lo)
    lo = np.empty((len(parent), root_lo.shape[1]), dtype=np.int64)
    hi = np.empty_like(lo)
    lo[:R], hi[:R] = root_lo, root_hi
    by_depth = np.argsort(depth, kind="stable")
    bounds = np.searchsorted(depth[by_depth], np.arange(1, int(depth.max(initial=0)) + 2))
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        i = by_depth[a:b]
        p = parent[i]
        lo[i], hi[i] = lo[p], hi[p]
        j = nodes["attr"][p]
        cut = nodes["cut"][p]
        left = nodes["child"][i] == 0
        hi[i[left], j[left]] = cut[left]
        lo[i[~left], j[~left]] = cut[~left] + 1
    return lo, hi


def number(nodes: dict[str, np.ndarray], first_pid: int) -> np.ndarray:
    """Partition ids as the level-by-level finish gives them: the roots keep theirs (filled in
    by the caller: -1 here), and each level's children get consecutive ids from ``first_pid``
    on, in order of their parents' order in the level, left child first."""
    parent, depth, child = nodes["parent"], nodes["depth"], nodes["child"]
    pid = np.full(len(parent), -1, dtype=np.int64)
    rank = np.zeros(len(parent), dtype=np.int64)
    R = int((depth == 0).sum())
    rank[:R] = np.arange(R)
    by_depth = np.argsort(depth, kind="stable")
    bounds = np.searchsorted(depth[by_depth], np.arange(1, int(depth.max(initial=0)) + 2))
    nxt = first_pid
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        i = by_depth[a:b]
        i = i[np.argsort(rank[parent[i]] * 2 + child[i], kind="stable")]
        rank[i] = np.arange(len(i))
        pid[i] = np.arange(nxt, nxt + len(i))
        nxt += len(i)
    return pid


@njit(nogil=True, cache=True)
def _grow(X, Y, rid, leaf_of, todo, first, defer, parent, child, depth, start, n, attr, cut, cmin, cmax,
          num, num_off, span, least, small, hist, scratch, deferred, ncls, kinds, cols, ps, fa, fb, offs, sizes,
          xlogx, logn, order, cnt, mom, buf, min_size, budget, suppressed):
    """Finish the nodes ``todo`` depth-first; new nodes from table row ``first`` on. Children
    with at most ``defer`` rows (-1: none) are not grown but listed in ``deferred``. Returns
    ``(nodes made, deferred count)``.

    A node with a suppression ``budget`` (k-anonymity alone) that has no ordinary cut on any
    QI takes its QIs' best suppressing cut (:func:`_trim`: the fewest suppressed rows per gain,
    ties by rank order); the failing side becomes a ``suppressed`` leaf, and the children's
    budgets are :func:`sqlanon.mondrian.suppression.share_budget`'s (:func:`_shares`)."""
    d = X.shape[1]
    stack = np.empty(len(todo) + 2 * (len(X) // least) + 2, dtype=np.int64)
    top = 0
    for i in range(len(todo) - 1, -1, -1):
        stack[top] = todo[i]
        top += 1
    free = first
    nd = 0
    w = np.empty(d, dtype=np.float64)
    tried = np.zeros(d, dtype=np.bool_)
    while top > 0:
        top -= 1
        node = stack[top]
        s = start[node]
        m = n[node]
        # np.int64, not literals: a literal argument of a compiled call is a specialization of its own,
        # compiled and cached beside the int64 one (seconds at the first use)
        found = np.int64(-1)
        c = np.int64(0)
        left = np.int64(0)
        b = budget[node]
        drop = np.int64(0)  # a suppressing cut's suppressed side: 1 left, 2 right
        best_cost = np.inf
        best_j, best_c, best_left, best_drop = np.int64(-1), np.int64(0), np.int64(0), np.int64(0)
        if m >= small or b > 0:
            for j in range(d):
                tried[j] = cmin[node, j] >= cmax[node, j]  # not a candidate
                if span[j] > 0:
                    w[j] = (num[num_off[j] + cmax[node, j]] - num[num_off[j] + cmin[node, j]]) / span[j]
                else:
                    w[j] = 0.0
            slack = 0.0
            if b > 0:  # what suppressing a row costs: sum_j (1 - w_j), QI by QI (suppression.slack)
                for j in range(d):
                    slack = slack + (1.0 - w[j])
            while found < 0:
                j = np.int64(-1)
                for q in range(d):  # the widest untried candidate, ties by position
                    if not tried[q] and (j < 0 or w[q] > w[j]):
                        j = q
                if j < 0:
                    break
                tried[j] = True
                if kinds is None:  # k-anonymity alone: the size window is the verdict (the model path is
                    # not compiled in this specialization: numba prunes a branch on an argument that is None)
                    c, left = _median_cut(X, s, m, j, cmin[node, j], cmax[node, j], hist, scratch)
                    ok = left >= least and m - left >= least
                else:
                    c, left, ok = _model_cut(X, Y, s, m, j, cmin[node, j], cmax[node, j], least, hist, scratch,
                                             order, ncls, kinds, cols, ps, fa, fb, offs, sizes, xlogx, logn,
                                             cnt, mom, buf)
                if ok:
                    found = j
                elif b > 0:  # the QI's best suppressing cut, kept if cheaper than an earlier QI's
                    if kinds is None:
                        t_cost, t_c, t_left, t_drop = _trim(X, s, m, j, cmin[node, j], cmax[node, j], b, min_size,
                                                            num, num_off[j], span[j], slack, scratch)
                    else:
                        t_cost, t_c, t_left, t_drop = _trim_models(
                            X, Y, s, m, j, cmin[node, j], cmax[node, j], b, min_size, num, num_off[j], span[j],
                            slack, scratch, order, ncls, kinds, cols, ps, fa, fb, offs, sizes, xlogx, logn, cnt,
                            mom, buf)
                    if t_drop > 0 and t_cost < best_cost:
                        best_cost, best_j, best_c, best_left, best_drop = t_cost, j, t_c, t_left, t_drop
            if found < 0 and best_j >= 0:  # no ordinary cut on any QI: the best suppressing one
                found, c, left, drop = best_j, best_c, best_left, best_drop
        if found < 0:
            attr[node] = -1
            for r in range(s, s + m):
                leaf_of[r] = node
            continue
        attr[node] = found
        cut[node] = c
        a, e = free, free + 1
        free += 2
        _split(X, Y, rid, s, m, found, c, cmin, cmax, a, e)
        parent[a] = parent[e] = node
        child[a], child[e] = 0, 1
        depth[a] = depth[e] = depth[node] + 1
        start[a], start[e] = s, s + left
        n[a], n[e] = left, m - left
        budget[a], budget[e] = _shares(b, left, m - left, drop, min_size)
        if drop > 0:  # the suppressed side: a leaf of its own
            gone = a if drop == 1 else e
            suppressed[gone] = True
            attr[gone] = -1
            for r in range(start[gone], start[gone] + n[gone]):
                leaf_of[r] = gone
        # the right child is pushed first, so the left one is grown first
        for kid in (e, a):
            if suppressed[kid]:
                continue
            if n[kid] <= defer:
                deferred[nd] = kid
                nd += 1
            else:
                stack[top] = kid
                top += 1
    return free - first, nd


@njit(nogil=True, cache=True)
def _trim(X, s, m, j, lo, hi, b, min_size, num, off, span, slack, scratch):
    """The best suppressing cut of QI ``j`` over rows ``s .. s+m-1`` (codes in ``[lo, hi]``)
    with budget ``b`` under k-anonymity (``min_size``), as
    :func:`sqlanon.mondrian.suppression.suppressing` chooses it: among the cuts between present
    codes where exactly one side has fewer than ``min_size`` rows, at most ``b``, and the gain
    ``kept x (w - w_kept) - lost x slack`` is positive, the smallest ``cost = lost / gain``,
    then the smallest ``|2 L - n|``, then the lowest cut (the same float64 operations).
    Returns ``(cost, cut, rows <= cut, drop)``, ``drop`` 1 (the left side suppressed), 2 (the
    right) or 0 (none)."""
    for r in range(m):
        scratch[r] = X[s + r, j]
    codes = scratch[:m]
    codes.sort()
    if span > 0:
        w_part = (num[off + hi] - num[off + lo]) / span
    else:
        w_part = 0.0
    best_cost = np.inf
    best_bal = 0
    best_c, best_l, best_drop = 0, 0, 0
    i = 0
    while i < m:
        v = codes[i]
        k = i
        while k < m and codes[k] == v:
            k += 1
        if k >= m:  # the last code: no cut after it
            break
        nl = k
        nr = m - nl
        ok_l = nl >= min_size
        ok_r = nr >= min_size
        drop = 0
        if not ok_l and ok_r and nl <= b:
            drop = 1
            lost = nl
            kept_lo, kept_hi = codes[k], hi
        elif ok_l and not ok_r and nr <= b:
            drop = 2
            lost = nr
            kept_lo, kept_hi = lo, v
        if drop > 0:
            if span > 0:
                w_kept = (num[off + kept_hi] - num[off + kept_lo]) / span
            else:
                w_kept = 0.0
            gain = float(m - lost) * (w_part - w_kept) - float(lost) * slack
            if gain > 0:
                cost = float(lost) / gain
                bal = abs(2 * nl - m)
                if cost < best_cost or (cost == best_cost and bal < best_bal):
                    best_cost, best_bal, best_c, best_l, best_drop = cost, bal, v, nl, drop
        i = k
    return best_cost, best_c, best_l, best_drop


@njit(nogil=True, cache=True)
def _trim_models(X, Y, s, m, j, lo, hi, b, min_size, num, off, span, slack, scratch, order, ncls, kinds, cols, ps,
                 fa, fb, offs, sizes, xlogx, logn, cnt, mom, buf):
    """:func:`_trim` under privacy models beyond k: a side passes when it has at least
    ``min_size`` rows (every model's and k's least rows) and every face passes it
    (:func:`sqlanon.model.privacy.compiled.passes`, the models' numpy verdicts bit for bit).
    The rows are walked in code order with running value counts and moments: slot 0 the
    partition, 1 the left side, 3 the right (slot 0 less slot 1). Only cuts whose failing side
    could fit the budget (``L <= b`` or ``n - L <= b``) are judged."""
    T = Y.shape[1] - ncls
    for i in range(m):
        scratch[i] = X[s + i, j]
    idx = np.argsort(scratch[:m])
    for i in range(m):
        order[i] = s + idx[i]
    for w in range(4):
        cnt[w, :] = 0
        mom[w, :, :] = 0
    for r in range(s, s + m):
        add_row(Y, r, ncls, T, offs, cnt[0], mom[0], 1)
    if span > 0:
        w_part = (num[off + hi] - num[off + lo]) / span
    else:
        w_part = 0.0
    best_cost = np.inf
    best_bal = 0
    best_c, best_l, best_drop = 0, 0, 0
    i = 0
    while i < m:
        v = X[order[i], j]
        k = i
        while k < m and X[order[k], j] == v:
            add_row(Y, order[k], ncls, T, offs, cnt[1], mom[1], 1)
            k += 1
        if k >= m:  # the last code: no cut after it
            break
        nl = k
        nr = m - nl
        if nl <= b or nr <= b:
            ok_l = nl >= min_size and passes(kinds, cols, ps, fa, fb, offs, sizes, xlogx, logn, cnt[1], mom[1], buf)
            for q in range(cnt.shape[1]):
                cnt[3, q] = cnt[0, q] - cnt[1, q]
            for u in range(T):
                for q in range(3):
                    mom[3, u, q] = mom[0, u, q] - mom[1, u, q]
            ok_r = nr >= min_size and passes(kinds, cols, ps, fa, fb, offs, sizes, xlogx, logn, cnt[3], mom[3], buf)
            drop = 0
            lost = 0
            kept_lo, kept_hi = lo, hi
            if not ok_l and ok_r and nl <= b:
                drop = 1
                lost = nl
                kept_lo, kept_hi = X[order[k], j], hi
            elif ok_l and not ok_r and nr <= b:
                drop = 2
                lost = nr
                kept_lo, kept_hi = lo, v
            if drop > 0:
                if span > 0:
                    w_kept = (num[off + kept_hi] - num[off + kept_lo]) / span
                else:
                    w_kept = 0.0
                gain = float(m - lost) * (w_part - w_kept) - float(lost) * slack
                if gain > 0:
                    cost = float(lost) / gain
                    bal = abs(2 * nl - m)
                    if cost < best_cost or (cost == best_cost and bal < best_bal):
                        best_cost, best_bal, best_c, best_l, best_drop = cost, bal, v, nl, drop
        i = k
    return best_cost, best_c, best_l, best_drop


@njit(nogil=True, cache=True)
def _shares(b, n1, n2, drop, least):
    """The budgets of a split's two children of ``n1`` and ``n2`` rows from their parent's
    ``b`` (``drop``: the suppressed side, 1 or 2, 0 none):
    :func:`sqlanon.mondrian.suppression.share_budget` for two children -- the rows left after
    the suppressed side, each kept child capped at ``n_i - least`` (water-filling), the rest in
    proportion to the rows by largest remainders (ties to the left child)."""
    n = (n1, n2)
    lost = n1 if drop == 1 else n2 if drop == 2 else 0
    rest = b - lost
    if rest <= 0:
        return 0, 0
    eligible = (drop != 1 and n1 > 0, drop != 2 and n2 > 0)
    cap = (max(n1 - least, 0) if eligible[0] else 0, max(n2 - least, 0) if eligible[1] else 0)
    capped = [eligible[0] and cap[0] == 0, eligible[1] and cap[1] == 0]
    while True:
        rows = 0
        left = rest
        for i in range(2):
            if eligible[i] and not capped[i]:
                rows += n[i]
            elif capped[i]:
                left -= cap[i]
        over = False
        for i in range(2):
            if eligible[i] and not capped[i] and left * n[i] > cap[i] * rows:
                capped[i] = True
                over = True
        if not over:
            break
    out = [0, 0]
    rem = [-1, -1]
    given = 0
    for i in range(2):
        if capped[i]:
            out[i] = cap[i]
        elif eligible[i]:
            out[i] = left * n[i] // rows
            rem[i] = left * n[i] % rows
            given += out[i]
    units = left - given if rows > 0 else 0
    if units > 0:  # at most one unit between two children: the larger remainder, ties the left
        if rem[0] >= 0 and (rem[1] < 0 or rem[0] >= rem[1]):
            out[0] += 1
        else:
            out[1] += 1
    return out[0], out[1]


@njit(nogil=True, cache=True)
def _extents(X, start, n, cmin, cmax):
    """Smallest and largest code of every QI over rows ``start[i] .. start[i] + n[i] - 1``."""
    d = X.shape[1]
    for i in range(len(start)):
        for q in range(d):
            cmin[i, q] = 2147483647
            cmax[i, q] = -1
        for r in range(start[i], start[i] + n[i]):
            for q in range(d):
                x = X[r, q]
                if x < cmin[i, q]:
                    cmin[i, q] = x
                if x > cmax[i, q]:
                    cmax[i, q] = x


@njit(nogil=True, cache=True)
def _median_cut(X, s, m, j, lo, hi, hist, scratch):
    """The most balanced cut of QI ``j`` over rows ``s .. s+m-1`` (codes in ``[lo, hi]``,
    ``lo < hi``), ignoring the size window: ``(cut, rows <= cut)``, ``(hi, m)`` when none."""
    v, prev, lt, at = _median_of(X, s, m, j, lo, hi, hist, scratch)
    return balanced(v, prev, lt, at, hi, m)


@njit(nogil=True, cache=True, inline="always")
def _median_of(X, s, m, j, lo, hi, hist, scratch):
    """The median code ``v`` of QI ``j`` over rows ``s .. s+m-1`` (the ``ceil(m/2)``-th
    smallest), the largest code below it (-1: none) and the rows below it and at most it:
    ``(v, prev, lt, le)``."""
    h = (m + 1) // 2 - 1  # the median's position: the first code with 2 L >= m
    at = 0  # rows <= v
    width = hi - lo + 1
    if width <= len(hist) and width <= 2 * m + 64:
        for r in range(s, s + m):
            hist[X[r, j] - lo] += 1
        below = 0  # rows below bin b
        v = -1
        prev = -1  # the largest present code below v
        for b in range(width):
            k = hist[b]
            if k > 0 and v < 0:
                if below + k > h:
                    v = lo + b
                    at = below + k  # rows <= v
                else:
                    prev = lo + b
                    below += k
            hist[b] = 0
        lt = below
    else:
        for r in range(m):
            scratch[r] = X[s + r, j]
        v = _select(scratch, m, h)
        lt = 0
        at = 0
        prev = -1
        for r in range(s, s + m):
            x = X[r, j]
            if x < v:
                lt += 1
                if x > prev:
                    prev = x
            elif x == v:
                at += 1
        at += lt
    return v, prev, lt, at


@njit(nogil=True, cache=True, inline="always")
def balanced(v, prev, lt, le, hi, m):
    """The most balanced cut around the median code ``v`` (``lt`` rows below it, ``le`` at
    most it; ``prev`` the largest code below it, ``hi`` the largest): the cut at ``v`` (if
    ``v`` is not the largest code) against the cut just below it (if any), the lower on a
    tie; ``(hi, m)`` when neither. Returns ``(cut, rows <= cut)``."""
    best_c, best_l = hi, m
    if lt > 0:
        best_c, best_l = prev, lt
    if v < hi and (lt == 0 or 2 * le - m < m - 2 * lt):
        best_c, best_l = v, le
    return best_c, best_l


@njit(nogil=True, cache=True)
def _select(a, m, h):
    """The ``h``-th smallest of ``a[:m]`` (0-based), reordering ``a``: quickselect with a
    three-way partition (duplicates cost nothing), median-of-three pivots, and a sort of
    what is left after many rounds (no quadratic worst case)."""
    lo, hi = 0, m - 1
    rounds = 0
    while lo < hi:
        rounds += 1
        if rounds > 48:
            a[lo:hi + 1].sort()
            return a[h]
        x, y, z = a[lo], a[(lo + hi) // 2], a[hi]
        pivot = max(min(x, y), min(max(x, y), z))
        lt, i, gt = lo, lo, hi
        while i <= gt:
            v = a[i]
            if v < pivot:
                a[i] = a[lt]
                a[lt] = v
                lt += 1
                i += 1
            elif v > pivot:
                a[i] = a[gt]
                a[gt] = v
                gt -= 1
            else:
                i += 1
        if h < lt:
            hi = lt - 1
        elif h > gt:
            lo = gt + 1
        else:
            return pivot
    return a[h]


@njit(nogil=True, cache=True)
def _split(X, Y, rid, s, m, j, c, cmin, cmax, a, b):
    """Move the rows of ``s .. s+m-1`` with code ``<= c`` on QI ``j`` to the front (in place,
    order within each side arbitrary; the sensitive values ``Y`` move with them) and record the
    extents of both sides as nodes ``a`` (left) and ``b`` (right)."""
    d = X.shape[1]
    for q in range(d):
        cmin[a, q] = cmin[b, q] = 2147483647
        cmax[a, q] = cmax[b, q] = -1
    i, k = s, s + m - 1
    while True:
        while i <= k and X[i, j] <= c:
            for q in range(d):
                x = X[i, q]
                if x < cmin[a, q]:
                    cmin[a, q] = x
                if x > cmax[a, q]:
                    cmax[a, q] = x
            i += 1
        while i <= k and X[k, j] > c:
            for q in range(d):
                x = X[k, q]
                if x < cmin[b, q]:
                    cmin[b, q] = x
                if x > cmax[b, q]:
                    cmax[b, q] = x
            k -= 1
        if i > k:
            break
        for q in range(d):  # swap rows i and k: row k goes left, row i right
            x = X[i, q]
            X[i, q] = X[k, q]
            X[k, q] = x
        for q in range(Y.shape[1]):
            y = Y[i, q]
            Y[i, q] = Y[k, q]
            Y[k, q] = y
        t = rid[i]
        rid[i] = rid[k]
        rid[k] = t


@njit(nogil=True, cache=True)
def _model_cut(X, Y, s, m, j, lo, hi, least, hist, scratch, order, ncls, kinds, cols, ps, fa, fb, offs, sizes,
               xlogx, logn, cnt, mom, buf):
    """The most balanced allowable cut of QI ``j`` over rows ``s .. s+m-1`` (codes in
    ``[lo, hi]``) under the privacy models' faces: ``(cut, rows <= cut, found)``.

    :func:`sqlanon.mondrian.split._most_balanced`'s choice: of the cuts in the size window
    whose both children pass every face (:func:`sqlanon.model.privacy.compiled.passes`), the
    smallest ``(|2L - n|, cut)``. Cuts are met in that order walking outwards from the median
    (balance falls towards it and rises after it; of equal balance the left one, the lower
    code, first), so the first allowable one is the answer; once a side leaves the size window
    every further cut on it does too. One pass first judges the cut nearest the median alone
    (usually allowable); only when it is not are the rows sorted by code (counting sort, or a
    sort when the codes are wide) and the walk made. Slots of ``cnt``/``mom``: 0 the whole
    partition, 1 and 2 the left children of the two walkers, 3 a right child."""
    v, prev, lt, le = _median_of(X, s, m, j, lo, hi, hist, scratch)
    lv = lt > 0 and lt >= least and m - lt >= least
    rv = v < hi and le >= least and m - le >= least
    if not lv and not rv:
        return -1, 0, False
    T = Y.shape[1] - ncls
    for w in range(3):
        cnt[w, :] = 0
        mom[w, :, :] = 0
    for r in range(s, s + m):
        x = X[r, j]
        add_row(Y, r, ncls, T, offs, cnt[0], mom[0], 1)
        if x < v:
            add_row(Y, r, ncls, T, offs, cnt[1], mom[1], 1)
            add_row(Y, r, ncls, T, offs, cnt[2], mom[2], 1)
        elif x == v:
            add_row(Y, r, ncls, T, offs, cnt[2], mom[2], 1)
    if lv and (not rv or m - 2 * lt <= 2 * le - m):
        if allowed(np.int64(1), T, kinds, cols, ps, fa, fb, offs, sizes, xlogx, logn, cnt, mom, buf):
            return prev, lt, True
    elif allowed(np.int64(2), T, kinds, cols, ps, fa, fb, offs, sizes, xlogx, logn, cnt, mom, buf):
        return v, le, True
    # the rows in code order
    width = hi - lo + 1
    if width <= len(hist) and width <= 2 * m + 64:
        for r in range(s, s + m):
            hist[X[r, j] - lo] += 1
        acc = 0
        for b in range(width):
            k = hist[b]
            hist[b] = acc
            acc += k
        for r in range(s, s + m):
            b = X[r, j] - lo
            order[hist[b]] = r
            hist[b] += 1
        for b in range(width):
            hist[b] = 0
    else:
        for i in range(m):
            scratch[i] = X[s + i, j]
        idx = np.argsort(scratch[:m])
        for i in range(m):
            order[i] = s + idx[i]
    h = (m + 1) // 2 - 1
    pl, pr = h, h + 1  # the walkers' cuts: rows order[:pl] and order[:pr] on the left
    while pl > 0 and X[order[pl - 1], j] == v:
        pl -= 1
    while pr < m and X[order[pr], j] == v:
        pr += 1
    for w in (1, 2):
        cnt[w, :] = 0
        mom[w, :, :] = 0
    for i in range(pl):
        add_row(Y, order[i], ncls, T, offs, cnt[1], mom[1], 1)
        add_row(Y, order[i], ncls, T, offs, cnt[2], mom[2], 1)
    for i in range(pl, pr):
        add_row(Y, order[i], ncls, T, offs, cnt[2], mom[2], 1)
    while True:
        lv = pl >= least and m - pl >= least and pl > 0
        rv = pr < m and pr >= least and m - pr >= least
        if not lv and not rv:
            return -1, 0, False
        if lv and (not rv or m - 2 * pl <= 2 * pr - m):
            c = X[order[pl - 1], j]
            if allowed(np.int64(1), T, kinds, cols, ps, fa, fb, offs, sizes, xlogx, logn, cnt, mom, buf):
                return c, pl, True
            while pl > 0 and X[order[pl - 1], j] == c:
                pl -= 1
                add_row(Y, order[pl], ncls, T, offs, cnt[1], mom[1], -1)
        else:
            if allowed(np.int64(2), T, kinds, cols, ps, fa, fb, offs, sizes, xlogx, logn, cnt, mom, buf):
                return X[order[pr - 1], j], pr, True
            c = X[order[pr], j]
            while pr < m and X[order[pr], j] == c:
                add_row(Y, order[pr], ncls, T, offs, cnt[2], mom[2], 1)
                pr += 1


@njit(nogil=True, cache=True, inline="always")
def add_row(Y, r, ncls, T, offs, cnt, mom, sign):
    """Add (``sign`` 1) or take away (-1) row ``r``'s sensitive values: its class codes to the
    value counts ``cnt`` and its integer numeric values to the moments ``mom``."""
    for c in range(ncls):
        cnt[offs[c] + Y[r, c]] += sign
    for u in range(T):
        x = Y[r, ncls + u]
        mom[u, 0] += sign
        mom[u, 1] += sign * x
        mom[u, 2] += sign * x * x


@njit(nogil=True, cache=True)
def allowed(w, T, kinds, cols, ps, fa, fb, offs, sizes, xlogx, logn, cnt, mom, buf):
    """Whether the cut whose left child is slot ``w`` is allowable: both children (the right
    one the whole, slot 0, less the left) pass every face."""
    if not passes(kinds, cols, ps, fa, fb, offs, sizes, xlogx, logn, cnt[w], mom[w], buf):
        return False
    for i in range(cnt.shape[1]):
        cnt[3, i] = cnt[0, i] - cnt[w, i]
    for u in range(T):
        for q in range(3):
            mom[3, u, q] = mom[0, u, q] - mom[w, u, q]
    return passes(kinds, cols, ps, fa, fb, offs, sizes, xlogx, logn, cnt[3], mom[3], buf)
