"""Callbacks that record a trainer's run with :func:`dawnbench.track`: ``hf`` for Hugging Face's ``Trainer``,
``lightning`` for PyTorch Lightning. Each is an optional extra (``pip install 'dawnbench[hf]'``,
``'dawnbench[lightning]'``), imported only when its module is (docs/guide/your-own-script.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dawnbench.errors import DawnbenchError
from dawnbench.tracking import Tracker


def unscored(accuracy: Callable[..., Any] | None, tracker: Tracker, what: str) -> DawnbenchError | None:
    """Why a callback's self-reported run ends without an evaluation: its ``accuracy=`` reads the trainer's
    evaluation metrics, and the trainer never made them (None: it did, or the harness scores the run)."""
    if accuracy is None or (tracker.result is not None and tracker.result.evals):
        return None
    return DawnbenchError(f"DawnbenchCallback(accuracy=...) reads the trainer's evaluation metrics, but the trainer "
                          f"never {what}: the run has no evaluation. Give predict= instead (the harness scores the "
                          "model), or make the trainer evaluate.")
