"""Faults across nodes, measured (SPEC §22): what the record says and how long the batch took to notice.

    python benchmarks/slurm_faults.py        # as root (it starts the tests' two-node cluster), ~3 minutes

Starts the tests' two-node cluster (``tests/slurm_cluster.py``: two slurmd on this host, n1 and n2) and
tries each fault of ``tests/slurm_faults.py`` once, one after the other — the scenarios the suite asserts
(``tests/test_slurm_nodes.py``): a worker on the second node killed, the first node's rendezvous port
taken, the job requeued by the scheduler (then ``--resume``), the second node lost. Each outcome is
stored as the batch saw it: its exit code, the record's status, error and scheduler fields, seconds from
the fault to the batch's return, and any job or process left behind. Before the faults, one clean
two-node run is timed as the reference.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

from dawnbench.distributed.launch import RDZV_TIMEOUT_S
from dawnbench.experiments.slurm import NODES_WAIT_S

import bench  # first: it puts tests/ on the path, whose scenarios and cluster are run as they are
import slurm_faults as faults
from slurm_cluster import SlurmCluster


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="dawnbench-slurm-faults-") as tmp, \
            SlurmCluster(Path(tmp) / "cluster", cpus=2, nodes=2) as cluster:
        outcomes = []
        for scenario in (faults.clean_run, *faults.SCENARIOS):
            print(f"{scenario.__name__} …", flush=True)
            outcome = scenario(cluster, Path(tmp) / scenario.__name__)
            outcomes.append({"scenario": scenario.__name__, **outcome.summary()})
            print(f"  {outcome.record['status']}: {outcome.record['error']}  (noticed in {outcome.noticed_s} s)")
        config = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, env=cluster.env).stdout
        slurmd_timeout = re.search(r"SlurmdTimeout\s*=\s*(.+)", config).group(1).strip()   # "10 sec"
    bench.write("slurm_faults", {"nodes": ["n1", "n2"], "cpus_per_node": 2, "nodes_wait_s": NODES_WAIT_S,
                                    "rdzv_timeout_s": RDZV_TIMEOUT_S, "slurmd_timeout": slurmd_timeout,
                                    "outcomes": outcomes})
    return 0


if __name__ == "__main__":
    sys.exit(main())
