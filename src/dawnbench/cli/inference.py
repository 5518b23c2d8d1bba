"""`infer`: latency, throughput and cost of a saved model."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from dawnbench.cli.common import (
    EXIT_OK,
    add_command,
    add_trust_option,
    emit,
    int_list,
    parse_set,
)
from dawnbench.precision import PRECISIONS


def cmd_infer(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.cli.figures import latency_figure
    from dawnbench.inference import InferenceOptions, measure_run

    options = InferenceOptions(batch_sizes=tuple(args.batch_sizes), threads=args.threads, device=args.device,
                               instance=args.instance, cost_per_hour=args.cost_per_hour,
                               warmup_items=args.warmup_items, max_items=args.max_items, task=args.task,
                               scenarios=tuple(args.scenario), scenario_seconds=args.scenario_seconds,
                               server_qps=args.server_qps, server_latency_ms=args.server_latency_ms,
                               precision=args.precision, overrides=parse_set(args.set),
                               trust_entry=args.trust_entry)
    with err.status(Text("measuring inference")) as spinner:
        inference = measure_run(Path(args.run_dir), options, status=lambda msg: spinner.update(Text(msg)))
    latency_figure(Path(args.run_dir), inference)
    emit(args, {"run_dir": args.run_dir, "inference": inference}, lambda: out.print(inference_table(args.run_dir,
                                                                                                       inference)))
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    infer = add_command(sub, "infer", cmd_infer, "measure inference latency, throughput and cost of a run's saved model")
    infer.add_argument("run_dir", metavar="RUN_DIR", help="a run directory whose run reached its target")
    infer.add_argument("--batch-sizes", type=int_list, default=[1, 16, 64, 256, 1024],
                       help="batch sizes tried for throughput (default 1,16,64,256,1024), each")
    infer.add_argument("--threads", type=int, help="torch threads while measuring (default: as configured)")
    infer.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    infer.add_argument("--instance", help="price with this on-demand instance (default: the run's price)")
    infer.add_argument("--cost-per-hour", type=float, help="on-demand USD per hour of the hardware")
    infer.add_argument("--warmup-items", type=int, default=100,
                       help="items run before timing (excluded; default 100)")
    infer.add_argument("--max-items", type=int, help="measure only the first N items (marks it unofficial)")
    infer.add_argument("--task", help="fail unless the run is of this task")
    infer.add_argument("--scenario", action="append", default=[], choices=["singlestream", "offline", "server"],
                       help="also run this MLPerf LoadGen scenario (repeatable)")
    infer.add_argument("--scenario-seconds", type=float, default=10.0,
                       help="LoadGen min duration per scenario (default 10)")
    infer.add_argument("--server-qps", type=float, help="server scenario arrival rate (default: half the best throughput)")
    infer.add_argument("--server-latency-ms", type=float, help="server p99 bound (default: 10 × batch-1 p99)")
    infer.add_argument("--precision", choices=PRECISIONS, help="inference precision (default: the run's)")
    infer.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="change an entry hyperparameter for inference, e.g. tta_level=0 (repeatable)")
    add_trust_option(infer)


# --- tables ---------------------------------------------------------------------------

def inference_table(run_dir: str, inf: dict) -> Table:
    """The figures of `dawnbench infer`: latency percentiles, throughput, cost, scenarios."""
    verdict = Text("official", style="green") if inf["official"] else Text(
        "unofficial: " + "; ".join(inf["unofficial_reasons"]), style="yellow")
    table = Table(title=f"inference of {run_dir}", caption=verdict, show_header=False)
    table.add_column("figure", style="bold")
    table.add_column("value")
    table.add_row(inf["metric"], f"{inf['value']:.2f} (threshold {inf['threshold']:g})")
    table.add_row("latency, batch 1",
                  f"mean {inf['latency_mean_ms']:.3f} ms · p50 {inf['latency_p50_ms']:.3f} · "
                  f"p90 {inf['latency_p90_ms']:.3f} · p99 {inf['latency_p99_ms']:.3f} ms")
    table.add_row("items", f"{inf['items']:,} measured, {inf['warmup_items']} warm-up excluded, "
                           f"{inf['threads']} thread(s)")
    table.add_row("throughput", f"{inf['throughput_items_per_s']:,.0f} items/s at batch {inf['throughput_batch_size']} "
                  "(" + ", ".join(f"{bs}: {r:,.0f}" for bs, r in inf["throughput_by_batch_size"].items()) + ")")
    cost = inf.get("cost_per_10k_usd")
    table.add_row("cost per 10,000 items",
                  f"${cost:.4f} at ${inf['cost_per_hour']:.4g}/h" if cost is not None
                  else "no price (--instance or --cost-per-hour)")
    for name, s in inf.get("scenarios", {}).items():
        rate = f"{s['samples_per_s']:,.1f} samples/s" if s.get("samples_per_s") is not None else ""
        lat = (f"p90 {s['latency_p90_ms']:.3f} ms, p99 {s['latency_p99_ms']:.3f} ms"
               if s.get("latency_p90_ms") is not None else "")
        table.add_row(f"LoadGen {name}", f"{s.get('validity')} · {s.get('queries')} queries · {rate} · {lat}")
    table.add_row("histogram", inf["histogram"])
    return table
