"""squad-bidaf: DAWNBench's SQuAD seed, BiDAF (Seo et al., ICLR 2017), trained from scratch.

Evidence and choices:
  * The seed entry of the DAWNBench SQuAD board took 7 h 38 min on a K80 to F1 0.75 and
    peaked at 0.753–0.758; its role here is that baseline, not speed.
  * The paper's model: word embeddings (100-d; GloVe from ``--set glove=PATH`` if you
    have the file — none is reachable here — else learned) and a character CNN (8-d
    characters, 100 filters of width 5, max over the word), a 2-layer highway network,
    a contextual BiLSTM, bi-directional attention flow (similarity w·[h; u; h∘u],
    context-to-query and query-to-context attention, G = [h; ũ; h∘ũ; h∘h̃]), a 2-layer
    modelling BiLSTM, and the span output (start from [G; M], end from [G; BiLSTM(M)]).
    Hidden size 100, dropout 0.2, Adadelta at learning rate 0.5, batch 60, 12 epochs —
    the paper's settings (it also averages weights with decay 0.999; not done here).
  * Words are split by the ``tokenizers`` library's BERT pre-tokenizer (whitespace and
    punctuation, with character offsets), lower-cased for the word vocabulary (the
    training split's words); answers are cut from the context by those offsets, at most
    ``max_answer`` words. Training skips questions whose answer lies beyond the first
    ``max_context`` words (the paper's 400-word cap); prediction reads whole contexts.

Sections, in the order things happen: hyperparameters, words, model, training loop, prediction.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from dawnbench.bounds import Bound
from dawnbench.entries.base import Entry, Progress, TrainContext
from dawnbench.entries.vectors import check_vectors_option, read_vectors
from dawnbench.tasks import Task

# --- hyperparameters (all of them) -----------------------------------------------------
HPARAMS = {
    "epochs": 12,
    "batch_size": 60,
    "lr": 0.5,                   # Adadelta
    "hidden": 100,
    "word_dim": 100,
    "char_dim": 8,
    "char_filters": 100,
    "char_width": 5,
    "dropout": 0.2,
    "max_context": 400,          # words; longer training contexts are cut, answers beyond are skipped
    "max_answer": 30,            # words
    "max_chars": 16,             # characters kept per word
    "glove": "",                 # path of a GloVe text file (word followed by word_dim numbers per line)
    "evals_per_epoch": 1,
}
PAD, UNK = 0, 1


# --- words ---------------------------------------------------------------------------------
def split_words(text: str) -> list[tuple[str, tuple[int, int]]]:
    from tokenizers.pre_tokenizers import BertPreTokenizer

    return BertPreTokenizer().pre_tokenize_str(text)


class Vocab:
    """Word and character indices (0 padding, 1 unknown), built from the training questions."""

    def __init__(self, words: Sequence[str], chars: Sequence[str]):
        self.words = {w: i + 2 for i, w in enumerate(words)}
        self.chars = {c: i + 2 for i, c in enumerate(chars)}

    @classmethod
    def build(cls, texts: Sequence[list[str]], extra: Sequence[str] = ()) -> Vocab:
        words, chars = Counter(), Counter()
        for tokens in texts:
            words.update(t.lower() for t in tokens)
            chars.update(c for t in tokens for c in t)
        return cls(sorted(set(words) | set(extra)), sorted(chars))

    def encode(self, tokens: Sequence[str], max_chars: int) -> tuple[torch.Tensor, torch.Tensor]:
        ids = torch.tensor([self.words.get(t.lower(), UNK) for t in tokens] or [PAD])
        chars = torch.zeros(max(len(tokens), 1), max_chars, dtype=torch.long)
        for i, t in enumerate(tokens):
            codes = [self.chars.get(c, UNK) for c in t[:max_chars]]
            chars[i, :len(codes)] = torch.tensor(codes)
        return ids, chars

    def state(self) -> dict:
        return {"words": list(self.words), "chars": list(self.chars)}


def batch_of(items: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Pad word ids (B×T), characters (B×T×C); lengths (B)."""
    lengths = torch.tensor([len(w) for w, _ in items])
    words = nn.utils.rnn.pad_sequence([w for w, _ in items], batch_first=True)
    chars = nn.utils.rnn.pad_sequence([c for _, c in items], batch_first=True)
    return words, chars, lengths


def load_glove(path: str, vocab: Vocab, dim: int) -> torch.Tensor | None:
    """The word table with GloVe's vectors where the file has the (lower-cased) word; None without a file."""
    if not path:
        return None
    found = read_vectors(path, vocab.words, dim, "--set glove=")
    table = torch.randn(len(vocab.words) + 2, dim) * 0.1
    for word, vector in found.items():
        table[vocab.words[word]] = torch.from_numpy(vector)
    return table


# --- model ---------------------------------------------------------------------------------
class BiLSTM(nn.Module):
    def __init__(self, size_in: int, hidden: int, layers: int = 1, dropout: float = 0.0):
        super().__init__()
        self.rnn = nn.LSTM(size_in, hidden, layers, batch_first=True, bidirectional=True,
                           dropout=dropout if layers > 1 else 0.0)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, _ = self.rnn(packed)
        return pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])[0]


class BiDAF(nn.Module):
    def __init__(self, words: int, chars: int, hp: dict, glove: torch.Tensor | None = None):
        super().__init__()
        d, self.drop = hp["hidden"], nn.Dropout(hp["dropout"])
        self.word = nn.Embedding(words, hp["word_dim"], padding_idx=PAD)
        if glove is not None:
            self.word.weight.data.copy_(glove)
        self.char = nn.Embedding(chars, hp["char_dim"], padding_idx=PAD)
        self.char_cnn = nn.Conv1d(hp["char_dim"], hp["char_filters"], hp["char_width"], padding=hp["char_width"] // 2)
        size = hp["word_dim"] + hp["char_filters"]
        self.highway = nn.ModuleList(nn.Linear(size, 2 * size) for _ in range(2))
        self.context = BiLSTM(size, d)
        self.similarity = nn.Linear(6 * d, 1)
        self.modelling = BiLSTM(8 * d, d, layers=2, dropout=hp["dropout"])
        self.end_rnn = BiLSTM(2 * d, d)
        self.start_out, self.end_out = nn.Linear(10 * d, 1), nn.Linear(10 * d, 1)

    def embed(self, words: torch.Tensor, chars: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        b, t, c = chars.shape
        x = self.char(chars.view(b * t, c)).transpose(1, 2)                  # (B·T)×char_dim×C
        x = torch.cat([self.word(words), self.char_cnn(self.drop(x)).amax(-1).view(b, t, -1)], -1)
        for layer in self.highway:
            gate, value = layer(x).chunk(2, -1)
            gate = torch.sigmoid(gate)
            x = gate * F.relu(value) + (1 - gate) * x
        return self.context(self.drop(x), lengths)

    def forward(self, cw, cc, cl, qw, qc, ql) -> tuple[torch.Tensor, torch.Tensor]:
        h, u = self.embed(cw, cc, cl), self.embed(qw, qc, ql)               # B×T×2d, B×J×2d
        t, j = h.shape[1], u.shape[1]
        c_mask = torch.arange(t, device=cw.device)[None] < cl.to(cw.device)[:, None]
        q_mask = torch.arange(j, device=cw.device)[None] < ql.to(cw.device)[:, None]
        hh, uu = h[:, :, None].expand(-1, -1, j, -1), u[:, None].expand(-1, t, -1, -1)
        s = self.similarity(torch.cat([hh, uu, hh * uu], -1)).squeeze(-1)    # B×T×J
        s = s.masked_fill(~q_mask[:, None], -1e30)
        c2q = torch.softmax(s, -1) @ u                                        # B×T×2d
        b = torch.softmax(s.amax(-1).masked_fill(~c_mask, -1e30), -1)         # B×T
        q2c = (b[:, None] @ h).expand(-1, t, -1)                              # B×T×2d
        g = torch.cat([h, c2q, h * c2q, h * q2c], -1)                         # B×T×8d
        m = self.modelling(self.drop(g), cl)
        m2 = self.end_rnn(self.drop(m), cl)
        start = self.start_out(self.drop(torch.cat([g, m], -1))).squeeze(-1).masked_fill(~c_mask, -1e30)
        end = self.end_out(self.drop(torch.cat([g, m2], -1))).squeeze(-1).masked_fill(~c_mask, -1e30)
        return start, end


def best_span(start: torch.Tensor, end: torch.Tensor, max_answer: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per row the (i, j), j ≥ i, j − i < max_answer, maximising log p1(i) + log p2(j)."""
    p1, p2 = start.float().log_softmax(-1), end.float().log_softmax(-1)
    t = p1.shape[1]
    idx = torch.arange(t, device=p1.device)
    valid = (idx[None, :] >= idx[:, None]) & (idx[None, :] - idx[:, None] < max_answer)
    score = (p1[:, :, None] + p2[:, None, :]).masked_fill(~valid, float("-inf")).flatten(1)
    at = score.argmax(1)
    return at // t, at % t


# --- the entry -------------------------------------------------------------------------------
class SquadBidaf(Entry):
    name = "squad-bidaf"
    tasks = ("squad",)
    hparams = HPARAMS
    hparam_bounds = {**Entry.hparam_bounds, "max_context": Bound(8, 100_000, integer=True),
                     "max_answer": Bound(1, 1000, integer=True), "max_chars": Bound(1, 100, integer=True)}
    eval_batch_size = 32
    warmup_steps = 2
    precisions = ("fp32", "tf32", "bf16")

    @classmethod
    def check_hparams(cls, task: Task, overrides: dict[str, Any]) -> None:
        """Also a wrong GloVe file, by its first line, before the run starts."""
        super().check_hparams(task, overrides)
        check_vectors_option(overrides, cls.hparams, "glove", "word_dim")

    def make_model(self) -> nn.Module:
        return BiDAF(len(self.vocab.words) + 2, len(self.vocab.chars) + 2, self.hp)

    def _encode(self, q) -> tuple:
        context = split_words(q.context)
        tokens = [w for w, _ in context]
        return (*self.vocab.encode(tokens, self.hp["max_chars"]),
                *self.vocab.encode([w for w, _ in split_words(q.question)], self.hp["max_chars"]),
                [o for _, o in context])

    def train(self, ctx: TrainContext) -> Iterator[Progress]:
        hp, device = self.hp, ctx.device
        questions = ctx.load_train()
        if ctx.synthetic:
            questions = questions[:hp["batch_size"] * (self.warmup_steps + 1)]
        split = [(q, split_words(q.context)) for q in questions]
        self.vocab = Vocab.build([[w for w, _ in c] for _, c in split] +
                                 [[w for w, _ in split_words(q.question)] for q in questions])
        items = []
        for q, context in split:
            context = context[:hp["max_context"]]
            a = q.answers[0]
            start_char, end_char = a.start, a.start + len(a.text)
            inside = [i for i, (_, (s, e)) in enumerate(context) if e > start_char and s < end_char]
            if not inside:
                continue           # the answer lies beyond max_context words
            items.append((self.vocab.encode([w for w, _ in context], hp["max_chars"]),
                          self.vocab.encode([w for w, _ in split_words(q.question)], hp["max_chars"]),
                          inside[0], inside[-1]))
        self.model = self.make_model().to(device)
        glove = load_glove(hp["glove"], self.vocab, hp["word_dim"])
        if glove is not None:
            self.model.word.weight.data.copy_(glove.to(device))
        forward = ctx.compile(ctx.distribute(self.model))
        optimizer = torch.optim.Adadelta(self.model.parameters(), lr=hp["lr"])
        n, bs = len(items), hp["batch_size"]
        steps_per_epoch = max(1, n // (bs * ctx.world_size))
        every = max(1, steps_per_epoch // hp["evals_per_epoch"])
        step = samples = 0
        for epoch in range(math.ceil(hp["epochs"])):
            order = ctx.epoch_order(n, epoch).tolist()
            self.model.train()
            for i in range(len(order) // bs):
                chosen = [items[k] for k in order[i * bs:(i + 1) * bs]]
                cw, cc, cl = batch_of([c for c, _, _, _ in chosen])
                qw, qc, ql = batch_of([q for _, q, _, _ in chosen])
                start, end = forward(cw.to(device), cc.to(device), cl, qw.to(device), qc.to(device), ql)
                target_s = torch.tensor([s for _, _, s, _ in chosen], device=device)
                target_e = torch.tensor([e for _, _, _, e in chosen], device=device)
                loss = F.cross_entropy(start.float(), target_s) + F.cross_entropy(end.float(), target_e)
                optimizer.zero_grad(set_to_none=True)
                ctx.scaler.scale(loss).backward()
                ctx.scaler.step(optimizer)
                ctx.scaler.update()
                step, samples = step + 1, samples + bs * ctx.world_size
                if step % every == 0 or step >= hp["epochs"] * steps_per_epoch:
                    yield Progress(epoch=step / steps_per_epoch, samples=samples, loss=loss.detach())
                if step >= hp["epochs"] * steps_per_epoch:
                    return

    def inference_state(self) -> dict:
        return {"model": self.model.state_dict(), "vocab": self.vocab.state()}

    def load_inference_state(self, state: dict) -> None:
        self.vocab = Vocab(state["vocab"]["words"], state["vocab"]["chars"])
        self.model = self.make_model().to(self.device)
        self.model.load_state_dict(state["model"])
        self.model.eval()

    def predict(self, inputs: Sequence) -> list[str]:
        """The answer string of each question: the best span of at most ``max_answer`` words."""
        self.model.eval()
        encoded = [self._encode(q) for q in inputs]
        cw, cc, cl = batch_of([(w, c) for w, c, _, _, _ in encoded])
        qw, qc, ql = batch_of([(w, c) for _, _, w, c, _ in encoded])
        start, end = self.model(cw.to(self.device), cc.to(self.device), cl, qw.to(self.device), qc.to(self.device), ql)
        first, last = best_span(start, end, self.hp["max_answer"])
        answers = []
        for q, (_, _, _, _, offsets), s, e in zip(inputs, encoded, first.tolist(), last.tolist()):
            answers.append(q.context[offsets[s][0]:offsets[e][1]] if offsets else "")
        return answers
