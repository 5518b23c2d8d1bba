"""The kernels the GPU model learns from, and a step's ops as kernels in the same terms.

    timings()["gemm"]            # NeuSight's fp32 single-kernel timings: (GPU's catalog name, Kernel, seconds)
    tensor_timings()["gemm"]     # DeepBench's published fp16 tensor-core times, the same way
    op_kernels(row)              # the kernels one call of an ops.tsv row runs

**fp32**: NeuSight's single-kernel timings (``prediction/neusight/kernels.csv.gz``: five GPUs, PyTorch 2.1, CUDA
12.1, TF32 off; MIT, its README says how they were measured): batched and plain matrix multiplies, convolutions,
softmax, layer norm and eleven elementwise ops, each in one **class** — ``gemm``, ``conv``, ``softmax``,
``layernorm``, ``elementwise``.

**Tensor cores**: DeepBench's published training-set times in "fp16-mixed" (fp16 inputs, fp32 accumulation; Baidu
Research, Apache-2.0, ``kernels/deepbench/``) of its GEMMs and forward convolutions on the two GPUs with tensor cores
it measured — the V100 (SXM2, a DGX-1; CUDA 10.1, cuDNN 7.6) and the T4 — after the checks of
``records/published.py`` (a row that disagrees with itself is left out there). A convolution is taken where its
stride and padding are the same along both sides (the model's convolutions are square in those).
"""

from __future__ import annotations

import csv
import gzip
import io
import math
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from dawnbench.errors import DawnbenchError
from dawnbench.records.datasheet import catalog_name
from dawnbench.records.kernel_classes import CONV_BACKWARD, CONV_FWD, ELEMENTWISE, MATMUL, op_class
from dawnbench.records.ops import parse_args, parse_shapes
from dawnbench.records.published import sheet

CLASSES = ("gemm", "conv", "softmax", "layernorm", "elementwise")
NEUSIGHT_CLASS = {"bmm": "gemm", "linear": "gemm", "conv": "conv", "softmax": "softmax", "ln": "layernorm"}
# elementwise ops: (tensors read and written, 0 arithmetic / 1 division / 2 transcendental)
ELEMENTWISE_KIND = {"add": (3, 0), "mul": (3, 0), "div": (3, 1), "pow": (3, 2), "addu": (2, 0), "mulu": (2, 0),
                    "divu": (2, 1), "powu": (2, 2), "relu": (2, 0), "gelu": (2, 2), "tanh": (2, 2)}
TRANSCENDENTAL = {"gelu", "tanh", "exp", "log", "pow", "sigmoid", "erf", "sin", "cos", "rsqrt", "sqrt", "softplus",
                  "gelu_backward", "tanh_backward", "sigmoid_backward", "silu", "silu_backward", "log1p", "expm1"}
SOFTMAX = {"_softmax", "_log_softmax", "_softmax_backward_data", "_log_softmax_backward_data", "softmax"}
LAYER_NORM = {"native_layer_norm": 1.0, "native_layer_norm_backward": 2.0}
BYTES = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2}
DEEPBENCH_GPU = {"V100": "V100-SXM2-16GB", "T4": "T4"}   # DeepBench's devices with tensor cores, as the catalog names them
# CUDA's multi_tensor_apply (ATen/native/cuda/MultiTensorApply.cuh): tensors one launch takes, by lists (depth),
# and the blocks of one launch, each taking a chunk of 65,536 elements
MAX_TENSORS = {1: 110, 2: 64, 3: 48, 4: 36, 5: 30}
MAX_BLOCKS = 320


@dataclass(frozen=True)
class Kernel:
    """One kernel as the model sees it: its class, its shape in NeuSight's terms, FLOPs and bytes."""
    cls: str
    dims: tuple[int, ...]      # gemm (B, M, N, K); conv (B, C_in, C_out, R, size, stride, pad); others (B, H)
    flops: float
    bytes: float
    operands: int = 2          # elementwise: tensors read and written
    kind: int = 0              # elementwise: 0 arithmetic, 1 division, 2 transcendental


def gemm(b: int, m: int, n: int, k: int, element: int) -> Kernel:
    """``b`` multiplies of an m×k by a k×n matrix: their FLOPs and least bytes."""
    return Kernel("gemm", (b, m, n, k), 2.0 * b * m * n * k, float(element * b * (m * k + k * n + m * n)))


def conv(x: list[int], w: list[int], stride: int, pad: int, element: int) -> Kernel:
    """A 2-D convolution of an N×C×H×W input by a K×C×R×S filter, in NeuSight's terms (its height and the filter's
    height stand for both sides: NeuSight timed square ones)."""
    n, c, h, width = x
    out_h, out_w = (h + 2 * pad - w[2]) // stride + 1, (width + 2 * pad - w[3]) // stride + 1
    return Kernel("conv", (n, c, w[0], w[2], h, stride, pad), 2.0 * n * w[0] * out_h * out_w * c * w[2] * w[3],
                  float(element * (n * c * h * width + w[0] * c * w[2] * w[3] + n * w[0] * out_h * out_w)))


def _neusight_kernel(op: str, dims: list[int]) -> Kernel:
    """A NeuSight timing's kernel (fp32) in the model's terms."""
    cls = NEUSIGHT_CLASS.get(op, "elementwise")
    if cls == "gemm":
        b, m, n, k = dims
        # linear: input (B, M, K) by a weight (N, K), one GEMM of B·M rows
        return gemm(1, b * m, n, k, 4) if op == "linear" else gemm(b, m, n, k, 4)
    if cls == "conv":
        b, c_in, c_out, r, size, stride, pad = dims
        return conv([b, c_in, size, size], [c_out, c_in, r, r], stride, pad, 4)
    b, h = dims
    if cls in ("softmax", "layernorm"):
        return Kernel(cls, (b, h), 5.0 * b * h, 2.0 * 4 * b * h)
    operands, kind = ELEMENTWISE_KIND[op]
    return Kernel(cls, (b, h), float(b * h), float(operands * 4 * b * h), operands, kind)


@cache
def timings() -> dict[str, list[tuple[str, Kernel, float]]]:
    """NeuSight's fp32 kernel timings by class: (GPU's catalog name, kernel, seconds)."""
    raw = resources.files("dawnbench.prediction").joinpath("neusight/kernels.csv.gz").read_bytes()
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


@cache
def tensor_timings() -> dict[str, list[tuple[str, Kernel, float]]]:
    """DeepBench's fp16 tensor-core times (GEMM, forward convolution) by class: (catalog name, kernel, seconds)."""
    out: dict[str, list[tuple[str, Kernel, float]]] = {"gemm": [], "conv": []}
    for device, gpu in DEEPBENCH_GPU.items():
        for (suite, pass_name, precision, key), entry in sheet(device).times.items():
            if precision != "fp16-mixed" or pass_name != "forward":
                continue
            if suite == "gemm":
                m, n, k = key[:3]
                out["gemm"].append((gpu, gemm(1, m, n, k, 2), entry.seconds))
            elif suite == "conv":
                w, h, c, n, k, filter_w, filter_h, pad_w, pad_h, stride_w, stride_h = key
                if stride_w == stride_h and pad_w == pad_h:
                    out["conv"].append((gpu, conv([n, c, h, w], [k, c, filter_h, filter_w], stride_h, pad_h, 2),
                                        entry.seconds))
    return out


def op_kernels(row: dict[str, Any]) -> list[Kernel]:
    """The kernels one call of an ``ops.tsv`` row runs, in the model's classes; none where it has no class (or its
    shapes do not make one: the GPU model costs it by its bytes, named)."""
    base = row["op"].split("::")[-1].split(".")[0]
    try:
        dims, arg_values = parse_shapes(row["shapes"]), parse_args(row.get("args") or "")
    except ValueError:
        return []
    size = BYTES.get(row["precision"], 4)
    per_call_flops = (row.get("flops") or 0.0) / row["calls"]
    per_call_bytes = (row.get("bytes") or 0.0) / row["calls"]
    cls = op_class(row["op"])
    if cls == MATMUL and base in ("mm", "addmm", "bmm", "baddbmm"):
        mats = [d for d in dims if len(d) in (2, 3)]
        mats = mats[-2:] if base in ("addmm", "baddbmm") else mats[:2]
        if len(mats) != 2 or len(mats[0]) != len(mats[1]) or mats[0][-1] != mats[1][-2]:
            return []
        (*batch, m, k), (*_, _, n) = mats
        return [gemm(batch[0] if batch else 1, m, n, k, size)]
    if cls == CONV_FWD or base in CONV_BACKWARD:
        x, w = (dims[0], dims[1]) if cls == CONV_FWD else (dims[1], dims[2]) if len(dims) >= 3 else ([], [])
        if len(x) != 4 or len(w) != 4 or arg_values.get("groups", [1]) != [1]:
            return []
        forward = conv(x, w, arg_values.get("stride", [1])[0], arg_values.get("padding", [0])[0], size)
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


def launches(row: dict[str, Any]) -> int | None:
    """The kernels one call of a census's multi-tensor row launches on a GPU (its ``tensors``, ``chunks`` and
    ``lists`` over ``multi_tensor_apply``'s limits), or None where the row is no multi-tensor op."""
    try:
        args = parse_args(row.get("args") or "")
    except ValueError:
        return None
    if "tensors" not in args or "chunks" not in args:
        return None
    depth = min(args.get("lists", [1])[0], max(MAX_TENSORS))
    return max(math.ceil(args["tensors"][0] / MAX_TENSORS[depth]), math.ceil(args["chunks"][0] / MAX_BLOCKS), 1)
