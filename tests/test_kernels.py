"""DeepBench's kernels (SPEC §19): counts, one tiny problem of every suite and pass, all-reduce under
torchrun, the comparison, the memory and time guards, Ctrl-C, and the kernels beside the applications."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from dawnbench.analysis.roofline import roofline
from dawnbench.analysis.similarity import similarity
from dawnbench.cli import main
from dawnbench.kernels import KernelOptions, compare, run
from dawnbench.profiling.roofs import Roofs
from dawnbench.records import problems, published
from dawnbench.records.kernel_classes import classify
from dawnbench.records.problems import Problem, data_text

CPU = torch.device("cpu")
ROOFS = Roofs("cpu", {"fp32": 1e11, "bf16": 2e11}, {}, 1e10)


def test_the_counts_are_deepbenchs():
    gemm = Problem("gemm", "training", {"m": 1760, "n": 16, "k": 1760, "a_transposed": False, "b_transposed": False})
    assert problems.flops(gemm, "forward") == 99_123_200
    assert problems.bytes_moved(gemm, "forward", 4) == 4 * (1760 * 1760 + 1760 * 16 + 1760 * 16)
    # The published V100 fp32 row of vanilla 1760 × 16 × 50: its TFLOP/s × its time is our count.
    row = next(r for r in csv.DictReader(io.StringIO(data_text("published_rnn.csv")))
               if (r["device"], r["precision"], r["cell"], r["hidden"], r["n"], r["timesteps"]) ==
               ("V100", "fp32", "vanilla", "1760", "16", "50"))
    rnn = Problem("rnn", "training", {"hidden": 1760, "batch": 16, "timesteps": 50, "cell": "vanilla"})
    assert problems.flops(rnn, "forward") == pytest.approx(float(row["tflops_fwd"]) * 1e12 * float(row["fwd_ms"]) / 1e3,
                                                           rel=1e-3)
    assert problems.flops(rnn, "backward") == 2 * problems.flops(rnn, "forward")  # inputs and parameters
    conv = Problem("conv", "training", {"w": 8, "h": 6, "c": 3, "n": 2, "k": 4, "filter_w": 3, "filter_h": 3,
                                        "pad_w": 1, "pad_h": 0, "stride_w": 2, "stride_h": 1})
    assert problems.conv_output(conv.params) == (4, 4)
    assert problems.flops(conv, "backward_params") == 2 * 2 * 4 * 4 * 4 * 3 * 3 * 3


def test_the_sets_and_the_quick_subset():
    assert [len(problems.problems(s, "training")) for s in ("gemm", "conv", "rnn")] == [160, 94, 53]
    assert len(problems.problems("gemm", "inference_device")) == 13 and len(problems.problems("allreduce", "x")) == 7
    quick = {s: problems.quick(s) for s in problems.SUITES}
    assert len(quick["gemm"]) >= 12 and len(quick["conv"]) >= 10 and len(quick["allreduce"]) == 3
    assert [(q.params["cell"], q.params["hidden"], q.params["batch"]) for q in quick["rnn"]] == list(problems.QUICK_RNN)
    assert all(problems.flops(q, "forward") <= problems.QUICK_RNN_FLOPS for q in quick["rnn"])
    shortened = [q for q in quick["rnn"] if q.run_params]
    assert shortened and all(q.run_params["timesteps"] < q.params["timesteps"] for q in shortened)


TINY = [Problem("gemm", "training", {"m": 64, "n": 32, "k": 48, "a_transposed": True, "b_transposed": False}),
        Problem("gemm", "inference_server", {"m": 64, "n": 32, "k": 48, "a_transposed": False, "b_transposed": True}),
        Problem("conv", "training", {"w": 12, "h": 10, "c": 3, "n": 2, "k": 4, "filter_w": 3, "filter_h": 3,
                                     "pad_w": 1, "pad_h": 1, "stride_w": 2, "stride_h": 1}),
        *[Problem("rnn", "training", {"hidden": 16, "batch": 4, "timesteps": 3, "cell": c})
          for c in ("vanilla", "lstm", "gru")]]


@pytest.mark.parametrize("problem", TINY, ids=lambda p: f"{p.suite}-{p.set}-{p.params.get('cell', '')}")
def test_a_tiny_problem_of_every_suite_and_pass_gives_a_valid_row(problem):
    for pass_name in run.passes_of(problem):
        # 2 s: a first call pays oneDNN's set-up (0.4 s seen for an RNN's backward), and the cap must leave a timed call
        row = run.measure_row(run.Planned(problem, pass_name, "fp32"), CPU, ROOFS, max_s=2.0)
        if "no timed call fits in the 2 s cap" in row.get("skipped", ""):
            continue    # a busy machine's first call took most of the cap: said so, and true
        assert not row.get("skipped"), row
        assert (row["suite"], row["pass"], row["precision"], row["params"]) == (problem.suite, pass_name, "fp32",
                                                                               problem.params)
        # at least one timed call: four blocks need a machine that gives them time within the cap (a busy
        # 2-core one gave RNN rows one or two); the four-block rule itself is tested below, with room
        assert row["median_s"] > 0 and row["iqr_s"] >= 0 and 1 <= row["repeats"] <= row["calls"]
        assert row["flops"] == problems.flops(problem, pass_name) and row["bytes"] > 0
        assert row["gflops"] == pytest.approx(row["flops"] / row["median_s"] / 1e9)
        assert row["intensity"] == pytest.approx(row["flops"] / row["bytes"])
        assert row["fraction_of_roof"] is None or 0 < row["fraction_of_roof"] <= 1
    assert run.passes_of(problem) == (("forward",) if problem.set != "training" else problems.PASSES[problem.suite])


def test_a_row_faster_than_every_probe_raises_its_documents_roof(tmp_path):
    """A roof is the best rate the machine reached: a kernel above the probes raises it (named in roofs.raised),
    every row's fraction follows, and the reader keeps every row."""
    from pathlib import Path

    from dawnbench.records import documents

    doc = run.Document(KernelOptions(out=tmp_path), CPU, ROOFS)
    params = {"m": 1760, "n": 16, "k": 1760, "a_transposed": False, "b_transposed": False}
    slow = {"suite": "gemm", "pass": "forward", "precision": "fp32", "params": params, "median_s": 1.0,
            "flops": 5e10, "bytes": 1e8}
    fast = {**slow, "params": {**params, "n": 32}, "flops": 2e11}                    # 200 GFLOP/s over a 100 GFLOP/s probe
    doc.add(dict(slow))
    assert doc.doc["rows"][0]["fraction_of_roof"] == pytest.approx(0.5)
    doc.add(dict(fast))
    roofs = doc.doc["roofs"]
    assert roofs["flops"]["fp32"] == 2e11 and roofs["raised"]["fp32"]["probes_best"] == 1e11
    assert [r["fraction_of_roof"] for r in doc.doc["rows"]] == [pytest.approx(0.25), pytest.approx(1.0)]
    assert ROOFS.flops["fp32"] == 1e11                                      # the process's roofs are not changed
    kept, notes = documents.kernels(json.loads(doc.path.read_text()), Path("k.json"))
    assert len(kept["rows"]) == 2 and notes == []


def test_a_problem_too_big_for_memory_or_the_cap_is_skipped_before_it_is_allocated():
    huge = run.Planned(Problem("gemm", "training", {"m": 10**6, "n": 10**6, "k": 10, "a_transposed": False,
                                                     "b_transposed": False}), "forward", "fp32")
    assert "GiB for its operands" in run.fit(huge, CPU, ROOFS, 30.0, free=8 << 30).skipped
    slow = run.Planned(Problem("gemm", "training", {"m": 10**4, "n": 10**4, "k": 10**4, "a_transposed": False,
                                                     "b_transposed": False}), "forward", "fp32")
    assert "per-kernel cap" in run.fit(slow, CPU, ROOFS, 30.0, free=64 << 30).skipped
    long_rnn = run.Planned(Problem("rnn", "training", {"hidden": 4096, "batch": 64, "timesteps": 1000,
                                                        "cell": "lstm"}), "forward", "fp32")
    shortened = run.fit(long_rnn, CPU, ROOFS, 30.0, free=64 << 30)
    assert shortened.skipped is None and shortened.problem.ran["timesteps"] < 1000
    assert shortened.estimate_s * run.CALLS <= 30.0


def test_a_precision_without_a_fast_path_is_skipped_unless_asked(monkeypatch):
    from dawnbench import precision

    monkeypatch.setattr(precision, "device_supports", lambda p, d: (p == "fp32", f"no {p} kernels here"))
    rows = run.plan(KernelOptions(suites=("gemm",), quick=True, precisions=None), CPU, ROOFS)
    assert {r.precision for r in rows if r.skipped is None} == {"fp32"}  # --quick: fp32 unless asked
    rows = run.plan(KernelOptions(suites=("gemm",), set_name="inference_device"), CPU, ROOFS)
    reasons = {r.precision: r.skipped for r in rows}
    assert "precision tf32" in reasons["tf32"] and "no bf16 kernels here" in reasons["bf16"] and reasons["fp32"] is None
    asked = run.plan(KernelOptions(suites=("gemm",), set_name="inference_device", precisions=("bf16",)), CPU, ROOFS)
    assert all(r.skipped is None for r in asked)


def test_ctrl_c_keeps_every_finished_row(tmp_path, monkeypatch):
    calls = []

    def measure_row(planned, device, roofs, max_s):
        calls.append(planned)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return {**run.base_row(planned), "median_s": 1e-3, "flops": 1.0, "bytes": 1.0, "gflops": 1e-6}

    monkeypatch.setattr(run, "measure_row", measure_row)
    options = KernelOptions(suites=("gemm",), set_name="inference_device", precisions=("fp32",), out=tmp_path)
    with pytest.raises(KeyboardInterrupt):
        run.run_kernels(options)
    doc = json.loads((tmp_path / "kernels.json").read_text())
    assert doc["interrupted"] is True and len(doc["rows"]) == 2 and doc["roofs"]["flops"]["fp32"] > 0
    assert len((tmp_path / "kernels.csv").read_text().splitlines()) == 3
    assert doc["commit"] and doc["argv"] and doc["hardware"]["cpu"]


def test_a_bug_stops_the_command_and_an_unsupported_op_is_a_skipped_row(tmp_path, monkeypatch):
    """Only a library's "cannot run this here" becomes `skipped`; a shape bug is not a property of the
    device and must not hide as one (the finished rows are kept)."""
    calls = []

    def statement(problem, pass_name, precision, device):
        calls.append(problem)
        if len(calls) == 2:
            raise RuntimeError('"addmm_impl_cpu_" not implemented for \'Half\'')
        if len(calls) == 3:
            raise RuntimeError("mat1 and mat2 shapes cannot be multiplied (16x1760 and 32x1760)")
        return lambda: None

    monkeypatch.setattr(run, "statement", statement)
    # a no-op's blocks may never settle under 10 % on a busy machine: a short cap bounds the row (the default, 30 s)
    options = KernelOptions(suites=("gemm",), set_name="inference_device", precisions=("fp32",), out=tmp_path,
                            cap_s=2.0)
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        run.run_kernels(options)
    doc = json.loads((tmp_path / "kernels.json").read_text())
    assert doc["interrupted"] is False and len(doc["rows"]) == 2
    # the first row is a no-op timed as a GEMM: kept, or — faster than any CPU computes — left untimed, said why
    first = doc["rows"][0]
    assert 1 <= first.get("repeats", 1) <= first.get("calls", 1) and (
        "median_s" in first or "past what any cpu computes" in first["skipped"])
    assert doc["rows"][1]["skipped"].startswith("torch could not run it here: \"addmm_impl_cpu_\" not implemented")


def _doc(rows: list[dict]) -> dict:
    return {"kind": "dawnbench-kernels", "set": "training", "rows": rows, "hardware": {"cpu": "x"},
            "roofs": {"flops": {"fp32": 1e11}, "bandwidth_bytes_per_s": 1e10, "ridge_flop_per_byte": {"fp32": 10.0}},
            "resources": {"gemm": {"proc_cpu_pct": {"mean": 190.0, "max": 200.0}}}}


GEMM = {"m": 1760, "n": 16, "k": 1760, "a_transposed": False, "b_transposed": False}


def test_the_comparison_is_a_time_ratio_per_problem_and_a_geomean_per_suite(tmp_path):
    ours = _doc([{"suite": "gemm", "set": "training", "params": GEMM, "pass": "forward", "precision": "fp32",
                  "median_s": 0.038e-3 * 4},
                 {"suite": "gemm", "set": "training", "params": {**GEMM, "n": 32}, "pass": "forward",
                  "precision": "fp32", "median_s": 0.041e-3 / 4},
                 {"suite": "gemm", "set": "training", "params": GEMM, "pass": "forward", "precision": "bf16",
                  "median_s": 1.0, "skipped": None}])
    v100 = compare.against(ours, "V100")   # the sheet: 0.038 ms and 0.041 ms for these two in fp32
    fp32 = [r for r in v100["rows"] if r["precision"] == "fp32"]
    assert [r["time_ratio"] for r in fp32] == pytest.approx([4.0, 0.25])
    assert v100["rows"][-1]["note"] == "published fp16-mixed"
    # one geometric mean per suite and precision, never pooled: fp32's is over its own two rows only
    assert compare.group(v100, "gemm", "fp32") == {
        "suite": "gemm", "precision": "fp32", "against_precision": "fp32", "geomean_time_ratio": pytest.approx(1.0),
        "compared": 2, "rows": 2, "left_out": 0}
    bf16 = compare.group(v100, "gemm", "bf16")
    assert bf16["against_precision"] == "fp16-mixed" and bf16["rows"] == 1
    assert bf16["geomean_time_ratio"] == pytest.approx(1.0 / v100["rows"][-1]["theirs_s"])
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**_doc([{**ours["rows"][0], "median_s": 0.038e-3 * 2, "flops": 2 * 1760 * 16 * 1760,
                                           "bytes": 4.0 * (1760 * 1760 + 2 * 16 * 1760)}]),
                                 "roofs": {"flops": {"fp32": 1e13}, "bandwidth_bytes_per_s": 1e11}}))
    pair = compare.against(ours, str(other))
    assert [r["time_ratio"] for r in pair["rows"]] == pytest.approx([2.0])
    assert pair["groups"] == [{"suite": "gemm", "precision": "fp32", "against_precision": "fp32",
                               "geomean_time_ratio": pytest.approx(2.0), "compared": 1, "rows": 1, "left_out": 0}]
    assert pair["left_out"] == []


def test_published_rows_that_disagree_with_themselves_are_left_out_and_named():
    """DeepBench's all-reduce sheet: P100 at 38,360,000 floats on 2 ranks gives 1.43 ms (107 GB/s for
    the size) beside 11.8 GB/s; the 1080 Ti's 'NCCL 2.0 Single' row of that size is 0.0075 ms (~20 TB/s)."""
    p100 = published.sheet("P100")
    assert (("allreduce", "allreduce", "fp32", (38_360_000, 2))) in p100.rejected
    [row] = [r for r in p100.left_out if r["suite"] == "allreduce" and r["params"]["floats"] == 38_360_000
             and r["params"]["ranks"] == 2]
    assert "bandwidth column says 11.8 GB/s" in row["reason"] and "107.3 GB/s" in row["reason"]
    gtx = published.sheet("1080Ti")
    assert any(r["params"].get("algorithm") == "NCCL 2.0 Single" and r["params"]["floats"] == 38_360_000
               and r["params"]["ranks"] == 2 for r in gtx.left_out)
    # our 2-rank row meets only a left-out published row: no ratio, counted and said in the group
    ours = _doc([{"suite": "allreduce", "set": None, "params": {"floats": 38_360_000}, "pass": "allreduce",
                  "precision": "fp32", "median_s": 0.5, "world_size": 2}])
    result = compare.against(ours, "1080Ti")
    assert result["rows"] == [] and compare.group(result, "allreduce", "fp32")["left_out"] == 1
    assert compare.group(result, "allreduce", "fp32")["geomean_time_ratio"] is None
    assert result["left_out"] == gtx.left_out
    # the GEMM sheets agree with themselves: nothing of V100's GEMMs is left out
    assert not [r for r in published.sheet("V100").left_out if r["suite"] == "gemm"]


def test_the_sheet_checks_on_rows_made_to_fail(monkeypatch):
    """A GEMM whose time and TFLOP/s disagree, one faster than the device's physical peak, a convolution
    whose passes do not add up to its total, and two all-reduce algorithms of one size: the fastest
    consistent one is used and named."""
    sheets = {
        "published_gemm.csv": "device,precision,application,m,n,k,a_transposed,b_transposed,time_ms,tflops\n"
                              "M40,fp32,x,1000,1000,1000,N,N,1.0,2.0\n"        # 1 ms is 2.0 TFLOP/s: whole
                              "M40,fp32,x,2000,1000,1000,N,N,1.0,2.0\n"        # 1 ms is 4.0, column says 2.0
                              "M40,fp32,x,4000,4000,4000,N,N,1.0,128\n",       # 128 TFLOP/s on a 7 TFLOP/s card
        "published_conv.csv": "device,precision,application,w,h,c,n,k,filter_w,filter_h,pad_w,pad_h,stride_w,"
                              "stride_h,fwd_ms,bwd_inputs_ms,bwd_params_ms,p,q,time_ms,tflops,forward algorithm,r,s,"
                              "total_ms\nM40,fp32,x,8,8,3,1,4,3,3,1,1,1,1,1.0,2.0,3.0,,,9.0,,,,,\n",
        "published_rnn.csv": "device,precision,cell,application,hidden,n,timesteps,fwd_ms,bwd_inputs_ms,bwd_params_ms,"
                             "tflops_fwd,tflops_bwd_inputs,tflops_bwd_params,total_ms,source,tflops_bwd,bwd_ms\n",
        "published_allreduce.csv": "device,precision,floats,ranks,algorithm,time_ms,gb_per_s\n"
                                   "M40,fp32,1000000,4,slow,1.0,4.0\n"       # 4 MB in 1 ms: 4 GB/s, whole
                                   "M40,fp32,1000000,4,fast,0.5,8.0\n"       # whole, and faster
                                   "M40,fp32,1000000,4,odd,0.01,8.0\n",      # 400 GB/s by its time
    }
    monkeypatch.setattr(published, "data_text", lambda name: sheets[name])
    published.sheet.cache_clear()
    try:
        m40 = published.sheet("M40")
    finally:
        published.sheet.cache_clear()
    assert list(m40.times) == [("gemm", "forward", "fp32", (1000, 1000, 1000, False, False)),
                               ("allreduce", "allreduce", "fp32", (1_000_000, 4))]
    assert m40.times[("allreduce", "allreduce", "fp32", (1_000_000, 4))] == published.Entry(0.5e-3, "fast")
    reasons = [r["reason"] for r in m40.left_out]
    assert "means 4 TFLOP/s, its TFLOP/s column says 2" in reasons[0]
    assert "physical peak (7 TFLOP/s fp32" in reasons[1]
    assert reasons[2:5] == ["its passes sum to 6.000 ms, its total says 9.000 ms"] * 3
    assert "bandwidth column says 8 GB/s" in reasons[5] and len(reasons) == 6


def test_similarity_and_the_roofline_take_kernels_beside_runs_and_profiles(tmp_path):
    from helpers import write_run

    params = {"gemm": lambda i: {**GEMM, "n": 16 * (i + 1)},
              "conv": lambda i: {"w": 8 * (i + 1), "h": 8, "c": 3, "n": 1, "k": 4, "filter_w": 3, "filter_h": 3,
                                 "pad_w": 1, "pad_h": 1, "stride_w": 1, "stride_h": 1}}
    rows = [{"suite": suite, "set": "training", "params": params[suite](i), "pass": "forward", "precision": "fp32",
             "median_s": 0.01 * (i + 1), "flops": flops * (i + 1), "bytes": moved * (i + 1)}
            for suite, flops, moved in (("gemm", 5e8, 1e6), ("conv", 2e8, 4e7)) for i in range(3)]
    (tmp_path / "k").mkdir()
    (tmp_path / "k" / "kernels.json").write_text(json.dumps(_doc(rows)))
    write_run(tmp_path / "runs" / "a", 0, 3.0, 0.5, resources={"proc_cpu_pct": {"mean": 120.0, "max": 150.0}},
              throughput={"achieved_gflops": 3.0, "samples_per_s": 1000.0})
    profile = tmp_path / "profiles" / "p"
    profile.mkdir(parents=True)
    (profile / "summary.json").write_text(json.dumps({
        "task": "cifar10", "entry": "cifar10-fast", "precision": "fp32", "window_s": 1.0, "steps": 2,
        "batch_size": 512, "samples_per_s": 1000.0, "memory_bound_share": 0.4,
        "step": {"time_s": 0.5, "flops": 1e10, "bytes": 1e9, "intensity": 10.0, "flops_per_s": 2e10},
        "roofs": _doc([])["roofs"], "resources": {"proc_cpu_pct": {"mean": 180.0, "max": 200.0}}}))
    doc = similarity([tmp_path], out=tmp_path / "sim")
    assert {"kernels/gemm/fp32", "kernels/conv/fp32"} <= set(doc["configurations"])
    assert set(doc["kinds"]) == {"kernels", "run", "profile"} and "achieved_gflops" in doc["characteristics"]
    per_problem = similarity([tmp_path], per_problem=True)
    assert sum(k == "kernels" for k in per_problem["kinds"]) == 6
    points = roofline([tmp_path])
    assert {p["kind"] for p in points["points"]} == {"kernel", "application"}
    assert sum(p["kind"] == "kernel" for p in points["points"]) == 6
    assert any("without a profile" in note for note in points["notes"])  # the run: no intensity
    assert main(["roofline", str(tmp_path), "--out", str(tmp_path / "roof")]) == 0
    assert (tmp_path / "roof" / "roofline.png").stat().st_size > 10_000


def test_ops_fall_into_the_kernel_suites_classes():
    def op(name, shapes, time_s, flops, calls=1):
        return {"op": name, "shapes": shapes, "calls": calls, "time_s": time_s, "flops": flops, "bytes": 100.0}

    forward = 2.0 * 8 * 16 * 4 * 4 * 3 * 3 * 3       # a 3→16 convolution of 8×3×6×6 images, 4×4 out
    rows = [op("aten::addmm", "8x10, 8x64, 64x10", 4.0, 1e6), op("aten::convolution", "8x3x6x6, 16x3x3x3", 2.0, forward),
            op("aten::convolution_backward", "8x16x4x4, 8x3x6x6, 16x3x3x3", 3.0, 2 * forward),
            op("aten::convolution_backward", "8x16x4x4, 8x3x6x6, 16x3x3x3", 1.0, forward),   # weight only
            op("aten::native_batch_norm", "8x16x4x4", 0.5, 0.0), op("aten::_foreach_add_", "", 0.25, 0.0),
            op("aten::relu_", "8x16x4x4", 0.25, 0.0), op("aten::_log_softmax", "8x10", 0.25, 0.0),
            op("aten::copy_", "8x10, 8x10", 0.25, 0.0), op("aten::max_pool2d_with_indices", "8x16x4x4", 0.5, 0.0)]
    table = {r["class"]: r for r in classify(rows)}
    assert table["matrix multiply"]["time_s"] == 4.0 and table["matrix multiply"]["suite"] == "gemm"
    assert table["convolution backward wrt inputs"]["time_s"] == 1.5
    assert table["convolution backward wrt parameters"]["time_s"] == 2.5  # half of the first, all of the second
    assert {"normalisation", "optimizer", "elementwise", "reduction and softmax", "copies and layout changes",
            "pooling", "convolution forward"} <= set(table)
    shares = [r["time_share"] for r in classify(rows)]
    assert shares == sorted(shares, reverse=True) and classify(rows)[-1]["cumulative_share"] == pytest.approx(1.0)


@pytest.mark.distributed
def test_all_reduce_on_two_gloo_ranks_under_torchrun_checks_its_sum(tmp_path, capsys):
    assert main(["kernels", "allreduce", "--quick", "--out", str(tmp_path), "--nproc", "2", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = [r for r in doc["rows"] if r["suite"] == "allreduce"]
    assert [r["params"]["floats"] for r in rows] == list(problems.QUICK_ALLREDUCE)
    for r in rows:
        assert r["sum_checked"] and r["world_size"] == 2 and r["backend"] == "gloo" and r["median_s"] > 0
        assert r["busbw_gbps"] == pytest.approx(r["algbw_gbps"] * 2 * (2 - 1) / 2)
        assert r["algbw_gbps"] == pytest.approx(r["bytes"] / r["median_s"] / 1e9)
    assert "allreduce" in doc["resources"] and (tmp_path / "kernels.csv").is_file()


@pytest.mark.slow
@pytest.mark.distributed
def test_ctrl_c_during_all_reduce_keeps_every_finished_size_and_leaves_no_scratch(tmp_path):
    """The workers hand each finished size to the launcher as it ends, through a folder of the launcher's
    (under TMPDIR, never the user's --out): Ctrl-C merges what finished into kernels.json and removes it."""
    scratch_root, out = tmp_path / "tmp", tmp_path / "out"
    scratch_root.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "dawnbench", "kernels", "allreduce", "--nproc", "2", "--out",
                             str(out)], env={**os.environ, "TMPDIR": str(scratch_root)},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and proc.poll() is None:
        parts = list(scratch_root.glob("dawnbench-allreduce-*/rows.json"))
        if parts and json.loads(parts[0].read_text() or "{}").get("rows"):
            break
        time.sleep(0.2)
    assert proc.poll() is None, "the all-reduce finished before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, output
    doc = json.loads((out / "kernels.json").read_text())
    finished = [r for r in doc["rows"] if r["suite"] == "allreduce" and r.get("median_s")]
    assert doc["interrupted"] is True and finished and all(r["sum_checked"] for r in finished)
    assert not list(scratch_root.glob("dawnbench-*"))            # the launcher's scratch folder is gone
    assert sorted(p.name for p in out.iterdir()) == ["kernels.csv", "kernels.json", "resources-allreduce.tsv"]


def test_a_precision_asked_for_that_the_cpu_only_emulates_is_timed_against_its_own_roof(tmp_path, monkeypatch,
                                                                                        capsys):
    """`kernels --precision bf16` on a CPU without native bf16 (made so here): the rows run, as the skip message
    promises, against a bf16 roof measured by emulation — it crashed on a roof table without the precision."""
    from dawnbench import precision

    native = precision.device_supports
    monkeypatch.setattr(precision, "device_supports",
                        lambda p, d: (False, "no native bf16 (the test's)") if p == "bf16" else native(p, d))
    assert main(["kernels", "gemm", "--quick", "--precision", "bf16", "--max-seconds", "2", "--out", str(tmp_path),
                 "--json"]) == 0
    capsys.readouterr()
    doc = json.loads((tmp_path / "kernels.json").read_text())
    assert list(doc["roofs"]["flops"]) == ["bf16"] and any(r.get("median_s") for r in doc["rows"])


def test_a_call_is_timed_in_at_least_four_blocks_when_the_cap_leaves_room():
    """A no-op's blocks of about 10 ms each: four of them fit in 60 s on any machine, however busy."""
    from dawnbench.kernels import timing

    result = timing.time_call(lambda: None, CPU, max_s=60.0)
    assert result.repeats >= timing.MIN_BLOCKS and result.calls >= result.repeats and result.median_s > 0


def test_the_largest_gemm_is_judged_against_its_roof(monkeypatch):
    """kernels_targets.py once stored ``fraction_of_roof: null`` ("not measured") for a GEMM it had timed: the
    fraction is the document's to set, not ``measure_row``'s. A small GEMM stands in for the 8448 × 48000 × 2816 one."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import kernels_targets

    monkeypatch.setattr(kernels_targets, "LARGEST", Problem("gemm", "training", {
        "m": 64, "n": 64, "k": 64, "a_transposed": False, "b_transposed": False}))
    monkeypatch.setattr(kernels_targets, "PRECISIONS", ("fp32",))
    row = kernels_targets.largest(Roofs("cpu", {"fp32": 1e15}))["fp32"]
    assert row["gflops"] > 0 and row["fraction_of_roof"] == pytest.approx(row["gflops"] * 1e9 / 1e15)
    assert row["verdict"] == "missed" and row["met"] is False
