"""MLPerf inference scenarios, driven by MLPerf's own LoadGen (``mlcommons-loadgen``).

LoadGen decides when each query is issued; this module is the system under test
(SUT) that answers them with the entry's ``predict``:

* ``singlestream`` — one sample per query; the next query is issued when the
  previous one completes, and is answered inside LoadGen's callback (no thread
  hand-off). LoadGen reports the 90th-percentile latency.
* ``offline``      — every sample is issued at once; the SUT answers in batches of
  ``batch_size``. The figure is samples per second.
* ``server``       — single-sample queries arrive as a Poisson process at
  ``server_qps``; a worker answers whatever has queued (up to ``batch_size`` at a
  time). The run is valid when the 99th-percentile latency stays under
  ``server_latency_ms``.

LoadGen writes its own logs (``mlperf_log_summary.txt``, ``mlperf_log_detail.txt``)
into ``out_dir``; the figures returned here are read back from the detail log.
Runs last ``seconds`` (LoadGen's ``min_duration``), far shorter than the 600 s an
official MLPerf submission needs, so ``validity`` may say INVALID where LoadGen's
early-stopping rule wants more queries: it is reported as LoadGen gives it.
"""

from __future__ import annotations

import json
import os
import queue
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from dawnbench.data.splits import MemorySplit
from dawnbench.errors import DawnbenchError

SCENARIOS = ("singlestream", "offline", "server")


@dataclass
class ScenarioSettings:
    seconds: float = 10.0                 # LoadGen min_duration
    batch_size: int = 64                  # largest batch the SUT forms (offline, server)
    expected_latency_ms: float = 1.0      # hint for singlestream (LoadGen needs one)
    expected_qps: float = 1000.0          # hint for offline: LoadGen issues qps × seconds × 1.1 samples
    server_qps: float = 100.0             # Poisson arrival rate (server)
    server_latency_ms: float = 10.0       # p99 bound (server)


@dataclass
class Query:
    index: int          # sample index in the scored split
    issued: float       # perf_counter when LoadGen handed it to the SUT
    completed: float = 0.0


@dataclass
class ScenarioRun:
    scenario: str
    figures: dict[str, Any]
    queries: list[Query] = field(default_factory=list)  # in the order LoadGen issued them


def _loadgen():
    try:
        import mlperf_loadgen
    except ImportError:
        raise DawnbenchError("--scenario needs MLPerf LoadGen: pip install mlcommons-loadgen "
                             "(it is part of dawnbench's dependencies; reinstall dawnbench).") from None
    return mlperf_loadgen


@contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """LoadGen's C++ code may print; keep stdout clean for --json."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _read_results(detail_log: Path) -> dict[str, Any]:
    results = {}
    for line in detail_log.read_text(errors="replace").splitlines():
        if line.startswith(":::MLLOG "):
            try:
                rec = json.loads(line[len(":::MLLOG "):])
            except json.JSONDecodeError:
                continue
            if rec.get("key", "").startswith(("result_", "early_stopping")):
                results[rec["key"]] = rec.get("value")
    return results


def _summarise(scenario: str, raw: dict[str, Any]) -> dict[str, Any]:
    ms = lambda key: raw[key] / 1e6 if isinstance(raw.get(key), (int, float)) else None
    figures = {
        "validity": raw.get("result_validity"),
        "queries": raw.get("result_query_count"),
        "latency_mean_ms": ms("result_mean_latency_ns"),
        "latency_p50_ms": ms("result_50.00_percentile_latency_ns"),
        "latency_p90_ms": ms("result_90.00_percentile_latency_ns"),
        "latency_p99_ms": ms("result_99.00_percentile_latency_ns"),
        "samples_per_s": raw.get({"singlestream": "result_qps_with_loadgen_overhead",
                                  "offline": "result_samples_per_second",
                                  "server": "result_completed_samples_per_sec"}[scenario]),
    }
    if raw.get("result_invalid_reason"):
        figures["invalid_reason"] = raw["result_invalid_reason"]
    if raw.get("early_stopping_result"):
        figures["early_stopping"] = " ".join(str(raw["early_stopping_result"]).split())
    return figures


def run_scenario(scenario: str, predict: Callable[[Any], Any], split: MemorySplit,
                 settings: ScenarioSettings, out_dir: Path,
                 sync: Callable[[], None] | None = None) -> ScenarioRun:
    """Drive one LoadGen scenario against ``predict`` on the items of ``split`` (held in memory,
    so that any query can be answered at once); logs go to ``out_dir``."""
    # Long: LoadGen's callbacks (issue, flush, the answering thread) share the query queue, so they live here together.
    if scenario not in SCENARIOS:
        raise DawnbenchError(f"--scenario {scenario}: unknown; choose from {', '.join(SCENARIOS)}.")
    lg = _loadgen()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    pending: queue.Queue = queue.Queue()
    trace: list[Query] = []

    def answer(batch: list[tuple[int, Query]]) -> None:
        with torch.inference_mode():
            predict(split.take([q.index for _, q in batch]))
            if sync:
                sync()
        done = time.perf_counter()
        for _, q in batch:
            q.completed = done
        lg.QuerySamplesComplete([lg.QuerySampleResponse(qid, 0, 0) for qid, _ in batch])

    def issue_queries(samples) -> None:
        now = time.perf_counter()
        for s in samples:
            q = Query(int(s.index), now)
            trace.append(q)
            if scenario == "singlestream":
                answer([(s.id, q)])  # nothing else is in flight: answer here, no thread hand-off
            else:
                pending.put((s.id, q))  # LoadGen's issuing thread must not block

    def worker() -> None:
        while True:
            item = pending.get()
            if item is None:
                return
            batch = [item]
            while len(batch) < settings.batch_size:
                try:
                    nxt = pending.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    pending.put(None)
                    break
                batch.append(nxt)
            answer(batch)

    thread = threading.Thread(target=worker, daemon=True)
    thread.start()
    sut = lg.ConstructSUT(issue_queries, lambda: None)
    qsl = lg.ConstructQSL(split.count, split.count, lambda s: None, lambda s: None)
    ts = lg.TestSettings()
    ts.scenario = {"singlestream": lg.TestScenario.SingleStream, "offline": lg.TestScenario.Offline,
                   "server": lg.TestScenario.Server}[scenario]
    ts.mode = lg.TestMode.PerformanceOnly
    ts.min_duration_ms = int(settings.seconds * 1000)
    ts.single_stream_expected_latency_ns = max(1, int(settings.expected_latency_ms * 1e6))
    ts.offline_expected_qps = settings.expected_qps
    ts.server_target_qps = settings.server_qps
    ts.server_target_latency_ns = int(settings.server_latency_ms * 1e6)
    ts.min_query_count = 1024 if scenario == "singlestream" else 1
    log = lg.LogSettings()
    log.log_output.outdir = str(out_dir)
    log.log_output.copy_summary_to_stdout = False
    try:
        with _stdout_to_stderr():
            lg.StartTestWithLogSettings(sut, qsl, ts, log)
    finally:
        pending.put(None)
        thread.join()
        lg.DestroyQSL(qsl)
        lg.DestroySUT(sut)
    figures = _summarise(scenario, _read_results(out_dir / "mlperf_log_detail.txt"))
    figures["settings"] = {k: getattr(settings, k) for k in settings.__dataclass_fields__}
    figures["log_dir"] = str(out_dir)
    return ScenarioRun(scenario, figures, trace)
