"""sqlanon's kernels compile at numba's optimization level :data:`sqlanon.compilation.OPT`
(issue 52, "no silent first run": a first run's compile time), unless the user set
``NUMBA_OPT``; numba functions of other modules keep the process's level."""

from __future__ import annotations

from typing import Any

from numba import njit
from numba.core import config, event

from sqlanon import compilation


def _kernel(module: str, name: str):
    """A numba function of ``module``, not compiled yet."""

    def kernel(x):
        return x + 1

    kernel.__module__ = module
    kernel.__qualname__ = kernel.__name__ = name
    return njit(kernel)


class _Levels(event.Listener):
    """numba's level as each compilation starts, by function name."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    def on_start(self, ev: Any) -> None:
        self.seen[ev.data["dispatcher"].py_func.__name__] = int(config.OPT)

    def on_end(self, ev: Any) -> None:
        pass


def _compile_levels(monkeypatch, user: str | None) -> tuple[dict[str, int], int]:
    monkeypatch.delenv("NUMBA_OPT", raising=False)
    if user is not None:
        monkeypatch.setenv("NUMBA_OPT", user)
    monkeypatch.setattr(config, "OPT", type(config.OPT)(3))
    levels = _Levels()
    with compilation.reporting(None):  # sqlanon's listener first: registered once per process
        with event.install_listener("numba:compile", levels):
            assert _kernel("sqlanon.probe", f"ours_{user}")(1) == 2
            assert _kernel("elsewhere", f"theirs_{user}")(1) == 2
    return levels.seen, int(config.OPT)


def test_sqlanon_kernels_compile_at_its_level_and_others_at_the_process_level(monkeypatch):
    seen, after = _compile_levels(monkeypatch, None)
    assert seen == {"ours_None": compilation.OPT, "theirs_None": 3}
    assert after == 3  # restored


def test_the_users_numba_opt_is_kept(monkeypatch):
    seen, after = _compile_levels(monkeypatch, "3")
    assert seen == {"ours_3": 3, "theirs_3": 3}
    assert after == 3
