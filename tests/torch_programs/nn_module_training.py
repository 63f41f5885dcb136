"""An nn.Module (Flatten + Linear + ReLU stack) trained with CrossEntropyLoss and SGD."""

import torch
from torch import nn


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(4 * 4, 12),
            nn.ReLU(),
            nn.Linear(12, 3),
        )

    def forward(self, x):
        x = self.flatten(x)
        return self.linear_relu_stack(x)


def run(data):
    model = NeuralNetwork()
    model.load_state_dict({k: torch.tensor(v) for k, v in data["mlp"].items()})
    images = torch.tensor(data["images"], dtype=torch.float32)
    labels = torch.tensor(data["image_labels"])
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    model.train()
    for _ in range(10):
        pred = model(images)
        loss = loss_fn(pred, labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        pred = model(images)
        correct = (pred.argmax(1) == labels).type(torch.float).sum().item()
    return [*losses, correct]
