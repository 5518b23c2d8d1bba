"""GPUs predicted from their datasheets (SPEC §24), validated on GPUs and architectures left out, in the precisions
people train in, and the users' question answered.

    python benchmarks/datasheet_prediction.py          # ~10 minutes on 2 cores; evidence: datasheet_prediction-*.json

Sections, in order:

1. **census** — ``profile --census`` of two large models as a user runs it: wall time and peak memory; and
   ``predict`` of one on every catalog GPU, start-up included, its kernel model read from the cache.
2. **kernels** — every class of the kernel model (``prediction/gpu_model.py``) fitted without one of NeuSight's
   GPUs and judged on that GPU's single-kernel timings, its offset predicted from its datasheet
   (``prediction/efficiency.py``): median and 90th-percentile absolute error per class and GPU; then the intervals
   ``predict`` gives, their coverage measured on cases none of which informs its own interval.
3. **whole models** — every label NeuSight carries (``prediction/calibration.py``) predicted three ways: with nothing
   of its GPU learned from (leave one GPU out: the A100 with NeuSight's A100 80GB convolution stand-in), with nothing
   of its architecture learned from (leave one architecture out: no Volta data when predicting the V100), and with
   every GPU's kernels learned from but not the GPU's own whole models — the footing of NeuSight's published
   predictions, whose kernel models learned from these same five GPUs. Each GPU's mean signed error; each case
   beside NeuSight's, Habitat's, Li et al.'s and the roofline's published prediction (``peers.csv``); then the
   memory check: the activations the census counts against those a real step on this CPU saves.
4. **published** — NVIDIA's published training throughputs of ResNet-50 v1.5 and BERT-large (SQuAD fine-tuning) in
   FP32, TF32 and mixed precision on the V100 and the A100, each model counted by the census in that precision as a
   GPU runs it and predicted from the GPU's datasheet; and cifar10-fast bf16 on the H200 against the epoch measured
   there (docs/results/gpu.md). Each published row checked against its own table first (``whole_steps``'
   ``disagreement``: a row that disagrees with itself is left out and named).
5. **precisions** — BERT-large training at batch 8 × 512 in fp32, tf32 and bf16 on every catalog GPU: bf16 over fp32,
   forward and backward apart (a GPU with tensor cores must take at most ``bf16_over_fp32`` of its fp32 step).
6. **the users' question** — each task's reference entry, counted by the census at its recipe's batch and precision,
   on every catalog GPU: time and cost to the target, ranked.
"""

from __future__ import annotations

import csv
import json
import math
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dawnbench.entries import load_entry_class
from dawnbench.experiments.census import Positional, task_model
from dawnbench.prediction import calibration, on_gpu
from dawnbench.prediction.efficiency import Efficiency
from dawnbench.prediction.gpu_model import COMPUTE, ClassModel, fit, predict_ops
from dawnbench.prediction.kernel_data import timings
from dawnbench.profiling.census import census, hf_config_model
from dawnbench.profiling.gpu_autocast import CudaAutocast
from dawnbench.records.census import write_census
from dawnbench.records.datasheet import catalog
from dawnbench.tasks import get_task

import bench
import targets
from whole_steps import disagreement

NEUSIGHT = bench.ROOT / "src" / "dawnbench" / "prediction" / "neusight"
PEERS = ("neusight", "habitat", "li_et_al", "roofline")
H200_EVIDENCE = "gpu_suite-20261127-2249-nvidia-h200.json"
RESNET = {"min_res": 224, "max_res": 224, "eval_res": 256, "blurpool": False}   # ResNet-50 v1.5 as NVIDIA trains it
# NVIDIA's published single-GPU training throughputs (DeepLearningExamples, PyTorch): model, GPU, precision as the
# census counts it, batch, per second, what the table calls it, and its own check where the table gives one.
RESNET_SOURCE = ("NVIDIA DeepLearningExamples, PyTorch/Classification/ConvNets/resnet50v1.5/README.md, Training "
                 "performance results (pytorch-21.03 NGC container); batch sizes from ../configs.yml")
BERT_SOURCE = ("NVIDIA DeepLearningExamples, PyTorch/LanguageModeling/BERT/README.md (March 2020), Training "
               "performance, Fine-tuning NVIDIA DGX-1 With 16G and With 32G, 1 GPU (pytorch:19.07-py3 container)")
PUBLISHED = (
    {"model": "ResNet-50 v1.5", "gpu": "V100-SXM2-16GB", "precision": "fp32", "batch": 112, "per_s": 367,
     "unit": "images/s", "what": "FP32, DGX-1 16GB", "hours_90_epochs": 92, "source": RESNET_SOURCE},
    {"model": "ResNet-50 v1.5", "gpu": "V100-SXM2-16GB", "precision": "fp16", "batch": 256, "per_s": 1200,
     "unit": "images/s", "what": "mixed precision (AMP, fp16), DGX-1 16GB", "hours_90_epochs": 29,
     "source": RESNET_SOURCE},
    {"model": "ResNet-50 v1.5", "gpu": "A100-SXM4-80GB", "precision": "tf32", "batch": 256, "per_s": 938,
     "unit": "images/s", "what": "TF32, DGX A100 80GB", "hours_90_epochs": 36, "source": RESNET_SOURCE},
    {"model": "ResNet-50 v1.5", "gpu": "A100-SXM4-80GB", "precision": "fp16", "batch": 256, "per_s": 2470,
     "unit": "images/s", "what": "mixed precision (AMP, fp16), DGX A100 80GB", "hours_90_epochs": 14,
     "source": RESNET_SOURCE},
    {"model": "BERT-large, SQuAD fine-tuning, 384 tokens", "gpu": "V100-SXM2-32GB", "precision": "fp32", "batch": 8,
     "per_s": 8.64, "unit": "sequences/s", "what": "FP32, DGX-1 32G", "mixed_per_s": 36.04, "speedup": "4.171",
     "source": BERT_SOURCE},
    {"model": "BERT-large, SQuAD fine-tuning, 384 tokens", "gpu": "V100-SXM2-32GB", "precision": "fp16", "batch": 8,
     "per_s": 36.04, "unit": "sequences/s", "what": "mixed precision (fp16, apex AMP), DGX-1 32G",
     "fp32_per_s": 8.64, "speedup": "4.171", "source": BERT_SOURCE},
)
# each task's reference entry, its precision on a GPU, and where its epochs to target come from
ENTRIES = {
    "cifar10": ("bf16", None, "the H200's measured runs (gpu_suite evidence): epochs to 94 %"),
    "mnist": ("fp32", None, "mnist_tta evidence: epochs to 99 %"),
    "imagenet": ("bf16", 90.0, "ResNet-50's 90-epoch schedule (NVIDIA's published recipe; this project has no ImageNet "
                               "run to 93 % top-5)"),
    "squad": ("bf16", 2.0, "two epochs (the fine-tuning schedule of BERT on SQuAD; this project has no full-data run "
                           "to F1 75)"),
}


def error(predicted: float, measured: float) -> float:
    return predicted / measured - 1


def stats(errors: list[float]) -> dict[str, float]:
    a = np.abs(np.array(errors))
    return {"cases": len(a), "median": float(np.median(a)), "mean": float(np.mean(a)), "worst": float(np.max(a)),
            "p90": float(np.percentile(a, 90)), "signed_mean": float(np.mean(errors))}


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
    """Each class fitted without one GPU, that GPU's kernels predicted with its offset from its datasheet."""
    sheets = catalog()
    out: dict[str, Any] = {"classes": {}}
    for cls, rows in timings().items():
        pooled, per_gpu = [], {}
        for gpu in sorted({g for g, _, _ in rows}):
            model = ClassModel(cls, [r for r in rows if r[0] != gpu])
            offset, _ = Efficiency.fit(model.offsets, sheets, "fp32", cls in COMPUTE).offset(sheets[gpu])
            held = [r for r in rows if r[0] == gpu]
            predicted = model.seconds([k for _, k, _ in held], sheets[gpu], sheets[gpu].peak("fp32")[0], offset)
            errors = [error(p, s) for p, (_, _, s) in zip(predicted, held)]
            pooled += errors
            per_gpu[gpu] = {**stats(errors), "rows": len(held)}
        out["classes"][cls] = {"pooled": stats(pooled), "gpus": per_gpu}
        print(f"kernels {cls}: median {np.median(np.abs(pooled)):.1%}", flush=True)
    return out


def intervals_section(whole: dict[str, Any]) -> dict[str, Any]:
    """The intervals' coverage, each GPU's cases judged by the interval the other GPUs' errors make (so no case
    informs its own interval): the share of measured values inside, per kind of case — the whole models' own
    predictions, its GPU left out (``unseen``) and its kernels learned (``measured``), as
    ``calibration.validation_errors`` makes them."""
    out: dict[str, Any] = {"level": calibration.LEVEL}
    for kind, scheme in (("unseen", "gpu"), ("measured", "all")):
        by_gpu: dict[str, list[float]] = {}
        for case in whole["cases"]:
            by_gpu.setdefault(case["gpu"], []).append(-math.log1p(case["error"][scheme]))   # log(measured/predicted)
        inside = total = 0
        for gpu, own in by_gpu.items():
            low, high = calibration.interval({g: es for g, es in by_gpu.items() if g != gpu})
            inside += sum(low <= e <= high for e in own)
            total += len(own)
        low, high = calibration.interval(by_gpu)
        out[kind] = {"cases": total, "inside": inside, "coverage": inside / total, "low": math.exp(low),
                     "high": math.exp(high)}
        print(f"intervals, {kind}: {inside} of {total} inside ({inside / total:.0%}); the {calibration.LEVEL:.0%} "
              f"interval {math.exp(low):.2f}x to {math.exp(high):.2f}x", flush=True)
    out.update(targets.judged("datasheet_prediction.interval_coverage", out["unseen"]["coverage"]))
    return out


def predict_speed() -> dict[str, Any]:
    """``predict`` of BERT-large's census on every catalog GPU as a user runs it, start-up included, the kernel
    model already in the cache (the first use fits it: its time is the fit's, below)."""
    config = NEUSIGHT / "model_configs" / "bert_large.json"
    with tempfile.TemporaryDirectory() as tmp:
        bench.dawnbench("profile", str(config), "--census", "--batch", "8", "--seqlen", "512", "--out",
                        str(Path(tmp) / "c"), quiet=True)
        bench.dawnbench("predict", str(Path(tmp) / "c"), "--device", "gpus", "--json", quiet=True)   # fills the cache
        seconds = []
        for _ in range(3):
            started = time.perf_counter()
            bench.dawnbench("predict", str(Path(tmp) / "c"), "--device", "gpus", "--json", quiet=True)
            seconds.append(time.perf_counter() - started)
    started = time.perf_counter()
    fit()
    out = {"seconds": seconds, "median_s": float(np.median(seconds)), "one_fit_s": time.perf_counter() - started,
           **targets.judged("datasheet_prediction.predict_time", float(np.median(seconds)))}
    print(f"predict on every catalog GPU: median {out['median_s']:.2f} s of 3; a fit {out['one_fit_s']:.1f} s",
          flush=True)
    return out


def left_out(gpu: str, scheme: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What a case of ``gpu`` is predicted without — (every measurement of, the whole-model measurements of) —: the
    GPU's whole models (``all``), the GPU and its stand-ins (``gpu``), or every GPU of its architecture."""
    if scheme == "all":
        return (), (gpu,)
    if scheme == "gpu":
        return calibration.stand_ins(gpu), ()
    architecture = catalog()[gpu].architecture
    return tuple(sorted(n for n, s in catalog().items() if s.architecture == architecture)), ()


def whole_models_section() -> dict[str, Any]:
    peers = {(p["model"], int(p["seqlen"]), int(p["batch"]), p["device"], p["mode"]): p
             for p in csv.DictReader((NEUSIGHT / "peers.csv").open()) if not p["option"]}
    models: dict[tuple[str, ...], Any] = {}
    cases, not_predicted = [], []
    for case in calibration.cases():
        rows, why = calibration.counted(case["model"], case["mode"], case["seqlen"], case["batch"])
        if rows is None:
            not_predicted.append({**case, "why": why})
            continue
        gpu, measured = case["gpu"], case["measured_ms"]
        out = {**case, "predicted_ms": {}, "error": {}}
        for scheme in ("gpu", "architecture", "all"):
            leave = left_out(gpu, scheme)
            if leave not in models:
                models[leave] = fit(leave[0], unlabelled=leave[1])
            predicted = predict_ops(list(rows), catalog()[gpu], models[leave])
            ms = calibration.measured_part(predicted["phases"], case["mode"]) * 1e3
            out["predicted_ms"][scheme], out["error"][scheme] = ms, error(ms, measured)
            if scheme == "gpu":
                out["classes_ms"] = {c: s * 1e3 for c, s in predicted["classes"].items()}
        peer = peers.get((case["model"], case["seqlen"], case["batch"], case["label"],
                          "train" if case["mode"] == "train" else "inf"))
        out["peer_errors"] = {p: error(float(peer[f"{p}_e2e_ms"]), measured) for p in PEERS
                              if peer and peer[f"{p}_e2e_ms"]}
        cases.append(out)
        print(f"{gpu} {case['model']} {case['mode']} {case['seqlen']}x{case['batch']}: measured {measured:,.1f} ms, "
              + ", ".join(f"{s} {e:+.1%}" for s, e in out["error"].items()), flush=True)
    summary: dict[str, Any] = {}
    for scheme in ("gpu", "architecture", "all"):
        by_gpu: dict[str, list[float]] = {}
        for c in cases:
            by_gpu.setdefault(c["gpu"], []).append(c["error"][scheme])
        summary[scheme] = {"all": stats([c["error"][scheme] for c in cases]),
                           "gpus": {g: stats(e) for g, e in sorted(by_gpu.items())}}
    shared = [c for c in cases if set(c["peer_errors"]) == set(PEERS)]
    summary["shared_cases"] = len(shared)
    summary["on_shared"] = {"ours_gpu_left_out": stats([c["error"]["gpu"] for c in shared]),
                            "ours_kernels_learned": stats([c["error"]["all"] for c in shared]),
                            **{p: stats([c["peer_errors"][p] for c in shared]) for p in PEERS}}
    summary["below_neusight"] = {scheme: sum(abs(c["error"][scheme]) < abs(c["peer_errors"]["neusight"])
                                             for c in shared) for scheme in ("gpu", "all")}
    return {"cases": cases, "not_predicted": not_predicted, "summary": summary,
            "learned_from": {f"without {' '.join(k[0]) or 'nothing'}; whole models without {' '.join(k[1]) or 'nothing'}":
                             v.describe() for k, v in models.items()}}


def _counted(row: dict[str, Any], folder: Path) -> Path:
    """The published row's model counted by the census at its batch and precision, written under ``folder``."""
    out = folder / f"{row['model'].split(',')[0].replace(' ', '-')}-{row['precision']}-b{row['batch']}"
    if not (out / "summary.json").is_file():
        if row["model"].startswith("ResNet"):
            model, seqlen = task_model("imagenet", "imagenet-resnet50", RESNET), None
        else:
            model = hf_config_model(NEUSIGHT / "model_configs" / "bert_large.json", "train",
                                    head="qa")
            seqlen = 384
        write_census(census(model, row["batch"], seqlen, "train", row["precision"]), out)
    return out


# the memory check's models: a few layers each, at the lengths the issue met (a GPT-2 layer at 2,048 tokens)
MEMORY_CASES = (
    ("GPT-2 style, 2 layers, 1 x 2048 tokens", {"model_type": "gpt2", "n_embd": 768, "n_layer": 2, "n_head": 12,
                                                 "vocab_size": 1000, "n_positions": 2048}, 1, 2048),
    ("BERT-base style, 2 layers, 4 x 512 tokens", {"model_type": "bert", "hidden_size": 768, "num_hidden_layers": 2,
                                                    "num_attention_heads": 12, "intermediate_size": 3072,
                                                    "vocab_size": 1000, "max_position_embeddings": 512}, 4, 512),
    ("cifar10-fast, batch 64", "cifar10", 64, None))


def saved_by_a_real_step(model: torch.nn.Module, inputs: dict[str, Any], loss: Any) -> int:
    """Bytes autograd saves in a real training step on this CPU (each storage once), the kernels CUDA picks."""
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        saved.setdefault(t.untyped_storage().data_ptr(), t.untyped_storage().nbytes())
        return t

    model.train()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), CudaAutocast(None):
        loss(model(**inputs), inputs)
    return sum(saved.values())


def memory_check(config: Any, batch: int, seqlen: int | None, folder: Path) -> dict[str, float]:
    """The census's saved activations against a real step's (a Hugging Face config dict, or a task's name)."""
    if isinstance(config, str):
        counted = task_model(config)
        real = Positional(load_entry_class(counted.name)(get_task(config), torch.device("cpu")).make_model())
    else:
        (folder / "config.json").write_text(json.dumps(config))
        counted = hf_config_model(folder / "config.json", "train")
        real = type(counted.model)(counted.model.config)
    activations = census(counted, batch, seqlen, "train")["summary"]["census"]["memory"]["activations_bytes"]
    saved = saved_by_a_real_step(real, counted.inputs(batch, seqlen, "cpu"), counted.loss)
    return {"counted_bytes": activations, "saved_bytes": saved, "ratio": activations / saved}


def memory_section() -> dict[str, Any]:
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, config, batch, seqlen in MEMORY_CASES:
            out[name] = memory_check(config, batch, seqlen, Path(tmp))
            print(f"memory {name}: counted {out[name]['counted_bytes'] / 2**20:,.1f} MiB, a real step saved "
                  f"{out[name]['saved_bytes'] / 2**20:,.1f} MiB", flush=True)
    return out


def published_section() -> dict[str, Any]:
    rows, refused = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for row in PUBLISHED:
            why = disagreement(row)
            if why:
                refused.append({**row, "why": why})
                continue
            doc = on_gpu.predict_on_gpus(_counted(row, Path(tmp)), [row["gpu"]])
            [d] = doc["devices"]
            predicted = row["batch"] / d["step_s"]
            rows.append({**row, "predicted_per_s": predicted, "ratio": predicted / row["per_s"],
                         "classes": d["classes"], "efficiency": d["efficiency"], "fits": d["fits"],
                         **targets.judged("datasheet_prediction.published_ratio", predicted / row["per_s"])})
            print(f"{row['model']} {row['what']} on {row['gpu']}: predicted {predicted:,.3g} {row['unit']}, "
                  f"published {row['per_s']} ({predicted / row['per_s']:.2f}x)", flush=True)
        measured = bench.stored(bench.RESULTS / H200_EVIDENCE)["figures"]["cifar10"]["summary"]["time_per_epoch_mean_s"]
        batch = load_entry_class("cifar10-fast").hparams["batch_size"]
        folder = Path(tmp) / "cifar10-bf16"
        write_census(census(task_model("cifar10"), batch, None, "train", "bf16"), folder)
        [d] = on_gpu.predict_on_gpus(folder, ["H200"], epochs=1)["devices"]
    cifar = {"gpu": "H200-SXM-141GB", "batch": batch, "predicted_epoch_s": d["epoch_s"], "measured_epoch_s": measured,
             "ratio": d["epoch_s"] / measured, "evidence": H200_EVIDENCE, "classes": d["classes"]}
    print(f"cifar10-fast bf16 on the H200: predicted epoch {d['epoch_s']:.3f} s, measured {measured:.3f} s", flush=True)
    return {"rows": rows, "left_out": refused, "cifar10_h200": cifar}


def precisions_section() -> dict[str, Any]:
    """BERT-large training, batch 8 x 512, in fp32, tf32 and bf16 on every catalog GPU (memory not checked: the
    question is the time a precision saves)."""
    config = NEUSIGHT / "model_configs" / "bert_large.json"
    counted = {p: census(hf_config_model(config, "train"), 8, 512, "train", p)["rows"] for p in ("fp32", "tf32", "bf16")}
    model = fit()
    out = {}
    for name, sheet in catalog().items():
        phases = {p: predict_ops(rows, sheet, model)["phases"] for p, rows in counted.items()}
        steps = {p: sum(v.values()) for p, v in phases.items()}
        ratio = steps["bf16"] / steps["fp32"]
        faster = all(phases["bf16"][ph] < phases["fp32"][ph] for ph in ("forward", "backward"))
        out[name] = {"tensor_cores": bool(sheet.tensor_gflops), "step_s": steps,
                     "phases_s": {p: {ph: v for ph, v in ps.items()} for p, ps in phases.items()},
                     "bf16_over_fp32": ratio, "forward_and_backward_faster": faster}
        print(f"{name}: bf16 {steps['bf16'] * 1e3:,.1f} ms, tf32 {steps['tf32'] * 1e3:,.1f} ms, fp32 "
              f"{steps['fp32'] * 1e3:,.1f} ms ({ratio:.2f}x)", flush=True)
    tensor = [v for v in out.values() if v["tensor_cores"]]
    worst = max(v["bf16_over_fp32"] for v in tensor)
    faster = all(v["forward_and_backward_faster"] for v in tensor)
    return {"case": "BERT-large training, batch 8 x 512 tokens (AdamW)", "gpus": out, "worst_tensor_core_ratio": worst,
            "all_forward_and_backward_faster": faster,
            "phases_faster": targets.judged("datasheet_prediction.bf16_phases_faster", faster),
            **targets.judged("datasheet_prediction.bf16_over_fp32", worst)}


def users_section(epochs_cifar: float) -> dict[str, Any]:
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for task, (precision, epochs, source) in ENTRIES.items():
            if task == "cifar10":
                epochs = epochs_cifar
            if task == "mnist":
                mnist = sorted(bench.RESULTS.glob("mnist_tta-*.json"))[-1]
                epochs = _median_epochs(bench.stored(mnist)["figures"])
                source = f"{source} ({mnist.name})"
            model = task_model(task)
            batch = load_entry_class(model.name).hparams["batch_size"]     # the recipe's
            folder = Path(tmp) / task
            write_census(census(model, batch, None, "train", precision), folder)
            doc = on_gpu.predict_on_gpus(folder, ["gpus"], epochs=epochs)
            out[task] = {"entry": model.name, "precision": precision, "epochs": epochs, "epochs_from": source,
                         "batch": batch, "notes": doc["notes"], "ranking": doc["ranking"],
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
    figures: dict[str, Any] = {"census": census_speed(), "predict_speed": predict_speed(),
                               "kernels": kernels_section(), "whole_models": whole_models_section()}
    figures.update({"intervals": intervals_section(figures["whole_models"]), "memory": memory_section(),
                    "published": published_section(), "precisions": precisions_section()})
    h200 = bench.stored(bench.RESULTS / H200_EVIDENCE)
    figures["users"] = users_section(_median_epochs(h200["figures"]["cifar10"]))
    s = figures["whole_models"]["summary"]
    shared = s["on_shared"]
    ratios = [r["ratio"] for r in figures["published"]["rows"]]
    figures["targets"] = {
        "whole_median": {"value": s["gpu"]["all"]["median"],
                         **targets.judged("datasheet_prediction.whole_median", s["gpu"]["all"]["median"])},
        "whole_worst": {"value": s["gpu"]["all"]["worst"],
                        **targets.judged("datasheet_prediction.whole_worst", s["gpu"]["all"]["worst"])},
        "gpu_bias": {"value": {g: v["signed_mean"] for g, v in s["gpu"]["gpus"].items()},
                     **targets.judged("datasheet_prediction.gpu_bias",
                                      [v["signed_mean"] for v in s["gpu"]["gpus"].values()])},
        "architecture_median": {"value": s["architecture"]["all"]["median"],
                                **targets.judged("datasheet_prediction.architecture_median",
                                                 s["architecture"]["all"]["median"])},
        "whole_mean_below_roofline": {"value": shared["ours_gpu_left_out"]["mean"], "roofline": shared["roofline"]["mean"],
                                      **targets.judged("datasheet_prediction.whole_mean",
                                                       shared["ours_gpu_left_out"]["mean"] / shared["roofline"]["mean"])},
        "published_ratio": {"value": ratios, **targets.judged("datasheet_prediction.published_ratio", ratios)},
        "bf16_over_fp32": {"value": figures["precisions"]["worst_tensor_core_ratio"],
                           **targets.judged("datasheet_prediction.bf16_over_fp32",
                                            figures["precisions"]["worst_tensor_core_ratio"])},
        "kernel_median_per_class": {c: {"value": v["pooled"]["median"],
                                        **targets.judged("datasheet_prediction.kernel_median", v["pooled"]["median"])}
                                    for c, v in figures["kernels"]["classes"].items()},
        "below_neusight": targets.judged("datasheet_prediction.below_neusight",
                                         s["below_neusight"]["gpu"] / s["shared_cases"])}
    bench.store(args, "datasheet_prediction", figures)


if __name__ == "__main__":
    main()
