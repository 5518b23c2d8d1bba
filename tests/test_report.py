"""Sweeps and the HTML report, the report opened in headless Chromium (Debian's package)."""

from __future__ import annotations

import re
import shutil

import pytest

from dawnbench.analysis.sweep import parse_grid
from dawnbench.experiments.sweep import run_sweep
from dawnbench.harness.options import RunOptions
from dawnbench.reports.html import build_report

from helpers import cells, render, write_run
from tiny_model_entry import TinyLinear


@pytest.mark.browser
def test_report_of_runs_in_chromium(tmp_path):
    for i, (tta, ep) in enumerate([(10.0, 1.0), (12.0, 1.0), (None, 2.0)]):
        write_run(tmp_path / "runs" / "A" / f"run{i}", i, tta, ep)
    hostile = "<script>document.title='pwned'</script>"
    write_run(tmp_path / "runs" / "B" / "run0", 0, 5.0, 0.5, entry=hostile)
    page = build_report(tmp_path / "runs", tmp_path / "out")
    html = page.read_text()
    assert "http://" not in html.replace("http://www.w3.org", "") and "https://" not in html  # no network
    dom, shot = render(page, tmp_path)
    rows = cells(dom, "groups")
    assert rows[0][0] == f"mnist · {hostile} · fp32".replace("<", "&lt;").replace(">", "&gt;")
    assert rows[1][:4] == ["mnist · small-cnn · fp32", "3", "2/3", "11.00"]
    assert "<title>dawnbench report" in dom and "pwned</title>" not in dom  # the script never ran
    assert len(re.findall(r'<img class="figure"[^>]+src="data:image/png;base64,', dom)) == 2
    assert shot.read_bytes()[:4] == b"\x89PNG" and shot.stat().st_size > 20_000


@pytest.mark.browser
def test_report_shows_resources_profiles_and_generalization(mnist_run_97, tmp_path):
    """A real run (its resource monitor) and a real profile of it: both on the page."""
    from dawnbench.cli.figures import profile_figures
    from dawnbench.experiments.generalization import GeneralizeOptions, generalize
    from dawnbench.experiments.profile import options_from_run, run_profile

    runs = tmp_path / "runs"
    shutil.copytree(mnist_run_97, runs / "A" / "run0")
    profile_figures(run_profile(options_from_run(runs / "A" / "run0", steps=2)))  # into the run's profile/
    generalize([runs / "A" / "run0"], GeneralizeOptions(suite=False, out=None))
    dom, _ = render(build_report(runs, tmp_path / "out"), tmp_path)
    rows = cells(dom, "resources")
    config = "mnist · small-cnn · fp32 · target 97 (unofficial)"
    assert rows[0][:2] == [config, "run0"] and float(rows[0][2]) > 0
    [gen] = cells(dom, "generalization")
    assert gen[:4] == [config, "run0", "small-cnn", "at target"] and gen[5] == "ok"
    assert "Profile: A/run0/profile" in dom
    assert len(re.findall(r'<img class="profile-figure"[^>]+src="data:image/png;base64,', dom)) == 2


@pytest.mark.browser
def test_report_of_mlperf_logs(tmp_path, mlperf_v05):
    dom, _ = render(build_report(mlperf_v05, tmp_path / "out"), tmp_path)
    names = [row[0] for row in cells(dom, "groups")]
    assert names[0] == "dgx1_multi_ngc18.11_mxnet/resnet" and len(names) == 7
    transformer = next(r for r in cells(dom, "groups") if r[0].endswith("transformer"))
    assert transformer[6] == "13.78 %"


def test_a_sweep_hands_on_what_it_measured_after_each_configuration(tiny_task, tmp_path):
    # benchmarks/gpu_suite.py stores the grid there, so a run stopped by a time limit keeps its cells
    seen: list[list[str]] = []
    options = RunOptions(task=tiny_task, entry=TinyLinear, out_dir=tmp_path / "sweep")
    sweep = run_sweep(options, parse_grid(["delay_s=0,0.001"]), ensure_data=lambda name: None,
                      config_done=lambda partial: seen.append([r["name"] for r in partial.rows]))
    assert seen == [["delay_s=0"], ["delay_s=0", "delay_s=0.001"]]
    assert [r["name"] for r in sweep.rows] == seen[-1]


@pytest.mark.browser
def test_sweep_folders_rows_and_report(tiny_task, tmp_path):
    options = RunOptions(task=tiny_task, entry=TinyLinear, runs=2, out_dir=tmp_path / "sweep")
    sweep = run_sweep(options, parse_grid(["delay_s=0,0.001"]), ensure_data=lambda name: None)
    assert [r["name"] for r in sweep.rows] == ["delay_s=0", "delay_s=0.001"]
    assert all(r["runs"] == 2 and r["successes"] == 2 for r in sweep.rows)
    assert sweep.rows[0]["tta_speedup"] == pytest.approx(1.0)
    assert sorted(p.name for p in (tmp_path / "sweep").iterdir()) == ["delay_s=0", "delay_s=0.001"]
    dom, _ = render(build_report(tmp_path / "sweep", tmp_path / "out"), tmp_path)
    assert [r[0] for r in cells(dom, "sweep")] == ["delay_s=0", "delay_s=0.001"]
    assert 'id="sweep-figure"' in dom
