"""A step — a census or a measured profile — on GPUs described by their datasheets.

    doc = predict_on_gpus(Path("census/bert-large"), ["H100", "A10G", "my-gpu.json"])
    doc = predict_on_gpus(Path("profiles/cifar10-cifar10-fast-bf16"), ["gpus"], epochs=10)   # every catalog GPU

Each op of the folder's ``ops.tsv`` is costed by ``gpu_model.py`` on each GPU's datasheet and summed:
forward, loss, backward and optimizer seconds apart where the folder is a census (a measured profile's ops
have no phase: its whole step is given), by kernel class, and what each part rests on (the learned model,
or the bandwidth for ops of no class, named). A census's memory (parameters, gradients, optimizer state, saved
activations) is held against the GPU's memory as the GPU will hold it (``held``: the allocator's slack and the CUDA
context besides): a step that cannot fit is said, with the largest batch that would, and its time given anyway.

**Epoch, TTA, cost and the ranking.** As ``predict.py``: an epoch is the task's training split over the batch,
the TTA that times the epochs to target (``--epochs``, or the run's); the cost is the TTA in hours times the
on-demand price of each catalog instance with that GPU — one GPU's share of a multi-GPU instance where no
single-GPU instance exists, said so. ``ranking`` orders the GPUs that fit by their cheapest cost to the target
(by the TTA where no price is known, after the priced ones).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from dawnbench import bounds
from dawnbench.errors import DawnbenchError
from dawnbench.io import read_json
from dawnbench.prediction.batch import rebatch
from dawnbench.prediction.calibration import LEVEL
from dawnbench.prediction.gpu_model import kernel_model, predict_ops
from dawnbench.prediction.predict import _run_facts, at_least_a_step, epoch_samples, epochs_to_target
from dawnbench.prediction.step import Step, profile_folder, read_step
from dawnbench.records import prices
from dawnbench.records.census import read_census
from dawnbench.records.datasheet import Datasheet, catalog, catalog_name, datasheet
from dawnbench.records.ops import PHASES
from dawnbench.records.published import DEVICES

# What a GPU holds beside a step's tensors (stated allowances, not measured here): the CUDA context with cuBLAS's and
# cuDNN's workspaces and the driver's reserve — about half a GiB with lazy module loading (CUDA_MODULE_LOADING=LAZY,
# PyTorch's default since CUDA 11.7) — and the caching allocator's rounding and fragmentation, a tenth of the tensors.
CONTEXT_BYTES = 0.5 * 2**30
# What every GPU prediction assumes, said with it
ASSUMPTIONS = ("ops run one after another on one stream (eager PyTorch): no overlap between kernels, no host time "
               "between them", "the same epochs to target on every GPU",
               "matrix multiplies and convolutions in bf16, fp16 or tf32 at the tensor-core rate, with the tensor "
               "cores' efficiency learned from DeepBench's fp16 times (V100, T4)",
               "a GPU not measured comes as close to its datasheet as its power per FLOP allows "
               "(prediction/efficiency.py)")
INTERVAL_FROM = {"measured": "NeuSight's whole models on GPUs measured, fp32 (each GPU's own whole models left out)",
                 "unseen": "NeuSight's whole models, each GPU left out of what the model learned, fp32 (no "
                           "tensor-core whole model was validated: the interval of a lower precision is fp32's)"}
FRAGMENTATION = 0.10


def is_census(path: Path) -> bool:
    """Whether ``path`` holds a census (``profile --census``): only datasheets can cost it, nothing having run."""
    summary = Path(path) / "summary.json"
    try:
        return summary.is_file() and "census" in read_json(summary, "profile")
    except (DawnbenchError, TypeError):
        return False


def is_datasheet(name: str, census: bool = False) -> bool:
    """Whether ``--device NAME`` means a datasheet GPU: ``gpus``, a catalog name or alias, or a JSON file with the
    datasheet's fields (a ``kernels.json`` has rows instead); DeepBench's device names keep their meaning but for
    a ``census``, which only a datasheet can cost."""
    if not census and name.lower() in {d.lower() for d in DEVICES}:     # (datasheet.py)
        return False
    if name.lower() == "gpus" or catalog_name(name) is not None:
        return True
    path = Path(name)
    if path.suffix.lower() == ".json" and path.is_file():
        try:
            doc = read_json(path, "GPU datasheet")
        except DawnbenchError:
            return True           # a file that cannot be read is refused by the datasheet's reader, saying why
        # a kernels.json is a machine's own kernel times (the other predictor); any other JSON is read as a
        # datasheet, so a wrong one is refused as a datasheet, naming its fields
        return not (isinstance(doc, dict) and ("rows" in doc or doc.get("kind") == "dawnbench-kernels"))
    return False


def sheets(names: list[str]) -> list[Datasheet]:
    """The datasheets ``--device`` names, each once; two different datasheets under one name are refused."""
    out: dict[str, Datasheet] = {}
    for name in names:
        for sheet in (catalog().values() if name.lower() == "gpus" else [datasheet(name)]):
            known = out.setdefault(sheet.name, sheet)
            if replace(known, origin=sheet.origin) != sheet:      # the same figures in two files are one GPU
                raise DawnbenchError(f"--device: {known.origin} and {sheet.origin} both name a GPU {sheet.name!r} "
                                     "with different figures: the results could not be told apart. Give each file "
                                     "its own Device name.")
    return list(out.values())


def read_rows(folder: Path, notes: list[str], batch: int | None = None, details: list[str] | None = None
              ) -> tuple[list[dict[str, Any]], dict[str, Any], Step | None]:
    """The folder's ops per step (each with its phase where it is a census), its summary, and the measured step
    where it is a profile (at ``batch`` where given: ``batch.py`` re-derives every op's call); the notes on single
    rows of its op table go to ``details`` (as :func:`~dawnbench.prediction.step.read_step` says)."""
    summary = read_json(folder / "summary.json", "profile")
    if isinstance(summary, dict) and "census" in summary:
        if batch is not None:
            raise DawnbenchError(f"--batch {batch}: {folder} is a census, counted at its own batch; count it again "
                                 "at this batch (`dawnbench profile MODEL --census --batch B`).")
        rows, summary = read_census(folder, notes if details is None else details)
        return rows, summary, None
    step = read_step(folder, notes, details)
    if batch is not None and batch != step.batch_size:
        step, rebatched = rebatch(step, batch)
        notes += rebatched
    rows = [{"op": o.op, "shapes": o.shapes, "args": o.args, "precision": o.precision, "calls": o.calls,
             "flops": o.flops, "bytes": o.bytes, "phase": "step"} for o in step.ops if o.calls]
    return rows, {"task": step.task, "entry": step.entry, "precision": step.precision,
                  "batch_size": step.batch_size}, step


def predict_on_gpus(path: Path, names: list[str], epochs: float | None = None,
                    progress: Callable[[str], None] = lambda line: None, batch: int | None = None,
                    samples: int | None = None, leave_out: tuple[str, ...] = (),
                    target: float | None = None) -> dict[str, Any]:
    """The folder's step on each GPU named (see the module docstring); ``batch`` re-derives a measured profile's
    ops at another batch; ``samples`` is an epoch's samples (a census of a config has no task to read them from);
    ``leave_out`` fits the kernel model without those GPUs' timings (the validation's); ``target``: as
    :func:`~dawnbench.prediction.predict.epochs_to_target` reads it."""
    started = time.perf_counter()
    gpus = _checked(path, names, epochs, batch, samples)
    notes: list[str] = []
    details: list[str] = []
    # a summary.json that is there but not a plain file (a FIFO, a folder) is refused by its reader, saying so
    folder = Path(path) if os.path.lexists(Path(path) / "summary.json") else profile_folder(Path(path))
    rows, summary, step = read_rows(folder, notes, batch, details)
    census = summary.get("census") or {}
    _nothing_it_lacks(folder, census, epochs, samples, target)
    run = _run_facts(folder) if step is not None else None
    if samples is not None:
        per_epoch, per_epoch_from = samples, "--samples-per-epoch"
    elif step is not None or census.get("kind") == "entry":
        per_epoch, per_epoch_from = epoch_samples(summary["task"], run, step.run if step is not None else None)
    else:
        per_epoch, per_epoch_from = None, "unknown: a model's census has no task; give --samples-per-epoch"
    goal = epochs_to_target(summary.get("task"), (run, step.run if step is not None else None), epochs, target)
    del goal["source"]
    target_epochs = goal["epochs_to_target"]
    batch = census.get("batch") or summary.get("batch_size")
    steps_per_epoch = per_epoch / batch if per_epoch and batch else None
    at_least_a_step(target_epochs, steps_per_epoch, goal["epochs_from"])
    memory_needed = (census.get("memory") or {}).get("total_bytes")
    progress("the kernel model (learned from NeuSight's and DeepBench's timings on its first use, about a minute; "
             "then read from the cache)")
    model = kernel_model(tuple(leave_out))
    doc: dict[str, Any] = {
        "path": str(folder), "kind": "census" if census else "profile", "task": summary.get("task"),
        "model": census.get("model") or summary.get("entry"), "mode": census.get("mode", "train"),
        "batch_size": batch, "seqlen": census.get("seqlen"), "precision": census.get("precision") or
        summary.get("precision"), "kernel_model": model.describe(), "memory_needed_bytes": memory_needed,
        "samples_per_epoch": per_epoch, "samples_per_epoch_from": per_epoch_from, "steps_per_epoch": steps_per_epoch,
        **goal,
        "assumptions": list(ASSUMPTIONS),
        "notes": notes, "details": details, "devices": []}
    if not census:
        doc["assumptions"].append("a measured profile's memory is not known here: whether the step fits is not checked")
    for i, sheet in enumerate(gpus, 1):
        progress(f"predicting {len(rows):,} ops on {sheet.name} ({i} of {len(gpus)})")
        doc["devices"].append(_on_gpu(sheet, rows, model, census, doc["precision"] or "fp32", steps_per_epoch,
                                      target_epochs))
    doc["ranking"] = ranking(doc["devices"])
    doc["seconds"] = time.perf_counter() - started
    return doc


def _checked(path: Any, names: list[str] | str, epochs: float | None, batch: int | None,
             samples: int | None) -> list[Datasheet]:
    """The GPUs named, each a datasheet, once the other arguments are what they can be (one paragraph if not)."""
    if not isinstance(path, (str, Path)):
        raise DawnbenchError(f"{path!r} is not a path: give a census or profile folder.")
    names = [names] if isinstance(names, str) else names      # one GPU named as itself, not letter by letter
    if not names:
        raise DawnbenchError("--device: name at least one GPU (or gpus: every one of the catalog).")
    for flag, value in (("--epochs", epochs), ("--batch", batch), ("--samples-per-epoch", samples)):
        bounds.check_option(flag, value)
    return sheets(names)


def _nothing_it_lacks(folder: Path, census: dict[str, Any], epochs: float | None, samples: int | None,
                      target: float | None) -> None:
    """An inference census has no epochs and a model's census no task: asking for them is refused, saying why."""
    if census.get("mode") == "inference" and (epochs, samples, target) != (None, None, None):
        raise DawnbenchError(f"{folder} is an inference census: it trains nothing, so it has no epochs or time to "
                             "a target; drop --epochs, --samples-per-epoch and --target (its step is predicted).")
    if target is not None and census.get("kind") == "huggingface":
        raise DawnbenchError(f"--target {target:g}: {folder} is a census of a model, which has no task and so no "
                             "metric a target could be of; give the epochs to your own target with --epochs.")


def _on_gpu(sheet: Datasheet, rows: list[dict[str, Any]], model: Any, census: dict[str, Any], precision: str,
            steps_per_epoch: float | None, target_epochs: float | None) -> dict[str, Any]:
    """One GPU's row: the step, its phases and kernel classes, the epoch and the time to target, each with the
    interval the kernel model's validation measured, whether the step fits, and what it costs."""
    row: dict[str, Any] = {"device": sheet.describe(), **held(census, sheet)}
    predicted = predict_ops(rows, sheet, model)
    step_s = predicted["op_s"]
    epoch_s = step_s * steps_per_epoch if steps_per_epoch else None
    tta_s = epoch_s * target_epochs if epoch_s is not None and target_epochs else None
    bounds_of = model.interval(sheet, precision)
    if bounds_of is not None:
        low, high, kind = bounds_of
        row["interval"] = {"level": LEVEL, "low": low, "high": high, "from": INTERVAL_FROM[kind],
                           **{f"{what}_s": [v * low, v * high] if v is not None else None for what, v in
                              (("step", step_s), ("epoch", epoch_s), ("tta", tta_s))}}
    row.update({**{f"{p}_s": predicted["phases"].get(p) for p in PHASES}, "step_s": step_s,
                "classes": predicted["classes"], "rests_on": predicted["rests_on"], "notes": predicted["notes"],
                "efficiency": predicted["offsets"],
                "epoch_s": epoch_s, "tta_s": tta_s,
                "cost": costs(sheet, tta_s if tta_s is not None else step_s),
                "cost_of": "the time to target" if tta_s is not None else "one step"})
    return row


def held(census: dict[str, Any], sheet: Datasheet) -> dict[str, Any]:
    """Whether a census's step fits on ``sheet`` as the GPU will hold it — its tensors with ``FRAGMENTATION`` more,
    and ``CONTEXT_BYTES`` besides, against the GPU's memory — and, where it does not, the largest batch that would
    (the activations scale with the batch; the weights, gradients and optimizer state do not) and why."""
    memory = census.get("memory")
    if not memory:
        return {"fits": None}
    usable = (sheet.memory_bytes - CONTEXT_BYTES) / (1 + FRAGMENTATION)
    fixed = memory["total_bytes"] - memory["activations_bytes"] + memory["activations_fixed_bytes"]
    per_sample = (memory["activations_bytes"] - memory["activations_fixed_bytes"]) / census["batch"]
    largest = math.floor((usable - fixed) / per_sample) if per_sample and usable > fixed else 0
    out: dict[str, Any] = {"fits": memory["total_bytes"] <= usable, "memory_needed_gib": memory["total_bytes"] / 2**30,
                           "memory_held_gib": allowed(memory["total_bytes"]) / 2**30,
                           "memory_gib": sheet.memory_bytes / 2**30, "memory_usable_gib": usable / 2**30,
                           "largest_batch": largest}
    if not out["fits"]:
        out["why"] = (f"the step holds {memory['total_bytes'] / 2**30:,.1f} GiB of tensors (the census's count), "
                      f"{allowed(memory['total_bytes']) / 2**30:,.2f} GiB with the allocator's slack and the CUDA "
                      f"context, more than the {sheet.name}'s {sheet.memory_bytes / 2**30:,.2f} GiB: it cannot run at "
                      f"batch {census['batch']}; "
                      + (f"the largest batch that fits is {largest}" if largest >= 1 else
                         f"the weights, gradients and optimizer state alone need {fixed / 2**30:,.1f} GiB: no batch fits")
                      + "; its time is given as if it fit")
    return out


def allowed(tensor_bytes: float) -> float:
    """What a GPU holds for a step's tensors: the tensors, the allocator's slack and the CUDA context."""
    return (1 + FRAGMENTATION) * tensor_bytes + CONTEXT_BYTES


def costs(sheet: Datasheet, seconds: float) -> list[dict[str, Any]]:
    """``seconds`` on each catalog instance with this GPU at its on-demand price, cheapest first: a single-GPU
    instance as it is, else one GPU's share of the instance (its price over its GPUs), said so."""
    if not sheet.price_accelerator:
        return []
    rows = [i for i in prices.catalog()["instances"] if i["accelerator"] == sheet.price_accelerator]
    singles = [i for i in rows if i["accelerator_count"] == 1]
    out = []
    for i in singles or rows:
        hourly = i["usd_per_hour"] / i["accelerator_count"]
        out.append({"instance": i["name"] if i["accelerator_count"] == 1 else
                    f"1/{i['accelerator_count']} of {i['name']}", "provider": i["provider"],
                    "usd_per_hour": hourly, "as_of": i["as_of"], "usd": seconds / 3600 * hourly,
                    "share": i["accelerator_count"] > 1})
    return sorted(out, key=lambda c: c["usd"])


def ranking(devices: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The GPUs that fit, cheapest first (to the target where a TTA is known, else a step), those without a price
    after, fastest first; each priced one says whether its cost's interval meets the cheapest's (``tie``)."""
    ranked = []
    for d in devices:
        if d.get("step_s") is None or d.get("fits") is False:
            continue
        cheapest = d["cost"][0] if d["cost"] else None
        ranked.append({"device": d["device"]["name"], "tta_s": d["tta_s"], "step_s": d["step_s"],
                       "usd": cheapest["usd"] if cheapest else None, "cost_of": d["cost_of"],
                       "instance": cheapest["instance"] if cheapest else None,
                       "as_of": cheapest["as_of"] if cheapest else None})
    ranked.sort(key=lambda r: (r["usd"] is None, r["usd"] or 0.0, r["tta_s"] or r["step_s"]))
    spans = {d["device"]["name"]: (d["interval"]["low"], d["interval"]["high"]) for d in devices if d.get("interval")}
    best = ranked[0] if ranked and ranked[0]["usd"] is not None else None
    for r in ranked:
        r["usd_interval"] = [r["usd"] * spans[r["device"]][0], r["usd"] * spans[r["device"]][1]] \
            if r["usd"] is not None and r["device"] in spans else None
        r["tie"] = bool(best and r is not best and r["usd_interval"] and best["usd_interval"] and
                        r["usd_interval"][0] <= best["usd_interval"][1])
    return ranked
