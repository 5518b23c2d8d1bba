"""The machine's roofs, measured in this process, not looked up.

    roofs = measure_roofs(torch.device("cpu"))
    roofs.flops["bf16"], roofs.bandwidth, roofs.ridge("bf16")

Per precision the device runs, the roof is the best dense rate of the probes — a
square matrix multiply and 3×3 channels-last convolutions at several image sizes — because they go
through different libraries that need not agree: on a Zen 5 EPYC the fp32 matmul
through torch's BLAS reached 184 GFLOP/s while oneDNN's convolutions trained a
network at 264 GFLOP/s. A roof that one backend beats is no roof. Memory bandwidth
is the rate of a large copy, counting the bytes read plus the bytes written.
Measured once per process and device (cached). Where a measured kernel beats every probe
(``dawnbench kernels``), the roof of its document is raised to that kernel (``raise_to``): a roof
is the best this machine did, never below a rate it reached.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import torch
import torch.nn.functional as F

from dawnbench.environment import device_sync
from dawnbench.precision import PRECISIONS, supported_precisions, tf32_flags

DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


@dataclass
class Roofs:
    device: str
    flops: dict[str, float]                      # precision -> best FLOP/s of the probes
    probes: dict[str, dict[str, float]] = field(default_factory=dict)  # precision -> probe -> FLOP/s
    bandwidth: float = 0.0                       # bytes/s (read + written)
    raised: dict[str, dict[str, Any]] = field(default_factory=dict)  # precision -> the kernel that beat the probes

    def raise_to(self, precision: str, rate: float, by: str) -> None:
        """A kernel ran faster than every probe: the roof is the best rate this machine reached, so it is that
        kernel's (the probes' best is kept in ``raised``)."""
        self.raised[precision] = {"by": by, "probes_best": round(self.raised.get(precision, {}).get(
            "probes_best", self.flops[precision])), "rate": round(rate)}
        self.flops[precision] = rate

    def ridge(self, precision: str) -> float:
        """Arithmetic intensity (FLOP/byte) above which an op can be compute-bound."""
        return self.flops[precision] / self.bandwidth

    def to_dict(self) -> dict[str, Any]:
        return {"device": self.device,
                "flops": {p: round(v) for p, v in self.flops.items()},
                "probes": {p: {k: round(v) for k, v in probe.items()} for p, probe in self.probes.items()},
                "bandwidth_bytes_per_s": round(self.bandwidth),
                "ridge_flop_per_byte": {p: round(self.ridge(p), 2) for p in self.flops},
                **({"raised": self.raised} if self.raised else {})}


def _best_rate(fn: Callable[[], Any], work: float, sync: Callable[[], None], seconds: float) -> float:
    """Best-of rate (work units per second) of ``fn``, after two untimed calls."""
    fn(), fn()
    sync()
    best, deadline = 0.0, time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        start = time.perf_counter()
        for _ in range(3):
            fn()
        sync()
        best = max(best, 3 * work / (time.perf_counter() - start))
    return best


def _probes(device: torch.device, dtype: torch.dtype, smaller: int = 1) -> dict[str, tuple[Callable[[], Any], float]]:
    big = device.type == "cuda"
    n = (8192 if big else 2048) // smaller
    a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
    probes = {"matmul": (lambda: a @ b, 2 * n**3)}
    # Several convolution shapes: oneDNN's best blocking differs with the image size, and the
    # profiled networks have every kind of layer (on a 2-core AVX2 EPYC a 4×4 layer of cifar10-resnet18
    # ran at 170 GFLOP/s against the 8×8 and 16×16 probes' 128: so a CPU also probes 4×4).
    for batch, size in ((256, 32), (1024, 8)) if big else ((32, 16), (128, 8), (128, 4)):
        batch, channels = batch // smaller, 256
        x = torch.randn(batch, channels, size, size, device=device, dtype=dtype).contiguous(
            memory_format=torch.channels_last)
        w = torch.randn(channels, channels, 3, 3, device=device, dtype=dtype).contiguous(
            memory_format=torch.channels_last)
        probes[f"conv3x3@{size}"] = (lambda x=x, w=w: F.conv2d(x, w, padding=1),
                                     2 * batch * size * size * channels * channels * 9)
    return probes


def measure_bandwidth(device: torch.device, seconds: float = 0.5) -> float:
    return _bandwidth(device, seconds, torch.get_num_threads())


@cache
def _bandwidth(device: torch.device, seconds: float, threads: int) -> float:
    sync = device_sync(device) or (lambda: None)
    numel = (1 << 28) if device.type == "cuda" else (1 << 26)  # 1 GiB / 256 MiB of fp32
    src = torch.ones(numel, device=device)
    dst = torch.empty_like(src)
    return _best_rate(lambda: dst.copy_(src), 2 * 4 * numel, sync, seconds)


def measure_roofs(device: torch.device, seconds_per_probe: float = 0.4,
                  precisions: tuple[str, ...] | None = None, emulated: tuple[str, ...] = ()) -> Roofs:
    """The roofs at the process's current torch thread count (a CPU's roof scales with it, and
    ``infer --threads`` or a worker changes it), measured once per device, precision and thread
    count: every precision the device runs (and ``emulated``: those it is made to run by emulation,
    ``profile --emulated``), or only ``precisions`` of them (a run's throughput needs one)."""
    threads = torch.get_num_threads()
    runs = [*supported_precisions(device), *emulated]
    wanted = [p for p in PRECISIONS if p in runs and (precisions is None or p in precisions)]
    measured = {p: _precision_roof(device, p, seconds_per_probe, threads, p in emulated) for p in wanted}
    return Roofs(str(device), {p: max(rates.values()) for p, rates in measured.items()}, measured,
                 measure_bandwidth(device))


@cache
def _precision_roof(device: torch.device, precision: str, seconds_per_probe: float, threads: int,
                    emulated: bool = False) -> dict[str, float]:
    """Each probe's best FLOP/s at ``precision`` (``emulated``: on problems a quarter the size in each
    dimension that grows work — an emulated bf16 matmul of the usual size took a minute a call on an AVX2
    EPYC, at 0.3 GFLOP/s)."""
    sync = device_sync(device) or (lambda: None)
    with tf32_flags(precision == "tf32"):
        return {name: _best_rate(fn, work, sync, seconds_per_probe)
                for name, (fn, work) in _probes(device, DTYPES[precision], 4 if emulated else 1).items()}
