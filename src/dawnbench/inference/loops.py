"""The measurement loops: one item at a time (latency) and batches (throughput).

Each query goes from the stored representation (an item of the scored split, already
read: a uint8 slice, a JPEG's bytes, a question) through the entry's ``predict`` and, on
an accelerator, a device synchronisation, so the clock stops only when the answer
exists. Reading the split is outside the clock. The loops add two clock readings and a
list append per query, and score each answer as it comes (``benchmarks/
inference_overhead.py`` checks the latency loop against a bare loop of the same calls).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any

import torch

from dawnbench.data.splits import Split, concatenate_targets
from dawnbench.tasks import Metric, Tally

Predict = Callable[[Any], Any]


@dataclass
class LatencyPass:
    latencies_ms: list[float]   # one per measured item, in order
    tally: Tally                # the metric of those very predictions
    warmup_items: int


def single_item_latencies(predict: Predict, split: Split, metric: Metric, warmup_items: int,
                          sync: Callable[[], None] | None = None,
                          progress: Callable[[int], None] | None = None) -> LatencyPass:
    """Warm up on the first ``warmup_items`` items (not counted), then time every item in turn."""
    clock = time.perf_counter
    warmup = min(warmup_items, split.count)
    tally = Tally(metric)
    with torch.inference_mode():
        for inputs, _ in islice(split.batches(1), warmup):
            predict(inputs)
        if sync:
            sync()
        latencies: list[float] = []
        answers: list[tuple[Any, Any]] = []   # scored SCORE_EVERY at a time: one call per item would cost more
        for i, (inputs, targets) in enumerate(split.batches(1)):
            start = clock()
            out = predict(inputs)
            if sync:
                sync()
            latencies.append((clock() - start) * 1000.0)
            answers.append((out, targets))
            if len(answers) == SCORE_EVERY:
                _score(tally, answers)
            if progress and i % 500 == 499:
                progress(i + 1)
        _score(tally, answers)
    return LatencyPass(latencies, tally, warmup)


SCORE_EVERY = 512


def _score(tally: Tally, answers: list[tuple[Any, Any]]) -> None:
    """Score the buffered answers as one batch (tensors concatenated, lists joined) and empty the buffer."""
    if not answers:
        return
    outputs = [o for o, _ in answers]
    joined = torch.cat([o.cpu() for o in outputs]) if torch.is_tensor(outputs[0]) else [x for o in outputs for x in o]
    tally.add(joined, concatenate_targets([t for _, t in answers]))
    answers.clear()


def batch_throughput(predict: Predict, split: Split, batch_sizes: Sequence[int],
                     max_seconds: float, sync: Callable[[], None] | None = None) -> dict[int, float]:
    """Items per second of ``predict`` per batch size: one warm-up batch, then batches in split
    order until the split is used up or ``max_seconds`` of predicting have passed (at least one
    batch). Only the calls are timed; reading the next batch is not."""
    clock = time.perf_counter
    rates: dict[int, float] = {}
    with torch.inference_mode():
        for bs in batch_sizes:
            bs = min(bs, split.count)
            batches = split.batches(bs)
            predict(next(iter(split.batches(bs)))[0])
            if sync:
                sync()
            done, spent = 0, 0.0
            for inputs, targets in batches:
                start = clock()
                predict(inputs)
                if sync:
                    sync()
                spent += clock() - start
                done += len(targets)
                if spent >= max_seconds:
                    break
            rates[bs] = done / spent
    return rates
