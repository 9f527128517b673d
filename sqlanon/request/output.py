"""What a release is called and how it finds its rows: ``sqlanon.Output(view, replace, key,
class_column)``, or just the view's name."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from .checks import check_bool, short_repr


@dataclass(frozen=True)
class Output:
    """The objects a release creates, and the key its live view finds each source row by.

    Args:
        view: name of the published view (default ``<table>_anon``); the rules are
            ``<view>_rules`` and the row map ``<view>_rowmap``.
        replace: replace an earlier sqlanon release of the same name (its view, rules, row map
            and hierarchies, as its manifest lists them). Never any other object: a table that
            merely has one of those names, or anything the source reads, is refused.
        key: the column(s) that identify a source row (unique, never NULL). Default: the
            table's declared PRIMARY KEY, else a declared UNIQUE key. With a key the release is
            a live view over the source that stays fail-closed while the source changes (see
            :mod:`sqlanon.publish.view`); without one it is a view of a snapshot.
        class_column: name of the equivalence-class column (default ``eq_class``, or
            ``eq_class_1``, ... if the source has a column of that name).
    """

    view: str | None = None
    replace: bool = False
    key: str | tuple[str, ...] | None = None
    class_column: str | None = None

    def __post_init__(self) -> None:
        if self.view is not None and (not isinstance(self.view, str) or not self.view):
            raise InputError(f"view must be a non-empty string, got {short_repr(self.view)}")
        object.__setattr__(self, "replace", check_bool("replace", self.replace))
        if isinstance(self.key, str):  # one column is a key of one: the same request
            object.__setattr__(self, "key", (self.key,))
        elif isinstance(self.key, Sequence):
            object.__setattr__(self, "key", tuple(self.key))

    @classmethod
    def of(cls, output: Any) -> Output:
        """``output=`` as an :class:`Output`: None is the default, a string the view's name."""
        if output is None:
            return cls()
        if isinstance(output, str):
            return cls(output)
        if not isinstance(output, Output):
            raise InputError(f"output= takes the view's name or sqlanon.Output(view, replace, key, class_column), "
                             f"got {short_repr(output)}")
        return output
