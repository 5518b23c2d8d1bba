"""Explain and predict, checked (SPEC §23): the model against DeepBench's published times, the four
tasks' reference entries explained and predicted on this machine, a worked example on a V100,
and DAWNBench's published epochs beside the predictions.

    python benchmarks/prediction.py [--kernels FILE]      # about 15 minutes on 2 cores

1. **Validation** (``prediction.validate``): leave-one-out within each published device, and
   across devices scaled by specs — median and 90th-percentile absolute error per suite and
   device; the leave-one-out points drawn, predicted against published, log–log
   (``docs/img/prediction-loo.png``).
2. **This machine's kernels**: ``dawnbench kernels gemm,conv,rnn --quick`` (fp32), the measured
   device of the whole-step check (or ``--kernels``, a file of that command from this machine).
3. **The four reference entries** (mnist small-cnn, cifar10 cifar10-fast, imagenet
   imagenet-resnet50 on a generated ILSVRC tree, squad squad-minilm on a generated SQuAD set),
   fp32, each profiled (``PROFILE_STEPS`` steps), explained (kernels timed here: the explained
   share and its classes) and predicted on this machine's kernels (predicted step against the
   measured one); ImageNet at batch ``IMAGENET_BATCH`` (its 512 does not fit 24 GiB here). And
   ``dawnbench predict --device all`` timed in a fresh process. Each step's error, that time and the validation's
   leave-one-out medians are judged against their targets in ``targets.json`` (``prediction.whole_step``,
   ``prediction.predict_all``, ``whole_steps.leave_one_out``).
4. **A worked example and DAWNBench's entries**: cifar10-fast and ResNet-50 profiled at bf16 (``--emulated`` at
   ``EMULATED_BATCH`` on a CPU without a bf16 fast path: the op census is what the V100's prediction uses),
   predicted on the V100 at the recipe's batch (mapped to DeepBench's ``fp16-mixed`` rows) — cifar10-fast's epoch, TTA
   (its recipe's epochs) and cost; each beside a DAWNBench V100 entry's published epoch, from
   this project's own copy of the entries (``third_party/dawnbench-entries.tar.xz``), with what
   differs.
"""

from __future__ import annotations

import io
import json
import os
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import bench
import targets

ROOT = Path(__file__).resolve().parents[1]
IMG = ROOT / "docs" / "img"
ENTRIES_TAR = ROOT / "third_party" / "dawnbench-entries.tar.xz"
PROFILE_STEPS = 3
IMAGENET_BATCH = 64
# DAWNBench's V100 entries this project profiles a counterpart of: the file stem, the logged epochs
# whose interval gives the per-epoch time (inside one phase of the entry's schedule; evaluations
# included, as the entry logged them) and the V100s it ran on (the entry's "hardware")
DAWNBENCH = {
    "cifar10": ("CIFAR10/train/davidcpage_resnet9_1v100-ec2_pytorch", (1, 23), 1),
    "imagenet": ("ImageNet/train/gehc_resnet50_1_p3_16xlarge_tensorflow111", (2.9, 17.3), 8),
}
# The counterpart's settings, as the entry's JSON states them (what the prediction is set to, where it can be)
IMAGENET_AT_GEHC = ["--set", "min_res=128", "--set", "blurpool=false"]
GEHC_BATCH = 128
# Emulated bf16 (a CPU without a bf16 fast path) runs a step at the recipe's batch for many minutes (cifar10-fast's
# 1024 did not finish three in 15 on the AVX2 EPYC): the census is taken at this batch and predicted at the recipe's
EMULATED_BATCH = 32



def loo_figure(validation: dict, out: Path) -> None:
    """Leave-one-out predictions against published times, log–log, one colour per device, a panel per suite."""
    from dawnbench.reports.plots import figure

    suites = {"gemm": "GEMM", "conv": "convolution", "rnn": "recurrent"}
    with figure(out, 1, 3, figsize=(15, 5.2), save_dpi=110) as (fig, axes):
        for ax, (suite, title) in zip(axes, suites.items()):
            for name, device in validation["devices"].items():
                points = device["points"][suite]
                if points:
                    ax.scatter([p[0] * 1e3 for p in points], [p[1] * 1e3 for p in points], s=7, alpha=0.55,
                               label=name)
            low, high = ax.get_xlim()[0], ax.get_xlim()[1]
            ax.plot([low, high], [low, high], color="black", lw=0.8)
            ax.plot([low, high], [low * 1.25, high * 1.25], color="grey", lw=0.6, ls="--")
            ax.plot([low, high], [low / 1.25, high / 1.25], color="grey", lw=0.6, ls="--")
            ax.set(xscale="log", yscale="log", xlabel="published (ms)", ylabel="predicted, row left out (ms)",
                   title=f"{title}: median error {validation['leave_one_out'][suite]['median_of_medians']:.1%}")
            ax.grid(True, which="major", alpha=0.3)
        axes[0].legend(fontsize=8, markerscale=2)
        fig.suptitle("DeepBench's published times predicted by each device's model without the row (dashed: ±25 %)")


def dawnbench_epoch(stem: str, epochs: tuple[float, float], gpus: int) -> dict:
    """A DAWNBench entry's published seconds per epoch between two logged epochs, and what it ran;
    ``one_gpu_epoch_s``: its epoch on one of its GPUs were the work shared out perfectly (× GPUs)."""
    with tarfile.open(ENTRIES_TAR) as tar:
        meta = json.loads(tar.extractfile(f"dawnbench-entries/{stem}.json").read())
        lines = io.TextIOWrapper(tar.extractfile(f"dawnbench-entries/{stem}.tsv"), "utf-8").read().split("\n")
    hours = {float(r.split("\t")[0]): float(r.split("\t")[1]) for r in lines[1:] if r.strip()}
    first, last = epochs
    return {"entry": stem, "model": meta["model"], "hardware": meta["hardware"], "framework": meta["framework"],
            "epochs": [first, last], "epoch_s": (hours[last] - hours[first]) * 3600 / (last - first), "gpus": gpus,
            "one_gpu_epoch_s": (hours[last] - hours[first]) * 3600 / (last - first) * gpus,
            "source": f"third_party/dawnbench-entries.tar.xz: {stem}.tsv (epoch, hours)"}


def main() -> int:
    parser = bench.parser(__doc__)
    parser.add_argument("--kernels", type=Path, help="this machine's kernels.json (default: measure it now)")
    args = parser.parse_args()
    from dawnbench.prediction.validate import validate

    print("validation over DeepBench's published rows", flush=True)
    validation = validate()
    loo_figure(validation, IMG / "prediction-loo.png")
    validation["targets"] = {suite: targets.judged("whole_steps.leave_one_out", (v or {}).get("median_of_medians"))
                             for suite, v in validation["leave_one_out"].items()}
    for device in validation["devices"].values():   # the points drawn: kept, rounded
        device["points"] = {s: [[float(f"{a:.4g}"), float(f"{b:.4g}")] for a, b in pts]
                            for s, pts in device["points"].items()}

    with tempfile.TemporaryDirectory(prefix="dawnbench-prediction-") as tmp:
        tmp_path = Path(tmp)
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        gen_env = {**env, "DAWNBENCH_DATA": str(tmp_path / "data")}   # generated ImageNet and SQuAD: their own cache
        kernels = args.kernels
        if kernels is None:
            print("this machine's kernels (--quick, fp32)", flush=True)
            bench.dawnbench("kernels", "gemm,conv,rnn", "--quick", "--out", str(tmp_path / "kernels"), env=env)
            kernels = tmp_path / "kernels" / "kernels.json"
        bench.python("-m", "dawnbench.data.imagenet.generate", str(tmp_path / "ilsvrc"),
                     "--classes", "4", "--train", "80", "--val", "4", env=gen_env)
        bench.dawnbench("data", "fetch", "imagenet", "--from", str(tmp_path / "ilsvrc"), "--subset", "gen", env=gen_env)
        bench.python("-m", "dawnbench.data.squad.generate", str(tmp_path / "squad"), env=gen_env)
        bench.dawnbench("data", "fetch", "squad", "--from", str(tmp_path / "squad"), "--subset", "gen", env=gen_env)

        references = {"mnist": ("small-cnn", [], env), "cifar10": ("cifar10-fast", [], env),
                      "imagenet": ("imagenet-resnet50", ["--subset", "gen", "--set", f"batch_size={IMAGENET_BATCH}"],
                                   gen_env),
                      "squad": ("squad-minilm", ["--subset", "gen"], gen_env)}
        entries = {}
        for task, (entry, extra, task_env) in references.items():
            folder = tmp_path / "profiles" / task
            print(f"profile {task} · {entry}", flush=True)
            bench.dawnbench("profile", task, "--entry", entry, *extra, "--steps", str(PROFILE_STEPS), "--out", str(folder),
                            "--json", env=task_env)
            print(f"explain {task} · {entry}", flush=True)
            explained = json.loads(bench.dawnbench("explain", str(folder), "--json", env=task_env).stdout)
            here = json.loads(bench.dawnbench("predict", str(folder), "--device", str(kernels), "--epochs", "1", "--json",
                                              env=task_env).stdout)
            started = time.perf_counter()
            everywhere = json.loads(bench.dawnbench("predict", str(folder), "--device", "all", "--epochs", "1", "--json",
                                                    env=task_env).stdout)
            wall = time.perf_counter() - started
            [mine] = here["devices"]
            entries[task] = {
                "entry": entry, "options": extra, "batch_size": here["batch_size"],
                "explain": {k: explained[k] for k in ("measured_step_s", "measured_op_s", "predicted_step_s",
                                                      "explained_share", "explained_share_of_op_time", "kernel_timed",
                                                      "classes", "notes", "seconds")}
                | {"gaps": [{k: g[k] for k in ("op", "shapes", "class", "measured_s", "predicted_s", "from")}
                            for g in explained["gaps"][:5]]},
                "whole_step": {"measured_step_s": here["measured"]["step_s"], "measured_op_s": here["measured"]["op_s"],
                               "framework_s": mine["framework_s"], "predicted_op_s": mine["op_s"],
                               "predicted_step_s": mine["step_s"],
                               "error": mine["step_s"] / here["measured"]["step_s"] - 1,
                               **targets.judged("prediction.whole_step", mine["step_s"] / here["measured"]["step_s"] - 1),
                               "op_error": mine["op_s"] / here["measured"]["op_s"] - 1,
                               "rests_on": mine["rests_on"], "notes": mine["notes"][:5],
                               "mapped_share_of_op_time": here["mapped_share_of_op_time"]},
                "all_devices": {"wall_s": wall, "in_process_s": everywhere["seconds"],
                                **targets.judged("prediction.predict_all", wall),
                                "steps_s": {d["device"]["name"]: d["step_s"] for d in everywhere["devices"]}}}
            print(f"  explained {explained['explained_share']:.0%}; step here: predicted {mine['step_s']:.4g} s, "
                  f"measured {here['measured']['step_s']:.4g} s; predict --device all {wall:.2f} s", flush=True)

        from dawnbench.entries.cifar10_fast import HPARAMS as CIFAR10_FAST

        gpu = {}
        # the V100's prediction needs the step's op census, not this CPU's bf16 times: where this CPU has no bf16 fast
        # path the step is profiled emulated (its times are not used)
        emulated = [] if "bf16" in bench.cpu_precisions() else ["--emulated"]
        for task, entry, extra, batch, task_env in (
                ("cifar10", "cifar10-fast", [], CIFAR10_FAST["batch_size"], env),
                ("imagenet", "imagenet-resnet50", ["--subset", "gen", *IMAGENET_AT_GEHC], GEHC_BATCH, gen_env)):
            folder = tmp_path / "profiles" / f"{task}-bf16"
            print(f"profile {task} · {entry} · bf16{' (emulated)' if emulated else ''}", flush=True)
            bench.dawnbench("profile", task, "--entry", entry, *extra, "--set",
                            f"batch_size={EMULATED_BATCH if emulated else batch}", "--precision", "bf16", *emulated,
                            "--steps", str(PROFILE_STEPS), "--out", str(folder), "--json", env=task_env)
            epochs = CIFAR10_FAST["epochs"] if task == "cifar10" else 1
            doc = json.loads(bench.dawnbench("predict", str(folder), "--device", "V100", "--batch", str(batch),
                                             "--epochs", str(epochs), "--json", env=task_env).stdout)
            extra = [*extra, "--set", f"batch_size={batch}"]     # as the page names the configuration predicted
            [v100] = doc["devices"]
            gpu[task] = {"entry": entry, "options": extra, "precision": doc["precision"], "emulated": bool(emulated),
                         "batch_size": doc["batch_size"], "samples_per_epoch": doc["samples_per_epoch"],
                         "samples_per_epoch_from": doc["samples_per_epoch_from"], "epochs": epochs,
                         "epochs_from": "the recipe's (entries/cifar10_fast.py HPARAMS)" if task == "cifar10" else None,
                         "step_s": v100["step_s"], "epoch_s": v100["epoch_s"], "tta_s": v100["tta_s"],
                         "classes": v100["classes"], "rests_on": v100["rests_on"], "notes": v100["notes"],
                         "cost": v100["cost"], "device": {k: v100["device"][k] for k in
                                                          ("label", "peak_flops", "bandwidth_bytes_per_s", "floor_s",
                                                           "source")},
                         "top_ops": [{k: o[k] for k in ("op", "shapes", "class", "predicted_s", "from")}
                                     for o in v100["ops"][:6]],
                         "dawnbench": dawnbench_epoch(*DAWNBENCH[task])}
            gpu[task]["dawnbench"]["ratio"] = v100["epoch_s"] / gpu[task]["dawnbench"]["one_gpu_epoch_s"]

    figures = {"validation": validation, "kernels": str(args.kernels or "measured now: dawnbench kernels "
                                                                          "gemm,conv,rnn --quick"),
               "profile_steps": PROFILE_STEPS, "entries": entries, "v100": gpu}
    print(json.dumps({"loo": validation["leave_one_out"], "across": validation["across_devices"],
                      "whole_step": {t: e["whole_step"]["error"] for t, e in entries.items()},
                      "explained": {t: e["explain"]["explained_share"] for t, e in entries.items()},
                      "v100": {t: (g["epoch_s"], g["dawnbench"]["one_gpu_epoch_s"]) for t, g in gpu.items()}}, indent=1))
    bench.store(args, "prediction", figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
