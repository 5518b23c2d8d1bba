"""Numerical precision as a run option: fp32, tf32, bf16, fp16.

    check_precision("bf16", device, entry_cls)     # bad input is refused before anything runs
    with precision_scope("bf16", device, entry_cls.own_precisions):
        ...                                         # train steps / predict

What each precision means here:

* ``fp32``  every float op in fp32; TF32 is switched *off* for cuBLAS and cuDNN
            (cuDNN's default is on, which is how a "fp32" run came out at 1.9× the
            fp32 roof).
* ``tf32``  fp32 tensors, with TF32 tensor-core math allowed for matmuls and
            convolutions (CUDA, compute capability ≥ 8.0).
* ``bf16``  ``torch.autocast`` to bfloat16 around ``train`` and ``predict``; CUDA with
            bf16 support, or a CPU whose oneDNN has bf16 kernels (AVX512-BF16/AMX).
* ``fp16``  autocast to float16 plus loss scaling: the entry must step through
            ``ctx.scaler`` (a ``torch.amp.GradScaler``), so it has to declare fp16.

A CPU without native bf16 or fp16 kernels still executes both under autocast (torch
emulates them, several times slower than fp32): ``run`` refuses them there, since a time
to accuracy of an emulation says nothing of the format; ``profile --emulated`` lets
them through (``check_precision(..., emulated_ok=True)``), for the op census a
prediction for another device reads.

An entry lists the precisions it accepts in ``Entry.precisions``; those it
implements itself (say fp16 weights with fp32 BatchNorm) in ``Entry.own_precisions``
— for those the harness sets the TF32 flags but no autocast, and the entry reads
``ctx.precision``.

Autocast runs with its weight-cast cache off. The cache keeps the low-precision copy
of every weight until the outermost autocast region exits; the harness's region
spans many optimizer steps (a whole stretch of ``train``), so with the cache on every
forward pass would keep using the weights of the first step — training then stays at
chance, which is what a bf16 wrapper around ``cifar10-fast`` measured on an H100.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Protocol

from dawnbench.errors import DawnbenchError

if TYPE_CHECKING:  # torch loads on first use: the CLI imports the names below and starts fast
    import torch


class DeclaresPrecisions(Protocol):
    """What :func:`check_precision` reads of an entry class (``dawnbench.entries.base.Entry`` has it)."""

    name: str
    precisions: tuple[str, ...]         # run under the harness's autocast
    own_precisions: tuple[str, ...]     # implemented by the entry itself

PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
AUTOCAST_DTYPES = {"bf16": "bfloat16", "fp16": "float16"}  # torch dtype names
ELEMENT_BYTES = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2}   # bytes an element of each precision holds
# MLPerf's values for lowest_numerical_precision_in_linear
MLPERF_NAMES = {"fp32": "fp32", "tf32": "tf32", "bf16": "bfloat16", "fp16": "fp16"}


def device_supports(precision: str, device: torch.device) -> tuple[bool, str]:
    """Whether ``device`` runs ``precision`` natively, and if not, why."""
    import torch

    if precision == "fp32":
        return True, ""
    if device.type == "cuda":
        major, _ = torch.cuda.get_device_capability(device)
        if precision == "tf32" and major < 8:
            return False, "TF32 needs an Ampere or newer GPU (compute capability ≥ 8.0)"
        if precision == "bf16" and not torch.cuda.is_bf16_supported():
            return False, "this GPU has no bfloat16 support"
        return True, ""
    if device.type == "cpu":
        if precision == "tf32":
            return False, "TF32 is a GPU tensor-core format; CPUs have no TF32 arithmetic"
        if precision == "bf16" and not torch.ops.mkldnn._is_mkldnn_bf16_supported():
            return False, "this CPU has no native bfloat16 kernels (it needs AVX512-BF16 or AMX)"
        if precision == "fp16" and not torch.ops.mkldnn._is_mkldnn_fp16_supported():
            return False, "this CPU has no native float16 kernels (it needs AVX512-FP16 or AMX-FP16)"
        return True, ""
    return False, f"precision {precision} is not supported on {device.type} by this harness"


def supported_precisions(device: torch.device) -> list[str]:
    return [p for p in PRECISIONS if device_supports(p, device)[0]]


EMULATED_ON_CPU = ("bf16", "fp16")  # autocast formats torch executes on any CPU, natively or not


def labelled(precision: str, emulated: object) -> str:
    """``precision`` as every output names it: "bf16 (emulated)" where it was (``emulated``: the reason, or falsy)."""
    return f"{precision} (emulated)" if emulated else precision


def check_precision(precision: str, device: torch.device, entry_cls: DeclaresPrecisions,
                    emulated_ok: bool = False) -> str | None:
    """Refuse, in one paragraph, a precision the entry or the device cannot run. With ``emulated_ok``, a
    precision a CPU executes only by emulation is let through: why it is not native is returned (None:
    it is)."""
    if precision not in PRECISIONS:
        raise DawnbenchError(f"--precision {precision!r}: not a precision; use one of {', '.join(PRECISIONS)}.")
    accepted = tuple(entry_cls.precisions) + tuple(entry_cls.own_precisions)
    if precision not in accepted:
        raise DawnbenchError(
            f"--precision {precision}: entry '{entry_cls.name}' does not support it (it declares "
            f"{', '.join(dict.fromkeys(accepted))}). fp16 needs an entry that steps through ctx.scaler "
            "(loss scaling) and lists fp16 in Entry.precisions; pick one of the declared precisions.")
    ok, why = device_supports(precision, device)
    if ok:
        return None
    emulated = device.type == "cpu" and precision in EMULATED_ON_CPU
    if emulated and emulated_ok:
        return why
    raise DawnbenchError(f"--precision {precision} on {device}: {why}. Precisions this device runs: "
                         f"{', '.join(supported_precisions(device))}"
                         + (f". (`dawnbench profile --precision {precision} --emulated` takes its op census "
                            "anyway, for `predict` on another device.)" if emulated else "."))


@contextmanager
def tf32_flags(allow: bool) -> Iterator[None]:
    """Set cuBLAS/cuDNN TF32 permission for the block, and put the previous values back."""
    import torch

    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = allow
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


@contextmanager
def precision_scope(precision: str, device: torch.device, own: tuple[str, ...] = ()) -> Iterator[None]:
    """The numeric environment of ``precision``: TF32 flags, and autocast unless the entry does it."""
    import torch

    with ExitStack() as stack:
        stack.enter_context(tf32_flags(precision == "tf32"))
        if precision in AUTOCAST_DTYPES and precision not in own:
            stack.enter_context(torch.autocast(device.type, dtype=getattr(torch, AUTOCAST_DTYPES[precision]),
                                               cache_enabled=False))
        yield


def make_scaler(precision: str, device: torch.device, own: tuple[str, ...] = ()) -> torch.amp.GradScaler:
    """Loss scaling for harness-managed fp16; a pass-through (disabled) scaler otherwise."""
    import torch

    return torch.amp.GradScaler(device.type, enabled=precision == "fp16" and precision not in own)
