"""Callbacks that record a trainer's run with :func:`dawnbench.track`: ``hf`` for Hugging Face's ``Trainer``,
``lightning`` for PyTorch Lightning. Each is an optional extra (``pip install 'dawnbench[hf]'``,
``'dawnbench[lightning]'``), imported only when its module is (docs/guide/your-own-script.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dawnbench.errors import DawnbenchError
from dawnbench.tracking import Tracker, track


def tracker_for(task: str, predict: Callable[[Any], Any] | None, accuracy: Callable[..., Any] | None,
                metrics: str, options: dict[str, Any]) -> Tracker:
    """A callback's tracker, scored by the harness (``predict``) or by the trainer's ``metrics`` (``accuracy``):
    one of the two."""
    if (predict is None) == (accuracy is None):
        raise DawnbenchError("DawnbenchCallback: give predict= (the harness scores the model on the task's held "
                             f"split) or accuracy= (a function of {metrics}: self-reported), one of the two.")
    return track(task, predict=predict, **options)


def metric_reader(accuracy: Callable[[dict[str, float]], float], metrics: dict[str, float], whose: str,
                  hint: str) -> Callable[[], float]:
    """``accuracy`` of the trainer's ``metrics``, as the function the tracker calls with the clock stopped; a
    metric the function reads that is not among them is a one-paragraph error naming those there are."""
    def value() -> float:
        try:
            return accuracy(metrics)
        except Exception as err:     # the metric the function reads is not among the trainer's
            raise DawnbenchError(f"DawnbenchCallback(accuracy=...) failed on {whose} metrics {sorted(metrics)}: "
                                 f"{type(err).__name__}: {err}. Read one of those keys ({hint}).") from None
    return value


def unscored(accuracy: Callable[..., Any] | None, tracker: Tracker, what: str) -> DawnbenchError | None:
    """Why a callback's self-reported run ends without an evaluation: its ``accuracy=`` reads the trainer's
    evaluation metrics, and the trainer never made them (None: it did, or the harness scores the run)."""
    if accuracy is None or (tracker.result is not None and tracker.result.evals):
        return None
    return DawnbenchError(f"DawnbenchCallback(accuracy=...) reads the trainer's evaluation metrics, but the trainer "
                          f"never {what}: the run has no evaluation. Give predict= instead (the harness scores the "
                          "model), or make the trainer evaluate.")
