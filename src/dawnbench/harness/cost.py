"""The harness's own cost, accounted directly: what it adds beside the training loop while
the clock runs, as shares of the timed interval — read from the operating system's own counters, not
inferred from pairs of runs with and without it.

    cost = HarnessCost()
    with cost.timed():                   # around each timed segment, inside it
        with cost.entry():               # the entry's own code: next(train)
            ...
    hook = cost.wrap(hook)               # a harness hook run at every optimizer step
    result.harness = cost.figures(timed_s)

Three parts, each summed over the timed segments only:

* ``threads_cpu_s``: CPU seconds of each of the harness's threads in this process — those named
  ``dawnbench-…`` (the resource sampler, the live progress display) — read from each thread's own CPU
  clock (``pthread_getcpuclockid``) at the start and end of every timed segment. A thread that starts
  or ends inside a segment is counted from its first reading to its last.
* ``launcher_cpu_s``: with several workers, the CPU seconds of torchrun's agent (this worker's parent
  process: it polls its workers and holds the rendezvous store) — what the launch adds while training.
* ``main_s``: wall seconds the training thread spends in harness code inside the timed segments — the
  hooks it runs at every optimizer step (step count, budgets, the agreed stop of several workers) and
  each segment's edges (entering the precision scope and the budget timer, the barrier that ends it).
  Measured with ``perf_counter`` around each piece, so it includes the cost of measuring it.

The shares are each part over the timed seconds; ``share`` is their sum. Other ranks' hooks and
threads are not in rank 0's record (they run the same hooks and no display or sampler).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psutil

THREAD_PREFIX = "dawnbench-"   # the harness names its threads so: how they are found here


def _thread_clocks() -> dict[str, float]:
    """CPU seconds so far of each live harness thread, by name (a name seen twice gets its ident)."""
    clocks: dict[str, float] = {}
    for thread in threading.enumerate():
        if not thread.name.startswith(THREAD_PREFIX) or thread.ident is None:
            continue
        try:
            seconds = time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
        except (OSError, ProcessLookupError):   # it ended between the listing and the reading
            continue
        name = thread.name if thread.name not in clocks else f"{thread.name}-{thread.ident}"
        clocks[name] = seconds
    return clocks


def _launcher() -> psutil.Process | None:
    """torchrun's agent, where this process is one of its workers (it sets TORCHELASTIC_RUN_ID)."""
    if "TORCHELASTIC_RUN_ID" not in os.environ:
        return None
    try:
        return psutil.Process(os.getppid())
    except psutil.Error:
        return None


def _cpu(proc: psutil.Process | None) -> float:
    if proc is None:
        return 0.0
    try:
        times = proc.cpu_times()
    except psutil.Error:
        return 0.0
    return times.user + times.system


class HarnessCost:
    def __init__(self) -> None:
        self.threads_cpu_s: dict[str, float] = {}
        self.launcher = _launcher()
        self.launcher_cpu_s = 0.0
        self.main_s = 0.0
        self._entry_s = 0.0            # the entry's own time inside the current segment

    @contextmanager
    def timed(self) -> Iterator[None]:
        """Around a timed segment (inside the clock's): the threads' and the launcher's CPU clocks read at
        its edges; its wall time outside ``entry`` is the main thread's harness time at the edges."""
        threads, launcher = _thread_clocks(), _cpu(self.launcher)
        began, self._entry_s = time.perf_counter(), 0.0
        try:
            yield
        finally:
            # ≥ 0: a tracked script's entry time is counted by its own clock, which can pass this one by a hair
            self.main_s += max(0.0, time.perf_counter() - began - self._entry_s)
            for name, seconds in _thread_clocks().items():
                if name in threads:
                    self.threads_cpu_s[name] = self.threads_cpu_s.get(name, 0.0) + max(0.0, seconds - threads[name])
            if self.launcher is not None:
                self.launcher_cpu_s += max(0.0, _cpu(self.launcher) - launcher)

    @contextmanager
    def entry(self) -> Iterator[None]:
        """Around the entry's own code inside a timed segment. The harness's hooks that run inside it are
        counted by ``wrap``; the segment's edges are what is left outside it."""
        began = time.perf_counter()
        try:
            yield
        finally:
            self._entry_s += time.perf_counter() - began

    def wrap(self, hook: Callable[..., Any]) -> Callable[..., Any]:
        """``hook`` with its wall time added to the main thread's harness time."""
        def timed_hook(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return hook(*args, **kwargs)
            finally:
                self.main_s += time.perf_counter() - began
        return timed_hook

    def figures(self, timed_s: float) -> dict[str, Any]:
        """What ``result.json`` keeps under ``harness``."""
        threads = sum(self.threads_cpu_s.values())
        launcher = self.launcher_cpu_s if self.launcher is not None else None
        def share(seconds: float) -> float | None:
            return seconds / timed_s if timed_s > 0 else None
        parts = [threads, self.main_s, launcher or 0.0]
        return {"threads_cpu_s": {k: round(v, 6) for k, v in sorted(self.threads_cpu_s.items())},
                "launcher_cpu_s": launcher, "main_s": self.main_s, "timed_s": timed_s,
                "threads_share": share(threads), "launcher_share": None if launcher is None else share(launcher),
                "main_share": share(self.main_s), "share": share(sum(parts))}
