"""The shifted suite: the scored split, corrupted as CIFAR-10-C and MNIST-C corrupt it.

    images = corrupt(test_images, "motion_blur", severity=3)      # uint8 in, uint8 out
    images = shifted_split("cifar10", "test", "jpeg", 5)           # generated once, then cached

Ten families — Gaussian, shot and impulse noise; defocus, motion and Gaussian blur;
contrast; brightness; JPEG; pixelation — each defined as the reference implementation
defines it, written here with numpy, SciPy and Pillow (no OpenCV, scikit-image or
ImageMagick), with the parameters of the reference for the kind of image:

* ``cifar10-c`` — 32×32 colour images (CIFAR-10): Hendrycks & Dietterich (ICLR 2019),
  ``make_cifar_c.py`` in hendrycks/robustness (``ImageNet-C/create_c/``).
* ``mnist-c`` — 28×28 grey images (MNIST and Fashion-MNIST): Mu & Gilmer (2019),
  ``corruptions.py`` in google-research/mnist-c. Its code gives each corruption a table
  of five levels and its released dataset uses one of them (the function's default:
  shot noise at level 5, impulse noise 4, motion blur 1, brightness 5; the other six
  families here are in its code but not in its released set). **Rule: severities 1–5
  are the five levels of that table**, so level *s* of this suite is MNIST-C's own
  level *s*; the released MNIST-C images are the levels just named.

How each family follows its reference (``x`` in [0, 1], float64 as the references):

====================  ==========================================================================
gaussian noise        x + N(0, c²) per pixel
shot noise            Poisson(x·c) / c
impulse noise         a share c of the pixels set to 0 or 1, half each (scikit-image's ``s&p``)
defocus blur          the reference's disk: a (2·8+1)² grid (``radius`` > 8: (2·radius+1)²),
                      pixels within ``radius`` of the centre, normalised, smoothed by OpenCV's
                      3×3 (5×5 above radius 8) Gaussian of σ ``alias``; then correlated with
                      each channel; borders reflected without repeating the edge (OpenCV's
                      default, ``BORDER_REFLECT_101``)
motion blur           ImageMagick's ``MotionBlurImage(radius, σ, angle)``: a one-sided trail of
                      2·radius+1 taps weighted exp(−i²/2σ²), tap i at offset
                      (⌈i·cos a − ½⌉, ⌈i·sin a − ½⌉), edge pixels repeated; angle uniform in
                      [−45°, 45°] per image; to 8 bits as ImageMagick 6 (Q16) writes its PNG —
                      byte-identical to it for the same angle
gaussian blur         scikit-image's ``gaussian``: SciPy's filter, edge pixels repeated
                      (``nearest``), truncated at 4σ, channels kept apart
contrast              (x − m)·c + m, m the mean of each channel of each image
brightness            colour: the HSV value plus c, clipped (scikit-image's rgb2hsv/hsv2rgb:
                      every channel scales by V′/V; a black pixel becomes grey V′);
                      grey: x + c (MNIST-C's grey → RGB → HSV → RGB → grey round trip)
jpeg                  Pillow's JPEG at quality c, decoded
pixelate              Pillow: down to int(side·c) with the box filter, back up with the box filter
====================  ==========================================================================

The float families end as the references end, ``np.uint8(clip(x, 0, 1) · 255)`` —
truncation, not rounding; JPEG, pixelation and motion blur are 8-bit from their tool.
Where this suite differs from the code it follows, on purpose:

* MNIST-C's Gaussian blur passes a 2-D image with ``multichannel=True``, so
  scikit-image takes its columns for channels and blurs along rows only; here both
  axes are blurred, as the corruption is defined (and as CIFAR-10-C does). MNIST-C
  released no Gaussian-blurred set.
* Randomness comes from a generator seeded with the suite's seed, the family and the
  severity — the same bytes on every machine — rather than the references' global
  ``np.random`` state: the noise and the angles are drawn from the same distributions,
  not the same numbers.

Severity 0 is the identity; the images' shapes and the labels never change. Prepared
sets are cached beside the dataset (``<cache>/<dataset>/shifted/v<VERSION>-seed<SEED>/``)
as ``.npy`` files written once. ``tests/test_corruptions.py`` checks every family and
severity against figures computed with the references' own libraries
(``benchmarks/corruption_reference.py``).
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable

import numpy as np
from PIL import Image
from scipy import ndimage

from dawnbench.data.cache import dataset_dir, load_split
from dawnbench.errors import DawnbenchError
from dawnbench.io import atomic_write_with

SEED = 15_2019   # the suite's seed: part of the cache key, so a change regenerates
VERSION = 2      # bump when a family's definition changes (2: the references' definitions and tables)

# Parameters per family and severity 1..5, as the references write them.
TABLES: dict[str, dict[str, tuple]] = {
    "cifar10-c": {   # hendrycks/robustness, ImageNet-C/create_c/make_cifar_c.py
        "gaussian_noise": (0.04, 0.06, 0.08, 0.09, 0.10),          # σ
        "shot_noise": (500, 250, 100, 75, 50),                      # photons per unit intensity
        "impulse_noise": (0.01, 0.02, 0.03, 0.05, 0.07),            # share of pixels hit
        "defocus_blur": ((0.3, 0.4), (0.4, 0.5), (0.5, 0.6), (1, 0.2), (1.5, 0.1)),  # (radius, alias σ)
        "motion_blur": ((6, 1), (6, 1.5), (6, 2), (8, 2), (9, 2.5)),  # ImageMagick (radius, σ)
        "gaussian_blur": (0.4, 0.6, 0.7, 0.8, 1.0),                 # σ, pixels
        "contrast": (0.75, 0.5, 0.4, 0.3, 0.15),                    # factor towards each channel's mean
        "brightness": (0.05, 0.1, 0.15, 0.2, 0.3),                  # added to the HSV value
        "jpeg": (80, 65, 58, 50, 40),                               # quality
        "pixelate": (0.95, 0.9, 0.85, 0.75, 0.65),                  # scale of the small image
    },
    "mnist-c": {     # google-research/mnist-c, corruptions.py (the level MNIST-C released: see above)
        "gaussian_noise": (0.08, 0.12, 0.18, 0.26, 0.38),
        "shot_noise": (60, 25, 12, 5, 3),
        "impulse_noise": (0.03, 0.06, 0.09, 0.17, 0.27),
        "defocus_blur": ((3, 0.1), (4, 0.5), (6, 0.5), (8, 0.5), (10, 0.5)),
        "motion_blur": ((10, 3), (15, 5), (15, 8), (15, 12), (20, 15)),
        "gaussian_blur": (1, 2, 3, 4, 6),
        "contrast": (0.4, 0.3, 0.2, 0.1, 0.05),
        "brightness": (0.1, 0.2, 0.3, 0.4, 0.5),
        "jpeg": (25, 18, 15, 10, 7),
        "pixelate": (0.6, 0.5, 0.4, 0.3, 0.25),
    },
}
FAMILIES = tuple(TABLES["cifar10-c"])
# The table of each dataset with a shifted suite.
DATASET_TABLES = {"cifar10": "cifar10-c", "mnist": "mnist-c", "fashion-mnist": "mnist-c"}


# --- the families ------------------------------------------------------------------------
# Each takes float64 images in [0, 1] (N×H×W or N×H×W×C), the severity's parameter and a
# generator, and returns float64 images; the 8-bit families (_UINT8) take and return uint8.

def _gaussian_noise(x, c, rng):
    return x + rng.normal(0.0, c, x.shape)


def _shot_noise(x, c, rng):
    return rng.poisson(x * c) / c


def _impulse_noise(x, c, rng):
    hit = rng.random(x.shape) < c
    salt = rng.random(x.shape) < 0.5
    return np.where(hit, salt.astype(np.float64), x)


def _gaussian_1d(size: int, sigma: float) -> np.ndarray:
    """OpenCV's ``getGaussianKernel(size, sigma)`` for a positive sigma."""
    i = np.arange(size) - (size - 1) / 2
    g = np.exp(-i**2 / (2 * sigma**2))
    return g / g.sum()


def defocus_kernel(radius: float, alias: float) -> np.ndarray:
    """The references' ``disk(radius, alias_blur)``: an aliased disk, smoothed."""
    half, size = (8, 3) if radius <= 8 else (int(radius), 5)
    yy, xx = np.mgrid[-half:half + 1, -half:half + 1]
    disk = (xx**2 + yy**2 <= radius**2).astype(np.float64)
    disk /= disk.sum()
    g = _gaussian_1d(size, alias)
    return ndimage.correlate(disk, np.outer(g, g), mode="mirror")  # cv2.GaussianBlur, BORDER_REFLECT_101


def _per_image(kernel: np.ndarray, ndim: int) -> np.ndarray:
    """A 2-D kernel shaped to filter every image (and channel) of a batch on its own."""
    return kernel[None, :, :, None] if ndim == 4 else kernel[None]


def _defocus_blur(x, c, rng):
    return ndimage.correlate(x, _per_image(defocus_kernel(*c), x.ndim), mode="mirror")


def _gaussian_blur(x, c, rng):
    sigma = (0, c, c, 0) if x.ndim == 4 else (0, c, c)
    return ndimage.gaussian_filter(x, sigma, mode="nearest", truncate=4.0)


def _contrast(x, c, rng):
    means = x.mean(axis=(1, 2), keepdims=True)  # each channel of each image
    return (x - means) * c + means


def _brightness(x, c, rng):
    if x.ndim == 3:  # grey: the HSV round trip of a grey pixel only moves its value
        return x + c
    value = x.max(axis=-1, keepdims=True)
    brighter = np.clip(value + c, 0.0, 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        scaled = x * (brighter / value)
    return np.where(value > 0, scaled, brighter)  # hue and saturation kept; black becomes grey


def _pil_each(x8: np.ndarray, fn: Callable[[Image.Image], Image.Image]) -> np.ndarray:
    return np.stack([np.asarray(fn(Image.fromarray(img))) for img in x8])


def _jpeg(x8, c, rng):
    def once(img: Image.Image) -> Image.Image:
        buf = io.BytesIO()
        img.save(buf, format="JPEG", quality=int(c))
        return Image.open(io.BytesIO(buf.getvalue())).convert(img.mode)
    return _pil_each(x8, once)


def _pixelate(x8, c, rng):
    def once(img: Image.Image) -> Image.Image:
        w, h = img.size
        small = img.resize((int(w * c), int(h * c)), Image.Resampling.BOX)
        return small.resize((w, h), Image.Resampling.BOX)
    return _pil_each(x8, once)


def motion_taps(radius: float, sigma: float, angle: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ImageMagick's motion-blur kernel: the weights and the (row, column) offset of each tap."""
    width = 2 * math.ceil(radius) + 1
    i = np.arange(width)
    weights = np.exp(-i.astype(np.float64)**2 / (2 * sigma**2))
    a = math.radians(angle)
    cols = np.ceil(i * math.cos(a) - 0.5).astype(int)
    rows = np.ceil(i * math.sin(a) - 0.5).astype(int)
    return weights / weights.sum(), rows, cols


def motion_blur(x8: np.ndarray, radius: float, sigma: float, angles: np.ndarray) -> np.ndarray:
    """ImageMagick 6's motion blur of each uint8 image at its angle (degrees), byte for byte."""
    h, w = x8.shape[1:3]
    yy, xx = np.mgrid[0:h, 0:w]
    out = np.empty_like(x8)
    for n, angle in enumerate(angles):
        weights, dr, dc = motion_taps(radius, sigma, angle)
        rows = np.clip(yy[None] + dr[:, None, None], 0, h - 1)   # edge pixels repeated
        cols = np.clip(xx[None] + dc[:, None, None], 0, w - 1)
        taps = x8[n][rows, cols].astype(np.float64)              # taps × H × W (× C)
        # ImageMagick (Q16) rounds to its 16-bit quantum; its 8-bit PNG keeps the quotient by 257.
        out[n] = np.clip(np.floor(np.rint(np.tensordot(weights, taps, axes=1) * 257) / 257), 0, 255)
    return out


def _motion_blur(x8, c, rng):
    return motion_blur(x8, *c, rng.uniform(-45, 45, len(x8)))


_FUNCTIONS: dict[str, Callable[[np.ndarray, object, np.random.Generator], np.ndarray]] = {
    "gaussian_noise": _gaussian_noise, "shot_noise": _shot_noise, "impulse_noise": _impulse_noise,
    "defocus_blur": _defocus_blur, "motion_blur": _motion_blur, "gaussian_blur": _gaussian_blur,
    "contrast": _contrast, "brightness": _brightness, "jpeg": _jpeg, "pixelate": _pixelate,
}
_UINT8 = {"jpeg", "pixelate", "motion_blur"}   # 8-bit in and out, as the tools the references use


def check_family(family: str, severity: int) -> None:
    if family not in _FUNCTIONS:
        raise DawnbenchError(f"corruption {family!r}: unknown; the families are {', '.join(FAMILIES)}.")
    if not (isinstance(severity, int) and not isinstance(severity, bool) and 0 <= severity <= 5):
        raise DawnbenchError(f"severity {severity!r}: use an integer from 0 (none) to 5.")


def table_for(images: np.ndarray) -> str:
    """The reference table for images of this kind: colour → CIFAR-10-C, grey → MNIST-C."""
    return "cifar10-c" if images.ndim == 4 else "mnist-c"


def corrupt(images: np.ndarray, family: str, severity: int, seed: int = SEED, table: str | None = None) -> np.ndarray:
    """``images`` (uint8, N×H×W or N×H×W×C) with ``family`` at ``severity``; same shape and dtype.
    ``table``: ``cifar10-c`` or ``mnist-c`` (default: by the images' kind, see :func:`table_for`)."""
    check_family(family, severity)
    if images.dtype != np.uint8 or images.ndim not in (3, 4):
        raise DawnbenchError(f"corrupt: expected uint8 images N×H×W or N×H×W×C, got {images.dtype} "
                             f"with shape {images.shape}.")
    table = table or table_for(images)
    if table not in TABLES:
        raise DawnbenchError(f"corruption table {table!r}: unknown; the tables are {', '.join(TABLES)}.")
    if severity == 0:
        return images.copy()
    rng = np.random.default_rng([seed, FAMILIES.index(family), severity])
    parameter = TABLES[table][family][severity - 1]
    if family in _UINT8:
        return _FUNCTIONS[family](images, parameter, rng)
    out = _FUNCTIONS[family](images.astype(np.float64) / 255.0, parameter, rng)
    return (np.clip(out, 0.0, 1.0) * 255).astype(np.uint8)  # truncation, as the references' np.uint8


def shifted_split(dataset: str, split: str, family: str, severity: int) -> np.ndarray:
    """The corrupted split, generated on first use and cached (written by rename: never torn)."""
    check_family(family, severity)
    if dataset not in DATASET_TABLES:
        raise DawnbenchError(f"dataset {dataset!r} has no shifted suite; there is one for "
                             f"{', '.join(DATASET_TABLES)}.")
    path = dataset_dir(dataset) / "shifted" / f"v{VERSION}-seed{SEED}" / f"{split}-{family}-{severity}.npy"
    if path.is_file():
        return np.load(path)
    images, _ = load_split(dataset, split)
    out = corrupt(images, family, severity, table=DATASET_TABLES[dataset])
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_with(path, lambda f: np.save(f, out))
    return out
