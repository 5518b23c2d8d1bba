"""Memory planned before it is allocated: the batch a run trains and evaluates at, checked against what this
worker may use before the warm-up runs at full size.

    plan = plan_memory(options, prep, workers_here=1)
    plan.refusal          # None, or the paragraph that ends the command (exit 2)
    plan.batch_size       # what the run trains at (the asked one, or the recipe's fitted)

The entry's own ``train`` and ``predict`` run on synthetic data at two small batches under
:class:`~dawnbench.profiling.memory.LiveBytes`; a straight line through the two probes gives each part at the
run's batch and dataset (ResNet-50 at 160 px: 16 → 32 → 64 samples measured 737.7 / 1,475.2 / 2,950.2 MiB of
working memory; the line from the first two predicts the third to 0.1 %). What is decided from it — the share,
the refusals, a recipe's batch halved — is docs/rules.md, "Memory and the machine's share".
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psutil
import torch
from torch.optim.optimizer import register_optimizer_step_post_hook

from dawnbench import data
from dawnbench.entries import Entry, TrainContext
from dawnbench.harness.core import in_precision, stepping, synthetic_context, train_context
from dawnbench.harness.options import PreparedRun, RunOptions
from dawnbench.profiling.memory import live_bytes
from dawnbench.profiling.steps import StepLimitReached

PROBE_BATCH = 8             # the larger probe batch (the run's own, when smaller); the other is half of it
ITEMS_PER_SAMPLE = 4        # in-memory data: the probe's training set per batch sample (≤ the real count)
HEADROOM = 1.25             # resident bytes per tensor byte (measured 1.1–1.5 for the built-in entries)
ALLOWANCE = 256 << 20       # loader processes, libraries' own buffers
FIT_SHARE = 0.5             # a default batch fits in this share of the worker's free memory
REFUSE_SHARE = 0.9          # an asked-for batch is refused above this share
MIN_STEPS = 4               # a fitted default batch leaves at least this many steps per epoch and worker
GIB = 1 << 30


def free_memory(device: torch.device) -> dict[str, int]:
    """Bytes free now, per device type: the host's available memory, and the GPU's (tests fake this)."""
    free = {"cpu": int(psutil.virtual_memory().available)}
    if device.type == "cuda":
        free["cuda"] = int(torch.cuda.mem_get_info(device)[0])
    return free


@dataclass
class Probe:
    batch: int
    items: int                                   # training items the probe held in memory (0: streamed)
    eval_batch: int
    base: dict[str, int] = field(default_factory=dict)
    setup: dict[str, int] = field(default_factory=dict)
    step: dict[str, int] = field(default_factory=dict)
    predict: dict[str, int] = field(default_factory=dict)
    steps: int = 0


@dataclass
class MemoryPlan:
    planned: bool
    batch_size: int | None = None                # what the run trains at
    asked: int | None = None                     # the asked (--set) or the recipe's batch
    source: str = "recipe"                       # recipe, --set, or fitted (the recipe's, made smaller)
    eval_batch_size: int | None = None
    estimate_bytes: dict[str, int] = field(default_factory=dict)   # per device type, at batch_size
    eval_estimate_bytes: dict[str, int] = field(default_factory=dict)
    free_bytes: dict[str, int] = field(default_factory=dict)       # the machine's, when planned
    share_bytes: dict[str, int] = field(default_factory=dict)      # this worker's part of it
    per_sample_bytes: dict[str, int] = field(default_factory=dict)  # training step, per batch sample
    probe_batches: list[int] = field(default_factory=list)
    seconds: float = 0.0
    note: str | None = None                      # why not planned, or what was changed and why
    refusal: str | None = None                   # the paragraph that ends the command

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in dataclasses.asdict(self).items() if k != "refusal"}


def _line(x1: float, y1: float, x2: float, y2: float) -> Callable[[float], float]:
    """The straight line through two probes (flat when they share x), never below 0."""
    slope = (y2 - y1) / (x2 - x1) if x2 != x1 else 0.0
    return lambda x: max(0.0, y1 + slope * (x - x1))


def _probe(prep: PreparedRun, options: RunOptions, entry_overrides: dict[str, Any], batch: int, items: int,
           eval_batch: int, scored: Any) -> Probe:
    """Two optimizer steps of ``train`` at ``batch`` and one ``predict`` at ``eval_batch``, on synthetic data."""
    task, device = prep.task, prep.device
    entry = prep.entry_cls(task, device, {**entry_overrides, "batch_size": batch})
    ctx: TrainContext = synthetic_context(train_context(entry, task, options.seed, prep.precision), scored)
    if items:
        ctx = dataclasses.replace(ctx, load_train=lambda: data.synthetic_train(task.dataset, options.seed,
                                                                               task.train_split, count=items))
    probe = Probe(batch, items, eval_batch)
    live = live_bytes(device)

    def after_step(_optimizer: Any, _args: Any, _kwargs: Any) -> None:
        probe.steps += 1
        if probe.steps == 1:
            probe.base = dict(live.live)
            probe.setup = {d: live.peak[d] - live.live[d] for d in live.live}
            live.mark()
        else:
            probe.step = {d: live.peak[d] - probe.base.get(d, 0) for d in live.live}
            raise StepLimitReached

    handle = register_optimizer_step_post_hook(after_step)
    try:
        with stepping(entry, ctx, options.seed) as steps, live:
            next(steps, None)
    except StepLimitReached:
        pass
    finally:
        handle.remove()
    if probe.steps == 1:        # the schedule yielded after one step: the first is the step
        probe.step = probe.setup
    if probe.steps and ctx.synthetic_inputs is not None:
        inputs = ctx.synthetic_inputs(eval_batch)
        with live, torch.inference_mode(), in_precision(entry, prep.precision):
            live.mark()
            before = dict(live.live)
            entry.predict(inputs)
        probe.predict = {d: live.peak[d] - before.get(d, 0) for d in live.peak}
    return probe


def _estimates(probes: list[Probe], items_total: int, streamed: bool) -> tuple[
        Callable[[int], dict[str, float]], Callable[[int, int], dict[str, float]], dict[str, float]]:
    """(train estimate at batch B, evaluation estimate at evaluation batch E and batch B, bytes per
    sample of the step), in tensor bytes."""
    p1, p2 = probes[0], probes[-1]
    devices = sorted(set(p1.base) | set(p2.base) | set(p1.step) | set(p2.step))
    held = 0 if streamed else items_total

    def at_data(values1: dict[str, int], values2: dict[str, int], batch: int) -> dict[str, float]:
        """A quantity of the data held: a line in the items held (in-memory data) or the batch (streamed)."""
        if streamed:
            return {d: _line(p1.batch, values1.get(d, 0), p2.batch, values2.get(d, 0))(batch) for d in devices}
        return {d: _line(p1.items, values1.get(d, 0), p2.items, values2.get(d, 0))(held) for d in devices}

    def working(values1: dict[str, int], values2: dict[str, int], x1: int, x2: int, x: int) -> dict[str, float]:
        return {d: _line(x1, values1.get(d, 0), x2, values2.get(d, 0))(x) for d in devices}

    per_sample = {d: (p2.step.get(d, 0) - p1.step.get(d, 0)) / (p2.batch - p1.batch) if p2.batch != p1.batch else 0.0
                  for d in devices}

    def train(batch: int) -> dict[str, float]:
        base = at_data(p1.base, p2.base, batch)
        step = working(p1.step, p2.step, p1.batch, p2.batch, batch)
        setup = working(p1.setup, p2.setup, p1.batch, p2.batch, batch)  # the first step, with its set-up
        return {d: base[d] + max(step[d], setup[d]) for d in devices}

    def evaluation(eval_batch: int, batch: int) -> dict[str, float]:
        base = at_data(p1.base, p2.base, batch)
        predict = working(p1.predict, p2.predict, p1.eval_batch, p2.eval_batch, eval_batch)
        return {d: base[d] + predict[d] for d in devices}

    return train, evaluation, per_sample


def _resident(tensor_bytes: dict[str, float]) -> dict[str, int]:
    """What a process needs beyond the bytes its tensors hold (host memory: plus a fixed allowance)."""
    return {d: int(HEADROOM * v + (ALLOWANCE if d == "cpu" else 0)) for d, v in tensor_bytes.items()}


def _fits(estimate: dict[str, int], share: dict[str, int], fraction: float) -> bool:
    return all(estimate[d] <= fraction * share.get(d, 0) for d in estimate if d in share)


def _halvings(batch: int) -> list[int]:
    out = [batch]
    while out[-1] > 1:
        out.append(out[-1] // 2)
    return out


def plan_memory(options: RunOptions, prep: PreparedRun, workers_here: int = 1, world_size: int = 1,
                free: Callable[[torch.device], dict[str, int]] | None = None) -> MemoryPlan:
    """The batch sizes a run trains and evaluates at, or the paragraph that refuses it (see the module).
    ``free``: bytes free per device type (default :func:`free_memory`, read now)."""
    entry_cls, task = prep.entry_cls, prep.task
    hp = {**entry_cls.hparams, **entry_cls.hparams_by_task.get(task.name, {}), **options.overrides}
    if not isinstance(hp.get("batch_size"), int):
        return MemoryPlan(False, note=f"entry '{entry_cls.name}' has no batch_size hyperparameter: not planned")
    if entry_cls.warmup_steps <= 0:
        return MemoryPlan(False, note=f"entry '{entry_cls.name}' has no warm-up on synthetic data: not planned")
    start = time.perf_counter()
    asked = hp["batch_size"]
    explicit = "batch_size" in options.overrides
    scored = data.open_split(task.dataset, task.scored_split, mmap=True)
    eval_asked = max(1, min(entry_cls.eval_batch_size, scored.count))
    count = task.train_items(data.train_count(task.dataset, task.train_split))
    streamed = data.kind(task.dataset) == "shards"
    big = min(asked, PROBE_BATCH)
    batches = sorted({max(1, big // 2), big})
    eval_big = min(eval_asked, PROBE_BATCH)
    eval_batches = sorted({max(1, eval_big // 2), eval_big})
    try:
        probes = [_probe(prep, options, options.overrides, b, 0 if streamed else min(count, ITEMS_PER_SAMPLE * b),
                         eval_batches[min(i, len(eval_batches) - 1)], scored) for i, b in enumerate(batches)]
    except Exception as err:  # noqa: BLE001 - the warm-up meets the same error and records it as the run's
        said = (str(err).strip().splitlines() or [""])[0][:300]
        return MemoryPlan(False, note=f"not planned: entry '{entry_cls.name}' raised {type(err).__name__} on "
                                      f"synthetic data{': ' + said if said else ''} (the run goes on at the recipe's batch)",
                          seconds=time.perf_counter() - start)
    if not all(p.steps for p in probes):
        return MemoryPlan(False, note=f"entry '{entry_cls.name}' stepped no torch.optim optimizer on synthetic "
                                      "data: not planned", seconds=time.perf_counter() - start)
    train, evaluation, per_sample = _estimates(probes, count, streamed)
    now = (free or free_memory)(prep.device)
    share = {d: v // (workers_here if d == "cpu" else 1) for d, v in now.items()}
    plan = MemoryPlan(True, batch_size=asked, asked=asked, source="--set" if explicit else "recipe",
                      free_bytes=now, share_bytes=share, per_sample_bytes={d: int(v) for d, v in per_sample.items()},
                      probe_batches=batches)

    def needs(batch: int) -> dict[str, int]:
        return _resident(train(batch))

    _choose_batch(plan, entry_cls, task.name, explicit, needs, share, now, workers_here, count, world_size)
    batch = plan.batch_size or asked
    plan.estimate_bytes = needs(batch)
    eval_batch = next((e for e in _halvings(eval_asked)
                       if _fits(_resident(evaluation(e, batch)), share, FIT_SHARE)), 1)
    plan.eval_batch_size = eval_batch
    plan.eval_estimate_bytes = _resident(evaluation(eval_batch, batch))
    plan.seconds = time.perf_counter() - start
    return plan


def _choose_batch(plan: MemoryPlan, entry_cls: type[Entry], task: str, explicit: bool,
                  needs: Callable[[int], dict[str, int]], share: dict[str, int], now: dict[str, int], workers_here: int,
                  count: int, world_size: int) -> None:
    """The batch ``plan`` trains at: an asked (or untunable) batch kept or refused; a recipe's whose learning rate
    follows the batch halved until it fits and leaves ``MIN_STEPS`` steps an epoch on each of ``world_size``
    workers' share of ``count`` training items."""
    asked = plan.asked
    if explicit or not entry_cls.lr_scales_with_batch:
        if not _fits(needs(asked), share, REFUSE_SHARE if explicit else FIT_SHARE):
            what = f"--set batch_size={asked}" if explicit else f"entry '{entry_cls.name}''s default batch of {asked}"
            plan.refusal = _refusal(entry_cls, task, asked, what, needs, share, now, workers_here,
                                    REFUSE_SHARE if explicit else FIT_SHARE)
    else:
        per_worker = count // max(1, world_size)
        candidates = [b for b in _halvings(asked) if b == 1 or b * MIN_STEPS <= per_worker]
        chosen = next((b for b in candidates if _fits(needs(b), share, FIT_SHARE)), None)
        if chosen is None:
            plan.refusal = _refusal(entry_cls, task, 1, f"entry '{entry_cls.name}''s default batch of {asked}, "
                                    "halved down to 1 (its learning rate follows the batch),", needs, share, now,
                                    workers_here, FIT_SHARE)
        elif chosen != asked:
            plan.batch_size, plan.source = chosen, "fitted"
            why = ["this machine's memory"] if not _fits(needs(asked), share, FIT_SHARE) else []
            if asked * MIN_STEPS > per_worker:
                why.append(f"at least {MIN_STEPS} steps per epoch on the {count} training items")
            plan.note = (f"batch_size {asked} → {chosen} for {' and '.join(why)}; the learning rate follows "
                         "the global batch (linear scaling rule)")


def _refusal(entry_cls: type[Entry], task: str, batch: int, what: str, needs: Callable[[int], dict[str, int]],
             share: dict[str, int], free: dict[str, int], workers: int, fraction: float) -> str:
    """The paragraph that refuses ``what`` (the batch asked for, or the recipe's), estimated at ``batch``."""
    estimate = needs(batch)
    short = next(d for d in estimate if d in share and estimate[d] > fraction * share[d])
    fitting = next((b for b in range(batch - 1, 0, -1) if _fits(needs(b), share, fraction)), None) if batch > 1 else None
    where = "this machine's memory" if short == "cpu" else "the GPU's memory"
    shared = f", shared by the {workers} workers on this machine" if workers > 1 and short == "cpu" else ""
    fix = (f"The largest batch that fits is {fitting}: pass --set batch_size={fitting}" if fitting else
           "Not even a batch of 1 fits: free memory or use a machine with more")
    return (f"{what}: a training step of {entry_cls.name} on {task} at this batch needs about "
            f"{estimate[short] / GIB:.1f} GiB of {where} (measured on synthetic data at two small batches and "
            f"extrapolated), but {free[short] / GIB:.1f} GiB is free{shared} and a run may plan on "
            f"{fraction:.0%} of its share ({fraction * share[short] / GIB:.1f} GiB). {fix}, or free memory and "
            "run again. Nothing was run.")
