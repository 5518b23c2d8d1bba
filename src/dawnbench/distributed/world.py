"""The world a worker sees: rank, world size, backend, and the few collectives the harness needs.

torchrun tells each worker who it is through environment variables (``RANK``,
``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``, ``MASTER_ADDR``/``PORT``);
:func:`World.from_env` reads them, and a process started any other way is the
one-worker world, in which every collective below is a no-op. That is why the
harness can call them unconditionally.

Backends: NCCL with one GPU per worker (``cuda:LOCAL_RANK``), gloo on
CPUs, where each worker gets an equal share of the machine's cores as threads.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import torch
import torch.distributed as dist

from dawnbench.bounds import DEFAULT_COLLECTIVE_TIMEOUT_S, SCALINGS
from dawnbench.errors import DawnbenchError

LAUNCHED_AT_ENV = "DAWNBENCH_LAUNCHED_AT"  # the launcher's start (Unix time), for launch_s
# Set by the launcher for its workers: rank 0 appends each run directory it creates.
RUN_DIRS_ENV = "DAWNBENCH_LAUNCH_RUN_DIRS"
# Set by a launcher that pins each worker to its own cores ("0,1;2,3": local rank 0 gets 0 and 1, ...).
PIN_CPUS_ENV = "DAWNBENCH_PIN_CPUS"


@dataclass(frozen=True)
class World:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    local_world_size: int = 1
    backend: str | None = None          # None: one process, no process group
    launch_s: float | None = None       # launcher start → process group joined (untimed; set by init)

    @property
    def distributed(self) -> bool:
        return self.backend is not None

    @property
    def leader(self) -> bool:
        """Rank 0: the worker that holds the clock, evaluates and writes the record."""
        return self.rank == 0

    @property
    def nnodes(self) -> int:
        return max(1, self.world_size // self.local_world_size)

    @staticmethod
    def launched() -> bool:
        """True inside a process that torchrun started."""
        return "TORCHELASTIC_RUN_ID" in os.environ or ("RANK" in os.environ and "WORLD_SIZE" in os.environ)

    @classmethod
    def from_env(cls, device: torch.device) -> World:
        """The world torchrun described, or the one-worker world outside torchrun."""
        if not cls.launched():
            return cls()
        env = os.environ
        return cls(rank=int(env["RANK"]), world_size=int(env["WORLD_SIZE"]),
                   local_rank=int(env.get("LOCAL_RANK", 0)),
                   local_world_size=int(env.get("LOCAL_WORLD_SIZE", env["WORLD_SIZE"])),
                   backend="nccl" if device.type == "cuda" else "gloo")

    # --- set-up (untimed: before run_start, like the rendezvous) ---------------------
    def device(self, device: torch.device) -> torch.device:
        """One GPU per worker: ``cuda`` becomes ``cuda:LOCAL_RANK``."""
        if device.type == "cuda" and self.distributed:
            if self.local_rank >= torch.cuda.device_count():
                raise DawnbenchError(f"worker {self.rank} has local rank {self.local_rank}, but this machine "
                                     f"has {torch.cuda.device_count()} GPU(s): ask --nproc for at most that many.")
            return torch.device("cuda", self.local_rank)
        return device

    def local_devices(self, device: torch.device) -> list[int]:
        """The accelerators the run uses on this machine (torch's indices): one per local worker on a
        GPU — ``cuda:LOCAL_RANK`` — none on a CPU."""
        if device.type != "cuda":
            return []
        return list(range(self.local_world_size)) if self.distributed else [device.index or 0]

    def threads(self) -> int:
        """This worker's threads: what the launcher set (``--threads-per-worker``), else an
        equal share of the machine's cores."""
        return int(os.environ.get("OMP_NUM_THREADS") or 0) or max(1, (psutil.cpu_count() or 1) // self.local_world_size)

    def init(self, device: torch.device, timeout_s: float = DEFAULT_COLLECTIVE_TIMEOUT_S) -> World:
        """Join the process group; set this worker's device and thread count. Returns the world
        with ``launch_s`` when the launcher said when it started (``LAUNCHED_AT_ENV``)."""
        if not self.distributed:
            return self
        if device.type == "cuda":
            torch.cuda.set_device(device)
        else:
            pinned = [part for part in os.environ.get(PIN_CPUS_ENV, "").split(";") if part]
            if len(pinned) == self.local_world_size:  # this worker's own cores (`dawnbench jobs`)
                os.sched_setaffinity(0, [int(c) for c in pinned[self.local_rank].split(",")])
            torch.set_num_threads(self.threads())
        if not dist.is_initialized():
            dist.init_process_group(self.backend, timeout=dt.timedelta(seconds=timeout_s),
                                    device_id=device if device.type == "cuda" else None)
        launched_at = os.environ.get(LAUNCHED_AT_ENV)
        return dataclasses.replace(self, launch_s=time.time() - float(launched_at)) if launched_at else self

    def close(self) -> None:
        if self.distributed and dist.is_initialized():
            dist.destroy_process_group()

    # --- what the harness needs of collectives ----------------------------------------
    def barrier(self) -> None:
        if self.distributed:
            dist.barrier()

    def decide(self, stop: bool) -> bool:
        """Rank 0's decision (stop or go on), known to every worker afterwards."""
        if not self.distributed:
            return stop
        flag = torch.tensor([int(stop)], device=self._collective_device())
        dist.broadcast(flag, src=0)
        return bool(flag.item())

    def share(self, value: Any) -> Any:
        """Rank 0's ``value`` (any picklable object), known to every worker afterwards."""
        if not self.distributed:
            return value
        box = [value]
        dist.broadcast_object_list(box, src=0, device=self._collective_device())
        return box[0]

    def gather(self, values: list[float]) -> list[list[float]]:
        """Every worker's ``values`` (same length everywhere), in rank order."""
        if not self.distributed:
            return [list(values)]
        mine = torch.tensor(values, dtype=torch.float64, device=self._collective_device())
        everyone = [torch.empty_like(mine) for _ in range(self.world_size)]
        dist.all_gather(everyone, mine)
        return [t.tolist() for t in everyone]

    def local_peers(self) -> list[int]:
        """The process ids of the other workers on this machine (a collective: every worker calls it)."""
        if not self.distributed:
            return []
        pids = [int(row[0]) for row in self.gather([float(os.getpid())])]
        node = self.rank // self.local_world_size  # torchrun numbers a node's workers consecutively
        return [pid for rank, pid in enumerate(pids)
                if rank // self.local_world_size == node and rank != self.rank]

    def _collective_device(self) -> torch.device:
        return torch.device("cuda", torch.cuda.current_device()) if self.backend == "nccl" else torch.device("cpu")


def per_worker_overrides(options: Any, entry_cls: type, task: Any, world: World) -> dict[str, Any]:
    """``--set`` overrides with the per-worker batch size that ``--scaling`` asks for.

    Weak scaling (the default) keeps the entry's batch per worker, so the global batch
    grows with the workers; strong scaling keeps the global batch and divides it.
    """
    if options.scaling not in SCALINGS:
        raise DawnbenchError(f"--scaling {options.scaling!r}: use one of {', '.join(SCALINGS)}.")
    overrides = dict(options.overrides)
    if options.scaling == "weak":
        return overrides
    hp = {**entry_cls.hparams, **entry_cls.hparams_by_task.get(task.name, {}), **overrides}
    if "batch_size" not in hp:
        raise DawnbenchError(f"--scaling strong: entry '{entry_cls.name}' has no batch_size hyperparameter "
                             "to divide among the workers; use --scaling weak.")
    if hp["batch_size"] % world.world_size:
        raise DawnbenchError(f"--scaling strong: the global batch size {hp['batch_size']} does not divide "
                             f"among {world.world_size} workers; pick a batch size (--set batch_size=N) "
                             "that is a multiple of the world size.")
    overrides["batch_size"] = hp["batch_size"] // world.world_size
    return overrides


def worker_seed(seed: int, rank: int) -> int:
    """Each worker's seed, derived from the run's: rank 0 keeps the run seed, so a one-worker
    run draws exactly what a plain run draws; other ranks get independent streams."""
    if rank == 0:
        return seed
    return int(np.random.SeedSequence([seed, rank]).generate_state(1)[0])


def shard_order(n: int, seed: int, epoch: int, rank: int, world_size: int,
                device: torch.device | str = "cpu") -> torch.Tensor:
    """The indices of the ``n`` training items this worker visits in ``epoch``, in order.

    Every worker draws the same permutation (seeded by the run seed and the epoch) and
    takes every ``world_size``-th item from its rank on, so the shards are disjoint and
    of equal length — DDP needs every worker to take the same number of steps. When
    ``world_size`` does not divide ``n``, the last ``n mod world_size`` items of the
    permutation sit out that epoch (a different random few each epoch).
    """
    generator = torch.Generator().manual_seed(int(np.random.SeedSequence([seed, epoch]).generate_state(1)[0]))
    order = torch.randperm(n, generator=generator)
    usable = n - n % world_size
    return order[rank:usable:world_size].to(device)


def announce_run_dir(run_dir: Path) -> None:
    """Tell the launcher (if there is one) where rank 0 is recording a run."""
    path = os.environ.get(RUN_DIRS_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as f:   # one JSON string a line: a folder's name may hold a newline
            f.write(json.dumps(str(Path(run_dir).resolve())) + "\n")


def under_launcher() -> bool:
    """True in a worker started by :func:`launch` (``dawnbench.experiments.launch``, which reports the results itself)."""
    return RUN_DIRS_ENV in os.environ
