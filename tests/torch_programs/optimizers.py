"""The same regression trained with SGD (momentum, weight decay), Adam and AdamW."""

import torch
from torch import nn


def train(data, make_optimizer):
    model = nn.Linear(3, 1)
    model.load_state_dict({"weight": torch.tensor(data["w"]), "bias": torch.tensor(data["b"])})
    x = torch.tensor(data["x"])
    y = torch.tensor(data["y"])
    optimizer = make_optimizer(model.parameters())
    losses = []
    for _ in range(8):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def run(data):
    return (
        train(data, lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=1e-3))
        + train(data, lambda p: torch.optim.Adam(p, lr=0.05))
        + train(data, lambda p: torch.optim.AdamW(p, lr=0.05, weight_decay=0.1))
    )
