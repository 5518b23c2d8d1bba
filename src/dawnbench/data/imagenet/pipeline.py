"""Decoding and augmentation of ImageNet JPEGs, on the CPU or on the GPU, with the same semantics.

Training: a random resized crop (torchvision's: area 8–100 % of the image, aspect ratio
3/4–4/3, ten tries, then a centre crop) resized to the epoch's resolution, and a
horizontal flip half of the time. Evaluation: the centre square of side ``ratio`` × the
short side (224/256, the usual "resize to 256, crop 224"), resized to the resolution.
Both produce uint8 images; normalisation is the entry's (on the device, in its
precision).

The box and the flip are drawn **from the image's header, before decoding**, by
:func:`random_crop`, so both paths share them:

* **cpu**: Pillow decodes at a reduced size where the crop allows (JPEG's DCT scaling:
  ``draft``, up to 1/8) and crops and resizes in one call — in DataLoader workers.
* **gpu**: the workers only read the bytes and draw the boxes; the main process decodes
  the batch on the device (nvJPEG, through ``torchvision.io.decode_jpeg(device="cuda")``)
  and crops, resizes (bilinear, antialiased) and flips there. torchvision is imported
  only on this path (the CPU path, and every test, runs without it); the decode step is
  a parameter so the device-side crop can be checked on the CPU.
"""

from __future__ import annotations

import io
import math
import random
from collections.abc import Callable, Sequence

import numpy as np
from PIL import Image

SCALE = (0.08, 1.0)            # torchvision's RandomResizedCrop defaults
RATIO = (3 / 4, 4 / 3)
EVAL_RATIO = 224 / 256         # the centre crop of the short side used for evaluation
MEAN = (0.485 * 255, 0.456 * 255, 0.406 * 255)   # ImageNet's channel means and deviations, 0–255
STD = (0.229 * 255, 0.224 * 255, 0.225 * 255)


def random_crop(width: int, height: int, rng: random.Random,
                scale: tuple[float, float] = SCALE, ratio: tuple[float, float] = RATIO) -> tuple[int, int, int, int]:
    """torchvision's RandomResizedCrop box (left, top, width, height) for an image of this size."""
    area = width * height
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(10):
        target = area * rng.uniform(*scale)
        aspect = math.exp(rng.uniform(*log_ratio))
        w, h = int(round(math.sqrt(target * aspect))), int(round(math.sqrt(target / aspect)))
        if 0 < w <= width and 0 < h <= height:
            return rng.randint(0, width - w), rng.randint(0, height - h), w, h
    in_ratio = width / height
    if in_ratio < ratio[0]:
        w, h = width, int(round(width / ratio[0]))
    elif in_ratio > ratio[1]:
        w, h = int(round(height * ratio[1])), height
    else:
        w, h = width, height
    return (width - w) // 2, (height - h) // 2, w, h


def centre_crop(width: int, height: int, ratio: float = EVAL_RATIO) -> tuple[int, int, int, int]:
    """The centre square of ``ratio`` × the short side, placed as torchvision's ``center_crop`` places it."""
    side = int(round(min(width, height) * ratio))
    return int(round((width - side) / 2)), int(round((height - side) / 2)), side, side


def header_size(jpeg: bytes) -> tuple[int, int]:
    """(width, height) from the header; nothing is decoded."""
    with Image.open(io.BytesIO(jpeg)) as img:
        return img.size


def decode_crop(jpeg: bytes, box: tuple[int, int, int, int], flip: bool, res: int) -> np.ndarray:
    """``res``×``res``×3 uint8: the box of the image, resized, flipped if asked (Pillow, on the CPU)."""
    img = Image.open(io.BytesIO(jpeg))
    width, height = img.size
    left, top, w, h = box
    k = 1
    while k < 8 and w // (2 * k) >= res and h // (2 * k) >= res:  # decode smaller while the crop stays ≥ res
        k *= 2
    if k > 1:
        img.draft("RGB", (width // k, height // k))
    img = img.convert("RGB")
    sx, sy = img.size[0] / width, img.size[1] / height
    out = img.resize((res, res), Image.Resampling.BILINEAR, box=(left * sx, top * sy, (left + w) * sx, (top + h) * sy))
    if flip:
        out = out.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    return np.asarray(out)


def decode_centre(jpeg: bytes, res: int, ratio: float = EVAL_RATIO) -> np.ndarray:
    """The evaluation view: the centre crop of ``ratio`` × the short side, ``res``×``res``×3 uint8."""
    return decode_crop(jpeg, centre_crop(*header_size(jpeg), ratio), False, res)


def centre_batch(jpegs: Sequence[bytes], res: int, ratio: float = EVAL_RATIO) -> np.ndarray:
    """N×res×res×3 uint8 of :func:`decode_centre` (on the CPU)."""
    out = np.empty((len(jpegs), res, res, 3), np.uint8)
    for i, jpeg in enumerate(jpegs):
        out[i] = decode_centre(jpeg, res, ratio)
    return out


# --- the GPU path ---------------------------------------------------------------------------

Decoder = Callable[[list, object], list]   # (uint8 byte tensors, device) -> decoded C×H×W uint8 tensors


def nvjpeg_decoder() -> Decoder:
    """torchvision's batched nvJPEG decode (imported here only: the CPU path never needs torchvision)."""
    try:
        from torchvision.io import ImageReadMode, decode_jpeg
    except Exception as err:  # noqa: BLE001 - absent, or built for another torch
        from dawnbench.errors import DawnbenchError

        raise DawnbenchError(f"the gpu data pipeline decodes with torchvision's nvJPEG, which does not import here "
                             f"({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}); install a "
                             "torchvision built for this torch, or use --set pipeline=cpu.") from None
    return lambda data, device: decode_jpeg(data, mode=ImageReadMode.RGB, device=device)


def pillow_decoder(data: list, device: object) -> list:
    """The same contract as :func:`nvjpeg_decoder`, with Pillow on the CPU (tests, and the check of the crop)."""
    import torch

    return [torch.from_numpy(np.asarray(Image.open(io.BytesIO(bytes(t.numpy()))).convert("RGB")).copy())
            .permute(2, 0, 1).to(device) for t in data]


def device_crop(jpegs: Sequence[bytes], boxes: np.ndarray, flips: np.ndarray, res: int, device: object,
                decode: Decoder) -> object:
    """N×3×res×res uint8 on ``device``: decode the batch there, then crop, resize and flip each image."""
    import torch
    import torch.nn.functional as F

    images = decode([torch.frombuffer(bytearray(j), dtype=torch.uint8) for j in jpegs], device)
    out = torch.empty((len(images), 3, res, res), dtype=torch.uint8, device=device)
    for i, (img, (left, top, w, h)) in enumerate(zip(images, boxes.tolist())):
        crop = img[:, top:top + h, left:left + w].unsqueeze(0).float()
        crop = F.interpolate(crop, size=(res, res), mode="bilinear", align_corners=False, antialias=True)
        if flips[i]:
            crop = crop.flip(-1)
        out[i] = crop[0].round_().clamp_(0, 255).to(torch.uint8)
    return out


_NVJPEG: list[Decoder] = []


def centre_on_device(jpegs: Sequence[bytes], res: int, device: object, ratio: float = EVAL_RATIO,
                     decode: Decoder | None = None) -> object:
    """The evaluation view of each JPEG, decoded and cropped on ``device`` (nvJPEG by default)."""
    if decode is None:
        if not _NVJPEG:
            _NVJPEG.append(nvjpeg_decoder())
        decode = _NVJPEG[0]
    boxes = np.array([centre_crop(*header_size(j), ratio) for j in jpegs])
    return device_crop(jpegs, boxes, np.zeros(len(jpegs), bool), res, device, decode)
