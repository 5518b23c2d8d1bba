"""The resource monitor of every run: a sampler thread writing ``resources.tsv``.

    with ResourceMonitor(run_dir / "resources.tsv", timed_s=lambda: clock.timed_s, peers=[...], devices=[0, 1]) as m:
        ...                                   # the run
    result.resources = m.summary()

Over all the run's workers on this machine (``peers``) and their children, every ``interval`` seconds: the run's
CPU and host memory, the machine's and other processes' CPU, and per accelerator NVML's utilisation, memory,
power, PCIe and NVLink. A counter this machine does not give is absent (its column not written), never 0; each
row is flushed as written, so ``kill -9`` keeps every sample. The summary says when others took more than the
rule allows while the clock was timing (``records/selection.py``). The columns and why others' CPU matters:
docs/guide/utilisation.md.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import psutil

from dawnbench.records.selection import past_the_rule

MB = 1e6

CPU_COLUMNS = ("t_s", "proc_cpu_pct", "cpu_machine_pct", "sys_cpu_pct", "others_cpu_pct", "run_rss_bytes",
               "proc_rss_bytes", "sys_mem_used_bytes", "timed_frac")
GPU_FIELDS = ("util_pct", "mem_used_bytes", "power_w", "pcie_tx_kbps", "pcie_rx_kbps", "nvlink_tx_kbps",
              "nvlink_rx_kbps")
SUMS = {"accel_util_pct": ("util_pct",), "accel_mem_used_bytes": ("mem_used_bytes",),
        "accel_pcie_mbps": ("pcie_tx_kbps", "pcie_rx_kbps"), "accel_nvlink_mbps": ("nvlink_tx_kbps", "nvlink_rx_kbps")}


def taken_from_own(others_s: float, seconds: float, cores: int, own: int) -> tuple[float, float]:
    """What other processes' ``others_s`` CPU-seconds over ``seconds`` took from the ``own`` of ``cores`` CPUs a
    measurement may use (the others' cores absorb theirs first): CPU-seconds taken, and their share of ``own``."""
    taken = max(0.0, others_s - (cores - own) * seconds)
    return taken, taken / (seconds * own) if seconds > 0 else 0.0


def busy_seconds(times: Any) -> float:
    """CPU seconds the machine spent busy (Linux counts guest time inside user)."""
    idle = times.idle + getattr(times, "iowait", 0.0)
    guest = getattr(times, "guest", 0.0) + getattr(times, "guest_nice", 0.0)
    return sum(times) - idle - guest


def nvml_index(torch_index: int) -> int:
    """NVML's index of torch's device ``torch_index``: CUDA_VISIBLE_DEVICES renumbers what torch sees."""
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    if torch_index < len(visible) and visible[torch_index].isdigit():
        return int(visible[torch_index])
    return torch_index


class _Gpus:
    """NVML handles of the devices a run uses, or none when NVML is absent (no driver, no GPU).

    Readers return a number, or raise when the device or driver does not give that counter;
    a counter that fails at the first sample is left out for good (absent, never 0)."""

    def __init__(self, devices: Sequence[int] | None) -> None:
        self.handles: list[tuple[int, Any]] = []
        self.why_absent: dict[str, str] = {}
        try:
            import pynvml
            pynvml.nvmlInit()
            self.nv = pynvml
            indices = range(pynvml.nvmlDeviceGetCount()) if devices is None else [nvml_index(d) for d in devices]
            self.handles = [(i, pynvml.nvmlDeviceGetHandleByIndex(i)) for i in indices]
        except Exception as err:  # NVML missing or not initialisable: the CPU columns still work
            self.why_absent["accelerators"] = f"NVML not available ({type(err).__name__})"
        self._nvlink_last: dict[int, tuple[float, float, float]] = {}   # device -> (t, tx KiB, rx KiB)
        self.fields = [f for f in GPU_FIELDS if self._answers(f)] if self.handles else []
        for f in GPU_FIELDS:
            if self.handles and f not in self.fields:
                self.why_absent[f] = "this device or driver does not give it"

    def _read(self, field: str, index: int, handle: Any, now: float) -> float:
        nv = self.nv
        if field == "util_pct":
            return float(nv.nvmlDeviceGetUtilizationRates(handle).gpu)
        if field == "mem_used_bytes":
            return float(nv.nvmlDeviceGetMemoryInfo(handle).used)
        if field == "power_w":
            return nv.nvmlDeviceGetPowerUsage(handle) / 1000            # mW -> W
        if field in ("pcie_tx_kbps", "pcie_rx_kbps"):
            counter = nv.NVML_PCIE_UTIL_TX_BYTES if field == "pcie_tx_kbps" else nv.NVML_PCIE_UTIL_RX_BYTES
            return float(nv.nvmlDeviceGetPcieThroughput(handle, counter))   # KB/s
        # NVLink: cumulative KiB counters over all links; the rate is the change since the last sample
        tx, rx = (v for v in nv.nvmlDeviceGetFieldValues(handle, [nv.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX,
                                                                  nv.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX]))
        if tx.nvmlReturn != nv.NVML_SUCCESS or rx.nvmlReturn != nv.NVML_SUCCESS:
            raise RuntimeError("no NVLink throughput counters")
        values = (now, float(tx.value.ullVal), float(rx.value.ullVal))
        last = self._nvlink_last.get(index, values)
        if field == "nvlink_rx_kbps":
            self._nvlink_last[index] = values
        dt = values[0] - last[0]
        slot = 1 if field == "nvlink_tx_kbps" else 2
        return (values[slot] - last[slot]) * 1.024 / dt if dt > 0 else 0.0   # KiB -> KB, per second

    def _answers(self, field: str) -> bool:
        try:
            for index, handle in self.handles:
                self._read(field, index, handle, time.monotonic())
            return True
        except Exception:
            return False

    def columns(self) -> list[str]:
        per_device = [f"gpu{i}_{f}" for i, _ in self.handles for f in self.fields]
        return per_device + [s for s, parts in SUMS.items() if all(p in self.fields for p in parts)] \
            if self.handles else []

    def sample(self) -> dict[str, float | None]:
        now, row = time.monotonic(), {}
        for index, handle in self.handles:
            for f in self.fields:
                try:
                    row[f"gpu{index}_{f}"] = self._read(f, index, handle, now)
                except Exception:  # a momentary failure: this sample has no value, the column stays
                    row[f"gpu{index}_{f}"] = None
        for total, parts in SUMS.items():
            if all(p in self.fields for p in parts):
                values = [row[f"gpu{i}_{p}"] for i, _ in self.handles for p in parts]
                known = [v for v in values if v is not None]
                scale = 1000 / MB if total.endswith("_mbps") else 1.0   # KB/s -> MB/s
                row[total] = sum(known) * scale if known else None
        return row


class _Processes:
    """The run's processes: this one, its peers (the run's other workers here) and all their children.

    CPU time is counted per root: its own, its reaped children's (what the kernel adds to it when
    a child exits) and its live descendants'; a root that exits keeps its last reading.

    Finding the descendants reads every process of the machine (about a millisecond per root here), so
    they are looked for every ``RESCAN_S`` seconds, not at every sample; in between, the ones found are
    read again (a child is counted from when it is first found, with all its CPU time since it began)."""

    RESCAN_S = 2.0

    def __init__(self, peers: Sequence[int]) -> None:
        self.roots = [psutil.Process()] + [psutil.Process(pid) for pid in peers]
        self._last: dict[int, float] = {}
        self._children: dict[int, list[psutil.Process]] = {}
        self._scanned = -math.inf

    def own_cpus(self, cores: int) -> int:
        """The CPUs the run may use: the union of its processes' affinities, capped by what Slurm allocated
        on this node. Other processes on the other CPUs (another job's, another pinned run's) do not
        share the run's cores."""
        allowed: set[int] = set()
        for root in self.roots:
            with contextlib.suppress(OSError, psutil.Error):
                allowed |= os.sched_getaffinity(root.pid)
        slurm = int(os.environ.get("SLURM_CPUS_ON_NODE") or 0)
        return max(1, min(len(allowed) or cores, slurm or cores, cores))

    def sample(self) -> tuple[float, float]:
        """(CPU seconds so far, resident bytes now), over every process of the run."""
        rescan = time.monotonic() - self._scanned >= self.RESCAN_S
        if rescan:
            self._scanned = time.monotonic()
        rss = 0.0
        for root in self.roots:
            with contextlib.suppress(psutil.Error):
                t = root.cpu_times()
                seconds = t.user + t.system + t.children_user + t.children_system
                rss += root.memory_info().rss
                if rescan:
                    self._children[root.pid] = root.children(recursive=True)
                for child in self._children.get(root.pid, []):
                    with contextlib.suppress(psutil.Error):
                        c = child.cpu_times()
                        seconds += c.user + c.system
                        rss += child.memory_info().rss
                self._last[root.pid] = seconds
        return sum(self._last.values()), rss


class ResourceMonitor:
    """Samples the run's processes, the machine and the run's accelerators every ``interval`` s into a TSV."""

    def __init__(self, path: Path, interval: float = 0.5, timed_s: Callable[[], float] | None = None,
                 peers: list[int] | None = None, devices: Sequence[int] | None = None):
        self.path = Path(path)
        self.interval = interval
        self._timed_s = timed_s or (lambda: 0.0)
        self._proc = psutil.Process()
        self._processes = _Processes(peers or [])
        self._gpus = _Gpus(devices)
        self._cores = psutil.cpu_count() or 1
        self._own = self._processes.own_cpus(self._cores)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="dawnbench-resources", daemon=True)
        self.samples = 0
        self._sums: dict[str, list[Any]] = {}        # column -> [seconds, time-weighted sum, max, max of any]
        self._timed = 0.0                            # seconds sampled while the clock was timing
        self._others_timed = 0.0                     # others' CPU-seconds then (summed before clipping)
        self._file = None
        self.file_error: str | None = None           # the TSV could not be written (a full disk)

    # --- lifecycle -----------------------------------------------------------------
    def start(self) -> ResourceMonitor:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("w", buffering=1)  # line-buffered: every row reaches the OS
        self._columns = [*CPU_COLUMNS, *self._gpus.columns()]
        self._file.write("\t".join(self._columns) + "\n")
        self._t0 = time.monotonic()
        self._last = self._read()
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._file is None:
            return
        self._stop.set()
        self._thread.join()
        self._take()  # the last partial interval, so a short run still has a row
        with contextlib.suppress(OSError):
            self._file.close()
        self._file = None

    def __enter__(self) -> ResourceMonitor:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    # --- sampling ------------------------------------------------------------------
    def _read(self) -> tuple[float, float, float, float, float]:
        cpu_s, rss = self._processes.sample()
        return time.monotonic(), cpu_s, busy_seconds(psutil.cpu_times()), self._timed_s(), rss

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._take()

    def _take(self) -> None:
        now = self._read()
        dt = now[0] - self._last[0]
        if dt <= 0:
            return
        proc = 100 * (now[1] - self._last[1]) / dt
        system = 100 * (now[2] - self._last[2]) / dt
        row: dict[str, float | None] = {
            "t_s": now[0] - self._t0, "proc_cpu_pct": proc, "cpu_machine_pct": proc / self._cores,
            "sys_cpu_pct": system, "others_cpu_pct": max(0.0, system - proc), "run_rss_bytes": now[4],
            "proc_rss_bytes": float(self._proc.memory_info().rss),
            "sys_mem_used_bytes": float(psutil.virtual_memory().used),
            "timed_frac": min(1.0, max(0.0, (now[3] - self._last[3]) / dt)),
        }
        row.update(self._gpus.sample())
        self._last = now
        self.samples += 1
        # Means are over time, and a maximum needs half an interval at least: CPU time moves in
        # clock ticks (10 ms), so a rate over the last few ms of a run (or of a 10-step profile) can
        # read several cores more than there are.
        whole = dt >= self.interval / 2
        for col in self._columns[1:]:
            value = row.get(col)
            if value is not None and col != "timed_frac":
                acc = self._sums.setdefault(col, [0.0, 0.0, None, value])
                acc[0], acc[1], acc[3] = acc[0] + dt, acc[1] + value * dt, max(acc[3], value)
                if whole:
                    acc[2] = value if acc[2] is None else max(acc[2], value)
        self._timed += dt * row["timed_frac"]
        self._others_timed += dt * row["timed_frac"] * (system - proc) / 100
        if self._file is not None and self.file_error is None:
            try:
                self._file.write("\t".join("" if row.get(c) is None else f"{row[c]:.6g}" for c in self._columns) + "\n")
            except OSError as err:  # the disk filled up: keep sampling for the summary, stop writing
                self.file_error = f"{self.path.name} stopped at {self.samples - 1} rows: {err.strerror or err}"

    # --- summary -------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        """Mean and max per column, which accelerator counters were absent, and what other processes
        took while the clock was timing."""
        out: dict[str, Any] = {"file": self.path.name, "interval_s": self.interval, "samples": self.samples,
                               "cpu_count": self._cores, "processes": len(self._processes.roots),
                               "accelerators": {"devices": [i for i, _ in self._gpus.handles],
                                                "absent": dict(self._gpus.why_absent)}}
        if self.file_error:
            out["file_error"] = self.file_error
        if not self.samples:
            return out
        for col, (seconds, total, largest, largest_any) in self._sums.items():
            # every column is a non-negative quantity: a mean of differences that rounds a hair below 0 is 0
            out[col] = {"mean": max(0.0, total / seconds), "max": max(0.0, largest_any if largest is None else largest)}
        # how long the means are over: what weighs one run's load against another's of a different length
        out["sampled_s"] = max(seconds for seconds, *_ in self._sums.values())
        timed = self._timed
        # Summed before clipping: the machine's busy time reaches /proc/stat in bursts (idle cores
        # account late), so a sample above the process's own use is often paid back by the next;
        # clipping each sample at 0 first would turn that jitter into phantom interference.
        others = max(0.0, self._others_timed)
        # Other processes may use the CPUs the run may not (another job's, another pinned run's) freely;
        # what they took beyond those came out of the run's own.
        taken, share = taken_from_own(others, timed, self._cores, self._own)
        # others cannot take more than all of the run's CPUs: above 1 is the OS accounting late, not a measurement
        out.update(timed_s_sampled=timed, others_cpu_s_timed=others, own_cpus=self._own,
                   others_share_timed=min(1.0, share))
        if past_the_rule(taken, share):
            where = (f"this machine's {self._cores} cores" if self._own == self._cores else
                     f"the {self._own} of this machine's {self._cores} cores the run may use")
            out["interference"] = (f"other processes took {taken:.1f} CPU-s ({100 * share:.0f} % of {where}) while "
                                   "the clock was timing: the TTA is suspect; rerun on an otherwise idle machine")
        return out
