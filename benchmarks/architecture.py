"""The house's figures (issue 80): src lines, what the command line imports, where documents are declared, the
longest functions — of this checkout and, with ``--before REV``, of an earlier commit beside it.

    python benchmarks/architecture.py --before e4e6a9c     # before and after a change, stored as evidence
    python benchmarks/architecture.py --before e4e6a9c --tests   # and the fast tier's time in each, one after the other
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import bench

LOWER = ("harness", "io", "distributed")       # what the command line should reach only through public functions
MAKERS = {"harness", "tracking", "profiling", "kernels", "inference", "entries"}    # what makes documents
READERS = {"analysis", "prediction", "submissions", "reports", "leaderboard"}      # what reads them
LONG = 60                                       # lines past which a function should say why it is long
REASON = "# Long:"                              # ... in a comment inside it that begins so
OPTION = "RunOptions"                           # the options of a run: how far they travel (functions taking them)


def _runs_a_step(node: ast.AST) -> bool:
    """A call of an entry's ``warmup(ctx)`` or ``train(ctx)`` (not a module's ``train()`` or ``train(False)``):
    where a training step is set up and driven. An entry's own (its default warm-up) is the entry's, not counted."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    if node.func.attr == "warmup":
        return True
    return node.func.attr == "train" and len(node.args) == 1 and not isinstance(node.args[0], ast.Constant)


def figures(tree: Path) -> dict[str, Any]:
    """The figures of the ``src/dawnbench`` under ``tree``."""
    src = tree / "src" / "dawnbench"
    files = sorted(src.rglob("*.py"))
    lines = sum(len(f.read_text().splitlines()) for f in files)
    cli_imports: Counter[str] = Counter()
    declared: Counter[str] = Counter()
    stepping: Counter[str] = Counter()
    crossing: list[str] = []
    options_pass: Counter[str] = Counter()
    functions = []
    for f in files:
        module = f.relative_to(src).with_suffix("").as_posix()
        text = f.read_text()
        source = text.splitlines()
        parsed = ast.parse(text)
        for node in ast.walk(parsed):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("dawnbench."):
                target, home = node.module.split(".")[1], module.split("/")[0]
                if module.startswith("cli/"):
                    cli_imports[target] += 1
                if {home, target} & MAKERS and {home, target} & READERS:
                    crossing.append(f"{module} → {node.module}")
            elif isinstance(node, ast.ClassDef) and any(getattr(b, "id", "") == "TypedDict" for b in node.bases):
                declared[module] += 1
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if any(OPTION in ast.unparse(a.annotation) for a in node.args.args + node.args.kwonlyargs
                       if a.annotation is not None):
                    options_pass[module] += 1
                said = any(line.strip().startswith(REASON) for line in source[node.lineno:node.end_lineno])
                functions.append((node.end_lineno - node.lineno + 1, f"{module}.{node.name}", said))
            elif _runs_a_step(node) and not module.startswith("entries/"):
                stepping[module] += 1
    functions.sort(reverse=True)
    commit = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    return {"commit": commit, "src_lines": lines, "modules": len(files),
            "cli_imports_by_package": dict(cli_imports.most_common()),
            "cli_imports_of_lower_layers": sum(cli_imports[p] for p in LOWER),
            "cli_packages_imported": len([p for p in cli_imports if p != "cli"]),
            "modules_declaring_documents": dict(declared.most_common()),
            "packages_declaring_documents": sorted({m.split("/")[0] for m in declared}),
            "modules_running_an_entry_step": dict(stepping.most_common()),
            "imports_between_makers_and_readers": sorted(crossing),
            "functions_taking_run_options": dict(sorted(options_pass.items())),
            "longest_functions": [{"lines": n, "function": name, "says_why": said} for n, name, said in functions[:10]],
            "long_function_lines": LONG, "functions_over_60_lines": sum(1 for n, *_ in functions if n > LONG),
            "functions_over_60_lines_without_a_reason": sum(1 for n, _, said in functions if n > LONG and not said)}


def fast_tier(tree: Path) -> dict[str, Any]:
    """The fast tier (``python -m pytest``) run in ``tree``, its own ``src`` first on the path; its summary and time."""
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=tree, env=env,
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    last = (proc.stdout.strip().splitlines() or [""])[-1]
    return {"exit": proc.returncode, "summary": last, "wall_s": round(wall, 1)}


def main() -> None:
    args = bench.parser(__doc__)
    args.add_argument("--before", metavar="REV", help="an earlier commit to measure beside this checkout")
    args.add_argument("--tests", action="store_true", help="time the fast tier in each tree, one after the other")
    args = args.parse_args()
    out = {"after": figures(bench.ROOT)}
    if args.tests:
        out["after"]["fast_tier"] = fast_tier(bench.ROOT)
    if args.before:
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(["git", "-C", str(bench.ROOT), "worktree", "add", "-f", "--detach", tmp, args.before],
                           check=True, capture_output=True)
            try:
                out["before"] = figures(Path(tmp))
                if args.tests:
                    out["before"]["fast_tier"] = fast_tier(Path(tmp))
            finally:
                subprocess.run(["git", "-C", str(bench.ROOT), "worktree", "remove", "--force", tmp], check=True)
    for when, f in out.items():
        print(f"{when}, {f['commit']}: {f['src_lines']:,} src lines in {f['modules']} modules; the CLI imports "
              f"{f['cli_packages_imported']} packages, {f['cli_imports_of_lower_layers']} imports of "
              f"{', '.join(LOWER)}; {len(f['modules_declaring_documents'])} modules in "
              f"{len(f['packages_declaring_documents'])} packages declare documents; "
              f"{len(f['modules_running_an_entry_step'])} run an entry's step; "
              f"{f['functions_over_60_lines']} functions over 60 lines ({f['functions_over_60_lines_without_a_reason']} without "
              f"a reason), the longest {f['longest_functions'][0]}")
    bench.store(args, "architecture", out)


if __name__ == "__main__":
    main()
