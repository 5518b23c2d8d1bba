"""The harness's own cost, accounted directly (SPEC §22; harness/cost.py): its threads' CPU and the training
thread's time in harness code, counted inside the timed segments only, and stored in result.json."""

from __future__ import annotations

import json
import threading
import time

from dawnbench.harness.cost import HarnessCost

from helpers import run_scripted


def _burn(seconds: float) -> None:
    """Busy CPU for ``seconds`` of this thread's own CPU time."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


class Burner:
    """A thread named as the harness names its own, burning CPU only while ``busy`` is set."""

    def __init__(self, name: str) -> None:
        self.busy, self.stop = threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while not self.stop.is_set():
            if self.busy.wait(0.01):
                _burn(0.01)

    def close(self) -> None:
        self.stop.set()
        self.thread.join()


def test_a_harness_threads_cpu_counts_only_inside_timed_segments():
    cost, harness, other = HarnessCost(), Burner("dawnbench-test"), Burner("an-entrys-thread")
    try:
        harness.busy.set()
        time.sleep(0.3)                                  # untimed: not counted
        with cost.timed(), cost.entry():
            other.busy.set()
            time.sleep(0.5)
            harness.busy.clear()
            other.busy.clear()
        time.sleep(0.3)
    finally:
        harness.close()
        other.close()
    [(name, seconds)] = cost.threads_cpu_s.items()       # the entry's thread is not the harness's
    assert name == "dawnbench-test"
    # the two burners and the main thread share this machine's cores: at least a tenth of the wall time,
    # never more than the timed interval's wall time
    assert 0.05 < seconds < 0.6


def test_the_training_threads_harness_time_is_its_hooks_and_the_segments_edges():
    cost = HarnessCost()
    hook = cost.wrap(lambda: _burn(0.05))
    with cost.timed():
        _burn(0.02)                                      # an edge of the segment: the harness's
        with cost.entry():
            _burn(1.0)                                   # the entry's own work: not counted
            hook()                                       # a step hook inside it: counted
    assert 0.06 < cost.main_s < 0.5, cost.main_s          # 0.07 s of CPU; the entry's 1 s left out
    figures = cost.figures(timed_s=1.0)
    assert figures["main_share"] == cost.main_s and figures["launcher_cpu_s"] is None
    assert figures["share"] == figures["main_share"] + figures["threads_share"]


def test_a_runs_record_holds_the_harness_shares(tiny_task, tmp_path):
    _, run_dir = run_scripted(tiny_task, tmp_path)
    result = json.loads((run_dir / "result.json").read_text())
    harness = result["harness"]
    assert set(harness["threads_cpu_s"]) == {"dawnbench-resources"}    # no display in this run
    assert 0 <= harness["share"] < 1 and harness["timed_s"] == result["timed_s"]
