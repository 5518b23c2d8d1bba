"""What the harness needs for init (SPEC §2, §12): a synthetic context for the entry's
warm-up, the ``ctx.compile`` function of a run, and compilation time.

The synthetic context mirrors the real one except for its data: ``load_train``
returns random uint8 inputs of the training split's count and item shape (read from
the cache's ``meta.json``, never from its arrays) with random labels, so the warm-up
exercises the entry's real step on the real shapes — allocations included — without
reading the dataset.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable

import numpy as np
import torch

from dawnbench.data.cache import read_meta
from dawnbench.entries.base import TrainContext

COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def synthetic_context(ctx: TrainContext, scored_inputs: torch.Tensor | np.ndarray,
                      scored_labels: torch.Tensor | np.ndarray) -> TrainContext:
    """``ctx`` with random data of the task's shapes in place of the dataset: the item shape
    and the number of classes are the scored split's (held by the harness)."""
    item_shape, num_classes = tuple(scored_inputs.shape[1:]), int(scored_labels.max()) + 1
    rng = np.random.default_rng([0x5EED, ctx.seed])  # a stream of its own, unlike any seed-only generator
    split = read_meta(ctx.task.dataset)["splits"][ctx.task.train_split]
    count, train_shape = split["count"], tuple(split["input_shape"])

    def load_train() -> tuple[np.ndarray, np.ndarray]:
        inputs = np.frombuffer(bytearray(rng.bytes(count * int(np.prod(train_shape)))), dtype=np.uint8)
        return inputs.reshape(count, *train_shape), rng.integers(0, num_classes, count, dtype=np.int64)

    def synthetic_inputs(n: int) -> torch.Tensor:
        return torch.randint(0, 256, (n, *item_shape), dtype=torch.uint8)

    return dataclasses.replace(ctx, load_train=load_train, synthetic=True, synthetic_inputs=synthetic_inputs)


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
