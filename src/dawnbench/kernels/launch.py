"""The all-reduce suite across torchrun workers: launched by ``dawnbench kernels`` on node 0
(:func:`launch`, its rows merged into the document), joined from another machine (:func:`join`), measured inside
each worker (:func:`worker`). The command line only chooses which and prints what it is told (``say``)."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dawnbench.distributed.launch import LaunchOptions, torchrun
from dawnbench.errors import DawnbenchError
from dawnbench.harness.options import resolve_device
from dawnbench.io import atomic_write_json, read_json
from dawnbench.kernels import allreduce
from dawnbench.kernels.run import Document, KernelOptions, merge
from dawnbench.profiling.resources import ResourceMonitor
from dawnbench.records import problems

# Where rank 0 of the all-reduce workers leaves each finished row for the launcher: a file in a folder
# of the launcher's own (not the user's --out), named in the workers' environment.
ALLREDUCE_ROWS_ENV = "DAWNBENCH_ALLREDUCE_ROWS"


def under_torchrun() -> bool:
    """Whether this process is one of torchrun's workers (then it measures the all-reduce: :func:`worker`)."""
    from dawnbench.distributed.world import World

    return World.launched()


def launch_options(nproc: int | None, nnodes: int, node_rank: int, rdzv_endpoint: str | None,
                   threads_per_worker: int | None) -> LaunchOptions:
    """The workers of the all-reduce: ``nproc`` ranks a node (one per GPU where there are GPUs, else at most the
    cores' and the quick set's ranks; 0 is refused, not the default), checked."""
    ranks = _default_ranks(problems.QUICK_RANKS) if nproc is None else nproc
    options = LaunchOptions(ranks, nnodes, node_rank, rdzv_endpoint, threads_per_worker)
    options.check()
    return options


def _default_ranks(fallback: int) -> int:
    """One rank per GPU where there are GPUs; else ``fallback`` CPU ranks (at most the cores)."""
    import psutil
    import torch

    if torch.cuda.is_available():
        return torch.cuda.device_count()
    return max(1, min(fallback, psutil.cpu_count() or 1))


def _argv(options: KernelOptions) -> list[str]:
    return ["kernels", "allreduce", "--out", str(options.out), "--device", options.device,
            *(["--quick"] if options.quick else [])]


def _chosen(options: KernelOptions) -> list[Any]:
    """The all-reduce problems the command measures: the quick set's, or its set's."""
    return problems.quick("allreduce") if options.quick else problems.problems("allreduce", options.set_name)


def launch(document: Document, options: KernelOptions, workers: LaunchOptions,
           say: Callable[[str], None] = lambda line: None) -> None:
    """All-reduce on ``workers`` torchrun workers; their rows merged into ``document`` (a size no rank finished:
    a skipped row saying why). Ctrl-C raises KeyboardInterrupt once the finished sizes are merged."""
    import torch

    say(f"all-reduce on {workers.nproc * workers.nnodes} ranks (torchrun)")
    start = time.perf_counter()
    gpus = list(range(workers.nproc)) if options.device != "cpu" and torch.cuda.is_available() else []
    with tempfile.TemporaryDirectory(prefix="dawnbench-allreduce-") as scratch:
        part = Path(scratch) / "rows.json"
        with ResourceMonitor(document.out / "resources-allreduce.tsv", devices=gpus) as monitor:
            outcome = torchrun(_argv(options), workers, env={ALLREDUCE_ROWS_ENV: str(part)})
        rows = read_json(part, "kernel result")["rows"] if part.is_file() else []   # every size rank 0 finished
    if not outcome.signal:
        done = {r["params"]["floats"] for r in rows}
        why = "the all-reduce workers failed: " + ("; ".join(outcome.failures) or "no rows came back")
        rows += [{"suite": "allreduce", "set": None, "params": {"floats": f}, "pass": "allreduce", "precision": "fp32",
                  "skipped": why} for f in (p.params["floats"] for p in _chosen(options)) if f not in done]
    merge(document, rows, {**monitor.summary(), "launch_and_measure_s": time.perf_counter() - start})
    if outcome.signal:               # Ctrl-C: the finished sizes are in kernels.json; the caller marks it
        raise KeyboardInterrupt


def join(options: KernelOptions, workers: LaunchOptions) -> Any:
    """Another machine of a multi-node all-reduce: its ranks join node 0's (node 0 writes kernels.json); the
    launch's outcome (``signal``, ``failures``)."""
    if options.suites != ("allreduce",):
        raise DawnbenchError(f"--node-rank {workers.node_rank}: the other machines of a launch join node 0's "
                             "all-reduce only (the other suites are one machine's): run `kernels allreduce` there.")
    return torchrun(_argv(options), workers)


def worker(options: KernelOptions, collective_timeout: float | None) -> None:
    """Inside torchrun: measure the all-reduce sizes; rank 0 leaves the rows for the launcher, each as it ends."""
    from dawnbench.distributed.world import World

    if options.suites != ("allreduce",):
        raise DawnbenchError("under torchrun, `dawnbench kernels` measures the all-reduce suite only.")
    device = resolve_device(options.device)
    world = World.from_env(device)
    device = world.device(device)
    world = world.init(device, collective_timeout)
    rows_file = os.environ.get(ALLREDUCE_ROWS_ENV)

    def finished(rows: list[dict[str, Any]]) -> None:   # each size as it ends: Ctrl-C keeps them
        if world.leader and rows_file:
            atomic_write_json(Path(rows_file), {"rows": rows})

    try:
        allreduce.measure(_chosen(options), world, device, finished)
    finally:
        world.close()
