"""Channel dropout (dropout1d/2d/3d) and alpha dropout, with their layers.

The masks come from plugrad's generators, not PyTorch's, so these check the
structure PyTorch promises: whole channels dropped or scaled by ``1 / (1 - p)``,
gradients through the same mask, nothing in evaluation mode, SELU statistics kept.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import plugrad
import plugrad.nn.functional as F
from plugrad import nn
from plugrad.errors import ShapeError

CHANNEL = [
    (F.dropout1d, (4, 6, 5), 2),
    (F.dropout1d, (6, 5), 1),  # (C, L): one draw per channel
    (F.dropout2d, (3, 6, 2, 4), 2),
    (F.dropout2d, (3, 6, 5), 2),  # taken as (N, C, L), as PyTorch does
    (F.dropout3d, (2, 6, 2, 3, 2), 2),
    (F.dropout3d, (6, 2, 3, 2), 1),
]


@pytest.mark.parametrize(("function", "shape", "lead"), CHANNEL, ids=lambda v: str(v))
def test_whole_channels_are_dropped_or_scaled_and_gradients_follow(
    backend, function, shape, lead
) -> None:
    plugrad.manual_seed(3)
    data = np.random.default_rng(0).uniform(1.0, 2.0, size=shape)
    x = plugrad.asarray(data, requires_grad=True)
    out = function(x, p=0.4)
    out.sum().backward()
    ratio = (out.detach().numpy() / data).reshape(*shape[:lead], -1)
    per_channel = ratio[..., :1]
    np.testing.assert_allclose(ratio, np.broadcast_to(per_channel, ratio.shape), rtol=1e-6)
    assert set(np.round(per_channel.ravel(), 6)) <= {0.0, round(1 / 0.6, 6)}
    assert 0 < np.count_nonzero(per_channel) < per_channel.size
    grad = x.grad.numpy().reshape(*shape[:lead], -1)
    np.testing.assert_allclose(grad, np.broadcast_to(per_channel, grad.shape), rtol=1e-6)


@pytest.mark.parametrize(("function", "shape", "lead"), CHANNEL[::2], ids=lambda v: str(v))
def test_channel_dropout_off_in_eval_at_zero_and_everything_at_one(function, shape, lead) -> None:
    x = plugrad.ones(shape)
    assert function(x, 0.5, training=False) is x
    assert function(x, 0.0) is x
    assert not function(x, 1.0).numpy().any()


def test_channel_dropout_is_reproducible_and_works_in_place() -> None:
    generator = plugrad.Generator().manual_seed(5)
    first = F.dropout2d(plugrad.ones((2, 8, 3, 3)), generator=generator)
    again = F.dropout2d(plugrad.ones((2, 8, 3, 3)), generator=plugrad.Generator().manual_seed(5))
    np.testing.assert_array_equal(first.numpy(), again.numpy())
    x = plugrad.ones((2, 8, 3))
    assert F.dropout1d(x, 0.5, inplace=True) is x
    assert set(np.unique(x.numpy())) <= {0.0, 2.0}


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: F.dropout1d(plugrad.ones((2, 3, 4, 5))), ShapeError, "takes a 2-d or 3-d input"),
        (lambda: F.dropout2d(plugrad.ones((2, 3))), ShapeError, "use dropout() to zero single"),
        (lambda: F.dropout3d(plugrad.ones((2, 3, 4))), ShapeError, "takes a 4-d or 5-d input"),
        (lambda: F.dropout2d(plugrad.ones((1, 2, 3)), p=1.5), ValueError, "got 1.5"),
        (lambda: F.dropout1d([1.0], 0.5), TypeError, "input must be a Tensor"),
        (lambda: F.alpha_dropout(plugrad.ones(3), p=-0.1, training=True), ValueError, "-0.1"),
        (lambda: F.feature_alpha_dropout(plugrad.ones(3), training=True), ShapeError, "(N, C"),
        (lambda: nn.Dropout2d(p=2.0), ValueError, "Dropout2d: p must be a probability"),
    ],
)
def test_dropout_refuses_bad_input(call, error, message) -> None:
    with pytest.raises(error) as info:
        call()
    assert message in str(info.value)


ALPHA = 1.6732632423543772848170429916717 * 1.0507009873554804934193349852946


@pytest.mark.parametrize("p", [0.1, 0.5])
def test_alpha_dropout_keeps_zero_mean_and_unit_variance(backend, p) -> None:
    plugrad.manual_seed(1)
    data = np.random.default_rng(1).standard_normal(200_000)
    x = plugrad.asarray(data, requires_grad=True)
    out = F.alpha_dropout(x, p, training=True)
    values = out.detach().numpy()
    assert abs(values.mean()) < 0.02 and abs(values.std() - 1.0) < 0.02
    a = 1.0 / math.sqrt((ALPHA * ALPHA * p + 1) * (1 - p))
    dropped = np.isclose(values, -ALPHA * a * (1 - p), rtol=1e-12, atol=0.0)
    assert abs(dropped.mean() - p) < 0.01
    np.testing.assert_allclose(
        values[~dropped], a * data[~dropped] + ALPHA * a * p, rtol=1e-12
    )  # kept: scaled, shifted
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.where(dropped, 0.0, a), rtol=1e-12)


def test_alpha_dropout_defaults_to_no_training_and_p_one_zeroes() -> None:
    x = plugrad.ones(4)
    assert F.alpha_dropout(x) is x and F.feature_alpha_dropout(x) is x
    assert F.alpha_dropout(x, 1.0, training=True).tolist() == [0.0] * 4


def test_feature_alpha_dropout_draws_once_per_channel() -> None:
    plugrad.manual_seed(2)
    out = F.feature_alpha_dropout(plugrad.zeros((3, 8, 4)), 0.5, training=True).numpy()
    np.testing.assert_array_equal(out, np.broadcast_to(out[..., :1], out.shape))
    assert len(np.unique(out)) == 2


@pytest.mark.parametrize(
    "name", ["Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]
)
def test_dropout_layers_print_as_pytorch_and_pass_through_in_eval(name) -> None:
    torch = pytest.importorskip("torch")
    assert repr(getattr(nn, name)(0.2, True)) == repr(getattr(torch.nn, name)(0.2, True))
    assert repr(getattr(nn, name)()) == repr(getattr(torch.nn, name)())
    layer = getattr(nn, name)(0.5)
    x = plugrad.ones((2, 3, 2, 2, 2)) if name == "Dropout3d" else plugrad.ones((2, 3, 4))
    assert layer.eval()(x) is x
    assert layer.train()(x).shape == x.shape
