"""Turn run records into DAWNBench v1.0 submission files (SPEC §8).

* training:  ``<stem>.json`` (with ``costPerHour`` when the run was priced) and
  ``<stem>.tsv``, the run's ``epochs.tsv`` (``epoch hours <metric>``);
* inference: ``<stem>_inference.json`` with ``latency`` (ms per item), ``cost``
  (USD per item, null without a price, as in the historical entries) and the
  accuracy field of the measured model.

The stem follows the historical naming ``<author>_<model>_<hardware>_<framework>``,
reduced to letters, digits, ``-`` and ``.``. What DAWNBench has no field for (seed,
status, percentiles, threads, …) goes into ``misc``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from dawnbench import __version__
from dawnbench.environment import describe_hardware
from dawnbench.errors import DawnbenchError
from dawnbench.harness.record import atomic_write_text, read_result
from dawnbench.tasks import get_task


def _git_config(key: str) -> str | None:
    try:
        out = subprocess.run(["git", "config", "--get", key], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def _author(author: str | None, email: str | None) -> tuple[str, str]:
    author, email = author or _git_config("user.name"), email or _git_config("user.email")
    if not author or not email:
        raise DawnbenchError("a submission names its author: pass --author NAME and --email ADDRESS "
                             "(or set git's user.name and user.email).")
    return author, email


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.-]+", "-", text).strip("-") or "x"


def _hardware(result: dict[str, Any], hw: dict[str, Any]) -> str:
    described = describe_hardware(hw)
    return f"{result['instance']} ({described})" if result.get("instance") else described


def _common(result: dict[str, Any], author: str, email: str, code_url: str | None) -> dict[str, Any]:
    doc = {"version": "v1.0", "author": author, "authorEmail": email,
           "framework": f"PyTorch {result.get('software', {}).get('torch', '')}".strip(),
           "model": f"{result['entry']} (dawnbench entry)"}
    if code_url:
        doc["codeURL"] = code_url
    return doc


def export_training(run_dir: str | Path, out_dir: str | Path, author: str | None = None,
                    email: str | None = None, code_url: str | None = None) -> list[Path]:
    """Write the training JSON and TSV of one successful run; return their paths."""
    run_dir, out_dir = Path(run_dir), Path(out_dir)
    result = read_result(run_dir)
    if result["status"] != "success":
        raise DawnbenchError(f"{run_dir}: status is {result['status']}; only a run that reached its "
                             "target can be submitted.")
    author, email = _author(author, email)
    doc = _common(result, author, email, code_url)
    doc["hardware"] = _hardware(result, result.get("hardware", {}))
    if result.get("cost_per_hour") is not None:
        doc["costPerHour"] = result["cost_per_hour"]
    doc["timestamp"] = result.get("started_at", "")[:10]
    doc["misc"] = {"dawnbench": __version__, "task": result["task"], "seed": result.get("seed"),
                   "time_to_accuracy_s": result.get("time_to_accuracy_s"),
                   "epochs_to_target": result.get("epochs_to_target"), "init_s": result.get("init_s"),
                   "official": result.get("official"), "hparams": result.get("hparams")}
    stem = "_".join(_slug(s) for s in (author, result["entry"], result.get("instance") or
                                       doc["hardware"].split(",")[0], "pytorch"))
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, tsv_path = out_dir / f"{stem}.json", out_dir / f"{stem}.tsv"
    atomic_write_text(json_path, json.dumps(doc, indent=4) + "\n")
    shutil.copyfile(run_dir / "epochs.tsv", tsv_path)
    return [json_path, tsv_path]


def export_inference(run_dir: str | Path, out_dir: str | Path, author: str | None = None,
                     email: str | None = None, code_url: str | None = None) -> Path:
    """Write the DAWNBench inference JSON for the model measured by ``dawnbench infer``."""
    run_dir, out_dir = Path(run_dir), Path(out_dir)
    result = read_result(run_dir)
    inference = result.get("inference")
    if not inference:
        raise DawnbenchError(f"{run_dir / 'result.json'}: no inference figures yet. "
                             f"Run `dawnbench infer {run_dir}` first.")
    author, email = _author(author, email)
    task = get_task(result["task"])
    doc = _common(result, author, email, code_url)
    instance = inference.get("instance")
    described = describe_hardware(inference.get("hardware", {}))
    doc["hardware"] = f"{instance} ({described})" if instance else described
    doc["latency"] = inference["latency_mean_ms"]
    doc["cost"] = inference.get("cost_per_item_usd")
    doc[task.metric.dawnbench_column] = round(inference["value"], 4)
    doc["timestamp"] = inference.get("measured_at", "")[:10]
    doc["misc"] = {"dawnbench": __version__, "task": task.name, "seed": result.get("seed"),
                   **{k: inference.get(k) for k in ("latency_p50_ms", "latency_p90_ms", "latency_p99_ms",
                                                    "items", "warmup_items", "threads",
                                                    "throughput_items_per_s", "throughput_batch_size",
                                                    "cost_per_hour", "official", "unofficial_reasons")}}
    stem = "_".join(_slug(s) for s in (author, result["entry"], instance or described.split(",")[0], "pytorch"))
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{stem}_inference.json"
    atomic_write_text(path, json.dumps(doc, indent=4) + "\n")
    return path
