"""Helpers the test modules share (tests never import one another)."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import re
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

from dawnbench.cli import main
from dawnbench.harness.clock import Clock
from dawnbench.harness.options import RunOptions, prepare
from dawnbench.harness.runner import run_seed
from dawnbench.records.record import Evaluation, RunResult, epoch_size

from scripted_entry import FakeTime, Scripted

_STARTS = itertools.count(1_796_000_000_000)     # run_start's time_ms: a millisecond of 2026, one per run written


def write_run(folder: Path, seed: int, tta: float | None, epochs: float, **fields) -> None:
    """A run record of one mnist configuration (``fields``: other RunResult fields, e.g. precision)."""
    folder.mkdir(parents=True)
    r = RunResult(task="mnist", entry="small-cnn", seed=seed, status="success" if tta else "not_reached",
                  official=True, metric="top1_accuracy", threshold=99.0, time_to_accuracy_s=tta,
                  epochs_to_target=epochs if tta else None, run_dir=str(folder),
                  timed_s=tta or 9.0, wall_s=2 * (tta or 9.0))       # the clock counted to the last evaluation
    for key, value in fields.items():
        setattr(r, key, value)
    if "evals" not in fields:   # the first evaluation below the threshold, the last at it (or not, for a failure)
        size = epoch_size(r.task, r.subset) or 60_000             # MNIST's epoch, or its quick trial's
        r.evals = [Evaluation(epochs / 2, round(size / 2 * epochs), (tta or 9.0) / 2, r.threshold - 1),
                   Evaluation(epochs, round(size * epochs), tta or 9.0, r.threshold + (0.1 if tta else -0.5))]
    (folder / "result.json").write_text(json.dumps(r.to_dict()))
    # each run's log its own, starting at its own millisecond, as a run writes it (a copy's is the same: selection),
    # with the evaluations its record holds and how it ended
    start = next(_STARTS)
    events = [{"key": "run_start", "time_ms": start, "event_type": "INTERVAL_START", "value": None,
               "metadata": {"run": str(folder), "seed": seed, "tta": tta}}]
    events += [{"key": "eval_accuracy", "time_ms": start + 1e3 * e.timed_s, "event_type": "POINT_IN_TIME",
                "value": e.value, "metadata": {"epoch_num": e.epoch, "samples_count": e.samples}} for e in r.evals]
    if r.status != "running":
        events.append({"key": "run_stop", "time_ms": start + 1e3 * r.wall_s, "event_type": "INTERVAL_END",
                       "value": None, "metadata": {"status": str(r.status)}})
    (folder / "events.log").write_text("".join(":::MLLOG " + json.dumps({"namespace": "", **e}) + "\n" for e in events))


def flag_every_run(monkeypatch, share: float) -> None:
    """Every resource monitor of this test reports what it does when other processes took ``share`` of the run's CPUs
    while its clock ran: the figure and the sentence that flag a run as disturbed."""
    from dawnbench.profiling.resources import ResourceMonitor

    measured = ResourceMonitor.summary

    def busy(self) -> dict[str, Any]:
        return {**measured(self), "others_share_timed": share,
                "interference": f"other processes took 1.0 CPU-s ({100 * share:.0f} % of this machine's 2 cores) while "
                                "the clock was timing: the TTA is suspect; rerun on an otherwise idle machine"}
    monkeypatch.setattr(ResourceMonitor, "summary", busy)


def run_scripted(task, tmp_path, since: float | None = None, **hp):
    budget = {k: hp.pop(k) for k in ("max_epochs", "max_seconds", "max_wall_seconds", "eval_on_interrupt",
                                     "continue_after_target", "target", "cost_per_hour") if k in hp}
    fake = FakeTime()
    Scripted.clock = fake
    options = RunOptions(task=task, entry=Scripted, overrides=hp, **budget)
    result = run_seed(options, prepare(options), seed=0, run_dir=tmp_path / "run", clock=Clock(now=fake.now),
                      since=since)
    return result, tmp_path / "run"


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    assert path, "these tests need Debian's chromium: apt-get install chromium (.ci/run does it)"
    return path


def render(page: Path, tmp_path: Path, fragment: str = "") -> tuple[str, Path]:
    """The DOM as Chromium shows it (after its scripts ran), and a screenshot."""
    url = page.as_uri() + fragment
    args = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([*args, "--dump-dom", url], capture_output=True, text=True, timeout=120)
    shot = tmp_path / "screenshot.png"
    subprocess.run([*args, f"--screenshot={shot}", "--window-size=1200,1600", url],
                   capture_output=True, timeout=120)
    return dom.stdout, shot


def cells(dom: str, table_id: str) -> list[list[str]]:
    body = re.search(rf'<table id="{table_id}">.*?<tbody>(.*?)</tbody>', dom, re.S).group(1)
    return [[re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td>(.*?)</td>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)]


def run_cli(args: list[str], seconds: int = 60) -> tuple[int | None, str, str]:
    """``dawnbench ARGS`` in this process: exit code, stdout, stderr. An exception out of ``main`` is raised (the
    traceback a user would see), and so is a ``TimeoutError`` past ``seconds`` (a hang)."""
    out, err = io.StringIO(), io.StringIO()

    def hang(signum: int, frame: Any) -> None:
        raise TimeoutError(f"dawnbench {' '.join(args)} did not finish in {seconds} s")

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(seconds)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(args)
            except SystemExit as exit_:  # argparse's own exit
                code = exit_.code
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return code, out.getvalue(), err.getvalue()


def doc_block(page: Path, label: str, marker: str) -> str:
    """The fenced block after ``<!-- LABEL: MARKER -->`` on a docs page: a walkthrough run as the page writes it."""
    match = re.search(rf"<!-- {re.escape(label)}: {re.escape(marker)} -->\n```\w*\n(.*?)```", page.read_text(), re.S)
    assert match, f"no {label} block '{marker}' on {page.name}"
    return match.group(1)


def main_in_process(capsys, *args) -> tuple[int, str, str]:
    """``dawnbench ARGS`` run in this process, as a user meets it: exit code, stdout, stderr; never a traceback."""
    from dawnbench.cli import main

    try:
        code = main([str(a) for a in args])
    except SystemExit as exit_:  # argparse
        code = exit_.code
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err
