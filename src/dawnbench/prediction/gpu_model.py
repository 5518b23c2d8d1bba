"""Per-op time on a GPU from its datasheet, learned from other GPUs' measured kernels (SPEC §24).

    model = kernel_model()                          # learned from every GPU's timings (prediction/neusight/)
    model = kernel_model(leave_out=("Tesla_T4",))   # ... without the T4's: how it is validated
    doc = predict_ops(rows, sheet, model)           # a profile's or census's ops (ops.tsv rows) on a Datasheet

**What it learns from.** NeuSight's single-kernel timings (``prediction/neusight/kernels.csv.gz``: five GPUs,
fp32; MIT, its README says how they were measured): batched and plain matrix multiplies, convolutions,
softmax, layer norm and eleven elementwise ops. Each op goes to one **class** — ``gemm``, ``conv``,
``softmax``, ``layernorm``, ``elementwise`` — and each class has its own model.

**The model of a class.** A kernel's time is held against a physical baseline: the class's **floor** (the
least a kernel of the class took on the GPUs learned from: launch and timing included; the median over
those GPUs of each one's 1st percentile) plus its **roofline time** on the target (the larger of its FLOPs
over the datasheet's peak and its bytes over its bandwidth). What the baseline misses — tiles that leave
SMs idle in a last wave, operands that fit in L2, small rows that cannot fill a warp — is learned in two parts:
each learned GPU's **offset** (the median of log(time / baseline) over its large kernels: how close that GPU
comes to its datasheet at all — a T4 or P4 held to 70 W reaches about a third of its fp32 rate on large GEMMs,
a V100 four fifths), and a gradient-boosted regression (scikit-learn's ``HistGradientBoostingRegressor``) of
what is left on features that are the op's shape *relative to the datasheet*: its roofline times, the waves of
64- and 128-wide tiles over the SM count, its bytes over the L2, its elements per core. No feature names a GPU.
A GPU not learned from takes, for the compute classes (GEMM, convolution), the least offset learned — as close to
its datasheet as the closest-coming learned GPU: an unthrottled GPU at its boost clock, so a card held to a low
power limit (a T4, a P4, an L4) is predicted too fast — and for the memory-bound classes the median (their
achieved bandwidth differs little between the five). No datasheet figure tried foretold a GPU's own offset on the
five (power per SM: nearest in it; the ridge: linear in its log, or nearest); the rule was chosen among four on
the leave-one-GPU-out whole-model errors, which are therefore slightly optimistic (docs/results/datasheet.md says so).

**In a step.** The step's ops are costed one by one and summed (no overlap between kernels: eager PyTorch runs
them one after another on one stream). A kernel does not pay there the floor a lone timing pays (the event and
launch overhead around one kernel): it pays its lone time less the floor plus ``LAUNCH_S``, the launch interval
of back-to-back kernels — never faster than the target's roofline. A convolution's backward is two forward
convolutions of its shape (wrt inputs and wrt weights; one where its FLOPs say it computed only the weights'), a
layer norm's backward twice its forward's traffic, softmax's backward as a softmax of its shape. Ops of no class
(embedding, reductions, batch norm, pooling, the optimizer's multi-tensor kernels) fall to the roofline, never
below ``LAUNCH_S``, named. Lower precisions (bf16, fp16, tf32) take the datasheet's tensor-core rate and half
(or the same) bytes with the efficiency learned in fp32 — an assumption each prediction states.
"""

from __future__ import annotations

import csv
import gzip
import io
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

from dawnbench.analysis.kernel_classes import CONV_FWD, ELEMENTWISE, MATMUL, op_class
from dawnbench.errors import DawnbenchError
from dawnbench.prediction.datasheet import Datasheet, catalog, catalog_name
from dawnbench.profiling.ops import parse_args, parse_shapes

CLASSES = ("gemm", "conv", "softmax", "layernorm", "elementwise")
COMPUTE = ("gemm", "conv")        # classes bound by the SMs' clock, which a power limit holds down
NEUSIGHT_CLASS = {"bmm": "gemm", "linear": "gemm", "conv": "conv", "softmax": "softmax", "ln": "layernorm"}
# elementwise ops: (tensors read and written, 0 arithmetic / 1 division / 2 transcendental)
ELEMENTWISE_KIND = {"add": (3, 0), "mul": (3, 0), "div": (3, 1), "pow": (3, 2), "addu": (2, 0), "mulu": (2, 0),
                    "divu": (2, 1), "powu": (2, 2), "relu": (2, 0), "gelu": (2, 2), "tanh": (2, 2)}
TRANSCENDENTAL = {"gelu", "tanh", "exp", "log", "pow", "sigmoid", "erf", "sin", "cos", "rsqrt", "sqrt", "softplus",
                  "gelu_backward", "tanh_backward", "sigmoid_backward", "silu", "silu_backward", "log1p", "expm1"}
SOFTMAX = {"_softmax", "_log_softmax", "_softmax_backward_data", "_log_softmax_backward_data", "softmax"}
LAYER_NORM = {"native_layer_norm": 1.0, "native_layer_norm_backward": 2.0}
TRAIN_ROWS = 25_000        # rows a class's regression is fitted on (a fixed sample): ~1 s a class on 2 cores
SEED = 0
LAUNCH_S = 5e-6            # a kernel among back-to-back kernels of one stream: the launch interval it cannot beat
#                            (a few µs: NVIDIA's CUDA C++ Best Practices Guide, "Kernel launch overhead")
LARGE = 10.0               # a kernel whose roofline time is this many floors: its GPU's offset is read from these
FP32_BYTES = 4
BYTES = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2}


@dataclass(frozen=True)
class Kernel:
    """One kernel as the model sees it: its class, its shape in NeuSight's terms, FLOPs and bytes."""
    cls: str
    dims: tuple[int, ...]      # gemm (B, M, N, K); conv (B, C_in, C_out, R, size, stride, pad); others (B, H)
    flops: float
    bytes: float
    operands: int = 2          # elementwise: tensors read and written
    kind: int = 0              # elementwise: 0 arithmetic, 1 division, 2 transcendental


def _log2(x: float) -> float:
    return math.log2(max(x, 1e-30))


def features(k: Kernel, sheet: Datasheet, peak: float) -> list[float]:
    """The regression's inputs: the kernel's shape relative to the datasheet (no GPU's identity)."""
    f = sheet.figures
    sms, cores = f["Num_Sm"], f["Num_Sm"] * f["Core_Per_SM"]
    compute_s, memory_s = k.flops / peak, k.bytes / sheet.bandwidth
    out = [_log2(compute_s), _log2(memory_s), _log2(max(compute_s, memory_s)), _log2(k.bytes / sheet.l2_bytes)]
    if k.cls == "gemm":
        b, m, n, kk = k.dims
        out += [_log2(b), _log2(m), _log2(n), _log2(kk)]
        for tile in (64, 128):
            tiles = b * math.ceil(m / tile) * math.ceil(n / tile)
            out += [_log2(tiles / sms), tiles / (math.ceil(tiles / sms) * sms)]
    elif k.cls == "conv":
        b, c_in, c_out, r, size, stride, pad = k.dims
        side = max((size + 2 * pad - r) // stride + 1, 1)
        tiles = b * math.ceil(side * side / 128) * math.ceil(c_out / 128)
        out += [_log2(b), _log2(c_in), _log2(c_out), r, _log2(size), stride, pad, _log2(side),
                _log2(tiles / sms), tiles / (math.ceil(tiles / sms) * sms)]
    else:
        b, h = k.dims
        out += [_log2(b * h / cores), _log2(b / sms), _log2(h), k.operands, k.kind]
    return out


def _gemm(b: int, m: int, n: int, k: int, element: int) -> Kernel:
    """``b`` multiplies of an m×k by a k×n matrix: their FLOPs and least bytes."""
    return Kernel("gemm", (b, m, n, k), 2.0 * b * m * n * k, float(element * b * (m * k + k * n + m * n)))


def _conv(x: list[int], w: list[int], stride: int, pad: int, element: int) -> Kernel:
    """A 2-D convolution of an N×C×H×W input by a K×C×R×S filter, in NeuSight's terms (its height and the filter's
    height stand for both sides: NeuSight timed square ones)."""
    n, c, h, width = x
    side = (h + 2 * pad - w[2]) // stride + 1
    return Kernel("conv", (n, c, w[0], w[2], h, stride, pad), 2.0 * n * w[0] * side * side * c * w[2] * w[3],
                  float(element * (n * c * h * width + w[0] * c * w[2] * w[3] + n * w[0] * side * side)))


def _neusight_kernel(op: str, dims: list[int]) -> Kernel:
    """A NeuSight timing's kernel (fp32) in the model's terms."""
    cls = NEUSIGHT_CLASS.get(op, "elementwise")
    if cls == "gemm":
        b, m, n, k = dims
        # linear: input (B, M, K) by a weight (N, K), one GEMM of B·M rows
        return _gemm(1, b * m, n, k, FP32_BYTES) if op == "linear" else _gemm(b, m, n, k, FP32_BYTES)
    if cls == "conv":
        b, c_in, c_out, r, size, stride, pad = dims
        return _conv([b, c_in, size, size], [c_out, c_in, r, r], stride, pad, FP32_BYTES)
    b, h = dims
    if cls in ("softmax", "layernorm"):
        return Kernel(cls, (b, h), 5.0 * b * h, 2.0 * FP32_BYTES * b * h)
    operands, kind = ELEMENTWISE_KIND[op]
    return Kernel(cls, (b, h), float(b * h), float(operands * FP32_BYTES * b * h), operands, kind)


@lru_cache(maxsize=1)
def timings() -> dict[str, list[tuple[str, Kernel, float]]]:
    """NeuSight's kernel timings by class: (GPU's catalog name, kernel, seconds)."""
    raw = resources.files(__package__).joinpath("neusight/kernels.csv.gz").read_bytes()
    out: dict[str, list[tuple[str, Kernel, float]]] = {c: [] for c in CLASSES}
    rows = csv.reader(io.TextIOWrapper(gzip.GzipFile(fileobj=io.BytesIO(raw)), "utf-8"))
    next(rows)                                           # op, gpu, d0 … d6, latency_ms
    gpus: dict[str, str | None] = {}
    for op, name, *dims, latency in rows:
        gpu = gpus.setdefault(name, catalog_name(name))
        if gpu is None:
            raise DawnbenchError(f"prediction/neusight/kernels.csv.gz names GPU {name!r}, not in the catalog: the "
                                 "package is damaged; reinstall it.")
        kernel = _neusight_kernel(op, [int(d) for d in dims if d])
        out[kernel.cls].append((gpu, kernel, float(latency) / 1e3))
    return out


class ClassModel:
    """One class's floor and regression, fitted on the timings of the GPUs not left out."""

    def __init__(self, cls: str, rows: list[tuple[str, Kernel, float]]) -> None:
        from sklearn.ensemble import HistGradientBoostingRegressor
        self.cls = cls
        sheets = catalog()
        gpus = sorted({g for g, _, _ in rows})
        self.gpus = gpus
        self.floor_s = float(np.median([np.percentile([s for g, _, s in rows if g == gpu], 1) for gpu in gpus]))
        fp32 = {gpu: sheets[gpu].peak("fp32")[0] for gpu in gpus}
        bases = [self.baseline(kernel, sheets[gpu], fp32[gpu]) for gpu, kernel, _ in rows]
        targets = [math.log(seconds / base) for (_, _, seconds), base in zip(rows, bases)]
        # Each GPU's own offset (the median of its log(time / baseline)): how far its kernels stay from its
        # datasheet at large; the regression learns the shape's part on top of it.
        large = [max(k.flops / fp32[g], k.bytes / sheets[g].bandwidth) > LARGE * self.floor_s for g, k, _ in rows]
        self.offsets = {gpu: float(np.median([t for (g, _, _), t, big in zip(rows, targets, large) if g == gpu and big]
                                             or [t for (g, _, _), t in zip(rows, targets) if g == gpu]))
                        for gpu in gpus}
        rng = np.random.default_rng(SEED)
        picked = rng.choice(len(rows), TRAIN_ROWS, replace=False) if len(rows) > TRAIN_ROWS else range(len(rows))
        x, y = [], []
        for i in picked:
            gpu, kernel, _ = rows[i]
            x.append(features(kernel, sheets[gpu], fp32[gpu]) + [_log2(bases[i] / self.floor_s)])
            y.append(targets[i] - self.offsets[gpu])
        self.regression = HistGradientBoostingRegressor(max_iter=200, random_state=SEED).fit(np.array(x), np.array(y))

    def offset(self, sheet: Datasheet) -> float:
        """A GPU's offset: its own where it was learned from, else the least of the learned GPUs' — as close to its
        datasheet as the closest-coming learned GPU got: an unthrottled, well-fed GPU (see the module docstring)."""
        if sheet.name in self.offsets:
            return self.offsets[sheet.name]
        learned = list(self.offsets.values())
        return min(learned) if self.cls in COMPUTE else float(np.median(learned))

    def baseline(self, kernel: Kernel, sheet: Datasheet, peak: float) -> float:
        return self.floor_s + max(kernel.flops / peak, kernel.bytes / sheet.bandwidth)

    def seconds(self, kernels: list[Kernel], sheet: Datasheet, peak: float, in_step: bool = False) -> list[float]:
        """Each kernel's time on ``sheet`` as timed alone, never below its roofline or the class's floor; ``in_step``:
        as one of a step's back-to-back kernels — less the floor a lone timing pays, plus ``LAUNCH_S``."""
        if not kernels:
            return []
        bases = [self.baseline(k, sheet, peak) for k in kernels]
        x = np.array([features(k, sheet, peak) + [_log2(b / self.floor_s)] for k, b in zip(kernels, bases)])
        predicted = np.exp(self.regression.predict(x) + self.offset(sheet)) * np.array(bases)
        roofs = [max(k.flops / peak, k.bytes / sheet.bandwidth) for k in kernels]
        if in_step:
            return [max(float(p) - self.floor_s + LAUNCH_S, r, LAUNCH_S) for p, r in zip(predicted, roofs)]
        return [max(float(p), r, self.floor_s) for p, r in zip(predicted, roofs)]


class KernelModel:
    """Every class's model, fitted without the GPUs in ``leave_out``."""

    def __init__(self, leave_out: tuple[str, ...] = ()) -> None:
        left = {catalog_name(g) or g for g in leave_out}
        self.leave_out = tuple(sorted(left))
        self.classes = {cls: ClassModel(cls, [r for r in rows if r[0] not in left]) for cls, rows in timings().items()}
        self.learned_from = sorted({g for m in self.classes.values() for g in m.gpus})

    def kernel_s(self, kernels: list[Kernel], sheet: Datasheet, precision: str = "fp32", in_step: bool = False
                 ) -> list[float]:
        """The time of each kernel (any classes) on ``sheet`` in ``precision`` (``in_step``: see ClassModel.seconds)."""
        peak, _ = sheet.peak(precision)
        out = [0.0] * len(kernels)
        for cls, model in self.classes.items():
            index = [i for i, k in enumerate(kernels) if k.cls == cls]
            for i, s in zip(index, model.seconds([kernels[i] for i in index], sheet, peak, in_step)):
                out[i] = s
        return out

    def describe(self) -> dict[str, Any]:
        return {"learned_from": self.learned_from, "left_out": list(self.leave_out),
                "floors_s": {c: m.floor_s for c, m in self.classes.items()},
                "source": "NeuSight's single-kernel timings (Lee, Phanishayee, Mahajan, ASPLOS 2025; MIT), fp32"}


@lru_cache(maxsize=8)
def kernel_model(leave_out: tuple[str, ...] = ()) -> KernelModel:
    return KernelModel(tuple(sorted(leave_out)))


# --- a profile's or census's op as kernels -------------------------------------------------------------------
def op_kernels(row: dict[str, Any]) -> list[Kernel]:
    """The kernels one call of an ``ops.tsv`` row runs, in the model's classes; none where it has no class (or its
    shapes do not make one: the roofline takes it, named by ``predict_ops``)."""
    base = row["op"].split("::")[-1].split(".")[0]
    try:
        dims, arg_values = parse_shapes(row["shapes"]), parse_args(row.get("args") or "")
    except ValueError:
        return []
    size = BYTES.get(row["precision"], FP32_BYTES)
    per_call_flops = (row.get("flops") or 0.0) / row["calls"]
    per_call_bytes = (row.get("bytes") or 0.0) / row["calls"]
    cls = op_class(row["op"])
    if cls == MATMUL and base in ("mm", "addmm", "bmm", "baddbmm"):
        mats = [d for d in dims if len(d) in (2, 3)]
        mats = mats[-2:] if base in ("addmm", "baddbmm") else mats[:2]
        if len(mats) != 2 or len(mats[0]) != len(mats[1]) or mats[0][-1] != mats[1][-2]:
            return []
        (*batch, m, k), (*_, _, n) = mats
        return [_gemm(batch[0] if batch else 1, m, n, k, size)]
    if cls == CONV_FWD or base == "convolution_backward":
        x, w = (dims[0], dims[1]) if cls == CONV_FWD else (dims[1], dims[2]) if len(dims) >= 3 else ([], [])
        if len(x) != 4 or len(w) != 4 or arg_values.get("groups", [1]) != [1]:
            return []
        forward = _conv(x, w, arg_values.get("stride", [1])[0], arg_values.get("padding", [0])[0], size)
        both = cls != CONV_FWD and per_call_flops > 1.5 * forward.flops   # wrt inputs too, not the weights' alone
        return [forward, forward] if both else [forward]
    if base in SOFTMAX or base in LAYER_NORM:
        x = dims[0] if dims else []
        if not x:
            return []
        h, b = x[-1], math.prod(x[:-1]) or 1
        return [Kernel("softmax" if base in SOFTMAX else "layernorm", (b, h), 5.0 * b * h,
                       LAYER_NORM.get(base, 1.0) * 2.0 * size * b * h)]
    if cls == ELEMENTWISE and per_call_bytes > 0:
        largest = max(dims, key=lambda d: math.prod(d), default=[])
        elements = math.prod(largest) if largest else 1
        h, b = (largest[-1], elements // largest[-1]) if largest else (1, 1)
        operands = max(2, round(per_call_bytes / (size * elements))) if elements else 2
        kind = 2 if base.rstrip("_") in TRANSCENDENTAL else 1 if base.startswith("div") else 0
        return [Kernel("elementwise", (max(b, 1), max(h, 1)), float(elements), per_call_bytes, operands, kind)]
    return []


def predict_ops(rows: list[dict[str, Any]], sheet: Datasheet, model: KernelModel) -> dict[str, Any]:
    """A step's ops (rows of ``ops.tsv``: op, shapes, args, precision, calls, flops, bytes, and a census's phase)
    on ``sheet``: seconds per phase and per class, what each part rests on, and the ops the model has no class
    for (costed at the roofline, never below ``LAUNCH_S`` a call)."""
    notes: set[str] = set()
    seconds = [0.0] * len(rows)
    rests = ["roofline"] * len(rows)
    by_precision: dict[str, list[tuple[int, Kernel]]] = {}
    for i, row in enumerate(rows):
        found = op_kernels(row)
        by_precision.setdefault(row["precision"], []).extend((i, k) for k in found)
        if found:
            rests[i] = "model"
    for precision, owned in by_precision.items():
        peak, note = sheet.peak(precision)
        if note:
            notes.add(note)
        if precision != "fp32" and owned:
            notes.add(f"{precision} ops: at the datasheet's {precision} rate with the efficiency learned from fp32 "
                      "kernels (NeuSight measured fp32 only)")
        for (i, _), s in zip(owned, model.kernel_s([k for _, k in owned], sheet, precision, in_step=True)):
            seconds[i] += s * rows[i]["calls"]
    unclassed: dict[str, float] = {}
    for i, row in enumerate(rows):
        if rests[i] == "model":
            continue
        per_call_flops, per_call_bytes = (row.get("flops") or 0.0) / row["calls"], (row.get("bytes") or 0.0) / row["calls"]
        if per_call_flops == 0 and per_call_bytes == 0:
            rests[i] = "nothing (a view: no kernel)"
            continue
        peak, _ = sheet.peak(row["precision"])
        seconds[i] = max(per_call_flops / peak, per_call_bytes / sheet.bandwidth, LAUNCH_S) * row["calls"]
        unclassed[op_class(row["op"])] = unclassed.get(op_class(row["op"]), 0.0) + seconds[i]
    phases: dict[str, float] = {}
    classes: dict[str, float] = {}
    rests_on: dict[str, float] = {}
    for row, s, how in zip(rows, seconds, rests):
        phases[row.get("phase") or "step"] = phases.get(row.get("phase") or "step", 0.0) + s
        cls = op_class(row["op"])
        classes[cls] = classes.get(cls, 0.0) + s
        rests_on[how] = rests_on.get(how, 0.0) + s
    total = sum(seconds)
    if unclassed:
        notes.add(f"{sheet.name}: at the roofline (no class of the kernel model covers them; never below "
                  f"{LAUNCH_S * 1e6:.3g} µs a call): " + ", ".join(f"{cls} {s * 1e3:.3g} ms" for cls, s in
                                                                 sorted(unclassed.items(), key=lambda kv: -kv[1])))
    return {"op_s": total, "phases": phases, "classes": dict(sorted(classes.items(), key=lambda kv: -kv[1])),
            "rests_on": {k: {"seconds": v, "share": v / total if total else None} for k, v in rests_on.items()},
            "notes": sorted(notes)}
