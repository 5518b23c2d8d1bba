"""A PyTorch Lightning script on MNIST, recorded by dawnbench with one added line (marked ◆).

    pip install 'dawnbench[lightning]'
    python examples/your-own-script/lightning_module.py                  # to MNIST's 99 %
    python examples/your-own-script/lightning_module.py --self-reported  # the module's own val_acc instead

With predict= the harness scores the model on MNIST's held test split at each validation point (the run can
be official); with accuracy= the figure is the module's own logged val_acc, and the run is recorded
self-reported. Either way every validation loop is off the clock.
"""

import argparse

import lightning.pytorch as pl
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from dawnbench.data import load_train
from dawnbench.integrations.lightning import DawnbenchCallback

parser = argparse.ArgumentParser()
parser.add_argument("--target", type=float, default=None)
parser.add_argument("--out", default="runs")
parser.add_argument("--self-reported", action="store_true")
parser.add_argument("--train-items", type=int, default=None, help="train on the first N items only")
args = parser.parse_args()
BATCH = 64


def scale(images: torch.Tensor) -> torch.Tensor:
    return ((images.float() / 255 - 0.1307) / 0.3081).unsqueeze(1)


class Net(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        def block(c_in: int, c_out: int) -> list[nn.Module]:
            return [nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.MaxPool2d(2), nn.BatchNorm2d(c_out), nn.ReLU()]
        self.body = nn.Sequential(*block(1, 16), *block(16, 32), *block(32, 64), nn.Flatten(), nn.Linear(576, 10))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.body(scale(images))

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], _index: int) -> torch.Tensor:
        images, labels = batch
        return F.cross_entropy(self(images), labels, label_smoothing=0.1)

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], _index: int) -> None:
        images, labels = batch
        self.log("val_acc", (self(images).argmax(-1) == labels).float().mean())

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.05, momentum=0.9, nesterov=True)


images, labels = map(torch.as_tensor, load_train("mnist"))
train = DataLoader(TensorDataset(images[:args.train_items], labels[:args.train_items]), batch_size=BATCH, shuffle=True)
held_out = DataLoader(TensorDataset(*map(torch.as_tensor, load_train("mnist", "test"))), batch_size=1000)
model = Net()


def predict(batch: torch.Tensor) -> torch.Tensor:     # the held split's uint8 images → scores
    model.eval()
    scores = model(batch)
    model.train()
    return scores


# ◆ the one line: the harness's scorer (predict=) or the module's own figure (accuracy=, self-reported)
dawnbench = DawnbenchCallback("mnist", target=args.target, out=args.out, name="lightning", hparams={"batch_size": BATCH},
                              **({"accuracy": lambda m: 100 * m["val_acc"]} if args.self_reported else
                                 {"predict": predict}))
trainer = pl.Trainer(max_epochs=1, val_check_interval=0.1, callbacks=[dawnbench], accelerator="cpu", logger=False,
                     enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                     num_sanity_val_steps=0)
trainer.fit(model, train, held_out)
run = dawnbench.tracker.result
print(run.status, run.time_to_accuracy_s, run.run_dir)
