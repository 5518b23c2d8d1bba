"""ImageNet (ILSVRC-2012), a dataset larger than memory: imported once into shards, streamed.

    dawnbench data fetch imagenet --from /data/imagenet        # the official tree: 1,281,167 / 50,000
    dawnbench data fetch imagenet --from mini/ --subset mini   # any other tree, under a name

* :mod:`tree`      — reading the user's tree (both val layouts, the devkit's mapping);
* :mod:`shards`    — writing the WebDataset shards, and streaming them per rank and worker;
* :mod:`pipeline`  — decoding and augmentation, on the CPU (Pillow) or the GPU (nvJPEG);
* :mod:`dali`      — NVIDIA DALI's pipeline, when installed;
* :mod:`generate`  — a miniature tree in the official layout (tests, trying it out).

The entry points the rest of dawnbench uses are below: :func:`import_tree`,
:func:`open_split`, :func:`train_stream`, :func:`synthetic_stream`, :func:`imagenet_v2`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from dawnbench import bounds
from dawnbench.data.imagenet import shards
from dawnbench.data.imagenet.pipeline import SCALE
from dawnbench.data.imagenet.shards import (
    MAX_SIDE,
    QUALITY,
    SHARD_SIZE,
    FileJpegSplit,
    ShardSplit,
)
from dawnbench.data.imagenet.tree import read_tree
from dawnbench.errors import DataError, DawnbenchError
from dawnbench.io import atomic_write_json, read_json, walk_foreign

PIPELINES = ("auto", "cpu", "gpu", "dali")


def import_tree(source: Path, dest: Path, *, subset: str | None, max_side: int = MAX_SIDE, quality: int = QUALITY,
                shard_size: int = SHARD_SIZE, workers: int | None = None,
                progress: Callable[[str, int, int], None] = lambda split, done, total: None) -> dict[str, Any]:
    """Import the tree at ``source`` into ``dest`` (resumable: a staging folder beside it keeps the
    finished shards). Returns the import's figures."""
    for name, value in (("max_side", max_side), ("quality", quality), ("shard_size", shard_size),
                        ("workers", workers)):
        bounds.check_option("--" + name.replace("_", "-"), value)
    if workers is not None and workers > bounds.CORES:
        raise DawnbenchError(f"--workers {workers}: this machine has {bounds.CORES} cores; more encoding processes "
                             "than cores only share them. Pass at most that many, or leave --workers out.")
    tree = read_tree(source)
    tree.check_counts(subset)
    staging = dest.with_name(f".{dest.name}.import")
    plan = {"source": str(tree.root), "counts": tree.counts(), "max_side": max_side, "quality": quality,
            "shard_size": shard_size, "val_layout": tree.val_layout}
    if staging.exists() and _read_plan(staging) != plan:
        _clear_staging(staging)  # another import was under way: its shards are not this one's
    for split in ("train", "val"):
        (staging / split).mkdir(parents=True, exist_ok=True)
    atomic_write_json(staging / "plan.json", plan)
    order = np.random.default_rng(0).permutation(len(tree.train))  # every training shard mixes classes
    train = [tree.train[i] for i in order]
    jobs = {"train": shards.plan_shards(train, shard_size, staging / "train", max_side, quality),
            "val": shards.plan_shards(tree.val, shard_size, staging / "val", max_side, quality)}
    workers = workers or len(os.sched_getaffinity(0))
    figures: dict[str, Any] = {"workers": workers}
    for split, split_jobs in jobs.items():
        figures[split] = shards.write_shards(split_jobs, workers,
                                             lambda done, total, images, s=split: progress(s, done, total))
    meta = {"name": dest.name, "classes": tree.classes, "num_classes": len(tree.classes), "subset": subset,
            "source": str(tree.root), "val_layout": tree.val_layout, "max_side": max_side, "quality": quality,
            "splits": {split: {"count": sum(len(j.items) for j in split_jobs), "shard_size": shard_size,
                               "shards": [{"file": f"{split}/{j.path.name}", "count": len(j.items)}
                                          for j in split_jobs]}
                       for split, split_jobs in jobs.items()}}
    shards.write_meta(staging, meta)
    (staging / "plan.json").unlink()
    if dest.exists():
        shutil.rmtree(dest)  # the previous import of this name (--force): dawnbench's own cache folder
    os.replace(staging, dest)
    return figures


def _read_plan(staging: Path) -> dict[str, Any] | None:
    try:
        return read_json(staging / "plan.json", "run record")
    except DawnbenchError:  # a plan that cannot be read is no plan
        return None


def _clear_staging(staging: Path) -> None:
    """Remove what an earlier import wrote there (its shards and plan), nothing else."""
    for split in ("train", "val"):
        for f in (staging / split).glob("shard-*.tar*") if (staging / split).is_dir() else []:
            f.unlink()
    (staging / "plan.json").unlink(missing_ok=True)


def open_split(folder: Path, split: str) -> ShardSplit:
    meta = shards.read_meta(folder)
    files, count = shards.split_files(meta, split)
    return ShardSplit(folder, files, count)


def resolve_pipeline(name: str, device: Any) -> str:
    """``auto``: nvJPEG on a GPU, Pillow on a CPU. ``dali`` where DALI is installed (its GPU decoder on
    a GPU, its CPU decoder otherwise)."""
    if name not in PIPELINES:
        raise DataError(f"pipeline {name!r}: one of {', '.join(PIPELINES)}.")
    if name == "auto":
        return "gpu" if getattr(device, "type", "cpu") == "cuda" else "cpu"
    if name == "gpu" and getattr(device, "type", "cpu") != "cuda":
        raise DataError(f"pipeline {name!r} decodes on a GPU; this run is on {device}. Use pipeline=cpu.")
    return name


def train_stream(folder: Path, *, epoch: int, seed: int, rank: int, world_size: int, batch_size: int,
                 resolution: int, device: Any, pipeline: str = "auto", workers: int | str = "auto",
                 scale: tuple[float, float] = SCALE) -> Any:
    """One epoch of training batches for this rank (see :class:`shards.TrainStream`): ``len()``
    steps of :class:`shards.Batch`, the same number on every rank."""
    chosen = resolve_pipeline(pipeline, device)
    meta = shards.read_meta(folder)
    if chosen == "dali":
        from dawnbench.data.imagenet import dali

        return dali.DaliStream(folder, meta, epoch=epoch, seed=seed, rank=rank, world_size=world_size,
                               batch_size=batch_size, res=resolution, device=device, workers=workers, scale=scale)
    return shards.TrainStream(folder, meta, epoch=epoch, seed=seed, rank=rank, world_size=world_size,
                              batch_size=batch_size, res=resolution, pipeline_name=chosen, device=device,
                              workers=workers, scale=scale)


def synthetic_stream(folder: Path, *, seed: int, batch_size: int, resolution: int, device: Any,
                     pipeline: str = "auto", **_: Any) -> shards.SyntheticStream:
    """The warm-up's stand-in: batches of the real stream's shapes and layout, random, on the device
    (only ``meta.json`` is read, for the number of classes)."""
    chosen = resolve_pipeline(pipeline, device)
    return shards.SyntheticStream(batch_size=batch_size, res=resolution, pipeline_name="cpu" if chosen == "cpu" else "gpu",
                                  device=device, seed=seed, classes=int(shards.read_meta(folder)["num_classes"]))


def imagenet_v2(folder: Path) -> FileJpegSplit:
    """ImageNetV2 (Recht et al., 2019) as published: ``<class index>/*.jpeg`` folders, 0–999."""
    files, labels = [], []
    for f in walk_foreign(folder):
        if f.suffix.lower() in (".jpeg", ".jpg") and f.parent.name.isdigit():
            files.append(f)
            labels.append(int(f.parent.name))
    if not files:
        raise DataError(f"{folder}: no <class index>/*.jpeg images; pass an ImageNetV2 folder as published "
                        "(e.g. imagenetv2-matched-frequency-format-val).")
    order = sorted(range(len(files)), key=lambda i: (labels[i], files[i].name))
    return FileJpegSplit([files[i] for i in order], np.array([labels[i] for i in order], np.int64))
