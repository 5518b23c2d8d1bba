"""A test entry that holds a known amount of memory on every worker and reads its batches through a
DataLoader worker process, so the resource monitor's sums over workers and their children can be
checked (SPEC §20). With ``idle=true`` it trains one pass and then sleeps out its ``seconds``: a job
that waits for the scheduler's time limit without taking a core from the other tests."""

from __future__ import annotations

import time

import torch
import torch.distributed as dist
from torch import nn

from dawnbench.entries import Entry, Progress


class Holding(Entry):
    name = "holding"
    tasks = ("mnist",)
    hparams = {"batch_size": 64, "hold_mib": 256, "seconds": 3.0, "idle": False,
               "train_subset": 4096}            # it trains on the split's first 4,096 images: its epochs are theirs
    warmup_steps = 1

    def make_model(self) -> nn.Module:
        return nn.Sequential(nn.Flatten(), nn.Linear(28 * 28, 10))

    def train(self, ctx):
        hp = self.hp
        held = torch.ones(hp["hold_mib"] << 18)           # hold_mib MiB of float32, alive until the end
        images, labels = ctx.load_train()
        part = hp["train_subset"]
        data = torch.utils.data.TensorDataset(torch.from_numpy(images[:part]), torch.from_numpy(labels[:part]))
        loader = torch.utils.data.DataLoader(data, batch_size=hp["batch_size"], num_workers=1, persistent_workers=True)
        self.model = self.make_model()
        forward = ctx.distribute(self.model)
        optimizer = torch.optim.SGD(self.model.parameters(), lr=0.01)
        start, steps = time.perf_counter(), 0
        while ctx.synthetic or not self.done(start):
            for x, y in loader:
                loss = nn.functional.cross_entropy(forward(x.float() / 255), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                steps += 1
            if ctx.synthetic:
                break
            if hp["idle"]:                                # a signal's StopRun ends the sleep
                time.sleep(max(0.0, hp["seconds"] - (time.perf_counter() - start)))
        held.add_(1)
        samples = steps * hp["batch_size"] * ctx.world_size
        yield Progress(epoch=samples / part, samples=samples, loss=loss.detach())

    def done(self, start: float) -> bool:
        """Past ``seconds`` — decided by all workers together (the latest one's clock), so none trains another
        pass alone and waits for good at an all-reduce its peers never join."""
        late = torch.tensor([time.perf_counter() - start >= self.hp["seconds"]], dtype=torch.float32)
        if dist.is_initialized():
            dist.all_reduce(late, op=dist.ReduceOp.MAX)
        return bool(late.item())

    def predict(self, inputs):
        return self.model(inputs.float() / 255)
