"""Explain and predict: `explain` (how much of a step its kernels explain, here) and `predict`
(the step, epoch, TTA and cost on another device)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from dawnbench.cli.common import EXIT_OK, add_command, emit
from dawnbench.errors import DawnbenchError
from dawnbench.precision import labelled


def _s(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds >= 120:
        return f"{seconds / 60:,.1f} min" if seconds < 7200 else f"{seconds / 3600:,.2f} h"
    return f"{seconds * 1e3:,.2f} ms" if seconds < 1 else f"{seconds:,.2f} s"


def _print_notes(doc: dict, out: Console, verbose: bool) -> None:
    """The notes on the whole step, then those on single lines of its op table: shown with --verbose, else
    counted in one line (they say how a row was read, not what was predicted)."""
    for note in doc["notes"]:
        out.print(note, style="dim", highlight=False, soft_wrap=True)
    if verbose:
        for note in doc["details"]:
            out.print(note, style="dim", highlight=False, soft_wrap=True)
    elif doc["details"]:
        out.print(f"{len(doc['details'])} note(s) on single rows of the op table (ops.tsv): --verbose shows them",
                  style="dim", highlight=False)


def _disturbed(doc: dict) -> str:
    """The clause a prediction from a profile taken on a busy machine carries on its first line."""
    return f" · ⚠ profiled on a busy machine: {doc['disturbed']}" if doc.get("disturbed") else ""


def _tta_line(doc: dict) -> str:
    """Which target the TTA is to and whose epochs time it."""
    to = "" if doc["target"] is None else f" to {doc['target']:g}" + (f" ({doc['target_from']})" if doc["target_from"]
                                                                       else "")
    if doc["epochs_to_target"] is None:
        return f"TTA{to}: no epochs to target (give --epochs, or a run folder that reached its target)"
    epochs = doc["epochs_to_target"]
    return f"TTA{to}: {epochs:g} epoch{'' if epochs == 1 else 's'}, {doc['epochs_from']}"


def _usd(dollars: float) -> str:
    """Two decimals, or two significant digits below a cent (a short run costs fractions of one)."""
    return f"${dollars:,.2f}" if dollars >= 0.01 else f"${dollars:.2g}"


def cmd_explain(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.experiments.explain import explain

    with err.status(Text("explaining")) as status:
        doc = explain(Path(args.profile), args.device, progress=lambda line: status.update(Text(line)),
                      max_problems=args.max_problems)
    emit(args, doc, lambda: _show_explain(doc, args.top, out, args.verbose))
    return EXIT_OK


def _show_explain(doc: dict, top: int, out: Console, verbose: bool) -> None:
    out.print(f"{doc['task']} · {doc['entry']} · {doc['precision']} on {doc['device']}: measured step "
              f"{_s(doc['measured_step_s'])}, kernel-predicted {_s(doc['predicted_step_s'])} — the kernels explain "
              f"{doc['explained_share']:.0%} of the step ({doc['explained_share_of_op_time']:.0%} of its op time)",
              highlight=False)
    table = Table("class", "measured / step", "predicted", "explained", "of the step")
    for c in doc["classes"]:
        table.add_row(c["class"], _s(c["measured_s"]), _s(c["predicted_s"]),
                      "—" if c["explained_share"] is None else f"{c['explained_share']:.0%}", f"{c['share_of_step']:.0%}")
    out.print(table)
    gaps = Table("largest gaps", "shapes", "measured", "predicted", "from")
    for g in doc["gaps"][:top]:
        gaps.add_row(g["op"], g["shapes"][:50], _s(g["measured_s"]), _s(g["predicted_s"]), g["from"])
    out.print(gaps)
    _print_notes(doc, out, verbose)
    out.print(f"written: {doc['written']}", highlight=False)


def cmd_predict(args: argparse.Namespace, out: Console, err: Console) -> int:
    from dawnbench.prediction.devices import device_names
    from dawnbench.prediction.on_gpu import is_census, is_datasheet, predict_on_gpus
    from dawnbench.prediction.predict import predict

    names = [part for part in args.device.split(",") if part]
    census = is_census(Path(args.path))
    gpus = [n for n in names if is_datasheet(n, census)]
    if gpus:
        if len(gpus) != len(names):
            others = [n for n in names if n not in gpus]
            raise DawnbenchError(f"--device {args.device}: {', '.join(gpus)} {'names a GPU' if len(gpus) == 1 else 'name GPUs'} "
                                 f"by datasheet and {', '.join(others)} DeepBench's devices or a kernels.json — two "
                                 "predictors; ask "
                                 "for each kind in its own command.")
        with err.status(Text("predicting")) as status:
            doc = predict_on_gpus(Path(args.path), gpus, epochs=args.epochs,
                                  progress=lambda line: status.update(Text(line)), batch=args.batch,
                                  samples=args.samples_per_epoch, target=args.target)
        emit(args, doc, lambda: _show_on_gpus(doc, out, args.verbose))
        return EXIT_OK
    if args.samples_per_epoch is not None:
        raise DawnbenchError("--samples-per-epoch is for GPUs named by their datasheets (a census of a model has no "
                             "task to read an epoch from); DeepBench's devices read it from the profile's run or task.")
    names = device_names(args.device)
    with err.status(Text("predicting")) as status:
        doc = predict(Path(args.path), names, epochs=args.epochs, progress=lambda line: status.update(Text(line)),
                      batch=args.batch, target=args.target)
    emit(args, doc, lambda: _show_predict(doc, out, args.verbose))
    return EXIT_OK


def _show_predict(doc: dict, out: Console, verbose: bool) -> None:
    m = doc["measured"]
    at = (f"batch {doc['batch_size']} (profiled at {doc['profiled_batch_size']})"
          if doc["batch_size"] != doc["profiled_batch_size"] else f"batch {doc['batch_size']}")
    out.print(f"{doc['task']} · {doc['entry']} · {labelled(doc['precision'], doc.get('emulated'))}, {at}: profiled step "
              f"{_s(m['step_s'])} on {doc['profiled_on']} (ops {_s(m['op_s'])}, the framework's time between them "
              f"{m['framework_share']:.0%}) · {doc['mapped_share_of_op_time']:.0%} of the op time in kernels mapped "
              f"to DeepBench problems{_disturbed(doc)}", highlight=False, soft_wrap=True)
    table = Table("device", "step", "epoch", "TTA", "cheapest on-demand", "rests on")
    for d in doc["devices"]:
        cheapest = min(d["cost"], key=lambda c: c["usd"], default=None)
        rests = ", ".join(f"{k} {v['share']:.0%}" for k, v in sorted(d["rests_on"].items(), key=lambda kv: -kv[1]
                                                                         ["seconds"]) if v["share"])
        table.add_row(d["device"]["label"], _s(d["step_s"]), _s(d["epoch_s"]), _s(d["tta_s"]),
                      "—" if cheapest is None else f"{_usd(cheapest['usd'])} ({cheapest['instance']}, "
                                                   f"{cheapest['as_of']})", rests)
    out.print(table)
    out.print(f"epoch: {doc['samples_per_epoch'] or '?'} samples ({doc['samples_per_epoch_from']}); {_tta_line(doc)}",
              highlight=False)
    for d in doc["devices"]:
        if d["host_bound"]:
            out.print(f"{d['device']['label']}: the host binds — its ops take less than the "
                      f"{_s(d['host_floor_s'])} the host needs to issue them, so the step is the host's",
                      highlight=False)
        if d["framework_s"]:
            out.print(f"{d['device']['label']}: the step holds the profile's own framework time, "
                      f"{_s(d['framework_s'])}", style="dim", highlight=False)
        for note in [*d["device"]["notes"][-1:], *d["notes"]][:3]:
            out.print(f"{d['device']['name']}: {note}", style="dim", highlight=False)
    _print_notes(doc, out, verbose)
    out.print(f"assumed: {'; '.join(doc['assumptions'])}", style="dim", highlight=False, soft_wrap=True)
    out.print(f"predicted in {doc['seconds']:.2f} s", style="dim", highlight=False)




def _spanned(value: float | None, span: list[float] | None) -> str:
    """A time and its interval: "63.2 ms (51.7–73.5)"."""
    if value is None or not span:
        return _s(value)
    return f"{_s(value)} ({_s(span[0])}–{_s(span[1])})"


def _show_on_gpus(doc: dict, out: Console, verbose: bool) -> None:
    shape = f"batch {doc['batch_size']}" + (f" × {doc['seqlen']} tokens" if doc.get("seqlen") else "")
    out.print(f"{doc['model']} · {doc['mode']} · {shape} · {doc['precision']} ({doc['kind']}: {doc['path']}) on "
              "GPUs from their datasheets", highlight=False)
    priced = next((d["cost_of"] for d in doc["devices"] if d.get("cost")), "the time to target")
    table = Table("GPU", "forward", "loss", "backward", "optimizer", "step", "epoch", "TTA",
                  f"cheapest on-demand, {priced}", "memory")
    order = {r["device"]: i for i, r in enumerate(doc["ranking"])}     # cheapest first; those that do not fit last
    for d in sorted(doc["devices"], key=lambda d: order.get(d["device"]["name"], len(order))):
        cheapest = d["cost"][0] if d["cost"] and d["fits"] is not False else None
        memory = "" if d["fits"] is None else \
            f"{d['memory_held_gib']:,.1f} of {d['memory_gib']:,.1f} GiB · batch ≤ {d['largest_batch']:,}" \
            if d["fits"] else f"does not fit: batch ≤ {d['largest_batch']}" if d["largest_batch"] >= 1 else \
            "does not fit at batch 1"
        span = d.get("interval") or {}
        table.add_row(d["device"]["name"], _s(d.get("forward_s")), _s(d.get("loss_s")), _s(d.get("backward_s")),
                      _s(d.get("optimizer_s")), _spanned(d["step_s"], span.get("step_s")),
                      _spanned(d["epoch_s"], span.get("epoch_s")), _spanned(d["tta_s"], span.get("tta_s")),
                      "—" if cheapest is None else f"${cheapest['usd']:.3g} ({cheapest['instance']}, "
                                                   f"{cheapest['as_of']})", memory)
    out.print(table)
    out.print(f"{_tta_line(doc)}; an epoch: {doc['samples_per_epoch'] or '?'} samples ({doc['samples_per_epoch_from']})",
              highlight=False)
    if doc["ranking"] and doc["ranking"][0]["usd"] is not None:
        best = doc["ranking"][0]
        ties = [r["device"] for r in doc["ranking"][1:] if r.get("tie")]
        span = best.get("usd_interval")
        out.print(f"cheapest for {best['cost_of']}: {best['device']}, ${best['usd']:.3g}"
                  + (f" (${span[0]:.3g}–{span[1]:.3g})" if span else "") + f" on {best['instance']} "
                  f"(price as of {best['as_of']}; predicted, not measured)"
                  + (f"; a tie with it, their intervals overlapping: {', '.join(ties)}" if ties else ""),
                  highlight=False)
    shown_span = next((d["interval"] for d in doc["devices"] if d.get("interval")), None)
    if shown_span:
        out.print(f"(in brackets: the {shown_span['level']:.0%} interval, from the errors on {shown_span['from']})",
                  style="dim", highlight=False, soft_wrap=True)
    for d in doc["devices"]:
        if d["fits"] is False:
            out.print(f"{d['device']['name']}: {d['why']}", style="dim", highlight=False)
    matmuls = f"gemm {doc['precision']}"
    predicted = [f"{d['device']['name']} ({d['efficiency'][matmuls]})" for d in doc["devices"]
                 if d["step_s"] is not None and d["efficiency"].get(matmuls, "measured") != "measured"]
    if predicted:
        out.print(f"not measured in {doc['precision']} matrix multiplies, so how close each comes to its datasheet "
                  "there is predicted: " + "; ".join(predicted), style="dim", highlight=False, soft_wrap=True)
    notes = dict.fromkeys(note for d in doc["devices"] if d["step_s"] is not None for note in d["notes"])
    for note in notes:
        out.print(note, style="dim", highlight=False, soft_wrap=True)
    _print_notes(doc, out, verbose)
    out.print(f"assumed: {'; '.join(doc['assumptions'])}", style="dim", highlight=False, soft_wrap=True)
    out.print(f"kernel model learned from {', '.join(doc['kernel_model']['learned_from'])} "
              f"({doc['kernel_model']['source']}); predicted in {doc['seconds']:.1f} s", style="dim",
              highlight=False)


def register(sub: argparse._SubParsersAction) -> None:
    exp = add_command(sub, "explain", cmd_explain, "how much of a profiled step its kernel benchmarks explain, timed here")
    exp.add_argument("profile", metavar="PROFILE", help="a profile folder (`dawnbench profile`), or a run folder "
                                                        "holding profile/")
    exp.add_argument("--device", default="auto", help="auto (default), cpu, cuda or cuda:N: where to time the "
                                                      "kernels (the profile's own machine)")
    exp.add_argument("--top", type=int, default=8, help="gaps shown on the terminal (default 8)")
    exp.add_argument("--verbose", action="store_true", help="also the notes on single rows of the op table")
    exp.add_argument("--max-problems", type=int, default=200, metavar="N",
                     help="time at most N distinct kernel problems, those of the most measured time first; the "
                          "rest are costed by the roofline (default 200)")

    pre = add_command(sub, "predict", cmd_predict, "a profiled step's time, epoch, TTA and cost on another device")
    pre.add_argument("path", metavar="PROFILE|RUN_DIR", help="a profile folder, or a run folder holding profile/ "
                                                             "(its epochs to target give the TTA)")
    pre.add_argument("--device", required=True, metavar="NAME[,NAME…]|all|gpus|KERNELS_JSON|DATASHEET_JSON",
                     help="DeepBench's published devices (V100, P100, TitanXp, 1080Ti, M40, T4, KNL7250; all: every "
                          "one), or a kernels.json `dawnbench kernels` wrote on a machine (this one's: the check); "
                          "or GPUs from their datasheets: a catalog GPU (H100, H200, A100-SXM4-40GB, L4, L40S, A10G, "
                          "T4-16GB…; gpus: every one) or a datasheet JSON file")
    pre.add_argument("--epochs", type=float, help="epochs to target, where the path is a bare profile or a census")
    pre.add_argument("--verbose", action="store_true", help="also the notes on single rows of the op table")
    pre.add_argument("--target", type=float, help="the target the TTA is to (default: the task's own); a run's epochs "
                                                  "to another target are refused without --epochs")
    pre.add_argument("--samples-per-epoch", type=int, metavar="N",
                     help="GPUs from their datasheets: an epoch's samples, for a census of a model (a task's census "
                          "or profile reads its training split)")
    pre.add_argument("--batch", type=int, metavar="N", help="the step at another batch: every op's recorded call "
                                                           "re-derived at N (the ops it cannot rescale are named)")
