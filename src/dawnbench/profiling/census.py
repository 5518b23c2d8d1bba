"""A model's training or inference step counted op by op without running it.

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

import re
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from dawnbench import schema
from dawnbench.errors import DawnbenchError, FileError
from dawnbench.io import read_json
from dawnbench.opcalls.calls import MAX_CALL_CHARS, encode, layouts, traffic
from dawnbench.profiling.gpu_autocast import TF32_OPS, CudaAutocast
from dawnbench.profiling.ops import _precision_of, _problem_args, call_facts
from dawnbench.records.census import OPTIMIZER_LABELS, Census
from dawnbench.records.ops import MAX_PARAMETERS, PHASES

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
    "adamw": (OPTIMIZER_LABELS["adamw"], lambda params: torch.optim.AdamW(params, foreach=True)),
    "sgd": (OPTIMIZER_LABELS["sgd"], lambda params: torch.optim.SGD(params, lr=0.1, momentum=0.9, nesterov=True,
                                                                    foreach=True)),
    "none": (OPTIMIZER_LABELS["none"], None)}
CHUNK = 65_536                     # elements a block of CUDA's multi_tensor_apply takes (ATen's kChunkSize)


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
    # Long: one step counted in the order it runs (checks, the model built, traced, its memory), then its summary.
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


# --- the models ------------------------------------------------------------------------------------------
def _config_kind(path: Path, config_dict: Any, known: Any) -> str:
    """The model type of a config.json, once its sizes are whole numbers of at least 1 and its layers at most
    ``MAX_LAYERS`` (one paragraph naming the field if not)."""
    if not isinstance(config_dict, dict):
        raise FileError(path, f"a JSON {type(config_dict).__name__}, not an object of a model's fields (a config.json "
                              "holds one: model_type, hidden_size, …). Pass a model's config.json.")
    kind = config_dict.get("model_type")
    if not isinstance(kind, str) or kind not in known:
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
    return kind


def hf_config_model(path: Path, mode: str, head: str | None = None) -> CensusModel:
    """A Hugging Face config JSON as a model on the meta device, with the head NeuSight's labels used, or ``head`` (a
    key of ``HEAD_CLASSES``: ``qa`` for SQuAD fine-tuning)."""
    if head is not None and head not in HEAD_CLASSES:
        raise DawnbenchError(f"--head {head}: the census builds the heads {', '.join(HEAD_CLASSES)}.")
    config_dict = read_json(Path(path), "Hugging Face config")
    import transformers
    from transformers import CONFIG_MAPPING
    transformers.logging.set_verbosity_error()   # its warnings of a config's odd fields: the refusal below says it
    kind = _config_kind(path, config_dict, CONFIG_MAPPING)
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
