"""A classifier trained in minibatches with SGD momentum, evaluated under no_grad."""

import numpy as np
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.layers = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.0), nn.Linear(16, 3))

    def forward(self, x):
        return self.layers(self.flatten(x))


def run(data):
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.normal(size=(30, 2, 4)), dtype=torch.float32)
    y = torch.tensor(rng.integers(0, 3, 30))
    torch.manual_seed(0)
    model = Net()
    with torch.no_grad():
        for _name, p in model.named_parameters():
            p.copy_(torch.from_numpy(rng.uniform(-0.3, 0.3, tuple(p.shape)).astype(np.float32)))
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    out = []
    for _epoch in range(5):
        model.train()
        for i in range(0, 30, 10):
            pred = model(x[i : i + 10])
            loss = loss_fn(pred, y[i : i + 10])
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            logits = model(x)
            correct = (logits.argmax(1) == y).type(torch.float).sum().item()
            out += [loss.item(), correct]
    out.append(sum(p.numel() for p in model.parameters() if p.requires_grad))
    return out
