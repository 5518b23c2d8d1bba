"""CIFAR-10 entries: shapes, published sizes, FLOPs, determinism and an honest smoke run."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from dawnbench import RunOptions, data, run_many
from dawnbench.entries import TrainContext, load_entry_class
from dawnbench.entries.cifar10_fast import init_whitening, make_net, random_translate, to_float
from dawnbench.entries.resnet_seed import PreActResNet
from dawnbench.profiling import training_flops_per_sample
from dawnbench.tasks import get_task

# A narrow cifar10-fast on a subset: the same code path at a cost tests can afford
# (200 steps of 32 images, one evaluation at the end).
SMALL = {"widths": [16, 32, 32], "train_subset": 3200, "batch_size": 32, "epochs": 2,
         "first_eval_epoch": 2, "tta_level": 0}


def test_fast_net_shapes_and_flops():
    net = make_net([64, 256, 256])
    assert net(torch.zeros(3, 3, 32, 32)).shape == (3, 10)
    # airbench94's network: 0.71 GFLOP per training image (forward + backward)
    assert training_flops_per_sample(net, torch.randn(4, 3, 32, 32)) == pytest.approx(0.708e9, rel=0.01)


def test_normalising_copies_nothing_to_the_device_after_the_first_batch():
    # A CUDA-graph capture (batch-1 predict on a GPU) refuses a copy from the host: on an H200 the mean and std,
    # copied to the device at every call, aborted every run. The meta device shows the copies on any machine.
    class Copies(TorchDispatchMode):
        seen: list[str] = []     # each op, with the devices of the tensors it read and wrote
        crossing: list[str] = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001 - torch's signature
            out = func(*args, **(kwargs or {}))
            tensors = [t for t in tree_flatten((args, kwargs, out))[0] if isinstance(t, torch.Tensor)]
            self.seen.append(func.__name__)
            if len({t.device.type for t in tensors}) > 1:
                self.crossing.append(func.__name__)
            return out
    images = torch.zeros(2, 32, 32, 3, dtype=torch.uint8, device="meta")
    to_float(images)
    with Copies() as copies:
        out = to_float(images)
    assert out.shape == (2, 3, 32, 32) and out.dtype == torch.float32
    assert copies.seen and not copies.crossing, copies.crossing
    x = torch.full((1, 32, 32, 3), 128, dtype=torch.uint8)
    expected = [(128 - 125.307) / 51.5865, (128 - 122.961) / 50.847, (128 - 113.8575) / 51.255]
    assert to_float(x)[0, :, 0, 0].tolist() == pytest.approx(expected, abs=1e-5)
    floats = x.float()
    assert to_float(floats)[0, :, 0, 0].tolist() == pytest.approx(expected, abs=1e-5) and floats.eq(128).all()


def test_whitening_layer_whitens_patches():
    rng = torch.Generator().manual_seed(0)
    images = torch.randn(200, 3, 8, 8, generator=rng) * torch.tensor([1.0, 3.0, 0.2]).view(1, 3, 1, 1)
    conv = make_net([16, 32, 32])[0]
    init_whitening(conv, images, eps=0)
    out = torch.nn.functional.conv2d(images, conv.weight[:12])  # the + half of the filters
    flat = out.permute(0, 2, 3, 1).reshape(-1, 12)
    assert torch.allclose(flat.T @ flat / len(flat), torch.eye(12), atol=1e-3)
    assert not conv.weight.requires_grad


def test_random_translate_moves_whole_images():
    x = torch.arange(2 * 3 * 4 * 4, dtype=torch.float).view(2, 3, 4, 4)
    padded = torch.nn.functional.pad(x, (2,) * 4, mode="reflect")
    out = random_translate(padded, 2)
    assert out.shape == x.shape
    for i in range(2):  # each output is one window of its own padded image
        windows = [padded[i, :, dy:dy + 4, dx:dx + 4] for dy in range(5) for dx in range(5)]
        assert any(torch.equal(out[i], w) for w in windows)


@pytest.mark.parametrize("depth, bottleneck, published_m, gflops",
                         [(20, False, 0.27, 0.244), (56, False, 0.85, 0.754), (164, True, 1.7, 1.485)])
def test_seed_resnet_sizes(depth, bottleneck, published_m, gflops):
    net = PreActResNet(depth, bottleneck)
    assert sum(p.numel() for p in net.parameters()) / 1e6 == pytest.approx(published_m, rel=0.02)
    assert training_flops_per_sample(net, torch.randn(2, 3, 32, 32)) / 1e9 == pytest.approx(gflops, rel=0.05)


@pytest.mark.parametrize("name", ["cifar10-resnet20", "cifar10-resnet56", "cifar10-resnet164"])
def test_seed_resnet_trains_a_few_steps(cifar10_ready, name):
    entry_cls = load_entry_class(name)
    task = get_task("cifar10")
    entry = entry_cls(task, torch.device("cpu"), {"batch_size": 8})
    images, labels = data.load_split("cifar10", "train")
    ctx = TrainContext(task, 0, torch.device("cpu"), entry.hp, lambda: (images[:16], labels[:16]))
    torch.manual_seed(0)
    progress = next(entry.train(ctx))  # one epoch of 16 images: two steps
    assert progress.epoch == 1.0 and progress.samples == 16
    assert torch.isfinite(progress.loss)
    with torch.inference_mode():
        assert entry.predict(torch.from_numpy(images[:5])).shape == (5, 10)
    assert entry.hp["lr_schedule"][0] == [1, 0.01] and sum(e for e, _ in entry.hp["lr_schedule"]) == 181


def test_fast_entry_smoke_run_beats_chance_and_reports_flops(cifar10_ready, tmp_path):
    [result] = run_many(RunOptions(task="cifar10", target=100.0, out_dir=tmp_path, overrides=SMALL))
    assert result.status == "not_reached" and len(result.evals) == 1
    assert result.evals[-1].samples == 200 * 32
    assert result.evals[-1].value > 30.0  # chance is 10 %
    t = result.throughput
    assert t["samples_per_s"] > 0 and t["flops_per_sample"] > 0
    assert 0 < t["fraction_of_peak"] <= 1 and t["peak_gflops"] > 0  # against the fp32 roof (SPEC §12)


@pytest.mark.parametrize("level", [0, 1, 2])
def test_fast_entry_predict_with_test_time_augmentation(level):
    entry = load_entry_class("cifar10-fast")(get_task("cifar10"), torch.device("cpu"), {"tta_level": level})
    entry.model = make_net([16, 32, 32])
    images = torch.randint(0, 256, (4, 32, 32, 3), dtype=torch.uint8)
    with torch.inference_mode():
        logits = entry.predict(images)
        plain = entry.model(entry.model[0].weight.new_zeros(0, 3, 32, 32))  # eval mode was set
    assert logits.shape == (4, 10) and plain.shape == (0, 10) and not entry.model.training
    flipped = entry.predict(images.flip(2))  # mirrored inputs: flip TTA makes the answer mirror-invariant
    assert torch.allclose(flipped, logits, atol=1e-5) == (level == 1)


def test_fast_entry_is_deterministic(cifar10_ready, tmp_path):
    options = RunOptions(task="cifar10", target=100.0, out_dir=tmp_path, seed=5,
                         overrides={**SMALL, "epochs": 1, "train_subset": 320, "first_eval_epoch": 1})
    first, second = run_many(options)[0], run_many(options)[0]
    assert [e.value for e in first.evals] == [e.value for e in second.evals]
    assert len(first.evals) == 1 and np.isfinite(first.evals[0].value)
