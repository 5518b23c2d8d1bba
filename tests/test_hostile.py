"""Hostile and broken input (issue 20): a folder handed to dawnbench is data.

It never makes dawnbench import code, follow a link out, hang on a FIFO, delete a file it
did not write, or die with a traceback; a full disk still leaves the run's final status.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import threading
import time
from pathlib import Path

import pytest
import torch

from dawnbench import io as dio
from dawnbench.analysis.schedule import schedule
from dawnbench.data.formats import read_idx
from dawnbench.entries import Entry, Progress
from dawnbench.errors import DataError
from dawnbench.harness.observer import RunObserver
from dawnbench.harness.options import RunOptions, prepare
from dawnbench.harness.runner import run_seed
from dawnbench.leaderboard.site import entry_page
from dawnbench.profiling.resources import ResourceMonitor
from dawnbench.records.mllog import EventLog

from helpers import main_in_process, write_run

SECRET = "SECRET-do-not-publish-4242"
GOOD_TSV = "epoch\thours\ttop1Accuracy\n1\t0.5\t90.0\n2\t1.0\t94.5\n"
GOOD = {"version": "v1.0", "author": "a", "authorEmail": "a@b.c", "framework": "PyTorch", "model": "m",
        "hardware": "h", "timestamp": "2018-04-20"}


run_cli = main_in_process


def everything_under(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink())


@pytest.fixture
def secret(tmp_path) -> Path:
    path = tmp_path / "outside" / "secret.json"
    path.parent.mkdir()
    path.write_text(json.dumps({**GOOD, "author": SECRET, "model": SECRET, "latency": 1.0, "top1Accuracy": 99.0}))
    return path


@pytest.fixture
def entries(tmp_path) -> Path:
    train = tmp_path / "entries" / "CIFAR10" / "train"
    train.mkdir(parents=True)
    (train / "good.json").write_text(json.dumps(GOOD))
    (train / "good.tsv").write_text(GOOD_TSV)
    return tmp_path / "entries"


# --- a run folder never runs code --------------------------------------------------------

@pytest.fixture
def evil_run(tmp_path) -> tuple[Path, Path]:
    """A run record (and model file) naming an entry file that writes a marker when imported."""
    marker = tmp_path / "code-ran"
    evil = tmp_path / "evil.py"
    evil.write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    run = tmp_path / "run"
    run.mkdir()
    (run / "result.json").write_text(json.dumps({
        "task": "mnist", "entry": "evil", "threshold": 99.0, "status": "not_reached", "seed": 0, "evals": [],
        "software": {"entry_file": str(evil)}}))
    torch.save({"format": 1, "task": "mnist", "entry": "evil", "hparams": {}, "epoch": 1.0, "value": 99.5,
                "state": {}}, run / "model.pt")
    return run, marker


@pytest.mark.parametrize("command", [["infer"], ["profile"], ["generalize", "--out", "GEN"]])
def test_a_run_folder_never_makes_dawnbench_import_code(capsys, tmp_path, evil_run, command):
    run, marker = evil_run
    args = [a if a != "GEN" else tmp_path / "gen" for a in command]
    code, _, err = run_cli(capsys, args[0], run, *args[1:])
    assert code == 2 and not marker.exists()
    assert "not built in" in err and "--trust-entry" in err
    code, _, _ = run_cli(capsys, args[0], run, *args[1:], "--trust-entry")
    assert marker.exists()  # the flag is the one way in: the user said so


# --- links, FIFOs, devices: regular files only ---------------------------------------------

def test_validate_and_the_site_skip_links_fifos_and_devices(capsys, tmp_path, entries, secret):
    train = entries / "CIFAR10" / "train"
    (entries / "CIFAR10" / "inference").mkdir()
    (entries / "CIFAR10" / "inference" / "leak.json").symlink_to(secret)
    (train / "t.json").write_text(json.dumps(GOOD))
    (train / "t.tsv").symlink_to(secret)
    (train / "zero.json").symlink_to("/dev/zero")
    os.mkfifo(train / "x.json")
    start = time.perf_counter()
    code, out, err = run_cli(capsys, "validate", entries, "--json")
    assert time.perf_counter() - start < 30 and code == 1 and SECRET not in out + err
    problems = {p["file"]: p for p in json.loads(out)["problems"]}
    assert "a symbolic link" in problems["CIFAR10/train/t.tsv"]["message"]
    assert "not a regular file" in problems["CIFAR10/train/x.json"]["message"]
    assert "symbolic link" in problems["CIFAR10/inference/leak.json"]["message"]
    code, out, err = run_cli(capsys, "leaderboard", entries, "--html", tmp_path / "site")
    assert code == 0 and SECRET not in out + err
    assert SECRET.encode() not in everything_under(tmp_path / "site")


def test_report_never_embeds_a_linked_figure(capsys, tmp_path, secret):
    profile = tmp_path / "runs" / "profile"
    profile.mkdir(parents=True)
    (profile / "summary.json").write_text(json.dumps({
        "window_s": 1.0, "task": "mnist", "entry": "small-cnn", "precision": "fp32", "steps": 2,
        "step": {"flops_per_s": 1e9}, "memory_bound_share": 0.5, "samples_per_s": 100.0}))
    (profile / "roofline.png").symlink_to(secret)
    (tmp_path / "runs" / "log.txt").write_text(":::MLLOG " + json.dumps(
        {"key": "run_start", "time_ms": 0, "metadata": {}}) + "\n:::MLLOG " + json.dumps(
        {"key": "eval_accuracy", "time_ms": 900, "value": 0.9, "metadata": {"epoch_num": 1}}) + "\n:::MLLOG " +
        json.dumps({"key": "run_stop", "time_ms": 1000, "metadata": {"status": "success"}}) + "\n")
    code, _, _ = run_cli(capsys, "report", tmp_path / "runs", "--out", tmp_path / "report")
    html = (tmp_path / "report" / "index.html").read_text()
    assert code == 0 and "roofline.png: a symbolic link" in html
    assert SECRET not in html and "U0VDUkVU" not in html


# --- a site writes into its own folder only ------------------------------------------------

def test_the_site_deletes_nothing_it_did_not_write(capsys, tmp_path, entries):
    site = tmp_path / "site"
    (site / "entries").mkdir(parents=True)
    mine = site / "entries" / "my_entry.py"
    mine.write_text("# the user's\n")
    code, _, err = run_cli(capsys, "leaderboard", entries, "--html", site)
    assert code == 2 and "not empty" in err and mine.exists()
    fresh = tmp_path / "fresh"
    assert run_cli(capsys, "leaderboard", entries, "--html", fresh)[0] == 0
    manifest = json.loads((fresh / ".dawnbench-site.json").read_text())
    (fresh / "notes.txt").write_text("the user's own notes\n")
    (entries / "CIFAR10" / "train" / "good.json").rename(entries / "CIFAR10" / "train" / "renamed.json")
    (entries / "CIFAR10" / "train" / "good.tsv").rename(entries / "CIFAR10" / "train" / "renamed.tsv")
    assert run_cli(capsys, "leaderboard", entries, "--html", fresh)[0] == 0  # a rebuild
    assert (fresh / "notes.txt").exists()
    stale = [f for f in manifest["files"] if "good" in f]
    assert stale and not any((fresh / f).exists() for f in stale)
    assert run_cli(capsys, "leaderboard", entries, "--html", tmp_path / "outside" / "notes.txt")[0] in (0, 2)


def test_every_entry_gets_a_page_of_its_own_with_a_bounded_name():
    names = ["CIFAR10/train/a b.json", "CIFAR10/train/a_b.json", "CIFAR10/train/a&b.json", "x" * 300 + ".json"]
    pages = [entry_page(n) for n in names]
    assert len(set(pages)) == 4 and max(len(p) for p in pages) <= 100
    assert all(p.startswith("entries/") and "/" not in p.removeprefix("entries/") for p in pages)


# --- impossible values ---------------------------------------------------------------------

@pytest.mark.parametrize("rows, message", [
    (["1\t-5\t94.5"], "hours -5 is impossible"),
    (["1\t0.5\tinf"], "top1Accuracy 'inf' is not a finite number"),
    (["1\t0.5\t500"], "top1Accuracy 500 is impossible"),
    (["1\t1e308\t94.5"], "hours 1e+308 is impossible"),
    (["1\t0\t94.5"], "no run trains that many in that time"),     # an epoch in no time: before reaching the target
    (["1\tnan\t94.5"], "hours 'nan' is not a finite number"),
])
def test_impossible_values_are_errors_with_their_line(capsys, entries, rows, message):
    train = entries / "CIFAR10" / "train"
    (train / "bad.json").write_text(json.dumps(GOOD))
    (train / "bad.tsv").write_text("epoch\thours\ttop1Accuracy\n" + "\n".join(rows) + "\n")
    code, out, _ = run_cli(capsys, "validate", entries, "--json")
    errors = [p for p in json.loads(out)["problems"] if p["file"] == "CIFAR10/train/bad.tsv"]
    assert code == 1 and errors[0]["line"] == 2 and message in errors[0]["message"]


def test_the_board_and_site_survive_every_value_that_passed(capsys, tmp_path, entries):
    inference = entries / "CIFAR10" / "inference"
    inference.mkdir()
    (inference / "fast_inference.json").write_text(json.dumps({**GOOD, "latency": 1e-9, "cost": 0.0,
                                                                "top1Accuracy": 94.5}))
    (inference / "slow_inference.json").write_text(json.dumps({**GOOD, "latency": 3.6e6, "top1Accuracy": 100}))
    (entries / "CIFAR10" / "train" / "long.json").write_text(json.dumps({**GOOD, "costPerHour": 1e5}))
    (entries / "CIFAR10" / "train" / "long.tsv").write_text("epoch\thours\ttop1Accuracy\n1\t10000\t94\n")
    code, out, _ = run_cli(capsys, "leaderboard", entries, "--html", tmp_path / "site", "--json")
    board = json.loads(out)["tasks"]["cifar10"]
    assert code == 0 and board["training_time"][-1]["display"] == "10000:00:00"
    assert (tmp_path / "site" / "task-cifar10.html").is_file()


# --- terminal output: user text is never markup ---------------------------------------------

def test_markup_in_paths_is_printed_as_text(capsys, tmp_path):
    for name in ("[/x]", "[red]x", "[bold]"):
        code, _, err = run_cli(capsys, "analyze", tmp_path / name)
        assert code == 2 and f"{name}: no such file or directory" in " ".join(err.split())


def test_terminal_escapes_in_a_record_or_a_path_are_shown_not_acted_on(capsys, tmp_path):
    """ESC [ 2 J clears the screen, OSC 0 retitles the window, C1's CSI starts a sequence on some terminals: a
    hand-edited name holding them is refused (a name prints as it is), and a folder's name holding them is
    printed with them written out."""
    write_run(tmp_path / "runs" / "run0", 0, 10.0, 1.0, entry="small\x1b[2Jcnn\x1b]0;pwned\x07\x9b")
    code, out, err = run_cli(capsys, "analyze", tmp_path / "runs")
    assert code == 2 and "field 'entry': holds U+001B" in " ".join(err.split())
    code, _, err = run_cli(capsys, "analyze", tmp_path / "gone\x1b[2J")
    assert code == 2 and "gone\\x1b[2J: no such file" in " ".join(err.split())
    assert not any(c in out + err for c in "\x1b\x07\x9b")


def test_what_argparse_quotes_and_a_newline_in_a_name_stay_one_written_out_line(capsys, tmp_path):
    code, _, err = run_cli(capsys, "analyze", tmp_path, "\x1b[2J\x9b")       # argparse's own message
    assert code == 2 and "\\x1b[2J\\x9b" in err and "\x1b" not in err and err.count("\n") == 1
    code, _, err = run_cli(capsys, "analyze", "nope\nerror: all fine")     # a second line that looked like an error
    assert code == 2 and "nope\\nerror: all fine" in err and err.count("\n") == 1


def test_a_folder_name_that_is_not_utf8_is_reported_written_out(capsys, tmp_path):
    folder = tmp_path / os.fsdecode(b"RAW\x9b31m\xff")
    for seed in range(3):
        write_run(folder / f"run{seed}", seed, 10.0 + seed, 1.0)
    code, out, _ = run_cli(capsys, "report", folder, "--out", tmp_path / "report")
    assert code == 0 and "\x9b" not in out and "\udc9b" not in out
    assert "\\udc9b" in (tmp_path / "report" / "index.html").read_text()


def test_a_tracked_scripts_lines_write_its_folder_out(capsys, tmp_path):
    import dawnbench

    with dawnbench.track("mnist", out=tmp_path / "TR\x1b[2J") as run:
        run.evaluate(epoch=1, samples=60000, accuracy=50.0)
    err = capsys.readouterr().err
    assert "TR\\x1b[2J" in err and "\x1b" not in err


def test_a_name_with_terminal_escapes_is_drawn_written_out_in_a_figure(tmp_path, recwarn):
    """Drawn as it is, ESC is a missing glyph, and matplotlib's warning printed it to the terminal."""
    from matplotlib.text import Text

    from dawnbench.reports.plots import figure

    with figure(tmp_path / "f.png") as (fig, ax):
        ax.set_title("small\x1b[2Jcnn")
        ax.set_yticks([0, 1], ["a\x9b", "b\x7f"])
    assert "small\\x1b[2Jcnn" in [t.get_text() for t in fig.findobj(Text)]
    assert [ax.yaxis.get_major_formatter()(y, i) for i, y in enumerate((0, 1))] == ["a\\x9b", "b\\x7f"]
    assert not [w for w in recwarn if "missing from font" in str(w.message)]


def test_argparse_errors_are_one_paragraph(capsys):
    code, _, err = run_cli(capsys, "run", "--seed", "x")
    assert code == 2 and err.count("\n") == 1 and "invalid integer 'x'" in err and "dawnbench run --help" in err


@pytest.mark.parametrize("option, value", [("--seed", "٣"), ("--runs", "１"), ("--max-seconds", "1_000"),
                                           ("--max-epochs", "١.٥"), ("--seed", "3.0")])
def test_numbers_on_the_command_line_are_ascii_digits(capsys, option, value):
    """Python's int() reads Arabic-Indic and fullwidth digits and underscores; no other tool reads them back."""
    code, _, err = run_cli(capsys, "run", "mnist", option, value)
    assert code == 2 and f"argument {option}: invalid" in err and "ASCII digits" in err and err.count("\n") == 1


# --- unusual JSON -----------------------------------------------------------------------------

@pytest.mark.parametrize("payload", ["[" * 100_000 + "]" * 100_000, '{"task": 1' + "0" * 5000 + "}",
                                     '{"task": "mnist", "x": NaN}', '{"a": ' * 70 + "1" + "}" * 70])
def test_hostile_json_is_a_located_problem(capsys, tmp_path, payload):
    run = tmp_path / "runs" / "run0"
    run.mkdir(parents=True)
    (run / "result.json").write_text(payload)
    code, out, err = run_cli(capsys, "analyze", tmp_path / "runs", "--json")     # nothing else to analyse: an error
    assert code == 2 and "nothing could be analysed" in err and "result.json" in err and out == ""
    for args in (["export", run, "--author", "a", "--email", "b", "--out", tmp_path / "sub"],
                 ["infer", run], ["profile", run], ["similarity", tmp_path / "runs", "--out", tmp_path / "s"]):
        assert run_cli(capsys, *args)[0] == 2
    (tmp_path / "t.json").write_text(payload)
    assert run_cli(capsys, "schedule", tmp_path / "t.json", "--accelerators", "2",
                   "--figure", tmp_path / "g.png")[0] == 2


# --- bounded work -------------------------------------------------------------------------------

def test_a_large_job_mix_falls_back_to_a_heuristic(tmp_path):
    paths = []
    for i in range(12):
        path = tmp_path / f"job{i}.json"
        path.write_text(json.dumps({"job": f"j{i}", "rows": [{"workers": k, "tta_s": (100 + 7 * i) / k ** 0.8}
                                                             for k in range(1, 9)]}))
        paths.append(path)
    start = time.perf_counter()
    doc = schedule(paths, 8)
    assert time.perf_counter() - start < 60 and doc["search"] == "heuristic"
    assert doc["lower_bound_s"] - 1e-6 <= doc["best"]["makespan_s"] <= doc["naive"]["makespan_s"] + 1e-6


def test_an_idx_header_promising_too_much_is_refused_before_inflating(tmp_path):
    import gzip

    path = tmp_path / "train-images-idx3-ubyte.gz"
    with gzip.open(path, "wb") as f:
        f.write(bytes([0, 0, 8, 3]) + (10**6).to_bytes(4, "big") + (100).to_bytes(4, "big") * 2 + b"\0" * 1000)
    with pytest.raises(DataError, match="more than the 4 GiB"):
        read_idx(path)


class Spinning(Entry):
    """Never yields: its loop does not advance (what a negative batch size did to small-cnn)."""

    name = "spinning"
    hparams = {"spin_in_warmup": False, "drops": 0}
    warmup_steps = 1

    def train(self, ctx):
        model = torch.nn.Linear(16, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        drops = self.hp["drops"]
        while True:
            try:
                time.sleep(0.01)
            except BaseException:  # what a finaliser does to an exception raised inside it
                if not drops:
                    raise
                drops -= 1
            if not (ctx.synthetic and not self.hp["spin_in_warmup"]):
                continue
            opt.step()
        yield Progress(epoch=1.0, samples=1)

    def predict(self, inputs):
        return torch.zeros(len(inputs), dtype=torch.long)


def test_budgets_hold_even_when_the_entry_never_yields(tiny_task, tmp_path):
    start = time.perf_counter()
    options = RunOptions(task=tiny_task, entry=Spinning, max_seconds=0.5)
    result = run_seed(options, prepare(options), seed=0, run_dir=tmp_path / "a")
    assert result.status == "not_reached" and "max_seconds=0.5" in result.error
    assert 0.5 <= result.timed_s < 5
    options = RunOptions(task=tiny_task, entry=Spinning, max_init_seconds=0.5, overrides={"spin_in_warmup": True})
    result = run_seed(options, prepare(options), seed=0, run_dir=tmp_path / "b")
    assert result.status == "timeout" and "max_init_seconds" in result.error
    options = RunOptions(task=tiny_task, entry=Spinning, max_seconds=0.5, overrides={"drops": 3})
    result = run_seed(options, prepare(options), seed=0, run_dir=tmp_path / "c")  # raised again until it lands
    assert result.status == "not_reached" and "max_seconds=0.5" in result.error and result.timed_s < 5
    assert result.evals[-1].stopped_by == "max_seconds"
    assert time.perf_counter() - start < 30


@pytest.mark.parametrize("setting, message", [
    ("batch_size=-5", "--set batch_size=-5: must be an integer from 1"),
    ("batch_size=64.5", "--set batch_size=64.5: entry 'small-cnn' expects an integer"),
    ('lr="fast"', "--set lr=\"fast\": entry 'small-cnn' expects a number"),
])
def test_hyperparameters_are_checked_before_anything_runs(capsys, tmp_path, setting, message):
    code, _, err = run_cli(capsys, "run", "mnist", "--set", setting, "--out", tmp_path)
    assert code == 2 and message in " ".join(err.split()) and not any(tmp_path.iterdir())


# --- what commands write ----------------------------------------------------------------------

def test_export_takes_the_log_of_the_folder_it_is_given(tmp_path):
    from dawnbench.submissions import export_training

    original = tmp_path / "original"
    write_run(original, 0, 10.0, 1.0)
    hours = 10.0 / 3600      # the record's time to accuracy: what validate checks the TSV against
    (original / "epochs.tsv").write_text(f"epoch\thours\ttop1Accuracy\n1\t{hours}\t99.1\n")
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "result.json").write_bytes((original / "result.json").read_bytes())  # names `original` as run_dir
    (copy / "epochs.tsv").write_text(f"epoch\thours\ttop1Accuracy\n1\t{hours}\t99.5\n")
    _, tsv = export_training([copy], tmp_path / "sub", "a", "b@c")
    assert "99.5" in tsv.read_text()


def test_written_files_have_the_usual_mode(tmp_path):
    umask = os.umask(0o022)
    try:
        dio.atomic_write_text(tmp_path / "a.txt", "x")
        dio.atomic_write_with(tmp_path / "b.pt", lambda f: torch.save({"x": 1}, f))
    finally:
        os.umask(umask)
    for name in ("a.txt", "b.pt"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o644


def test_two_commands_updating_one_record_keep_both_changes(tmp_path):
    record = tmp_path / "result.json"
    record.write_text(json.dumps({"task": "mnist"}))

    def writer(key: str) -> None:
        for i in range(40):
            dio.update_json(record, lambda doc, i=i: doc.__setitem__(f"{key}{i}", i))

    threads = [threading.Thread(target=writer, args=(k,)) for k in ("inference", "generalization")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(json.loads(record.read_text())) == 81


def test_the_monitor_keeps_running_sums_not_rows(tmp_path):
    with ResourceMonitor(tmp_path / "resources.tsv", interval=0.02) as monitor:
        time.sleep(0.3)
    summary = monitor.summary()
    assert not hasattr(monitor, "rows") and summary["samples"] >= 5
    assert len((tmp_path / "resources.tsv").read_text().splitlines()) == summary["samples"] + 1


# --- a full disk ---------------------------------------------------------------------------------

def test_an_event_line_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    log = EventLog(tmp_path / "events.log")
    log.event("first", 1)
    before = (tmp_path / "events.log").read_bytes()
    real_write = os.write

    def half_then_full(fd: int, data: bytes) -> int:
        if len(data) > 8:
            real_write(fd, data[:len(data) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(OSError, match="No space"):
        log.event("second", 2)
    monkeypatch.setattr(os, "write", real_write)
    log.close()
    assert (tmp_path / "events.log").read_bytes() == before and before.endswith(b"\n")


def test_a_failed_checkpoint_ends_the_run_aborted_with_its_reason(tiny_task, tmp_path, monkeypatch):
    from dawnbench.entries import saved

    from tiny_model_entry import TinyLinear

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(saved, "save", full)
    options = RunOptions(task=tiny_task, entry=TinyLinear)
    result = run_seed(options, prepare(options), seed=0, run_dir=tmp_path / "run")
    record = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result.status == record["status"] == "aborted" and record["time_to_accuracy_s"] is None
    assert "saving the model" in record["error"] and "No space left" in record["error"]
    assert "had reached its target" in record["error"] and record["evals"]
    lines = (tmp_path / "run" / "events.log").read_text().splitlines()
    assert '"key": "run_stop"' in lines[-1] and '"status": "aborted"' in lines[-1]


class FillTheDisk(RunObserver):
    """Once training starts (the run's files and its reserve exist), fill the disk to the last byte."""

    def __init__(self, mount: Path):
        self.mount, self.filled = mount, False

    def training_started(self, probe) -> None:
        fd = os.open(self.mount / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while True:
                os.write(fd, b"\0" * 4096)
        except OSError:
            self.filled = True
        finally:
            os.close(fd)


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_a_full_disk_still_records_the_final_status(tiny_task, tmp_path):
    import subprocess

    from tiny_model_entry import TinyLinear

    mount = tmp_path / "small"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1600k", "tmpfs", str(mount)]).returncode != 0:
        pytest.skip("tmpfs could not be mounted here")
    try:
        options = RunOptions(task=tiny_task, entry=TinyLinear)
        filler = FillTheDisk(mount)
        result = run_seed(options, prepare(options), seed=0, run_dir=mount / "run", observer=filler)
        record = json.loads((mount / "run" / "result.json").read_text())
        assert filler.filled and record["status"] == result.status == "aborted"
        assert "No space left" in record["error"]
        events = (mount / "run" / "events.log").read_bytes()
        assert events.endswith(b"\n") and b'"key": "run_stop"' in events.splitlines()[-1]
        for line in events.splitlines():
            json.loads(line.split(b":::MLLOG ", 1)[1])
    finally:
        subprocess.run(["umount", "-l", str(mount)])


def test_a_key_given_twice_in_one_object_is_refused_naming_the_key_and_its_second_line(tmp_path):
    """JSON keeps the last of a repeated key, so a file could say two things and be read as the second: every
    file dawnbench is handed is refused instead (a submission names each repeated key in its own list)."""
    from dawnbench.errors import FileError
    from dawnbench.io import read_json

    path = tmp_path / "summary.json"
    path.write_text('{"batch_size": 64,\n "census": {"batch": 64},\n "batch_size": 4096}')
    with pytest.raises(FileError, match=r"summary.json:3: field 'batch_size' is given more than once in one object"):
        read_json(path, "profile")
    path.write_text('[{"k": 1}, {"k": 2}]')          # one key in each of two objects is no repetition
    assert read_json(path, "profile") == [{"k": 1}, {"k": 2}]
