"""ImageNet as WebDataset shards: written once by the import, streamed by every run.

**Layout** (``$DAWNBENCH_DATA/imagenet[@subset]/``): ``train/shard-NNNNNN.tar`` and
``val/shard-NNNNNN.tar`` in WebDataset's tar layout — ``<key>.jpg`` (the image
re-encoded: RGB, longer side at most ``max_side``, JPEG quality ``quality``) and
``<key>.cls`` (the class index, ASCII) — and ``meta.json`` (classes, counts, the shard
list, the settings). NVIDIA DALI's ``fn.readers.webdataset`` reads the same files.
Training images are shuffled once before they are split into shards, so every shard
mixes classes; validation keeps file-name order.

**Import** (:func:`write_shards`): one task per shard, spread over the cores; each shard
is written to ``.partial`` and renamed when whole, in a staging folder that survives a
failed or interrupted import, so running it again redoes only the missing shards. The
dataset appears under its name only when every shard and ``meta.json`` are there. An
image that cannot be read stops the import with its path.

**Streaming** (:func:`deal`, :class:`TrainStream`): an epoch reads the shards in an order
shuffled by the run's seed and the epoch, each shard's samples in file order, and deals that
sequence out by *samples*, the short last shard included, using the counts in ``meta.json``:
with a global batch of G = batch × ranks, the epoch has ⌊N / G⌋ steps on every rank; rank r
takes the r-th run of steps × batch consecutive samples, and within a rank each DataLoader
worker a consecutive run of whole batches (the first workers one batch more when they do not
divide evenly). Every consumer reads its samples in order, each shard from its first sample to
its last (passing over the ones before); no sample is read twice in an epoch; the sequence
starts at an offset drawn for the epoch, and the N mod G samples at its end (fewer than one
global batch, a different few each epoch, even with a single shard) sit out. Inside a consumer,
samples pass through a shuffle buffer and are batched. Every rank takes the same number of
steps by construction, which is WebDataset's known pitfall with DDP (ranks with unequal batch
counts make an all-reduce wait forever).
"""

from __future__ import annotations

import io
import itertools
import os
import random
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

from dawnbench.bounds import IMPORT_DEFAULTS
from dawnbench.data.imagenet import pipeline
from dawnbench.data.splits import ListSplit, Split
from dawnbench.errors import DataError, DawnbenchError
from dawnbench.io import atomic_write_json, fsync_dir, read_foreign, read_json

FORMAT = 1
MAX_SIDE = IMPORT_DEFAULTS["max_side"]     # 384: the short side of a 4:3 image stays ≥ 256, the evaluation size
QUALITY = IMPORT_DEFAULTS["quality"]      # 90
SHARD_SIZE = IMPORT_DEFAULTS["shard_size"]  # 256 images: 5,005 training shards, so little waits per epoch
SHUFFLE_BUFFER = 1000


# --- writing (the import) -------------------------------------------------------------------

def shrink(img: Image.Image, size: tuple[int, int]) -> Image.Image:
    """``img`` (RGB) resized down to ``size`` with an antialiased bilinear filter.

    The filter is Pillow's BILINEAR (torch ported it), run by torch's vectorised uint8
    kernel, several times faster than Pillow's own resize — which was the largest part of
    an import's time (``benchmarks/imagenet_throughput.py`` measures the import)."""
    pixels = torch.from_numpy(np.array(img)).permute(2, 0, 1)[None]     # channels-last strides: the fast path
    out = F.interpolate(pixels, size=(size[1], size[0]), mode="bilinear", antialias=True, align_corners=False)
    return Image.merge("RGB", [Image.fromarray(band) for band in out[0].numpy()])   # planar out: no transpose copy


def reencode(path: Path, max_side: int, quality: int) -> bytes:
    """The image at ``path`` as an RGB JPEG whose longer side is at most ``max_side``."""
    try:
        img = Image.open(io.BytesIO(read_foreign(path, "data")))
        width, height = img.size
        scale = max_side / max(width, height)
        size = (max(1, round(width * scale)), max(1, round(height * scale)))
        if scale < 1:
            img.draft("RGB", size)                 # JPEG: decode at 1/2, 1/4, 1/8 while that stays ≥ size
        img = img.convert("RGB")                   # CMYK, greyscale, palette, a PNG named .JPEG: all RGB
        if scale < 1:
            img = shrink(img, size)
        out = io.BytesIO()
        img.save(out, "JPEG", quality=quality)
    except DawnbenchError as err:
        raise DataError(f"{err}") from None
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as err:
        raise DataError(f"{path}: cannot read this image ({type(err).__name__}: {err}). Replace the file or "
                        "delete it, and import again: finished shards are kept, the import resumes.") from None
    return out.getvalue()


@dataclass(frozen=True)
class ShardJob:
    path: Path                          # the .tar to write
    items: list[tuple[str, str, int]]   # (key, source file, class)
    max_side: int
    quality: int


def write_shard(job: ShardJob) -> tuple[str, int, int]:
    """Write one shard (to ``.partial``, then renamed); return (file, images, bytes)."""
    import tarfile

    partial = job.path.with_name(job.path.name + ".partial")
    size = 0
    with open(partial, "wb") as raw, tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for key, source, label in job.items:
            for suffix, payload in ((".jpg", reencode(Path(source), job.max_side, job.quality)),
                                    (".cls", str(label).encode())):
                info = tarfile.TarInfo(key + suffix)
                info.size, info.mtime, info.mode = len(payload), 0, 0o644
                tar.addfile(info, io.BytesIO(payload))
                size += len(payload)
        tar.close()
        raw.flush()
        os.fsync(raw.fileno())
    os.replace(partial, job.path)
    return job.path.name, len(job.items), size


def plan_shards(items: Sequence[tuple[Path, int]], shard_size: int, folder: Path, max_side: int,
                quality: int) -> list[ShardJob]:
    return [ShardJob(folder / f"shard-{n:06d}.tar",
                     [(f"{start + i:08d}", str(p), label) for i, (p, label) in enumerate(items[start:start + shard_size])],
                     max_side, quality)
            for n, start in enumerate(range(0, len(items), shard_size))]


def write_shards(jobs: list[ShardJob], workers: int, progress: Callable[[int, int, int], None]) -> dict[str, Any]:
    """Write the shards not yet written, ``workers`` at a time; ``progress(done, total, images)``."""
    todo = [j for j in jobs if not j.path.exists()]
    done = len(jobs) - len(todo)
    images = sum(len(j.items) for j in jobs if j.path.exists())
    start, written = time.perf_counter(), 0
    progress(done, len(jobs), images)
    if todo:
        with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("fork"),
                                 initializer=torch.set_num_threads, initargs=(1,)) as pool:  # one core each
            futures = [pool.submit(write_shard, j) for j in todo]
            try:
                for future in as_completed(futures):
                    _, count, _ = future.result()
                    done, images, written = done + 1, images + count, written + count
                    progress(done, len(jobs), images)
            except BaseException:
                for future in futures:
                    future.cancel()
                raise
    seconds = time.perf_counter() - start
    return {"images_written": written, "seconds": seconds}


# --- reading --------------------------------------------------------------------------------

def _samples(paths: Sequence[Path]) -> Iterator[dict[str, Any]]:
    """The samples of these shards, in order, with WebDataset's own tar readers. The files are
    opened here (not through WebDataset's URL opener, which would also run ``pipe:`` commands)."""
    from webdataset.tariterators import group_by_keys, tar_file_expander

    def opened() -> Iterator[dict[str, Any]]:
        for path in paths:
            with open(path, "rb") as stream:
                yield {"url": str(path), "stream": stream}

    yield from group_by_keys(tar_file_expander(opened()))


def _label(sample: dict[str, Any]) -> int:
    return int(sample["cls"])


class ShardSplit(Split):
    """A split read from its shards in order: inputs are JPEG bytes, targets the class indices."""

    def __init__(self, folder: Path, files: list[str], count: int):
        self.folder, self.files, self.count = folder, files, count

    def batches(self, batch_size: int) -> Iterator[tuple[list[bytes], np.ndarray]]:
        jpegs: list[bytes] = []
        labels: list[int] = []
        for sample in _samples([self.folder / f for f in self.files]):
            jpegs.append(sample["jpg"])
            labels.append(_label(sample))
            if len(jpegs) == batch_size:
                yield jpegs, np.array(labels, np.int64)
                jpegs, labels = [], []
        if jpegs:
            yield jpegs, np.array(labels, np.int64)

    def head(self, n: int) -> ListSplit:
        jpegs: list[bytes] = []
        labels: list[int] = []
        for batch, targets in self.batches(min(n, 1024)):
            jpegs += batch
            labels += targets.tolist()
            if len(jpegs) >= n:
                break
        return ListSplit(jpegs[:n], np.array(labels[:n], np.int64), synthetic_jpegs)

    def synthetic(self, n: int, seed: int = 0) -> list[bytes]:
        return synthetic_jpegs(n, seed)


class FileJpegSplit(Split):
    """JPEG files read in order (ImageNetV2's folders), regular files only."""

    def __init__(self, files: list[Path], labels: np.ndarray):
        self.files, self.labels, self.count = files, labels, len(labels)

    def batches(self, batch_size: int) -> Iterator[tuple[list[bytes], np.ndarray]]:
        for start in range(0, self.count, batch_size):
            yield ([read_foreign(f, "data") for f in self.files[start:start + batch_size]],
                   self.labels[start:start + batch_size])

    def head(self, n: int) -> ListSplit:
        return ListSplit([read_foreign(f, "data") for f in self.files[:n]], self.labels[:n], synthetic_jpegs)

    def synthetic(self, n: int, seed: int = 0) -> list[bytes]:
        return synthetic_jpegs(n, seed)


def synthetic_jpegs(n: int, seed: int = 0, size: tuple[int, int] = (MAX_SIDE, MAX_SIDE * 3 // 4)) -> list[bytes]:
    """``n`` random JPEGs of the stored size, for the warm-up of ``predict`` (never the data)."""
    rng = np.random.default_rng([0x5EED, seed])
    out = []
    for _ in range(min(n, 8)):  # a few distinct images, repeated: decoding costs what it costs
        buf = io.BytesIO()
        Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)).save(buf, "JPEG", quality=QUALITY)
        out.append(buf.getvalue())
    return [out[k % len(out)] for k in range(n)]


# --- streaming for training -----------------------------------------------------------------

Piece = tuple[int, int, int]     # (shard index, first sample, end sample) read in order


def shard_order(shards: int, epoch: int, seed: int) -> np.ndarray:
    """The order an epoch reads the shards in (the same on every rank)."""
    return np.random.default_rng([seed, epoch, 0x5A4D]).permutation(shards)


def deal(counts: Sequence[int], epoch: int, seed: int, world_size: int, batch_size: int,
         workers: int) -> tuple[int, list[list[list[Piece]]]]:
    """(steps per rank, ``[rank][worker]`` → the pieces of shards it reads this epoch, in order).

    ``counts`` are the shards' sample counts; see the module docstring for the rule. The epoch's
    sequence starts at an offset drawn with the shard order (and wraps around), so the samples that
    sit out differ from epoch to epoch even when there is a single shard."""
    total, global_batch = sum(counts), batch_size * world_size
    steps = total // global_batch
    if steps == 0:
        raise DataError(f"a global batch of {global_batch} ({batch_size} per rank × {world_size} rank(s)) is more "
                        f"than the {total} training images: use a smaller batch (--set batch_size=N).")
    order = shard_order(len(counts), epoch, seed)
    offset = int(np.random.default_rng([seed, epoch, 0x0FF5]).integers(total))
    starts = np.concatenate([[0], np.cumsum([counts[i] for i in order])])   # where each shard begins in the sequence

    def pieces(first: int, end: int) -> list[Piece]:
        """Positions [first, end) of the epoch's sequence, as pieces of shards."""
        out: list[Piece] = []
        for a, b in ((first + offset, end + offset),) if end + offset <= total else (
                (first + offset, total), (0, end + offset - total)) if first + offset < total else (
                (first + offset - total, end + offset - total),):
            k = int(np.searchsorted(starts, a, side="right")) - 1
            while a < b:
                stop = min(b, int(starts[k + 1]))
                out.append((int(order[k]), a - int(starts[k]), stop - int(starts[k])))
                a, k = stop, k + 1
        return out

    consumers = max(1, workers)
    plan = []
    for rank in range(world_size):
        mine, position = [], rank * steps * batch_size
        for w in range(consumers):
            batches = steps // consumers + (w < steps % consumers)
            mine.append(pieces(position, position + batches * batch_size))
            position += batches * batch_size
        plan.append(mine)
    return steps, plan


# On a CPU the loader shares the step's cores. The step's threads take every core; a worker process beside them
# makes them wait for whichever thread it pre-empts, while decoding in the step's own process only adds a batch's
# decode (a core decodes and crops about 700 images/s at 176 px, docs/results/imagenet.md, against the handful
# a CPU core trains ResNet-50 on). In-process decoding grows with the cores (one core decodes for all of them),
# so above this many cores per rank a worker takes it over.
CPU_IN_STEP_CORES = 8


def loader_workers(asked: int | str, device: Any, steps: int) -> int:
    """DataLoader workers per rank: ``asked``, or for ``"auto"`` what the machine and data call for —
    on a CPU none (decoding in the step's process) up to ``CPU_IN_STEP_CORES`` cores per rank and one above,
    on a GPU the rank's share of the cores less the one that feeds the GPU (at most 8); never more than the
    epoch's steps, asked or not (every worker gets at least one batch)."""
    if asked != "auto":
        return min(int(asked), steps)      # a worker with no batch to read would only be forked
    cores = len(os.sched_getaffinity(0)) // int(os.environ.get("LOCAL_WORLD_SIZE", 1))  # torchrun's ranks here
    if getattr(device, "type", "cpu") != "cuda":
        return 0 if cores <= CPU_IN_STEP_CORES else min(1, steps)
    return max(1, min(8, cores - 1, steps))


@dataclass
class Batch:
    """One training batch, as the pipeline hands it to the entry."""

    images: Any          # uint8 N×res×res×3 (cpu) or N×3×res×res on the device (gpu)
    labels: Any          # int64 N
    layout: str          # "NHWC" or "NCHW"


class _Consumer:
    """What one DataLoader worker does: its pieces of shards → shuffle → decode (or draw boxes) → batches."""

    def __init__(self, folder: Path, files: list[str], pieces_by_worker: list[list[Piece]], batch_size: int, res: int,
                 seed: int, gpu: bool, scale: tuple[float, float]):
        self.folder, self.files, self.pieces_by_worker = folder, files, pieces_by_worker
        self.batch_size, self.res, self.seed, self.gpu, self.scale = batch_size, res, seed, gpu, scale

    def samples(self, worker: int) -> Iterator[dict[str, Any]]:
        """This worker's samples, piece by piece, each read in file order."""
        for shard, first, end in self.pieces_by_worker[worker]:
            yield from itertools.islice(_samples([self.folder / self.files[shard]]), first, end)

    def __call__(self, worker: int) -> Iterator[tuple[Any, ...]]:
        import webdataset as wds

        rng = random.Random(self.seed * 1009 + worker)
        samples = wds.shuffle(SHUFFLE_BUFFER, initial=SHUFFLE_BUFFER // 2, rng=random.Random(rng.random()))(
            self.samples(worker))
        jpegs: list[bytes] = []
        labels: list[int] = []
        for sample in samples:
            jpegs.append(sample["jpg"])
            labels.append(_label(sample))
            if len(jpegs) == self.batch_size:
                yield self._batch(jpegs, labels, rng)
                jpegs, labels = [], []

    def _batch(self, jpegs: list[bytes], labels: list[int], rng: random.Random) -> tuple[Any, ...]:
        boxes = np.array([pipeline.random_crop(*pipeline.header_size(j), rng, self.scale) for j in jpegs])
        flips = np.array([rng.random() < 0.5 for _ in jpegs])
        target = torch.tensor(labels, dtype=torch.int64)
        if self.gpu:  # decoded on the device by the main process
            return jpegs, boxes, flips, target
        images = np.empty((len(jpegs), self.res, self.res, 3), np.uint8)
        for i, jpeg in enumerate(jpegs):
            images[i] = pipeline.decode_crop(jpeg, tuple(boxes[i]), bool(flips[i]), self.res)
        return torch.from_numpy(images), target


class _ConsumerStream(torch.utils.data.IterableDataset):
    """The DataLoader's dataset: each worker (or the main process, as worker 0) runs the consumer."""

    def __init__(self, consumer: _Consumer):
        self.consumer = consumer

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        info = torch.utils.data.get_worker_info()
        return self.consumer(0 if info is None else info.id)


class TrainStream:
    """One epoch of training batches for this rank: ``len()`` steps, the same on every rank."""

    def __init__(self, folder: Path, meta: dict[str, Any], *, epoch: int, seed: int, rank: int, world_size: int,
                 batch_size: int, res: int, pipeline_name: str, device: Any, workers: int | str,
                 scale: tuple[float, float] = pipeline.SCALE, decoder: pipeline.Decoder | None = None):
        split = meta["splits"]["train"]
        files = [s["file"].removeprefix("train/") for s in split["shards"]]
        counts = [int(s["count"]) for s in split["shards"]]
        steps, _ = deal(counts, epoch, seed, world_size, batch_size, 1)
        workers = loader_workers(workers, device, steps)
        self.steps, plan = deal(counts, epoch, seed, world_size, batch_size, workers)
        self.workers, self.pipeline, self.device, self.res = workers, pipeline_name, device, res
        gpu = pipeline_name == "gpu"
        self._decode = (decoder or pipeline.nvjpeg_decoder()) if gpu else None
        consumer = _Consumer(folder / "train", files, plan[rank], batch_size, res,
                             (seed * 1_000_003 + epoch * 1009 + rank) % 2**31, gpu, scale)
        # workers = 0 reads in the main process (one consumer); otherwise that many worker processes
        self._loader = torch.utils.data.DataLoader(
            _ConsumerStream(consumer), batch_size=None, num_workers=workers,
            pin_memory=getattr(device, "type", "cpu") == "cuda",
            multiprocessing_context="fork" if workers > 0 else None)

    def __len__(self) -> int:
        return self.steps

    def __iter__(self) -> Iterator[Batch]:
        for step, item in enumerate(self._loader):
            if step >= self.steps:
                break
            if self._decode is not None:
                jpegs, boxes, flips, labels = item
                images = pipeline.device_crop(jpegs, boxes, flips, self.res, self.device, self._decode)
                yield Batch(images, labels.to(self.device, non_blocking=True), "NCHW")
            else:
                images, labels = item
                yield Batch(images.to(self.device, non_blocking=True), labels.to(self.device, non_blocking=True),
                            "NHWC")


class SyntheticStream:
    """The warm-up's stand-in for :class:`TrainStream`: random batches of the same shapes, on the device."""

    def __init__(self, *, batch_size: int, res: int, pipeline_name: str, device: Any, seed: int, classes: int,
                 steps: int = 1_000_000):
        generator = torch.Generator().manual_seed(seed)
        shape = (batch_size, 3, res, res) if pipeline_name == "gpu" else (batch_size, res, res, 3)
        self.images = torch.randint(0, 256, shape, dtype=torch.uint8, generator=generator).to(device)
        self.labels = torch.randint(0, classes, (batch_size,), generator=generator).to(device)
        self.layout = "NCHW" if pipeline_name == "gpu" else "NHWC"
        self.steps, self.pipeline = steps, pipeline_name

    def __len__(self) -> int:
        return self.steps

    def __iter__(self) -> Iterator[Batch]:
        for _ in range(self.steps):
            yield Batch(self.images, self.labels, self.layout)


def read_meta(folder: Path) -> dict[str, Any]:
    meta = read_json(folder / "meta.json", "run record")
    if not isinstance(meta, dict) or meta.get("kind") != "shards" or meta.get("format") != FORMAT:
        raise DataError(f"{folder / 'meta.json'}: not an ImageNet import of format {FORMAT}; import again.")
    return meta


def write_meta(folder: Path, meta: dict[str, Any]) -> None:
    atomic_write_json(folder / "meta.json", {"format": FORMAT, "kind": "shards", **meta})
    fsync_dir(folder)


def split_files(meta: dict[str, Any], split: str) -> tuple[list[str], int]:
    entry = meta["splits"][split]
    return [s["file"] for s in entry["shards"]], int(entry["count"])

