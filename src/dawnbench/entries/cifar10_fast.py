"""cifar10-fast: CIFAR-10 to 94 % top-1 in twelve epochs.

Evidence (README "Accelerators"; benchmarks/cifar10_tta.py, benchmarks/gpu_suite.py):
  * 2-core AVX-512 EPYC, bf16 autocast, seed 0: 94.42 % at epoch 12, TTA 730 s (808
    images/s, 54 % of the measured bf16 roof); fp32: see the README.
  * Why 12 epochs, not airbench94's 9.9: on an H100 the 9.9-epoch schedule reached 94 %
    in 7 of 15 seeds (the others ended at 93.80-93.97 %); airbench94 itself, 20 seeds,
    reached it in 10/20 at 9.9 epochs, 17/20 at 11 and 20/20 at 12 (mean 94.27 %). The
    schedule (warm-up, decay, lookahead) is defined in fractions of the run, so 12 epochs
    is the same recipe stretched. Reliability over seeds at 12 epochs on a GPU is not yet
    measured here (no GPU was lent to the session that made the change).
  * Precision: the harness's bf16 autocast trained it to chance (10 %) until autocast's
    weight-cast cache was switched off (precision.py says why); with it off, bf16
    reached 94.42 % on the CPU above.

The recipe follows the public record of fast CIFAR-10 training; the code is written
here. Sources for the ideas:
  * Keller Jordan, "94% on CIFAR-10 in 3.29 seconds on a single GPU" (airbench94,
    2024): whitening first layer, frozen-scale BatchNorm, identity-initialised
    convolutions, lookahead weight averaging, alternating flips, flip+translate TTA,
    the hyperparameters below.
  * David Page, "How to train your ResNet" (2018): patch-whitening initialisation,
    label smoothing, large-batch short schedules, BatchNorm bias learning-rate boost.
  * Tysam&co, hlb-CIFAR10 (2023): the network shape and the lookahead schedule.

Sections, in the order things happen: hyperparameters, data augmentation, network,
whitening initialisation, training loop, prediction with test-time augmentation.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator

import torch
import torch.nn.functional as F
from torch import nn

from dawnbench.entries.base import Entry, Progress, TrainContext
from dawnbench.entries.graphs import CudaGraphed

# --- hyperparameters (all of them) -----------------------------------------------------
HPARAMS = {
    "epochs": 12.0,             # airbench94's 9.9 reached 94 % in 7 of 15 seeds; see the header
    "batch_size": 1024,
    "lr": 11.5,                 # per 1024 examples, for the summed loss (scaled below)
    "momentum": 0.85,
    "weight_decay": 0.0153,     # per 1024 examples, decoupled from the learning rate
    "bias_scaler": 64.0,        # learning-rate boost for BatchNorm biases (not their decay)
    "label_smoothing": 0.2,
    "warmup_fraction": 0.23,    # lr: 0.2 → 1.0 over this share of steps, then → 0.07
    "whiten_bias_epochs": 3,    # the whitening layer's bias trains this long, then freezes
    "translate": 2,             # random translation (reflect padding), pixels
    "widths": [64, 256, 256],
    "batchnorm_momentum": 0.6,  # running = 0.6 · running + 0.4 · batch
    "scaling_factor": 1 / 9,    # multiplies the logits
    "lookahead_every": 5,       # steps between weight-averaging updates
    "tta_level": 2,             # 0 none, 1 flip, 2 flip + 1-pixel translations
    "first_eval_epoch": 11,     # earlier evaluations cannot pass 94 % and cost ~1 min of wall each on a CPU
    "train_subset": None,       # use only the first N training images (smoke tests)
    "cuda_graph_predict": True,  # batch-1 predict on a GPU as one CUDA-graph replay (TTA inside)
}
CIFAR_MEAN = torch.tensor([125.307, 122.961, 113.8575]) / 255
CIFAR_STD = torch.tensor([51.5865, 50.847, 51.255]) / 255


def to_float(images: torch.Tensor) -> torch.Tensor:
    """uint8 N×32×32×3 → normalised float N×3×32×32 in channels-last memory."""
    mean, std = normaliser(images.device)
    x = images.to(torch.float32, copy=True).div_(255).sub_(mean).div_(std)  # a float caller's batch stays as it was
    return x.permute(0, 3, 1, 2)  # a view: the NHWC bytes already are channels-last


@functools.cache
def normaliser(device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """The mean and std on ``device``, copied there once: predict's CUDA-graph capture refuses a copy from
    the host (it aborted every run on an H200)."""
    return CIFAR_MEAN.to(device), CIFAR_STD.to(device)


# --- data augmentation -----------------------------------------------------------------
def random_translate(padded: torch.Tensor, pad: int) -> torch.Tensor:
    """Crop each reflect-padded image at a random offset in [-pad, pad]², vectorised by offset."""
    n, size = len(padded), padded.shape[-1] - 2 * pad
    shifts = torch.randint(0, 2 * pad + 1, (2, n), device=padded.device)
    out = torch.empty((n, padded.shape[1], size, size), device=padded.device,
                      dtype=padded.dtype).contiguous(memory_format=torch.channels_last)
    for dy in range(2 * pad + 1):
        for dx in range(2 * pad + 1):
            mask = (shifts[0] == dy) & (shifts[1] == dx)
            out[mask] = padded[mask, :, dy:dy + size, dx:dx + size]
    return out


def alternating_flip(images: torch.Tensor, first_mask: torch.Tensor, epoch: int) -> torch.Tensor:
    """Epoch 0 flips a random half; later epochs alternate, so each image is seen both ways."""
    flip = first_mask if epoch % 2 == 0 else ~first_mask
    return torch.where(flip.view(-1, 1, 1, 1), images.flip(-1), images)


# --- network ---------------------------------------------------------------------------
class FrozenScaleBatchNorm(nn.BatchNorm2d):
    """BatchNorm whose scale stays 1: only the bias (shift) is learned."""

    def __init__(self, channels: int, momentum: float):
        super().__init__(channels, eps=1e-12, momentum=1 - momentum)
        self.weight.requires_grad = False


class IdentityInitConv(nn.Conv2d):
    """3×3 'same' convolution whose first in_channels filters start as the identity."""

    def __init__(self, c_in: int, c_out: int):
        super().__init__(c_in, c_out, kernel_size=3, padding="same", bias=False)
        with torch.no_grad():
            nn.init.dirac_(self.weight[:c_in])


def conv_group(c_in: int, c_out: int, bn_momentum: float) -> nn.Sequential:
    return nn.Sequential(IdentityInitConv(c_in, c_out), nn.MaxPool2d(2),
                         FrozenScaleBatchNorm(c_out, bn_momentum), nn.GELU(),
                         IdentityInitConv(c_out, c_out), FrozenScaleBatchNorm(c_out, bn_momentum), nn.GELU())


class Scale(nn.Module):
    def __init__(self, factor: float):
        super().__init__()
        self.factor = factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.factor


def make_net(widths: list[int], bn_momentum: float = 0.6, scaling_factor: float = 1 / 9) -> nn.Sequential:
    w1, w2, w3 = widths
    whiten_width = 2 * 3 * 2 * 2  # ± each eigenvector of 2×2×3 patches
    return nn.Sequential(
        nn.Conv2d(3, whiten_width, kernel_size=2, padding=0, bias=True),  # 32 → 31
        nn.GELU(),
        conv_group(whiten_width, w1, bn_momentum),  # 31 → 15
        conv_group(w1, w2, bn_momentum),            # 15 → 7
        conv_group(w2, w3, bn_momentum),            # 7 → 3
        nn.MaxPool2d(3), nn.Flatten(), nn.Linear(w3, 10, bias=False), Scale(scaling_factor))


# --- whitening initialisation ----------------------------------------------------------
def init_whitening(conv: nn.Conv2d, images: torch.Tensor, eps: float = 5e-4) -> None:
    """Set the first layer to ± the ZCA-style whitening of the images' 2×2 patches, frozen."""
    c, (h, w) = images.shape[1], conv.weight.shape[2:]
    patches = images.unfold(2, h, 1).unfold(3, w, 1).permute(0, 2, 3, 1, 4, 5).reshape(-1, c * h * w).double()
    covariance = patches.T @ patches / len(patches)
    eigenvalues, eigenvectors = torch.linalg.eigh(covariance)
    filters = (eigenvectors.T / torch.sqrt(eigenvalues + eps).unsqueeze(1)).reshape(-1, c, h, w).flip(0)
    with torch.no_grad():
        conv.weight.copy_(torch.cat([filters, -filters]).float())
    conv.weight.requires_grad = False


# --- the entry -------------------------------------------------------------------------
class Cifar10Fast(Entry):
    name = "cifar10-fast"
    tasks = ("cifar10",)
    hparams = HPARAMS
    # --quick: 3 epochs over 5,000 images at batch 256 (20 steps each), evaluated from the first, without test-time
    # augmentation (three passes of the test set would cost more than an epoch here)
    quick_hparams = {"batch_size": 256, "epochs": 3, "first_eval_epoch": 1, "tta_level": 0}
    eval_batch_size = 1000
    warmup_steps = 8
    precisions = ("fp32", "tf32", "bf16", "fp16")  # the step goes through ctx.scaler

    def make_model(self) -> nn.Module:
        hp = self.hp
        net = make_net(hp["widths"], hp["batchnorm_momentum"], hp["scaling_factor"])
        return net.to(memory_format=torch.channels_last)

    def train(self, ctx: TrainContext) -> Iterator[Progress]:
        # Long: a recipe reads top to bottom, in the order things happen (data, model, optimizer, epochs).
        hp, device = self.hp, ctx.device
        # Data: cached uint8 → normalised float on the device, padded once for translation.
        images, labels = ctx.load_train()
        if hp["train_subset"]:
            images, labels = images[:hp["train_subset"]], labels[:hp["train_subset"]]
        x_train = to_float(torch.from_numpy(images).to(device)).contiguous(memory_format=torch.channels_last)
        y_train = torch.from_numpy(labels).to(device)
        pad = hp["translate"]
        x_padded = F.pad(x_train, (pad,) * 4, mode="reflect") if pad else x_train
        n, bs = len(x_train), hp["batch_size"]

        # Network, whitening, optimiser.
        self.model = self.make_model().to(device)
        whiten = self.model[0]
        init_whitening(whiten, x_train[:5000])  # before DDP: it freezes a weight DDP would wait for
        forward = ctx.compile(ctx.distribute(self.model))
        steps_per_epoch = max(1, n // ctx.world_size // bs)  # per worker
        total_steps = math.ceil(hp["epochs"] * steps_per_epoch)
        kilostep_scale = 1024 * (1 + 1 / (1 - hp["momentum"]))
        lr = hp["lr"] / kilostep_scale           # for the summed (not mean) loss
        wd = hp["weight_decay"] * bs / kilostep_scale
        lr_bias = lr * hp["bias_scaler"]
        bn_biases = [p for name, p in self.model.named_parameters() if p.requires_grad and "weight" not in name
                     and isinstance(self.model.get_submodule(name.rsplit(".", 1)[0]), nn.BatchNorm2d)]
        others = [p for p in self.model.parameters() if p.requires_grad and all(p is not b for b in bn_biases)]
        # SGD couples decay with lr; dividing by lr makes the decay per step decoupled.
        optimizer = torch.optim.SGD([{"params": bn_biases, "lr": lr_bias, "weight_decay": wd / lr_bias},
                                     {"params": others, "lr": lr, "weight_decay": wd / lr}],
                                    momentum=hp["momentum"], nesterov=True)
        warmup = int(total_steps * hp["warmup_fraction"])

        def lr_factor(step: int) -> float:
            if step < warmup:
                return 0.2 + 0.8 * step / warmup
            return 1.0 - 0.93 * (step - warmup) / max(1, total_steps - warmup)
        schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_factor)
        average = [p.detach().clone() for p in self.model.state_dict().values()]
        first_flip = torch.rand(n, device=device) < 0.5
        whiten_bias_steps = hp["whiten_bias_epochs"] * steps_per_epoch

        # Training loop.
        step, epoch = 0, 0
        while step < total_steps:
            epoch_x = random_translate(x_padded, pad) if pad else x_train
            epoch_x = alternating_flip(epoch_x, first_flip, epoch)
            order = ctx.epoch_order(n, epoch)
            self.model.train()
            for i in range(steps_per_epoch):
                batch = order[i * bs:(i + 1) * bs]
                outputs = forward(epoch_x[batch])
                loss = F.cross_entropy(outputs, y_train[batch], label_smoothing=hp["label_smoothing"],
                                       reduction="sum")
                optimizer.zero_grad(set_to_none=True)
                ctx.scaler.scale(loss).backward()
                if step >= whiten_bias_steps:  # the whitening bias trains early only; dropping its
                    whiten.bias.grad = None    # gradient (not requires_grad) keeps DDP's buckets fixed
                ctx.scaler.step(optimizer)
                ctx.scaler.update()
                schedule.step()
                step += 1
                if step % hp["lookahead_every"] == 0 or step == total_steps:
                    # Lookahead: pull the averaged weights toward the live ones, then
                    # restart from the average; the average's weight on history grows
                    # as the schedule ends, and the final step adopts it outright.
                    decay = 1.0 if step == total_steps else 0.95 ** 5 * (step / total_steps) ** 3
                    self._lookahead(average, decay)
                if step == total_steps:
                    break
            epoch += 1
            at = step / steps_per_epoch
            if at >= hp["first_eval_epoch"] or step == total_steps:
                yield Progress(epoch=at, samples=step * bs * ctx.world_size, loss=loss.detach() / bs)

    @torch.no_grad()
    def _lookahead(self, average: list[torch.Tensor], decay: float) -> None:
        for avg, live in zip(average, self.model.state_dict().values(), strict=True):
            if avg.dtype.is_floating_point:
                avg.lerp_(live, 1 - decay)
                live.copy_(avg)

    def flop_model(self) -> tuple[nn.Module, torch.Tensor]:
        return self.model, torch.randn(8, 3, 32, 32, device=self.device).contiguous(memory_format=torch.channels_last)

    def predict(self, inputs: torch.Tensor) -> torch.Tensor:
        self.model.eval()
        if len(inputs) == 1 and self.device.type == "cuda" and self.hp["cuda_graph_predict"]:
            # Batch 1 is launch-bound (six small forward passes with TTA): replay them as one graph.
            graphed = getattr(self, "_graphed", None)
            if graphed is None or graphed[0] is not self.model:  # a new network needs a new capture
                self._graphed = graphed = (self.model, CudaGraphed(self._predict, inputs.to(self.device)))
            return graphed[1](inputs)
        return self._predict(inputs)

    def _predict(self, inputs: torch.Tensor) -> torch.Tensor:
        x = to_float(inputs.to(self.device)).contiguous(memory_format=torch.channels_last)
        level = self.hp["tta_level"]

        def mirror(batch: torch.Tensor) -> torch.Tensor:
            logits = self.model(batch)
            return 0.5 * (logits + self.model(batch.flip(-1))) if level >= 1 else logits
        logits = mirror(x)
        if level >= 2:
            padded = F.pad(x, (1,) * 4, mode="reflect")
            shifted = [padded[:, :, 0:32, 0:32], padded[:, :, 2:34, 2:34]]
            logits = 0.5 * logits + 0.25 * (mirror(shifted[0]) + mirror(shifted[1]))
        return logits
