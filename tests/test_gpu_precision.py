"""A census in the precision a GPU runs, and a GPU's efficiency predicted from its datasheet (issue 77)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from dawnbench.errors import DawnbenchError
from dawnbench.prediction.efficiency import Efficiency, headroom
from dawnbench.prediction.kernel_data import launches
from dawnbench.profiling.gpu_autocast import CudaAutocast
from dawnbench.records.datasheet import catalog, check
from dawnbench.records.kernel_classes import CONV_INPUTS, CONV_PARAMS, ELEMENTWISE, op_class, shares
from dawnbench.records.ops import read_ops

from helpers import run_cli

TINY_BERT = {"model_type": "bert", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
             "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 64}
SHEET = {"Device": "test GPU", "Mem_Bw": 1555, "Num_Sm": 108, "Core_Per_SM": 64, "Freq": 1410, "SingleFLOPs": 19492,
         "L2Cache": 40, "Dev_Mem": 40, "tensor_gflops": {"bf16": 312000}}


@pytest.fixture(scope="module")
def censuses(tmp_path_factory) -> dict[str, Path]:
    """A tiny BERT counted in each precision (one process: about a second each)."""
    folder = tmp_path_factory.mktemp("precisions")
    (folder / "config.json").write_text(json.dumps(TINY_BERT))
    out = {}
    for precision in ("fp32", "tf32", "bf16", "fp16"):
        code, _, err = run_cli(["profile", str(folder / "config.json"), "--census", "--batch", "2", "--seqlen", "16",
                                "--precision", precision, "--out", str(folder / precision)], seconds=120)
        assert code == 0, err
        out[precision] = folder / precision
    return out


def _ops(folder: Path, phase: str | None = None) -> dict[str, set[str]]:
    """Each op of a census's phase (all phases: None) with the precisions it was counted in."""
    out: dict[str, set[str]] = {}
    for row in read_ops(folder, census=True):
        if phase is None or row["phase"] == phase:
            out.setdefault(row["op"].removeprefix("aten::"), set()).add(row["precision"])
    return out


def test_bf16_sends_matrix_multiplies_down_and_keeps_cuda_fp32_ops_in_fp32(censuses: dict[str, Path]) -> None:
    """CUDA's autocast lists, not the CPU's: layer norm and softmax stay in fp32 (the CPU keeps them in bf16)."""
    forward = _ops(censuses["bf16"], "forward")
    assert forward["addmm"] == {"bf16"} and forward["bmm"] == {"bf16"}
    assert forward["native_layer_norm"] == {"fp32"} and forward["_softmax"] == {"fp32"}
    backward = _ops(censuses["bf16"], "backward")
    assert {"mm", "bmm"} <= set(backward) and backward["mm"] == {"bf16"}       # the backward follows the forward
    assert "bf16" in forward["_to_copy"]                                         # the casts autocast makes are counted


def test_a_weight_is_cast_once_per_forward_as_autocast_caches_it() -> None:
    layer = torch.nn.Linear(8, 8, device="meta")
    casts = []

    class Count(torch.utils._python_dispatch.TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func._overloadpacket.__name__ == "_to_copy":
                casts.append(args[0].shape)
            return func(*args, **(kwargs or {}))

    x = torch.empty(4, 8, device="meta", dtype=torch.bfloat16)
    with Count(), CudaAutocast(torch.bfloat16):
        layer(x)
        layer(x)
    assert casts.count(torch.Size([8, 8])) == 1 and casts.count(torch.Size([8])) == 1


def test_tf32_marks_only_matrix_multiplies_and_convolutions(censuses: dict[str, Path]) -> None:
    ops = _ops(censuses["tf32"])
    assert ops["addmm"] == {"tf32"} and ops["mm"] == {"tf32"}
    assert ops["native_layer_norm"] == {"fp32"} and ops["_softmax"] == {"fp32"}


def test_fp16_unscales_every_gradient_in_one_op_as_grad_scaler_does(censuses: dict[str, Path]) -> None:
    optimizer = _ops(censuses["fp16"], "optimizer")
    assert "_amp_foreach_non_finite_check_and_unscale_" in optimizer
    assert "_amp_foreach_non_finite_check_and_unscale_" not in _ops(censuses["bf16"], "optimizer")


def test_the_optimizer_steps_as_a_few_multi_tensor_kernels_not_one_per_parameter(censuses: dict[str, Path]) -> None:
    rows = [r for r in read_ops(censuses["fp32"], census=True) if r["phase"] == "optimizer"]
    assert rows and all(r["op"].startswith("aten::_foreach_") for r in rows)      # no state made, no per-tensor op
    kernels = [launches(r) for r in rows]
    assert all(k is not None and 1 <= k <= 3 for k in kernels), kernels
    assert sum(r["calls"] for r in rows) < 12                                      # AdamW's foreach ops, once each


def test_launches_follow_multi_tensor_apply_limits() -> None:
    row = {"args": "tensors=400 chunks=100 lists=4"}
    assert launches(row) == math.ceil(400 / 36)                 # depth 4: 36 tensors a launch
    assert launches({"args": "tensors=2 chunks=1000 lists=1"}) == math.ceil(1000 / 320)   # 320 blocks a launch
    assert launches({"args": "stride=1x1"}) is None


def test_a_convolution_backward_is_a_convolution_class_not_elementwise() -> None:
    assert op_class("aten::convolution_backward") == CONV_PARAMS != ELEMENTWISE
    row = {"op": "aten::convolution_backward", "shapes": "8x16x6x6, 8x3x8x8, 16x3x3x3", "flops": 2 * 2 * 8 * 16 * 36 * 27,
           "calls": 1}
    assert dict(shares(row)) == {CONV_INPUTS: 0.5, CONV_PARAMS: 0.5}


def test_an_unseen_gpus_efficiency_comes_from_its_power_per_flop_not_its_name() -> None:
    sheets = catalog()
    own = {"V100-PCIE-32GB": 0.2, "A100-PCIE-40GB": 0.3, "P100-PCIE-16GB": 0.4, "T4": 0.9}
    fit = Efficiency.fit(own, sheets, "fp32", compute=True)
    lean, rich = (check({**SHEET, "Power_W": power, "Process_Nm": 12}, "mine.json") for power in (60, 400))
    assert fit.offset(lean)[0] > fit.offset(rich)[0]                       # power-bound: further from its datasheet
    assert fit.offset(rich)[0] == pytest.approx(fit.c)
    assert "power to spare" in fit.offset(check(SHEET, "bare.json"))[1]     # no Power_W: said, and no power term
    renamed = check({**SHEET, "Device": "T4", "Power_W": 400, "Process_Nm": 12}, "t4.json")
    assert fit.offset(renamed)[0] == pytest.approx(fit.offset(rich)[0])   # a file named like a learned GPU is not it


def test_headroom_scales_with_the_process() -> None:
    a, b = (check({**SHEET, "Power_W": 300, "Process_Nm": nm}, "x.json") for nm in (12, 6))
    assert headroom(b, "fp32") == pytest.approx(4 * headroom(a, "fp32"))


@pytest.mark.parametrize(("field", "value"), [("Power_W", 0), ("Power_W", 1e308), ("Process_Nm", -3),
                                              ("Process_Nm", "7nm"), ("Power_W", True)])
def test_an_impossible_power_or_process_is_refused_naming_the_field(field: str, value: object) -> None:
    with pytest.raises(Exception, match=field):
        check({**SHEET, field: value}, "mine.json")


def test_a_cached_model_is_read_only_when_it_is_this_users_own_and_a_model(tmp_path: Path) -> None:
    import os
    import pickle

    from dawnbench.prediction.gpu_model import _cached
    path = tmp_path / "kernel-model-x.pickle"
    path.write_bytes(pickle.dumps({"not": "a model"}))
    os.chmod(path, 0o600)
    assert _cached(path) is None                         # a pickle of anything else is not taken
    path.write_bytes(b"\x80\x04garbage")
    assert _cached(path) is None                         # a damaged file: refitted, no traceback
    assert _cached(tmp_path / "absent.pickle") is None


class _Planted:
    """A pickle that would run a command when loaded."""

    def __init__(self, proof: Path) -> None:
        self.proof = proof

    def __reduce__(self) -> tuple:
        import os
        return os.system, (f"touch {self.proof}",)


def test_a_planted_pickle_in_the_cache_runs_nothing(tmp_path: Path) -> None:
    """Only a kernel model's own classes and numpy's arrays may be named by the cached file: a pickle that calls
    os.system is refused before anything runs — whoever wrote it, through a link or in a folder others can write."""
    import os
    import pickle

    from dawnbench.prediction.gpu_model import _cached
    folder = tmp_path / "models"
    folder.mkdir(mode=0o700)
    path, proof = folder / "kernel-model-x.pickle", tmp_path / "pwned"
    path.write_bytes(pickle.dumps(_Planted(proof)))
    os.chmod(path, 0o600)
    assert _cached(path) is None and not proof.exists()
    (folder / "link.pickle").symlink_to(path)
    assert _cached(folder / "link.pickle") is None and not proof.exists()
    os.chmod(folder, 0o777)
    assert _cached(path) is None and not proof.exists()


@pytest.mark.slow   # two fits of the kernel model, a few seconds each on an idle machine
def test_a_fresh_fit_gives_the_cached_model(censuses: dict[str, Path], tmp_path: Path, monkeypatch) -> None:
    from dawnbench.prediction.gpu_model import fit, kernel_model, predict_ops
    monkeypatch.setenv("DAWNBENCH_CACHE", str(tmp_path))
    kernel_model.cache_clear()
    cached = kernel_model(("T4",))                       # fitted, then written
    kernel_model.cache_clear()
    again = kernel_model(("T4",))                        # read back
    fresh = fit(("T4",))
    rows = read_ops(censuses["bf16"], census=True)
    for sheet in (catalog()["H100-SXM-80GB"], catalog()["T4"]):
        times = [predict_ops(rows, sheet, m)["op_s"] for m in (cached, again, fresh)]
        assert times[0] == times[1] == pytest.approx(times[2], rel=1e-9)
    assert len(list(tmp_path.glob("models/kernel-model-*.pickle"))) == 1
    kernel_model.cache_clear()


def test_a_configs_saved_dtype_does_not_change_the_precision_counted(tmp_path: Path) -> None:
    """A checkpoint saved in fp16 (``torch_dtype``) is still trained with fp32 weights: --precision decides."""
    (tmp_path / "config.json").write_text(json.dumps({**TINY_BERT, "torch_dtype": "float16"}))
    code, _, err = run_cli(["profile", str(tmp_path / "config.json"), "--census", "--batch", "2", "--seqlen", "16",
                            "--out", str(tmp_path / "c")], seconds=120)
    assert code == 0, err
    assert {r["precision"] for r in read_ops(tmp_path / "c", census=True)} == {"fp32"}


@pytest.mark.parametrize("config", [{"model_type": "gpt2", "n_embd": 64, "n_layer": 1, "n_head": 4, "vocab_size": 100,
                                     "n_positions": 256}, "cifar10"])
def test_the_census_counts_the_activations_a_real_step_saves(config: object, tmp_path: Path) -> None:
    """Against a real step on this CPU, the saved-tensor hooks counting each storage once (the benchmark's memory
    section at full size; a GPT-2 layer's dropout masks once counted at four bytes an element, not one)."""
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from datasheet_prediction import memory_check
    checked = memory_check(config, 2, 256 if isinstance(config, dict) else None, tmp_path)
    assert checked["ratio"] == pytest.approx(1.0, abs=0.05)


def test_memory_is_held_in_gib_with_the_contexts_and_allocators_allowances() -> None:
    from dawnbench.prediction.on_gpu import CONTEXT_BYTES, FRAGMENTATION, held
    gib = 2**30
    sheet = check({**SHEET, "Dev_Mem": 80}, "h.json")          # "80 GB" as vendors print it: 80 GiB
    memory = {"total_bytes": 60 * gib, "activations_bytes": 40 * gib, "activations_fixed_bytes": 0}
    fits = held({"batch": 8, "memory": memory}, sheet)
    assert fits["fits"] and fits["memory_usable_gib"] == pytest.approx((80 - CONTEXT_BYTES / gib) / (1 + FRAGMENTATION))
    assert fits["memory_held_gib"] == pytest.approx(60 * (1 + FRAGMENTATION) + CONTEXT_BYTES / gib)
    over = held({"batch": 8, "memory": {"total_bytes": 83.1e9, "activations_bytes": 60e9,
                                        "activations_fixed_bytes": 4e9}}, sheet)
    assert over["fits"] is False and "77.4 GiB of tensors" in over["why"]
    # the activations' fixed part (4e9) counts with the weights; only the rest grows with the batch
    assert over["largest_batch"] == math.floor(((80 * gib - CONTEXT_BYTES) / 1.1 - 27.1e9) / (56e9 / 8))


def test_a_census_refuses_a_step_in_float64(tmp_path: Path) -> None:
    """No datasheet gives a GPU's float64 rate: a step in float64 is refused, not costed as fp32."""
    from dataclasses import replace

    from dawnbench.profiling.census import census, hf_config_model
    (tmp_path / "config.json").write_text(json.dumps(TINY_BERT))
    model = hf_config_model(tmp_path / "config.json", "train")
    with pytest.raises(DawnbenchError, match="float64"):
        census(replace(model, model=model.model.double()), 1, 8, "train")


def test_a_census_read_back_recounts_every_row_and_takes_lists_past_a_dimension(tmp_path: Path) -> None:
    """Every row's FLOPs and bytes are recounted from its call, and the optimizer's rows of a model of more than
    2**31 parameters (their lists' elements in all, past any one dimension) are read, not left out."""
    from dawnbench.profiling.census import census, hf_config_model
    from dawnbench.records.census import read_census, write_census
    (tmp_path / "config.json").write_text(json.dumps({**TINY_BERT, "vocab_size": 40_000_000, "hidden_size": 64}))
    doc = census(hf_config_model(tmp_path / "config.json", "train"), 1, 8, "train")
    assert doc["summary"]["census"]["parameters"] > 2**31
    write_census(doc, tmp_path / "c")
    notes: list[str] = []
    rows, summary = read_census(tmp_path / "c", notes)
    assert not notes
    optimizer = [r for r in rows if r["phase"] == "optimizer"]
    assert optimizer and sum(r["calls"] for r in optimizer) == summary["census"]["phases"]["optimizer"]["calls"]
    assert all(r["call"] for r in rows if r["flops"] or r["bytes"])
