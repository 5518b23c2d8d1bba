"""Every document dawnbench reads, mutated field by field and cell by cell, through every command that reads it.

    python benchmarks/document_fuzz.py                 # all the cases (about 9,000: ~15 min on 2 cores)
    python benchmarks/document_fuzz.py --budget 500    # a sample, every kind and command among it

The cases are ``tests/document_fuzz.py``'s (the fast and slow tiers run samples of them): kinds × fields ×
hostile values × the commands that read the kind, each in process under its time bound. The evidence keeps
the counts — per kind: fields, values, commands, cases tried, answered as the rule says — and names every case
that was not, with what was wrong; docs/results/hostile.md renders it.
"""

from __future__ import annotations

import shutil
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

import bench  # first: it puts tests/ on the path, where the fuzzer lives with its tests
import document_fuzz as fuzz


def main() -> None:
    made = bench.parser(__doc__)
    made.add_argument("--budget", type=int, default=None, help="run this many cases (default: all of them)")
    made.add_argument("--seed", type=int, default=0)
    args = made.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="document-fuzz-"))
    every = fuzz.cases(scratch / "bases")
    chosen = fuzz.sample(every, args.budget if args.budget is not None else len(every), args.seed)
    wrong, tried, slowest = [], Counter(), 0.0
    start = time.perf_counter()
    for i, (case, build) in enumerate(chosen):
        if i % 250 == 0:          # not a live bar: each case captures stdout, which a bar's thread would write into
            print(f"{i} of {len(chosen)} cases, {len(wrong)} answered outside the rule", flush=True)
        began = time.perf_counter()
        try:
            why = fuzz.run_case(case, build, scratch / "case")
        except Exception as error:         # a traceback out of main, or the case's time bound passed
            why = f"{type(error).__name__}: {str(error)[:200]} ({traceback.format_exc().strip().splitlines()[-3].strip()})"
        slowest = max(slowest, time.perf_counter() - began)
        tried[case.kind] += 1
        if why:
            wrong.append({"case": case.id, "why": why})
    shutil.rmtree(scratch, ignore_errors=True)
    kinds = {}
    for kind in dict.fromkeys(c.kind for c, _ in every):
        mine = [c for c, _ in every if c.kind == kind]
        kinds[kind] = {"fields": len({c.field for c in mine}), "values": len({c.value for c in mine}),
                       "commands": sorted({c.command for c in mine}), "cases": len(mine), "tried": tried[kind],
                       "wrong": sum(w["case"].startswith(kind + "/") for w in wrong)}
    figures = {"cases": len(every), "tried": len(chosen), "answered_by_the_rule": len(chosen) - len(wrong),
               "wrong": wrong, "kinds": kinds, "seconds": round(time.perf_counter() - start, 1),
               "slowest_case_s": round(slowest, 2), "time_bound_s": fuzz.TIME_BOUND_S,
               "values": [name for name, _ in fuzz.HOSTILE], "cells": [name for name, _ in fuzz.HOSTILE_CELLS],
               # the cross-field cases: two fields physics binds, one pushed 1e9 times from the other (refused only)
               "cross": {"pairs": [f"{a} ~ {b}" for a, b in fuzz.CROSS], "factors": [n for n, _ in fuzz.APART],
                         "cases": sum(c.refused for c, _ in every), "tried": sum(c.refused for c, _ in chosen),
                         "wrong": sum("~" in w["case"] for w in wrong)}}
    print(f"{figures['answered_by_the_rule']} of {len(chosen)} cases answered as the rule says "
          f"({len(every)} in all); slowest {figures['slowest_case_s']} s")
    for w in wrong[:20]:
        print(f"  {w['case']}: {w['why']}")
    bench.store(args, "document_fuzz", figures)


if __name__ == "__main__":
    main()
