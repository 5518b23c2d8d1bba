"""The range of every numeric option, in one table: checked before any work starts, written into
``--help``, the same for an option in every command and executor that has it.

    OPTIONS["--seed"].check("--seed", -1)     # DawnbenchError: --seed -1: must be an integer from 0 to 4294967295.
    check_option("--workers", [1, 2, 0])      # a list option: each value
    check_fields(options, {"max_epochs": "--max-epochs"})   # an API object's fields, by the option they come from

A value outside its range — NaN and the infinities included — is bad input: one paragraph names the
option, the value and the range. The command line is checked as parsed (``cli/__init__.py``: every
option of this table the command has), and the API objects (``RunOptions``, ``InferenceOptions``,
``ProfileOptions``, ``LaunchOptions``, ``SlurmOptions``…) check their fields again through the same
entries, so a script calling the API gets the same answers. What depends on another value — a node
rank below the node count, no more local workers than this machine's cores — is checked where both are
known, beside the range.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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


CORES = os.cpu_count() or 1
SECONDS = Bound(0.001, 1e8)   # a duration: nothing is timed in less than a millisecond; at most three years
USD_PER_HOUR = Bound(0, 100_000, low_open=True)  # the dearest on-demand machine is about $100/h
MACHINES = 4096                                  # workers, nodes or accelerators one run or schedule spans

OPTIONS: dict[str, Bound] = {
    # how a run trains (run, sweep, scale, jobs; RunOptions)
    "--seed": Bound(0, 2**32 - 1, integer=True),
    "--runs": Bound(1, 10_000, integer=True),
    "--max-epochs": Bound(0, 1e6, low_open=True),
    "--max-seconds": SECONDS,                    # run: timed seconds; kernels: the whole command
    "--max-wall-seconds": SECONDS,
    "--max-init-seconds": SECONDS,
    "--resource-interval": Bound(0.05, 3600),
    "--collective-timeout": Bound(1, 86_400),
    "--cost-per-hour": USD_PER_HOUR,             # run, infer, export
    # many workers (LaunchOptions; scale's list; jobs' slots)
    "--nproc": Bound(1, MACHINES, integer=True),   # locally also at most this machine's cores (LaunchOptions)
    "--nnodes": Bound(1, MACHINES, integer=True),
    "--node-rank": Bound(0, MACHINES - 1, integer=True),
    "--threads-per-worker": Bound(1, CORES, integer=True),
    "--workers": Bound(1, MACHINES, integer=True),  # scale's worker counts; data fetch's encoding processes
    "--slots": Bound(1, MACHINES, integer=True),
    "--accelerators": Bound(1, MACHINES, integer=True),
    # a Slurm cluster's jobs (SlurmOptions)
    "--time-limit": Bound(1, 525_600, integer=True),       # minutes: a year
    "--gpus-per-run": Bound(0, 64, integer=True),
    "--cpus-per-run": Bound(1, 4096, integer=True),
    "--workers-per-node": Bound(1, MACHINES, integer=True),
    "--rdzv-port": Bound(1024, 65535, integer=True),
    "--array-parallelism": Bound(1, 100_000, integer=True),
    # inference (InferenceOptions)
    "--threads": Bound(1, CORES, integer=True),
    "--warmup-items": Bound(0, 1_000_000, integer=True),
    "--throughput-seconds": Bound(0, 3600, low_open=True),
    "--max-items": Bound(1, 100_000_000, integer=True),
    "--scenario-seconds": Bound(0, 86_400, low_open=True),
    "--server-qps": Bound(0, 1e7, low_open=True),
    "--server-latency-ms": Bound(0, 3.6e6, low_open=True),
    "--batch-sizes": Bound(1, 65_536, integer=True),
    # profile, explain, predict, kernels
    "--steps": Bound(1, 10_000, integer=True),
    "--warm-steps": Bound(0, 10_000, integer=True),
    "--top": Bound(1, 100_000, integer=True),    # rows shown on the terminal (profile, explain, leaderboard)
    "--epochs": Bound(0, 1e6, low_open=True),    # predict: epochs to target
    "--batch": Bound(1, 65_536, integer=True),   # predict: the batch the step is re-derived at; profile --census's
    "--seqlen": Bound(1, 1 << 20, integer=True),  # profile --census: tokens a sequence
    "--samples-per-epoch": Bound(1, 1e10, integer=True),   # predict: a census's epoch (no task to read it from)
    "--cap": Bound(0.2, 1e7),                    # seconds one kernel row may take (its least: kernels/timing.py)
    "--max-problems": Bound(1, 100_000, integer=True),   # explain: distinct kernel problems timed
    "--pick": Bound(1, 1000, integer=True),
    "--scale": Bound(1e-6, 1e6),                 # import-log: what each eval_accuracy is multiplied by
    # ImageNet's import (data fetch)
    "--max-side": Bound(32, 4096, integer=True),
    "--quality": Bound(1, 100, integer=True),
    "--shard-size": Bound(1, 100_000, integer=True),
}
IMPORT_DEFAULTS = {"max_side": 384, "quality": 90, "shard_size": 256}


def check_option(flag: str, value: Any) -> None:
    """``value`` of the option ``flag`` (each item of a list option) against its bound; None passes."""
    bound = OPTIONS[flag]
    for item in value if isinstance(value, (list, tuple)) else [value]:
        bound.check(flag, item)


def check_fields(values: object, fields: Mapping[str, str]) -> None:
    """Each field of ``values`` (a dataclass, a namespace) named in ``fields``, against the bound of the
    option it comes from: {"max_epochs": "--max-epochs", …}."""
    for name, flag in fields.items():
        if hasattr(values, name):
            check_option(flag, getattr(values, name))


def fields_of(*flags: str) -> dict[str, str]:
    """The field names ``--max-epochs`` → ``max_epochs`` of options whose field is named after them."""
    return {flag.removeprefix("--").replace("-", "_"): flag for flag in flags}
