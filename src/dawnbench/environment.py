"""What a run ran on: hardware and software, recorded in every result."""

from __future__ import annotations

import inspect
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    import torch


def device_sync(device: torch.device) -> Callable[[], None] | None:
    """What waits for ``device``'s queued work before a clock is read: ``device`` itself, not the current
    device (a process timing cuda:1 would otherwise wait on cuda:0); None on a CPU, whose ops are synchronous."""
    import torch

    return (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else None


def cpu_model() -> str:
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
        "cpu": cpu_model(),
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
    info["topology"] = topology()
    return info


# --- topology (SPEC §20): how the cores, memory and accelerators are joined ------------------

# NVML's common-ancestor levels, named as `nvidia-smi topo -m` names them.
_ANCESTOR = {0: "X", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
_LINK_MEANING = {"NV#": "NVLink, # links", "PIX": "at most one PCIe switch", "PXB": "several PCIe switches",
                 "PHB": "through a PCIe host bridge", "NODE": "across host bridges within a NUMA node",
                 "SYS": "across NUMA nodes (the SMP interconnect)"}


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _cpu_list(cpus: list[int]) -> str:
    """``0-3,8`` for [0, 1, 2, 3, 8]."""
    ordered, ranges, start = sorted(cpus), [], None
    for i, cpu in enumerate(ordered):
        start = cpu if start is None else start
        if i + 1 == len(ordered) or ordered[i + 1] != cpu + 1:
            ranges.append(f"{start}-{cpu}" if cpu != start else str(start))
            start = None
    return ",".join(ranges)


def _cpu_topology() -> dict[str, Any]:
    import psutil

    packages = {_read(f"{d}/topology/physical_package_id") for d in
                (str(p) for p in Path("/sys/devices/system/cpu").glob("cpu[0-9]*"))} - {None}
    nodes = [{"node": int(d.name.removeprefix("node")), "cpus": _read(f"{d}/cpulist")}
             for d in sorted(Path("/sys/devices/system/node").glob("node[0-9]*"))]
    return {"sockets": len(packages) or None, "physical_cores": psutil.cpu_count(logical=False),
            "logical_cpus": psutil.cpu_count(), "numa_nodes": nodes}


def _accelerator_topology(nv: Any) -> dict[str, Any]:
    """Per NVML device its PCIe link, NUMA node and CPU affinity; per pair the link and P2P."""
    handles = [nv.nvmlDeviceGetHandleByIndex(i) for i in range(nv.nvmlDeviceGetCount())]
    buses = [nv.nvmlDeviceGetPciInfo(h).busId for h in handles]
    buses = [b.decode() if isinstance(b, bytes) else str(b) for b in buses]

    def attempt(fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception:  # a query this driver or device does not answer: absent
            return None

    devices = []
    for i, h in enumerate(handles):
        name = attempt(nv.nvmlDeviceGetName, h)
        masks = attempt(nv.nvmlDeviceGetCpuAffinity, h, max(1, ((os.cpu_count() or 64) + 63) // 64)) or []
        cpus = [word * 64 + bit for word, mask in enumerate(masks) for bit in range(64) if int(mask) >> bit & 1]
        node = attempt(nv.nvmlDeviceGetNumaNodeId, h)
        if node is None:
            text = _read(f"/sys/bus/pci/devices/{buses[i].lower()[-12:]}/numa_node")
            node = int(text) if text and text.lstrip("-").isdigit() and int(text) >= 0 else None
        devices.append({"index": i, "name": name.decode() if isinstance(name, bytes) else name, "pci_bus": buses[i],
                        "pcie": {"gen": attempt(nv.nvmlDeviceGetCurrPcieLinkGeneration, h),
                                 "width": attempt(nv.nvmlDeviceGetCurrPcieLinkWidth, h),
                                 "max_gen": attempt(nv.nvmlDeviceGetMaxPcieLinkGeneration, h),
                                 "max_width": attempt(nv.nvmlDeviceGetMaxPcieLinkWidth, h)},
                        "numa_node": node, "cpu_affinity": _cpu_list(cpus) if cpus else None})
    links, p2p = [], []
    for i, a in enumerate(handles):
        row, row_p2p = [], []
        for j, b in enumerate(handles):
            if i == j:
                row.append("X")
                row_p2p.append(None)
                continue
            nvlinks = 0
            for link in range(getattr(nv, "NVML_NVLINK_MAX_LINKS", 18)):
                if attempt(nv.nvmlDeviceGetNvLinkState, a, link) == getattr(nv, "NVML_FEATURE_ENABLED", 1):
                    remote = attempt(nv.nvmlDeviceGetNvLinkRemotePciInfo, a, link)
                    bus = getattr(remote, "busId", None)
                    nvlinks += (bus.decode() if isinstance(bus, bytes) else bus) == buses[j]
            level = attempt(nv.nvmlDeviceGetTopologyCommonAncestor, a, b)
            row.append(f"NV{nvlinks}" if nvlinks else _ANCESTOR.get(level, "?"))
            status = attempt(nv.nvmlDeviceGetP2PStatus, a, b, getattr(nv, "NVML_P2P_CAPS_INDEX_READ", 0))
            row_p2p.append(None if status is None else status == getattr(nv, "NVML_P2P_STATUS_OK", 0))
        links.append(row)
        p2p.append(row_p2p)
    return {"devices": devices, "links": links, "p2p_read": p2p, "legend": _LINK_MEANING}


def topology(nvml: Any = None) -> dict[str, Any]:
    """The machine's layout: sockets, cores and NUMA nodes; and, where NVML answers, every
    accelerator's PCIe link (generation and width, current and maximum), NUMA node and CPU
    affinity, and per pair the link as ``nvidia-smi topo -m`` classifies it (``NV#``, ``PIX``,
    ``PXB``, ``PHB``, ``NODE``, ``SYS``) with peer-to-peer read availability. ``nvml``: the module
    (``pynvml`` by default; tests hand in a stand-in)."""
    out: dict[str, Any] = {"cpu": _cpu_topology()}
    try:
        if nvml is None:
            import pynvml as nvml
        nvml.nvmlInit()
        if nvml.nvmlDeviceGetCount():
            out["accelerators"] = _accelerator_topology(nvml)
    except Exception as err:  # no NVML (no driver, no GPU): a CPU machine's topology is its cores
        out["accelerators_absent"] = f"NVML not available ({type(err).__name__})"
    return out


def describe_hardware(hw: dict[str, Any]) -> str:
    """One line for a result card: accelerator if any, else CPU and cores."""
    if not isinstance(hw, dict):
        return "unknown hardware"
    if hw.get("accelerator"):
        return f"{hw['accelerator']} ({hw.get('cpu', 'unknown CPU')}, {hw.get('cores', '?')} cores)"
    if not hw.get("cpu"):    # an imported MLPerf log names its platform only
        return str(hw["platform"]) if hw.get("platform") else "unknown hardware"
    return f"{hw['cpu']}, {hw.get('cores', '?')} cores, {hw.get('memory_gib')} GiB"


def vector_extensions(hw: dict[str, Any]) -> list[str]:
    """The CPU's widest vector extensions as people name them (AVX-512, AVX512-BF16, AMX-BF16; else AVX2): two
    CPUs of one model name differ by them, and so do their kernels."""
    have = hw.get("cpu_flags") or []
    wide = [f.upper().replace("_", "-") for f in have if f in ("avx512f", "avx512_bf16", "amx_bf16")]
    return ["AVX-512" if f == "AVX512F" else f for f in wide] or (["AVX2"] if "avx2" in have else [])


def scheduler() -> dict[str, Any] | None:
    """The cluster job this process runs in (Slurm's environment), or None outside one."""
    env = os.environ
    if "SLURM_JOB_ID" not in env:
        return None
    return {"name": "slurm", "job_id": (f"{env['SLURM_ARRAY_JOB_ID']}_{env['SLURM_ARRAY_TASK_ID']}"
                                        if "SLURM_ARRAY_TASK_ID" in env else env["SLURM_JOB_ID"]),
            "nodes": env.get("SLURM_JOB_NODELIST"), "partition": env.get("SLURM_JOB_PARTITION")}


def git_state(folder: Path, only: str | None = None) -> dict[str, Any]:
    """The commit of the repository holding ``folder``, and whether its tree (or just the
    file ``only`` in it) has changes; ``None`` for both outside a repository, where what is
    asked about is not tracked there (a copy without its .git inside another repository),
    and ``dirty`` None where git could not check the tree."""
    def git(*cmd: str) -> subprocess.CompletedProcess:
        # a file's name is a name, never a pattern: "[ab].py" or ":!a.py" must not answer for other files
        return subprocess.run(["git", "--literal-pathspecs", "-C", str(folder), *cmd], capture_output=True, text=True,
                              errors="replace", timeout=5)
    try:
        head = git("rev-parse", "HEAD")
        tracked = head.returncode == 0 and git("ls-files", "--error-unmatch", "--", only or ".").returncode == 0
        changes = git("status", "--porcelain", "--untracked-files=no", *(["--", only] if only else [])) if tracked \
            else None
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    if not tracked:
        return {"commit": None, "dirty": None}
    return {"commit": head.stdout.strip(),
            "dirty": bool(changes.stdout.strip()) if changes.returncode == 0 else None}


def _versions() -> dict[str, Any]:
    import torch

    from dawnbench import __version__

    return {"python": platform.python_version(), "torch": torch.__version__,
            "numpy": __import__("numpy").__version__, "dawnbench": __version__, "platform": platform.platform(),
            # PyTorch's huge pages for large CPU tensors, on only for "1" as PyTorch reads it (docs/rules.md: a
            # step's speed moves with it, either way)
            "thp_mem_alloc": os.environ.get("THP_MEM_ALLOC_ENABLE") == "1"}


def provenance(device: torch.device) -> dict[str, Any]:
    """What SPEC §18 asks of every published figure: command, commit, date, hardware, software. ``dirty`` is about
    dawnbench's own code (this package's folder): a command that writes its results into the checkout, as the
    benchmarks do under docs/, does not make the next measurement look as if the code had changed."""
    import datetime as dt

    return {"argv": sys.argv, **git_state(Path(__file__).resolve().parent, only="."),
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "hardware": hardware_info(device), "software": _versions()}


def software_info(entry: type | Path) -> dict[str, Any]:
    """Versions, and the entry's file (a class's, or a tracked script's) with its git commit."""
    source = Path(entry) if isinstance(entry, Path) else Path(inspect.getfile(entry))
    git = git_state(source.parent, only=source.name)
    commit = git["commit"] and git["commit"] + {True: "-dirty", False: "", None: "-unchecked"}[git["dirty"]]
    return {**_versions(), "entry_file": str(source), "entry_git_commit": commit, "argv": sys.argv}
