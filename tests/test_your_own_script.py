"""Your own training script (docs/guide/your-own-script.md), run as written: a plain loop, a Hugging Face Trainer
script and a Lightning script each to a run folder, an MLPerf log imported, then compared with the reference
entry, reported, exported, validated and put on a board — the page's own lines, on the real MNIST."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from dawnbench.records.record import RunResult, read_result

from helpers import doc_block, run_cli

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "guide" / "your-own-script.md"
pytestmark = pytest.mark.slow


def runs(folder: Path) -> list[RunResult]:
    return [RunResult.from_dict(read_result(p.parent)) for p in sorted(folder.glob("*/result.json"))]


def test_the_three_ways_in_run_as_written(mnist_ready, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mllog_loop.py").write_text(doc_block(PAGE, "your-own-script", "mllog_loop.py"))
    said = {}
    for line in doc_block(PAGE, "your-own-script", "commands").splitlines():
        argv = shlex.split(line)
        if argv[0] == "python":           # the user's own scripts, each its own process as on the page
            script = ROOT / argv[1] if argv[1].startswith("examples/") else tmp_path / argv[1]
            done = subprocess.run([sys.executable, str(script), *argv[2:]], capture_output=True, text=True,
                                  timeout=600)
            assert done.returncode == 0, f"{line}\n{done.stderr[-3000:]}"
            continue
        code, out, err = run_cli([*argv[1:], "--json"], seconds=600)
        assert code == 0, f"{line}\n{err[-3000:]}"
        said[" ".join(argv[1:3])] = json.loads(out)
    [plain] = runs(tmp_path / "runs" / "plain")
    assert plain.status == "success" and plain.official and not plain.self_reported
    assert plain.tracked["scored_by"] == "harness" and Path(plain.tracked["script"]).name == "plain_loop.py"
    for way in ("hf", "lightning"):      # the callbacks: the trainer's evaluation points, the harness's scorer
        [run] = runs(tmp_path / "runs" / way)
        assert run.status == "success" and run.threshold == 97 and run.evals and not run.self_reported
    [imported] = runs(tmp_path / "runs" / "imported")
    assert imported.self_reported and imported.status == "success" and imported.epochs_to_target == 3
    assert said["compare runs/reference"]["runs_a"] == said["compare runs/reference"]["runs_b"] == 1
    assert (tmp_path / "report" / "index.html").is_file()
    exported = [json.loads(p.read_text()) for p in (tmp_path / "submissions").glob("*/train/*.json")]
    assert sorted(doc["misc"]["dawnbench"]["self_reported"] for doc in exported) == [False, True]
    assert said["validate submissions"]["errors"] == 0
    assert "self-reported" in "".join(p.read_text() for p in (tmp_path / "board").rglob("*.html"))
