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
    if not isinstance(hw, dict):
        return "unknown hardware"
    if hw.get("accelerator"):
        return f"{hw['accelerator']} ({hw.get('cpu', 'unknown CPU')}, {hw.get('cores', '?')} cores)"
    if not hw.get("cpu"):
        return "unknown hardware"
    return f"{hw['cpu']}, {hw.get('cores', '?')} cores, {hw.get('memory_gib')} GiB"


def git_state(folder: Path, only: str | None = None) -> dict[str, Any]:
    """The commit of the repository holding ``folder``, and whether its tree (or just the
    file ``only`` in it) has changes; ``None`` for both outside a repository."""
    status = ["status", "--porcelain", "--untracked-files=no", *(["--", only] if only else [])]
    try:
        head, changes = (subprocess.run(["git", "-C", str(folder), *cmd], capture_output=True, text=True, timeout=5)
                         for cmd in (["rev-parse", "HEAD"], status))
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    if head.returncode != 0:
        return {"commit": None, "dirty": None}
    return {"commit": head.stdout.strip(), "dirty": bool(changes.stdout.strip())}


def _versions() -> dict[str, Any]:
    import torch

    from dawnbench import __version__

    return {"python": platform.python_version(), "torch": torch.__version__,
            "numpy": __import__("numpy").__version__, "dawnbench": __version__, "platform": platform.platform()}


def provenance(device: torch.device, code: Path) -> dict[str, Any]:
    """What SPEC §18 asks of every published figure: command, commit, date, hardware, software."""
    import datetime as dt

    return {"argv": sys.argv, **git_state(code.parent),
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "hardware": hardware_info(device), "software": _versions()}


def software_info(entry_cls: type) -> dict[str, Any]:
    source = Path(inspect.getfile(entry_cls))
    git = git_state(source.parent, only=source.name)
    commit = git["commit"] and git["commit"] + ("-dirty" if git["dirty"] else "")
    return {**_versions(), "entry_file": str(source), "entry_git_commit": commit, "argv": sys.argv}
