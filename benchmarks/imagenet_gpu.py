"""ImageNet's GPU side (issue "ImageNet to 93 % top-5"): the ResNet-50 step, and the whole pipeline.

    python benchmarks/imagenet_gpu.py [--images 5120] [--batch 256] [--res 176] [--compile]

In one sitting, on one GPU:

1. **synthetic step**: the ``imagenet-resnet50`` network (ResNet-50 v1.5 with BlurPool,
   channels-last, bf16 autocast, SGD with momentum) on random batches already on the
   device: images/s. This is the ceiling a data pipeline can reach.
2. **full pipeline**: the same step fed by ``TrainStream`` from shards of a generated tree
   of full-size JPEGs (imported once, untimed) — decoded on the GPU with nvJPEG
   (``pipeline=gpu``), and by Pillow in one DataLoader worker per core (``pipeline=cpu``)
   for comparison; images/s and the share of the synthetic rate.
3. **projection**, labelled as such: FFCV's 40-epoch schedule over ImageNet's 1,281,167
   training images at the measured full-pipeline rate (at 160–192 px the rate differs
   from 176 px; this takes 176 as the mean), on one GPU and divided by 8 for eight (a
   linear-scaling assumption, not a measurement).

Target: the full pipeline's share of the synthetic rate with nvJPEG, ``imagenet_gpu.nvjpeg_share`` in
``targets.json``. The evidence file is rewritten after each row,
so a run stopped by a time limit keeps what it measured. Without CUDA the script
says so and exits 0 with nothing stored (the rows are unmeasured); ``--device cpu``
runs the same code at toy sizes, to check the script itself.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from dawnbench.data import imagenet
from dawnbench.data.imagenet import generate, shards
from dawnbench.entries.imagenet_resnet50 import make_resnet, normalise

import bench
import targets

TRAIN_IMAGES = 1_281_167
EPOCHS = 40


def make_step(device: torch.device, compile_model: bool, width: int, layers: list[int]):
    model = make_resnet(1000, width, layers).to(device, memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    forward = torch.compile(model) if compile_model else model

    def step(images: torch.Tensor, layout: str, labels: torch.Tensor) -> None:
        with torch.autocast(device.type, dtype=torch.bfloat16):
            loss = F.cross_entropy(forward(normalise(images, layout)), labels, label_smoothing=0.1)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return step


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def synthetic_rate(step, device: torch.device, batch: int, res: int, seconds: float) -> dict[str, float]:
    """Images/s of the step on one batch already on the device: the median over blocks of steps, and the spread."""
    images = torch.randint(0, 256, (batch, 3, res, res), dtype=torch.uint8, device=device)
    labels = torch.randint(0, 1000, (batch,), device=device)
    for _ in range(5):                                   # cuDNN autotuning, compilation
        step(images, "NCHW", labels)
    return bench.rate(lambda: step(images, "NCHW", labels), items=batch, device=device, min_run_time=seconds)


def pipeline_rate(step, folder: Path, device: torch.device, batch: int, res: int, pipeline: str,
                  workers: int) -> float:
    """Images/s over one epoch of the stream, after a first epoch that warms workers and the decoder."""
    rate = 0.0
    for epoch in range(2):
        stream = imagenet.train_stream(folder, epoch=epoch, seed=0, rank=0, world_size=1, batch_size=batch,
                                       resolution=res, device=device, pipeline=pipeline, workers=workers)
        count, start = 0, time.perf_counter()
        for b in stream:
            step(b.images, b.layout, b.labels)
            count += len(b.labels)
        sync(device)
        rate = count / (time.perf_counter() - start)
    return rate


def main() -> int:
    parser = bench.parser(__doc__)
    parser.add_argument("--images", type=int, default=5120, help="training images in the generated tree")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--res", type=int, default=176)
    parser.add_argument("--seconds", type=float, default=10.0, help="timed synthetic steps: at least this long")
    parser.add_argument("--compile", action="store_true", help="torch.compile the network")
    parser.add_argument("--device", default="cuda", help="cuda, or cpu to check the script at toy sizes")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device: the GPU rows stay unmeasured; nothing stored.")
        return 0
    device = torch.device(args.device)
    toy = device.type == "cpu"
    width, layers = (8, [1, 1, 1, 1]) if toy else (64, [3, 4, 6, 3])
    batch, res, images = (16, 64, 128) if toy else (args.batch, args.res, args.images)
    cores = len(os.sched_getaffinity(0))
    torch.backends.cudnn.benchmark = True
    step = make_step(device, args.compile, width, layers)
    figures: dict[str, object] = {"batch": batch, "res": res, "compile": args.compile, "precision": "bf16",
                                  "network": "resnet50" if not toy else "toy", "cores": cores}
    figures["synthetic"] = synthetic_rate(step, device, batch, res, 0.5 if toy else args.seconds)
    figures["synthetic_images_per_s"] = figures["synthetic"]["per_s"]
    print(f"synthetic step: {figures['synthetic_images_per_s']:.0f} images/s")
    store = bench.rewriter(args, "imagenet_gpu", figures, device=device) if not toy else (lambda: None)
    store()

    work = Path(tempfile.mkdtemp(prefix="dawnbench-imagenet-gpu-"))
    try:
        classes = 20
        tree = generate.write_tree(work / "tree", classes, images // classes, 1, "folders")
        folder = work / "shards"
        imagenet.import_tree(tree, folder, subset="bench", workers=cores, shard_size=16 if toy else shards.SHARD_SIZE)
        pipelines = ["cpu"] if toy else ["gpu", "cpu"]
        for name in pipelines:
            rate = pipeline_rate(step, folder, device, batch, res, name, cores)
            figures[f"pipeline_{name}_images_per_s"] = rate
            figures[f"pipeline_{name}_share_of_synthetic"] = rate / figures["synthetic_images_per_s"]
            print(f"pipeline {name}: {rate:.0f} images/s = {rate / figures['synthetic_images_per_s']:.0%} of synthetic")
            store()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    best = max(figures[f"pipeline_{n}_images_per_s"] for n in pipelines)
    one_gpu_hours = EPOCHS * TRAIN_IMAGES / best / 3600
    figures["projection"] = {"label": "projection, not a measurement: 40 epochs × 1,281,167 images at the best "
                                      "full-pipeline rate; eight GPUs assume linear scaling",
                             "one_gpu_hours": one_gpu_hours, "eight_gpu_hours": one_gpu_hours / 8}
    if not toy:
        figures.update(targets.judged("imagenet_gpu.nvjpeg_share", figures["pipeline_gpu_share_of_synthetic"]))
    print(f"projection: {one_gpu_hours:.2f} h on one device, {one_gpu_hours / 8:.2f} h on eight (linear scaling assumed)")
    store()
    return 0


if __name__ == "__main__":
    sys.exit(main())
