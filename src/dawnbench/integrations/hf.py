"""``DawnbenchCallback`` for Hugging Face's ``transformers.Trainer``: one line added to a Trainer script records its
training as a dawnbench run (docs/guide/your-own-script.md).

    trainer = Trainer(model, args, train_dataset=..., callbacks=[DawnbenchCallback("mnist", predict=predict)])

* The clock starts at the trainer's ``on_train_begin`` (what the script did before ``trainer.train()`` —
  building the model, tokenising — is in the record's ``setup_s``) and stops at its end.
* The evaluation points are the Trainer's own (``eval_strategy``: steps or epoch; every epoch's end when it is
  ``"no"``). At each, the clock stops before the Trainer evaluates and starts again at the next step, so the
  Trainer's evaluation, logging and checkpoints are off the clock.
* With ``predict`` (a batch of the task's held split → scores, labels or answers) the harness scores the model
  itself; with ``accuracy`` (the Trainer's metrics dict → the figure on the task's scale, e.g.
  ``lambda m: 100 * m["eval_accuracy"]``) the run is self-reported.
* Reaching the target (or a budget) sets ``control.should_training_stop``.

Other keywords are :func:`dawnbench.track`'s (``target``, ``out``, ``seed``, ``hparams``, ``name``, …); the
tracker, and after training its result, are ``callback.tracker`` and ``callback.tracker.result``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from transformers import TrainerCallback

from dawnbench.errors import DawnbenchError
from dawnbench.integrations import metric_reader, tracker_for, unscored
from dawnbench.tracking import Tracker


def _never_evaluates(args: Any) -> bool:
    strategy = getattr(args, "eval_strategy", "no")
    return str(getattr(strategy, "value", strategy)).lower() == "no"


class DawnbenchCallback(TrainerCallback):
    def __init__(self, task: str = "mnist", *, predict: Callable[[Any], Any] | None = None,
                 accuracy: Callable[[dict[str, float]], float] | None = None, **options: Any) -> None:
        self.accuracy = accuracy
        self.tracker: Tracker = tracker_for(task, predict, accuracy, "the Trainer's evaluation metrics", options)

    def _point(self, args: Any, state: Any) -> tuple[float, int]:
        per_step = args.per_device_train_batch_size * args.gradient_accumulation_steps * max(1, args.world_size)
        return float(state.epoch or 0.0), int(state.global_step) * per_step

    def _evaluation_due(self, args: Any, state: Any, control: Any) -> None:
        """The Trainer evaluates next: stop the clock; the harness scores now (the run's own figure comes later)."""
        self.tracker.pause()
        if self.accuracy is None:
            self._evaluate(args, state, control, None)

    def _evaluate(self, args: Any, state: Any, control: Any, accuracy: Callable[[], float] | None) -> None:
        epoch, samples = self._point(args, state)
        try:
            if self.tracker.evaluate(epoch=epoch, samples=samples, accuracy=accuracy):
                control.should_training_stop = True
        except Exception as err:         # the Trainer has no hook for its own failure: the record ends here
            self.tracker.finish(err)
            raise

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.accuracy is not None and _never_evaluates(args):
            raise DawnbenchError("DawnbenchCallback(accuracy=...) reads the Trainer's evaluation metrics, but its "
                                 "eval_strategy is \"no\": set eval_strategy=\"steps\" or \"epoch\" (with an "
                                 "eval_dataset and compute_metrics), or give predict= instead.")
        self.tracker.start()

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.tracker.resume()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if control.should_evaluate or control.should_save or control.should_log:
            if control.should_evaluate:
                self._evaluation_due(args, state, control)
            else:
                self.tracker.pause()     # logging and checkpoints are off the clock, as an entry's are

    def on_epoch_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if control.should_evaluate:
            self._evaluation_due(args, state, control)
        elif _never_evaluates(args) and self.accuracy is None:
            self.tracker.pause()
            self._evaluate(args, state, control, None)

    def on_evaluate(self, args: Any, state: Any, control: Any, metrics: dict[str, float] | None = None,
                    **kwargs: Any) -> None:
        if self.accuracy is None or self.tracker.over or not self.tracker.running:
            return
        self._evaluate(args, state, control, metric_reader(self.accuracy, dict(metrics or {}), "the Trainer's",
                                                           "compute_metrics= on the Trainer makes them"))

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.tracker.running:
            self.tracker.finish(unscored(self.accuracy, self.tracker, "evaluated"))
