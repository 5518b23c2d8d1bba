"""The newcomer's ImageNet run, before and after (issue "dawnbench on the machine a newcomer has").

    python benchmarks/newcomer_imagenet.py --before 397b4e9

A generated ILSVRC tree in the official layout — 12 classes, 168 training and 48 validation
images — imported with ``--subset newcomer`` as a user would (256 images per shard: one short
shard), then ``dawnbench run imagenet --subset newcomer --max-epochs 1`` in a fresh process,
one after the other in one sitting:

* **after**: this checkout, default settings. Figures: the command's wall time, the memory
  plan (seconds, the batch it chose), ``init_s`` (warm-up), the epoch's timed seconds, the
  evaluation, peak resident memory, status.
* **before** (``--before COMMIT``, checked out in a temporary git worktree): the default
  settings are **not run** — their batch of 512 per rank needs about 25 GiB, the whole
  machine (the issue saw the kernel's OOM killer end it); the figure given for them is the
  after-checkout's memory estimate of that batch. Run instead: the issue's workaround
  ``--set batch_size=8`` (it stops after the warm-up: its whole shards cannot be dealt out),
  and the best a user could do without the change — the same tree imported with 16 images
  per shard, ``--set batch_size=8 --set workers=1`` — for an epoch time.

The target, ``newcomer_imagenet.epoch`` in ``targets.json``: the 168-image subset runs 1 epoch, with init, on 2 cores,
the whole command timed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bench
import targets

ROOT = Path(__file__).resolve().parents[1]


def dawnbench(src: Path, data_dir: Path, *args: str, timeout: float = 1800) -> tuple[int, dict | None, float, str]:
    """(exit code, the first run's result.json or None, wall seconds, stderr's last lines) of one command."""
    env = {**os.environ, "PYTHONPATH": str(src), "DAWNBENCH_DATA": str(data_dir)}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "dawnbench", *args], env=env, capture_output=True, text=True,
                          timeout=timeout)
    wall = time.perf_counter() - start
    try:
        run = json.loads(proc.stdout)["runs"][0] if "--json" in args else None
    except (json.JSONDecodeError, KeyError, IndexError):
        run = None
    return proc.returncode, run, wall, "\n".join(proc.stderr.strip().splitlines()[-3:])


def figures_of(code: int, run: dict | None, wall: float, err: str) -> dict:
    if run is None:
        return {"exit": code, "command_wall_s": round(wall, 1), "stderr": err}
    plan = run.get("memory_plan") or {}
    rss = ((run.get("resources") or {}).get("proc_rss_bytes") or {}).get("max")
    return {"exit": code, "status": run["status"], "error": run.get("error"), "command_wall_s": round(wall, 1),
            "memory_plan_s": plan.get("seconds"), "batch_size": run["hparams"].get("batch_size"),
            "loader_workers": run.get("loader_workers", run["hparams"].get("workers")),
            "init_s": run["init_s"], "epoch_timed_s": run["timed_s"], "eval_s": run["eval_s"],
            "init_plus_epoch_s": run["init_s"] + run["timed_s"],
            "evals": [(e["epoch"], e["value"]) for e in run["evals"]],
            "peak_rss_gib": round(rss / 2**30, 2) if rss else None}


def main() -> int:
    parser = bench.parser(__doc__)
    parser.add_argument("--before", required=True, help="the commit before the change")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dawnbench-newcomer-") as tmp:
        tmp_path = Path(tmp)
        tree = tmp_path / "ilsvrc"
        subprocess.run([sys.executable, "-m", "dawnbench.data.imagenet.generate", str(tree), "--classes", "12",
                        "--train", "14", "--val", "4"], check=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
        worktree = tmp_path / "before"
        subprocess.run(["git", "worktree", "add", "--detach", str(worktree), args.before], cwd=ROOT, check=True,
                       capture_output=True)
        try:
            trees = {"before": worktree / "src", "after": ROOT / "src"}
            out: dict = {"tree": {"classes": 12, "train": 168, "val": 48}}
            for label, src in trees.items():
                data_dir = tmp_path / f"data-{label}"
                for subset, shard in (("newcomer", "256"), ("newcomer16", "16")):
                    subprocess.run([sys.executable, "-m", "dawnbench", "data", "fetch", "imagenet", "--from", str(tree),
                                    "--subset", subset, "--shard-size", shard], check=True, capture_output=True,
                                   env={**os.environ, "PYTHONPATH": str(src), "DAWNBENCH_DATA": str(data_dir)})
            common = ["run", "imagenet", "--max-epochs", "1", "--json"]
            after_dir = tmp_path / "data-after"
            out["after"] = {"defaults": figures_of(*dawnbench(trees["after"], after_dir, *common, "--subset",
                                                              "newcomer", "--out", str(tmp_path / "r-after")))}
            print("after, defaults:", out["after"]["defaults"], flush=True)
            before_dir = tmp_path / "data-before"
            out["before"] = {
                "defaults": {"run": False, "why": "batch 512 per rank on a CPU needs about 25 GiB (the whole machine): "
                                                  "the kernel's OOM killer ended it in the issue"},
                "batch_size=8": figures_of(*dawnbench(trees["before"], before_dir, *common, "--subset", "newcomer",
                                                      "--set", "batch_size=8", "--out", str(tmp_path / "r-b1"))),
                "batch_size=8 workers=1, 16-image shards": figures_of(*dawnbench(
                    trees["before"], before_dir, *common, "--subset", "newcomer16", "--set", "batch_size=8",
                    "--set", "workers=1", "--out", str(tmp_path / "r-b2"))),
            }
            print("before:", out["before"], flush=True)
            # What the default batch would have needed, by the after-checkout's plan (measured, not run).
            sys.path.insert(0, str(ROOT / "src"))
            os.environ["DAWNBENCH_DATA"] = str(after_dir)
            from dawnbench.harness.memory import plan_memory
            from dawnbench.harness.options import RunOptions, prepare

            options = RunOptions(task="imagenet", subset="newcomer", overrides={"batch_size": 512})
            plan = plan_memory(options, prepare(options))
            out["before"]["defaults"]["estimate_gib"] = round(plan.estimate_bytes["cpu"] / 2**30, 1)
            out["before"]["defaults"]["free_gib"] = round(plan.free_bytes["cpu"] / 2**30, 1)
            after = out["after"]["defaults"]
            # a command that wrote no run measured no epoch: its wall time is no figure of the target's
            out.update(targets.judged("newcomer_imagenet.epoch",
                                      after["command_wall_s"] if after.get("status") is not None else None))
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=ROOT, capture_output=True)
    print(json.dumps(out, indent=1))
    bench.store(args, "newcomer_imagenet", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
