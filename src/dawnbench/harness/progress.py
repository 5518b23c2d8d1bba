"""Where training stands between evaluations, for displays (a long CPU run is otherwise silent).

The entry yields only at evaluation points — on a CPU, CIFAR-10 trains for ten minutes
or more before the first. Between them the harness counts optimizer steps with torch's
global optimizer-step hook: one integer increment per step is all it adds to the timed
region. A display reads a :class:`ProgressProbe` from its own thread, at most once a
second, and turns the count into steps, epoch, samples/s and an ETA to the end of the
entry's schedule. Samples per step and per epoch start as ``batch_size`` × workers and the
training split's size, and are replaced by what the entry reports at each evaluation
(``Progress.samples`` and ``.epoch``), so an entry training on a subset, or stepping
twice per batch, is shown right from its first evaluation on. Without a
``batch_size`` hyperparameter it shows steps only until then. :meth:`ProgressProbe.position`
says where training stands when a budget stops it between evaluations.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from dawnbench.profiling.steps import StepCounter


@dataclass
class TrainingStatus:
    steps: int
    samples: int | None
    epoch: float | None
    timed_s: float
    samples_per_s: float | None     # since the previous snapshot
    eta_s: float | None             # timed seconds left to the end of the schedule


class ProgressProbe:
    """Snapshots of a run's training progress; read from a display thread."""

    def __init__(self, counter: StepCounter, timed_s: Callable[[], float], samples_per_step: int | None,
                 train_count: int | None, schedule_epochs: float | None):
        self._counter, self._timed_s = counter, timed_s
        self.samples_per_step: float | None = samples_per_step   # batch × workers until calibrated
        self.samples_per_epoch: float | None = train_count
        self.schedule_epochs = schedule_epochs
        self._last: tuple[int, float] = (0, 0.0)

    def observe(self, samples: int, epoch: float) -> None:
        """Calibrate with what the entry reported at an evaluation point (called by the harness)."""
        if self._counter.steps > 0 and samples > 0:
            self.samples_per_step = samples / self._counter.steps
        if epoch > 0 and samples > 0:
            self.samples_per_epoch = samples / epoch

    def position(self) -> tuple[int | None, float | None]:
        """(samples, epoch) after the optimizer steps taken so far (None where unknown)."""
        per_step, per_epoch = self.samples_per_step, self.samples_per_epoch
        samples = round(self._counter.steps * per_step) if per_step else None
        return samples, (samples / per_epoch if samples is not None and per_epoch else None)

    def snapshot(self) -> TrainingStatus:
        steps, timed = self._counter.steps, self._timed_s()
        per_step, per_epoch = self.samples_per_step, self.samples_per_epoch
        samples, epoch = self.position()
        rate = None
        last_steps, last_timed = self._last
        if per_step and timed > last_timed and steps > last_steps:
            rate = (steps - last_steps) * per_step / (timed - last_timed)
            self._last = (steps, timed)
        eta = None
        if rate and epoch is not None and self.schedule_epochs:
            eta = max(0.0, self.schedule_epochs - epoch) * per_epoch / rate
        return TrainingStatus(steps, samples, epoch, timed, rate, eta)
