"""A newcomer's first hour, timed from a fresh virtual environment (issue 52).

    python benchmarks/first_hour.py

In a temporary folder, one step after the other, each timed by the wall clock:

1. ``python -m venv`` and the first Quickstart line's install, ``pip install torch==2.13.0 -e ROOT`` (pip's own
   cache and any local wheel folder the machine's pip is set to read are used, as they would be for a user
   here: the evidence says which were set);
2. docs/guide/first-hour.md's entry file and command lines, as written, with a data folder of its own (so
   MNIST is fetched, as on a first day);
3. the CIFAR-10 quick trial of the reference entry, ``dawnbench run cifar10 --quick`` (CIFAR-10 fetched too).

Judged against ``first_hour.total`` in ``targets.json`` (its target and moonshot). Each command's figures — exit code, wall
seconds, and for a run its status, setup, init and timed seconds and whether it was flagged — are stored.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bench  # first: it puts tests/ on the path, where the docs' block reader lives
import targets
from helpers import doc_block

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "guide" / "first-hour.md"


def block(marker: str) -> str:
    return doc_block(PAGE, "first-hour", marker)


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> dict:
    """One command as a user types it: its exit code, wall seconds, and a run's figures when it printed them."""
    print("$ " + " ".join(argv), flush=True)
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    step = {"command": " ".join(argv), "exit": proc.returncode, "wall_s": round(time.perf_counter() - start, 1)}
    if proc.returncode:
        step["stderr"] = proc.stderr.strip()[-600:]
    try:
        runs = json.loads(proc.stdout).get("runs") if "--json" in argv else None
    except json.JSONDecodeError:
        runs = None
    if runs:
        r = runs[0]
        step.update(status=r["status"], setup_s=r.get("setup_s"), init_s=r["init_s"], timed_s=r["timed_s"],
                    evals=[(e["epoch"], e["value"]) for e in r["evals"]], threshold=r["threshold"],
                    flagged=bool((r.get("resources") or {}).get("interference")))
    print(f"  {step['wall_s']} s, exit {step['exit']}", flush=True)
    return step


def main() -> None:
    args = bench.parser(__doc__).parse_args()
    with tempfile.TemporaryDirectory(prefix="dawnbench-first-hour-") as tmp:
        home = Path(tmp)
        env = {**os.environ, "DAWNBENCH_DATA": str(home / "data"), "PYTHONPATH": ""}
        venv = home / "venv"
        began = time.perf_counter()
        steps = [timed([sys.executable, "-m", "venv", str(venv)], home, env)]
        python = str(venv / "bin" / "python")
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
        steps.append(timed([python, "-m", "pip", "install", "-q", "torch==2.13.0", "-e", str(ROOT)], home, env))
        (home / "my_cnn.py").write_text(block("my_cnn.py"))
        for line in block("commands").splitlines():
            steps.append(timed([*shlex.split(line), "--json"], home, env))
        steps.append(timed(["dawnbench", "run", "cifar10", "--quick", "--out", "runs/cifar10", "--json"], home, env))
        total = time.perf_counter() - began
    figures = {"steps": steps, "total_s": round(total, 1), **targets.judged("first_hour.total", total),
               "all_exit_0": all(s["exit"] == 0 for s in steps),
               "pip_find_links": os.environ.get("PIP_FIND_LINKS"), "pip_index_url": os.environ.get("PIP_INDEX_URL")}
    print(f"first hour: {total:.0f} s (target {figures['bound']}: {figures['verdict']}; moonshot: {figures['moonshot']}); "
          f"every step exit 0: {figures['all_exit_0']}")
    bench.store(args, "first_hour", figures)


if __name__ == "__main__":
    main()
