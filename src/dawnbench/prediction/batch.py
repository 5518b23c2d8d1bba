"""A profiled step at another batch (SPEC §23, ``predict --batch N``): each op's recorded call re-derived at
batch N, its FLOPs and bytes counted again, its DeepBench problems mapped again.

    step, notes = rebatch(read_step(Path("profiles/imagenet-resnet50-fp32")), 256)

**Which dimensions are the batch.** The profile's batch B is known (its samples over its steps). A tensor's
dimension is the batch's when it is B·k for a per-sample factor k — 1, a sequence length (a k for which the step
holds a B×k×… tensor: a transformer's tokens flattened to B·k rows), or attention's heads (B×heads×L×L scores) — and
it sits where a batch sits: the first dimension of an activation, or the second of a two-dimensional operand stored
transposed (a weight gradient's ``mm`` reads the batch along its columns). Arguments named like a layer's state
(``weight``, ``bias``, running and saved statistics) are never the batch, nor is a tensor the census marked as a
parameter or a view of one, nor — outside matrix multiplies, whose flattened activations can have a weight's shape —
any tensor of a parameter's shape and dtype (their gradients, momentum buffers and Adam states have their shapes) —
a 64-channel weight stays 64 channels when the batch was 64, while the batch's 64 integer labels become N. Such a
dimension becomes N·k; every other stays. An op none of whose tensors has a batch dimension (the optimizer, a
weight's own ops) is the same at any batch — except a recurrent layer, whose time-major T×B×F input is not
recognised, and a matrix multiply with operands that are no parameter's: both are named as not rescaled.

**Counting again.** The re-derived call is made on PyTorch's ``meta`` device — shapes only, no memory, no
arithmetic — which gives its outputs, so its minimum traffic (the census's rule) and FLOPs
(``torch.utils.flop_counter``'s formulas) are counted as a profile counts them. An op whose call was not recorded
(a profile made before ``call``), or whose re-derived call PyTorch refuses, cannot be rescaled: it keeps its
batch-B problems, and the prediction names it. The framework's time between ops is taken as the same at any
batch (it is per op, not per sample).
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from typing import Any

import torch

from dawnbench import bounds
from dawnbench.errors import DawnbenchError
from dawnbench.opcalls.calls import decode, positional, replay, strides_like, tensor_specs
from dawnbench.opcalls.formulas import op_flops
from dawnbench.prediction.step import Step, StepOp, map_op
from dawnbench.records.kernel_classes import MATMUL, RECURRENT
from dawnbench.records.ops import parse_args, parse_shapes

STATE_ARGS = {"weight", "bias", "running_mean", "running_var", "save_mean", "save_invstd", "save_var",
              "weight_g", "weight_v"}
META = torch.device("meta")


def _recorded_tensors(step: Step) -> list[dict[str, Any]]:
    """Every tensor of every recorded call of the step, as the census wrote it."""
    return [t for op in step.ops if op.replay is not None
            for value in json.loads(op.replay.problem.params["call"])["args"].values() for t in tensor_specs(value)]


def per_sample_factors(tensors: list[dict[str, Any]], batch: int) -> set[int]:
    """1, and every k for which some recorded call holds a B×k×… tensor (B: the profile's batch) that says what k is:
    three-dimensional (a sequence of k tokens), or attention's B×heads×L×L scores for such a sequence of L (its heads'
    bmm runs on B·heads) — an image's B×C×H×W says nothing of the kind."""
    first = [t["t"] for t in tensors if t["t"][:1] == [batch] and len(t["t"]) > 1 and t["t"][1] > 1]
    tokens = {t[1] for t in first if len(t) == 3}
    return {1} | tokens | {t[1] for t in first if len(t) == 4 and t[2] == t[3] and t[2] in tokens}


def parameter_shapes(tensors: list[dict[str, Any]]) -> set[tuple[Any, ...]]:
    """The shapes (and dtypes) of the layers' parameters, as the census marked them in the recorded calls."""
    return {(*t["t"], t["d"]) for t in tensors if t.get("p")}


def _rescale(spec: dict[str, Any], arg: str, batch: int, new: int, factors: set[int],
             parameters: set[tuple[Any, ...]] | None) -> tuple[dict[str, Any], bool]:
    """The tensor with its batch dimensions at ``new`` (see the module docstring), and whether any changed.
    ``parameters`` None: only the census's marks say a tensor is a parameter's (a matrix multiply's)."""
    if arg in STATE_ARGS or spec.get("p") or (parameters is not None and (*spec["t"], spec["d"]) in parameters):
        return spec, False
    shape, strides = list(spec["t"]), spec.get("st")
    transposed = strides is not None and len(shape) == 2 and strides[0] == 1
    positions = [1] if transposed else [0]
    changed = False
    for i in positions:
        if i < len(shape) and shape[i] % batch == 0 and shape[i] // batch in factors:
            shape[i] = shape[i] // batch * new
            changed = True
    if not changed:
        return spec, False
    out = {"t": shape, "d": spec["d"]}
    if strides is not None:      # the same memory order at the new sizes
        out["st"] = strides_like(strides, shape)
    return out, True


def _rebuild(value: Any, arg: str, batch: int, new: int, factors: set[int],
             parameters: set[tuple[Any, ...]] | None) -> tuple[Any, bool]:
    if isinstance(value, dict) and "t" in value:
        return _rescale(value, arg, batch, new, factors, parameters)
    if isinstance(value, list):
        parts = [_rebuild(v, arg, batch, new, factors, parameters) for v in value]
        return [p for p, _ in parts], any(c for _, c in parts)
    return value, False


def rebatch(step: Step, new: int) -> tuple[Step, list[str]]:
    """``step`` at batch ``new`` (see the module docstring), and a note per op that could not be rescaled."""
    bounds.check_option("--batch", new)
    if not step.batch_size:
        raise DawnbenchError(f"--batch {new}: the profile {step.profile} does not say its batch (no samples_per_s in "
                             "its summary.json), so no dimension can be known as the batch's. Profile again.")
    batch, tensors = step.batch_size, _recorded_tensors(step)
    factors, parameters = per_sample_factors(tensors, batch), parameter_shapes(tensors)
    ops, kept = [], Counter()
    for op in step.ops:
        if op.replay is None and not op.bytes and not op.flops:   # a view or bookkeeping: no work at any batch
            ops.append(op)
            continue
        moved, why = _op_at(op, batch, new, factors, parameters)
        if moved is None:
            kept[(op.op, why)] += 1
            ops.append(op)
        else:
            ops.append(moved)
    notes = [f"--batch {new}: {count} {name} row(s) could not be rescaled ({why}): kept at batch {batch}"
             for (name, why), count in kept.most_common()]
    return dataclasses.replace(step, ops=ops, batch_size=new), notes


def _op_at(op: StepOp, batch: int, new: int, factors: set[int],
           parameters: set[tuple[Any, ...]]) -> tuple[StepOp | None, str]:
    """One op at the new batch, or None and why it cannot be re-derived."""
    if op.replay is None:
        return None, "no call to make again: none recorded (a profile made before calls were), or refused when read"
    params = op.replay.problem.params
    try:
        func, recorded = decode(params["call"])
    except ValueError as err:
        return None, f"its call cannot be read: {err}"
    # A matrix multiply's operands are flattened activations, whose shapes can equal a weight's (BERT-base at batch
    # 2: 2·384 tokens × 3072 is also its output layer's weight): there, only the census's marks name a parameter.
    known = None if op.kernel_class == MATMUL else parameters
    rebuilt, changed = {}, False
    for arg, value in recorded.items():
        rebuilt[arg], moved = _rebuild(value, arg, batch, new, factors, known)
        changed = changed or moved
    if not changed:               # the same at any batch: a weight's own op, the optimizer — but a recurrent layer's
        if op.kernel_class == RECURRENT:       # time-major T×B×F input is not recognised: named
            return None, "a recurrent layer's time-major input is not recognised as the batch's"
        if op.kernel_class == MATMUL and any(not spec.get("p") and len(spec["t"]) > 1 for value in recorded.values()
                                             for spec in tensor_specs(value)):
            return None, "no dimension of its operands was recognised as the batch's"
        return op, ""
    call = json.dumps({"op": json.loads(params["call"])["op"], "args": rebuilt}, separators=(",", ":"))
    try:
        fn, moved_bytes = replay(call, META)
        flops = op_flops(func, *positional(func, fn.keywords), fn())
    except (ValueError, RuntimeError, NotImplementedError, TypeError) as err:
        return None, f"PyTorch refused the call at the new sizes: {str(err)[:120]}"
    shapes = ", ".join("x".join(map(str, t["t"])) or "scalar" for v in rebuilt.values() for t in tensor_specs(v))
    row = {"op": op.op, "shapes": shapes, "dims": parse_shapes(shapes), "arg_values": parse_args(op.args),
           "calls": op.calls, "flops": flops * op.calls, "layout": op.layout}
    kernels, why = map_op(row)
    replayed = dataclasses.replace(op.replay, problem=dataclasses.replace(
        op.replay.problem, params={**params, "call": call, "flops": flops, "bytes": float(moved_bytes)}))
    return dataclasses.replace(op, shapes=shapes, flops=flops * op.calls, bytes=float(moved_bytes) * op.calls,
                               kernels=kernels, unmapped=why, replay=replayed), ""
