"""mnist-standard and fashion-mnist-standard: conventionally trained references.

Not tuned for time to accuracy, on purpose: the question they answer is whether the
TTA-optimised entries generalise worse than a model trained the usual way (the
DAWNBench analysis compared TTA-optimised ResNet-50s with PyTorch's pretrained one).
The network is the classic LeNet of Caffe's MNIST example (two 5×5 convolutions with
20 and 50 channels, max-pooling, a 500-unit hidden layer), trained with SGD and
momentum, weight decay and a step-decayed learning rate for 20 epochs at batch 64,
no augmentation, no label smoothing, fp32 — a schedule from the textbook, evaluated
once per epoch. Train it to the end with ``dawnbench run mnist --entry mnist-standard
--continue`` (the run saves ``model_final.pt``) and score it with ``dawnbench generalize``.

Evidence (2-core AMD EPYC, PyTorch 2.13.0 CPU, 2026-11-22): see the README's
generalisation table (3 seeds per dataset, trained to the end).
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
import torch.nn.functional as F
from torch import nn

from dawnbench.entries.base import Entry, Progress, TrainContext

# --- hyperparameters (all of them) -----------------------------------------------------
HPARAMS = {
    "batch_size": 64,
    "epochs": 20,
    "lr": 0.01,
    "lr_decay_epochs": [10, 15],   # ×0.1 at each
    "momentum": 0.9,
    "weight_decay": 5e-4,
}
MEAN, STD = 0.1307, 0.3081


# --- network ---------------------------------------------------------------------------
def make_lenet(num_classes: int = 10) -> nn.Module:
    return nn.Sequential(nn.Conv2d(1, 20, 5), nn.MaxPool2d(2),          # 28→24→12
                         nn.Conv2d(20, 50, 5), nn.MaxPool2d(2),         # 12→8→4
                         nn.Flatten(), nn.Linear(50 * 4 * 4, 500), nn.ReLU(inplace=True),
                         nn.Linear(500, num_classes))


def to_float(images: torch.Tensor) -> torch.Tensor:
    return images.unsqueeze(1).float().div_(255).sub_(MEAN).div_(STD)


# --- the entries -----------------------------------------------------------------------
class _StandardCNN(Entry):
    hparams = HPARAMS
    eval_batch_size = 2000

    def make_model(self) -> nn.Module:
        return make_lenet()

    def train(self, ctx: TrainContext) -> Iterator[Progress]:
        hp = self.hp
        images, labels = ctx.load_train()
        x_train = to_float(torch.from_numpy(images)).to(ctx.device)
        y_train = torch.from_numpy(labels).to(ctx.device)
        n, bs = len(x_train), hp["batch_size"]
        self.model = self.make_model().to(ctx.device)
        forward = ctx.compile(ctx.distribute(self.model))
        optimizer = torch.optim.SGD(self.model.parameters(), lr=hp["lr"], momentum=hp["momentum"],
                                    weight_decay=hp["weight_decay"])
        schedule = torch.optim.lr_scheduler.MultiStepLR(optimizer, hp["lr_decay_epochs"], gamma=0.1)
        steps_per_epoch = n // ctx.world_size // bs  # per worker
        for epoch in range(1, int(hp["epochs"]) + 1):
            self.model.train()
            order = ctx.epoch_order(n, epoch - 1)
            for i in range(steps_per_epoch):
                batch = order[i * bs:(i + 1) * bs]
                loss = F.cross_entropy(forward(x_train[batch]), y_train[batch])
                optimizer.zero_grad(set_to_none=True)
                ctx.scaler.scale(loss).backward()
                ctx.scaler.step(optimizer)
                ctx.scaler.update()
            schedule.step()
            yield Progress(epoch=float(epoch), samples=epoch * steps_per_epoch * bs * ctx.world_size, loss=loss.detach())

    def predict(self, inputs: torch.Tensor) -> torch.Tensor:
        self.model.eval()
        return self.model(to_float(inputs.to(self.device)))

    def flop_model(self) -> tuple[nn.Module, torch.Tensor]:
        return self.model, torch.randn(8, 1, 28, 28, device=self.device)


class MnistStandard(_StandardCNN):
    name = "mnist-standard"
    tasks = ("mnist",)


class FashionMnistStandard(_StandardCNN):
    name = "fashion-mnist-standard"
    tasks = ("fashion-mnist",)
