"""What the harness needs for init (SPEC §2, §12): a synthetic context for the entry's
warm-up, the ``ctx.compile`` function of a run, and compilation time.

The synthetic context mirrors the real one except for its data: ``load_train`` returns
random data of the training split's form and size (``data.synthetic_train``: the count
and item shape come from the cache's ``meta.json``, never from its data), ``stream``
random batches of the streamed dataset's shapes (``data.synthetic_stream``), and
``synthetic_inputs(n)`` random items of the scored split's form — so the warm-up
exercises the entry's real step and predict on the real shapes, allocations included,
without reading the dataset.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable

import torch

from dawnbench import data
from dawnbench.data.splits import Split
from dawnbench.entries.base import TrainContext

COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def synthetic_context(ctx: TrainContext, scored: Split) -> TrainContext:
    """``ctx`` with random data of the task's forms in place of the dataset."""
    return dataclasses.replace(
        ctx, synthetic=True,
        load_train=lambda: data.synthetic_train(ctx.task.dataset, ctx.seed, ctx.task.train_split,
                                                ctx.task.train_items(data.train_count(ctx.task.dataset,
                                                                                      ctx.task.train_split))),
        stream=lambda **options: data.synthetic_stream(ctx.task.dataset, seed=ctx.seed, device=ctx.device, **options),
        synthetic_inputs=lambda n: scored.synthetic(n, ctx.seed))


def compiler(mode: str | None) -> Callable[[torch.nn.Module], torch.nn.Module]:
    """``ctx.compile``: ``torch.compile`` with ``mode``, or the identity when not compiling."""
    if mode is None:
        return lambda module: module
    return lambda module: torch.compile(module, mode=None if mode == "default" else mode)


# torch._dynamo's own timers: frames compiled (forward graphs) and backward graphs, which
# AOTAutograd compiles lazily at the first backward call.
_COMPILE_TIMERS = ("_compile.compile_inner", "backward._backward_impl")


def compile_stats() -> Counter:
    """Seconds spent compiling so far in this process, and graphs compiled (a snapshot)."""
    try:
        from torch._dynamo.utils import compilation_time_metrics, counters
    except ImportError:  # a torch without dynamo: nothing is ever compiled
        return Counter()
    stats = Counter({"seconds": sum(sum(compilation_time_metrics.get(k, [])) for k in _COMPILE_TIMERS)})
    stats["graphs"] = counters["stats"]["unique_graphs"]
    return stats
