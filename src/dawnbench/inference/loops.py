"""The measurement loops: one item at a time (latency) and batches (throughput).

Each query goes from the stored representation (a uint8 slice of the scored split,
already in memory) through the entry's ``predict`` and, on an accelerator, a device
synchronisation, so the clock stops only when the answer exists. The loops add two
clock readings and a list append per query, nothing else (``benchmarks/
inference_overhead.py`` checks that against a bare loop of the same calls).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

Predict = Callable[[torch.Tensor], torch.Tensor]


@dataclass
class LatencyPass:
    latencies_ms: list[float]   # one per measured item, in order
    outputs: torch.Tensor       # predictions of every measured item, for the metric
    warmup_items: int


def single_item_latencies(predict: Predict, inputs: torch.Tensor, warmup_items: int,
                          sync: Callable[[], None] | None = None,
                          progress: Callable[[int], None] | None = None) -> LatencyPass:
    """Warm up on the first ``warmup_items`` items (not counted), then time every item in turn."""
    clock = time.perf_counter
    with torch.inference_mode():
        for i in range(min(warmup_items, len(inputs))):
            predict(inputs[i:i + 1])
        if sync:
            sync()
        latencies, outputs = [], None
        for i in range(len(inputs)):
            start = clock()
            out = predict(inputs[i:i + 1])
            if sync:
                sync()
            latencies.append((clock() - start) * 1000.0)
            if outputs is None:  # one buffer: keeping 10,000 small tensors alive would slow the allocator
                outputs = torch.empty((len(inputs), *out.shape[1:]), dtype=out.dtype, device=out.device)
            outputs[i] = out[0]
            if progress and i % 500 == 499:
                progress(i + 1)
    return LatencyPass(latencies, outputs.cpu(), min(warmup_items, len(inputs)))


def batch_throughput(predict: Predict, inputs: torch.Tensor, batch_sizes: Sequence[int],
                     max_seconds: float, sync: Callable[[], None] | None = None) -> dict[int, float]:
    """Items per second per batch size: one warm-up batch, then batches in split order
    until the split is used up or ``max_seconds`` have passed (at least one batch)."""
    clock = time.perf_counter
    rates: dict[int, float] = {}
    with torch.inference_mode():
        for bs in batch_sizes:
            bs = min(bs, len(inputs))
            predict(inputs[:bs])
            if sync:
                sync()
            done, start = 0, clock()
            while done < len(inputs):
                predict(inputs[done:done + bs])
                if sync:
                    sync()
                done += len(inputs[done:done + bs])
                if clock() - start >= max_seconds:
                    break
            rates[bs] = done / (clock() - start)
    return rates
