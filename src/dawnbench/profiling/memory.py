"""Live tensor memory, counted as torch allocates it: what a training step needs, measured on
any device before the step is run at full size (the harness's memory plan, SPEC §12).

    with LiveBytes() as live:
        step()
    live.peak["cpu"], live.live["cpu"]      # bytes, per device type

:class:`LiveBytes` is a ``TorchDispatchMode``: every op that returns a tensor whose storage
it has not seen adds that storage's size, and a weak reference on the storage takes it
off again when torch frees it. Views and in-place results share a storage and count once.
What it counts is the tensors alive at each instant — parameters, gradients, optimizer
state, activations saved for the backward pass, temporaries — on every device; what it
cannot see is memory a library holds outside tensors (oneDNN's scratch buffers, the C
allocator's free lists, NumPy arrays), which is why the plan that uses it adds headroom.
Unlike the device allocator's statistics it works on a CPU too, and it is exact and
repeatable: the same step always gives the same figure. ``mark()`` starts a new peak from
the bytes alive now (the peak of one step, not of everything before it).

On a CUDA device :func:`live_bytes` counts with the caching allocator's own statistics
(:class:`AllocatorBytes`, the same interface) instead: under a dispatch mode, CUDA autocast
let a bf16 activation reach a convolution with its fp32 weight uncast (torch 2.11 on an
H200), so no mode may sit under a CUDA step. The allocator counts CUDA tensors only.
"""

from __future__ import annotations

import weakref
from collections import defaultdict

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten


class LiveBytes(TorchDispatchMode):
    """Bytes of tensor storage alive (``live``) and the most alive at once (``peak``), per device
    type (``"cpu"``, ``"cuda"``), for the ops run inside its ``with`` block."""

    def __init__(self) -> None:
        super().__init__()
        self.live: dict[str, int] = defaultdict(int)
        self.peak: dict[str, int] = defaultdict(int)
        self._sizes: dict[int, tuple[str, int]] = {}

    def mark(self) -> None:
        """From now on ``peak`` is the most alive at once after this instant."""
        self.peak = defaultdict(int, self.live)

    def _freed(self, key: int) -> None:
        device, size = self._sizes.pop(key, ("cpu", 0))
        self.live[device] -= size

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001 - torch's signature
        out = func(*args, **(kwargs or {}))
        for tensor in tree_flatten(out)[0]:
            if not isinstance(tensor, torch.Tensor) or tensor.is_meta:
                continue
            storage = tensor.untyped_storage()
            key = id(storage)  # torch keeps one Python object per live storage, so the id names it
            if key in self._sizes:
                continue
            device = tensor.device.type
            self._sizes[key] = (device, storage.nbytes())
            self.live[device] += storage.nbytes()
            self.peak[device] = max(self.peak[device], self.live[device])
            weakref.finalize(storage, self._freed, key)
        return out


class AllocatorBytes:
    """:class:`LiveBytes`'s counts for one CUDA device, from the caching allocator: ``live`` and ``peak``
    are the tensor bytes allocated now and at most since ``mark()``, above what was allocated when the
    ``with`` block began (so, as with the mode, only what the block made counts)."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self._origin = 0

    @property
    def live(self) -> dict[str, int]:
        return {"cuda": torch.cuda.memory_allocated(self.device) - self._origin}

    @property
    def peak(self) -> dict[str, int]:
        return {"cuda": torch.cuda.max_memory_allocated(self.device) - self._origin}

    def mark(self) -> None:
        torch.cuda.reset_peak_memory_stats(self.device)

    def __enter__(self) -> AllocatorBytes:
        self._origin = torch.cuda.memory_allocated(self.device)
        self.mark()
        return self

    def __exit__(self, *_exc: object) -> None:
        return None


def live_bytes(device: torch.device) -> LiveBytes | AllocatorBytes:
    """The counter for a step on ``device``: the allocator's on CUDA, the dispatch mode elsewhere."""
    return AllocatorBytes(device) if device.type == "cuda" else LiveBytes()
