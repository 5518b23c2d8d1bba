"""GPUs predicted from their datasheets (SPEC §24), validated leave-one-GPU-out, and the users' question answered.

    python benchmarks/datasheet_prediction.py          # ~3 minutes on 2 cores; evidence: datasheet_prediction-*.json

Sections, in order:

1. **kernels** — every class of the kernel model (``prediction/gpu_model.py``) fitted without one of NeuSight's
   five GPUs and judged on that GPU's timings: median and 90th-percentile absolute error per class and GPU, and
   per class over all five (judged against ``datasheet_prediction.kernel_median`` in ``targets.json``).
2. **whole models** — every label NeuSight carries here (``prediction/neusight/labels.csv``: forward, plus backward
   in training, as measured), its model counted by ``profile --census`` on the meta device and predicted on the
   label's GPU from its datasheet with that GPU's timings left out; each case beside NeuSight's, Habitat's,
   Li et al.'s and the roofline's published prediction of it (``peers.csv``), with median, mean and worst per
   predictor over the cases every predictor covers (judged against ``datasheet_prediction.whole_median``,
   ``whole_worst`` and ``whole_mean``; the moonshot ``below_neusight``). A case the census cannot trace is named,
   not predicted.
3. **dawnbench's own** — NVIDIA's published V100 training throughputs of ResNet-50 v1.5 and BERT-large (the rows
   of ``whole_steps.py``'s ``PUBLISHED``, from the op lists stored under docs/results/data/machines/), and
   cifar10-fast bf16 on the H200 against the epoch time measured there (docs/results/gpu.md), each predicted from
   the GPU's datasheet before being compared.
4. **the users' question** — each task's reference entry on every catalog GPU: time and cost to the target,
   ranked (the stored op lists of the reference entries, re-derived at each recipe's batch; epochs to target as
   ``ENTRIES`` says where each comes from).
"""

from __future__ import annotations

import csv
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from dawnbench.entries import load_entry_class
from dawnbench.prediction import on_gpu
from dawnbench.prediction.datasheet import catalog, catalog_name
from dawnbench.prediction.gpu_model import ClassModel, kernel_model, predict_ops, timings
from dawnbench.profiling.census import census, hf_config_model

import bench
import targets

NEUSIGHT = bench.ROOT / "src" / "dawnbench" / "prediction" / "neusight"
MACHINES = bench.RESULTS / "machines"
# Whose stored profiles are the op lists predicted here: a machine where every precision is native (AMX's bf16), so
# that a bf16 census is the one a bf16 step runs — an emulated step's op list can differ (its casts, its fallbacks).
OP_LISTS = "intel-r-xeon-r-processor-amx-2c"
PEERS = ("neusight", "habitat", "li_et_al", "roofline")
H200_EVIDENCE = "gpu_suite-20261127-2249-nvidia-h200.json"
# Each task's reference entry as stored (a measured op list) and the epochs it took to its target in this project's
# evidence: (folder under machines/<machine>/profiles, epochs, where the epochs come from).
ENTRIES = {
    "cifar10": ("cifar10-cifar10-fast-bf16", None, "the H200's measured runs (gpu_suite evidence): epochs to 94 %"),
    "mnist": ("mnist-small-cnn-fp32", None, "mnist_tta evidence: epochs to 99 %"),
    "imagenet": ("imagenet-imagenet-resnet50-bf16", 90.0, "ResNet-50's 90-epoch schedule (NVIDIA's published "
                                                           "recipe; this project has no ImageNet run to 93 % top-5)"),
    "squad": ("squad-squad-minilm-bf16", 2.0, "two epochs (the fine-tuning schedule of BERT on SQuAD; this project "
                                              "has no full-data run to F1 75)"),
}


ENTRY_OF = {"cifar10": "cifar10-fast", "mnist": "small-cnn", "imagenet": "imagenet-resnet50", "squad": "squad-minilm"}


def error(predicted: float, measured: float) -> float:
    return predicted / measured - 1


def stats(errors: list[float]) -> dict[str, float]:
    a = np.abs(np.array(errors))
    return {"cases": len(a), "median": float(np.median(a)), "mean": float(np.mean(a)), "worst": float(np.max(a)),
            "p90": float(np.percentile(a, 90))}


def census_speed() -> dict[str, Any]:
    """``profile --census`` as a user runs it, start-up included: wall seconds and peak memory of the process."""
    import resource
    out = {}
    for name, model, batch, seqlen in (("BERT-large training, batch 8 x 512", "bert_large", 8, 512),
                                       ("GPT-3 2.7B training, batch 1 x 2048", "gpt3_27", 1, 2048)):
        with tempfile.TemporaryDirectory() as tmp:
            before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
            started = time.perf_counter()
            bench.dawnbench("profile", str(NEUSIGHT / "model_configs" / f"{model}.json"), "--census", "--batch",
                            str(batch), "--seqlen", str(seqlen), "--out", str(Path(tmp) / "c"), "--json", quiet=True)
            wall = time.perf_counter() - started
            peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
        out[name] = {"seconds": wall, "peak_bytes": peak, "peak_is_this_census": before == 0 or peak > before * 1024,
                     "targets": [targets.judged("datasheet_prediction.census_time", wall),
                                 targets.judged("datasheet_prediction.census_memory", peak)]}
        print(f"census {name}: {wall:.1f} s, {peak / 2**30:.2f} GiB", flush=True)
    return out


def kernels_section() -> dict[str, Any]:
    out: dict[str, Any] = {"classes": {}}
    for cls, rows in timings().items():
        gpus = sorted({g for g, _, _ in rows})
        pooled, per_gpu = [], {}
        for gpu in gpus:
            model = ClassModel(cls, [r for r in rows if r[0] != gpu])
            held = [r for r in rows if r[0] == gpu]
            sheet = catalog()[gpu]
            predicted = model.seconds([k for _, k, _ in held], sheet, sheet.peak("fp32")[0])
            errors = [error(p, s) for p, (_, _, s) in zip(predicted, held)]
            pooled += errors
            per_gpu[gpu] = {**stats(errors), "rows": len(held)}
        out["classes"][cls] = {"pooled": stats(pooled), "gpus": per_gpu}
        print(f"kernels {cls}: median {np.median(np.abs(pooled)):.1%}, p90 {np.percentile(np.abs(pooled), 90):.1%}",
              flush=True)
    return out


def whole_models_section() -> dict[str, Any]:
    labels = list(csv.DictReader((NEUSIGHT / "labels.csv").open()))
    peers = {(p["model"], p["seqlen"], p["batch"], p["device"], p["mode"]): p
             for p in csv.DictReader((NEUSIGHT / "peers.csv").open()) if not p["option"]}
    counted: dict[tuple, Any] = {}
    cases, not_predicted = [], []
    for label in labels:
        mode = "train" if label["mode"] == "train" else "inference"
        key = (label["model"], mode, int(label["seqlen"]), int(label["batch"]))
        if key not in counted:
            try:
                started = time.perf_counter()
                made = census(hf_config_model(NEUSIGHT / "model_configs" / f"{label['model']}.json", mode),
                              key[3], key[2], mode)
                counted[key] = (made["rows"], time.perf_counter() - started)
            except Exception as err:       # noqa: BLE001 — a case the census cannot trace is named, not predicted
                counted[key] = (None, str(err).split(". ")[0] + ")")   # its first sentence: what failed
        rows, how = counted[key]
        if rows is None:
            not_predicted.append({**label, "why": how})
            continue
        gpu = catalog_name(label["gpu"])
        predicted = predict_ops(rows, catalog()[gpu], kernel_model((gpu,)))
        phases = predicted["phases"]
        ours = (phases.get("forward", 0.0) + (phases.get("backward", 0.0) if mode == "train" else 0.0)) * 1e3
        measured = float(label["e2e_ms"])
        peer = peers.get((label["model"], label["seqlen"], label["batch"], label["gpu"], label["mode"]))
        case = {"model": label["model"], "mode": label["mode"], "seqlen": key[2], "batch": key[3], "gpu": gpu,
                "measured_ms": measured, "predicted_ms": ours, "error": error(ours, measured),
                "census_s": how, "classes_ms": {c: s * 1e3 for c, s in predicted["classes"].items()},
                "peers_ms": {p: float(peer[f"{p}_e2e_ms"]) for p in PEERS if peer and peer[f"{p}_e2e_ms"]},
                "peer_measured_ms": float(peer["measured_e2e_ms"]) if peer else None}
        case["peer_errors"] = {p: error(v, measured) for p, v in case["peers_ms"].items()}
        cases.append(case)
        print(f"{gpu} {label['model']} {label['mode']} {key[2]}x{key[3]}: measured {measured:,.1f} ms, predicted "
              f"{ours:,.1f} ({case['error']:+.1%})", flush=True)
    shared = [c for c in cases if set(c["peer_errors"]) == set(PEERS)]
    summary = {"ours_all": stats([c["error"] for c in cases]), "shared_cases": len(shared),
               "on_shared": {"ours": stats([c["error"] for c in shared]),
                             **{p: stats([c["peer_errors"][p] for c in shared]) for p in PEERS}},
               "ours_below_neusight": sum(abs(c["error"]) < abs(c["peer_errors"]["neusight"]) for c in shared)}
    return {"cases": cases, "not_predicted": not_predicted, "summary": summary}


def own_section() -> dict[str, Any]:
    sys.path.insert(0, str(bench.ROOT / "benchmarks"))
    from whole_steps import PUBLISHED, disagreement
    rows, left_out = [], []
    device = {16: "V100-SXM2-16GB", 32: "V100-SXM2-32GB"}
    for model, spec in PUBLISHED.items():
        for row in spec["rows"]:
            row = {"model": model, "unit": spec["unit"], "source": spec["source"], **row}
            why = disagreement(row)
            folder = MACHINES / OP_LISTS / "published" / f"{spec['folder']}-{row['precision']}"
            if why or not (folder / "ops.tsv").is_file():
                left_out.append({**row, "why": why or f"no stored op list {folder.name}"})
                continue
            gpu = device[32 if "32 GB" in row["theirs"] or "32G" in row["what"] else 16]
            doc = on_gpu.predict_on_gpus(folder, [gpu], batch=row["batch"])
            [d] = doc["devices"]
            predicted = row["batch"] / d["step_s"]
            rows.append({**row, "gpu": gpu, "predicted_per_s": predicted, "ratio": predicted / row["per_s"],
                         "profile": str(folder.relative_to(bench.ROOT)), "classes": d["classes"]})
            print(f"{model} {row['what']} on {gpu}: predicted {predicted:,.3g} {spec['unit']}, published "
                  f"{row['per_s']} ({predicted / row['per_s']:.2f}x)", flush=True)
    h200 = bench.stored(bench.RESULTS / H200_EVIDENCE)
    measured_epoch = h200["figures"]["cifar10"]["summary"]["time_per_epoch_mean_s"]
    folder = MACHINES / OP_LISTS / "profiles" / "cifar10-cifar10-fast-bf16"
    batch = load_entry_class("cifar10-fast").hparams["batch_size"]
    doc = on_gpu.predict_on_gpus(folder, ["H200"], batch=batch, epochs=1)
    [d] = doc["devices"]
    cifar = {"gpu": "H200-SXM-141GB", "batch": batch, "predicted_epoch_s": d["epoch_s"],
             "measured_epoch_s": measured_epoch, "ratio": d["epoch_s"] / measured_epoch,
             "evidence": H200_EVIDENCE, "profile": str(folder.relative_to(bench.ROOT)), "classes": d["classes"]}
    print(f"cifar10-fast bf16 on the H200: predicted epoch {d['epoch_s']:.3f} s, measured {measured_epoch:.3f} s",
          flush=True)
    return {"published": rows, "left_out": left_out, "cifar10_h200": cifar}


def users_section(epochs_cifar: float) -> dict[str, Any]:
    out = {}
    for task, (name, epochs, source) in ENTRIES.items():
        epochs = epochs_cifar if task == "cifar10" else epochs
        if task == "mnist":
            mnist = sorted(bench.RESULTS.glob("mnist_tta-*.json"))[-1]
            runs = bench.stored(mnist)["figures"]
            epochs = _median_epochs(runs)
            source = f"{source} ({mnist.name})"
        folder = MACHINES / OP_LISTS / "profiles" / name
        batch = load_entry_class(ENTRY_OF[task]).hparams["batch_size"]       # the recipe's, not the CPU profile's
        doc = on_gpu.predict_on_gpus(folder, ["gpus"], epochs=epochs, batch=batch)
        out[task] = {"profile": str(folder.relative_to(bench.ROOT)), "epochs": epochs, "epochs_from": source,
                     "batch": doc["batch_size"], "notes": doc["notes"], "ranking": doc["ranking"],
                     "devices": [{k: d.get(k) for k in ("step_s", "epoch_s", "tta_s", "fits")} |
                                 {"device": d["device"]["name"]} for d in doc["devices"]]}
        best = doc["ranking"][0]
        print(f"{task}: cheapest {best['device']} ${best['usd'] or math.nan:.3g}", flush=True)
    return out


def _median_epochs(figures: Any) -> float:
    found: list[float] = []

    def walk(x: Any) -> None:
        if isinstance(x, dict):
            for k, v in x.items():
                if k == "epochs_to_target" and isinstance(v, (int, float)):
                    found.append(float(v))
                else:
                    walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(figures)
    return float(np.median(found))


def main() -> None:
    args = bench.parser(__doc__).parse_args()
    figures: dict[str, Any] = {"census": census_speed(), "kernels": kernels_section()}
    figures["whole_models"] = whole_models_section()
    figures["own"] = own_section()
    h200 = bench.stored(bench.RESULTS / H200_EVIDENCE)
    epochs = _median_epochs(h200["figures"]["cifar10"])
    figures["users"] = users_section(epochs)
    s = figures["whole_models"]["summary"]["on_shared"]
    summary = figures["whole_models"]["summary"]
    figures["targets"] = {
        "whole_median": {"value": s["ours"]["median"], **targets.judged("datasheet_prediction.whole_median",
                                                                        s["ours"]["median"])},
        "whole_worst": {"value": s["ours"]["worst"], **targets.judged("datasheet_prediction.whole_worst",
                                                                      s["ours"]["worst"])},
        "whole_mean_below_roofline": {"value": s["ours"]["mean"], "roofline": s["roofline"]["mean"],
                                      **targets.judged("datasheet_prediction.whole_mean",
                                                       s["ours"]["mean"] / s["roofline"]["mean"])},
        "kernel_median_per_class": {c: {"value": v["pooled"]["median"],
                                        **targets.judged("datasheet_prediction.kernel_median", v["pooled"]["median"])}
                                    for c, v in figures["kernels"]["classes"].items()},
        "below_neusight": targets.judged("datasheet_prediction.below_neusight",
                                         summary["ours_below_neusight"] / summary["shared_cases"])}
    bench.store(args, "datasheet_prediction", figures)


if __name__ == "__main__":
    main()
