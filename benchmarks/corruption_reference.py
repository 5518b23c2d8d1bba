"""How faithful is the shifted suite? Each family × severity against the reference implementations.

    apt-get install imagemagick libmagickwand-dev          # the references' motion blur
    pip install opencv-python-headless scikit-image Wand   # their other libraries (not dawnbench's)
    python benchmarks/corruption_reference.py [--images 200]

For the first ``--images`` test images of CIFAR-10 (table ``cifar10-c``) and of MNIST
(``mnist-c``), computes the mean absolute pixel change from the clean image of every
family at every severity twice: with ``dawnbench.data.corruptions`` and with the
references' definitions run through the references' own libraries — OpenCV's
``GaussianBlur``/``filter2D`` for defocus blur, ImageMagick's ``MotionBlurImage`` (through
Wand, from an 8-bit PNG, as the references call it) for motion blur, scikit-image's
``random_noise``, ``gaussian`` and ``rgb2hsv``/``hsv2rgb`` for impulse noise, Gaussian
blur and brightness, Pillow for JPEG and pixelation, NumPy for the rest — each ending in
the references' ``np.uint8`` (truncation). The references' parameter tables are
``dawnbench``'s own ``TABLES`` (checked against the published files by hand; see
``data/corruptions.py``). One deviation is deliberate and measured as such: MNIST-C's
Gaussian blur blurs along rows only (see ``data/corruptions.py``); here its reference
figures are for the blur of both axes.

Writes the evidence (both figures and their ratio per family × severity, every ratio judged against
``corruption_reference.ratio`` in ``targets.json``) to ``docs/results/data/``, the reference figures the
tests compare against to ``tests/data/corruption_reference.json`` (with its provenance), and ImageMagick's own
motion blur of two generated images at five (radius, σ, angle) settings to
``tests/data/motion_blur_imagemagick.npz`` (the tests ask for byte equality there).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
from PIL import Image

from dawnbench import data
from dawnbench.data.corruptions import FAMILIES, TABLES, corrupt

import bench
import targets

ROOT = Path(__file__).resolve().parents[1]
REFERENCE_FILE = ROOT / "tests" / "data" / "corruption_reference.json"
MOTION_FILE = ROOT / "tests" / "data" / "motion_blur_imagemagick.npz"
# ImageMagick's motion blur of two generated images (colour, grey) at these (radius, sigma, angle):
MOTION_CASES = [(6, 1, -40.0), (9, 2.5, 0.0), (8, 2, 25.0), (15, 8, 44.0), (20, 15, -12.5)]


def generated_images() -> tuple[np.ndarray, np.ndarray]:
    """A smooth colour image and a grey one, made from a fixed seed (the tests make them again)."""
    from scipy import ndimage

    rng = np.random.default_rng(20261124)
    colour = ndimage.gaussian_filter(rng.random((32, 32, 3)), (2, 2, 0)) * 1.0
    grey = ndimage.gaussian_filter(rng.random((28, 28)), 1.5)
    scale = lambda a: np.uint8((a - a.min()) / (a.max() - a.min()) * 255)
    return scale(colour), scale(grey)


def imagemagick_motion(img: np.ndarray, radius: float, sigma: float, angle: float) -> np.ndarray:
    """ImageMagick's MotionBlurImage through Wand, from and to 8-bit PNG (as the references call it)."""
    import cv2
    from wand.image import Image as WandImage

    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="PNG")
    with WandImage(blob=buf.getvalue()) as wand:
        wand.motion_blur(radius=radius, sigma=sigma, angle=angle)
        blob = wand.make_blob("png")
    decoded = cv2.imdecode(np.frombuffer(blob, np.uint8), cv2.IMREAD_UNCHANGED)
    if img.ndim == 3:
        return decoded[..., [2, 1, 0]] if decoded.ndim == 3 else np.stack([decoded] * 3, axis=-1)
    return decoded if decoded.ndim == 2 else decoded[..., 0]
DATASETS = {"cifar10-c": "cifar10", "mnist-c": "mnist"}


def reference(img: np.ndarray, family: str, c, rs: np.random.RandomState) -> np.ndarray:
    """One image (H×W×3 or H×W, uint8) corrupted by the reference definition with parameter ``c``."""
    import cv2
    import skimage as sk
    from skimage.filters import gaussian

    colour = img.ndim == 3
    x = img / 255.0
    if family == "gaussian_noise":
        out = x + rs.normal(size=x.shape, scale=c)
    elif family == "shot_noise":
        out = rs.poisson(x * c) / c
    elif family == "impulse_noise":
        out = sk.util.random_noise(x, mode="s&p", amount=c, rng=int(rs.randint(2**31)))
    elif family == "defocus_blur":
        radius, alias = c
        half, size = (8, (3, 3)) if radius <= 8 else (int(radius), (5, 5))
        grid = np.arange(-half, half + 1)
        xx, yy = np.meshgrid(grid, grid)
        disk = np.array((xx**2 + yy**2) <= radius**2, dtype=np.float32)
        disk /= disk.sum()
        kernel = cv2.GaussianBlur(disk, ksize=size, sigmaX=alias)
        out = (np.stack([cv2.filter2D(x[:, :, d], -1, kernel) for d in range(3)], axis=-1) if colour
               else cv2.filter2D(x, -1, kernel))
    elif family == "motion_blur":
        return np.uint8(np.clip(imagemagick_motion(img, c[0], c[1], rs.uniform(-45, 45)), 0, 255))
    elif family == "gaussian_blur":
        out = gaussian(x, sigma=c, channel_axis=-1 if colour else None)
    elif family == "contrast":
        means = np.mean(x, axis=(0, 1), keepdims=True)
        out = (x - means) * c + means
    elif family == "brightness":
        hsv = sk.color.rgb2hsv(x if colour else sk.color.gray2rgb(x))
        hsv[:, :, 2] = np.clip(hsv[:, :, 2] + c, 0, 1)
        out = sk.color.hsv2rgb(hsv)
        out = out if colour else sk.color.rgb2gray(out)
    elif family == "jpeg":
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, "JPEG", quality=c)
        return np.uint8(Image.open(buf))
    elif family == "pixelate":
        pil = Image.fromarray(img)
        w, h = pil.size
        pil = pil.resize((int(w * c), int(h * c)), Image.BOX).resize((w, h), Image.BOX)
        return np.uint8(pil)
    else:
        raise ValueError(family)
    return np.uint8(np.clip(out, 0, 1) * 255)


def mean_change(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a.astype(np.float64) - b.astype(np.float64)).mean())


def main() -> None:
    parser = bench.parser(__doc__)
    parser.add_argument("--images", type=int, default=200)
    args = parser.parse_args()
    import cv2
    import skimage
    import wand.version

    versions = {"opencv": cv2.__version__, "scikit-image": skimage.__version__,
                "imagemagick": wand.version.MAGICK_VERSION, "wand": wand.version.VERSION}
    figures: dict = {"images": args.images, "reference_libraries": versions, "tables": {}}
    reference_doc: dict = {"images": args.images, "what": "mean absolute pixel change from the clean image, "
                           "first N test images", "tables": {}}
    for table, dataset in DATASETS.items():
        data.ensure(dataset)
        images, _ = data.load_split(dataset, "test")
        images = np.ascontiguousarray(images[:args.images])
        rows = {}
        for family in FAMILIES:
            for severity in range(1, 6):
                c = TABLES[table][family][severity - 1]
                rs = np.random.RandomState(1000 * FAMILIES.index(family) + severity)
                ref = np.stack([reference(img, family, c, rs) for img in images])
                ours = corrupt(images, family, severity, table=table)
                r, o = mean_change(ref, images), mean_change(ours, images)
                rows[f"{family}/{severity}"] = {"reference": r, "dawnbench": o, "ratio": o / r if r else None,
                                                "identical": bool(np.array_equal(ref, ours))}
                print(f"{table:10} {family:15} {severity}  reference {r:7.3f}  dawnbench {o:7.3f}  "
                      f"ratio {o / r if r else float('nan'):5.2f}{'  byte-identical' if np.array_equal(ref, ours) else ''}",
                      flush=True)
        figures["tables"][table] = rows
        reference_doc["tables"][table] = {k: v["reference"] for k, v in rows.items()}
    figures.update(targets.judged("corruption_reference.ratio", [row["ratio"] for rows in figures["tables"].values()
                                                                 for row in rows.values()]))
    path = bench.store(args, "corruption_reference", figures)
    reference_doc["evidence"] = str(path.relative_to(ROOT))
    reference_doc["reference_libraries"] = versions
    REFERENCE_FILE.parent.mkdir(parents=True, exist_ok=True)
    REFERENCE_FILE.write_text(json.dumps(reference_doc, indent=1) + "\n")
    print(f"reference figures: {REFERENCE_FILE}")
    colour, grey = generated_images()
    np.savez_compressed(MOTION_FILE, cases=np.array(MOTION_CASES),
                        colour=np.stack([imagemagick_motion(colour, *c) for c in MOTION_CASES]),
                        grey=np.stack([imagemagick_motion(grey, *c) for c in MOTION_CASES]),
                        imagemagick=np.array(versions["imagemagick"]))
    print(f"ImageMagick motion blur of the generated images: {MOTION_FILE}")


if __name__ == "__main__":
    main()
