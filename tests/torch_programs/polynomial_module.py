"""A custom nn.Module holding nn.Parameters (the tutorial's Polynomial3), trained with SGD."""

import math

import torch


class Polynomial3(torch.nn.Module):
    def __init__(self, values):
        super().__init__()
        self.a = torch.nn.Parameter(torch.tensor(values[0]))
        self.b = torch.nn.Parameter(torch.tensor(values[1]))
        self.c = torch.nn.Parameter(torch.tensor(values[2]))
        self.d = torch.nn.Parameter(torch.tensor(values[3]))

    def forward(self, x):
        return self.a + self.b * x + self.c * x**2 + self.d * x**3


def run(data):
    x = torch.linspace(-math.pi, math.pi, 300)
    y = torch.sin(x)
    model = Polynomial3(data["poly"])
    criterion = torch.nn.MSELoss(reduction="sum")
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-6)
    losses = []
    for _ in range(30):
        y_pred = model(x)
        loss = criterion(y_pred, y)
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return [*losses, float(len(list(model.parameters())))]
