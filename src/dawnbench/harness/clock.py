"""The run clock: one monotonic clock, timed and untimed segments.

    clock = Clock(sync=device_sync(device))     # None on a CPU: its ops are synchronous
    clock.start()
    with clock.segment("train"): ...             # counts toward time-to-accuracy
    with clock.segment("eval"): ...              # recorded as eval_s, not timed

Only ``train`` segments are timed. Every other kind is accumulated under its own
name, and ``wall`` covers everything since ``start``. Device work is synchronised
before every reading so that queued kernels are charged to the segment that
launched them.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager

TIMED = "train"


class Clock:
    def __init__(self, now: Callable[[], float] = time.perf_counter,
                 sync: Callable[[], None] | None = None):
        self._now = now
        self._sync = sync
        self._start: float | None = None
        self._totals: dict[str, float] = defaultdict(float)
        self._open: tuple[str, float] | None = None

    def read(self) -> float:
        """Synchronise the device (if any) and read the monotonic clock."""
        if self._sync is not None:
            self._sync()
        return self._now()

    def start(self) -> None:
        self._start = self.read()

    @contextmanager
    def segment(self, kind: str) -> Iterator[None]:
        if self._open is not None:
            raise RuntimeError(f"segment {kind!r} opened inside {self._open[0]!r}")
        begin = self.read()
        self._open = (kind, begin)
        try:
            yield
        finally:
            self._totals[kind] += self.read() - begin
            self._open = None

    def total(self, kind: str) -> float:
        """Seconds spent in closed segments of ``kind`` (plus the open one, if it is)."""
        spent = self._totals.get(kind, 0.0)
        if self._open is not None and self._open[0] == kind:
            spent += self._now() - self._open[1]
        return spent

    @property
    def timed_s(self) -> float:
        return self.total(TIMED)

    @property
    def wall_s(self) -> float:
        return 0.0 if self._start is None else self._now() - self._start
