"""A census's documents — its ``summary.json`` and the rows of its ``ops.tsv`` — declared, written and checked
here: what ``predict`` reads of a step counted on the meta device (``profiling/census.py`` counts it).

    write_census(doc, folder)
    rows, summary = read_census(folder, notes)   # every row recounted from its call, unless this user's mark vouches

Every row is recounted from the call it records, the rows' phase sums must equal the summary's, and the memory's
parts are bounded by the parameters and by the bytes the forward moved (docs/reference/documents.md).
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Annotated, Any, Literal

import torch
from pydantic import Field
from typing_extensions import TypedDict  # pydantic reads typing_extensions' TypedDict on Python < 3.12

from dawnbench import environment, schema
from dawnbench.data.cache import keep, kept, trusted_file
from dawnbench.errors import FileError
from dawnbench.io import atomic_write_json, read_foreign, read_json
from dawnbench.opcalls.calls import meta_cost
from dawnbench.records.ops import CENSUS_COLUMNS, MAX_PARAMETERS, PHASES, read_ops, write_ops

MEMORY_PARTS = ("parameters", "gradients", "optimizer", "activations")
MULTI_TENSOR_PER_ELEMENT = 16      # FLOPs or bytes a multi-tensor op can take per listed element (8 read, 8 written)
ROUNDING = 1e-5                    # ops.tsv keeps six significant digits: a figure read back is within this of its own
# --optimizer: each as a census's summary names it (profiling/census.py steps it)
OPTIMIZER_LABELS = {"adamw": "AdamW", "sgd": "SGD (Nesterov momentum 0.9)", "none": "none"}


class CensusMemory(TypedDict):
    parameters_bytes: schema.Bytes
    gradients_bytes: schema.Bytes
    optimizer_bytes: schema.Bytes
    activations_bytes: schema.Bytes
    activations_fixed_bytes: schema.Bytes   # the part of them no batch changes (counted at a second batch)
    total_bytes: schema.Bytes
    how: schema.Message


class Census(TypedDict):
    """The ``census`` of a census's ``summary.json``: what ``predict`` reads of it, each figure in its range."""
    model: schema.Text
    kind: Literal["huggingface", "entry"]
    mode: Literal["train", "inference"]
    batch: Annotated[int, Field(strict=True, ge=1, le=65_536)]          # bounds.py's --batch
    seqlen: Annotated[int, Field(strict=True, ge=1, le=1 << 20)] | None  # bounds.py's --seqlen
    precision: schema.Precision
    optimizer: schema.Text | None
    parameters: Annotated[int, Field(strict=True, ge=1, le=MAX_PARAMETERS)]
    phases: dict[Literal["forward", "loss", "backward", "optimizer"], dict[Literal["flops", "bytes", "calls"],
                                                                           schema.NonNegative]]
    memory: CensusMemory
    seconds: schema.Seconds



def write_census(doc: dict[str, Any], out: Path) -> None:
    """``ops.tsv`` (the profile's columns and ``phase``) and ``summary.json`` in ``out``; the summary passes the
    declaration its reader holds it to (:class:`Census`) before anything is written."""
    schema.load(Census, doc["summary"]["census"], out / "summary.json", fix="This is a bug: please report it.")
    out.mkdir(parents=True, exist_ok=True)
    write_ops(doc["rows"], out / "ops.tsv", CENSUS_COLUMNS)
    made = environment.provenance(torch.device("cpu"))   # command, commit and tree, date, machine
    atomic_write_json(out / "summary.json", {**doc["summary"], **made, "out": str(out)})
    keep(_mark(out), b"")                # read back, this census is not recounted (where the mark can be left)


def read_census(folder: Path, notes: list[str]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The rows of ``folder/ops.tsv`` and its ``summary.json`` as :func:`write_census` wrote them, or one paragraph
    naming the file, line or field that no census could hold (the module docstring's door); notes on rows left
    out go to ``notes``."""
    path, fix = folder / "summary.json", "It is not what `dawnbench profile --census` writes; count the model again."
    summary = read_json(path, "profile")
    counted = schema.load(Census, summary.get("census") if isinstance(summary, dict) else None, path, fix=fix)
    if why := _memory_fault(counted):
        raise FileError(path, f"census.memory: {why}. {fix}")
    if counted["kind"] == "entry" and not (isinstance(summary.get("task"), str) and summary["task"]):
        raise FileError(path, f"field 'task' is {json.dumps(summary.get('task'))[:40]}: a census of an entry names the "
                              f"task it trains on (its epochs and target come from it). {fix}")
    if summary.get("batch_size") != counted["batch"]:
        raise FileError(path, f"batch_size is {json.dumps(summary.get('batch_size'))[:20]} but census.batch is "
                              f"{counted['batch']}. {fix}")
    before = len(notes)
    rows = read_ops(folder, notes, census=True)
    dropped = notes[before:]
    if not trusted_file(_mark(folder)):          # a census this user's dawnbench wrote, untouched, was counted already
        for row in rows:
            if why := _row_fault(row):
                raise FileError(folder / "ops.tsv", f"{why}. {fix}", line=row["line"])
    if why := _step_fault(counted, rows):
        raise FileError(folder / "ops.tsv", f"{why}. {fix}")
    for phase in PHASES:
        mine = [r for r in rows if r["phase"] == phase]
        for figure in ("calls", "flops", "bytes"):
            total, stated = sum(r[figure] or 0 for r in mine), counted["phases"].get(phase, {}).get(figure, 0)
            if not math.isclose(total, stated, rel_tol=ROUNDING, abs_tol=0.5):
                raise FileError(folder / "ops.tsv", f"its {phase} rows hold {total:.6g} {figure} in all; "
                                                    f"summary.json's census.phases.{phase}.{figure} says {stated:.6g} "
                                                    f"(a row cut, added or edited"
                                                    + (f"; {dropped[0]}" if dropped else "") + f"). {fix}")
    return rows, summary


def _mark(folder: Path) -> Path:
    """The mark :func:`write_census` leaves in the user's cache for the census it wrote in ``folder``: named by the
    digest of its two files, so that any edit of either is a census no mark vouches for (recounted row by row)."""
    digest = hashlib.sha256()
    for name in ("ops.tsv", "summary.json"):
        digest.update(read_foreign(folder / name, "profile") + b"\0")
    return kept("censuses") / digest.hexdigest()


def _row_fault(row: dict[str, Any]) -> str | None:
    """Why a census row's FLOPs and bytes are not what its call does, or None."""
    if row["dtype"] == "float64":
        return "its dtype is float64, which no census counts"
    if row["call"]:
        each = meta_cost(row["call"])
        for figure, one in zip(("flops", "bytes"), each):
            if not math.isclose(row[figure] or 0, one * row["calls"], rel_tol=ROUNDING, abs_tol=0.5):
                return (f"its {figure} are {row[figure] or 0:.6g}, where {row['calls']:,} call(s) of its call do "
                        f"{one * row['calls']:.6g}")
        return None
    if not row["flops"] and not row["bytes"]:
        return None                      # a view: nothing to count
    if "tensors=" in row["args"]:        # a multi-tensor op over more tensors than a recorded call may list
        elements = sum(math.prod(d) for d in row["dims"]) * row["calls"]
        if max(row["flops"] or 0, row["bytes"] or 0) <= MULTI_TENSOR_PER_ELEMENT * elements:
            return None
        return (f"its FLOPs or bytes pass {MULTI_TENSOR_PER_ELEMENT} an element of its {elements:,} (a multi-tensor "
                "op reads and writes each element once, at most 8 bytes each)")
    return "it has FLOPs or bytes but no call to count them from"


def _step_fault(counted: dict[str, Any], rows: list[dict[str, Any]]) -> str | None:
    """Why a census's rows are not the step its summary says — its mode, optimizer and precision — or None."""
    phases = {r["phase"] for r in rows if r["calls"]}
    stepped = counted["optimizer"] not in (None, OPTIMIZER_LABELS["none"])
    if counted["mode"] == "inference" and phases - {"forward"}:
        return f"summary.json says inference, but it holds {', '.join(sorted(phases - {'forward'}))} rows"
    if counted["mode"] == "train" and "backward" not in phases:
        return "summary.json says train, but it holds no backward rows"
    if counted["optimizer"] is not None and counted["optimizer"] not in set(OPTIMIZER_LABELS.values()):
        return f"census.optimizer {counted['optimizer'][:40]!r} is none the census steps"
    if ("optimizer" in phases) != stepped:
        return (f"census.optimizer is {json.dumps(counted['optimizer'])}, but it holds "
                f"{'optimizer rows' if 'optimizer' in phases else 'no optimizer rows'}")
    labels = {r["precision"] for r in rows}
    if not labels <= {"fp32", counted["precision"]} or (counted["precision"] != "fp32" and counted["precision"]
                                                         not in labels):
        return (f"summary.json says {counted['precision']}, but its rows run in {', '.join(sorted(labels))} (a step "
                f"counted in {counted['precision']} runs some of its ops so)")
    return None


def _memory_fault(counted: dict[str, Any]) -> str | None:
    """Why a census's memory cannot be its model's, or None: the parts must sum to the total, the weights take
    2 to 8 bytes a parameter, the gradients at most the weights, the optimizer's state at most two per weight
    (and a step count each), and the saved activations no more than the forward moved."""
    memory, parameters = counted["memory"], counted["parameters"]
    weights = memory["parameters_bytes"]
    forward = sum(counted["phases"].get(p, {}).get("bytes", 0) for p in ("forward", "loss"))
    train = counted["mode"] == "train"
    if memory["total_bytes"] != sum(memory[f"{part}_bytes"] for part in MEMORY_PARTS):
        return f"total_bytes is not the sum of its parts ({', '.join(MEMORY_PARTS)})"
    if not 2 * parameters <= weights <= 8 * parameters:
        return f"parameters_bytes is {weights:,.0f} for {parameters:,} parameters (2 to 8 bytes each)"
    if memory["gradients_bytes"] > (weights if train else 0):
        return (f"gradients_bytes is {memory['gradients_bytes']:,.0f}: at most parameters_bytes in training, 0 in "
                "inference")
    stepped = train and counted["optimizer"] not in (None, OPTIMIZER_LABELS["none"])
    if not (0 < memory["optimizer_bytes"] <= 2 * weights + 8 * parameters if stepped else
            memory["optimizer_bytes"] == 0):
        return (f"optimizer_bytes is {memory['optimizer_bytes']:,.0f}: one or two states a weight and a step count "
                "with an optimizer, 0 without one")
    if not memory["activations_fixed_bytes"] < memory["activations_bytes"]:
        return ("activations_fixed_bytes (the part no batch changes) is not less than activations_bytes: a step's "
                "activations grow with its batch")
    if memory["activations_bytes"] > forward * (1 + ROUNDING):
        return (f"activations_bytes is {memory['activations_bytes']:,.0f}, more than the {forward:,.0f} bytes its "
                "forward and loss moved (every saved tensor is one they read or wrote)")
    return None
