"""Unseen test sets in their official formats: data no model here trained or tuned on.

* **CIFAR-10.1** (Recht et al., 2018), ``cifar10.1_v6_data.npy`` (N×32×32×3 uint8) and
  ``cifar10.1_v6_labels.npy`` (N integer labels 0–9): new images drawn from the same
  source as CIFAR-10 ten years later; 2,000 of them in v6.
* **ImageNetV2** (Recht et al., 2019): a folder of ``<class index>/*.jpeg`` as published
  (e.g. ``imagenetv2-matched-frequency-format-val``), 10,000 new validation images; the
  JPEGs are handed to ``predict`` as they are, like ImageNet's own.
* **QMNIST** (Yadav & Bottou, 2019), ``qmnist-test-images-idx3-ubyte[.gz]`` (60,000×28×28)
  and ``qmnist-test-labels-idx2-int[.gz]`` (60,000×8 int32, the class in column 0): its
  first 10,000 test digits reconstruct MNIST's test set, so only the other **50,000**
  — the digits MNIST lost — are unseen, and only those are used.

``find_unseen(task, paths)`` looks in the given files and folders for the sets that
belong to the task's dataset; a user fetches them from their authors (they are not
redistributed here). Every problem names the file and says how to fix it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dawnbench.data.formats import read_idx
from dawnbench.data.splits import ArraySplit, Split
from dawnbench.errors import DataError
from dawnbench.io import check_regular

QMNIST_MNIST_PART = 10_000   # QMNIST test rows that are MNIST's own test set


@dataclass
class UnseenSet:
    name: str
    split: Split         # items in the scored split's form, with their labels
    source: str


def _first(paths: Sequence[Path], names: Sequence[str]) -> Path | None:
    for p in paths:
        for name in names:
            candidate = p / name if p.is_dir() else p
            if candidate.name == name and (candidate.exists() or candidate.is_symlink()):
                check_regular(candidate, "data")  # a link in a folder handed to dawnbench is not followed
                return candidate
    return None


def load_cifar10_1(data_path: Path, labels_path: Path) -> UnseenSet:
    try:
        inputs = np.load(data_path, allow_pickle=False)
        labels = np.load(labels_path, allow_pickle=False)
    except (OSError, ValueError) as err:
        raise DataError(f"{data_path if 'data' in str(err) else labels_path}: not a readable .npy file ({err}). "
                        "Download CIFAR-10.1 v6 again from its authors.") from None
    if inputs.dtype != np.uint8 or inputs.ndim != 4 or inputs.shape[1:] != (32, 32, 3):
        raise DataError(f"{data_path}: expected uint8 images N×32×32×3, found {inputs.dtype} {inputs.shape}. "
                        "Pass cifar10.1_v6_data.npy as published.")
    if labels.ndim != 1 or len(labels) != len(inputs) or not np.issubdtype(labels.dtype, np.integer):
        raise DataError(f"{labels_path}: expected {len(inputs)} integer labels, found {labels.dtype} {labels.shape}. "
                        "Pass the cifar10.1_v6_labels.npy that goes with the data file.")
    if labels.min() < 0 or labels.max() > 9:
        raise DataError(f"{labels_path}: labels must be classes 0–9, found {labels.min()}–{labels.max()}.")
    return UnseenSet("cifar10.1", ArraySplit(inputs, labels.astype(np.int64)), str(data_path))


def load_qmnist_extra(images_path: Path, labels_path: Path) -> UnseenSet:
    images = read_idx(images_path)
    labels = read_idx(labels_path, element=0x0C)
    if images.ndim != 3 or images.shape[1:] != (28, 28):
        raise DataError(f"{images_path}: expected N×28×28 images, found shape {images.shape}. "
                        "Pass qmnist-test-images-idx3-ubyte.")
    if labels.ndim != 2 or labels.shape[0] != images.shape[0] or labels.shape[1] < 1:
        raise DataError(f"{labels_path}: expected {images.shape[0]} rows of QMNIST's extended labels "
                        f"(N×8 int32), found shape {labels.shape}. Pass qmnist-test-labels-idx2-int.")
    if images.shape[0] <= QMNIST_MNIST_PART:
        raise DataError(f"{images_path}: {images.shape[0]} digits; QMNIST's test set has 60,000, of which the "
                        f"first {QMNIST_MNIST_PART:,} are MNIST's test set. Pass the full test files.")
    classes = labels[QMNIST_MNIST_PART:, 0]
    if classes.min() < 0 or classes.max() > 9:
        raise DataError(f"{labels_path}: column 0 must hold classes 0–9, found {classes.min()}–{classes.max()}.")
    return UnseenSet("qmnist-extra", ArraySplit(images[QMNIST_MNIST_PART:].copy(), classes.astype(np.int64)),
                     str(images_path))


def find_unseen(dataset: str, paths: Sequence[str | Path], strict: bool = True) -> list[UnseenSet]:
    """The unseen sets for ``dataset`` among ``paths`` (files or folders). With ``strict``,
    finding none there is an error that says which files were expected."""
    where = [Path(p) for p in paths]
    for p in where:
        if not p.exists():
            raise DataError(f"--from {p}: no such file or folder.")
    found: list[UnseenSet] = []
    if dataset == "cifar10":
        data = _first(where, ["cifar10.1_v6_data.npy"])
        labels = _first(where, ["cifar10.1_v6_labels.npy"])
        if data and labels:
            found.append(load_cifar10_1(data, labels))
    if dataset == "mnist":
        images = _first(where, ["qmnist-test-images-idx3-ubyte", "qmnist-test-images-idx3-ubyte.gz"])
        labels = _first(where, ["qmnist-test-labels-idx2-int", "qmnist-test-labels-idx2-int.gz"])
        if images and labels:
            found.append(load_qmnist_extra(images, labels))
    if dataset.split("@")[0] == "imagenet":
        for p in where:
            if p.is_dir() and not p.is_symlink() and any(c.is_dir() and c.name.isdigit() for c in p.iterdir()):
                from dawnbench.data.imagenet import imagenet_v2

                name = p.name if p.name.lower().startswith("imagenetv2") else "imagenetv2"
                found.append(UnseenSet(name, imagenet_v2(p), str(p)))
    if strict and where and not found:
        expected = {"cifar10": "cifar10.1_v6_data.npy and cifar10.1_v6_labels.npy",
                    "mnist": "qmnist-test-images-idx3-ubyte[.gz] and qmnist-test-labels-idx2-int[.gz]",
                    "imagenet": "an ImageNetV2 folder of <class index>/*.jpeg"}
        dataset = dataset.split("@")[0]
        raise DataError(f"--from {', '.join(map(str, where))}: no unseen set for {dataset} there. "
                        + (f"Expected {expected[dataset]}." if dataset in expected
                           else f"No unseen set is defined for {dataset}."))
    return found
