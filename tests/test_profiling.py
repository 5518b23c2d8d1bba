"""Why a run is fast or slow (SPEC §14): per-op profile, CDF, resource monitor, similarity, machine."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch
from torch import nn

from dawnbench.analysis.similarity import analyse
from dawnbench.cli import main
from dawnbench.cli.figures import profile_figures
from dawnbench.experiments.profile import ProfileOptions, run_profile, strip_modules
from dawnbench.profiling.ops import profile_window
from dawnbench.profiling.resources import ResourceMonitor
from dawnbench.reports.profile_figures import throughput_cdf

N = 256


def _matmul_then_add():
    """A training loop of one matmul and one elementwise add, stepping a real optimizer."""
    w = torch.randn(N, N, requires_grad=True)
    x = torch.randn(N, N)
    opt = torch.optim.SGD([w], lr=0.0)
    while True:
        y = x @ w
        loss = (y + y).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        yield


def _rows(ridge: float = 10.0):
    window = profile_window(_matmul_then_add(), torch.device("cpu"), steps=3, warm_steps=1)
    return window, window.table(lambda p: ridge, lambda p: 1e12, "fp32")


def test_the_profilers_own_lines_stay_off_the_terminal(capfd):
    profile_window(_matmul_then_add(), torch.device("cpu"), steps=2, warm_steps=1)
    out, err = capfd.readouterr()
    assert "profiler_start" not in err + out and "profiler_stop" not in err + out


def test_bytes_and_intensity_of_known_ops():
    window, rows = _rows(ridge=10.0)
    mm = [r for r in rows if r["op"] == "aten::mm" and r["shapes"] == f"{N}x{N}, {N}x{N}"]
    assert mm, rows
    # forward y = x @ w and backward grad_w = x^T @ grad_y: both 2·N³ FLOPs over 3·N² fp32 values
    per_call_flops, per_call_bytes = 2 * N**3, 3 * N * N * 4
    assert sum(r["calls"] for r in mm) == 2 * 3
    assert sum(r["flops"] for r in mm) == 2 * 3 * per_call_flops
    assert sum(r["bytes"] for r in mm) == 2 * 3 * per_call_bytes
    assert mm[0]["intensity"] == pytest.approx(per_call_flops / per_call_bytes)  # N/6 ≈ 43 FLOP/B
    assert all(r["bound"] == "compute" for r in mm)
    add = [r for r in rows if r["op"] == "aten::add"]
    assert add and add[0]["flops"] == 0 and add[0]["bytes"] == add[0]["calls"] * 3 * N * N * 4
    assert add[0]["bound"] == "memory"
    # against a roof whose ridge is above the matmul's intensity, it is memory-bound too
    _, rows = _rows(ridge=1000.0)
    assert all(r["bound"] == "memory" for r in rows if r["op"] == "aten::mm")
    assert window.matched_share > 0.9


def _pick_rows_then_matmul():
    """A training loop that gathers 32 rows of a 1000-row table (as a task indexes its resident data)."""
    table, idx = torch.randn(1000, 64), torch.arange(32)
    w = torch.randn(64, 8, requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.0)
    while True:
        loss = (table[idx] @ w).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        yield


def test_a_gather_moves_the_rows_it_picks_not_the_table():
    window = profile_window(_pick_rows_then_matmul(), torch.device("cpu"), steps=2, warm_steps=1)
    [index] = [r for r in window.table(lambda p: 10.0, lambda p: 1e12, "fp32") if r["op"] == "aten::index"]
    # int64 indices, rows read and written (the whole table would be 1000 × 64 × 4 bytes a call)
    assert index["bytes"] == pytest.approx(index["calls"] * (32 * 8 + 2 * 32 * 64 * 4), rel=0.01)


def test_cdf_is_monotone_and_ends_at_one():
    _, rows = _rows()
    rates, share = throughput_cdf(rows)
    assert np.all(np.diff(rates) >= 0) and np.all(np.diff(share) >= 0)
    assert share[-1] == pytest.approx(1.0)
    rng = np.random.default_rng(0)
    fake = [{"flops_per_s": float(r), "time_s": float(t)} for r, t in zip(rng.exponential(1e9, 50), rng.random(50))]
    rates, share = throughput_cdf(fake)
    assert np.all(np.diff(share) >= 0) and share[-1] == pytest.approx(1.0)


def test_strip_modules_replaces_every_instance():
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.GELU(),
                          nn.Sequential(nn.Conv2d(8, 8, 3), nn.BatchNorm2d(8), nn.ReLU()))
    assert strip_modules(model, ("BatchNorm2d", "GELU")) == 3
    assert not any(isinstance(m, (nn.BatchNorm2d, nn.GELU)) for m in model.modules())
    assert sum(isinstance(m, nn.Conv2d) for m in model.modules()) == 2


def test_profile_of_small_cnn_writes_everything_and_without_removes_batchnorm(mnist_ready, tmp_path):
    summary = run_profile(ProfileOptions(task="mnist", steps=3, without=("BatchNorm2d",), out=tmp_path / "p"))
    drawn = profile_figures(summary)  # what `dawnbench profile` draws from the files the engine wrote
    assert sorted(p.name for p in drawn) == ["cdf.png", "cdf.png", "roofline.png", "roofline.png"]
    for name in ("ops.tsv", "summary.json", "cdf.png", "roofline.png", "trace.json", "resources.tsv"):
        assert (tmp_path / "p" / name).stat().st_size > 0, name
    assert 0.95 <= summary["flop_check"]["ratio"] <= 1.05  # profiler FLOPs vs torch.utils.flop_counter
    assert 0 < summary["memory_bound_share"] < 1
    assert json.loads((tmp_path / "p" / "trace.json").read_text())["traceEvents"]
    with_bn = (tmp_path / "p" / "ops.tsv").read_text()
    without = (tmp_path / "p" / "without" / "ops.tsv").read_text()
    assert "native_batch_norm" in with_bn and "batch_norm" not in without
    assert summary["without"]["removed"] == 3 and summary["without"]["speedup"] > 0


def test_a_precision_the_cpu_only_emulates_is_profiled_only_when_asked_and_said(mnist_ready, tmp_path, monkeypatch,
                                                                               capsys):
    """A CPU without native bf16 kernels (made so here, whatever this CPU has): `profile --precision bf16` is
    refused in one paragraph naming --emulated, and `run` always; with --emulated the profile says so — in its
    summary, title and notes, with a bf16 roof measured — and predict repeats it beside its figures."""
    from dawnbench import precision

    native = precision.device_supports
    monkeypatch.setattr(precision, "device_supports",
                        lambda p, d: (False, "no native bf16 (the test's)") if p == "bf16" else native(p, d))
    out = tmp_path / "p"
    assert main(["profile", "mnist", "--precision", "bf16", "--steps", "1", "--out", str(out)]) == 2
    assert "--emulated" in capsys.readouterr().err and not out.exists()
    assert main(["run", "mnist", "--precision", "bf16", "--max-epochs", "1", "--out", str(tmp_path / "r")]) == 2
    assert "no native bf16 (the test's)" in capsys.readouterr().err
    assert main(["profile", "mnist", "--precision", "bf16", "--emulated", "--steps", "1", "--out", str(out),
                 "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["emulated"] == "no native bf16 (the test's)" and "(emulated)" in summary["title"]
    assert {"argv", "commit", "dirty", "date", "hardware", "software"} <= summary.keys()   # what made it
    assert json.loads((out / "summary.json").read_text())["software"]["torch"]
    assert summary["roofs"]["flops"]["bf16"] > 0 and any("emulated on this CPU" in n for n in summary["notes"])
    assert "bfloat16" in (out / "ops.tsv").read_text()        # the census ran under bf16 autocast
    assert main(["predict", str(out), "--device", "V100", "--epochs", "1", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["emulated"] == summary["emulated"] and any("only emulates it" in n for n in doc["notes"])
    # never replaced by a profile in another precision; its own configuration beside native bf16 in `similarity`
    assert main(["profile", "mnist", "--steps", "1", "--out", str(out)]) == 2
    assert "holds a profile in bf16 (emulated)" in capsys.readouterr().err
    from dawnbench.analysis.workloads import _named
    assert "/bf16 (emulated)/" in _named(dict(summary))["_config"]
    # made from a run that trained in fp32: its epochs are taken, and the difference said
    summary["run"] = {"dir": str(tmp_path / "r"), "epochs_to_target": 2.0, "precision": "fp32"}
    (out / "summary.json").write_text(json.dumps(summary))
    assert main(["predict", str(out), "--device", "V100", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["epochs_to_target"] == 2.0 and any("the run trained in fp32, the profile ran bf16" in n
                                                  for n in doc["notes"])
    for edit in ({"emulated": ""}, {"precision": "fp32"}):       # hand edits that would mislead are refused
        (out / "summary.json").write_text(json.dumps({**summary, **edit}))
        assert main(["predict", str(out), "--device", "V100", "--epochs", "1"]) == 2
        assert "'emulated'" in capsys.readouterr().err


def test_profile_refuses_a_module_class_the_network_lacks(mnist_ready, tmp_path, capsys):
    assert main(["profile", "mnist", "--without", "LayerNorm", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--without LayerNorm" in err and "BatchNorm2d" in err and "Traceback" not in err


def test_a_folder_named_like_the_task_is_not_taken_for_a_run(mnist_ready, tmp_path, capsys, monkeypatch):
    """`profile squad` beside the ./squad a user downloaded profiles the task; only a folder holding
    result.json is a run."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mnist").mkdir()
    assert main(["profile", "mnist", "--entry", "no-such-entry", "--out", str(tmp_path / "p")]) == 2
    err = capsys.readouterr().err
    assert "no-such-entry" in err and "result.json" not in err


def test_monitor_writes_rows_and_a_summary(tmp_path):
    start = time.monotonic()
    a = torch.randn(512, 512)
    with ResourceMonitor(tmp_path / "r.tsv", interval=0.05, timed_s=lambda: time.monotonic() - start) as mon:
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline:  # work like training's: torch ops, which release the GIL
            a @ a
    lines = (tmp_path / "r.tsv").read_text().splitlines()
    assert lines[0].startswith("t_s\tproc_cpu_pct") and len(lines) >= 5
    summary = mon.summary()
    assert summary["samples"] == len(lines) - 1
    assert summary["proc_cpu_pct"]["mean"] > 30  # it was spinning
    assert summary["proc_rss_bytes"]["max"] > 10 * 2**20


def test_monitor_keeps_its_samples_when_killed(tmp_path):
    path = tmp_path / "r.tsv"
    code = (f"import time; from pathlib import Path; from dawnbench.profiling.resources import ResourceMonitor\n"
            f"ResourceMonitor(Path({str(path)!r}), interval=0.05).start(); time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (not path.exists() or len(path.read_text().splitlines()) < 6):
            time.sleep(0.1)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    rows = path.read_text().splitlines()
    assert len(rows) >= 6 and all(len(r.split("\t")) == len(rows[0].split("\t")) for r in rows)


def _beside_a_busy_loop(tmp_path) -> dict:
    """The monitor's summary of 1.5 s in which this process idles, timed throughout, while a busy loop
    that is not our child (the shell that starts it exits) — another process — takes a core."""
    pid = int(subprocess.run(["sh", "-c", f"{sys.executable} -c 'while True: pass' >/dev/null 2>&1 & echo $!"],
                             capture_output=True, text=True, check=True).stdout)
    try:
        time.sleep(0.3)
        start = time.monotonic()
        with ResourceMonitor(tmp_path / "r.tsv", interval=0.1, timed_s=lambda: time.monotonic() - start) as mon:
            time.sleep(1.5)
    finally:
        os.kill(pid, signal.SIGKILL)
    return mon.summary()


def test_monitor_records_another_process_cpu_use(tmp_path):
    summary = _beside_a_busy_loop(tmp_path)
    assert summary["others_cpu_s_timed"] > 0.5
    assert summary["others_share_timed"] > 0.05 and "interference" in summary


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs two cores: one for the run, one for another job")
def test_another_job_on_the_cores_the_run_may_not_use_is_not_interference(tmp_path, monkeypatch):
    """A Slurm job given one CPU of a two-core node: a busy loop of another job on the other core takes
    nothing from it (before, every run of a Slurm array on a shared node was flagged)."""
    monkeypatch.setenv("SLURM_CPUS_ON_NODE", "1")
    # the samples as the monitor sums them (a real busy loop beside other work on the box would flag rightly):
    # over 1.5 timed seconds, other processes took 1.5 CPU-s, the one core this run may not use
    monitor = ResourceMonitor(tmp_path / "r.tsv", interval=0.1)
    monitor.samples, monitor._timed, monitor._others_timed = 15, 1.5, 1.5
    monitor._sums = {"proc_cpu_pct": [1.5, 15.0, 100.0, 100.0]}
    summary = monitor.summary()
    assert summary["others_cpu_s_timed"] > 0.5 and summary["own_cpus"] == 1 and "interference" not in summary


def test_a_few_ticks_of_rounding_over_a_short_timed_region_are_not_interference(tmp_path, monkeypatch):
    """0.5 ms of 'other' CPU over a 0.5 ms timed region reads as 65 % of the machine: one clock tick of
    rounding in /proc/stat, not another process (it flagged tiny runs of the suite as disturbed)."""
    monitor = ResourceMonitor(tmp_path / "r.tsv", interval=0.1)
    monitor.samples, monitor._timed, monitor._others_timed = 1, 0.0005, 0.0006
    monitor._sums = {"proc_cpu_pct": [0.0005, 0.05, 100.0, 100.0]}
    summary = monitor.summary()
    assert summary["others_share_timed"] > 0.5 and "interference" not in summary


def test_similarity_recovers_planted_clusters():
    rng = np.random.default_rng(1)
    centres = np.array([[0, 0, 0, 0], [10, 0, 5, 0], [0, 10, 0, 5]], dtype=float)
    planted = np.repeat([0, 1, 2], 4)
    matrix = centres[planted] + rng.normal(0, 0.3, (12, 4))
    names = [f"c{i}" for i in range(12)]
    doc = analyse(names, ["a", "b", "c", "d"], matrix, pick=3)
    clusters = np.array(doc["clusters"])
    for k in range(3):  # each planted cluster is exactly one found cluster
        assert len(set(clusters[planted == k])) == 1
    assert len(set(clusters)) == 3
    assert sorted(planted[names.index(p)] for p in doc["picks"]) == [0, 1, 2]
    assert sum(doc["explained_variance"]) == pytest.approx(1.0)
    assert doc["coverage"]["a"] > 0.8


def test_machine_json_shape(capsys):
    assert main(["machine", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["hardware"]["cores"] >= 1
    roofs = doc["roofs"]
    assert roofs["flops"]["fp32"] > 0 and roofs["bandwidth_bytes_per_s"] > 0
    assert set(roofs["flops"]) == set(roofs["ridge_flop_per_byte"]) == set(roofs["probes"])
    assert {"matmul", "conv3x3@16", "conv3x3@8"} <= set(roofs["probes"]["fp32"])


def test_holistic_trace_analysis_reads_a_profile_trace_without_warnings(mnist_ready, tmp_path, caplog):
    """HTA needs each trace's rank (distributedInfo) and the step markers (ProfilerStep#N)."""
    import logging

    from hta.trace_analysis import TraceAnalysis

    run_profile(ProfileOptions(task="mnist", steps=3, out=tmp_path / "p"))
    doc = json.loads((tmp_path / "p" / "trace.json").read_text())
    assert doc["distributedInfo"]["rank"] == 0
    steps = {e["name"] for e in doc["traceEvents"] if e.get("name", "").startswith("ProfilerStep#")}
    assert len(steps) == 3
    (tmp_path / "hta").mkdir()
    shutil.copy(tmp_path / "p" / "trace.json", tmp_path / "hta" / "rank-0.json")
    with caplog.at_level(logging.WARNING):
        analysis = TraceAnalysis(trace_dir=str(tmp_path / "hta"))
    assert 0 in analysis.t.traces
    complaints = " | ".join(r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING)
    for warning in ("ProfilerStep not found", "only one iteration", "rank to trace map", "no item in the rank"):
        assert warning not in complaints  # what HTA 0.5 says of a trace without step markers or rank
    iterations = set(analysis.t.get_trace(0)["iteration"])
    assert {i for i in iterations if i >= 0} <= {int(name.split("#")[1]) for name in steps}
    assert len({i for i in iterations if i >= 0}) >= 2  # HTA assigns the ops to the steps it found


def test_a_profile_of_another_configuration_gets_its_own_folder_and_says_what_was_set():
    from dawnbench.experiments.profile import ProfileOptions, default_name

    assert default_name("mnist", "small-cnn", ProfileOptions()) == "mnist-small-cnn-fp32"
    other = ProfileOptions(overrides={"encoder": "bert-large", "batch_size": 2, "vectors": "/a b/glove.txt"})
    assert default_name("squad", "squad-minilm", other) == \
        "squad-squad-minilm-fp32-encoder=bert-large-batch_size=2-vectors=_a_b_glove.txt"


def test_a_run_folder_takes_no_set_and_an_out_folder_of_other_files_is_refused(mnist_ready, tmp_path, capsys,
                                                                                monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "r"
    run.mkdir()
    (run / "result.json").write_text("{}")
    assert main(["profile", str(run), "--set", "layers=0"]) == 2
    assert "--set and --entry do not apply" in capsys.readouterr().err
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "ops.tsv").write_text("my own table\n")
    assert main(["profile", "mnist", "--steps", "1", "--out", str(mine)]) == 2
    err = capsys.readouterr().err
    assert "ops.tsv" in err and "not an earlier profile" in err and "Traceback" not in err
    assert (mine / "ops.tsv").read_text() == "my own table\n"
