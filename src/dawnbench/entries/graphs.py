"""A helper for entries: a function of a fixed-shape batch replayed as one CUDA graph.

Batch-1 inference is bound by kernel launches, not arithmetic: test-time
augmentation makes it several small forward passes of tens of kernels each. Captured
once into a CUDA graph, the whole predict is one launch. The graph reads the model's
weights and buffers where they are, so in-place updates (optimizer steps, lookahead,
``load_state_dict``) are seen by later replays; replacing a tensor object is not.
"""

from __future__ import annotations

from collections.abc import Callable

import torch


class CudaGraphed:
    """``fn`` captured on a static copy of ``example``; call it with batches of the same shape."""

    def __init__(self, fn: Callable[[torch.Tensor], torch.Tensor], example: torch.Tensor, warm_calls: int = 3):
        self.static_input = example.clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm up off the default stream, as capture requires
            for _ in range(warm_calls):
                fn(self.static_input)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_output = fn(self.static_input)

    def __call__(self, inputs: torch.Tensor) -> torch.Tensor:
        self.static_input.copy_(inputs, non_blocking=True)
        self.graph.replay()
        return self.static_output.clone()
