"""A profiled step on another device: step, epoch, time to accuracy and cost.

    doc = predict(Path("runs/cifar10-…-seed0"), ["V100", "T4"])     # a run folder holding profile/
    doc = predict(Path("profiles/cifar10-cifar10-fast-bf16"), ["V100"], epochs=10)

For each device (``devices.py``): every kernel an op runs (``step.py``) at the device's published
time of that problem where its sheet has one, else at its model's; every other op at the device's
roofline and floor; summed per step, the op time. The framework's own time between ops on the
profiled machine (Python, the autograd engine: the step less its ops) is not predicted. On a
published device (an accelerator, or the Xeon Phi) the step is the op time: the host's work runs
ahead of the device's, hidden under it. On a measured machine of the profile's own kind (a CPU
profile and a CPU's ``kernels.json``, the whole-step check) the host's time is not hidden, and
the step is the op time plus the framework's time as measured in the profile — said as such.

**Epoch and TTA.** An epoch is the training split's samples over the global batch, in steps:
the samples per epoch come from the run record (samples / epoch at its evaluations), else from
the official size of the task's training split (a profile of a generated subset predicts the real
epoch); the batch from the profile. The TTA is the run's
epochs to target (or ``epochs``, given) times the predicted epoch: the same recipe needs the same
epochs anywhere, an assumption the prediction states.

**Cost.** For each on-demand instance of the price catalog with one such device and no other
accelerator, the TTA in hours times its price (none where the catalog has no instance of it).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dawnbench import bounds, data
from dawnbench.errors import DawnbenchError
from dawnbench.io import read_json
from dawnbench.prediction.batch import rebatch
from dawnbench.prediction.devices import DeviceModel, device_model
from dawnbench.prediction.step import Step, read_step
from dawnbench.records import documents, prices
from dawnbench.records.kernel_classes import CONV_FWD, CONV_INPUTS, CONV_PARAMS, MATMUL, RECURRENT
from dawnbench.tasks import TASKS, get_task

NO_CURVE_NEEDED = {MATMUL, CONV_FWD, CONV_INPUTS, CONV_PARAMS, RECURRENT}   # costed by their DeepBench problems
CATALOG_NAMES = {"V100": "V100", "P100": "P100", "T4": "T4", "M40": "M40", "TitanXp": "Titan Xp",
                 "1080Ti": "1080 Ti", "KNL7250": "Xeon Phi"}   # how the price catalog names each device


def predict_step(step: Step, model: DeviceModel) -> dict[str, Any]:
    """The step's ops on ``model``: op time per step, by kernel class, and what each part rests on — in order, the
    device's time of the op's own call ("measured"), of its DeepBench problems ("published", "measured" or
    "model"), its class's curve ("curve"), or the roofline ("roofline", with the reason)."""
    precision_notes: set[str] = set()
    by_class: dict[str, float] = defaultdict(float)
    rests_on: dict[str, float] = defaultdict(float)
    ops, missing, roofline = [], [], defaultdict(float)
    for op in step.ops:
        precision, note = model.precision_for(op.precision)
        if note:
            precision_notes.add(note)
        seconds, how = None, "roofline"
        if op.replay is not None:
            own, found = model.kernel_s(op.replay, precision)
            if own is not None:
                seconds, how = own * op.calls, found
        if seconds is None and op.kernels:
            parts = [model.kernel_s(k, precision) for k in op.kernels]
            if all(s is not None for s, _ in parts):
                seconds = sum(s for s, _ in parts) * op.calls          # type: ignore[misc]
                kinds = {h for _, h in parts}       # a device's own time of every part, or the model for some
                how = kinds.pop() if len(kinds) == 1 else "model"
            elif not model.has_curve(op.kernel_class, precision):
                missing.append(f"{op.op} {op.shapes}: the device has no rows of its suite and pass to fit on")
        if seconds is None and op.calls:
            curve = model.curve_s(op.kernel_class, op.flops / op.calls, op.bytes / op.calls, precision)
            if curve is not None:
                seconds, how = curve * op.calls, "curve"
        if seconds is None:
            seconds = model.other_s(op.flops / op.calls, op.bytes / op.calls, precision) * op.calls
            roofline[op.kernel_class] += seconds
        by_class[op.kernel_class] += seconds
        rests_on[how] += seconds
        ops.append({"op": op.op, "shapes": op.shapes, "class": op.kernel_class, "calls": op.calls,
                    "measured_s": op.seconds, "predicted_s": seconds, "from": how})
    total = sum(by_class.values())
    floor = f", never below {model.floor_s * 1e6:.3g} µs a call (the sheet's smallest kernel)" if model.floor_s else ""
    bare = [f"{cls}: {seconds * 1e3:.3g} ms a step at the bare roofline{floor} — the device has no rows of this class"
            for cls, seconds in sorted(roofline.items(), key=lambda kv: -kv[1]) if cls not in NO_CURVE_NEEDED]
    return {"op_s": total, "classes": dict(sorted(by_class.items(), key=lambda kv: -kv[1])),
            "rests_on": {k: {"seconds": v, "share": v / total if total else None} for k, v in rests_on.items()},
            "notes": sorted(precision_notes) + missing + bare, "ops": sorted(ops, key=lambda o: -o["predicted_s"])}


def _run_facts(path: Path) -> dict[str, Any] | None:
    """The run record next to a profile (a run folder, or the one above its profile/), if any."""
    for folder in (path, path.parent):
        if (folder / "result.json").is_file():
            doc, notes = documents.run(read_json(folder / "result.json", "run record"), folder / "result.json")
            if doc is None:
                raise DawnbenchError(notes[0])
            return {"dir": str(folder), **doc}
    return None


def epoch_samples(task_name: str, run: dict[str, Any] | None, profiled_run: dict[str, Any] | None
                  ) -> tuple[int | None, str]:
    """An epoch's samples and where the figure comes from: the run record beside the profile, else the run the
    profile was made from (a quick trial's epoch is its subset's), else the task's training split."""
    if run is None and (profiled_run or {}).get("samples_per_epoch"):
        return profiled_run["samples_per_epoch"], f"the run the profile was made from ({profiled_run['dir']})"
    return samples_per_epoch(task_name, run)


def at_least_a_step(epochs: float | None, steps_per_epoch: float | None, said: str | None) -> None:
    """Epochs to target of less than one step are refused: no run reaches a target before its first step."""
    if epochs and steps_per_epoch and epochs * steps_per_epoch < 1:
        raise DawnbenchError(f"{epochs:g} epochs to target ({said}) are {epochs * steps_per_epoch:.3g} of one step "
                             f"({steps_per_epoch:.4g} steps an epoch): no run reaches its target before its first "
                             "step. Give the epochs a run took (--epochs).")


def samples_per_epoch(task_name: str, run: dict[str, Any] | None) -> tuple[int | None, str]:
    """The training split's samples of ``task_name`` (the run's own where a run record is given), and where the
    figure comes from."""
    for evaluation in (run or {}).get("evals") or []:
        if evaluation.get("epoch") and evaluation.get("samples"):
            return round(evaluation["samples"] / evaluation["epoch"]), "the run record (samples / epoch)"
    try:
        task = get_task(task_name)
        spec = data.get_spec(data.base_name(task.dataset))
        count = spec.counts[task.train_split]
    except (DawnbenchError, KeyError) as err:
        return None, f"unknown: no run record, and {task_name} is not a task with a known training split ({err})"
    unit = " (questions; the windows an entry steps over are a few per cent more)" if spec.kind == "questions" else ""
    return count, f"the official {spec.name} training split{unit}"


def epochs_to_target(task_name: str | None, runs: tuple[dict[str, Any] | None, ...], epochs: float | None,
                     target: float | None) -> dict[str, Any]:
    """The epochs a TTA times, to which target, and where each comes from: ``epochs`` (--epochs) where given,
    else the first of ``runs`` (the run record beside the profile, the run the profile was made from) that
    reached its target — only where that target is the one asked for (``target``, else the task's own): a run's
    epochs to 97 % are not the epochs to 99 %, and are refused rather than used for them. ``source`` is the run
    the epochs came from (None: --epochs, or no epochs)."""
    task = TASKS.get(task_name or "")
    if target is not None and task is not None and not task.metric.low <= target <= task.metric.high:
        raise DawnbenchError(f"--target {target:g}: {task.name}'s {task.metric.name} lies between "
                             f"{task.metric.low:g} and {task.metric.high:g}; give a target inside that range.")
    wanted = target if target is not None else task.threshold if task is not None else None
    wanted_from = "--target" if target is not None else f"{task.name}'s target" if task is not None else None
    goal = {"target": wanted, "target_from": wanted_from, "epochs_to_target": epochs, "source": None,
            "epochs_from": None if epochs is None else f"--epochs (the epochs to {_target(wanted)})"}
    if epochs is not None:
        return goal
    for run in runs:
        if run is None or not run.get("epochs_to_target"):
            continue
        reached = run.get("threshold")
        if reached is not None and task is not None and not task.metric.low <= reached <= task.metric.high:
            raise DawnbenchError(f"{run['dir']}: its recorded target {reached:.10g} lies outside {task.name}'s "
                                 f"{task.metric.name} ({task.metric.low:g} to {task.metric.high:g}): the record is "
                                 "damaged. Profile the run again, or give --epochs.")
        if reached is not None and wanted is not None and reached != wanted:
            raise DawnbenchError(
                f"{run['dir']}: its {run['epochs_to_target']:g} epochs to target were reached at {reached:.10g}, and "
                f"the time asked for is to {wanted:.10g} ({wanted_from}): one target's epochs are not another's. Give "
                f"--epochs N, the epochs to {wanted:.10g} (from a run that reached it), or --target {reached:.10g} to "
                "predict the time to the run's own target.")
        at = f"{reached:g}" if reached is not None else "its target (the profile did not record which)"
        return {**goal, "epochs_to_target": run["epochs_to_target"], "source": run, "target": reached,
                "target_from": f"the run's own ({run['dir']})" if reached is not None else None,
                "epochs_from": f"the run's epochs to {at} ({run['dir']}), at its first evaluation at or past it: "
                               "at most these — it may have got there between evaluations"}
    return goal


def _target(value: float | None) -> str:
    return "the target" if value is None else f"{value:g}"


# What every prediction of a profile assumes, said with it
ASSUMPTIONS = ("the framework's time between ops is not predicted: on a published device it is hidden under the ops — "
               "but never below the host's floor (the ops a step issues, each at the host's measured cost of issuing "
               "one, where the profile was taken) — on a measured machine of the profile's kind it is the profile's "
               "own", "the same epochs to target on every device (the same recipe, precision and batch)",
               "one device, no data-loading stall")

def predict(path: Path, device_names: list[str], epochs: float | None = None,
            progress: Callable[[str], None] = lambda line: None, batch: int | None = None,
            target: float | None = None) -> dict[str, Any]:
    """The step of ``path`` (a profile folder, or a run folder holding one) on each device — at ``batch`` where
    given (``batch.py``: every op's call re-derived at it); ``progress`` hears which device is being predicted;
    the TTA is to ``target`` (else the task's own, see :func:`epochs_to_target`)."""
    started = time.perf_counter()
    if not device_names:
        raise DawnbenchError("--device: name at least one device (or all).")
    bounds.check_option("--epochs", epochs)
    bounds.check_option("--batch", batch)
    models = [device_model(name) for name in device_names]
    notes: list[str] = []
    details: list[str] = []      # one per line of ops.tsv read as unknown or left out: --verbose shows them
    step = read_step(Path(path), notes, details)
    measured_step, profiled_batch = step, step.batch_size      # what was measured, whatever batch is predicted
    if batch is not None and batch != step.batch_size:
        progress(f"re-deriving {len(step.ops):,} ops at batch {batch}")
        step, rebatched = rebatch(step, batch)
        notes += rebatched
    run = _run_facts(Path(path))
    per_epoch, per_epoch_from = epoch_samples(step.task, run, step.run)
    steps_per_epoch = per_epoch / step.batch_size if per_epoch and step.batch_size else None
    if steps_per_epoch is not None and steps_per_epoch < 1:
        notes.append(f"batch {step.batch_size:,} is larger than the {per_epoch:,} samples of an epoch: an epoch is "
                     "less than one step here, which no run trains (its last batch would be the whole split)")
    goal = epochs_to_target(step.task, (run, step.run), epochs, target)
    source = goal.pop("source")
    trained = (source or {}).get("precision")
    if trained and trained != step.precision:
        notes.append(f"the run trained in {trained}, the profile ran {step.precision}: the run's epochs to "
                     "target are taken as they are — the recipe in another precision may need others; give "
                     "--epochs where they are known")
    target_epochs = goal["epochs_to_target"]
    at_least_a_step(target_epochs, steps_per_epoch, goal["epochs_from"])
    for source in (run, step.run):
        if source is not None and source.get("subset"):
            notes.append(f"the run ({source['dir']}) trained on a subset ({source['subset']}), unofficial: its epochs "
                         "to target are its schedule's, not the task's")
            break
    framework = max(0.0, measured_step.step_s - measured_step.op_s)
    host_floor, floor_from = host_floor_s(step)
    doc: dict[str, Any] = {
        "profile": str(step.profile), "task": step.task, "entry": step.entry, "precision": step.precision,
        "emulated": step.emulated, "disturbed": step.disturbed,
        "profiled_on": step.device, "batch_size": step.batch_size, "profiled_batch_size": profiled_batch,
        "measured": {"step_s": measured_step.step_s, "op_s": measured_step.op_s, "framework_s": framework,
                     "framework_share": framework / measured_step.step_s},
        "samples_per_epoch": per_epoch, "samples_per_epoch_from": per_epoch_from,
        "steps_per_epoch": steps_per_epoch, **goal,
        "assumptions": list(ASSUMPTIONS),
        "mapped_share_of_op_time": sum(o.seconds for o in step.ops if o.kernels) / step.op_s,
        "own_call_share_of_op_time": sum(o.seconds for o in step.ops if o.replay is not None) / step.op_s,
        "notes": notes, "details": details, "devices": []}
    for i, model in enumerate(models, 1):
        progress(f"predicting {len(step.ops):,} ops on {model.name} ({i} of {len(models)})")
        doc["devices"].append(_on_device(model, step, framework, host_floor, floor_from, steps_per_epoch, target_epochs))
    doc["seconds"] = time.perf_counter() - started
    return doc


def _on_device(model: Any, step: Step, framework: float, host_floor: float, floor_from: str,
               steps_per_epoch: float | None, target_epochs: float | None) -> dict[str, Any]:
    """One device's row: its ops' time, the framework's beside them on a machine of the profile's kind, never below
    the host's floor; the epoch, the time to target and what it costs."""
    predicted = predict_step(step, model)
    beside = framework if model.kind == "measured" and model.device_type == step.device else 0.0
    step_s = predicted["op_s"] + beside
    host_bound = not beside and step_s < host_floor
    if host_bound:
        predicted["notes"].insert(0,
            f"the host binds: its ops alone take {step_s * 1e3:.3g} ms a step here, less than the "
            f"{host_floor * 1e3:.3g} ms its host needs to issue them ({floor_from}): the step is the host's")
        step_s = host_floor
    epoch_s = step_s * steps_per_epoch if steps_per_epoch else None
    tta_s = epoch_s * target_epochs if epoch_s is not None and target_epochs else None
    return {"device": model.describe(), **predicted, "framework_s": beside, "host_floor_s": host_floor,
            "host_bound": host_bound, "step_s": step_s, "epoch_s": epoch_s, "tta_s": tta_s, "cost": _costs(model, tta_s)}


def kind_of(kernel_class: str) -> str:
    """The dispatch kind of a kernel class (records/kernel_classes.py's names)."""
    if kernel_class == "matrix multiply":
        return "matrix multiply"
    if kernel_class.startswith("convolution"):
        return "convolution"
    return "elementwise"

def host_floor_s(step: Step) -> tuple[float, str]:
    """The least time the host needs to issue a step's ops: each op's calls times the host's cost of
    issuing one op of its kind, measured where the profile was taken; and where that comes from. The profile's
    other time between ops (Python, autograd, on a small CPU its input pipeline too) is not counted: it says what
    that machine did, not what an accelerator's host must do."""
    if not step.dispatch_s:
        return 0.0, "no floor: the profile has no dispatch measurement (made before it); profile again"
    issue = sum(op.calls * step.dispatch_s.get(kind_of(op.kernel_class), step.dispatch_s.get("elementwise", 0.0))
                for op in step.ops)
    calls = sum(op.calls for op in step.ops)
    return issue, (f"{calls:,.0f} op calls a step at the host's measured cost of issuing each one, measured where "
                   "the profile was taken")


def _costs(model: DeviceModel, tta_s: float | None) -> list[dict[str, Any]]:
    """TTA × price for each single-device on-demand instance of the catalog with this device."""
    name = CATALOG_NAMES.get(model.name)
    if name is None or tta_s is None:
        return []
    rows = [i for i in prices.catalog()["instances"] if name.lower() in (i["accelerator"] or "").lower()
            and i["accelerator_count"] == 1]
    return [{"instance": i["name"], "provider": i["provider"], "usd_per_hour": i["usd_per_hour"],
             "as_of": i["as_of"], "usd": tta_s / 3600 * i["usd_per_hour"]} for i in rows]
