"""A checkpoint dict (model, optimizer, epoch) saved, loaded and resumed from."""

import os
import tempfile

import numpy as np
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 6)
        self.bn = nn.BatchNorm1d(6)
        self.fc2 = nn.Linear(6, 2)
        self.register_buffer("steps", torch.zeros(1))

    def forward(self, x):
        self.steps += 1
        return self.fc2(torch.relu(self.bn(self.fc1(x))))


def run(data):
    rng = np.random.default_rng(5)
    x = torch.tensor(rng.normal(size=(10, 4)), dtype=torch.float32)
    y = torch.tensor(rng.integers(0, 2, 10))
    model = Model()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.tensor(rng.uniform(-0.4, 0.4, tuple(p.shape)), dtype=torch.float32))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(3):
        opt.zero_grad()
        loss = nn.CrossEntropyLoss()(model(x), y)
        loss.backward()
        opt.step()
    out = [loss.item()]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "ckpt.pt")
        torch.save(
            {
                "epoch": 3,
                "model": model.state_dict(),
                "optimizer": opt.state_dict(),
                "loss": loss.item(),
            },
            path,
        )
        ckpt = torch.load(path, weights_only=True)
        restored = Model()
        restored.load_state_dict(ckpt["model"])
        opt2 = torch.optim.Adam(restored.parameters(), lr=0.01)
        opt2.load_state_dict(ckpt["optimizer"])
        out.append(ckpt["epoch"])
        torch.save(model.state_dict(), os.path.join(d, "w.pth"))
        m3 = Model()
        missing = m3.load_state_dict(torch.load(os.path.join(d, "w.pth")), strict=True)
        out.append(len(missing.missing_keys))
    restored.eval()
    model.eval()
    with torch.no_grad():
        out.append((restored(x) - model(x)).abs().max().item())
    for m, o in ((model, opt), (restored, opt2)):
        m.train()
        o.zero_grad()
        l2 = nn.CrossEntropyLoss()(m(x), y)
        l2.backward()
        o.step()
        out.append(l2.item())
    out.append(sorted(model.state_dict().keys()).index("bn.running_mean"))
    out.append(model.steps.item())
    return out
