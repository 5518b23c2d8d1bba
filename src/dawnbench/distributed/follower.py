"""What a worker other than rank 0 does in a run: train in step with rank 0, record nothing.

It makes the same collective calls in the same order as rank 0's
:func:`dawnbench.harness.runner.execute` — that order is the protocol:

1. ``local_peers``   (rank 0 learns which processes are the run's, for its monitor);
2. warm-up           (DDP's parameter broadcast and gradient all-reduces);
3. ``barrier``       (then rank 0 starts the clock);
4. per yield of ``train``: ``barrier``; and unless the schedule ended, ``gather`` of
   the communication timers and ``decide`` (rank 0's stop-or-go-on).

An exception from the entry is not caught here: it ends this worker, torchrun stops
the others, and the launcher records the run as ``aborted`` with this worker's error.
"""

from __future__ import annotations

from dawnbench import data
from dawnbench.distributed.comm import CommTimer
from dawnbench.distributed.world import World, worker_seed
from dawnbench.harness.precision import precision_scope
from dawnbench.harness.runner import (
    PreparedRun,
    RunOptions,
    StopRun,
    seed_everything,
    stop_on_signals,
    train_context,
)
from dawnbench.harness.warmup import synthetic_context


def follow(options: RunOptions, prep: PreparedRun, seed: int, world: World) -> str:
    """Train one seed beside rank 0; return ``stopped`` when rank 0 decided to stop, or why it ended."""
    task, device = prep.task, prep.device
    entry = prep.entry_cls(task, device, options.overrides)
    own = prep.entry_cls.own_precisions
    world.local_peers()
    # The scored split's shapes for the warm-up's synthetic predict, as on rank 0.
    test_inputs, test_labels = data.load_split(task.dataset, task.scored_split)
    timer = CommTimer()
    gen = None
    with stop_on_signals(options.max_wall_seconds) as disarm:
        try:
            seed_everything(worker_seed(seed, world.rank))
            with precision_scope(prep.precision, device, own):
                entry.warmup(synthetic_context(train_context(entry, task, seed, prep.precision, prep.compile, world),
                                               test_inputs, test_labels))
            seed_everything(worker_seed(seed, world.rank))
            world.barrier()
            gen = entry.train(train_context(entry, task, seed, prep.precision, prep.compile, world, timer.start()))
            while True:
                with precision_scope(prep.precision, device, own):
                    progress = next(gen, None)
                world.barrier()
                if progress is None:
                    return "not_reached"
                world.gather(timer.totals())
                if world.decide(stop=False):
                    return "stopped"
        except StopRun as stop:
            return stop.status
        finally:
            disarm()
            if gen is not None:
                gen.close()
            timer.stop()
