"""A device as the predictor sees it: its timed kernels and a model for the rest.

    model = DeviceModel.published("V100")              # DeepBench's checked sheet + devices.csv
    model = DeviceModel.measured(Path("kernels/kernels.json"))   # a machine's own kernel times
    seconds, how = model.kernel_s(kernel, "fp32")      # how: "published" or "model"

**The model of a device** (every constant with its source): its peak FLOP/s per precision and
its memory bandwidth — rated, from ``kernels/devices.csv`` (each row names its datasheet), or
measured, a ``kernels.json``'s own roofs — give each kernel's roofline time, the larger of
FLOPs / peak and bytes / bandwidth (DeepBench's FLOP counts, the minimum traffic of
``records/problems.py``). A kernel's **efficiency** is its roofline time over its real time.
The efficiency of a (suite, pass, precision) is fitted on the device's own timed rows of it: the
geometric mean of the efficiencies of the ``NEIGHBOURS`` rows nearest in the problem's shape,
each weighted by 1 / (its squared distance + ``SOFTENING``) — distances over base-2 logarithms of
the sizes that set a kernel's speed (:func:`shape`): a GEMM's m, n and k; a convolution's batch,
channels in and out, output pixels, and filter area and stride counted twice; an RNN's hidden
width, batch and half its timesteps, rows of another cell far apart. (Chosen among 16 variants —
2 or 3 neighbours' counts, the timestep and filter weights, median or weighted mean — by the
leave-one-out error below, so that error is slightly optimistic. An earlier fit on log FLOPs and
log intensity alone left the median convolution and RNN errors at 24 % and 30 %.) A kernel of the
device's sheet is its published time; any other, its roofline time over the fitted efficiency. ``leave_out`` fits
without one row —
the leave-one-out validation (``validate.py``).

**An op's own call** (the applications set: a ``kernels.json`` of ``--set applications`` or the memory suite,
``records/problems.py``): where the device's file holds a time for the very call an op made (same op, shapes,
strides, arguments, precision), that is its time ("measured"). **A class's curve**: every other op of a class the
file has replayed rows of takes that class's efficiency — its roofline time over its real time — fitted on those
rows the same way (the nearest ``NEIGHBOURS`` in log2 of the bytes moved, and of the FLOPs for a compute class), its
roofline time over it ("curve"). Ops of a class with no rows fall to the roofline below, each said.

**Bandwidth.** A measured machine's is its own (the roofs of its ``kernels.json``). A published device's is a
published STREAM-class measurement of it where ``devices.csv`` cites one (dated), else its rated bandwidth — an
upper bound no kernel reaches, said in the model's notes.

An op no kernel problem covers (elementwise, normalisation, copies…) and no class curve reaches is costed at the
device's roofline, and never below ``floor_s``: the fastest GEMM on the device's sheet (the least a kernel
took there, launch included; GEMMs are the suite with small problems) — except an op that moves no byte and
computes nothing (a view, ``t``, ``detach``, ``expand``): it launches no kernel, costs 0 here, and issuing it
counts in the host's floor (``predict.host_floor_s``). A sheet without GEMM
rows and a machine's own ``kernels.json`` (no small kernels) have no floor: those ops are costed at
the roofline alone, an underestimate for small ones, and the model says so.

Precisions: DeepBench published ``fp32`` and ``fp16-mixed``; a bf16 or fp16 profile is predicted
with a device's ``fp16-mixed`` rows and peak where it has them, else with its fp32 ones (the
prediction says so). A measured device keeps the precisions its ``kernels.json`` ran.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dawnbench.environment import vector_extensions
from dawnbench.errors import DawnbenchError
from dawnbench.io import read_json
from dawnbench.precision import ELEMENT_BYTES
from dawnbench.prediction.step import Kernel
from dawnbench.records import documents
from dawnbench.records.kernel_classes import SUITE_OF
from dawnbench.records.problems import Problem, bytes_moved, conv_output, flops
from dawnbench.records.published import (
    CONV_KEYS,
    DEVICES,
    PUBLISHED_PRECISION,
    devices,
    problem_key,
    sheet,
)

NEIGHBOURS = 5
SOFTENING = 0.25     # squared log2-distance: a neighbour's weight stays finite at distance 0
CELL_APART = 10.0    # a different recurrent cell: ten doublings away
SUITES = ("gemm", "conv", "rnn")
PUBLISHED_ELEMENT = {"fp32": 4, "fp16-mixed": 2}
COMPUTE_CLASSES = frozenset(SUITE_OF)   # classes with a DeepBench suite: their curves also see the FLOPs
NO_FLOOR = "no small GEMM timed: ops no kernel covers are costed at the roofline alone (small ones underestimated)"


@dataclass(frozen=True)
class Row:
    """One timed kernel of a device."""
    suite: str
    pass_name: str
    precision: str
    key: tuple
    problem: Problem
    seconds: float


def key_of(problem: Problem) -> tuple:
    """A problem's key in a device's times: DeepBench's fields, or a replay's call."""
    return problem_key({"suite": problem.suite, "params": problem.ran})


@dataclass
class DeviceModel:
    name: str
    label: str
    kind: str                                   # "published" or "measured"
    peaks: dict[str, float]                     # precision → FLOP/s
    bandwidth: float                            # bytes/s
    source: str
    floor_s: float | None
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)   # rows of its file left out, no floor…
    device_type: str | None = None              # a measured machine's: cpu or cuda
    _exact: dict[tuple, float] = field(default_factory=dict, repr=False)
    _points: dict[tuple, list[tuple[tuple[float, ...], float, Row]]] = field(default_factory=dict, repr=False)
    _curves: dict[tuple, list[tuple[tuple[float, ...], float, Row]]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for row in self.rows:
            self._exact[(row.suite, row.pass_name, row.precision, row.key)] = row.seconds
            roof = self.roofline_s(row.problem, row.pass_name, row.precision)
            if not roof:          # no work counted (a file's zero bytes and FLOPs): no efficiency to fit on
                continue
            if row.problem.replay:        # a replayed call: a point of its class's curve
                p = row.problem.params
                self._curves.setdefault((p["class"], row.precision), []).append(
                    (curve_shape(p["class"], p["flops"], p["bytes"]), roof / row.seconds, row))
            else:
                self._points.setdefault((row.suite, row.pass_name, row.precision), []).append(
                    (shape(row.problem), roof / row.seconds, row))

    # --- building ----------------------------------------------------------------------
    @classmethod
    def published(cls, name: str) -> DeviceModel:
        """A device of DeepBench's published results: its checked sheet, its rated peaks."""
        if name not in DEVICES:
            raise DawnbenchError(f"--device {name}: not a device DeepBench published; use one of {', '.join(DEVICES)}, "
                                 "or a kernels.json `dawnbench kernels` wrote (a machine's own kernel times).")
        spec, checked = devices()[name], sheet(name)
        rows = []
        for (suite, pass_name, precision, key), entry in checked.times.items():
            if suite in SUITES:
                rows.append(Row(suite, pass_name, precision, key, _problem(suite, key), entry.seconds))
        floor = min((r.seconds for r in rows if r.suite == "gemm"), default=None)
        notes = [] if floor else [NO_FLOOR]
        if spec.stream_bytes_per_s:
            bandwidth = spec.stream_bytes_per_s
            notes.append(f"memory-bound ops at {bandwidth / 1e9:,.0f} GB/s, a published STREAM-class measurement "
                         f"({spec.stream_source}), and never below the sheet's smallest kernel: DeepBench has no "
                         "memory-bound rows")
        else:
            bandwidth = spec.memory_bytes_per_s
            notes.append(f"memory-bound ops at the rated {bandwidth / 1e9:,.0f} GB/s (no published STREAM-class "
                         "measurement of this device is cited here): an upper bound no kernel reaches, so they are "
                         "predicted fast")
        return cls(name, spec.label, "published", dict(spec.peak_flops), bandwidth,
                   f"{spec.source} (released {spec.released}); times: DeepBench's published results, checked "
                   f"({len(checked.left_out)} rows left out)", floor, rows, notes)

    @classmethod
    def measured(cls, path: Path) -> DeviceModel:
        """A machine's own ``kernels.json``: its timed rows, and the roofs it measured as the peaks."""
        doc, notes = documents.kernels(read_json(Path(path), "kernel result"), Path(path))
        roofs = doc.get("roofs") or {}
        peaks = {p: float(v) for p, v in (roofs.get("flops") or {}).items()}
        bandwidth = float(roofs.get("bandwidth_bytes_per_s") or 0)
        if not peaks or bandwidth <= 0:
            raise DawnbenchError(f"{path}: no measured roofs (flops, bandwidth_bytes_per_s) in it; a kernels.json "
                                 "`dawnbench kernels` wrote has them. Measure again.")
        if "fp32" not in peaks:     # every op without a row of its precision falls back on the fp32 roof
            raise DawnbenchError(f"{path}: no fp32 roof (roofs.flops has {', '.join(sorted(peaks))} only): predict "
                                 "costs every op its rows do not cover at the fp32 roof. Run `dawnbench kernels` "
                                 "with fp32 among its precisions (the default) and pass that file.")
        rows: list[Row] = []
        seen: dict[tuple, Row] = {}
        for r in doc["rows"]:
            if r["suite"] in (*SUITES, "memory") and r.get("median_s") and not r.get("skipped"):
                problem = Problem(r["suite"], r.get("set") or "training", dict(r["params"]),
                                  {"timesteps": r["timesteps_run"]} if r.get("timesteps_run") else None)
                if problem.replay and not problem.params.get("class"):
                    continue
                row = Row(r["suite"], r["pass"], r["precision"], key_of(problem), problem, float(r["median_s"]))
                same = (row.suite, row.pass_name, row.precision, row.key)
                if same in seen:          # the first is kept: a copy never decides a time, said
                    notes.append(f"{path}: a row repeats an earlier one's problem, pass and precision "
                                 f"({row.seconds:.4g} s against {seen[same].seconds:.4g} s): the first is used")
                    continue
                seen[same] = row
                rows.append(row)
        if not rows:
            raise DawnbenchError(f"{path}: no timed GEMM, convolution, RNN or memory-bound row in it: nothing to fit a "
                                 "model of this machine on. Run `dawnbench kernels --quick` (a few minutes) and pass "
                                 "its file.")
        if doc.get("interrupted"):
            notes.append(f"{path} was interrupted before its last row: the rows it lacks fall to the model, the "
                         "curves or the roofline")
        hardware = doc.get("hardware") or {}
        flags = [] if hardware.get("accelerator") else vector_extensions(hardware)
        label = (hardware.get("accelerator") or hardware.get("cpu") or str(path)) + (f" ({', '.join(flags)})" if flags
                                                                                     else "")
        return cls(str(path), str(label), "measured", peaks, bandwidth,
                   f"measured by `dawnbench kernels` ({doc.get('date', 'undated')}): its roofs and rows", None, rows,
                   [*notes, NO_FLOOR], str(hardware.get("device") or roofs.get("device") or "?"))

    # --- the model ---------------------------------------------------------------------
    def precision_for(self, run_precision: str) -> tuple[str, str | None]:
        """The device's precision for a profile's, and a note where it is not the same."""
        if self.kind == "measured":
            if run_precision in self.peaks and any(r.precision == run_precision for r in self.rows):
                return run_precision, None
            return "fp32", f"{self.label} has no {run_precision} kernel rows: predicted with its fp32 rows and roof"
        wanted = PUBLISHED_PRECISION[run_precision]
        if wanted in self.peaks and any(r.precision == wanted for r in self.rows):
            return wanted, None
        return "fp32", f"DeepBench published no {wanted} results for the {self.label}: predicted at fp32"

    def _element(self, precision: str) -> int:
        return PUBLISHED_ELEMENT.get(precision) or ELEMENT_BYTES.get(precision, 4)

    def roofline_s(self, problem: Problem, pass_name: str, precision: str) -> float | None:
        peak = self.peaks.get(precision)
        if not peak:
            return None
        return max(flops(problem, pass_name) / peak, bytes_moved(problem, pass_name, self._element(precision))
                   / self.bandwidth)

    def has_curve(self, cls: str, precision: str) -> bool:
        return bool(self._curves.get((cls, precision)))

    def curve_s(self, cls: str, op_flops: float, op_bytes: float, precision: str,
                leave_out: Row | None = None) -> float | None:
        """One call of an op of class ``cls`` at the class's fitted efficiency (None: no rows of the class)."""
        points = [p for p in self._curves.get((cls, precision), []) if p[2] is not leave_out]
        peak = self.peaks.get(precision) or self.peaks.get("fp32")
        if not points or not peak:
            return None
        roof = max(op_flops / peak, op_bytes / self.bandwidth)
        return roof / _nearest(curve_shape(cls, op_flops, op_bytes), points) if roof > 0 else None

    def efficiency(self, problem: Problem, pass_name: str, precision: str, leave_out: Row | None = None) -> float | None:
        """The fitted efficiency of a kernel of this form (None: the device has no rows of its suite and pass)."""
        points = [p for p in self._points.get((problem.suite, pass_name, precision), [])
                  if leave_out is None or not _same_problem(p[2], leave_out)]
        if not points:
            return None
        return _nearest(shape(problem), points)

    def kernel_s(self, kernel: Kernel, precision: str, leave_out: Row | None = None) -> tuple[float | None, str]:
        """Seconds of one call of ``kernel`` (all its repeats) and how it was found: "published" (the
        device's own time of that problem), "model" (roofline over fitted efficiency) or "none"."""
        problem, pass_name = kernel.problem, kernel.pass_name
        key = key_of(problem)
        exact = self._exact.get((problem.suite, pass_name, precision, key))
        if exact is not None and (leave_out is None or leave_out.key != key or leave_out.pass_name != pass_name):
            return exact * kernel.repeat, "published" if self.kind == "published" else "measured"
        if problem.replay:
            return None, "none"
        roof, eff = self.roofline_s(problem, pass_name, precision), self.efficiency(problem, pass_name, precision,
                                                                                    leave_out)
        if roof is None or not eff:
            return None, "none"
        return roof / eff * kernel.repeat, "model"

    def other_s(self, op_flops: float, op_bytes: float, precision: str) -> float:
        """An op no kernel covers: its roofline time here, never below the device's floor — unless it moves
        and computes nothing (a view, a detach: no kernel is launched; issuing it is the host's floor's)."""
        if op_flops == 0 and op_bytes == 0:
            return 0.0
        peak = self.peaks.get(precision) or self.peaks["fp32"]
        seconds = max(op_flops / peak, op_bytes / self.bandwidth)
        return max(seconds, self.floor_s or 0.0)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "label": self.label, "kind": self.kind,
                "peak_flops": self.peaks, "bandwidth_bytes_per_s": self.bandwidth, "floor_s": self.floor_s,
                "rows": len(self.rows), "source": self.source, "notes": self.notes, "device_type": self.device_type}


def _nearest(here: tuple[float, ...], points: list[tuple[tuple[float, ...], float, Row]]) -> float:
    """The geometric mean of the efficiencies of the ``NEIGHBOURS`` points nearest ``here``, each weighted by
    1 / (its squared distance + ``SOFTENING``)."""
    nearest = sorted((sum((a - b) ** 2 for a, b in zip(here, where)), eff) for where, eff, _ in points)
    weights = [(1 / (d + SOFTENING), eff) for d, eff in nearest[:NEIGHBOURS]]
    return math.exp(sum(w * math.log(eff) for w, eff in weights) / sum(w for w, _ in weights))


def _same_problem(row: Row, held: Row) -> bool:
    """Whether ``row`` goes with the held-out ``held``: the row itself, or — a GEMM — the same m, n and k with other
    transposes (they sit at distance 0 and differ by a few per cent: keeping them would flatter the fit)."""
    if row is held:
        return True
    return row.suite == held.suite == "gemm" and row.precision == held.precision and row.key[:3] == held.key[:3]


def curve_shape(cls: str, op_flops: float, op_bytes: float) -> tuple[float, ...]:
    """A class curve's coordinates: log2 of the bytes moved, and of the FLOPs for a compute class."""
    if cls in COMPUTE_CLASSES:
        return math.log2(op_bytes + 1), math.log2(op_flops + 1)
    return (math.log2(op_bytes + 1),)


def shape(problem: Problem) -> tuple[float, ...]:
    """The coordinates the efficiency is fitted over (see the module docstring)."""
    p, log = problem.ran, math.log2
    if problem.suite == "gemm":
        return log(p["m"]), log(p["n"]), log(p["k"])
    if problem.suite == "conv":
        out_h, out_w = conv_output(p)
        return (log(p["n"]), log(p["c"]), log(p["k"]), log(out_h * out_w), 2 * log(p["filter_h"] * p["filter_w"]),
                2 * log(p["stride_h"]))
    cell = {"vanilla": 0.0, "gru": 1.0, "lstm": 2.0}[p["cell"]] * CELL_APART
    return cell, log(p["hidden"]), log(p["batch"]), 0.5 * log(p["timesteps"])


def _problem(suite: str, key: tuple) -> Problem:
    """A published row's problem from its sheet key."""
    if suite == "gemm":
        m, n, k, a_t, b_t = key
        return Problem("gemm", "training", {"m": m, "n": n, "k": k, "a_transposed": a_t, "b_transposed": b_t})
    if suite == "conv":
        return Problem("conv", "training", dict(zip(CONV_KEYS, key)))
    cell, hidden, batch, timesteps = key
    return Problem("rnn", "training", {"cell": cell, "hidden": hidden, "batch": batch, "timesteps": timesteps})


def device_names(text: str) -> list[str]:
    """``--device``'s list: "all" is DeepBench's published devices (beside others too), a published name is
    matched in any case, and a device named twice is predicted once."""
    names = [d for part in text.split(",") if part for d in (DEVICES if part.lower() == "all" else [part])]
    return list(dict.fromkeys(_published(d) or d for d in names))


def _published(name: str) -> str | None:
    return {d.lower(): d for d in DEVICES}.get(name.lower())


def device_model(name: str) -> DeviceModel:
    """``--device``: a published device's name, or the path of a ``kernels.json``."""
    named = _published(name)
    if named is not None:
        return DeviceModel.published(named)
    path = Path(name)
    folder = path.is_dir()
    if folder:
        path = path / "kernels.json"
    if path.suffix == ".json" and not path.exists():
        what = "a folder without a kernels.json in it" if folder else "no such file"
        raise DawnbenchError(f"--device {name}: {what}. Pass the kernels.json `dawnbench kernels` wrote on a "
                             "machine (`dawnbench kernels --quick --out DIR` writes DIR/kernels.json), or name a "
                             f"device DeepBench published ({', '.join(DEVICES)}).")
    if path.suffix == ".json" or path.is_file():
        return DeviceModel.measured(path)
    raise DawnbenchError(f"--device {name}: neither a device DeepBench published ({', '.join(DEVICES)}) nor a "
                         "kernels.json file, nor a GPU of the datasheet catalog. Name one of those devices, pass the "
                         "kernels.json `dawnbench kernels` wrote on a machine (this one: `dawnbench kernels --quick`), "
                         "or name a catalog GPU (H100, H200, L4, A10G…; gpus: every one) or a datasheet JSON file.")
