"""The generalisation tables (SPEC §15): TTA-optimised entries against conventional references,
scored on the shifted suite.

    python benchmarks/generalization_tables.py [--tasks mnist,fashion-mnist,cifar10] [--seeds 3]
                                               [--before OLD_TREE] [--work DIR]

Trains each configuration with ``--continue`` (so both the model at the target and the
model at the end of its schedule are saved), then ``dawnbench generalize`` scores every
saved model on the scored split and the full shifted suite (ten families × severities
1–5). With ``--before OLD_TREE`` the same saved models are scored first by that
checkout's ``generalize`` too (``PYTHONPATH`` on its ``src``) — the suite before a change
and after it, on the very same models, in one sitting.

Configurations: MNIST — ``small-cnn`` (TTA-optimised) and ``mnist-standard`` (LeNet,
conventional); Fashion-MNIST — ``small-cnn`` and ``fashion-mnist-standard``; CIFAR-10 —
``cifar10-fast`` in bf16 (one seed unless ``--cifar10-seeds``; a conventional CIFAR-10
reference takes hours per run on a CPU and is not trained here). Writes the evidence
JSON to ``docs/results/data/``.
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

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = {
    "mnist": [("small-cnn", []), ("mnist-standard", [])],
    "fashion-mnist": [("small-cnn", []), ("fashion-mnist-standard", [])],
    "cifar10": [("cifar10-fast", ["--precision", "bf16"])],
}


def dawnbench(args: list[str], src: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, **({"PYTHONPATH": str(src)} if src else {})}
    print("$ dawnbench " + " ".join(args), flush=True)
    return subprocess.run([sys.executable, "-m", "dawnbench", *args], env=env, capture_output=True, text=True)


def generalize(folder: Path, out: Path, src: Path | None = None) -> dict:
    proc = dawnbench(["generalize", str(folder), "--out", str(out), "--json"], src)
    if proc.returncode != 0:
        raise SystemExit(f"generalize failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def summary(doc: dict) -> list[dict]:
    """Per configuration: the scored split, the suite, the drop, and the mean per family."""
    rows = []
    for c in doc["configurations"]:
        families: dict[str, list[float]] = {}
        for key, value in c.get("by_set", {}).items():
            if "/" in key:
                families.setdefault(key.split("/")[0], []).append(value)
        rows.append({"task": c["task"], "entry": c["entry"], "model": c["variant"], "runs": c["models"],
                     "scored": c["scored"], "suite_mean": c.get("suite_mean"), "suite_drop": c.get("suite_drop"),
                     "rechecks_ok": c["rechecks_ok"],
                     "by_family": {f: sum(v) / len(v) for f, v in families.items()},
                     "by_set": c.get("by_set")})
    return rows


def main() -> None:
    parser = bench.parser(__doc__)
    parser.add_argument("--tasks", default="mnist,fashion-mnist,cifar10")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--cifar10-seeds", type=int, default=1)
    parser.add_argument("--before", type=Path, help="another checkout whose generalize also scores the models")
    parser.add_argument("--work", type=Path, help="where the runs go (default: a temporary folder)")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="dawnbench-generalization-"))
    figures: dict = {"seeds": args.seeds, "cifar10_seeds": args.cifar10_seeds, "tasks": {}, "training": {}}
    for task in args.tasks.split(","):
        for entry, extra in CONFIGS[task]:
            seeds = args.cifar10_seeds if task == "cifar10" else args.seeds
            out = work / task / entry
            start = time.perf_counter()
            proc = dawnbench(["run", task, "--entry", entry, "--runs", str(seeds), "--continue", "--out", str(out),
                              "--json", *extra])
            if proc.returncode not in (0, 1):
                raise SystemExit(f"run failed ({proc.returncode}): {proc.stderr[-2000:]}")
            runs = json.loads(proc.stdout)["runs"]
            figures["training"][f"{task}/{entry}"] = {
                "wall_s": time.perf_counter() - start, "statuses": [r["status"] for r in runs],
                "tta_s": [r["time_to_accuracy_s"] for r in runs], "epochs_to_target": [r["epochs_to_target"] for r in runs]}
        result = {}
        if args.before:
            result["before"] = summary(generalize(work / task, work / f"{task}-gen-before", args.before.resolve() / "src"))
        result["after"] = summary(generalize(work / task, work / f"{task}-gen"))
        figures["tasks"][task] = result
        for when, rows in result.items():
            for r in rows:
                print(f"{when:6} {task:14} {r['entry']:24} {r['model']:16} scored {r['scored']['mean']:6.2f} "
                      f"suite {r['suite_mean']['mean']:6.2f} ± {r['suite_mean']['std']:4.2f}  drop "
                      f"{r['suite_drop']['mean']:6.2f}", flush=True)
    if args.before:
        figures["before_tree"] = str(args.before)
    bench.store(args, "generalization_tables", figures)


if __name__ == "__main__":
    main()
