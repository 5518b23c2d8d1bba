"""Scoring an entry on a split the harness holds (SPEC §3): the entry never sees the labels."""

from __future__ import annotations

import torch

from dawnbench.entries import Entry
from dawnbench.precision import precision_scope
from dawnbench.tasks import Task


def evaluate(entry: Entry, task: Task, inputs: torch.Tensor, labels: torch.Tensor,
             precision: str = "fp32") -> float:
    """The task's metric of the entry's predictions on ``inputs`` (in the run's precision)."""
    outputs = []
    with torch.inference_mode(), precision_scope(precision, entry.device, entry.own_precisions):
        for start in range(0, len(inputs), entry.eval_batch_size):
            outputs.append(entry.predict(inputs[start:start + entry.eval_batch_size]).cpu())
    return task.metric.compute(torch.cat(outputs), labels)
