"""Timing a kernel the way ``torch.utils.benchmark`` does it: its ``Timer`` takes every
measurement (threads, CUDA synchronisation); only the number of blocks is decided here.

One untimed call first (a library's first call selects and builds its kernel), then blocks of
calls, each ``Timer.timeit(number)``, sized from one more timed call so that a block lasts about
``BLOCK_S``; blocks are repeated until their spread (IQR / median) is under 10 % — warm-up until
stable — after at least four blocks and ``MIN_RUN_S``, or until ``max_s`` is spent, whichever
comes first. Torch's own ``adaptive_autorange`` sizes its block with a loop of its own (ten
times more calls until the timer's overhead is 1e-4 of a block) that no cap bounds: on a 12 µs
GEMM with a 2 s cap it once ran 76 s. The timer runs with this process's thread count (its own
default is one thread, which would measure a CPU core, not the CPU).

A call far slower than its estimate (a library without a fast kernel for that precision and
shape) would make the loop outrun ``max_s`` several times over: when the untimed first call
took more than a fifth of ``max_s``, one more call is timed (``Timer.timeit(1)``) if it fits
in what is left: if that one was quick too (the first paid a library's set-up) the loop goes
on in the time left, else the row rests on that one call (``repeats`` 1); if it does not fit,
:class:`TooSlow` says how long the first call took.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.utils import benchmark

MIN_RUN_S = 0.2           # a row is timed for at least this long (and at least four blocks)
MIN_BLOCKS = 4
BLOCK_S = 0.01            # a block of calls lasts about this long: far above the timer's own overhead
STABLE = 0.1              # IQR / median at which the timing is taken as settled


@dataclass
class Timing:
    median_s: float         # per call: the median over the measurements
    iqr_s: float
    repeats: int            # measurements the median and IQR are over (blocks of calls)
    calls: int              # calls timed in all (blocks × calls per block)


class TooSlow(Exception):
    """The first call alone left no room for a timed one within the cap."""

    def __init__(self, first_s: float, max_s: float):
        super().__init__(f"its first call took {first_s:.1f} s; no timed call fits in the {max_s:g} s cap (--cap)")


def time_call(fn: Callable[[], Any], device: torch.device, max_s: float) -> Timing:
    """The median and IQR of one call of ``fn``, over blocks of calls, within about ``max_s`` seconds."""
    start = time.perf_counter()
    fn()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    first = time.perf_counter() - start
    timer = benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=torch.get_num_threads())
    one = None
    if first > max_s / 5:   # slow because first (a library's set-up), or slow every time?
        if first > max_s - first:
            raise TooSlow(first, max_s)
        one = timer.timeit(1).median
        if one > max_s / 5 or first + one > max_s / 2:
            return Timing(one, 0.0, 1, 1)
    number = max(1, math.ceil(BLOCK_S / max(one if one is not None else timer.timeit(1).median, 1e-9)))
    times: list[float] = []
    while True:
        block_start = time.perf_counter()
        times.append(timer.timeit(number).median)       # seconds per call, over one block
        spent, block_s = time.perf_counter() - start, time.perf_counter() - block_start
        if spent + block_s > max_s:                    # another block would pass the cap
            break
        if len(times) >= MIN_BLOCKS and spent >= min(MIN_RUN_S, max_s):
            q1, median, q3 = np.percentile(times, [25, 50, 75])
            if (q3 - q1) / median < STABLE:
                break
    q1, median, q3 = np.percentile(times, [25, 50, 75])
    return Timing(float(median), float(q3 - q1), len(times), len(times) * number)
