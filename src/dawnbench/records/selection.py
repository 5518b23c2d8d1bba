"""Which runs a figure counts: one rule for every command that summarises, compares, reports or exports
runs (``run``'s summary, ``analyze``, ``compare``, ``report``, ``export``; the leaderboard ranks what
``export`` wrote).

    chosen = select(results, include_suspect=False)
    chosen.counted                      # the runs the statistics are over
    chosen.left_out                     # [(run, why)]
    chosen.unchecked                    # runs whose event log says no run_start: whether a copy, cannot be told
    chosen.sentence()                   # what was left out, why, and how to count it (None: nothing was)
    disturbance(chosen.counted, chosen.left_out)   # the clause a figure's own line carries: flagged runs behind it

* **Finished.** A run ``interrupted`` (Ctrl-C, SIGTERM, a cancelled job) stopped before its end and
  measures nothing: left out; so does a record still ``running`` (the run trains yet, or its process was
  killed before it could write its end) — counting it as a failure would put a 0× in a comparison. Every
  other run counts — ``success``, and as a failure (TTA ∞, as the rules count failures) ``not_reached``,
  ``diverged``, ``aborted`` (the entry raised) and ``timeout``.
* **Not flagged.** A run its own resource monitor flagged — other processes took more than 5 % of
  the machine while its clock was timing (``resources.interference``) — is left out, unless
  ``include_suspect`` (``--include-suspect`` on each of those commands).
* **Once per seed, once per run.** A second record of the same seed of the same configuration (a copied run
  folder, a run made twice) is left out: the first one met counts (folders in name order), and a seed never
  counts twice. So is a second folder whose event log (``events.log``) records the same start (``run_start``,
  to the millisecond), whatever its record or the rest of its log says: two runs never start in the same
  millisecond, and a copy whose seed was relabelled is still the run it was copied from. A copy whose log was
  moved or deleted is found by what it measured: its evaluations (each one's timed seconds to the nanosecond,
  epoch, samples and accuracy), which no two runs of one configuration share.
* **Official**, for a submission only (``official=True``: ``export``): a run at a lowered
  ``--target`` or on a subset (``official: false``) is left out — DAWNBench ranks runs at the task's
  own threshold on its full data, and ``validate`` rejects the rest. The analyses count unofficial
  runs, never pooled with official ones: the threshold is part of a configuration, and the group's
  name says "unofficial". A run both unofficial and flagged is refused a submission as unofficial:
  no ``--include-suspect`` would make it one.
"""

from __future__ import annotations

import functools
import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dawnbench import bounds
from dawnbench.errors import FileError
from dawnbench.io import read_foreign_lines
from dawnbench.records import mllog
from dawnbench.records.record import RunResult, Status
from dawnbench.tasks import QUICK, TASKS

INTERRUPTED = "interrupted before it finished: it measures nothing (run it again)"
NOT_FINISHED = ("not finished: its record still says running (the run trains yet, or its process was killed before it "
                "could write its end): it measures nothing (wait for it, or run it again)")
COPY = "a second record of seed {seed} of this configuration ({first} is counted): a seed counts once"
SAME_LOG = ("a second record of the run in {first} (its event log records the same start, to the millisecond, whatever "
            "its record says): a run counts once")
SAME_EVALS = ("a second record of the run in {first} (its evaluations are the same — each one's time to the nanosecond, "
              "its epoch, samples and accuracy — whatever else its record or its log says): a run counts once")
LOG_HEAD_BYTES = 1 << 20    # a run writes run_start after a few dozen lines saying what it is: 1 MiB holds it
UNOFFICIAL = ("unofficial: {why}; DAWNBench ranks only runs at the task's own threshold on its full data, and "
              "`dawnbench validate` rejects the rest — run without --target/--subset/--quick to submit (a tracked script: "
              "without target= or profile_steps)")


INTERFERENCE_SHARE = 0.05   # others' share of the machine's CPU capacity, timed region
INTERFERENCE_MIN_S = 0.1    # and at least this many CPU-seconds: ten clock ticks, past the accounting's rounding


def past_the_rule(taken_s: float, share: float) -> bool:
    """Interference: more than ``INTERFERENCE_SHARE`` of the measurement's CPUs, and at least ``INTERFERENCE_MIN_S``."""
    return share > INTERFERENCE_SHARE and taken_s >= INTERFERENCE_MIN_S


def flagged(summary: dict[str, Any] | None, share_key: str, seconds_key: str, what: str) -> str | None:
    """Why a measurement counts as disturbed: its ``interference`` sentence — or, where that is absent from a
    summary whose own figures (others' share of its CPUs, its seconds, its CPUs) say others took more than the rule
    allows, those figures: a flag is never trusted only as written, the measurement it came from decides.
    ``what``: the measurement, in the sentence ("the run's CPUs while its clock was timing")."""
    summary = summary or {}
    if summary.get("interference"):
        return summary["interference"]
    share, seconds, own = (summary.get(k) for k in (share_key, seconds_key, "own_cpus"))
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (share, seconds, own)) and \
            past_the_rule(share * seconds * own, share):
        return (f"other processes took {100 * share:.0f} % of {what} (its own figures, {share_key}; its interference "
                "sentence is missing)")
    return None


@dataclass
class Selection:
    counted: list[RunResult] = field(default_factory=list)
    left_out: list[tuple[RunResult, str]] = field(default_factory=list)
    unchecked: list[RunResult] = field(default_factory=list)   # whose log says no run_start: a copy cannot be told

    def sentence(self) -> str | None:
        """One sentence: how many runs were left out, why, and how to count the suspect ones."""
        if not self.left_out:
            return None
        total = len(self.counted) + len(self.left_out)
        kinds = Counter(_kind(why) for _, why in self.left_out)
        parts = []
        if kinds["flagged"]:
            flagged = flagged_counted([r for r, why in self.left_out if _kind(why) == "flagged"])
            parts.append(f"{kinds['flagged']} flagged as disturbed: {_took(flagged)} while their clocks "
                         "ran (--include-suspect counts them)")
        if kinds["interrupted"]:
            parts.append(f"{kinds['interrupted']} interrupted before they finished")
        if kinds["running"]:
            parts.append(f"{kinds['running']} not finished (still running, or killed before writing their end)")
        if kinds["unofficial"]:
            parts.append(f"{kinds['unofficial']} unofficial (a lowered --target, a subset or a quick trial)")
        if kinds["copy"]:
            parts.append(f"{kinds['copy']} second record(s) of a seed already counted (a seed counts once) or of "
                         "a run (the same run_start in its event log)")
        counted = "none counted" if not self.counted else f"{len(self.counted)} counted"
        return f"{len(self.left_out)} of {total} run(s) left out, {counted}: " + "; ".join(parts) + "."


def _kind(why: str) -> str:
    return ("interrupted" if why == INTERRUPTED else "running" if why == NOT_FINISHED else
            "unofficial" if why.startswith("unofficial") else
            "copy" if why.startswith("a second record of ") else "flagged")


def _seed_key(r: RunResult) -> tuple | None:
    """What makes two records the same seed of the same configuration (None: a record whose seed is unknown)."""
    if r.seed is None:
        return None
    return (r.task, r.subset, r.entry, r.precision, r.compile, r.threshold, (r.distributed or {}).get("world_size"),
            json.dumps(r.hparams, sort_keys=True, default=str), r.self_reported, r.seed)


def disturbed(r: RunResult) -> str | None:
    """Why a run counts as disturbed (:func:`flagged`: its monitor's sentence, else the record's own figures
    of what others took while its clock ran, else what its ``resources.tsv`` shows)."""
    return flagged(r.resources, "others_share_timed", "timed_s_sampled",
                   "the run's CPUs while its clock was timing") or _sampled(r)


TSV_MARGIN = 2    # the TSV's rows are each clipped at 0, so its share runs a little above the monitor's own


def _sampled(r: RunResult) -> str | None:
    """What the run's ``resources.tsv`` (its monitor's every sample) shows others took while its clock ran, where
    that is past the rule by ``TSV_MARGIN`` and its record says nothing: a flag deleted from the record is found
    again in the measurement it came from. None where there is no such file, or it shows nothing of the kind."""
    path = Path(r.run_dir) / "resources.tsv" if r.run_dir else None
    if path is None or path.is_symlink() or not path.is_file():
        return None
    own = (r.resources or {}).get("own_cpus") or (r.hardware or {}).get("cores")
    share, others = _sampled_share(path, path.stat().st_mtime_ns,
                                   own if isinstance(own, int) and not isinstance(own, bool) and own > 0 else 1)
    if share > TSV_MARGIN * INTERFERENCE_SHARE and others >= INTERFERENCE_MIN_S:
        return (f"other processes took {100 * min(share, 1):.0f} % of the run's CPUs while its clock was timing (its "
                f"resources.tsv; its record says nothing of it)")
    return None


@functools.lru_cache(maxsize=4096)
def _sampled_share(path: Path, _mtime_ns: int, own: int) -> tuple[float, float]:
    """Others' share of ``own`` CPUs while the clock ran, and their CPU-seconds, as a resources.tsv's rows say —
    read once per file as it stands (selection asks of a run several times); (0, 0) for a table that is not the
    monitor's."""
    timed = others = last = 0.0
    try:
        lines = read_foreign_lines(path, "resource samples")
        header = next(lines)[1].split("\t")
        t_at, frac_at, others_at = (header.index(c) for c in ("t_s", "timed_frac", "others_cpu_pct"))
        for _, line in lines:
            cells = line.split("\t")
            t, frac, pct = (float(cells[i]) for i in (t_at, frac_at, others_at))
            if not (math.isfinite(t) and 0 <= frac <= 1 and 0 <= pct <= 100 * bounds.MACHINES and t >= last):
                return 0.0, 0.0
            timed, others, last = timed + (t - last) * frac, others + (t - last) * frac * pct / 100, t
    except (FileError, StopIteration, ValueError, IndexError):     # not the monitor's table: it proves nothing
        return 0.0, 0.0
    return (others / (timed * own) if timed > 0 else 0.0), others


def flagged_counted(counted: Sequence[RunResult]) -> list[dict[str, Any]]:
    """The runs counted that their monitor flagged (``--include-suspect`` counts them), for a JSON document: each
    run, its others' share of its CPUs while its clock ran (None where the record lacks it) and why it is flagged."""
    flagged = []
    for r in counted:
        why = disturbed(r)
        share = (r.resources or {}).get("others_share_timed")
        if why:
            flagged.append({"run": r.run_dir, "others_share_timed": share if isinstance(share, (int, float)) and
                            not isinstance(share, bool) else None, "why": why})
    return flagged


def disturbance(counted: Sequence[RunResult], left_out: Sequence[tuple[RunResult, str]] = (),
                runs: int | None = None) -> str | None:
    """The clause a figure's own line carries (a verdict, a summary, a run's last line) when runs behind it were
    flagged as disturbed: how many of the runs counted were and by how much, and how many flagged runs were left
    out; None when none was. A reader copies that line, not the notes around it. ``runs``: how many runs the
    figure counts where some are not this project's records (an MLPerf log has no monitor): ``len(counted)``
    by default. One run alone, ``runs`` not given, is "flagged as disturbed (...)": its own card or last line; a
    group or a side of one run says "1 of 1 run counted", as every group does."""
    hit = flagged_counted(counted)
    dropped = sum(_kind(why) == "flagged" for _, why in left_out)
    total = len(counted) if runs is None else runs
    parts = []
    if hit:
        took = _took(hit)
        clocks = "its clock" if len(hit) == 1 else "their clocks"
        parts.append(f"flagged as disturbed ({took} while its clock ran)" if runs is None and total == 1 else
                     f"{len(hit)} of {total} run{'s' if total > 1 else ''} counted {'was' if len(hit) == 1 else 'were'} "
                     f"flagged as disturbed ({took} while {clocks} ran)")
    if dropped:
        parts.append(f"{dropped} flagged run{'s' if dropped > 1 else ''} left out (--include-suspect counts "
                     f"{'them' if dropped > 1 else 'it'})")
    return "; ".join(parts) or None


def _took(flagged: Sequence[dict[str, Any]]) -> str:
    """How much of their CPUs others took from the ``flagged`` runs (as :func:`flagged_counted` lists them): "other
    processes took 61–66 % of the CPUs" (the records' others_share_timed; without it, only that they took the CPU)."""
    shares = sorted(round(100 * f["others_share_timed"]) for f in flagged if f["others_share_timed"] is not None)
    if not shares:
        return "other processes took the CPU"
    return f"other processes took {shares[0]}{'' if shares[0] == shares[-1] else f'–{shares[-1]}'} % of the CPUs"


def unofficial_reason(result: RunResult) -> str:
    """Why a run is unofficial, in words (its threshold, its subset)."""
    why = []
    if result.subset == QUICK:
        why.append("a quick trial (--quick: the first training items)")
    elif result.subset:
        why.append(f"trained on the subset '{result.subset}'")
    task = TASKS.get(result.task)
    if task is not None and result.threshold != task.threshold:
        why.append(f"its target {result.threshold:g} is not {result.task}'s {task.threshold:g}")
    if (result.tracked or {}).get("profile_steps"):
        why.append("a profiler was on its clock (a tracked run's profile_steps)")
    return " and ".join(why) or "recorded official: false"


def run_start_mark(r: RunResult) -> float | None:
    """When the run's clock started, as its ``events.log`` says (``run_start``'s ``time_ms``): what no two runs
    share, and what a copy keeps however its record or the rest of its log was edited. None where the folder holds
    no log saying it (a record alone, an empty or foreign log: no proof of anything) or holds a link (a folder
    handed over is data). Only the log's head is read: a run writes ``run_start`` among its first lines."""
    log = Path(r.run_dir) / "events.log" if r.run_dir else None
    if log is None or log.is_symlink() or not log.is_file():
        return None
    try:
        with log.open("rb") as f:
            head = f.read(LOG_HEAD_BYTES).decode("utf-8", "replace")
    except OSError:
        return None
    for line in head.splitlines():
        if '"run_start"' not in line:
            continue
        try:
            event = mllog.parse_line(line)
        except ValueError:          # a torn or foreign line: not the run's start
            continue
        when = event.get("time_ms") if isinstance(event, dict) and event.get("key") == "run_start" else None
        if isinstance(when, (int, float)) and not isinstance(when, bool) and math.isfinite(when):
            return when
    return None


def select(results: Sequence[RunResult], include_suspect: bool = False, official: bool = False) -> Selection:
    """The runs a figure counts, and each one left out with why (see the module docstring)."""
    chosen = Selection()
    seen: dict[tuple, RunResult] = {}
    logs: dict[float, RunResult] = {}
    measured: dict[tuple, RunResult] = {}
    for r in results:
        key, log = _seed_key(r), run_start_mark(r)
        evals = (key[:-1], tuple((e.epoch, e.samples, e.timed_s, e.value) for e in r.evals)) if key and r.evals else ()
        if log is None:
            chosen.unchecked.append(r)
        if log is not None and log in logs:     # the same run, whatever its record says: said as such first
            chosen.left_out.append((r, SAME_LOG.format(first=logs[log].run_dir)))
            continue
        if evals and evals in measured:         # its log moved or deleted: what it measured is the run's
            chosen.left_out.append((r, SAME_EVALS.format(first=measured[evals].run_dir)))
            continue
        if evals:
            measured[evals] = r
        if key is not None and key in seen:
            chosen.left_out.append((r, COPY.format(seed=r.seed, first=seen[key].run_dir)))
            continue
        if key is not None:
            seen[key] = r
        if log is not None:
            logs[log] = r
        if r.status == Status.INTERRUPTED:
            chosen.left_out.append((r, INTERRUPTED))
        elif r.status == Status.RUNNING:
            chosen.left_out.append((r, NOT_FINISHED))
        elif official and r.official is False:   # before the flag: no --include-suspect makes it submittable
            chosen.left_out.append((r, UNOFFICIAL.format(why=unofficial_reason(r))))
        elif not include_suspect and (why := disturbed(r)):
            chosen.left_out.append((r, f"flagged: {why} (--include-suspect counts it)"))
        else:
            chosen.counted.append(r)
    return chosen


def disturbance_of(summary: dict[str, Any] | None) -> str | None:
    """Why a measurement counts as disturbed (:func:`flagged`: its sentence, else its own figures)."""
    return flagged(summary, "others_share", "seconds", "the CPUs this process may use while it measured")
