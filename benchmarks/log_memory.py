"""How much memory ``dawnbench analyze`` takes for one large MLPerf log (issue 83: a 233 MB log of 1 M records with
26 metadata keys took 3.4 GB, 14× the file; the outsider's second attack, 850,000 short evaluations in 117 MB, 7.1×).
Three logs are generated — records no reading keeps (26 metadata keys each), evaluations with those keys (each
kept), and short evaluations, as many as an MLPerf log may hold records — and ``analyze`` is run on each as a user
runs it, a fresh process, its peak resident memory read from the kernel (``getrusage`` of the child). The figure: the
peak over the file's size, the process's own start included (target ``log_memory.ratio``).

    python benchmarks/log_memory.py            # about a minute on 2 cores; stores docs/results/data/log_memory-*.json
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bench
import targets

RECORDS = {"metadata": 400_000, "evaluations": 400_000,   # ~250 MB with 26 metadata keys: under the 256 MiB limit
           "short evaluations": 850_000}                  # the outsider's: ~115 MB of the records a reading keeps


def _line(key: str, time_ms: float, value: object, metadata: dict) -> str:
    return ":::MLLOG " + json.dumps({"namespace": "", "time_ms": time_ms, "event_type": "POINT_IN_TIME", "key": key,
                                     "value": value, "metadata": metadata}) + "\n"


def write_log(path: Path, kind: str) -> None:
    """A log of one run: run_start, ``RECORDS[kind]`` records (``kind``: "metadata", untouched by a reading;
    "evaluations", each kept, with 26 metadata keys; "short evaluations", each kept, with only its epoch and
    samples), run_stop — a run that did not reach its target."""
    meta = {f"key_{i}": "value" for i in range(26)} if kind != "short evaluations" else {}
    with path.open("w") as f:
        f.write(_line("run_start", 1_000, None, meta))
        for i in range(RECORDS[kind]):
            if kind == "metadata":
                f.write(_line("tracked_stats", 1_000 + i, {"step": i}, meta))
            else:
                f.write(_line("eval_accuracy", 1_000 + 1_000 * (i + 1), 50.0,      # an epoch a second
                              {**meta, "epoch_num": i + 1, "samples_count": 60_000 * (i + 1)}))
        f.write(_line("run_stop", 2_000 + 1_000 * RECORDS[kind], None, {**meta, "status": "aborted"}))


def peak_of(args: list[str]) -> tuple[float, float]:
    """Peak resident bytes of the child running ``args``, and its wall seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} exited {done.returncode}: {done.stderr[-2000:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if peak <= before:
        raise RuntimeError("the child's peak is not above an earlier child's: run the kinds in separate processes")
    return peak * 1024.0, time.perf_counter() - start


def main() -> None:
    kind = sys.argv[1] if len(sys.argv) > 1 else None
    if kind is None:    # each kind in a process of its own: RUSAGE_CHILDREN keeps the largest child's peak
        rows = [json.loads(subprocess.run([sys.executable, __file__, k], check=True, capture_output=True, text=True,
                                          timeout=1200).stdout.splitlines()[-1]) for k in RECORDS]
        worst = max(r["ratio"] for r in rows)
        for r in rows:
            print(f"{r['kind']:<18} {r['log_bytes'] / 1e6:,.0f} MB log: peak {r['peak_bytes'] / 1e6:,.0f} MB "
                  f"({r['ratio']:.2f}×) in {r['seconds']:.1f} s")
        bench.write("log_memory", {"logs": rows, "worst_ratio": worst, **targets.judged("log_memory.ratio", worst)})
        return
    with tempfile.TemporaryDirectory(prefix="dawnbench-log-memory-") as tmp:
        log = Path(tmp) / "g" / "result_0.txt"
        log.parent.mkdir()
        write_log(log, kind)
        peak, seconds = peak_of([sys.executable, "-m", "dawnbench", "analyze", str(log.parent.parent), "--json"])
        size = log.stat().st_size
        print(json.dumps({"kind": kind, "records": RECORDS[kind], "log_bytes": size, "peak_bytes": peak,
                          "ratio": peak / size, "seconds": seconds}))


if __name__ == "__main__":
    main()
