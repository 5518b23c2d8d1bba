"""Scoring an entry on a split the harness holds (SPEC §3): the entry never sees the targets."""

from __future__ import annotations

import torch

from dawnbench.data.splits import Split
from dawnbench.entries import Entry
from dawnbench.precision import precision_scope
from dawnbench.tasks import Tally, Task


def evaluate(entry: Entry, task: Task, split: Split, precision: str = "fp32") -> tuple[float, dict[str, float]]:
    """The task's deciding metric of the entry's predictions on ``split`` (in the run's precision),
    and the metric's other values (top-1 beside top-5, exact match beside F1). The split is read
    in order, ``eval_batch_size`` items at a time, and scored as it streams."""
    tally = Tally(task.metric)
    with torch.inference_mode(), precision_scope(precision, entry.device, entry.own_precisions):
        for inputs, targets in split.batches(entry.eval_batch_size):
            tally.add(entry.predict(inputs), targets)
    return tally.value, tally.extra
