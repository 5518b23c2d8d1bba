"""A tiny entry with a real saved model, for inference tests on the tiny task.

Its network is one linear layer whose bias makes class ``label`` win on every item;
the tiny task's test labels are all 0, so label 0 scores 100 % and label 1 scores 0 %.
"""

from __future__ import annotations

import time

import torch
from torch import nn

from dawnbench.entries import Entry, Progress


class TinyLinear(Entry):
    name = "tiny-linear"
    hparams = {"label": 0, "delay_s": 0.0}
    eval_batch_size = 2

    def make_model(self) -> nn.Module:
        return nn.Sequential(nn.Flatten(), nn.Linear(16, 2))

    def train(self, ctx):
        ctx.load_train()
        self.model = self.make_model().to(ctx.device)
        with torch.no_grad():
            self.model[1].weight.zero_()
            self.model[1].bias.copy_(torch.tensor([1.0, 0.0] if self.hp["label"] == 0 else [0.0, 1.0]))
        yield Progress(epoch=1.0, samples=8, loss=0.0)

    def predict(self, inputs: torch.Tensor) -> torch.Tensor:
        if self.hp["delay_s"]:
            time.sleep(self.hp["delay_s"])  # a slow model, for the scenarios' timing
        return self.model(inputs.float())
