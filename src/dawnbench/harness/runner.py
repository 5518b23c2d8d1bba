"""The harness's entry point: runs an entry on a task under the clock rules.

    from dawnbench import RunOptions, run_many
    results = run_many(RunOptions(task="mnist", runs=5))

:func:`run_many` checks the options (:mod:`~dawnbench.harness.options`), joins the
world when torchrun started this process, fetches the data once per machine, then runs
each seed with :func:`~dawnbench.harness.driver.execute` — the same loop on every
rank, rank 0 holding the recorder that writes the record.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import psutil

from dawnbench import data
from dawnbench.distributed.world import World, announce_run_dir, per_worker_overrides
from dawnbench.entries import Entry
from dawnbench.errors import DawnbenchError
from dawnbench.harness.clock import Clock
from dawnbench.harness.core import clock_for
from dawnbench.harness.driver import execute
from dawnbench.harness.memory import plan_memory
from dawnbench.harness.observer import RunObserver
from dawnbench.harness.options import P2P_OFF_ENV, PreparedRun, RunOptions, prepare
from dawnbench.harness.recorder import RankZeroRecorder, Recorder
from dawnbench.io import atomic_write_json, output_dir
from dawnbench.records.record import RunResult, Status, new_run_dir
from dawnbench.tasks import Task


def record_unstarted(options: RunOptions, prep: PreparedRun, why: str) -> RunResult:
    """The record of a run that ended before it started (its machines never met): ``aborted``, with why, in
    a folder of its own under ``options.out_dir`` — so every way a run can end leaves a record."""
    run_dir = new_run_dir(options.out_dir, prep.task.name, prep.entry_cls.name, options.seed)
    result = RunResult(task=prep.task.name, entry=prep.entry_cls.name, seed=options.seed, status="aborted",
                       official=prep.official, metric=prep.task.metric.name, threshold=prep.threshold,
                       precision=options.precision, subset=prep.task.subset, error=why, run_dir=str(run_dir))
    atomic_write_json(output_dir(run_dir) / "result.json", result.to_dict())
    return result


def run_seed(options: RunOptions, prep: PreparedRun, seed: int, run_dir: Path | None = None,
             observer: RunObserver | None = None, index: int = 0, clock: Clock | None = None,
             world: World | None = None, since: float | None = None) -> RunResult:
    """One seed on this worker: rank 0 records it in ``run_dir`` (default: a new folder
    under ``options.out_dir``); ``since``: when its setup began (see :func:`execute`)."""
    clock = clock or clock_for(prep.device)
    world = world or World()
    if world.leader:
        run_dir = run_dir or new_run_dir(options.out_dir, prep.task.name, prep.entry_cls.name, seed)
        announce_run_dir(run_dir)
        recorder: Recorder = RankZeroRecorder(options, prep, seed, clock, run_dir, observer or RunObserver(), index)
    else:
        recorder = Recorder(options, prep, seed, clock)
    return execute(options, prep, seed, world, recorder, clock, since)


def run_many(options: RunOptions, observer: RunObserver | None = None,
             ensure_data: Callable[[str], Any] = data.ensure) -> list[RunResult]:
    """Run ``options.runs`` seeds one after another; stop early if one is interrupted.

    Under torchrun every worker calls this and runs the same loop; only rank 0 returns
    the results (the others' are not records).
    """
    prep = prepare(options)
    if options.quick:   # the entry's quick-trial hyperparameters, under the user's --set
        options = replace(options, overrides={**prep.entry_cls.quick_hparams, **options.overrides})
    world = World.from_env(prep.device)
    if world.distributed:
        if options.p2p == "off":  # before the process group: NCCL reads its switches when it sets up
            os.environ.update(P2P_OFF_ENV)
        prep = replace(prep, device=world.device(prep.device))
        options = replace(options, overrides=per_worker_overrides(options, prep.entry_cls, prep.task, world))
        world = world.init(prep.device, options.collective_timeout)
    if world.local_rank == 0:  # one fetch per machine; the others wait for it
        ensure_data(prep.task.dataset)
    world.barrier()
    options, prep = _planned(options, prep, world, observer)
    results = []
    since = psutil.Process().create_time()   # the first run's setup: from the process's start (imports included)
    try:
        for i in range(options.runs):
            result = run_seed(options, prep, options.seed + i, observer=observer, index=i, world=world, since=since)
            results.append(result)
            since = time.time()
            # Rank 0 stopping out of step (it raised, or timed out) would leave the others
            # waiting at the next seed's first collective: end the launch instead.
            if result.status in (Status.INTERRUPTED, Status.TIMEOUT) or (world.distributed and result.status == Status.ABORTED):
                break
    finally:
        world.close()
    return results if world.leader else []


def _planned(options: RunOptions, prep: PreparedRun, world: World,
             observer: RunObserver | None) -> tuple[RunOptions, PreparedRun]:
    """The memory plan (rank 0 measures, every worker follows): the batch the run trains at and the
    evaluation batch, or a refusal before anything is allocated at full size."""
    if world.leader and observer is not None:
        batch = options.overrides.get("batch_size", prep.entry_cls.hparams.get("batch_size"))
        observer.preparing(f"planning memory: {prep.entry_cls.name}'s training step at two small batches on "
                           f"synthetic data, extrapolated to batch {batch} (a large model takes a while)")
    plan = world.share(plan_memory(options, prep, world.local_world_size, world.world_size)
                       if world.leader else None)
    if plan.refusal:
        world.close()
        raise DawnbenchError(plan.refusal)
    if plan.planned and plan.batch_size != options.overrides.get("batch_size", plan.asked):
        options = replace(options, overrides={**options.overrides, "batch_size": plan.batch_size})
    return options, replace(prep, memory_plan=plan.to_dict(), eval_batch_size=plan.eval_batch_size)


def run(task: str | Task = "mnist", entry: str | type[Entry] | None = None, seed: int = 0,
        **options: Any) -> RunResult:
    """One run with default options; see :class:`RunOptions` for the keywords."""
    unknown = sorted(set(options) - {f.name for f in fields(RunOptions)})
    if unknown:
        raise DawnbenchError(f"run({', '.join(f'{k}=' for k in unknown)}...): not an option of a run. Its options are "
                             f"RunOptions' fields: {', '.join(f.name for f in fields(RunOptions))} (--out is out_dir=, "
                             "--set is overrides=).")
    return run_many(RunOptions(task=task, entry=entry, seed=seed, runs=1, **options))[0]
