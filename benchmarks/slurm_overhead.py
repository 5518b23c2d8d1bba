"""What a Slurm job costs a run (SPEC §18, §21): submission to start, on a real single-node cluster.

    python benchmarks/slurm_overhead.py [--runs 4] [--max-epochs 1]      # as root (it starts Slurm)

Starts the tests' single-node cluster (``tests/slurm_cluster.py``: Debian's slurm-wlm and munge),
then, one after the other on this machine:

1. ``dawnbench run mnist --runs N --max-epochs E`` locally, and
2. the same with ``--executor slurm`` (one array of N jobs).

Per job it reports, from the batch's manifest (when submission began), Slurm's own record
(SubmitTime, StartTime: whole seconds) and the run's ``events.log`` (milliseconds):
``scheduler_wait_s`` (StartTime − SubmitTime), ``to_first_log_line_s`` (submission → the run's
first log line: the scheduler, submitit's bootstrap, a fresh Python importing torch) — beside the
local runs' own start (process start → first log line) so the difference is what Slurm adds.
The whole batch's wall time both ways is stored too; on 2 cores the jobs share the CPUs, so
that comparison says little about speed and is not one.
"""

from __future__ import annotations

import datetime as dt
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bench  # first: it puts tests/ on the path, whose cluster is reused as is
from slurm_cluster import SlurmCluster


def first_log_ms(run_dir: Path) -> int:
    return json.loads((run_dir / "events.log").read_text().splitlines()[0].split(":::MLLOG ", 1)[1])["time_ms"]


def slurm_times(job: str, env: dict) -> tuple[float, float]:
    """Unix seconds of the job's SubmitTime and StartTime, from scontrol (local time, whole seconds)."""
    text = subprocess.run(["scontrol", "-o", "show", "job", job], capture_output=True, text=True, env=env,
                          check=True).stdout
    fields = dict(item.split("=", 1) for item in text.split() if "=" in item)
    return tuple(dt.datetime.fromisoformat(fields[k]).timestamp() for k in ("SubmitTime", "StartTime"))


def main() -> int:
    parser = bench.parser(__doc__)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--max-epochs", default="1")   # MNIST reaches 99 % within it: TTA statistics
    args = parser.parse_args()
    base = [sys.executable, "-m", "dawnbench", "run", "mnist", "--runs", str(args.runs), "--max-epochs",
            args.max_epochs, "--json"]
    with tempfile.TemporaryDirectory(prefix="dawnbench-slurm-overhead-") as tmp, \
            SlurmCluster(Path(tmp) / "cluster") as cluster:
        local_out, slurm_out = Path(tmp) / "local", Path(tmp) / "slurm"
        figures: dict = {"runs": args.runs, "max_epochs": float(args.max_epochs), "cpus": cluster_cpus(cluster)}
        for name, out, extra in (("local", local_out, []), ("slurm", slurm_out, ["--executor", "slurm"])):
            print(f"{name}: {args.runs} runs …", flush=True)
            started = time.time()
            proc = subprocess.run([*base, *extra, "--out", str(out)], capture_output=True, text=True, env=cluster.env)
            wall = time.time() - started
            doc = json.loads(proc.stdout)
            figures[name] = {"command": [*base[2:], *extra], "exit": proc.returncode, "batch_wall_s": wall,
                             "statuses": [r["status"] for r in doc["runs"]],
                             "summary": doc["summary"]}
            if name == "local":
                # each local run starts inside the one process: its start is that process's first log line
                figures[name]["process_to_first_log_line_s"] = min(first_log_ms(Path(r["run_dir"]))
                                                                   for r in doc["runs"]) / 1000 - started
        manifest = json.loads((slurm_out / ".slurm" / "batch.json").read_text())
        jobs = []
        for run in manifest["runs"].values():
            [run_dir] = [d for d in Path(run["out"]).iterdir() if (d / "result.json").is_file()]
            submit, start = slurm_times(run["job_id"], cluster.env)
            jobs.append({"job_id": run["job_id"], "scheduler_wait_s": start - submit,
                         "to_first_log_line_s": first_log_ms(run_dir) / 1000 - run["submitted_unix_s"]})
        figures["slurm"]["jobs"] = jobs
        for key in ("scheduler_wait_s", "to_first_log_line_s"):
            figures["slurm"][f"median_{key}"] = statistics.median(j[key] for j in jobs)
        figures["slurm"]["first_job_to_first_log_line_s"] = min(j["to_first_log_line_s"] for j in jobs)
        figures["same_summary_fields"] = set(figures["local"]["summary"]) == set(figures["slurm"]["summary"])
    print(json.dumps({k: v for k, v in figures.items()}, indent=1))
    bench.store(args, "slurm_overhead", figures)
    return 0


def cluster_cpus(cluster: SlurmCluster) -> int:
    out = subprocess.run(["sinfo", "-h", "-o", "%c"], capture_output=True, text=True, env=cluster.env).stdout
    return int(out.split()[0])


if __name__ == "__main__":
    sys.exit(main())
