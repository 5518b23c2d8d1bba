"""Helpers the test modules share (tests never import one another)."""

from __future__ import annotations

import json
from pathlib import Path

from scripted_entry import FakeTime, Scripted

from dawnbench.harness.clock import Clock
from dawnbench.harness.options import RunOptions, prepare
from dawnbench.harness.record import Evaluation, RunResult
from dawnbench.harness.runner import run_seed


def write_run(folder: Path, seed: int, tta: float | None, epochs: float) -> None:
    folder.mkdir(parents=True)
    r = RunResult(task="mnist", entry="small-cnn", seed=seed, status="success" if tta else "not_reached",
                  official=True, metric="top1_accuracy", threshold=99.0, time_to_accuracy_s=tta,
                  epochs_to_target=epochs if tta else None, run_dir=str(folder),
                  evals=[Evaluation(epochs / 2, 100, (tta or 9.0) / 2, 98.0),
                         Evaluation(epochs, 200, tta or 9.0, 99.1 if tta else 98.5)])
    (folder / "result.json").write_text(json.dumps(r.to_dict()))
    (folder / "events.log").write_text(":::MLLOG {}\n")  # a run's own files are not read as logs


def run_scripted(task, tmp_path, **hp):
    budget = {k: hp.pop(k) for k in ("max_epochs", "max_seconds", "max_wall_seconds",
                                     "continue_after_target", "target", "cost_per_hour") if k in hp}
    fake = FakeTime()
    Scripted.clock = fake
    options = RunOptions(task=task, entry=Scripted, overrides=hp, **budget)
    result = run_seed(options, prepare(options), seed=0, run_dir=tmp_path / "run", clock=Clock(now=fake.now))
    return result, tmp_path / "run"
