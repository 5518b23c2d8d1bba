"""Past one machine, tested for real (SPEC §22): a two-node Slurm cluster on this host (two slurmd, each in
a UTS namespace of its own, tests/slurm_cluster.py). A run's workers on both nodes meeting at the first
node's rendezvous, as one job; the faults across nodes — a worker killed on the second node, the first
node's rendezvous port taken, the job requeued by the scheduler, the second node lost — each ending in a
record that says what happened, with no job and no process left; and all-reduce across the nodes."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor

import psutil
import pytest

from dawnbench.cli import main

import slurm_faults as faults
from slurm_cluster import cluster_left_in_service
from slurm_faults import HOLD, TWO, records

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster(slurm_cluster):
    return slurm_cluster


@pytest.fixture
def on_cluster(cluster, monkeypatch, tmp_path):
    monkeypatch.setenv("SLURM_CONF", str(cluster.conf))
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    yield cluster
    deadline = time.monotonic() + 30
    while cluster.queue() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert cluster.queue() == [], "a test left jobs on the cluster"
    cluster_left_in_service(cluster)
    left = [p.pid for p in psutil.process_iter(["cmdline"]) if str(tmp_path) in " ".join(p.info["cmdline"] or [])]
    assert not left, f"processes of the test's jobs left behind: {left}"


def test_a_two_worker_run_is_one_job_on_both_nodes(on_cluster, tmp_path, capsys):
    assert main(["run", "mnist", *HOLD, "--set", "seconds=1", *TWO, "--out", str(tmp_path / "slurm"), "--json"]) == 1
    capsys.readouterr()
    [record] = records(tmp_path / "slurm")
    assert record["status"] == "not_reached" and record["distributed"]["world_size"] == 2
    assert record["distributed"]["nnodes"] == 2 and record["scheduler"]["node_names"] == ["n1", "n2"]
    assert record["scheduler"]["state"] == "COMPLETED" and record["scheduler"]["restarts"] == 0
    # the same fields as a run of two workers here
    assert main(["run", "mnist", *HOLD, "--set", "seconds=1", "--nproc", "2", "--out", str(tmp_path / "local")]) == 1
    [local] = records(tmp_path / "local")
    assert local["scheduler"] is None and local["distributed"]["nnodes"] == 1
    assert set(local) == set(record) and set(local["distributed"]) == set(record["distributed"])
    # the monitor adds `interference` where other work took the cores (two nodes' workers and daemons share
    # this machine's): whether it does depends on how busy the machine is, not on the executor
    assert set(local["resources"]) - {"interference"} == set(record["resources"]) - {"interference"}


def test_scale_puts_each_worker_count_on_its_nodes(on_cluster, tmp_path, capsys):
    """`scale --workers 1,2 --workers-per-node 1`: one worker on one node, then two workers on two."""
    assert main(["scale", "mnist", *HOLD, "--set", "seconds=1", "--workers", "1,2", "--runs", "1",
                 "--workers-per-node", "1", "--cpus-per-run", "1", "--executor", "slurm",
                 "--out", str(tmp_path), "--json"]) == 0
    capsys.readouterr()
    found = {(r["distributed"] or {"world_size": 1})["world_size"]: r for r in records(tmp_path)}
    assert sorted(found) == [1, 2] and all(r["status"] == "not_reached" for r in found.values()), \
        {n: (r["status"], r["error"]) for n, r in found.items()}
    assert found[2]["distributed"]["nnodes"] == 2 and found[2]["scheduler"]["node_names"] == ["n1", "n2"]
    assert len(found[1]["scheduler"]["node_names"]) == 1


def test_all_reduce_across_the_two_nodes(on_cluster, tmp_path):
    """`srun` starts `kernels allreduce` on each node (the documented recipe); node 0 writes kernels.json."""
    out, port = tmp_path / "k", _free_port()
    proc = subprocess.run(["srun", "-N", "2", "--ntasks-per-node", "1", "sh", "-c",
                           f"{sys.executable} -m dawnbench kernels allreduce --quick --nproc 1 --nnodes 2 "
                           f"--node-rank $SLURM_NODEID --rdzv-endpoint 127.0.0.1:{port} --out {out}"],
                          capture_output=True, text=True, env=on_cluster.env, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads((out / "kernels.json").read_text())
    rows = [r for r in doc["rows"] if r["suite"] == "allreduce"]
    assert rows and all(r["world_size"] == 2 and r["nnodes"] == 2 and r["sum_checked"] for r in rows)


# --- faults across nodes (the scenarios: tests/slurm_faults.py; their evidence: benchmarks/slurm_faults.py) ---

def _nothing_left(outcome: faults.Outcome) -> None:
    assert outcome.jobs_left == [] and outcome.processes_left == [], outcome.summary()


@pytest.fixture(scope="module")
def side_by_side(cluster, tmp_path_factory) -> dict[str, Future]:
    """The independent faults, started at once (each a job of its own on both nodes); each test reads its
    own outcome, so one scenario's failure fails only its test."""
    cluster.heal()
    pool = ThreadPoolExecutor(len(faults.SIDE_BY_SIDE))
    started = {f.__name__: pool.submit(f, cluster, tmp_path_factory.mktemp(f.__name__)) for f in faults.SIDE_BY_SIDE}
    yield started
    pool.shutdown(wait=True)


def test_a_worker_killed_on_the_second_node_ends_the_run_aborted(side_by_side):
    outcome = side_by_side["worker_killed"].result()
    record = outcome.record
    assert outcome.exit == 1 and record["status"] == "aborted", outcome.summary()
    assert "Connection" in record["error"] and record["scheduler"]["state"] == "FAILED", record["error"]
    assert record["scheduler"]["node_names"] == ["n1", "n2"] and outcome.noticed_s < 60
    assert record["timed_s"] > 0 and record["distributed"]["world_size"] == 2     # what it measured, kept
    _nothing_left(outcome)


def test_the_first_nodes_rendezvous_port_taken_is_a_record_that_names_it(side_by_side):
    outcome = side_by_side["port_taken"].result()
    assert outcome.record["status"] == "aborted", outcome.summary()
    assert f"127.0.0.1:{outcome.details['port']} failed on node 0" in outcome.record["error"]
    assert "address already in use" in outcome.record["error"]
    _nothing_left(outcome)


def test_a_job_requeued_by_the_scheduler_is_recorded_and_resume_completes_it(side_by_side):
    outcome = side_by_side["requeued"].result()
    record = outcome.record
    assert record["status"] == "interrupted" and record["scheduler"]["state"] == "REQUEUED", outcome.summary()
    assert "requeued by the scheduler" in record["error"] and "--resume" in record["error"]
    assert record["scheduler"]["node_names"] == ["n1", "n2"] and record["scheduler"]["restarts"] == 1
    assert outcome.resumed["status"] == "not_reached" and len(outcome.details["superseded"]) == 1
    _nothing_left(outcome)


def test_the_second_node_lost_mid_run_ends_in_a_record_and_leaves_nothing(on_cluster, tmp_path):
    """Last: it kills a node (and starts it again). The run on n1 loses its peer; Slurm notices the node is
    gone and requeues the job, or the job fails first; the batch records the attempt either way."""
    outcome = faults.node_lost(on_cluster, tmp_path)
    record = outcome.record
    assert outcome.exit == 1 and record["status"] in ("aborted", "interrupted"), outcome.summary()
    assert record["scheduler"]["state"] in ("REQUEUED", "NODE_FAIL", "FAILED") and outcome.noticed_s < 120
    assert record["scheduler"]["node_names"] == ["n1", "n2"] and record["timed_s"] > 0
    _nothing_left(outcome)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
