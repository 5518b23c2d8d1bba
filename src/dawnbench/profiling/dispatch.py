"""What the host pays to issue one op (SPEC §23's host floor), measured where a profile is taken.

    dispatch = measure_dispatch(torch.device("cpu"))     # {"elementwise": 3.1e-06, "matrix multiply": …, …}

Per op kind, the wall time of issuing a call on one-element tensors (or a 1×1 problem) — Python, the dispatcher,
autograd's bookkeeping where it records, and on an accelerator the launch, without waiting for the device — the
median over ``CALLS`` calls in ``BLOCKS`` blocks. An op's work is nothing here, so what is left is the cost every
call of a step pays on the host whatever the device does: the ops of a step times it bound the step from below
(``prediction/predict.py``). Kinds: elementwise (an add), matrix multiply (``mm``), convolution (``conv2d``);
every other class is costed as elementwise.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

CALLS, BLOCKS = 200, 5


def _per_call(fn: Callable[[], Any], device: torch.device) -> float:
    fn()
    times = []
    for _ in range(BLOCKS):
        start = time.perf_counter()
        for _ in range(CALLS):
            fn()
        times.append((time.perf_counter() - start) / CALLS)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return statistics.median(times)


def measure_dispatch(device: torch.device) -> dict[str, float]:
    """Seconds the host spends issuing one op of each kind (see the module docstring)."""
    one = torch.ones(1, device=device, requires_grad=True)
    other = torch.ones(1, device=device)
    square = torch.ones(1, 1, device=device, requires_grad=True)
    image, kernel = torch.ones(1, 1, 1, 1, device=device, requires_grad=True), torch.ones(1, 1, 1, 1, device=device)
    return {"elementwise": _per_call(lambda: one + other, device),
            "matrix multiply": _per_call(lambda: square @ square, device),
            "convolution": _per_call(lambda: F.conv2d(image, kernel), device)}
