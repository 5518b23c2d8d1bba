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
import time
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
    from dawnbench.records.record import Evaluation, RunResult

    folder.mkdir(parents=True)
    hparams = {"widths": [16, 32, 64], "batch_size": 64}
    result = RunResult(task="mnist", entry="small-cnn", seed=0, status="success", official=False,
                       metric="top1_accuracy", threshold=97.0, time_to_accuracy_s=3.0, epochs_to_target=0.5,
                       samples_to_target=30_000, evals=[Evaluation(0.5, 30_000, 3.0, 97.5)], hparams=hparams,
                       timed_s=3.0, wall_s=6.0, eval_s=2.0,
                       hardware={"cpu": "x", "cores": 2, "accelerator": None, "memory_gib": 8.0},
                       software={"torch": torch.__version__}, checkpoint=saved.MODEL_FILE, run_dir=str(folder))
    (folder / "result.json").write_text(json.dumps(result.to_dict()))
    (folder / "epochs.tsv").write_text("epoch\thours\ttop1Accuracy\n0.5\t0.000833\t97.5\n")
    start = time.time() * 1e3      # each run's log its own, as a run writes it: its start, evaluation and end
    (folder / "events.log").write_text("".join(":::MLLOG " + json.dumps({"namespace": "", **e}) + "\n" for e in (
        {"time_ms": start, "event_type": "INTERVAL_START", "key": "run_start", "value": None,
         "metadata": {"run": str(folder)}},
        {"time_ms": start + 5e3, "event_type": "POINT_IN_TIME", "key": "eval_accuracy", "value": 97.5,
         "metadata": {"epoch_num": 0.5, "samples_count": 30_000}},
        {"time_ms": start + 6e3, "event_type": "INTERVAL_END", "key": "run_stop", "value": None,
         "metadata": {"status": "success"}})))
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


def kernels_doc() -> dict:
    """What `dawnbench kernels gemm --quick` writes, in little: two timed GEMM rows and a skipped one."""
    gemm = {"m": 1760, "n": 16, "k": 1760, "a_transposed": False, "b_transposed": False}
    row = {"suite": "gemm", "set": "training", "params": gemm, "pass": "forward", "precision": "fp32",
           "median_s": 1e-3, "iqr_s": 1e-5, "repeats": 5, "calls": 50, "flops": 2.0 * 1760 * 16 * 1760,
           "bytes": 4.0 * (1760 * 1760 + 2 * 16 * 1760), "gflops": 99.1, "gbps": 12.6, "intensity": 7.9}
    return {"kind": "dawnbench-kernels", "version": 1, "set": "training", "quick": True, "suites": ["gemm"],
            "cap_s": 10.0, "rows": [row, {**row, "params": {**gemm, "n": 32}, "median_s": 2e-3, "flops": row["flops"] * 2},
                                    {**{k: row[k] for k in ("suite", "set", "pass", "precision")},
                                     "params": {**gemm, "m": 8192}, "skipped": "one call would take about 3 s"}],
            "resources": {"gemm": {"proc_cpu_pct": {"mean": 190.0, "max": 200.0}}},
            "roofs": {"device": "cpu", "flops": {"fp32": 3e11}, "bandwidth_bytes_per_s": 2e10,
                      "ridge_flop_per_byte": {"fp32": 15.0}},
            "hardware": {"cpu": "x", "cores": 2}, "interrupted": False}


def _kernels(w: Path, change: Callable[[dict], None] | None = None, text: str | None = None) -> Path:
    """``w/k/kernels.json``: :func:`kernels_doc` with one field changed (or the file's text itself)."""
    doc = kernels_doc()
    if change is not None:
        change(doc)
    path = w / "k" / "kernels.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc) if text is None else text)
    return path


def _row(**fields: object) -> Callable[[dict], None]:
    return lambda doc: doc["rows"][0].update(fields)


OPS_HEADER = "op\tshapes\tdtype\tprecision\tcalls\ttime_s\tshare\tflops\tbytes\tintensity\tflops_per_s\tbytes_per_s\t" \
             "fraction_of_roof\tbound\n"


def _ops(w: Path, body: str | bytes, header: bool = True) -> Path:
    """A profile folder whose ``ops.tsv`` holds ``body`` (after the header, unless ``header`` is False)."""
    folder = w / "prof"
    folder.mkdir(parents=True, exist_ok=True)
    data = body if isinstance(body, bytes) else ((OPS_HEADER if header else "") + body).encode()
    (folder / "ops.tsv").write_bytes(data)
    return folder


OP = "aten::mm\t16x1760, 1760x1760\tfloat32\tfp32\t{calls}\t{time}\t1\t9.9e+07\t1.3e+07\t7.6\t9.9e+10\t1.3e+10\t0.3\t\n"


def _summary(w: Path, change: Callable[[dict], None] | None = None) -> Path:
    """``w/prof/summary.json`` as `dawnbench profile` writes it (its headline figures), ``change``d."""
    doc = {"task": "mnist", "entry": "small-cnn", "precision": "fp32", "window_s": 1.0, "steps": 10,
           "batch_size": 64, "samples_per_s": 640.0, "memory_bound_share": 0.4, "fraction_of_peak": 0.2,
           "roofs": {"device": "cpu", "flops": {"fp32": 3e11}, "bandwidth_bytes_per_s": 2e10},
           "step": {"time_s": 0.1, "flops": 6e9, "bytes": 5e8, "intensity": 12.0, "flops_per_s": 6e10},
           "resources": {"proc_cpu_pct": {"mean": 180.0, "max": 200.0}}}
    if change is not None:
        change(doc)
    return _write_json(w / "prof" / "summary.json", doc)


def _profile(w: Path, ops: str | None = None, change: Callable[[dict], None] | None = None) -> Path:
    """A profile folder for explain and predict: ``ops.tsv`` of one GEMM (or ``ops``), ``summary.json`` ``change``d."""
    folder = _ops(w, OP.format(calls=2, time=0.5) if ops is None else ops)
    _summary(w, change)
    return folder


def _write_json(path: Path, doc: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


def _special(w: Path, what: str) -> Path:
    """A path that is not a plain file: a link out of the folder, a FIFO, a device."""
    path = w / "special" / "kernels.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    if what == "link":
        path.symlink_to("/etc/passwd")
    elif what == "fifo":
        os.mkfifo(path)
    else:
        return Path("/dev/zero")
    return path


def _link_ops(w: Path) -> Path:
    """A profile folder whose ops.tsv is a link to a file outside it."""
    folder = w / "linked"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ops.tsv").symlink_to("/etc/passwd")
    return folder


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


SHEET = {"Mem_Bw": 1555, "Num_Sm": 108, "Core_Per_SM": 64, "Freq": 1410, "SingleFLOPs": 19492, "L2Cache": 40,
         "Dev_Mem": 40}
CONFIG = {"model_type": "bert", "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
          "intermediate_size": 32, "vocab_size": 50, "max_position_embeddings": 64}


def _sheet(w: Path, change: dict | list, name: str = "sheet.json") -> Path:
    """A datasheet file: the A100's figures with ``change`` (a field None: left out; a list: the whole file)."""
    doc = change if isinstance(change, list) else {k: v for k, v in {**SHEET, **change}.items() if v is not None}
    return _text(w, name, json.dumps(doc))


def _config(w: Path, change: dict | list | None = None) -> Path:
    """A small Hugging Face config with ``change`` (a field None: left out; a list: the whole file)."""
    doc = change if isinstance(change, list) else {k: v for k, v in {**CONFIG, **(change or {})}.items()
                                                   if v is not None}
    return _text(w, "config.json", json.dumps(doc))


def _text(w: Path, name: str, text: str) -> Path:
    w.mkdir(parents=True, exist_ok=True)
    (w / name).write_text(text)
    return w / name


def _linked(target: Path) -> Path:
    """A link beside ``target``, to it: dawnbench reads no link."""
    link = target.with_name("link-" + target.name)
    link.symlink_to(target.resolve())
    return link


def _link_in(link: Path, target: Path) -> Path:
    """``link`` made a symbolic link to ``target``; the folder holding it is returned."""
    link.symlink_to(target)
    return link.parent


def _folder(w: Path) -> Path:
    (w / "elsewhere").mkdir()
    return w / "elsewhere"


def _census(w: Path, change: tuple | None = None, mode: str = "train") -> Path:
    """A census folder as ``profile --census`` writes it (a tiny model's), its summary's ``census`` ``change``d:
    (field, value) — a dict merged into the field's — or (None, value): the whole ``census`` replaced; a memory
    ``total_bytes`` of None is made the sum of its parts (so that only the part changed is wrong), an
    ``activations_fixed_bytes`` of None all the activations."""
    from dawnbench.profiling.census import census, hf_config_model
    from dawnbench.records.census import write_census
    folder = w / "census"
    write_census(census(hf_config_model(_config(w), mode), 1, 8, mode), folder)
    if change is not None:
        doc = json.loads((folder / "summary.json").read_text())
        field, value = change
        if field is None:
            doc["census"] = value
        elif field.startswith("/"):                 # a field of the summary itself, beside its census
            doc[field[1:]] = value
        else:
            doc["census"][field] = {**doc["census"][field], **value} if isinstance(value, dict) else value
            memory = doc["census"]["memory"]
            if memory.get("activations_fixed_bytes") is None:     # None: all the activations fixed
                memory["activations_fixed_bytes"] = memory["activations_bytes"]
            if memory.get("total_bytes", 0) is None:      # None: the parts' sum
                memory["total_bytes"] = sum(memory[f"{part}_bytes"] for part in ("parameters", "gradients",
                                                                                  "optimizer", "activations"))
        (folder / "summary.json").write_text(json.dumps(doc))
    return folder


def _census_ops(w: Path, edit: Callable[[list[list[str]]], list[list[str]]], change: tuple | None = None) -> Path:
    """A census folder (``_census``) whose ``ops.tsv`` rows (header first, each a list of fields) are ``edit``ed."""
    folder = _census(w, change)
    rows = [line.split("\t") for line in (folder / "ops.tsv").read_text().splitlines()]
    (folder / "ops.tsv").write_text("".join("\t".join(r) + "\n" for r in edit(rows)))
    return folder


def _set(rows: list[list[str]], column: str, value: str, where: Callable[[dict[str, str]], bool]) -> list[list[str]]:
    """``rows`` with ``column`` set to ``value`` in the first row (after the header) that ``where`` picks."""
    header = rows[0]
    for r in rows[1:]:
        if where(dict(zip(header, r))):
            r[header.index(column)] = value
            break
    return rows


def _taken(w: Path) -> Path:
    """A census folder that holds a census already (an earlier command's)."""
    (w / "taken").mkdir()
    (w / "taken" / "ops.tsv").write_text("not mine")
    return w / "taken"


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
    ("classes-a-census", "refused", lambda w, run: ["classes", _census(w)]),       # no op time to share out
    ("classes-profile-linked-out", "refused", lambda w, run: ["classes", _link_in(_copy(run, w) / "profile", _census(w))]),
    ("census-with-set", "refused", lambda w, run: ["profile", _config(w), "--census", "--batch", "1", "--seqlen", "8",
                                                   "--set", "widths=-1", "--out", w / "c"]),
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
    # the wave-4 readers: a kernels.json, an ops.tsv and the kernels options, each with one thing wrong — the
    # document (refused) or one row (left out with a note, the rest read)
    *[(f"{command}-kernels-{name}", kind, (lambda command, change: lambda w, run: [
        command, _kernels(w, change), "--out", w / "o"])(command, change))
      for name, kind, change in (("roofs-string", "refused", lambda d: d.__setitem__("roofs", "fast")),
                                 ("ridge-list", "refused",
                                  lambda d: d["roofs"].__setitem__("ridge_flop_per_byte", [15.0])),
                                 ("resources-string", "refused", lambda d: d.__setitem__("resources", "busy")),
                                 ("params-string", "handled", _row(params="1760x16")),
                                 ("params-list", "handled", _row(params=[1760, 16])),
                                 ("precision-object", "handled", _row(precision={"bits": 32})),
                                 ("median-string", "handled", _row(median_s="1ms")),
                                 ("version-999", "refused", lambda d: d.__setitem__("version", 999)),
                                 ("rows-million", "refused", lambda d: d.__setitem__("rows", [{}] * 1_000_000)))
      for command in ("roofline", "similarity")],
    ("roofline-kernels-truncated", "refused", lambda w, run: [
        "roofline", _kernels(w, text=json.dumps(kernels_doc())[:300]), "--out", w / "o"]),
    ("roofline-kernels-nan", "refused", lambda w, run: [
        "roofline", _kernels(w, text=json.dumps(kernels_doc()).replace('"median_s": 0.001', '"median_s": NaN', 1)),
        "--out", w / "o"]),
    *[(f"roofline-kernels-{name}", "handled", (lambda change: lambda w, run: [
        "roofline", _kernels(w, change), "--out", w / "o"])(change))
      for name, change in (("median-negative", _row(median_s=-1e-3)), ("median-1e308", _row(median_s=1e308)),
                           ("above-roof", _row(median_s=1e-9)), ("flops-negative", _row(flops=-5.0)))],
    *[(f"classes-ops-{name}", "refused", (lambda body, header: lambda w, run: ["classes", _ops(w, body, header)])(
        body, header)) for name, body, header in (
        ("random-bytes", bytes(range(256)) * 40, False), ("empty", "", False), ("header-only", "", True),
        ("time-nan", OP.format(calls=2, time="nan"), True), ("time-negative", OP.format(calls=2, time=-0.5), True),
        ("three-columns", "aten::mm\t16x1760\tfloat32\n", True), ("calls-1e300", OP.format(calls="1e300", time=0.5), True),
        ("calls-fraction", OP.format(calls=2.5, time=0.5), True), ("no-time", OP.format(calls=2, time=0), True),
        ("not-a-number", OP.format(calls=2, time="fast"), True))],
    ("kernels-compare-itself", "refused", lambda w, run: ["kernels", "gemm", "--quick", "--out", _kernels(w).parent,
                                                          "--compare", _kernels(w)]),
    ("kernels-compare-empty", "refused", lambda w, run: ["kernels", "gemm", "--quick", "--compare", "", "--out",
                                                         w / "k2"]),
    # a few seconds of rows suffice: the point is the damaged row left out of the comparison, not the timing
    ("kernels-compare-median-string", "handled", lambda w, run: ["kernels", "gemm", "--quick", "--max-seconds", "1",
                                                                 "--compare", _kernels(w, _row(median_s="x")),
                                                                 "--out", w / "k2"]),
    ("kernels-compare-version", "refused", lambda w, run: ["kernels", "gemm", "--quick", "--compare",
                                                           _kernels(w, lambda d: d.__setitem__("version", 999)),
                                                           "--out", w / "k2"]),
    ("kernels-max-seconds-tiny", "refused", lambda w, run: ["kernels", "gemm", "--max-seconds", "1e-300",
                                                            "--out", w / "k2"]),
    ("kernels-cap-huge", "refused", lambda w, run: ["kernels", "gemm", "--cap", "1e12", "--out", w / "k2"]),
    ("kernels-allreduce-nproc-zero", "refused", lambda w, run: ["kernels", "allreduce", "--nproc", "0", "--out",
                                                                w / "k2"]),
    # fresh wave-4 cases (beyond the issue's list): options, special files, other shapes of damage
    ("kernels-suite-empty", "refused", lambda w, run: ["kernels", ",", "--out", w / "k2"]),
    ("kernels-precision-empty", "refused", lambda w, run: ["kernels", "gemm", "--precision", ",", "--out", w / "k2"]),
    ("kernels-cap-nan", "refused", lambda w, run: ["kernels", "gemm", "--cap", "nan", "--out", w / "k2"]),
    ("kernels-cap-inf", "refused", lambda w, run: ["kernels", "gemm", "--cap", "inf", "--out", w / "k2"]),
    ("kernels-max-seconds-negative", "refused", lambda w, run: ["kernels", "gemm", "--max-seconds", "-5", "--out",
                                                                w / "k2"]),
    ("kernels-compare-trailing-comma", "refused", lambda w, run: ["kernels", "gemm", "--compare", "V100,", "--out",
                                                                  w / "k2"]),
    ("kernels-compare-folder-without", "refused", lambda w, run: ["kernels", "gemm", "--compare", w, "--out",
                                                                  w / "k2"]),
    ("kernels-compare-link-out", "refused", lambda w, run: ["kernels", "gemm", "--compare", _special(w, "link"),
                                                            "--out", w / "k2"]),
    ("kernels-compare-fifo", "refused", lambda w, run: ["kernels", "gemm", "--compare", _special(w, "fifo"),
                                                        "--out", w / "k2"]),
    ("kernels-compare-dev-zero", "refused", lambda w, run: ["kernels", "gemm", "--compare", _special(w, "dev"),
                                                            "--out", w / "k2"]),
    ("kernels-compare-list", "refused", lambda w, run: ["kernels", "gemm", "--compare", _write_json(
        w / "l.json", [1, 2]), "--out", w / "k2"]),
    ("kernels-out-dev-null", "refused", lambda w, run: ["kernels", "gemm", "--out", "/dev/null"]),
    ("kernels-allreduce-nproc-huge", "refused", lambda w, run: ["kernels", "allreduce", "--nproc", "1000", "--out",
                                                                w / "k2"]),
    ("kernels-device-cuda-absent", "refused", lambda w, run: ["kernels", "gemm", "--device", "cuda:7", "--out",
                                                              w / "k2"]),
    *[(f"roofline-{name}", "handled", (lambda change: lambda w, run: ["roofline", _kernels(w, change), "--out",
                                                                      w / "o"])(change))      # a row: left out
      for name, change in (("row-number", lambda d: d["rows"].__setitem__(0, 7)),
                           ("suite-unknown", _row(suite="fft")), ("pass-number", _row(**{"pass": 5})))],
    *[(f"roofline-{name}", "refused", (lambda change: lambda w, run: ["roofline", _kernels(w, change), "--out",
                                                                      w / "o"])(change))      # the document
      for name, change in (("roof-negative", lambda d: d["roofs"]["flops"].__setitem__("fp32", -1.0)),
                           ("bandwidth-zero", lambda d: d["roofs"].__setitem__("bandwidth_bytes_per_s", 0)),
                           ("resources-suite-list", lambda d: d["resources"].__setitem__("gemm", [1])),
                           ("rows-missing", lambda d: d.pop("rows")), ("kind-other", lambda d: d.__setitem__(
                               "kind", "dawnbench-profile")))],
    ("roofline-kernels-list", "refused", lambda w, run: ["roofline", _kernels(w, text="[1, 2, 3]"), "--out", w / "o"]),
    ("roofline-kernels-link", "refused", lambda w, run: ["roofline", _special(w, "link"), "--out", w / "o"]),
    ("roofline-empty-folder", "refused", lambda w, run: ["roofline", _file(w / "empty" / "notes.txt").parent,
                                                         "--out", w / "o"]),
    ("roofline-out-file", "refused", lambda w, run: ["roofline", _kernels(w), "--out", _file(w / "f")]),
    ("roofline-params-zero", "handled", lambda w, run: ["roofline", _kernels(w, lambda d: d["rows"][0]["params"]
                                                                             .__setitem__("m", 0)), "--out", w / "o"]),
    *[(f"roofline-summary-{name}", kind, (lambda change: lambda w, run: ["roofline", _summary(w, change), "--out",
                                                                         w / "o"])(change))
      for name, kind, change in (("window-string", "refused", lambda d: d.__setitem__("window_s", "1 s")),
                                 ("rate-string", "refused", lambda d: d["step"].__setitem__("flops_per_s", "fast")),
                                 ("step-list", "refused", lambda d: d.__setitem__("step", [1, 2])),
                                 ("above-roof", "handled", lambda d: d["step"].__setitem__("flops_per_s", 1e30)),
                                 ("share-five", "handled", lambda d: d.__setitem__("memory_bound_share", 5.0)),
                                 ("time-negative", "handled", lambda d: d["step"].__setitem__("time_s", -1.0)))],
    ("similarity-pick-zero", "refused", lambda w, run: ["similarity", _kernels(w), "--pick", "0", "--out", w / "o"]),
    ("similarity-run-throughput-list", "refused", lambda w, run: ["similarity", _copy(
        run, w, lambda d: d.__setitem__("throughput", [1])), "--out", w / "o"]),
    ("similarity-run-negative-cpu", "handled", lambda w, run: ["similarity", _copy(
        run, w, lambda d: d.__setitem__("resources", {"proc_cpu_pct": {"mean": -5.0, "max": 1.0}})), "--out",
        w / "o"]),
    ("similarity-kernel-problems-one-row", "handled", lambda w, run: ["similarity", _kernels(w), "--kernel-problems",
                                                                      "--out", w / "o"]),
    *[(f"classes-ops-{name}", "refused", (lambda body, header: lambda w, run: ["classes", _ops(w, body, header)])(
        body, header)) for name, body, header in (
        ("header-reordered", OPS_HEADER.replace("calls\ttime_s", "time_s\tcalls") + OP.format(calls=2, time=0.5),
         False),
        ("extra-column", OPS_HEADER.replace("\n", "\textra\n") + OP.format(calls=2, time=0.5).replace("\n", "\t1\n"),
         False),
        ("utf16", (OPS_HEADER + OP.format(calls=2, time=0.5)).encode("utf-16"), False),
        ("calls-zero", OP.format(calls=0, time=0.5), True), ("time-inf", OP.format(calls=2, time="inf"), True))],
    ("classes-ops-link", "refused", lambda w, run: ["classes", _link_ops(w)]),
    ("classes-second-damaged", "refused", lambda w, run: ["classes", _ops(w, OP.format(calls=2, time=0.5)),
                                                          _ops(w / "two", "", False)]),
    ("run-slurm-cpus-zero", "refused", lambda w, run: ["run", "mnist", "--executor", "slurm", "--cpus-per-run", "0",
                                                       "--out", w / "r"]),
    ("run-slurm-array-zero", "refused", lambda w, run: ["run", "mnist", "--runs", "2", "--executor", "slurm",
                                                        "--array-parallelism", "0", "--out", w / "r"]),
    ("run-slurm-sbatch-no-value", "refused", lambda w, run: ["run", "mnist", "--executor", "slurm", "--sbatch=--mem",
                                                             "--out", w / "r"]),
    ("jobs-mix-empty", "refused", lambda w, run: ["jobs", "mnist", "--slots", "1", "--mix", ",", "--out", w / "j"]),
    ("jobs-mix-unknown-entry", "refused", lambda w, run: ["jobs", "mnist", "--slots", "1", "--mix", "mnist:nosuch",
                                                          "--out", w / "j"]),
    ("machine-cuda-absent", "refused", lambda w, run: ["machine", "--device", "cuda:7"]),
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
    # explain and predict (wave 5): a profile folder, a device name or another machine's kernels.json
    *[(f"predict-{name}", "refused", (lambda argv: lambda w, run: ["predict", *argv(w)])(argv)) for name, argv in (
        ("device-unknown", lambda w: [_profile(w), "--device", "B100"]),
        ("device-empty", lambda w: [_profile(w), "--device", ","]),
        ("epochs-negative", lambda w: [_profile(w), "--device", "V100", "--epochs", "-3"]),
        ("epochs-nan", lambda w: [_profile(w), "--device", "V100", "--epochs", "nan"]),
        ("no-profile", lambda w: [w, "--device", "V100"]),
        ("ops-link", lambda w: [_link_ops(w), "--device", "V100"]),
        ("ops-time-nan", lambda w: [_profile(w, OP.format(calls=2, time="nan")), "--device", "V100"]),
        ("summary-steps-zero", lambda w: [_profile(w, change=lambda d: d.__setitem__("steps", 0)), "--device",
                                          "V100"]),
        ("summary-window-string", lambda w: [_profile(w, change=lambda d: d.__setitem__("window_s", "1 s")),
                                             "--device", "V100"]),
        ("kernels-no-roofs", lambda w: [_profile(w), "--device", _kernels(w, lambda d: d.pop("roofs"))]),
        ("kernels-link-out", lambda w: [_profile(w), "--device", _special(w, "link")]),
        ("kernels-fifo", lambda w: [_profile(w), "--device", _special(w, "fifo")]))],
    ("predict-kernels-median-string", "handled", lambda w, run: ["predict", _profile(w), "--device",
                                                                 _kernels(w, _row(median_s="x"))]),   # a row: left out
    ("explain-no-profile", "refused", lambda w, run: ["explain", w]),
    ("explain-summary-damaged", "refused", lambda w, run: ["explain", _profile(
        w, change=lambda d: d.__setitem__("roofs", "fast"))]),
    # wave 6 (issue "inputs true by construction"): well-formed nonsense, as the issue found it
    ("w6-predict-mm-zero-dimension", "handled", lambda w, run: [
        "predict", _profile(w, OP.format(calls=2, time=0.5) + OP.replace("16x1760, 1760x1760", "0x5, 5x7").format(
            calls=2, time=0.1)), "--device", "V100", "--json"]),
    ("w6-predict-conv-stride-zero", "handled", lambda w, run: [
        "predict", _profile(w, (OPS_HEADER.replace("\n", "\targs\n") + OP.format(calls=2, time=0.5).replace("\t\n", "\t\t\n")
                                + CONV.format(args="stride=0x0 padding=1x1")).encode()), "--device", "V100", "--json"]),
    ("w6-predict-window-1e308", "refused", lambda w, run: [
        "predict", _profile(w, change=lambda d: d.__setitem__("window_s", 1e308)), "--device", "V100"]),
    ("w6-predict-every-time-1e308", "refused", lambda w, run: [
        "predict", _profile(w, OP.format(calls=2, time="1e308")), "--device", "all", "--json"]),
    ("w6-explain-window-1e308", "refused", lambda w, run: [
        "explain", _profile(w, change=lambda d: d.__setitem__("window_s", 1e308))]),
    ("w6-analyze-tta-1e308", "handled", lambda w, run: ["analyze", _copies(run, w, 5, time_to_accuracy_s=1e308)]),
    ("w6-compare-tta-zero", "refused", lambda w, run: ["compare", _copies(run, w, 3, time_to_accuracy_s=0),
                                                       _copies(run, w / "b", 3)]),
    ("w6-analyze-minimal-records", "handled", lambda w, run: ["analyze", _minimal(w, 50), "--json"]),
    ("w6-report-minimal-records", "handled", lambda w, run: ["report", _minimal(w, 50), "--out", w / "rep"]),
    ("w6-compare-minimal-records", "handled", lambda w, run: ["compare", _minimal(w, 5), _minimal(w / "b", 5)]),
    ("w6-analyze-success-without-evals", "handled", lambda w, run: ["analyze", _copies(run, w, 2, evals=[])]),
    ("w6-analyze-negative-eval-epoch", "handled", lambda w, run: [
        "analyze", _copies(run, w, 2, evals=[{"epoch": -1, "samples": -5, "timed_s": 3.0, "value": 97.5}])]),
    ("w6-predict-profile-link-out", "refused", lambda w, run: ["predict", _run_with_linked_profile(w, run),
                                                               "--device", "V100"]),
    ("w6-explain-profile-link-out", "refused", lambda w, run: ["explain", _run_with_linked_profile(w, run)]),
    ("w6-run-rdzv-port-70000", "refused", lambda w, run: ["run", "mnist", "--nproc", "1", "--nnodes", "2",
                                                          "--rdzv-endpoint", "127.0.0.1:70000", "--out", w / "r"]),
    ("w6-run-rdzv-port-superscript", "refused", lambda w, run: ["run", "mnist", "--nproc", "1", "--nnodes", "2",
                                                                "--rdzv-endpoint", "h:\u00b2", "--out", w / "r"]),
    ("w6-run-rdzv-host-torch-refuses", "refused", lambda w, run: ["run", "mnist", "--nproc", "1", "--nnodes", "2",
                                                                  "--rdzv-endpoint", "a b:80", "--out", w / "r"]),
    ("w6-run-rdzv-ipv6-bare", "refused", lambda w, run: ["run", "mnist", "--nproc", "1", "--nnodes", "2",
                                                         "--rdzv-endpoint", "fe80::1", "--out", w / "r"]),
    ("w6-run-workers-per-node-zero", "refused", lambda w, run: ["run", "mnist", "--workers-per-node", "0",
                                                                "--out", w / "r"]),
    ("w6-run-time-limit-negative", "refused", lambda w, run: ["run", "mnist", "--time-limit", "-5", "--out", w / "r"]),
    # your own script (issue 53): MLPerf logs imported as run folders
    ("import-log-scale-nan", "refused", lambda w, run: ["import-log", _mlperf(w / "l" / "r.txt"), "--task", "mnist",
                                                        "--scale", "nan", "--out", w / "imp"]),
    ("import-log-scale-1e308", "refused", lambda w, run: ["import-log", _mlperf(w / "l" / "r.txt"), "--task",
                                                          "mnist", "--scale", "1e308", "--out", w / "imp"]),
    ("import-log-a-folder", "refused", lambda w, run: ["import-log", w, "--task", "mnist", "--out", w / "imp"]),
    ("import-log-fifo", "refused", lambda w, run: ["import-log", _special(w, "fifo"), "--task", "mnist",
                                                   "--out", w / "imp"]),
    ("import-log-no-evaluation", "refused", lambda w, run: ["import-log", _mlperf(w / "l" / "r.txt"), "--task",
                                                            "mnist", "--out", w / "imp"]),
    # a key given twice in one object (JSON keeps the last): refused at every door, naming the key (issue 83)
    ("repeated-key-config", "refused", lambda w, run: ["profile", _text(w, "config.json", json.dumps(CONFIG)[:-1] +
                                                       ', "num_hidden_layers": 100000}'), "--census", "--batch", "1",
                                                       "--seqlen", "8"]),
    ("repeated-key-record", "handled", lambda w, run: ["analyze", _text(_copy(run, w), "result.json",
        (_copy(run, w) / "result.json").read_text()[:-1] + ', "time_to_accuracy_s": 1e-9}')]),
    ("repeated-key-log-line", "refused", lambda w, run: ["import-log", _text(w, "r.txt", (_mlperf(w / "l" / "r.txt")
        .read_text().replace('"value": null', '"value": null, "value": 99', 1))), "--task", "mnist", "--out", w / "i"]),
    ("import-log-unknown-task", "refused", lambda w, run: ["import-log", _mlperf(w / "l" / "r.txt"), "--task",
                                                           "../x", "--out", w / "imp"]),
    ("export-a-log-file", "refused", lambda w, run: ["export", _mlperf(w / "l" / "r.txt"), "--author", "a",
                                                     "--email", "a@b", "--out", w / "sub"]),
    ("w6-export-cost-1e308", "refused", lambda w, run: ["export", run, "--cost-per-hour", "1e308", "--author", "a",
                                                        "--email", "a@b", "--out", w / "sub"]),
    # wave 7 (SPEC §24): the census of a model and GPUs from their datasheets
    *[(f"w7-sheet-{name}", "refused", (lambda change: lambda w, run: [
        "predict", _profile(w), "--device", _sheet(w, change)])(change)) for name, change in (
        ("bandwidth-zero", {"Mem_Bw": 0}), ("bandwidth-100tb", {"Mem_Bw": 1e5 + 1}), ("sms-negative", {"Num_Sm": -4}),
        ("fp32-petaflop", {"SingleFLOPs": 2e6}), ("field-missing", {"Freq": None}), ("l2-zero", {"L2Cache": 0}),
        ("memory-1e308", {"Dev_Mem": 1e308}), ("sms-string", {"Num_Sm": "108"}), ("cores-bool", {"Core_Per_SM": True}),
        ("fp32-against-clock", {"SingleFLOPs": 100}), ("tensor-below-fp32", {"tensor_gflops": {"bf16": 1}}),
        ("tensor-unknown", {"tensor_gflops": {"fp8": 1e6}}), ("array", []), ("sources-list", {"sources": ["x"]}))],
    ("w7-sheet-link", "refused", lambda w, run: ["predict", _profile(w), "--device", _linked(_sheet(w, {}))]),
    ("w7-sheet-mixed-with-deepbench", "refused", lambda w, run: ["predict", _profile(w), "--device", "H100,V100"]),
    *[(f"w7-census-{name}", "refused", (lambda argv: lambda w, run: ["profile", *argv(w), "--out", w / "c"])(argv))
      for name, argv in (
        ("batch-missing", lambda w: [_config(w), "--census", "--seqlen", "8"]),
        ("batch-zero", lambda w: [_config(w), "--census", "--batch", "0", "--seqlen", "8"]),
        ("batch-huge", lambda w: [_config(w), "--census", "--batch", "1000000000", "--seqlen", "8"]),
        ("seqlen-zero", lambda w: [_config(w), "--census", "--batch", "1", "--seqlen", "0"]),
        ("seqlen-beyond-positions", lambda w: [_config(w), "--census", "--batch", "1", "--seqlen", "4096"]),
        ("seqlen-missing", lambda w: [_config(w), "--census", "--batch", "1"]),
        ("config-no-model-type", lambda w: [_config(w, {"model_type": None}), "--census", "--batch", "1",
                                            "--seqlen", "8"]),
        ("config-unknown-type", lambda w: [_config(w, {"model_type": "nonsense"}), "--census", "--batch", "1",
                                           "--seqlen", "8"]),
        ("config-array", lambda w: [_config(w, []), "--census", "--batch", "1", "--seqlen", "8"]),
        ("config-deep", lambda w: [_text(w, "deep.json", DEEP), "--census", "--batch", "1", "--seqlen", "8"]),
        ("config-link", lambda w: [_linked(_config(w)), "--census", "--batch", "1", "--seqlen", "8"]),
        ("entry-file", lambda w: ["mnist", "--census", "--batch", "1", "--entry", str(w / "mine.py")]),
        ("steps-given", lambda w: ["mnist", "--census", "--batch", "1", "--steps", "3"]),
        ("head-on-a-task", lambda w: ["mnist", "--census", "--batch", "1", "--head", "qa"]))],
    *[(f"w7-census-summary-{name}", "refused", (lambda change: lambda w, run: [
        "predict", _census(w, change), "--device", "H100"])(change)) for name, change in (
        ("batch-1e308", ("batch", 1e308)), ("batch-zero", ("batch", 0)), ("batch-bool", ("batch", True)),
        ("memory-negative", ("memory", {"total_bytes": -1})), ("memory-not-its-parts", ("memory", {"total_bytes": 7})),
        ("mode-other", ("mode", "sideways")), ("not-an-object", (None, [1])))],
    *[(f"w8-census-memory-{name}", "refused", (lambda change: lambda w, run: [
        "predict", _census(w, ("memory", change)), "--device", "H100"])(change)) for name, change in (
        ("all-zero", {p: 0 for p in ("parameters_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes",
                                     "total_bytes")}),
        ("optimizer-past-two-states", {"optimizer_bytes": 10**12, "total_bytes": None}),
        ("optimizer-state-none-with-adamw", {"optimizer_bytes": 0, "total_bytes": None}),
        ("activations-none-grow", {"activations_fixed_bytes": None, "total_bytes": None}),
        ("activations-past-forward", {"activations_bytes": 10**15, "total_bytes": None}))],
    *[(f"w8-census-ops-{name}", "refused", (lambda edit: lambda w, run: [
        "predict", _census_ops(w, edit), "--device", "H100"])(edit)) for name, edit in (
        ("flops-1e22", lambda rows: _set(rows, "flops", "1e+22", lambda r: float(r["flops"]) > 0)),
        ("cut-to-two-rows", lambda rows: rows[:3]),
        ("call-dropped", lambda rows: _set(rows, "call", "", lambda r: float(r["flops"]) > 0)),
        ("float64", lambda rows: _set(rows, "dtype", "float64", lambda r: True)),
        ("calls-doubled", lambda rows: _set(rows, "calls", "2", lambda r: r["calls"] == "1")))],
    *[(f"w8-mlperf-unnamed-{name}", "refused", (lambda given: lambda w, run: [
        "analyze", _unnamed_log(w, *given)])(given)) for name, given in (
        ("accuracy-200", (200, 1, 30.0)), ("accuracy-negative", (-5, 1, 30.0)), ("accuracy-text", ("high", 1, 30.0)),
        ("million-epochs-in-0.3s", (0.5, 1_000_000, 0.3)), ("epochs-at-its-start", (0.5, 5, 0.0)))],
    ("w8-census-gpt2-classification-batch-1", "refused", lambda w, run: [
        "profile", _config(w, {"model_type": "gpt2", "n_embd": 32, "n_layer": 1, "n_head": 2, "n_positions": 64,
                               "hidden_size": None, "num_hidden_layers": None, "num_attention_heads": None,
                               "intermediate_size": None, "max_position_embeddings": None}),
        "--census", "--batch", "1", "--seqlen", "8", "--head", "classification", "--mode", "inference",
        "--out", w / "c"]),
    *[(f"w8-census-summary-{name}", "refused", (lambda change: lambda w, run: [
        "predict", _census(w, change), "--device", "H100"])(change)) for name, change in (
        ("inference-of-a-training-step", ("mode", "inference")), ("bf16-of-fp32-rows", ("precision", "bf16")),
        ("optimizer-lion", ("optimizer", "Lion")), ("optimizer-null-with-its-rows", ("optimizer", None)),
        ("batch-size-not-its-census", ("/batch_size", 4096)))],
    ("w8-census-inference-with-epochs", "refused", lambda w, run: [
        "predict", _census(w, mode="inference"), "--device", "H100", "--epochs", "3", "--samples-per-epoch", "88000"]),
    ("w8-census-inference-optimizer", "refused", lambda w, run: [
        "profile", _config(w), "--census", "--batch", "1", "--seqlen", "8", "--mode", "inference", "--optimizer",
        "adamw", "--out", w / "c"]),
    ("w8-census-past-every-gpu", "refused", lambda w, run: [
        "profile", _config(w, {"max_position_embeddings": 1 << 20}), "--census", "--batch", "65536", "--seqlen",
        str(1 << 20), "--out", w / "c"]),
    ("w8-census-config-sizes-disagree", "refused", lambda w, run: [
        "profile", _config(w, {"model_type": "llama", "hidden_size": 32, "num_hidden_layers": 1,
                               "num_attention_heads": 4, "num_key_value_heads": 3, "intermediate_size": 64}),
        "--census", "--batch", "1", "--seqlen", "8", "--out", w / "c"]),
    ("w7-census-to-explain", "refused", lambda w, run: ["explain", _census(w)]),
    ("w8-census-target-no-metric", "refused", lambda w, run: ["predict", _census(w), "--device", "H100",
                                                               "--target", "200"]),
    ("w7-census-to-deepbench", "refused", lambda w, run: ["predict", _census(w), "--device", "1080Ti"]),
    ("w7-sheet-device-control", "refused", lambda w, run: [
        "predict", _profile(w), "--device", _sheet(w, {"Device": "My\x1b[31mGPU\nx"})]),
    *[(f"w8-sheet-{name}", "refused", (lambda change: lambda w, run: [
        "predict", _profile(w), "--device", _sheet(w, change)])(change)) for name, change in (
        ("power-zero", {"Power_W": 0}), ("power-1e308", {"Power_W": 1e308}), ("process-negative", {"Process_Nm": -7}),
        ("process-text", {"Process_Nm": "4N"}), ("architecture-control", {"architecture": "Hop\x1bper"}),
        ("tensor-5130x", {"tensor_gflops": {"bf16": 100_000_000}}), ("one-sm-100tbs", {"Num_Sm": 1, "Core_Per_SM": 4096,
                                                                                    "Freq": 2380, "Mem_Bw": 100_000}),
        ("l2-above-memory", {"L2Cache": 4096, "Dev_Mem": 0.5}), ("power-1w-108-sms", {"Power_W": 1}),
        ("process-250nm", {"Process_Nm": 250}), ("field-misspelt", {"Power_w": 70}))],
    ("w8-census-config-100000-layers", "refused", lambda w, run: [
        "profile", _config(w, {"num_hidden_layers": 100_000}), "--census", "--batch", "1", "--seqlen", "8",
        "--out", w / "c"]),
    ("w8-sheets-one-name", "refused", lambda w, run: [
        "predict", _profile(w), "--device", f"{_sheet(w, {'Device': 'twin'}, 'a.json')},"
                                            f"{_sheet(w, {'Device': 'twin', 'Mem_Bw': 900}, 'b.json')}"]),
    *[(f"w7-census-config-{name}", "refused", (lambda change: lambda w, run: [
        "profile", _config(w, change), "--census", "--batch", "1", "--seqlen", "8", "--out", w / "c"])(change))
      for name, change in (("layers-negative", {"num_hidden_layers": -2}), ("size-bool", {"hidden_size": True}),
                           ("trillions", {"hidden_size": 1_000_000, "intermediate_size": 4_000_000}),
                           ("whisper-padding", {"model_type": "whisper", "d_model": 32}))],
    ("w7-census-out-through-link", "refused", lambda w, run: [
        "profile", _config(w), "--census", "--batch", "1", "--seqlen", "8", "--out", _linked(_folder(w)) / "sub"]),
    ("w7-census-out-taken", "refused", lambda w, run: [
        "profile", _config(w), "--census", "--batch", "1", "--seqlen", "8", "--out", _taken(w)]),
    # Wave 7's physics (issue 68): values each in range, impossible together; numbers and names as text; nothing
    # replaced unasked; MLPerf logs in time order
    *[(f"w7p-record-{name}", "refused", (lambda change: lambda w, run: ["analyze", _copy(run, w, change)])(change))
      for name, change in (
          ("epoch-of-trillions", lambda d: d.update(epochs_to_target=1e-9, samples_to_target=5888, evals=[
              {**d["evals"][0], "epoch": 1e-9, "samples": 5888}])),
          ("below-the-floor", lambda d: d.update(threshold=99.0, time_to_accuracy_s=1e-3, evals=[
              {**d["evals"][0], "timed_s": 1e-3, "value": 99.5}])),
          ("timed-past-wall", lambda d: d.update(timed_s=20.0, wall_s=10.0)),
          ("cost-not-price-times-time", lambda d: d.update(cost_per_hour=3.0, training_cost_usd=500.0)),
          ("cost-without-price", lambda d: d.update(training_cost_usd=0.01)),
          ("samples-per-second", lambda d: d.update(samples_to_target=10**14, epochs_to_target=1e5, evals=[
              {**d["evals"][0], "samples": 10**14, "epoch": 1e5}])),
          ("faster-than-a-gpu", lambda d: d.update(throughput={"flops_per_sample": 1e13})),
          ("entry-not-nfc", lambda d: d.update(entry="cafe\u0301")),
          ("entry-zero-width", lambda d: d.update(entry="small\u200bcnn")),
          ("task-right-to-left", lambda d: d.update(task="mn\u202eist")),
          ("task-blank", lambda d: d.update(task="")),
          ("entry-blank", lambda d: d.update(entry="")),
          ("batch-negative", lambda d: d["hparams"].update(batch_size=-64)),
          ("batch-fraction", lambda d: d["hparams"].update(batch_size=6.5)))],
    *[(f"w7p-option-{name}", "refused", (lambda argv: lambda w, run: argv(w))(argv)) for name, argv in (
        ("seed-arabic-indic", lambda w: ["run", "mnist", "--seed", "٣", "--out", w / "r"]),
        ("runs-fullwidth", lambda w: ["run", "mnist", "--runs", "１", "--out", w / "r"]),
        ("max-seconds-underscore", lambda w: ["run", "mnist", "--max-seconds", "1_000", "--out", w / "r"]),
        ("top-arabic-indic", lambda w: ["leaderboard", _entries(w), "--top", "٣"]),
        ("set-evals-per-epoch-zero", lambda w: ["run", "mnist", "--set", "evals_per_epoch=0", "--out", w / "r"]))],
    ("w7p-submission-hours-tiny", "handled", lambda w, run: ["validate", _tsv_row(w, "1\t1e-300\t99.1")]),
    ("w7p-submission-digits", "handled", lambda w, run: ["validate", _tsv_row(w, "١\t٠.٥\t٩٩.١")]),
    *[(f"w7p-log-{name}", "refused", (lambda lines: lambda w, run: [
        "import-log", _log_of(w, lines), "--out", w / "imported"])(lines)) for name, lines in (
        ("second-run-stop-earlier", [("run_start", 1), ("eval_accuracy", 2), ("run_stop", 500), ("run_stop", 3)]),
        ("two-run-stops", [("run_start", 1), ("eval_accuracy", 2), ("run_stop", 3), ("run_stop", 4)]),
        ("eval-after-stop", [("run_start", 1), ("run_stop", 3), ("eval_accuracy", 4)]),
        ("stop-before-start", [("run_stop", 1), ("run_start", 2), ("eval_accuracy", 3)]))],
    ("w7p-log-v05-infinite-time", "refused", lambda w, run: ["analyze", _text(
        w, "v05.log", f":::MLPv0.5.0 mnist 1{'0' * 400} (x.py:3) run_start\n:::MLPv0.5.0 mnist 5 (x.py:4) run_stop\n")]),
    ("w7p-replace-report-page", "refused", lambda w, run: [
        "report", run.parent, "--out", _text(w / "out", "index.html", "MINE").parent]),
    ("w7p-replace-roofline", "refused", lambda w, run: [
        "roofline", _kernels(w), "--out", _text(w / "roof", "roofline.json", "{}").parent]),
    ("w7p-replace-figure", "refused", lambda w, run: [
        "schedule", _scale_table(w / "t.json", [1, 2]), "--accelerators", "2", "--figure", _text(w, "g.png", "x")]),
    ("w7p-scale-superlinear", "refused", lambda w, run: [
        "schedule", _write_json(w / "t.json", {"job": "j", "rows": [{"workers": 1, "tta_s": 100.0},
                                                                    {"workers": 2, "tta_s": 1.0}]}),
        "--accelerators", "2"]),
    ("w7p-kernels-gpu-roof-on-a-cpu", "refused", lambda w, run: [
        "roofline", _kernels(w, lambda d: d["roofs"]["flops"].update(fp32=1e17)), "--out", w / "o"]),
    # Wave 8's old doors (issue 83): one physics whichever command reads a document, a record held to its evidence
    *[(f"w8d-record-{name}", "refused", (lambda change: lambda w, run: ["analyze", _record(run, w, change)])(change))
      for name, change in (
          ("quick-one-sample-in-a-nanosecond", lambda d: d.update(
              subset="quick", time_to_accuracy_s=1e-9, timed_s=1e-9, epochs_to_target=1 / 6000, samples_to_target=1,
              evals=[{**d["evals"][0], "epoch": 1 / 6000, "samples": 1, "timed_s": 1e-9}])),
          ("unofficial-one-sample", lambda d: d.update(
              threshold=99.0, time_to_accuracy_s=0.02, epochs_to_target=1 / 60000, samples_to_target=1,
              evals=[{**d["evals"][0], "epoch": 1 / 60000, "samples": 1, "timed_s": 0.02, "value": 99.5}])),
          ("three-samples", lambda d: d.update(epochs_to_target=3 / 60000, samples_to_target=3, evals=[
              {**d["evals"][0], "epoch": 3 / 60000, "samples": 3}])),
          ("timed-zero", lambda d: d.update(timed_s=0.0)),
          ("wall-zero", lambda d: d.update(wall_s=0.0)),
          ("epoch-without-samples", lambda d: d.update(samples_to_target=None, evals=[{**d["evals"][0], "samples": 0}])),
          ("samples-without-epoch", lambda d: d.update(epochs_to_target=None, evals=[{**d["evals"][0], "epoch": 0}])),
          ("task-cyrillic-i", lambda d: d.update(task="mn\u0456st")),
          ("task-no-break-space", lambda d: d.update(task="mnist\u00a0")),
          ("task-fullwidth", lambda d: d.update(task="\uff4d\uff4e\uff49\uff53\uff54")),
          ("entry-greek-o", lambda d: d.update(entry="small-cnn-\u03bf")),
          ("not-reached-beside-a-pass", lambda d: d.update(status="not_reached", time_to_accuracy_s=None,
                                                            epochs_to_target=None, samples_to_target=None)),
          ("success-not-the-first-pass", lambda d: d.update(time_to_accuracy_s=3.5, timed_s=3.5, epochs_to_target=0.6,
                                                             samples_to_target=36_000, evals=[
              d["evals"][0], {**d["evals"][0], "epoch": 0.6, "samples": 36_000, "timed_s": 3.5}])),
          ("metric-of-another-task", lambda d: d.update(metric="f1")),
          ("samples-per-second-past-a-device", lambda d: d.update(throughput={"samples_per_s": 1e12})),
          ("fraction-of-peak-fifty", lambda d: d.update(throughput={"fraction_of_peak": 50})),
          ("batch-of-a-quadrillion", lambda d: d["hparams"].update(batch_size=10**15)),
          ("communication-negative", lambda d: d.update(distributed={"world_size": 2, "comm_s": -1.0})))],
    ("w8d-record-official-but-argv-quick", "refused", lambda w, run: ["analyze", _copy(run, w, lambda d: d.update(
        official=True, threshold=99.0, evals=[{**d["evals"][0], "value": 99.5}],
        software={"argv": ["dawnbench", "run", "mnist", "--quick"]}))]),
    *[(f"w8d-evidence-{name}", "refused", (lambda change, header, stop: lambda w, run: [
        "analyze", _against_log(run, w, change, header, stop)])(change, header, stop)) for name, change, header, stop in (
        ("official-but-log-says-not", lambda d: d.update(official=True, threshold=99.0, evals=[
            {**d["evals"][0], "value": 99.5}]), {"dawnbench_official": False}, "success"),
        ("target-not-the-log-s", None, {"eval_target": 90.0}, "success"),
        ("split-not-the-log-s", None, {"train_samples": 6000}, "success"),
        ("seed-not-the-log-s", None, {"seed": 7}, "success"),
        ("status-not-the-log-s", None, {}, "aborted"),
        ("evaluation-not-the-log-s", lambda d: d.update(evals=[{**d["evals"][0], "value": 98.5}]), {}, "success"))],
    *[(f"w8d-log-{name}-{command}", "refused" if command != "check-log" else "handled", (
        lambda lines, command: lambda w, run: [command, _mlperf_run(w, lines)] + (
            ["--out", w / "imported"] if command == "import-log" else []))(lines, command))
      for name, lines in (
          ("never-reached", [("run_start", 0, None, {}), ("eval_accuracy", 5, 10.0, {"epoch_num": 1}),
                             ("run_stop", 6, None, {"status": "success"})]),
          ("no-evaluation", [("run_start", 0, None, {}), ("run_stop", 6, None, {"status": "success"})]),
          ("accuracy-150", [("run_start", 0, None, {}), ("eval_accuracy", 5, 150.0, {"epoch_num": 1}),
                            ("run_stop", 6, None, {"status": "success"})]),
          ("accuracy-negative", [("run_start", 0, None, {}), ("eval_accuracy", 5, -5.0, {"epoch_num": 1}),
                                 ("run_stop", 6, None, {"status": "success"})]),
          ("success-in-no-time", [("run_start", 5, None, {}), ("eval_accuracy", 5, 99.5, {"epoch_num": 1}),
                                  ("run_stop", 5, None, {"status": "success"})]),
          ("not-reached-beside-a-pass", [("run_start", 0, None, {}), ("eval_accuracy", 5, 99.5, {"epoch_num": 1}),
                                         ("run_stop", 6, None, {"status": "not_reached"})]),
          ("fractional-epoch-start", [("run_start", 0, None, {}), ("epoch_start", 1, None, {"epoch_num": 0.5}),
                                      ("eval_accuracy", 5, 99.5, {"epoch_num": 1}),
                                      ("run_stop", 6, None, {"status": "success"})]),
          ("epoch-of-its-own-split", [("run_start", 0, None, {}), ("train_samples", 0, 6000, {}),
                                      ("eval_accuracy", 5, 99.5, {"epoch_num": 1, "samples_count": 60_000}),
                                      ("run_stop", 6, None, {"status": "success"})]))
      for command in ("analyze", "import-log", "check-log")],
    ("w8d-log-v05-imagenet-in-a-second-at-1pct", "refused", lambda w, run: ["analyze", _text(
        w / "v05", "result_0.txt", ":::MLPv0.5.0 resnet 1000.0 (x.py:1) run_start\n"
        ":::MLPv0.5.0 resnet 1000.1 (x.py:2) eval_target: 0.749\n"
        ":::MLPv0.5.0 resnet 1000.5 (x.py:3) eval_accuracy: {\"epoch\": 1, \"value\": 0.01}\n"
        ":::MLPv0.5.0 resnet 1001.0 (x.py:4) run_stop: {\"success\": true}\n").parent]),
    *[(f"w8d-submission-{name}", "handled", (lambda row: lambda w, run: ["validate", _tsv_row(w, row)])(row))
      for name, row in (("at-target-at-epoch-0", "0\t0.00001\t99.5"), ("epochs-backwards", "2\t0.1\t90\n1\t0.2\t99.5"),
                        ("a-billionth-epoch", "1e-9\t0.1\t99.5"), ("a-million-epochs-a-second", "1e6\t0.0001\t99.5"))],
    *[(f"w8d-inference-cost-{name}", "handled", (lambda cost: lambda w, run: ["validate", _inference(w, cost)])(cost))
      for name, cost in (("femto-dollar", 1e-15), ("millions-an-hour", 1e3))],
    ("w8d-submission-flagged-a-stranger", "handled", lambda w, run: ["validate", _exported(w, {"flagged": [
        {"seed": 99, "interference": "other processes took 1 CPU-s"}]})]),
    ("w8d-submission-dated-2999", "handled", lambda w, run: ["validate", _exported(w, {}, timestamp="2999-01-01")]),
    ("w8d-classes-row-past-the-roof", "refused", lambda w, run: ["classes", _profile(w, OP.format(calls=2, time=1e-6))]),
    ("w8d-classes-work-in-no-time", "refused", lambda w, run: ["classes", _profile(w, OP.replace(
        "9.9e+07", "1e+12").format(calls=2, time=0))]),
]


def _record(run: Path, w: Path, change: Callable[[dict], None]) -> Path:
    """A copy of the run folder whose record is ``change``d and whose events.log is gone: the record's own physics
    decides (its log would refuse most of these first, for disagreeing)."""
    folder = _copy(run, w, change)
    (folder / "events.log").unlink()
    return folder


def _against_log(run: Path, w: Path, change: Callable[[dict], None] | None, header: dict, stop: str) -> Path:
    """A copy of the run folder, its record ``change``d, its events.log written again from the record — its
    evaluations as the record has them — with ``header`` keys stated before run_start and run_stop saying ``stop``."""
    folder = _copy(run, w, change)
    doc = json.loads((folder / "result.json").read_text())
    if change is not None and "evals" not in header:      # the evaluation the case changed stays the log's as it was
        doc_log = json.loads((run / "result.json").read_text())
    else:
        doc_log = doc
    events = [{"key": k, "value": v, "time_ms": 1.0, "metadata": {}} for k, v in header.items()]
    events.append({"key": "run_start", "value": None, "time_ms": 1000.0, "metadata": {}})
    events += [{"key": "eval_accuracy", "value": e["value"], "time_ms": 1000 + 1000 * e["timed_s"],
                "metadata": {"epoch_num": e["epoch"], "samples_count": e["samples"]}} for e in doc_log["evals"]]
    events.append({"key": "run_stop", "value": None, "time_ms": 9000.0, "metadata": {"status": stop}})
    (folder / "events.log").write_text("".join(f":::MLLOG {json.dumps({'namespace': '', **e})}\n" for e in events))
    return folder


def _mlperf_run(w: Path, lines: list[tuple[str, float, object, dict]]) -> Path:
    """An MLPerf log of MNIST (its benchmark named) whose records are ``lines``: (key, seconds, value, metadata)."""
    records = [{"key": "submission_benchmark", "value": "mnist", "time_ms": 0, "metadata": {}}]
    records += [{"key": key, "value": value, "time_ms": t * 1000, "metadata": meta} for key, t, value, meta in lines]
    return _text(w / "logs", "result_0.txt", "".join(f":::MLLOG {json.dumps(r)}\n" for r in records))


def _inference(w: Path, cost: float) -> Path:
    """A submissions folder with one ImageNet inference entry answering in 1,000 ms at ``cost`` USD an item."""
    _write_json(w / "entries" / "ImageNet" / "inference" / "x.json", {
        "version": "v1.0", "author": "a", "authorEmail": "a@b.c", "framework": "PyTorch", "model": "m",
        "hardware": "h", "latency": 1000.0, "top5Accuracy": 93.5, "cost": cost, "timestamp": "2026-11-01"})
    return w / "entries"


def _exported(w: Path, misc: dict, timestamp: str = "2026-11-01") -> Path:
    """A submissions folder with one MNIST entry as `dawnbench export` writes it (``misc.dawnbench`` updated)."""
    folder = _tsv_row(w, "1\t0.01\t99.5")
    doc = json.loads((folder / "MNIST" / "train" / "x.json").read_text())
    doc.update(timestamp=timestamp, misc={"dawnbench": {"task": "mnist", "runs": 1, "successes": 1,
                                                        "success_fraction": 1.0, "tta_median_s": 36.0, "seeds": [0],
                                                        "official": True, **misc}})
    (folder / "MNIST" / "train" / "x.json").write_text(json.dumps(doc))
    return folder


def _tsv_row(w: Path, row: str) -> Path:
    """A submissions folder whose one MNIST entry's TSV is ``row`` (tab-separated: epoch, hours, top-1)."""
    folder = w / "entries" / "MNIST" / "train"
    _write_json(folder / "x.json", {"version": "v1.0", "author": "a", "authorEmail": "a@b.c", "framework": "PyTorch",
                                    "model": "m", "hardware": "h", "costPerHour": 3.0, "timestamp": "2026-11-01"})
    (folder / "x.tsv").write_text(f"epoch\thours\ttop1Accuracy\n{row}\n")
    return w / "entries"


def _unnamed_log(w: Path, value: object, epoch: object, seconds: float) -> Path:
    """An MLPerf log naming no benchmark, one evaluation of ``value`` at ``epoch``, ``seconds`` after its start."""
    records = [{"key": "run_start", "value": None, "time_ms": 0, "metadata": {}},
               {"key": "eval_accuracy", "value": value, "time_ms": seconds * 1000, "metadata": {"epoch_num": epoch}},
               {"key": "run_stop", "value": None, "time_ms": seconds * 1000 + 1, "metadata": {"status": "success"}}]
    return _text(w / "logs" / "g", "result_0.txt", "".join(f":::MLLOG {json.dumps(r)}\n" for r in records)).parent


def _log_of(w: Path, lines: list[tuple[str, float]]) -> Path:
    """An MLPerf log of MNIST whose records are ``lines`` (key, seconds), in the file's order."""
    records = [{"key": "submission_benchmark", "value": "mnist", "time_ms": 0, "metadata": {}}]
    records += [{"key": key, "value": 99.5 if key == "eval_accuracy" else None, "time_ms": t * 1000,
                 "metadata": {"epoch_num": 1} if key == "eval_accuracy" else {"status": "success"}}
                for key, t in lines]
    return _text(w, "result_0.txt", "".join(f":::MLLOG {json.dumps(r)}\n" for r in records))
CONV = "aten::convolution\t64x16x14x14, 32x16x3x3\tfloat32\tfp32\t2\t0.2\t1\t1e+08\t1e+07\t10\t1e+09\t1e+08\t0.1\t\t{args}\n"


def _copies(run: Path, w: Path, n: int, **fields: object) -> Path:
    """``n`` copies of the run folder under ``w/runs`` (the same seed each), their records ``fields`` changed."""
    for i in range(n):
        dest = w / "runs" / f"copy{i}"
        if not dest.exists():
            shutil.copytree(run, dest)
            doc = json.loads((dest / "result.json").read_text())
            doc.update(fields)
            (dest / "result.json").write_text(json.dumps(doc))
    return w / "runs"


def _minimal(w: Path, n: int) -> Path:
    """``n`` records with only the fields a record must have (task, entry, threshold, status)."""
    for i in range(n):
        _write_json(w / "minimal" / f"r{i}" / "result.json", {"task": "mnist", "entry": "small-cnn",
                                                               "threshold": 99.0, "status": "not_reached"})
    return w / "minimal"


def _run_with_linked_profile(w: Path, run: Path) -> Path:
    """A copy of the run whose ``profile/`` is a link to a profile folder outside it."""
    outside = _profile(w / "elsewhere")
    dest = _copy(run, w)
    if not (dest / "profile").exists():
        (dest / "profile").symlink_to(outside, target_is_directory=True)
    return dest

# Where the wave-4 cases came from (docs/results/hostile.md counts them): the issue's list, and the fresh
# ones tried beside it against the same commands. tests/test_bad_input.py checks every id is a case.
ISSUE_40 = (
    *[f"{c}-kernels-{n}" for c in ("roofline", "similarity") for n in (
        "roofs-string", "ridge-list", "resources-string", "params-string", "params-list", "precision-object",
        "version-999", "rows-million")],
    "roofline-kernels-truncated", "roofline-kernels-nan", "roofline-kernels-median-negative",
    "roofline-kernels-median-1e308",
    *[f"classes-ops-{n}" for n in ("random-bytes", "empty", "header-only", "time-nan", "time-negative",
                                   "three-columns", "calls-1e300")],
    "kernels-compare-itself", "kernels-compare-empty", "kernels-compare-median-string", "kernels-max-seconds-tiny",
    "kernels-cap-huge", "kernels-allreduce-nproc-zero",
)
FRESH_40 = (
    "roofline-kernels-median-string", "similarity-kernels-median-string", "roofline-kernels-above-roof",
    "roofline-kernels-flops-negative",
    *[f"classes-ops-{n}" for n in ("calls-fraction", "no-time", "not-a-number", "header-reordered", "extra-column",
                                   "utf16", "calls-zero", "time-inf", "link")],
    "classes-second-damaged", "kernels-compare-version", "kernels-suite-empty", "kernels-precision-empty",
    "kernels-cap-nan", "kernels-cap-inf", "kernels-max-seconds-negative", "kernels-compare-trailing-comma",
    "kernels-compare-folder-without", "kernels-compare-link-out", "kernels-compare-fifo", "kernels-compare-dev-zero",
    "kernels-compare-list", "kernels-out-dev-null", "kernels-allreduce-nproc-huge", "kernels-device-cuda-absent",
    *[f"roofline-{n}" for n in ("row-number", "suite-unknown", "pass-number", "roof-negative", "bandwidth-zero",
                                "resources-suite-list", "rows-missing", "kind-other", "kernels-list", "kernels-link",
                                "empty-folder", "out-file", "params-zero")],
    *[f"roofline-summary-{n}" for n in ("window-string", "rate-string", "step-list", "above-roof", "share-five",
                                        "time-negative")],
    "similarity-pick-zero", "similarity-run-throughput-list", "similarity-run-negative-cpu",
    "similarity-kernel-problems-one-row", "run-slurm-cpus-zero", "run-slurm-array-zero", "run-slurm-sbatch-no-value",
    "jobs-mix-empty", "jobs-mix-unknown-entry", "machine-cuda-absent",
)
# Wave 7's: the census and the datasheets (SPEC §24), tried when they landed.
WAVE_7 = tuple(case_id for case_id, _, _ in CASES if case_id.startswith("w7-"))  # not w7p-
# Wave 5's: explain and predict (SPEC §23), tried when they landed.
WAVE_5 = tuple(case_id for case_id, _, _ in CASES if case_id.startswith(("predict-", "explain-")))
# Wave 7's physics: values in range and impossible together, numbers and names as text, nothing replaced (issue 68).
WAVE_7_PHYSICS = tuple(case_id for case_id, _, _ in CASES if case_id.startswith("w7p-"))
# Wave 8's old doors: one physics whichever command reads a document (issue 83).
OLD_DOORS = tuple(case_id for case_id, _, _ in CASES if case_id.startswith("w8d-"))
# Wave 6's: the examples of the issue on inputs, as it found them on every command that reads documents.
WAVE_6 = tuple(case_id for case_id, _, _ in CASES if case_id.startswith("w6-"))
