"""The DAWNBench CIFAR-10 seed entries: pre-activation ResNet-20, -56 and -164.

Stanford DAWN's reference submissions (dawn-bench-models, PyTorch, 2017) trained
pre-activation ResNets (He et al., "Identity Mappings in Deep Residual Networks",
2016) with plain SGD. Their logs (third_party/dawnbench-entries.tar.xz, CIFAR10/) show the
schedule: 181 epochs — 1 warm-up epoch at lr 0.01, 90 at 0.1, 45 at 0.01, 45 at
0.001 — and ResNet-164 (bottleneck) passing 94 % at epoch 137, after 97 hours on a
16-vCPU machine. Here they are baselines to measure against, not fast recipes.

Training FLOPs per image (forward + backward, counted with torch.utils.flop_counter
on 32×32 inputs): ResNet-20 0.24 GFLOP, ResNet-56 0.75 GFLOP, ResNet-164 1.49 GFLOP
(tests/test_cifar10_entries.py checks these within 5 %).
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
import torch.nn.functional as F
from torch import nn

from dawnbench.entries.base import Entry, Progress, TrainContext
from dawnbench.entries.cifar10_fast import to_float

# --- hyperparameters (the seed entries') -----------------------------------------------
HPARAMS = {
    "batch_size": 128,
    "momentum": 0.9,
    "weight_decay": 5e-4,
    "lr_schedule": [[1, 0.01], [90, 0.1], [45, 0.01], [45, 0.001]],  # [epochs, lr] phases
    "crop_padding": 4,          # random 32×32 crop of the zero-padded image, then a random flip
}


# --- network ---------------------------------------------------------------------------
class PreActBasic(nn.Module):
    """BN-ReLU-conv3×3-BN-ReLU-conv3×3, plus the (projected when needed) input."""

    expansion = 1

    def __init__(self, c_in: int, width: int, stride: int):
        super().__init__()
        self.bn1, self.conv1 = nn.BatchNorm2d(c_in), nn.Conv2d(c_in, width, 3, stride, 1, bias=False)
        self.bn2, self.conv2 = nn.BatchNorm2d(width), nn.Conv2d(width, width, 3, 1, 1, bias=False)
        self.shortcut = (nn.Conv2d(c_in, width, 1, stride, bias=False)
                         if stride != 1 or c_in != width else None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(x))
        skip = self.shortcut(out) if self.shortcut is not None else x
        out = self.conv1(out)
        out = self.conv2(F.relu(self.bn2(out)))
        return out + skip


class PreActBottleneck(nn.Module):
    """BN-ReLU-conv1×1, BN-ReLU-conv3×3, BN-ReLU-conv1×1 (4× wider out), plus the input."""

    expansion = 4

    def __init__(self, c_in: int, width: int, stride: int):
        super().__init__()
        c_out = width * self.expansion
        self.bn1, self.conv1 = nn.BatchNorm2d(c_in), nn.Conv2d(c_in, width, 1, bias=False)
        self.bn2, self.conv2 = nn.BatchNorm2d(width), nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn3, self.conv3 = nn.BatchNorm2d(width), nn.Conv2d(width, c_out, 1, bias=False)
        self.shortcut = nn.Conv2d(c_in, c_out, 1, stride, bias=False) if stride != 1 or c_in != c_out else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(x))
        skip = self.shortcut(out) if self.shortcut is not None else x
        out = self.conv1(out)
        out = self.conv2(F.relu(self.bn2(out)))
        out = self.conv3(F.relu(self.bn3(out)))
        return out + skip


class PreActResNet(nn.Module):
    """Three stages of n blocks at widths 16, 32, 64 (strides 1, 2, 2), then BN-ReLU-pool-linear."""

    def __init__(self, depth: int, bottleneck: bool, num_classes: int = 10):
        super().__init__()
        block = PreActBottleneck if bottleneck else PreActBasic
        layers_per_block = 3 if bottleneck else 2
        n = (depth - 2) // (3 * layers_per_block)  # depth = 3·n·layers + 2
        if n * 3 * layers_per_block + 2 != depth:
            raise ValueError(f"depth {depth} does not fit {'bottleneck' if bottleneck else 'basic'} blocks")
        self.stem = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        blocks, c_in = [], 16
        for width, stride in [(16, 1), (32, 2), (64, 2)]:
            for i in range(n):
                blocks.append(block(c_in, width, stride if i == 0 else 1))
                c_in = width * block.expansion
        self.blocks = nn.Sequential(*blocks)
        self.bn = nn.BatchNorm2d(c_in)
        self.fc = nn.Linear(c_in, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn(self.blocks(self.stem(x))))
        return self.fc(F.adaptive_avg_pool2d(out, 1).flatten(1))


# --- data augmentation -----------------------------------------------------------------
def random_crop_flip(padded: torch.Tensor, pad: int) -> torch.Tensor:
    """A random 32×32 crop of each zero-padded image, flipped with probability 1/2."""
    n, size = len(padded), padded.shape[-1] - 2 * pad
    dy, dx = torch.randint(0, 2 * pad + 1, (2, n), device=padded.device)
    rows = (dy.view(n, 1) + torch.arange(size, device=padded.device)).view(n, 1, size, 1)
    cols = (dx.view(n, 1) + torch.arange(size, device=padded.device)).view(n, 1, 1, size)
    crops = padded[torch.arange(n, device=padded.device).view(n, 1, 1, 1),
                   torch.arange(padded.shape[1], device=padded.device).view(1, -1, 1, 1), rows, cols]
    flip = torch.rand(n, device=padded.device) < 0.5
    return torch.where(flip.view(n, 1, 1, 1), crops.flip(-1), crops)


# --- the entries -----------------------------------------------------------------------
class SeedResNet(Entry):
    """Shared training loop; subclasses fix the depth and block type."""

    tasks = ("cifar10",)
    hparams = HPARAMS
    eval_batch_size = 500
    warmup_steps = 3                  # the steps are long on a CPU; three cover kernel selection
    precisions = ("fp32", "tf32", "bf16", "fp16")  # the step goes through ctx.scaler
    depth: int = 0
    bottleneck: bool = False

    def make_model(self) -> nn.Module:
        return PreActResNet(self.depth, self.bottleneck)

    def train(self, ctx: TrainContext) -> Iterator[Progress]:
        hp, device = self.hp, ctx.device
        images, labels = ctx.load_train()
        x_train = to_float(torch.from_numpy(images).to(device)).contiguous()
        y_train = torch.from_numpy(labels).to(device)
        pad = hp["crop_padding"]
        x_padded = F.pad(x_train, (pad,) * 4)
        n, bs = len(x_train), hp["batch_size"]

        self.model = self.make_model().to(device)
        forward = ctx.compile(ctx.distribute(self.model))
        optimizer = torch.optim.SGD(self.model.parameters(), lr=hp["lr_schedule"][0][1],
                                    momentum=hp["momentum"], weight_decay=hp["weight_decay"])
        epoch, samples = 0, 0
        for phase_epochs, lr in hp["lr_schedule"]:
            for group in optimizer.param_groups:
                group["lr"] = lr
            for _ in range(phase_epochs):
                self.model.train()
                order = ctx.epoch_order(n, epoch)
                for start in range(0, len(order), bs):  # the last, smaller batch is kept, as in the seed code
                    batch = order[start:start + bs]
                    inputs = random_crop_flip(x_padded[batch], pad)
                    loss = F.cross_entropy(forward(inputs), y_train[batch])
                    optimizer.zero_grad(set_to_none=True)
                    ctx.scaler.scale(loss).backward()
                    ctx.scaler.step(optimizer)
                    ctx.scaler.update()
                    samples += len(batch) * ctx.world_size
                epoch += 1
                yield Progress(epoch=float(epoch), samples=samples, loss=loss.detach())

    def predict(self, inputs: torch.Tensor) -> torch.Tensor:
        self.model.eval()
        return self.model(to_float(inputs.to(self.device)).contiguous())

    def flop_model(self) -> tuple[nn.Module, torch.Tensor]:
        return self.model, torch.randn(8, 3, 32, 32, device=self.device)


class ResNet20(SeedResNet):
    name, depth, bottleneck = "cifar10-resnet20", 20, False


class ResNet56(SeedResNet):
    name, depth, bottleneck = "cifar10-resnet56", 56, False


class ResNet164(SeedResNet):
    name, depth, bottleneck = "cifar10-resnet164", 164, True
