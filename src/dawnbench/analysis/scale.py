"""The scale table: how time per epoch and time-to-accuracy scale with workers.

    dawnbench scale mnist --workers 1,2 --runs 3     (launched by dawnbench.experiments.scale)

For each worker count, ``dawnbench run --nproc W`` is launched (torchrun, DDP), R seeds
in a row, and the table reports per count the medians over runs of

* time per epoch (timed seconds / epochs, to the last evaluation), epochs to target, TTA;
* speedup of each against the smallest count (one worker, normally) and scaling
  efficiency = speedup / workers × baseline workers;
* communication overhead: exposed gradient communication / time per epoch, from the
  run's own DDP hook (:mod:`dawnbench.distributed.comm`);
* accounted: (slowest worker's own compute + exposed communication) / time per epoch;
* what the run asked of the machine over all its workers (SPEC §20, the MLPerf
  characterisation's Table 6; :func:`~dawnbench.analysis.workloads.system_measures`): CPU
  (% of one core, summed: ``cpu_util_pct``; of the machine: ``cpu_machine_pct``), host memory
  (summed RSS: ``host_mem_mib``), accelerator utilisation and memory summed over the devices
  (``accel_util_pct``, ``accel_mem_mib``), PCIe and NVLink traffic (``pcie_mbps``,
  ``nvlink_mbps``; MB/s) — None where the machine has no such thing — and the machine's busy
  share while the monitor sampled (``machine_busy_pct``).

``scale.json`` is also what ``dawnbench schedule`` reads: a job's TTA per worker count.
Every count runs with the same ``run`` options, and every worker with the same number of
CPU threads at every count — the cores / the largest count, unless told — so that on a
CPU a worker is what an accelerator is on a GPU machine, and a speedup measures what
adding workers (hardware) buys, not how threads compare with processes. Under weak
scaling (the default) the global batch grows with the workers, so epochs to target
may change too — which is exactly why TTA can scale worse than time per epoch.
"""

from __future__ import annotations

import statistics as st
from typing import Any

from dawnbench.analysis.workloads import SYSTEM, number, system_measures
from dawnbench.records.record import RunResult
from dawnbench.statistics import RunSample


def _median(values: list[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return st.median(kept) if kept else None


def scale_row(workers: int, results: list[RunResult]) -> dict[str, Any]:
    samples = [RunSample.from_result(r) for r in results]
    reached = [s for s in samples if s.succeeded]
    dist = [r.distributed or {} for r in results]
    busy = [number(r.resources, "sys_cpu_pct", "mean") for r in results]
    cores = [number(r.resources, "cpu_count") for r in results]
    system = [system_measures(r.resources) for r in results]
    return {
        "workers": workers, "runs": len(results), "successes": len(reached),
        "statuses": [r.status for r in results],
        "global_batch_size": _median([d.get("global_batch_size") for d in dist]),
        "time_per_epoch_s": _median([s.time_per_epoch_s for s in samples]),
        "epochs_to_target": _median([s.epochs for s in reached]),
        "tta_s": _median([s.tta_s for s in reached]),
        "comm_overhead_pct": _median([d.get("comm_overhead_pct") for d in dist]),
        "accounted_pct": _median([d.get("accounted_pct") for d in dist]),
        **{name: _median([m[name] for m in system]) for name in SYSTEM},
        "machine_busy_pct": _median([c / n for c, n in zip(busy, cores) if c is not None and n]),
        "run_dirs": [r.run_dir for r in results],
    }


def add_speedups(rows: list[dict[str, Any]]) -> None:
    """Speedup and efficiency of every row against the first (the fewest workers)."""
    base = rows[0]
    for row in rows:
        ratio = row["workers"] / base["workers"]
        for key, name in (("time_per_epoch_s", "epoch"), ("tta_s", "tta")):
            speedup = (base[key] / row[key]) if base[key] and row[key] else None
            row[f"speedup_{name}"] = speedup
            row[f"efficiency_{name}"] = speedup / ratio if speedup is not None else None
