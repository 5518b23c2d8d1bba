"""``dawnbench profile``: why a configuration trains as fast as it does.

    summary = run_profile(ProfileOptions(task="cifar10", precision="bf16", steps=10))

In order: check the configuration as ``run`` would; warm up as ``run`` does (the
entry's own warm-up on synthetic data); train on the real training split for a few
steps, one census step and ``steps`` steps under ``torch.profiler`` (``ops.py``);
measure this machine's roofs (``roofs.py``); write to ``out``:

* ``ops.tsv``      the per-op table (calls, time, FLOPs, bytes, intensity, FLOP/s,
                   bytes/s, memory- or compute-bound against the ridge of its precision);
* ``summary.json`` the window, the step as a whole, the memory-bound share, the
                   top ops, the FLOP cross-check and, with ``without``, the comparison;
* ``cdf.png``, ``roofline.png``  drawn from those two by the CLI
                   (:func:`dawnbench.cli.figures.profile_figures`);
* ``trace.json``   the Chrome trace of the window (chrome://tracing, Perfetto);
* ``resources.tsv`` the resource monitor over warm-up and window (its summary in
                   ``summary.json``: what ``dawnbench similarity`` reads).

``without=("BatchNorm2d", "GELU")`` profiles the same window again with those module
classes replaced by identities and reports the change in throughput — the analysis's
experiment; nothing is claimed about accuracy. Its files go to ``out/without/``.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torch import nn

from dawnbench import bounds, data, environment
from dawnbench.entries import Entry
from dawnbench.entries.saved import recorded_entry
from dawnbench.errors import DawnbenchError
from dawnbench.harness.core import stepping, train_context, warm_up
from dawnbench.harness.memory import plan_memory
from dawnbench.harness.options import RunOptions, prepare
from dawnbench.io import atomic_write_json, dumps, inside, output_dir, read_json, refuse_to_replace
from dawnbench.precision import labelled
from dawnbench.profiling.dispatch import measure_dispatch
from dawnbench.profiling.flops import training_flops_per_sample
from dawnbench.profiling.load import against_last, watched
from dawnbench.profiling.ops import Window, profile_window
from dawnbench.profiling.resources import ResourceMonitor
from dawnbench.profiling.roofs import Roofs, measure_roofs
from dawnbench.records import documents
from dawnbench.records.kernel_classes import classify
from dawnbench.records.ops import write_ops
from dawnbench.records.record import read_result
from dawnbench.tasks import TASKS


@dataclass
class ProfileOptions:
    task: str = "mnist"
    entry: str | None = None
    precision: str = "fp32"
    steps: int = 10                     # optimizer steps in the profiled window
    warm_steps: int = 3                 # real-data steps before the census step
    without: tuple[str, ...] = ()       # module class names replaced by identities, in a second window
    device: str = "auto"
    seed: int = 0
    overrides: dict[str, Any] = field(default_factory=dict)
    out: Path | None = None             # default: profiles/TASK-ENTRY-PRECISION
    subset: str | None = None           # ImageNet, SQuAD: the tree imported under this name
    run: dict[str, Any] | None = None   # made from a run: its folder, epochs to target and samples per epoch
    emulated: bool = False              # a precision this CPU only emulates let through (its op census is the point)


def options_from_run(run_dir: Path, trust_entry: bool = False, **changes: Any) -> ProfileOptions:
    """The configuration of a finished run (task, entry, precision, hyperparameters, seed); an entry
    that is not built in is loaded from the file the record names only with ``trust_entry``."""
    result = read_result(run_dir)
    if result.get("tracked") or result.get("imported"):   # no entry class to build again: the script profiles itself
        script = (result.get("tracked") or {}).get("script") or "your_script.py"
        raise DawnbenchError(f"{run_dir}: " + (
            f"a tracked script's run; profile a window of it by running the script again with "
            f"DAWNBENCH_PROFILE_STEPS=10 set (e.g. `DAWNBENCH_PROFILE_STEPS=10 python {script}`): the new run's folder "
            "holds profile/, which explain and predict read." if result.get("tracked") else
            "made from an MLPerf log by import-log: it has no model to profile."))
    entry = recorded_entry(run_dir, result["entry"], trust_entry)
    per_epoch = next((round(e["samples"] / e["epoch"]) for e in result.get("evals") or []
                      if e.get("epoch") and e.get("samples")), None)
    opts = ProfileOptions(task=result["task"], entry=entry, precision=result.get("precision", "fp32"),
                          seed=result.get("seed") or 0, overrides=dict(result.get("hparams") or {}),
                          out=inside(run_dir, "profile"), subset=result.get("subset"),
                          run={"dir": str(run_dir), "epochs_to_target": result.get("epochs_to_target"),
                               "threshold": result.get("threshold"),
                               "samples_per_epoch": per_epoch, "subset": result.get("subset"),
                               "precision": result.get("precision", "fp32")})
    return with_changes(opts, **changes)


def options_for(target: str, entry: str | None, overrides: dict[str, Any], precision: str | None, seed: int,
                trust_entry: bool = False, **changes: Any) -> ProfileOptions:
    """What ``profile TARGET`` profiles: a task (with ``entry`` and ``overrides``), or a finished run's folder (as it
    ran; its entry is imported only with ``trust_entry``), with the options a user gave (``changes``)."""
    # A task's name is the task even where a folder of that name (say, the downloaded data) sits here;
    # a run folder is one holding result.json (a link there too: it is refused when read, by name).
    folder = Path(target)
    if folder.is_dir() and (target not in TASKS or os.path.lexists(folder / "result.json")):
        if overrides or entry:
            where = (" from another directory: the folder named like the task here holds result.json"
                     if target in TASKS else "")
            raise DawnbenchError(f"{folder}: a run folder is profiled as it ran — its entry and hyperparameters are "
                                 "its record's — so --set and --entry do not apply. Profile the task instead "
                                 f"(`dawnbench profile TASK --entry E --set K=V`){where}.")
        try:
            return options_from_run(folder, trust_entry, precision=precision, **changes)
        except DawnbenchError as error:
            if target not in TASKS:
                raise
            raise DawnbenchError(f"{error} ('{target}' was read as the run folder here, which holds result.json; "
                                 "to profile the task, run from another directory.)") from None
    if target not in TASKS:
        raise DawnbenchError(f"{target}: neither a task ({', '.join(TASKS)}) nor a run directory. Pass a task "
                             "name, or the folder of a finished run.")
    return with_changes(ProfileOptions(task=target, entry=entry, precision=precision or "fp32", overrides=overrides,
                                       seed=seed), **changes)


def with_changes(opts: ProfileOptions, **changes: Any) -> ProfileOptions:
    """``opts`` with the options a user gave (``None``: not given, keep the default)."""
    return dataclasses.replace(opts, **{k: v for k, v in changes.items() if v is not None})


def strip_modules(model: nn.Module, classes: tuple[str, ...]) -> int:
    """Replace every submodule whose class name is in ``classes`` by ``nn.Identity``; return how many."""
    removed = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child).__name__ in classes:
                setattr(parent, name, nn.Identity())
                removed += 1
    return removed


def _window(entry: Entry, prep: Any, opts: ProfileOptions, out: Path) -> tuple[Window, dict[str, Any]]:
    task = prep.task
    scored = data.open_split(task.dataset, task.scored_split, mmap=True)
    warm_up(entry, train_context(entry, task, opts.seed, opts.precision), scored, opts.seed)
    with stepping(entry, train_context(entry, task, opts.seed, opts.precision), opts.seed) as steps:
        window = profile_window(steps, prep.device, opts.steps, opts.warm_steps, out / "trace.json")
    flop_check = None
    probe = entry.flop_model()
    batch = entry.hp.get("batch_size")
    if probe is not None and batch:
        flop_check = training_flops_per_sample(*probe) * batch
    return window, {"flop_counter_flops_per_step": flop_check, "batch_size": batch}


def summarise(window: Window, extra: dict[str, Any], opts: ProfileOptions, roofs: Roofs) -> dict[str, Any]:
    rows = window.table(roofs.ridge, lambda p: roofs.flops[p], opts.precision)
    # An op faster than the probes' best is the machine's best rate, so the roof is raised to it (the probe
    # shapes or the clock missed it; roofs.raised names the op): no row is ever above its own profile's roof.
    fastest = {}
    for r in rows:
        if r["flops_per_s"] and r["flops_per_s"] > max(roofs.flops[r["precision"]], fastest.get(r["precision"], (0,))[0]):
            fastest[r["precision"]] = (r["flops_per_s"], f"{r['op']} {r['shapes']}")
    if fastest:
        roofs = copy.deepcopy(roofs)
        for precision, (rate, op) in fastest.items():
            roofs.raise_to(precision, rate, op)
        rows = window.table(roofs.ridge, lambda p: roofs.flops[p], opts.precision)
    op_time = sum(r["time_s"] for r in rows)
    flops = sum(r["flops"] for r in rows)
    moved = sum(r["bytes"] for r in rows)
    step_s = window.wall_s / window.steps
    batch = extra["batch_size"]
    census_flops_step = flops / window.steps
    check = extra["flop_counter_flops_per_step"]
    step = {"time_s": step_s, "flops": census_flops_step, "bytes": moved / window.steps,
            "intensity": flops / moved if moved else None,
            "flops_per_s": flops / window.wall_s if window.wall_s > 0 else None}
    roof = roofs.flops[opts.precision]
    return {
        "task": opts.task, "entry": opts.entry, "precision": opts.precision, "device": window.device_type,
        "steps": window.steps, "window_s": window.wall_s, "step": step,
        "samples_per_s": batch * window.steps / window.wall_s if batch else None,
        "fraction_of_peak": step["flops_per_s"] / roof if step["flops_per_s"] else None,
        "op_time_share_of_window": op_time / window.wall_s if window.wall_s > 0 else None,
        "memory_bound_share": sum(r["time_s"] for r in rows if r["bound"] == "memory") / op_time if op_time else None,
        "matched_share": window.matched_share,
        "matched_by_name_share": window.matched_by_name_share,
        "flop_check": {"census_flops_per_step": census_flops_step, "flop_counter_flops_per_step": check,
                       "ratio": census_flops_step / check if check else None},
        "roofs": roofs.to_dict(),
        "top_ops": [{k: r[k] for k in ("op", "shapes", "share", "flops_per_s", "bound")} for r in rows[:10]],
        "classes": classify(rows),   # the same rows by kernel class (records/kernel_classes.py)
        "rows": len(rows),
    }


def write_profile(window: Window, summary: dict[str, Any], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    kept, notes = documents.profile(json.loads(dumps(summary)), out / "summary.json")   # the readers' door, first
    if kept is None:
        raise DawnbenchError(f"{notes[0]}; so the profile was not written. Profile again on a quieter machine.")
    write_ops(window.rows, out / "ops.tsv")
    atomic_write_json(out / "summary.json", summary, indent=1)


def default_name(task: str, entry: str, opts: ProfileOptions) -> str:
    """``TASK-ENTRY-PRECISION``, and each ``--set`` as ``KEY=VALUE`` (letters, digits and ``.=_`` kept, 120 characters
    at most): another configuration of the same entry never lands in, and replaces, the folder of the first."""
    sets = "".join(f"-{k}={v}" for k, v in opts.overrides.items())
    return f"{task}-{entry}-{opts.precision}" + re.sub(r"[^A-Za-z0-9._=-]+", "_", sets)[:120]


WRITTEN = ("summary.json", "ops.tsv", "trace.json", "resources.tsv", "cdf.png", "roofline.png")


def _check_out(out: Path, precision: str) -> None:
    """``--out`` may be new, empty, or an earlier profile in the same precision (written again); a folder holding
    files of those names that a profile did not write, or a profile in another precision (a run's ``profile/``
    profiled again with ``--precision``), is refused — nothing the user had is replaced."""
    theirs = [name for name in WRITTEN if os.path.lexists(out / name)]
    if not theirs:
        return
    try:       # read as anything handed over is: a link, a fifo or a huge file is no earlier profile
        earlier = read_json(out / "summary.json", "profile")
    except DawnbenchError:
        earlier = None
    if isinstance(earlier, dict) and "window_s" in earlier:
        was = labelled(str(earlier.get("precision") or "fp32"), earlier.get("emulated"))
        if was != precision:
            raise DawnbenchError(f"--out {out}: it holds a profile in {was}; profiling {precision} there would "
                                 f"replace it. Pass another --out (say {out}-{precision.split()[0]}).")
        refuse_to_replace(*(out / name for name in WRITTEN))   # before profiling, not after it (--force: again)
        return
    raise DawnbenchError(f"--out {out}: it holds {', '.join(theirs)}, and it is not an earlier profile (no profile's "
                         "summary.json), so profiling there would replace them. Pass a new or empty folder.")


def run_profile(opts: ProfileOptions, status=lambda msg: None) -> dict[str, Any]:
    """Profile one configuration (and its ``without`` variant); return the summary."""
    bounds.check_fields(opts, bounds.fields_of("--steps", "--warm-steps", "--seed"))
    run_options = RunOptions(task=opts.task, entry=opts.entry, device=opts.device, precision=opts.precision,
                             overrides=opts.overrides, seed=opts.seed, subset=opts.subset)
    prep = prepare(run_options, emulated_ok=opts.emulated)
    out = output_dir(opts.out or Path("profiles") / default_name(prep.task.name, prep.entry_cls.name, opts))
    _check_out(out, labelled(opts.precision, prep.emulated))
    data.ensure(prep.task.dataset)
    # one name for the entry everywhere (folder, title, summary): its class's `name`; a file given as --entry is kept
    # beside it, as entry_file
    entry_file = opts.entry if opts.entry is not None and opts.entry != prep.entry_cls.name else None
    opts.entry = prep.entry_cls.name
    title = _title(prep, opts)
    status("planning memory")  # as `run` does: never an allocation the machine cannot hold
    plan = plan_memory(run_options, prep)
    if plan.refusal:
        raise DawnbenchError(plan.refusal)
    if plan.planned and plan.batch_size != opts.overrides.get("batch_size", plan.asked):
        opts.overrides = {**opts.overrides, "batch_size": plan.batch_size}
    entry = prep.entry_cls(prep.task, prep.device, opts.overrides)
    if plan.eval_batch_size is not None:
        entry.eval_batch_size = plan.eval_batch_size
    if opts.without:
        _check_without(entry, opts.without)
    devices = [prep.device.index or 0] if prep.device.type == "cuda" else []
    with watched("the roof probes and the profiled window") as load:
        status("measuring this machine's roofs")
        roofs = measure_roofs(prep.device, emulated=(opts.precision,) if prep.emulated else ())
        dispatch = measure_dispatch(prep.device)
        status(f"warm-up, then {opts.warm_steps} + 1 census + {opts.steps} profiled steps")
        with ResourceMonitor(out / "resources.tsv", devices=devices) as monitor:  # warm-up and window: the footprint
            window, extra = _window(entry, prep, opts, out)
    summary = summarise(window, extra, opts, roofs)
    summary["resources"] = monitor.summary()
    summary["load"] = load.summary
    summary["notes"] = [*load.notes, *against_last(roofs.to_dict(), load)]
    if prep.emulated:      # the times below are an emulation's: what predict and explain read of them is said there
        summary["emulated"] = prep.emulated
        summary["notes"].append(f"{opts.precision} emulated on this CPU ({prep.emulated}): the op census is the "
                                f"step's, its times the emulation's — for `predict` on another device")
    summary["title"] = title
    summary["set"] = opts.overrides        # what --set changed (and the memory plan's batch): the configuration profiled
    if entry_file:
        summary["entry_file"] = entry_file
    summary["memory_plan"] = plan.to_dict()
    summary["dispatch_s"] = dispatch
    if opts.run is not None:   # predict PROFILE gives TTA and cost from it, wherever the folder is copied
        summary["run"] = opts.run
    # what made it, as every evidence file says (SPEC §18): command, dawnbench's commit and tree, date, machine
    summary.update(environment.provenance(prep.device))
    write_profile(window, summary, out)
    summary["out"] = str(out)

    if opts.without:
        status(f"the same window without {', '.join(opts.without)}")
        summary["without"] = _without(prep, opts, summary, roofs, devices, out)
    atomic_write_json(out / "summary.json", summary, indent=1)
    return summary


def _title(prep: Any, opts: ProfileOptions) -> str:
    """``TASK · ENTRY · PRECISION · N steps`` and each ``--set`` as ``KEY=VALUE``: the profile's one-line name."""
    return (f"{prep.task.name} · {prep.entry_cls.name} · {labelled(opts.precision, prep.emulated)} · {opts.steps} "
            f"step{'s' if opts.steps != 1 else ''}" + "".join(f" · {k}={json.dumps(v)}" for k, v in opts.overrides.items()))


def _without(prep: Any, opts: ProfileOptions, summary: dict[str, Any], roofs: Roofs, devices: list[int],
             out: Path) -> dict[str, Any]:
    """The same window with ``opts.without``'s module classes replaced by identities, written to ``out/without``;
    its change against ``summary``."""
    stripped = prep.entry_cls(prep.task, prep.device, opts.overrides)
    build, removed = stripped.make_model, []

    def make_model() -> nn.Module:
        model = build()
        removed.append(strip_modules(model, opts.without))
        return model
    stripped.make_model = make_model  # type: ignore[method-assign]
    with ResourceMonitor(out / "without" / "resources.tsv", devices=devices) as monitor:
        window, extra = _window(stripped, prep, opts, out / "without")
    variant = summarise(window, extra, opts, roofs)
    variant["resources"] = monitor.summary()
    variant.update({k: summary[k] for k in ("emulated",) if k in summary})
    variant["variant"] = f"without {','.join(opts.without)}"  # its own configuration in `similarity`
    variant["title"] = summary["title"] + f" · without {','.join(opts.without)}"
    variant["out"] = str(out / "without")
    write_profile(window, variant, out / "without")
    return {"modules": list(opts.without), "removed": removed[-1], "samples_per_s": variant["samples_per_s"],
            "step_s": variant["step"]["time_s"], "speedup": summary["step"]["time_s"] / variant["step"]["time_s"],
            "memory_bound_share": variant["memory_bound_share"], "out": str(out / "without")}


def _check_without(entry: Entry, classes: tuple[str, ...]) -> None:
    """Bad input before anything is measured: classes the entry's network does not have."""
    model = entry.make_model()
    if model is None:
        raise DawnbenchError(f"--without: entry '{entry.name}' defines no make_model(), so its modules "
                             "cannot be replaced. Define make_model() and build the network with it.")
    present = {type(m).__name__ for m in model.modules()}
    missing = [c for c in classes if c not in present]
    if missing:
        raise DawnbenchError(f"--without {','.join(missing)}: entry '{entry.name}' has no module of "
                             f"{'that class' if len(missing) == 1 else 'those classes'}. "
                             f"Its module classes: {', '.join(sorted(present))}.")
