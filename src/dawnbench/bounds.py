"""Ranges of numeric options, checked before any work starts and written into ``--help``.

    SEED = Bound(0, 2**32 - 1, integer=True)
    SEED.check("--seed", -1)   # DawnbenchError: --seed -1: must be an integer from 0 to 4294967295.
    SEED.text()                # "an integer from 0 to 4294967295" (for the option's help)

A value outside its range — NaN and the infinities included — is bad input: one
paragraph names the option, the value and the range.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from dawnbench.errors import DawnbenchError


def _fmt(value: float) -> str:
    return f"{value:,.0f}".replace(",", "") if float(value).is_integer() and abs(value) < 1e15 else f"{value:g}"


@dataclass(frozen=True)
class Bound:
    low: float | None = None
    high: float | None = None
    integer: bool = False
    low_open: bool = False        # the low end itself is excluded (e.g. > 0)

    def text(self) -> str:
        kind = "an integer" if self.integer else "a number"
        if self.low is not None and self.high is not None and not self.low_open:
            return f"{kind} from {_fmt(self.low)} to {_fmt(self.high)}"
        parts = []
        if self.low is not None:
            parts.append(f"{'>' if self.low_open else '≥'} {_fmt(self.low)}")
        if self.high is not None:
            parts.append(f"≤ {_fmt(self.high)}")
        return f"{kind} {' and '.join(parts)}" if parts else kind

    def ok(self, value: object) -> bool:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if self.integer and not isinstance(value, int):
            return False
        if not math.isfinite(value):
            return False
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or value <= self.high

    def check(self, name: str, value: object) -> None:
        """Raise a one-paragraph :class:`DawnbenchError` unless ``value`` is in range (None passes:
        the option was not given)."""
        if value is not None and not self.ok(value):
            shown = value if isinstance(value, (int, float)) else repr(value)
            raise DawnbenchError(f"{name}{'' if name.endswith('=') else ' '}{shown}: must be {self.text()}.")


POSITIVE_COUNT = Bound(1, 1_000_000, integer=True)


# --- the ranges of every command's numeric options (one place; `--help` quotes them) ----

SECONDS = Bound(0, 1e8, low_open=True)
CORES = os.cpu_count() or 1

RUN: dict[str, Bound] = {                       # dawnbench run / sweep / scale (RunOptions)
    "seed": Bound(0, 2**32 - 1, integer=True),
    "runs": Bound(1, 10_000, integer=True),
    "max_epochs": Bound(0, 1e6, low_open=True),
    "max_seconds": SECONDS,
    "max_wall_seconds": SECONDS,
    "max_init_seconds": SECONDS,
    "resource_interval": Bound(0.05, 3600),
    "collective_timeout": Bound(1, 86_400),
    "cost_per_hour": Bound(0, 100_000, low_open=True),
}
WORKERS: dict[str, Bound] = {                   # --nproc and friends (one worker per core or GPU at most)
    "nproc": Bound(1, CORES, integer=True),      # a worker per core at most (a GPU box has more cores than GPUs)
    "nnodes": Bound(1, 4096, integer=True),
    "threads": Bound(1, CORES, integer=True),
}
INFER: dict[str, Bound] = {                     # dawnbench infer (InferenceOptions)
    "threads": Bound(1, CORES, integer=True),
    "warmup_items": Bound(0, 1_000_000, integer=True),
    "throughput_seconds": Bound(0, 3600, low_open=True),
    "max_items": Bound(1, 100_000_000, integer=True),
    "scenario_seconds": Bound(0, 86_400, low_open=True),
    "server_qps": Bound(0, 1e7, low_open=True),
    "server_latency_ms": Bound(0, 3.6e6, low_open=True),
    "batch_size": Bound(1, 65_536, integer=True),
}
PROFILE: dict[str, Bound] = {                   # dawnbench profile
    "steps": Bound(1, 10_000, integer=True),
    "warm_steps": Bound(0, 10_000, integer=True),
    "top": Bound(1, 10_000, integer=True),
}
IMPORT: dict = {                                # dawnbench data fetch imagenet (import settings)
    "max_side": Bound(32, 4096, integer=True), "max_side_default": 384,
    "quality": Bound(1, 100, integer=True), "quality_default": 90,
    "shard_size": Bound(1, 100_000, integer=True), "shard_size_default": 256,
    "workers": Bound(1, CORES, integer=True),
}
ACCELERATORS = Bound(1, 4096, integer=True)     # dawnbench schedule --accelerators
TOP = Bound(1, 100_000, integer=True)           # rows shown by leaderboard --top
PICK = Bound(1, 1000, integer=True)             # dawnbench similarity --pick


def check_all(bounds: dict[str, Bound], values: object) -> None:
    """Check every named option of ``values`` (a dataclass or namespace) against ``bounds``."""
    for name, bound in bounds.items():
        if hasattr(values, name):
            bound.check("--" + name.replace("_", "-"), getattr(values, name))
