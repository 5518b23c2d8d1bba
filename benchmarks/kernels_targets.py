"""The targets of the kernel suites (issue "DeepBench's kernels beside the applications"), one sitting.

    python benchmarks/kernels_targets.py

Each figure is judged against its entry of ``targets.json`` (``kernels_targets.*``), named below.

1. ``dawnbench kernels --quick`` — every suite — as a user runs it (a fresh process): its wall
   time (``quick_wall``) and whether every planned row is present or skipped with a reason (``quick_rows``).
2. Timing agreement: a GEMM 4096³, a 3×3 convolution of the training set (240×24, 16 → 32
   channels, batch 16) and an LSTM of 512 units (batch 16, 25 steps), forward, fp32 — the
   kernels' row against a bare ``torch.utils.benchmark`` measurement of the same call
   (``Timer.blocked_autorange``), five pairs interleaved; the median of the five ratios, with their
   spread (``agreement``).
3. The largest training-set GEMM (8448 × 48000 × 2816, fp32, and bf16 where this CPU has a bf16 fast path: an
   emulated bf16 roof says nothing of the kernels): its fraction of ``dawnbench machine``'s roof of that precision
   (``largest_gemm``).
4. All-reduce on 2 gloo ranks: the quick run's bus bandwidth at its three sizes, and the
   largest against a bare ``torch.distributed.all_reduce`` loop this script times itself
   (two processes, ``torch.multiprocessing``; ``allreduce``).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.utils import benchmark

from dawnbench.kernels import run
from dawnbench.kernels.passes import statement
from dawnbench.profiling.roofs import measure_roofs
from dawnbench.records.problems import Problem

import bench
import targets

CPU = torch.device("cpu")
PRECISIONS = bench.cpu_precisions()
AGREEMENT = {
    "gemm 4096³": Problem("gemm", "training", {"m": 4096, "n": 4096, "k": 4096, "a_transposed": False,
                                               "b_transposed": False}),
    "conv 3×3": Problem("conv", "training", {"w": 240, "h": 24, "c": 16, "n": 16, "k": 32, "filter_w": 3,
                                             "filter_h": 3, "pad_w": 1, "pad_h": 1, "stride_w": 1, "stride_h": 1}),
    "lstm 512": Problem("rnn", "training", {"hidden": 512, "batch": 16, "timesteps": 25, "cell": "lstm"}),
}
LARGEST = Problem("gemm", "training", {"m": 8448, "n": 48000, "k": 2816, "a_transposed": True, "b_transposed": False})


def quick_run(out: Path) -> dict:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "dawnbench", "kernels", "--quick", "--out", str(out), "--json"],
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    doc = json.loads(proc.stdout)
    rows = doc["rows"]
    unexplained = [r for r in rows if not r.get("skipped") and not isinstance(r.get("median_s"), float)]
    return {"exit": proc.returncode, "wall_s": wall, "rows": len(rows),
            "measured": sum(not r.get("skipped") for r in rows), "skipped": sum(bool(r.get("skipped")) for r in rows),
            "rows_without_time_or_reason": len(unexplained),
            "targets": [targets.judged("kernels_targets.quick_wall", wall),
                        targets.judged("kernels_targets.quick_rows", 1 - len(unexplained) / len(rows))],
            "allreduce": [{k: r.get(k) for k in ("params", "median_s", "algbw_gbps", "busbw_gbps", "world_size")}
                          for r in rows if r["suite"] == "allreduce"], "document": doc}


def agreement(roofs) -> dict:
    out = {}
    for name, problem in AGREEMENT.items():
        fn = statement(problem, "forward", "fp32", CPU)
        ratios, ours, bare = [], [], []
        for _ in range(5):
            row = run.measure_row(run.Planned(problem, "forward", "fp32"), CPU, roofs, max_s=30.0)
            timer = benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=torch.get_num_threads())
            reference = timer.blocked_autorange(min_run_time=1.0).median
            ours.append(row["median_s"])
            bare.append(reference)
            ratios.append(row["median_s"] / reference)
        median = statistics.median(ratios)
        out[name] = {"kernels_s": ours, "bare_s": bare, "ratios": ratios, "median_ratio": median,
                     **targets.judged("kernels_targets.agreement", median, min(ratios), max(ratios))}
        print(f"{name}: kernels / bare = {median:.3f} ({', '.join(f'{r:.3f}' for r in ratios)})", flush=True)
    return out


def largest(roofs) -> dict:
    out = {}
    for precision in PRECISIONS:
        row = run.measure_row(run.Planned(LARGEST, "forward", precision), CPU, roofs, max_s=120.0)
        # measure_row times the row; its fraction of the roof is the document's to set (Document.add), so here
        fraction = row["gflops"] * 1e9 / roofs.flops[precision] if row.get("gflops") else None
        out[precision] = {"gflops": row.get("gflops"), "roof_gflops": roofs.flops[precision] / 1e9,
                          "fraction_of_roof": fraction, "repeats": row.get("repeats"), "skipped": row.get("skipped"),
                          "roof_error": row.get("roof_error"), **targets.judged("kernels_targets.largest_gemm", fraction)}
        print(f"largest GEMM {precision}: {row.get('gflops')} GFLOP/s, {fraction} of the roof", flush=True)
    return out


def _bare_worker(rank: int, floats: int, port: int, result: dict) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    buffer = torch.zeros(floats)
    for _ in range(3):
        dist.all_reduce(buffer)
    times = []
    for _ in range(5):
        dist.barrier()
        start = time.perf_counter()
        for _ in range(5):
            dist.all_reduce(buffer)
        times.append((time.perf_counter() - start) / 5)
    if rank == 0:
        result["seconds"] = statistics.median(times)
    dist.destroy_process_group()


def bare_allreduce(floats: int) -> float:
    with mp.Manager() as manager:
        result = manager.dict()
        mp.spawn(_bare_worker, args=(floats, 29500 + os.getpid() % 1000, result), nprocs=2)
        return float(result["seconds"])


def main() -> int:
    figures: dict = {}
    with tempfile.TemporaryDirectory(prefix="dawnbench-kernels-") as tmp:
        figures["quick"] = quick_run(Path(tmp) / "quick")
    print(f"quick: {figures['quick']['wall_s']:.0f} s, {figures['quick']['measured']} rows measured, "
          f"{figures['quick']['skipped']} skipped", flush=True)
    roofs = measure_roofs(CPU, precisions=PRECISIONS)
    figures["roofs"] = roofs.to_dict()
    figures["agreement"] = agreement(roofs)
    figures["largest_gemm"] = largest(roofs)
    rows = figures["quick"]["allreduce"]
    biggest = max(rows, key=lambda r: r["params"]["floats"])
    bare_s = bare_allreduce(biggest["params"]["floats"])
    bare_busbw = biggest["params"]["floats"] * 4 / bare_s / 1e9 * 2 * (2 - 1) / 2
    figures["allreduce"] = {"sizes": rows, "largest_floats": biggest["params"]["floats"],
                            "kernels_busbw_gbps": biggest["busbw_gbps"], "bare_busbw_gbps": bare_busbw,
                            "ratio": biggest["busbw_gbps"] / bare_busbw,
                            **targets.judged("kernels_targets.allreduce", biggest["busbw_gbps"] / bare_busbw)}
    print(f"all-reduce {biggest['params']['floats']} floats: kernels {biggest['busbw_gbps']:.2f} GB/s bus, "
          f"bare loop {bare_busbw:.2f}", flush=True)
    bench.write("kernels_targets", figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
