"""Tasks: data + metric + threshold + scored split (SPEC §1).

Entries may not change any of the four. A run may ask for another threshold
(``target``); such a run is unofficial.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from dawnbench.bounds import Bound
from dawnbench.errors import DawnbenchError

if TYPE_CHECKING:  # torch loads on first use: commands that never train start fast
    import torch


def top1_accuracy(outputs: torch.Tensor, labels: torch.Tensor) -> float:
    """Percent of items whose top-scoring class (or predicted label) is the label."""
    predicted = outputs.argmax(dim=1) if outputs.ndim == 2 else outputs
    return 100.0 * (predicted.long().cpu() == labels.long().cpu()).double().mean().item()


@dataclass(frozen=True)
class Metric:
    name: str                 # key used in records, e.g. "top1_accuracy"
    dawnbench_column: str     # column of the DAWNBench TSV, e.g. "top1Accuracy"
    unit: str                 # "%" or "" (F1 on 0–100)
    compute: Callable[[torch.Tensor, torch.Tensor], float]
    low: float = 0.0          # the values the metric can take (a --target outside them is bad input)
    high: float = 100.0


TOP1 = Metric("top1_accuracy", "top1Accuracy", "%", top1_accuracy)


@dataclass(frozen=True)
class Task:
    name: str
    dataset: str
    metric: Metric
    threshold: float
    scored_split: str
    default_entry: str
    train_split: str = "train"
    role: str = ""

    @property
    def metric_bound(self) -> Bound:
        return Bound(self.metric.low, self.metric.high)

    def passes(self, value: float, target: float | None = None) -> bool:
        return bool(np.isfinite(value)) and value >= (self.threshold if target is None else target)


TASKS: dict[str, Task] = {
    t.name: t
    for t in [
        Task("mnist", "mnist", TOP1, 99.0, "test", "small-cnn", role="CPU-scale task, the default"),
        Task("fashion-mnist", "fashion-mnist", TOP1, 92.0, "test", "small-cnn", role="CPU-scale task"),
        Task("cifar10", "cifar10", TOP1, 94.0, "test", "cifar10-fast", role="DAWNBench task"),
    ]
}
DEFAULT_TASK = "mnist"


def get_task(name: str) -> Task:
    if name not in TASKS:
        raise DawnbenchError(f"unknown task '{name}'. Known tasks: {', '.join(TASKS)}.")
    return TASKS[name]
