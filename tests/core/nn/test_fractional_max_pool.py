"""Fractional max pooling (``F.fractional_max_pool2d``/``3d``, ``nn.FractionalMaxPool2d``/``3d``)
against torch's: with the same ``_random_samples`` the values, indices and gradients are
torch's exactly."""

from __future__ import annotations

import numpy as np
import pytest

import plugrad
import plugrad.nn.functional as F
from plugrad import nn
from plugrad.errors import DtypeError, InvalidArgumentError, ShapeError

torch = pytest.importorskip("torch")
TF = torch.nn.functional

RNG = np.random.default_rng(3)


def compare(nd, x, kernel, output_size, samples, output_ratio=None):
    ours = F.fractional_max_pool2d if nd == 2 else F.fractional_max_pool3d
    theirs = TF.fractional_max_pool2d if nd == 2 else TF.fractional_max_pool3d
    a, b = plugrad.asarray(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    values, indices = ours(a, kernel, output_size, output_ratio, True, plugrad.asarray(samples))
    expected, expected_indices = theirs(
        b, kernel, output_size, output_ratio, True, _random_samples=torch.tensor(samples)
    )
    np.testing.assert_array_equal(np.asarray(values.detach()), expected.detach().numpy())
    np.testing.assert_array_equal(np.asarray(indices), expected_indices.numpy())
    assert values.dtype.name == str(expected.dtype).removeprefix("torch.")
    weights = RNG.standard_normal(expected.shape).astype(x.dtype)
    (values * plugrad.asarray(weights)).sum().backward()
    expected.backward(torch.tensor(weights))
    # (where windows overlap, a backend may add an element's gradients in another order)
    eps = np.finfo(x.dtype).eps
    np.testing.assert_allclose(
        np.asarray(a.grad), b.grad.numpy(), rtol=4 * eps, atol=4 * eps * np.abs(weights).max()
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "shape, kernel, output_size",
    [
        ((2, 3, 10, 7), 2, (5, 4)),
        ((2, 3, 10, 7), (3, 2), (8, 6)),  # overlapping windows: gradients add up
        ((1, 2, 9, 9), 3, 7),
        ((2, 1, 11, 5), (1, 4), (11, 2)),
        ((3, 8, 6), 2, (4, 3)),  # unbatched
        ((2, 3, 6, 6), 2, (1, 5)),
    ],
)
def test_fractional_max_pool2d_as_torch(shape, kernel, output_size, dtype) -> None:
    x = RNG.standard_normal(shape).astype(dtype)
    x[..., ::2, :] = np.round(x[..., ::2, :])  # equal values too: the first is taken
    n = 1 if len(shape) == 3 else shape[0]
    compare(2, x, kernel, output_size, RNG.random((n, shape[-3], 2)).astype(dtype))


@pytest.mark.parametrize(
    "shape, kernel, output_size",
    [
        ((2, 3, 6, 7, 8), 2, (3, 4, 5)),
        ((1, 2, 5, 9, 6), (2, 3, 1), (3, 5, 5)),
        ((2, 6, 5, 7), 2, (2, 3, 4)),  # unbatched
    ],
)
def test_fractional_max_pool3d_as_torch(shape, kernel, output_size) -> None:
    x = np.round(RNG.standard_normal(shape) * 2)
    n = 1 if len(shape) == 4 else shape[0]
    compare(3, x, kernel, output_size, RNG.random((n, shape[-4], 3)))


def test_output_ratio_extra_samples_and_nan_as_torch() -> None:
    x = RNG.standard_normal((2, 3, 13, 11)).astype(np.float32)
    x[0, 0, :4, :4] = np.nan  # torch takes the last NaN of a window
    samples = RNG.random((4, 3, 2)).astype(np.float32)  # more rows than the batch: the first
    a, b = plugrad.asarray(x), torch.tensor(x)
    values, indices = F.fractional_max_pool2d(
        a, 3, output_ratio=(0.5, 0.7), return_indices=True, _random_samples=plugrad.asarray(samples)
    )
    expected, expected_indices = TF.fractional_max_pool2d(
        b, 3, output_ratio=(0.5, 0.7), return_indices=True, _random_samples=torch.tensor(samples)
    )
    np.testing.assert_array_equal(np.asarray(values), expected.numpy())
    np.testing.assert_array_equal(np.asarray(indices), expected_indices.numpy())


def test_layers_as_torch() -> None:
    x = RNG.standard_normal((2, 3, 9, 8)).astype(np.float32)
    samples = RNG.random((2, 3, 2)).astype(np.float32)
    ours = nn.FractionalMaxPool2d((2, 3), output_size=(5, 4), return_indices=True,
                                  _random_samples=plugrad.asarray(samples))  # fmt: skip
    theirs = torch.nn.FractionalMaxPool2d((2, 3), output_size=(5, 4), return_indices=True,
                                          _random_samples=torch.tensor(samples))  # fmt: skip
    assert repr(ours) == repr(theirs)
    assert (ours.kernel_size, ours.output_size, ours.output_ratio) == (
        theirs.kernel_size, theirs.output_size, theirs.output_ratio)  # fmt: skip
    assert list(dict(ours.named_buffers())) == list(dict(theirs.named_buffers()))
    for value, expected in zip(ours(plugrad.asarray(x)), theirs(torch.tensor(x))):
        np.testing.assert_array_equal(np.asarray(value), expected.numpy())
    volume = RNG.standard_normal((1, 2, 6, 6, 6))
    samples3 = RNG.random((1, 2, 3))
    ours3 = nn.FractionalMaxPool3d(2, output_ratio=0.6, _random_samples=plugrad.asarray(samples3))
    theirs3 = torch.nn.FractionalMaxPool3d(2, output_ratio=0.6,
                                           _random_samples=torch.tensor(samples3))  # fmt: skip
    np.testing.assert_array_equal(
        np.asarray(ours3(plugrad.asarray(volume))), theirs3(torch.tensor(volume)).numpy()
    )


def test_the_drawn_samples_follow_plugrads_seed() -> None:
    x = plugrad.asarray(RNG.standard_normal((2, 3, 20, 20)).astype(np.float32))
    pool = nn.FractionalMaxPool2d(2, output_size=8, return_indices=True)
    plugrad.manual_seed(7)
    first = pool(x)[1]
    plugrad.manual_seed(7)
    again = pool(x)[1]
    plugrad.manual_seed(7)
    samples = plugrad.rand(2, 3, 2)
    by_hand = F.fractional_max_pool2d(x, 2, 8, return_indices=True, _random_samples=samples)[1]
    np.testing.assert_array_equal(np.asarray(first), np.asarray(again))
    np.testing.assert_array_equal(np.asarray(first), np.asarray(by_hand))
    assert not all(np.array_equal(np.asarray(first), np.asarray(pool(x)[1])) for _ in range(3))


def test_bad_arguments_are_refused() -> None:
    x = plugrad.ones((2, 3, 7, 6))
    with pytest.raises(ShapeError, match="need at least 8 elements"):
        F.fractional_max_pool2d(x, 2, output_size=(7, 5))
    with pytest.raises(ShapeError, match="need at least"):  # torch's 3-D bound is one tighter
        F.fractional_max_pool3d(plugrad.ones((1, 1, 5, 5, 5)), 4, output_size=2)
    with pytest.raises(InvalidArgumentError, match="output_size or output_ratio"):
        F.fractional_max_pool2d(x, 2)
    for ratio in (1.0, 0.0, (0.5, 1.5), (0.5, 0.5, 0.5)):
        with pytest.raises(InvalidArgumentError, match="output_ratio"):
            F.fractional_max_pool2d(x, 2, output_ratio=ratio)
    for samples in (plugrad.rand(2, 3, 3), plugrad.rand(1, 3, 2), plugrad.rand(2, 2, 2),
                    plugrad.rand(3, 2)):  # fmt: skip
        with pytest.raises(ShapeError, match="_random_samples"):
            F.fractional_max_pool2d(x, 2, output_size=3, _random_samples=samples)
    with pytest.raises(DtypeError, match="same dtype"):
        F.fractional_max_pool2d(
            x, 2, output_size=3, _random_samples=plugrad.rand(2, 3, 2, dtype=plugrad.float64)
        )
    with pytest.raises(DtypeError, match="floating"):
        F.fractional_max_pool2d(plugrad.ones((1, 1, 4, 4), dtype=plugrad.int64), 2, 2)
    with pytest.raises(ShapeError, match=r"\(N, C, H, W\)"):
        F.fractional_max_pool2d(plugrad.ones((7, 6)), 2, 2)
    with pytest.raises(InvalidArgumentError, match="kernel_size"):
        F.fractional_max_pool2d(x, 0, 2)
    with pytest.raises(InvalidArgumentError, match="exactly one"):
        nn.FractionalMaxPool2d(2, output_size=3, output_ratio=0.5)
    with pytest.raises(InvalidArgumentError, match="exactly one"):
        nn.FractionalMaxPool3d(2)
    with pytest.raises(InvalidArgumentError, match="between 0 and 1"):
        nn.FractionalMaxPool2d(2, output_ratio=(0.5, 1.0))
