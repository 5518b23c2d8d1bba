"""A Hugging Face Trainer script on MNIST, recorded by dawnbench with one added line (marked ◆).

    pip install 'dawnbench[hf]'
    python examples/your-own-script/hf_trainer.py                      # to MNIST's 99 %
    python examples/your-own-script/hf_trainer.py --self-reported      # the Trainer's own eval_accuracy instead

With predict= the harness scores the model on MNIST's held test split at each of the Trainer's evaluation
points (the run can be official); with accuracy= the figure is the Trainer's own, and the run is recorded
self-reported. Either way the Trainer's evaluation, logging and checkpoints are off the clock.
"""

import argparse

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from transformers import Trainer, TrainingArguments

from dawnbench.data import load_train
from dawnbench.integrations.hf import DawnbenchCallback

parser = argparse.ArgumentParser()
parser.add_argument("--target", type=float, default=None)
parser.add_argument("--out", default="runs")
parser.add_argument("--self-reported", action="store_true")
parser.add_argument("--train-items", type=int, default=None, help="train on the first N items only")
args = parser.parse_args()
BATCH, EVAL_EVERY = 64, 94          # an evaluation every 94 steps: about a tenth of an epoch


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        def block(c_in: int, c_out: int) -> list[nn.Module]:
            return [nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.MaxPool2d(2), nn.BatchNorm2d(c_out), nn.ReLU()]
        self.body = nn.Sequential(*block(1, 16), *block(16, 32), *block(32, 64), nn.Flatten(), nn.Linear(576, 10))

    def forward(self, pixel_values: torch.Tensor, labels: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        logits = self.body(((pixel_values.float() / 255 - 0.1307) / 0.3081).unsqueeze(1))
        return {"logits": logits} if labels is None else {"loss": F.cross_entropy(logits, labels), "logits": logits}


class Images(torch.utils.data.Dataset):
    def __init__(self, images: np.ndarray, labels: np.ndarray) -> None:
        self.images, self.labels = torch.as_tensor(images), torch.as_tensor(labels)

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"pixel_values": self.images[i], "labels": self.labels[i]}


images, labels = load_train("mnist")
train = Images(images[:args.train_items], labels[:args.train_items])
held_out = Images(*load_train("mnist", "test"))   # the Trainer's own evaluation set (self-reported runs)
model = Net()


def predict(batch: torch.Tensor) -> torch.Tensor:     # the held split's uint8 images → scores
    model.eval()
    scores = model(batch)["logits"]
    model.train()
    return scores


def accuracy(metrics: dict[str, float]) -> float:      # the Trainer's metrics → MNIST's scale (0–100)
    return 100 * metrics["eval_accuracy"]


training_args = TrainingArguments(
    output_dir=f"{args.out}/hf-trainer", per_device_train_batch_size=BATCH, per_device_eval_batch_size=1000,
    learning_rate=0.05, num_train_epochs=1, lr_scheduler_type="linear", optim="sgd",
    eval_strategy="steps", eval_steps=EVAL_EVERY, save_strategy="no", logging_strategy="no", report_to="none", disable_tqdm=True,
    use_cpu=True, dataloader_num_workers=0, seed=0)
# ◆ the one line: the harness's scorer (predict=) or the Trainer's own figure (accuracy=, self-reported)
dawnbench = DawnbenchCallback("mnist", target=args.target, out=args.out, name="hf-trainer",
                              hparams={"batch_size": BATCH, "lr": 0.05},
                              **({"accuracy": accuracy} if args.self_reported else {"predict": predict}))
trainer = Trainer(
    model, training_args, train_dataset=train, eval_dataset=held_out, callbacks=[dawnbench],
    compute_metrics=lambda p: {"accuracy": float((p.predictions.argmax(-1) == p.label_ids).mean())})
trainer.train()
run = dawnbench.tracker.result
print(run.status, run.time_to_accuracy_s, run.run_dir)
