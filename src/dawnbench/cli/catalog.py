"""What the project ships with: datasets, tasks, prices."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from dawnbench import bounds, data
from dawnbench.cli.common import EXIT_OK, add_command, emit
from dawnbench.errors import DawnbenchError
from dawnbench.records import prices
from dawnbench.tasks import TASKS


def cmd_data_fetch(args: argparse.Namespace, out: Console, err: Console) -> int:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    if args.source and len(args.names) != 1:
        raise DawnbenchError("--from imports one dataset at a time; name exactly one dataset.")
    for name in args.names:
        data.get_spec(name)  # unknown names fail before anything is fetched
    done = []
    steps = ["downloading", "reading", "validating", "writing the cache"]
    with Progress(TextColumn("{task.description}", markup=False), BarColumn(),
                  TextColumn("{task.fields[step]}", markup=False),
                  TimeElapsedColumn(), console=err, transient=args.json) as progress:
        for name in args.names:
            bar = progress.add_task(name, total=3, step="checking the cache")

            def status(msg: str, done: int | None = None, total: int | None = None, bar=bar) -> None:
                if total:  # a long step in parts (ImageNet's shards): the bar follows them
                    progress.update(bar, total=total, completed=done, step=msg)
                    return
                index = next((i for i, s in enumerate(steps) if msg.startswith(s)), 0)
                progress.update(bar, completed=max(index - 1, 0), step=msg)

            settings = {k: v for k, v in (("max_side", args.max_side), ("quality", args.quality),
                                          ("shard_size", args.shard_size), ("workers", args.workers))
                        if v is not None}
            if settings and data.get_spec(name).kind != "shards":
                raise DawnbenchError(f"--max-side, --quality, --shard-size and --workers are ImageNet's import "
                                     f"settings; {name} has none.")
            path = data.fetch(name, source=Path(args.source) if args.source else None,
                              force=args.force, status=status, subset=args.subset, settings=settings)
            progress.update(bar, completed=progress.tasks[bar].total, step=f"ready in {path}")
            done.append({"name": name, "path": str(path)})
    emit(args, {"datasets": done}, lambda: None)     # the progress bars said it
    return EXIT_OK


def cmd_data_list(args: argparse.Namespace, out: Console, err: Console) -> int:
    rows = data.listing()
    emit(args, {"data_root": str(data.data_root()), "datasets": rows}, lambda: out.print(_datasets_table(rows)))
    return EXIT_OK


def _datasets_table(rows: list[dict]) -> Table:
    table = Table(title=f"datasets in {data.data_root()}")
    for col in ("name", "ready", "train", "scored (test, val or dev)", "source"):
        table.add_column(col)
    for r in rows:
        scored = sum(n for split, n in r["counts"].items() if split != "train")
        table.add_row(r["name"], Text("yes", style="green") if r["ready"] else "no",
                      f"{r['counts'].get('train', 0):,}", f"{scored:,}", r["source"])
    return table


def cmd_tasks(args: argparse.Namespace, out: Console, err: Console) -> int:
    rows = [{"name": t.name, "dataset": t.dataset, "metric": t.metric.name, "threshold": t.threshold,
             "scored_split": t.scored_split, "default_entry": t.default_entry, "role": t.role}
            for t in TASKS.values()]
    table = Table(*rows[0], title="tasks")
    for r in rows:
        table.add_row(*(str(v) for v in r.values()))
    emit(args, {"tasks": rows}, lambda: out.print(table))
    return EXIT_OK


def cmd_prices(args: argparse.Namespace, out: Console, err: Console) -> int:
    cat = {**prices.catalog(), "instances": prices.filtered(args.accelerator)}
    emit(args, cat, lambda: _show_prices(cat, out))
    return EXIT_OK


def _show_prices(cat: dict, out: Console) -> None:
    table = Table(title=f"on-demand prices, read {prices.dated(cat['instances'])} (the 'as of' column)",
                  caption=cat["note"])
    for col in ("instance", "provider", "region", "accelerators", "$/h", "as of", "source"):
        table.add_column(col)
    for i in cat["instances"]:
        acc = f"{i['accelerator_count']}× {i['accelerator']}" if i["accelerator"] else f"{i['vcpus']} vCPU"
        table.add_row(i["name"], i["provider"], i["region"], acc, f"{i['usd_per_hour']:.4g}", i["as_of"], i["source"])
    out.print(table)
    for key in sorted({i["source"] for i in cat["instances"]}):
        out.print(Text.assemble((key, "bold"), f": {cat['sources'][key]}"))
    for machine, why in cat["not_on_demand"].items():
        out.print(f"not on demand: {machine}: {why}", style="dim")


def register(sub: argparse._SubParsersAction) -> None:
    data_p = sub.add_parser("data", help="fetch and list datasets").add_subparsers(dest="data_command", required=True)
    fetch = add_command(data_p, "fetch", cmd_data_fetch, "download (or import with --from) and cache datasets")
    fetch.add_argument("names", nargs="+", metavar="NAME", help=", ".join(data.DATASETS))
    fetch.add_argument("--from", dest="source", metavar="PATH", help="import the official files you already have")
    fetch.add_argument("--subset", metavar="NAME", help="imagenet, squad: import a tree that is not the official "
                                                        "one under this name (runs on it are unofficial)")
    defaults = bounds.IMPORT_DEFAULTS
    fetch.add_argument("--max-side", type=int, help="imagenet: longer side of the re-encoded JPEGs "
                                                    f"(default {defaults['max_side']})")
    fetch.add_argument("--quality", type=int, help=f"imagenet: JPEG quality of the re-encoded images "
                                                   f"(default {defaults['quality']})")
    fetch.add_argument("--shard-size", type=int, help=f"imagenet: images per shard (default {defaults['shard_size']})")
    fetch.add_argument("--workers", type=int, help="imagenet: processes encoding shards (default: every core)")
    add_command(data_p, "list", cmd_data_list, "show which datasets are ready")

    add_command(sub, "tasks", cmd_tasks, "list the tasks")
    prices = add_command(sub, "prices", cmd_prices, "show the bundled on-demand price catalog")
    prices.add_argument("--accelerator", help="only instances with this accelerator (e.g. H100, A100-80GB, cpu)")
