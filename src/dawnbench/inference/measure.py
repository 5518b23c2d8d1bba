"""Measure inference on the model a run saved when it reached its target.

    from dawnbench.inference import InferenceOptions, measure_run
    figures = measure_run("runs/mnist-small-cnn-…-seed0", InferenceOptions(threads=1))

In order: read the run's ``result.json`` and ``model.pt`` and check them against
each other (and against ``--task``); price the hardware; rebuild the entry with
the run's hyperparameters and load the model; then, on the scored split,

1. latency: warm up on the first ``warmup_items`` items (excluded, counted), then
   every item in turn at batch size 1; the metric is computed from those very
   predictions and reported beside the latency;
2. throughput at each batch size tried; the best one is the figure;
3. the LoadGen scenarios asked for.

The figures go into ``result.json`` under ``inference`` (the file is replaced
atomically; nothing else in it changes), per-item latencies into
``inference/latencies.tsv``; the CLI draws their histogram into ``inference/latency.png``.
A model below the threshold, or measured on part of the split, is measured and
marked ``official: false`` with the reason.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from dawnbench import bounds, data, environment
from dawnbench.entries import saved as saved_models
from dawnbench.environment import device_sync
from dawnbench.errors import DawnbenchError
from dawnbench.harness.core import in_precision
from dawnbench.harness.options import resolve_device
from dawnbench.inference import figures as fig
from dawnbench.inference.loops import batch_throughput, single_item_latencies
from dawnbench.inference.scenarios import SCENARIOS, ScenarioSettings, run_scenario
from dawnbench.io import atomic_write_text, inside, output_dir, read_foreign_text, update_json
from dawnbench.precision import check_precision
from dawnbench.profiling.load import watched
from dawnbench.records import prices
from dawnbench.records.record import check_record, read_result
from dawnbench.tasks import Task, get_task

INFERENCE_DIR = "inference"
LOADGEN_ITEMS = 10_000   # items LoadGen's queries draw from, held in memory (all of MNIST's and CIFAR-10's)


@dataclass
class InferenceOptions:
    batch_sizes: tuple[int, ...] = (1, 16, 64, 256, 1024)
    threads: int | None = None          # torch threads while measuring; None: leave as is
    device: str = "auto"
    instance: str | None = None         # None with no cost_per_hour: the run's own price
    cost_per_hour: float | None = None
    warmup_items: int = 100
    throughput_seconds: float = 5.0     # per batch size, at most
    max_items: int | None = None        # measure only the first N items (unofficial)
    task: str | Task | None = None      # the task the caller expects; a mismatch is an error
    scenarios: tuple[str, ...] = ()
    scenario_seconds: float = 10.0
    server_qps: float | None = None     # default: half the best offline throughput
    server_latency_ms: float | None = None  # default: 10 × the single-item p99
    precision: str | None = None        # None: the precision the run trained in
    overrides: dict[str, Any] = field(default_factory=dict)  # entry hparams changed for inference
    trust_entry: bool = False           # import the entry file the run record names (not built in)


def _check_options(options: InferenceOptions) -> None:
    if not options.batch_sizes:
        raise DawnbenchError("--batch-sizes: name at least one batch size, e.g. 1,16,64.")
    bounds.check_fields(options, {**bounds.fields_of("--batch-sizes", "--warmup-items", "--throughput-seconds",
                                                      "--max-items", "--scenario-seconds", "--server-qps",
                                                      "--server-latency-ms", "--cost-per-hour"),
                                  "threads": "--threads"})
    for s in options.scenarios:
        if s not in SCENARIOS:
            raise DawnbenchError(f"--scenario {s}: unknown; choose from {', '.join(SCENARIOS)}.")


def _resolve_task(result: dict[str, Any], saved: dict[str, Any], run_dir: Path,
                  expected: str | Task | None) -> Task:
    if saved.get("task") != result["task"] or saved.get("entry") != result["entry"]:
        raise DawnbenchError(
            f"{run_dir / saved_models.MODEL_FILE}: saved for task '{saved.get('task')}', entry "
            f"'{saved.get('entry')}', but {run_dir / 'result.json'} is a run of task '{result['task']}', "
            f"entry '{result['entry']}'. The files come from different runs; re-run training.")
    name = expected.name if isinstance(expected, Task) else expected
    if name is not None and name != result["task"]:
        raise DawnbenchError(f"--task {name}: {run_dir} is a run of task '{result['task']}'. "
                             f"Drop --task, or pass a run directory of task '{name}'.")
    return expected if isinstance(expected, Task) else get_task(result["task"], result.get("subset"))


def _price(options: InferenceOptions, result: dict[str, Any]) -> tuple[str | None, float | None]:
    if options.instance is None and options.cost_per_hour is None:
        return result.get("instance"), result.get("cost_per_hour")
    return prices.resolve(options.instance, options.cost_per_hour)


def measure_run(run_dir: str | Path, options: InferenceOptions | None = None,
                status: Callable[[str], None] = lambda msg: None) -> dict[str, Any]:
    """Measure the saved model of ``run_dir``; return the ``inference`` object written to it."""
    # Long: the module docstring's steps in order, then the inference document's fields in one literal.
    options = options or InferenceOptions()
    run_dir = Path(run_dir)
    _check_options(options)
    result = read_result(run_dir)
    saved = saved_models.load(run_dir)
    task = _resolve_task(result, saved, run_dir, options.task)
    entry_cls = saved_models.entry_class_of(run_dir, saved["entry"], options.trust_entry)
    instance, price = _price(options, result)
    device = resolve_device(options.device)
    sync = device_sync(device)
    precision = options.precision or result.get("precision", "fp32")
    check_precision(precision, device, entry_cls)

    previous_threads = torch.get_num_threads()
    if options.threads:
        torch.set_num_threads(options.threads)
    try:
        entry, _ = saved_models.load_saved_entry(run_dir, device, task=task, overrides=options.overrides,
                                                  payload=saved, trust=options.trust_entry)
        split = data.open_split(task.dataset, task.scored_split)

        def scoped_predict(batch: Any) -> Any:
            # autocast is thread-local and LoadGen calls from its own threads: enter it per call there
            with in_precision(entry, precision):
                return entry.predict(batch)
        partial = options.max_items is not None and options.max_items < split.count
        if partial:
            split = split.head(options.max_items)

        with in_precision(entry, precision), \
                watched("the latency and throughput measurement") as load:  # once: nothing added per query
            status(f"latency: {split.count:,} items one at a time")
            single = single_item_latencies(entry.predict, split, task.metric, options.warmup_items, sync,
                                           progress=lambda n: status(f"latency: {n:,}/{split.count:,} items"))
            status(f"throughput at batch sizes {', '.join(map(str, options.batch_sizes))}")
            rates = batch_throughput(entry.predict, split, options.batch_sizes, options.throughput_seconds, sync)
        value, extra = single.tally.value, single.tally.extra
        latency = fig.latency_summary(single.latencies_ms)
        best_bs = max(rates, key=rates.get)

        scenarios = _scenarios(options, scoped_predict, split, latency, rates, run_dir, sync, status)
        hardware = environment.hardware_info(device)
    finally:
        torch.set_num_threads(previous_threads)

    reasons = [why for why, holds in (
        (f"the model scores {value:.2f} on the {task.scored_split} split, below the threshold {task.threshold:g}",
         not task.passes(value)),
        (f"measured on the first {split.count:,} items only (--max-items)", partial),
        ("the training run was unofficial", not result.get("official", True)),
        (f"flagged: {load.summary.get('interference')}", load.disturbed)) if holds]
    inference = {
        **latency,
        "items": split.count,
        "warmup_items": single.warmup_items,
        "batch_size": 1,
        "throughput_items_per_s": rates[best_bs],
        "throughput_batch_size": best_bs,
        "throughput_by_batch_size": {str(bs): r for bs, r in rates.items()},
        "metric": task.metric.name,
        "value": value,
        "extra": extra,
        "threshold": task.threshold,
        "official": not reasons,
        "unofficial_reasons": reasons,
        "instance": instance,
        "cost_per_hour": price,
        "cost_per_item_usd": fig.cost_per_item_usd(latency["latency_mean_ms"], price),
        "cost_per_10k_usd": fig.cost_per_10k_usd(latency["latency_mean_ms"], price),
        "threads": options.threads or previous_threads,
        "precision": precision,
        "overrides": options.overrides,
        "hardware": hardware,
        "load": load.summary,                     # others' CPU while latency and throughput were measured
        "model_epoch": saved.get("epoch"),
        "scenarios": scenarios,
        "measured_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "histogram": f"{INFERENCE_DIR}/latency.png",
        "latencies": f"{INFERENCE_DIR}/latencies.tsv",
    }
    _write(run_dir, inference, single.latencies_ms)
    return inference


def _scenarios(options: InferenceOptions, predict: Callable[[Any], Any], split: Any, latency: dict[str, float],
               rates: dict[int, float], run_dir: Path, sync: Callable[[], None] | None,
               status: Callable[[str], None]) -> dict[str, Any]:
    """The LoadGen scenarios asked for, on the first ``LOADGEN_ITEMS`` items held in memory, at the best
    batch size measured; each one's figures."""
    if not options.scenarios:
        return {}
    status(f"LoadGen: holding the first {min(split.count, LOADGEN_ITEMS):,} items in memory")
    held, best_bs = split.head(LOADGEN_ITEMS), max(rates, key=rates.get)
    scenarios = {}
    for name in options.scenarios:
        status(f"LoadGen {name} scenario ({options.scenario_seconds:g} s)")
        settings = ScenarioSettings(
            seconds=options.scenario_seconds, batch_size=best_bs,
            expected_latency_ms=latency["latency_p90_ms"], expected_qps=rates[best_bs],
            server_qps=options.server_qps or rates[best_bs] / 2,
            server_latency_ms=options.server_latency_ms or 10 * latency["latency_p99_ms"])
        scenarios[name] = run_scenario(name, predict, held, settings, inside(run_dir, INFERENCE_DIR, f"loadgen-{name}"),
                                       sync).figures
    return scenarios


def _write(run_dir: Path, inference: dict[str, Any], latencies_ms: list[float]) -> None:
    out = output_dir(inside(run_dir, INFERENCE_DIR), "the run's inference folder")
    atomic_write_text(out / "latencies.tsv",   # the run's own: replaced when measured again
                      "item\tlatency_ms\n" + "".join(f"{i}\t{v:.6f}\n" for i, v in enumerate(latencies_ms)), update=True)
    # Re-read under the run folder's lock and change only `inference`: a `generalize` writing at the
    # same time keeps its own change.
    update_json(run_dir / "result.json", lambda doc: doc.__setitem__("inference", inference), check=check_record)


def read_latencies(run_dir: Path) -> list[float]:
    """The batch-1 latencies (ms) that :func:`measure_run` wrote, item by item (for the histogram)."""
    path = inside(run_dir, INFERENCE_DIR, "latencies.tsv")
    rows = read_foreign_text(path, "latency table").splitlines()[1:]
    try:
        return [float(row.split("\t")[1]) for row in rows if row.strip()]
    except (IndexError, ValueError):
        raise DawnbenchError(f"{path}: not the item/latency_ms table `dawnbench infer` writes; measure again.") from None
