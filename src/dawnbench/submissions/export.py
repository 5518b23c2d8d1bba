"""Turn run records into DAWNBench v1.0 submission files.

* training:  ``<Task>/train/<stem>.json`` (with ``costPerHour`` when priced) and
  ``<stem>.tsv``, the representative run's ``epochs.tsv`` (``epoch hours <metric>``),
  for the runs of one configuration;
* inference: ``<Task>/inference/<stem>_inference.json`` with ``latency`` (ms per item), ``cost``
  (USD per item, null without a price, as in the historical entries) and the
  accuracy field of the measured model.

The stem follows the historical naming ``<author>_<model>_<hardware>_<framework>``,
reduced to letters, digits, ``-`` and ``.``. What DAWNBench has no field for (seed,
status, percentiles, threads, …) goes into ``misc``.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from dawnbench import __version__
from dawnbench.environment import describe_hardware
from dawnbench.errors import DawnbenchError
from dawnbench.io import atomic_write_bytes, atomic_write_text, dumps, output_dir, read_foreign, refuse_to_replace
from dawnbench.records.prices import priced_as, resolve
from dawnbench.records.record import RunResult, Status, read_result
from dawnbench.records.selection import disturbed, select
from dawnbench.records.submission import BOARD_TASKS, ERROR, read_submission
from dawnbench.statistics import summarize
from dawnbench.tasks import get_task


def _git_config(key: str) -> str | None:
    try:
        out = subprocess.run(["git", "config", "--get", key], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def _author(author: str | None, email: str | None) -> tuple[str, str]:
    author, email = author or _git_config("user.name"), email or _git_config("user.email")
    if not (author or "").strip() or not (email or "").strip():
        raise DawnbenchError("a submission names its author: pass --author NAME and --email ADDRESS "
                             "(or set git's user.name and user.email).")
    return author, email


def _slug(text: str) -> str:
    """A file name's part: letters, digits, dots and dashes, at most 60 of them (names are limited to 255 bytes)."""
    return re.sub(r"[^A-Za-z0-9.-]+", "-", text).strip("-")[:60] or "x"


def _file_date(path: Path) -> str:
    """When a record does not say when it started: the day its file was last written."""
    return dt.date.fromtimestamp(path.stat().st_mtime).isoformat()


def _common(result: dict[str, Any], author: str, email: str, code_url: str | None) -> dict[str, Any]:
    imported = result.get("imported") is not None
    how = "an MLPerf log" if imported else "a tracked script" if result.get("tracked") else "dawnbench entry"
    doc = {"version": "v1.0", "author": author, "authorEmail": email,
           "framework": "unknown (an MLPerf log)" if imported else
           f"PyTorch {(result.get('software') or {}).get('torch', '')}".strip(),
           "model": f"{result['entry']} ({how})"}
    if code_url:
        doc["codeURL"] = code_url
    return doc


def _expand(run_dirs: list[str | Path]) -> list[Path]:
    """Run directories as given, or the run directories directly inside a folder."""
    found: list[Path] = []
    for d in map(Path, run_dirs):
        if d.is_file():
            raise DawnbenchError(f"{d}: a file; export reads run folders. An MLPerf training log is made one first: "
                                 f"`dawnbench import-log {d} --task TASK`, then export the folder it prints.")
        if (d / "result.json").exists() or not d.is_dir():
            found.append(d)
        else:
            found += sorted(p.parent for p in d.glob("*/result.json") if not p.parent.is_symlink())
    if not found:
        raise DawnbenchError(f"no run directories in {', '.join(map(str, run_dirs))}.")
    return found


def _board_folder(task: str, run_dir: str | Path) -> str:
    folder = next((t.folder for t in BOARD_TASKS.values() if t.key == task), None)
    if folder is None:
        raise DawnbenchError(f"{Path(run_dir) / 'result.json'}: task '{task}' has no DAWNBench board; export is for "
                             f"{', '.join(t.key for t in BOARD_TASKS.values())}.")
    return folder


def export_training(run_dirs: list[str | Path], out_dir: str | Path, author: str | None = None,
                    email: str | None = None, code_url: str | None = None, include_suspect: bool = False,
                    instance: str | None = None, cost_per_hour: float | None = None,
                    notes: list[str] | None = None) -> list[Path]:
    """One submission (JSON + TSV) for runs of one configuration, under ``out/<Task>/train/``: the runs every command
    counts (:mod:`dawnbench.records.selection`), official ones only — what ``validate`` would reject is refused before
    a file is written; the TSV and time of the successful run with the median TTA (the lower median for an even
    count); ``misc.dawnbench`` with what DAWNBench has no field for. ``instance`` / ``cost_per_hour`` price the runs
    (else a run's own price; with none, ``notes`` says the entry will miss the cost boards)."""
    dirs = _expand(run_dirs)
    records = [read_result(d) for d in dirs]
    for d, r in zip(dirs, records):
        r["run_dir"] = str(d)                   # the folder given, for the messages
    chosen_runs = select([RunResult.from_dict(r) for r in records], include_suspect, official=True)
    if chosen_runs.left_out:
        lines = "; ".join(f"{r.run_dir}: {why}" for r, why in chosen_runs.left_out[:3])
        more = f"; and {len(chosen_runs.left_out) - 3} more" if len(chosen_runs.left_out) > 3 else ""
        raise DawnbenchError(f"export: {chosen_runs.sentence()} {lines}{more}. Nothing was written: a submission is "
                             "made of runs `dawnbench validate` accepts, and of those only.")
    results = records
    instance, price = resolve(instance, cost_per_hour)
    keys = {(r["task"], r.get("subset"), r["entry"], json.dumps(r.get("hparams"), sort_keys=True),
             bool(r.get("self_reported"))) for r in results}
    if len(keys) > 1:
        raise DawnbenchError(f"the runs differ in task, subset, entry, hyperparameters or who scored them "
                             f"({len(keys)} configurations "
                             f"among {len(dirs)} runs); export one configuration at a time.")
    ok = sorted((r for r in results if r["status"] == Status.SUCCESS), key=lambda r: r["time_to_accuracy_s"])
    if not ok:
        raise DawnbenchError(f"none of the {len(dirs)} run(s) reached its target; only a configuration "
                             "that reached it can be submitted.")
    chosen = ok[(len(ok) - 1) // 2]
    chosen_dir = dirs[results.index(chosen)]  # the folder given, never the path its record names
    author, email = _author(author, email)
    summary = summarize([RunResult.from_dict(r) for r in results])
    doc = _common(chosen, author, email, code_url)
    if instance is not None:
        chosen = {**chosen, "instance": instance}
    # the hardware the runs were measured on; the instance (--instance) only prices them, said apart in misc
    doc["hardware"] = describe_hardware(chosen.get("hardware") or {})
    if price is not None or chosen.get("cost_per_hour") is not None:
        doc["costPerHour"] = price if price is not None else chosen["cost_per_hour"]
    elif notes is not None:
        notes.append("no price: the entry has no costPerHour and will not appear on the training-cost board. "
                     "Pass --cost-per-hour USD or --instance NAME (`dawnbench prices`) to price it.")
    doc["timestamp"] = (chosen.get("started_at") or "")[:10] or _file_date(chosen_dir / "result.json")
    doc["misc"] = {"dawnbench": _misc(chosen, results, summary, price, doc.get("costPerHour"))}
    stem = "_".join(_slug(s) for s in (author, chosen["entry"], doc["hardware"].split(",")[0],
                                       "mlperf-log" if chosen.get("imported") else "pytorch"))
    folder = output_dir(output_dir(out_dir) / _board_folder(chosen["task"], chosen["run_dir"]) / "train")
    json_path, tsv_path = folder / f"{stem}.json", folder / f"{stem}.tsv"
    tsv = read_foreign(chosen_dir / "epochs.tsv", "training log")
    text = dumps(doc, indent=4) + "\n"
    refuse_to_replace(json_path, tsv_path)
    _as_validate_reads_it(json_path, {json_path.name: text.encode(), tsv_path.name: tsv})
    atomic_write_text(json_path, text)
    atomic_write_bytes(tsv_path, tsv)
    return [json_path, tsv_path]


def _misc(chosen: dict[str, Any], results: list[dict[str, Any]], summary: dict[str, Any], price: float | None,
          cost_per_hour: float | None) -> dict[str, Any]:
    """``misc.dawnbench``: what DAWNBench has no field for — the runs, their successes and spread, the seeds, the
    configuration, where the price is read from and which runs were flagged (records/documents.py declares it)."""
    return {
        "version": __version__, "task": chosen["task"], "subset": chosen.get("subset"), "runs": summary["runs"],
        "successes": summary["successes"], "success_fraction": summary["success_fraction"],
        "tta_median_s": summary["tta_median_s"], "tta_cov": summary["tta_cov"],
        "olympic_mean_s": summary["olympic_mean_s"], "seeds": [r.get("seed") for r in results],
        "representative_seed": chosen.get("seed"), "official": all(r.get("official") for r in results),
        # the accuracy is the runs' own (a tracked script's evaluation, an imported MLPerf log), not the harness's
        "self_reported": any(r.get("self_reported") for r in results),
        "precision": chosen.get("precision", "fp32"), "compile": chosen.get("compile"),
        "hparams": chosen.get("hparams"), "priced_at_export": price is not None,
        # the catalog instance costPerHour is read from, where it is (not the hardware; a price of one's own: null)
        "priced_as": priced_as(chosen.get("instance"), cost_per_hour),
        # --include-suspect: the runs whose clocks other processes disturbed travel with the submission, named
        "flagged": [{"seed": r.seed, "interference": why} for r in map(RunResult.from_dict, results)
                    for why in [disturbed(r)] if why]}


def _as_validate_reads_it(json_path: Path, files: dict[str, bytes]) -> None:
    """The submission read by `validate` in a scratch copy of its board folder before it is written: what
    validate would refuse is never exported (one door, both ways)."""
    board = Path(json_path.parent.parent.name) / json_path.parent.name   # <Task>/<division>
    with tempfile.TemporaryDirectory(prefix="dawnbench-export-") as scratch:
        folder = Path(scratch) / board
        folder.mkdir(parents=True)
        for name, payload in files.items():
            (folder / name).write_bytes(payload)
        errors = [p for p in read_submission(folder / json_path.name, scratch).problems if p.severity == ERROR]
    if errors:
        said = "; ".join(f"{p.message}" for p in errors[:3])
        raise DawnbenchError(f"{json_path}: not written, because `dawnbench validate` would refuse it: {said}.")


def export_inference(run_dir: str | Path, out_dir: str | Path, author: str | None = None,
                     email: str | None = None, code_url: str | None = None) -> Path:
    """Write the DAWNBench inference JSON for the model measured by ``dawnbench infer``."""
    run_dir, out_dir = Path(run_dir), Path(out_dir)
    result = read_result(run_dir)
    chosen = select([RunResult.from_dict(result)], include_suspect=True, official=True)   # a model, not a time
    if chosen.left_out:
        raise DawnbenchError(f"export: {run_dir}: {chosen.left_out[0][1]}. Nothing was written.")
    inference = result.get("inference")
    if not inference:
        raise DawnbenchError(f"{run_dir / 'result.json'}: no inference figures yet. "
                             f"Run `dawnbench infer {run_dir}` first.")
    if not all(isinstance(inference.get(k), (int, float)) and not isinstance(inference.get(k), bool)
               for k in ("latency_mean_ms", "value")):
        raise DawnbenchError(f"{run_dir / 'result.json'}: its 'inference' figures are not the ones `dawnbench "
                             f"infer` writes (latency_mean_ms and value must be numbers). Measure again with "
                             f"`dawnbench infer {run_dir}`.")
    author, email = _author(author, email)
    task = get_task(result["task"], result.get("subset"))
    doc = _common(result, author, email, code_url)
    instance = inference.get("instance")
    described = describe_hardware(inference.get("hardware") or {})
    doc["hardware"] = described      # as measured; the instance that prices it is misc's priced_as
    doc["latency"] = inference["latency_mean_ms"]
    doc["cost"] = inference.get("cost_per_item_usd")
    values = {**(inference.get("extra") or {}), task.metric.name: inference["value"]}
    for key, column, scale in task.metric.columns:  # the accuracy fields on DAWNBench's scale (F1: 0–1)
        if isinstance(values.get(key), (int, float)):
            doc[column] = round(values[key] * scale, 6)
    measured = inference.get("measured_at")
    doc["timestamp"] = (measured if isinstance(measured, str) else "")[:10] or _file_date(run_dir / "result.json")
    doc["misc"] = {"dawnbench": __version__, "task": task.name, "subset": result.get("subset"), "seed": result.get("seed"),
                   "priced_as": priced_as(instance, inference.get("cost_per_hour")),
                   **{k: inference.get(k) for k in ("latency_p50_ms", "latency_p90_ms", "latency_p99_ms",
                                                    "items", "warmup_items", "threads", "precision",
                                                    "overrides",
                                                    "throughput_items_per_s", "throughput_batch_size",
                                                    "cost_per_hour", "official", "unofficial_reasons")}}
    stem = "_".join(_slug(s) for s in (author, result["entry"], described.split(",")[0], "pytorch"))
    folder = output_dir(output_dir(out_dir) / _board_folder(task.name, run_dir) / "inference")
    path = folder / f"{stem}_inference.json"
    text = dumps(doc, indent=4) + "\n"
    _as_validate_reads_it(path, {path.name: text.encode()})
    atomic_write_text(path, text)
    return path
