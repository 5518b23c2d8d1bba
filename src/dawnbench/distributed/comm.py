"""Communication measured, not estimated: DDP with a timing communication hook.

DDP splits the gradients into buckets and starts each bucket's all-reduce as soon
as backward has produced it, so most communication overlaps the rest of backward.
What costs time is the part that does not: after the *last* bucket is launched,
backward has nothing left to compute and the step waits until every all-reduce has
finished. Per step, this worker's timer records

* ``compute``  forward + backward up to the latest bucket launch, plus the
               optimizer step (the worker's own step time, communication excluded);
* ``comm``     every bucket's all-reduce from launch to completion (hidden or not);
* ``exposed``  completion of the last all-reduce − the latest launch: the
               communication not hidden behind computation.

Timestamps come from the training thread (forward pre-hook, the hook itself,
optimizer hooks) and from the futures' completion callbacks (the backend's thread),
all on ``time.perf_counter``. On a GPU the hook's timestamps are host times of
launches, not of kernels: there ``exposed`` is what the host waited.

A faster worker's ``exposed`` also contains the time it waited for a slower peer
to reach the all-reduce; the slowest worker's does not. The run's communication
overhead therefore takes the smallest ``exposed`` over the workers (see
:func:`accounting`).
"""

# No `from __future__ import annotations` here: DDP checks the hook's annotations as
# objects (dist.GradBucket, Future[Tensor]), and strings fail that check.
import threading
import time
from collections.abc import Callable

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.optim.optimizer import (
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
)

from dawnbench.distributed.world import World

FIELDS = ("steps", "compute_s", "comm_s", "exposed_s")


class CommTimer:
    """Per-step timing of one worker's DDP steps; :meth:`totals` in the order of ``FIELDS``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.steps = 0
        self.compute_s = self.comm_s = self.exposed_s = 0.0
        self._reset_step()
        self._active = False
        self._handles: list[torch.utils.hooks.RemovableHandle] = []

    def _reset_step(self) -> None:
        self._forward_at: float | None = None
        self._last_launch: float | None = None
        self._latest_done = 0.0
        self._optimizer_at: float | None = None

    # --- hooks ---------------------------------------------------------------------
    def forward_started(self, *_: object) -> None:
        if self._active:
            self._forward_at = time.perf_counter()

    def allreduce(self, process_group: dist.ProcessGroup | None,
                  bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
        """DDP communication hook: the default all-reduce (mean), with timestamps."""
        launched = time.perf_counter()
        group = process_group or dist.group.WORLD
        tensor = bucket.buffer().div_(dist.get_world_size(group))
        with self._lock:
            self._last_launch = launched  # the latest launch: backward has nothing left after it
        future = dist.all_reduce(tensor, group=group, async_op=True).get_future()

        def finished(fut: torch.futures.Future) -> torch.Tensor:
            now = time.perf_counter()
            with self._lock:
                self.comm_s += now - launched
                self._latest_done = max(self._latest_done, now)
            return fut.value()[0]
        return future.then(finished)

    def optimizer_started(self, *_: object) -> None:
        if self._active:
            self._optimizer_at = time.perf_counter()

    def optimizer_finished(self, *_: object) -> None:
        """Close the step: every all-reduce has completed before the optimizer ran."""
        if not self._active:
            return
        now = time.perf_counter()
        with self._lock:
            if self._forward_at is not None and self._last_launch is not None:
                self.steps += 1
                self.compute_s += self._last_launch - self._forward_at
                if self._optimizer_at is not None:
                    self.compute_s += now - self._optimizer_at
                self.exposed_s += max(0.0, self._latest_done - self._last_launch)
            self._reset_step()

    # --- lifecycle -----------------------------------------------------------------
    def start(self) -> "CommTimer":
        """Count steps from now on (the optimizer hooks are global: any optimizer's step)."""
        self._handles = [register_optimizer_step_pre_hook(self.optimizer_started),
                         register_optimizer_step_post_hook(self.optimizer_finished)]
        self._active = True
        return self

    def stop(self) -> None:
        self._active = False
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def totals(self) -> list[float]:
        with self._lock:
            return [float(self.steps), self.compute_s, self.comm_s, self.exposed_s]


def ddp_wrapper(world: World, timer: CommTimer | None) -> Callable[[torch.nn.Module], torch.nn.Module]:
    """What ``ctx.distribute`` does: the identity for one process; otherwise DDP, timed by ``timer``."""
    if not world.distributed:
        return lambda module: module

    def wrap(module: torch.nn.Module) -> torch.nn.Module:
        device = next(module.parameters()).device
        ddp = DistributedDataParallel(module, device_ids=[device] if device.type == "cuda" else None)
        if timer is not None:
            ddp.register_comm_hook(None, timer.allreduce)
            ddp.register_forward_pre_hook(timer.forward_started)
        return ddp
    return wrap


def accounting(workers: list[list[float]], train_s: float, epochs: float) -> dict[str, object]:
    """Per-worker totals (rows of ``FIELDS``) against the run's timed training seconds.

    ``comm_overhead_pct`` = the smallest exposed communication over the workers / the
    timed training time (the ratio per epoch is the same). ``accounted_pct`` compares
    the slowest worker's own compute plus that communication with the timed time: the
    remainder is what neither explains (data loading, model building, the Python loop).
    """
    rows = [dict(zip(FIELDS, w)) for w in workers]
    for rank, row in enumerate(rows):
        row["steps"] = int(row["steps"])
        row["rank"] = rank
    least = min(rows, key=lambda r: r["exposed_s"])  # the worker that waited for no peer
    exposed = least["exposed_s"]
    compute = max(r["compute_s"] for r in rows)
    per_epoch = (lambda s: s / epochs) if epochs > 0 else (lambda s: None)
    return {
        "workers": rows,
        "time_per_epoch_s": per_epoch(train_s),
        "compute_per_epoch_s": per_epoch(compute),
        "comm_exposed_per_epoch_s": per_epoch(exposed),
        "comm_overhead_pct": 100 * exposed / train_s if train_s > 0 else None,
        "comm_hidden_pct": 100 * (1 - exposed / least["comm_s"]) if least["comm_s"] > 0 else None,
        "accounted_pct": 100 * (compute + exposed) / train_s if train_s > 0 else None,
    }
