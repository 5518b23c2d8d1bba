"""The callbacks for Hugging Face's Trainer and PyTorch Lightning (dawnbench.integrations), each driving a real
trainer on the tiny generated task: the trainer's evaluation points, the harness's scorer or the trainer's own
metric (self-reported), the record's end whatever ends training."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, TensorDataset

from dawnbench.errors import DawnbenchError

from helpers import flag_every_run

BATCH = 4


class Items(Dataset):
    """Random 4×4 images, label 0: what the tiny task trains on (its held split is all 0 too)."""

    def __len__(self) -> int:
        return 16

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"pixel_values": torch.rand(16), "labels": torch.tensor(0)}


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(16, 2)

    def forward(self, pixel_values: torch.Tensor, labels: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        logits = self.body(pixel_values.float().flatten(1))
        if labels is None:
            return {"logits": logits}
        return {"loss": nn.functional.cross_entropy(logits, labels), "logits": logits}


def scores(model: nn.Module):
    return lambda images: model.body(images.float().flatten(1) / 255)


def _hf(tiny_task, tmp_path, callback_options, eval_strategy="no", metrics=None):
    from transformers import Trainer, TrainingArguments

    from dawnbench.integrations.hf import DawnbenchCallback

    model = Net()
    with torch.no_grad():
        model.body.bias.copy_(torch.tensor([5.0, -5.0]))     # answers 0: the tiny task's target is met
    if callback_options.get("predict") == "model":
        callback_options["predict"] = scores(model)
    callback = DawnbenchCallback(tiny_task, out=tmp_path / "runs", hparams={"batch_size": BATCH},
                                 **{"quiet": True, **callback_options})
    args = TrainingArguments(output_dir=str(tmp_path / "hf"), per_device_train_batch_size=BATCH, num_train_epochs=2,
                             learning_rate=1e-6, eval_strategy=eval_strategy, eval_steps=2, save_strategy="no",
                             logging_strategy="no", report_to="none", use_cpu=True, disable_tqdm=True)
    trainer = Trainer(model, args, train_dataset=Items(), eval_dataset=Items(), callbacks=[callback],
                      compute_metrics=metrics)
    return callback, trainer


def test_hf_trainer_without_evaluation_is_scored_by_the_harness_at_each_epoch(tiny_task, tmp_path):
    callback, trainer = _hf(tiny_task, tmp_path, {"predict": "model"})
    trainer.train()
    r = callback.tracker.result
    assert r.status == "success" and r.epochs_to_target == 1 and r.samples_to_target == 16 and not r.self_reported
    assert trainer.state.epoch == 1          # reaching the target stopped training


def test_hf_trainer_s_own_metric_is_self_reported_at_its_evaluation_points(tiny_task, tmp_path):
    callback, trainer = _hf(tiny_task, tmp_path, {"accuracy": lambda m: 100 * m["eval_accuracy"]}, "steps",
                            lambda p: {"accuracy": float((p.predictions.argmax(-1) == p.label_ids).mean())})
    trainer.train()
    r = callback.tracker.result
    assert r.status == "success" and r.self_reported and r.evals[0].samples == 2 * BATCH


def test_hf_trainer_failures_end_the_record(tiny_task, tmp_path):
    callback, trainer = _hf(tiny_task, tmp_path, {"accuracy": lambda m: 100 * m["eval_accuracy"]})
    with pytest.raises(DawnbenchError, match='eval_strategy is "no"'):
        trainer.train()                      # refused before the record opens
    assert not (tmp_path / "runs").exists()
    callback, trainer = _hf(tiny_task, tmp_path, {"accuracy": lambda m: m["nope"]}, "steps")
    with pytest.raises(DawnbenchError, match="failed on the Trainer's metrics"):
        trainer.train()
    assert callback.tracker.result.status == "aborted" and not callback.tracker.running


def _lightning(tiny_task, tmp_path, callback_options, validate: bool):
    import lightning.pytorch as pl

    from dawnbench.integrations.lightning import DawnbenchCallback

    class Module(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.body = nn.Linear(16, 2)
            with torch.no_grad():
                self.body.bias.copy_(torch.tensor([5.0, -5.0]))

        def training_step(self, batch, _index):
            x, y = batch
            return nn.functional.cross_entropy(self.body(x), y)

        def validation_step(self, batch, _index):
            x, y = batch
            self.log("val_acc", (self.body(x).argmax(-1) == y).float().mean())

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=1e-6)

    module = Module()
    if callback_options.get("predict") == "model":
        callback_options["predict"] = scores(module)
    callback = DawnbenchCallback(tiny_task, out=tmp_path / "runs", **{"quiet": True, **callback_options})
    data = TensorDataset(torch.rand(16, 16), torch.zeros(16, dtype=torch.long))
    trainer = pl.Trainer(max_epochs=2, callbacks=[callback], accelerator="cpu", logger=False,
                         enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                         num_sanity_val_steps=0, val_check_interval=0.5 if validate else None,
                         limit_val_batches=1 if validate else 0)
    trainer.fit(module, DataLoader(data, batch_size=BATCH), DataLoader(data, batch_size=BATCH) if validate else None)
    return callback


def test_lightning_is_scored_at_its_validation_points_or_each_epoch(tiny_task, tmp_path):
    r = _lightning(tiny_task, tmp_path, {"predict": "model"}, validate=True).tracker.result
    assert r.status == "success" and r.epochs_to_target == 0.5 and r.samples_to_target == 8
    r = _lightning(tiny_task, tmp_path, {"predict": "model"}, validate=False).tracker.result
    assert r.status == "success" and r.epochs_to_target == 1 and r.samples_to_target == 16


def test_lightning_s_own_metric_is_self_reported_and_needs_a_validation_loop(tiny_task, tmp_path):
    r = _lightning(tiny_task, tmp_path, {"accuracy": lambda m: 100 * m["val_acc"]}, validate=True).tracker.result
    assert r.status == "success" and r.self_reported and r.epochs_to_target == 0.5
    r = _lightning(tiny_task, tmp_path, {"accuracy": lambda m: 100 * m["val_acc"]}, validate=False).tracker.result
    assert r.status == "aborted" and "never validated" in r.error


def test_each_callback_s_last_line_says_its_run_was_flagged(tiny_task, tmp_path, monkeypatch, capsys):
    """A trainer's run the monitor flagged ends on a line that says so, with the share, as a tracked loop's does."""
    flag_every_run(monkeypatch, 0.62)
    _hf(tiny_task, tmp_path / "hf", {"predict": "model", "quiet": False})[1].train()
    _lightning(tiny_task, tmp_path / "lightning", {"predict": "model", "quiet": False}, validate=True)
    last = [line for line in capsys.readouterr().err.splitlines() if line.startswith("dawnbench: success")]
    assert len(last) == 2 and all("flagged as disturbed (other processes took 62 % of the CPUs while its clock ran)"
                                  in line for line in last), last
