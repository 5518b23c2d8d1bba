"""SPEC §4: every run's events.log passes MLCommons' compliance checker (training 6.0.0 common rules)."""

from __future__ import annotations

import math

import pytest

from dawnbench.cli import main
from dawnbench.records.compliance import check_log

from helpers import run_scripted


@pytest.mark.parametrize("status, script", [
    ("success", {"passes": [False, True]}),
    ("not_reached", {"passes": [False, False]}),
    ("diverged", {"passes": [False, False], "losses": [1.0, math.nan]}),
    ("aborted", {"passes": [False, False], "fail_at": 1}),
    ("interrupted", {"passes": [False, False, True], "signal_at": 1}),
    ("timeout", {"passes": [False] * 10, "sleep_s": 0.1, "max_wall_seconds": 0.25}),
])
def test_the_log_of_every_status_passes_the_checker(tiny_task, tmp_path, status, script):
    result, run_dir = run_scripted(tiny_task, tmp_path, **script)
    assert result.status == status and result.evals  # each ended after at least one evaluation
    verdict = check_log(run_dir)
    assert verdict["valid"], verdict["messages"]
    assert verdict["lines"] > 15 and verdict["ruleset"] == "training 6.0.0 common.yaml"


def test_a_damaged_log_names_the_failing_rule(tiny_task, tmp_path, capsys):
    _, run_dir = run_scripted(tiny_task, tmp_path, passes=[True])
    log = run_dir / "events.log"
    log.write_text("".join(line for line in log.read_text().splitlines(keepends=True)
                           if '"key": "submission_org"' not in line and '"key": "run_start"' not in line))
    verdict = check_log(run_dir)
    assert not verdict["valid"]
    assert any("'submission_org'" in m and "EXACTLY_ONE" in m for m in verdict["messages"])
    assert any("'run_start'" in m for m in verdict["messages"])
    assert main(["check-log", str(run_dir)]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "submission_org" in out


def test_check_log_of_a_missing_folder_is_one_clear_error(tmp_path, capsys):
    assert main(["check-log", str(tmp_path / "nope")]) == 2
    assert "no such event log" in capsys.readouterr().err
