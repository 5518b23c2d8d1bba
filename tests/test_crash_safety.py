"""Kill a real run at any moment: what was measured is still on disk (SPEC §4)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from dawnbench.records import mllog


def start_run(tmp_path):
    out = tmp_path / "runs"
    # Target 99.9 is out of reach: the run keeps evaluating every 1/20 epoch until killed.
    proc = subprocess.Popen([sys.executable, "-m", "dawnbench", "run", "mnist", "--target", "99.9",
                             "--set", "first_eval_epoch=0.02", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        results = list(out.glob("*/result.json"))
        if results and len(json.loads(results[0].read_text())["evals"]) >= 2:
            return proc, results[0].parent
        time.sleep(0.05)
    proc.kill()
    pytest.fail("the run made no two evaluations in 120 s")


def read_record(run_dir):
    result = json.loads((run_dir / "result.json").read_text())
    tsv = (run_dir / "epochs.tsv").read_text().splitlines()
    lines = (run_dir / "events.log").read_text().splitlines()
    events = [mllog.parse_line(line) for line in lines]
    return result, tsv, events


@pytest.mark.slow
@pytest.mark.parametrize("sig, status, code", [(signal.SIGTERM, "interrupted", 130),
                                              (signal.SIGINT, "interrupted", 130),
                                              (signal.SIGKILL, "running", -9)])
def test_kill_mid_run_keeps_measurements(mnist_ready, tmp_path, sig, status, code):
    proc, run_dir = start_run(tmp_path)
    time.sleep(0.3)  # land somewhere inside a training step
    proc.send_signal(sig)
    proc.communicate(timeout=60)
    assert proc.returncode == code
    result, tsv, events = read_record(run_dir)
    assert result["status"] == status
    assert len(result["evals"]) >= 2 and result["time_to_accuracy_s"] is None
    assert len(tsv) - 1 >= len(result["evals"])  # header + one row per recorded evaluation
    assert sum(e["key"] == "eval_accuracy" for e in events) >= len(result["evals"])
    stops = [e for e in events if e["key"] == "run_stop"]
    if sig == signal.SIGKILL:
        assert stops == []  # no chance to write it; "running" says so
    else:
        assert stops[0]["metadata"]["status"] == "interrupted"
