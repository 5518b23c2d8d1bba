"""A fuzz test that keeps every command traceback-free (issue 20), driven by Hypothesis.

Two kinds of examples:

* **bad arguments** — every numeric option of every command, given a value outside its
  range (negative, zero, huge, NaN, infinite, not a number): the command exits 2 with one
  paragraph on stderr, before doing any work, and writes nothing;
* **hostile folders** — a generated tree of run records, submissions, profiles, logs and
  scale tables, salted with symbolic links to a secret outside it, FIFOs, devices, JSON
  nested thousands deep or holding 5,000-digit numbers, fields of the wrong type, and
  Rich markup in file names — handed to every command that reads folders: no traceback,
  no hang, an exit code of 0, 1 or 2, the secret in no output, and no file outside the
  command's output folder changed.

Examples per test: ``DAWNBENCH_FUZZ_EXAMPLES`` (default 25, about half a minute in all).
For a long campaign: ``DAWNBENCH_FUZZ_EXAMPLES=2000 python -m pytest tests/test_fuzz.py``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dawnbench import bounds
from dawnbench.cli import build_parser
from dawnbench.cli.common import int_list

from helpers import run_cli

EXAMPLES = int(os.environ.get("DAWNBENCH_FUZZ_EXAMPLES", "25"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=os.environ.get("CI") == "true",
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
SECRET = "SECRET-fuzz-1c0ffee"
MARKUP = ["[/x]", "[red]", "[bold]x[/bold]", "[link=file:///etc]", "[", "]", "$x$", "%s", "{}"]




def snapshot(folder: Path) -> dict[str, str]:
    """What every entry under ``folder`` is: a link's target, a file's hash, a FIFO's kind."""
    state = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(root) / name
            if path.is_symlink():
                state[str(path)] = "link:" + os.readlink(path)
            elif path.is_file():
                state[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
            elif not path.is_dir():
                state[str(path)] = "special"
    return state


# --- bad arguments --------------------------------------------------------------------------

# Values outside the range of every numeric option: not numbers, not finite, negative, or larger
# than any option allows (the largest range is --seed's, up to 2^32 - 1); zero where zero is not
# allowed (everywhere but ZERO_OK).
GARBAGE = st.one_of(st.sampled_from(["nan", "inf", "-inf", "NaN", "abc", "", "0x10", "--", "1.5.2", "[/x]"]),
                    st.text(alphabet="abcxyz[]/$-=", min_size=1, max_size=8))
NEGATIVE = st.one_of(st.integers(max_value=-1).map(str), st.floats(max_value=-1e-9, allow_nan=False).map(repr))
HUGE = st.integers(min_value=10**10, max_value=10**40).map(str)
ZERO_OK = {flag for flag, bound in bounds.OPTIONS.items() if bound.ok(0)} | {"--target"}


def bad_values(option: str):
    zero = st.just("0") if option not in ZERO_OK else st.nothing()
    return st.one_of(GARBAGE, NEGATIVE, HUGE, zero)


# Each command's arguments before the option (RUN, TABLE, ENTRIES are replaced by the workspace's); the options
# fuzzed are every option of the bounds table each command has (dawnbench/bounds.py), and --target.
PREFIX = {"run": ["run", "mnist"], "sweep": ["sweep", "mnist", "--grid", "lr=0.1"], "scale": ["scale", "mnist"],
          "jobs": ["jobs", "mnist", "--slots", "1"], "infer": ["infer", "RUN"], "profile": ["profile", "mnist"],
          "schedule": ["schedule", "TABLE"], "leaderboard": ["leaderboard", "ENTRIES"],
          "similarity": ["similarity", "RUN"], "explain": ["explain", "RUN"], "predict": ["predict", "RUN", "--device", "V100"],
          "kernels": ["kernels", "gemm"], "export": ["export", "RUN"], "fetch": ["data", "fetch", "imagenet"],
          "import-log": ["import-log", "LOG"]}


def bounded_options() -> list[tuple[list[str], str]]:
    """(the command's prefix, an option of the bounds table it has) for every command of the CLI."""
    def walk(parser: argparse.ArgumentParser, name: str):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for command, sub in action.choices.items():
                    yield from walk(sub, command)
        for _, flag in parser._defaults.get("bounded_options", ()):
            yield name, flag
    found = sorted(set(walk(build_parser(), "")))
    missing = {name for name, _ in found} - set(PREFIX)
    assert not missing, f"commands with bounded options but no prefix to call them with: {missing}"
    return [(PREFIX[name], flag) for name, flag in found] + [(PREFIX["run"], "--target")]


OPTIONS = bounded_options()


def test_every_numeric_option_is_in_the_bounds_table():
    """An int or float option (or a list of them) outside the table would be checked nowhere, or twice."""
    def walk(parser: argparse.ArgumentParser):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    yield from walk(sub)
            elif action.option_strings and action.type in (int, float, int_list):
                yield max(action.option_strings, key=len)
    unbounded = set(walk(build_parser())) - set(bounds.OPTIONS) - {"--target"}   # --target: the task's metric's range
    assert not unbounded, unbounded


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("fuzz")
    (root / "RUN").mkdir()
    (root / "TABLE").write_text(json.dumps({"job": "j", "rows": [{"workers": 1, "tta_s": 10.0}]}))
    (root / "ENTRIES").mkdir()
    (root / "LOG").write_text(":::MLLOG {}\n")
    return root


@FUZZ
@given(st.sampled_from(OPTIONS).flatmap(lambda case: st.tuples(st.just(case), bad_values(case[1]))))
def test_every_numeric_option_refuses_what_is_out_of_range(workspace, drawn):
    (prefix, option), value = drawn
    before = snapshot(workspace)
    args = [str(workspace / a) if a in ("RUN", "TABLE", "ENTRIES", "LOG") else a for a in prefix]
    tail = ["--out", str(workspace / "out")] if prefix[0] in ("run", "sweep", "scale", "jobs", "kernels", "export",
                                                              "import-log") \
        else ["--json"]
    code, out, err = run_cli([*args, f"{option}={value}", *tail])
    assert code == 2, (option, value, err)
    assert err.strip() and "\n\n" not in err.strip() and "Traceback" not in err
    assert snapshot(workspace) == before and not (workspace / "out").exists()  # refused before any work


# --- hostile folders -----------------------------------------------------------------------

RECORD = {"task": "mnist", "entry": "small-cnn", "seed": 0, "status": "success", "official": True,
          "metric": "top1_accuracy", "threshold": 99.0, "time_to_accuracy_s": 4.0, "epochs_to_target": 0.6,
          "evals": [{"epoch": 0.6, "samples": 36000, "timed_s": 4.0, "value": 99.1}], "hparams": {"batch_size": 64},
          "precision": "fp32", "hardware": {"cpu": "x", "cores": 2}, "software": {"torch": "2"}}
SUBMISSION = {"version": "v1.0", "author": "a", "authorEmail": "a@b.c", "framework": "f", "model": "m",
              "hardware": "h", "timestamp": "2018-04-20"}

HOSTILE_JSON = st.sampled_from([
    "[" * 5000 + "]" * 5000, '{"a": ' * 80 + "1" + "}" * 80, '{"n": 1' + "0" * 5000 + "}",
    '{"x": NaN}', '{"x": 1e999}', "{ torn", "\ufeff{}", "\x00\x01\x02", "[]", "null", '"string"'])
WRONG_TYPES = st.fixed_dictionaries({}, optional={
    "evals": st.sampled_from(["x", [1], [{"epoch": "a"}], None, {}]),
    "seed": st.sampled_from(["abc", -1.5, [], None]),
    "threshold": st.sampled_from(["high", None, [], {}]),
    "hparams": st.sampled_from([[1], "x", 5]),
    "resources": st.sampled_from([[], "x", {"proc_cpu_pct": 5}, {"proc_cpu_pct": {"mean": "x"}}]),
    "inference": st.sampled_from([[], {"latency_mean_ms": "x"}, 3]),
    "task": st.sampled_from([1, None, "no-such-task", "[/x]"]),
    "software": st.sampled_from([None, [], {"entry_file": "/etc/passwd"}]),
    "status": st.sampled_from([0, "success", None])})


@st.composite
def hostile_trees(draw):
    """A description of a folder to build: (relative path, what) pairs."""
    items = []
    for i in range(draw(st.integers(1, 6))):
        name = draw(st.sampled_from(["run", "r", *MARKUP])) + str(i)
        kind = draw(st.sampled_from(["record", "bad-record", "hostile-record", "link-record", "fifo-record",
                                     "submission", "link-tsv", "fifo-json", "dev-zero", "profile-link-png",
                                     "mlperf-log", "mlperf-bad", "scale", "link-dir"]))
        items.append((name, kind, draw(WRONG_TYPES), draw(HOSTILE_JSON)))
    return items


def build(root: Path, secret: Path, items: list) -> None:
    for name, kind, wrong, payload in items:
        run = root / "runs" / name  # a name with "/" in it ("[/x]") is a folder and a file in it
        for folder in ("runs", "entries/CIFAR10/train", "entries/CIFAR10/inference", "tables"):
            (root / folder / name).parent.mkdir(parents=True, exist_ok=True)
        if kind == "record":
            run.mkdir(parents=True)
            (run / "result.json").write_text(json.dumps({**RECORD, "run_dir": str(secret.parent)}))
            (run / "epochs.tsv").write_text("epoch\thours\ttop1Accuracy\n0.6\t0.001\t99.1\n")
        elif kind == "bad-record":
            run.mkdir(parents=True)
            (run / "result.json").write_text(json.dumps({**RECORD, **wrong}))
        elif kind == "hostile-record":
            run.mkdir(parents=True)
            (run / "result.json").write_text(payload)
        elif kind == "link-record":
            run.mkdir(parents=True)
            (run / "result.json").symlink_to(secret)
        elif kind == "fifo-record":
            run.mkdir(parents=True)
            os.mkfifo(run / "result.json")
        elif kind in ("submission", "link-tsv", "fifo-json", "dev-zero"):
            folder = root / "entries" / "CIFAR10" / ("inference" if kind == "dev-zero" else "train")
            folder.mkdir(parents=True, exist_ok=True)
            if kind == "submission":
                (folder / f"{name}.json").write_text(payload if "[" in name else json.dumps({**SUBMISSION, **{
                    k: v for k, v in wrong.items() if k in ("hparams", "seed")}}))
                (folder / f"{name}.tsv").write_text("epoch\thours\ttop1Accuracy\n1\t-1\tinf\n")
            elif kind == "link-tsv":
                (folder / f"{name}.json").write_text(json.dumps(SUBMISSION))
                (folder / f"{name}.tsv").symlink_to(secret)
            elif kind == "fifo-json":
                os.mkfifo(folder / f"{name}.json")
            else:
                (folder / f"{name}.json").symlink_to("/dev/zero")
        elif kind == "profile-link-png":
            prof = root / "runs" / name / "profile"
            prof.mkdir(parents=True)
            (prof / "summary.json").write_text(json.dumps({"window_s": 1.0, "step": {"flops_per_s": 1.0},
                                                           "memory_bound_share": 0.1, "task": "mnist"}))
            (prof / "roofline.png").symlink_to(secret)
        elif kind in ("mlperf-log", "mlperf-bad"):
            log = root / "runs" / f"{name}.log"
            log.parent.mkdir(parents=True, exist_ok=True)
            time_ms = "abc" if kind == "mlperf-bad" else 0
            log.write_text(f':::MLLOG {{"key": "run_start", "time_ms": {json.dumps(time_ms)}, "metadata": {{}}}}\n'
                           f':::MLLOG {{"key": "epoch_start", "time_ms": 1, "metadata": {{"epoch_num": {{"a": 1}}}}}}\n'
                           ':::MLLOG {"key": "run_stop", "time_ms": 9, "metadata": {"status": "success"}}\n')
        elif kind == "scale":
            (root / "tables").mkdir(exist_ok=True)
            (root / "tables" / f"{name}.json").write_text(payload)
        elif kind == "link-dir":
            (root / "runs").mkdir(exist_ok=True)
            if not (root / "runs" / name).exists():
                (root / "runs" / name).symlink_to(secret.parent, target_is_directory=True)


READERS = [
    lambda r, o: ["analyze", r / "runs", "--json"],
    lambda r, o: ["compare", r / "runs", r / "runs"],
    lambda r, o: ["report", r / "runs", "--out", o],
    lambda r, o: ["validate", r / "entries"],
    lambda r, o: ["leaderboard", r / "entries", "--html", o],
    lambda r, o: ["similarity", r / "runs", "--out", o],
    lambda r, o: ["export", r / "runs", "--author", "a", "--email", "b@c", "--out", o],
    lambda r, o: ["check-log", *sorted((r / "runs").glob("*"))[:2]],
    lambda r, o: ["schedule", *sorted((r / "tables").glob("*.json"))[:3], "--accelerators", "2",
                  "--figure", o / "g.png"],
    lambda r, o: ["infer", *sorted((r / "runs").glob("*"))[:1], "--max-items", "5"],
    lambda r, o: ["generalize", r / "runs", "--families", "brightness", "--severities", "1", "--out", o],
]


@FUZZ
@given(hostile_trees(), st.sampled_from(range(len(READERS))))
def test_hostile_folders_never_crash_leak_or_change_anything(tmp_path_factory, items, reader):
    root = Path(tempfile.mkdtemp(dir=tmp_path_factory.getbasetemp()))
    secret = root / "outside" / "secret.json"
    secret.parent.mkdir()
    secret.write_text(json.dumps({**SUBMISSION, **RECORD, "author": SECRET, "model": SECRET, "entry": SECRET}))
    build(root, secret, items)
    for folder in ("runs", "entries", "tables"):
        (root / folder).mkdir(exist_ok=True)
    out = root / "out"
    args = [str(a) for a in READERS[reader](root, out)]
    if len(args) <= 1 or args[-1] == "check-log":
        return
    before = snapshot(root)
    code, stdout, stderr = run_cli(args)
    assert code in (0, 1, 2), (args, stderr)
    assert "Traceback" not in stderr
    assert SECRET not in stdout + stderr
    if out.exists():
        for path in out.rglob("*"):
            if path.is_file():
                assert SECRET.encode() not in path.read_bytes(), path
    after = {k: v for k, v in snapshot(root).items() if not Path(k).is_relative_to(out)}
    changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
    # generalize and infer may add their figures to a readable run record; nothing else changes
    allowed = {k for k in changed if args[0] in ("infer", "generalize") and Path(k).name in (
        "result.json", "generalization.json") or "/inference" in k}
    assert changed <= allowed, changed - allowed
    shutil.rmtree(root, ignore_errors=True)
