"""An application's profiled training step as the kernel benchmarks see it: each op of a
profile's table (``ops.tsv``) per step, with the kernel problems of DeepBench's suites it runs.

    step = read_step(Path("profiles/cifar10-cifar10-fast-fp32"))   # or a run folder with profile/
    step.step_s, [op.kernels for op in step.ops]

**Mapping.** An op maps to kernel problems where its input shapes and recorded arguments
(``ops.tsv``'s ``args``: stride, padding, a recurrent layer's cell…) fix one of the suites'
problems (``records/problems.py``):

* matrix multiply — ``mm`` (M×K, K×N), ``addmm`` (bias, M×K, K×N), ``bmm``/``baddbmm`` (B batches of
  one GEMM: the problem once, ``repeat`` B): GEMM ``m, n, k``, an operand transposed where the profile's
  ``layout`` says it was (``t``);
* convolution forward — a 2-D, ungrouped, undilated, untransposed ``convolution``: its N×C×H×W input
  and K×C×R×S filter, stride and padding, ``layout: nhwc`` where the step ran it channels-last;
  ``convolution_backward`` (grad_output, input, weight):
  the backward wrt inputs and wrt parameters as the same problem's two passes, or the one pass
  wrt parameters where its FLOPs say it computed only that (``records/kernel_classes.py``'s rule);
* recurrent — a single-direction layer of ``mkldnn_rnn_layer`` (CPU) or a one-layer ``_cudnn_rnn``
  (a bidirectional one ``repeat`` 2), forward, and its ``…_backward`` as the ``backward`` pass:
  ``cell, hidden, batch, timesteps`` and the layer's ``input`` width.

Every other op — and a mapped class whose arguments were not recorded (a profile made before
``args``) — has no DeepBench problem; each such op of a mapped class says why.

**Its own call.** An op whose call the profile recorded (``ops.tsv``'s ``call``, a profile of this version) also
carries it as a *replay* problem (``records/problems.py``): the same op, shapes, strides and arguments — what
``explain`` times here, and what a ``kernels.json`` of the applications set may hold a time for. Times, FLOPs and
bytes are per training step: the window's over its steps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dawnbench.errors import DawnbenchError, FileError
from dawnbench.io import inside, read_json
from dawnbench.records import documents
from dawnbench.records.kernel_classes import (
    CONV_BACKWARD,
    CONV_FWD,
    CONV_INPUTS,
    CONV_PARAMS,
    MATMUL,
    RECURRENT,
    SUITE_OF,
    classify,
    op_class,
)
from dawnbench.records.ops import grouped_notes, read_ops
from dawnbench.records.problems import APPLICATIONS, Problem, flops
from dawnbench.records.selection import disturbance_of

GEMMS = {"mm", "addmm", "bmm", "baddbmm"}
RNN_LAYERS = {"mkldnn_rnn_layer": "forward", "mkldnn_rnn_layer_backward": "backward", "_cudnn_rnn": "forward",
              "_cudnn_rnn_backward": "backward"}
MAX_BATCH = 2**24                  # samples a step: a batch beyond this is a broken summary, not a batch
OPS_OVER_WINDOW = 1.1              # the ops' time may pass the window's by the profiler's rounding, no more
CUDNN_MODES = {0: "vanilla", 2: "lstm", 3: "gru"}   # cuDNN's RNN modes (1, tanh, is no DeepBench cell)


@dataclass(frozen=True)
class Kernel:
    """One kernel problem an op runs per call: ``repeat`` times its ``pass_name``."""
    problem: Problem
    pass_name: str
    repeat: int = 1


@dataclass
class StepOp:
    op: str
    shapes: str
    args: str
    precision: str                 # the op's own: fp32, tf32, bf16, fp16
    kernel_class: str              # records/kernel_classes.py's class
    calls: float                   # per step
    seconds: float                 # measured, per step (all its calls)
    flops: float                   # per step
    bytes: float                   # per step
    kernels: list[Kernel] = field(default_factory=list)   # per call: DeepBench's problems it runs
    unmapped: str | None = None    # why a matrix multiply, convolution or recurrent op has no kernel problem
    replay: Kernel | None = None   # its own recorded call (see the module docstring)
    layout: str = ""               # each tensor input's memory order (c, cl, t, s)


@dataclass
class Step:
    profile: Path
    task: str
    entry: str
    precision: str
    device: str
    batch_size: int | None
    steps: int
    step_s: float                  # measured: the window's wall time over its steps
    roofs: dict[str, Any]          # the profile's measured roofs
    ops: list[StepOp]
    dispatch_s: dict[str, float] | None = None   # the host's cost of issuing one op, per kind (profiling/dispatch.py)
    run: dict[str, Any] | None = None            # the run the profile was made from, as it recorded it
    emulated: str | None = None                  # why its precision was emulated where profiled (profile --emulated)
    disturbed: str | None = None                 # the profile's load sentence where others took the CPU meanwhile

    @property
    def op_s(self) -> float:
        return sum(op.seconds for op in self.ops)


def _gemm(base: str, dims: list[list[int]], layout: list[str]) -> tuple[list[Kernel], str | None]:
    picked = [(d, lay) for d, lay in zip(dims, layout + [""] * len(dims)) if len(d) in (2, 3)]
    picked = picked[-2:] if base in ("addmm", "baddbmm") else picked[:2]
    operands = [d for d, _ in picked]
    if len(operands) != 2 or len(operands[0]) != len(operands[1]):
        return [], f"{base} with inputs {dims}: not two matrices (or batches of them)"
    (*batch, m, k), (*_, k2, n) = operands
    if k != k2:
        return [], f"{base} with inputs {dims}: inner dimensions {k} and {k2} differ"
    a_t, b_t = (lay == "t" for _, lay in picked)
    problem = Problem("gemm", "training", {"m": m, "n": n, "k": k, "a_transposed": a_t, "b_transposed": b_t})
    return [Kernel(problem, "forward", batch[0] if batch else 1)], None


def _conv_params(x: list[int], w: list[int], args: dict[str, list[int]],
                 layout: str = "") -> tuple[dict[str, Any] | None, str | None]:
    if len(x) != 4 or len(w) != 4:
        return None, f"a convolution of inputs {x} and {w}: only 2-D (NCHW) convolutions are DeepBench's"
    if "stride" not in args or "padding" not in args:
        return None, "its stride and padding were not recorded (a profile made before `args`): profile again"
    if args.get("groups", [1]) != [1] or any(d != 1 for d in args.get("dilation", [1])) or \
            args.get("transposed", [0]) != [0]:
        return None, f"grouped, dilated or transposed ({' '.join(f'{k}={v}' for k, v in args.items())}): " \
                     "DeepBench's convolutions are none of those"
    (stride_h, stride_w), (pad_h, pad_w) = (args["stride"] * 2)[:2], (args["padding"] * 2)[:2]
    n, c, h, width = x
    return {"w": width, "h": h, "c": c, "n": n, "k": w[0], "filter_w": w[3], "filter_h": w[2], "pad_w": pad_w,
            "pad_h": pad_h, "stride_w": stride_w, "stride_h": stride_h, **({"layout": "nhwc"} if layout == "cl" else {})
            }, None


def _rnn(base: str, dims: list[list[int]], args: dict[str, list[int]]) -> tuple[list[Kernel], str | None]:
    mode, hidden = args.get("mode", [None])[0], args.get("hidden_size", [None])[0]
    cell = CUDNN_MODES.get(mode) if mode is not None else None
    if cell is None or hidden is None:
        return [], f"{base}: its cell (mode {mode}) is not one of DeepBench's (vanilla ReLU, LSTM, GRU)"
    if args.get("num_layers", [1])[0] != 1:
        return [], f"{base} of {args['num_layers'][0]} layers at once: DeepBench's problems are one layer"
    x = dims[0]
    if len(x) != 3:
        return [], f"{base} with input {x}: not (timesteps, batch, features)"
    # mkldnn_rnn_layer is handed the input time-major whatever batch_first says; cuDNN's is as given
    batch_major = args.get("batch_first", [0])[0] and base.startswith("_cudnn")
    t, n, width = (x[1], x[0], x[2]) if batch_major else x
    params = {"cell": cell, "hidden": hidden, "batch": n, "timesteps": t, **({"input": width} if width != hidden
                                                                              else {})}
    directions = 2 if args.get("bidirectional", [0])[0] and base.startswith("_cudnn") else 1
    return [Kernel(Problem("rnn", "training", params), RNN_LAYERS[base], directions)], None


def map_op(row: dict[str, Any]) -> tuple[list[Kernel], str | None]:
    """The kernel problems one call of an ``ops.tsv`` row runs, or why it has none (see the module docstring)."""
    base = row["op"].split("::")[-1].split(".")[0]
    dims, args, calls = row["dims"], row["arg_values"], row["calls"]
    layout = [part.strip() for part in (row.get("layout") or "").split(",")] if row.get("layout") else []
    if base in GEMMS:
        return _gemm(base, dims, layout)
    if base in CONV_BACKWARD:
        if len(dims) < 3:
            return [], f"{base} with inputs {dims}: not (grad_output, input, weight)"
        params, why = _conv_params(dims[1], dims[2], args, layout[1] if len(layout) > 1 else "")
        if params is None:
            return [], why
        problem = Problem("conv", "training", params)
        both = not row["flops"] or row["flops"] / calls > 1.5 * flops(problem, "forward")
        passes = ("backward_inputs", "backward_params") if both else ("backward_params",)
        return [Kernel(problem, p) for p in passes], None
    if op_class(row["op"]) == CONV_FWD:
        if len(dims) < 2:
            return [], f"{base} with inputs {dims}: not (input, weight)"
        params, why = _conv_params(dims[0], dims[1], args, layout[0] if layout else "")
        return ([Kernel(Problem("conv", "training", params), "forward")], None) if params else ([], why)
    if base in RNN_LAYERS:
        return _rnn(base, dims, args)
    if op_class(row["op"]) in (MATMUL, RECURRENT):
        return [], f"{base}: no DeepBench problem of this op's form (costed by the roofline)"
    return [], None


def _replay(row: dict[str, Any], cls: str) -> Kernel | None:
    """The op's own recorded call as a replay problem of the applications set, or None (no call recorded)."""
    if not row.get("call"):
        return None
    pass_name = "backward" if "backward" in row["op"] else "forward"
    params = {"op": row["op"], "class": cls, "pass": pass_name, "precision": row["precision"],
              "flops": (row["flops"] or 0.0) / row["calls"], "bytes": (row["bytes"] or 0.0) / row["calls"],
              "call": row["call"]}
    return Kernel(Problem(SUITE_OF.get(cls, "memory"), APPLICATIONS, params), pass_name)


def _class_of(row: dict[str, Any]) -> str:
    """The op's kernel class; a convolution backward's is its larger part (it is split where it is timed)."""
    [first, *_] = classify([row])
    return first["class"] if first["class"] not in (CONV_INPUTS, CONV_PARAMS) else CONV_PARAMS


def profile_folder(path: Path) -> Path:
    """A profile folder: ``path`` itself, or a run folder's ``profile/`` — a folder of the run's own, never a link
    out of it (``io.inside``)."""
    for candidate in (path, inside(path, "profile")):
        if (candidate / "ops.tsv").is_file() and (candidate / "summary.json").is_file():
            return candidate
    raise DawnbenchError(f"{path}: no ops.tsv and summary.json here or in {path / 'profile'}. Pass a folder "
                         "`dawnbench profile` wrote, or profile the run first: `dawnbench profile "
                         f"{path}` (add --trust-entry when the run's entry is your own file: profiling imports it).")


def read_step(path: Path, notes: list[str] | None = None, details: list[str] | None = None) -> Step:
    """The profiled step of ``path`` (a profile folder, or a run folder holding ``profile/``); rows of its op
    table that cannot be true are left out, each with a note naming its line in ``details`` (in ``notes`` where
    no ``details`` is given: a command shows those lines only when asked, ``--verbose``)."""
    folder = profile_folder(Path(path))
    summary, left_out = documents.profile(read_json(folder / "summary.json", "profile"), folder / "summary.json")
    if summary is None:
        raise DawnbenchError(f"{left_out[0]}. Profile again.")
    if "steps" not in summary or not (summary.get("roofs") or {}).get("bandwidth_bytes_per_s"):
        raise FileError(folder / "summary.json", "has no steps, or no roofs with a bandwidth: it is not the summary "
                                                 "`dawnbench profile` writes; profile again.")
    steps, window_s, roofs = summary["steps"], summary["window_s"], summary["roofs"]
    if notes is not None and summary.get("emulated"):
        notes.append(f"profiled in {summary.get('precision')} on a CPU that only emulates it ({summary['emulated']}): "
                     "the op census is the step's, the profile's own times are the emulation's (no check of a "
                     "prediction for a native device)")
    interference = disturbance_of(summary.get("load"))
    if notes is not None and interference:
        notes.append(f"the profile was taken on a busy machine ({interference}): the framework's time between ops, "
                     "which every prediction adds as the profile measured it, may be inflated; profile again on an "
                     "idle machine")
    ops, left_out = [], []
    rows = read_ops(folder, left_out)
    dropped = [n for n in left_out if ": left out: " in n]
    if notes is not None and left_out:
        (notes if details is None else details).extend(grouped_notes(left_out))
        if dropped:
            notes.append(f"{len(dropped)} row(s) of ops.tsv left out: their time is not an op's here, so it counts in "
                         "the framework's time between ops (the window's time less the ops')")
    for row in rows:
        kernels, why = map_op(row)
        cls = _class_of(row)
        ops.append(StepOp(row["op"], row["shapes"], row.get("args") or "", row["precision"], cls,
                          row["calls"] / steps, row["time_s"] / steps, (row["flops"] or 0.0) / steps,
                          (row["bytes"] or 0.0) / steps, kernels, why, _replay(row, cls), row.get("layout") or ""))
    samples = summary.get("samples_per_s")
    batch = round(samples * window_s / steps) if samples else None
    if batch is not None and not 1 <= batch <= MAX_BATCH:
        raise FileError(folder / "summary.json", f"samples_per_s {samples:.4g} over {steps} steps of {window_s:.4g} s "
                                                 f"makes a batch of {batch:.4g}: no batch is that. Profile again.")
    op_s = sum(op.seconds for op in ops)
    if op_s > OPS_OVER_WINDOW * window_s / steps:
        raise FileError(folder / "ops.tsv", f"its ops take {op_s:.4g} s a step, more than the profiled step's "
                                            f"{window_s / steps:.4g} s (summary.json): ops never outlast the window "
                                            "they ran in, so rows are repeated or times wrong. Profile again.")
    return Step(folder, summary["task"], str(summary.get("entry", "?")), str(summary.get("precision") or "fp32"),
                str(summary.get("device", "cpu")), batch, steps, window_s / steps, roofs, ops,
                summary.get("dispatch_s"), summary.get("run"), summary.get("emulated"), interference)
