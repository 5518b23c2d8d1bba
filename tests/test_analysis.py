"""MLPerf training logs (both formats), run directories, and the real v0.5 logs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from dawnbench.analysis import analyze, collect
from dawnbench.analysis.sweep import parse_grid
from dawnbench.errors import DawnbenchError
from dawnbench.records.mlperf import LogError, read_run, sample_of

from helpers import run_cli, write_run

V05_LOG = """Beginning trial 1 of 1
:::MLPv0.5.0 ssd 1000.50 (train.py:1) run_start
noise from the program :::MLPv0.5.0 ssd 1001.0 (train.py:2) train_epoch: 0
:::MLPv0.5.0 ssd 1002.0 (train.py:2) train_epoch: 1
:::MLPv0.5.0 ssd 1002.5 (train.py:3) eval_target: 0.212
:::MLPv0.5.0 ssd 1002.6 (train.py:4) eval_accuracy: {"epoch": 1, "value": 0.15}
:::MLPv0.5.0 ssd 1003.0 (train.py:2) train_epoch: 2
:::MLPv0.5.0 ssd 1003.0 (train.py:2) train_epoch: 2
:::MLPv0.5.0 ssd 1004.1 (train.py:4) eval_accuracy: {"epoch": 2, "value": 0.22}
:::MLPv0.5.0 ssd 1004.25 (train.py:5) run_stop
:::MLPv0.5.0 ssd 1004.26 (train.py:6) run_final
"""

MLLOG = "\n".join(":::MLLOG " + json.dumps({"namespace": "", "time_ms": t, "event_type": kind, "key": key, "value": value,
                                             "metadata": metadata}) for t, kind, key, value, metadata in [
    (5000, "INTERVAL_START", "run_start", None, {}),
    (5100, "INTERVAL_START", "epoch_start", None, {"epoch_num": 1}),
    (6100, "INTERVAL_START", "epoch_start", None, {"epoch_num": 2}),
    (7000, "POINT_IN_TIME", "eval_accuracy", 0.76, {"epoch_num": 2}),
    (7250, "INTERVAL_END", "run_stop", None, {"status": "success"}),
]) + "\n"


def test_v05_log_by_hand(tmp_path):
    log = tmp_path / "result_0.txt"
    log.write_text(V05_LOG)
    run = sample_of(read_run(log))
    assert run.succeeded and run.tta_s == pytest.approx(3.75) and run.epochs == 3.0  # epochs 0, 1, 2
    log.write_text(V05_LOG.replace("run_stop", 'run_stop: {"success": false}'))
    with pytest.raises(LogError, match='reached the target 0.212, but run_stop.s status is "not_reached"'):
        sample_of(read_run(log))        # its verdict contradicts its own evaluation: refused, not believed either way
    log.write_text(V05_LOG.replace('"value": 0.22', '"value": 0.2'))
    assert sample_of(read_run(log)).succeeded is False  # last accuracy below eval_target
    log.write_text(V05_LOG.replace("run_stop", "something_else"))
    with pytest.raises(LogError, match="no run_stop"):
        sample_of(read_run(log))


def test_mllog_by_hand(tmp_path):
    log = tmp_path / "result_0.txt"
    log.write_text(MLLOG)
    run = sample_of(read_run(log))
    assert run.succeeded and run.tta_s == pytest.approx(2.25) and run.epochs == 2.0
    log.write_text(MLLOG.replace('"status": "success"', '"status": "aborted"'))
    assert sample_of(read_run(log)).succeeded is False
    lines = MLLOG.splitlines()
    lines[2] = ":::MLLOG {broken"
    log.write_text("\n".join(lines))
    with pytest.raises(LogError) as err:
        sample_of(read_run(log))
    assert err.value.problem.line == 3 and "not valid JSON" in err.value.problem.message


def test_every_real_v05_log_imports(mlperf_v05):
    doc = analyze(mlperf_v05)
    assert doc["problems"] == []
    groups = {g["name"]: g for g in doc["groups"]}
    assert len(groups) == 7 and sum(g["runs"] for g in groups.values()) == 45
    assert all(g["successes"] == g["runs"] for g in groups.values())
    ssd = groups["dgx1_ngc18.11_pytorch/ssd"]
    assert ssd["epochs_mean"] == 49.0
    # result_0: run_stop 1541712463.049874544 − run_start 1541710845.176418781
    first = sample_of(read_run(mlperf_v05 / "dgx1_ngc18.11_pytorch/ssd/result_0.txt"))
    assert first.tta_s == pytest.approx(1617.873456, abs=1e-3)
    assert groups["dgx1_ngc18.11_pytorch/transformer"]["tta_cov"] == pytest.approx(0.1378, abs=5e-4)
    multi = groups["dgx2h_multi_ngc18.11_pytorch/ssd"]
    assert multi["std_ratio"] > 1  # multi-node SSD: variance from epochs, not from speed


def test_run_directories_grouped_by_the_configuration_that_defines_them(tmp_path):
    for i, (tta, ep) in enumerate([(10.0, 1.0), (12.0, 1.0), (None, 2.0)]):
        write_run(tmp_path / "A" / f"run{i}", i, tta, ep)
    for i, tta in enumerate([5.0, 6.0]):
        write_run(tmp_path / "B" / f"run{i}", i, tta, 0.5, precision="bf16")
    (tmp_path / "B" / "notes.txt").write_text("not a log\n")
    groups, problems = collect(tmp_path)
    assert [g.name for g in groups] == ["mnist · small-cnn · bf16", "mnist · small-cnn · fp32"] and problems == []
    assert [len(g.samples) for g in groups] == [2, 3]
    code, out, _ = run_cli(["analyze", str(tmp_path), "--json"])
    doc = json.loads(out)
    a = doc["groups"][1]
    assert a["name"] == "mnist · small-cnn · fp32" and a["runs"] == 3 and a["successes"] == 2
    assert a["tta_mean_s"] == 11.0 and a["tta_ci95_s"] is None  # two successes: no interval
    code, out, _ = run_cli(["compare", str(tmp_path / "A"), str(tmp_path / "B"), "--json"])
    # Hodges-Lehmann: the median of the six ratios A/B (1.67, 2, 2, 2.4, ∞, ∞) on the log scale
    assert json.loads(out)["speedup"] == pytest.approx((2.0 * 2.4) ** 0.5)


def test_same_name_configurations_are_told_apart_by_what_differs(tmp_path):
    write_run(tmp_path / "x" / "run0", 0, 10.0, 1.0, hparams={"batch_size": 32, "lr": 0.1})
    write_run(tmp_path / "y" / "run0", 0, 9.0, 1.0, hparams={"batch_size": 64, "lr": 0.1})
    write_run(tmp_path / "z" / "run0", 0, 8.0, 1.0, hparams={"batch_size": 64, "lr": 0.1}, official=False,
              threshold=98.0, compile="default")
    names = [g.name for g in collect(tmp_path)[0]]
    assert names == ["mnist · small-cnn · fp32 · batch_size=32", "mnist · small-cnn · fp32 · batch_size=64",
                     "mnist · small-cnn · fp32 · compile default · target 98 (unofficial)"]


def test_a_run_its_monitor_flagged_is_kept_out_with_the_reason(tmp_path):
    for i, tta in enumerate([491.0, 500.0, 510.0]):
        write_run(tmp_path / f"run{i}", i, tta, 12.0, precision="bf16")
    busy = {"interference": "other processes took 310.2 CPU-s (19 % of this machine's 2 cores) ..."}
    write_run(tmp_path / "run3", 3, 800.0, 12.0, precision="bf16", resources=busy)
    [group] = analyze(tmp_path)["groups"]
    assert group["runs"] == 3 and group["tta_max_s"] == 510.0
    assert group["excluded"] == [{"run": str(tmp_path / "run3"),
                                  "reason": f"flagged: {busy['interference']} (--include-suspect counts it)"}]
    lo, hi = group["tta_ci95_s"]
    assert 0 < lo < group["tta_geomean_s"] < hi < 800
    [counted] = analyze(tmp_path, include_suspect=True)["groups"]
    assert counted["runs"] == 4 and counted["excluded"] == [] and counted["tta_max_s"] == 800.0


def test_damaged_inputs_are_problems_not_tracebacks(tmp_path):
    write_run(tmp_path / "ok" / "run0", 0, 10.0, 1.0)
    (tmp_path / "bad" / "run0").mkdir(parents=True)
    (tmp_path / "bad" / "run0" / "result.json").write_text("{ torn")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "result_0.txt").write_text(":::MLLOG {broken\n")
    code, _, err = run_cli(["analyze", str(tmp_path)])
    assert code == 0 and "Traceback" not in err
    assert "result.json:1: not valid JSON" in err
    assert "result_0.txt:1: ':::MLLOG' line is not valid JSON" in err
    code, _, err = run_cli(["analyze", str(tmp_path / "nope")])
    assert code == 2 and "no such file or directory" in err


def test_parse_grid():
    assert parse_grid(["batch_size=32,64", "lr=0.1,0.2"]) == [
        {"batch_size": 32, "lr": 0.1}, {"batch_size": 32, "lr": 0.2},
        {"batch_size": 64, "lr": 0.1}, {"batch_size": 64, "lr": 0.2}]
    with pytest.raises(DawnbenchError, match="KEY=V1,V2"):
        parse_grid(["batch_size"])
    with pytest.raises(DawnbenchError, match="given twice"):
        parse_grid(["a=1", "a=2"])


def test_a_link_is_not_followed_and_is_said(tmp_path):
    write_run(tmp_path / "mine" / "run0", 0, 10.0, 1.0)
    write_run(tmp_path / "elsewhere" / "run1", 1, 12.0, 1.0)
    (tmp_path / "mine" / "run1").symlink_to(tmp_path / "elsewhere" / "run1")
    groups, problems = collect(tmp_path / "mine")
    assert [len(g.samples) for g in groups] == [1]
    assert [(p.file, "symbolic link, not followed" in p.message) for p in problems] == \
        [(str(tmp_path / "mine" / "run1"), True)]
    code, _, err = run_cli(["analyze", str(tmp_path / "mine")])
    assert code == 0 and "run1: a symbolic link, not followed" in err
    # a linked record is one problem, not two; a link to nothing is told so, not "copy the run here"
    write_run(tmp_path / "elsewhere" / "run2", 2, 12.0, 1.0)
    (tmp_path / "mine" / "run2").mkdir()
    (tmp_path / "mine" / "run2" / "result.json").symlink_to(tmp_path / "elsewhere" / "run2" / "result.json")
    (tmp_path / "mine" / "gone").symlink_to(tmp_path / "nowhere")
    write_run(tmp_path / "mine" / "run0" / "inner", 5, 12.0, 1.0)       # a run inside a run: said, not dropped unsaid
    _, problems = collect(tmp_path / "mine")
    assert sorted((Path(p.file).relative_to(tmp_path / "mine").as_posix(), p.message.split(": ")[-1])
                  for p in problems) == \
        [("gone", "it points at nothing that exists; remove it, or copy the run it meant here"),
         ("run0/inner", "move it out beside the other"),
         ("run1", "copy the run here instead"), ("run2/result.json", "copy the run here instead")]


def test_a_copied_run_counts_once_and_never_on_both_sides(tmp_path):
    for i, tta in enumerate([10.0, 11.0, 12.0]):
        write_run(tmp_path / "A" / f"run{i}", i, tta, 1.0)
    shutil.copytree(tmp_path / "A" / "run0", tmp_path / "A" / "again")
    [group] = analyze(tmp_path / "A")["groups"]
    [copy] = group["excluded"]         # "again" is read first (folders in order), so run0 is the second record
    assert group["runs"] == 3 and copy["run"] == str(tmp_path / "A" / "run0") and "a run counts once" in copy["reason"]
    # the copy's configuration edited: a group of its own, yet the same run, left out there
    record = json.loads((tmp_path / "A" / "again" / "result.json").read_text())
    shutil.copytree(tmp_path / "A" / "again", tmp_path / "A2" / "edited")
    shutil.copytree(tmp_path / "A" / "again", tmp_path / "A2" / "first")
    (tmp_path / "A2" / "edited" / "result.json").write_text(json.dumps({**record, "hparams": {"batch_size": 77}}))
    groups = analyze(tmp_path / "A2")["groups"]
    assert sorted(g["runs"] for g in groups) == [0, 1] and "a run counts once" in \
        [e for g in groups for e in g["excluded"]][0]["reason"]
    for i, tta in enumerate([5.0, 6.0]):
        write_run(tmp_path / "B" / f"run{i}", i + 10, tta, 0.5)
    shutil.copytree(tmp_path / "A" / "run1", tmp_path / "B" / "borrowed")
    code, _, err = run_cli(["compare", str(tmp_path / "A"), str(tmp_path / "B")])
    assert code == 2 and "the same run is on both sides" in err and "borrowed is a copy of" in err
    code, _, err = run_cli(["compare", str(tmp_path / "A"), str(tmp_path / "A" / "run2")])
    assert code == 2 and "run2 is read on both sides (the same folder twice, or one folder inside the other)" in err
    shutil.copytree(tmp_path / "A" / "run2", tmp_path / "C" / "edited")     # a copy with its record changed
    record = json.loads((tmp_path / "C" / "edited" / "result.json").read_text())
    record["time_to_accuracy_s"] += 1e-9
    (tmp_path / "C" / "edited" / "result.json").write_text(json.dumps(record))
    code, _, err = run_cli(["compare", str(tmp_path / "A"), str(tmp_path / "C")])
    assert code == 2 and "edited is a copy of" in err and "their event logs record the same start, to the millisecond" in err
    code, _, err = run_cli(["report", str(tmp_path / "A"), str(tmp_path / "B"), "--out", str(tmp_path / "page")])
    assert code == 2 and "borrowed is a copy of" in err and not (tmp_path / "page" / "index.html").exists()


def test_compare_says_a_side_never_reached_its_target_in_words(tmp_path):
    """A side whose median run failed printed "median TTA inf s", and one run was "1 runs"."""
    for i, tta in enumerate([10.0, 11.0, 12.0]):
        write_run(tmp_path / "A" / f"run{i}", i, tta, 1.0)
    write_run(tmp_path / "B" / "run0", 10, None, 1.0)
    code, out, _ = run_cli(["compare", str(tmp_path / "A"), str(tmp_path / "B")])
    assert "— 1 run, 1 failed, no median TTA: at least half its runs did not reach mnist ≥ 99" in out, out
    assert "inf s" not in out and "— 1 runs" not in out
