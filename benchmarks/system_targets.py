"""What a workload asks of the whole machine (issue "System-level characterisation"), one sitting.

    python benchmarks/system_targets.py [--pairs 5] [--parts monitor,workers,scale,jobs]

1. **Monitor cost**: ``dawnbench run mnist --nproc 2 --max-epochs 1`` (2 gloo workers), in pairs —
   sampling every 0.5 s over every worker, and sampling off (one sample an hour) — alternating;
   the median over the pairs of (time per epoch sampled / time per epoch unsampled) − 1, judged with
   the pairs' spread against ``system_targets.monitor_cost`` in ``targets.json``.
2. **Host memory and CPU over all workers**: a 2-worker run of ``tests/holding_entry.py`` (each
   worker holds 256 MiB and reads through a DataLoader worker process), pinned to two cores
   (``taskset -c 0,1``). Beside it this script reads ``/proc`` itself every 0.25 s — the run's
   workers and their children, found through ``/proc/*/stat``'s parent ids — for their summed
   resident memory (``statm``) and CPU time (``utime + stime`` and the reaped children's). Then:
   the run's ``run_rss_bytes`` peak against the peak of the script's sum (``system_targets.host_memory``),
   and the run's CPU % over its timed stretch (samples timing ≥ 95 % of their interval) against
   the script's CPU seconds per second over the middle half of the workers' life (``system_targets.cpu``).
3. ``dawnbench scale mnist --workers 1,2`` and ``dawnbench jobs mnist --slots 2``, every column,
   stored whole for docs/results/system.md; their figures copied to ``docs/img/``.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import bench
import targets

ROOT = Path(__file__).resolve().parents[1]
IMG = ROOT / "docs" / "img"
PAGE = os.sysconf("SC_PAGE_SIZE")
TICK = os.sysconf("SC_CLK_TCK")


def run_json(*args: str, prefix: list[str] | None = None) -> dict:
    proc = subprocess.run([*(prefix or []), sys.executable, "-m", "dawnbench", *args, "--json"], capture_output=True,
                          text=True)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"dawnbench {' '.join(args)}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def monitor_cost(pairs: int, out: Path) -> dict:
    ratios, times = [], []
    for i in range(pairs):
        pair = {}
        for label, interval in (("sampled", "0.5"), ("unsampled", "3600")) if i % 2 == 0 else \
                (("unsampled", "3600"), ("sampled", "0.5")):
            doc = run_json("run", "mnist", "--nproc", "2", "--max-epochs", "1", "--target", "100",
                           "--resource-interval", interval, "--out", str(out / f"{label}-{i}"))
            pair[label] = doc["runs"][0]["distributed"]["time_per_epoch_s"]
        times.append(pair)
        ratios.append(pair["sampled"] / pair["unsampled"])
        print(f"pair {i}: sampled {pair['sampled']:.3f} s/epoch, unsampled {pair['unsampled']:.3f}", flush=True)
    cost = statistics.median(ratios) - 1
    return {"pairs": times, "ratios": ratios, "median_cost": cost,
            **targets.judged("system_targets.monitor_cost", cost, min(ratios) - 1, max(ratios) - 1)}


def _stat(pid: int) -> tuple[int, float, float] | None:
    """(parent, CPU seconds with reaped children, resident bytes) of a process, from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        rss = int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return None
    ppid, utime, stime, cutime, cstime = int(fields[1]), *(int(fields[i]) for i in (11, 12, 13, 14))
    return ppid, (utime + stime + cutime + cstime) / TICK, float(rss)


def _descendants(root: int) -> dict[int, tuple[float, float]]:
    """Every process below ``root`` (not root itself): pid -> (CPU seconds, resident bytes)."""
    table = {int(p.name): s for p in Path("/proc").iterdir() if p.name.isdigit() and (s := _stat(int(p.name)))}
    below, frontier = {}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, cpu, rss) in table.items():
            if ppid == parent and pid not in below:
                below[pid] = (cpu, rss)
                frontier.append(pid)
    return below


def workers_measured(out: Path) -> dict:
    """The holding entry on 2 workers, with /proc read beside it."""
    cmd = ["taskset", "-c", "0,1", sys.executable, "-m", "dawnbench", "run", "mnist", "--entry",
           str(ROOT / "tests" / "holding_entry.py"), "--nproc", "2", "--target", "100", "--set", "seconds=12",
           "--resource-interval", "0.5", "--out", str(out), "--json"]
    launcher = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    samples, done = [], threading.Event()

    def sample() -> None:
        last: dict[int, float] = {}
        while not done.is_set():
            found = _descendants(launcher.pid)
            workers = [pid for pid in found if _stat(pid) and _stat(pid)[0] == launcher.pid]
            for pid, (cpu, _) in found.items():
                if pid in workers:  # a worker's own CPU and its reaped loaders'; live loaders are added below
                    last[pid] = cpu
            live_children = sum(cpu for pid, (cpu, _) in found.items() if pid not in workers)
            samples.append((time.monotonic(), len(workers), sum(last.values()) + live_children,
                            sum(rss for _, rss in found.values())))
            time.sleep(0.25)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    stdout, _ = launcher.communicate()
    done.set()
    thread.join()
    result = json.loads(stdout)["runs"][0]
    lines = (Path(result["run_dir"]) / "resources.tsv").read_text().splitlines()
    header = lines[0].split("\t")
    rows = [{k: float(v) if v else float("nan") for k, v in zip(header, line.split("\t"))} for line in lines[1:]]
    timed = [r["proc_cpu_pct"] for r in rows if r["timed_frac"] >= 0.95]
    alive = [s for s in samples if s[1] == 2]
    middle = alive[len(alive) // 4: 3 * len(alive) // 4]
    script_cpu = 100 * (middle[-1][2] - middle[0][2]) / (middle[-1][0] - middle[0][0])
    run_cpu = statistics.median(timed)
    script_rss = max(s[3] for s in samples)
    run_rss = result["resources"]["run_rss_bytes"]["max"]
    return {"cpu": {"run_pct": run_cpu, "proc_pct": script_cpu, "ratio": run_cpu / script_cpu,
                    **targets.judged("system_targets.cpu", run_cpu / script_cpu)},
            "host_memory": {"run_rss_max_bytes": run_rss, "proc_rss_max_bytes": script_rss,
                            "ratio": run_rss / script_rss, **targets.judged("system_targets.host_memory", run_rss / script_rss)},
            "samples": len(samples), "run_rows": len(rows), "resources": result["resources"]}


def _run_load(run_dir: Path) -> dict:
    record = json.loads((run_dir / "result.json").read_text())
    res = record["resources"]
    return {"entry": record["entry"], "seed": record["seed"], "sampled_s": res.get("sampled_s"),
            "cpu_pct_mean": (res.get("proc_cpu_pct") or {}).get("mean"), "tta_s": record.get("time_to_accuracy_s")}


def replot(figures: dict) -> int:
    """The two figures as ``scale`` and ``jobs`` draw them, from their stored documents."""
    from dawnbench.cli.figures import jobs_figure, scale_resources_figure

    with tempfile.TemporaryDirectory(prefix="dawnbench-system-replot-") as tmp:
        if "scale" in figures:
            shutil.copy(scale_resources_figure(figures["scale"], Path(tmp)), IMG / "system-scale-mnist.png")
        if "jobs" in figures:
            shutil.copy(jobs_figure(figures["jobs"], Path(tmp)), IMG / "system-jobs-mnist.png")
    return 0


def main() -> int:
    parser = bench.parser(__doc__, replot=True)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--parts", default="monitor,workers,scale,jobs",
                        help="which of the measurements to make (a later sitting can redo one; the page cites each "
                             "part's file)")
    args = parser.parse_args()
    if args.replot:
        return replot(bench.stored(args.replot)["figures"])
    parts = set(args.parts.split(","))
    figures: dict = {}
    with tempfile.TemporaryDirectory(prefix="dawnbench-system-") as tmp:
        tmp_path = Path(tmp)
        if "monitor" in parts:
            figures["monitor_cost"] = monitor_cost(args.pairs, tmp_path / "cost")
            print("monitor cost:", figures["monitor_cost"]["median_cost"], flush=True)
        if "workers" in parts:
            figures["all_workers"] = workers_measured(tmp_path / "holding")
            print("all workers:", {k: figures["all_workers"][k] for k in ("cpu", "host_memory")}, flush=True)
        if "scale" in parts:
            scale = run_json("scale", "mnist", "--workers", "1,2", "--runs", "3", "--out", str(tmp_path / "scale"))
            shutil.copy(tmp_path / "scale" / "scale-resources.png", IMG / "system-scale-mnist.png")
            figures["scale"] = {k: v for k, v in scale.items() if "figure" not in k}
        if "jobs" in parts:
            jobs = run_json("jobs", "mnist", "--slots", "2", "--out", str(tmp_path / "jobs"))
            shutil.copy(tmp_path / "jobs" / "jobs.png", IMG / "system-jobs-mnist.png")
            figures["jobs"] = {k: v for k, v in jobs.items() if k != "figure"}
            # each run's own length and mean CPU: what the type's time-weighted load is made of
            figures["jobs_runs"] = [{"type": row["type"], "run_dir": d, **_run_load(Path(d))}
                                    for row in jobs["rows"] for d in row["run_dirs"]]
    bench.store(args, "system_targets", figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
