"""manual_seed, nn.init, Module.apply, parameter counting and freezing."""

import torch
from torch import nn


def init_weights(m):
    if isinstance(m, nn.Linear):
        nn.init.zeros_(m.bias)
        nn.init.constant_(m.weight, 0.1)


def run(data):
    out = []
    torch.manual_seed(42)
    a = torch.randn(3, 3)
    torch.manual_seed(42)
    b = torch.randn(3, 3)
    out.append(float(a.equal(b)))
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    model.apply(init_weights)
    out.append(model(torch.ones(1, 4)).sum().item())
    w = torch.empty(5, 4)
    nn.init.xavier_uniform_(w)
    out.append(float(w.abs().max().item() <= (6 / 9) ** 0.5))
    nn.init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    out.append(w.shape[0])
    nn.init.normal_(w, mean=0.0, std=0.02)
    nn.init.uniform_(w, -0.1, 0.1)
    out.append(float(w.abs().max().item() <= 0.1))
    out.append(sum(p.numel() for p in model.parameters()))
    out.append(len(list(model.children())))
    out.append(len(list(model.modules())))
    out.append(len(dict(model.named_parameters())))
    g = torch.Generator().manual_seed(0)
    out.append(torch.rand(2, generator=g).shape[0])
    out.append(torch.randint(0, 10, (5,)).max().item() < 10)
    perm = torch.randperm(6)
    out.append(sorted(perm.tolist()) == list(range(6)))
    for p in model[0].parameters():
        p.requires_grad = False
    out.append(sum(p.numel() for p in model.parameters() if p.requires_grad))
    model.zero_grad()
    out.append(float(model.training))
    model.eval()
    out.append(float(model.training))
    out.append(float(isinstance(model[0].weight, nn.Parameter)))
    return out
