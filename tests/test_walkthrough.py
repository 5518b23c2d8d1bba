"""The entrant's walkthrough of docs/writing-an-entry.md, run as written: its entry file and its command
lines, taken from the page itself (so the page cannot drift from what works)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from dawnbench.cli import main

from helpers import doc_block

PAGE = Path(__file__).resolve().parents[1] / "docs" / "writing-an-entry.md"
pytestmark = pytest.mark.slow


def block(marker: str) -> str:
    return doc_block(PAGE, "walkthrough", marker)


def test_the_walkthrough_runs_as_written(mnist_ready, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "wider_cnn.py").write_text(block("wider_cnn.py"))
    said = {}
    for line in block("commands").splitlines():
        argv = shlex.split(line)
        assert argv[0] == "dawnbench"
        # --include-suspect: a run this busy test machine disturbed still counts (the page's reader, on an idle machine,
        # needs no such flag); the test must not depend on how busy the machine is
        extra = ["--include-suspect"] if argv[1] in ("compare", "report", "export") else []
        code = main([*argv[1:], *extra, *(["--json"] if argv[1] in ("compare", "validate", "leaderboard") else [])])
        out, err = capsys.readouterr()
        assert code == 0, f"{line}\n{err[-2000:]}"
        said[argv[1]] = out
    comparison = json.loads(said["compare"])
    lo, hi = comparison["speedup_ci95"]   # 3 against 3 cannot reach 5 %: the interval is unbounded, its open end null
    assert comparison["runs_a"] == comparison["runs_b"] == 3 and lo == 0.0 and hi is None
    assert "the smallest p these runs allow is 0.1" in comparison["verdict"]
    page = (tmp_path / "report" / "index.html").read_text()
    assert 'id="comparison"' in page and "builtin: mnist · small-cnn" in page and "wider: mnist · wider-cnn" in page
    [submission] = (tmp_path / "submissions" / "MNIST" / "train").glob("*.json")
    doc = json.loads(submission.read_text())
    assert doc["costPerHour"] == 0.10 and doc["misc"]["dawnbench"]["official"] is True
    assert json.loads(said["validate"])["errors"] == 0
    board = json.loads(said["leaderboard"])["tasks"]["mnist"]["training_time"]
    assert [r["model"] for r in board] == ["wider-cnn (dawnbench entry)"]
