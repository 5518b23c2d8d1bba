"""Reading the ILSVRC-2012 tree a user has: classes, training images, validation labels.

    tree = read_tree(Path("/data/imagenet"))     # train/<wnid>/*.JPEG and val/ in any official layout
    tree.check_counts(subset=None)               # 1,281,167 / 50,000 / 1,000, or --subset NAME

The class index of a wnid is its position in sorted order (torchvision's convention).
``val/`` comes in three layouts: ``val/<wnid>/*.JPEG`` folders; flat with Kaggle's
``LOC_val_solution.csv`` (the wnid is the first word of ``PredictionString``); or flat
with the devkit's ``ILSVRC2012_validation_ground_truth.txt`` — one ILSVRC2012_ID per
line in file order — mapped to wnids by the devkit's ``meta.mat``. Kaggle's folder
layout (``ILSVRC/Data/CLS-LOC/{train,val}`` beside the CSV) is found too. Folders are
walked without following links; a file that is a link or not a regular file is an error
naming it (an import takes only what is really there).
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

from dawnbench.errors import DataError, DawnbenchError
from dawnbench.io import read_foreign, read_foreign_text, walk_foreign

OFFICIAL = {"train": 1_281_167, "val": 50_000, "classes": 1_000}
IMAGE_SUFFIXES = (".jpeg", ".jpg")
VAL_CSV = "LOC_val_solution.csv"
DEVKIT_TRUTH = "ILSVRC2012_validation_ground_truth.txt"
_VAL_NAME = re.compile(r"ILSVRC2012_val_(\d{8})")


@dataclass
class Tree:
    root: Path
    classes: list[str]                                   # wnids, sorted: the index is the class
    train: list[tuple[Path, int]] = field(default_factory=list)
    val: list[tuple[Path, int]] = field(default_factory=list)
    val_layout: str = ""

    def counts(self) -> dict[str, int]:
        return {"train": len(self.train), "val": len(self.val), "classes": len(self.classes)}

    def check_counts(self, subset: str | None) -> None:
        """The official counts, unless the import is of a named subset."""
        if subset is None and self.counts() != OFFICIAL:
            c = self.counts()
            raise DataError(f"{self.root}: {c['train']:,} training and {c['val']:,} validation images in "
                            f"{c['classes']:,} classes; ILSVRC-2012 has {OFFICIAL['train']:,} / {OFFICIAL['val']:,} / "
                            f"{OFFICIAL['classes']:,}. To import this tree anyway, name it: --subset NAME (every run "
                            "on it is unofficial).")


def _images(folder: Path) -> list[Path]:
    skipped: list[tuple[Path, str]] = []
    files = [f for f in walk_foreign(folder, skipped) if f.suffix.lower() in IMAGE_SUFFIXES]
    bad = [(p, why) for p, why in skipped if p.suffix.lower() in IMAGE_SUFFIXES]
    if bad:
        raise DataError(f"{bad[0][0]}: {bad[0][1]}. Replace it with the image file itself, or remove it, and "
                        "import again.")
    return sorted(files)


def _tree_root(root: Path) -> tuple[Path, Path]:
    """(the folder with train/ and val/, the folder the labels may sit in)."""
    for candidate in (root, root / "ILSVRC" / "Data" / "CLS-LOC"):  # Kaggle's layout
        if (candidate / "train").is_dir() and (candidate / "val").is_dir():
            return candidate, root
    raise DataError(f"{root}: no train/ and val/ folders (nor ILSVRC/Data/CLS-LOC/train and val, Kaggle's "
                    "layout). Pass the folder of the ILSVRC-2012 tree: train/<wnid>/*.JPEG and val/.")


def read_tree(path: Path) -> Tree:
    """The tree under ``path``: every class, every training image, every validation image with its label."""
    root, labels_dir = _tree_root(Path(path))
    classes = sorted(d.name for d in (root / "train").iterdir() if d.is_dir() and not d.is_symlink())
    if not classes:
        raise DataError(f"{root / 'train'}: no class folders (train/<wnid>/*.JPEG expected).")
    index = {wnid: i for i, wnid in enumerate(classes)}
    tree = Tree(root, classes)
    for wnid in classes:
        tree.train += [(f, index[wnid]) for f in _images(root / "train" / wnid)]
    val = root / "val"
    if any((val / wnid).is_dir() for wnid in classes):
        tree.val_layout = "folders"
        for sub in sorted(d for d in val.iterdir() if d.is_dir() and not d.is_symlink()):
            if sub.name not in index:
                raise DataError(f"{sub}: a validation folder for class {sub.name!r}, which has no training folder.")
            tree.val += [(f, index[sub.name]) for f in _images(sub)]
        tree.val.sort(key=lambda item: item[0].name)
        return tree
    files = _images(val)
    by_name = {_VAL_NAME.search(f.name).group(0) if _VAL_NAME.search(f.name) else f.stem: f for f in files}
    csv_path = next((p for p in (labels_dir / VAL_CSV, root / VAL_CSV) if p.exists()), None)
    truth = next((p for p in (labels_dir / "ILSVRC2012_devkit_t12" / "data" / DEVKIT_TRUTH,
                              labels_dir / DEVKIT_TRUTH, root / DEVKIT_TRUTH) if p.exists()), None)
    if csv_path is not None:
        tree.val_layout = "csv"
        labels = _labels_from_csv(csv_path, index)
    elif truth is not None:
        tree.val_layout = "devkit"
        labels = _labels_from_devkit(truth, index)
    else:
        raise DataError(f"{val}: the validation images are not in class folders, and no labels were found: put "
                        f"Kaggle's {VAL_CSV}, or the devkit's ILSVRC2012_devkit_t12/ (with data/{DEVKIT_TRUTH} and "
                        "data/meta.mat), beside train/ and val/.")
    missing = sorted(set(by_name) - set(labels))
    if missing:
        raise DataError(f"{by_name[missing[0]]}: no label for this validation image in "
                        f"{csv_path or truth} ({len(missing)} image(s) without one).")
    tree.val = sorted(((by_name[name], labels[name]) for name in by_name), key=lambda item: item[0].name)
    return tree


def _labels_from_csv(path: Path, index: dict[str, int]) -> dict[str, int]:
    labels = {}
    text = read_foreign_text(path, "data")
    for number, row in enumerate(csv.reader(io.StringIO(text)), 1):
        if number == 1 and row and row[0] == "ImageId":
            continue
        if len(row) < 2 or not row[1].split():
            raise DataError(f"{path}:{number}: expected 'ImageId,PredictionString' with the wnid first.")
        wnid = row[1].split()[0]
        if wnid not in index:
            raise DataError(f"{path}:{number}: class {wnid!r} has no training folder.")
        labels[row[0].strip()] = index[wnid]
    return labels


def _labels_from_devkit(truth: Path, index: dict[str, int]) -> dict[str, int]:
    """The devkit's ground truth: line n is the ILSVRC2012_ID of ILSVRC2012_val_<n>; meta.mat maps IDs to wnids."""
    meta = truth.parent / "meta.mat"
    try:
        from scipy.io import loadmat

        synsets = loadmat(io.BytesIO(read_foreign(meta, "data")), squeeze_me=True)["synsets"]
        wnid_of = {int(s["ILSVRC2012_ID"]): str(s["WNID"]) for s in synsets}
    except DawnbenchError:
        raise DataError(f"{meta}: the devkit's meta.mat is needed beside {truth.name} to map its ids to wnids; "
                        "keep the devkit's data/ folder whole.") from None
    except (ValueError, KeyError, TypeError, OSError) as err:
        raise DataError(f"{meta}: not the devkit's meta.mat ({type(err).__name__}: {err}).") from None
    labels = {}
    for number, line in enumerate(read_foreign_text(truth, "data").splitlines(), 1):
        if not line.strip():
            continue
        try:
            wnid = wnid_of[int(line)]
        except (ValueError, KeyError):
            raise DataError(f"{truth}:{number}: {line.strip()!r} is not an ILSVRC2012_ID of meta.mat.") from None
        if wnid not in index:
            raise DataError(f"{truth}:{number}: class {wnid} has no training folder.")
        labels[f"ILSVRC2012_val_{number:08d}"] = index[wnid]
    return labels
