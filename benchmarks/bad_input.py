"""How many bad or damaged command lines get a clear answer, each run as a user runs it.

    python benchmarks/bad_input.py          # every case of tests/bad_inputs.py; stores its evidence

The cases are the table ``tests/test_bad_input.py`` checks in process. Here each is one fresh
``python -m dawnbench`` process under a time limit and a 4 GiB address-space limit (a hang or a
memory blow-up is an outcome, not the end of the script). A *refused* case gives a clear error
when it exits 2 with a message and no traceback; a *handled* one (a damaged file a command
reports or skips) when it exits 0, 1 or 2 without a traceback. The evidence names each case
that did not, judges the share of clear answers against ``bad_input.clear`` in ``targets.json``, and
keeps every case's command, answer (its first 300 characters) and origin: issue 40's list, the fresh
cases tried beside it, wave 5's (explain, predict), wave 6's (the issue on inputs: documents that
cannot be true), or the table before them.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bench  # first: it puts tests/ on the path, where the table of bad inputs lives with its tests
import targets
from bad_inputs import CASES, FRESH_40, ISSUE_40, WAVE_5, WAVE_6, WAVE_7, WAVE_7_PHYSICS, make_run

ROOT = bench.ROOT

MEMORY_LIMIT = 4 << 30
TIMEOUT_S = 120


def run_case(args: list[str], cwd: Path) -> tuple[int | None, str, str, float]:
    """(exit code, or None when it had to be killed; stdout; stderr; seconds)."""
    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
        os.setsid()

    env = {**os.environ, "DAWNBENCH_DATA": str(cwd / "cache"), "COLUMNS": "200"}
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "dawnbench", *map(str, args)], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            errors="replace", preexec_fn=limits)
    try:
        out, err = proc.communicate(timeout=TIMEOUT_S)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, err = proc.communicate()
        code = None
    return code, out, err, time.perf_counter() - start


def verdict(kind: str, code: int | None, err: str) -> str | None:
    """None when the answer was clear; else what was wrong."""
    if code is None:
        return f"hung (killed after {TIMEOUT_S} s)"
    if "Traceback (most recent call last)" in err:
        return f"traceback (exit {code})"
    if kind == "refused" and (code != 2 or not err.strip()):
        return f"exit {code}{'' if err.strip() else ' without a message'} (expected 2 with a message)"
    if kind == "handled" and code not in (0, 1, 2):
        return f"exit {code}"
    return None


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory(prefix="dawnbench-bad-input-") as tmp:
        run = make_run(Path(tmp) / "fixture" / "run")
        for case_id, kind, args_of in CASES:
            w = Path(tmp) / case_id
            w.mkdir()
            args = [str(a) for a in args_of(w, run)]
            code, out, err, seconds = run_case(args, w)
            problem = verdict(kind, code, err)
            # the answer: the error, or what a handled case said of what it left out (from its first note on)
            said = " ".join((err or out).replace(str(w), "W").split())
            said = said[said.find("W/", max(0, said.find("left out") - 200)):] if "left out" in said and not err \
                else said
            rows.append({"id": case_id, "kind": kind, "command": args[0], "exit": code, "clear": problem is None,
                         "problem": problem, "seconds": round(seconds, 2), "said": said[:300],
                         "origin": "issue 40" if case_id in ISSUE_40 else "fresh" if case_id in FRESH_40 else
                         "wave 5" if case_id in WAVE_5 else "wave 6" if case_id in WAVE_6 else
                         "wave 7" if case_id in WAVE_7 else "wave 7 physics" if case_id in WAVE_7_PHYSICS else "earlier"})
            print(f"{case_id:<36} {kind:<8} {'clear' if problem is None else problem}", flush=True)
    origins = {o: {"tried": sum(r["origin"] == o for r in rows), "clear": sum(r["clear"] for r in rows
                                                                             if r["origin"] == o)}
               for o in ("issue 40", "fresh", "wave 5", "wave 6", "wave 7", "wave 7 physics", "earlier")}
    figures = {"tried": len(rows), "clear": sum(r["clear"] for r in rows), "by_origin": origins,
               "by_kind": {k: {"tried": sum(r["kind"] == k for r in rows),
                               "clear": sum(r["clear"] for r in rows if r["kind"] == k)} for k in ("refused", "handled")},
               "not_clear": [r for r in rows if not r["clear"]], "cases": rows,
               **targets.judged("bad_input.clear", sum(r["clear"] for r in rows) / len(rows))}
    print(f"{figures['clear']}/{figures['tried']} bad inputs got a clear answer")
    bench.write("bad_input", figures)


if __name__ == "__main__":
    main()
