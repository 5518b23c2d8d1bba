"""Writing files so that a kill at any instant leaves the old version or the new, never a torn one.

One implementation for every package: write a temporary file in the same folder,
``fsync`` it, rename it over the target, then ``fsync`` the folder so that the rename
itself survives a power loss. JSON goes through :func:`json_safe` first (NaN and the
infinities are not JSON).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO


def json_safe(value: Any) -> Any:
    """NaN and infinities are not JSON: write them as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def fsync_dir(path: Path) -> None:
    """Make a rename inside ``path`` durable (a no-op where folders cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems refuse fsync on a folder; the rename is still atomic
    finally:
        os.close(fd)


@contextlib.contextmanager
def _replacing(path: Path) -> Iterator[BinaryIO]:
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def atomic_write_bytes(path: Path, payload: bytes) -> None:
    with _replacing(path) as f:
        f.write(payload)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path, doc: Any, indent: int = 2) -> None:
    atomic_write_text(path, json.dumps(json_safe(doc), indent=indent) + "\n")


def atomic_write_with(path: Path, write: Callable[[BinaryIO], None]) -> None:
    """Atomically write what ``write(file)`` puts into an open binary file (``torch.save``, ``np.save``)."""
    with _replacing(path) as f:
        write(f)
