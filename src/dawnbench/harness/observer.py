"""What the harness tells a live display while it runs (kept free of torch, so displays load fast)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dawnbench.entries.base import Progress
    from dawnbench.harness.progress import ProgressProbe
    from dawnbench.records.record import RunResult


class RunObserver:
    """Callbacks for a live display (``run_many(options, observer=...)``), in the order they come; every method is
    called outside the timed region, and each does nothing unless overridden."""

    def preparing(self, what: str) -> None:
        """Before the first run: a step that takes a while (the memory plan's probes), in words."""
    def run_started(self, index: int, total: int, result: RunResult) -> None:
        """Run ``index`` of ``total`` (from 0) has opened its record: ``result.run_dir`` is its folder."""
    def training_started(self, probe: ProgressProbe) -> None:
        """At ``run_start``; ``probe.snapshot()`` may be read from another thread until ``run_finished``."""
    def evaluated(self, result: RunResult, progress: Progress, samples_per_s: float | None) -> None:
        """An evaluation was recorded (``result.evals[-1]``); ``progress`` is the entry's yield (epoch, samples, and
        its ``loss`` as the entry gave it: a number or a one-element tensor)."""
    def run_finished(self, result: RunResult) -> None:
        """The record is final: ``result.status``, ``result.time_to_accuracy_s``."""
