"""Any model on any GPU from its datasheet (SPEC §24): the census, the datasheet, the kernel model, predict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dawnbench.errors import DawnbenchError
from dawnbench.prediction.gpu_model import kernel_model
from dawnbench.prediction.kernel_data import Kernel
from dawnbench.records.datasheet import FIELDS, catalog, catalog_name, check, datasheet
from dawnbench.records.ops import PHASES, read_ops

from helpers import run_cli

# small enough to count in a second, large enough that its matrix multiplies are not launch-bound on any GPU
TINY_BERT = {"model_type": "bert", "hidden_size": 512, "num_hidden_layers": 2, "num_attention_heads": 8,
             "intermediate_size": 2048, "vocab_size": 1000, "max_position_embeddings": 256}
SHEET = {"Device": "test GPU", "Mem_Bw": 1555, "Num_Sm": 108, "Core_Per_SM": 64, "Freq": 1410, "SingleFLOPs": 19492,
         "L2Cache": 40, "Dev_Mem": 40, "tensor_gflops": {"bf16": 312000}}


@pytest.fixture(scope="module")
def tiny_census(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("census")
    (folder / "config.json").write_text(json.dumps(TINY_BERT))
    code, out, err = run_cli(["profile", str(folder / "config.json"), "--census", "--batch", "8", "--seqlen", "128",
                              "--out", str(folder / "c")], seconds=120)
    assert code == 0, err
    return folder / "c"


def test_every_catalog_gpu_passes_its_own_checks_with_a_source_for_each_figure() -> None:
    gpus = catalog()
    assert {"H100-SXM-80GB", "H200-SXM-141GB", "A10G", "L40S", "T4", "L4"} <= set(gpus)
    for sheet in gpus.values():
        assert all(sheet.sources.get(field) for field in FIELDS), sheet.name
        assert not sheet.tensor_gflops or sheet.sources.get("tensor_gflops"), sheet.name


def test_a_name_is_found_in_any_case_and_deepbench_names_are_not_taken() -> None:
    assert catalog_name("h200") == "H200-SXM-141GB"
    assert datasheet("Tesla_T4").name == "T4"


@pytest.mark.parametrize(("field", "value", "says"), [
    ("Mem_Bw", 0, "memory bandwidth"), ("Mem_Bw", 200_000, "memory bandwidth"), ("Num_Sm", -4, "multiprocessors"),
    ("SingleFLOPs", 2_000_000, "fp32 throughput"), ("Mem_Bw", None, "missing"), ("Freq", "fast", "not a number"),
    ("Num_Sm", True, "not a number"), ("Num_Sm", 10.5, "whole number"), ("SingleFLOPs", 500, "does not go with"),
    ("Dev_Mem", 1e308, "memory")])
def test_an_impossible_datasheet_is_refused_naming_the_field(field: str, value: object, says: str) -> None:
    doc = {**SHEET, field: value} if value is not None else {k: v for k, v in SHEET.items() if k != field}
    with pytest.raises(DawnbenchError, match=says) as caught:
        check(doc, "my.json")
    assert "my.json" in str(caught.value) and field in str(caught.value)


def test_a_tensor_rate_below_the_fp32_one_is_refused() -> None:
    with pytest.raises(DawnbenchError, match="tensor_gflops.bf16"):
        check({**SHEET, "tensor_gflops": {"bf16": 10}}, "my.json")


def test_the_census_counts_each_phase_without_running_and_its_reader_takes_it(tiny_census: Path) -> None:
    summary = json.loads((tiny_census / "summary.json").read_text())
    phases = summary["census"]["phases"]
    assert all(phases[p]["calls"] for p in PHASES)
    assert phases["backward"]["flops"] > phases["forward"]["flops"] > 0
    rows = read_ops(tiny_census, census=True)
    assert {r["phase"] for r in rows} == set(PHASES)
    assert all(r["time_s"] == 0 for r in rows)
    memory = summary["census"]["memory"]
    assert memory["total_bytes"] == sum(memory[k] for k in ("parameters_bytes", "gradients_bytes",
                                                            "optimizer_bytes", "activations_bytes"))
    # what made it, as every evidence file says: the command, dawnbench's commit and tree, date, machine, software
    assert {"argv", "commit", "dirty", "date", "hardware", "software"} <= summary.keys() and summary["software"]["torch"]


def test_a_census_is_not_replaced_unasked(tiny_census: Path) -> None:
    config = tiny_census.parent / "config.json"
    code, _, err = run_cli(["profile", str(config), "--census", "--batch", "8", "--seqlen", "128", "--out",
                            str(tiny_census)], seconds=120)
    assert code != 0 and "--force" in err and "Traceback" not in err


@pytest.mark.slow   # fits the kernel model: about 10 s on an idle 2-core machine, minutes on a busy one
def test_predict_gives_each_phase_on_a_catalog_gpu_and_on_a_datasheet_file(tiny_census: Path, tmp_path: Path) -> None:
    (tmp_path / "mine.json").write_text(json.dumps(SHEET))
    # T4 is DeepBench's device name too: a census, which nothing ran, takes it as the catalog's datasheet
    code, out, err = run_cli(["predict", str(tiny_census), "--device", f"H100,{tmp_path / 'mine.json'},T4", "--json"],
                             seconds=300)
    assert code == 0, err
    doc = json.loads(out)
    h100, mine, t4 = doc["devices"]
    assert h100["device"]["name"] == "H100-SXM-80GB" and mine["device"]["origin"].endswith("mine.json")
    assert t4["device"]["kind"] == "datasheet"
    for d in (h100, mine):
        assert d["fits"] is True and d["largest_batch"] >= doc["batch_size"]
        assert d["memory_needed_gib"] <= d["memory_usable_gib"] and d["memory_held_gib"] <= d["memory_gib"]
        parts = sum(d[f"{p}_s"] for p in PHASES)
        assert d["step_s"] == pytest.approx(parts) and d["forward_s"] > 0 and d["backward_s"] > 0
    assert h100["step_s"] < mine["step_s"]          # an H100 has three times the A100's bandwidth and fp32 rate


def test_a_bad_datasheet_file_is_one_paragraph_not_a_traceback(tiny_census: Path, tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text(json.dumps({**SHEET, "Mem_Bw": 0}))
    code, _, err = run_cli(["predict", str(tiny_census), "--device", str(tmp_path / "bad.json")], seconds=120)
    assert code != 0 and "Mem_Bw" in err and "Traceback" not in err


def test_a_config_that_is_not_a_model_is_refused(tmp_path: Path) -> None:
    (tmp_path / "c.json").write_text(json.dumps({"hidden_size": 4}))
    code, _, err = run_cli(["profile", str(tmp_path / "c.json"), "--census", "--batch", "1", "--seqlen", "4",
                            "--out", str(tmp_path / "o")])
    assert code != 0 and "model_type" in err and "Traceback" not in err


@pytest.mark.slow   # counts BERT-large at batch 16 and a 10-billion-parameter model: a few seconds each
def test_a_step_that_cannot_fit_is_said_with_the_largest_batch_that_would(tmp_path: Path) -> None:
    bert_large = {**TINY_BERT, "hidden_size": 1024, "intermediate_size": 4096, "num_attention_heads": 16,
                  "num_hidden_layers": 24, "vocab_size": 30522, "max_position_embeddings": 512}
    huge = {**TINY_BERT, "hidden_size": 4096, "intermediate_size": 16384, "num_attention_heads": 32,
            "num_hidden_layers": 48, "vocab_size": 32000}
    for name, config in (("large", bert_large), ("huge", huge)):
        (tmp_path / f"{name}.json").write_text(json.dumps(config))
        code, _, err = run_cli(["profile", str(tmp_path / f"{name}.json"), "--census", "--batch", "16", "--seqlen",
                                "256", "--out", str(tmp_path / name)], seconds=120)
        assert code == 0, err
    code, out, err = run_cli(["predict", str(tmp_path / "large"), "--device", "T4-16GB", "--json"], seconds=300)
    assert code == 0, err
    [t4] = json.loads(out)["devices"]
    assert t4["fits"] is False and "cannot run at batch 16" in t4["why"] and t4["step_s"] > 0   # its time anyway
    assert 1 <= t4["largest_batch"] < 16 and f"the largest batch that fits is {t4['largest_batch']}" in t4["why"]
    assert json.loads(out)["ranking"] == []                                  # not ranked where it cannot run
    code, out, err = run_cli(["predict", str(tmp_path / "huge"), "--device", "T4-16GB", "--json"], seconds=300)
    [t4] = json.loads(out)["devices"]
    assert t4["fits"] is False and t4["largest_batch"] == 0 and "no batch fits" in t4["why"]


@pytest.mark.slow   # fits the kernel model: about 10 s on an idle 2-core machine, minutes on a busy one
def test_the_kernel_model_is_never_faster_than_the_datasheet_allows() -> None:
    model = kernel_model(("V100-PCIE-32GB",))        # the V100's timings left out, as the validation does
    big = Kernel("gemm", (1, 8192, 8192, 8192), 2.0 * 8192**3, 4.0 * 3 * 8192**2)
    for name in ("V100-PCIE-32GB", "H100-SXM-80GB", "T4"):
        sheet = catalog()[name]
        [seconds] = model.kernel_s([big], sheet)
        assert seconds >= big.flops / sheet.peak("fp32")[0]
    assert "V100-PCIE-32GB" not in model.learned_from


def test_a_bf16_census_counts_its_matrix_multiplies_in_bf16(tmp_path: Path) -> None:
    """Autocast does not reach the meta device; a lower precision is counted where it does (a user found every op
    of a 'bf16' census in fp32)."""
    (tmp_path / "config.json").write_text(json.dumps(TINY_BERT))
    code, _, err = run_cli(["profile", str(tmp_path / "config.json"), "--census", "--batch", "2", "--seqlen", "16",
                            "--precision", "bf16", "--out", str(tmp_path / "c")], seconds=120)
    assert code == 0, err
    rows = read_ops(tmp_path / "c", census=True)
    matmuls = [r for r in rows if r["op"] in ("aten::addmm", "aten::mm", "aten::bmm")]
    assert matmuls and all(r["precision"] == "bf16" for r in matmuls)
    optimizer = json.loads((tmp_path / "c" / "summary.json").read_text())["census"]["phases"]["optimizer"]
    assert optimizer["bytes"] > 0                       # it stepped the model's own parameters


def test_the_largest_batch_that_fits_is_the_same_counted_above_or_below_it(tmp_path: Path) -> None:
    """The activations' part no batch changes is counted apart, so the largest batch said from a census above it
    is one that a census at that batch says fits, and one more does not."""
    from dawnbench.prediction.on_gpu import held
    from dawnbench.profiling.census import census, hf_config_model
    (tmp_path / "config.json").write_text(json.dumps(TINY_BERT))
    model = hf_config_model(tmp_path / "config.json", "train")
    sheet = check({**SHEET, "Dev_Mem": 1}, "small.json")
    counted = {b: census(model, b, 256, "train")["summary"]["census"] for b in (2, 400)}
    largest = held(counted[400], sheet)["largest_batch"]
    assert held(counted[2], sheet)["largest_batch"] == largest and 2 < largest < 400
    assert held(census(model, largest, 256, "train")["summary"]["census"], sheet)["fits"]
    assert not held(census(model, largest + 1, 256, "train")["summary"]["census"], sheet)["fits"]


def test_head_counts_a_config_for_squad_fine_tuning(tmp_path: Path) -> None:
    """--head qa: BERT built with its question-answering head (a start and an end a sequence), not pre-training's."""
    (tmp_path / "config.json").write_text(json.dumps(TINY_BERT))
    counted = {}
    for head in ("qa", "pretraining"):
        code, out, err = run_cli(["profile", str(tmp_path / "config.json"), "--census", "--batch", "2", "--seqlen",
                                  "16", "--head", head, "--out", str(tmp_path / head), "--json"], seconds=120)
        assert code == 0, err
        counted[head] = json.loads(out)["census"]
    assert counted["qa"]["model"].endswith("(qa head)")
    # the pre-training head adds a vocabulary-wide decoder and next-sentence classifier: more parameters, a larger loss
    assert counted["qa"]["parameters"] < counted["pretraining"]["parameters"]
    assert counted["qa"]["phases"]["loss"]["bytes"] < counted["pretraining"]["phases"]["loss"]["bytes"]


def test_the_same_datasheet_in_two_files_is_one_gpu(tmp_path: Path) -> None:
    from dawnbench.prediction.on_gpu import sheets
    for name in ("a.json", "b.json"):
        (tmp_path / name).write_text(json.dumps(SHEET))
    assert len(sheets([str(tmp_path / "a.json"), str(tmp_path / "b.json")])) == 1
    (tmp_path / "b.json").write_text(json.dumps({**SHEET, "Mem_Bw": 900}))
    with pytest.raises(DawnbenchError, match="different figures"):
        sheets([str(tmp_path / "a.json"), str(tmp_path / "b.json")])


def test_the_python_api_refuses_what_is_not_a_path_in_one_paragraph() -> None:
    from dawnbench.analysis import compare_paths
    from dawnbench.experiments.census import count
    from dawnbench.prediction.on_gpu import predict_on_gpus
    for call in (lambda: compare_paths(None, None), lambda: predict_on_gpus(None, ["H100"]),
                 lambda: count(None, batch=2)):
        with pytest.raises(DawnbenchError, match="None"):
            call()
