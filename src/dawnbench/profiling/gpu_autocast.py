"""What CUDA runs, where there is no GPU: a census counts the ops a GPU runs under ``torch.autocast("cuda", dtype)``
(not the CPU's), and the kernels CUDA picks where the CPU or the meta device would pick others.

    with CudaAutocast(torch.bfloat16):
        out = model(**inputs)          # on the meta device: linear in bf16, layer_norm and softmax in fp32, ...
    with CudaAutocast(None):           # fp32: no casts, CUDA's kernel choices only

**Dropout.** On a CUDA tensor, training dropout is one fused kernel that writes the output and a one-byte mask
(``native_dropout``: ``at::dropout``'s fused path for CUDA inputs); elsewhere it is a Bernoulli draw into a mask of
the input's dtype and a multiply, whose mask autograd saves at four bytes an element in fp32. The mode calls the
fused op, so the census counts the GPU's kernels and the memory they save.

Autocast reaches neither the meta device nor, on a CPU-only build, any CUDA tensor, and CPU autocast keeps other
ops in fp32 than CUDA's does (layer norm, softmax, ``pow`` stay in the lower precision on a CPU). This mode applies
CUDA's policy itself, at the Python API, to the functions a model calls — which is where autocast's casts enter
the autograd graph, so the backward follows the forward's dtypes as it does on a GPU:

* ``LOWER`` (CUDA's ``lower_precision_fp``): every fp32 floating input cast to the lower precision — matrix
  multiplies, convolutions, attention, RNN cells;
* ``FP32``: every lower-precision input cast to fp32 — layer and group norm, losses, ``exp``/``log``/``pow`` and
  other transcendental ops, upsampling;
* ``FP32_OPT_DTYPE`` (softmax, log-softmax, sums, products, cumulative sums, norms): run with ``dtype=float32`` where
  an input is in the lower precision and no dtype was given — one kernel that reads the lower precision and writes
  fp32, no separate cast;
* ``PROMOTE``: every floating input cast to the widest among them.

Every other op runs in its inputs' dtype (PyTorch's type promotion). A weight (a leaf that requires grad) is cast
once per autocast region and reused, as autocast's cast cache does. The lists are PyTorch's for CUDA
(``aten/src/ATen/autocast_mode.h``: ``AT_FORALL_LOWER_PRECISION_FP``, ``AT_FORALL_FP32``,
``AT_FORALL_FP32_SET_OPT_DTYPE``, ``AT_FORALL_PROMOTE``, as of PyTorch 2.13); ``COMPOSITES`` names the Python
functions whose ATen ops all fall in one list (``cross_entropy``: ``log_softmax`` and ``nll_loss``, both fp32).
"""

from __future__ import annotations

from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten, tree_map_only

LOWER = frozenset({
    "_convolution", "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d",
    "conv_transpose3d", "convolution", "prelu", "addmm", "addmv", "addr", "matmul", "einsum", "mm", "mv",
    "linalg_vecdot", "linear", "addbmm", "baddbmm", "bmm", "chain_matmul", "linalg_multi_dot", "_thnn_fused_lstm_cell",
    "_thnn_fused_gru_cell", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell",
    "_scaled_dot_product_flash_attention", "scaled_dot_product_attention"})
FP32 = frozenset({
    "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal", "rsqrt", "sinh",
    "tan", "pow", "softplus", "layer_norm", "native_layer_norm", "rms_norm", "group_norm", "frobenius_norm",
    "nuclear_norm", "cosine_similarity", "poisson_nll_loss", "cosine_embedding_loss", "nll_loss", "nll_loss2d",
    "hinge_embedding_loss", "kl_div", "l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss", "margin_ranking_loss",
    "multilabel_margin_loss", "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss",
    "binary_cross_entropy_with_logits", "dist", "pdist", "cdist", "renorm", "logsumexp", "upsample_nearest1d",
    "_upsample_nearest_exact1d", "upsample_nearest2d", "_upsample_nearest_exact2d", "upsample_nearest3d",
    "_upsample_nearest_exact3d", "upsample_linear1d", "upsample_bilinear2d", "_upsample_bilinear2d_aa",
    "upsample_trilinear3d", "upsample_bicubic2d", "_upsample_bicubic2d_aa"})
FP32_OPT_DTYPE = frozenset({"prod", "softmax", "log_softmax", "cumprod", "cumsum", "linalg_vector_norm",
                            "linalg_matrix_norm", "sum"})
PROMOTE = frozenset({"addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "vdot", "grid_sampler", "index_put",
                     "tensordot", "scatter_add"})
# What TF32 mode reaches (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32): cuBLAS's matrix
# multiplies and cuDNN's convolutions, forward and backward, as the census sees them (ATen's names)
TF32_OPS = frozenset({"mm", "addmm", "bmm", "baddbmm", "addbmm", "addmv", "mv", "addr", "matmul", "linear", "einsum",
                      "convolution", "_convolution", "cudnn_convolution", "convolution_backward",
                      "cudnn_convolution_backward"})
# Python-level names of the same ATen ops, and Python composites whose ATen ops all fall in one list
COMPOSITES = {"__matmul__": "matmul", "__rmatmul__": "matmul", "__pow__": "pow", "__rpow__": "pow",
              "cross_entropy": "nll_loss", "interpolate": "upsample_nearest2d", "norm": "linalg_vector_norm"}


def _eligible(t: Any) -> bool:
    """What autocast casts: a floating tensor that is not double (``at::autocast::is_eligible``)."""
    return isinstance(t, torch.Tensor) and t.is_floating_point() and t.dtype is not torch.float64


class CudaAutocast(TorchFunctionMode):
    """CUDA autocast to ``dtype`` (bfloat16 or float16) on any device (see the module docstring)."""

    def __init__(self, dtype: torch.dtype | None) -> None:
        super().__init__()
        self.dtype = dtype
        self.cache: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}   # id(weight) -> (weight, its cast)

    def _cast(self, t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        if t.dtype is dtype:
            return t
        if dtype is self.dtype and t.is_leaf and t.requires_grad and t.dtype is torch.float32:
            held = self.cache.get(id(t))
            if held is None or held[0] is not t:
                held = (t, t.to(dtype))
                self.cache[id(t)] = held
            return held[1]
        return t.to(dtype)

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        name = COMPOSITES.get(name, name)
        if name == "dropout":
            return self._dropout(func, args, kwargs)
        if self.dtype is None:
            return func(*args, **kwargs)
        if name in LOWER:
            args, kwargs = tree_map_only(torch.Tensor, lambda t: self._cast(t, self.dtype) if _eligible(t) else t,
                                         (args, kwargs))
        elif name in FP32:
            args, kwargs = tree_map_only(torch.Tensor, lambda t: self._cast(t, torch.float32) if _eligible(t) else t,
                                         (args, kwargs))
        elif name in FP32_OPT_DTYPE:
            floats = [t for t in tree_flatten((args, kwargs))[0] if _eligible(t)]
            if kwargs.get("dtype") is None and any(t.dtype is not torch.float32 for t in floats):
                kwargs = {**kwargs, "dtype": torch.float32}
        elif name in PROMOTE:
            floats = [t for t in tree_flatten((args, kwargs))[0] if _eligible(t)]
            if floats:
                widest = max((t.dtype for t in floats), key=lambda d: torch.finfo(d).bits)
                args, kwargs = tree_map_only(torch.Tensor, lambda t: self._cast(t, widest) if _eligible(t) else t,
                                             (args, kwargs))
        return func(*args, **kwargs)

    @staticmethod
    def _dropout(func: Any, args: tuple, kwargs: dict) -> Any:
        """Training dropout as CUDA runs it: ``native_dropout``, one kernel and a one-byte mask."""
        given = dict(zip(("input", "p", "training", "inplace"), args)) | kwargs
        x, p, training = given.get("input"), given.get("p", 0.5), given.get("training", True)
        if isinstance(x, torch.Tensor) and training and 0 < p < 1 and x.numel() and x.is_floating_point():
            return torch.native_dropout(x, p, True)[0]
        return func(*args, **kwargs)

    def __exit__(self, *exc: Any) -> Any:
        self.cache.clear()          # autocast clears its cast cache when its outermost region ends
        return super().__exit__(*exc)
