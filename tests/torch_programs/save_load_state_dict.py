"""Saving a model's state_dict to a file and loading it into a fresh model."""

import os
import tempfile

import torch
from torch import nn


def run(data):
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    model.load_state_dict({k: torch.tensor(v) for k, v in data["seq"].items()})
    x = torch.tensor(data["x"])
    before = model(x).sum().item()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.pth")
        torch.save(model.state_dict(), path)
        fresh = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
        fresh.load_state_dict(torch.load(path, weights_only=True))
    fresh.eval()
    after = fresh(x).sum().item()
    return [before, after, float(len(fresh.state_dict()))]
