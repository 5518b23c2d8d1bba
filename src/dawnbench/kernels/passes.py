"""One pass of one DeepBench problem as a statement to time, its tensors made beforehand.

    fn = statement(problem, "backward_inputs", "bf16", device)   # allocates; nothing timed yet
    fn()                                                          # one convolution backward wrt inputs

* GEMM: ``torch.mm(op(A), op(B), out=C)`` with DeepBench's transposes (a transposed operand is
  stored transposed and viewed back, as the BLAS call sees it).
* Convolution (NCHW, or channels-last where the problem says ``layout: nhwc`` — an application's layer as its
  step ran it; the problem's padding and stride): forward ``F.conv2d``; the two backward
  passes are ATen's ``convolution_backward`` asked for the input gradient only, or the weight
  gradient only — the library call each is, on any device (cuDNN on a GPU, oneDNN on a CPU).
* RNN: ``torch.nn.RNN`` (ReLU, DeepBench's vanilla cell), ``LSTM`` or ``GRU``, hidden → hidden (or
  ``input`` → hidden, an application's layer), one layer, input (timesteps, batch, hidden) — cuDNN's RNN on
  a GPU, as DeepBench's ``rnn_bench``.
  Forward of the training set keeps what autograd needs (a training forward); of the inference
  sets runs under ``inference_mode``. Backward is one pass of autograd through the retained
  graph: inputs and parameters together.

* A replay (the applications set and the memory suite, ``problems.py``): the recorded op call made again
  (``opcalls/calls.py``), its tensors in the dtypes, shapes and strides it ran with; a ValueError says why it
  cannot be (a call this PyTorch refuses).

Inputs are in the precision's type (fp32 for fp32 and tf32, bfloat16, float16); the library
accumulates as it does. TF32 is allowed only for ``tf32``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from dawnbench.opcalls.calls import replay
from dawnbench.precision import tf32_flags
from dawnbench.records.problems import Problem, conv_output

DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
CELLS = {"vanilla": partial(nn.RNN, nonlinearity="relu"), "lstm": nn.LSTM, "gru": nn.GRU}


def statement(problem: Problem, pass_name: str, precision: str, device: torch.device) -> Callable[[], Any]:
    """A callable that runs the pass once (its TF32 setting included)."""
    if problem.replay:          # a recorded op call, at the dtypes and strides it ran with
        fn, _ = replay(problem.params["call"], device)
        return fn
    p, dtype = problem.ran, DTYPES[precision]
    make = {"gemm": _gemm, "conv": _conv, "rnn": _rnn}[problem.suite]
    fn = make(p, pass_name, dtype, device, problem.set == "training")

    def run() -> Any:
        with tf32_flags(precision == "tf32"):
            return fn()
    return run


def _randn(*shape: int, dtype: torch.dtype, device: torch.device, **kw: Any) -> torch.Tensor:
    return torch.randn(*shape, device=device, **kw).to(dtype)


def _gemm(p: dict, pass_name: str, dtype: torch.dtype, device: torch.device, training: bool) -> Callable[[], Any]:
    a = _randn(p["k"], p["m"], dtype=dtype, device=device).t() if p["a_transposed"] else \
        _randn(p["m"], p["k"], dtype=dtype, device=device)
    b = _randn(p["n"], p["k"], dtype=dtype, device=device).t() if p["b_transposed"] else \
        _randn(p["k"], p["n"], dtype=dtype, device=device)
    c = torch.empty(p["m"], p["n"], dtype=dtype, device=device)
    return lambda: torch.mm(a, b, out=c)


def _conv(p: dict, pass_name: str, dtype: torch.dtype, device: torch.device, training: bool) -> Callable[[], Any]:
    order = torch.channels_last if p.get("layout") == "nhwc" else torch.contiguous_format
    x = _randn(p["n"], p["c"], p["h"], p["w"], dtype=dtype, device=device).contiguous(memory_format=order)
    w = _randn(p["k"], p["c"], p["filter_h"], p["filter_w"], dtype=dtype, device=device).contiguous(memory_format=order)
    stride, padding = (p["stride_h"], p["stride_w"]), (p["pad_h"], p["pad_w"])
    if pass_name == "forward":
        return lambda: F.conv2d(x, w, stride=stride, padding=padding)
    out_h, out_w = conv_output(p)
    dy = _randn(p["n"], p["k"], out_h, out_w, dtype=dtype, device=device).contiguous(memory_format=order)
    mask = [True, False, False] if pass_name == "backward_inputs" else [False, True, False]
    return lambda: torch.ops.aten.convolution_backward(dy, x, w, None, stride, padding, (1, 1), False, (0, 0), 1,
                                                       mask)


def _rnn(p: dict, pass_name: str, dtype: torch.dtype, device: torch.device, training: bool) -> Callable[[], Any]:
    width = p.get("input", p["hidden"])
    cell = CELLS[p["cell"]](width, p["hidden"]).to(device=device, dtype=dtype)
    x = _randn(p["timesteps"], p["batch"], width, dtype=dtype, device=device, requires_grad=training)
    if pass_name == "forward":
        if training:
            return lambda: cell(x)
        def infer() -> Any:
            with torch.inference_mode():
                return cell(x)
        return infer
    y, _ = cell(x)
    dy = torch.randn_like(y)
    return lambda: torch.autograd.backward(y, dy, retain_graph=True)
