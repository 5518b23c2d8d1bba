"""The newcomer's first hour (docs/guide/first-hour.md), run as written: its entry file and its command lines,
taken from the page itself, on the real MNIST."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from dawnbench.cli import main

from helpers import doc_block

PAGE = Path(__file__).resolve().parents[1] / "docs" / "guide" / "first-hour.md"
pytestmark = pytest.mark.slow


def block(marker: str) -> str:
    return doc_block(PAGE, "first-hour", marker)


def test_the_first_hour_runs_as_written(mnist_ready, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my_cnn.py").write_text(block("my_cnn.py"))
    said = {}
    for line in block("commands").splitlines():
        argv = shlex.split(line)
        code = main([*argv[1:], "--json"])
        out, err = capsys.readouterr()
        assert code == 0, f"{line}\n{err[-2000:]}"
        said[argv[1] + (" mine" if "my_cnn.py" in line else "")] = json.loads(out)
    for run in (said["run"], said["run mine"]):   # each through at least one evaluation, a quick trial, unofficial
        [record] = run["runs"]
        assert record["subset"] == "quick" and record["official"] is False and record["threshold"] == 97.0
        assert record["evals"] and record["setup_s"] > 0
    assert said["compare"]["runs_a"] == said["compare"]["runs_b"] == 1
    assert (tmp_path / "report" / "index.html").is_file()
    assert said["profile mine"]["entry"] == "my-cnn" and said["profile mine"]["entry_file"] == "my_cnn.py"
    [t4] = said["predict"]["devices"]
    assert t4["step_s"] > 0 and t4["tta_s"] > 0
