"""Wall-clock seconds per step of a call: the ``timings`` of a Release or an Applied."""

from __future__ import annotations

import time
from collections.abc import Callable


class Laps:
    """A stopwatch: ``laps("encode")`` records the seconds since the previous lap (or the start)."""

    def __init__(self, ended: Callable[[str], None] | None = None) -> None:
        self.started = self._last = time.perf_counter()
        self.timings: dict[str, float] = {}
        self.ended = ended  # told of every step that ends (the recording engine titles its statements so)

    def __call__(self, step: str) -> None:
        now = time.perf_counter()
        self.timings[step] = round(now - self._last, 4)
        self._last = now
        if self.ended is not None:
            self.ended(step)

    @property
    def elapsed(self) -> float:
        """Seconds since the stopwatch was made."""
        return round(time.perf_counter() - self.started, 4)
