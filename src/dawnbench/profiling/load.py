"""Load on the machine while a tool measures, and roofs against the machine's last (SPEC §14's rule, beyond runs).

A run's resource monitor flags a timed region that other processes disturbed (``resources.interference``).
The other commands that measure — ``profile``, ``machine``, ``explain``, ``kernels``, ``infer`` — are disturbed
the same way, so they watch the same thing over what they measure::

    with watched() as load:
        ...                              # the measurement
    doc["load"] = load.summary           # others' CPU-seconds, their share; "interference" when past the rule
    notes += load.notes

The rule is the monitor's (``records.selection.past_the_rule``): other processes took more than a twentieth of the CPUs
this process may use, and at least ten clock ticks of CPU time (below that the kernel's accounting cannot tell).

A roof measured under load is low: 20.7 GFLOP/s on a 2-core machine whose roof was 191 an hour before.
:func:`against_last` compares each roof with the last one this machine measured undisturbed (stored in the
data cache's ``machines/``, one file per machine), says when one differs by more than ``ROOF_CHANGE``, and stores
the new roofs only when nothing disturbed them — a busy hour never becomes the reference.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from dawnbench import schema
from dawnbench.data.cache import data_root
from dawnbench.errors import DawnbenchError
from dawnbench.io import atomic_write_json, read_json
from dawnbench.profiling.resources import busy_seconds, taken_from_own
from dawnbench.records.documents import Last
from dawnbench.records.selection import past_the_rule

ROOF_CHANGE = 0.30   # a roof this far from the machine's last undisturbed one is said


@dataclass
class Load:
    """What other processes took while a block measured (filled in when the block ends)."""

    summary: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def disturbed(self) -> bool:
        return "interference" in self.summary


def _own_cpu_s(process: psutil.Process) -> float:
    """This process's CPU-seconds, its finished children's and its live children's."""
    t = process.cpu_times()
    total = t.user + t.system + t.children_user + t.children_system
    for child in process.children(recursive=True):
        try:
            c = child.cpu_times()
            total += c.user + c.system
        except psutil.Error:   # it ended between the listing and the reading
            pass
    return total


@contextmanager
def watched(what: str = "the measurement") -> Iterator[Load]:
    """Others' CPU-seconds over the block, against the CPUs this process may use (see the module)."""
    me = psutil.Process()
    cores = psutil.cpu_count() or 1
    own_cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores
    load = Load()
    began, busy0, own0 = time.monotonic(), busy_seconds(psutil.cpu_times()), _own_cpu_s(me)
    try:
        yield load
    finally:
        seconds = time.monotonic() - began
        others = max(0.0, busy_seconds(psutil.cpu_times()) - busy0 - (_own_cpu_s(me) - own0))
        taken, share = taken_from_own(others, seconds, cores, own_cpus)
        load.summary = {"seconds": round(seconds, 3), "others_cpu_s": round(others, 2), "own_cpus": own_cpus,
                        "others_share": round(min(1.0, share), 4)}   # above 1: the OS accounting late
        if past_the_rule(taken, share):
            load.summary["interference"] = (
                f"other processes took {taken:.1f} CPU-s ({100 * share:.0f} % of the {own_cpus} CPU(s) this "
                f"process may use) during {what}: its figures are suspect; measure again on an otherwise idle machine")
            load.notes.append(load.summary["interference"])


def _machine_file(device: str) -> tuple[Path, str]:
    """The file of this machine's last undisturbed roofs for ``device`` (cpu, cuda:N): keyed by what the machine
    is — its CPU model and cores, or the GPU's name — so a copied cache on another machine does not match."""
    import torch

    from dawnbench.environment import cpu_model

    what = (torch.cuda.get_device_name(torch.device(device)) if device.startswith("cuda")
            else f"{cpu_model()} x{psutil.cpu_count()} t{torch.get_num_threads()}")
    key = hashlib.sha256(f"{device}|{what}".encode()).hexdigest()[:16]
    return data_root() / "machines" / f"{key}.json", what


def against_last(roofs: dict[str, Any], load: Load) -> list[str]:
    """Notes for each roof (``Roofs.to_dict()``: FLOP/s per precision, the bandwidth) more than ``ROOF_CHANGE``
    from this machine's last undisturbed one; the new roofs become the last when ``load`` was undisturbed."""
    path, what = _machine_file(roofs["device"])
    notes = []
    try:   # a regular file of the declared shape, never a link or a FIFO; anything else is as if never measured
        last = schema.load(Last, read_json(path, "machine's roofs"), path) if path.exists() else None
    except DawnbenchError:
        last = None   # damaged: written again below when this measurement is undisturbed
    if last is not None:
        now = {**{f"{p} roof": v for p, v in roofs["flops"].items()}, "bandwidth": roofs["bandwidth_bytes_per_s"]}
        before = {**{f"{p} roof": v for p, v in (last.get("flops") or {}).items()},
                  "bandwidth": last.get("bandwidth_bytes_per_s")}
        for name, value in now.items():
            old = before.get(name)
            if isinstance(old, (int, float)) and old > 0 and abs(value / old - 1) > ROOF_CHANGE:
                unit, scale = ("GB/s", 1e9) if name == "bandwidth" else ("GFLOP/s", 1e9)
                notes.append(f"the {name} measured {value / scale:.3g} {unit}, {abs(value / old - 1):.0%} "
                             f"{'below' if value < old else 'above'} this machine's last undisturbed measurement "
                             f"({old / scale:.3g} {unit}, {last.get('date', '?')}): "
                             + ("the machine was busier or its clock lower now; measure again on an idle machine"
                                if value < old else "the earlier measurement was the low one"))
    if not load.disturbed:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_json(path, {**roofs, "machine": what, "date": dt.date.today().isoformat()},
                              update=True)   # the machine cache: dawnbench's own
        except OSError:   # a read-only cache: the comparison is lost, never the command's result
            pass
    return notes
