"""A third-order polynomial fitted to sin(x) by manual SGD under no_grad, as in the tutorial."""

import math

import torch


def run(data):
    dtype = torch.float32
    x = torch.linspace(-math.pi, math.pi, 500, dtype=dtype)
    y = torch.sin(x)
    weights = [torch.tensor(v, dtype=dtype, requires_grad=True) for v in data["poly"]]
    a, b, c, d = weights
    learning_rate = 1e-6
    losses = []
    for _ in range(40):
        y_pred = a + b * x + c * x**2 + d * x**3
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            for w in weights:
                w.sub_(learning_rate * w.grad)
                w.grad.zero_()
    return losses
