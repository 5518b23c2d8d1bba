"""Many workers (SPEC §13): real torchrun launches of 2 gloo workers on MNIST, faults, and scheduling."""

from __future__ import annotations

import glob
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import torch

from dawnbench.analysis.schedule import Job, best, load_job, naive, schedule
from dawnbench.cli import main
from dawnbench.distributed.comm import accounting
from dawnbench.distributed.world import (
    World,
    per_worker_overrides,
    shard_order,
    worker_seed,
)
from dawnbench.entries.small_cnn import SmallCNN
from dawnbench.errors import DawnbenchError
from dawnbench.experiments.generalization import score_model
from dawnbench.experiments.scale import ScaleOptions, run_scale
from dawnbench.harness.options import RunOptions
from dawnbench.records.compliance import check_log
from dawnbench.tasks import get_task

# --- sharding, seeds, batch sizes (no processes) -----------------------------------------


@pytest.mark.parametrize("n, world", [(60_000, 2), (1000, 4), (1003, 4), (7, 3)])
def test_shards_cover_the_split_once_per_epoch(n, world):
    for epoch in (0, 1):
        shards = [shard_order(n, seed=5, epoch=epoch, rank=r, world_size=world) for r in range(world)]
        seen = torch.cat(shards)
        assert len({len(s) for s in shards}) == 1             # equal steps on every worker
        assert len(seen.unique()) == len(seen)                # nothing seen twice
        assert len(seen) == n - n % world                     # everything, bar the remainder
    first = torch.cat([shard_order(n, 5, 0, r, world) for r in range(world)])
    second = torch.cat([shard_order(n, 5, 1, r, world) for r in range(world)])
    assert not torch.equal(first, second)                     # a new shuffle each epoch


def test_worker_seeds_differ_and_rank_0_keeps_the_run_seed():
    assert worker_seed(7, 0) == 7
    assert len({worker_seed(7, r) for r in range(8)}) == 8


def test_torchrun_is_given_only_the_options_this_torch_knows(monkeypatch):
    # torch 2.11's torchrun (a GPU machine's image) has no --shutdown-timeout: passing it ended every launch there
    import argparse

    import torch.distributed.run as torch_run

    from dawnbench.distributed import launch
    assert launch.torchrun_takes("--nproc-per-node") and not launch.torchrun_takes("--no-such-option")
    older = argparse.ArgumentParser()
    for option in ("--nproc-per-node", "--nnodes", "--max-restarts", "--monitor-interval", "--local-addr"):
        older.add_argument(option)
    older.add_argument("--standalone", action="store_true")
    older.add_argument("training_script")
    older.add_argument("training_script_args", nargs=argparse.REMAINDER)
    monkeypatch.setattr(torch_run, "get_args_parser", lambda: older)
    args = launch.LaunchOptions(nproc=1).torchrun_args()
    assert "--shutdown-timeout" not in args
    assert older.parse_args([*args, "worker.py"]).nproc_per_node == "1"


def test_strong_scaling_divides_the_global_batch():
    task, world = get_task("mnist"), World(rank=0, world_size=2, backend="gloo")
    weak = per_worker_overrides(RunOptions(task="mnist"), SmallCNN, task, world)
    strong = per_worker_overrides(RunOptions(task="mnist", scaling="strong"), SmallCNN, task, world)
    assert "batch_size" not in weak and strong["batch_size"] == 32
    with pytest.raises(DawnbenchError, match="does not divide"):
        per_worker_overrides(RunOptions(task="mnist", scaling="strong", overrides={"batch_size": 63}),
                             SmallCNN, task, world)


def test_accounting_takes_the_slowest_compute_and_the_least_exposed_communication():
    # rank 1 waited 1 s for rank 0 inside its all-reduces: that wait is not communication.
    figures = accounting([[100, 8.0, 2.0, 1.0], [100, 7.0, 3.0, 2.0]], train_s=10.0, epochs=2.0)
    assert figures["comm_overhead_pct"] == pytest.approx(10.0)
    assert figures["accounted_pct"] == pytest.approx(90.0)
    assert figures["time_per_epoch_s"] == pytest.approx(5.0)
    assert figures["comm_hidden_pct"] == pytest.approx(50.0)


@pytest.mark.parametrize("name, task", [("small-cnn", "mnist"), ("mnist-standard", "mnist"),
                                        ("cifar10-resnet20", "cifar10"), ("cifar10-fast", "cifar10")])
@pytest.mark.distributed
def test_every_built_in_entry_trains_under_ddp(name, task, mnist_ready, cifar10_ready, tmp_path):
    """Three steps of each entry's own train on synthetic data, its network wrapped by DDP
    in a one-worker gloo group: DDP refuses a second step when a parameter it was given
    gets no gradient (cifar10-fast once froze a layer after wrapping)."""
    import torch.distributed as dist

    from dawnbench import data
    from dawnbench.entries import load_entry_class
    from dawnbench.entries.base import run_for_steps
    from dawnbench.harness.core import synthetic_context, train_context

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        world = World(rank=0, world_size=1, backend="gloo")
        entry = load_entry_class(name)(get_task(task), torch.device("cpu"), {"batch_size": 64})  # steps, not rates
        scored = data.open_split(get_task(task).dataset, get_task(task).scored_split).head(10)
        ctx = synthetic_context(train_context(entry, get_task(task), 0, "fp32", world=world), scored)
        assert run_for_steps(entry.train(ctx), 3) == 3
        assert isinstance(ctx.distribute(entry.make_model()), torch.nn.parallel.DistributedDataParallel)
    finally:
        dist.destroy_process_group()


# --- real launches ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def scaled(mnist_ready, tmp_path_factory):
    """`scale` over 1 and 2 workers, one run each, to an unofficial 97 %."""
    out = tmp_path_factory.mktemp("scale")
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}  # inherited: default or ignored
    doc = run_scale(ScaleOptions(task="mnist", workers=[1, 2], runs=1, out=out, run_args=["--target", "97"]))
    doc["_handlers"] = before, {s: signal.getsignal(s) for s in before}
    return out, doc


@pytest.mark.distributed
def test_two_workers_write_one_record_with_the_world(scaled):
    out, doc = scaled
    dirs = glob.glob(str(out / "workers-2" / "*"))
    assert len(dirs) == 1                                     # one record, written by rank 0
    result = json.loads((Path(dirs[0]) / "result.json").read_text())
    assert result["status"] == "success"
    d = result["distributed"]
    assert (d["world_size"], d["backend"], d["per_worker_batch_size"], d["global_batch_size"]) == (2, "gloo", 64, 128)
    assert [w["rank"] for w in d["workers"]] == [0, 1]
    assert 0 < d["launch_s"] < 60                            # untimed, but recorded
    assert d["workers"][0]["steps"] == d["workers"][1]["steps"] > 0
    # The accounting adds up: compute + exposed communication explain the timed time.
    assert 0 < d["comm_overhead_pct"] < 100 and 70 < d["accounted_pct"] <= 105
    log = (Path(dirs[0]) / "events.log").read_text()
    assert '"key": "dawnbench_world_size", "value": 2' in log
    assert '"key": "global_batch_size", "value": 128' in log
    assert '"key": "dawnbench_comm_overhead_pct"' in log
    assert check_log(Path(dirs[0]))["valid"]


@pytest.mark.distributed
def test_rank_0_evaluation_equals_one_process_on_the_same_weights(scaled):
    out, _ = scaled
    run_dir = Path(glob.glob(str(out / "workers-2" / "*"))[0])
    result = json.loads((run_dir / "result.json").read_text())
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as in each of the two workers
    try:
        scored = score_model(run_dir, result, "model.pt", {"test": _test_split()}, torch.device("cpu"))
    finally:
        torch.set_num_threads(threads)
    assert scored["values"]["test"] == result["evals"][-1]["value"]


@pytest.mark.distributed
def test_one_worker_under_torchrun_trains_exactly_as_one_process(mnist_run_97, tmp_path, capsys):
    # Same seed, same shuffle, same threads (all the cores), and DDP's all-reduce over one
    # worker is exact: the same evaluations as the plain run.
    assert main(["run", "mnist", "--nproc", "1", "--target", "97", "--out", str(tmp_path), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)  # the launcher prints rank 0's record
    under = json.loads(Path(glob.glob(str(tmp_path / "*"))[0], "result.json").read_text())
    assert printed["runs"][0]["evals"] == under["evals"]
    plain = json.loads((mnist_run_97 / "result.json").read_text())
    assert under["distributed"]["world_size"] == 1
    assert [e["value"] for e in under["evals"]] == [e["value"] for e in plain["evals"]]


@pytest.mark.browser
@pytest.mark.distributed
def test_report_shows_the_workers(scaled, tmp_path):
    from dawnbench.reports.html import build_report

    from helpers import cells, render

    out, _ = scaled
    dom, _ = render(build_report(out, tmp_path / "report"), tmp_path)
    rows = cells(dom, "workers")
    assert [r[2] for r in rows] == ["1", "2"] and rows[1][6] == "64 / 128"
    assert 0 < float(rows[1][9]) < 100


def _test_split():
    from dawnbench import data
    return data.open_split("mnist", "test")


@pytest.mark.distributed
def test_scale_table_and_speedups(scaled):
    out, doc = scaled
    # torchrun's own signal handlers do not outlive the launches: whatever this process had (Python's
    # default, or SIG_IGN when started as a shell's background job) is back.
    before, after = doc["_handlers"]
    assert after == before
    assert [r["workers"] for r in doc["rows"]] == [1, 2]
    one, two = doc["rows"]
    assert one["speedup_epoch"] == 1.0 and one["successes"] == 1
    assert two["speedup_epoch"] == pytest.approx(one["time_per_epoch_s"] / two["time_per_epoch_s"])
    assert two["efficiency_tta"] == pytest.approx(two["speedup_tta"] / 2)
    assert json.loads((out / "scale.json").read_text())["rows"][1]["workers"] == 2
    assert load_job(out / "scale.json").tta_s.keys() == {1, 2}


def _launch(out: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "dawnbench", "run", "mnist", "--nproc", "2", "--max-epochs", "1",
                             "--set", "first_eval_epoch=0.9", "--out", str(out), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _workers_when_running(parent: subprocess.Popen, out: Path) -> list[psutil.Process]:
    """Wait until rank 0 has started the clock; return the launcher's worker processes."""
    deadline = time.time() + 120
    while time.time() < deadline:
        logs = glob.glob(str(out / "*" / "events.log"))
        if logs and '"key": "run_start"' in Path(logs[0]).read_text():
            time.sleep(1.0)
            workers = [p for p in psutil.Process(parent.pid).children(recursive=True)
                       if "RANK" in p.environ()]
            assert len(workers) == 2
            return workers
        assert parent.poll() is None, parent.communicate()[0]
        time.sleep(0.2)
    raise AssertionError("the run did not start within 120 s")


def _settled(parent: subprocess.Popen, out: Path, workers: list[psutil.Process]) -> tuple[int, dict, float]:
    t0 = time.time()
    output, _ = parent.communicate(timeout=120)
    took = time.time() - t0
    left = [w.pid for w in workers if w.is_running() and w.status() != psutil.STATUS_ZOMBIE]
    assert not left, f"processes left behind: {left}\n{output}"
    result = json.loads(Path(glob.glob(str(out / "*" / "result.json"))[0]).read_text())
    return parent.returncode, result, took


@pytest.mark.distributed
def test_a_time_budget_stops_every_worker_at_one_step_and_evaluates(mnist_ready, tmp_path):
    """--max-seconds with two workers: rank 0's clock decides after each step, so no worker waits in a
    step the other has left, and the model is scored where training stopped."""
    start = time.time()
    assert main(["run", "mnist", "--nproc", "2", "--max-seconds", "2", "--out", str(tmp_path)]) == 1
    assert time.time() - start < 90
    [run] = tmp_path.iterdir()
    result = json.loads((run / "result.json").read_text())
    assert result["status"] == "not_reached" and "max_seconds=2" in result["error"]
    assert result["evals"][-1]["stopped_by"] == "max_seconds" and 0 <= result["evals"][-1]["epoch"] < 1
    assert main(["check-log", str(run)]) == 0


@pytest.mark.distributed
def test_a_killed_worker_ends_the_run_as_aborted(mnist_ready, tmp_path):
    parent = _launch(tmp_path)
    workers = _workers_when_running(parent, tmp_path)
    next(w for w in workers if w.environ()["RANK"] == "1").kill()
    code, result, took = _settled(parent, tmp_path, workers)
    assert took < 60
    assert code == 1 and result["status"] == "aborted"
    assert "worker 1 was killed by SIGKILL" in result["error"]


@pytest.mark.distributed
def test_a_hung_worker_ends_the_run_as_aborted_after_the_collective_timeout(mnist_ready, tmp_path):
    parent = _launch(tmp_path, "--collective-timeout", "5")
    workers = _workers_when_running(parent, tmp_path)
    next(w for w in workers if w.environ()["RANK"] == "1").suspend()  # SIGSTOP: alive, silent
    code, result, took = _settled(parent, tmp_path, workers)
    assert took < 60  # 5 s timeout, then torchrun's grace (SHUTDOWN_TIMEOUT_S) before it SIGKILLs the stopped worker
    assert code == 1 and result["status"] == "aborted"
    assert "Timed out" in result["error"] or "timeout" in result["error"].lower()


@pytest.mark.distributed
def test_sigterm_interrupts_every_worker(mnist_ready, tmp_path):
    parent = _launch(tmp_path)
    workers = _workers_when_running(parent, tmp_path)
    os.kill(parent.pid, signal.SIGTERM)
    code, result, took = _settled(parent, tmp_path, workers)
    assert code == 130 and result["status"] == "interrupted"
    assert result["evals"] == [] or result["evals"][-1]["timed_s"] > 0


@pytest.mark.distributed
def test_two_machines_join_through_the_rendezvous(mnist_ready, tmp_path):
    # Two launchers on this machine stand in for two machines: static rendezvous at node
    # 0's address, one worker each; rank 0 (node 0) writes the only record. One thread each: each
    # launcher would otherwise give its worker every core, and two workers would share them twice over.
    with socket.socket() as s:
        s.bind(("localhost", 0))
        port = s.getsockname()[1]
    nodes = [subprocess.Popen([sys.executable, "-m", "dawnbench", "run", "mnist", "--target", "97",
                               "--nproc", "1", "--nnodes", "2", "--node-rank", str(rank), "--threads-per-worker", "1",
                               "--rdzv-endpoint", f"localhost:{port}", "--out", str(tmp_path / f"node{rank}")],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for rank in (1, 0)]
    outputs = [node.communicate(timeout=180)[0] for node in nodes]
    assert [node.returncode for node in nodes] == [0, 0], outputs
    assert not (tmp_path / "node1").exists()
    [record] = glob.glob(str(tmp_path / "node0" / "*" / "result.json"))
    d = json.loads(Path(record).read_text())["distributed"]
    assert (d["world_size"], d["nnodes"]) == (2, 2)
    assert "rank 0 (on node 0) wrote the record" in outputs[0]


def test_bad_launch_options_are_clear_errors(capsys):
    assert main(["run", "mnist", "--nproc", "2", "--nnodes", "2"]) == 2
    assert "--rdzv-endpoint" in capsys.readouterr().err
    assert main(["run", "mnist", "--nproc", "0"]) == 2
    assert main(["run", "mnist", "--nproc", "2", "--scaling", "strong", "--set", "batch_size=63"]) == 2
    assert "does not divide among 2 workers" in capsys.readouterr().err


# --- scheduling ---------------------------------------------------------------------------


def test_schedule_finds_the_known_optimum():
    # Four identical jobs on 4 accelerators: one each in parallel (100 s) beats each on all
    # four in turn (4 × 40 s) and two pairs of two (2 × 60 s).
    jobs = [Job(f"j{i}", {1: 100.0, 2: 60.0, 4: 40.0}) for i in range(4)]
    found, _, searched_orders = best(jobs, 4)
    assert found.makespan == 100.0 and searched_orders
    assert naive(jobs, 4).makespan == 160.0
    # Two long jobs side by side on one accelerator each, then the short one on both: 13 s.
    mix = [Job("a", {1: 10.0, 2: 6.0}), Job("b", {1: 10.0, 2: 6.0}), Job("c", {1: 4.0, 2: 3.0})]
    found, _, _ = best(mix, 2)
    assert found.makespan == 13.0 and naive(mix, 2).makespan == 15.0
    placed = {p.job: p for p in found.placements}
    assert placed["c"].workers == 2 and placed["c"].start == 10.0


def test_schedule_command_writes_both_makespans_and_a_gantt_chart(tmp_path, capsys):
    tables = []
    for name, tta in [("long", {1: 300, 2: 160}), ("short", {1: 100, 2: 70})]:
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"job": name, "rows": [{"workers": k, "tta_s": t} for k, t in tta.items()]}))
        tables.append(str(path))
    assert main(["schedule", *tables, "--accelerators", "2", "--figure", str(tmp_path / "g.png"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["naive"]["makespan_s"] == 230 and doc["best"]["makespan_s"] == 230 - doc["saved_s"]
    assert doc["best"]["makespan_s"] <= doc["naive"]["makespan_s"] and doc["best"]["makespan_s"] >= doc["lower_bound_s"]
    assert (tmp_path / "g.png").stat().st_size > 0
    assert schedule(tables, 2)["best"]["makespan_s"] == doc["best"]["makespan_s"]


def test_bad_scale_tables_name_the_file_and_field(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"job": "x", "rows": [{"workers": 0, "tta_s": 3}]}))
    with pytest.raises(DawnbenchError, match=r"bad.json: field 'rows\[0\].workers' must be ≥ 1"):
        load_job(bad)
    bad.write_text(json.dumps({"job": "x", "rows": [{"workers": 1, "tta_s": None}]}))
    with pytest.raises(DawnbenchError, match="never reached"):
        load_job(bad)
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps({"job": "x", "rows": [{"workers": 1, "tta_s": 3}]}))
    with pytest.raises(DawnbenchError, match="has no measured TTA with 2 workers"):
        schedule([ok], 2)
