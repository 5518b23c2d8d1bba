"""What the analysis commands read, declared and checked once, here: the one door every reader goes through.

    doc, notes = documents.kernels(read_json(path, "kernel result"), path)   # rows that cannot be true left out
    doc, notes = documents.profile(read_json(path, "profile"), path)
    doc, notes = documents.run(read_json(path, "run record"), path)

``roofline``, ``similarity``, ``kernels --compare``, ``explain``, ``predict`` and ``report`` read
``kernels.json``, a profile's ``summary.json`` and run records only through these functions (``ops.tsv``
through :func:`dawnbench.records.ops.read_ops`, run records through
:func:`dawnbench.records.record.check_record`). Each document is declared below as a typed dictionary
whose fields carry what they can physically be (``dawnbench/schema.py``); the declaration is the check,
the error and the field table of docs/reference/documents.md. Two kinds of problem:

* **The document cannot be what its name says** — a document-level field of the wrong type or out of its
  range (``window_s`` 1e308, ``roofs`` a string, a ``kind`` or ``version`` this dawnbench does not write,
  more rows than any run of the command makes): a :class:`~dawnbench.errors.FileError` naming the file and
  the field, one paragraph. JSON itself (truncated, NaN, Infinity, deep nesting) is refused before, by
  :func:`dawnbench.io.parse_json`, with its line.
* **A row that cannot be true** — a field out of its range (a zero or negative size, a time that is not
  positive), or a rate above the roof the document itself measured by more than measurement noise
  (``ABOVE_ROOF``: 10 %): the row is left out, with a note that names it and why; never drawn or counted
  silently. A profile whose step runs faster than its own roof is left out the same way.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field
from typing_extensions import NotRequired, TypedDict  # pydantic reads typing_extensions' TypedDict on Python < 3.12

from dawnbench import bounds, schema
from dawnbench.errors import FileError
from dawnbench.precision import EMULATED_ON_CPU
from dawnbench.records.record import Measured, MetricValue, check_record

KERNELS_VERSION = 1
MAX_ROWS = 100_000           # every problem × pass × precision of DeepBench's three sets is ~15,000
MAX_SECONDS = 1e7            # the largest --cap `kernels` accepts: no row runs longer
SUITES = ("gemm", "conv", "rnn", "allreduce")
Precision = schema.Precision
RowSeconds = schema._number(0, MAX_SECONDS, low_open=True, unit="seconds", resolution=schema.RESOLUTION)
Padding = schema._number(0, schema.MAX_DIM, integer=True, unit="a size")


class Roofs(TypedDict):
    """A machine's measured roofs (``dawnbench machine``; SPEC §12)."""

    flops: Annotated[dict[Precision, schema.FlopRate], Field(min_length=1)]  # FLOP/s per precision: the best probe
    bandwidth_bytes_per_s: NotRequired[schema.ByteRate]  # a large tensor copy: bytes read and written per second
    ridge_flop_per_byte: NotRequired[dict[Precision, schema.NonNegative]]  # where the two roofs meet
    probes: NotRequired[dict[Precision, dict[schema.Text, schema.NonNegative]]]  # each probe's FLOP/s
    raised: NotRequired[dict[Precision, dict[schema.Text, Any]]]  # a kernel that beat the probes: the roof is its
    device: NotRequired[schema.Text]


def _within_its_device(roofs: Roofs) -> Roofs:
    """A roof no device of its kind reaches is refused: a CPU's profile or kernels file cannot claim a GPU's
    (``bounds.DEVICE_FLOP_RATE``, ``DEVICE_BYTE_RATE``; a file naming no device is held to a GPU's)."""
    kind = "cpu" if str(roofs.get("device", "cuda")).startswith("cpu") else "gpu"
    for precision, rate in roofs["flops"].items():
        if rate > bounds.DEVICE_FLOP_RATE[kind]:
            raise ValueError(f"roofs.flops.{precision} {rate:g} FLOP/s is past what any {kind} computes "
                             f"({bounds.DEVICE_FLOP_RATE[kind]:g}, docs/reference/documents.md \"Physics\")")
    moved = roofs.get("bandwidth_bytes_per_s")
    if moved is not None and moved > bounds.DEVICE_BYTE_RATE[kind]:
        raise ValueError(f"roofs.bandwidth_bytes_per_s {moved:g} is past what any {kind} moves "
                         f"({bounds.DEVICE_BYTE_RATE[kind]:g} bytes/s)")
    return roofs


DeviceRoofs = Annotated[Roofs, AfterValidator(_within_its_device)]


class GemmProblem(TypedDict):
    m: schema.Dim
    n: schema.Dim
    k: schema.Dim
    a_transposed: schema.Flag
    b_transposed: schema.Flag


def _convolves(p: ConvProblem) -> ConvProblem:
    """The filter fits the padded image: at least one output position each way."""
    for side, pad, size in (("h", "pad_h", "filter_h"), ("w", "pad_w", "filter_w")):
        if p[size] > p[side] + 2 * p[pad]:
            raise ValueError(f".{size}' is {p[size]}: more than the padded image ({side} {p[side]} + 2 × {pad} "
                             f"{p[pad]}), so the convolution has no output")
    return p


class ConvProblem(TypedDict):
    w: schema.Dim
    h: schema.Dim
    c: schema.Dim
    n: schema.Dim
    k: schema.Dim
    filter_w: schema.Dim
    filter_h: schema.Dim
    pad_w: Padding
    pad_h: Padding
    stride_w: schema.Dim
    stride_h: schema.Dim
    layout: NotRequired[Literal["nchw", "nhwc"]]    # the tensors' memory order (an application's layer: nhwc)


class RnnProblem(TypedDict):
    cell: Literal["vanilla", "lstm", "gru"]
    hidden: schema.Dim
    batch: schema.Dim
    timesteps: schema.Dim
    input: NotRequired[schema.Dim]


class AllreduceProblem(TypedDict):
    floats: schema.Dim


def _replayable(call: str) -> str:
    from dawnbench.opcalls.calls import check_call  # torch, loaded only where a call is read

    why = check_call(call)
    if why:
        raise ValueError(f" is not a recorded call: {why}")
    return call


class ReplayProblem(TypedDict):
    """A recorded op call of the applications set (records/problems.py, opcalls/calls.py)."""

    op: schema.Text                                 # aten::native_layer_norm
    call: Annotated[str, AfterValidator(_replayable)]   # the call as one line of JSON
    flops: NotRequired[schema.Flops]                # of one call, the census's count
    bytes: NotRequired[schema.Bytes]                # of one call, the minimum traffic
    entry: NotRequired[schema.Text]                 # the reference entry it was drawn from
    share: NotRequired[schema.Share]                # of that entry's profiled step


PARAMS = {"gemm": GemmProblem, "conv": Annotated[ConvProblem, AfterValidator(_convolves)], "rnn": RnnProblem,
          "allreduce": AllreduceProblem}

KernelRow = TypedDict("KernelRow", {
    "suite": Literal["gemm", "conv", "rnn", "allreduce", "memory"],  # DeepBench's four, and the memory-bound suite
    "set": NotRequired[schema.Text | None],         # DeepBench's problem set (training, inference_server…); null: all-reduce
    "pass": schema.Text,                            # forward, backward (data/weights), or the collective
    "precision": Precision,
    "params": dict[schema.Text, Any],
    "skipped": NotRequired[schema.Message | None],  # why torch could not run it here (no time then)
    "median_s": NotRequired[RowSeconds],            # of one call, over the timed blocks
    "iqr_s": NotRequired[schema.Seconds],           # their spread
    "repeats": NotRequired[schema.Count],           # timed blocks
    "calls": NotRequired[schema.Count],             # calls timed in all
    "flops": NotRequired[schema.Flops],
    "bytes": NotRequired[schema.Bytes],
    "gflops": NotRequired[schema.NonNegative],      # GFLOP/s at the median
    "gbps": NotRequired[schema.NonNegative],        # GB/s at the median
    "intensity": NotRequired[schema.Intensity | None],  # FLOP per byte; null: all-reduce
    "fraction_of_roof": NotRequired[schema.NonNegative | None],  # over the roofs of the same file
    "fraction_of_bandwidth": NotRequired[schema.NonNegative | None],  # GB/s over the file's measured bandwidth
    "world_size": NotRequired[schema.PositiveCount],  # all-reduce: processes
    "algbw_gbps": NotRequired[schema.NonNegative],  # all-reduce: bytes over time (nccl-tests' algbw)
    "busbw_gbps": NotRequired[schema.NonNegative],  # all-reduce: algbw × 2(n−1)/n (nccl-tests' busbw)
})


class KernelsDocument(TypedDict):
    """``kernels.json`` as ``dawnbench kernels`` writes it."""

    kind: Literal["dawnbench-kernels"]
    version: NotRequired[Literal[1]]
    rows: Annotated[list[dict[schema.Text, Any]], Field(max_length=MAX_ROWS)]  # one per problem, pass, precision
    roofs: NotRequired[DeviceRoofs | None]              # this machine's, measured before the rows
    resources: NotRequired[dict[schema.Text, Measured] | None]  # the resource monitor's summary per suite
    hardware: NotRequired[dict[schema.Text, Any]]
    software: NotRequired[dict[schema.Text, Any]]


class Step(TypedDict):
    """One training step of the profiled window, on average."""

    time_s: NotRequired[schema.Seconds | None]          # the window's wall time over its steps
    flops: NotRequired[schema.Flops | None]             # counted from the ops' shapes (profiling/flops.py)
    bytes: NotRequired[schema.Bytes | None]             # moved by its ops
    intensity: NotRequired[schema.Intensity | None]     # FLOP per byte
    flops_per_s: NotRequired[schema.NonNegative | None]  # its FLOP over its time


class ProfiledRun(TypedDict):
    """The run a profile was made from: what ``predict PROFILE`` needs for epochs and TTA."""

    dir: schema.Text
    epochs_to_target: NotRequired[schema.Epochs | None]   # null: the run did not reach its target
    threshold: NotRequired[MetricValue | None]            # the target those epochs were reached at
    samples_per_epoch: NotRequired[schema.PositiveCount | None]
    subset: NotRequired[schema.Text | None]               # a quick trial or a generated subset: unofficial epochs
    precision: NotRequired[Precision]                     # what the run trained in (a profile may take another)


OthersShare = schema._number(0, bounds.MAX_OTHERS_SHARE, unit="a share of the CPUs")


class Load(TypedDict):
    """What others took of the CPUs while a command measured (profiling/load.py), as its summary stores it."""

    seconds: schema.Seconds
    others_cpu_s: schema.NonNegative
    own_cpus: schema.PositiveCount
    others_share: OthersShare                           # of the CPUs the command may use
    interference: NotRequired[schema.Sentence]          # past the rule: the sentence every reader prints


class ProfileSummary(TypedDict):
    """A profile's ``summary.json`` as ``dawnbench profile`` writes it."""

    task: schema.Text
    window_s: schema.PositiveSeconds                    # the profiled window's wall time
    steps: NotRequired[schema.PositiveCount]            # optimizer steps in the window
    entry: NotRequired[schema.Text | None]              # the entry's name (its class's `name`)
    entry_file: NotRequired[schema.Text]                # the file it came from, when --entry named one
    precision: NotRequired[Precision | None]
    emulated: NotRequired[Annotated[schema.Text, Field(min_length=1)]]  # why its precision is not native on its CPU
    #                                                     (profile --emulated: bf16 or fp16 only)
    variant: NotRequired[schema.Text | None]            # a variant profiled beside the run's (--without …)
    device: NotRequired[schema.Text]                    # cpu or cuda
    title: NotRequired[schema.Text]                     # task · entry · precision · steps (· each --set), for figures
    set: NotRequired[dict[schema.Text, Any] | None]     # the --set values profiled (and the memory plan's batch)
    out: NotRequired[schema.Text]                       # the folder it was written to
    batch_size: NotRequired[schema.PositiveCount | None]
    samples_per_s: NotRequired[schema.NonNegative | None]
    memory_bound_share: NotRequired[schema.Share | None]  # of op time, in ops below the ridge
    fraction_of_peak: NotRequired[schema.NonNegative | None]  # the step's FLOP/s over the FLOP roof
    op_time_share_of_window: NotRequired[schema.NonNegative | None]  # the ops' time over the window's
    matched_share: NotRequired[schema.Share | None]     # of op time, matched to a counted op of the same shapes
    matched_by_name_share: NotRequired[schema.Share | None]  # matched by name only, FLOPs scaled by elements
    rows: NotRequired[schema.Count]                     # rows of ops.tsv
    flop_check: NotRequired[dict[schema.Text, Any] | None]  # the count against torch's FlopCounterMode
    top_ops: NotRequired[list[dict[schema.Text, Any]]]  # the largest rows of ops.tsv, for the terminal
    classes: NotRequired[list[dict[schema.Text, Any]]]  # op time by class (dawnbench classes)
    step: NotRequired[Step]
    roofs: NotRequired[DeviceRoofs | None]              # the machine's, measured before the window
    resources: NotRequired[Measured | None]             # the resource monitor's summary over the window
    memory_plan: NotRequired[dict[schema.Text, Any] | None]  # the batches planned before it (harness/memory.py)
    dispatch_s: NotRequired[dict[schema.Text, schema.Seconds] | None]  # the host's cost of issuing one op, per kind
    run: NotRequired[ProfiledRun | None]                # the run it was made from (dawnbench profile RUN_DIR)
    load: NotRequired[Load]                             # others' share of the CPUs while it measured
    # what made it (environment.provenance): the command, dawnbench's commit and whether its tree had changes
    # (null: not a git checkout, or unchecked), the date, the machine and the software
    argv: NotRequired[list[schema.Text]]
    commit: NotRequired[schema.Text | None]
    dirty: NotRequired[bool | None]
    date: NotRequired[schema.Moment]
    hardware: NotRequired[dict[schema.Text, Any]]
    software: NotRequired[dict[schema.Text, Any]]


def _above_roof(rate: float, roof: float | None) -> bool:
    return bool(roof) and rate > bounds.ABOVE_ROOF * roof


def kernels(doc: Any, path: Path) -> tuple[dict[str, Any], list[str]]:
    """``kernels.json``, checked; rows whose values cannot be true are left out, each with a note."""
    if not isinstance(doc, dict) or doc.get("kind") != "dawnbench-kernels":
        raise FileError(path, "not a kernels.json written by `dawnbench kernels` (it needs \"kind\": "
                              "\"dawnbench-kernels\").")
    if doc.get("version", KERNELS_VERSION) != KERNELS_VERSION:
        raise FileError(path, f"version {schema._shown(doc.get('version'))}: this dawnbench reads kernels.json "
                              f"version {KERNELS_VERSION}. Write it again with this version's `dawnbench kernels`.")
    schema.load(KernelsDocument, doc, path, fix="It is not what `dawnbench kernels` writes; write it again with it.")
    roofs = (doc.get("roofs") or {}).get("flops") or {}
    bandwidth = (doc.get("roofs") or {}).get("bandwidth_bytes_per_s")
    kept, notes = [], []
    for i, row in enumerate(doc["rows"]):
        why = _kernel_row(row, i, roofs, bandwidth)
        if why:
            notes.append(f"{path}: rows[{i}] left out: {why}")
        else:
            kept.append(row)
    return {**doc, "rows": kept}, notes


def _kernel_row(row: Any, i: int, roofs: dict[str, float], bandwidth: float | None = None) -> str | None:
    """Why row ``i`` cannot be used (None: it can): a field out of its range, its problem's sizes (by suite),
    no time and no reason it was skipped, a rate above the file's own roof, or bytes moved faster than any cache
    serves (``ABOVE_BANDWIDTH`` × the file's copy bandwidth: a memory-bound row computes nothing the roof checks)."""
    why = schema.why_not(KernelRow, row) or schema.why_not(
        ReplayProblem if isinstance(row["params"], dict) and "call" in row["params"] else PARAMS.get(row["suite"]),
        row["params"], "params")
    if why or row.get("skipped"):
        return why
    missing = [k for k in ("median_s", "flops", "bytes") if k not in row]
    if missing:
        return f"no {', '.join(missing)} and no reason it was skipped"
    rate = row["flops"] / row["median_s"]
    if _above_roof(rate, roofs.get(row["precision"])):
        roof = roofs[row["precision"]]
        return (f"{rate / 1e9:,.4g} GFLOP/s is {rate / roof:,.3g}× the {row['precision']} roof this file measured "
                f"({roof / 1e9:,.4g} GFLOP/s): physically impossible, so a time or a count in it is wrong")
    moved = row["bytes"] / row["median_s"]
    if bandwidth and moved > bounds.ABOVE_BANDWIDTH * bandwidth:
        return (f"{moved / 1e9:,.4g} GB/s is {moved / bandwidth:,.3g}× the copy bandwidth this file measured "
                f"({bandwidth / 1e9:,.4g} GB/s): no cache serves that, so a time or a count in it is wrong")
    return None


def profile(doc: Any, path: Path) -> tuple[dict[str, Any] | None, list[str]]:
    """A profile's ``summary.json``, checked; ``None`` and a note when its step cannot be true."""
    if isinstance(doc, dict) and "census" in doc:
        raise FileError(path, "the summary of a census (`profile --census`): nothing ran, so there are no times to "
                              "explain or to predict from on a DeepBench device or a kernels.json; predict it on GPUs "
                              "from their datasheets (`dawnbench predict DIR --device gpus`).")
    if not isinstance(doc, dict) or not isinstance(doc.get("task"), str) or "window_s" not in doc:
        raise FileError(path, "not the summary.json of `dawnbench profile` (it needs task and window_s).")
    schema.load(ProfileSummary, doc, path, fix="Profile again.")
    if "emulated" in doc and doc.get("precision") not in EMULATED_ON_CPU:
        raise FileError(path, f"field 'emulated' with precision {doc.get('precision')!r}: only "
                              f"{' and '.join(EMULATED_ON_CPU)} are ever emulated. Profile again.")
    rate = (doc.get("step") or {}).get("flops_per_s")
    ceiling = max(((doc.get("roofs") or {}).get("flops") or {}).values(), default=None)
    if rate and _above_roof(rate, ceiling):
        return None, [f"{path}: left out: its step's {rate / 1e9:,.4g} GFLOP/s is {rate / ceiling:,.3g}× the highest "
                      f"roof the profile measured ({ceiling / 1e9:,.4g} GFLOP/s): physically impossible"]
    return doc, []


def run(doc: Any, path: Path) -> tuple[dict[str, Any] | None, list[str]]:
    """A run record (its declaration: :class:`dawnbench.records.record.RunResult`), and the one figure the
    analyses read that the record's own check cannot bound: a fraction of the peak never above 1 (beyond noise)."""
    check_record(doc, path)
    fraction = (doc.get("throughput") or {}).get("fraction_of_peak")
    if isinstance(fraction, (int, float)) and fraction > bounds.ABOVE_ROOF:
        return None, [f"{path}: left out: fraction_of_peak {fraction:.3g}: above the roof it was measured "
                      "against, physically impossible"]
    return doc, []


# --- a scale.json, as `dawnbench scale` writes it and `schedule` reads it --------------------------------
def _speedups(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """No more workers make a job faster by more than their ratio × ``bounds.OVER_WORKERS``: more workers bring more
    cache and memory, a little superlinearity, never 8,999,999,255×."""
    timed = sorted((row["workers"], row["tta_s"]) for row in rows if row.get("tta_s") is not None)
    for (few, slow), (many, fast) in itertools.combinations(timed, 2):
        if many > few and slow / fast > many / few * bounds.OVER_WORKERS:
            raise ValueError(f"rows: {many} workers are {slow / fast:.3g}× faster than {few}, more than "
                             f"{bounds.OVER_WORKERS:g} × the {many / few:g}× the workers give: so large a speedup "
                             "is not one job's scaling")
    return rows


class ScaleRow(TypedDict):
    workers: Annotated[int, Field(strict=True, ge=1, le=bounds.MACHINES)]  # accelerators (or processes) the job ran on
    tta_s: NotRequired[schema.PositiveSeconds | None]  # its median time to accuracy; null: never reached


ScaleRows = Annotated[list[ScaleRow], Field(min_length=1, max_length=bounds.MACHINES), AfterValidator(_speedups)]


class ScaleTable(TypedDict):
    """A ``scale.json`` as ``dawnbench scale`` writes it (what ``schedule`` reads of it)."""

    rows: ScaleRows                                     # one per worker count
    job: NotRequired[schema.Text | None]                # its name in the schedule (default: the folder's)


# --- misc.dawnbench of a submission `dawnbench export` wrote ---------------------------------------------
class Flagged(TypedDict):
    """A run of an export that other processes disturbed while its clock ran (``resources.interference``)."""

    seed: schema.Seed | None
    interference: schema.Message                        # what the resource monitor said


class DawnbenchMisc(TypedDict):
    """``misc.dawnbench`` of a submission ``dawnbench export`` wrote: what its runs were."""

    task: schema.Text
    runs: schema.PositiveCount                          # counted (records/selection: a seed once)
    successes: schema.Count                             # of them, reached the target
    success_fraction: schema.Share | None
    tta_median_s: schema.PositiveSeconds | None         # of the successes: the TSV's run
    seeds: list[schema.Seed | None]                     # of the runs counted
    representative_seed: NotRequired[schema.Seed | None]  # the run whose TSV travels with it
    official: schema.Flag                               # every run kept the task's own target and data
    subset: NotRequired[schema.Text | None]             # null: the full data; "quick", or an imported subset's name
    flagged: NotRequired[list[Flagged]]                 # runs other processes disturbed (--include-suspect)
    self_reported: NotRequired[schema.Flag]             # the accuracy is the runs' own, not the harness's scorer's
    priced_as: NotRequired[schema.Name | None]          # the catalog instance costPerHour is read from (--instance)


# --- a machine's last undisturbed roofs, kept in the user's cache (profiling/load.py) -----------------------
class Last(TypedDict):
    """The last undisturbed roofs of a machine, as :func:`against_last` stores them."""

    flops: dict[schema.Precision, schema.FlopRate]      # FLOP/s per precision
    bandwidth_bytes_per_s: schema.ByteRate
    date: Annotated[str, Field(strict=True, max_length=10)]   # YYYY-MM-DD


# --- the price catalog (records/catalog.json) ------------------------------------------------------------
class Instance(TypedDict):
    """A row of the catalog: one instance type, its on-demand price, the month and source it was read from."""

    name: schema.Text
    provider: schema.Text
    region: schema.Text
    accelerator: schema.Text | None           # null: a CPU instance
    accelerator_count: schema.Count
    vcpus: schema.PositiveCount
    usd_per_hour: schema.UsdPerHour
    as_of: schema.Text
    source: schema.Text                       # a key of the catalog's `sources`


class Catalog(TypedDict):
    """The catalog: its rows and their sources. It has no date of its own — each row has its month (``as_of``):
    one date for the whole would claim rows read two years apart were read together."""

    pricing: schema.Text
    note: schema.Message
    sources: dict[schema.Text, schema.Message]
    not_on_demand: dict[schema.Text, schema.Message]
    instances: list[Instance]
