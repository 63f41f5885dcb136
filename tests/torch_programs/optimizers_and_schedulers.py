"""Every optimizer paired with a learning-rate schedule, ReduceLROnPlateau and OneCycleLR too."""

import numpy as np
import torch
from torch import nn


def make(rng):
    model = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 1))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.tensor(rng.uniform(-0.5, 0.5, tuple(p.shape)), dtype=torch.float32))
    return model


def run(data):
    rng = np.random.default_rng(4)
    x = torch.tensor(rng.normal(size=(16, 3)), dtype=torch.float32)
    y = torch.tensor(rng.normal(size=(16, 1)), dtype=torch.float32)
    out = []
    setups = [
        (
            lambda p: torch.optim.Adam(p, lr=0.01),
            lambda o: torch.optim.lr_scheduler.StepLR(o, 3, gamma=0.5),
        ),
        (
            lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1),
            lambda o: torch.optim.lr_scheduler.ExponentialLR(o, 0.9),
        ),
        (
            lambda p: torch.optim.RMSprop(p, lr=0.01),
            lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=10),
        ),
        (
            lambda p: torch.optim.Adagrad(p, lr=0.1),
            lambda o: torch.optim.lr_scheduler.MultiStepLR(o, [2, 4], 0.1),
        ),
        (
            lambda p: torch.optim.SGD(p, lr=0.1, nesterov=True, momentum=0.9),
            lambda o: torch.optim.lr_scheduler.LambdaLR(o, lambda e: 0.95**e),
        ),
        (
            lambda p: torch.optim.SGD(p, lr=0.05),
            lambda o: torch.optim.lr_scheduler.ReduceLROnPlateau(o, patience=1, factor=0.5),
        ),
        (
            lambda p: torch.optim.Adam(p, lr=0.01, amsgrad=True),
            lambda o: torch.optim.lr_scheduler.OneCycleLR(o, max_lr=0.05, total_steps=6),
        ),
    ]
    for make_opt, make_sched in setups:
        model = make(rng)
        opt = make_opt(model.parameters())
        sched = make_sched(opt)
        for _epoch in range(6):
            opt.zero_grad(set_to_none=True)
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            if isinstance(sched, torch.optim.lr_scheduler.ReduceLROnPlateau):
                sched.step(loss.item())
            else:
                sched.step()
        out += [loss.item(), opt.param_groups[0]["lr"]]
    return out
