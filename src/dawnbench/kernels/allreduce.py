"""All-reduce (sum) of fp32 buffers over the world torchrun started: gloo on CPUs, NCCL on GPUs.

Every rank runs :func:`measure`; rank 0 gets the rows. For each size: a buffer of ``floats`` fp32
on this rank's device, first filled with ``rank + 1`` and reduced once — every element must come
back as 1 + 2 + … + world_size, or the collective is broken and the command says so — then
zeroed (a sum of zeros stays finite however often it is repeated) and reduced a few times as a
warm-up. Each of ``REPEATS`` measurements is a barrier, then ``iterations`` back-to-back
all-reduces on a clock read after the device is synchronised; its time per all-reduce is the
slowest rank's (gathered). The row gives the median and IQR of those (``repeats`` of them;
``calls``: all-reduces timed in all), and nccl-tests' two
bandwidths: algorithm bandwidth = bytes / time, bus bandwidth = algorithm bandwidth ×
2(n − 1)/n, which is what the links carried in a ring.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from dawnbench.distributed.world import World
from dawnbench.environment import device_sync
from dawnbench.errors import DawnbenchError
from dawnbench.records.problems import Problem

REPEATS = 5
TARGET_S = 0.1          # each measurement runs about this long (at least one all-reduce)
WARMUP = 3


def measure(problems: list[Problem], world: World, device: torch.device,
            finished: Callable[[list[dict[str, Any]]], None] = lambda rows: None) -> list[dict[str, Any]]:
    """One row per problem (the same list on every rank; rows are meaningful on rank 0);
    ``finished(rows so far)`` after each."""
    sync = device_sync(device) or (lambda: None)
    n = world.world_size
    rows = []
    for problem in problems:
        floats = problem.params["floats"]
        buffer = torch.full((floats,), float(world.rank + 1), device=device)
        dist.all_reduce(buffer)
        expected = n * (n + 1) / 2
        if not bool(torch.all(buffer == expected)):
            raise DawnbenchError(f"all-reduce of {floats} floats over {n} ranks ({world.backend}) returned a wrong "
                                 f"sum (expected {expected:g} everywhere): the collective is broken on this machine.")
        buffer.zero_()
        for _ in range(WARMUP):
            dist.all_reduce(buffer)
        sync()
        start = time.perf_counter()
        dist.all_reduce(buffer)
        sync()
        one = world.gather([time.perf_counter() - start])
        iterations = max(1, int(TARGET_S / max(max(r[0] for r in one), 1e-6)))
        iterations = int(world.gather([float(iterations)])[0][0])   # rank 0's count, the same everywhere
        times = []
        for _ in range(REPEATS):
            world.barrier()
            start = time.perf_counter()
            for _ in range(iterations):
                dist.all_reduce(buffer)
            sync()
            per_call = (time.perf_counter() - start) / iterations
            times.append(max(r[0] for r in world.gather([per_call])))  # the slowest rank's
        median = float(np.median(times))
        q1, q3 = np.percentile(times, [25, 75])
        moved = floats * 4
        algbw = moved / median / 1e9
        rows.append({"suite": "allreduce", "set": None, "params": {"floats": floats}, "pass": "allreduce",
                     "precision": "fp32", "median_s": median, "iqr_s": float(q3 - q1),
                     "repeats": REPEATS, "calls": REPEATS * iterations, "flops": 0.0, "bytes": float(moved),
                     "gflops": 0.0, "gbps": algbw, "intensity": None, "fraction_of_roof": None, "world_size": n,
                     "backend": world.backend, "nnodes": world.nnodes, "algbw_gbps": algbw,
                     "busbw_gbps": algbw * 2 * (n - 1) / n, "sum_checked": True})
        finished(rows)
    return rows
