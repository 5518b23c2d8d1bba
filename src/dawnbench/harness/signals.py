"""SIGINT/SIGTERM and the wall-time alarm, turned into a run's status (SPEC §3).

* ``interrupted``  SIGINT or SIGTERM arrived; the run stops where it is.
* ``timeout``      ``max_wall_seconds`` of wall time since the block began passed;
                   enforced by an alarm, so it can stop a run mid-step.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class StopRun(BaseException):
    """Raised by a signal handler to end the run (not an Exception: entries can't swallow it)."""

    def __init__(self, status: str, why: str):
        super().__init__(why)
        self.status = status


@contextmanager
def stop_on_signals(max_wall_seconds: float | None) -> Iterator[Callable[[], None]]:
    """Turn SIGINT/SIGTERM into ``interrupted`` and the wall-time alarm into ``timeout``.

    Yields ``disarm``: after it is called, signals are ignored until the block ends,
    so that the final record is written whole.
    """
    fired: list[int] = []

    def disarm() -> None:
        fired.append(0)
        signal.setitimer(signal.ITIMER_REAL, 0)

    if threading.current_thread() is not threading.main_thread():
        yield lambda: None  # signals can only be handled in the main thread
        return

    def on_signal(signum, _frame):
        if not fired:  # a second Ctrl-C while the record is written is ignored
            fired.append(signum)
            raise StopRun("interrupted", f"received {signal.Signals(signum).name}")

    def on_alarm(_signum, _frame):
        if not fired:
            fired.append(signal.SIGALRM)
            raise StopRun("timeout", f"wall time passed max_wall_seconds={max_wall_seconds:g}")

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    previous[signal.SIGALRM] = signal.signal(signal.SIGALRM, on_alarm)
    if max_wall_seconds:
        signal.setitimer(signal.ITIMER_REAL, max_wall_seconds)
    try:
        yield disarm
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        for s, handler in previous.items():
            signal.signal(s, handler)
