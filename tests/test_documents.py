"""The one door the analysis commands read through (records/documents.py): a file of the wrong shape is a
one-paragraph error naming its field; a value that cannot be true leaves its row or document out with a
note — never drawn, counted or compared silently."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dawnbench.analysis.roofline import roofline
from dawnbench.analysis.similarity import similarity
from dawnbench.errors import DawnbenchError, FileError
from dawnbench.kernels import compare
from dawnbench.records import documents

from bad_inputs import _summary, kernels_doc
from helpers import write_run


def _write(path: Path, doc: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


def test_rows_that_cannot_be_true_are_left_out_with_their_reason():
    doc = kernels_doc()
    doc["rows"][0]["median_s"] = 1e-9                         # 99 PFLOP/s under a 300 GFLOP/s roof
    doc["rows"][1]["median_s"] = -2e-3
    kept, notes = documents.kernels(doc, Path("k.json"))
    assert [r.get("skipped") for r in kept["rows"]] == ["one call would take about 3 s"]
    assert "rows[0] left out" in notes[0] and "physically impossible" in notes[0] and "× the fp32 roof" in notes[0]
    assert "rows[1] left out: field 'median_s' must be > 0, not -0.002" in notes[1]


def test_an_all_reduce_row_as_kernels_allreduce_writes_it_is_read():
    """All-reduce rows have no problem set and no intensity (null), as kernels/allreduce.py writes them."""
    row = {"suite": "allreduce", "set": None, "params": {"floats": 1024}, "pass": "allreduce", "precision": "fp32",
           "median_s": 1e-4, "iqr_s": 1e-6, "repeats": 5, "calls": 50, "flops": 0.0, "bytes": 4096.0, "gflops": 0.0,
           "gbps": 0.04, "intensity": None, "fraction_of_roof": None, "world_size": 2, "backend": "gloo",
           "nnodes": 1, "algbw_gbps": 0.04, "busbw_gbps": 0.04, "sum_checked": True}
    kept, notes = documents.kernels({**kernels_doc(), "rows": [row]}, Path("k.json"))
    assert kept["rows"] == [row] and notes == []


def test_roofline_draws_what_is_sound_and_says_what_it_left_out(tmp_path):
    doc = kernels_doc()
    doc["rows"][1]["median_s"] = 1e308
    points = roofline([_write(tmp_path / "k" / "kernels.json", doc)])
    assert len(points["points"]) == 1 and any("rows[1] left out: field 'median_s' must be ≤ 10,000,000, not 1e+308" in n
                                              for n in points["notes"])


def test_a_run_whose_profile_is_left_out_names_the_profile_not_the_record(tmp_path):
    """A run's roofs are its profile's: the error says what is wrong with the profile (it blamed result.json)."""
    write_run(tmp_path / "run", 0, 10.0, 1.0)
    _summary(tmp_path / "run", lambda doc: doc["step"].update(intensity="x")).parent.rename(tmp_path / "run" / "profile")
    with pytest.raises(DawnbenchError) as caught:
        roofline([tmp_path / "run"])
    assert "profile/summary.json: field 'step.intensity' must be a valid number" in str(caught.value)


def test_a_damaged_file_in_a_folder_is_left_out_and_named_when_nothing_else_remains(tmp_path):
    (tmp_path / "k").mkdir()
    (tmp_path / "k" / "kernels.json").write_text(json.dumps(kernels_doc())[:200])       # cut short
    with pytest.raises(DawnbenchError) as caught:
        roofline([tmp_path])
    message = str(caught.value)
    assert "no usable profile or kernel result" in message and "kernels.json:1: not valid JSON" in message


def test_a_row_of_the_wrong_shape_is_left_out_naming_its_field_and_a_file_of_the_wrong_shape_is_refused(tmp_path):
    doc = kernels_doc()
    doc["rows"][0]["params"] = ["1760", 16]
    points = roofline([_write(tmp_path / "kernels.json", doc)])
    assert any("rows[0] left out: field 'params' must be a valid dictionary" in n for n in points["notes"])
    doc = kernels_doc()
    doc["rows"][0]["params"]["m"] = "1760"
    with pytest.raises(DawnbenchError, match="rows\\[0\\] left out: field 'params.m' must be a valid integer"):
        similarity([_write(tmp_path / "kernels.json", doc)])    # one configuration left: the note is in the error
    with pytest.raises(FileError, match="field 'roofs' must be a valid dictionary"):
        roofline([_write(tmp_path / "kernels.json", {**kernels_doc(), "roofs": "fast"})])


def test_another_machines_rows_that_cannot_be_true_are_not_compared_and_the_reason_is_kept(tmp_path):
    ours = kernels_doc()
    theirs = kernels_doc()
    theirs["rows"][0]["median_s"] = 0.0
    result = compare.against(ours, str(_write(tmp_path / "other.json", theirs)))
    assert [r["params"]["n"] for r in result["rows"]] == [32]                   # only the sound row met
    assert "rows[0] left out: field 'median_s' must be > 0, not 0.0" in result["left_out"][0]["reason"]


def test_a_profile_above_its_own_roof_or_with_a_share_over_one_is_left_out(tmp_path):
    profile = {"task": "mnist", "entry": "small-cnn", "precision": "fp32", "window_s": 1.0, "steps": 2,
               "samples_per_s": 100.0, "memory_bound_share": 0.4, "roofs": {"flops": {"fp32": 1e11},
                                                                          "bandwidth_bytes_per_s": 1e10},
               "step": {"time_s": 0.5, "flops": 1e10, "bytes": 1e9, "intensity": 10.0, "flops_per_s": 2e10}}
    assert documents.profile(profile, Path("s.json")) == (profile, [])
    high = {**profile, "step": {**profile["step"], "flops_per_s": 1e12}}
    doc, notes = documents.profile(high, Path("s.json"))
    assert doc is None and "physically impossible" in notes[0]
    with pytest.raises(FileError, match="field 'memory_bound_share' must be ≤ 1, not 1.7"):
        documents.profile({**profile, "memory_bound_share": 1.7}, Path("s.json"))


def test_a_run_with_negative_measures_is_left_out_of_similarity_with_a_note(tmp_path):
    for i, rate in enumerate((1000.0, 2000.0, 3000.0)):
        write_run(tmp_path / "runs" / f"r{i}", 0, 3.0, 0.5, entry=f"e{i}",
                  resources={"proc_cpu_pct": {"mean": 120.0 + i, "max": 150.0}},
                  throughput={"achieved_gflops": 3.0 + i, "samples_per_s": rate})
    write_run(tmp_path / "runs" / "bad", 0, 3.0, 0.5, entry="e9",
              resources={"proc_cpu_pct": {"mean": -120.0, "max": 150.0}}, throughput={"samples_per_s": 1.0})
    doc = similarity([tmp_path / "runs"])
    assert len(doc["configurations"]) == 3
    assert any("bad/result.json: field 'resources.proc_cpu_pct.mean' is -120.0" in n and "(left out)" in n
               for n in doc["notes"])


def test_a_refused_roofline_writes_neither_of_its_files(tmp_path, capsys):
    """The figure is someone else's: the command is refused before roofline.json is written too (it was written
    first, then blocked the next run)."""
    from dawnbench.cli import main

    from bad_inputs import _kernels

    out = tmp_path / "out"
    out.mkdir()
    (out / "roofline.png").write_text("mine")
    assert main(["roofline", str(_kernels(tmp_path)), "--out", str(out)]) == 2
    assert "roofline.png" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["roofline.png"] and (out / "roofline.png").read_text() == "mine"


def test_a_census_of_an_entry_without_its_task_is_refused_naming_the_field(mnist_ready, tmp_path):
    from dawnbench.experiments.census import count
    from dawnbench.prediction.on_gpu import predict_on_gpus

    count("mnist", batch=4, out=tmp_path / "c")
    doc = json.loads((tmp_path / "c" / "summary.json").read_text())
    del doc["task"]
    (tmp_path / "c" / "summary.json").write_text(json.dumps(doc))
    with pytest.raises(FileError, match="field 'task' is null: a census of an entry names the task"):
        predict_on_gpus(tmp_path / "c", ["H100"])

