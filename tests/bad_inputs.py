"""Bad and hostile command lines, one table: ``tests/test_bad_input.py`` runs each in process, and
``benchmarks/bad_input.py`` runs each as a user would (a fresh process, a time and memory limit) to
count how many give a clear error.

A case is ``(id, kind, args_of)``: ``args_of(w, run)`` builds its command line in the folder
``w`` (``run``: a run folder made by :func:`make_run`). ``kind`` says what must happen:

* ``refused``  exit 2 with a one-paragraph message and no traceback (bad input);
* ``handled``  exit 0, 1 or 2, no traceback, no hang (a damaged file that a command reports or skips).
"""

from __future__ import annotations

import json
import os
import shutil
import tarfile
from collections.abc import Callable
from pathlib import Path

import torch

from dawnbench.entries import saved
from dawnbench.entries.small_cnn import make_net

ROOT = Path(__file__).resolve().parents[1]
ArgsOf = Callable[[Path, Path], list]
DEEP = "[" * 200_000 + "]" * 200_000
HUGE_INT = "1" * 5000


def make_run(folder: Path) -> Path:
    """A small-cnn run folder on MNIST as `dawnbench run` leaves it (record, log, TSV and an untrained
    model.pt): what the commands that read run folders are given."""
    from dawnbench.harness.record import Evaluation, RunResult

    folder.mkdir(parents=True)
    hparams = {"widths": [16, 32, 64], "batch_size": 64}
    result = RunResult(task="mnist", entry="small-cnn", seed=0, status="success", official=False,
                       metric="top1_accuracy", threshold=97.0, time_to_accuracy_s=3.0, epochs_to_target=0.5,
                       samples_to_target=30_000, evals=[Evaluation(0.5, 30_000, 3.0, 97.5)], hparams=hparams,
                       hardware={"cpu": "x", "cores": 2, "accelerator": None, "memory_gib": 8.0},
                       software={"torch": torch.__version__}, checkpoint=saved.MODEL_FILE, run_dir=str(folder))
    (folder / "result.json").write_text(json.dumps(result.to_dict()))
    (folder / "epochs.tsv").write_text("epoch\thours\ttop1Accuracy\n0.5\t0.000833\t97.5\n")
    (folder / "events.log").write_text(':::MLLOG {"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", '
                                       '"key": "submission_benchmark", "value": "mnist", "metadata": {}}\n')
    saved.save(folder, {"model": make_net(hparams["widths"]).state_dict()}, task="mnist", entry="small-cnn",
               hparams=hparams, epoch=0.5, value=97.5)
    return folder


def _file(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("a file, not a folder\n")
    return path


def _entries(w: Path) -> Path:
    """A submissions folder with one good training entry (from the bundled DAWNBench entries)."""
    folder = w / "entries"
    if not folder.exists():
        with tarfile.open(ROOT / "third_party" / "dawnbench-entries.tar.xz") as tar:
            tar.extractall(w / "unpacked", filter="data")
        src = w / "unpacked" / "dawnbench-entries" / "CIFAR10" / "train"
        (folder / "CIFAR10" / "train").mkdir(parents=True)
        for suffix in (".json", ".tsv"):
            shutil.copy(src / f"ajay_resnet9_1v100_pytorch{suffix}", folder / "CIFAR10" / "train" / f"good{suffix}")
    return folder


def _scale_table(path: Path, counts: list[int]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"job": "j", "rows": [{"workers": k, "tta_s": 100.0 / k ** 0.8} for k in counts]}))
    return path


def _copy(run: Path, w: Path, change: Callable[[dict], None] | None = None) -> Path:
    """A copy of the run folder in ``w`` (its result.json changed by ``change``)."""
    dest = w / "run"
    if not dest.exists():
        shutil.copytree(run, dest)
    if change is not None:
        doc = json.loads((dest / "result.json").read_text())
        change(doc)
        (dest / "result.json").write_text(json.dumps(doc))
    return dest


def _mlperf(path: Path, time_ms: object = 1000, epoch: object = 1) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [{"key": "run_start", "time_ms": time_ms, "event_type": "INTERVAL_START", "value": None, "metadata": {}},
             {"key": "epoch_start", "time_ms": 2000, "event_type": "INTERVAL_START", "value": None,
              "metadata": {"epoch_num": epoch}},
             {"key": "run_stop", "time_ms": 9000, "event_type": "INTERVAL_END", "value": None,
              "metadata": {"status": "success"}}]
    path.write_text("".join(":::MLLOG " + json.dumps(x) + "\n" for x in lines))
    return path


def _mlperf_pair(w: Path, kind: str) -> tuple[Path, Path]:
    _mlperf(w / "logs" / "g" / "result_0.txt", *(("abc", 1) if kind == "time" else (1000, {"a": 1})))
    _mlperf(w / "logs2" / "g" / "result_0.txt")
    return w / "logs", w / "logs2"


def _deep(command: str, payload: str) -> ArgsOf:
    """``command`` on a file whose JSON is nested 200,000 deep or holds a 5,000-digit integer."""
    def args_of(w: Path, run: Path) -> list:
        deep = payload is DEEP
        if command in ("validate", "leaderboard"):
            folder = _entries(w)
            (folder / "CIFAR10" / "inference").mkdir(exist_ok=True)
            (folder / "CIFAR10" / "inference" / "deep.json").write_text(
                payload if deep else f'{{"version": "v1.0", "latency": 1, "n": {payload}}}')
            return ["validate", folder] if command == "validate" else ["leaderboard", folder]
        if command == "schedule":
            (w / "t.json").write_text(payload if deep else f'{{"rows": [{{"workers": 1, "tta_s": {payload}}}]}}')
            return ["schedule", w / "t.json", "--accelerators", "2", "--figure", w / "g.png"]
        r = _copy(run, w)
        text = (r / "result.json").read_text().rstrip()
        (r / "result.json").write_text(payload if deep else text[:-1] + f', "n": {payload}}}')
        return {"analyze": ["analyze", r], "report": ["report", r, "--out", w / "rep"],
                "export": ["export", r, "--author", "a", "--email", "a@b", "--out", w / "sub"]}[command]
    return args_of


CASES: list[tuple[str, str, ArgsOf]] = [
    # options out of range, or that name the wrong kind of thing
    ("schedule-dir", "refused", lambda w, run: ["schedule", w, "--accelerators", "2"]),
    ("schedule-figure-txt", "refused", lambda w, run: ["schedule", _scale_table(w / "t.json", [1, 2]),
                                                       "--accelerators", "2", "--figure", w / "g.txt"]),
    ("schedule-accelerators-huge", "refused", lambda w, run: ["schedule", _scale_table(w / "t.json", [1, 2]),
                                                              "--accelerators", "1000000000", "--figure", w / "g.png"]),
    ("profile-out-file", "refused", lambda w, run: ["profile", "mnist", "--steps", "1", "--out", _file(w / "f")]),
    ("profile-mistyped-run", "refused", lambda w, run: ["profile", w / "runs" / "mnist-smal-cnn"]),
    ("profile-top-negative", "refused", lambda w, run: ["profile", "mnist", "--steps", "1", "--top", "-5",
                                                        "--out", w / "p"]),
    ("profile-steps-zero", "refused", lambda w, run: ["profile", "mnist", "--steps", "0", "--out", w / "p"]),
    ("machine-meta", "refused", lambda w, run: ["machine", "--device", "meta"]),
    ("machine-cpu5", "refused", lambda w, run: ["machine", "--device", "cpu:5"]),
    ("similarity-resources-list", "refused", lambda w, run: ["similarity", _copy(
        run, w, lambda d: d.__setitem__("resources", [])), "--out", w / "sim"]),
    ("similarity-out-file", "refused", lambda w, run: ["similarity", _copy(run, w), "--out", _file(w / "f")]),
    ("generalize-families-comma", "refused", lambda w, run: ["generalize", _copy(run, w), "--families", ",",
                                                             "--out", w / "g"]),
    ("generalize-out-file", "refused", lambda w, run: ["generalize", _copy(run, w), "--families", "brightness",
                                                       "--severities", "1", "--out", _file(w / "f")]),
    ("run-collective-timeout-negative", "refused", lambda w, run: ["run", "mnist", "--nproc", "1",
                                                                   "--collective-timeout", "-1", "--out", w / "r"]),
    ("run-collective-timeout-zero", "refused", lambda w, run: ["run", "mnist", "--nproc", "1",
                                                               "--collective-timeout", "0", "--out", w / "r"]),
    ("run-collective-timeout-nan", "refused", lambda w, run: ["run", "mnist", "--nproc", "1",
                                                              "--collective-timeout", "nan", "--out", w / "r"]),
    ("run-target-nan", "refused", lambda w, run: ["run", "mnist", "--target", "nan", "--max-epochs", "1",
                                                  "--out", w / "r"]),
    ("run-seed-negative", "refused", lambda w, run: ["run", "mnist", "--seed", "-1", "--target", "97",
                                                     "--out", w / "r"]),
    ("run-seed-huge", "refused", lambda w, run: ["run", "mnist", "--seed", str(2 ** 70), "--out", w / "r"]),
    ("run-out-file", "refused", lambda w, run: ["run", "mnist", "--target", "97", "--out", _file(w / "f")]),
    ("run-max-epochs-inf", "refused", lambda w, run: ["run", "mnist", "--max-epochs", "inf", "--out", w / "r"]),
    ("run-resource-interval-tiny", "refused", lambda w, run: ["run", "mnist", "--resource-interval", "1e-9",
                                                              "--out", w / "r"]),
    ("run-negative-batch", "refused", lambda w, run: ["run", "mnist", "--set", "batch_size=-5", "--out", w / "r"]),
    ("run-nproc-16", "refused", lambda w, run: ["run", "mnist", "--nproc", "16", "--out", w / "r"]),
    ("scale-workers-16", "refused", lambda w, run: ["scale", "mnist", "--workers", "16", "--out", w / "s"]),
    ("scale-threads-zero", "refused", lambda w, run: ["scale", "mnist", "--workers", "1", "--threads-per-worker", "0",
                                                      "--runs", "1", "--out", w / "s"]),
    ("sweep-runs-zero", "refused", lambda w, run: ["sweep", "mnist", "--grid", "lr=0.1", "--runs", "0",
                                                   "--out", w / "s"]),
    ("export-out-file", "refused", lambda w, run: ["export", _copy(run, w), "--author", "a", "--email", "a@b",
                                                   "--out", _file(w / "f")]),
    ("report-out-file", "refused", lambda w, run: ["report", _copy(run, w), "--out", _file(w / "f")]),
    ("leaderboard-html-file", "refused", lambda w, run: ["leaderboard", _entries(w), "--html", _file(w / "f")]),
    ("leaderboard-top-negative", "refused", lambda w, run: ["leaderboard", _entries(w), "--top", "-1"]),
    ("infer-threads-64", "refused", lambda w, run: ["infer", _copy(run, w), "--threads", "64"]),
    ("infer-scenario-seconds", "refused", lambda w, run: ["infer", _copy(run, w), "--scenario", "offline",
                                                          "--scenario-seconds", "-1"]),
    ("infer-server-qps", "refused", lambda w, run: ["infer", _copy(run, w), "--scenario", "server",
                                                    "--server-qps", "-1"]),
    ("infer-warmup-items", "refused", lambda w, run: ["infer", _copy(run, w), "--warmup-items", "-5",
                                                      "--max-items", "20"]),
    ("kernels-unknown-suite", "refused", lambda w, run: ["kernels", "matmul", "--out", w / "k"]),
    ("kernels-unknown-set", "refused", lambda w, run: ["kernels", "gemm", "--set", "testing", "--out", w / "k"]),
    ("kernels-unknown-precision", "refused", lambda w, run: ["kernels", "gemm", "--precision", "fp8", "--out", w / "k"]),
    ("kernels-tf32-on-cpu", "refused", lambda w, run: ["kernels", "gemm", "--precision", "tf32", "--device", "cpu",
                                                       "--out", w / "k"]),
    ("kernels-unknown-device", "refused", lambda w, run: ["kernels", "gemm", "--device", "tpu", "--out", w / "k"]),
    ("kernels-compare-missing", "refused", lambda w, run: ["kernels", "gemm", "--compare", "A100", "--out", w / "k"]),
    ("kernels-compare-malformed", "refused", lambda w, run: ["kernels", "gemm", "--compare", _file(w / "other.json"),
                                                             "--out", w / "k"]),
    ("kernels-cap-zero", "refused", lambda w, run: ["kernels", "gemm", "--cap", "0", "--out", w / "k"]),
    ("kernels-out-file", "refused", lambda w, run: ["kernels", "gemm", "--quick", "--out", _file(w / "f")]),
    ("roofline-nothing", "refused", lambda w, run: ["roofline", _copy(run, w), "--out", w / "roof"]),
    ("classes-three", "refused", lambda w, run: ["classes", w, w, w]),
    ("classes-no-profile", "refused", lambda w, run: ["classes", _copy(run, w)]),
    ("jobs-slots-zero", "refused", lambda w, run: ["jobs", "mnist", "--slots", "0", "--out", w / "j"]),
    ("jobs-slots-too-many", "refused", lambda w, run: ["jobs", "mnist", "--slots", str(len(os.sched_getaffinity(0)) + 1),
                                                       "--out", w / "j"]),
    ("jobs-unknown-type", "refused", lambda w, run: ["jobs", "mnist", "--slots", "1", "--types", "serial",
                                                     "--out", w / "j"]),
    ("jobs-mix-unknown-task", "refused", lambda w, run: ["jobs", "mnist", "--slots", "1", "--mix", "mnist,cifar100",
                                                         "--out", w / "j"]),
    ("jobs-mix-wrong-entry", "refused", lambda w, run: ["jobs", "mnist", "--slots", "1", "--mix",
                                                        "mnist:cifar10-fast", "--out", w / "j"]),
    ("run-p2p-sometimes", "refused", lambda w, run: ["run", "mnist", "--p2p", "sometimes", "--out", w / "r"]),
    ("run-resume-local", "refused", lambda w, run: ["run", "mnist", "--resume", "--out", w / "r"]),
    ("run-slurm-time-limit-zero", "refused", lambda w, run: ["run", "mnist", "--executor", "slurm",
                                                             "--time-limit", "0", "--out", w / "r"]),
    ("sweep-slurm-sbatch-bare", "refused", lambda w, run: ["sweep", "mnist", "--grid", "batch_size=32,64",
                                                           "--executor", "slurm", "--sbatch=qos", "--out", w / "s"]),
    # damaged files: reported or skipped, never a traceback
    *[(f"mlperf-{kind}-{command}", "handled", (lambda kind, command: lambda w, run: {
        "analyze": ["analyze", _mlperf_pair(w, kind)[0]],
        "compare": ["compare", *_mlperf_pair(w, kind)],
        "report": ["report", _mlperf_pair(w, kind)[0], "--out", w / "rep"]}[command])(kind, command))
      for kind in ("time", "epoch") for command in ("analyze", "compare", "report")],
    *[(f"result-{name}-{command}", "handled", (lambda name, value, command: lambda w, run: {
        "analyze": ["analyze", _copy(run, w, lambda d: d.__setitem__(name, value))],
        "report": ["report", _copy(run, w, lambda d: d.__setitem__(name, value)), "--out", w / "rep"],
        "export": ["export", _copy(run, w, lambda d: d.__setitem__(name, value)), "--author", "a", "--email", "a@b",
                   "--out", w / "sub"],
        "infer": ["infer", _copy(run, w, lambda d: d.__setitem__(name, value)), "--max-items", "20",
                  "--batch-sizes", "1"]}[command])(name, value, command))
      for name, value in (("evals", "x"), ("seed", "abc"), ("threshold", "high"), ("hparams", [1]))
      for command in ("analyze", "report", "export", "infer")],
    *[(f"json-{what}-{command}", "handled", _deep(command, payload))
      for what, payload in (("deep", DEEP), ("bigint", HUGE_INT))
      for command in ("validate", "leaderboard", "schedule", "analyze", "report", "export")],
]
