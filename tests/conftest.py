"""Shared fixtures: a tiny generated task for harness tests, and the real datasets."""

from __future__ import annotations

import tarfile
from pathlib import Path

import numpy as np
import pytest

from dawnbench import data
from dawnbench.data.cache import write_dataset
from dawnbench.tasks import TOP1, Task

THIRD_PARTY = Path(__file__).resolve().parents[1] / "third_party"

# The markers (README: the fast subset is `-m "not slow"`). `distributed`: real torchrun
# workers; `browser`: headless Chromium; `slow`: those two, whole modules that train real
# networks, and tests that need a trained model or CIFAR-10.
SLOW_MODULES = {"test_distributed", "test_small_cnn", "test_crash_safety", "test_cifar10_entries"}
SLOW_FIXTURES = {"mnist_run_97", "cifar10_ready", "imagenet_run", "squad_run"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        module = item.module.__name__ if item.module else ""
        if module == "test_distributed":
            item.add_marker(pytest.mark.distributed)
        if (module in SLOW_MODULES or SLOW_FIXTURES & set(getattr(item, "fixturenames", ()))
                or item.get_closest_marker("browser")):
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
    split = lambda n: (rng.integers(0, 256, (n, 4, 4), dtype=np.uint8), np.zeros(n, dtype=np.int64))  # noqa: E731
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
