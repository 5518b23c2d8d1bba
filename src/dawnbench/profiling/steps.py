"""Counting optimizer steps with torch's global optimizer-step hook: one integer increment
per step. The harness's progress display reads the count; a limit ends the default
warm-up and the profiler's window (every entry steps an optimizer, whatever its loop)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch.optim.optimizer import register_optimizer_step_post_hook

Hook = Callable[[Any, Any, Any], None]


class StepLimitReached(BaseException):
    """Raised from inside the optimizer step that reaches a :class:`StepCounter`'s limit
    (a BaseException, so an entry's ``except Exception`` does not swallow it)."""


class StepCounter:
    """Counts optimizer steps inside its ``with`` block; with ``limit``, the step that
    reaches it raises :class:`StepLimitReached` (how the default warm-up ends ``train``)."""

    def __init__(self, limit: int | None = None, wrap: Callable[[Hook], Hook] = lambda hook: hook) -> None:
        self.steps = 0
        self.limit = limit
        self._wrap = wrap   # the run's: times the hook as the harness's own cost (harness/cost.py)

    def _count(self, _optimizer, _args, _kwargs) -> None:
        self.steps += 1
        if self.limit is not None and self.steps >= self.limit:
            raise StepLimitReached

    def __enter__(self) -> StepCounter:
        self._handle = register_optimizer_step_post_hook(self._wrap(self._count))
        return self

    def __exit__(self, *_exc) -> None:
        self._handle.remove()
