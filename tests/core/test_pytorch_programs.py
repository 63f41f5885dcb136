"""Small PyTorch programs run unchanged with plugrad imported under the name ``torch``.

Each program is run twice from the same starting values: once with real
PyTorch, once with every ``plugrad`` module standing in for the ``torch``
module of the same dotted name, and the losses must agree.
"""

from __future__ import annotations

import as_torch
import numpy as np
import pytest

import plugrad

pytest.importorskip("torch")

PROGRAMS = {}

PROGRAMS["linear_regression_sgd"] = """
import torch
import torch.nn as nn

def run(data):
    x = torch.tensor(data["x"], dtype=torch.float32)
    y = torch.tensor(data["y"], dtype=torch.float32)
    model = nn.Linear(3, 1)
    model.load_state_dict({"weight": torch.tensor(data["w"]), "bias": torch.tensor(data["b"])})
    loss_fn = nn.MSELoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(20):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses
"""

PROGRAMS["mlp_classifier_adam"] = """
import torch
from torch import nn
import torch.nn.functional as F

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))

def run(data):
    net = Net()
    net.load_state_dict({k: torch.tensor(v) for k, v in data["state"].items()})
    x = torch.tensor(data["x"], dtype=torch.float)
    labels = torch.tensor(data["labels"])
    opt = torch.optim.Adam(net.parameters(), lr=0.01)
    criterion = nn.CrossEntropyLoss()
    losses = []
    for epoch in range(15):
        loss = criterion(net(x), labels)
        net.zero_grad(set_to_none=False)
        loss.backward()
        opt.step()
        losses.append(loss.detach().item())
    with torch.no_grad():
        final = F.cross_entropy(net(x), labels).item()
    return losses + [final]
"""

PROGRAMS["manual_sgd_under_no_grad"] = """
import torch

def run(data):
    x = torch.tensor(data["x"], dtype=torch.float64)
    y = torch.tensor(data["y"][:, 0], dtype=torch.float64)
    w = torch.tensor(data["w"][0], dtype=torch.float64, requires_grad=True)
    b = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    losses = []
    for _ in range(25):
        loss = ((x @ w + b - y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w -= 0.05 * w.grad
            b -= 0.05 * b.grad
        w.grad = None
        b.grad = None
        losses.append(loss.item())
    return losses
"""

PROGRAMS["custom_autograd_function"] = """
import torch

# scale * x ** 3; the scale is a plain number, which gets no gradient (None).
class ScaledCube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale
        return scale * x ** 3

    @staticmethod
    def backward(ctx, grad_output):
        if not ctx.needs_input_grad[0]:
            return None, None
        (x,) = ctx.saved_tensors
        return grad_output * 3 * ctx.scale * x.pow(2), None

def run(data):
    x = torch.tensor(data["x"], requires_grad=True)
    out = []
    for step in range(5):
        y = ScaledCube.apply(x, 0.5).sum() + torch.tanh(x).sum()
        y.backward()
        out.append(y.item())
        with torch.no_grad():
            x -= 0.01 * x.grad
        x.grad = None
    return out
"""


def run_program(source: str, data: dict, *, as_plugrad: bool) -> list[float]:
    return as_torch.run_program(source, "pytorch_program", data, as_plugrad=as_plugrad)


def starting_values() -> dict:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, 3)).astype(np.float32)
    return {
        "x": x,
        "y": (x @ np.array([[1.5], [-2.0], [0.5]], np.float32) + 0.3).astype(np.float32),
        "w": rng.normal(size=(1, 3)).astype(np.float32),
        "b": np.zeros(1, np.float32),
    }


def classifier_values() -> dict:
    rng = np.random.default_rng(1)
    state = {
        "fc1.weight": rng.normal(scale=0.5, size=(8, 4)),
        "fc1.bias": rng.normal(scale=0.1, size=8),
        "fc2.weight": rng.normal(scale=0.5, size=(3, 8)),
        "fc2.bias": np.zeros(3),
    }
    return {
        "state": {k: v.astype(np.float32) for k, v in state.items()},
        "x": rng.normal(size=(32, 4)),
        "labels": rng.integers(0, 3, size=32),
    }


DATA = {
    "linear_regression_sgd": starting_values,
    "mlp_classifier_adam": classifier_values,
    "manual_sgd_under_no_grad": starting_values,
    "custom_autograd_function": lambda: {"x": np.linspace(-1.0, 1.0, 7)},
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_pytorch_program_gives_pytorchs_losses_with_plugrad_as_torch(name) -> None:
    with plugrad.use_backend("numpy"):
        ours = run_program(PROGRAMS[name], DATA[name](), as_plugrad=True)
    theirs = run_program(PROGRAMS[name], DATA[name](), as_plugrad=False)
    assert len(ours) == len(theirs)
    np.testing.assert_allclose(ours, theirs, rtol=2e-5, atol=1e-6)
    assert theirs[-1] != theirs[0]  # the program trains


def test_the_alias_is_undone() -> None:
    import torch

    with as_torch.plugrad_as_torch():
        import torch as inside
    import torch as after

    assert inside is plugrad and after is torch and after is not plugrad
