"""The range of every number dawnbench is given or reads, in one table: the limits below are what a
value can physically be (a duration, a count, a rate, a price); the options' bounds (``OPTIONS``) and
the documents' field types (``schema.py``) are both drawn from them, and one formatter writes them.
Each option's range is checked before any work starts, written into ``--help``, the same for an
option in every command and executor that has it.

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
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dawnbench.errors import DawnbenchError

# --- what a value can physically be (a document's field or an option) -----------------------------------
MAX_SECONDS = 1e8          # any duration: three years
MIN_SECONDS = 1e-3         # a budget or a timeout given: nothing is timed in less than a millisecond
RESOLUTION = 1e-9          # of a time (a nanosecond clock) and of an epoch (one sample in a billion)
MAX_COUNT = 10**15         # items, samples, calls, steps: far past any run's
MAX_EPOCHS = 1e6
MAX_SEED = 2**32 - 1       # numpy's seed range
MAX_DIM = 2**31 - 1        # a tensor dimension: torch's own index limit
MAX_FLOPS = 1e24           # of one pass, step or run: DeepBench's largest problem is ~1e13
MAX_BYTES = 1e18
MAX_FLOP_RATE = 1e18       # FLOP/s: an exaflop machine
MAX_BYTE_RATE = 1e15       # bytes/s: a petabyte a second
MIN_RATE = 1e6             # FLOP/s or bytes/s: nothing that runs torch computes or copies slower (1e-300 made a step inf)
MAX_USD = 1e9
MAX_USD_PER_HOUR = 100_000  # the dearest on-demand machine is about $100/h
MIN_USD_PER_HOUR = 1e-3    # the cheapest on-demand VM is about $0.003/h (a burstable nano instance)
MACHINES = 4096            # workers, nodes or accelerators one run or schedule spans
MAX_TEXT = 4096            # a name, a path, a device's description
MAX_MESSAGE = 100_000      # an error or a note
DEFAULT_COLLECTIVE_TIMEOUT_S = 300.0   # a peer silent this long ends a distributed run (--collective-timeout)
SCALINGS = ("weak", "strong")        # how a batch is shared among workers (--scaling)
MAX_EVALUATIONS = 100_000  # in one run record: ~150 bytes each, 15 MB, inside the 64 MiB a record may be (io.LIMITS)

# --- what fields can be together (rates and orderings; docs/reference/documents.md, "Physics") -----------
# A device's rates: a CPU profile or a kernels file cannot claim a GPU's. Sources: the fastest parts sold in
# 2026 — NVIDIA's B200 datasheet, 4.5 PFLOP/s dense FP8 and 8 TB/s HBM3e (x2 for sparsity and headroom; its
# on-chip SRAM serves ~10x HBM); a two-socket Xeon 6980P, 2 × 128 cores × 2 AMX tiles ≈ 0.7 PFLOP/s bf16,
# with L1 at ~100 TB/s across its cores.
DEVICE_FLOP_RATE = {"cpu": 1e15, "gpu": 1e16}
DEVICE_BYTE_RATE = {"cpu": 1e14, "gpu": 1e14}
MAX_EPOCH_SAMPLES = 1e10   # samples in one epoch: LAION-5B, the largest public training set, holds 5.85e9
MAX_SAMPLES_PER_S = 1e9    # samples a second one device trains on: at 8 TB/s, every sample at least 8 bytes
ABOVE_ROOF = 1.10          # a measured rate may pass its own document's roof by noise, not by more
ABOVE_BANDWIDTH = 100      # a row's bytes/s over its document's copy bandwidth: caches serve a few times it, not 100×
MIN_LATENCY_S = 1e-6       # an item answered: a GPU kernel's launch alone takes 2-5 µs, a CPU call a microsecond
MIN_EPOCH_S = 1e-6         # an epoch is at least one optimizer step, which launches at least one kernel (2-5 µs)
MAX_EVAL_VALUE = 100       # an MLPerf eval_accuracy of any benchmark: a fraction, a percentage, a WER, a perplexity
OVER_WORKERS = 1.5         # a schedule's speedup over one worker: at most its workers × this (caches, not magic)
ROUNDING = 0.01            # relative: a figure derived from others (cost = price × time) agrees within this
MAX_OTHERS_SHARE = 2.0     # others' share of a run's CPUs: at most 1 but for the OS's late CPU accounting (records
#                            before the monitor clamped it held 1.53 on a loaded 2-core machine); 5 is no measurement


def number_text(value: float) -> str:
    """A limit or a value in an error: ``4,294,967,295``, ``1e+08``: integers grouped, the rest in ``%g``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return f"{value:,.0f}" if float(value).is_integer() and abs(value) < 1e15 else f"{value:g}"


# Numbers as text (an option, a TSV cell, a log's field) are ASCII: Python's int() and float() also read
# Arabic-Indic and fullwidth digits and underscores ("٣", "１", "1_000"), which no other tool reads back.
_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)", re.IGNORECASE)


def parse_int(text: str) -> int:
    """``text`` as an integer written in ASCII digits (surrounding blanks allowed); ValueError otherwise."""
    if not _INT.fullmatch(text.strip(" \t")):
        raise ValueError(f"invalid integer {text[:40]!r}: write it in ASCII digits 0-9")
    return int(text)


def parse_float(text: str) -> float:
    """``text`` as a number written in ASCII (``1.5``, ``2e-3``, ``inf``: the range is the bound's to check)."""
    if not _FLOAT.fullmatch(text.strip(" \t")):
        raise ValueError(f"invalid number {text[:40]!r}: write it in ASCII digits 0-9")
    return float(text)


@dataclass(frozen=True)
class Bound:
    low: float | None = None
    high: float | None = None
    integer: bool = False
    low_open: bool = False        # the low end itself is excluded (e.g. > 0)

    def text(self) -> str:
        kind = "an integer" if self.integer else "a number"
        if self.low is not None and self.high is not None and not self.low_open:
            return f"{kind} from {number_text(self.low)} to {number_text(self.high)}"
        parts = []
        if self.low is not None:
            parts.append(f"{'>' if self.low_open else '≥'} {number_text(self.low)}")
        if self.high is not None:
            parts.append(f"≤ {number_text(self.high)}")
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
SECONDS = Bound(MIN_SECONDS, MAX_SECONDS)
USD_PER_HOUR = Bound(0, MAX_USD_PER_HOUR, low_open=True)

OPTIONS: dict[str, Bound] = {
    # how a run trains (run, sweep, scale, jobs; RunOptions)
    "--seed": Bound(0, MAX_SEED, integer=True),
    "--runs": Bound(1, 10_000, integer=True),
    "--max-epochs": Bound(0, MAX_EPOCHS, low_open=True),
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
    "--epochs": Bound(0, MAX_EPOCHS, low_open=True),    # predict: epochs to target
    "--batch": Bound(1, 65_536, integer=True),   # predict: the batch the step is re-derived at; profile --census's
    "--seqlen": Bound(1, 1 << 20, integer=True),  # profile --census: tokens a sequence
    "--samples-per-epoch": Bound(1, MAX_EPOCH_SAMPLES, integer=True),   # predict: a census's epoch (no task to read it from)
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
