"""Span answers for SQuAD entries: question–context windows in, answer strings out.

The conventions of Hugging Face's ``run_qa.py`` (the ecosystem's reference), written
with the ``tokenizers`` library directly:

* **windows** (:func:`windows`): each (question, context) pair becomes one or more
  features of ``max_length`` tokens — ``[CLS] question [SEP] context-part [SEP]`` —
  truncating only the context, consecutive parts overlapping by ``stride`` tokens; each
  feature keeps its question's index and the character offsets of its context tokens.
* **training targets** (:func:`train_features`): the first gold answer's token span in
  each window; a window that does not hold the whole answer points at [CLS] (0, 0).
* **decoding** (:func:`best_answers`): per feature the ``n_best`` highest start and end
  logits; a pair is valid when both are context tokens, end ≥ start and the span is at
  most ``max_answer`` tokens; the answer is the best valid pair over all of a question's
  windows (start + end logit), cut from the context by its character offsets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from tokenizers import Tokenizer

from dawnbench.errors import EntryError


@dataclass
class Features:
    input_ids: torch.Tensor          # F×L int64
    attention_mask: torch.Tensor     # F×L
    token_type_ids: torch.Tensor     # F×L
    question: torch.Tensor           # F: index of the feature's question
    offsets: torch.Tensor            # F×L×2 character offsets into the context; (-1, -1) outside it

    def __len__(self) -> int:
        return len(self.question)


def configure(tokenizer: Tokenizer, max_length: int, stride: int) -> Tokenizer:
    tokenizer.enable_truncation(max_length, stride=stride, strategy="only_second")
    tokenizer.enable_padding(length=max_length, pad_id=tokenizer.token_to_id("[PAD]") or 0)
    return tokenizer


def windows(tokenizer: Tokenizer, questions: Sequence, max_length: int, stride: int) -> Features:
    """Every window of every question (``questions`` have ``.question`` and ``.context``)."""
    # The longest question first: a window with too little room for its context after it makes tokenizers panic in
    # Rust (its message on stderr, whatever Python catches), so it is refused here, by name.
    tokenizer.no_truncation()
    tokenizer.no_padding()
    lengths = [len(e.ids) for e in tokenizer.encode_batch([q.question.lstrip() for q in questions],
                                                          add_special_tokens=False)]
    longest = max(range(len(lengths)), key=lengths.__getitem__, default=None)
    if longest is not None and stride >= max_length - 3 - lengths[longest]:
        raise EntryError(f"max_length={max_length}, stride={stride}: the question {questions[longest].question[:80]!r} "
                         f"takes {lengths[longest]} tokens, leaving {max_length - 3 - lengths[longest]} of each window "
                         "for its context — no more than the stride the windows overlap by. Raise --set max_length=N "
                         "or lower --set stride=N.")
    try:
        configure(tokenizer, max_length, stride)
        encodings = tokenizer.encode_batch([(q.question.lstrip(), q.context) for q in questions])
    except Exception as err:  # tokenizers raises a ValueError or a bare Exception
        raise EntryError(f"max_length={max_length}, stride={stride}: a window cannot hold a question and part of "
                         f"its context ({err}). Raise --set max_length=N or lower --set stride=N.") from None
    windows_of = [[first, *first.overflowing] for first in encodings]   # .overflowing copies: read it once
    encs = [enc for group in windows_of for enc in group]
    owners = [i for i, group in enumerate(windows_of) for _ in group]
    ids = np.array([e.ids for e in encs], dtype=np.int64)
    types = np.array([e.type_ids for e in encs], dtype=np.int64)
    offsets = np.array([e.offsets for e in encs], dtype=np.int64).reshape(len(encs), max_length, 2)
    # BERT's layout: [CLS] question [SEP] context [SEP] [PAD]…, the context part (and its [SEP]) typed 1.
    # Derived from ids and types rather than read per token from two more lists: this is the slow part.
    mask = ids != tokenizer.padding["pad_id"]
    last_sep = mask.sum(1, keepdims=True) - 1
    context = (types == 1) & (np.arange(max_length)[None, :] < last_sep)
    offsets[~context] = -1                        # only context tokens keep their character offsets
    return Features(torch.from_numpy(ids), torch.from_numpy(mask.astype(np.int64)), torch.from_numpy(types),
                    torch.tensor(owners), torch.from_numpy(offsets))


def train_features(tokenizer: Tokenizer, questions: Sequence, max_length: int,
                   stride: int) -> tuple[Features, torch.Tensor, torch.Tensor]:
    """:func:`windows` and each window's target token positions (0, 0 where it lacks the answer)."""
    features = windows(tokenizer, questions, max_length, stride)
    first = [questions[i].answers[0] for i in features.question.tolist()]
    start_char = torch.tensor([a.start for a in first])
    end_char = torch.tensor([a.start + len(a.text) for a in first])
    begins, ends = features.offsets[..., 0], features.offsets[..., 1]
    context = begins >= 0
    holds = ((begins.masked_fill(~context, 1 << 40).min(1).values <= start_char)
             & (ends.masked_fill(~context, -1).max(1).values >= end_char))
    # the first context token ending after the answer starts; the last one starting before it ends
    start_tok = (context & (ends > start_char[:, None])).int().argmax(1)
    after = context & (begins < end_char[:, None])
    end_tok = max_length - 1 - after.flip(1).int().argmax(1)
    return features, torch.where(holds, start_tok, 0), torch.where(holds, end_tok, 0)


def best_answers(start_logits: torch.Tensor, end_logits: torch.Tensor, features: Features, questions: Sequence,
                 n_best: int = 20, max_answer: int = 30) -> list[str]:
    """The answer string of each question from its features' logits (F×L each)."""
    start_logits, end_logits = start_logits.float().cpu(), end_logits.float().cpu()
    context = features.offsets[..., 0] >= 0
    k = min(n_best, start_logits.shape[1])
    s_val, s_idx = start_logits.masked_fill(~context, float("-inf")).topk(k, dim=1)
    e_val, e_idx = end_logits.masked_fill(~context, float("-inf")).topk(k, dim=1)
    length = e_idx[:, None, :] - s_idx[:, :, None]                        # F×k×k
    score = (s_val[:, :, None] + e_val[:, None, :]).masked_fill((length < 0) | (length >= max_answer), float("-inf"))
    flat_best, flat_at = score.flatten(1).max(1)
    best: dict[int, tuple[float, int, int]] = {}
    for f, (value, at) in enumerate(zip(flat_best.tolist(), flat_at.tolist())):
        if value == float("-inf"):
            continue
        q = int(features.question[f])
        if q not in best or value > best[q][0]:
            s, e = int(s_idx[f, at // k]), int(e_idx[f, at % k])
            best[q] = (value, int(features.offsets[f, s, 0]), int(features.offsets[f, e, 1]))
    return [questions[i].context[best[i][1]:best[i][2]] if i in best else "" for i in range(len(questions))]
