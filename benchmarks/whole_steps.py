"""Whole training steps predicted from kernels (SPEC §23): the six reference entries on every machine met.

    python benchmarks/whole_steps.py add-machine      # this machine: six profiles and its kernels.json (~20 min)
    python benchmarks/whole_steps.py problems         # applications.csv from every machine's stored profiles
    python benchmarks/whole_steps.py predict          # the matrix: each machine's steps from each machine's profiles
    python benchmarks/whole_steps.py published        # ResNet-50 and BERT-large on a V100 against NVIDIA's figures
    python benchmarks/whole_steps.py validate         # leave-one-out over DeepBench's published rows, restated
    python benchmarks/whole_steps.py host             # the two missed entries' steps with host effects removed

**add-machine** profiles the six entries (mnist small-cnn, cifar10 cifar10-fast and cifar10-resnet18, imagenet
imagenet-resnet50 on a generated ILSVRC tree at batch ``IMAGENET_BATCH``, squad squad-minilm and squad-drqa on a
generated SQuAD set), fp32 and, where this CPU has a bf16 fast path, bf16 — ``PROFILE_STEPS`` steps each — and runs
``dawnbench kernels gemm,conv,rnn,memory --set applications`` (the fixed problem list, ``applications.csv``): each
op call of the list timed here by the kernels harness. It keeps each profile's ``summary.json`` and ``ops.tsv`` and
the ``kernels.json`` under ``docs/results/data/machines/MACHINE/`` (MACHINE: the CPU model, its vector extensions
and its cores), the evidence every later prediction is made from.

**problems** rewrites ``src/dawnbench/kernels/applications.csv`` from every stored machine's profiles: each op call
that carried at least 1 % of some entry's profiled step (``problems.APPLICATION_SHARE``), with the entry, precision
and op it came from. After it, ``add-machine`` again on each machine (its kernels must be timed on the new list).

**predict** predicts each stored profile's measured step with every stored machine's ``kernels.json`` (``dawnbench
predict PROFILE --device KERNELS``): on its own machine (the whole-step check, every entry: ``whole_steps.same_machine``
in ``targets.json``) and on every other (the cross-machine matrix, its median: ``whole_steps.across_machines``). The
kernels never come from the profile's own op times.

**published** compares predictions with NVIDIA's published single-V100 training throughputs (``PUBLISHED``):
ResNet-50 v1.5 at 224 px (imagenet-resnet50 with no blur-pool and one resolution) and BERT-large fine-tuning on SQuAD
at 384 tokens (squad-minilm with ``encoder=bert-large``: BERT-large's shapes, randomly initialised). Each is profiled
here at a small batch (the op list is what matters, not this CPU's speed), predicted on DeepBench's V100 at the
published batch (``predict --batch``) and precision (a precision this CPU only emulates is profiled with ``profile
--emulated`` where the model's step allows it — ResNet-50's convolutions keep oneDNN's path — and is otherwise listed
as unmeasured, with the emulated matmul rate that rules it out),
each row checked first against its own table (``disagreement``: a row that disagrees with itself is left out and
named) and labelled with what differs.

**host** measures what the kernels cannot see, in one sitting: each of the six entries profiled with fresh 4 KiB pages
faulted in for its step's large tensors (``THP_MEM_ALLOC_ENABLE=0``, as it trains) and with PyTorch's huge pages
(``THP_MEM_ALLOC_ENABLE=1``), and imagenet-resnet50 also with a loader worker process beside the step (``--set
workers=1``: the CPU default before decoding in the step's own process was measured faster on a CPU's few cores) —
each predicted with this machine's kernels.json, with the profile command's minor page faults and system CPU seconds
(``getrusage`` of the child).
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

import bench
import targets

ROOT = Path(__file__).resolve().parents[1]
MACHINES = bench.RESULTS / "machines"
PROBLEMS = ROOT / "src" / "dawnbench" / "kernels" / "applications.csv"
PROFILE_STEPS = 3
IMAGENET_BATCH = 64
ENTRIES = (("mnist", "small-cnn", []), ("cifar10", "cifar10-fast", []), ("cifar10", "cifar10-resnet18", []),
           ("imagenet", "imagenet-resnet50", ["--subset", "gen", "--set", f"batch_size={IMAGENET_BATCH}"]),
           ("squad", "squad-minilm", ["--subset", "gen"]), ("squad", "squad-drqa", ["--subset", "gen"]))
IMAGENET_TRAIN = 1_281_167
# Each model this project can profile that NVIDIA publishes single-V100 training throughputs of: how it is profiled
# here (task, entry, options, the batch per precision: the op list is what matters, not this CPU's speed), the
# published rows (at their batch and precision) and the source. Each row is checked against its own table first.
PUBLISHED = {
    "ResNet-50 v1.5": {
        "profile": ["imagenet", "--entry", "imagenet-resnet50", "--subset", "gen", "--set", "min_res=224", "--set",
                    "max_res=224", "--set", "eval_res=256", "--set", "blurpool=false"],
        "folder": "imagenet-resnet50-224", "profile_batch": {"fp32": 32, "bf16": 8}, "unit": "images/s",
        "emulate": True,       # its convolutions take oneDNN's bf16 path even where emulated (~20 GFLOP/s on an AVX2 EPYC)
        "source": "NVIDIA DeepLearningExamples, PyTorch/Classification/ConvNets/resnet50v1.5/README.md, Training "
                  "performance: NVIDIA DGX-1 16GB, 1 GPU (pytorch-21.03 container); batch sizes from configs.yml",
        "ours": "this project's ResNet-50 (imagenet-resnet50 at 224 px, no blur-pool), channels-last",
        "rows": (
            {"device": "V100", "precision": "fp32", "batch": 112, "per_s": 367, "hours_90_epochs": 92,
             "theirs": "NVIDIA's, NCHW", "what": "FP32"},
            {"device": "V100", "precision": "bf16", "batch": 256, "per_s": 1200, "hours_90_epochs": 29,
             "theirs": "NVIDIA's, NHWC", "what": "AMP (fp16 with fp32 master weights)"},
        ),
    },
    "BERT-large, SQuAD fine-tuning, 384 tokens": {
        "profile": ["squad", "--entry", "squad-minilm", "--subset", "gen", "--set", "encoder=bert-large"],
        "folder": "squad-bert-large", "profile_batch": {"fp32": 2, "bf16": 2}, "unit": "sequences/s",
        "emulate": False,      # emulated, its matrix multiplies (every linear layer's backward) take torch's fallback
        "source": "NVIDIA DeepLearningExamples, PyTorch/LanguageModeling/BERT/README.md (March 2020), Training "
                  "performance, Fine-tuning NVIDIA DGX-1 With 16G and With 32G, 1 GPU (pytorch:19.07-py3 container)",
        "ours": "Hugging Face's BertForQuestionAnswering at BERT-large's shapes (squad-minilm --set "
                "encoder=bert-large), AdamW as torch runs it",
        "rows": (
            {"device": "V100", "precision": "fp32", "batch": 4, "per_s": 8.96, "mixed_per_s": 35.88,
             "speedup": "3.99", "theirs": "NVIDIA's with its fused kernels (apex), V100 16 GB",
             "what": "FP32, DGX-1 16G"},
            {"device": "V100", "precision": "fp32", "batch": 8, "per_s": 8.64, "mixed_per_s": 36.04,
             "speedup": "4.171", "theirs": "NVIDIA's with its fused kernels (apex), V100 32 GB",
             "what": "FP32, DGX-1 32G"},
            {"device": "V100", "precision": "bf16", "batch": 8, "per_s": 36.04, "fp32_per_s": 8.64,
             "speedup": "4.171", "theirs": "NVIDIA's with its fused kernels (apex), V100 32 GB",
             "what": "mixed precision (fp16, apex AMP), DGX-1 32G"},
        ),
    },
}
CONSISTENT = 0.15             # a published throughput against its own table's training time


def disagreement(row: dict) -> str | None:
    """Why a published row disagrees with its own table, or None: a ResNet-50 throughput against the table's 90-epoch
    time (within ``CONSISTENT``: the time includes evaluation); a BERT pair of throughputs against the table's stated
    speed-up, to the digits printed (each figure may be off by half its last digit, no more)."""
    if "hours_90_epochs" in row:
        hours = 90 * IMAGENET_TRAIN / row["per_s"] / 3600
        if abs(hours / row["hours_90_epochs"] - 1) > CONSISTENT:
            return f"{row['per_s']} images/s make 90 epochs {hours:.0f} h, the table says {row['hours_90_epochs']} h"
        return None
    fp32, mixed = (row["per_s"], row["mixed_per_s"]) if "mixed_per_s" in row else (row["fp32_per_s"], row["per_s"])
    half = 0.005                                     # both throughputs are printed to 0.01
    low, high = (mixed - half) / (fp32 + half), (mixed + half) / (fp32 - half)
    step = 10.0 ** -len(row["speedup"].split(".")[1]) / 2
    if high < float(row["speedup"]) - step or low > float(row["speedup"]) + step:
        return (f"{mixed} / {fp32} sequences/s is a speed-up of {low:.4f}–{high:.4f}, the table says "
                f"{row['speedup']}")
    return None


QUICK_PER_CLASS = 1          # the memory suite's --quick: each entry's heaviest call of each memory-bound class


def machine_name() -> str:
    """The CPU model, its widest vector extension and its cores: one folder per kind of machine met."""
    from dawnbench.environment import hardware_info

    info = hardware_info(torch.device("cpu"))
    flags = set(info["cpu_flags"])
    vector = "amx" if {"amx_tile", "amx_bf16"} & flags else "avx512" if "avx512f" in flags else "avx2"
    return re.sub(r"[^a-z0-9]+", "-", f"{info['cpu']} {vector} {info['cores']}c".lower()).strip("-")


def generated_imagenet(tmp_path: Path, env: dict[str, str]) -> None:
    """A generated ILSVRC tree imported as ``imagenet@gen`` into ``env``'s data cache (ImageNet is not reachable)."""
    bench.python("-m", "dawnbench.data.imagenet.generate", str(tmp_path / "ilsvrc"), "--classes", "4", "--train", "80",
                 "--val", "4", env=env)
    bench.dawnbench("data", "fetch", "imagenet", "--from", str(tmp_path / "ilsvrc"), "--subset", "gen", env=env)


def generated_squad(tmp_path: Path, env: dict[str, str]) -> None:
    """A generated SQuAD v1.1 set imported as ``squad@gen`` into ``env``'s data cache (SQuAD is not reachable)."""
    bench.python("-m", "dawnbench.data.squad.generate", str(tmp_path / "squad"), env=env)
    bench.dawnbench("data", "fetch", "squad", "--from", str(tmp_path / "squad"), "--subset", "gen", env=env)


def add_machine(args) -> None:
    here = MACHINES / machine_name()
    precisions = list(bench.cpu_precisions())
    with tempfile.TemporaryDirectory(prefix="dawnbench-whole-") as tmp:
        tmp_path = Path(tmp)
        env = {"DAWNBENCH_DATA": str(tmp_path / "data")}
        if not args.skip_profiles:
            generated_imagenet(tmp_path, env)
            generated_squad(tmp_path, env)
            for task, entry, extra in ENTRIES:
                if args.only and entry not in args.only.split(","):
                    continue
                for precision in precisions:
                    name = f"{task}-{entry}-{precision}"
                    bench.dawnbench("profile", task, "--entry", entry, *extra, "--precision", precision, "--steps",
                                    str(PROFILE_STEPS), "--out", str(tmp_path / name), "--json",
                                    env=env if "--subset" in extra else None)   # MNIST, CIFAR-10: the usual cache
                    kept = here / "profiles" / name
                    kept.mkdir(parents=True, exist_ok=True)
                    for file in ("summary.json", "ops.tsv"):
                        shutil.copyfile(tmp_path / name / file, kept / file)
        if args.no_kernels or not PROBLEMS.is_file():
            print("profiles stored" if args.no_kernels else
                  f"no {PROBLEMS} yet: run the `problems` stage, then `add-machine --skip-profiles`")
            return
        started = time.perf_counter()
        bench.dawnbench("kernels", "memory", "--quick", "--out", str(tmp_path / "quick"), "--json")
        quick_s = time.perf_counter() - started
        started = time.perf_counter()
        bench.dawnbench("kernels", "gemm,conv,rnn,memory", "--set", "applications", "--precision", ",".join(precisions),
                        "--out", str(tmp_path / "kernels"), "--json")
        whole_s = time.perf_counter() - started
        here.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(tmp_path / "kernels" / "kernels.json", here / "kernels.json")
        quick = json.loads((tmp_path / "quick" / "kernels.json").read_text())
        bench.write("machine", {"machine": here.name, "precisions": precisions, "memory_quick_wall_s": quick_s,
                                **targets.judged("whole_steps.memory_quick", quick_s),
                                "memory_quick_rows": len(quick["rows"]), "applications_wall_s": whole_s,
                                "memory_quick": [{k: r.get(k) for k in ("pass", "precision", "median_s", "gbps",
                                                                         "fraction_of_bandwidth", "skipped")}
                                                 | {"op": r["params"]["op"], "class": r["params"]["class"]}
                                                 for r in quick["rows"]], "roofs": quick["roofs"]},
                    out=here / "machine.json")
    print(f"machine stored: {here}")


def problems(args) -> None:
    """applications.csv from every stored profile (see the module docstring)."""
    from dawnbench.opcalls.calls import kernel_identity
    from dawnbench.records.kernel_classes import COMMUNICATION, SUITE_OF, op_class
    from dawnbench.records.ops import read_ops
    from dawnbench.records.problems import APPLICATION_SHARE

    chosen: dict[tuple[str, str], dict] = {}
    for folder in sorted(MACHINES.glob("*/profiles/*")):
        summary = json.loads((folder / "summary.json").read_text())
        entry = f"{summary['task']} {summary.get('entry')} {summary.get('precision') or 'fp32'}"
        for row in read_ops(folder):
            share = row["time_s"] / summary["window_s"]
            cls = op_class(row["op"])
            if not row["call"] or share < APPLICATION_SHARE or cls == COMMUNICATION:
                continue
            key = (kernel_identity(row["call"]), row["precision"])   # a call marked as a parameter's is the same kernel
            if key not in chosen or float(chosen[key]["share"]) < share:   # a call met on several machines: its largest share
                suite = SUITE_OF.get(cls, "memory") if "convolution_backward" not in row["op"] else "conv"
                chosen[key] = {"suite": suite, "class": cls, "op": row["op"],
                               "pass": "backward" if "backward" in row["op"] else "forward",
                               "precision": row["precision"], "flops": f"{(row['flops'] or 0) / row['calls']:.6g}",
                               "bytes": f"{(row['bytes'] or 0) / row['calls']:.6g}", "entry": entry,
                               "share": f"{share:.4f}", "quick": "0", "call": row["call"]}
    rows = sorted(chosen.values(), key=lambda r: -float(r["share"]))
    heaviest: dict[tuple[str, str], int] = {}
    for row in rows:       # the memory suite's --quick: each entry's heaviest of each class
        group = (row["entry"], row["class"])
        if row["suite"] == "memory" and heaviest.get(group, 0) < QUICK_PER_CLASS:
            heaviest[group] = heaviest.get(group, 0) + 1
            row["quick"] = "1"
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, ["suite", "class", "op", "pass", "precision", "flops", "bytes", "entry", "share",
                                     "quick", "call"], lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    PROBLEMS.write_text(buffer.getvalue())
    counts = {s: sum(r["suite"] == s for r in rows) for s in ("gemm", "conv", "rnn", "memory")}
    print(f"{PROBLEMS}: {len(rows)} calls {counts}, {sum(r['quick'] == '1' for r in rows)} in the memory suite's --quick")


def predict(args) -> None:
    """Every stored profile predicted with every stored machine's kernels.json."""
    machines = sorted(m for m in MACHINES.iterdir() if (m / "kernels.json").is_file())
    cells = []
    for source in machines:
        for profile in sorted((source / "profiles").iterdir()):
            for target in machines:
                target_profile = target / "profiles" / profile.name
                if not target_profile.is_dir():
                    continue
                doc = json.loads(bench.dawnbench("predict", str(profile), "--device", str(target / "kernels.json"),
                                                 "--epochs", "1", "--json", quiet=True).stdout)
                summary = json.loads((target_profile / "summary.json").read_text())
                measured = summary["window_s"] / summary["steps"]
                [device] = doc["devices"]
                cells.append({"profile": profile.name, "profiled_on": source.name, "kernels_of": target.name,
                              "predicted_step_s": device["step_s"], "measured_step_s": measured,
                              "error": device["step_s"] / measured - 1, "rests_on": device["rests_on"],
                              "framework_s": device["framework_s"], "classes": device["classes"],
                              "notes": device["notes"][:5],
                              "process_cpu_pct_max": (summary.get("resources") or {}).get("proc_cpu_pct", {}).get("max"),
                              "gaps": [{k: o[k] for k in ("op", "shapes", "class", "calls", "measured_s", "predicted_s",
                                                          "from")}
                                       for o in sorted(device["ops"], key=lambda o: -abs(o["measured_s"] -
                                                                                         o["predicted_s"]))[:5]]})
                print(f"{profile.name:38} {source.name} → {target.name}: predicted {device['step_s']:.4g} s, "
                      f"measured {measured:.4g} s ({cells[-1]['error']:+.1%})", flush=True)
    same = [abs(c["error"]) for c in cells if c["profiled_on"] == c["kernels_of"]]
    across = [abs(c["error"]) for c in cells if c["profiled_on"] != c["kernels_of"]]
    figures = {"machines": [m.name for m in machines], "cells": cells,
               "same_machine": {"rows": len(same), "median": statistics.median(same) if same else None,
                                "max": max(same) if same else None,
                                "within_15": sum(targets.verdict("whole_steps.same_machine", e) == "met" for e in same),
                                **targets.judged("whole_steps.same_machine", max(same) if same else None)},
               "across_machines": {"rows": len(across), "median": statistics.median(across) if across else None,
                                   "max": max(across) if across else None,
                                   **targets.judged("whole_steps.across_machines",
                                                    statistics.median(across) if across else None)}}
    print(json.dumps({k: v for k, v in figures.items() if k != "cells"}, indent=1))
    bench.store(args, "whole_steps", figures)


def emulated_matmul_rate() -> float:
    """This CPU's bf16 matmul roof probe, emulated (FLOP/s): why a matmul-bound model is not profiled in bf16 here."""
    from dawnbench.profiling.roofs import measure_roofs

    return measure_roofs(torch.device("cpu"), precisions=("bf16",), emulated=("bf16",)).probes["bf16"]["matmul"]


def published(args) -> None:
    """Published single-V100 training throughputs predicted (see the module docstring)."""
    from dawnbench.precision import device_supports

    here = MACHINES / machine_name() / "published"      # not the six entries' profiles: no part of applications.csv
    rows, left_out, unmeasured = [], [], []
    with tempfile.TemporaryDirectory(prefix="dawnbench-published-") as tmp:
        tmp_path = Path(tmp)
        env = {"DAWNBENCH_DATA": str(tmp_path / "data")}
        generated_imagenet(tmp_path, env)
        generated_squad(tmp_path, env)
        for model, spec in PUBLISHED.items():
            for row in spec["rows"]:
                row = {"model": model, "unit": spec["unit"], "source": spec["source"], **row}
                why = disagreement(row)
                if why:
                    left_out.append({**row, "why": why})
                    continue
                native, why = device_supports(row["precision"], torch.device("cpu"))
                if not native and not spec["emulate"]:
                    unmeasured.append({**row, "why": f"no {row['precision']} profile on this CPU: {why}; emulated, "
                                                     f"its matrix multiplies take torch's fallback (the bf16 matmul "
                                                     f"roof probe: {emulated_matmul_rate() / 1e9:.2g} GFLOP/s here), "
                                                     "too slow for this model's step"})
                    continue
                name = f"{spec['folder']}-{row['precision']}"
                folder = here / name
                if not (folder / "ops.tsv").is_file():
                    bench.dawnbench("profile", *spec["profile"], "--set",
                                    f"batch_size={spec['profile_batch'][row['precision']]}", "--precision",
                                    row["precision"], *([] if native else ["--emulated"]), "--steps", "2",
                                    "--out", str(tmp_path / name), "--json", env=env)
                    folder.mkdir(parents=True, exist_ok=True)
                    for file in ("summary.json", "ops.tsv"):
                        shutil.copyfile(tmp_path / name / file, folder / file)
                doc = json.loads(bench.dawnbench("predict", str(folder), "--device", row["device"], "--batch",
                                                 str(row["batch"]), "--epochs", "1", "--json").stdout)
                [device] = doc["devices"]
                predicted = row["batch"] / device["step_s"]
                rows.append({**row, "profiled_batch": doc["profiled_batch_size"], "predicted_per_s": predicted,
                             "ratio": predicted / row["per_s"], "step_s": device["step_s"],
                             # the target is ResNet-50's; the BERT-large rows have none of their own
                             **(targets.judged("whole_steps.published", predicted / row["per_s"])
                                if model.startswith("ResNet") else {}),
                             "host_bound": device["host_bound"], "host_floor_s": device["host_floor_s"],
                             "rests_on": device["rests_on"], "classes": device["classes"],
                             "notes": [*doc["notes"], *device["notes"]][:8],
                             "differs": [f"ours: {spec['ours']}; published: {row['theirs']}",
                                         f"profiled at batch {doc['profiled_batch_size']} on this CPU and re-derived "
                                         f"at {row['batch']}", "bf16 profile predicted with DeepBench's fp16-mixed "
                                         "rows" if row["precision"] == "bf16" else "fp32 both sides",
                                         *([] if native else [f"bf16 emulated on this CPU ({why.removeprefix('this CPU ')}): "
                                                              "only the profile's op census is used"]),
                                         "published: the whole training loop (data loading included)"]})
                print(f"{model}, {row['what']}: predicted {predicted:,.3g} {spec['unit']}, published {row['per_s']:,} "
                      f"({rows[-1]['ratio']:.2f}×)", flush=True)
    bench.store(args, "published", {"rows": rows, "left_out": left_out, "unmeasured": unmeasured})


HOST_VARIANTS = {                       # name → (profile options, environment)
    "4 KiB pages": ([], {"THP_MEM_ALLOC_ENABLE": "0"}),
    "huge pages": ([], {"THP_MEM_ALLOC_ENABLE": "1"}),
    "4 KiB pages, workers=1": (["--set", "workers=1"], {"THP_MEM_ALLOC_ENABLE": "0"}),
}
# Each entry's variants and how many rounds of them (taken in turns); the page reads each against "4 KiB pages",
# the defaults.
HOST_ENTRIES = {entry: (("4 KiB pages", "huge pages"), 1) for _, entry, _ in ENTRIES}
HOST_ENTRIES["imagenet-resnet50"] = (("4 KiB pages, workers=1", "4 KiB pages", "huge pages"), 1)


def host(args) -> None:
    """The entries' steps as trained and with the host effects found (see the module docstring)."""
    import resource

    machine = MACHINES / machine_name()
    rows = []
    with tempfile.TemporaryDirectory(prefix="dawnbench-host-") as tmp:
        tmp_path = Path(tmp)
        env = {"DAWNBENCH_DATA": str(tmp_path / "data")}
        generated_imagenet(tmp_path, env)
        generated_squad(tmp_path, env)
        rounds = max(n for _, n in HOST_ENTRIES.values())
        runs = [(task, entry, extra, variant, round_) for round_ in range(1, rounds + 1) for task, entry, extra in ENTRIES
                if round_ <= HOST_ENTRIES[entry][1] for variant in HOST_ENTRIES[entry][0]]
        for task, entry, extra, variant, round_ in runs:
            options, variables = HOST_VARIANTS[variant]
            out = tmp_path / f"{entry}-{len(rows)}"
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            data = env if "--subset" in extra else {}          # MNIST, CIFAR-10: the usual cache
            bench.dawnbench("profile", task, "--entry", entry, *extra, *options, "--steps", str(PROFILE_STEPS),
                            "--out", str(out), "--json", env={**data, **variables})
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            doc = json.loads(bench.dawnbench("predict", str(out), "--device", str(machine / "kernels.json"),
                                             "--epochs", "1", "--json", quiet=True).stdout)
            [device] = doc["devices"]
            summary = json.loads((out / "summary.json").read_text())
            measured = summary["window_s"] / summary["steps"]
            rows.append({"entry": entry, "variant": variant, "round": round_, "measured_step_s": measured,
                         "predicted_step_s": device["step_s"], "error": device["step_s"] / measured - 1,
                         "minor_faults": after.ru_minflt - before.ru_minflt,
                         "system_cpu_s": after.ru_stime - before.ru_stime,
                         "user_cpu_s": after.ru_utime - before.ru_utime,
                         "process_cpu_pct_max": summary["resources"]["proc_cpu_pct"]["max"]})
            print(f"{entry} {variant} (round {round_}): measured {measured:.4g} s, predicted {device['step_s']:.4g} s "
                  f"({rows[-1]['error']:+.1%}), {rows[-1]['minor_faults']:,} minor faults, "
                  f"{rows[-1]['system_cpu_s']:.0f} s system CPU", flush=True)
    bench.store(args, "host_effects", {"machine": machine.name, "rows": rows})


def validate(args) -> None:
    """The model against DeepBench's published rows (``prediction.validate``), with leave-one-out leaving out a held
    GEMM's other transposes too; the figure of the leave-one-out points drawn again."""
    from dawnbench.prediction.validate import validate as check
    from prediction import loo_figure

    figures = check()
    figures["targets"] = {suite: targets.judged("whole_steps.leave_one_out", (v or {}).get("median_of_medians"))
                          for suite, v in figures["leave_one_out"].items()}
    loo_figure(figures, ROOT / "docs" / "img" / "prediction-loo.png")
    for device in figures["devices"].values():   # the points drawn: kept, rounded
        device["points"] = {s: [[float(f"{a:.4g}"), float(f"{b:.4g}")] for a, b in pts]
                            for s, pts in device["points"].items()}
    print(json.dumps({"leave_one_out": figures["leave_one_out"], "across": figures["across_devices"]}, indent=1))
    bench.store(args, "validation", figures)


def main() -> int:
    parser = bench.parser(__doc__)
    parser.add_argument("stage", choices=("add-machine", "problems", "predict", "published", "validate", "host"))
    parser.add_argument("--skip-profiles", action="store_true", help="add-machine: keep the stored profiles, time "
                                                                     "the kernels again")
    parser.add_argument("--no-kernels", action="store_true", help="add-machine: the profiles only")
    parser.add_argument("--only", metavar="ENTRY[,ENTRY…]", help="add-machine: profile only these entries again")
    args = parser.parse_args()
    {"add-machine": add_machine, "problems": problems, "predict": predict, "published": published,
     "validate": validate, "host": host}[args.stage](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
