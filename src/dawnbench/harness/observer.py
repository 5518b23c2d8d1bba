"""What the harness tells a live display while it runs (kept free of torch, so displays load fast)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dawnbench.entries.base import Progress
    from dawnbench.harness.progress import ProgressProbe
    from dawnbench.records.record import RunResult


class RunObserver:
    """Callbacks for a live display; every method is called outside the timed region."""

    def preparing(self, what: str) -> None:
        """Before the first run: a step that takes a while (the memory plan's probes), in words."""
    def run_started(self, index: int, total: int, result: RunResult) -> None: ...
    def training_started(self, probe: ProgressProbe) -> None:
        """At ``run_start``; ``probe.snapshot()`` may be read from another thread until ``run_finished``."""
    def evaluated(self, result: RunResult, progress: Progress, samples_per_s: float | None) -> None: ...
    def run_finished(self, result: RunResult) -> None: ...
