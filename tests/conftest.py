"""Shared fixtures: a tiny generated task for harness tests, and the real datasets."""

from __future__ import annotations

import os
import signal
import tarfile
import threading
from pathlib import Path

import numpy as np
import pytest

from dawnbench import data
from dawnbench.data.cache import write_dataset
from dawnbench.tasks import TOP1, Task

THIRD_PARTY = Path(__file__).resolve().parents[1] / "third_party"

# The tiers (README): plain `python -m pytest` runs the fast tier (pyproject's addopts: -m "not slow");
# `python -m pytest -m slow` the rest, which .ci/run adds. `slow`: a test that trains a real network
# to a target, launches workers or jobs, or opens a browser — marked on the test itself, or through a
# fixture that does so (SLOW_FIXTURES); `distributed`: real torchrun workers; `browser`: headless Chromium.
SLOW_FIXTURES = {"mnist_run_97", "cifar10_ready", "imagenet_run", "squad_run"}

# Every fixed wait (torchrun's shutdown grace, srun's wait for the nodes left, the Slurm poll, jobs'
# grace after Ctrl-C) at a fifth: dawnbench/waits.py. Set before any test starts a process, so each
# inherits it; a user's runs keep the waits as written.
os.environ.setdefault("DAWNBENCH_WAIT_SCALE", "0.2")


def _stop(signum: int, _frame: object) -> None:
    pytest.exit(f"stopped by {signal.Signals(signum).name}", returncode=128 + signum)


def pytest_configure(config: pytest.Config) -> None:
    """The suite stops when told: SIGTERM (``timeout``'s, a CI runner's) ends the session, even from inside a
    run under test, which records itself interrupted and then passes the signal on (harness/signals.py)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _stop)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("distributed") or item.get_closest_marker("browser") or \
                SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> tuple[str, str, str] | None:
    """A skip says why in the final summary line itself ("5 skipped (no Slurm cluster: starting slurmctld
    and slurmd needs root)"), not only in the list above it that a log's last line leaves out."""
    if report.skipped and not hasattr(report, "wasxfail") and isinstance(report.longrepr, tuple):
        return f"skipped ({report.longrepr[2].removeprefix('Skipped: ')})", "s", "SKIPPED"
    return None


@pytest.fixture
def tiny_task(tmp_path, monkeypatch) -> Task:
    """A 4-example task in a private cache: test labels are all 0, threshold 50 %."""
    monkeypatch.setenv("DAWNBENCH_DATA", str(tmp_path / "cache"))
    rng = np.random.default_rng(0)
    split = lambda n: (rng.integers(0, 256, (n, 4, 4), dtype=np.uint8), np.zeros(n, dtype=np.int64))
    write_dataset("tiny", {"train": split(8), "test": split(4)}, {"source": "generated"})
    return Task("tiny", "tiny", TOP1, 50.0, "test", default_entry="none")


@pytest.fixture(scope="session")
def mnist_ready() -> None:
    """The real MNIST (SPEC §1 source), fetched into the user's cache once."""
    data.ensure("mnist")


@pytest.fixture(scope="session")
def cifar10_ready() -> None:
    data.ensure("cifar10")


@pytest.fixture(scope="session")
def mnist_run_97(mnist_ready, tmp_path_factory):
    """One real small-cnn run on MNIST to 97 % (unofficial target), shared by the tests that read it
    (a test that writes into it copies it first)."""
    from dawnbench import RunOptions, run_many

    [result] = run_many(RunOptions(task="mnist", target=97.0, out_dir=tmp_path_factory.mktemp("mnist97")))
    return Path(result.run_dir)


def _unpack(name: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A reference data set from ``third_party/`` (see its README), unpacked once per session."""
    root = tmp_path_factory.mktemp(name)
    with tarfile.open(THIRD_PARTY / f"{name}.tar.xz") as tar:
        tar.extractall(root, filter="data")
    return root / name


@pytest.fixture(scope="session")
def mlperf_v05(tmp_path_factory) -> Path:
    """NVIDIA's MLPerf Training v0.5 result logs (SPEC §10), as published."""
    return _unpack("mlperf-training-v0.5", tmp_path_factory)


@pytest.fixture(scope="session")
def dawnbench_entries(tmp_path_factory) -> Path:
    """The 118 public DAWNBench entries, byte for byte (their CRLFs and BOMs are what the validator is for)."""
    return _unpack("dawnbench-entries", tmp_path_factory)


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory, mnist_ready):
    """One real two-node Slurm cluster for the whole test run (tests/slurm_cluster.py: two slurmd on this
    host, n1 and n2), each node declaring 4 CPUs at least: the single-node batches of test_slurm.py, the
    multi-node runs and faults of test_slurm_nodes.py (three of them at once), and the idle job that waits
    out its time limit beside them. Jobs inherit no OMP_NUM_THREADS: their threads come from Slurm's CPUs."""
    from slurm_cluster import ClusterUnavailable, SlurmCluster

    try:
        with SlurmCluster(tmp_path_factory.mktemp("slurm"), cpus=max(4, os.cpu_count() or 1), nodes=2) as started:
            started.env.pop("OMP_NUM_THREADS", None)
            yield started
    except ClusterUnavailable as why:
        if os.environ.get("DAWNBENCH_REQUIRE_SLURM") == "1":
            raise
        pytest.skip(f"no Slurm cluster: {why}")

