"""The prepared-data cache: uint8 arrays under ``$DAWNBENCH_DATA/<dataset>/``.

A dataset directory holds ``<split>_inputs.npy``, ``<split>_labels.npy`` and
``meta.json``. It is assembled in a temporary sibling directory and renamed into
place only when complete, so an interrupted fetch never leaves a half-written cache.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from pathlib import Path

import numpy as np

from dawnbench.io import atomic_write_bytes

CACHE_FORMAT = 1


def user_cache() -> Path:
    """dawnbench's folder of the user's cache directory (``$XDG_CACHE_HOME``, else ``~/.cache``)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "dawnbench"


def kept(kind: str) -> Path:
    """Where dawnbench keeps what it derived for this user (``models``: the fitted kernel model; ``censuses``: marks
    of the censuses it wrote): ``$DAWNBENCH_CACHE``, else the user's cache directory."""
    return Path(os.environ.get("DAWNBENCH_CACHE") or user_cache()).expanduser() / kind


def trusted_file(path: Path) -> bool:
    """Whether ``path`` is a regular file (not a link) of this user in a folder of this user, neither writable by
    anyone else (what a cache may trust: no one but the user could have put it there)."""
    try:
        infos = (path.lstat(), path.parent.lstat())
    except OSError:
        return False
    return stat.S_ISREG(infos[0].st_mode) and stat.S_ISDIR(infos[1].st_mode) and all(
        info.st_uid == os.getuid() and not info.st_mode & 0o022 for info in infos)


def keep(path: Path, payload: bytes) -> None:
    """Write ``payload`` at ``path`` in the cache (``kept``) so that :func:`trusted_file` takes it: the folder and
    the file only the user's, whatever the umask. A cache that cannot be written only costs a later command the
    work again."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.parent.chmod(0o700)
        atomic_write_bytes(path, payload, update=True)
        path.chmod(0o600)
    except OSError:
        pass


def data_root() -> Path:
    """``$DAWNBENCH_DATA``, else the user's cache directory."""
    env = os.environ.get("DAWNBENCH_DATA")
    if env:
        return Path(env).expanduser()
    return user_cache() / "data"


def dataset_dir(name: str) -> Path:
    return data_root() / name


def is_ready(name: str) -> bool:
    return (dataset_dir(name) / "meta.json").is_file()


def read_meta(name: str) -> dict:
    return json.loads((dataset_dir(name) / "meta.json").read_text())


def write_dataset(name: str, splits: dict[str, tuple[np.ndarray, np.ndarray]], meta: dict) -> Path:
    """Write all splits and ``meta.json`` atomically (all or nothing)."""
    final = dataset_dir(name)
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.partial-", dir=final.parent))
    try:
        for split, (inputs, labels) in splits.items():
            np.save(staging / f"{split}_inputs.npy", np.ascontiguousarray(inputs, dtype=np.uint8))
            np.save(staging / f"{split}_labels.npy", np.ascontiguousarray(labels, dtype=np.int64))
        full_meta = {"format": CACHE_FORMAT, "name": name,
                     "splits": {s: {"count": int(len(y)), "input_shape": list(x.shape[1:])}
                                for s, (x, y) in splits.items()},
                     "num_classes": int(max(int(y.max()) for _, y in splits.values() if len(y))) + 1,
                     **meta}
        (staging / "meta.json").write_text(json.dumps(full_meta, indent=2) + "\n")
        if final.exists():
            shutil.rmtree(final)
        os.replace(staging, final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return final


def load_split(name: str, split: str, mmap: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Load one split's (inputs, labels); ``mmap`` maps instead of reading."""
    root = dataset_dir(name)
    mode = "r" if mmap else None
    return (np.load(root / f"{split}_inputs.npy", mmap_mode=mode),
            np.load(root / f"{split}_labels.npy", mmap_mode=mode))
