"""Generalization hierarchies: a tree over a categorical domain whose leaves are the values.

Nodes are numbered in DFS pre-order and leaves coded in the same order, so every node covers a
contiguous interval of leaf codes and splitting a node into its children cuts its interval into
consecutive sub-intervals, like a numeric cut. Loads ARX CSV files, rows, frames, dicts, tables.
"""

from __future__ import annotations

import csv
import io
import itertools
import math
import os
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import HierarchyError

_Trie = dict  # label -> _Trie of its children; a leaf maps to {}

#: Most levels below the root a hierarchy may have. Real ones have a handful; the bound keeps
#: malformed input (a chain nested thousands deep, an endless row iterator) from running away:
#: loading validates every path prefix, which costs depth squared.
MAX_HEIGHT = 1000


def _is_null(v: Any) -> bool:
    if isinstance(v, (float, np.floating)):
        return math.isnan(v)
    return v is None or type(v).__name__ in ("NAType", "NaTType")  # pandas, without importing it


def _integral_text(v: Any) -> str | None:
    # 39.0 (a DOUBLE column, or an int column widened by NaN padding) must match the leaf "39".
    if isinstance(v, (float, np.floating, Decimal)) and math.isfinite(v) and float(v).is_integer():
        return str(int(v))
    return None


def _fmt(path: Sequence[str | None]) -> str:
    return " > ".join(map(str, path))


def _repeated(where: str, path: tuple[Any, ...], first: tuple[Any, ...], sub: Any) -> str:
    """The error for a dict or list met twice in a nested-dict hierarchy (paths leaf first)."""
    kind = "dict" if isinstance(sub, Mapping) else type(sub).__name__
    if path[len(path) - len(first):] == first:  # ``first`` is an ancestor: a cycle
        cycle = _fmt(first[::-1] + path[: len(path) - len(first)][::-1])
        return (f"{where}: the hierarchy is cyclic: the {kind} at {cycle} is the {kind} at "
                f"{_fmt(first[::-1])} again, so it contains itself")
    return (f"{where}: this {kind} object is also the children of {_fmt(first[::-1])}; "
            f"a node has one parent, so its leaves would be listed twice (use a copy for a "
            f"different subtree)")


def _row_path(n: int, row: Sequence[Any], verbatim: bool = False) -> tuple[str, ...]:
    """Row ``n`` (1-based) as validated, stripped labels from the root down to the leaf
    (``verbatim``: the labels as they are, see :meth:`Hierarchy.from_rows`)."""
    if isinstance(row, (str, bytes, Mapping)) or not isinstance(row, Iterable):
        # a string would be read as one label per character
        raise HierarchyError(f"hierarchy row {n} must be a list of labels (leaf first), got "
                             f"{type(row).__name__} {row!r}")
    cells = list(itertools.islice(row, MAX_HEIGHT + 2))  # an endless iterator stops here
    if len(cells) > MAX_HEIGHT + 1:
        raise HierarchyError(f"hierarchy row {n} has more than {MAX_HEIGHT + 1} cells: at most "
                             f"{MAX_HEIGHT} levels below the root are supported")
    if verbatim:
        for j, v in enumerate(cells, 1):
            if not isinstance(v, str):
                raise HierarchyError(f"stored hierarchy row {n}, column {j} is {v!r}, not a label (text)")
        if not cells:
            raise HierarchyError(f"stored hierarchy row {n} is empty")
        return tuple(reversed(cells))
    while cells and _is_null(cells[-1]):
        cells.pop()
    if not cells:
        raise HierarchyError(f"hierarchy row {n} is empty")
    out = []
    for j, v in enumerate(cells, 1):
        text = "" if _is_null(v) else (_integral_text(v) or str(v))
        if not text.strip():
            what = f"contains only whitespace ({text!r})" if text else "is empty"
            raise HierarchyError(f"hierarchy row {n}, column {j} {what}")
        out.append(text.strip())
    return tuple(reversed(out))


@dataclass(frozen=True, eq=False)
class Hierarchy:
    """A generalization hierarchy, nodes in DFS pre-order, leaves coded in the same order.

    Attributes:
        labels: Node labels; node 0 is the root. The NULL leaf has label ``None``.
        parent: int32 parent node id per node, -1 for the root.
        depth: int32 depth per node, 0 for the root.
        children: Child node ids of each node, in order.
        leaf_lo: int32 first leaf code under each node (inclusive).
        leaf_hi: int32 last leaf code under each node (inclusive).
        leaves: Leaf values in DFS order: leaf code ``i`` is ``leaves[i]``.
        leaf_node: int32 node id of each leaf code.
        ancestors: int32 ``(n_leaves, height + 1)``: the node on leaf ``i``'s path at each
            depth; for depths below the leaf, the leaf node itself.

    Data values match leaves as text: ``str(v)``, and for integral floats and decimals
    (``39.0``) also the integer text ``"39"``, so a DOUBLE column matches integer leaves.
    Hierarchy cells are stripped; data values are not. Equal trees compare equal.
    """

    labels: tuple[str | None, ...]
    parent: np.ndarray
    depth: np.ndarray
    children: tuple[tuple[int, ...], ...]
    leaf_lo: np.ndarray
    leaf_hi: np.ndarray
    leaves: tuple[str | None, ...]
    leaf_node: np.ndarray
    ancestors: np.ndarray
    _index: dict[str | None, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        for a in (self.parent, self.depth, self.leaf_lo, self.leaf_hi, self.leaf_node,
                  self.ancestors):
            a.flags.writeable = False  # shared by every partition: nobody may edit it in place
        object.__setattr__(self, "_index", {leaf: i for i, leaf in enumerate(self.leaves)})

    @classmethod
    def from_rows(cls, rows: Iterable[Sequence[Any]], *, verbatim: bool = False) -> Hierarchy:
        """Build from ARX rows ``[leaf, level1, ..., root]``, one per leaf.

        Node identity is the path from the root (one label under two parents is two nodes);
        children are ordered by first appearance. Rows may differ in length but must share the
        root. Cells are stripped text; trailing ``None`` cells (ragged-row padding) are ignored.

        ``verbatim``: the cells are labels exactly as :meth:`to_rows` gave them (a hierarchy
        sqlanon stored, :mod:`sqlanon.publish.manifest`): kept as they are -- not stripped, an
        empty or whitespace-only label allowed (a single-dimensional release's leaves are the
        column's values, ``""`` and ``" a"`` included) -- and every cell must be text, so
        ``from_rows(h.to_rows(), verbatim=True) == h`` for a tree without the NULL leaf.

        Raises:
            HierarchyError: naming the row: no rows, an empty row or cell, a different root, a
                leaf listed twice, or a leaf in one row that is an inner node in another.
        """
        trie: _Trie = {}
        leaf_row: dict[str, int] = {}
        leaf_paths: dict[tuple[str, ...], int] = {}
        inner_paths: dict[tuple[str, ...], int] = {}
        root = None
        for n, row in enumerate(rows, 1):
            path = _row_path(n, row, verbatim)
            leaf, root = path[-1], root or path[0]
            if path[0] != root:
                raise HierarchyError(f"hierarchy row {n} ends with root {path[0]!r} but row 1 "
                                     f"ends with {root!r}; all rows must share one root")
            if leaf in leaf_row:
                raise HierarchyError(f"hierarchy row {n}: leaf {leaf!r} is listed twice "
                                     f"(first in row {leaf_row[leaf]})")
            if path in inner_paths:
                raise HierarchyError(f"hierarchy row {n}: {leaf!r} is a leaf at {_fmt(path)} "
                                     f"but row {inner_paths[path]} places nodes below it")
            for d in range(1, len(path)):
                if path[:d] in leaf_paths:
                    raise HierarchyError(
                        f"hierarchy row {n}: {path[d - 1]!r} is an inner node at "
                        f"{_fmt(path[:d])} but row {leaf_paths[path[:d]]} lists it as a leaf")
                inner_paths.setdefault(path[:d], n)
            leaf_row[leaf] = leaf_paths[path] = n
            node = trie
            for label in path[1:]:
                node = node.setdefault(label, {})
        if root is None:
            raise HierarchyError("empty hierarchy: no rows")
        return cls._build(root, trie)

    @classmethod
    def from_csv(cls, path: str | os.PathLike[str], sep: str = ";") -> Hierarchy:
        """Read an ARX hierarchy file: no header, one row ``leaf;level1;...;root`` per leaf.

        A UTF-8 byte-order mark is skipped; with the default ``sep``, a file without any ``;``
        but with ``,`` is read as comma-separated. Errors are prefixed with the file name.
        """
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as e:
            raise HierarchyError(f"cannot read hierarchy file {str(path)!r}: {e}") from e
        if sep == ";" and ";" not in text and "," in text:
            sep = ","
        rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=sep))
        while rows and not rows[-1]:  # blank lines at the end of the file
            rows.pop()
        if len(rows) > 1 and all(len(row) <= 1 for row in rows):
            # rows of one cell each cannot share a root: not a hierarchy (a password file, say),
            # so none of its lines is quoted back
            raise HierarchyError(f"{path}: not an ARX hierarchy: no row has a separator (';' or ','); each row "
                                 f"is leaf;level1;...;root")
        try:
            return cls.from_rows(rows)
        except HierarchyError as e:
            raise HierarchyError(f"{path}: {e}") from None

    @classmethod
    def from_dataframe(cls, df: Any) -> Hierarchy:
        """Build from a pandas DataFrame whose columns run leaf -> root, one row per leaf."""
        if df.shape[1] == 0:
            raise HierarchyError("empty hierarchy: the DataFrame has no columns")
        return cls.from_rows(df.itertuples(index=False, name=None))

    @classmethod
    def from_dict(cls, tree: Mapping[Any, Any]) -> Hierarchy:
        """Build from a nested mapping.

        A single top-level key is the root; several top-level keys get an implicit root ``"*"``.
        Each value is a mapping (the children), a list or tuple of leaf values, or ``None`` (a
        leaf), e.g. ``{"*": {"Europe": ["French", "Greek"], "Asia": {"East": ["Chinese"]}}}``.

        Raises:
            HierarchyError: naming the node: a cycle (a dict inside itself), a dict or list used
                as the children of two nodes, a node without children, more than
                :data:`MAX_HEIGHT` levels, or what :meth:`from_rows` refuses.
        """
        if not isinstance(tree, Mapping) or not tree:
            raise HierarchyError("empty hierarchy: the dict has no keys")
        rows: list[tuple[Any, ...]] = []
        # A dict or list object may appear only once in the tree. A dict inside itself (a cycle)
        # would be expanded forever; one shared by two parents (a DAG) would list its leaves
        # twice, and a chain of shared dicts expands exponentially before that is noticed.
        # ``seen``: id of every container met -> its path; the objects stay alive in ``tree``.
        seen: dict[int, tuple[Any, ...]] = {}
        stack = [(k, v, ()) for k, v in reversed(({"*": tree} if len(tree) > 1 else tree).items())]
        while stack:
            label, sub, above = stack.pop()
            path = (label, *above)  # leaf first, as in ARX rows
            if sub is None:
                rows.append(path)
                continue
            where = f"hierarchy node {_fmt(path[::-1])}"
            if isinstance(sub, Mapping):
                items = list(sub.items())
            elif isinstance(sub, (list, tuple)):
                if any(isinstance(x, (Mapping, list, tuple)) for x in sub):
                    raise HierarchyError(f"{where}: a list holds leaf values only; use a dict")
                items = [(x, None) for x in sub]
            else:
                raise HierarchyError(f"{where}: children must be a dict, a list of leaves or "
                                     f"None, not {type(sub).__name__}")
            if not items:
                raise HierarchyError(f"{where} has no children; use None to mark a leaf")
            first = seen.setdefault(id(sub), path)
            if first is not path:
                raise HierarchyError(_repeated(where, path, first, sub))
            if len(path) > MAX_HEIGHT:
                raise HierarchyError(
                    f"the children of hierarchy node {_fmt(path[:-4:-1])} > ... > {label} would be more "
                    f"than {MAX_HEIGHT} levels below the root: at most {MAX_HEIGHT} are supported")
            stack.extend((k, v, path) for k, v in reversed(items))
        return cls.from_rows(rows)

    @classmethod
    def _build(cls, root: str | None, trie: _Trie) -> Hierarchy:
        nodes: list[tuple[str | None, int, int]] = []  # (label, parent, depth) in pre-order
        kids: list[list[int]] = []
        stack = [(root, trie, -1, 0)]
        while stack:  # iterative pre-order: deep dict trees must not hit the recursion limit
            label, sub, up, d = stack.pop()
            if up >= 0:
                kids[up].append(len(nodes))
            nodes.append((label, up, d))
            kids.append([])
            stack.extend((k, s, len(nodes) - 1, d + 1) for k, s in reversed(sub.items()))
        labels, parent, depth = zip(*nodes)
        n = len(labels)
        leaf_node = np.array([i for i in range(n) if not kids[i]], dtype=np.int32)
        lo, hi = np.empty(n, dtype=np.int32), np.empty(n, dtype=np.int32)
        lo[leaf_node] = hi[leaf_node] = np.arange(len(leaf_node), dtype=np.int32)
        for i in range(n - 1, -1, -1):  # children have larger ids, so they are done first
            if kids[i]:
                lo[i], hi[i] = lo[kids[i][0]], hi[kids[i][-1]]
        par, dep = np.array(parent, dtype=np.int32), np.array(depth, dtype=np.int32)
        anc = np.empty((len(leaf_node), int(dep.max()) + 1), dtype=np.int32)
        cur = leaf_node.copy()
        for d in range(anc.shape[1] - 1, -1, -1):  # depth[cur] <= d: a shallow leaf stays put
            anc[:, d] = cur
            cur = np.where(dep[cur] == d, par[cur], cur)
        return cls(labels=tuple(labels), parent=par, depth=dep, children=tuple(map(tuple, kids)),
                   leaf_lo=lo, leaf_hi=hi, leaves=tuple(labels[i] for i in leaf_node),
                   leaf_node=leaf_node, ancestors=anc)

    @property
    def n_leaves(self) -> int:
        """Number of leaves (distinct values)."""
        return len(self.leaves)

    @property
    def n_nodes(self) -> int:
        """Number of nodes, leaves included."""
        return len(self.labels)

    @property
    def height(self) -> int:
        """Largest node depth (0 for a single-node hierarchy)."""
        return self.ancestors.shape[1] - 1

    @property
    def has_null_leaf(self) -> bool:
        """Whether the hierarchy has the NULL leaf added by :meth:`with_null_leaf`."""
        return None in self._index

    def is_leaf(self, node: int) -> bool:
        """Whether ``node`` has no children."""
        return not self.children[node]

    def child_of(self, nodes: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """For each ``(node, leaf code)`` pair, the child of ``node`` whose interval holds the code.

        Vectorized ``ancestors[code, depth[node] + 1]``; the caller guarantees that ``node`` is
        not a leaf and that ``leaf_lo[node] <= code <= leaf_hi[node]``.
        """
        return self.ancestors[np.asarray(codes), self.depth[np.asarray(nodes)] + 1]

    def code_of(self, values: Iterable[Any]) -> np.ndarray:
        """Leaf codes (int32) of ``values``, -1 where a value is not a leaf.

        Matching is by text (see the class docstring); missing values (None, NaN, pandas
        NA/NaT) get the NULL leaf's code if there is one, else -1.
        """
        null = self._index.get(None, -1)
        memo: dict[tuple[type, Any], int] = {}
        vals = list(values)
        out = np.empty(len(vals), dtype=np.int32)
        for i, v in enumerate(vals):
            if _is_null(v):
                out[i] = null
                continue
            key = (type(v), v)  # the type keeps 1, 1.0 and True apart
            if key not in memo:
                texts = (str(v), _integral_text(v) or str(v))
                memo[key] = next((self._index[t] for t in texts if t in self._index), -1)
            out[i] = memo[key]
        return out

    def missing(self, values: Iterable[Any]) -> list[str | None]:
        """The distinct ``values`` (as text) that are not leaves, sorted, for error messages.

        ``None`` comes first when some values are missing and there is no NULL leaf.
        """
        vals = list(values)
        bad = {None if _is_null(v) else str(v) for v, c in zip(vals, self.code_of(vals)) if c < 0}
        return [None] * (None in bad) + sorted(b for b in bad if b is not None)

    def with_null_leaf(self) -> Hierarchy:
        """A copy with a leaf ``None`` as the first child of the root, for columns with NULLs.

        The NULL leaf gets code 0 (node 1); every other leaf code and node id shifts by one. A
        single-node hierarchy gets a new root ``"*"`` above both leaves. Returns ``self`` when
        the NULL leaf is already there.
        """
        if self.has_null_leaf:
            return self
        if self.n_nodes == 1:
            return self._build("*", {None: {}, self.labels[0]: {}})
        subs: list[_Trie] = [{} for _ in self.labels]
        for i in range(1, self.n_nodes):  # pre-order, so siblings are inserted in order
            subs[self.parent[i]][self.labels[i]] = subs[i]
        return self._build(self.labels[0], {None: {}, **subs[0]})

    def node_path(self, node: int) -> tuple[str | None, ...]:
        """Labels from the root down to ``node``."""
        return tuple(self.labels[a] for a in self._path(int(node)))

    def to_rows(self) -> list[list[str | None]]:
        """ARX rows ``[leaf, ..., root]`` in leaf-code order; ``from_rows(rows, verbatim=True)``
        rebuilds the tree (the NULL leaf's row aside: :meth:`with_null_leaf` adds it back)."""
        return [[self.labels[a] for a in reversed(self._path(int(n)))] for n in self.leaf_node]

    def to_csv(self, path: str | os.PathLike[str], sep: str = ";") -> None:
        """Write the ARX file :meth:`from_csv` reads: one row ``leaf;level1;...;root`` per leaf,
        no header, quoted where a label holds ``sep`` or a quote. A NULL leaf is left out (sqlanon
        places NULL by itself); an existing file is replaced."""
        rows = [row for row in self.to_rows() if row[0] is not None]
        with open(path, "w", encoding="utf-8", newline="") as f:
            csv.writer(f, delimiter=sep, lineterminator="\n").writerows(rows)

    def _path(self, node: int) -> list[int]:
        leaf = self.ancestors[self.leaf_lo[node]]  # the first leaf below shares node's path
        return [int(a) for a in leaf[: self.depth[node] + 1]]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Hierarchy):
            return NotImplemented
        # labels, parents and child order fix the tree; every other field derives from them
        return (self.labels == other.labels and self.children == other.children
                and np.array_equal(self.parent, other.parent))

    def __hash__(self) -> int:
        return hash((self.labels, self.children))

    def __repr__(self) -> str:
        return (f"Hierarchy(root={self.labels[0]!r}, n_nodes={self.n_nodes}, "
                f"n_leaves={self.n_leaves}, height={self.height})")


def hierarchy_from(source: Any, read_table: Callable[[str], list[tuple[Any, ...]] | None] | None = None) -> Hierarchy:
    """Load a hierarchy from what the user passed (see :func:`sqlanon.load_hierarchy`).

    ``read_table(name)`` returns the rows of a table or view (None if there is none); without
    it a name that is not a file is an error.
    """
    if isinstance(source, Hierarchy):
        return source
    if isinstance(source, Path):
        if not source.is_file():
            raise HierarchyError(f"hierarchy file {str(source)!r} does not exist")
        return Hierarchy.from_csv(source)
    if isinstance(source, str):
        if os.path.isfile(source):
            return Hierarchy.from_csv(source)
        rows = read_table(source) if read_table is not None else None
        if rows is None:
            why = ("the connection has no table or view of that name" if read_table is not None
                   else "no connection was given to look up a table")
            raise HierarchyError(f"hierarchy {source!r} is neither an existing file nor a "
                                 f"table or view ({why})")
        try:
            return Hierarchy.from_rows(rows)
        except HierarchyError as e:
            raise HierarchyError(f"table {source!r}: {e}") from None
    if type(source).__module__.startswith("pandas") and hasattr(source, "itertuples"):
        return Hierarchy.from_dataframe(source)
    if isinstance(source, Mapping):
        return Hierarchy.from_dict(source)
    if isinstance(source, (list, tuple)) and all(
            isinstance(r, Sequence) and not isinstance(r, str) for r in source):
        return Hierarchy.from_rows(source)
    raise HierarchyError(
        f"cannot load a hierarchy from a {type(source).__name__}; expected a Hierarchy, a CSV "
        "path (str or pathlib.Path), a pandas DataFrame, a dict, a list of rows, or the name of "
        "a table or view in `con`")



def unused_label(label: str, taken: Collection[str | None]) -> str:
    """``label``, or ``label`` repeated until it is none of ``taken``: the label of a node
    sqlanon adds above a column's values (the root ``*`` of a flat hierarchy, ``⊥`` over the
    values single-dimensional recoding keeps hidden) must not read as one of those values, and
    under one parent two children with the same label would be one node."""
    out = label
    while out in taken:
        out += label
    return out


def leaf_codes(h: Hierarchy, values: Sequence[Any], texts: Sequence[Any]) -> np.ndarray:
    """Leaf codes of fetched distinct values: matched as values first (``39.0`` matches ``39``),
    then by the database's text form of the same values (timestamps, booleans); -1 where
    neither is a leaf."""
    codes = h.code_of(list(values)).astype(np.int32)
    retry = (codes < 0).nonzero()[0]
    if len(retry):
        codes[retry] = h.code_of([texts[i] for i in retry])
    return codes
