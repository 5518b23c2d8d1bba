"""Per-op time on a GPU from its datasheet, learned from other GPUs' measured kernels.

    model = kernel_model()                          # learned from every GPU's timings and whole-model measurements
    model = kernel_model(leave_out=("T4",))         # ... without anything measured on the T4: how it is validated
    doc = predict_ops(rows, sheet, model)           # a profile's or census's ops (ops.tsv rows) on a Datasheet

**What it learns from** (``kernel_data.py``): NeuSight's fp32 single-kernel timings of five GPUs, DeepBench's
fp16 tensor-core GEMM and convolution times of two, and NeuSight's whole-model measurements of the same five GPUs.

**A kernel's time** is held against a physical baseline: its class's **floor** (the median over the learned GPUs
of each one's 1st-percentile time: launch and timing included) plus its **roofline time** on the target (the larger
of its FLOPs over the datasheet's peak in its precision and its bytes over the bandwidth). What the baseline misses
is learned in two parts:

* the GPU's **offset** — how close it comes to its datasheet at all (``efficiency.py``): a learned GPU's own, the
  median of log(time / baseline) over its large kernels; any other's predicted from its power per FLOP;
* a **shape** term — a gradient-boosted regression (scikit-learn's ``HistGradientBoostingRegressor``) of what is
  left, on features that are the op's shape *relative to the datasheet* (its arithmetic intensity against the
  ridge, its time in floors up to ``CAP_FLOORS``, the waves of 64- and 128-wide tiles over the SMs, its bytes over
  the L2, its elements per core; no feature names a GPU, none is an absolute time). It is fitted to the **median**
  (absolute-error loss) over the GPUs, on kernels whose roofline time is at most ``STATIONARY_S``: a passively cooled
  card timed alone on a long kernel throttles (the P4 and P100 lose half their rate past ~20 ms), which is the card's
  and its chassis', not a shape's.

**In a step.** Kernels run back to back: a kernel pays its lone time less the floor plus ``LAUNCH_S``, never less
than its roofline. NeuSight's whole models run faster than their kernels timed alone (the A100 by 3 %, the T4 by
a fifth); each learned GPU's **in-step shift** — the median of log(measured / predicted) over its whole models —
is added to its offsets, and the offsets an unseen GPU is predicted from are those shifted ones.

**Tensor cores.** A matrix multiply or convolution in bf16, fp16 or tf32 is held against the datasheet's
tensor-core rate by a model of its own, fitted the same way on DeepBench's fp16 times (``kernel_data.py``): its
floor, its shape term, its offsets (the V100 holds its clock; the 70 W T4 reaches three fifths of its rate), predicted
for any other GPU from its power per tensor FLOP as in fp32 — never assumed equal to fp32's. No in-step shift is
added there (NeuSight's whole models calibrate NeuSight's kernel timings, not DeepBench's).

**Ops of no class** (embedding, reductions, batch norm, pooling, casts) run at the bandwidth the GPU's elementwise
kernels reach, a batch norm's bytes counted as the passes it makes over its input (``PASSES``); a census's
**multi-tensor** ops (the optimizer) launch a few kernels over all parameters (``kernel_data.launches``), each paying
``LAUNCH_S``, their bytes at the same bandwidth.
"""

from __future__ import annotations

import hashlib
import math
import pickle
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from dawnbench.data.cache import keep, kept, trusted_file
from dawnbench.prediction.efficiency import Efficiency
from dawnbench.prediction.kernel_data import (
    Kernel,
    launches,
    op_kernels,
    tensor_timings,
    timings,
)
from dawnbench.records.datasheet import Datasheet, catalog
from dawnbench.records.kernel_classes import shares

COMPUTE = ("gemm", "conv")        # classes bound by the SMs' clock, which a power limit holds down
# Ops of no class that read their input more than once: a batch norm in training first reduces its input to the
# batch statistics, then normalises it (two reads, one write, where the census counts one of each); its backward
# reduces the input and the gradient, then reads both again to write the input's gradient (four reads, one write,
# where the census counts two and one) — PyTorch's CUDA batch norm (aten/src/ATen/native/cuda/Normalization.cuh)
PASSES = {"native_batch_norm": 1.5, "_native_batch_norm_legit": 1.5, "_batch_norm_with_update": 1.5,
          "cudnn_batch_norm": 1.5, "native_batch_norm_backward": 5 / 3, "batch_norm_backward": 5 / 3,
          "cudnn_batch_norm_backward": 5 / 3}
TENSOR = ("bf16", "fp16", "tf32")
TRAIN_ROWS = 25_000        # rows a class's regression is fitted on (a fixed sample): ~1 s a class on 2 cores
SEED = 0
LAUNCH_S = 5e-6            # a kernel among back-to-back kernels of one stream: the launch interval it cannot beat
#                            (a few µs: NVIDIA's CUDA C++ Best Practices Guide, "Kernel launch overhead")
LARGE = 10.0               # a kernel whose roofline time is this many floors: its GPU's offset is read from these
STATIONARY_S = 0.02        # kernels learned from: at most this roofline time (see the module docstring)
CAP_FLOORS = 16.0          # the shape term sees a kernel's time in floors up to this: beyond, only its shape


def _log2(x: float) -> float:
    return math.log2(max(x, 1e-30))


def features(k: Kernel, sheet: Datasheet, peak: float, floor_s: float) -> list[float]:
    """The shape term's inputs: the kernel's shape relative to the datasheet (no GPU's identity, no absolute time)."""
    f = sheet.figures
    sms, cores = f["Num_Sm"], f["Num_Sm"] * f["Core_Per_SM"]
    compute_s, memory_s = k.flops / peak, k.bytes / sheet.bandwidth
    out = [_log2(compute_s / max(memory_s, 1e-30)), min(_log2((floor_s + max(compute_s, memory_s)) / floor_s),
                                                       math.log2(CAP_FLOORS)), _log2(k.bytes / sheet.l2_bytes)]
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


def roofline_s(k: Kernel, sheet: Datasheet, peak: float) -> float:
    return max(k.flops / peak, k.bytes / sheet.bandwidth)


def offsets_of(rows: list[tuple[str, Kernel, float]], peak_of: dict[str, float], floor_s: float) -> dict[str, float]:
    """Each GPU's offset: the median of log(time / baseline) over its large kernels (all of them where none is)."""
    sheets = catalog()
    by_gpu: dict[str, list[tuple[float, bool]]] = {}
    for gpu, kernel, seconds in rows:
        roof = roofline_s(kernel, sheets[gpu], peak_of[gpu])
        by_gpu.setdefault(gpu, []).append((math.log(seconds / (floor_s + roof)), roof > LARGE * floor_s))
    return {gpu: float(np.median([t for t, big in points if big] or [t for t, _ in points]))
            for gpu, points in by_gpu.items()}


@dataclass
class Trees:
    """A fitted ``HistGradientBoostingRegressor`` as its trees alone — what predicting needs, in numpy, so that a
    model read from the cache neither imports scikit-learn (a second of a command's start) nor starts its threads.
    The trees are stacked (one row of nodes each, padded with leaves) and walked all at once, a level a step."""
    baseline: float
    feature: np.ndarray               # trees × nodes: the feature each node splits on
    threshold: np.ndarray             # ... the value it splits at (at most: left)
    left: np.ndarray
    right: np.ndarray
    leaf: np.ndarray                  # whether the node is a leaf (every padding node is)
    value: np.ndarray                 # a leaf's value

    @classmethod
    def of(cls, fitted: Any) -> Trees:
        trees = [tree.nodes for [tree] in fitted._predictors]
        shape = (len(trees), max(len(t) for t in trees))
        out = {"feature": np.zeros(shape, np.intp), "threshold": np.zeros(shape), "left": np.zeros(shape, np.intp),
               "right": np.zeros(shape, np.intp), "leaf": np.ones(shape, bool), "value": np.zeros(shape)}
        for i, nodes in enumerate(trees):
            for name, field in (("feature", "feature_idx"), ("threshold", "num_threshold"), ("left", "left"),
                                ("right", "right"), ("leaf", "is_leaf"), ("value", "value")):
                out[name][i, :len(nodes)] = nodes[field]
        return cls(float(np.ravel(fitted._baseline_prediction)[0]), **out)

    def predict(self, x: np.ndarray) -> np.ndarray:
        """The regression at each row of ``x`` (features never missing: each is a finite number)."""
        trees = np.arange(len(self.leaf))[:, None]
        at = np.zeros((len(self.leaf), len(x)), dtype=np.intp)            # each tree's node for each row
        while not (leaf := self.leaf[trees, at]).all():
            go_left = x[np.arange(len(x))[None, :], self.feature[trees, at]] <= self.threshold[trees, at]
            at = np.where(leaf, at, np.where(go_left, self.left[trees, at], self.right[trees, at]))
        return self.baseline + self.value[trees, at].sum(axis=0)


class ClassModel:
    """One class's floor, its learned GPUs' offsets and its shape term, fitted on the GPUs' timings in ``precision``
    (``fp32``: NeuSight's; ``fp16``: DeepBench's tensor-core times)."""

    def __init__(self, cls: str, rows: list[tuple[str, Kernel, float]], precision: str = "fp32") -> None:
        from sklearn.ensemble import HistGradientBoostingRegressor
        self.cls = cls
        sheets = catalog()
        self.gpus = sorted({g for g, _, _ in rows})
        self.floor_s = float(np.median([np.percentile([s for g, _, s in rows if g == gpu], 1) for gpu in self.gpus]))
        peak = {gpu: sheets[gpu].peak(precision)[0] for gpu in self.gpus}
        self.offsets = offsets_of(rows, peak, self.floor_s)
        stationary = [r for r in rows if roofline_s(r[1], sheets[r[0]], peak[r[0]]) <= STATIONARY_S]
        rng = np.random.default_rng(SEED)
        picked = rng.choice(len(stationary), TRAIN_ROWS, replace=False) if len(stationary) > TRAIN_ROWS else \
            range(len(stationary))
        x, y = [], []
        for i in picked:
            gpu, kernel, seconds = stationary[i]
            base = self.floor_s + roofline_s(kernel, sheets[gpu], peak[gpu])
            x.append(features(kernel, sheets[gpu], peak[gpu], self.floor_s))
            y.append(math.log(seconds / base) - self.offsets[gpu])
        with threadpool_limits(1):        # OpenMP's threads cost more than they give at these sizes (10x, 2 cores)
            fitted = HistGradientBoostingRegressor(max_iter=200, random_state=SEED, loss="absolute_error",
                                                   min_samples_leaf=min(20, max(len(x) // 20, 2))).fit(
                np.array(x), np.array(y))
        self.regression = Trees.of(fitted)

    def seconds(self, kernels: list[Kernel], sheet: Datasheet, peak: float, offset: float, in_step: bool = False
                ) -> list[float]:
        """Each kernel's time on ``sheet`` at ``peak`` with the GPU's ``offset``, timed alone, never below its
        roofline or the class's floor; ``in_step``: as one of a step's back-to-back kernels (the module docstring)."""
        if not kernels:
            return []
        roofs = [roofline_s(k, sheet, peak) for k in kernels]
        x = np.array([features(k, sheet, peak, self.floor_s) for k in kernels])
        alone = np.exp(self.regression.predict(x) + offset) * (self.floor_s + np.array(roofs))
        if in_step:
            return [max(float(p) - self.floor_s + LAUNCH_S, r, LAUNCH_S) for p, r in zip(alone, roofs)]
        return [max(float(p), r, self.floor_s) for p, r in zip(alone, roofs)]


@dataclass
class KernelModel:
    """Every class's model and every GPU's offsets, fitted without what was measured on the GPUs in ``leave_out``;
    ``shifts``: the learned GPUs' in-step shifts (``calibration.in_step_shifts``)."""
    leave_out: tuple[str, ...]
    classes: dict[str, ClassModel]
    tensor_classes: dict[str, ClassModel]       # gemm, conv on tensor cores (DeepBench's fp16 times)
    fp32: dict[str, Efficiency]                 # class -> fp32 offsets
    tensor: dict[str, Efficiency]               # class -> tensor-core offsets (gemm, conv)
    shifts: dict[str, float]
    # log(measured / predicted) bounds of NeuSight's whole models, by kind (``calibration.validation_errors``)
    intervals: dict[str, tuple[float, float]] | None = None

    def interval(self, sheet: Datasheet, precision: str) -> tuple[float, float, str] | None:
        """The factors that bound a step's time on ``sheet`` at ``calibration.LEVEL`` (low, high) and the kind of
        case they were measured on: a GPU measured (fp32 only), else a GPU left out of what the model learned."""
        if not self.intervals:
            return None
        measured = sheet.origin == "catalog" and sheet.name in self.classes["gemm"].gpus and precision == "fp32"
        kind = "measured" if measured else "unseen"
        low, high = self.intervals[kind]
        return math.exp(low), math.exp(high), kind

    @property
    def learned_from(self) -> list[str]:
        return sorted({g for m in (*self.classes.values(), *self.tensor_classes.values()) for g in m.gpus})

    def on_tensor_cores(self, cls: str, sheet: Datasheet, precision: str) -> bool:
        """Whether ``cls`` kernels in ``precision`` run on ``sheet``'s tensor cores (and a tensor model covers it)."""
        rate = precision in TENSOR and precision in sheet.tensor_gflops or \
            precision == "bf16" and "fp16" in sheet.tensor_gflops
        return rate and cls in self.tensor_classes

    def offset(self, cls: str, sheet: Datasheet, precision: str) -> tuple[float, str]:
        """The offset of ``cls`` kernels in ``precision`` on ``sheet``, and how it was found."""
        if self.on_tensor_cores(cls, sheet, precision):
            return self.tensor[cls].offset(sheet)
        return self.fp32[cls].offset(sheet)

    def kernel_s(self, kernels: list[Kernel], sheet: Datasheet, precision: str = "fp32", in_step: bool = False
                 ) -> list[float]:
        """The time of each kernel (any classes) on ``sheet`` in ``precision`` (``in_step``: see ClassModel.seconds)."""
        peak, _ = sheet.peak(precision)
        out = [0.0] * len(kernels)
        for cls in self.classes:
            model = self.tensor_classes[cls] if self.on_tensor_cores(cls, sheet, precision) else self.classes[cls]
            index = [i for i, k in enumerate(kernels) if k.cls == cls]
            offset, _ = self.offset(cls, sheet, precision)
            for i, s in zip(index, model.seconds([kernels[i] for i in index], sheet, peak, offset, in_step)):
                out[i] = s
        return out

    def bandwidth_offset(self, sheet: Datasheet) -> float:
        """How far a memory-bound kernel of no class stays from the bandwidth: the elementwise offset."""
        return self.fp32["elementwise"].offset(sheet)[0]

    def describe(self) -> dict[str, Any]:
        return {"learned_from": self.learned_from, "left_out": list(self.leave_out),
                "floors_s": {c: m.floor_s for c, m in self.classes.items()},
                "tensor_floors_s": {c: m.floor_s for c, m in self.tensor_classes.items()},
                "in_step_shifts": self.shifts,
                "offsets": {"fp32": {c: e.describe() for c, e in self.fp32.items()},
                            "tensor": {c: e.describe() for c, e in self.tensor.items()}},
                "source": "NeuSight's single-kernel timings and whole-model measurements (Lee, Phanishayee, Mahajan, "
                          "ASPLOS 2025; MIT), fp32; DeepBench's fp16 tensor-core times (Baidu Research; Apache-2.0)"}


def fit(leave_out: tuple[str, ...] = (), unlabelled: tuple[str, ...] = ()) -> KernelModel:
    """The kernel model without anything measured on ``leave_out`` (catalog names), with the in-step shifts learned
    from the other GPUs' whole-model measurements (``calibration.py``), those of ``unlabelled`` too left out (their
    kernels learned, their whole models not: the footing of a predictor that learned kernels only)."""
    from dawnbench.prediction.calibration import in_step_shifts
    left = set(leave_out)
    classes = {cls: ClassModel(cls, [r for r in rows if r[0] not in left]) for cls, rows in timings().items()}
    bare = _assemble(tuple(sorted(left)), classes, {})
    return _assemble(tuple(sorted(left)), classes, in_step_shifts(bare, left | set(unlabelled)))


def _assemble(leave_out: tuple[str, ...], classes: dict[str, ClassModel], shifts: dict[str, float]) -> KernelModel:
    sheets = catalog()
    typical = float(np.median(list(shifts.values()))) if shifts else 0.0
    fp32 = {cls: Efficiency.fit({g: o + shifts.get(g, typical) for g, o in m.offsets.items()}, sheets, "fp32",
                                cls in COMPUTE) for cls, m in classes.items()}
    # no in-step shift on tensor cores: NeuSight's whole models calibrate NeuSight's kernel timings, not DeepBench's
    tensor_classes = {cls: ClassModel(cls, kept, "fp16") for cls, rows in tensor_timings().items()
                      if (kept := [r for r in rows if r[0] not in leave_out])}
    tensor = {cls: Efficiency.fit(m.offsets, sheets, "fp16", True) for cls, m in tensor_classes.items()}
    return KernelModel(leave_out, classes, tensor_classes, fp32, tensor, shifts)


# What a fitted model depends on: its data and the code that reads, counts and fits it (``kernel_model``'s key)
FIT_DATA = ("prediction/neusight/kernels.csv.gz", "prediction/neusight/labels.csv", "prediction/gpus.json",
            "kernels/deepbench/published_gemm.csv", "kernels/deepbench/published_conv.csv", "kernels/devices.csv",
            *(f"prediction/neusight/model_configs/{m}.json" for m in ("bert_large", "gpt2_large", "gpt3_27", "gpt3_xl",
                                                                      "opt_13", "switchxl4")),
            "prediction/gpu_model.py", "prediction/efficiency.py", "prediction/kernel_data.py",
            "prediction/calibration.py", "records/datasheet.py", "profiling/census.py", "profiling/gpu_autocast.py",
            "profiling/ops.py", "records/ops.py", "records/census.py", "opcalls/calls.py", "opcalls/formulas.py",
            "records/published.py")


def fit_key(leave_out: tuple[str, ...]) -> str:
    """A digest of everything a fit depends on (``FIT_DATA``, the libraries' versions) and what it leaves out."""
    import platform
    from importlib.metadata import version
    digest = hashlib.sha256()
    for name in FIT_DATA:
        digest.update(name.encode() + resources.files("dawnbench").joinpath(name).read_bytes())
    for part in (version("scikit-learn"), version("transformers"), np.__version__, torch.__version__,
                 platform.python_version(), *leave_out):
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()[:32]


def _cached(path: Path) -> KernelModel | None:
    """The model pickled at ``path`` by this user, or None (absent, unreadable, or writable by others: refitted)."""
    if not trusted_file(path):
        return None
    try:
        with path.open("rb") as file:
            model = _ModelUnpickler(file).load()
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError, TypeError):
        return None
    return model if isinstance(model, KernelModel) else None


class _ModelUnpickler(pickle.Unpickler):
    """Unpickles a kernel model and nothing else: the model's own classes and numpy's arrays are the only globals a
    file may name, so a pickle planted in the cache cannot call anything (``os.system`` is refused, not run)."""

    ALLOWED = {("dawnbench.prediction.gpu_model", "KernelModel"), ("dawnbench.prediction.gpu_model", "ClassModel"),
               ("dawnbench.prediction.gpu_model", "Trees"), ("dawnbench.prediction.efficiency", "Efficiency"),
               ("numpy", "dtype"), ("numpy", "ndarray"), ("numpy._core.multiarray", "_reconstruct"),
               ("numpy.core.multiarray", "_reconstruct")}

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError(f"{module}.{name} is not part of a kernel model")
        return super().find_class(module, name)


@lru_cache(maxsize=8)
def kernel_model(leave_out: tuple[str, ...] = ()) -> KernelModel:
    """The fitted kernel model, fitted once and kept in the user's cache (``$DAWNBENCH_CACHE/models``, else the
    user's cache directory's), keyed by everything the fit depends on: refitted only when its data, its code or a
    library's version changes."""
    leave_out = tuple(sorted(leave_out))
    path = kept("models") / f"kernel-model-{fit_key(leave_out)}.pickle"
    model = _cached(path)
    if model is None:
        from dawnbench.prediction.calibration import interval, validation_errors
        model = fit(leave_out)
        if not leave_out:                 # a model validated leaves GPUs out itself: its intervals are these
            model.intervals = {kind: interval(by_gpu) for kind, by_gpu in validation_errors(fit).items()}
        keep(path, pickle.dumps(model))
    return model


def predict_ops(rows: list[dict[str, Any]], sheet: Datasheet, model: KernelModel) -> dict[str, Any]:
    """A step's ops (rows of ``ops.tsv``: op, shapes, args, precision, calls, flops, bytes, and a census's phase)
    on ``sheet``: seconds per phase and per class, what each part rests on, and the notes that qualify them."""
    notes: set[str] = set()
    seconds = [0.0] * len(rows)
    rests = ["bandwidth"] * len(rows)
    by_precision: dict[str, list[tuple[int, Kernel]]] = {}
    for i, row in enumerate(rows):
        found = op_kernels(row)
        by_precision.setdefault(row["precision"], []).extend((i, k) for k in found)
        if found:
            rests[i] = "model"
    for precision, owned in by_precision.items():
        _, note = sheet.peak(precision)
        if note:
            notes.add(note)
        for (i, _), s in zip(owned, model.kernel_s([k for _, k in owned], sheet, precision, in_step=True)):
            seconds[i] += s * rows[i]["calls"]
    efficiency = math.exp(model.bandwidth_offset(sheet))
    for i, row in enumerate(rows):
        if rests[i] == "model":
            continue
        per_call_flops, per_call_bytes = (row.get("flops") or 0.0) / row["calls"], (row.get("bytes") or 0.0) / row["calls"]
        kernels = launches(row)
        if per_call_flops == 0 and per_call_bytes == 0:
            rests[i] = "nothing (a view: no kernel)"
            continue
        if kernels is not None:
            rests[i] = "multi-tensor"
        moved = per_call_bytes * PASSES.get(row["op"].split("::")[-1].split(".")[0], 1.0)
        seconds[i] = (max(per_call_flops / sheet.peak(row["precision"])[0], moved / sheet.bandwidth) *
                      efficiency + (kernels or 1) * LAUNCH_S) * row["calls"]
    phases: dict[str, float] = {}
    classes: dict[str, float] = {}
    rests_on: dict[str, float] = {}
    for row, s, how in zip(rows, seconds, rests):
        phases[row.get("phase") or "step"] = phases.get(row.get("phase") or "step", 0.0) + s
        for cls, share in shares(row):
            classes[cls] = classes.get(cls, 0.0) + s * share
        rests_on[how] = rests_on.get(how, 0.0) + s
    total = sum(seconds)
    return {"op_s": total, "phases": phases, "classes": dict(sorted(classes.items(), key=lambda kv: -kv[1])),
            "rests_on": {k: {"seconds": v, "share": v / total if total else None} for k, v in rests_on.items()},
            "offsets": {f"{cls} {p}": model.offset(cls, sheet, p)[1] for p in by_precision for cls in COMPUTE},
            "notes": sorted(notes)}
