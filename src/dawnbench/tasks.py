"""Tasks: data + metric + threshold + scored split.

Entries may not change any of the four. A run may ask for another threshold
(``target``); such a run is unofficial.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from dawnbench import squad_eval
from dawnbench.bounds import MIN_EPOCH_S, Bound
from dawnbench.errors import DawnbenchError

if TYPE_CHECKING:  # torch loads on first use: commands that never train start fast
    import torch


def top1_hits(outputs: torch.Tensor, labels: np.ndarray) -> dict[str, np.ndarray]:
    """Per item: 1 where the top-scoring class (or the predicted label) is the label."""
    predicted = (outputs.argmax(dim=1) if outputs.ndim == 2 else outputs).long().cpu().numpy()
    return {"top1_accuracy": (predicted == np.asarray(labels)).astype(np.float64)}


def top5_hits(outputs: torch.Tensor, labels: np.ndarray) -> dict[str, np.ndarray]:
    """Per item: 1 where the label is among the five top-scoring classes; top-1 beside it."""
    labels = np.asarray(labels)
    if outputs.ndim != 2:
        raise ValueError("top-5 needs class scores (N×C) from predict, not labels")
    top = outputs.float().topk(min(5, outputs.shape[1]), dim=1).indices.cpu().numpy()
    return {"top5_accuracy": (top == labels[:, None]).any(axis=1).astype(np.float64),
            "top1_accuracy": (top[:, 0] == labels).astype(np.float64)}


@dataclass(frozen=True)
class Metric:
    """How predictions are scored: per item (so a split is scored as it streams), then averaged.

    ``per_item(outputs, targets)`` returns arrays of per-item scores in [0, 1], one per key;
    the task's value for a key is 100 × their mean. ``name`` is the key that decides (the
    threshold applies to it); every other key is recorded beside it. ``columns`` maps keys
    to the DAWNBench TSV (column, scale from the value), the deciding key first.
    """

    name: str
    per_item: Callable[[Any, Any], dict[str, np.ndarray]]
    columns: tuple[tuple[str, str, float], ...]
    unit: str = "%"
    low: float = 0.0          # the values the metric can take (a --target outside them is bad input)
    high: float = 100.0

    def compute(self, outputs: Any, targets: Any) -> float:
        """The deciding value of a whole set of predictions at once."""
        return 100.0 * float(np.mean(self.per_item(outputs, targets)[self.name]))


class Tally:
    """A metric's per-item scores summed as batches arrive: ``values()`` gives every key's value."""

    def __init__(self, metric: Metric):
        self.metric, self.count, self.sums = metric, 0, {}

    def add(self, outputs: Any, targets: Any) -> None:
        scores = self.metric.per_item(outputs, targets)
        for key, per_item in scores.items():
            self.sums[key] = self.sums.get(key, 0.0) + float(np.sum(per_item))
        self.count += len(scores[self.metric.name])

    def values(self) -> dict[str, float]:
        return {k: 100.0 * v / self.count for k, v in self.sums.items()} if self.count else {}

    @property
    def value(self) -> float:
        return self.values()[self.metric.name]

    @property
    def extra(self) -> dict[str, float]:
        return {k: v for k, v in self.values().items() if k != self.metric.name}


def span_scores(outputs: Any, targets: Any) -> dict[str, np.ndarray]:
    """Per question: the official SQuAD v1.1 F1 and EM (0–1) of the answer string against its gold
    answers; ``None`` (no answer) scores 0."""
    scored = [squad_eval.score_question(answer, golds) for answer, golds in zip(outputs, targets, strict=True)]
    return {"f1": np.array([f for f, _ in scored], np.float64),
            "exact_match": np.array([e for _, e in scored], np.float64)}


TOP1 = Metric("top1_accuracy", top1_hits, (("top1_accuracy", "top1Accuracy", 1.0),))
TOP5 = Metric("top5_accuracy", top5_hits, (("top5_accuracy", "top5Accuracy", 1.0),
                                           ("top1_accuracy", "top1Accuracy", 1.0)))
SPAN_F1 = Metric("f1", span_scores, (("f1", "f1Score", 0.01),))   # the TSV's f1Score is 0–1; EM is recorded beside


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
    subset: str | None = None   # a tree other than the official one (imported with --subset), or QUICK: unofficial
    train_limit: int | None = None   # --quick: the first this many training items (None: all of them)

    @property
    def metric_bound(self) -> Bound:
        return Bound(self.metric.low, self.metric.high)

    def train_items(self, count: int) -> int:
        """Training items a run sees of a split of ``count``: all, or the quick trial's first ``train_limit``."""
        return count if self.train_limit is None else min(count, self.train_limit)

    def passes(self, value: float, target: float | None = None) -> bool:
        return bool(np.isfinite(value)) and value >= (self.threshold if target is None else target)


# The plausibility floor of a time to each task's target: a run record or a submission faster than it is refused
# (docs/reference/documents.md, "Physics"). Each is about 100× below the fastest result we know of, so that no honest
# run comes near it: MNIST to 99 %, 1.73 s on one H200 (docs/results/gpu.md); CIFAR-10 to 94 %, airbench94's 3.83 s
# on one A100 (Keller Jordan's airbench, 2024); ImageNet to 93 % top-5 and SQuAD to F1 75, tens of seconds at least
# on the largest published clusters (MLPerf Training's ResNet-50 and BERT). It holds at the task's target or above.
FLOORS_S = {"mnist": 0.02, "fashion-mnist": 0.02, "cifar10": 0.04, "imagenet": 0.1, "squad": 0.1}
TASKS: dict[str, Task] = {
    t.name: t
    for t in [
        Task("mnist", "mnist", TOP1, 99.0, "test", "small-cnn", role="CPU-scale task, the default"),
        Task("fashion-mnist", "fashion-mnist", TOP1, 92.0, "test", "small-cnn", role="CPU-scale task"),
        Task("cifar10", "cifar10", TOP1, 94.0, "test", "cifar10-fast", role="DAWNBench task"),
        Task("imagenet", "imagenet", TOP5, 93.0, "val", "imagenet-resnet50", role="DAWNBench task"),
        Task("squad", "squad", SPAN_F1, 75.0, "dev", "squad-minilm", role="DAWNBench task"),
    ]
}
DEFAULT_TASK = "mnist"
SUBSET_TASKS = ("imagenet", "squad")   # tasks whose data a user imports, and may import as a named subset

# --quick: a trial in a few minutes on 2 cores, never official (its subset is "quick"): the first items of the
# training split (an epoch is a pass over them) and a lower default target that the reference entry reaches
# within its first epochs there (benchmarks/quick_trial.py measures it). The data a user imports (ImageNet,
# SQuAD) has its quick path already: a small generated set imported with --subset (README).
QUICK = "quick"
QUICK_TRIALS: dict[str, tuple[int, float]] = {   # task: (training items, default target)
    "mnist": (6_000, 97.0),
    "fashion-mnist": (6_000, 80.0),
    "cifar10": (5_000, 40.0),
}


def floor_s(task: str, threshold: float | None) -> float:
    """The least time to ``threshold`` on ``task`` that is believed (docs/reference/documents.md, "Physics"), the
    same for a run record, an MLPerf log and a submission: ``FLOORS_S`` at the task's own target or above (a
    threshold not known is the task's own); a tenth of it at its quick trial's target or above; below those, one
    optimizer step (``bounds.MIN_EPOCH_S``), which any time to accuracy follows, whatever the task."""
    if task not in TASKS:
        return MIN_EPOCH_S
    if threshold is None or threshold >= TASKS[task].threshold:
        return FLOORS_S[task]
    if task in QUICK_TRIALS and threshold >= QUICK_TRIALS[task][1]:
        return FLOORS_S[task] / 10
    return MIN_EPOCH_S


def quick(task: Task) -> Task:
    """The quick trial of ``task`` (``--quick``): its first training items, the same scored split, unofficial."""
    if task.name not in QUICK_TRIALS:
        raise DawnbenchError(f"--quick: {task.name}'s data is yours to import; its quick trial is a small generated "
                             f"set imported with --subset (README, 'ImageNet and SQuAD on your own machine'). "
                             f"--quick is for {', '.join(QUICK_TRIALS)}.")
    items, _ = QUICK_TRIALS[task.name]
    return dataclasses.replace(task, subset=QUICK, train_limit=items)


def get_task(name: str, subset: str | None = None) -> Task:
    """The task, or — with ``subset`` — the same task on the tree imported under that name
    (``dawnbench data fetch imagenet --from DIR --subset NAME``), or its quick trial (``QUICK``, the tasks of
    ``QUICK_TRIALS``): its runs are unofficial."""
    if name not in TASKS:
        raise DawnbenchError(f"unknown task '{name}'. Known tasks: {', '.join(TASKS)}.")
    task = TASKS[name]
    if subset is None:
        return task
    if subset == QUICK and name in QUICK_TRIALS:   # a quick trial's record names its subset "quick"
        return quick(task)
    if name not in SUBSET_TASKS:
        raise DawnbenchError(f"--subset: {name} has one official dataset; subsets are for "
                             f"{', '.join(SUBSET_TASKS)}, whose data you import yourself.")
    if not subset or not all(c.isalnum() or c in "-_." for c in subset):
        raise DawnbenchError(f"--subset {subset!r}: name it with letters, digits, '-', '_' or '.'.")
    return dataclasses.replace(task, dataset=f"{task.dataset}@{subset}", subset=subset)
