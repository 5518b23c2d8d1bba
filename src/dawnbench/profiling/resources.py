"""The resource monitor of every run (SPEC §14): a sampler thread writing ``resources.tsv``.

    with ResourceMonitor(run_dir / "resources.tsv", timed_s=lambda: clock.timed_s) as monitor:
        ...                                   # the run
    result.resources = monitor.summary()

Every ``interval`` seconds (0.5 by default) one row: the time since start; this
process's CPU % and the whole machine's, in units of one core (200 = two cores
busy; "this process" counts its children and, under torchrun, the run's other workers
on this machine); the CPU % of *other* processes (machine − this process);
this process's RSS and the machine's memory in use; the share of the interval the
run's clock was timing (from ``timed_s``); and per GPU, where NVML answers, the
utilisation %, memory used, power and PCIe traffic. Each row is flushed as it is
written, so a run killed with ``kill -9`` keeps every sample it took.

Why others' CPU matters: on a 2-core machine two runs side by side made one step
26× slower. The summary therefore reports the CPU seconds other processes took
while the clock was timing, and ``interference`` when they took more than 5 % of
the machine's capacity over the timed region — a TTA measured then is suspect.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

INTERFERENCE_SHARE = 0.05   # others' share of the machine's CPU capacity, timed region

CPU_COLUMNS = ("t_s", "proc_cpu_pct", "sys_cpu_pct", "others_cpu_pct", "proc_rss_bytes",
               "sys_mem_used_bytes", "timed_frac")
GPU_FIELDS = ("util_pct", "mem_used_bytes", "power_w", "pcie_tx_kbps", "pcie_rx_kbps")


def _busy_seconds(times: Any) -> float:
    """CPU seconds the machine spent busy (Linux counts guest time inside user)."""
    idle = times.idle + getattr(times, "iowait", 0.0)
    guest = getattr(times, "guest", 0.0) + getattr(times, "guest_nice", 0.0)
    return sum(times) - idle - guest


# One reader per GPU_FIELDS entry, in order: (pynvml module, device handle) -> value.
_NVML_READERS: tuple[Callable[[Any, Any], float], ...] = (
    lambda nv, h: nv.nvmlDeviceGetUtilizationRates(h).gpu,
    lambda nv, h: nv.nvmlDeviceGetMemoryInfo(h).used,
    lambda nv, h: nv.nvmlDeviceGetPowerUsage(h) / 1000,                       # mW -> W
    lambda nv, h: nv.nvmlDeviceGetPcieThroughput(h, nv.NVML_PCIE_UTIL_TX_BYTES),  # KB/s
    lambda nv, h: nv.nvmlDeviceGetPcieThroughput(h, nv.NVML_PCIE_UTIL_RX_BYTES),
)


class _Gpus:
    """NVML handles for every GPU, or none when NVML is absent (no driver, no GPU)."""

    def __init__(self) -> None:
        self.handles: list[Any] = []
        try:
            import pynvml
            pynvml.nvmlInit()
            self.nvml = pynvml
            self.handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
        except Exception:  # NVML missing or not initialisable: the CPU columns still work
            self.handles = []

    def columns(self) -> list[str]:
        return [f"gpu{i}_{f}" for i in range(len(self.handles)) for f in GPU_FIELDS]

    def sample(self) -> list[float | None]:
        values: list[float | None] = []
        nv = getattr(self, "nvml", None)
        for h in self.handles:
            for read in _NVML_READERS:
                try:
                    values.append(float(read(nv, h)))
                except Exception:  # a field this GPU or driver does not give
                    values.append(None)
        return values


class ResourceMonitor:
    """Samples this process and the machine every ``interval`` s into a TSV file."""

    def __init__(self, path: Path, interval: float = 0.5, timed_s: Callable[[], float] | None = None,
                 peers: list[int] | None = None):
        self.path = Path(path)
        self.interval = interval
        self._timed_s = timed_s or (lambda: 0.0)
        self._proc = psutil.Process()
        self._peers = [psutil.Process(pid) for pid in peers or []]  # the run's other workers
        self._peer_cpu_s: dict[int, float] = {}
        self._gpus = _Gpus()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="dawnbench-resources", daemon=True)
        # Running sums, not the rows: a monitor keeps constant memory however long the run.
        self.samples = 0
        self._sums: dict[str, list[float]] = {}      # column -> [count, sum, max]
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

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- sampling ------------------------------------------------------------------
    def _proc_cpu_s(self) -> float:
        t = self._proc.cpu_times()
        total = t.user + t.system + t.children_user + t.children_system
        for child in self._proc.children(recursive=True):  # live workers, e.g. data loaders
            with contextlib.suppress(psutil.Error):
                c = child.cpu_times()
                total += c.user + c.system
        for peer in self._peers:  # the run's other workers; a peer that died keeps its last reading
            with contextlib.suppress(psutil.Error):
                c = peer.cpu_times()
                self._peer_cpu_s[peer.pid] = c.user + c.system
        return total + sum(self._peer_cpu_s.values())

    def _read(self) -> tuple[float, float, float, float]:
        return time.monotonic(), self._proc_cpu_s(), _busy_seconds(psutil.cpu_times()), self._timed_s()

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
            "t_s": now[0] - self._t0, "proc_cpu_pct": proc, "sys_cpu_pct": system,
            "others_cpu_pct": max(0.0, system - proc),
            "proc_rss_bytes": float(self._proc.memory_info().rss),
            "sys_mem_used_bytes": float(psutil.virtual_memory().used),
            "timed_frac": min(1.0, max(0.0, (now[3] - self._last[3]) / dt)),
            "_dt": dt,
        }
        row.update(zip(self._gpus.columns(), self._gpus.sample()))
        self._last = now
        self.samples += 1
        for col in self._columns[1:]:
            value = row.get(col)
            if value is not None and col != "timed_frac":
                acc = self._sums.setdefault(col, [0, 0.0, value])
                acc[0], acc[1], acc[2] = acc[0] + 1, acc[1] + value, max(acc[2], value)
        self._timed += dt * row["timed_frac"]
        self._others_timed += dt * row["timed_frac"] * (system - proc) / 100
        if self._file is not None and self.file_error is None:
            try:
                self._file.write("\t".join("" if row[c] is None else f"{row[c]:.6g}" for c in self._columns) + "\n")
            except OSError as err:  # the disk filled up: keep sampling for the summary, stop writing
                self.file_error = f"{self.path.name} stopped at {self.samples - 1} rows: {err.strerror or err}"

    # --- summary -------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        """Mean and max per column, and what other processes took while the clock was timing."""
        out: dict[str, Any] = {"file": self.path.name, "interval_s": self.interval, "samples": self.samples,
                               "cpu_count": psutil.cpu_count()}
        if self.file_error:
            out["file_error"] = self.file_error
        if not self.samples:
            return out
        for col, (count, total, largest) in self._sums.items():
            out[col] = {"mean": total / count, "max": largest}
        timed = self._timed
        # Summed before clipping: the machine's busy time reaches /proc/stat in bursts (idle cores
        # account late), so a sample above the process's own use is often paid back by the next;
        # clipping each sample at 0 first would turn that jitter into phantom interference.
        others = max(0.0, self._others_timed)
        share = others / (timed * out["cpu_count"]) if timed > 0 else 0.0
        out.update(timed_s_sampled=timed, others_cpu_s_timed=others, others_share_timed=share)
        if share > INTERFERENCE_SHARE:
            out["interference"] = (f"other processes took {others:.1f} CPU-s ({100 * share:.0f} % of this "
                                   f"machine's {out['cpu_count']} cores) while the clock was timing: the "
                                   "TTA is suspect; rerun on an otherwise idle machine")
        return out
