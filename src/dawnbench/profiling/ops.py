"""The per-op profile of a training window: what each op costs and why.

    window = profile_window(entry, ctx, steps=10, warm_steps=3, trace=path)
    table = window.table(roofs, run_precision)

Two views of the same steps, each from the tool made for it:

* **a census** of one training step (the step before the window) under a
  ``TorchDispatchMode``: every op as it really executes — after autograd and autocast
  — with its FLOPs (``torch.utils.flop_counter``'s formulas: matrix multiplies and
  convolutions, and fused recurrent layers by ``flops.py``; elementwise ops count 0) and its bytes (every tensor it reads
  plus every
  tensor it writes, from their shapes and dtypes; views move nothing and count 0; a gather —
  ``index``, ``embedding``… — reads the rows it picks and its indices, not the whole table);
* **the window** of ``steps`` training steps under ``torch.profiler`` (shapes
  recorded), which times each of those ops without the census's overhead and writes
  the Chrome trace.

An op's *time* is the profiler's time of its outermost call (the kernels it runs
included); ops at this level never nest, so their times add up to the part of the
window spent in ops, and the rest is Python, the autograd engine and the optimizer's
bookkeeping. Census and window are aligned call by call (``_align``); ops of the
window the census step did not run are listed without FLOPs or bytes.
Steps are counted with torch's global optimizer-step hook, so any entry whose
``train`` steps a ``torch.optim`` optimizer can be profiled unchanged.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import math
import os
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook
from torch.profiler import ProfilerAction, ProfilerActivity, profile
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from dawnbench.environment import device_sync
from dawnbench.errors import DawnbenchError
from dawnbench.opcalls.calls import MAX_CALL_CHARS, encode, layouts, traffic, with_shapes
from dawnbench.opcalls.formulas import op_flops
from dawnbench.profiling.steps import StepLimitReached
from dawnbench.records.ops import UNMATCHED

# The non-tensor arguments that fix a kernel's problem beside its input shapes (a convolution's stride and
# padding, a recurrent layer's cell and direction): recorded by name from the op's schema, as ``args``.
PROBLEM_ARGS = ("stride", "padding", "dilation", "groups", "transposed", "output_padding", "mode", "hidden_size",
                "num_layers", "bidirectional", "batch_first", "reverse", "has_biases")
LOW_PRECISION = {torch.bfloat16: "bf16", torch.float16: "fp16"}


@dataclass
class OpCall:
    name: str                  # e.g. aten::convolution
    shapes: str                # the tensor inputs' shapes, e.g. "1024x3x32x32, 64x3x3x3"
    dtype: str                 # the widest floating dtype it read: float32, bfloat16, ...
    flops: float
    bytes: float
    dims: str = ""             # the same shapes in the form the profiler records them (for the join)
    elements: int = 0          # the tensor inputs' elements (to scale a call matched by name only)
    args: str = ""             # its PROBLEM_ARGS, e.g. "stride=2x2 padding=1x1 dilation=1x1 groups=1"
    layout: str = ""           # each tensor input's memory order (calls.layouts): "cl, cl, c"
    call: str = ""             # the whole call as data (calls.encode): what a replay makes again


class _Census(TorchDispatchMode):
    """Records every op of the steps it is active for (name, shapes, dtype, FLOPs, bytes)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[OpCall] = []
        self.active = False

    def start(self) -> None:  # entered and left from optimizer-step hooks, not a with block
        self.__enter__()
        self.active = True

    def stop(self) -> None:
        if self.active:
            self.active = False
            self.__exit__(None, None, None)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        inputs, dtype, flops, moved = call_facts(func, args, kwargs, out)
        call = "" if moved == 0 else encode(func, args, kwargs)     # views and bookkeeping are not replayed
        self.calls.append(OpCall(f"aten::{func._overloadpacket.__name__}",
                                 ", ".join("x".join(map(str, t.shape)) or "scalar" for t in inputs), dtype, flops,
                                 moved, _dims([list(t.shape) for t in inputs]), sum(t.numel() for t in inputs),
                                 _problem_args(func, args, kwargs), layouts(args, kwargs),
                                 call if len(call) <= MAX_CALL_CHARS else ""))
        return out


def call_facts(func: Any, args: tuple, kwargs: dict, out: Any) -> tuple[list[torch.Tensor], str, float, int]:
    """One executed op's tensor inputs, the widest floating dtype it read (else wrote; "-": none), its FLOPs and
    the bytes it moved — what a census records of every call (this one's and ``census.py``'s)."""
    inputs = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
    floats = [t.dtype for t in inputs if t.is_floating_point()] or \
        [t.dtype for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
    dtype = max(floats, key=lambda d: torch.finfo(d).bits if d.is_floating_point else 0, default=None)
    return (inputs, str(dtype).removeprefix("torch.") if dtype is not None else "-",
            op_flops(func, args, kwargs, out), traffic(func, args, kwargs, out))


def _problem_args(func: Any, args: tuple, kwargs: dict) -> str:
    """``name=value`` of the op's PROBLEM_ARGS that it was given (lists joined by ``x``)."""
    given = {**{a.name: v for a, v in zip(func._schema.arguments, args)}, **kwargs}
    out = []
    for name in PROBLEM_ARGS:
        value = given.get(name)
        if isinstance(value, (bool, int)) or (isinstance(value, (list, tuple)) and value
                                              and all(isinstance(v, int) for v in value)):
            shown = "x".join(map(str, value)) if isinstance(value, (list, tuple)) else str(int(value))
            out.append(f"{name}={shown}")
    return " ".join(out)


@dataclass
class Window:
    """What :func:`profile_window` measured: the census step and the profiled steps."""

    steps: int
    wall_s: float
    census: list[OpCall]
    events: list[Any]                  # the profiler's outermost census-named events, in order
    device_type: str
    matched_share: float = 0.0        # share of op time matched to a census call of the same shapes
    matched_by_name_share: float = 0.0  # share matched to one of other shapes (scaled by elements)
    rows: list[dict[str, Any]] = field(default_factory=list)

    def op_times_s(self) -> list[float]:
        if self.device_type == "cuda":
            return [e.device_time_total / 1e6 for e in self.events]
        return [e.cpu_time_total / 1e6 for e in self.events]

    def table(self, ridge: Callable[[str], float], flops_roof: Callable[[str], float],
              run_precision: str) -> list[dict[str, Any]]:
        """One row per op and input shapes, largest time first."""
        times = self.op_times_s()
        groups: dict[tuple[str, ...], dict[str, Any]] = defaultdict(
            lambda: {"calls": 0, "time_s": 0.0, "flops": 0.0, "bytes": 0.0})
        events = [(e.name, _dims(e.input_shapes)) for e in self.events]
        census = [(c.name, c.dims) for c in self.census]
        matched = _align(events, census, self.steps)
        # Batches of varying shapes (text of varying length) repeat the census step's ops with
        # other shapes: those are matched by name, in order, and carry the census call's FLOPs
        # and bytes scaled by their inputs' elements — an estimate, and its share is recorded.
        by_name = {i: j for i, j in _align([(n, "") for n, _ in events], [(n, "") for n, _ in census],
                                           self.steps).items() if i not in matched}
        for i, (event, t) in enumerate(zip(self.events, times)):
            j = matched.get(i, by_name.get(i))
            c = self.census[j] if j is not None else None
            if c is None:
                key, scale = (event.name, UNMATCHED, "-", "", "", ""), 0.0
            elif i in matched:
                key, scale = (c.name, c.shapes, c.dtype, c.args, _one_per_shape(c.layout, c.shapes), c.call), 1.0
            else:
                shapes = [s for s in event.input_shapes if isinstance(s, (list, tuple)) and s]
                elements = sum(math.prod(s) for s in shapes if all(isinstance(d, int) for d in s))
                tensors = [list(s) for s in shapes]
                text = ", ".join("x".join(map(str, s)) for s in shapes)
                key = (c.name, text, c.dtype, c.args, _one_per_shape(c.layout, text),
                       with_shapes(c.call, tensors) if c.call else "")
                scale = elements / c.elements if c.elements else 0.0
            g = groups[key]
            g["calls"] += 1
            g["time_s"] += t
            g["flops"] += c.flops * scale if c else 0.0
            g["bytes"] += c.bytes * scale if c else 0.0
        total = sum(times) or 1.0
        self.matched_share = sum(times[i] for i in matched) / total
        self.matched_by_name_share = sum(times[i] for i in by_name) / total
        rows = []
        for (name, shapes, dtype, op_args, layout, call), g in groups.items():
            precision = _precision_of(dtype, run_precision)
            intensity = g["flops"] / g["bytes"] if g["bytes"] else None
            bound = "memory" if (intensity is None or intensity < ridge(precision)) else "compute"
            if shapes == UNMATCHED:
                bound = "unknown"
            elif g["flops"] == 0 and g["bytes"] == 0:
                bound = "overhead"  # views and bookkeeping: no arithmetic, no traffic
            rate = g["flops"] / g["time_s"] if g["time_s"] > 0 else None
            rows.append({"op": name, "shapes": shapes, "dtype": dtype, "precision": precision,
                         "calls": g["calls"], "time_s": g["time_s"], "share": g["time_s"] / total,
                         "flops": g["flops"], "bytes": g["bytes"], "intensity": intensity,
                         "flops_per_s": rate,
                         "bytes_per_s": g["bytes"] / g["time_s"] if g["time_s"] > 0 else None,
                         "fraction_of_roof": rate / flops_roof(precision) if rate else None,
                         "bound": bound, "args": op_args, "layout": layout, "call": call})
        rows.sort(key=lambda r: -r["time_s"])
        self.rows = rows
        return rows


def _dims(shapes: Any) -> str:
    """The non-scalar tensor shapes of an op's inputs, as both sides can record them."""
    return ";".join(str(list(s)) for s in shapes if isinstance(s, (list, tuple)) and s
                    and all(isinstance(d, int) for d in s))


def _one_per_shape(layout: str, shapes: str) -> str:
    """``layout`` where it names one memory order per shape of the row, else "" (the profiler lists a tensor list's
    tensors as one input, the census each: the counts can differ)."""
    return layout if len(layout.split(",")) == len(shapes.split(", ")) else ""


def _align(events: list[tuple[str, str]], census: list[tuple[str, str]], steps: int) -> dict[int, int]:
    """Profiled op index → census index, for the ops the census step also ran.

    The window's steps need not repeat the census step exactly (an entry may add work
    every few steps, e.g. a lookahead), and the census also sees ops that an op's
    autograd kernel calls itself (``relu_`` saving a ``detach``), which the profiler
    shows nested inside the caller. So the census step, repeated once per profiled
    step, is aligned with the window's sequence of (op, input shapes) (``difflib``'s
    longest matching blocks); ``table`` aligns what is left by op name alone, and reports
    what is still left without FLOPs or bytes.
    """
    expected = census * steps
    blocks = difflib.SequenceMatcher(None, expected, events, autojunk=False).get_matching_blocks()
    m = len(census)
    return {b + k: (a + k) % m for a, b, size in blocks for k in range(size)}


def _precision_of(dtype: str, run_precision: str) -> str:
    for torch_dtype, name in LOW_PRECISION.items():
        if dtype == str(torch_dtype).removeprefix("torch."):
            return name
    return "tf32" if run_precision == "tf32" else "fp32"


def _outermost(events: Any, names: set[str]) -> list[Any]:
    """Profiler events named like a census op with no census-named ancestor, in time order."""
    chosen = []
    for e in events:
        if e.name not in names:
            continue
        parent = e.cpu_parent
        while parent is not None and parent.name not in names:
            parent = parent.cpu_parent
        if parent is None:
            chosen.append(e)
    return sorted(chosen, key=lambda e: e.time_range.start)


@contextlib.contextmanager
def _native_stderr_muted() -> Iterator[None]:
    """File descriptor 2 sent to /dev/null for a moment: Kineto writes "USDT … profiler_start/stop" lines from C++
    to the terminal at every start and stop, lines no setting turns off; Python's own errors are unaffected
    (raised, not printed, inside the moment)."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


class StepWindow:
    """A profiled window driven by optimizer steps, in whatever loop takes them: after ``warm_steps`` steps
    one census step (every op's shapes, FLOPs and bytes), then ``steps`` steps under ``torch.profiler``.
    :meth:`on_step` is an optimizer-step post hook; it returns True at the step that ends the window.
    :func:`profile_window` drives an entry's ``train`` through one; a tracked script's loop drives one
    itself (``dawnbench.track(profile_steps=N)``).

    The Chrome ``trace`` marks each step (``ProfilerStep#N``, one per optimizer step) and names its rank
    (``distributedInfo``), as HolisticTraceAnalysis and Perfetto expect."""

    def __init__(self, device: torch.device, steps: int, warm_steps: int = 3, rank: int = 0,
                 world_size: int = 1) -> None:
        if steps < 1:
            raise DawnbenchError(f"--steps must be at least 1, not {steps}.")
        self.device, self.steps, self.warm_steps = device, steps, warm_steps
        self.rank, self.world_size = rank, world_size
        self._sync = device_sync(device) or (lambda: None)
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
        # A schedule that always records is the default's behaviour plus the ProfilerStep#N markers.
        self._prof = profile(activities=activities, record_shapes=True, schedule=lambda _step: ProfilerAction.RECORD)
        self._census = _Census()
        self._marks: dict[str, float] = {}
        self.count = 0                 # optimizer steps seen
        if warm_steps == 0:
            self._census.start()

    @property
    def done(self) -> bool:
        return "end" in self._marks

    def on_step(self, _optimizer: Any = None, _args: Any = None, _kwargs: Any = None) -> bool:
        if self.done:
            return False
        self.count += 1
        first = self.warm_steps + 1           # the step that ends the census and opens the profiler
        if self.count == self.warm_steps:
            self._census.start()
        elif self.count == first:
            self._census.stop()
            self._sync()
            with _native_stderr_muted():
                self._prof.start()
            # torch writes distributedInfo only inside a process group; a trace names its rank always.
            self._prof.add_metadata_json("distributedInfo", json.dumps(
                {"backend": "none", "rank": self.rank, "world_size": self.world_size}))
            self._marks["start"] = time.perf_counter()
        elif self.count == first + self.steps:
            self._sync()
            self._marks["end"] = time.perf_counter()
            with _native_stderr_muted():
                self._prof.stop()
            return True
        elif self.count > first:
            self._prof.step()  # closes ProfilerStep#N and opens N+1: the step markers trace tools read
        return False

    def close(self) -> None:
        """Leave the census and the profiler wherever the loop ended (an unfinished window is discarded)."""
        self._census.stop()
        if "start" in self._marks and not self.done:
            with _native_stderr_muted():
                self._prof.stop()

    def window(self, trace: Path | None = None) -> Window:
        """What the finished window measured (its Chrome ``trace`` written where asked)."""
        if not self.done:
            raise DawnbenchError(f"the training ended after {self.count} optimizer steps, before the "
                                 f"{self.warm_steps} warm + 1 census + {self.steps} profiled steps; pass a "
                                 "smaller --steps.")
        if trace is not None:
            trace.parent.mkdir(parents=True, exist_ok=True)
            self._prof.export_chrome_trace(str(trace))
        names = {c.name for c in self._census.calls}
        return Window(self.steps, self._marks["end"] - self._marks["start"], self._census.calls,
                      _outermost(self._prof.events(), names), self.device.type)


def profile_window(train: Iterator[Any], device: torch.device, steps: int, warm_steps: int = 3,
                   trace: Path | None = None, rank: int = 0, world_size: int = 1) -> Window:
    """Drive a ``train`` generator through a :class:`StepWindow`; the generator is closed at the end of the
    window (its evaluation points pass by: nothing is evaluated here)."""
    window = StepWindow(device, steps, warm_steps, rank, world_size)

    def on_step(*args: Any) -> None:
        if window.on_step(*args):
            raise StepLimitReached

    handle = register_optimizer_step_post_hook(on_step)
    try:
        for _ in train:
            pass
    except StepLimitReached:
        pass
    finally:
        window.close()
        handle.remove()
        train.close()
    return window.window(trace)
