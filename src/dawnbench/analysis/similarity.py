"""Workload similarity (SPEC §14; the MLPerf characterisation's §4.1, Figures 1–2).

    doc = similarity(["runs/", "profiles/"], pick=3, out=Path("similarity"))

Every run directory (``result.json``), profile directory (``summary.json`` of
``dawnbench profile``) and kernel result (``kernels.json`` of ``dawnbench kernels``) under
the paths is read (:mod:`~dawnbench.analysis.workloads`); they are grouped into
*configurations* — task, entry, precision, batch size (and a profile's ``--without``
variant); for kernels, a suite and precision (or, ``per_problem``, one problem) — and
each configuration gets a vector of characteristics, the median over its records:

==================  ============================================  ==================
characteristic      meaning                                       from
==================  ============================================  ==================
cpu_util_pct        the run's CPU over all its workers, 100 = one core   runs, profiles
gpu_util_pct        its accelerators' busy %, summed              runs, profiles
host_mem_gib        peak summed RSS of all its processes          runs, profiles
device_mem_gib      peak accelerator memory, summed               runs, profiles
pcie_mbps           PCIe traffic, both directions, summed         runs, profiles
achieved_gflops     training FLOP/s                               runs, profiles
memory_gbps         bytes read + written per second by the ops    profiles
intensity           FLOP per byte of the whole step               profiles
memory_bound_share  share of op time in memory-bound ops          profiles
samples_per_s       training samples per second                   runs, profiles
epochs_to_target    epochs at the first passing evaluation        runs
==================  ============================================  ==================

A characteristic no configuration has, or one that is the same everywhere (GPU
columns on a CPU), is left out and said so; one that only some configurations have
is filled with the median of the others, and said so. The vectors are standardised
(z-scores), reduced with PCA (scikit-learn: explained variance per component) and
clustered with Ward's method (SciPy: the dendrogram). ``pick=K`` cuts the tree
into K clusters and picks from each the configuration nearest its centre: the K
benchmarks a user with a small budget should run, with the share of each
characteristic's range (over all configurations) that the picks span.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dawnbench.analysis.workloads import collect, number, system_measures
from dawnbench.errors import DawnbenchError
from dawnbench.io import atomic_write_json, output_dir


def _system(name: str, scale: float = 1.0) -> Callable[[dict], float | None]:
    def get(doc: dict) -> float | None:
        value = system_measures(doc.get("resources"))[name]
        return None if value is None else value / scale
    return get


def _run_flops(doc: dict) -> float | None:
    achieved = number(doc, "throughput", "achieved_gflops")
    if achieved is not None:
        return achieved
    per_s = number(doc, "step", "flops_per_s")
    return per_s / 1e9 if per_s else None


def _memory_gbps(doc: dict) -> float | None:
    moved, seconds = number(doc, "step", "bytes"), number(doc, "step", "time_s")
    return moved / seconds / 1e9 if moved and seconds else None


def _samples_per_s(doc: dict) -> float | None:
    return number(doc, "throughput", "samples_per_s") or number(doc, "samples_per_s")


CHARACTERISTICS: dict[str, Callable[[dict], float | None]] = {
    "cpu_util_pct": _system("cpu_util_pct"),
    "gpu_util_pct": _system("accel_util_pct"),
    "host_mem_gib": _system("host_mem_mib", 1024),
    "device_mem_gib": _system("accel_mem_mib", 1024),
    "pcie_mbps": _system("pcie_mbps"),
    "achieved_gflops": _run_flops,
    "memory_gbps": _memory_gbps,
    "intensity": lambda d: number(d, "step", "intensity"),
    "memory_bound_share": lambda d: number(d, "memory_bound_share"),
    "samples_per_s": _samples_per_s,
    "epochs_to_target": lambda d: number(d, "epochs_to_target"),
}


def characteristics(docs: Sequence[dict[str, Any]], where: str, left_out: Sequence[str] = ()
                    ) -> tuple[list[str], list[str], np.ndarray, list[str]]:
    """(configuration names, characteristic names, matrix, notes) of the workload documents ``docs``
    (found under ``where``, with what was ``left_out``: for the message when there are too few)."""
    per_config: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for doc in docs:
        for name, get in CHARACTERISTICS.items():
            value = get(doc)
            if value is not None and np.isfinite(value):
                per_config[doc["_config"]][name].append(float(value))
    configs = sorted(per_config)
    if len(configs) < 3:
        why = f" Left out: {'; '.join(left_out[:5])}." if left_out else ""
        raise DawnbenchError(f"{where}: {len(configs)} configuration(s) found; similarity needs at least 3.{why} "
                             "Add runs, profiles or kernel results of other entries, precisions or batch sizes.")
    notes: list[str] = []
    columns, matrix = [], []
    for name in CHARACTERISTICS:
        values = [statistics.median(per_config[c][name]) if per_config[c].get(name) else None for c in configs]
        known = [v for v in values if v is not None]
        if len(known) < 2:
            notes.append(f"{name}: in {'no' if not known else 'only one'} configuration, left out")
            continue
        if max(known) - min(known) <= 1e-9 * max(1.0, abs(max(known))):
            notes.append(f"{name}: the same in every configuration, left out")
            continue
        missing = [c for c, v in zip(configs, values) if v is None]
        if missing:
            fill = statistics.median(known)
            notes.append(f"{name}: missing for {', '.join(missing)}; filled with the median {fill:.3g}")
            values = [fill if v is None else v for v in values]
        columns.append(name)
        matrix.append(values)
    if len(columns) < 2:
        raise DawnbenchError("fewer than 2 characteristics differ between the configurations found; "
                             "nothing to compare. " + "; ".join(notes))
    return configs, columns, np.array(matrix, dtype=float).T, notes


def analyse(configs: list[str], columns: list[str], matrix: np.ndarray, pick: int | None = None) -> dict[str, Any]:
    """Standardise, PCA, Ward clustering and (with ``pick``) K representatives."""
    from scipy.cluster.hierarchy import fcluster, linkage
    from sklearn.decomposition import PCA

    z = (matrix - matrix.mean(axis=0)) / matrix.std(axis=0)
    pca = PCA(n_components=min(len(configs), len(columns)))
    scores = pca.fit_transform(z)
    tree = linkage(z, method="ward")
    doc: dict[str, Any] = {
        "configurations": configs, "characteristics": columns,
        "values": matrix.tolist(), "standardised": z.tolist(),
        "explained_variance": pca.explained_variance_ratio_.tolist(),
        "loadings": {f"PC{i + 1}": dict(zip(columns, comp.tolist())) for i, comp in enumerate(pca.components_)},
        "scores": scores.tolist(), "linkage": tree.tolist(),
    }
    if pick is not None:
        if not isinstance(pick, int) or not 1 <= pick <= len(configs):
            raise DawnbenchError(f"--pick {pick}: choose between 1 and the {len(configs)} configurations found.")
        labels = fcluster(tree, pick, criterion="maxclust")
        picks = []
        for label in sorted(set(labels)):
            members = np.flatnonzero(labels == label)
            centre = z[members].mean(axis=0)
            picks.append(int(members[np.argmin(((z[members] - centre) ** 2).sum(axis=1))]))
        span = matrix.max(axis=0) - matrix.min(axis=0)
        covered = matrix[picks].max(axis=0) - matrix[picks].min(axis=0)
        doc.update(clusters=[int(x) for x in labels], picks=[configs[i] for i in picks],
                   coverage=dict(zip(columns, (covered / span).tolist())))
    return doc


def similarity(paths: Sequence[str | Path], pick: int | None = None, out: Path | None = None,
               per_problem: bool = False) -> dict[str, Any]:
    if out is not None:
        output_dir(out)
    found = collect(paths, per_problem)
    configs, columns, matrix, notes = characteristics(found.docs, ", ".join(map(str, paths)), found.notes)
    notes = [*found.notes, *notes]
    doc = analyse(configs, columns, matrix, pick)
    kinds = {d["_config"]: d["_kind"] for d in found.docs}
    doc["kinds"] = [kinds[c] for c in configs]  # run, profile or kernels: the figures colour by it
    doc["notes"] = notes
    if out is not None:
        atomic_write_json(out / "similarity.json", doc, indent=1)
    return doc
