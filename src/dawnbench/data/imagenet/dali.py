"""NVIDIA DALI as the ImageNet training pipeline (``--set pipeline=dali``), when it is installed.

DALI reads the same WebDataset shards (``fn.readers.webdataset``), decodes fused with the
random resized crop (``fn.decoders.image_random_crop``: the same area and aspect-ratio
ranges as the other paths), resizes, flips half of the images and hands the batch over.
On a GPU the decoder is DALI's ``mixed`` one (nvJPEG and, on A100/H100, the hardware
JPEG decoder) and the batch stays on the device; on a CPU it is DALI's CPU decoder, so
the same graph runs, and is tested, without a GPU. Every rank reads the epoch's shards in
the order :func:`shards.shard_order` gives, DALI's own sharding (``shard_id``, ``num_shards``)
deals their samples out, and every rank takes the steps :func:`shards.deal` counts — as the
other pipelines do.

DALI is optional (``pip install -e '.[dali]'``, NVIDIA's ``nvidia-dali-cuda130`` from
PyPI, about 200 MB) and a run that asks for it without it stops with that command. It was
run here on the CPU only: the GPU machine used for measurements takes 64 MiB per call,
less than the wheel, so ``pipeline=gpu`` (torchvision's nvJPEG) is the measured GPU path.
DALI reads a tar without an index by scanning it first (it says so on stderr); the
shards are small, so the scan is cheap.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dawnbench.data.imagenet import pipeline, shards
from dawnbench.errors import DataError

INSTALL = "pip install -e '.[dali]' (NVIDIA DALI, nvidia-dali-cuda130 from PyPI)"


def require() -> Any:
    """The ``nvidia.dali`` module, or a clear error saying how to install it."""
    try:
        import nvidia.dali as dali
    except ImportError:
        raise DataError(f"pipeline=dali needs NVIDIA DALI, which is not installed: {INSTALL}; or use "
                        "pipeline=gpu (torchvision's nvJPEG) or pipeline=cpu.") from None
    return dali


def build_pipeline(files: list[str], batch_size: int, res: int, seed: int, device_id: int | None, threads: int,
                   scale: tuple[float, float] = pipeline.SCALE, rank: int = 0, world_size: int = 1) -> Any:
    """DALI's graph: shards → fused decode + random resized crop → resize → flip → CHW uint8, labels
    as text; this rank reads its 1/world_size of the samples. ``device_id=None``: everything on the CPU."""
    require()
    from nvidia.dali import fn, pipeline_def, types

    @pipeline_def(batch_size=batch_size, num_threads=threads, device_id=device_id, seed=seed)
    def graph():
        jpegs, labels = fn.readers.webdataset(paths=files, ext=["jpg", "cls"], random_shuffle=True,
                                              shard_id=rank, num_shards=world_size,
                                              initial_fill=shards.SHUFFLE_BUFFER, missing_component_behavior="error",
                                              name="reader")
        images = fn.decoders.image_random_crop(jpegs, device="cpu" if device_id is None else "mixed",
                                               output_type=types.RGB, random_area=list(scale),
                                               random_aspect_ratio=list(pipeline.RATIO), num_attempts=10)
        images = fn.resize(images, resize_x=res, resize_y=res, interp_type=types.INTERP_LINEAR, antialias=True)
        images = fn.flip(images, horizontal=fn.random.coin_flip())
        return fn.transpose(images, perm=[2, 0, 1]), labels

    return graph()


class DaliStream:
    """One epoch for this rank through DALI: ``len()`` steps of :class:`shards.Batch` (NCHW, on ``device``)."""

    def __init__(self, folder: Path, meta: dict[str, Any], *, epoch: int, seed: int, rank: int, world_size: int,
                 batch_size: int, res: int, device: Any, workers: int | str,
                 scale: tuple[float, float] = pipeline.SCALE):
        require()
        split = meta["splits"]["train"]
        counts = [int(s["count"]) for s in split["shards"]]
        self.steps, _ = shards.deal(counts, epoch, seed, world_size, batch_size, 1)
        self.pipeline, self.device = "dali", device
        on_gpu = getattr(device, "type", "cpu") == "cuda"
        files = [str(folder / split["shards"][i]["file"]) for i in shards.shard_order(len(counts), epoch, seed)]
        self._graph = build_pipeline(files, batch_size, res, (seed * 1_000_003 + epoch * 1009 + rank) % 2**31,
                                     (device.index or 0) if on_gpu else None, max(1, shards.loader_workers(
                                         workers, device, self.steps)), scale, rank, world_size)
        self._graph.build()

    def __len__(self) -> int:
        return self.steps

    def __iter__(self) -> Iterator[shards.Batch]:
        import torch
        from nvidia.dali.plugin.pytorch import feed_ndarray

        on_gpu = getattr(self.device, "type", "cpu") == "cuda"
        for _ in range(self.steps):
            images, labels = self._graph.run()
            images = images.as_tensor()
            out = torch.empty(images.shape(), dtype=torch.uint8, device=self.device)
            feed_ndarray(images, out, cuda_stream=torch.cuda.current_stream(self.device) if on_gpu else None)
            classes = [int(bytes(labels.at(i)).decode()) for i in range(len(labels))]
            yield shards.Batch(out, torch.tensor(classes, device=self.device), "NCHW")
