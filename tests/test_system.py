"""What a workload asks of the whole machine (SPEC §20): resources over every worker and its children,
accelerator columns (NVML faked at the library boundary), topology, the job types, --p2p."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import psutil
import pytest
import torch

from dawnbench import environment
from dawnbench.cli import main
from dawnbench.environment import git_state, topology
from dawnbench.experiments.jobs import shares
from dawnbench.profiling.resources import ResourceMonitor

HERE = Path(__file__).resolve().parent


class _Value:
    def __init__(self, value: float, ok: bool = True) -> None:
        self.nvmlReturn = 0 if ok else 1
        self.value = types.SimpleNamespace(ullVal=int(value))


def fake_nvml(nvlink: bool = True, gpus: int = 2) -> types.SimpleNamespace:
    """NVML as pynvml presents it, for two GPUs joined by two NVLinks: every reading known in advance."""
    clock = {"tx": 0.0}

    def field_values(handle, fields):
        clock["tx"] += 1024.0 * (handle + 1)          # KiB since the last reading: 1 MiB (GPU0), 2 MiB (GPU1)
        return [_Value(clock["tx"], nvlink), _Value(clock["tx"] / 2, nvlink)]

    def remote(handle, link):
        if link >= 2:
            raise RuntimeError("no such link")
        return types.SimpleNamespace(busId=f"0000:0{1 - handle}:00.0".encode())

    return types.SimpleNamespace(
        nvmlInit=lambda: None, nvmlDeviceGetCount=lambda: gpus, nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetUtilizationRates=lambda h: types.SimpleNamespace(gpu=40 + 10 * h),
        nvmlDeviceGetMemoryInfo=lambda h: types.SimpleNamespace(used=(h + 1) * 2**30),
        nvmlDeviceGetPowerUsage=lambda h: 250_000, NVML_PCIE_UTIL_TX_BYTES=0, NVML_PCIE_UTIL_RX_BYTES=1,
        nvmlDeviceGetPcieThroughput=lambda h, counter: 1000.0 * (counter + 1),
        NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX=138, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX=139, NVML_SUCCESS=0,
        nvmlDeviceGetFieldValues=field_values,
        nvmlDeviceGetPciInfo=lambda h: types.SimpleNamespace(busId=f"0000:0{h}:00.0".encode()),
        nvmlDeviceGetName=lambda h: b"Fake GPU", nvmlDeviceGetCpuAffinity=lambda h, n: [0b1111 << (4 * h)],
        nvmlDeviceGetNumaNodeId=lambda h: h, nvmlDeviceGetCurrPcieLinkGeneration=lambda h: 4,
        nvmlDeviceGetCurrPcieLinkWidth=lambda h: 16, nvmlDeviceGetMaxPcieLinkGeneration=lambda h: 5,
        nvmlDeviceGetMaxPcieLinkWidth=lambda h: 16, NVML_NVLINK_MAX_LINKS=4, NVML_FEATURE_ENABLED=1,
        nvmlDeviceGetNvLinkState=lambda h, link: 1 if nvlink else 0, nvmlDeviceGetNvLinkRemotePciInfo=remote,
        nvmlDeviceGetTopologyCommonAncestor=lambda a, b: 50, NVML_P2P_CAPS_INDEX_READ=0, NVML_P2P_STATUS_OK=0,
        nvmlDeviceGetP2PStatus=lambda a, b, cap: 0)


def test_without_nvml_the_accelerator_columns_are_absent_and_said_so(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    with ResourceMonitor(tmp_path / "r.tsv", interval=0.05, devices=[0]) as monitor:
        time.sleep(0.2)
    header = (tmp_path / "r.tsv").read_text().splitlines()[0].split("\t")
    assert not any(c.startswith(("gpu", "accel")) for c in header) and "run_rss_bytes" in header
    summary = monitor.summary()
    assert "NVML not available" in summary["accelerators"]["absent"]["accelerators"]
    assert "accel_util_pct" not in summary and summary["run_rss_bytes"]["max"] > 0


def test_accelerator_columns_per_device_and_summed(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml())
    with ResourceMonitor(tmp_path / "r.tsv", interval=0.05, devices=[0, 1]) as monitor:
        time.sleep(0.3)
    summary = monitor.summary()
    assert summary["accelerators"]["devices"] == [0, 1] and not summary["accelerators"]["absent"]
    assert summary["gpu0_util_pct"]["mean"] == 40 and summary["gpu1_util_pct"]["mean"] == 50
    assert summary["accel_util_pct"]["max"] == 90                      # summed over the devices: up to 100 × N
    assert summary["accel_mem_used_bytes"]["max"] == 3 * 2**30
    assert summary["accel_pcie_mbps"]["mean"] == pytest.approx(2 * (1000 + 2000) * 1000 / 1e6)   # KB/s -> MB/s
    assert summary["gpu0_nvlink_tx_kbps"]["max"] > 0 and summary["accel_nvlink_mbps"]["max"] > 0


def test_absent_nvlink_counters_are_absent_not_zero(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml(nvlink=False))
    with ResourceMonitor(tmp_path / "r.tsv", interval=0.05, devices=[1]) as monitor:
        time.sleep(0.15)
    header = (tmp_path / "r.tsv").read_text().splitlines()[0]
    assert "nvlink" not in header and "gpu1_util_pct" in header and "gpu0_util_pct" not in header
    summary = monitor.summary()
    assert "accel_nvlink_mbps" not in summary and "nvlink_tx_kbps" in summary["accelerators"]["absent"]


def test_the_topology_matrix(monkeypatch):
    from rich.console import Console

    from dawnbench.cli.utilisation import topology_table

    doc = topology(nvml=fake_nvml())
    accel = doc["accelerators"]
    assert accel["links"] == [["X", "NV2"], ["NV2", "X"]] and accel["p2p_read"] == [[None, True], [True, None]]
    assert accel["devices"][1] == {"index": 1, "name": "Fake GPU", "pci_bus": "0000:01:00.0",
                                   "pcie": {"gen": 4, "width": 16, "max_gen": 5, "max_width": 16}, "numa_node": 1,
                                   "cpu_affinity": "4-7"}
    pcie = topology(nvml=fake_nvml(nvlink=False))["accelerators"]["links"]
    assert pcie == [["X", "SYS"], ["SYS", "X"]]
    console = Console(width=160, record=True)
    console.print(topology_table(doc))
    text = console.export_text()
    assert "NV2" in text and "gen4 x16 / gen5 x16" in text and "4-7" in text
    assert "cpu" in doc and doc["cpu"]["logical_cpus"] >= 1 and doc["cpu"]["numa_nodes"]


def test_git_state_answers_only_for_what_the_repository_tracks_and_says_when_it_could_not_check(tmp_path):
    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.email=a@b", "-c", "user.name=a", *args], cwd=tmp_path, check=True,
                       capture_output=True)
    git("init", "-q")
    (tmp_path / "a.py").write_text("x = 1\n")
    git("add", "a.py")
    git("commit", "-q", "-m", "a")
    state = git_state(tmp_path, only="a.py")
    assert len(state["commit"]) == 40 and state["dirty"] is False
    (tmp_path / "a.py").write_text("x = 2\n")
    assert git_state(tmp_path, only="a.py")["dirty"] is True
    copy = tmp_path / "copy"           # a checkout copied without its .git into another repository's folder
    copy.mkdir()
    (copy / "b.py").write_text("")
    assert git_state(copy) == git_state(copy, only="b.py") == {"commit": None, "dirty": None}
    (tmp_path / "[a].py").write_text("")   # untracked, named like a pattern that matches a.py
    assert git_state(tmp_path, only="[a].py") == git_state(tmp_path, only=":!b.py") == {"commit": None, "dirty": None}
    (tmp_path / ".git" / "index").write_bytes(b"garbage")    # git can no longer check the tree
    assert git_state(tmp_path, only="a.py")["dirty"] is None


def test_provenance_calls_the_code_dirty_only_when_the_package_changed(tmp_path, monkeypatch):
    """Results a command writes into the checkout (the benchmarks' docs/) do not make the next one look dirty."""
    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.email=a@b", "-c", "user.name=a", *args], cwd=tmp_path, check=True,
                       capture_output=True)
    package, docs = tmp_path / "src" / "dawnbench", tmp_path / "docs"
    package.mkdir(parents=True)
    docs.mkdir()
    (package / "environment.py").write_text("x = 1\n")
    (docs / "profile.json").write_text("{}\n")
    git("init", "-q")
    git("add", ".")
    git("commit", "-q", "-m", "a")
    monkeypatch.setattr(environment, "__file__", str(package / "environment.py"))
    (docs / "profile.json").write_text('{"step": 1}\n')
    made = environment.provenance(torch.device("cpu"))
    assert len(made["commit"]) == 40 and made["dirty"] is False
    (package / "environment.py").write_text("x = 2\n")
    assert environment.provenance(torch.device("cpu"))["dirty"] is True


@pytest.mark.slow
@pytest.mark.distributed
def test_two_workers_and_their_loaders_are_summed(mnist_ready, tmp_path):
    """Each of 2 gloo workers holds 256 MiB and reads through a DataLoader worker: the run's host memory
    is over both, and its CPU over all four processes."""
    assert main(["run", "mnist", "--entry", str(HERE / "holding_entry.py"), "--nproc", "2", "--target", "100",
                 "--resource-interval", "0.2", "--p2p", "off", "--out", str(tmp_path)]) == 1
    [run] = tmp_path.iterdir()
    result = json.loads((run / "result.json").read_text())
    res = result["resources"]
    assert res["processes"] == 2                                      # rank 0 and its peer; their children too
    assert res["run_rss_bytes"]["max"] > 2 * 256 * 2**20 > res["proc_rss_bytes"]["max"] - 256 * 2**20
    assert res["proc_cpu_pct"]["max"] > 100                           # more than one core: the other worker's
    assert result["interconnect"]["p2p"] == "off" and "no effect" in result["interconnect"]["note"]
    assert result["distributed"]["cpu_affinity"]


@pytest.mark.parametrize(("cores", "slots", "expected"), [
    ([0], 1, [[0]]),
    ([0, 1], 2, [[0], [1]]),
    ([0, 1, 2], 2, [[0], [1]]),                                  # the odd core idles: shares stay equal
    ([0, 1, 2], 3, [[0], [1], [2]]),
    (list(range(16)), 2, [list(range(8)), list(range(8, 16))]),
    (list(range(16)), 3, [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [10, 11, 12, 13, 14]]),
    ([4, 5, 6, 7], 2, [[4, 5], [6, 7]]),                         # an affinity that does not start at 0
])
def test_shares_deal_the_cores_in_equal_disjoint_sets(cores, slots, expected):
    assert shares(slots, 0, cores) == [{"cpus": c} for c in expected]
    assert shares(slots, 2) == [{"gpu": i} for i in range(slots)]


def test_a_types_cpu_is_weighted_by_how_long_each_run_ran():
    """Two runs side by side, one of 116 s at 100 % and one of 10 s at 100 %, over a 116 s type: the
    machine carried about 1.09 cores on average, not 2 (what summing the two means said)."""
    from dawnbench.experiments.jobs import _row
    from dawnbench.records.record import RunResult

    def result(seconds: float) -> RunResult:
        return RunResult(task="mnist", entry="e", seed=0, status="success", official=True, metric="top1",
                         threshold=99.0, run_dir="r", resources={
                             "proc_cpu_pct": {"mean": 100.0, "max": 100.0}, "sampled_s": seconds,
                             "run_rss_bytes": {"mean": 1.0, "max": 100 * 2**20}})

    row = _row("mixed", [result(116.0), result(10.0)], 116.0, ["a", "b"], [])
    assert row["cpu_util_pct"] == pytest.approx(100 * (116 + 10) / 116)
    assert row["host_mem_mib"] == pytest.approx(200.0)                  # peaks, summed


# Two slots where the machine has two cores or more; on one core, one (jobs refuses more slots than cores).
SLOTS = min(2, len(os.sched_getaffinity(0)))


@pytest.mark.slow
def test_jobs_runs_three_ways_and_pins_each_share(mnist_ready, tmp_path, capsys):
    assert main(["jobs", "mnist", "--slots", str(SLOTS), "--max-epochs", "0.05",
                 "--out", str(tmp_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["type"] for r in doc["rows"]] == ["distributed", "multiple", "mixed"]
    assert doc["shares"] == shares(SLOTS, 0)                           # this machine's cores, dealt out
    distributed, multiple, mixed = doc["rows"]
    assert distributed["runs"] == 1 and multiple["runs"] == SLOTS and mixed["runs"] == SLOTS
    assert mixed["configurations"] == ["mnist/mnist-standard", "mnist/small-cnn"][:SLOTS]
    for row in doc["rows"]:
        assert row["samples_per_s"] > 0 and row["cpu_util_pct"] > 0 and row["host_mem_mib"] > 0
    seeds, cores = set(), []
    for run_dir in multiple["run_dirs"]:
        record = json.loads((Path(run_dir) / "result.json").read_text())
        seeds.add(record["seed"])
        cores.append(record["hardware"]["cores"])
    assert seeds == set(range(SLOTS)) and cores == [len(share["cpus"]) for share in doc["shares"]]   # pinned to its share
    [d] = distributed["run_dirs"]
    assert json.loads((Path(d) / "result.json").read_text())["distributed"]["cpu_affinity"] == doc["shares"][0]["cpus"]
    assert (tmp_path / "jobs.png").is_file() and json.loads((tmp_path / "jobs.json").read_text())["rows"]


@pytest.mark.slow
def test_ctrl_c_during_jobs_leaves_no_process_and_every_run_recorded(mnist_ready, tmp_path):
    jobs = subprocess.Popen([sys.executable, "-m", "dawnbench", "jobs", "mnist", "--slots", str(SLOTS), "--types",
                             "multiple", "--max-epochs", "1", "--out", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 120
    while time.time() < deadline:
        logs = list(tmp_path.glob("multiple/slot-*/*/events.log"))
        if len(logs) == SLOTS and all('"key": "run_start"' in log.read_text() for log in logs):
            break
        time.sleep(0.3)
    family = psutil.Process(jobs.pid).children(recursive=True)
    jobs.send_signal(signal.SIGINT)
    output, _ = jobs.communicate(timeout=120)
    assert jobs.returncode == 130, output
    gone, alive = psutil.wait_procs(family, timeout=10)
    assert not alive, f"left behind: {alive}"
    statuses = [json.loads(p.read_text())["status"] for p in tmp_path.glob("multiple/slot-*/*/result.json")]
    assert statuses == ["interrupted"] * SLOTS
