"""Do models optimised for time to accuracy generalise? (SPEC §15; DAWNBench analysis, Tables 5–6)

    doc = generalize(["runs/mnist/"], GeneralizeOptions(unseen=(Path("qmnist/"),)))

Every run under the paths that saved a model is scored — ``model.pt`` (the model that
first reached the target) and, for a run trained on with ``--continue``,
``model_final.pt`` (the end of its schedule) — on

* the **scored split** again: a re-check that must equal the metric the run recorded
  when it saved the model (``recheck`` says whether it does);
* the **shifted suite** (``data/corruptions.py``): every family at every severity
  asked for, generated deterministically from the scored split and cached;
* the **unseen sets** found in ``unseen`` (``data/unseen.py``: CIFAR-10.1, QMNIST's
  50,000 extra digits).

Per model: the metric on each set, the drop from the scored split, and the mean over
the suite. Per configuration (task, entry, which model): mean and standard deviation
over its runs. Written to each run (``RUN/generalization.json``, and a summary under
``generalization`` in ``result.json``, replaced atomically) and to ``out``
(``generalization.json``); the CLI draws ``generalization-TASK.png`` from the document
(the metric against severity per corruption family, one line per configuration).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from dawnbench import data
from dawnbench.data.corruptions import (
    DATASET_TABLES,
    FAMILIES,
    check_family,
    shifted_split,
)
from dawnbench.data.splits import ArraySplit, Split
from dawnbench.data.unseen import UnseenSet, find_unseen
from dawnbench.entries.saved import (
    FINAL_MODEL_FILE,
    MODEL_FILE,
    load_saved_entry,
    recorded_entry,
)
from dawnbench.errors import DawnbenchError
from dawnbench.harness.core import evaluate
from dawnbench.harness.options import resolve_device
from dawnbench.io import atomic_write_json, output_dir, update_json, walk_foreign
from dawnbench.records.record import check_record, read_result
from dawnbench.tasks import Task, get_task

VARIANTS = {MODEL_FILE: "at target", FINAL_MODEL_FILE: "end of schedule"}
RESULT_FILE = "generalization.json"


@dataclass
class GeneralizeOptions:
    suite: bool = True                           # score the shifted suite
    families: tuple[str, ...] = FAMILIES
    severities: tuple[int, ...] = (1, 2, 3, 4, 5)
    unseen: tuple[Path, ...] = ()                # files or folders holding unseen sets
    device: str = "auto"
    out: Path | None = Path("generalization")
    trust_entry: bool = False                    # import entry files that run records name (not built in)


def parse_severities(text: str) -> tuple[int, ...]:
    """``1-5`` or ``1,3,5`` → (1, …); a clear error otherwise."""
    try:
        if "-" in text:
            lo, hi = (int(x) for x in text.split("-", 1))
            values = tuple(range(lo, hi + 1))
        else:
            values = tuple(int(x) for x in text.split(",") if x)
    except ValueError:
        raise DawnbenchError(f"--severities {text!r}: write a range like 1-5 or a list like 1,3,5.") from None
    if not values or any(not 1 <= v <= 5 for v in values):
        raise DawnbenchError(f"--severities {text!r}: severities run from 1 to 5.")
    return values


def run_dirs_under(paths: Sequence[str | Path]) -> list[Path]:
    found: list[Path] = []
    for p in map(Path, paths):
        if not p.exists():
            raise DawnbenchError(f"{p}: no such file or directory. Pass run directories or folders of them.")
        found += [p] if (p / "result.json").exists() else sorted(
            f.parent for f in walk_foreign(p) if f.name == "result.json")
    if not found:
        raise DawnbenchError(f"{', '.join(map(str, paths))}: no run directory (with result.json) there.")
    return found


def _models(run_dir: Path) -> list[str]:
    return [name for name in VARIANTS if (run_dir / name).is_file()]


def score_model(run_dir: Path, result: dict[str, Any], name: str, sets: dict[str, Split],
                device: torch.device, trust: bool = False) -> dict[str, Any]:
    """The metric of one saved model of the run (``result``: its result.json) on each named set."""
    task = get_task(result["task"], result.get("subset"))
    entry, payload = load_saved_entry(run_dir, device, name, task, trust=trust)
    precision = result.get("precision", "fp32")
    values = {label: evaluate(entry, task, split, precision)[0] for label, split in sets.items()}
    return {"run_dir": str(run_dir), "task": task.name, "entry": result["entry"], "seed": result.get("seed"),
            "variant": VARIANTS[name], "model": name, "epoch": payload["epoch"],
            "recorded": payload["value"], "values": values}


def _summarise_model(doc: dict[str, Any], scored: str, suite: list[str], unseen: list[str]) -> dict[str, Any]:
    v = doc["values"]
    base = v[scored]
    doc["scored"] = base
    doc["recheck"] = abs(base - doc["recorded"]) < 1e-6
    if suite:
        doc["suite_mean"] = statistics.fmean(v[s] for s in suite)
        doc["suite_drop"] = base - doc["suite_mean"]
    doc["unseen"] = {u: {"value": v[u], "drop": base - v[u]} for u in unseen}
    return doc


def _group(models: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for m in models:
        groups[(m["task"], m["entry"], m["variant"])].append(m)

    def stats(values: list[float]) -> dict[str, float]:
        return {"mean": statistics.fmean(values), "std": statistics.pstdev(values) if len(values) > 1 else 0.0}
    rows = []
    for (task, entry, variant), ms in sorted(groups.items()):
        row: dict[str, Any] = {"task": task, "entry": entry, "variant": variant, "models": len(ms),
                               "scored": stats([m["scored"] for m in ms]),
                               "rechecks_ok": sum(m["recheck"] for m in ms)}
        if all("suite_mean" in m for m in ms):
            row["suite_mean"] = stats([m["suite_mean"] for m in ms])
            row["suite_drop"] = stats([m["suite_drop"] for m in ms])
            row["by_set"] = {k: statistics.fmean(m["values"][k] for m in ms) for k in ms[0]["values"]}
        for u in ms[0]["unseen"]:
            row.setdefault("unseen", {})[u] = {"value": stats([m["unseen"][u]["value"] for m in ms]),
                                               "drop": stats([m["unseen"][u]["drop"] for m in ms])}
        rows.append(row)
    return rows


def _record(run_dir: Path, models: list[dict[str, Any]]) -> None:
    """``RUN/generalization.json`` and the summary in ``result.json`` (nothing else in it changes)."""
    atomic_write_json(run_dir / RESULT_FILE, models, indent=1, update=True)   # the run's own: measured again
    summary = {m["variant"]: {k: m.get(k) for k in ("epoch", "scored", "recheck", "suite_mean", "suite_drop", "unseen")}
               for m in models}
    # Re-read under the run folder's lock and change only `generalization` (an `infer` may be writing too).
    update_json(run_dir / "result.json", lambda doc: doc.__setitem__("generalization", summary),
                check=check_record)


def _shifted(task: Task, name: str, options: GeneralizeOptions, sets: dict[str, Split], notes: list[str],
             status: Callable[[str], None]) -> list[str]:
    """The shifted suite's sets of ``task``'s scored split, added to ``sets`` by name (``family/severity``); a
    dataset with no suite is said in ``notes``."""
    scored, suite = task.scored_split, []
    if options.suite and data.base_name(task.dataset) in DATASET_TABLES:
        labels = data.load_split(task.dataset, scored)[1]
        for family in options.families:
            for severity in options.severities:
                status(f"{name}: preparing {family} at severity {severity}")
                key = f"{family}/{severity}"
                sets[key] = ArraySplit(shifted_split(task.dataset, scored, family, severity), labels)
                suite.append(key)
    elif options.suite:
        notes.append(f"{name}: no shifted suite for {task.dataset} (there is one for "
                     f"{', '.join(DATASET_TABLES)}); scored on the scored split and unseen sets only")
    return suite


def generalize(paths: Sequence[str | Path], options: GeneralizeOptions | None = None,
               status: Callable[[str], None] = lambda msg: None) -> dict[str, Any]:
    options = options or GeneralizeOptions()
    if options.suite and not options.families:
        raise DawnbenchError(f"--families: name at least one corruption family ({', '.join(FAMILIES)}).")
    for family in options.families:
        check_family(family, 1)
    if options.out is not None:
        output_dir(options.out)
    runs = [r for r in run_dirs_under(paths) if _models(r)]
    if not runs:
        raise DawnbenchError(f"{', '.join(map(str, paths))}: no run there saved a model (model.pt is saved "
                             "when a run first reaches its target; model_final.pt with --continue).")
    device = resolve_device(options.device)
    results = {r: read_result(r) for r in runs}
    for r in runs:  # every entry can be rebuilt (and may be: --trust-entry) before anything is written
        recorded_entry(r, results[r]["entry"], options.trust_entry)
    by_task: dict[tuple[str, str | None], list[Path]] = defaultdict(list)  # a subset is a task of its own
    for r in runs:
        by_task[(results[r]["task"], results[r].get("subset"))].append(r)
    unseen_found: dict[tuple[str, str | None], list[UnseenSet]] = {}
    for key in by_task:
        unseen_found[key] = find_unseen(get_task(*key).dataset, options.unseen, strict=False)
    if options.unseen and not any(unseen_found.values()):
        find_unseen(get_task(*next(iter(by_task))).dataset, options.unseen)  # raises, naming what was expected

    models: list[dict[str, Any]] = []
    notes: list[str] = []
    for (task_name, subset), task_runs in by_task.items():
        task = get_task(task_name, subset)
        data.ensure(task.dataset)
        scored = task.scored_split
        sets: dict[str, Split] = {scored: data.open_split(task.dataset, scored)}
        suite = _shifted(task, task_name, options, sets, notes, status)
        unseen = []
        for u in unseen_found[(task_name, subset)]:
            sets[u.name] = u.split
            unseen.append(u.name)
        for run_dir in task_runs:
            run_models = []
            for name in _models(run_dir):
                status(f"scoring {run_dir.name} ({VARIANTS[name]}) on {len(sets)} sets")
                doc = score_model(run_dir, results[run_dir], name, sets, device, options.trust_entry)
                run_models.append(_summarise_model(doc, scored, suite, unseen))
            _record(run_dir, run_models)
            models += run_models
    doc = {"models": models, "configurations": _group(models),
           "suite": {"families": list(options.families), "severities": list(options.severities)} if options.suite
           else None, "unseen": {t.dataset: [u.name for u in us] for t, us in
                                  ((get_task(*key), us) for key, us in unseen_found.items())}, "notes": notes}
    if options.out is not None:
        atomic_write_json(options.out / "generalization.json", doc, indent=1)
    return doc
