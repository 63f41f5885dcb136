"""A small CNN learns a toy task with plain gradient descent, on every backend."""

from __future__ import annotations

import numpy as np

import plugrad
from plugrad import nn


def toy_images(count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """8 x 8 images holding a bright 2 x 2 square: label 0 on the left half, 1 on the right."""
    rng = np.random.default_rng(seed)
    x = rng.normal(0.0, 0.3, size=(count, 1, 8, 8)).astype(np.float32)
    labels = rng.integers(0, 2, size=count)
    for image, label in zip(x, labels):
        row, col = rng.integers(0, 7), rng.integers(0, 3) + 4 * label
        image[0, row : row + 2, col : col + 2] += 2.0
    return x, labels


def make_model() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Dropout(0.1),
        nn.Flatten(),
        nn.Linear(4 * 4 * 4, 2),
    )


def test_a_cnn_trained_by_gradient_descent_fits_the_data(backend) -> None:
    plugrad.manual_seed(0)
    model = make_model().to(backend)
    images, labels = toy_images(32, seed=1)
    x, target = plugrad.asarray(images), plugrad.asarray(labels)
    loss_fn = nn.CrossEntropyLoss()
    parameters = list(model.parameters())
    losses = []
    for _ in range(40):
        loss = loss_fn(model(x), target)
        model.zero_grad()
        loss.backward()
        with plugrad.no_grad():
            for p in parameters:
                p -= 0.5 * p.grad
        losses.append(float(loss))
    assert losses[-1] < 0.3 * losses[0], losses
    assert list(model.parameters()) == parameters  # updated in place
    model.eval()
    test_images, test_labels = toy_images(64, seed=2)
    predicted = plugrad.argmax(model(plugrad.asarray(test_images)), axis=1).numpy()
    assert (predicted == test_labels).mean() > 0.9
