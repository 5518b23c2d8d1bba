"""``DawnbenchCallback`` for PyTorch Lightning: one line added to a Lightning script records its training as a
dawnbench run (docs/guide/your-own-script.md).

    trainer = L.Trainer(max_epochs=1, callbacks=[DawnbenchCallback("mnist", predict=predict)])

* The clock starts at ``on_train_start`` (what ran before ``trainer.fit`` — and Lightning's sanity check — is in
  the record's ``setup_s``) and stops at ``on_train_end``; every validation loop is off the clock.
* The evaluation points are the trainer's validation points (``val_check_interval``, fractions of an epoch
  allowed), or each epoch's end for a module without validation (``predict`` only).
* With ``predict`` (a batch of the task's held split → scores, labels or answers) the harness scores the model
  itself; with ``accuracy`` (the trainer's ``callback_metrics`` → the figure on the task's scale, e.g.
  ``lambda m: 100 * m["val_acc"]``) the run is self-reported.
* Reaching the target (or a budget) sets ``trainer.should_stop``.

Other keywords are :func:`dawnbench.track`'s; the tracker and its result are ``callback.tracker`` and
``callback.tracker.result``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import lightning.pytorch as pl

from dawnbench.errors import DawnbenchError
from dawnbench.integrations import metric_reader, tracker_for, unscored
from dawnbench.tracking import Tracker


class DawnbenchCallback(pl.Callback):
    def __init__(self, task: str = "mnist", *, predict: Callable[[Any], Any] | None = None,
                 accuracy: Callable[[dict[str, float]], float] | None = None, **options: Any) -> None:
        self.accuracy = accuracy
        self.tracker: Tracker = tracker_for(task, predict, accuracy, "the trainer's callback_metrics", options)
        self._validated = False          # a validation point since the epoch began

    def _evaluate(self, trainer: pl.Trainer, accuracy: Callable[[], float] | None) -> None:
        batches = trainer.fit_loop.epoch_loop.batch_progress.total.completed
        per_epoch = trainer.num_training_batches
        batch = getattr(trainer.train_dataloader, "batch_size", None) or self.tracker.prep.entry_cls.hparams.get(
            "batch_size")
        if not isinstance(batch, int):
            raise DawnbenchError("DawnbenchCallback: the training loader's batch size is unknown (samples seen are "
                                 "counted from it); pass hparams={'batch_size': N} to the callback.")
        epoch = batches / per_epoch if isinstance(per_epoch, int) and per_epoch > 0 else float(trainer.current_epoch)
        if self.tracker.evaluate(epoch=epoch, samples=batches * batch * trainer.world_size, accuracy=accuracy):
            trainer.should_stop = True      # (an error here reaches on_exception, which ends the record)

    def on_train_start(self, trainer: pl.Trainer, _module: pl.LightningModule) -> None:
        self.tracker.start()

    def on_train_epoch_start(self, trainer: pl.Trainer, _module: pl.LightningModule) -> None:
        self._validated = False

    def on_validation_start(self, trainer: pl.Trainer, _module: pl.LightningModule) -> None:
        if not trainer.sanity_checking and self.tracker.running:
            self.tracker.pause()

    def on_validation_end(self, trainer: pl.Trainer, _module: pl.LightningModule) -> None:
        if trainer.sanity_checking or not self.tracker.running or self.tracker.over:
            return
        self._validated = True
        value = None
        if self.accuracy is not None:
            value = metric_reader(self.accuracy, {k: float(v) for k, v in trainer.callback_metrics.items()},
                                  "the trainer's", "self.log(...) in validation_step makes them")
        self._evaluate(trainer, value)
        self.tracker.resume()

    def on_train_epoch_end(self, trainer: pl.Trainer, _module: pl.LightningModule) -> None:
        if self.accuracy is None and not self._validated and not self.tracker.over:
            self._evaluate(trainer, None)

    def on_train_end(self, trainer: pl.Trainer, _module: pl.LightningModule) -> None:
        if self.tracker.running:
            self.tracker.finish(unscored(self.accuracy, self.tracker, "validated (add a validation loop)"))

    def on_exception(self, trainer: pl.Trainer, _module: pl.LightningModule, exception: BaseException) -> None:
        if self.tracker.running:          # the record says how training ended, then Lightning re-raises
            self.tracker.finish(exception)
