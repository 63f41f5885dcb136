"""A learning-rate scheduler (StepLR) stepping once per epoch of SGD."""

import torch
from torch import nn
from torch.optim.lr_scheduler import StepLR


def run(data):
    model = nn.Linear(3, 1)
    model.load_state_dict({"weight": torch.tensor(data["w"]), "bias": torch.tensor(data["b"])})
    x = torch.tensor(data["x"])
    y = torch.tensor(data["y"])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = StepLR(optimizer, step_size=2, gamma=0.5)
    out = []
    for _ in range(6):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        scheduler.step()
        out.append(loss.item())
        out.append(scheduler.get_last_lr()[0])
    return out
