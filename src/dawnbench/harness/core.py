"""The training core: the one place an entry's step is set up, warmed up and driven.

    ctx = train_context(entry, task, seed, precision)
    warm_up(entry, ctx, scored, seed)              # seeded, in the run's precision, on synthetic data
    with stepping(entry, ctx, seed) as steps:      # seeded, in the run's precision; closed on leaving
        next(steps)
    with timed(clock, cost): ...                   # a timed window: the clock's train segment, the harness's cost
    value, extra = evaluate(entry, task, split, precision)   # scored by the harness, untimed

The driver, the tracker, the profile's window, the memory probes and inference measurement use these
and keep only what is theirs (the record, the budgets, the profiler, the probe's counters, the latency loops).
The clock's rules are docs/rules.md's; what the warm-up may do, the entry contract's (entries/base.py).
"""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

from dawnbench import data
from dawnbench.data.splits import Split
from dawnbench.distributed import comm
from dawnbench.distributed.world import World
from dawnbench.entries import Entry, Progress, TrainContext
from dawnbench.environment import device_sync
from dawnbench.harness.clock import Clock
from dawnbench.harness.cost import HarnessCost
from dawnbench.precision import make_scaler, precision_scope
from dawnbench.tasks import Tally, Task

COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
# torch._dynamo's own timers: frames compiled (forward graphs) and backward graphs, which
# AOTAutograd compiles lazily at the first backward call.
_COMPILE_TIMERS = ("_compile.compile_inner", "backward._backward_impl")


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def clock_for(device: torch.device) -> Clock:
    """The run clock, synchronising ``device`` itself (not the current device) before each reading."""
    return Clock(sync=device_sync(device))


def in_precision(entry: Entry, precision: str) -> Any:
    """The numeric environment an entry trains and predicts in (TF32 flags; autocast unless it casts itself)."""
    return precision_scope(precision, entry.device, entry.own_precisions)


def compiler(mode: str | None) -> Callable[[torch.nn.Module], torch.nn.Module]:
    """``ctx.compile``: ``torch.compile`` with ``mode``, or the identity when not compiling."""
    if mode is None:
        return lambda module: module
    return lambda module: torch.compile(module, mode=None if mode == "default" else mode)


def compile_stats() -> Counter:
    """Seconds spent compiling so far in this process, and graphs compiled (a snapshot)."""
    try:
        from torch._dynamo.utils import compilation_time_metrics, counters
    except ImportError:  # a torch without dynamo: nothing is ever compiled
        return Counter()
    stats = Counter({"seconds": sum(sum(compilation_time_metrics.get(k, [])) for k in _COMPILE_TIMERS)})
    stats["graphs"] = counters["stats"]["unique_graphs"]
    return stats


def train_context(entry: Entry, task: Task, seed: int, precision: str, compile_mode: str | None = None,
                  world: World | None = None, timer: comm.CommTimer | None = None,
                  on_stream: Callable[[Any], None] = lambda stream: None,
                  max_epochs: float | None = None) -> TrainContext:
    """A fresh context for ``entry``'s ``train`` — one for warm-up, one for the run, so no loss-scaler state
    leaks from one to the other. ``timer`` times the run's DDP steps; ``on_stream`` is handed each epoch's
    stream of a streamed dataset (its pipeline, its workers)."""
    world = world or World()

    def stream(**options: Any) -> Any:
        epoch_stream = data.train_stream(task.dataset, seed=seed, rank=world.rank, world_size=world.world_size,
                                         device=entry.device, **options)
        on_stream(epoch_stream)
        return epoch_stream

    return TrainContext(task=task, seed=seed, device=entry.device, hparams=entry.hp,
                        load_train=lambda: data.load_train(task.dataset, task.train_split, task.train_limit),
                        precision=precision, scaler=make_scaler(precision, entry.device, entry.own_precisions),
                        compile=compiler(compile_mode), rank=world.rank, world_size=world.world_size,
                        backend=world.backend, distribute=comm.ddp_wrapper(world, timer), stream=stream,
                        max_epochs=max_epochs)


def synthetic_context(ctx: TrainContext, scored: Split) -> TrainContext:
    """``ctx`` with random data of the task's forms in place of the dataset: ``load_train`` gives random data
    of the training split's form and size (from the cache's ``meta.json``, never its data), ``stream`` random
    batches of the streamed dataset's shapes, ``synthetic_inputs(n)`` random items of the scored split's form —
    the entry's real step and predict on the real shapes, allocations included, without reading the dataset."""
    return dataclasses.replace(
        ctx, synthetic=True,
        load_train=lambda: data.synthetic_train(ctx.task.dataset, ctx.seed, ctx.task.train_split,
                                                ctx.task.train_items(data.train_count(ctx.task.dataset,
                                                                                      ctx.task.train_split))),
        stream=lambda **options: data.synthetic_stream(ctx.task.dataset, seed=ctx.seed, device=ctx.device, **options),
        synthetic_inputs=lambda n: scored.synthetic(n, ctx.seed))


def warm_up(entry: Entry, ctx: TrainContext, scored: Split, seed: int) -> None:
    """The entry's warm-up (SPEC §2: init), seeded and in the run's precision, on synthetic data of the task's
    forms (``scored``: the scored split, whose form the synthetic inputs take). On a GPU, the run's GPU is made
    the current one (a stream or graph an entry makes lands on it, not on cuda:0) and cuDNN's autotuner is on,
    so the convolution algorithms are chosen here, in the warm-up, not on the clock."""
    if entry.device.type == "cuda":
        if entry.device.index is not None:    # "cuda" alone is the current GPU already
            torch.cuda.set_device(entry.device)
        torch.backends.cudnn.benchmark = True
    seed_everything(seed)
    with in_precision(entry, ctx.precision):
        entry.warmup(synthetic_context(ctx, scored))


def train_steps(entry: Entry, ctx: TrainContext, seed: int) -> Generator[Progress, None, None]:
    """The entry's train-step generator, seeded; the caller advances it in the run's precision."""
    seed_everything(seed)
    return entry.train(ctx)


@contextmanager
def stepping(entry: Entry, ctx: TrainContext, seed: int) -> Iterator[Generator[Progress, None, None]]:
    """:func:`train_steps` advanced wholly in the run's precision, and closed on leaving."""
    steps = train_steps(entry, ctx, seed)
    try:
        with in_precision(entry, ctx.precision):
            yield steps
    finally:
        steps.close()


def evaluate(entry: Entry, task: Task, split: Split, precision: str = "fp32") -> tuple[float, dict[str, float]]:
    """The task's deciding metric of the entry's predictions on ``split`` (SPEC §3: the entry never sees the
    targets), in the run's precision, and the metric's other values (top-1 beside top-5, exact match beside F1).
    The split is read in order, ``eval_batch_size`` items at a time, and scored as it streams."""
    tally = Tally(task.metric)
    with torch.inference_mode(), in_precision(entry, precision):
        for inputs, targets in split.batches(entry.eval_batch_size):
            tally.add(entry.predict(inputs), targets)
    return tally.value, tally.extra


@contextmanager
def timed(clock: Clock, cost: HarnessCost) -> Iterator[None]:
    """A timed window: the clock's ``train`` segment, with the harness's own cost accounted inside it."""
    with clock.segment("train"), cost.timed():
        yield
