"""The entry contract: what a training recipe provides to the harness.

An entry is a subclass of :class:`Entry`. The harness creates one instance per run,
calls :meth:`Entry.warmup` (untimed, on synthetic data), starts the clock, and drives
:meth:`Entry.train`, a generator. Every ``yield`` hands control back to the harness,
which stops the clock, evaluates the scored split through :meth:`Entry.predict`,
records the result, and either stops the run or resumes the generator with the
clock running again. An entry therefore keeps a plain training loop; the harness
owns the clock, the evaluation and the decision to stop.

What is timed
    Everything inside ``train`` between resumptions: loading the training split
    (``ctx.load_train()``), moving it to the device, preprocessing, building the
    model and optimizer, and every training step. The clock runs from the call that
    starts the generator to each ``yield``, and again from each resumption.

What is not timed, but recorded
    ``warmup`` (``init_s``, compilation included as ``compile_s``), every call of ``predict`` during evaluation (``eval_s``),
    saving the model at the first passing evaluation (``checkpoint_s``), and the
    harness's own logging (all part of ``wall_s``). After the run, FLOPs per
    sample are counted on ``flop_model()`` when the entry provides it (untimed).

Warm-up, untimed, before ``run_start``
    The harness calls ``warmup(ctx)`` with a *synthetic* context: ``ctx.synthetic`` is
    True and ``ctx.load_train()`` returns random uint8 inputs and labels of the
    training split's shapes, so the dataset is never touched. The default warm-up
    runs the entry's own ``train`` on that split until ``warmup_steps`` optimizer
    steps (``cpu_warmup_steps`` on a CPU, where an entry sets it) have been taken
    (counted with torch's global optimizer-step hook) or it first yields, whichever
    comes first, then ``predict`` on random scored-split items at ``eval_batch_size``
    and at batch size 1 — so the CUDA context, cuDNN
    autotuning, allocator growth and ``torch.compile`` are paid here, with the real
    step and shapes, and every entry gets it for free. An entry that steps no
    ``torch.optim`` optimizer should override ``warmup`` (or set ``warmup_steps = 0``
    to skip it).

Precision and compilation
    ``Entry.precisions`` lists the precisions the harness may impose: it sets the TF32
    flags and autocast around ``train`` and ``predict``. fp16 needs loss scaling, so
    an entry lists it only if its step goes through ``ctx.scaler``
    (``ctx.scaler.scale(loss).backward(); ctx.scaler.step(opt); ctx.scaler.update()``,
    a pass-through for every other precision). ``Entry.own_precisions`` lists those
    the entry implements itself (e.g. fp16 weights with fp32 BatchNorm): the harness
    then sets no autocast and the entry reads ``ctx.precision``. Wrap the network in
    ``ctx.compile(model)`` where it should be compiled (the identity unless the run
    asked for ``--compile``), and keep the uncompiled module in ``self.model`` so its
    ``state_dict`` keys stay plain.

A quick trial (``--quick``)
    The harness hands ``train`` only the first items of the training split (``ctx.load_train()`` returns them;
    an epoch is one pass over them) and aims at a lower target. ``quick_hparams`` are the hyperparameters such
    a trial should use instead of the recipe's — an evaluation in its first epochs, a batch a small machine
    steps through quickly — applied under the user's ``--set``.

Many workers
    Under ``dawnbench run --nproc N`` every worker runs the same entry. The context says
    which worker this is (``ctx.rank``, ``ctx.world_size``, ``ctx.backend``) and offers the
    two things every entry would otherwise write again: ``ctx.distribute(model)`` wraps
    the network for DDP (the identity in a one-process run; it also times the gradient
    communication) and ``ctx.epoch_order(n, epoch)`` gives this worker's share of a
    shuffled epoch. ``hp["batch_size"]`` is the per-worker batch (the harness divides it
    under ``--scaling strong``); ``Progress.samples`` counts every worker's samples. Only
    rank 0's ``predict`` is called, on the unwrapped ``self.model``, whose weights DDP
    keeps equal on every worker.

Rules
    * ``warmup`` may compile or warm up kernels on synthetic data only; it must not
      read the dataset. ``__init__`` must be cheap: build nothing there.
    * ``train`` yields a :class:`Progress` at each point where the entry may be
      evaluated: at least after every epoch (the default cadence); more often if the
      entry wants fractional-epoch evaluations. Code after the final ``yield`` is
      never timed toward TTA and need not run: the harness may close the generator
      at any yield.
    * ``predict(inputs)`` receives a batch of the scored split in the form the task
      gives it (``data/splits.py``: a uint8 tensor, e.g. N×28×28 for MNIST or N×32×32×3
      for CIFAR-10; a list of JPEG byte strings for ImageNet; a list of ``Question``
      — id, question, context — for SQuAD) and returns class scores (N×C) or labels
      (N), or for SQuAD one answer string per question. It runs under
      ``torch.inference_mode()``; test-time augmentation is allowed and counts as
      inference. The entry never sees the scored split's labels or answers.
    * Report the training loss in ``Progress.loss`` (a float or a 0-d tensor); a
      non-finite value ends the run with status ``diverged``.
    * Randomness comes from ``torch``, ``numpy`` and ``random``, which the harness
      seeds with ``ctx.seed`` before ``warmup`` and again before ``train``.
    * Saving the model for inference: the harness calls
      ``inference_state()`` at the first passing evaluation and stores the result
      with ``torch.save`` in ``model.pt``; ``dawnbench infer`` creates a fresh entry
      with the same hyperparameters and calls ``load_inference_state(state)``, then
      ``predict``. The defaults cover the usual case: an entry that keeps its network
      in ``self.model`` and builds it in ``make_model()`` needs nothing more. An
      entry with other state overrides both methods (tensors, numbers, strings,
      lists and dicts only: the file is read with ``weights_only=True``).
    * Hyperparameters live in ``hparams`` (a class-level dict, optionally one per
      task in ``hparams_by_task``). Users override them with ``--set key=value``;
      the values used are recorded in ``result.json``.
    * Memory (docs/rules.md, "Memory"): before the warm-up the harness measures the
      step's memory on synthetic data at two small batches and refuses a batch that
      would not fit the machine. ``hp["batch_size"]`` is then the batch the run trains
      at: an entry that sets ``lr_scales_with_batch`` (its learning rate follows the
      global batch, the linear scaling rule) may be given a smaller default than its
      recipe's when that does not fit; ``self.eval_batch_size`` may likewise be smaller
      than the class's (never more than the scored split holds).
"""

from __future__ import annotations

import copy
import json
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch

from dawnbench.bounds import Bound
from dawnbench.distributed.world import shard_order
from dawnbench.errors import EntryError, clipped
from dawnbench.profiling.steps import StepCounter, StepLimitReached
from dawnbench.tasks import Task


@dataclass
class Progress:
    """What ``train`` yields: where training stands at an evaluation point."""

    epoch: float                           # epochs completed, fractional allowed
    samples: int                           # training examples processed so far
    loss: float | torch.Tensor | None = None  # recent training loss


@dataclass
class TrainContext:
    """What the harness hands to ``train``."""

    task: Task
    seed: int
    device: torch.device
    hparams: dict[str, Any]
    load_train: Callable[[], Any]            # arrays: (uint8 inputs, int64 labels); SQuAD: its questions
    precision: str = "fp32"                  # fp32, tf32, bf16 or fp16 (SPEC §12)
    scaler: torch.amp.GradScaler = field(default_factory=lambda: torch.amp.GradScaler("cpu", enabled=False))
    compile: Callable[[torch.nn.Module], torch.nn.Module] = lambda module: module
    synthetic: bool = False                  # True in warm-up: load_train() returns random data
    synthetic_inputs: Callable[[int], torch.Tensor] | None = None  # n random scored-split items (warm-up)
    rank: int = 0                            # this worker (SPEC §13); 0 in a one-process run
    world_size: int = 1                      # workers training together
    backend: str | None = None               # gloo or nccl; None in a one-process run
    distribute: Callable[[torch.nn.Module], torch.nn.Module] = lambda module: module  # wrap for DDP
    # Datasets larger than memory (ImageNet) are streamed, not loaded: one epoch of this worker's batches,
    # ctx.stream(epoch=, batch_size=, resolution=, pipeline="auto"|"cpu"|"gpu"|"dali", workers=2) — see
    # data.imagenet.train_stream. In warm-up: random batches of the same shapes.
    stream: Callable[..., Any] | None = None
    max_epochs: float | None = None          # the run's epoch budget (--max-epochs): a warm-up need not
                                             # prepare shapes the run will never reach

    def epoch_order(self, n: int, epoch: int) -> torch.Tensor:
        """The indices of the ``n`` in-memory training items this worker trains on in
        ``epoch``, in order: ``torch.randperm(n)`` in a one-process run; across workers, a
        shared permutation dealt out so that no item is seen twice in an epoch."""
        if self.world_size == 1:
            return torch.randperm(n, device=self.device)
        return shard_order(n, self.seed, epoch, self.rank, self.world_size, self.device)


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "true or false"
    if value == AUTO:
        return f"'{AUTO}' or a number"
    if isinstance(value, (int, float)):
        return "an integer" if isinstance(value, int) else "a number"
    return {str: "a string", list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


AUTO = "auto"  # a hyperparameter's default that the entry derives from the machine; --set takes a number too


def _same_kind(default: Any, value: Any) -> bool:
    if default == AUTO:
        return value == AUTO or (isinstance(value, (int, float)) and not isinstance(value, bool))
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(default, bool) and isinstance(value, bool)
    if isinstance(default, int):
        return isinstance(value, int)
    if isinstance(default, float):
        return isinstance(value, (int, float)) and math.isfinite(value)
    return isinstance(value, type(default))


def run_for_steps(gen: Iterator[Progress], steps: int) -> int:
    """Drive a ``train`` generator until ``steps`` optimizer steps or its first yield; return the steps."""
    try:
        with StepCounter(limit=steps) as counter:
            next(gen, None)
    except StepLimitReached:
        pass
    finally:
        gen.close()
    return counter.steps


class Entry(ABC):
    """Base class of every entry; see the module docstring for the full contract."""

    name: ClassVar[str] = ""
    tasks: ClassVar[tuple[str, ...]] = ()     # task names this entry is made for
    hparams: ClassVar[dict[str, Any]] = {}
    hparams_by_task: ClassVar[dict[str, dict[str, Any]]] = {}
    eval_batch_size: ClassVar[int] = 1000     # batch size the harness uses for predict
    # --quick (a trial on the first training items, tasks.QUICK_TRIALS): hyperparameters under the user's --set
    # that let it be seen in a few minutes on 2 cores — an evaluation in the first epochs, a smaller batch
    quick_hparams: ClassVar[dict[str, Any]] = {}
    warmup_steps: ClassVar[int] = 10          # optimizer steps of the default warm-up
    cpu_warmup_steps: ClassVar[int | None] = None  # on a CPU, where one step pays the one-time costs (None: the same)
    lr_scales_with_batch: ClassVar[bool] = False  # the lr follows the global batch: the harness may fit it
    precisions: ClassVar[tuple[str, ...]] = ("fp32", "tf32", "bf16")  # the harness imposes these
    own_precisions: ClassVar[tuple[str, ...]] = ()  # the entry implements these itself
    # Ranges of hyperparameters that would make a recipe loop forever or crash if wrong; an entry
    # adds its own with {**Entry.hparam_bounds, "lr": Bound(0, 10)}.
    hparam_bounds: ClassVar[dict[str, Bound]] = {"batch_size": Bound(1, 1 << 20, integer=True),
                                                 "epochs": Bound(0, 100_000, low_open=True),
                                                 # 0 divided an epoch's steps by zero; past a million, every step
                                                 "evals_per_epoch": Bound(1, 1_000_000, integer=True)}

    @classmethod
    def check_hparams(cls, task: Task, overrides: dict[str, Any]) -> None:
        """``--set`` values before anything runs: each of the type of the default it replaces
        (an integer where a number is expected is fine), and within ``hparam_bounds``."""
        defaults = {**cls.hparams, **cls.hparams_by_task.get(task.name, {})}
        for key, value in overrides.items():
            default = defaults.get(key)
            if default is not None and not _same_kind(default, value):
                raise EntryError(f"--set {key}={clipped(json.dumps(value))}: entry '{cls.name}' expects "
                                 f"{_kind(default)} (its default is {json.dumps(default)}).")
            if key in cls.hparam_bounds and value != AUTO:
                cls.hparam_bounds[key].check(f"--set {key}=", value)

    def __init__(self, task: Task, device: torch.device, overrides: dict[str, Any] | None = None):
        self.task = task
        self.device = device
        self.hp: dict[str, Any] = {**copy.deepcopy(self.hparams),
                                   **copy.deepcopy(self.hparams_by_task.get(task.name, {})),
                                   **(overrides or {})}

    def warmup(self, ctx: TrainContext) -> None:
        """Untimed init on ``ctx``'s synthetic data: by default, ``train`` for ``warmup_steps``
        optimizer steps (or to its first yield), then ``predict`` at both batch sizes."""
        if self.warmup_steps <= 0:
            return
        run_for_steps(self.train(ctx), self.warmup_steps_on(ctx.device))
        if ctx.synthetic_inputs is not None:
            inputs = ctx.synthetic_inputs(self.eval_batch_size)
            with torch.inference_mode():
                self.predict(inputs)
                self.predict(inputs[:1])

    def warmup_steps_on(self, device: torch.device) -> int:
        """Optimizer steps of the warm-up on ``device``: ``cpu_warmup_steps`` on a CPU if the entry sets
        it (a CPU's one-time cost is the first call's kernel creation; a GPU autotunes over several)."""
        if device.type == "cpu" and self.cpu_warmup_steps is not None:
            return self.cpu_warmup_steps
        return self.warmup_steps

    def flop_model(self) -> tuple[torch.nn.Module, torch.Tensor] | None:
        """Optional: the trained network and a small synthetic batch of training-shaped inputs.

        Called after the run (untimed) so the harness can count forward + backward
        FLOPs per sample and report achieved FLOP/s against the machine's peak.
        """
        return None

    def facts(self) -> dict[str, Any] | None:
        """Optional: what only the entry knows about how it ran — which tokenizer it found, seconds
        of host-side preprocessing — recorded as ``entry_facts`` in ``result.json`` at every
        evaluation (numbers, strings, booleans, None, lists and dicts of them)."""
        return None

    def make_model(self) -> torch.nn.Module | None:
        """Optional: a fresh, untrained network built from ``self.hp`` (untimed when called
        by ``dawnbench infer``; call it from ``train`` too, so both build the same thing)."""
        return None

    def inference_state(self) -> dict[str, Any] | None:
        """What ``predict`` needs after training, or ``None`` if the entry cannot be saved."""
        model = getattr(self, "model", None)
        if isinstance(model, torch.nn.Module) and type(self).make_model is not Entry.make_model:
            return {"model": model.state_dict()}
        return None

    def load_inference_state(self, state: dict[str, Any]) -> None:
        """Rebuild what ``predict`` needs from :meth:`inference_state`'s output."""
        model = self.make_model()
        if model is None:
            raise EntryError(f"entry '{self.name}' defines no make_model(), so its saved model "
                             "cannot be rebuilt; define make_model() or override load_inference_state().")
        model = model.to(self.device)
        model.load_state_dict(state["model"])
        self.model = model.eval()

    @abstractmethod
    def train(self, ctx: TrainContext) -> Iterator[Progress]:
        """Timed training; yield a :class:`Progress` wherever evaluation may happen."""

    @abstractmethod
    def predict(self, inputs: torch.Tensor) -> torch.Tensor:
        """Scores (N×C) or labels (N) for a uint8 batch of the scored split."""
