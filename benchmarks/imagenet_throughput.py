"""ImageNet's CPU side (issue "ImageNet to 93 % top-5"): the import and the training loader, per core.

    python benchmarks/imagenet_throughput.py [--images 1200] [--repeats 3]

On a generated tree of full-size JPEGs (about 500×375, quality 90, as
``dawnbench.data.imagenet.generate`` writes them), in one sitting:

1. **import**: ``import_tree`` (read, decode at reduced size, resize to ``--max-side``
   384, re-encode, write shards) with 1 worker process and with one per core;
   images/s per core. Beside it, Pillow alone doing the same re-encode in a loop (no
   shards, no processes): what the pipeline costs on top.
2. **CPU loader**: one epoch of ``TrainStream`` at 176-px training crops (read shard →
   shuffle → decode → random resized crop → flip → batch tensor), in the main process
   (``workers=0``: exactly one core) and with one DataLoader worker per core; images/s
   per core. Beside it, Pillow's ``decode_crop`` alone in a loop on the same JPEGs.

Each at one core is judged against ``imagenet_throughput.import`` and ``imagenet_throughput.loader`` in
``targets.json`` (their targets and moonshots).
Each figure is the best of ``--repeats`` (the machine's noise only slows a run down).
"""

from __future__ import annotations

import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import torch

from dawnbench.data import imagenet
from dawnbench.data.imagenet import generate, pipeline, shards

import bench
import targets


def best_rate(count: int, fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return count / min(times)


def main() -> int:
    parser = bench.parser(__doc__)
    parser.add_argument("--images", type=int, default=1200, help="training images in the generated tree")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--res", type=int, default=176)
    args = parser.parse_args()
    torch.set_num_threads(1)
    cores = len(os.sched_getaffinity(0))
    work = Path(tempfile.mkdtemp(prefix="dawnbench-imagenet-bench-"))
    try:
        classes = 20
        tree = generate.write_tree(work / "tree", classes, args.images // classes, 1, "folders")
        files = sorted((tree / "train").rglob("*.JPEG"))
        sizes = [f.stat().st_size for f in files]
        figures: dict[str, object] = {"images": len(files), "cores": cores, "mean_jpeg_bytes": sum(sizes) / len(sizes)}
        print(f"{len(files)} generated JPEGs, {figures['mean_jpeg_bytes'] / 1000:.0f} KB on average; {cores} cores")

        # 1. import
        total = len(files) + classes
        pillow = best_rate(len(files), lambda: [shards.reencode(f, shards.MAX_SIDE, shards.QUALITY) for f in files],
                           args.repeats)
        rates = {}
        for workers in sorted({1, cores}):
            def run(workers: int = workers) -> None:
                dest = work / f"import-{workers}"
                shutil.rmtree(dest, ignore_errors=True)
                imagenet.import_tree(tree, dest, subset="bench", workers=workers)
            rates[workers] = best_rate(total, run, args.repeats)
        figures["import"] = {"pillow_reencode_per_core": pillow,
                             **{f"workers_{w}_per_core": r / w for w, r in rates.items()},
                             **{f"workers_{w}_images_per_s": r for w, r in rates.items()}}
        print(f"import: Pillow re-encode alone {pillow:.0f} images/s; import_tree "
              + ", ".join(f"{w} worker(s) {r:.0f} images/s = {r / w:.0f} per core" for w, r in rates.items()))

        # 2. the CPU loader
        folder = work / f"import-{cores}"
        meta = shards.read_meta(folder)
        jpegs = [j for batch, _ in imagenet.open_split(folder, "train").batches(256) for j in batch]
        rng = random.Random(0)
        boxes = [pipeline.random_crop(*pipeline.header_size(j), rng) for j in jpegs]
        alone = best_rate(len(jpegs), lambda: [pipeline.decode_crop(j, b, False, args.res)
                                               for j, b in zip(jpegs, boxes)], args.repeats)
        loader = {}
        for workers in sorted({0, cores}):
            def epoch(workers: int = workers) -> int:
                stream = shards.TrainStream(folder, meta, epoch=0, seed=0, rank=0, world_size=1, batch_size=64,
                                            res=args.res, pipeline_name="cpu", device=torch.device("cpu"),
                                            workers=workers)
                return sum(len(b.labels) for b in stream)
            count = epoch(workers)
            loader[max(workers, 1)] = best_rate(count, lambda w=workers: epoch(w), args.repeats)
        figures["loader"] = {"res": args.res, "pillow_decode_crop_per_core": alone,
                             **{f"cores_{c}_per_core": r / c for c, r in loader.items()},
                             **{f"cores_{c}_images_per_s": r for c, r in loader.items()}}
        print(f"loader at {args.res} px: Pillow decode+crop alone {alone:.0f} images/s; TrainStream "
              + ", ".join(f"{c} core(s) {r:.0f} images/s = {r / c:.0f} per core" for c, r in loader.items()))
        figures["targets"] = {
            "import": targets.judged("imagenet_throughput.import", figures["import"]["workers_1_per_core"]),
            "loader": targets.judged("imagenet_throughput.loader", figures["loader"]["cores_1_per_core"])}
        print("targets: " + ", ".join(f"{k} {j['verdict']} (moonshot {j['moonshot']})" for k, j in figures["targets"].items()))
        bench.store(args, "imagenet_throughput", figures)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
