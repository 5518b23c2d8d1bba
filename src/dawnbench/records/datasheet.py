"""A GPU described by its datasheet alone: what a user knows of a GPU they have not got.

    sheet = datasheet("H200")                  # from the catalog (prediction/gpus.json), every figure sourced
    sheet = datasheet("my-gpu.json")           # a file in the same fields
    sheet.peak("bf16"), sheet.bandwidth       # FLOP/s, bytes/s

**Fields** (NeuSight's device-config names and units): ``Mem_Bw`` GB/s, ``Num_Sm``, ``Core_Per_SM`` (fp32
cores), ``Freq`` MHz (boost), ``SingleFLOPs`` fp32 GFLOP/s, ``L2Cache`` MB, ``Dev_Mem`` GB as vendors print a GPU's
memory, which is binary (an "80 GB" card holds 80 GiB) — all required —
and optionally ``Power_W`` (the board's maximum power, W) and ``Process_Nm`` (the process node as the vendor names
it: TSMC 4N is 4), from which ``efficiency.py`` predicts how close the GPU comes to its rates, ``tensor_gflops``
(dense tensor-core GFLOP/s per precision: tf32, bf16, fp16), ``Device`` (its name), ``architecture`` and
``sources`` (field → where the figure comes from). A file's figures go through ``LIMITS``: what any
GPU can physically be (a bandwidth of 0 or over 100 TB/s, fp32 over 1 PFLOP/s are refused), and what they must
be together (``SingleFLOPs`` near SMs × cores × clock × 2; a tensor rate not below fp32's). The catalog's
entries pass the same checks (a test).

A name in ``--device`` is looked up in the catalog by name or alias, in any case; a name DeepBench published
(V100, P100, T4, …) keeps its older meaning — DeepBench's published device — and the catalog's are reached
by their catalog names (``T4-16GB``, ``V100-SXM2-16GB``) or ``gpus`` (every one).
"""

from __future__ import annotations

import difflib
import json
import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from dawnbench.errors import DawnbenchError
from dawnbench.io import read_json

FIELDS = ("Mem_Bw", "Num_Sm", "Core_Per_SM", "Freq", "SingleFLOPs", "L2Cache", "Dev_Mem")
# field: (low, high, unit, what) — the range any GPU's figure can physically take
LIMITS = {"Mem_Bw": (1.0, 100_000.0, "GB/s", "memory bandwidth"),
          "Num_Sm": (1, 10_000, "", "streaming multiprocessors"),
          "Core_Per_SM": (1, 4_096, "", "fp32 cores per SM"),
          "Freq": (100.0, 10_000.0, "MHz", "boost clock"),
          "SingleFLOPs": (1.0, 1_000_000.0, "GFLOP/s", "fp32 throughput"),
          "L2Cache": (0.1, 4_096.0, "MB", "L2 cache"),
          "Dev_Mem": (0.5, 16_384.0, "GB", "memory")}
OPTIONAL = {"Power_W": (1.0, 3_000.0, "W", "board power"), "Process_Nm": (2.0, 40.0, "nm", "process node")}
POWER_PER_SM = (0.3, 30.0)                   # W an SM: 1.2 on an L4, 5.3 on an H100; outside, no GPU
KNOWN = {*FIELDS, *OPTIONAL, "tensor_gflops", "sources", "Device", "name", "label", "architecture",
         "price_accelerator"}
TENSOR_PRECISIONS = ("tf32", "bf16", "fp16")
MAX_TENSOR_GFLOPS = 100_000_000.0            # 100 PFLOP/s dense on one GPU: none comes near it
MAX_TENSOR_OVER_FP32 = 32.0                  # dense tensor-core rate over the fp32 rate: 16 on an A100, 15 on an H100
BANDWIDTH_PER_SM = (0.5, 200.0)              # GB/s per SM: 4.8 on a P4, 36 on an H200; 5x either way is no GPU
MAX_NAME = 200
CORES_CLOCK_SLACK = 1.5                      # SingleFLOPs against SMs × cores × clock × 2: within this factor
FIX = ("A datasheet is a JSON object with Mem_Bw (GB/s), Num_Sm, Core_Per_SM, Freq (MHz), SingleFLOPs (GFLOP/s), "
       "L2Cache (MB) and Dev_Mem (GB), optionally Power_W, Process_Nm, tensor_gflops {tf32, bf16, fp16} and sources "
       "{field: text}; "
       "docs/guide/prediction.md shows one.")


def _shown(value: Any) -> str:
    """A value of the file as its JSON says it (``true``, ``null``, ``"64"``), cut short."""
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


@dataclass(frozen=True)
class Datasheet:
    name: str
    label: str
    figures: dict[str, float]
    tensor_gflops: dict[str, float] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    price_accelerator: str | None = None
    origin: str = "catalog"                  # "catalog" or the file it was read from
    architecture: str | None = None

    @property
    def bandwidth(self) -> float:
        return self.figures["Mem_Bw"] * 1e9

    @property
    def memory_bytes(self) -> float:
        """``Dev_Mem`` in bytes: a GPU's memory is printed in binary gigabytes (an "80 GB" H100 holds 80 GiB)."""
        return self.figures["Dev_Mem"] * 2**30

    @property
    def l2_bytes(self) -> float:
        return self.figures["L2Cache"] * 1e6

    def peak(self, precision: str) -> tuple[float, str | None]:
        """FLOP/s of ``precision`` on this GPU, and a note where the datasheet has no such rate."""
        if precision in self.tensor_gflops:
            return self.tensor_gflops[precision] * 1e9, None
        if precision == "bf16" and "fp16" in self.tensor_gflops:    # Volta, Turing: mixed precision is fp16
            return self.tensor_gflops["fp16"] * 1e9, (f"{self.name}: no bf16 tensor cores: bf16 ops predicted at its "
                                                      "fp16 tensor-core rate (mixed precision there runs in fp16)")
        fp32 = self.figures["SingleFLOPs"] * 1e9
        if precision == "fp32":
            return fp32, None
        return fp32, f"{self.name}: the datasheet gives no {precision} tensor-core rate: predicted at its fp32 rate"

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "label": self.label, "kind": "datasheet", "origin": self.origin,
                "figures": self.figures, "tensor_gflops": self.tensor_gflops, "sources": self.sources,
                "price_accelerator": self.price_accelerator, "architecture": self.architecture}


def check(doc: Any, where: str, origin: str | None = None) -> Datasheet:
    """A datasheet document, each figure within what a GPU can be and consistent with the others; its ``origin`` is
    ``where`` unless given (the catalog's entries are the only ones whose measurements the model learned from)."""
    # Long: one check per datasheet field, then the checks between fields, in the order a reader fixes them.
    if not isinstance(doc, dict):
        raise DawnbenchError(f"{where}: not a JSON object. {FIX}")
    figures: dict[str, float] = {}
    for name in FIELDS:
        low, high, unit, what = LIMITS[name]
        value = doc.get(name)
        if value is None:
            raise DawnbenchError(f"{where}: field {name!r} ({what}) is missing. {FIX}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise DawnbenchError(f"{where}: field {name!r} is {_shown(value)}, not a number. {FIX}")
        if not low <= value <= high:
            raise DawnbenchError(f"{where}: field {name!r} is {value:g}{' ' + unit if unit else ''}: a GPU's {what} "
                                 f"is from {low:,g} to {high:,g}{' ' + unit if unit else ''}. Check the figure "
                                 "against the vendor's datasheet.")
        if name in ("Num_Sm", "Core_Per_SM") and float(value) != int(value):
            raise DawnbenchError(f"{where}: field {name!r} is {value:g}: a count of {what} is a whole number.")
        figures[name] = float(value)
    unknown = sorted(str(k) for k in doc if k not in KNOWN)
    if unknown:
        near = difflib.get_close_matches(unknown[0], KNOWN, n=1, cutoff=0.6)
        raise DawnbenchError(f"{where}: field {_shown(unknown[0])} is not a datasheet's"
                             + (f" (did you mean {near[0]!r}?)" if near else "") + f". {FIX}")
    for name, (low, high, unit, what) in OPTIONAL.items():
        value = doc.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or \
                not low <= value <= high:
            raise DawnbenchError(f"{where}: field {name!r} is {_shown(value)}: a GPU's {what} is a number from "
                                 f"{low:,g} to {high:,g} {unit}. Check it against the vendor's datasheet, or leave the "
                                 "field out.")
        figures[name] = float(value)
    implied = figures["Num_Sm"] * figures["Core_Per_SM"] * figures["Freq"] * 2 / 1000
    if not implied / CORES_CLOCK_SLACK <= figures["SingleFLOPs"] <= implied * CORES_CLOCK_SLACK:
        raise DawnbenchError(f"{where}: SingleFLOPs {figures['SingleFLOPs']:,g} GFLOP/s does not go with Num_Sm × "
                             f"Core_Per_SM × Freq × 2 = {implied:,.0f} GFLOP/s (more than {CORES_CLOCK_SLACK}× apart): "
                             "one of the four figures is wrong. Check them against the vendor's datasheet.")
    if "Power_W" in figures and not POWER_PER_SM[0] <= figures["Power_W"] / figures["Num_Sm"] <= POWER_PER_SM[1]:
        raise DawnbenchError(f"{where}: Power_W {figures['Power_W']:,g} W over Num_Sm {figures['Num_Sm']:,g} is "
                             f"{figures['Power_W'] / figures['Num_Sm']:,.3g} W an SM; GPUs draw {POWER_PER_SM[0]:g} to "
                             f"{POWER_PER_SM[1]:g}: one of the two figures is wrong. Check them against the vendor's "
                             "datasheet.")
    per_sm = figures["Mem_Bw"] / figures["Num_Sm"]
    if not BANDWIDTH_PER_SM[0] <= per_sm <= BANDWIDTH_PER_SM[1]:
        raise DawnbenchError(f"{where}: Mem_Bw {figures['Mem_Bw']:,g} GB/s over Num_Sm {figures['Num_Sm']:,g} is "
                             f"{per_sm:,.3g} GB/s an SM; GPUs have {BANDWIDTH_PER_SM[0]:g} to "
                             f"{BANDWIDTH_PER_SM[1]:g}: one of the two figures is wrong. Check them against the "
                             "vendor's datasheet.")
    if figures["L2Cache"] >= figures["Dev_Mem"] * 1000:
        raise DawnbenchError(f"{where}: L2Cache {figures['L2Cache']:,g} MB is not below Dev_Mem "
                             f"{figures['Dev_Mem']:,g} GB: a cache is smaller than the memory it caches. Check both "
                             "against the vendor's datasheet.")
    tensor = doc.get("tensor_gflops") or {}
    if not isinstance(tensor, dict):
        raise DawnbenchError(f"{where}: field 'tensor_gflops' is not an object of precision: GFLOP/s. {FIX}")
    rates: dict[str, float] = {}
    for precision, value in tensor.items():
        if precision not in TENSOR_PRECISIONS:
            raise DawnbenchError(f"{where}: tensor_gflops names {_shown(precision)}; the precisions are "
                                 f"{', '.join(TENSOR_PRECISIONS)}.")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or \
                not figures["SingleFLOPs"] * 0.99 <= value <= MAX_TENSOR_GFLOPS:
            raise DawnbenchError(f"{where}: tensor_gflops.{precision} is {_shown(value)}: a dense tensor-core "
                                 f"rate is a number from the fp32 rate ({figures['SingleFLOPs']:,g}) to "
                                 f"{MAX_TENSOR_GFLOPS:,.0f} GFLOP/s.")
        if value > MAX_TENSOR_OVER_FP32 * figures["SingleFLOPs"]:
            raise DawnbenchError(f"{where}: tensor_gflops.{precision} is {value:,g} GFLOP/s, "
                                 f"{value / figures['SingleFLOPs']:,.0f}x the fp32 rate; a GPU's dense tensor-core "
                                 f"rate is at most {MAX_TENSOR_OVER_FP32:g}x it (an H100: 15x). Give the dense rate "
                                 "(without sparsity), or check SingleFLOPs.")
        rates[precision] = float(value)
    sources = doc.get("sources") or {}
    if not isinstance(sources, dict) or not all(isinstance(v, str) for v in sources.values()):
        raise DawnbenchError(f"{where}: field 'sources' is not an object of field: text. {FIX}")
    name = doc.get("name") or doc.get("Device") or where
    label = doc.get("label") or doc.get("Device") or str(name)
    if not all(isinstance(text, str) and text.isprintable() and 0 < len(text) <= MAX_NAME for text in (name, label)):
        raise DawnbenchError(f"{where}: 'name', 'label' and 'Device' are printable text of 1 to {MAX_NAME} characters "
                             f"(no control characters). {FIX}")
    architecture = doc.get("architecture")
    if architecture is not None and not (isinstance(architecture, str) and architecture.isprintable() and
                                         0 < len(architecture) <= MAX_NAME):
        raise DawnbenchError(f"{where}: 'architecture' is printable text of 1 to {MAX_NAME} characters. {FIX}")
    return Datasheet(name, label, figures, rates, {str(k): v for k, v in sources.items()},
                     doc.get("price_accelerator") if isinstance(doc.get("price_accelerator"), str) else None,
                     origin=origin or where, architecture=architecture)


@lru_cache(maxsize=1)
def catalog() -> dict[str, Datasheet]:
    """The bundled catalog by name, each entry checked (a release with a damaged one fails its tests)."""
    file = resources.files("dawnbench.prediction").joinpath("gpus.json")
    doc = json.loads(file.read_text())
    out = {}
    for entry in doc["gpus"]:
        sheet = check({**entry["datasheet"], "name": entry["name"], "label": entry["label"],
                       "tensor_gflops": entry.get("tensor_gflops"), "sources": entry["sources"],
                       "price_accelerator": entry.get("price_accelerator"), "architecture": entry["architecture"]},
                      f"{file} ({entry['name']})", origin="catalog")
        out[entry["name"]] = sheet
    return out


@lru_cache(maxsize=1)
def _aliases() -> dict[str, str]:
    file = resources.files("dawnbench.prediction").joinpath("gpus.json")
    out = {}
    for entry in json.loads(file.read_text())["gpus"]:
        for alias in (entry["name"], *entry.get("aliases", [])):
            out[alias.lower()] = entry["name"]
    return out


def catalog_name(name: str) -> str | None:
    """The catalog's name for ``name`` (a name or an alias, any case), or None."""
    return _aliases().get(name.lower())


def datasheet(name: str) -> Datasheet:
    """``--device``: a catalog GPU's name or alias, or a datasheet JSON file."""
    named = catalog_name(name)
    if named is not None:
        return catalog()[named]
    path = Path(name)
    if path.suffix.lower() != ".json":
        raise DawnbenchError(f"--device {name}: not a GPU of the catalog ({', '.join(catalog())}) nor a datasheet "
                             f"JSON file. {FIX}")
    sheet = check(read_json(path, "GPU datasheet"), str(path))
    unnamed = sheet.name == str(path)          # no name, label or Device in it: the file's own name
    return replace(sheet, name=path.stem if unnamed else sheet.name,
                   label=path.stem if sheet.label == str(path) else sheet.label, origin=str(path))
