"""Progress between evaluations: steps, epoch, samples/s and ETA, off the timed path."""

from __future__ import annotations

import io
import re
import time

import torch
from rich.console import Console

from dawnbench.cli.display import LiveProgress
from dawnbench.entries import Entry, Progress
from dawnbench.harness.options import RunOptions, prepare
from dawnbench.harness.progress import ProgressProbe
from dawnbench.harness.runner import run_seed
from dawnbench.profiling.steps import StepCounter


class Slow(Entry):
    """Two 'epochs' of 8 optimizer steps of 4 samples, 50 ms each, on the tiny task (8 items)."""

    name = "slow"
    hparams = {"batch_size": 4, "epochs": 2}
    warmup_steps = 0

    def train(self, ctx):
        self.model = torch.nn.Linear(16, 2)
        opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        for epoch in range(2):
            for _ in range(8):
                time.sleep(0.05)
                opt.step()
            # 8 steps of 4 samples is 32 samples: this entry says an epoch is 32 samples
            yield Progress(epoch=epoch + 1.0, samples=(epoch + 1) * 32, loss=0.0)

    def predict(self, inputs):
        return torch.ones(len(inputs), dtype=torch.long)  # the tiny task's labels are 0: never passes


def test_progress_lines_appear_between_evaluations(tiny_task, tmp_path):
    buffer = io.StringIO()
    live = LiveProgress(Console(file=buffer, force_terminal=False, width=200), log_interval=0.1)
    options = RunOptions(task=tiny_task, entry=Slow)
    run_seed(options, prepare(options), seed=0, run_dir=tmp_path / "run", observer=live)
    live.close()
    lines = buffer.getvalue().splitlines()
    evals = [i for i, line in enumerate(lines) if "top1_accuracy" in line]
    steps = [(i, int(m.group(1).replace(",", ""))) for i, line in enumerate(lines)
             if (m := re.search(r"· step ([\d,]+)", line))]
    assert len(evals) == 2
    assert any(i < evals[0] for i, _ in steps) and any(evals[0] < i < evals[1] for i, _ in steps)
    assert [n for _, n in steps] == sorted(n for _, n in steps)  # counts only grow
    after_first = [line for i, line in enumerate(lines) if evals[0] < i < evals[1] and "· step" in line]
    assert any("samples/s" in line and "ETA" in line and "epoch 1." in line for line in after_first)


def test_probe_calibrates_with_what_the_entry_reports():
    counter = StepCounter()
    counter.steps = 10
    timed = iter([1.0, 2.0])
    probe = ProgressProbe(counter, lambda: next(timed), samples_per_step=4, train_count=1000, schedule_epochs=5)
    first = probe.snapshot()
    assert first.samples == 40 and first.epoch == 0.04 and first.samples_per_s == 40.0
    probe.observe(samples=40, epoch=1.0)  # the entry trains on a 40-item subset
    counter.steps = 20
    second = probe.snapshot()
    assert second.epoch == 2.0 and second.samples_per_s == 40.0 and second.eta_s == 3 * 40 / 40.0
