"""The same regression trained with SGD (momentum, weight decay), Adam and AdamW, and with SGD
under a learning-rate scheduler (StepLR) stepping once per epoch."""

import torch
from torch import nn
from torch.optim.lr_scheduler import StepLR


def train(data, make_optimizer, epochs, make_scheduler=None):
    model = nn.Linear(3, 1)
    model.load_state_dict({"weight": torch.tensor(data["w"]), "bias": torch.tensor(data["b"])})
    x = torch.tensor(data["x"])
    y = torch.tensor(data["y"])
    optimizer = make_optimizer(model.parameters())
    scheduler = make_scheduler(optimizer) if make_scheduler else None
    out = []
    for _ in range(epochs):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        out.append(loss.item())
        if scheduler is not None:
            scheduler.step()
            out.append(scheduler.get_last_lr()[0])
    return out


def run(data):
    return (
        train(data, lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=1e-3), 8)
        + train(data, lambda p: torch.optim.Adam(p, lr=0.05), 8)
        + train(data, lambda p: torch.optim.AdamW(p, lr=0.05, weight_decay=0.1), 8)
        + train(
            data,
            lambda p: torch.optim.SGD(p, lr=0.1),
            6,
            lambda optimizer: StepLR(optimizer, step_size=2, gamma=0.5),
        )
    )
