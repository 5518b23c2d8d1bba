"""A split as the harness holds it: what ``predict`` receives, and what the metric compares with.

The harness never assumes images or classes. It evaluates, measures latency and scores
generalisation through a :class:`Split`, whose items are in the form a task's entries
receive them, and whose *targets* (labels, gold answers) stay with the harness:

===============  ==========================================  ===============================
kind             inputs handed to ``predict``                targets
===============  ==========================================  ===============================
arrays           a uint8 tensor N×… (MNIST, CIFAR-10)        int64 labels
jpeg shards      a list of N JPEG byte strings (ImageNet)    int64 labels
questions        a list of N ``Question`` (SQuAD)            the gold answers of each
===============  ==========================================  ===============================

Splits are read in order, in batches (``batches``), so a split larger than memory is
streamed. ``head(n)`` keeps the first ``n`` items in memory as a :class:`MemorySplit`,
whose ``take`` gives random access (MLPerf LoadGen's queries, ``--max-items``).
``synthetic(n)`` makes ``n`` random inputs of the split's form for the untimed warm-up,
which must never touch the data.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np


class Split(ABC):
    """A split the harness holds: ``count`` items, read in order."""

    count: int
    item_shape: tuple[int, ...] | None = None   # arrays only: one stored item's shape

    @abstractmethod
    def batches(self, batch_size: int) -> Iterator[tuple[Any, Any]]:
        """(inputs, targets) of consecutive items, ``batch_size`` at a time, in order."""

    @abstractmethod
    def head(self, n: int) -> MemorySplit:
        """The first ``n`` items, in memory (random access with :meth:`MemorySplit.take`)."""

    @abstractmethod
    def synthetic(self, n: int, seed: int = 0) -> Any:
        """``n`` random inputs of this split's form, for the warm-up (never the data)."""

    def __len__(self) -> int:
        return self.count


class MemorySplit(Split):
    """A split held in memory: items can be taken in any order."""

    @abstractmethod
    def take(self, indices: Sequence[int]) -> Any:
        """The inputs of these items, as one batch."""


class ArraySplit(MemorySplit):
    """uint8 inputs and int64 labels, in memory (or memory-mapped)."""

    def __init__(self, inputs: np.ndarray, labels: np.ndarray):
        self.inputs, self.labels = inputs, labels
        self.count = len(labels)
        self.item_shape = tuple(inputs.shape[1:])

    def batches(self, batch_size: int) -> Iterator[tuple[Any, Any]]:
        import torch

        for start in range(0, self.count, batch_size):
            stop = start + batch_size
            yield torch.from_numpy(np.ascontiguousarray(self.inputs[start:stop])), self.labels[start:stop]

    def head(self, n: int) -> ArraySplit:
        return self if n >= self.count else ArraySplit(self.inputs[:n], self.labels[:n])

    def take(self, indices: Sequence[int]) -> Any:
        import torch

        return torch.from_numpy(np.ascontiguousarray(self.inputs[np.asarray(indices)]))

    def synthetic(self, n: int, seed: int = 0) -> Any:
        import torch

        generator = torch.Generator().manual_seed(seed)
        return torch.randint(0, 256, (n, *self.item_shape), dtype=torch.uint8, generator=generator)


class ListSplit(MemorySplit):
    """Items in a Python list (JPEG byte strings, questions) with their targets (an array of labels,
    lists of gold answers), in memory; ``synthetic(n, seed)`` makes the warm-up's stand-ins."""

    def __init__(self, inputs: list, targets: Any, synthetic: Callable[[int, int], list]):
        self.inputs, self.targets, self.count, self._synthetic = inputs, targets, len(inputs), synthetic

    def batches(self, batch_size: int) -> Iterator[tuple[list, Any]]:
        for start in range(0, self.count, batch_size):
            yield self.inputs[start:start + batch_size], self.targets[start:start + batch_size]

    def head(self, n: int) -> ListSplit:
        return self if n >= self.count else ListSplit(self.inputs[:n], self.targets[:n], self._synthetic)

    def take(self, indices: Sequence[int]) -> list:
        return [self.inputs[i] for i in indices]

    def synthetic(self, n: int, seed: int = 0) -> list:
        return self._synthetic(n, seed)


def concatenate_targets(parts: list[Any]) -> Any:
    """Targets of several batches as one (arrays concatenated, lists joined)."""
    if parts and isinstance(parts[0], np.ndarray):
        return np.concatenate(parts)
    return [t for part in parts for t in part]
