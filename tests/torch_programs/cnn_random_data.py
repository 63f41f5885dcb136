"""A small CNN (conv, pool, flatten, linear) trained on random images, as in the CIFAR tutorial."""

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3)
        self.pool = nn.MaxPool2d(2, 2)
        self.fc1 = nn.Linear(4 * 3 * 3, 10)
        self.fc2 = nn.Linear(10, 3)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return self.fc2(x)


def run(data):
    net = Net()
    net.load_state_dict({k: torch.tensor(v) for k, v in data["cnn"].items()})
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    inputs = torch.tensor(data["cnn_images"])
    labels = torch.tensor(data["image_labels"])
    losses = []
    for _ in range(6):
        optimizer.zero_grad()
        outputs = net(inputs)
        loss = criterion(outputs, labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    _, predicted = torch.max(net(inputs), 1)
    losses.append(float((predicted == labels).sum().item()))
    return losses
