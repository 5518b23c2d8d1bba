"""What dawnbench.track() costs a plain training loop, accounted as the harness's own cost is (issue 53).

    python benchmarks/tracker_cost.py [--runs 5]

Runs examples/your-own-script/plain_loop.py — a plain PyTorch loop on MNIST with the tracker's three lines,
scored by the harness — to MNIST's target, one process per run, seeds 0, 1, …, one after another. Each run's
``result.json`` holds ``harness`` (harness/cost.py): the CPU seconds of the tracker's threads (the resource
sampler) and the wall seconds the training thread spends in tracker code while the clock runs (the optimizer-step
hook, each timed stretch's edges), each over the timed seconds — read from the operating system's counters, not
inferred from pairs of runs with and without it. Stored per run with the median and the largest; the largest is judged against
``tracker_cost.share`` in ``targets.json``.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from dawnbench.records.record import RunResult, read_result

import bench
import targets

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "your-own-script" / "plain_loop.py"


def main() -> None:
    parser = bench.parser(__doc__)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="dawnbench-tracker-cost-") as tmp:
        for seed in range(args.runs):
            out = Path(tmp) / f"seed{seed}"
            subprocess.run([sys.executable, str(SCRIPT), "--out", str(out), "--seed", str(seed)], check=True)
            [folder] = [p.parent for p in out.glob("*/result.json")]
            r = RunResult.from_dict(read_result(folder))
            rows.append({"seed": seed, "status": str(r.status), "timed_s": r.timed_s,
                         "time_to_accuracy_s": r.time_to_accuracy_s, "evals": len(r.evals),
                         "flagged": bool((r.resources or {}).get("interference")),
                         **{k: r.harness[k] for k in ("threads_share", "main_share", "share")}})
            print(f"seed {seed}: {r.status}, timed {r.timed_s:.1f} s, tracker {100 * r.harness['share']:.3f} %",
                  flush=True)
    shares = [row["share"] for row in rows]
    figures = {"script": str(SCRIPT.relative_to(ROOT)), "runs": rows,
               "share_median": statistics.median(shares), "share_max": max(shares),
               "threads_share_median": statistics.median(row["threads_share"] for row in rows),
               "main_share_median": statistics.median(row["main_share"] for row in rows),
               **targets.judged("tracker_cost.share", max(shares))}
    print(f"tracker's share of the timed interval: median {100 * figures['share_median']:.3f} %, largest "
          f"{100 * figures['share_max']:.3f} % (target {figures['bound']}: {figures['verdict']})")
    bench.store(args, "tracker_cost", figures)


if __name__ == "__main__":
    main()
