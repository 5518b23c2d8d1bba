"""Every target declared once (issue 69): ``benchmarks/targets.json`` holds each benchmark's target and moonshot,
``benchmarks/targets.py`` judges a figure against one by one rule, and no benchmark script or template writes a
threshold of its own."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
TEMPLATES = ROOT / "docs" / "results" / "templates"
sys.path.insert(0, str(BENCHMARKS))
import targets  # noqa: E402  (benchmarks/targets.py)

SCRIPTS = sorted(p for p in BENCHMARKS.glob("*.py") if p.name != "targets.py")   # its docstring's examples name ids

# A threshold a script writes itself: a constant named for a target (TARGET_S = 60.0, SHARE_TARGET = 0.90), a
# target or moonshot stored as a number or a bound in words ("target": 1.02, "target_s": 300, "target": "≤ 1 %"),
# a keyword given one (target=100.0), a "met" computed by a comparison with a number ("met": ratio <= 1.02), and a
# docstring or message that states one ("(target ≤ 0.5 s)", "target <= 2 s", "moonshot 4,000", "the ≤ 5 s target").
WRITTEN = {
    "a constant named for a target": re.compile(r"^\s*[A-Z_]*(?:TARGET|MOONSHOT)[A-Z_]*\s*[,=]", re.M),
    "a target stored as a number or a bound": re.compile(r"[\"'](?:target|moonshot)\w*[\"']\s*:\s*[-\d.\"'(]"),
    "a keyword given a number": re.compile(r"\b(?:target|moonshot)\w*\s*=\s*[-\d.]"),
    "met by a comparison with a number": re.compile(r"[\"']met[\"']\s*:[^,}\n]*[<>]=?\s*[-\d.]"),
    "a target stated in words": re.compile(r"\b(?:targets?|moonshots?)\b:?\s*(?:(?:[≤≥<>]=?|within|of)\s*)?[\d±]"
                                          r"|[≤≥]\s*\d[^.\n]{0,12}\b(?:targets?|moonshots?)\b", re.I),
}


def written_thresholds(text: str) -> list[str]:
    return [f"{what}: {m.group(0).strip()}" for what, pattern in WRITTEN.items() for m in pattern.finditer(text)]


def test_the_file_parses_and_every_entry_is_complete():
    declared = json.loads(targets.FILE.read_text())["targets"]
    assert set(declared) == set(targets.all_targets()) and len(declared) > 40
    stored = {json.loads(p.read_text()).get("benchmark") for p in (ROOT / "docs" / "results" / "data").glob("*.json")}
    for key, target in targets.all_targets().items():
        assert re.fullmatch(r"[a-z0-9_]+\.[a-z0-9_]+", key) and key.startswith(f"{target.benchmark}."), key
        assert (BENCHMARKS / f"{target.benchmark}.py").is_file() or target.benchmark in stored, key
        assert target.wording.endswith(".") and target.measure, key


def test_each_wording_states_its_own_bound():
    """The issue's sentence and the bound are one entry: the sentence names the number the bound is."""
    for key, target in targets.all_targets().items():
        for moonshot in (False, True) if target.moonshot is not None else (False,):
            number = re.search(r"\d[\d.,]*(?:e-\d+)?(?: ?(?:%|s|ms|min|GiB|×))?", target.shown(moonshot))
            if target.compare not in ("all", "true"):
                spoken = number.group(0).replace(" min", " minutes")
                assert number.group(0) in target.wording or spoken in target.wording, (key, number.group(0))


def test_every_target_is_used_by_a_benchmark_or_a_template():
    used = "\n".join(p.read_text() for p in [*SCRIPTS, *TEMPLATES.glob("*.j2")])
    unused = [key for key in targets.all_targets() if f'"{key}"' not in used
              and not (key.startswith("leaderboard_speed.") and 'f"leaderboard_speed.{step}"' in used)]
    assert not unused, f"targets no benchmark or template reads: {unused}"


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_no_benchmark_writes_a_threshold_of_its_own(script):
    assert written_thresholds(script.read_text()) == []


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_no_benchmark_compares_with_its_own_targets_numbers(script):
    """A bound of the script's own targets, written as a number beside a comparison, is the threshold again."""
    bounds = {b for t in targets.all_targets().values() if t.benchmark == script.stem
              for b in (t.bound, t.moonshot, t.limit() if t.bound is not None else None) if b not in (None, 0, 1)}
    compared = [float(n.replace("_", "")) for n in re.findall(r"[<>]=?\s*(\d[\d_]*(?:\.\d+)?(?:e-?\d+)?)\b",
                                                             script.read_text())]
    assert not bounds & set(compared), f"{script.name} compares with {sorted(bounds & set(compared))}"


@pytest.mark.parametrize("template", sorted(TEMPLATES.glob("*.j2")), ids=lambda p: p.name)
def test_no_template_writes_a_threshold_of_its_own(template):
    """A template reads a bound from the file (``target("id")``), never from a literal: pages.typed_figures finds a
    number in its text or expressions; this finds the shapes a threshold takes there."""
    assert written_thresholds(template.read_text()) == []


def test_the_scan_sees_a_threshold_written_in_a_script(tmp_path):
    script = ("TARGET_S, MOONSHOT_S = 15 * 60, 8 * 60\nSHARE_TARGET = 0.90\n"
              'figures = {"target": 1.02, "met": ratio <= 1.02, "target_s": 300}\n'
              'out = {"target": "≤ 1 %"}\nrun(target=100.0)\n"""The target: ≤ 60 s on 2 cores (moonshot 4,000)."""\n'
              'print(f"ratio {r:.4f} (target <= 1.03)")\n"""timed in a fresh process, the ≤ 5 s target."""\n')
    assert written_thresholds(script) == [
        "a constant named for a target: TARGET_S,", "a constant named for a target: SHARE_TARGET =",
        'a target stored as a number or a bound: "target": 1', 'a target stored as a number or a bound: "target_s": 3',
        'a target stored as a number or a bound: "target": "', "a keyword given a number: target=1",
        'met by a comparison with a number: "met": ratio <= 1', "a target stated in words: target: ≤ 6",
        "a target stated in words: moonshot 4", "a target stated in words: target <= 1",
        "a target stated in words: ≤ 5 s target"]


@pytest.mark.parametrize("target_id, figure, low, high, said", [
    ("harness_overhead.pair_ratio", 0.96, None, None, "met"),
    ("harness_overhead.pair_ratio", 1.03, None, None, "missed"),
    ("harness_overhead.pair_ratio", 0.96, 0.90, 1.12, "not resolved"),      # the spread reaches past 1.02
    ("harness_overhead.pair_ratio", 0.96, 0.90, 1.01, "met"),
    ("harness_overhead.pair_ratio", 1.05, 1.03, 1.10, "missed"),
    ("harness_overhead.pair_ratio", 1.00, 0.95, 1.02, "met"),                # the bound itself is on the ≤ side
    ("imagenet_throughput.import", 300, 240, 320, "not resolved"),
    ("datasheet_prediction.whole_mean", 0.9, 0.8, 1.0, "not resolved"),     # < 1: the spread's top is outside
    ("corruption_reference.ratio", [0.95, 1.08], None, None, "met"),        # every one within 10 % of 1
    ("corruption_reference.ratio", [0.95, 1.15], None, None, "missed"),
    ("corruption_reference.ratio", 1.0, 0.85, 1.15, "not resolved"),        # both edges inside the spread
    ("kernels_targets.allreduce", 0.6, None, None, "met"),
    ("kernels_targets.allreduce", 2.1, None, None, "missed"),
    ("prediction.whole_step", -0.15, None, None, "met"),
    ("prediction.whole_step", -0.35, None, None, "missed"),
    ("gpu_suite.cifar10_seeds", 9 / 10, None, None, "met"),
    ("gpu_suite.cifar10_seeds", 8 / 10, None, None, "missed"),
    ("hostile_input.handled", 102 / 103, None, None, "missed"),
    ("gpu_suite.torchrun", True, None, None, "met"),
    ("newcomer_imagenet.epoch", 71.8, None, None, "missed"),
    ("newcomer_imagenet.epoch", None, None, None, "not measured"),
    ("gpu_suite.fraction_of_peak", [0.16, None], None, None, "not measured"),
    ("mnist_scaling.accounting", [], None, None, "not measured"),
])
def test_the_one_rule(target_id, figure, low, high, said):
    assert targets.verdict(target_id, figure, low, high) == said


def test_a_moonshot_is_judged_by_the_same_rule():
    assert targets.verdict("first_hour.total", 500) == "met"
    assert targets.verdict("first_hour.total", 500, moonshot=True) == "missed"
    assert targets.verdict("prediction.whole_step", 0.08, moonshot=True) == "met"
    assert targets.judged("first_hour.total", 500) == {"target": "first_hour.total", "bound": "≤ 15 min",
                                                       "verdict": "met", "met": True, "moonshot": "missed"}
    assert targets.judged("harness_overhead.pair_ratio", 0.96, 0.9, 1.1)["met"] is None


def test_a_bound_reads_in_its_unit():
    shown = {key: t.text for key, t in targets.all_targets().items()}
    assert shown["harness_overhead.direct_share"] == "≤ 1 %" and shown["first_hour.total"] == "≤ 15 min"
    assert shown["gpu_suite.cifar10_seeds"] == "≥ 9 of 10 seeds" and shown["kernels_targets.allreduce"] == "within 2×"
    assert shown["prediction.whole_step"] == "within ±20 %" and shown["kernels_targets.agreement"] == "within 5 %"
    assert shown["datasheet_prediction.census_memory"] == "≤ 1 GiB" and shown["squad_features.rate"] == "≥ 2,000 questions/s"
    assert targets.get("imagenet_throughput.loader").moonshot_text == "≥ 1,000 images/s"


def test_a_malformed_entry_is_refused():
    with pytest.raises(ValueError, match="needs a bound"):
        targets.Target(id="a.b", benchmark="a", measure="m", compare="<=", wording="w.")
    with pytest.raises(ValueError, match="none of"):
        targets.Target(id="a.b", benchmark="a", measure="m", compare="~", wording="w.", bound=1)
    with pytest.raises(KeyError, match="no target 'a.b'"):
        targets.verdict("a.b", 1)
