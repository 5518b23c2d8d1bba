"""What a run ran on: hardware and software, recorded in every result (SPEC §4)."""

from __future__ import annotations

import inspect
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


# The CPU features that decide which kernels PyTorch can use (and so the roofs).
_FLAGS = ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile", "amx_bf16")


def _cpu_flags() -> list[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                present = set(line.split(":", 1)[1].split())
                return [f for f in _FLAGS if f in present]
    except OSError:
        pass
    return []


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def hardware_info(device: torch.device) -> dict[str, Any]:
    import torch  # here, not at the top: describe_hardware is used by commands that never train

    info: dict[str, Any] = {
        "cpu": _cpu_model(),
        "cpu_flags": _cpu_flags(),
        "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "memory_gib": _memory_gib(),
        "device": str(device),
        "accelerator": None,
        "accelerator_count": 0,
    }
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        info.update(accelerator=props.name, accelerator_count=torch.cuda.device_count(),
                    accelerator_memory_gib=round(props.total_memory / 2**30, 1))
    return info


def describe_hardware(hw: dict[str, Any]) -> str:
    """One line for a result card: accelerator if any, else CPU and cores."""
    if hw.get("accelerator"):
        return f"{hw['accelerator']} ({hw.get('cpu', 'unknown CPU')}, {hw.get('cores', '?')} cores)"
    if not hw.get("cpu"):
        return "unknown hardware"
    return f"{hw['cpu']}, {hw.get('cores', '?')} cores, {hw.get('memory_gib')} GiB"


def git_state(path: Path) -> dict[str, Any]:
    """The commit of the repository holding ``path`` and whether its tree has changes."""
    folder = path if path.is_dir() else path.parent
    try:
        head = subprocess.run(["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=5)
        status = subprocess.run(["git", "-C", str(folder), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    if head.returncode != 0:
        return {"commit": None, "dirty": None}
    return {"commit": head.stdout.strip(), "dirty": bool(status.stdout.strip())}


def provenance(device: torch.device, code: Path) -> dict[str, Any]:
    """What SPEC §18 asks of every published figure: command, commit, date, hardware, software."""
    import datetime as dt

    import torch

    from dawnbench import __version__

    return {"argv": sys.argv, **git_state(code),
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "hardware": hardware_info(device),
            "software": {"python": platform.python_version(), "torch": torch.__version__, "dawnbench": __version__,
                         "platform": platform.platform()}}


def _git_commit(path: Path) -> str | None:
    try:
        proc = subprocess.run(["git", "-C", str(path.parent), "rev-parse", "HEAD"],
                              capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(["git", "-C", str(path.parent), "status", "--porcelain", "--", path.name],
                               capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    return proc.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def software_info(entry_cls: type) -> dict[str, Any]:
    import torch

    from dawnbench import __version__

    source = Path(inspect.getfile(entry_cls))
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": __import__("numpy").__version__,
        "dawnbench": __version__,
        "platform": platform.platform(),
        "entry_file": str(source),
        "entry_git_commit": _git_commit(source),
        "argv": sys.argv,
    }
