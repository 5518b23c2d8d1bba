"""The memory-bound suite and whole steps (SPEC §19 fifth suite, §23): calls recorded and made again, the
applications set, class curves, the host floor, a profile's run, and no op's own time in its prediction."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from dawnbench.cli import main
from dawnbench.errors import DawnbenchError
from dawnbench.opcalls.calls import check_call, encode, layouts, replay, traffic
from dawnbench.prediction.devices import DeviceModel
from dawnbench.prediction.predict import predict
from dawnbench.records.ops import UNMATCHED, grouped_notes, read_ops, write_ops
from dawnbench.records.problems import applications, problems, quick


class _Recorder(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, int, str]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func.namespace == "aten":
            self.calls.append((encode(func, args, kwargs), traffic(func, args, kwargs, out), layouts(args, kwargs)))
        return out


def _a_training_step() -> list[tuple[str, int, str]]:
    """Every ATen call of one step of a small network with the ops the suite covers: a channels-last convolution,
    batch and layer norm, ReLU, max pooling, dropout, an embedding, attention on strided views, a loss, Adam."""
    torch.manual_seed(0)
    cnn = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                              torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(4 * 8 * 8, 10))
    cnn = cnn.to(memory_format=torch.channels_last)
    embed, norm = torch.nn.Embedding(50, 16), torch.nn.LayerNorm(16)
    attention = torch.nn.MultiheadAttention(16, 2, batch_first=True)
    head = torch.nn.Linear(16, 4)     # as many outputs as the batch has samples: a span head's 2 at batch 2
    wide = torch.nn.Linear(16, 28)    # a weight of the flattened tokens' shape, 28×16: BERT-base's 768×3072 at batch 2
    params = [*cnn.parameters(), *embed.parameters(), *norm.parameters(), *attention.parameters(), *head.parameters(),
              *wide.parameters()]
    optimizer = torch.optim.Adam(params, lr=1e-3)
    images = torch.randn(4, 3, 16, 16).to(memory_format=torch.channels_last)
    labels, words, spans = torch.randint(0, 10, (4,)), torch.randint(0, 50, (4, 7)), torch.randint(0, 4, (28,))
    recorder = _Recorder()
    with recorder:
        hidden = norm(embed(words))
        loss = torch.nn.functional.cross_entropy(cnn(images), labels) + \
            torch.nn.functional.dropout(attention(hidden, hidden, hidden)[0], 0.1).sum() + \
            torch.nn.functional.cross_entropy(head(hidden).flatten(0, 1), spans) + wide(hidden).pow(2).mean()
        loss.backward()
        optimizer.step()
    return recorder.calls


def test_every_call_of_a_training_step_is_made_again_with_its_traffic():
    calls = _a_training_step()
    names = {json.loads(c)["op"].split(".")[0] for c, _, _ in calls}
    assert {"aten::convolution", "aten::native_batch_norm", "aten::native_layer_norm", "aten::max_pool2d_with_indices",
            "aten::embedding", "aten::bmm", "aten::bernoulli_"} <= names
    for call, moved, _ in calls:
        if moved == 0:                            # a view: the census records no call for it
            continue
        if check_call(call):      # .item() and an unsafe view: refused by rule, nothing else
            assert json.loads(call)["op"].split(".")[0] in ("aten::_local_scalar_dense", "aten::_unsafe_view")
            continue
        fn, replayed = replay(call, torch.device("cpu"))
        fn()
        assert replayed == moved, call[:120]      # the same minimum traffic as the census counted
    # layouts: the convolution's input and weight channels-last, attention's bmm on strided views
    conv = next(lay for c, _, lay in calls if c.startswith('{"op":"aten::convolution.'))
    assert conv.startswith("cl, cl")
    assert any(lay != "c, c" and c.startswith('{"op":"aten::bmm.') for c, _, lay in calls)


@pytest.mark.parametrize("text, why", [
    ("", "one line of JSON"),
    ("{", "not JSON"),
    ('{"op": "os::system.default", "args": {}}', "not an ATen overload"),
    ('{"op": "aten::no_such_op.default", "args": {}}', "no such ATen overload"),
    ('{"op": "aten::relu.default", "args": {"self": {"t": [1e308], "d": "float32"}}}', "shape"),
    ('{"op": "aten::relu.default", "args": {"self": {"t": [0, -3], "d": "float32"}}}', "shape"),
    ('{"op": "aten::relu.default", "args": {"self": {"t": [4], "d": "complex128"}}}', "dtype"),
    ('{"op": "aten::relu.default", "args": {"self": {"t": [4, 4], "d": "float32", "st": [1]}}}', "strides"),
    ('{"op": "aten::as_strided.default", "args": {"self": {"t": [4], "d": "float32"}, "size": [4], "stride": [1099511627776]}}',
     "memory geometry"),
    ('{"op": "aten::new_zeros.default", "args": {"self": {"t": [1], "d": "float32"}, "size": [1073741824, 1073741824]}}',
     "more than"),
    # an outsider's attack: a view's geometry read past its storage (a segfault), a decomposition with no bound on its
    # time, nesting past the parser, a dtype that is a list, an attribute that is no overload
    ('{"op":"aten::_reshape_alias_copy.default","args":{"self":{"t":[4],"d":"float32"},"size":[100000],"stride":[1000]}}',
     "not made again"),
    ('{"op":"aten::empty_strided.default","args":{"size":[4],"stride":[1]}}', "not made again"),
    ('{"op":"aten::linalg_eig.default","args":{"self":{"t":[8000,8000],"d":"float32","st":[0,0]}}}', "not made again"),
    ("[" * 5000, "nests deeper"),
    ('{"op":"aten::relu.default","args":{"self":{"t":[4],"d":["float32"]}}}', "dtype"),
    ('{"op":"aten::add.__call__","args":{}}', "not an ATen overload"),
])
def test_a_call_that_cannot_be_made_says_why(text, why):
    assert why in check_call(text)
    with pytest.raises(ValueError, match=why):
        replay(text, torch.device("cpu"))


@pytest.mark.parametrize("call", [
    '{"op": "aten::relu.default", "args": {"self": {"t": [65536, 65536], "d": "float32"}}}',
    '{"op":"aten::relu.default","args":{"self":{"t":[1073741824],"d":"float32","st":[0]}}}',   # one element, read wide
    '{"op":"aten::repeat.default","args":{"self":{"t":[1024],"d":"float32"},"repeats":[1000,1000]}}',
    '{"op":"aten::arange.default","args":{"end":1e11}}',
    '{"op":"aten::empty.memory_format","args":{"size":[1048575,1048575,true]}}',
])
def test_a_call_too_large_to_allocate_is_refused_before_anything_is_made(call):
    """Its tensors, or what it would write (counted on the meta device first), past the budget."""
    with pytest.raises(ValueError, match="more than"):
        replay(call, torch.device("cpu"))


def test_a_kernels_file_is_never_overwritten_and_its_copies_never_decide_a_time(tmp_path):
    from dawnbench.kernels.run import keep_earlier

    (tmp_path / "kernels.json").write_text("{}")
    assert keep_earlier(tmp_path / "kernels.json") == tmp_path / "kernels-1.json"
    assert (tmp_path / "kernels-1.json").read_text() == "{}" and not (tmp_path / "kernels.json").exists()
    moved = 64 * 64 * 4 * 2
    kernels = _kernels_file(tmp_path / "k.json", [_replay_row(RELU, moved, 5e-5, "elementwise"),
                                                  _replay_row(RELU, moved, 100.0, "elementwise")])
    model = DeviceModel.measured(kernels)
    assert len(model.rows) == 1 and model.rows[0].seconds == 5e-5 and any("repeats" in n for n in model.notes)


def test_the_applications_set_is_the_reference_entries_own_calls_each_saying_where_it_came_from():
    rows = applications()
    assert rows and all(p.replay and p.params["entry"] and p.params["share"] >= 0.01 for p in rows)
    memory = problems("memory", "training")
    assert memory and all(p.suite == "memory" for p in memory)
    assert {p.params["class"] for p in memory} >= {"elementwise", "normalisation", "pooling"}
    assert 0 < len(quick("memory")) < len(memory)
    assert all(check_call(p.params["call"]) is None for p in rows)


def _kernels_file(path: Path, rows: list[dict]) -> Path:
    path.write_text(json.dumps({"kind": "dawnbench-kernels", "version": 1, "rows": rows, "hardware": {"cpu": "test",
                                "device": "cpu"}, "roofs": {"flops": {"fp32": 1e11}, "bandwidth_bytes_per_s": 1e10}}))
    return path


def _replay_row(call: str, moved: int, seconds: float, cls: str, suite: str = "memory") -> dict:
    return {"suite": suite, "set": "applications", "pass": "forward", "precision": "fp32",
            "params": {"op": json.loads(call)["op"], "class": cls, "pass": "forward", "precision": "fp32",
                       "flops": 0.0, "bytes": float(moved), "call": call},
            "median_s": seconds, "flops": 0.0, "bytes": float(moved)}


def _one_op_profile(folder: Path, call: str, moved: int, op: str, time_s: float, dispatch: bool = False,
                    run: dict | None = None) -> Path:
    folder.mkdir(parents=True)
    write_ops([{"op": op, "shapes": "64x64", "dtype": "float32", "precision": "fp32", "calls": 2, "time_s": time_s,
                "share": 1.0, "flops": 0.0, "bytes": 2.0 * moved, "intensity": 0.0, "flops_per_s": None,
                "bytes_per_s": None, "fraction_of_roof": None, "bound": "memory", "args": "", "layout": "c",
                "call": call}], folder / "ops.tsv")
    summary = {"task": "mnist", "entry": "small-cnn", "precision": "fp32", "device": "cpu", "steps": 2,
               "window_s": time_s / 0.9, "samples_per_s": 64 * 2 / (time_s / 0.9),
               "roofs": {"flops": {"fp32": 1e11}, "bandwidth_bytes_per_s": 1e10}}
    if dispatch:
        summary["dispatch_s"] = {"elementwise": 2e-4, "matrix multiply": 3e-4, "convolution": 4e-4}
    if run:
        summary["run"] = run
    (folder / "summary.json").write_text(json.dumps(summary))
    return folder


RELU = '{"op":"aten::relu.default","args":{"self":{"t":[64,64],"d":"float32"}}}'
GELU = '{"op":"aten::gelu.default","args":{"self":{"t":[64,64],"d":"float32"},"approximate":"none"}}'


def test_an_op_takes_its_own_calls_time_else_its_class_curve_else_the_roofline(tmp_path):
    moved = 64 * 64 * 4 * 2
    kernels = _kernels_file(tmp_path / "kernels.json", [_replay_row(RELU, moved, 5e-5, "elementwise")])
    own = predict(_one_op_profile(tmp_path / "relu", RELU, moved, "aten::relu", 1e-3), [str(kernels)], epochs=1)
    [d] = own["devices"]
    assert d["ops"][0]["from"] == "measured" and d["ops"][0]["predicted_s"] == pytest.approx(5e-5)   # a call a step
    # a GELU of the same size has no row of its own: the elementwise class's efficiency (one point: 1.6e-5 s of
    # roofline over 5e-5 s) at its own roofline
    other = predict(_one_op_profile(tmp_path / "gelu", GELU, moved, "aten::gelu", 1e-3), [str(kernels)], epochs=1)
    [d] = other["devices"]
    assert d["ops"][0]["from"] == "curve" and d["ops"][0]["predicted_s"] == pytest.approx(5e-5, rel=1e-6)
    # no rows of the class at all: the bare roofline, said per class
    norm = _kernels_file(tmp_path / "norm.json", [_replay_row(RELU, moved, 5e-5, "normalisation")])
    [d] = predict(tmp_path / "gelu", [str(norm)], epochs=1)["devices"]
    assert d["ops"][0]["from"] == "roofline" and any("elementwise" in n and "bare roofline" in n for n in d["notes"])


def test_no_ops_measured_time_reaches_its_prediction(tmp_path):
    """The profile's op times scaled a thousandfold: every op's prediction is unchanged."""
    moved = 64 * 64 * 4 * 2
    kernels = _kernels_file(tmp_path / "kernels.json", [_replay_row(RELU, moved, 5e-5, "elementwise")])
    for name, seconds in (("a", 1e-3), ("b", 1.0)):
        _one_op_profile(tmp_path / name, RELU if name == "a" else RELU, moved, "aten::relu", seconds)
    for device in (str(kernels), "V100"):
        [a] = predict(tmp_path / "a", [device], epochs=1)["devices"]
        [b] = predict(tmp_path / "b", [device], epochs=1)["devices"]
        assert [o["predicted_s"] for o in a["ops"]] == [o["predicted_s"] for o in b["ops"]]


def test_a_step_on_an_accelerator_is_never_faster_than_its_host_can_issue_it(tmp_path):
    moved = 64 * 64 * 4 * 2
    folder = _one_op_profile(tmp_path / "p", RELU, moved, "aten::relu", 1e-3, dispatch=True)
    [d] = predict(folder, ["V100"], epochs=1)["devices"]
    assert d["host_bound"] and d["step_s"] == pytest.approx(1 * 2e-4)   # one call a step at 0.2 ms
    assert any("the host binds" in n for n in d["notes"])
    assert d["op_s"] < d["step_s"]


def test_a_profile_made_from_a_run_carries_its_epochs_to_target(tmp_path):
    folder = _one_op_profile(tmp_path / "p", RELU, 1, "aten::relu", 1e-3,
                             run={"dir": "runs/x", "epochs_to_target": 2.5, "samples_per_epoch": 6400})
    doc = predict(folder, ["V100"])
    assert doc["epochs_to_target"] == 2.5 and "runs/x" in doc["epochs_from"]
    assert doc["samples_per_epoch"] == 6400 and doc["steps_per_epoch"] == pytest.approx(100)
    assert doc["devices"][0]["tta_s"] == pytest.approx(doc["devices"][0]["epoch_s"] * 2.5)


def test_a_runs_epochs_time_only_the_target_they_were_reached_at(tmp_path):
    """A run trained to 97 % gives no epochs to mnist's 99 %: refused, naming both targets and the way out."""
    run = {"dir": "runs/x", "epochs_to_target": 2.5, "samples_per_epoch": 6400, "threshold": 97.0}
    folder = _one_op_profile(tmp_path / "p", RELU, 1, "aten::relu", 1e-3, run=run)
    with pytest.raises(DawnbenchError) as refused:
        predict(folder, ["V100"])
    assert all(s in str(refused.value) for s in ("runs/x", "reached at 97", "to 99 (mnist's target)", "--epochs N",
                                                 "--target 97"))
    own = predict(folder, ["V100"], target=97.0)
    assert own["epochs_to_target"] == 2.5 and own["target"] == 97.0 and "epochs to 97 (runs/x)" in own["epochs_from"]
    given = predict(folder, ["V100"], epochs=4.0)
    assert given["epochs_to_target"] == 4.0 and given["target"] == 99.0 and given["epochs_from"].startswith("--epochs")
    with pytest.raises(DawnbenchError, match="lies between 0 and 100"):
        predict(folder, ["V100"], target=150.0)


def test_a_prediction_from_a_profile_taken_on_a_busy_machine_says_so_on_its_first_line(tmp_path, capsys):
    folder = _one_op_profile(tmp_path / "p", RELU, 1, "aten::relu", 1e-3)
    summary = json.loads((folder / "summary.json").read_text())
    summary["load"] = {"seconds": 9.0, "others_cpu_s": 8.0, "own_cpus": 2, "others_share": 0.44,
                       "interference": "other processes took 8.0 CPU-s (44 % of the 2 CPU(s) this process may use)"}
    (folder / "summary.json").write_text(json.dumps(summary))
    assert main(["predict", str(folder), "--device", "V100", "--epochs", "1"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "profiled on a busy machine: other processes took 8.0 CPU-s (44 %" in first
    assert predict(folder, ["V100"], epochs=1)["disturbed"].startswith("other processes took 8.0 CPU-s")


def test_what_a_profile_says_of_its_run_and_its_load_is_checked_before_a_prediction_rests_on_it(tmp_path, capsys):
    """An outsider's attack: epochs under one step, a target a hair off, a damaged target, a busy machine's sentence
    deleted or made to print a line of its own."""
    run = {"dir": "runs/q", "epochs_to_target": 0.5, "samples_per_epoch": 5952, "threshold": 97.0}
    folder = _one_op_profile(tmp_path / "p", RELU, 1, "aten::relu", 1e-3, run=run)
    with pytest.raises(DawnbenchError, match=r"of one step \(93 steps an epoch\): no run reaches its target before"):
        predict(folder, ["V100"], epochs=1e-9)
    with pytest.raises(DawnbenchError, match="reached at 97, and the time asked for is to 97.0000001"):
        predict(folder, ["V100"], target=97.0000001)
    summary = json.loads((folder / "summary.json").read_text())
    (folder / "summary.json").write_text(json.dumps({**summary, "run": {**run, "threshold": -5.0}}))
    with pytest.raises(DawnbenchError, match="recorded target -5 lies outside mnist's top1_accuracy"):
        predict(folder, ["V100"], target=97.0)
    busy = {"seconds": 9.0, "others_cpu_s": 8.0, "own_cpus": 2, "others_share": 0.44}
    (folder / "summary.json").write_text(json.dumps({**summary, "load": busy}))     # the sentence deleted
    said = predict(folder, ["V100"], target=97.0)["disturbed"]
    assert "its own figures, others_share; its interference sentence is missing" in said
    for bad in ({**busy, "interference": "busy\nerror: fake line"}, {**busy, "interference": 5},
                {**busy, "others_share": 5}):
        (folder / "summary.json").write_text(json.dumps({**summary, "load": bad}))
        assert main(["predict", str(folder), "--device", "V100", "--target", "97"]) == 2
        assert "field 'load." in " ".join(capsys.readouterr().err.split())


def test_a_gpu_prediction_takes_the_epoch_of_the_run_a_profile_was_made_from(tmp_path):
    from dawnbench.prediction.on_gpu import predict_on_gpus

    run = {"dir": "runs/q", "epochs_to_target": 0.5, "samples_per_epoch": 5952, "threshold": 97.0}
    folder = _one_op_profile(tmp_path / "p", RELU, 1, "aten::relu", 1e-3, run=run)
    doc = predict_on_gpus(folder, ["H100"], target=97.0)
    assert doc["samples_per_epoch"] == 5952 and "runs/q" in doc["samples_per_epoch_from"]


def test_notes_on_single_rows_of_the_op_table_are_counted_unless_verbose(tmp_path, capsys):
    folder = _one_op_profile(tmp_path / "p", RELU, 1, "aten::relu", 1e-3)
    (folder / "ops.tsv").write_text((folder / "ops.tsv").read_text().replace("\tc\t", "\tc, c\t"))
    assert main(["predict", str(folder), "--device", "V100", "--epochs", "1"]) == 0
    out = capsys.readouterr().out
    assert "1 note(s) on single rows of the op table (ops.tsv): --verbose shows them" in out
    assert "does not name one memory order" not in out
    assert main(["predict", str(folder), "--device", "V100", "--epochs", "1", "--verbose"]) == 0
    assert "ops.tsv:2: its layout 'c, c' does not name one memory order" in capsys.readouterr().out


def test_published_gpus_take_a_cited_stream_measurement_for_memory_bound_ops():
    v100, m40 = DeviceModel.published("V100"), DeviceModel.published("M40")
    assert v100.bandwidth == 750e9 and any("STREAM-class" in n and "arXiv:1804.06826" in n for n in v100.notes)
    assert any("rated" in n and "upper bound" in n for n in m40.notes)


def test_leave_one_out_leaves_out_the_other_transposes_of_the_same_gemm():
    model = DeviceModel.published("V100")
    held = next(r for r in model.rows if r.suite == "gemm" and any(
        o is not r and o.suite == "gemm" and o.key[:3] == r.key[:3] and o.precision == r.precision
        for o in model.rows))
    twins = [r for r in model.rows if r.suite == "gemm" and r.key[:3] == held.key[:3] and r.precision == held.precision]
    from dawnbench.prediction.step import Kernel
    without = model.kernel_s(Kernel(held.problem, held.pass_name), held.precision, leave_out=held)[0]
    rest = copy.copy(model)
    rest = DeviceModel(model.name, model.label, model.kind, model.peaks, model.bandwidth, "", model.floor_s,
                       [r for r in model.rows if r not in twins])
    assert without == pytest.approx(rest.kernel_s(Kernel(held.problem, held.pass_name), held.precision)[0])


def test_a_profile_whose_ops_outlast_its_window_is_refused(tmp_path):
    folder = _one_op_profile(tmp_path / "p", RELU, 1, "aten::relu", 1e-3)
    lines = (folder / "ops.tsv").read_text().splitlines()
    (folder / "ops.tsv").write_text("\n".join([lines[0], *[lines[1]] * 50]) + "\n")   # one row, fifty times
    from dawnbench.errors import FileError
    from dawnbench.prediction.step import read_step
    with pytest.raises(FileError, match="more than the profiled step"):
        read_step(folder)


def test_an_ops_table_with_a_damaged_call_keeps_the_row_without_a_replay(tmp_path):
    folder = _one_op_profile(tmp_path / "p", RELU, 1, "aten::relu", 1e-3)
    text = (folder / "ops.tsv").read_text().replace('"aten::relu.default"', '"os::system.default"')
    (folder / "ops.tsv").write_text(text)
    notes: list[str] = []
    [row] = read_ops(folder, notes)
    assert row["call"] == "" and any("cannot be made again" in n for n in notes)
    # a call of another op than its row's, and a layout of no known letters: dropped, said
    text = (folder / "ops.tsv").read_text().replace('"os::system.default"', '"aten::gelu.default"').replace(
        "\tc\t", "\tzz\t")
    (folder / "ops.tsv").write_text(text)
    notes = []
    [row] = read_ops(folder, notes)
    assert row["call"] == "" and row["layout"] == "" and any("not the row's" in n for n in notes)


def test_what_reading_an_ops_table_notes_is_said_once_per_kind_with_its_lines(tmp_path):
    folder = _one_op_profile(tmp_path / "p", RELU, 1, "aten::relu", 1e-3)
    header, row = (folder / "ops.tsv").read_text().splitlines()
    unmatched = row.replace("aten::relu\t64x64\tfloat32", f"aten::relu\t{UNMATCHED}\t-")
    two_layouts = row.replace("\tc\t", "\tc, c\t")              # two memory orders for the row's one shape
    (folder / "ops.tsv").write_text("\n".join([header, row, unmatched, two_layouts, two_layouts, two_layouts]) + "\n")
    notes: list[str] = []
    rows = read_ops(folder, notes)
    assert len(rows) == 4 and [r["layout"] for r in rows] == ["c", "", "", ""]
    said = grouped_notes(notes)
    assert said == [f"{folder / 'ops.tsv'}:3: left out: an op the profiler timed in the window that the census step "
                    "did not run (no shapes of its own)",
                    f"{folder / 'ops.tsv'}, lines 4, 5, 6: its layout 'c, c' does not name one memory order (c, cl, "
                    "t or s) per shape of the row: read as unknown"]
    assert grouped_notes([f"f:{n}: same" for n in range(2, 14)]) == ["f, lines 2, 3, 4, 5, 6, 7, 8, 9 and 4 more: same"]
    assert grouped_notes(["no line here", "f:x: not a line number"]) == ["no line here", "f:x: not a line number"]


def test_the_memory_suite_runs_and_reports_bandwidth(tmp_path, capsys):
    assert main(["kernels", "memory", "--quick", "--cap", "0.5", "--max-seconds", "4", "--out", str(tmp_path),
                 "--json"]) == 0
    doc = json.loads((tmp_path / "kernels.json").read_text())
    timed = [r for r in doc["rows"] if r.get("median_s")]
    assert timed and all(r["suite"] == "memory" and r["gbps"] > 0 and r["fraction_of_bandwidth"] > 0 for r in timed)
    model = DeviceModel.measured(tmp_path / "kernels.json")
    assert model.has_curve(timed[0]["params"]["class"], "fp32")


def test_a_step_re_derived_at_another_batch_scales_the_batch_and_nothing_else(tmp_path):
    calls = _a_training_step()                 # batch 4: images 4×3×16×16, words 4×7
    rows = []
    for call, moved, layout in calls:
        doc = json.loads(call)
        if moved == 0 or check_call(call):      # as the census: views left out, .item() never made again
            continue
        shapes = ", ".join("x".join(map(str, v["t"])) or "scalar" for v in doc["args"].values()
                           if isinstance(v, dict) and "t" in v)
        rows.append({"op": doc["op"].split(".")[0], "shapes": shapes, "dtype": "float32", "precision": "fp32",
                     "calls": 1, "time_s": 1e-4, "share": None, "flops": 0.0, "bytes": float(moved),
                     "intensity": None, "flops_per_s": None, "bytes_per_s": None, "fraction_of_roof": None,
                     "bound": "memory", "args": "", "layout": layout, "call": call})
    folder = tmp_path / "p"
    folder.mkdir()
    write_ops(rows, folder / "ops.tsv")
    window = len(rows) * 1e-4 / 0.9
    (folder / "summary.json").write_text(json.dumps({
        "task": "mnist", "entry": "small-cnn", "precision": "fp32", "device": "cpu", "steps": 1, "window_s": window,
        "samples_per_s": 4 / window, "roofs": {"flops": {"fp32": 1e11}, "bandwidth_bytes_per_s": 1e10}}))
    from dawnbench.prediction.batch import rebatch
    from dawnbench.prediction.step import read_step

    step = read_step(folder)
    assert step.batch_size == 4
    wide, notes = rebatch(step, 8)
    assert wide.batch_size == 8 and not notes
    by_call = {json.loads(o.replay.problem.params["call"])["op"]: o for o in wide.ops if o.replay}
    conv = json.loads(by_call["aten::convolution.default"].replay.problem.params["call"])["args"]
    # four filters when the batch was four: a parameter's shape, never the batch's
    assert conv["input"]["t"] == [8, 3, 16, 16] and conv["weight"]["t"] == [4, 3, 3, 3]
    assert conv["input"]["st"] == [768, 1, 48, 3]                   # still channels-last at the new size
    embedding = json.loads(by_call["aten::embedding.default"].replay.problem.params["call"])["args"]
    assert embedding["indices"]["t"] == [8, 7] and embedding["weight"]["t"] == [50, 16]
    # the head's weight, passed transposed (16×4, its 4 outputs equal to the old batch), stays 4 outputs
    head = next(json.loads(o.replay.problem.params["call"])["args"] for o in wide.ops if o.replay and o.op ==
                "aten::addmm" and json.loads(o.replay.problem.params["call"])["args"]["self"]["t"] == [4])
    assert head["mat1"]["t"] == [56, 16] and head["mat2"]["t"] == [16, 4]
    # every matrix multiply of the tokens is at 8·7 = 56 rows — the 28×16 tokens too, though a weight is 28×16 — and
    # the attention's bmm on 8 samples × 2 heads = 16 (its 4×2×7×7 scores say what the 2 is)
    mats = [json.loads(o.replay.problem.params["call"])["args"] for o in wide.ops if o.replay and o.op == "aten::addmm"]
    assert mats and all(m["mat1"]["t"][0] == 56 for m in mats if m["mat1"]["t"][0] not in (4, 8))
    assert {json.loads(o.replay.problem.params["call"])["args"]["self"]["t"][0] for o in wide.ops
            if o.replay and o.op == "aten::bmm"} == {16}
    # the attention's projections read the tokens flattened, 4·7 = 28 rows: 8·7 = 56 now
    assert any(json.loads(o.replay.problem.params["call"])["args"].get("mat1", {}).get("t", [0])[0] == 56
               for o in wide.ops if o.replay and o.op == "aten::addmm")
    before = {id(o): o for o in step.ops}
    for old, new in zip(step.ops, wide.ops):
        if new is old:                    # the same at any batch: nothing of it was the batch's
            continue
        assert new.bytes > old.bytes and before[id(old)] is old
    # the optimizer's updates of those weights (Adam's states have their shapes too) are the same at any batch
    updates = [(o, n) for o, n in zip(step.ops, wide.ops) if o.op in ("aten::addcdiv_", "aten::lerp_", "aten::sqrt")
               or o.op.startswith("aten::_foreach")]
    assert updates and all(n.bytes == o.bytes for o, n in updates)
    # a profile made before calls were recorded: every op kept at its batch, and named
    plain = tmp_path / "q"
    plain.mkdir()
    write_ops([{**r, "call": "", "layout": ""} for r in rows], plain / "ops.tsv")
    (plain / "summary.json").write_text((folder / "summary.json").read_text())
    _, notes = rebatch(read_step(plain), 8)
    assert notes and all("could not be rescaled" in n for n in notes)


def test_a_parameter_mark_does_not_change_which_kernel_a_call_is():
    """A profile that marks a view of a parameter (newer census) finds the kernels.json row timed from the same call
    without the mark (older census), and the other way round; another shape is another kernel."""
    from dawnbench.records.published import problem_key

    marked = ('{"op":"aten::addmm.default","args":{"self":{"t":[2],"d":"float32","p":1},"mat1":{"t":[768,1024],'
              '"d":"float32"},"mat2":{"t":[1024,2],"d":"float32","st":[1,1024],"p":1}}}')
    plain = marked.replace(',"p":1', "")
    key = problem_key({"suite": "memory", "params": {"call": marked}})
    assert key == problem_key({"suite": "memory", "params": {"call": plain}})
    assert key != problem_key({"suite": "memory", "params": {"call": plain.replace("768", "1536")}})
