"""The one loop every rank of a run runs.

One run, in order: build the entry; ``warmup`` on synthetic data of the task's shapes
(``init_s``, compilation included as ``compile_s``); a barrier, then ``run_start``;
drive ``train`` with the clock running and, at each yield, stop the clock, meet the
other workers, and let rank 0 evaluate and decide whether to go on — training and
evaluation both inside the run's precision (TF32 flags, autocast).

The collectives are made here and nowhere else, in this order, by every worker:

1. ``local_peers``    (rank 0 learns which processes are the run's, for its monitor);
2. warm-up            (DDP's parameter broadcast and gradient all-reduces);
3. ``barrier``        (then the clock starts: it covers the slowest worker);
4. per yield: ``barrier``; unless the schedule ended, ``gather`` of the communication
   timers (with several workers) and ``decide`` (rank 0's stop-or-go-on);
5. with ``max_seconds`` and several workers, after every optimizer step: ``decide``
   (has rank 0's clock passed the budget?), from a step hook defined here.

What rank 0 records and evaluates is its :class:`~dawnbench.harness.recorder.Recorder`;
the others hold one that records nothing. Budgets and statuses:

* ``success``      an evaluation reached the target; TTA = timed seconds then.
* ``not_reached``  the entry's schedule ended, or a budget was spent, first:
                   ``max_epochs`` (epochs trained) and ``max_seconds`` (timed
                   seconds) are checked at each evaluation point and between optimizer
                   steps, ``max_seconds`` also inside a step (an entry that never yields
                   cannot outrun it). A budget that ends training between evaluation
                   points gets one more evaluation of the model as it is (untimed,
                   recorded with ``stopped_by``, never a time to accuracy); so does a
                   Ctrl-C with ``eval_on_interrupt``.
* ``diverged``     the loss reported at a yield was not finite.
* ``aborted``      the entry raised (in ``warmup``, ``train`` or ``predict``).
* ``interrupted`` / ``timeout``  see :mod:`dawnbench.harness.signals` (``timeout`` also
                   when the warm-up outlasts ``max_init_seconds``).
* ``aborted`` also when the run's own files could not be written (a full disk, a
                   failed checkpoint): :mod:`dawnbench.harness.recorder` still writes the
                   final status, with the reason.
* ``stopped``      (workers other than rank 0 only) rank 0 decided to stop.
"""

from __future__ import annotations

import math
import time
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from typing import Any

from torch.optim.optimizer import (
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
)

from dawnbench import data
from dawnbench.distributed import comm
from dawnbench.distributed.world import World, worker_seed
from dawnbench.entries import Entry, Progress, TrainContext
from dawnbench.harness.clock import Clock
from dawnbench.harness.core import compile_stats, in_precision, timed, train_context, train_steps, warm_up
from dawnbench.harness.cost import HarnessCost
from dawnbench.harness.options import PreparedRun, RunOptions
from dawnbench.harness.progress import ProgressProbe
from dawnbench.harness.recorder import Recorder
from dawnbench.harness.signals import Budgets, StopRun, stop_on_signals
from dawnbench.profiling.steps import StepCounter
from dawnbench.records import mllog
from dawnbench.records.record import RUNNING, RunResult, Status

BACKSTOP_GRACE_S = 5.0   # with several workers, the budget's timer waits this (and 10 %) for the agreed stop


def execute(options: RunOptions, prep: PreparedRun, seed: int, world: World, recorder: Recorder,
            clock: Clock, since: float | None = None) -> RunResult:
    """One run of one seed on this worker; rank 0's ``recorder`` writes its record. ``since``: when the run's
    setup began (``time.time()``: the process's start, or the previous run's end) — its setup_s, and what
    ``max_wall_seconds`` counts from."""
    # Long: the run's order in one place — every worker makes the collectives in this order (module docstring).
    setup_s = max(0.0, time.time() - since) if since is not None else 0.0
    task, device = prep.task, prep.device
    entry = prep.entry_cls(task, device, options.overrides)
    if prep.eval_batch_size is not None:
        entry.eval_batch_size = prep.eval_batch_size  # planned: fits the machine, at most the scored split
    # The scored split's form drives the warm-up's synthetic inputs (its targets stay with rank 0's recorder).
    scored = data.open_split(task.dataset, task.scored_split, mmap=True)
    train_count = task.train_items(data.train_count(task.dataset, task.train_split))
    timer = comm.CommTimer() if world.distributed else None
    cost = HarnessCost()

    def context(timed: comm.CommTimer | None = None) -> TrainContext:
        return train_context(entry, task, seed, prep.precision, prep.compile, world, timed, recorder.stream_opened,
                             options.max_epochs)

    gen: Generator[Progress, None, None] | None = None
    ended, error = RUNNING, None
    # Signals and budgets are watched from the record's first line to its last: a Ctrl-C at
    # any point leaves `interrupted`, never `running`.
    with stop_on_signals(options.max_wall_seconds, setup_s) as budgets:
        try:
            result = recorder.open(entry, world)
            recorder.monitor(world.local_peers(), world.local_devices(device))  # the run's workers and GPUs here
            recorder.start(mllog.INIT_START)
            before = compile_stats()
            with clock.segment("init"), budgets.stage(
                    options.max_init_seconds, Status.TIMEOUT,
                    f"the warm-up (init) took longer than max_init_seconds={options.max_init_seconds:g}",
                    "max_init_seconds"):
                warm_up(entry, context(), scored, worker_seed(seed, world.rank))
            compile_s = (compile_stats() - before)["seconds"] if prep.compile else None
            result.compile_s = compile_s
            recorder.end(mllog.INIT_STOP, {"compile_s": compile_s})
            before = compile_stats()
            world.barrier()  # every worker is ready: the clock starts after a barrier
            clock.start()
            recorder.start(mllog.RUN_START)
            batch = entry.hp.get("batch_size")
            per_step = batch * world.world_size if isinstance(batch, int) and not isinstance(batch, bool) else None
            with StepCounter(wrap=cost.wrap) as counter, \
                    _step_budgets(counter, options, per_step, train_count, clock, world, cost):
                probe = ProgressProbe(counter, lambda: clock.timed_s, per_step, train_count,
                                      options.max_epochs or entry.hp.get("epochs"))
                recorder.training_started(probe)
                gen = train_steps(entry, context(timer.start() if timer else None), worker_seed(seed, world.rank))
                ended = _drive(gen, entry, prep.precision, clock, recorder, world, timer, options, budgets, cost)
            if options.continue_after_target:
                recorder.save_final(entry)
        except StopRun as stop:
            budgets.caught()
            ended, error = stop.status, str(stop)
        except Exception as err:  # the entry failed: keep what was measured
            if not recorder.failed(err):
                raise
            ended = Status.ABORTED
        finally:
            budgets.disarm()
            if gen is not None:
                gen.close()
            if timer is not None:
                timer.stop()
            if recorder.result is not None:   # set here: a budget spent by the setup ends the run as it opens
                recorder.result.harness = cost.figures(clock.timed_s)
                recorder.result.setup_s = setup_s
        if prep.compile:  # graphs compiled after run_start were timed
            recorder.result.graphs_compiled_timed = (compile_stats() - before)["graphs"]
        return recorder.finish(entry, ended, error)


@contextmanager
def _step_budgets(counter: StepCounter, options: RunOptions, per_step: int | None, train_count: int,
                  clock: Clock, world: World, cost: HarnessCost) -> Iterator[None]:
    """The budgets checked at optimizer steps, so that training stops between two of them, the weights
    whole, and every worker at the same step:

    * ``max_epochs`` inside an epoch: training ends as the step after the one that completed the budget
      begins (before it changes a weight), so an entry that evaluates at that point still does. Epochs
      are counted from the steps — every worker's samples per step over the training split — the same
      on every worker.
    * ``max_seconds`` with several workers: after each step rank 0 says whether its clock has passed
      the budget (one small broadcast per step, only when the budget is set), so no worker starts a
      step that another has left. One process is stopped by the budget's timer, mid-step if need be.
    """
    hooks = []
    if options.max_epochs is not None and per_step:
        limit = math.ceil(options.max_epochs * train_count / per_step)

        def before_step(_optimizer: Any, _args: Any, _kwargs: Any) -> None:
            if counter.steps >= limit:
                raise StopRun(Status.NOT_REACHED, f"max_epochs={options.max_epochs:g} of training ended inside an "
                                             f"epoch (after {limit} optimizer steps)", "max_epochs")
        hooks.append(register_optimizer_step_pre_hook(cost.wrap(before_step)))
    if options.max_seconds is not None and world.distributed:
        def after_step(_optimizer: Any, _args: Any, _kwargs: Any) -> None:
            if world.decide(stop=clock.timed_s >= options.max_seconds):
                raise StopRun(Status.NOT_REACHED, f"max_seconds={options.max_seconds:g} of timed training passed "
                                             f"(after {counter.steps} optimizer steps)", "max_seconds")
        hooks.append(register_optimizer_step_post_hook(cost.wrap(after_step)))
    try:
        yield
    finally:
        for handle in hooks:
            handle.remove()


def _drive(gen: Generator[Progress, None, None], entry: Entry, precision: str, clock: Clock,
           recorder: Recorder, world: World, timer: comm.CommTimer | None, options: RunOptions,
           budgets: Budgets, cost: HarnessCost) -> str:
    """Alternate timed training and untimed evaluation; return how the run ended."""
    last_samples, last_epoch = 0, 0.0
    while True:
        block = {"first_epoch_num": last_epoch, "samples_count": last_samples}
        recorder.start(mllog.BLOCK_START, block)
        # --max-seconds holds inside a step too: an entry that never yields cannot outrun it. With several
        # workers the steps agree on it first (_step_budgets); the timer then only ends a step that never does.
        left, why = None, ""
        if options.max_seconds is not None:
            left = options.max_seconds - clock.timed_s
            left += world.distributed * (BACKSTOP_GRACE_S + 0.1 * options.max_seconds)
            why = f"max_seconds={options.max_seconds:g} of timed training passed before the entry's next yield"
        try:
            with timed(clock, cost), in_precision(entry, precision), \
                    budgets.stage(left, Status.NOT_REACHED, why, "max_seconds"):
                with cost.entry():
                    progress = next(gen, None)
                world.barrier()
        except StopRun as stop:
            budgets.caught()
            # Ended between evaluation points: a budget (or, if asked, a signal) gets an evaluation of
            # the model as it is, untimed; a wall-time limit or a plain Ctrl-C stops at once.
            if stop.cause in ("max_seconds", "max_epochs") or (stop.cause == "signal" and options.eval_on_interrupt):
                budgets.resume()  # Ctrl-C still ends that evaluation
                recorder.stopped(entry, stop.cause, block)
            raise
        recorder.end(mllog.BLOCK_STOP, {**block, "samples_count": progress.samples if progress else last_samples})
        if progress is None:
            return Status.NOT_REACHED  # the entry's schedule ended (on every worker at once)
        if timer is not None:
            with clock.segment("log"):
                recorder.account(world.gather(timer.totals()), progress.epoch)
        verdict = recorder.evaluated(entry, progress)
        if world.decide(stop=verdict.stop):
            return verdict.status or "stopped"
        last_samples, last_epoch = progress.samples, progress.epoch
