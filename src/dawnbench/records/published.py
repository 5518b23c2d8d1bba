"""DeepBench's published times, read and checked before anything is compared with them,
and the devices they were measured on.

    sheet("V100").times[("gemm", "forward", "fp32", (1760, 16, 1760, False, False))]   # Entry(3.8e-05, None)
    sheet("V100").left_out                                   # [{"suite", "pass", "precision", "params", "reason"}]
    devices()["V100"].peak_flops["fp32"]                     # 1.57e13, with its source beside it

Published rows are data to check, not truth. A row is **left out** of every comparison, with its
reason, when

* its own columns disagree: a GEMM's or recurrent pass's time against the sheet's TFLOP/s for the
  same pass (the sheets computed that column from the rounded time with DeepBench's counts:
  2·m·n·k, 2·g·h²·n·t — they agree within ``ROUNDING`` where the row is whole); a convolution's
  three pass times against its total (the total is the sum of the three, or of the forward and the
  backward wrt parameters where the sheet leaves the input gradient out); an all-reduce's time
  against its bandwidth column (bytes / time is the algorithm bandwidth, and the sheets give
  either it or the bus bandwidth, at most 2× it — so the column must lie within
  ``ALLREDUCE_BAND`` of bytes / time);
* it implies more than the device's physical peak: a GEMM or recurrent pass faster than the
  device's rated FLOP/s of that precision (``devices.csv``, each figure with its source) times
  ``BOOST_MARGIN`` (GPU Boost runs consumer cards above their rated boost clock — the 1080 Ti's
  sheet reaches 107 % of its rating on a GEMM — but no card sustains a quarter more). Convolutions
  are not held to the peak: Winograd and FFT algorithms do fewer multiplications than the direct
  count 2·n·k·p·q·c·r·s, so a convolution above the direct peak is not impossible.

Where a sheet holds several all-reduce algorithms for one (floats, ranks), the fastest row that
passes the checks is used, and the entry names its algorithm. A cell that is not a positive number
(empty, ``N/A*``, ``#DIV/0!``, 0) is "not published": nothing to check, nothing to compare.
Where a workbook leaves a convolution's ``filter_w``/``filter_h`` empty it gives the filter as
``r`` (height) and ``s`` (width), which are used instead.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from dawnbench.opcalls.calls import kernel_identity
from dawnbench.records.problems import CELL_GATES, data_text

DEVICES = ("V100", "P100", "TitanXp", "1080Ti", "M40", "T4", "KNL7250")
# The published precision a row of ours is compared with: DeepBench published fp32 and "fp16-mixed"
# (fp16 inputs and multiply, fp32 accumulation), the one 16-bit precision it has.
PUBLISHED_PRECISION = {"fp32": "fp32", "tf32": "fp32", "bf16": "fp16-mixed", "fp16": "fp16-mixed"}
ROUNDING = 0.02            # time vs TFLOP/s of one row: the sheets' columns agree this closely where whole
CONV_TOTAL_SLACK_MS = 0.0015   # the pass times are rounded to 3 decimals of a millisecond
BOOST_MARGIN = 1.25        # above the rated peak by more than this is physically impossible
ALLREDUCE_BAND = (1 / 1.1, 2.2)   # bandwidth column / (bytes / time): algbw (1×) to busbw (< 2×), 10 % rounding
CONV_KEYS = ("w", "h", "c", "n", "k", "filter_w", "filter_h", "pad_w", "pad_h", "stride_w", "stride_h")


@dataclass(frozen=True)
class Device:
    """One published device: its rated peaks and where each figure comes from."""
    name: str
    label: str
    peak_flops: dict[str, float]          # "fp32" / "fp16-mixed" → FLOP/s at the rated boost clock
    memory_bytes_per_s: float
    link: str
    released: str
    source: str
    stream_bytes_per_s: float | None = None   # a published STREAM-class measurement of the device, where one is cited
    stream_source: str = ""


@cache
def devices() -> dict[str, Device]:
    """``devices.csv``: the seven published devices' rated peaks, each row with its source and date."""
    text = resources.files("dawnbench.kernels").joinpath("devices.csv").read_text(encoding="utf-8")
    out = {}
    for r in csv.DictReader(io.StringIO(text)):
        peaks = {"fp32": float(r["fp32_tflops"]) * 1e12}
        if r["fp16_tflops"]:
            peaks["fp16-mixed"] = float(r["fp16_tflops"]) * 1e12
        out[r["device"]] = Device(r["device"], r["name"], peaks, float(r["memory_gbps"]) * 1e9, r["link"],
                                  r["released"], r["source"],
                                  float(r["stream_gbps"]) * 1e9 if r.get("stream_gbps") else None,
                                  r.get("stream_source") or "")
    return out


@dataclass(frozen=True)
class Entry:
    seconds: float
    algorithm: str | None = None          # all-reduce: which of the sheet's algorithms this time is


@dataclass
class Sheet:
    """One device's published times that passed the checks, and the rows left out with their reasons."""
    device: str
    times: dict[tuple, Entry] = field(default_factory=dict)
    rejected: dict[tuple, str] = field(default_factory=dict)     # key → why (what our rows would have met)
    left_out: list[dict[str, Any]] = field(default_factory=list)


def problem_key(row: dict[str, Any]) -> tuple:
    """The published sheets' key of one of our rows: its problem's fields (all-reduce: size and ranks)."""
    p = row["params"]
    if "call" in p:           # a replayed call of the applications set: no sheet has it
        return ("call", kernel_identity(p["call"]))
    if row["suite"] == "gemm":
        return (p["m"], p["n"], p["k"], bool(p["a_transposed"]), bool(p["b_transposed"]))
    if row["suite"] == "conv":
        return tuple(p[k] for k in CONV_KEYS)
    if row["suite"] == "rnn":
        return (p["cell"], p["hidden"], p["batch"], p["timesteps"])
    return (p["floats"], row.get("world_size"))


def _number(text: str | None) -> float | None:
    """A positive, finite number, or None for a cell that publishes nothing."""
    try:
        value = float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) and value > 0 else None


def _ms(text: str | None) -> float | None:
    value = _number(text)
    return value / 1000 if value is not None else None


def _rows(name: str, device: str) -> list[dict[str, str]]:
    return [r for r in csv.DictReader(io.StringIO(data_text(name))) if r["device"] == device]


@cache
def sheet(device: str) -> Sheet:
    """``device``'s published training-set times, checked (see the module docstring)."""
    # Long: one section per published file (GEMM, convolution, RNN, all-reduce), each with its columns and checks;
    # the checks close over the sheet they fill.
    out = Sheet(device)
    spec = devices()[device]

    def keep(suite: str, pass_name: str, precision: str, key: tuple, params: dict[str, Any],
             seconds: float | None, why: str | None, algorithm: str | None = None) -> None:
        if seconds is None:
            return
        full = (suite, pass_name, precision, key)
        if why:
            out.rejected.setdefault(full, why)
            out.left_out.append({"suite": suite, "pass": pass_name, "precision": precision, "params": params,
                                 "reason": why})
        elif full not in out.times or seconds < out.times[full].seconds:
            out.times[full] = Entry(seconds, algorithm)

    def over_peak(flops: float, seconds: float, precision: str) -> str | None:
        peak = spec.peak_flops.get(precision)
        if peak is None or flops / seconds <= peak * BOOST_MARGIN:
            return None
        return (f"{flops / seconds / 1e12:.1f} TFLOP/s is above the {spec.label}'s physical peak "
                f"({peak / 1e12:g} TFLOP/s {precision}, plus {BOOST_MARGIN - 1:.0%} for boost clocks)")

    def columns(flops: float, seconds: float, column: str | None, name: str) -> str | None:
        stated = _number(column)
        if stated is None:
            return None
        implied = flops / seconds / 1e12
        if abs(implied / stated - 1) <= ROUNDING:
            return None
        return (f"its {name} time {seconds * 1e3:g} ms means {implied:.3g} TFLOP/s, its TFLOP/s column "
                f"says {stated:.3g}")

    for r in _rows("published_gemm.csv", device):
        params = {"m": int(r["m"]), "n": int(r["n"]), "k": int(r["k"]), "a_transposed": r["a_transposed"] == "T",
                  "b_transposed": r["b_transposed"] == "T"}
        flops, seconds = 2.0 * params["m"] * params["n"] * params["k"], _ms(r["time_ms"])
        why = seconds and (columns(flops, seconds, r["tflops"], "") or over_peak(flops, seconds, r["precision"]))
        keep("gemm", "forward", r["precision"], tuple(params.values()), params, seconds, why or None)

    for r in _rows("published_conv.csv", device):
        r = {**r, "filter_w": r["filter_w"] or r["s"], "filter_h": r["filter_h"] or r["r"]}
        try:
            params = {k: int(r[k]) for k in CONV_KEYS}
        except (TypeError, ValueError):
            continue
        times = {p: _ms(r[c]) for p, c in (("forward", "fwd_ms"), ("backward_inputs", "bwd_inputs_ms"),
                                           ("backward_params", "bwd_params_ms"))}
        why = _conv_total(times, _ms(r["time_ms"]) or _ms(r["total_ms"]))
        for pass_name, seconds in times.items():
            keep("conv", pass_name, r["precision"], tuple(params.values()), params, seconds, why)

    for r in _rows("published_rnn.csv", device):
        params = {"cell": r["cell"], "hidden": int(r["hidden"]), "batch": int(r["n"]),
                  "timesteps": int(r["timesteps"])}
        one = 2.0 * CELL_GATES[params["cell"]] * params["hidden"] ** 2 * params["batch"] * params["timesteps"]
        key, precision = tuple(params.values()), r["precision"]
        checked = {}
        for name, column, rate in (("forward", "fwd_ms", "tflops_fwd"), ("backward wrt inputs", "bwd_inputs_ms",
                                   "tflops_bwd_inputs"), ("backward wrt parameters", "bwd_params_ms",
                                   "tflops_bwd_params"), ("backward", "bwd_ms", "tflops_bwd")):
            seconds = _ms(r[column])
            checked[name] = (seconds, seconds and (columns(one, seconds, r[rate], name)
                                                   or over_peak(one, seconds, precision)) or None)
        keep("rnn", "forward", precision, key, params, *checked["forward"])
        (inputs, why_i), (weights, why_w) = checked["backward wrt inputs"], checked["backward wrt parameters"]
        if inputs and weights:   # our backward is one autograd pass: both gradients
            keep("rnn", "backward", precision, key, params, inputs + weights, why_i or why_w)
        else:
            keep("rnn", "backward", precision, key, params, *checked["backward"])

    for r in _rows("published_allreduce.csv", device):
        params = {"floats": int(r["floats"]), "ranks": int(r["ranks"]), "algorithm": r["algorithm"].strip()}
        seconds = _ms(r["time_ms"])
        keep("allreduce", "allreduce", r["precision"], (params["floats"], params["ranks"]), params, seconds,
             seconds and _allreduce_columns(params["floats"], params["ranks"], seconds, r["gb_per_s"]),
             params["algorithm"])
    return out


def _conv_total(times: dict[str, float | None], total: float | None) -> str | None:
    forward, inputs, weights = times["forward"], times["backward_inputs"], times["backward_params"]
    if total is None or forward is None or weights is None:
        return None
    sums = [forward + weights + inputs] if inputs else []
    sums.append(forward + weights)
    slack = CONV_TOTAL_SLACK_MS / 1000 + 0.01 * total
    if any(abs(s - total) <= slack for s in sums):
        return None
    return (f"its passes sum to {sums[0] * 1e3:.3f} ms, its total says {total * 1e3:.3f} ms")


def _allreduce_columns(floats: int, ranks: int, seconds: float, column: str | None) -> str | None:
    stated = _number(column)
    if stated is None:
        return None
    algbw = floats * 4 / seconds / 1e9
    low, high = ALLREDUCE_BAND
    if low <= stated / algbw <= high:
        return None
    return (f"its time {seconds * 1e3:.4g} ms for {floats * 4 / 1e6:.4g} MB means {algbw:,.1f} GB/s of "
            f"algorithm bandwidth ({algbw * 2 * (ranks - 1) / ranks:,.1f} GB/s on the bus), its bandwidth "
            f"column says {stated:.3g} GB/s")
