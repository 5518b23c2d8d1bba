"""An application's ops grouped into kernel classes (SPEC §19 last item; the MLPerf characterisation's
Tables 7–8), named as the kernel suites are, so "an application's GEMM time" and "the GEMM kernel
benchmark" can be read together.

    rows = classify(read_ops(profile_dir))        # one row per class, most time first

The classes are the op table's vocabulary: a profile's summary, the predictors and ``classes``
(``analysis/classes.py``: a table, or two side by side) all name ops by them.

Each op of a profile's table (``ops.tsv``) goes to one class by its ATen name: matrix multiply
(``mm``, ``addmm``, ``bmm``, ``linear``, attention kernels; suite ``gemm``), convolution forward,
convolution backward wrt inputs and wrt parameters (``conv``), recurrent (``rnn``), communication
(``allreduce``), normalisation, pooling, reduction and softmax (losses included), copies and
layout changes (views too: they move nothing), optimizer (``_foreach_*`` and fused optimizer
steps), and elementwise — everything else.

ATen's ``convolution_backward`` computes both gradients in one call; its time and FLOPs are split
by what the census counted: when its FLOPs are twice a forward convolution of its shapes it
computed both gradients (half each), when they equal one forward only the weight gradient (the
input of a network's first convolution needs none). A class row: time and its share of the op
time, the cumulative share, calls, distinct input shapes, FLOPs, bytes, intensity, FLOP/s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

MATMUL, CONV_FWD, CONV_INPUTS, CONV_PARAMS = ("matrix multiply", "convolution forward",
                                               "convolution backward wrt inputs",
                                               "convolution backward wrt parameters")
RECURRENT, COMMUNICATION, NORM, POOL = "recurrent", "communication", "normalisation", "pooling"
REDUCE, COPIES, OPTIMIZER, ELEMENTWISE = ("reduction and softmax", "copies and layout changes", "optimizer",
                                          "elementwise")
SUITE_OF = {MATMUL: "gemm", CONV_FWD: "conv", CONV_INPUTS: "conv", CONV_PARAMS: "conv", RECURRENT: "rnn",
            COMMUNICATION: "allreduce"}

_NAMES = {
    MATMUL: {"mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "addmv", "mv", "dot", "einsum", "_scaled_mm",
             "scaled_dot_product_attention"},
    CONV_FWD: {"convolution", "_convolution", "conv1d", "conv2d", "conv3d", "mkldnn_convolution", "cudnn_convolution",
               "_nnpack_spatial_convolution", "slow_conv2d_forward", "_conv_depthwise2d", "thnn_conv2d",
               "conv_depthwise3d", "miopen_convolution"},
    RECURRENT: {"lstm", "gru", "rnn_tanh", "rnn_relu", "_cudnn_rnn", "_cudnn_rnn_backward", "mkldnn_rnn_layer",
                "mkldnn_rnn_layer_backward", "_thnn_fused_lstm_cell", "_thnn_fused_gru_cell", "lstm_cell",
                "gru_cell", "rnn_tanh_cell", "rnn_relu_cell", "_thnn_fused_lstm_cell_backward_impl",
                "_thnn_fused_gru_cell_backward"},
    NORM: {"batch_norm", "native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_no_training",
           "native_batch_norm_backward", "_batch_norm_impl_index", "cudnn_batch_norm", "cudnn_batch_norm_backward",
           "layer_norm", "native_layer_norm", "native_layer_norm_backward", "group_norm", "native_group_norm",
           "native_group_norm_backward", "instance_norm", "_batch_norm_with_update", "batch_norm_backward",
           "_batch_norm_no_update", "rms_norm", "_fused_rms_norm"},
    POOL: {"max_pool2d", "max_pool2d_with_indices", "max_pool2d_with_indices_backward", "avg_pool2d",
           "avg_pool2d_backward", "adaptive_avg_pool2d", "_adaptive_avg_pool2d", "_adaptive_avg_pool2d_backward",
           "adaptive_max_pool2d", "adaptive_max_pool2d_backward", "mkldnn_max_pool2d", "max_pool3d_with_indices",
           "avg_pool3d", "max_pool1d"},
    REDUCE: {"sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "softmax", "_softmax", "log_softmax",
             "_log_softmax", "_softmax_backward_data", "_log_softmax_backward_data", "nll_loss", "nll_loss_forward",
             "nll_loss_backward", "nll_loss2d_forward", "nll_loss2d_backward", "cross_entropy_loss", "norm",
             "linalg_vector_norm", "var", "std", "var_mean", "std_mean", "prod", "cumsum", "topk", "sort",
             "logsumexp", "all", "any", "mse_loss", "mse_loss_backward", "binary_cross_entropy_with_logits"},
    COPIES: {"copy_", "_to_copy", "to", "clone", "contiguous", "cat", "stack", "index", "index_select", "gather",
             "scatter", "scatter_add", "scatter_add_", "embedding", "embedding_dense_backward", "constant_pad_nd",
             "reflection_pad2d", "reflection_pad2d_backward", "replication_pad2d", "pad", "flip", "roll", "repeat",
             "masked_select", "nonzero", "index_put_", "_index_put_impl_", "narrow_copy", "select_backward",
             "slice_backward", "zeros_like", "empty_like", "unfold", "im2col", "col2im", "pixel_shuffle", "t",
             "transpose", "permute", "view", "_unsafe_view", "reshape", "expand", "as_strided", "slice", "select",
             "squeeze", "unsqueeze", "detach", "alias", "split", "split_with_sizes", "chunk", "unbind", "_reshape_alias",
             "empty", "empty_strided", "zeros", "ones", "new_zeros", "new_empty", "new_empty_strided", "lift_fresh"},
}
CONV_BACKWARD = {"convolution_backward", "mkldnn_convolution_backward", "cudnn_convolution_backward",
                  "_convolution_backward", "convolution_backward_overrideable"}


def op_class(name: str) -> str:
    """The class of an ATen op (``aten::addmm`` → matrix multiply); a convolution backward is the backward wrt
    parameters here (:func:`shares` splits it between its two gradients by its FLOPs)."""
    base = name.split("::")[-1].split(".")[0]
    if base in CONV_BACKWARD:
        return CONV_PARAMS
    if base.startswith(("_foreach_", "_fused_")) or base in ("_fused_adam_", "_fused_adamw_", "_fused_sgd_"):
        return OPTIMIZER
    if "scaled_dot_product" in base or "flash_attention" in base or "efficient_attention" in base:
        return MATMUL
    if name.startswith(("c10d::", "nccl:", "gloo:")) or base in ("record_param_comms", "allreduce_", "broadcast_",
                                                                 "allgather_", "reduce_scatter_"):
        return COMMUNICATION
    for cls, names in _NAMES.items():
        if base in names or base.rstrip("_") in names:
            return cls
    return ELEMENTWISE


def _forward_flops(shapes: str) -> float | None:
    """A forward convolution's FLOPs from convolution_backward's shapes: grad_output N×K×P×Q, input, weight K×C×R×S."""
    try:
        grad_out, _, weight = [[int(d) for d in s.split("x")] for s in shapes.split(", ")[:3]]
    except ValueError:
        return None
    per_output = 1
    for d in weight[1:]:
        per_output *= d
    outputs = 1
    for d in grad_out:
        outputs *= d
    return 2.0 * outputs * per_output


def shares(row: dict[str, Any]) -> list[tuple[str, float]]:
    """The classes an ``ops.tsv`` row's time and FLOPs go to, with their shares: its class whole, or a convolution
    backward split between its gradients (see the module docstring)."""
    if row["op"].split("::")[-1].split(".")[0] not in CONV_BACKWARD:
        return [(op_class(row["op"]), 1.0)]
    forward = _forward_flops(row["shapes"] or "")
    both = forward is None or not row["flops"] or row["flops"] / row["calls"] > 1.5 * forward
    return [(CONV_INPUTS, 0.5), (CONV_PARAMS, 0.5)] if both else [(CONV_PARAMS, 1.0)]


def classify(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per kernel class present, most time first (see the module docstring)."""
    sums: dict[str, dict[str, Any]] = {}

    def add(cls: str, row: dict[str, Any], share: float) -> None:
        acc = sums.setdefault(cls, {"class": cls, "suite": SUITE_OF.get(cls), "time_s": 0.0, "calls": 0,
                                    "shapes": set(), "flops": 0.0, "bytes": 0.0})
        acc["time_s"] += (row["time_s"] or 0.0) * share
        acc["calls"] += int(row["calls"] or 0)
        acc["shapes"].add(row["shapes"])
        acc["flops"] += (row["flops"] or 0.0) * share
        acc["bytes"] += (row["bytes"] or 0.0) * share

    for row in rows:
        for cls, share in shares(row):
            add(cls, row, share)
    total = sum(acc["time_s"] for acc in sums.values()) or 1.0
    out, cumulative = [], 0.0
    for acc in sorted(sums.values(), key=lambda a: -a["time_s"]):
        cumulative += acc["time_s"] / total
        out.append({**acc, "shapes": len(acc["shapes"]), "time_share": acc["time_s"] / total,
                    "cumulative_share": cumulative,
                    "intensity": acc["flops"] / acc["bytes"] if acc["bytes"] else None,
                    "flops_per_s": acc["flops"] / acc["time_s"] if acc["time_s"] > 0 else None})
    return out
