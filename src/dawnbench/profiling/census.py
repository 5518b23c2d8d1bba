"""A model's training or inference step counted op by op without running it (SPEC §24).

    doc = census(hf_config_model(Path("bert_large.json"), "train"), batch=8, seqlen=512, mode="train")
    write_census(doc, Path("census/bert-large"))       # ops.tsv (with a phase column) + summary.json

The model is built on PyTorch's ``meta`` device — tensors with shapes and dtypes and no storage — so a GPT-3 2.7B
step is counted in seconds, in far less memory than its weights would take. A ``TorchDispatchMode`` sees every
ATen op as it really executes, after autograd, and records its input shapes, dtype, FLOPs and bytes (the same
counts as ``ops.py``'s census of a measured step) and its **phase**: ``forward`` (the model), ``loss`` (the loss of
its outputs: NeuSight's labels leave it untimed, so it is kept apart), ``backward`` and ``optimizer`` (training
only). Each row of ``ops.tsv`` is one (op, shapes, phase) with its calls and its call as data (``calls.py``);
times are 0 — nothing ran.

**Read back through one door** (``read_census``): every row's FLOPs and bytes are counted again from its call on
the meta device, the rows' sums per phase must be the summary's, and the memory's parts must be what the
parameters and the forward allow — so a census edited into nonsense (a row of 1e22 FLOPs, a table cut to two rows,
every memory part 0) is refused, naming the line or field, rather than costed.

**Precision as a GPU runs it.** The census counts the step a GPU would run. ``bf16`` and ``fp16``: the forward and
the loss under CUDA's autocast policy (``gpu_autocast.py``: which ops CUDA sends to the lower precision, which it
keeps in fp32, the weight casts it caches), the backward following the forward's dtypes; ``fp16`` adds what
PyTorch's ``GradScaler`` runs on a GPU (the loss scaled, the gradients unscaled and checked in one multi-tensor
op). ``tf32``: fp32 ops, the matrix multiplies and convolutions marked ``tf32`` (what TF32 mode sends to tensor
cores). In every precision the kernels are those CUDA picks (dropout's fused kernel and its one-byte mask). The
optimizer is stepped as on a GPU — PyTorch's multi-tensor (``foreach``) kernels over all parameters at once — and
counted at its second step, once its state exists (the first step only allocates it); each multi-tensor row
records its ``tensors`` and ``chunks`` (of 65,536 elements, what one CUDA block of ``multi_tensor_apply`` takes),
from which a GPU's launches are counted. Views cost nothing (``_unsafe_view`` included: it moves no byte).

**Memory.** The step's memory is counted as what must be resident at its peak: the parameters, their
gradients, the optimizer's state (as the optimizer created it, on the meta device too), and the
activations saved for the backward (every tensor autograd packs, each storage once); inference counts
the parameters and the largest op's inputs and outputs. The activations are counted again at a second batch (1,
or 2 where the census's is 1), so that the part no batch changes (a mask, a position table) is known apart from
the part that grows with each sample: what the largest batch that fits is computed from. An approximation that
ignores the allocator's fragmentation and the framework's workspace — said where it is reported.

**Which model.** ``hf_config_model``: a Hugging Face config JSON, with the head the NeuSight labels were
measured with — pre-training for BERT in training, sequence classification in inference, causal LM for
GPT-2 and OPT (any ``…ForCausalLM``), sequence-to-sequence LM for Switch and T5 — and eager attention.
``experiments/census.py``: a task's reference entry, its ``make_model()`` at the task's input shape,
cross-entropy against class labels, and SGD with Nesterov momentum as the optimizer (the entries' own
optimizers live inside their ``train`` loops; the census says which it used).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any, Literal

import torch
from pydantic import Field
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from typing_extensions import TypedDict

from dawnbench import environment, schema
from dawnbench.data.cache import keep, kept, trusted_file
from dawnbench.errors import DawnbenchError, FileError
from dawnbench.io import atomic_write_json, read_foreign, read_json
from dawnbench.profiling.calls import MAX_CALL_CHARS, encode, layouts, meta_cost, traffic
from dawnbench.profiling.gpu_autocast import TF32_OPS, CudaAutocast
from dawnbench.profiling.ops import (
    CENSUS_COLUMNS,
    MAX_PARAMETERS,
    PHASES,
    _precision_of,
    _problem_args,
    call_facts,
    read_ops,
    write_ops,
)

HEADS = {"train": {"bert": "AutoModelForPreTraining"}, "inference": {"bert": "AutoModelForSequenceClassification"}}
# --head: the task a config's model is counted for, as the transformers auto class that builds it (lm: causal, or
# sequence to sequence for an encoder-decoder)
HEAD_CLASSES = {"pretraining": "AutoModelForPreTraining", "qa": "AutoModelForQuestionAnswering",
                "classification": "AutoModelForSequenceClassification", "lm": None}
SEQ2SEQ = {"switch_transformers", "t5", "mt5", "bart", "mbart", "pegasus", "marian"}
MAX_LISTED = 16                    # inputs listed one by one; more (a multi-tensor op) are summed per list
SIZE_FIELD = re.compile(r"(?:_size|_dim|_layers|_heads|_positions|^n_(?:layer|head|embd|inner|positions|ctx))$")
MAX_LAYERS = 2_000                 # a config's layers the census builds and traces in seconds (GPT-3 175B has 96)
LAYERS = re.compile(r"(?:^|_)(?:layers|layer)$")
DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
# --optimizer: each as its summary names it, and as PyTorch steps it on a GPU, with its multi-tensor kernels
OPTIMIZERS: dict[str, tuple[str, Callable[[list[torch.Tensor]], torch.optim.Optimizer] | None]] = {
    "adamw": ("AdamW", lambda params: torch.optim.AdamW(params, foreach=True)),
    "sgd": ("SGD (Nesterov momentum 0.9)", lambda params: torch.optim.SGD(params, lr=0.1, momentum=0.9,
                                                                          nesterov=True, foreach=True)),
    "none": ("none", None)}
CHUNK = 65_536                     # elements a block of CUDA's multi_tensor_apply takes (ATen's kChunkSize)
MEMORY_PARTS = ("parameters", "gradients", "optimizer", "activations")
MULTI_TENSOR_PER_ELEMENT = 16      # FLOPs or bytes a multi-tensor op can take per listed element (8 read, 8 written)
ROUNDING = 1e-5                    # ops.tsv keeps six significant digits: a figure read back is within this of its own


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


@dataclass
class CensusModel:
    """What the census runs: a model on the meta device, its inputs, its loss and its optimizer."""
    name: str
    kind: str                                        # "huggingface" or "entry"
    model: torch.nn.Module
    inputs: Callable[[int, int | None, str], dict[str, torch.Tensor]]   # batch, seqlen, device -> keyword inputs
    loss: Callable[[Any, dict[str, torch.Tensor]], torch.Tensor]
    optimizer: str                                   # what the census steps: a key of ``OPTIMIZERS``
    sequence: bool                                   # whether --seqlen applies
    task: str | None = None


class _Counter(TorchDispatchMode):
    """Every op's shapes, dtype, FLOPs and bytes, grouped by (op, shapes, dtype, args, layout, phase, call)."""

    def __init__(self, rows: bool = True) -> None:
        super().__init__()
        self.keep_rows = rows            # False: only the largest op's bytes (the second batch's count)
        self.phase = "forward"
        self.rows: dict[tuple[str, ...], dict[str, float]] = defaultdict(lambda: {"calls": 0, "flops": 0.0,
                                                                                  "bytes": 0.0})
        self.largest_op_bytes = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if not any(t.device.type == "meta" for t in tree_flatten((args, kwargs, out))[0] if isinstance(t, torch.Tensor)):
            return out                   # host work (an optimizer's step count on the CPU): no kernel of the step
        if not self.keep_rows:
            self.largest_op_bytes = max(self.largest_op_bytes, traffic(func, args, kwargs, out))
            return out
        name = func._overloadpacket.__name__
        inputs, dtype, flops, moved = call_facts(func, args, kwargs, out)
        self.largest_op_bytes = max(self.largest_op_bytes, moved)
        call = encode(func, args, kwargs) if flops or moved else ""     # what the reader recounts the row from
        row = self.rows[(f"aten::{name}", _shapes(args, kwargs, inputs), dtype,
                         " ".join(filter(None, (_problem_args(func, args, kwargs), _multi_tensor(args)))),
                         layouts(args, kwargs), self.phase, call if len(call) <= MAX_CALL_CHARS else "")]
        row["calls"] += 1
        row["flops"] += flops
        row["bytes"] += moved
        return out


def _shapes(args: tuple, kwargs: dict, inputs: list[torch.Tensor]) -> str:
    """The inputs' shapes as ``ops.tsv`` holds them; a multi-tensor op's (the optimizer's ``_foreach_*`` over every
    parameter) each list as one flat length — its elements in all — so the row stays one line a reader takes. An
    empty tensor (an empty key-value cache a ``cat`` extends) is left out: it holds and moves nothing, and a
    dimension of 0 is no shape the reader takes."""
    inputs = [t for t in inputs if t.numel() or not t.dim()]
    if len(inputs) <= MAX_LISTED:
        return ", ".join("x".join(map(str, t.shape)) or "scalar" for t in inputs)
    parts = []
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor):
            parts.append("x".join(map(str, value.shape)) or "scalar")
        elif isinstance(value, (list, tuple)) and value and all(isinstance(t, torch.Tensor) for t in value):
            parts.append(str(sum(t.numel() for t in value)))
    return ", ".join(parts)


def _multi_tensor(args: tuple) -> str:
    """A multi-tensor op's ``tensors`` (in its first list) and ``chunks`` (of ``CHUNK`` elements): what its launches
    on a GPU depend on; "" for any other op."""
    lists = [a for a in args if isinstance(a, (list, tuple)) and a and all(isinstance(t, torch.Tensor) for t in a)]
    if not lists:
        return ""
    return f"tensors={len(lists[0])} chunks={sum(-(-t.numel() // CHUNK) for t in lists[0])} lists={len(lists)}"


def census(model: CensusModel, batch: int, seqlen: int | None, mode: str, precision: str = "fp32",
           progress: Callable[[str], None] = lambda line: None, optimizer: str | None = None) -> dict[str, Any]:
    """Count one step of ``model`` at ``batch`` (and ``seqlen``) in ``mode`` (``train``: forward, loss, backward,
    optimizer step; ``inference``: forward under ``no_grad``) in ``precision`` as a GPU runs it (the module
    docstring), stepping ``optimizer`` (``adamw``, ``sgd`` or ``none``; the model's own where not given): the rows
    of ``ops.tsv`` and the summary."""
    started = time.perf_counter()
    if optimizer is not None:
        if mode != "train":
            raise DawnbenchError(f"--optimizer {optimizer}: an inference census runs no optimizer (drop it, or count "
                                 "--mode train).")
        if optimizer not in OPTIMIZERS:
            raise DawnbenchError(f"--optimizer {optimizer}: the census steps {', '.join(OPTIMIZERS)}.")
        model = replace(model, optimizer=optimizer)
    if precision not in DTYPES:
        raise DawnbenchError(f"--precision {precision}: the census counts fp32, tf32, bf16 or fp16.")
    params = list(model.model.parameters())
    parameters = sum(p.numel() for p in params)
    if not 1 <= parameters <= MAX_PARAMETERS:
        raise DawnbenchError(f"{model.name}: {parameters:,} parameters — no model trained has that many (from 1 to "
                             f"{MAX_PARAMETERS:,}); check the config's sizes.")
    counter = _Counter()
    saved: dict[int, int] = {}
    other = 2 if batch == 1 else 1         # a second point: the activations' part that does not grow with the batch
    second, second_saved = _Counter(rows=False), {}
    try:
        optimizer_bytes = _count_step(model, model.inputs(batch, seqlen, "meta"), mode, precision, counter, saved,
                                      progress)
        progress("activations at a second batch")
        for p in params:
            p.grad = None
        _count_step(replace(model, optimizer="none"), model.inputs(other, seqlen, "meta"), mode, precision, second,
                    second_saved, lambda line: None)
    except DawnbenchError:
        raise
    except Exception as err:          # noqa: BLE001 — the model's own code (transformers, an entry) may raise anything
        raise DawnbenchError(f"{model.name}: the census could not trace its {mode} step on the meta device "
                             f"({type(err).__name__}: {str(err).splitlines()[0][:300] if str(err) else '-'}). Either "
                             "its config lacks a field the model needs or has sizes that disagree (a pad_token_id, "
                             "heads, key-value heads and widths: check it against the model's documented config), or "
                             "its forward reads tensor values "
                             "(data-dependent shapes, .item(), a mixture of experts' routing), which the census "
                             "cannot count without running the model.") from None
    rows = _rows(counter, precision)
    wide = [r for r in rows if r["dtype"] == "float64"]
    if wide:
        raise DawnbenchError(f"{model.name}: its step runs {len(wide)} op(s) in float64 (the first: {wide[0]['op']} "
                             f"on {wide[0]['shapes'][:80]}). The census costs fp32, tf32, bf16 and fp16 kernels; no "
                             "datasheet gives a GPU's float64 rate. Keep the model's tensors in float32.")
    param_bytes = sum(p.numel() * p.element_size() for p in params)
    grads = sum(p.numel() * p.element_size() for p in params if p.requires_grad) if mode == "train" else 0
    activations, at_other = ((sum(saved.values()), sum(second_saved.values())) if mode == "train" else
                             (counter.largest_op_bytes, second.largest_op_bytes))
    per_sample = (activations - at_other) / (batch - other)
    fixed = int(min(max(activations - per_sample * batch, 0), activations))
    phases = {p: {"flops": sum(r["flops"] for r in rows if r["phase"] == p),
                  "bytes": sum(r["bytes"] for r in rows if r["phase"] == p),
                  "calls": sum(r["calls"] for r in rows if r["phase"] == p)} for p in PHASES}
    summary = {"task": model.task or model.name, "census": {
        "model": model.name, "kind": model.kind, "mode": mode, "batch": batch, "seqlen": seqlen,
        "precision": precision, "optimizer": OPTIMIZERS[model.optimizer][0] if mode == "train" else None,
        "parameters": parameters, "phases": phases,
        "memory": {"parameters_bytes": param_bytes, "gradients_bytes": grads, "optimizer_bytes": optimizer_bytes,
                   "activations_bytes": activations, "activations_fixed_bytes": fixed,
                   "total_bytes": param_bytes + grads + optimizer_bytes + activations,
                   "how": ("parameters + gradients + optimizer state + the activations saved for the backward "
                           "(each storage once)" if mode == "train" else "parameters + the largest op's inputs and "
                           "outputs") + "; no allocator fragmentation or workspace"},
        "seconds": time.perf_counter() - started},
        "entry": model.name, "precision": precision, "batch_size": batch, "rows": len(rows)}
    if why := schema.why_not(Census, summary["census"], "census"):   # a step too large for any GPU's figures
        shape = f"batch {batch}" + (f" × {seqlen} tokens" if seqlen else "")
        raise DawnbenchError(f"{model.name} at {shape}: {why}. No GPU holds such a step; lower --batch or --seqlen.")
    return {"summary": summary, "rows": rows}


def _count_step(model: CensusModel, inputs: dict[str, torch.Tensor], mode: str, precision: str, counter: _Counter,
                saved: dict[int, int], progress: Callable[[str], None]) -> int:
    """Run one step of ``model`` on the meta device under ``counter`` (the tensors autograd saves, each storage once,
    into ``saved``); the optimizer's state in bytes."""
    autocast = CudaAutocast(DTYPES[precision] if precision in ("bf16", "fp16") else None)
    if mode != "train":
        model.model.eval()
        with counter, torch.no_grad(), autocast:
            progress("forward")
            model.model(**inputs)
        return 0

    def pack(t: torch.Tensor) -> torch.Tensor:
        saved.setdefault(t.untyped_storage()._cdata, t.untyped_storage().nbytes())
        return t

    model.model.train()
    params = [p for p in model.model.parameters() if p.requires_grad]
    make = OPTIMIZERS[model.optimizer][1]
    opt = make(params) if make is not None else None
    with counter, torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        progress("forward")
        with autocast:
            out = model.model(**inputs)
            counter.phase = "loss"
            loss = model.loss(out, inputs)
        if precision == "fp16":          # GradScaler: the loss scaled before the backward
            loss = loss * torch.full((), 65536.0, device=loss.device)
        counter.phase = "backward"
        progress("backward")
        loss.backward()
    if opt is None:                      # forward and backward only, as NeuSight's labels were measured
        return 0
    progress("optimizer step")
    counter.phase = "optimizer"
    opt.step()                           # the first step only makes the optimizer's state: not a step's work
    with counter:
        if precision == "fp16":          # GradScaler.unscale_: every gradient unscaled and checked in one op
            found, inverse = (torch.zeros(1, device="meta") for _ in range(2))
            torch._amp_foreach_non_finite_check_and_unscale_([p.grad for p in params if p.grad is not None], found,
                                                            inverse)
        opt.step()
    return sum(t.numel() * t.element_size() for state in opt.state.values() for t in state.values()
               if isinstance(t, torch.Tensor))


def _rows(counter: _Counter, precision: str) -> list[dict[str, Any]]:
    """The counted calls as ``ops.tsv`` rows, each with the precision its kernel runs in (``tf32``: the matrix
    multiplies and convolutions of an fp32 step), in phase order, largest FLOPs first."""
    rows = []
    for (op, shapes, dtype, args, layout, phase, call), g in counter.rows.items():
        label = _precision_of(dtype, "fp32")
        if precision == "tf32" and label == "fp32" and op.split("::")[-1] in TF32_OPS:
            label = "tf32"
        intensity = g["flops"] / g["bytes"] if g["bytes"] else None
        rows.append({"op": op, "shapes": shapes, "dtype": dtype, "precision": label, "calls": int(g["calls"]),
                     "time_s": 0.0, "share": None, "flops": g["flops"], "bytes": g["bytes"], "intensity": intensity,
                     "flops_per_s": None, "bytes_per_s": None, "fraction_of_roof": None,
                     "bound": "overhead" if not g["flops"] and not g["bytes"] else "",
                     "args": args, "layout": layout if len(layout.split(",")) == len(shapes.split(", ")) else "",
                     "call": call, "phase": phase})
    rows.sort(key=lambda r: (PHASES.index(r["phase"]), -r["flops"], -r["bytes"]))
    return rows


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
    stepped = counted["optimizer"] not in (None, OPTIMIZERS["none"][0])
    if counted["mode"] == "inference" and phases - {"forward"}:
        return f"summary.json says inference, but it holds {', '.join(sorted(phases - {'forward'}))} rows"
    if counted["mode"] == "train" and "backward" not in phases:
        return "summary.json says train, but it holds no backward rows"
    if counted["optimizer"] is not None and counted["optimizer"] not in {label for label, _ in OPTIMIZERS.values()}:
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
    stepped = train and counted["optimizer"] not in (None, OPTIMIZERS["none"][0])
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


# --- the models ------------------------------------------------------------------------------------------
def hf_config_model(path: Path, mode: str, head: str | None = None) -> CensusModel:
    """A Hugging Face config JSON as a model on the meta device, with the head NeuSight's labels used, or ``head`` (a
    key of ``HEAD_CLASSES``: ``qa`` for SQuAD fine-tuning)."""
    if head is not None and head not in HEAD_CLASSES:
        raise DawnbenchError(f"--head {head}: the census builds the heads {', '.join(HEAD_CLASSES)}.")
    config_dict = read_json(Path(path), "Hugging Face config")
    import transformers
    from transformers import CONFIG_MAPPING
    transformers.logging.set_verbosity_error()   # its warnings of a config's odd fields: the refusal below says it
    if not isinstance(config_dict, dict):
        raise FileError(path, f"a JSON {type(config_dict).__name__}, not an object of a model's fields (a config.json "
                              "holds one: model_type, hidden_size, …). Pass a model's config.json.")
    kind = config_dict.get("model_type")
    if not isinstance(kind, str) or kind not in CONFIG_MAPPING:
        raise FileError(path, f"field 'model_type' is {kind!r}, not a model type transformers knows (a config.json "
                              "names one, e.g. bert, gpt2, opt, llama). Pass a model's config.json.")
    for key, value in config_dict.items():
        if SIZE_FIELD.search(key) and (isinstance(value, bool) or isinstance(value, int) and value < 1):
            raise FileError(path, f"field {key!r} is {value!r}: a size or count of a model is a whole number of at "
                                  "least 1. Check it against the model's documented config.")
    layers = sum(v for k, v in config_dict.items() if LAYERS.search(k) and isinstance(v, int) and not
                 isinstance(v, bool))
    if layers > MAX_LAYERS:
        raise FileError(path, f"its layer counts add up to {layers:,}; the census builds and counts at most "
                              f"{MAX_LAYERS:,} layers (GPT-3 175B has 96) in seconds. Check the layer fields.")
    try:
        # the weights in fp32 whatever dtype the checkpoint was saved in (torch_dtype): --precision says how the
        # step runs, and mixed precision keeps fp32 weights
        config = transformers.AutoConfig.for_model(**{k: v for k, v in config_dict.items() if k not in (
            "architectures", "transformers_version", "torch_dtype", "dtype")})
        auto = (HEAD_CLASSES[head] if head else HEADS.get(mode, {}).get(kind)) or (
            "AutoModelForSeq2SeqLM" if kind in SEQ2SEQ else "AutoModelForCausalLM")
        with torch.device("meta"):
            model = getattr(transformers, auto).from_config(config, attn_implementation="eager",
                                                             torch_dtype=torch.float32)
    except Exception as err:          # noqa: BLE001 — transformers' own checks raise many kinds on a bad config
        raise FileError(path, f"transformers cannot build a {kind} model from it ({type(err).__name__}: "
                              f"{str(err).splitlines()[0][:200] if str(err) else '-'}). Check its fields against "
                              "the model's documented config.") from None
    limit = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None)
    vocab = int(getattr(config, "vocab_size", 2) or 2)

    def inputs(batch: int, seqlen: int | None, device: str) -> dict[str, torch.Tensor]:
        if seqlen is None:
            raise DawnbenchError(f"{path}: a language model's census needs --seqlen (tokens a sequence).")
        if limit and kind not in SEQ2SEQ and seqlen > limit:
            raise DawnbenchError(f"--seqlen {seqlen}: longer than the {limit} positions this {kind} config has "
                                 "(max_position_embeddings / n_positions); pass at most that.")
        ids = torch.ones(batch, seqlen, dtype=torch.int64, device=device)
        return {"input_ids": ids, "decoder_input_ids": ids} if kind in SEQ2SEQ else {"input_ids": ids}

    def loss(out: Any, given: dict[str, torch.Tensor]) -> torch.Tensor:
        if hasattr(out, "start_logits"):    # question answering: the answer's start and end, one position each
            zeros = torch.zeros(out.start_logits.shape[0], dtype=torch.int64, device=out.start_logits.device)
            return (torch.nn.functional.cross_entropy(out.start_logits, zeros) +
                    torch.nn.functional.cross_entropy(out.end_logits, zeros)) / 2
        logits = out.logits if hasattr(out, "logits") else out.prediction_logits
        if logits.dim() == 2:          # a sequence classifier: one label a sequence
            return torch.nn.functional.cross_entropy(logits, torch.zeros(logits.shape[0], dtype=torch.int64,
                                                                         device=logits.device))
        return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                 given["input_ids"].reshape(-1) % vocab)

    # a model is named by its file, or by its folder where the file is the usual config.json
    name = Path(path).parent.name if Path(path).stem == "config" and Path(path).parent.name else Path(path).stem
    return CensusModel(name + (f" ({head} head)" if head else ""), "huggingface", model, inputs, loss, "adamw", True)
