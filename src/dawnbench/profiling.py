"""Hardware utilisation: FLOPs per training sample, achieved FLOP/s, measured peak.

    flops = training_flops_per_sample(model, batch)   # forward + backward, per item
    peak = matmul_peak_flops(torch.device("cpu"))      # measured in this process

Both run after the timed region. FLOPs are counted with ``torch.utils.flop_counter``
(matrix multiplies and convolutions: what dominates these networks; elementwise
work is not counted), so "fraction of peak" says how close the training loop comes
to this machine's dense fp32 matrix-multiply rate.
"""

from __future__ import annotations

import copy
import time
from functools import lru_cache
from typing import Any

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode


def training_flops_per_sample(model: nn.Module, batch: torch.Tensor) -> float:
    """FLOPs of one forward and backward pass per item of ``batch`` (model left untouched)."""
    probe = copy.deepcopy(model).train()  # a copy: BatchNorm statistics of the original stay as trained
    with FlopCounterMode(display=False) as counter:
        probe(batch).float().sum().backward()
    return counter.get_total_flops() / len(batch)


@lru_cache(maxsize=None)
def matmul_peak_flops(device: torch.device, size: int = 2048, seconds: float = 1.0) -> float:
    """Best-of-several fp32 matrix-multiply rate on ``device``, in FLOP/s."""
    a = torch.randn(size, size, device=device)
    b = torch.randn(size, size, device=device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    for _ in range(2):
        a @ b
    sync()
    best, deadline = 0.0, time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        start = time.perf_counter()
        for _ in range(4):
            a @ b
        sync()
        best = max(best, 4 * 2 * size**3 / (time.perf_counter() - start))
    return best


def throughput(samples: int, timed_s: float, flops_per_sample: float | None,
               device: torch.device) -> dict[str, Any]:
    """Samples/s over the timed region and, when FLOPs are known, GFLOP/s against the peak."""
    rate = samples / timed_s if timed_s > 0 else None
    out: dict[str, Any] = {"samples_per_s": rate, "flops_per_sample": flops_per_sample,
                           "achieved_gflops": None, "peak_gflops": None, "fraction_of_peak": None}
    if flops_per_sample and rate:
        peak = matmul_peak_flops(device)
        achieved = flops_per_sample * rate
        out.update(achieved_gflops=achieved / 1e9, peak_gflops=peak / 1e9, fraction_of_peak=achieved / peak)
    return out
