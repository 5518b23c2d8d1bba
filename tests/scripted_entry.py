"""A test entry whose time and accuracy are scripted, driven by a fake clock.

Each training step advances the fake clock by STEP_S and yields; each predict call
advances it by PREDICT_S and returns all-0 labels (accuracy 100 on the tiny task,
whose labels are all 0) when the script says pass, else all-1 labels (accuracy 0).
"""

from __future__ import annotations

import os
import signal
import time

import torch

from dawnbench.entries import Entry, Progress


class FakeTime:
    def __init__(self) -> None:
        self.t = 1000.0

    def now(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


LOAD_S, BUILD_S, STEP_S, PREDICT_S, WARMUP_S = 1.0, 2.0, 10.0, 3.0, 5.0


class Scripted(Entry):
    name = "scripted"
    hparams = {"passes": [False, False, True], "losses": None, "fail_at": None,
               "signal_at": None, "sleep_s": 0.0, "batch_size": 4}
    eval_batch_size = 2
    clock: FakeTime | None = None  # set by the test

    def warmup(self, ctx) -> None:
        self._tick(WARMUP_S)

    def _tick(self, seconds: float) -> None:
        if self.clock is not None:
            self.clock.advance(seconds)

    def train(self, ctx):
        inputs, labels = ctx.load_train()
        assert inputs.dtype.name == "uint8"
        self._tick(LOAD_S)
        self._tick(BUILD_S)
        self.evals = 0
        for step, _ in enumerate(self.hp["passes"]):
            if step == self.hp["fail_at"]:
                raise ValueError("entry failed on purpose")
            if step == self.hp["signal_at"]:
                os.kill(os.getpid(), signal.SIGINT)
            time.sleep(self.hp["sleep_s"])
            self._tick(STEP_S)
            losses = self.hp["losses"]
            yield Progress(epoch=step + 1.0, samples=(step + 1) * len(labels),     # an epoch: the items it was handed
                           loss=None if losses is None else losses[step])

    def predict(self, inputs: torch.Tensor) -> torch.Tensor:
        assert inputs.dtype == torch.uint8 and inputs.shape[1:] == (4, 4)
        self._tick(PREDICT_S / 2)  # called twice per evaluation (eval_batch_size 2, 4 items)
        passing = self.hp["passes"][self.evals // 2]
        self.evals += 1
        return torch.zeros(len(inputs)) if passing else torch.ones(len(inputs))
