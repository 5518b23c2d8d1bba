"""Hostile and broken input, case by case (issue 20): what each command does with it.

    python benchmarks/hostile_input.py                     # this checkout
    python benchmarks/hostile_input.py --before OLD_TREE   # and another checkout, same cases

Every case builds its own sandbox (a run folder, submissions, scale tables, a secret
file outside the folder handed to the command), runs one ``dawnbench`` command in a
fresh process — under a time limit and a 4 GiB address-space limit, so a hang or a
memory blow-up is an outcome, not the end of the script — and judges what it did:
the exit code, whether a traceback reached the terminal, whether the secret leaked
into any output, whether code named by a record ran, whether a file it did not write
changed. A case is ``ok`` when the command behaved as the issue asks (bad input:
exit 2, one paragraph, no traceback; hostile folders: nothing leaked, nothing run,
nothing deleted, no hang).

With ``--before``, the same cases run against that tree first (``PYTHONPATH`` on its
``src``), so the stored evidence holds the before → after table of one sitting.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import os
import resource
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import evidence

ROOT = Path(__file__).resolve().parents[1]
SECRET = "SECRET-7f3a9c-do-not-publish"
MEMORY_LIMIT = 4 << 30


@dataclass
class Outcome:
    rc: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool

    @property
    def traceback(self) -> bool:
        return "Traceback (most recent call last)" in self.stderr or "Traceback (most recent call last)" in self.stdout


@dataclass
class Case:
    id: str
    severity: str
    what: str
    run: Callable[[Path, "Runner"], str | None]   # returns None when ok, else what went wrong
    needs: tuple[str, ...] = field(default_factory=tuple)


class Runner:
    def __init__(self, src: Path, fixtures: Path):
        self.src, self.fixtures = src, fixtures

    def __call__(self, args: list[str], cwd: Path, timeout: float = 60, env: dict | None = None) -> Outcome:
        def limits() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
            os.setsid()

        environ = {**os.environ, "PYTHONPATH": str(self.src), "COLUMNS": "200", **(env or {})}
        environ.pop("CI", None)
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "dawnbench", *map(str, args)], cwd=cwd, env=environ,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                text=True, errors="replace", preexec_fn=limits)
        try:
            out, err = proc.communicate(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            kill_tree(proc.pid)
            out, err = proc.communicate()
            timed_out = True
        return Outcome(None if timed_out else proc.returncode, out, err, time.perf_counter() - start, timed_out)


def kill_tree(pid: int) -> None:
    """The process and every process it started, torchrun's workers in their own sessions too."""
    import psutil

    try:
        parent = psutil.Process(pid)
        family = [*parent.children(recursive=True), parent]
    except psutil.NoSuchProcess:
        return
    for p in family:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(family, timeout=10)


# --- judging -------------------------------------------------------------------------

def first_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:160] if lines else ""


def bad_input(o: Outcome) -> str | None:
    """Bad input: exit 2, a message, no traceback, no hang."""
    if o.timed_out:
        return f"hung (killed after {o.seconds:.0f} s)"
    if o.traceback:
        return f"traceback, rc {o.rc}: {first_line(o.stderr)}"
    if o.rc != 2:
        return f"rc {o.rc} (expected 2): {first_line(o.stderr) or first_line(o.stdout)}"
    if not o.stderr.strip():
        return "rc 2 but no message"
    return None


def no_crash(o: Outcome, allowed: tuple[int, ...] = (0, 1, 2)) -> str | None:
    if o.timed_out:
        return f"hung (killed after {o.seconds:.0f} s)"
    if o.traceback:
        return f"traceback, rc {o.rc}: {first_line(o.stderr)}"
    if o.rc not in allowed:
        return f"rc {o.rc}: {first_line(o.stderr)}"
    return None


def leaked(o: Outcome, *folders: Path) -> str | None:
    needles = [SECRET, base64.b64encode(SECRET.encode()).decode()[:24]]
    for text, where in [(o.stdout, "stdout"), (o.stderr, "stderr")]:
        if any(n in text for n in needles):
            return f"the secret reached {where}"
    for folder in folders:
        for p in folder.rglob("*") if folder.exists() else []:
            if p.is_file() and not p.is_symlink():
                data = p.read_bytes()
                if any(n.encode() in data for n in needles) or base64.b64encode(SECRET.encode()) in data:
                    return f"the secret was written into {p.relative_to(folder.parent)}"
                if b"U0VDUkVU" in data:  # base64 of 'SECRET' at any alignment
                    return f"the secret (base64) was written into {p.relative_to(folder.parent)}"
    return None


def first_problem(*checks: str | None) -> str | None:
    return next((c for c in checks if c), None)


# --- fixtures ------------------------------------------------------------------------

def secret_file(w: Path) -> Path:
    path = w / "outside" / "secret.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(SECRET + "\n")
    return path


def entries(w: Path) -> Path:
    """A submissions folder with one good training entry (copied from the bundled DAWNBench entries)."""
    folder = w / "entries"
    with tarfile.open(ROOT / "third_party" / "dawnbench-entries.tar.xz") as tar:
        tar.extractall(w / "unpacked", filter="data")
    src = w / "unpacked" / "dawnbench-entries" / "CIFAR10" / "train"
    (folder / "CIFAR10" / "train").mkdir(parents=True)
    for suffix in (".json", ".tsv"):
        shutil.copy(src / f"ajay_resnet9_1v100_pytorch{suffix}", folder / "CIFAR10" / "train" / f"good{suffix}")
    return folder


def submission(folder: Path, name: str, rows: list[str], **fields) -> None:
    doc = {"version": "v1.0", "author": "a", "authorEmail": "a@b.c", "framework": "f", "model": "m",
           "hardware": "h", "timestamp": "2018-04-20", **fields}
    (folder / f"{name}.json").write_text(json.dumps(doc))
    (folder / f"{name}.tsv").write_text("epoch\thours\ttop1Accuracy\n" + "".join(r + "\n" for r in rows))


def copy_run(runner: Runner, w: Path, name: str = "run") -> Path:
    dest = w / name
    shutil.copytree(runner.fixtures / "run", dest)
    return dest


def edit_json(path: Path, change: Callable[[dict], None]) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def scale_table(path: Path, job: str, counts: list[int]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"job": job, "rows": [{"workers": k, "tta_s": 100.0 / k ** 0.8} for k in counts]}))
    return path


def mlperf_log(path: Path, time_ms: object = 1000, epoch: object = 1) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [{"key": "run_start", "time_ms": time_ms, "event_type": "INTERVAL_START", "value": None, "metadata": {}},
             {"key": "epoch_start", "time_ms": 2000, "event_type": "INTERVAL_START", "value": None,
              "metadata": {"epoch_num": epoch}},
             {"key": "run_stop", "time_ms": 9000, "event_type": "INTERVAL_END", "value": None,
              "metadata": {"status": "success"}}]
    path.write_text("".join(":::MLLOG " + json.dumps(x) + "\n" for x in lines))
    return path


DEEP = "[" * 200_000 + "]" * 200_000
HUGE_INT = "1" * 5000


# --- the cases -----------------------------------------------------------------------

def c_trust(command: str) -> Callable[[Path, Runner], str | None]:
    def case(w: Path, run: Runner) -> str | None:
        import torch

        evil = copy_run(run, w, "evil")
        marker = w / "outside" / "code-ran"
        (w / "evil2").mkdir()
        (w / "evil2" / "entry.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
        edit_json(evil / "result.json", lambda d: (d.__setitem__("entry", "evil"),
                                                   d["software"].__setitem__("entry_file", str(w / "evil2/entry.py"))))
        payload = torch.load(evil / "model.pt", weights_only=True)
        payload["entry"] = "evil"
        torch.save(payload, evil / "model.pt")
        marker.parent.mkdir(exist_ok=True)
        args = {"infer": ["infer", evil, "--max-items", "50", "--batch-sizes", "1"],
                "profile": ["profile", evil, "--steps", "1", "--out", w / "prof"],
                "generalize": ["generalize", evil, "--families", "brightness", "--severities", "1",
                               "--out", w / "gen"]}[command]
        o = run(args, w, timeout=120)
        if marker.exists():
            return f"imported the recorded entry file: code ran (rc {o.rc})"
        return first_problem(no_crash(o), None if o.rc == 2 else f"rc {o.rc}: expected a refusal (exit 2)")
    return case


def c_symlink_json(command: str) -> Callable[[Path, Runner], str | None]:
    def case(w: Path, run: Runner) -> str | None:
        folder = entries(w)
        secret = w / "outside" / "secret.json"
        secret.parent.mkdir(parents=True, exist_ok=True)
        secret.write_text(json.dumps({"version": "v1.0", "author": SECRET, "authorEmail": "x", "framework": "x",
                                      "model": SECRET, "hardware": "x", "timestamp": "2018-01-01",
                                      "latency": 1.0, "top1Accuracy": 99.0}))
        (folder / "CIFAR10" / "inference").mkdir()
        (folder / "CIFAR10" / "inference" / "leak.json").symlink_to(secret)
        args = ["validate", folder] if command == "validate" else ["leaderboard", folder, "--html", w / "site"]
        o = run(args, w)
        return first_problem(no_crash(o), leaked(o, w / "site"))
    return case


def c_symlink_tsv(w: Path, run: Runner) -> str | None:
    folder = entries(w)
    train = folder / "CIFAR10" / "train"
    shutil.copy(train / "good.json", train / "t.json")
    (train / "t.tsv").symlink_to(secret_file(w))
    o = run(["leaderboard", folder, "--html", w / "site"], w)
    return first_problem(no_crash(o), leaked(o, w / "site"))


def c_symlink_png(w: Path, run: Runner) -> str | None:
    r = copy_run(run, w)
    shutil.copytree(run.fixtures / "profile", r / "profile")
    (r / "profile" / "roofline.png").unlink()
    (r / "profile" / "roofline.png").symlink_to(secret_file(w))
    o = run(["report", w / "run", "--out", w / "report"], w)
    return first_problem(no_crash(o), leaked(o, w / "report"))


def c_dev_zero(w: Path, run: Runner) -> str | None:
    folder = entries(w)
    (folder / "CIFAR10" / "train" / "zero.json").symlink_to("/dev/zero")
    o = run(["validate", folder], w, timeout=30)
    return no_crash(o)


def c_fifo(w: Path, run: Runner) -> str | None:
    folder = entries(w)
    os.mkfifo(folder / "CIFAR10" / "train" / "x.json")
    o = run(["validate", folder], w, timeout=15)
    return no_crash(o)


def c_site_rmtree(w: Path, run: Runner) -> str | None:
    folder = entries(w)
    mine = w / "site" / "entries" / "my_entry.py"
    mine.parent.mkdir(parents=True)
    mine.write_text("# the user's own file\n")
    o = run(["leaderboard", folder, "--html", w / "site"], w)
    if not mine.exists():
        return f"deleted {mine.relative_to(w)} (rc {o.rc})"
    return no_crash(o)


def c_full_disk(w: Path, run: Runner) -> str | None:
    """A 4 MiB tmpfs that a filler takes to the last byte while the run trains (before the model
    of its first passing evaluation is saved)."""
    if os.geteuid() != 0:
        return "skipped: mounting a small tmpfs needs root"
    mount = w / "small"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)]).returncode != 0:
        return "skipped: could not mount a tmpfs"
    try:
        env = {**os.environ, "PYTHONPATH": str(run.src)}
        proc = subprocess.Popen([sys.executable, "-m", "dawnbench", "run", "mnist", "--target", "97",
                                 "--out", str(mount / "runs")], cwd=w, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while not list(mount.rglob("events.log")) or b"run_start" not in list(mount.rglob("events.log"))[0].read_bytes():
            if time.monotonic() > deadline or proc.poll() is not None:
                break
            time.sleep(0.05)
        fd = os.open(mount / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while True:
                os.write(fd, b"\0" * 4096)
        except OSError:
            pass
        finally:
            os.close(fd)
        out, err = proc.communicate(timeout=300)
        results = list(mount.rglob("result.json"))
        if not results:
            return f"no result.json at all (rc {proc.returncode})"
        doc = json.loads(results[0].read_text())
        events = (results[0].parent / "events.log").read_bytes()
        problems = []
        if doc["status"] != "aborted":
            problems.append(f"result.json says '{doc['status']}' with {len(doc['evals'])} evaluation(s)"
                            + (f" ({doc.get('error')})" if doc.get("error") else ""))
        if events and not events.endswith(b"\n"):
            problems.append(f"events.log cut mid-line at {len(events)} bytes")
        elif b'"key": "run_stop"' not in events.splitlines()[-1]:
            problems.append("events.log does not end with run_stop")
        if "Traceback" in err:
            problems.append("traceback: " + first_line(err))
        return "; ".join(problems) or None
    finally:
        subprocess.run(["umount", "-l", str(mount)])


def c_values(rows: list[str], html: bool = False, inference: dict | None = None) -> Callable[[Path, Runner], str | None]:
    def case(w: Path, run: Runner) -> str | None:
        folder = entries(w)
        submission(folder / "CIFAR10" / "train", "bad", rows)
        if inference is not None:
            (folder / "CIFAR10" / "inference").mkdir()
            doc = {"version": "v1.0", "author": "a", "authorEmail": "a@b.c", "framework": "f", "model": "m",
                   "hardware": "h", "timestamp": "2018-04-20", **inference}
            (folder / "CIFAR10" / "inference" / "bad_inference.json").write_text(json.dumps(doc))
        if html:
            o = run(["leaderboard", folder, "--html", w / "site", "--json"], w)
            problem = no_crash(o)
            if problem:
                return problem
            board = json.loads(o.stdout)["tasks"].get("cifar10", {}).get("training_time", [])
            if any(r["file"].endswith("bad.json") for r in board):
                return "the impossible entry is ranked: " + next(r["display"] for r in board
                                                                 if r["file"].endswith("bad.json"))
            return None
        o = run(["validate", folder, "--json"], w)
        problem = no_crash(o)
        if problem:
            return problem
        errors = [p for p in json.loads(o.stdout)["problems"] if p["severity"] == "error" and "bad." in p["file"]]
        return None if errors else "passes validation"
    return case


def c_markup(args_of: Callable[[Path], list], check_text: str | None = None) -> Callable[[Path, Runner], str | None]:
    def case(w: Path, run: Runner) -> str | None:
        o = run(args_of(w), w, timeout=120)
        if o.traceback:
            return f"traceback ({first_line(o.stderr)})"
        if check_text and check_text not in o.stderr + o.stdout:
            return f"'{check_text}' vanished from the message: {first_line(o.stderr)}"
        return None
    return case


def c_deep(command: str, payload: str) -> Callable[[Path, Runner], str | None]:
    def case(w: Path, run: Runner) -> str | None:
        deep = payload is DEEP
        if command in ("validate", "leaderboard"):
            folder = entries(w)
            (folder / "CIFAR10" / "inference").mkdir()
            (folder / "CIFAR10" / "inference" / "deep.json").write_text(
                payload if deep else f'{{"version": "v1.0", "latency": 1, "n": {payload}}}')
            args = ["validate", folder] if command == "validate" else ["leaderboard", folder]
        elif command == "schedule":
            t = w / "t.json"
            t.write_text(payload if deep else f'{{"rows": [{{"workers": 1, "tta_s": {payload}}}]}}')
            args = ["schedule", t, "--accelerators", "2", "--figure", w / "g.png"]
        elif command == "similarity":
            (w / "p").mkdir()
            (w / "p" / "summary.json").write_text(payload if deep else f'{{"window_s": 1, "n": {payload}}}')
            args = ["similarity", w / "p", "--out", w / "sim"]
        else:
            r = copy_run(run, w)
            text = (r / "result.json").read_text().rstrip()
            (r / "result.json").write_text(payload if deep else text[:-1] + f', "n": {payload}}}')
            args = {"analyze": ["analyze", r], "report": ["report", r, "--out", w / "rep"],
                    "export": ["export", r, "--author", "a", "--email", "a@b", "--out", w / "sub"],
                    "infer": ["infer", r, "--max-items", "20", "--batch-sizes", "1"],
                    "profile": ["profile", r, "--steps", "1", "--out", w / "prof"]}[command]
        o = run(args, w, timeout=120)
        return no_crash(o)
    return case


def c_schedule_product(w: Path, run: Runner) -> str | None:
    tables = [scale_table(w / f"job{i}" / "scale.json", f"job{i}", [1, 2, 3, 4, 5, 6, 7, 8]) for i in range(12)]
    o = run(["schedule", *tables, "--accelerators", "8", "--figure", w / "g.png"], w, timeout=60)
    return no_crash(o, (0,))


def c_accelerators(w: Path, run: Runner) -> str | None:
    t = scale_table(w / "scale.json", "j", [1, 2])
    o = run(["schedule", t, "--accelerators", "1000000000", "--figure", w / "g.png"], w, timeout=60)
    return bad_input(o)


def c_negative_batch(w: Path, run: Runner) -> str | None:
    o = run(["run", "mnist", "--set", "batch_size=-5", "--max-seconds", "1", "--out", w / "runs"], w, timeout=90)
    if o.timed_out:
        return f"spun until killed ({o.seconds:.0f} s)"
    return first_problem(no_crash(o), None if o.rc == 2 else f"rc {o.rc}: a negative batch size ran")


def c_gzip_bomb(w: Path, run: Runner) -> str | None:
    folder = w / "bomb"
    folder.mkdir()
    header = bytes([0, 0, 8, 3]) + (200_000).to_bytes(4, "big") + (100).to_bytes(4, "big") + (300).to_bytes(4, "big")
    with gzip.open(folder / "train-images-idx3-ubyte.gz", "wb", compresslevel=9) as f:
        f.write(header)
        zeros = b"\0" * (1 << 24)
        for _ in range(6 * 1024 // 16):       # 6 GiB of zeros behind a header that promises them
            f.write(zeros)
    for name in ("train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        (folder / name).write_bytes(bytes([0, 0, 8, 1, 0, 0, 0, 1, 0]))
    o = run(["data", "fetch", "mnist", "--from", folder, "--force"], w, timeout=120,
            env={"DAWNBENCH_DATA": str(w / "cache")})
    return bad_input(o)


def c_resource_interval(w: Path, run: Runner) -> str | None:
    o = run(["run", "mnist", "--target", "97", "--resource-interval", "1e-9", "--out", w / "runs"], w, timeout=120)
    return bad_input(o)


def c_bound(args_of: Callable[[Path], list], timeout: float = 60) -> Callable[[Path, Runner], str | None]:
    def case(w: Path, run: Runner) -> str | None:
        return bad_input(run(args_of(w), w, timeout=timeout))
    return case


def c_export_tsv(w: Path, run: Runner) -> str | None:
    r = copy_run(run, w, "copy")
    (r / "epochs.tsv").write_text((r / "epochs.tsv").read_text().rstrip("\n") + "\n99\t0.001\t99.9999\n")
    o = run(["export", r, "--author", "a", "--email", "a@b.c", "--out", w / "sub"], w)
    problem = no_crash(o, (0,))
    if problem:
        return problem
    tsv = next((w / "sub").rglob("*.tsv"))
    return None if "99.9999" in tsv.read_text() else "exported the TSV of the run the record names, not the folder given"


def c_page_names(w: Path, run: Runner) -> str | None:
    folder = entries(w)
    train = folder / "CIFAR10" / "train"
    good = (train / "good.tsv").read_text()
    for name in ("a b", "a_b", "a&b"):
        shutil.copy(train / "good.json", train / f"{name}.json")
        (train / f"{name}.tsv").write_text(good)
    o = run(["leaderboard", folder, "--html", w / "site"], w)
    problem = no_crash(o, (0,))
    if problem:
        return problem
    pages = list((w / "site" / "entries").glob("*.html"))
    return None if len(pages) == 4 else f"{len(pages)} entry pages for 4 entries (names collide)"


def c_long_name(w: Path, run: Runner) -> str | None:
    folder = entries(w)
    train = folder / "CIFAR10" / "train"
    long = "x" * 240
    shutil.copy(train / "good.json", train / f"{long}.json")
    shutil.copy(train / "good.tsv", train / f"{long}.tsv")
    o = run(["leaderboard", folder, "--html", w / "site"], w)
    return no_crash(o, (0,))


def c_modes(w: Path, run: Runner) -> str | None:
    r = run.fixtures / "run"
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in r.iterdir() if p.is_file()}
    private = sorted(n for n, m in modes.items() if m & 0o044 == 0)
    return f"mode 0600: {', '.join(private)}" if private else None


def c_result_type(field_name: str, value: object, command: str) -> Callable[[Path, Runner], str | None]:
    def case(w: Path, run: Runner) -> str | None:
        r = copy_run(run, w)
        edit_json(r / "result.json", lambda d: d.__setitem__(field_name, value))
        args = {"analyze": ["analyze", r], "report": ["report", r, "--out", w / "rep"],
                "export": ["export", r, "--author", "a", "--email", "a@b", "--out", w / "sub"],
                "infer": ["infer", r, "--max-items", "20", "--batch-sizes", "1"]}[command]
        return no_crash(run(args, w, timeout=120))
    return case


def c_mlperf(kind: str, command: str) -> Callable[[Path, Runner], str | None]:
    def case(w: Path, run: Runner) -> str | None:
        log = mlperf_log(w / "logs" / "g" / "result_0.txt", *(("abc", 1) if kind == "time" else (1000, {"a": 1})))
        mlperf_log(w / "logs2" / "g" / "result_0.txt")
        args = {"analyze": ["analyze", w / "logs"], "compare": ["compare", w / "logs", w / "logs2"],
                "report": ["report", w / "logs", "--out", w / "rep"]}[command]
        del log
        return no_crash(run(args, w))
    return case


def cases() -> list[Case]:
    cs = [
        Case("H1-infer", "high", "infer imports the entry file a copied run record names", c_trust("infer"), ("run",)),
        Case("H1-profile", "high", "profile imports the entry file a run record names", c_trust("profile"), ("run",)),
        Case("H1-generalize", "high", "generalize imports the entry file a run record names", c_trust("generalize"),
             ("run",)),
        Case("H2-validate-symlink", "high", "validate reads leak.json → a file outside the folder",
             c_symlink_json("validate")),
        Case("H2-site-symlink", "high", "leaderboard --html publishes leak.json → secret",
             c_symlink_json("leaderboard")),
        Case("H2-tsv-symlink", "high", "t.tsv → secret: its first line on the site", c_symlink_tsv),
        Case("H2-report-png", "high", "report embeds roofline.png → secret", c_symlink_png, ("run",)),
        Case("H2-dev-zero", "high", "validate with zero.json → /dev/zero", c_dev_zero),
        Case("H2-fifo", "high", "validate with a FIFO named x.json", c_fifo),
        Case("H3-rmtree", "high", "leaderboard --html DIR deletes DIR/entries/", c_site_rmtree),
        Case("M4-full-disk", "medium", "a full disk while saving model.pt", c_full_disk, ("mnist",)),
        Case("M5-negative-hours", "medium", "validate: hours -5", c_values(["1\t-5\t94.5"])),
        Case("M5-inf-accuracy", "medium", "validate: accuracy inf", c_values(["1\t0.5\tinf"])),
        Case("M5-500-accuracy", "medium", "validate: accuracy 500", c_values(["1\t0.5\t500"])),
        Case("M5-1e308-hours", "medium", "leaderboard: hours 1e308", c_values(["1\t1e308\t94.5"], html=True)),
        Case("M5-zero-hours", "medium", "leaderboard --html: hours 0 with an inference entry",
             c_values(["1\t0\t94.5"], html=True, inference={"latency": 0.5, "cost": 1e-6, "top1Accuracy": 94.5})),
        Case("M6-analyze-markup", "medium", "analyze \"/tmp/[/x]\"",
             c_markup(lambda w: ["analyze", w / "[/x]"])),
        Case("M6-run-markup", "medium", "run --out '.../[/b]'",
             c_markup(lambda w: ["run", "mnist", "--target", "97", "--out", w / "[/b]"]), ("mnist",)),
        Case("M6-vanishing-markup", "medium", "[red] in a path vanishes from the message",
             c_markup(lambda w: ["analyze", w / "[red]x"], "[red]x")),
    ]
    for command in ("validate", "leaderboard", "analyze", "report", "export", "infer", "profile", "schedule",
                    "similarity"):
        needs = ("run",) if command in ("analyze", "report", "export", "infer", "profile") else ()
        cs.append(Case(f"M7-deep-{command}", "medium", f"{command}: JSON nested 200,000 deep", c_deep(command, DEEP),
                       needs))
        cs.append(Case(f"M7-bigint-{command}", "medium", f"{command}: a 5,000-digit integer in JSON",
                       c_deep(command, HUGE_INT), needs))
    cs += [
        Case("M8-schedule-product", "medium", "schedule: 12 tables × 8 counts", c_schedule_product),
        Case("M8-accelerators", "medium", "schedule --accelerators 1000000000", c_accelerators),
        Case("M8-negative-batch", "medium", "run --set batch_size=-5 --max-seconds 1", c_negative_batch, ("mnist",)),
        Case("M8-gzip-bomb", "medium", "data fetch --from: an IDX gzip that inflates to 6 GiB", c_gzip_bomb),
        Case("M8-resource-interval", "medium", "run --resource-interval 1e-9", c_resource_interval, ("mnist",)),
        # 16 workers, not 100,000: enough to show an unbounded option (this machine has 2 cores) without
        # the fork bomb that 100,000 would be for the code before the change
        Case("M8-nproc", "medium", "run --nproc 16 on 2 cores", c_bound(lambda w: ["run", "mnist", "--nproc", "16",
                                                                                 "--out", w / "r"], 30), ("mnist",)),
        Case("M8-scale-workers", "medium", "scale --workers 16 on 2 cores",
             c_bound(lambda w: ["scale", "mnist", "--workers", "16", "--out", w / "s"], 30), ("mnist",)),
        Case("M8-infer-threads", "medium", "infer --threads 64 on 2 cores",
             c_bound(lambda w: ["infer", _copy(w), "--threads", "64"]), ("run",)),
        Case("M9-export-tsv", "medium", "export takes epochs.tsv from the recorded path", c_export_tsv, ("run",)),
        Case("L-page-names", "low", "site pages for 'a b', 'a_b', 'a&b' collide", c_page_names),
        Case("L-long-name", "low", "a 240-character entry name on the site", c_long_name),
        Case("L-modes", "low", "record files are mode 0600", c_modes, ("run",)),
    ]
    bad = [
        ("schedule-dir", lambda w: ["schedule", w, "--accelerators", "2"]),
        ("schedule-figure-missing-dir", lambda w: ["schedule", scale_table(w / "t.json", "j", [1, 2]),
                                                   "--accelerators", "2", "--figure", w / "missing" / "g.png"]),
        ("schedule-figure-txt", lambda w: ["schedule", scale_table(w / "t.json", "j", [1, 2]), "--accelerators", "2",
                                           "--figure", w / "g.txt"]),
        ("profile-out-file", lambda w: ["profile", "mnist", "--steps", "1", "--out", _file(w / "f")]),
        ("profile-mistyped-run", lambda w: ["profile", w / "runs" / "mnist-smal-cnn"]),
        ("profile-top-negative", lambda w: ["profile", "mnist", "--steps", "1", "--top", "-5", "--out", w / "p"]),
        ("machine-meta", lambda w: ["machine", "--device", "meta"]),
        ("machine-cpu5", lambda w: ["machine", "--device", "cpu:5"]),
        ("similarity-resources-list", lambda w: ["similarity", _similarity_list(w), "--out", w / "sim"]),
        ("similarity-no-steps", lambda w: ["similarity", _similarity_nosteps(w), "--out", w / "sim"]),
        ("similarity-out-file", lambda w: ["similarity", _copy(w), "--out", _file(w / "f")]),
        ("generalize-families-comma", lambda w: ["generalize", _copy(w), "--families", ",", "--out", w / "g"]),
        ("generalize-out-file", lambda w: ["generalize", _copy(w), "--families", "brightness", "--severities", "1",
                                           "--out", _file(w / "f")]),
        ("run-collective-timeout-negative", lambda w: ["run", "mnist", "--nproc", "1", "--collective-timeout", "-1",
                                                       "--out", w / "r"]),
        ("run-collective-timeout-zero", lambda w: ["run", "mnist", "--nproc", "1", "--collective-timeout", "0",
                                                   "--out", w / "r"]),
        ("run-collective-timeout-nan", lambda w: ["run", "mnist", "--nproc", "1", "--collective-timeout", "nan",
                                                  "--out", w / "r"]),
        ("run-target-nan", lambda w: ["run", "mnist", "--target", "nan", "--max-epochs", "1", "--out", w / "r"]),
        ("run-seed-negative", lambda w: ["run", "mnist", "--seed", "-1", "--target", "97", "--out", w / "r"]),
        ("run-seed-huge", lambda w: ["run", "mnist", "--seed", str(2 ** 70), "--target", "97", "--out", w / "r"]),
        ("run-out-file", lambda w: ["run", "mnist", "--target", "97", "--out", _file(w / "f")]),
        ("export-out-file", lambda w: ["export", _copy(w), "--author", "a", "--email", "a@b", "--out", _file(w / "f")]),
        ("report-out-file", lambda w: ["report", _copy(w), "--out", _file(w / "f")]),
        ("leaderboard-html-file", lambda w: ["leaderboard", entries(w), "--html", _file(w / "f")]),
        ("scale-threads-zero", lambda w: ["scale", "mnist", "--workers", "1", "--threads-per-worker", "0",
                                          "--runs", "1", "--target", "90", "--out", w / "s"]),
        ("infer-scenario-seconds", lambda w: ["infer", _copy(w), "--scenario", "offline", "--scenario-seconds", "-1"]),
        ("infer-threads-huge", lambda w: ["infer", _copy(w), "--threads", "64"]),
        ("infer-server-qps", lambda w: ["infer", _copy(w), "--scenario", "server", "--server-qps", "-1"]),
        ("infer-warmup-items", lambda w: ["infer", _copy(w), "--warmup-items", "-5", "--max-items", "20"]),
        ("profile-steps-zero", lambda w: ["profile", "mnist", "--steps", "0", "--out", w / "p"]),
        ("leaderboard-top-negative", lambda w: ["leaderboard", entries(w), "--top", "-1"]),
        ("sweep-runs-zero", lambda w: ["sweep", "mnist", "--grid", "lr=0.1", "--runs", "0", "--out", w / "s"]),
        ("run-max-epochs-inf", lambda w: ["run", "mnist", "--max-epochs", "inf", "--out", w / "r"]),
    ]
    for name, args_of in bad:
        needs = ("mnist",) + (("run",) if "infer" in name or "generalize" in name or "export" in name
                              or "report" in name or "similarity-out" in name else ())
        cs.append(Case(f"B-{name}", "bad input", name.replace("-", " "), _bad_case(args_of), needs))
    for kind in ("time", "epoch"):
        for command in ("analyze", "compare", "report"):
            cs.append(Case(f"B-mlperf-{kind}-{command}", "bad input",
                           f"{command} on an MLPerf log with " + ('time_ms "abc"' if kind == "time" else "a dict epoch"),
                           c_mlperf(kind, command)))
    for field_name, value in (("evals", "x"), ("seed", "abc"), ("threshold", "high"), ("hparams", [1])):
        for command in ("analyze", "report", "export", "infer"):
            cs.append(Case(f"B-result-{field_name}-{command}", "bad input",
                           f"{command} on a result.json with {field_name}: {value!r}",
                           c_result_type(field_name, value, command), ("run",)))
    return cs


_RUNNER: Runner | None = None


def _file(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("a file, not a folder\n")
    return path


def _copy(w: Path) -> Path:
    assert _RUNNER is not None
    return copy_run(_RUNNER, w) if not (w / "run").exists() else w / "run"


def _similarity_list(w: Path) -> Path:
    r = _copy(w)
    edit_json(r / "result.json", lambda d: d.__setitem__("resources", []))
    return w


def _similarity_nosteps(w: Path) -> Path:
    (w / "p").mkdir(exist_ok=True)
    (w / "p" / "summary.json").write_text(json.dumps({"window_s": 1.0, "task": "mnist", "entry": "small-cnn",
                                                      "precision": "fp32"}))
    return w / "p"


def _bad_case(args_of: Callable[[Path], list]) -> Callable[[Path, Runner], str | None]:
    def case(w: Path, run: Runner) -> str | None:
        return bad_input(run(args_of(w), w, timeout=120))
    return case


# --- driver --------------------------------------------------------------------------

def run_all(src: Path, only: list[str] | None) -> list[dict]:
    global _RUNNER
    rows = []
    with tempfile.TemporaryDirectory(prefix="dawnbench-hostile-") as tmp:
        fixtures = Path(tmp) / "fixtures"
        fixtures.mkdir()
        runner = Runner(src, fixtures)
        _RUNNER = runner
        made = runner(["run", "mnist", "--target", "97", "--out", fixtures / "runs"], fixtures, timeout=300)
        [run_dir] = (fixtures / "runs").iterdir()
        shutil.copytree(run_dir, fixtures / "run")
        assert made.rc == 0, made.stderr
        profiled = runner(["profile", fixtures / "run", "--steps", "2", "--out", fixtures / "profile"], fixtures,
                          timeout=300)
        assert profiled.rc == 0, profiled.stderr
        for case in cases():
            if only and not any(case.id.startswith(o) for o in only):
                continue
            w = Path(tmp) / case.id
            w.mkdir()
            start = time.perf_counter()
            try:
                problem = case.run(w, runner)
            except Exception as err:  # the case itself failed to set up: say so, keep going
                problem = f"case error: {type(err).__name__}: {err}"
            rows.append({"id": case.id, "severity": case.severity, "what": case.what,
                         "ok": problem is None, "outcome": problem or "ok",
                         "seconds": round(time.perf_counter() - start, 1)})
            print(f"{case.id:<40} {'ok' if problem is None else 'FAIL'}  {problem or ''}"[:220], flush=True)
            shutil.rmtree(w, ignore_errors=True)
    return rows


def tree_facts(src: Path) -> dict:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=src, capture_output=True, text=True).stdout.strip()
    return {"src": str(src), "commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain"))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, help="another checkout to run the same cases against first")
    parser.add_argument("--only", action="append", help="run only the cases whose id starts with this")
    parser.add_argument("--no-evidence", action="store_true", help="print only, store nothing")
    args = parser.parse_args()
    trees = ([("before", args.before.resolve() / "src")] if args.before else []) + [("after", ROOT / "src")]
    figures: dict = {"cases": {}}
    for label, src in trees:
        print(f"== {label}: {src}", flush=True)
        rows = run_all(src, args.only)
        figures[label] = {**tree_facts(src.parent), "ok": sum(r["ok"] for r in rows), "cases": len(rows)}
        for r in rows:
            figures["cases"].setdefault(r["id"], {"severity": r["severity"], "what": r["what"]})[label] = r["outcome"]
    for label in [t[0] for t in trees]:
        print(f"{label}: {figures[label]['ok']}/{figures[label]['cases']} cases ok")
    if not args.no_evidence:
        evidence.write("hostile_input", figures)


if __name__ == "__main__":
    main()
