"""DeepBench's problems, read from the copy this package carries (``deepbench/``, with
Baidu's Apache-2.0 licence and the attribution in its README), and the ``--quick`` subset.

A :class:`Problem` keeps DeepBench's own field names in ``params``: GEMM ``m, n, k,
a_transposed, b_transposed``; convolution ``w, h, c, n, k, filter_w, filter_h, pad_w, pad_h,
stride_w, stride_h`` (NCHW); RNN ``hidden, batch, timesteps, cell`` (``vanilla`` — ReLU —,
``lstm``, ``gru``), and ``input`` where a layer's input width is not its hidden width (an
application's layer: DeepBench's have none); all-reduce ``floats``. Its passes (:data:`PASSES`) are what one row of
``kernels.json`` times.

**The quick subset** (``--quick``: every suite in a few minutes on two cores):

* GEMM: 12 of the training set, evenly spaced in FLOPs from the smallest to the 90th
  percentile (the largest ten per cent take seconds a call on a CPU);
* convolution: 10 of the training set, evenly spaced in FLOPs over all of it;
* RNN: the MLPerf characterisation's six configurations (vanilla DeepSpeech 1760 × 16, LSTM
  machine translation 512 × 16, LSTM language model 4096 × 16, LSTM character LM 256 × 16,
  GRU DeepSpeech 2816 × 32, GRU speaker ID 1024 × 32), with their timesteps shortened where a
  pass would count more than ``QUICK_RNN_FLOPS`` (each row records the timesteps it ran);
* all-reduce: 100,000, 4,194,304 and 38,360,000 floats, on 2 ranks;
* memory: the rows of ``applications.csv`` marked ``quick`` (the heaviest of each entry and class).

**The applications set** (``applications.csv``, written by ``benchmarks/application_problems.py`` from the
reference entries' profiles, never by hand): every op call that carried at least ``APPLICATION_SHARE`` of some
entry's profiled step, as the recorded call (``opcalls/calls.py``: the op, its shapes, strides and arguments), with
the entry, precision and op it came from and its share of that step. Its memory-bound classes (elementwise,
normalisation, pooling, reductions and softmax, copies and layout changes, optimizer) are the **memory suite**
(SPEC §19's fifth suite); its matrix multiplies, convolutions and recurrent layers are the gemm, conv and rnn suites'
``applications`` set — timed as the step ran them (a channels-last convolution in channels-last, a ``bmm`` on
strided views with its strides). A row of this set is a *replay* (``params["call"]``): one call of that op, its time
and its minimum traffic (``params["bytes"]``, the census's count); its pass is ``backward`` where the op is a
gradient's (its name says ``backward``), else ``forward``.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

SUITES = ("gemm", "conv", "rnn", "allreduce", "memory")
SETS = ("training", "inference_server", "inference_device", "applications")
APPLICATIONS = "applications"        # the reference entries' own ops (applications.csv): the memory suite's set
PUBLISHED_SET = "training"          # the set DeepBench published results for
PASSES = {"gemm": ("forward",), "conv": ("forward", "backward_inputs", "backward_params"),
          "rnn": ("forward", "backward"), "allreduce": ("allreduce",), "memory": ("forward", "backward")}
CELL_GATES = {"vanilla": 1, "gru": 3, "lstm": 4}   # g in DeepBench's 2·g·h²·n·t
QUICK_GEMMS, QUICK_CONVS = 12, 10
QUICK_RNN_FLOPS = 10e9                              # per pass, at most, in the quick set
QUICK_RNN = (("vanilla", 1760, 16), ("lstm", 512, 16), ("lstm", 4096, 16), ("lstm", 256, 16),
             ("gru", 2816, 32), ("gru", 1024, 32))  # (cell, hidden, batch): the characterisation's six
QUICK_ALLREDUCE = (100_000, 4_194_304, 38_360_000)
QUICK_RANKS = 2
APPLICATION_SHARE = 0.01                            # of an entry's step, for an op call to join applications.csv
_FILES = {"gemm": "gemm_problems.csv", "conv": "conv_problems.csv", "rnn": "rnn_problems.csv",
          "allreduce": "all_reduce_problems.csv"}
_BOOLS = {"true": True, "false": False}


@dataclass(frozen=True)
class Problem:
    suite: str
    set: str | None                        # None for all-reduce (DeepBench gives it no set)
    params: dict[str, Any] = field(hash=False)
    run_params: dict[str, Any] | None = field(default=None, hash=False)  # what ran, where it differs (quick RNN)

    @property
    def ran(self) -> dict[str, Any]:
        return {**self.params, **(self.run_params or {})}

    @property
    def replay(self) -> bool:
        """One recorded op call made again (the applications set), not a DeepBench problem."""
        return "call" in self.params


def data_text(name: str) -> str:
    """A file of the carried DeepBench data (``deepbench/NAME``)."""
    return resources.files("dawnbench.kernels").joinpath("deepbench", name).read_text(encoding="utf-8")


def _value(text: str) -> Any:
    return _BOOLS[text] if text in _BOOLS else int(text) if text.lstrip("-").isdigit() else text


@cache
def _rows(suite: str) -> tuple[dict[str, Any], ...]:
    return tuple({k: _value(v) for k, v in row.items()} for row in csv.DictReader(io.StringIO(data_text(_FILES[suite]))))


@cache
def applications() -> tuple[Problem, ...]:
    """Every row of ``applications.csv`` (see the module docstring), heaviest first."""
    text = resources.files("dawnbench.kernels").joinpath("applications.csv").read_text(encoding="utf-8")
    out = []
    for row in csv.DictReader(io.StringIO(text)):
        params = {"op": row["op"], "class": row["class"], "pass": row["pass"], "precision": row["precision"],
                  "flops": float(row["flops"]), "bytes": float(row["bytes"]), "entry": row["entry"],
                  "share": float(row["share"]), "quick": row["quick"] == "1", "call": row["call"]}
        out.append(Problem(row["suite"], APPLICATIONS, params))
    return tuple(out)


def problems(suite: str, set_name: str) -> list[Problem]:
    """Every problem of ``suite`` in ``set_name``, in DeepBench's order (all-reduce: all its sizes; the memory
    suite and the applications set: applications.csv's rows)."""
    if suite == "memory" or set_name == APPLICATIONS:
        return [p for p in applications() if p.suite == suite]
    if suite == "allreduce":
        return [Problem("allreduce", None, {"floats": row["floats"]}) for row in _rows(suite)]
    return [Problem(suite, set_name, {k: v for k, v in row.items() if k != "set"})
            for row in _rows(suite) if row["set"] == set_name]


def flops(problem: Problem, pass_name: str, params: dict[str, Any] | None = None) -> float:
    """FLOPs of one pass, DeepBench's counts: GEMM 2·m·n·k; convolution 2·n·k·p·q·c·r·s per pass; RNN
    2·g·h²·n·t per pass (the recurrent GEMMs only), a backward of inputs and parameters counting
    two — an application's layer of input width i counts g·h·(h + i)·n·t, the same where i = h and
    in proportion to its work where not; all-reduce none."""
    p = problem.ran if params is None else params
    if problem.replay:
        return float(p["flops"])
    if problem.suite == "gemm":
        return 2.0 * p["m"] * p["n"] * p["k"]
    if problem.suite == "conv":
        out_h, out_w = conv_output(p)
        return 2.0 * p["n"] * p["k"] * out_h * out_w * p["c"] * p["filter_h"] * p["filter_w"]
    if problem.suite == "rnn":
        h = p["hidden"]
        per_pass = CELL_GATES[p["cell"]] * h * (h + p.get("input", h)) * p["batch"] * p["timesteps"]
        return per_pass * (2 if pass_name == "backward" else 1)
    return 0.0


def conv_output(p: dict[str, Any]) -> tuple[int, int]:
    """(p, q): the output height and width of a convolution problem."""
    return ((p["h"] + 2 * p["pad_h"] - p["filter_h"]) // p["stride_h"] + 1,
            (p["w"] + 2 * p["pad_w"] - p["filter_w"]) // p["stride_w"] + 1)


def tensor_elements(problem: Problem) -> dict[str, int]:
    """The elements of the pass's operands (what the byte counts and the memory estimate use)."""
    p = problem.ran
    if problem.suite == "gemm":
        return {"a": p["m"] * p["k"], "b": p["k"] * p["n"], "c": p["m"] * p["n"]}
    if problem.suite == "conv":
        out_h, out_w = conv_output(p)
        return {"x": p["n"] * p["c"] * p["h"] * p["w"], "w": p["k"] * p["c"] * p["filter_h"] * p["filter_w"],
                "y": p["n"] * p["k"] * out_h * out_w}
    if problem.suite == "rnn":
        g, h, n, t, i = CELL_GATES[p["cell"]], p["hidden"], p["batch"], p["timesteps"], p.get("input", p["hidden"])
        return {"x": t * n * i, "y": t * n * h, "weights": g * h * (i + h),
                "state": n * h * (2 if p["cell"] == "lstm" else 1),
                "saved": t * n * h * (g + 2)}   # what autograd keeps for the backward: gates and states
    return {"buffer": p["floats"]}


def bytes_moved(problem: Problem, pass_name: str, element: int) -> float:
    """The minimum traffic of a pass — every input read once, every output written once — so the
    intensity and the memory throughput derived from it are lower bounds."""
    if problem.replay:      # counted by the census at the dtypes it ran: ``element`` does not apply
        return float(problem.params["bytes"])
    e = tensor_elements(problem)
    if problem.suite == "gemm":
        return float(e["a"] + e["b"] + e["c"]) * element
    if problem.suite == "conv":   # each pass reads two of (x, w, dy) and writes the third's gradient
        return float(e["x"] + e["w"] + e["y"]) * element
    if problem.suite == "rnn":
        once = e["x"] + e["y"] + e["weights"] + 2 * e["state"]
        return float(once if pass_name == "forward" else 2 * once) * element  # backward: read dy, x, W; write dx, dW
    return float(e["buffer"]) * 4


def memory_bytes(problem: Problem, pass_name: str, element: int) -> int:
    """What a pass holds at once: its operands, and for a backward their gradients and what autograd saved."""
    if problem.replay:      # its tensors, and as much again for what it writes
        from dawnbench.opcalls.calls import footprint  # torch, loaded only where a recorded call is sized

        return 2 * footprint(problem.params["call"])
    e = tensor_elements(problem)
    if problem.suite == "rnn":
        held = e["x"] + e["y"] + e["weights"] + 2 * e["state"] + e["saved"]
        return int(held * element * (2 if pass_name == "backward" else 1))
    if problem.suite == "allreduce":
        return int(e["buffer"] * 4)
    return int(sum(e.values()) * element * (2 if pass_name != "forward" else 1))


def quick(suite: str) -> list[Problem]:
    """The documented ``--quick`` subset of ``suite`` (see the module docstring)."""
    if suite == "allreduce":
        return [Problem("allreduce", None, {"floats": f}) for f in QUICK_ALLREDUCE]
    if suite == "memory":
        return [p for p in applications() if p.suite == "memory" and p.params["quick"]]
    training = problems(suite, "training")
    if suite == "rnn":
        chosen = []
        for cell, hidden, batch in QUICK_RNN:
            problem = next(q for q in training if (q.params["cell"], q.params["hidden"], q.params["batch"]) ==
                           (cell, hidden, batch))
            per_step = flops(problem, "forward") / problem.params["timesteps"]
            steps = max(1, min(problem.params["timesteps"], int(QUICK_RNN_FLOPS // per_step)))
            chosen.append(Problem("rnn", "training", problem.params,
                                  None if steps == problem.params["timesteps"] else {"timesteps": steps}))
        return chosen
    ranked = sorted(training, key=lambda q: flops(q, "forward"))
    if suite == "gemm":
        ranked = ranked[:int(0.9 * len(ranked))]
    count = QUICK_GEMMS if suite == "gemm" else QUICK_CONVS
    picks = sorted({round(i * (len(ranked) - 1) / (count - 1)) for i in range(count)})
    return [ranked[i] for i in picks]
