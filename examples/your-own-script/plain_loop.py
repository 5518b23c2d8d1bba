"""A plain PyTorch training loop on MNIST, recorded by dawnbench with three added lines (marked ◆).

    python examples/your-own-script/plain_loop.py                 # to MNIST's target, 99 (%)
    python examples/your-own-script/plain_loop.py --target 97     # a lower target, on the same scale (unofficial)

The run folder it leaves (runs/mnist-plain_loop-…) is read by every command, as an entry's is:
`dawnbench compare`, `report`, `export`, `validate`. The loop is the script's own; only `predict`
(how the model answers a batch of the held test split: N×28×28 uint8 images → N×10 scores) is handed
to the tracker, so the harness scores the model itself and the run can be official.
"""

import argparse

import torch
import torch.nn.functional as F
from torch import nn

import dawnbench
from dawnbench.data import load_train

parser = argparse.ArgumentParser()
parser.add_argument("--target", type=float, default=None)
parser.add_argument("--out", default="runs")
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()

HP = {"batch_size": 64, "lr": 0.1, "momentum": 0.9, "epochs": 1, "evals_per_epoch": 10}


def make_net() -> nn.Module:
    def block(c_in: int, c_out: int) -> list[nn.Module]:
        return [nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.MaxPool2d(2), nn.BatchNorm2d(c_out), nn.ReLU()]
    return nn.Sequential(*block(1, 16), *block(16, 32), *block(32, 64), nn.Flatten(), nn.Linear(64 * 3 * 3, 10))


def scale(images: torch.Tensor) -> torch.Tensor:
    return ((images.float() / 255 - 0.1307) / 0.3081).unsqueeze(1)


def predict(images: torch.Tensor) -> torch.Tensor:
    model.eval()
    scores = model(scale(images))
    model.train()
    return scores


# ◆ the clock starts here: loading the data and building the model are timed, as for an entry
with dawnbench.track("mnist", predict=predict, target=args.target, out=args.out, seed=args.seed, hparams=HP) as run:
    images, labels = map(torch.as_tensor, load_train("mnist"))   # any loader of your own does as well
    model = make_net()
    opt = torch.optim.SGD(model.parameters(), lr=HP["lr"], momentum=HP["momentum"], nesterov=True)
    steps = len(images) // HP["batch_size"]
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, HP["lr"], total_steps=steps * HP["epochs"])
    every = steps // HP["evals_per_epoch"]
    done = False
    for epoch in range(HP["epochs"]):
        order = torch.randperm(len(images))
        for step in range(steps):
            batch = order[step * HP["batch_size"]:(step + 1) * HP["batch_size"]]
            loss = F.cross_entropy(model(scale(images[batch])), labels[batch], label_smoothing=0.1)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            if (step + 1) % every == 0 or step + 1 == steps:
                seen = epoch * steps + step + 1
                # ◆ an evaluation point: the clock stops while the harness scores predict on the test split
                done = run.evaluate(epoch=seen / steps, samples=seen * HP["batch_size"], loss=loss)
                if done:
                    break
        if done:
            break
# ◆ leaving the block writes the final record: run.result, run.dir
print(run.result.status, run.result.time_to_accuracy_s, run.dir)
