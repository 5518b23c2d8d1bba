"""SIGINT/SIGTERM and the budgets that stop a run even mid-step, turned into its status.

* ``interrupted``  SIGINT or SIGTERM arrived; the run stops where it is.
* ``timeout``      ``max_wall_seconds`` of wall time since the block began passed, or the
                   warm-up took longer than its budget (``max_init_seconds``).
* ``not_reached``  ``max_seconds`` of timed training passed inside a training step: the
                   entry had not yielded, so the check at the next evaluation point would
                   never come (an entry whose loop does not advance, say).

Budgets are enforced by one interval timer (``SIGALRM``) set to the nearest deadline, so
they stop a run wherever it is — in the entry's own code too — by raising
:class:`StopRun`, which the entry cannot swallow. Python can: a handler that runs inside a
finaliser (a ``__del__``, a garbage-collector callback) has its exception printed and dropped.
So a stop is raised again every ``RETRY_S`` until the driver says it caught it
(:meth:`Budgets.caught`); one dropped stop once let a 1-second budget run to 3.3 s.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from dawnbench.records.record import Status

RETRY_S = 0.1  # how soon a stop that a finaliser dropped is raised again


class StopRun(BaseException):
    """Raised by a signal handler to end the run (not an Exception: entries can't swallow it).
    ``cause``: ``signal``, or the budget that ran out (``max_seconds``, ``max_epochs``,
    ``max_wall_seconds``, ``max_init_seconds``)."""

    def __init__(self, status: str, why: str, cause: str = "signal"):
        super().__init__(why)
        self.status, self.cause = status, cause


@dataclass
class _Deadline:
    at: float          # time.monotonic() when it passes
    status: str
    why: str
    cause: str


class Budgets:
    """The deadlines of one run: wall time for the whole block, and one at a time for a stage
    (the warm-up, a stretch of timed training). The timer always points at the nearest."""

    def __init__(self, active: bool):
        self._active = active
        self._wall: _Deadline | None = None
        self._stage: _Deadline | None = None
        self._raised: _Deadline | None = None  # a stop raised and not yet caught by the driver
        self.disarmed = False

    def _arm(self) -> None:
        if not self._active or self.disarmed:
            return
        pending = [d.at for d in (self._wall, self._stage) if d is not None]
        delay = max(1e-3, min(pending) - time.monotonic()) if pending else 0.0
        signal.setitimer(signal.ITIMER_REAL, delay)

    def wall(self, seconds: float | None, spent: float = 0.0) -> None:
        """The whole run's deadline: ``seconds`` of wall time, ``spent`` of them already gone (the setup)."""
        if seconds:
            self._wall = _Deadline(time.monotonic() + seconds - spent, Status.TIMEOUT,
                                   f"wall time passed max_wall_seconds={seconds:g} (counted from the command's "
                                   "start: setup and warm-up included)", "max_wall_seconds")
            self._arm()

    @contextmanager
    def stage(self, seconds: float | None, status: str, why: str, cause: str) -> Iterator[None]:
        """Within the block, ``StopRun(status, why, cause)`` once ``seconds`` pass (``None``: no limit)."""
        if seconds is None:
            yield
            return
        self._stage = _Deadline(time.monotonic() + max(seconds, 0.0), status, why, cause)
        self._arm()
        try:
            yield
        finally:
            self._stage = None
            self._arm()

    def expired(self) -> _Deadline | None:
        now = time.monotonic()
        return next((d for d in (self._wall, self._stage) if d is not None and now >= d.at - 1e-3), None)

    def resume(self) -> None:
        """Signals and the wall-time budget count again (after a budget ended training, for the
        evaluation that follows: Ctrl-C must still stop it)."""
        self._raised = None
        self.disarmed = False
        self._arm()

    def fire(self, deadline: _Deadline) -> None:
        """Raise ``deadline``'s stop, and again every ``RETRY_S`` until :meth:`caught`."""
        self.disarm()
        self._raised = deadline
        signal.setitimer(signal.ITIMER_REAL, RETRY_S)
        raise StopRun(deadline.status, deadline.why, deadline.cause)

    def caught(self) -> None:
        """The driver holds the stop: no more retries."""
        self._raised = None
        if self._active and self.disarmed:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def disarm(self) -> None:
        """From now on, signals and deadlines are ignored until the block ends (the final record
        is being written)."""
        self.disarmed = True
        if self._active:
            signal.setitimer(signal.ITIMER_REAL, 0)


@contextmanager
def stop_on_signals(max_wall_seconds: float | None, spent: float = 0.0) -> Iterator[Budgets]:
    """Turn SIGINT/SIGTERM into ``interrupted`` and the budgets into their statuses; ``spent``: wall seconds
    the run's budget had already used when the block began (the setup before it).

    Yields the run's :class:`Budgets`; after ``budgets.disarm()`` signals are ignored until
    the block ends, so that the final record is written whole.
    """
    if threading.current_thread() is not threading.main_thread():
        yield Budgets(active=False)  # signals can only be handled in the main thread
        return
    budgets = Budgets(active=True)
    told: list[int] = []             # the SIGTERMs that arrived: passed on once the run has its record

    def on_signal(signum, _frame):
        if signum == signal.SIGTERM:
            told.append(signum)
        if not budgets.disarmed:  # a second Ctrl-C while the record is written is ignored
            budgets.fire(_Deadline(time.monotonic(), Status.INTERRUPTED,
                                   f"received {signal.Signals(signum).name}", "signal"))

    def on_alarm(_signum, _frame):
        if budgets.disarmed:
            if budgets._raised is not None:  # raised, and dropped on its way to the driver
                budgets.fire(budgets._raised)
            return
        deadline = budgets.expired()
        if deadline is None:  # the timer ran a little early: wait for the deadline itself
            budgets._arm()
            return
        budgets.fire(deadline)

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    previous[signal.SIGALRM] = signal.signal(signal.SIGALRM, on_alarm)
    budgets.wall(max_wall_seconds, spent)
    try:
        yield budgets
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        for s, handler in previous.items():
            signal.signal(s, handler)
        # A SIGTERM is the whole process's to obey: where the code around the run handles it (a test suite, a
        # user's program), it is passed on once the record is written, so that they stop too; the command line's
        # default (none installed) leaves the run's status and exit code as they are.
        if told and callable(previous[signal.SIGTERM]):
            previous[signal.SIGTERM](signal.SIGTERM, None)


@contextmanager
def interruptible() -> Iterator[None]:
    """While a batch command waits on its runs or jobs, SIGINT raises ``KeyboardInterrupt`` whatever
    the command inherited. Python leaves SIGINT ignored in a process started with it ignored (a
    script's background job), and then `kill -INT` — a deliberate stop — would do nothing; a run
    itself already handles it (``stop_on_signals``)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
