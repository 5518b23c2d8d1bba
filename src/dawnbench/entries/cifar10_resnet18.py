"""cifar10-resnet18: bkj's DAWNBench entry — "ResNet18 + minor modifications" — the MLPerf
characterisation's CIFAR-10 workload (the highest point on its roofline).

Evidence and choices:
  * The entry (third_party/dawnbench-entries.tar.xz, CIFAR10/train/basenet.*): bkj/basenet at
    49b2b61, ``examples/cifar10.py``; 94 % in 6 of 7 runs, the reported (about median) run at
    94.34 % after 40 epochs, 0.122 h on one V100 (p3.2xlarge), 55.6 % after its first epoch.
  * Its code, followed here: a pre-activation ResNet-18 (kuangliu's) — a 3×3 conv-BN-ReLU stem of
    64 channels, then stages of two pre-activation basic blocks at widths 64, 128, 256 and
    **256** (the last stage is not widened to 512), strides 1, 2, 2, 2, 1×1 projections where the
    shape changes — and a head that concatenates global average and global max pooling (512)
    into one linear layer. Reflect-padded (4 px) random 32×32 crops and horizontal flips,
    normalised by the CIFAR-10 mean and standard deviation it lists. SGD with Nesterov momentum
    0.9, weight decay 5e-4, batch 128 (the last, smaller batch kept); the learning rate set before
    every step from the fractional epoch: 0 → 0.1 linearly over 15 epochs, 0.105 → 0.005 over the
    next 15, 0.005 → 0 over 5, then 0.0005 for the last 5 — 40 epochs.
  * Precision: the entry ran the whole network in fp16 (``model.half()``, BatchNorm too) on a
    V100. Here the harness's precisions apply (fp32 by default; bf16 and fp16 autocast, fp16
    through the loss scaler), with channels-last memory (``channels_last``) and ``--compile`` as
    for the other CIFAR-10 entries.
  * Cost: 5.21 M parameters, 0.92 GFLOP per image forward (2.76 training); 40 epochs are
    ~5.5 PFLOP — many hours on a 2-core CPU (docs/results/characterisation.md has the measured epoch).

Sections, in the order things happen: hyperparameters, network, schedule, training loop, prediction.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
import torch.nn.functional as F
from torch import nn

from dawnbench.entries.base import Entry, Progress, TrainContext
from dawnbench.entries.resnet_seed import PreActBasic, random_crop_flip

# --- hyperparameters (all of them) -----------------------------------------------------
HPARAMS = {
    "epochs": 40,
    "batch_size": 128,
    "lr_max": 0.1,
    "lr_low": 0.005,
    "cycle_epochs": 30,          # up over the first half, down to lr_low over the second
    "extra_epochs": 5,           # lr_low → 0
    "momentum": 0.9,
    "weight_decay": 5e-4,
    "crop_padding": 4,           # reflect padding, then a random 32×32 crop and a random flip
    "channels_last": True,
}
MEAN = torch.tensor([0.4914, 0.4822, 0.4465])
STD = torch.tensor([0.24705882352941178, 0.24352941176470588, 0.2615686274509804])


# --- network ---------------------------------------------------------------------------
class ResNet18(nn.Module):
    def __init__(self, widths: tuple[int, ...] = (64, 128, 256, 256), num_classes: int = 10) -> None:
        super().__init__()
        self.prep = nn.Sequential(nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU())
        blocks, c_in = [], 64
        for width, stride in zip(widths, (1, 2, 2, 2)):
            blocks += [PreActBasic(c_in, width, stride), PreActBasic(width, width, 1)]
            c_in = width
        self.layers = nn.Sequential(*blocks)
        self.classifier = nn.Linear(2 * c_in, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layers(self.prep(x))
        return self.classifier(torch.cat([F.adaptive_avg_pool2d(x, 1), F.adaptive_max_pool2d(x, 1)], 1).flatten(1))


# --- schedule --------------------------------------------------------------------------
def learning_rate(progress: float, hp: dict) -> float:
    """basenet's ``linear_cycle`` at a fractional epoch."""
    top, low, cycle, extra = hp["lr_max"], hp["lr_low"], hp["cycle_epochs"], hp["extra_epochs"]
    if progress < cycle / 2:
        return 2 * top * progress / cycle
    if progress <= cycle:
        return low + 2 * top * (cycle - progress) / cycle
    if progress <= cycle + extra:
        return low * (extra - (progress - cycle)) / extra
    return low / 10


def normalise(images: torch.Tensor, channels_last: bool) -> torch.Tensor:
    """uint8 N×32×32×3 → normalised float N×3×32×32."""
    x = ((images.float() / 255 - MEAN.to(images.device)) / STD.to(images.device)).permute(0, 3, 1, 2)
    return x.contiguous(memory_format=torch.channels_last if channels_last else torch.contiguous_format)


# --- the entry -------------------------------------------------------------------------
class CifarResNet18(Entry):
    name = "cifar10-resnet18"
    tasks = ("cifar10",)
    hparams = HPARAMS
    eval_batch_size = 500
    warmup_steps = 3
    cpu_warmup_steps = 1
    precisions = ("fp32", "tf32", "bf16", "fp16")  # the step goes through ctx.scaler

    def make_model(self) -> nn.Module:
        model = ResNet18()
        return model.to(memory_format=torch.channels_last) if self.hp["channels_last"] else model

    def train(self, ctx: TrainContext) -> Iterator[Progress]:
        hp, device = self.hp, ctx.device
        images, labels = ctx.load_train()
        pad = hp["crop_padding"]
        x_padded = F.pad(normalise(torch.from_numpy(images).to(device), False), (pad,) * 4, mode="reflect")
        y_train = torch.from_numpy(labels).to(device)
        n, bs = len(y_train), hp["batch_size"]

        self.model = self.make_model().to(device)
        forward = ctx.compile(ctx.distribute(self.model))
        optimizer = torch.optim.SGD(self.model.parameters(), lr=0.0, momentum=hp["momentum"], nesterov=True,
                                    weight_decay=hp["weight_decay"])
        samples = 0
        for epoch in range(int(hp["epochs"])):
            self.model.train()
            order = ctx.epoch_order(n, epoch)
            batches = range(0, len(order), bs)
            for i, start in enumerate(batches):
                for group in optimizer.param_groups:
                    group["lr"] = learning_rate(epoch + i / len(batches), hp)
                batch = order[start:start + bs]
                inputs = random_crop_flip(x_padded[batch], pad)
                if hp["channels_last"]:
                    inputs = inputs.contiguous(memory_format=torch.channels_last)
                loss = F.cross_entropy(forward(inputs), y_train[batch])
                optimizer.zero_grad(set_to_none=True)
                ctx.scaler.scale(loss).backward()
                ctx.scaler.step(optimizer)
                ctx.scaler.update()
                samples += len(batch) * ctx.world_size
            yield Progress(epoch=float(epoch + 1), samples=samples, loss=loss.detach())

    def predict(self, inputs: torch.Tensor) -> torch.Tensor:
        self.model.eval()
        return self.model(normalise(inputs.to(self.device), self.hp["channels_last"]))

    def flop_model(self) -> tuple[nn.Module, torch.Tensor]:
        return self.model, normalise(torch.randint(0, 256, (8, 32, 32, 3), dtype=torch.uint8, device=self.device),
                                     self.hp["channels_last"])
