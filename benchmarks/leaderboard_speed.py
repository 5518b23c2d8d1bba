"""Leaderboard speed: validating and ranking the 118 real DAWNBench entries, and building the site.

    python benchmarks/leaderboard_speed.py [--entries DIR] [--repeats 5]

Without ``--entries``: the 118 public entries bundled in ``third_party/dawnbench-entries.tar.xz``.

Prints, per step, the median and the slowest of ``--repeats`` in-process runs, and the
wall time of the whole command (`dawnbench leaderboard DIR --json --html OUT`, Python
start-up and imports included). Each median is judged, with the spread of its repeats, against
``leaderboard_speed.validate_rank`` and ``leaderboard_speed.build_site`` in ``targets.json``.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from dawnbench.leaderboard import build_boards
from dawnbench.leaderboard.site import build_site

import bench
import targets

BUNDLED = Path(__file__).resolve().parents[1] / "third_party" / "dawnbench-entries.tar.xz"


def main() -> None:
    parser = bench.parser(__doc__)
    parser.add_argument("--entries", type=Path, help="a folder laid out like the bundled entries")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.entries is None:
            with tarfile.open(BUNDLED) as tar:
                tar.extractall(tmp, filter="data")
            args.entries = Path(tmp) / "dawnbench-entries"
        rank, site = [], []
        for _ in range(args.repeats):
            start = time.perf_counter()
            boards = build_boards(args.entries)
            rank.append(time.perf_counter() - start)
            start = time.perf_counter()
            build_site(boards, Path(tmp) / "site")
            site.append(time.perf_counter() - start)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "dawnbench", "leaderboard", str(args.entries), "--json",
                        "--html", str(Path(tmp) / "cli-site")], check=True, capture_output=True)
        command = time.perf_counter() - start
    n = len(boards.submissions)
    judged = {step: targets.judged(f"leaderboard_speed.{step}", statistics.median(times), min(times), max(times))
              for step, times in (("validate_rank", rank), ("build_site", site))}
    print(f"validate + rank {n} entries: median {statistics.median(rank):.3f} s, slowest {max(rank):.3f} s "
          f"(target {judged['validate_rank']['bound']}: {judged['validate_rank']['verdict']})")
    print(f"build the site ({n} entry pages): median {statistics.median(site):.3f} s, slowest {max(site):.3f} s "
          f"(target {judged['build_site']['bound']}: {judged['build_site']['verdict']})")
    print(f"whole command, start-up included: {command:.2f} s")
    bench.store(args, "leaderboard_speed", {
        "entries": n, "repeats": args.repeats, "validate_rank_s": rank, "build_site_s": site,
        "validate_rank_median_s": statistics.median(rank), "build_site_median_s": statistics.median(site),
        "whole_command_s": command, "targets": judged})


if __name__ == "__main__":
    main()
