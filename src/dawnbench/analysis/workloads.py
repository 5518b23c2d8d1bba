"""The documents a workload analysis reads (``similarity``, ``roofline``): run records, profiles and
kernel results, each turned into workload documents with the configuration that names them.

    docs = collect(["runs/", "profiles/", "kernels/kernels.json"])
    docs[0]["_config"], docs[0]["_kind"]      # "mnist/small-cnn/fp32/bs64", "run" | "profile" | "kernels"

* a **run** (``result.json``) and a **profile** (``summary.json`` of ``dawnbench profile``) are
  read as they are; their configuration is task, entry, precision and batch size (and a
  profile's ``--without`` variant, a run's number of workers when it had several);
* a **kernel result** (``kernels.json`` of ``dawnbench kernels``) becomes one workload per suite
  and precision, aggregated over its measured problems as the MLPerf characterisation did —
  FLOPs, bytes and seconds summed, so its FLOP/s, bytes/s and intensity are those of the suite
  as a whole, and its memory-bound share is the share of time in problems below the ridge —
  with the resources the command sampled while that suite ran; or, with ``per_problem``, one
  workload per measured row. It is shaped like a profile's summary (``step``, ``resources``,
  ``memory_bound_share``), so every reader treats it like one.

Every file is read through :mod:`~dawnbench.records.documents`: one named on the command line
that is not a sound document of its kind is an error naming the field; one found while walking a
folder (without following links) is left out with a note, as are rows and documents whose values
cannot be true.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dawnbench.errors import DawnbenchError
from dawnbench.io import read_json, walk_foreign
from dawnbench.precision import labelled
from dawnbench.records import documents

NAMES = ("result.json", "summary.json", "kernels.json")
MIB = 2**20
# The system-level measures of a run (SPEC §20), from its resources summary: name -> (column, statistic, scale),
# with the column older records used first where one was renamed.
SYSTEM = {"cpu_util_pct": (("proc_cpu_pct",), "mean", 1.0),
          "cpu_machine_pct": (("cpu_machine_pct",), "mean", 1.0),
          "host_mem_mib": (("run_rss_bytes", "proc_rss_bytes"), "max", MIB),
          "accel_util_pct": (("accel_util_pct", "gpu0_util_pct"), "mean", 1.0),
          "accel_mem_mib": (("accel_mem_used_bytes", "gpu0_mem_used_bytes"), "max", MIB),
          "pcie_mbps": (("accel_pcie_mbps",), "mean", 1.0),
          "nvlink_mbps": (("accel_nvlink_mbps",), "mean", 1.0)}


def sampled_seconds(resources: Any) -> float | None:
    """How long a run's resource means are over (older records: samples × interval)."""
    seconds = number(resources, "sampled_s")
    if seconds is None and number(resources, "samples") and number(resources, "interval_s"):
        seconds = number(resources, "samples") * number(resources, "interval_s")  # type: ignore[operator]
    return seconds


def number(doc: Any, *path: str) -> float | None:
    """``doc[path[0]][path[1]]…`` if it is a number, else None (a missing level, a damaged document)."""
    for key in path:
        if not isinstance(doc, dict):
            return None
        doc = doc.get(key)
    return float(doc) if isinstance(doc, (int, float)) and not isinstance(doc, bool) else None


def system_measures(resources: Any) -> dict[str, float | None]:
    """What a run asked of the machine, over all its workers: its CPU (% of one core,
    summed; and of the machine), host memory (summed RSS, MiB), and over the accelerators it used
    their utilisation, memory (MiB), PCIe and NVLink traffic (MB/s) — None where the machine has no
    such thing or the record is older than the measure."""
    out: dict[str, float | None] = {}
    for name, (columns, stat, scale) in SYSTEM.items():
        value = next((v for v in (number(resources, c, stat) for c in columns) if v is not None), None)
        out[name] = None if value is None else value / scale
    return out


@dataclass
class Collected:
    """The workload documents found, and what was left out, each with its file and why."""
    docs: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def none_found(self, where: str) -> DawnbenchError:
        """The error when nothing usable was found: what was left out says why."""
        why = (" Left out: " + "; ".join(self.notes[:5]) + (f"; and {len(self.notes) - 5} more." if
                                                               len(self.notes) > 5 else ".")) if self.notes else ""
        return DawnbenchError(f"{where}: no usable profile or kernel result found.{why} Pass the output of "
                              "`dawnbench kernels` or `dawnbench profile`.")


def collect(paths: Sequence[str | Path], per_problem: bool = False) -> Collected:
    """Every run, profile and kernel workload under ``paths`` (see the module docstring), each read
    through :mod:`~dawnbench.records.documents`. A file named on the command line that is not a sound
    document of its kind is an error; one found in a folder is left out with a note."""
    found = Collected()
    for root in map(Path, paths):
        if not root.exists() and not root.is_symlink():
            raise DawnbenchError(f"{root}: no such file or directory. Pass folders of runs (`dawnbench run`), "
                                 "profiles (`dawnbench profile`) or kernel results (`dawnbench kernels`).")
        named = not root.is_dir()
        candidates = [root] if named else [f for f in walk_foreign(root) if f.name in NAMES]
        for path in candidates:
            try:
                docs, notes = _read(path)
            except DawnbenchError as err:
                if named:
                    raise
                found.notes.append(f"{err} (left out)")
                continue
            found.notes += notes
            for doc in docs:
                found.docs += kernel_workloads(doc, per_problem) if doc.get("kind") == "dawnbench-kernels" \
                    else [{**_named(doc), "_path": str(path)}]
    return found


def _read(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The document in ``path``, by its name, checked (no document, and a note, where it cannot be true)."""
    if path.name == "kernels.json":
        doc, notes = documents.kernels(read_json(path, "kernel result"), path)
        return [doc], notes
    if path.name == "summary.json":
        doc, notes = documents.profile(read_json(path, "profile"), path)
    else:
        doc, notes = documents.run(read_json(path, "run record"), path)
    return ([doc] if doc is not None else []), notes


def _named(doc: dict[str, Any]) -> dict[str, Any]:
    batch = number(doc, "hparams", "batch_size") or (number(doc, "batch_size") if "step" in doc else None)
    samples_per_s, window_s, steps = number(doc, "samples_per_s"), number(doc, "window_s"), number(doc, "steps")
    if batch is None and samples_per_s and window_s and steps:
        batch = round(samples_per_s * window_s / steps)
    # profile --emulated: the emulation's rates, never pooled with the native format's
    precision = labelled(doc.get("precision") if isinstance(doc.get("precision"), str) else "fp32", doc.get("emulated"))
    doc["_config"] = f"{doc['task']}/{doc.get('entry')}/{precision}/bs{batch if batch is None else int(batch)}"
    workers = number(doc, "distributed", "world_size")
    if workers and workers > 1:  # 1, 2 and 4 workers ask different things of the machine: three workloads
        doc["_config"] += f"/w{int(workers)}"
    if isinstance(doc.get("variant"), str):  # e.g. a profile's --without window: another network
        doc["_config"] += f" {doc['variant']}"
    doc["_kind"] = "profile" if "window_s" in doc else "run"
    return doc


def _measured(row: Any) -> bool:
    return (isinstance(row, dict) and not row.get("skipped") and isinstance(row.get("suite"), str)
            and all(isinstance(row.get(k), (int, float)) and not isinstance(row.get(k), bool)
                    for k in ("median_s", "flops", "bytes")) and row["median_s"] > 0)


def kernel_workloads(doc: dict[str, Any], per_problem: bool = False) -> list[dict[str, Any]]:
    """A kernel result as workload documents: one per suite and precision, or one per measured row."""
    rows = [r for r in doc["rows"] if _measured(r)]
    ridge = {p: v for p, v in ((doc.get("roofs") or {}).get("ridge_flop_per_byte") or {}).items()
             if isinstance(v, (int, float))}
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        name = f"kernels/{row['suite']}/{row.get('precision')}"
        if per_problem:
            params = ",".join(f"{k}={v}" for k, v in sorted((row.get("params") or {}).items()))
            name += f"/{row.get('pass')}/{params}"
        groups.setdefault(name, []).append(row)
    out = []
    for name, group in groups.items():
        suite, precision = group[0]["suite"], group[0].get("precision")
        seconds = sum(r["median_s"] for r in group)
        flops, moved = sum(r["flops"] for r in group), sum(r["bytes"] for r in group)
        bound = sum(r["median_s"] for r in group if precision in ridge and moved and r["bytes"]
                    and r["flops"] / r["bytes"] < ridge[precision])
        out.append({"task": "kernels", "entry": suite, "precision": precision, "_config": name, "_kind": "kernels",
                    "suite": suite, "problems": len(group),
                    "step": {"time_s": seconds, "flops": flops, "bytes": moved,
                             "intensity": flops / moved if moved else None, "flops_per_s": flops / seconds},
                    "memory_bound_share": bound / seconds if precision in ridge else None,
                    "resources": (doc.get("resources") or {}).get(suite), "roofs": doc.get("roofs"),
                    "rows": group})
    return out
