"""Load while a tool measures, and roofs against the machine's last (profiling/load.py)."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil

from dawnbench.profiling.load import Load, against_last, watched

ROOFS = {"device": "cpu", "flops": {"fp32": 191e9}, "bandwidth_bytes_per_s": 20e9}


def test_a_roof_far_from_the_machines_last_is_said_and_a_disturbed_one_never_becomes_the_last(tmp_path, monkeypatch):
    monkeypatch.setenv("DAWNBENCH_DATA", str(tmp_path))
    assert against_last(ROOFS, Load()) == []                          # the first measurement: nothing to compare
    busy = Load(summary={"interference": "other processes took 9 CPU-s"})
    low = {**ROOFS, "flops": {"fp32": 20.7e9}}
    [note] = against_last(low, busy)
    assert "fp32 roof measured 20.7 GFLOP/s, 89% below" in note and "191 GFLOP/s" in note
    [again] = against_last(low, Load())                               # the busy one was not stored: still 191
    assert "191 GFLOP/s" in again
    assert against_last({**ROOFS, "flops": {"fp32": 25e9}}, Load()) == []   # within 30 % of the last (20.7)


def test_other_processes_taking_every_core_are_flagged():
    # (whether an idle block is flagged depends on what else this machine runs: not tested.) One busy process
    # per core, started so that they are not this process's children (a shell that exits at once leaves them to
    # init): they are "other processes", as another user's job would be
    cores = psutil.cpu_count() or 1
    spin = "import time\nend = time.time() + 2.5\nwhile time.time() < end: pass"
    script = " ".join(f"{sys.executable} -c '{spin}' &" for _ in range(cores))
    subprocess.run(["sh", "-c", script], check=True)
    time.sleep(0.3)                     # they are spinning
    with watched("a busy second") as busy:
        time.sleep(1.5)
    assert "interference" in busy.summary and "a busy second" in busy.notes[0], busy.summary
