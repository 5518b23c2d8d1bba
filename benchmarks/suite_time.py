"""How long the test suite takes: `bash .ci/run` on a clean clone of this checkout's commit, timed (issue 54).

    python benchmarks/suite_time.py

Clones the repository's HEAD into a temporary folder (what CI does), runs `.ci/run` there and stores its wall
time, each pytest tier's own time and counts as pytest printed them, the exit code and each failure's one-line
reason (the whole output goes to a log in the temporary folder, named at the end). The targets: the fast
tier (`python -m pytest`) and the whole of `.ci/run`, ``suite_time.fast`` and ``suite_time.ci`` in ``targets.json``.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bench
import targets

ROOT = Path(__file__).resolve().parents[1]
SUMMARY = re.compile(r"^(?P<counts>\d+ (?:passed|failed).*?) in (?P<seconds>[\d.]+)s", re.M)


def main() -> None:
    args = bench.parser(__doc__).parse_args()
    with tempfile.TemporaryDirectory(prefix="dawnbench-suite-") as tmp:
        clone = Path(tmp) / "clone"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        start = time.perf_counter()
        proc = subprocess.run(["bash", ".ci/run"], cwd=clone, capture_output=True, text=True)
        wall = time.perf_counter() - start
    # .ci/run installed the clone in editable mode into this environment: point it back at this checkout
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "-e", str(ROOT)], check=True)
    tiers = [{"summary": m["counts"], "seconds": float(m["seconds"])} for m in SUMMARY.finditer(proc.stdout)]
    figures = {"exit": proc.returncode, "ci_wall_s": round(wall, 1), "tiers": dict(zip(("fast", "slow"), tiers)),
               "targets": [targets.judged("suite_time.fast", tiers[0]["seconds"] if tiers else None),
                           targets.judged("suite_time.ci", wall)],
               "tail": proc.stdout.strip().splitlines()[-3:] if proc.returncode else [],
               # pytest's short summary of each failure (its reason included), so a failure that does not come
               # back when run again still says what it was
               "failures": [line for line in proc.stdout.splitlines() if line.startswith(("FAILED ", "ERROR "))]}
    log = Path(tempfile.gettempdir()) / f"suite_time-{time.strftime('%Y%m%d-%H%M')}.log"
    log.write_text(proc.stdout + proc.stderr)
    print(f".ci/run: exit {proc.returncode} in {wall:.0f} s; " + "; ".join(
        f"{name} tier {t['seconds']:.0f} s ({t['summary']})" for name, t in figures["tiers"].items()) +
          f"; whole output: {log}")
    bench.store(args, "suite_time", figures)


if __name__ == "__main__":
    main()
