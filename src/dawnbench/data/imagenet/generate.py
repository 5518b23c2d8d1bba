"""A miniature ILSVRC-2012 tree in the official layout, for tests and for trying the ImageNet path.

    python -m dawnbench.data.imagenet.generate OUT [--classes 20] [--train 40] [--val 10]
                                                    [--val-layout folders|csv|devkit] [--scale 1.0]

ImageNet cannot be redistributed, so the whole path — import, shards, loaders, training,
top-5, export, inference, ``generalize`` — is tested on this. What it writes is what a
user's copy holds:

* ``train/<wnid>/<wnid>_<n>.JPEG`` for real ILSVRC wnids (the first ``classes`` of the
  1,000 in sorted order);
* ``val/`` in one of the three layouts an ImageNet copy comes in: ``folders``
  (``val/<wnid>/*.JPEG``, as torchvision's script leaves it), ``csv`` (flat
  ``val/ILSVRC2012_val_<8 digits>.JPEG`` and Kaggle's ``LOC_val_solution.csv``), or
  ``devkit`` (flat, and the devkit's ``ILSVRC2012_validation_ground_truth.txt`` with its
  ``meta.mat``, whose ILSVRC2012_ID order is not the sorted wnid order, as in the real one);
* the real tree's odd files: a CMYK JPEG, a greyscale JPEG and a PNG named ``.JPEG``;
* sizes and aspect ratios that vary (about 200–500 pixels a side, some 500×375 — the
  common ImageNet size), JPEGs of quality 90 with texture, about 65 KB at 500×375
  (``scale`` shrinks every side, for fast tests).

The images are learnable: each class has its own colour, shape (square or disc) and
layout, so a small network gets far above chance in a few epochs.
"""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

# The first 20 ILSVRC-2012 class ids in sorted order (tench, goldfish, great white shark, ...).
WNIDS = ("n01440764", "n01443537", "n01484850", "n01491361", "n01494475", "n01496331", "n01498041",
         "n01514668", "n01514859", "n01518878", "n01530575", "n01531178", "n01532829", "n01534433",
         "n01537544", "n01558993", "n01560419", "n01580077", "n01582220", "n01592084")
VAL_LAYOUTS = ("folders", "csv", "devkit")


def wnids(classes: int) -> list[str]:
    """``classes`` wnids: the real first ones, then made-up ones of the same form."""
    return [*WNIDS[:classes], *(f"n0{1600000 + 1000 * i:07d}" for i in range(max(0, classes - len(WNIDS))))]


def picture(label: int, width: int, height: int, rng: np.random.Generator) -> Image.Image:
    """An RGB image of class ``label``: its colour and gradient, three of its shapes, texture."""
    base = np.array([(37 * label) % 256, (91 * label + 40) % 256, (151 * label + 80) % 256], float)
    yy, xx = np.mgrid[0:height, 0:width]
    grad = (xx / width)[..., None] * rng.uniform(-50, 50, 3) + (yy / height)[..., None] * rng.uniform(-50, 50, 3)
    img = Image.fromarray(np.clip(base + grad, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(img)
    second = tuple(int(v) for v in 255 - base)
    for _ in range(3):
        side = int(rng.integers(min(width, height) // 4, min(width, height) // 2))
        x0, y0 = int(rng.integers(0, width - side)), int(rng.integers(0, height - side))
        (draw.ellipse if label % 2 else draw.rectangle)([x0, y0, x0 + side, y0 + side], fill=second)
    pixels = np.asarray(img.filter(ImageFilter.GaussianBlur(1.0)), float) + rng.normal(0, 12, (height, width, 3))
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))


def _size(rng: np.random.Generator, scale: float) -> tuple[int, int]:
    if rng.random() < 0.4:
        w, h = (500, 375) if rng.random() < 0.75 else (375, 500)
    else:
        w, h = int(rng.integers(200, 501)), int(rng.integers(150, 501))
    return max(16, round(w * scale)), max(16, round(h * scale))


def _encode(img: Image.Image, odd: str | None) -> bytes:
    buf = io.BytesIO()
    if odd == "cmyk":
        img.convert("CMYK").save(buf, "JPEG", quality=90)
    elif odd == "grey":
        img.convert("L").save(buf, "JPEG", quality=90)
    elif odd == "png":
        img.save(buf, "PNG")
    else:
        img.save(buf, "JPEG", quality=90)
    return buf.getvalue()


def write_tree(root: str | Path, classes: int = 20, train_per_class: int = 40, val_per_class: int = 10,
               val_layout: str = "folders", seed: int = 0, scale: float = 1.0) -> Path:
    """Write the tree under ``root``; return ``root``."""
    if val_layout not in VAL_LAYOUTS:
        raise ValueError(f"val_layout {val_layout!r}: one of {', '.join(VAL_LAYOUTS)}")
    root = Path(root)
    rng = np.random.default_rng(seed)
    ids = wnids(classes)
    odd = {0: "cmyk", 1: "grey", 2: "png"}  # the first images of the first class
    for label, wnid in enumerate(ids):
        folder = root / "train" / wnid
        folder.mkdir(parents=True, exist_ok=True)
        for n in range(train_per_class):
            img = picture(label, *_size(rng, scale), rng)
            (folder / f"{wnid}_{n}.JPEG").write_bytes(_encode(img, odd.get(n) if label == 0 else None))
    val = [(label, picture(label, *_size(rng, scale), rng)) for label in range(classes) for _ in range(val_per_class)]
    order = rng.permutation(len(val))  # the official val files are not grouped by class
    (root / "val").mkdir(parents=True, exist_ok=True)
    names = []
    for position, k in enumerate(order, 1):
        label, img = val[k]
        name = f"ILSVRC2012_val_{position:08d}.JPEG"
        folder = root / "val" / ids[label] if val_layout == "folders" else root / "val"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(_encode(img, "grey" if position == 1 else None))
        names.append((name.removesuffix(".JPEG"), label))
    if val_layout == "csv":
        rows = [f"{name},{ids[label]} 10 10 100 100 \n" for name, label in names]
        (root / "LOC_val_solution.csv").write_text("ImageId,PredictionString\n" + "".join(rows))
    elif val_layout == "devkit":
        _write_devkit(root / "ILSVRC2012_devkit_t12" / "data", ids, [label for _, label in names], rng)
    return root


def _write_devkit(folder: Path, ids: list[str], labels: list[int], rng: np.random.Generator) -> None:
    """The devkit's ground truth (ILSVRC2012_IDs, 1-based, in val file order) and its meta.mat."""
    from scipy.io import savemat

    folder.mkdir(parents=True, exist_ok=True)
    ilsvrc_id = {wnid: int(i) + 1 for wnid, i in zip(ids, rng.permutation(len(ids)))}  # not sorted order
    (folder / "ILSVRC2012_validation_ground_truth.txt").write_text(
        "".join(f"{ilsvrc_id[ids[label]]}\n" for label in labels))
    synsets = np.zeros((len(ids),), dtype=[("ILSVRC2012_ID", "O"), ("WNID", "O"), ("words", "O"),
                                            ("num_children", "O")])
    for k, wnid in enumerate(sorted(ids, key=ilsvrc_id.get)):
        synsets[k] = (np.array([[ilsvrc_id[wnid]]]), np.array([wnid]), np.array([f"class {wnid}"]),
                      np.array([[0]]))
    savemat(folder / "meta.mat", {"synsets": synsets.reshape(-1, 1)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--classes", type=int, default=20)
    parser.add_argument("--train", type=int, default=40, help="images per class in train/")
    parser.add_argument("--val", type=int, default=10, help="images per class in val/")
    parser.add_argument("--val-layout", choices=VAL_LAYOUTS, default="folders")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scale", type=float, default=1.0, help="every side × this (smaller images: faster)")
    args = parser.parse_args()
    write_tree(args.out, args.classes, args.train, args.val, args.val_layout, args.seed, args.scale)
    print(f"wrote a {args.classes}-class ILSVRC tree to {args.out}")


if __name__ == "__main__":
    main()
