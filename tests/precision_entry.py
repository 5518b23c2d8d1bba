"""A tiny trainable entry that records the numeric environment it ran in, for the SPEC §12 tests.

Its network is a linear layer on the tiny task's 4×4 inputs, trained with SGD
through ``ctx.scaler`` for ``steps`` steps per epoch; every train step and predict call
appends what it saw to the class-level ``seen`` list (cleared by the tests).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from dawnbench.entries import Entry, Progress


def _environment(where: str, ctx_synthetic: bool | None, out: torch.Tensor) -> dict:
    return {"where": where, "synthetic": ctx_synthetic, "dtype": out.dtype,
            "autocast": torch.is_autocast_enabled("cpu"),
            "tf32": (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)}


class Recording(Entry):
    name = "recording"
    hparams = {"epochs": 2, "steps": 3, "lr": 0.1}
    precisions = ("fp32", "tf32", "bf16", "fp16")
    eval_batch_size = 4
    seen: list[dict] = []

    def make_model(self) -> nn.Module:
        return nn.Sequential(nn.Flatten(), nn.Linear(16, 2))

    def train(self, ctx):
        images, labels = ctx.load_train()
        x = torch.from_numpy(images).float().div(255)
        y = torch.from_numpy(labels) % 2
        self.loaded = images
        self.model = self.make_model()
        forward = ctx.compile(self.model)
        opt = torch.optim.SGD(self.model.parameters(), lr=self.hp["lr"])
        for epoch in range(self.hp["epochs"]):
            for _ in range(self.hp["steps"]):
                out = forward(x)
                self.seen.append(_environment("train", ctx.synthetic, out))
                loss = F.cross_entropy(out.float(), y)
                opt.zero_grad()
                ctx.scaler.scale(loss).backward()
                ctx.scaler.step(opt)
                ctx.scaler.update()
            yield Progress(epoch=epoch + 1.0, samples=(epoch + 1) * self.hp["steps"] * len(x), loss=loss.detach())

    def predict(self, inputs: torch.Tensor) -> torch.Tensor:
        out = self.model(inputs.float())
        self.seen.append(_environment("predict", None, out) | {"batch": len(inputs)})
        return out


class OwnScheme(Recording):
    """Declares bf16 as its own scheme: the harness must set no autocast for it."""

    name = "own-scheme"
    precisions = ("fp32",)
    own_precisions = ("bf16",)
