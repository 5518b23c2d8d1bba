"""`infer`: latency, throughput and cost of a saved model."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.text import Text

from dawnbench import bounds
from dawnbench.cli.common import (
    EXIT_OK,
    add_trust_option,
    int_list,
    parse_set,
    print_json,
    ranged,
)
from dawnbench.precision import PRECISIONS


def cmd_infer(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.cli.display import inference_table
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
    if args.json:
        print_json({"run_dir": args.run_dir, "inference": inference})
    else:
        out.print(inference_table(args.run_dir, inference))
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    infer = sub.add_parser("infer", help="measure inference latency, throughput and cost of a run's saved model")
    infer.add_argument("run_dir", metavar="RUN_DIR", help="a run directory whose run reached its target")
    i = bounds.INFER
    infer.add_argument("--batch-sizes", type=int_list, default=[1, 16, 64, 256, 1024],
                       help=ranged("batch sizes tried for throughput (default 1,16,64,256,1024), each",
                                   i["batch_size"]))
    infer.add_argument("--threads", type=int, help=ranged("torch threads while measuring (default: as configured)",
                                                         i["threads"]))
    infer.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    infer.add_argument("--instance", help="price with this on-demand instance (default: the run's price)")
    infer.add_argument("--cost-per-hour", type=float, help=ranged("on-demand USD per hour of the hardware",
                                                                  bounds.RUN["cost_per_hour"]))
    infer.add_argument("--warmup-items", type=int, default=100,
                       help=ranged("items run before timing (excluded; default 100)", i["warmup_items"]))
    infer.add_argument("--max-items", type=int, help=ranged("measure only the first N items (marks it unofficial)",
                                                           i["max_items"]))
    infer.add_argument("--task", help="fail unless the run is of this task")
    infer.add_argument("--scenario", action="append", default=[], choices=["singlestream", "offline", "server"],
                       help="also run this MLPerf LoadGen scenario (repeatable)")
    infer.add_argument("--scenario-seconds", type=float, default=10.0,
                       help=ranged("LoadGen min duration per scenario (default 10)", i["scenario_seconds"]))
    infer.add_argument("--server-qps", type=float, help=ranged(
        "server scenario arrival rate (default: half the best throughput)", i["server_qps"]))
    infer.add_argument("--server-latency-ms", type=float, help=ranged(
        "server p99 bound (default: 10 × batch-1 p99)", i["server_latency_ms"]))
    infer.add_argument("--precision", choices=PRECISIONS, help="inference precision (default: the run's)")
    infer.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="change an entry hyperparameter for inference, e.g. tta_level=0 (repeatable)")
    add_trust_option(infer)
    infer.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    infer.set_defaults(func=cmd_infer)
