"""The shifted suite (SPEC §15): the scored split, corrupted deterministically.

    images = corrupt(test_images, "motion_blur", severity=3)      # uint8 in, uint8 out
    images = shifted_split("cifar10", "test", "jpeg", 5)           # generated once, then cached

Families after CIFAR-10-C (Hendrycks & Dietterich, 2019) and MNIST-C (Mu & Gilmer,
2019), written here with numpy, SciPy and Pillow. Each takes uint8 images — N×H×W
(grey) or N×H×W×C — and returns uint8 images of the same shape; labels never change.
Severity 0 is the identity; 1–5 grow harsher with the parameters in ``SEVERITIES``
(CIFAR-10-C's where a family has them). Randomness (noise, blur angles) comes from a
generator seeded with the suite's seed, the family and the severity, so the same
call gives the same bytes on every machine. Prepared sets are cached beside the
dataset (``<cache>/<dataset>/shifted/``) as ``.npy`` files written once.
"""

from __future__ import annotations

import io
from collections.abc import Callable

import numpy as np
from PIL import Image
from scipy import ndimage

from dawnbench.data.cache import dataset_dir, load_split
from dawnbench.errors import DawnbenchError
from dawnbench.io import atomic_write_with

SEED = 15_2019   # the suite's seed: part of the cache key, so a change regenerates
VERSION = 1      # bump when a family's definition changes

SEVERITIES: dict[str, tuple[float, ...]] = {
    "gaussian_noise": (0.04, 0.06, 0.08, 0.09, 0.10),     # standard deviation, images in [0, 1]
    "shot_noise": (500, 250, 100, 75, 50),                # photons per unit intensity
    "impulse_noise": (0.01, 0.02, 0.03, 0.05, 0.07),      # share of pixels set to 0 or 1
    "defocus_blur": (0.6, 0.9, 1.2, 1.5, 2.0),            # disk radius, pixels
    "motion_blur": (3, 5, 7, 9, 11),                      # line length, pixels; angle drawn per image
    "gaussian_blur": (0.4, 0.6, 0.7, 0.8, 1.0),           # sigma, pixels
    "contrast": (0.75, 0.5, 0.4, 0.3, 0.15),              # factor towards each image's mean
    "brightness": (0.1, 0.2, 0.3, 0.4, 0.5),              # added to every pixel
    "jpeg": (80, 65, 58, 50, 40),                         # JPEG quality
    "pixelate": (0.95, 0.9, 0.85, 0.75, 0.65),            # downscale factor before scaling back up
}
FAMILIES = tuple(SEVERITIES)


def _float(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float32) / 255.0


def _uint8(x: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(x * 255.0), 0, 255).astype(np.uint8)


def _filter_each(x: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """Convolve every image (and channel) with a 2-D kernel, reflecting at the borders."""
    k = kernel[None, :, :, None] if x.ndim == 4 else kernel[None]
    return ndimage.convolve(x, k, mode="reflect")


def _disk(radius: float) -> np.ndarray:
    r = int(np.ceil(radius))
    yy, xx = np.mgrid[-r:r + 1, -r:r + 1]
    kernel = (xx**2 + yy**2 <= radius**2).astype(np.float32)
    kernel = ndimage.gaussian_filter(kernel, 0.5)  # soften the aliased edge, as CIFAR-10-C does
    return kernel / kernel.sum()


def _line(length: int, angle: float) -> np.ndarray:
    kernel = np.zeros((length, length), np.float32)
    kernel[length // 2, :] = 1.0
    kernel = ndimage.rotate(kernel, angle, reshape=False, order=1)
    return kernel / kernel.sum()


def _gaussian_noise(x, s, rng):
    return x + rng.normal(0.0, s, x.shape).astype(np.float32)


def _shot_noise(x, s, rng):
    return rng.poisson(x * s).astype(np.float32) / s


def _impulse_noise(x, s, rng):
    hit = rng.random(x.shape) < s
    return np.where(hit, (rng.random(x.shape) < 0.5).astype(np.float32), x)


def _defocus_blur(x, s, rng):
    return _filter_each(x, _disk(s))


def _motion_blur(x, s, rng):
    angles = rng.uniform(-45, 45, len(x))
    return np.stack([_filter_each(img[None], _line(int(s), a))[0] for img, a in zip(x, angles)])


def _gaussian_blur(x, s, rng):
    sigma = (0, s, s, 0) if x.ndim == 4 else (0, s, s)
    return ndimage.gaussian_filter(x, sigma, mode="reflect")


def _contrast(x, s, rng):
    mean = x.mean(axis=tuple(range(1, x.ndim)), keepdims=True)
    return (x - mean) * s + mean


def _brightness(x, s, rng):
    return x + s


def _pil_each(x8: np.ndarray, fn: Callable[[Image.Image], Image.Image]) -> np.ndarray:
    return np.stack([np.asarray(fn(Image.fromarray(img))) for img in x8])


def _jpeg(x, s, rng):
    def once(img: Image.Image) -> Image.Image:
        buf = io.BytesIO()
        img.save(buf, format="JPEG", quality=int(s))
        return Image.open(io.BytesIO(buf.getvalue())).convert(img.mode)
    return _float(_pil_each(_uint8(x), once))


def _pixelate(x, s, rng):
    def once(img: Image.Image) -> Image.Image:
        w, h = img.size
        small = img.resize((max(1, int(w * s)), max(1, int(h * s))), Image.Resampling.BOX)
        return small.resize((w, h), Image.Resampling.NEAREST)
    return _float(_pil_each(_uint8(x), once))


_FUNCTIONS: dict[str, Callable[[np.ndarray, float, np.random.Generator], np.ndarray]] = {
    "gaussian_noise": _gaussian_noise, "shot_noise": _shot_noise, "impulse_noise": _impulse_noise,
    "defocus_blur": _defocus_blur, "motion_blur": _motion_blur, "gaussian_blur": _gaussian_blur,
    "contrast": _contrast, "brightness": _brightness, "jpeg": _jpeg, "pixelate": _pixelate,
}


def check_family(family: str, severity: int) -> None:
    if family not in SEVERITIES:
        raise DawnbenchError(f"corruption {family!r}: unknown; the families are {', '.join(FAMILIES)}.")
    if not (isinstance(severity, int) and 0 <= severity <= 5):
        raise DawnbenchError(f"severity {severity!r}: use an integer from 0 (none) to 5.")


def corrupt(images: np.ndarray, family: str, severity: int, seed: int = SEED) -> np.ndarray:
    """``images`` (uint8, N×H×W or N×H×W×C) with ``family`` at ``severity``; same shape and dtype."""
    check_family(family, severity)
    if images.dtype != np.uint8 or images.ndim not in (3, 4):
        raise DawnbenchError(f"corrupt: expected uint8 images N×H×W or N×H×W×C, got {images.dtype} "
                             f"with shape {images.shape}.")
    if severity == 0:
        return images.copy()
    rng = np.random.default_rng([seed, FAMILIES.index(family), severity])
    out = _FUNCTIONS[family](_float(images), float(SEVERITIES[family][severity - 1]), rng)
    return _uint8(out)


def shifted_split(dataset: str, split: str, family: str, severity: int) -> np.ndarray:
    """The corrupted split, generated on first use and cached (written by rename: never torn)."""
    check_family(family, severity)
    path = dataset_dir(dataset) / "shifted" / f"v{VERSION}-seed{SEED}" / f"{split}-{family}-{severity}.npy"
    if path.is_file():
        return np.load(path)
    images, _ = load_split(dataset, split)
    out = corrupt(images, family, severity)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_with(path, lambda f: np.save(f, out))
    return out
