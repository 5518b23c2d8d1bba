"""Inference at the threshold: figures, the saved model, LoadGen scenarios, bad input."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from dawnbench.cli.figures import latency_figure
from dawnbench.data.splits import ArraySplit
from dawnbench.errors import DawnbenchError
from dawnbench.harness.options import RunOptions, prepare
from dawnbench.harness.runner import run_seed
from dawnbench.inference import InferenceOptions, measure_run
from dawnbench.inference.figures import (
    cost_per_10k_usd,
    cost_per_item_usd,
    latency_summary,
    percentile,
)
from dawnbench.inference.scenarios import ScenarioSettings, run_scenario
from dawnbench.submissions import export_inference
from dawnbench.tasks import Task

from tiny_model_entry import TinyLinear

# TinyLinear is an entry file of the tests, not a built-in: measuring it imports it (--trust-entry).
FAST = dict(batch_sizes=(1, 2), warmup_items=1, throughput_seconds=0.05, trust_entry=True)


# --- arithmetic -------------------------------------------------------------------------
def test_nearest_rank_percentiles_by_hand():
    ten = [float(v) for v in [7, 1, 10, 3, 5, 2, 9, 4, 8, 6]]
    assert percentile(ten, 50) == 5.0   # ceil(0.5·10) = 5th smallest
    assert percentile(ten, 90) == 9.0   # 9th smallest
    assert percentile(ten, 99) == 10.0  # ceil(9.9) = 10th
    assert percentile(ten, 100) == 10.0
    assert percentile(list(range(1, 101)), 99) == 99
    assert percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.0
    assert percentile([2.5], 1) == 2.5
    with pytest.raises(ValueError):
        percentile([], 50)


def test_latency_summary_and_costs_by_hand():
    s = latency_summary([1.0, 2.0, 3.0, 10.0])
    assert s["latency_mean_ms"] == 4.0 and s["latency_p50_ms"] == 2.0
    assert s["latency_p90_ms"] == 10.0 and s["latency_p99_ms"] == 10.0
    # 0.5 ms at $3.60/h: 0.5 / 3.6e6 h × 3.60 $/h = $5e-7 per item, $0.005 per 10,000 items.
    assert cost_per_item_usd(0.5, 3.6) == pytest.approx(5e-7)
    assert cost_per_10k_usd(0.5, 3.6) == pytest.approx(0.005)
    # DAWNBench's ResNet-164 on a K80 (p2.xlarge at $0.90/h), 22.3 ms: $0.0558 per 10,000 images.
    assert cost_per_10k_usd(22.3, 0.90) == pytest.approx(0.05575)
    assert cost_per_10k_usd(1.0, None) is None


# --- end to end on the tiny task ---------------------------------------------------------
def trained_run(task: Task, tmp_path: Path, **hp) -> Path:
    options = RunOptions(task=task, entry=TinyLinear, overrides=hp)
    result = run_seed(options, prepare(options), seed=0, run_dir=tmp_path / "run")
    assert result.status == "success" and result.checkpoint == "model.pt"
    return Path(result.run_dir)


def digest(run_dir: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(run_dir.iterdir()) if p.is_file()}


def test_measure_run_writes_figures_and_leaves_the_record_whole(tiny_task, tmp_path):
    run_dir = trained_run(tiny_task, tmp_path)
    before = json.loads((run_dir / "result.json").read_text())
    assert before["checkpoint_s"] > 0 and before["inference"] is None
    inf = measure_run(run_dir, InferenceOptions(task=tiny_task, cost_per_hour=3.6, threads=1, **FAST))
    assert inf["value"] == 100.0 and inf["official"] is True and inf["items"] == 4
    assert inf["warmup_items"] == 1 and inf["threads"] == 1
    assert inf["latency_p50_ms"] <= inf["latency_p90_ms"] <= inf["latency_p99_ms"]
    assert inf["cost_per_10k_usd"] == pytest.approx(inf["latency_mean_ms"] / 3.6e6 * 3.6 * 1e4)
    assert set(inf["throughput_by_batch_size"]) == {"1", "2"}
    after = json.loads((run_dir / "result.json").read_text())
    assert after["inference"]["latency_mean_ms"] == inf["latency_mean_ms"]
    assert {k: v for k, v in after.items() if k != "inference"} == {k: v for k, v in before.items() if k != "inference"}
    lines = (run_dir / "inference" / "latencies.tsv").read_text().splitlines()
    assert lines[0] == "item\tlatency_ms" and len(lines) == 5
    mean = sum(float(line.split("\t")[1]) for line in lines[1:]) / 4
    assert mean == pytest.approx(inf["latency_mean_ms"], rel=1e-5)
    assert latency_figure(run_dir, inf).read_bytes()[:4] == b"\x89PNG"  # what `dawnbench infer` draws
    assert (run_dir / "inference" / "latency.png").is_file()


def test_model_below_threshold_is_measured_but_unofficial(tiny_task, tmp_path):
    run_dir = trained_run(tiny_task, tmp_path)
    stricter = Task(tiny_task.name, tiny_task.dataset, tiny_task.metric, 100.5, "test", "none")
    inf = measure_run(run_dir, InferenceOptions(task=stricter, max_items=3, **FAST))
    assert inf["official"] is False and inf["items"] == 3
    assert any("below the threshold 100.5" in r for r in inf["unofficial_reasons"])
    assert any("first 3 items" in r for r in inf["unofficial_reasons"])


def test_export_inference_json(tiny_task, tmp_path):
    run_dir = trained_run(tiny_task, tmp_path)
    measure_run(run_dir, InferenceOptions(task=tiny_task, cost_per_hour=3.6, **FAST))
    with pytest.raises(DawnbenchError, match="unknown task 'tiny'"):  # the tiny task is not registered
        export_inference(run_dir, tmp_path / "sub", "A", "a@b")


# --- bad input: a clear message, nothing in the run directory changed ---------------------
@pytest.mark.parametrize("damage, options, message", [
    ("remove_model", {}, "model.pt: no saved model"),
    ("garble_model", {}, "model.pt: not a readable dawnbench model file"),
    ("garble_result", {}, "result.json:1: not valid JSON"),
    (None, {"task": "mnist"}, "--task mnist: "),
    (None, {"instance": "no-such-instance"}, "--instance no-such-instance: not in the price catalog"),
    (None, {"instance": "n1-standard-4-preemptible"}, "spot, preemptible and low-priority prices are refused"),
    (None, {"batch_sizes": (0,)}, "--batch-sizes 0: must be an integer from 1"),
    (None, {"trust_entry": False}, "entry 'tiny-linear' is not built in; rebuilding it means importing"),
])
def test_bad_input_is_one_clear_error(tiny_task, tmp_path, damage, options, message):
    run_dir = trained_run(tiny_task, tmp_path)
    if damage == "remove_model":
        (run_dir / "model.pt").unlink()
    elif damage == "garble_model":
        (run_dir / "model.pt").write_bytes(b"not a model")
    elif damage == "garble_result":
        (run_dir / "result.json").write_text("{ torn")
    before = digest(run_dir)
    opts = {"task": tiny_task, **FAST, **options}
    with pytest.raises(DawnbenchError, match=message.replace("(", r"\(").replace(".", r"\.")):
        measure_run(run_dir, InferenceOptions(**opts))
    assert digest(run_dir) == before and not (run_dir / "inference").exists()


def test_model_and_record_from_different_runs(tiny_task, tmp_path):
    run_dir = trained_run(tiny_task, tmp_path)
    record = json.loads((run_dir / "result.json").read_text())
    (run_dir / "events.log").unlink()       # else its log, which names the tiny task, refuses the record first
    # a record of mnist (a quick trial at a lower target: at 99 % its time would be below mnist's floor)
    (run_dir / "result.json").write_text(json.dumps({**record, "task": "mnist", "threshold": 50.0, "official": False,
                                                     "hparams": {**record["hparams"], "train_subset": 8}}))  # its epochs
    with pytest.raises(DawnbenchError, match="saved for task 'tiny'.*different runs"):
        measure_run(run_dir, InferenceOptions(**FAST))


def test_missing_run_dir(tmp_path):
    with pytest.raises(DawnbenchError, match="no such run directory"):
        measure_run(tmp_path / "nope")


# --- LoadGen scenarios: who issues what, when ---------------------------------------------
def slow_predict(delay_s: float):
    import time

    def predict(x: torch.Tensor) -> torch.Tensor:
        time.sleep(delay_s)
        return torch.zeros(len(x), 2)
    return predict


def test_singlestream_issues_next_query_after_previous_completes(tmp_path):
    inputs = ArraySplit(np.zeros((50, 4, 4), np.uint8), np.zeros(50, np.int64))
    run = run_scenario("singlestream", slow_predict(0.0005), inputs,
                       ScenarioSettings(seconds=0.3, expected_latency_ms=0.5), tmp_path)
    q = run.queries
    assert len(q) >= 1024 and run.figures["queries"] == len(q)
    assert all(b.issued >= a.completed for a, b in zip(q, q[1:]))
    assert run.figures["latency_p90_ms"] >= 0.5
    assert (tmp_path / "mlperf_log_summary.txt").is_file()


def test_offline_issues_every_sample_at_once(tmp_path):
    inputs = ArraySplit(np.zeros((64, 4, 4), np.uint8), np.zeros(64, np.int64))
    run = run_scenario("offline", slow_predict(0.0), inputs,
                       ScenarioSettings(seconds=0.2, expected_qps=2000, batch_size=32), tmp_path)
    q = run.queries
    assert len(q) >= 2000 * 0.2 and len({x.issued for x in q}) == 1
    assert run.figures["queries"] == 1 and run.figures["samples_per_s"] > 0


def test_server_issues_queries_without_waiting_for_answers(tmp_path):
    inputs = ArraySplit(np.zeros((64, 4, 4), np.uint8), np.zeros(64, np.int64))
    run = run_scenario("server", slow_predict(0.01), inputs,
                       ScenarioSettings(seconds=0.5, server_qps=400, server_latency_ms=50, batch_size=8), tmp_path)
    q = run.queries
    overlapping = sum(b.issued < a.completed for a, b in zip(q, q[1:]))
    assert overlapping > len(q) / 2  # arrivals do not wait for the SUT
    gaps = [b.issued - a.issued for a, b in zip(q, q[1:])]
    assert math.isclose(len(q) / (q[-1].issued - q[0].issued), 400, rel_tol=0.35)  # Poisson at ~400/s
    assert max(gaps) > 3 * (sum(gaps) / len(gaps))  # exponential gaps, not a metronome


# --- the real MNIST model ------------------------------------------------------------------
def test_cli_infer_on_real_mnist_model(mnist_run_97, tmp_path):
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "dawnbench", "infer", str(mnist_run_97), "--max-items", "300",
                           "--batch-sizes", "1,100", "--threads", "1", "--instance", "c5.large",
                           "--scenario", "singlestream", "--scenario-seconds", "0.2", "--json"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)["inference"]
    assert 96.0 <= doc["value"] <= 100.0 and doc["items"] == 300
    assert doc["official"] is False and doc["cost_per_hour"] == 0.085
    assert doc["scenarios"]["singlestream"]["validity"] in ("VALID", "INVALID")
    bad = subprocess.run([sys.executable, "-m", "dawnbench", "infer", str(mnist_run_97), "--task", "cifar10"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "--task cifar10" in bad.stderr
