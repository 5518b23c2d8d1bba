"""How close a GPU comes to its datasheet, for a GPU never measured: predicted from its power per FLOP.

    fit = Efficiency.fit({"V100-PCIE-32GB": 0.20, "T4": 0.74, ...}, sheets, "fp32", compute=True)
    fit.offset(sheet)        # (log of time over the datasheet's roofline at large sizes, how it was found)

A GPU's **offset** is how far its large kernels stay from its datasheet: the median of log(time / (floor +
roofline)) over them (``gpu_model.py``). GPUs differ most in this, and a datasheet's rates do not say it: the
rates are at the boost clock, and a kernel that drives every SM runs as fast as the board's power allows.

**The model** (compute-bound classes). A GPU's *headroom* is its board power over its peak rate in the precision,
scaled by the energy a switch costs in its process — W per TFLOP × (12 nm / process)²: dynamic energy per
operation goes with capacitance × voltage², both of which shrink with the process (the exponent 2 was chosen among
1, 1.5 and 2 on the leave-one-GPU-out errors, docs/results/datasheet.md). Above a knee ``h0`` a GPU holds its clock
and comes as close as the learned GPUs do at large (``c``); below it, it runs at the rate its power buys:
``offset = c + max(0, ln h0 − ln headroom)``, never more than 8x below its datasheet (``MOST_BOUND``). ``c`` and
``h0`` are fitted (least squares) to the learned GPUs' offsets; a datasheet without ``Power_W`` or ``Process_Nm``
gets ``c`` and says so. Memory-bound classes take the median of the learned GPUs' offsets (their achieved bandwidth
differs less between GPUs). A board whose chip was measured on another board (the same SMs, cores per SM, clock,
L2 and architecture: an A100 SXM4 beside the A100 PCIe measured) takes that chip's offsets, less or more the power
penalty its own board's power makes.

No figure or correction names a GPU: the inputs are the datasheet's fields alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dawnbench.records.datasheet import Datasheet

PROCESS_EXPONENT = 2.0
MOST_BOUND = math.log(8.0)   # no GPU measured ran further below its datasheet for want of power (a P4's long GEMMs)
REFERENCE_NM = 12.0
KNEES = np.linspace(math.log(0.5), math.log(200.0), 241)   # the knee's search range, W per TFLOP at 12 nm


def chip(sheet: Datasheet) -> tuple:
    """What says two boards carry the same chip: SMs, cores per SM, boost clock, L2 and architecture."""
    f = sheet.figures
    return f["Num_Sm"], f["Core_Per_SM"], f["Freq"], f["L2Cache"], sheet.architecture


def headroom(sheet: Datasheet, precision: str) -> float | None:
    """Board power over the peak rate of ``precision``, W per TFLOP at a 12 nm process; None without the figures."""
    power, process = sheet.figures.get("Power_W"), sheet.figures.get("Process_Nm")
    if power is None or process is None:
        return None
    return power / (sheet.peak(precision)[0] / 1e12) * (REFERENCE_NM / process) ** PROCESS_EXPONENT


@dataclass
class Efficiency:
    """One class's offsets in one precision: the learned GPUs' own, and the fit that predicts any other's."""
    precision: str
    compute: bool
    own: dict[str, float]
    c: float = 0.0
    knee: float | None = None              # h0, W per TFLOP at 12 nm; None: no power term (memory-bound class)
    learned_headroom: dict[str, float] = field(default_factory=dict)
    silicon: dict[str, tuple] = field(default_factory=dict)    # a learned GPU's chip (see ``SILICON``)

    @classmethod
    def fit(cls, own: dict[str, float], sheets: dict[str, Datasheet], precision: str, compute: bool) -> Efficiency:
        """Fitted to ``own`` (a learned GPU's offset by name; ``sheets`` their datasheets)."""
        if not own:
            raise ValueError("no GPU to learn from")
        out = cls(precision, compute, dict(own), silicon={g: chip(sheets[g]) for g in own})
        rooms = {g: headroom(sheets[g], precision) for g in own}
        rooms = {g: h for g, h in rooms.items() if h is not None}
        out.learned_headroom = rooms
        if not compute or not rooms:
            out.c = float(np.median(list(own.values())))
            return out
        best: tuple[float, float, float] | None = None
        for knee in KNEES:
            penalty = {g: max(0.0, knee - math.log(h)) for g, h in rooms.items()}
            c = float(np.mean([own[g] - penalty[g] for g in rooms]))
            error = sum((own[g] - c - penalty[g]) ** 2 for g in rooms)
            if best is None or error < best[0] - 1e-12:
                best = (error, float(knee), c)
        assert best is not None
        _, knee, out.c = best
        out.knee = math.exp(knee)
        return out

    def offset(self, sheet: Datasheet) -> tuple[float, str]:
        """``sheet``'s offset and how it was found: its own where learned (a catalog GPU: a file named like one is
        not the GPU measured), else predicted from its datasheet."""
        if sheet.origin == "catalog" and sheet.name in self.own:
            return self.own[sheet.name], "measured"
        room = headroom(sheet, self.precision)
        sibling = next((g for g, c in sorted(self.silicon.items()) if c == chip(sheet)), None)
        if sibling is not None:            # the same chip measured on another board: its own, for this board's power
            return self.own[sibling] + self.penalty(room) - self.penalty(self.learned_headroom.get(sibling)), (
                f"the measured {sibling}'s chip (the same SMs, cores, clock and L2)"
                + (", on this board's power" if self.compute and self.knee is not None else ""))
        if not self.compute or self.knee is None:
            return self.c, "the measured GPUs' median"
        if room is None:
            return self.c, "no Power_W or Process_Nm in its datasheet: as close as a GPU with power to spare"
        below = self.penalty(room)
        return self.c + below, (f"board power per peak {self.precision} TFLOP, scaled to a 12 nm process, "
                                f"{room:.3g} W/TFLOP: "
                                + (f"power-bound, {math.exp(below):.2f}x slower than a GPU with power to spare" if below
                                   else f"power to spare (above the knee, {self.knee:.3g} W/TFLOP)"))

    def penalty(self, room: float | None) -> float:
        """How far below its datasheet a GPU of ``room`` headroom runs for want of power (log; 0: power to spare)."""
        if not self.compute or self.knee is None or room is None:
            return 0.0
        return min(max(0.0, math.log(self.knee) - math.log(room)), MOST_BOUND)

    def describe(self) -> dict[str, Any]:
        return {"precision": self.precision, "measured": self.own, "c": self.c, "knee_w_per_tflop_12nm": self.knee,
                "measured_headroom": self.learned_headroom}
