"""One op's FLOPs: ``torch.utils.flop_counter``'s formulas, and one registered here.

torch's counter has no formula for the fused recurrent layers a CPU runs (``nn.LSTM``/``nn.GRU``/``nn.RNN`` go to
oneDNN's ``mkldnn_rnn_layer``), so a recurrent network counted 0 FLOPs for most of its work; this module registers
one with ``register_flop_formula`` (the counter and the profile's census both use it): a layer's input and
recurrent GEMMs, 2·T·B·G·(I + H) forward for T steps of batch B, G gate rows, input width I and hidden width H; its
backward twice that (the gradients of the inputs and of the weights) — DeepBench's convention for RNN passes, with
the input GEMM included.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils.flop_counter import flop_registry, register_flop_formula


def _rnn_layer_flops(input_shape: Any, weight_ih: Any, weight_hh: Any) -> float:
    steps_by_batch = 1
    for dim in input_shape[:-1]:
        steps_by_batch *= dim
    gates, width_in = weight_ih
    return 2.0 * steps_by_batch * gates * (width_in + weight_hh[1])


@register_flop_formula(torch.ops.aten.mkldnn_rnn_layer)
def _rnn_forward(input: Any, weight0: Any, weight1: Any, *args: Any, **kwargs: Any) -> float:
    return _rnn_layer_flops(input, weight0, weight1)


@register_flop_formula(torch.ops.aten.mkldnn_rnn_layer_backward)
def _rnn_backward(input: Any, weight1: Any, weight2: Any, *args: Any, **kwargs: Any) -> float:
    return 2 * _rnn_layer_flops(input, weight1, weight2)


def op_flops(func: Any, args: tuple, kwargs: dict, out: Any) -> float:
    """One dispatched op's FLOPs by torch's formulas and the ones registered here (0 for the rest)."""
    packet = func._overloadpacket
    return float(flop_registry[packet](*args, **kwargs, out_val=out)) if packet in flop_registry else 0.0
