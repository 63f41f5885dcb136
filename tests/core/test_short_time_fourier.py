"""stft and istft against PyTorch's: values, gradients, the round trip, and refusals."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import plugrad
from plugrad.errors import ArgumentError, ShapeError

torch = pytest.importorskip("torch", reason="the reference is PyTorch's stft (the torch extra)")

SIGNALS = np.random.default_rng(0).standard_normal((2, 37))

STFT_CASES = [
    {"n_fft": 8},
    {"n_fft": 8, "hop_length": 3, "win_length": 6},
    {"n_fft": 16, "hop_length": 4, "center": False},
    {"n_fft": 8, "pad_mode": "constant", "normalized": True},
    {"n_fft": 8, "onesided": False},
    {"n_fft": 10, "hop_length": 5, "pad_mode": "circular"},
    {"n_fft": 9, "hop_length": 2, "pad_mode": "replicate"},
]


def _windows(length: int, kind: str) -> tuple[Any, Any]:
    if kind == "none":
        return None, None
    return plugrad.hann_window(length, dtype=plugrad.float64), torch.hann_window(
        length, dtype=torch.float64
    )


@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("window", ["none", "hann"])
@pytest.mark.parametrize("options", STFT_CASES, ids=str)
def test_stft_values_and_gradients_equal_pytorchs(
    options: dict, window: str, batched: bool
) -> None:
    signal = SIGNALS if batched else SIGNALS[0]
    ours, theirs = _windows(options.get("win_length", options["n_fft"]), window)
    x = plugrad.tensor(signal, requires_grad=True)
    t = torch.tensor(signal, requires_grad=True)
    got = plugrad.stft(x, window=ours, return_complex=True, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # PyTorch's, about a missing window
        expected = torch.stft(t, window=theirs, return_complex=True, **options)
    assert got.shape == tuple(expected.shape)
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), atol=1e-12)
    weights = np.random.default_rng(1).standard_normal(got.shape)
    (plugrad.abs(got) * plugrad.tensor(weights)).sum().backward()
    (expected.abs() * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_stft_with_return_complex_false_gives_real_and_imaginary_parts() -> None:
    x = plugrad.tensor(SIGNALS[0])
    parts = plugrad.stft(x, 8, return_complex=False)
    spectrum = plugrad.stft(x, 8, return_complex=True)
    assert parts.shape == (*spectrum.shape, 2)
    np.testing.assert_array_equal(parts[..., 0].numpy(), spectrum.real.numpy())
    np.testing.assert_array_equal(parts[..., 1].numpy(), spectrum.imag.numpy())
    assert x.stft(8, return_complex=True).shape == spectrum.shape  # the Tensor method


ISTFT_CASES = [
    {"n_fft": 8, "hop_length": 2},
    {"n_fft": 8, "hop_length": 3, "win_length": 6},
    {"n_fft": 16, "hop_length": 4, "center": False},
    {"n_fft": 8, "hop_length": 2, "normalized": True},
    {"n_fft": 8, "hop_length": 2, "onesided": False},
]


@pytest.mark.parametrize("length", [None, 37, 30, 45])
@pytest.mark.parametrize("options", ISTFT_CASES, ids=str)
def test_istft_equals_pytorchs_or_refuses_where_it_does(options: dict, length: Any) -> None:
    ours, theirs = _windows(options.get("win_length", options["n_fft"]), "hann")
    if options.get("center") is False:  # a Hann window's zero at the ends would vanish
        ours, theirs = ours + 0.1, theirs + 0.1
    spectrum = torch.stft(torch.tensor(SIGNALS), window=theirs, return_complex=True, **options)
    s = plugrad.tensor(spectrum.numpy(), requires_grad=True)
    t = spectrum.clone().requires_grad_()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # PyTorch's, about padding the tail
            expected = torch.istft(t, window=theirs, length=length, **options)
    except RuntimeError as error:
        assert "window overlap add min" in str(error)
        with pytest.raises(ArgumentError, match="vanishes"):
            plugrad.istft(s, window=ours, length=length, **options)
        return
    got = plugrad.istft(s, window=ours, length=length, **options)
    assert got.shape == tuple(expected.shape)
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), atol=1e-12)
    weights = np.random.default_rng(2).standard_normal(got.shape)
    (got * plugrad.tensor(weights)).sum().backward()
    (expected * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(s.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_the_round_trip_gives_the_signal_back_on_each_backend(backend: str) -> None:
    if backend == "jax":
        pytest.importorskip("jax", reason="needs jax (the jax extra)")
    with plugrad.use_backend(backend):
        x = plugrad.tensor(SIGNALS, dtype=plugrad.float32)
        window = plugrad.hann_window(16)
        spectrum = plugrad.stft(x, 16, hop_length=4, window=window, return_complex=True)
        y = plugrad.istft(spectrum, 16, hop_length=4, window=window, length=37)
        np.testing.assert_allclose(y.numpy(), SIGNALS, atol=1e-5)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda x: plugrad.stft(x, 8), ArgumentError, "give return_complex"),
        (lambda x: plugrad.stft(x, 0, return_complex=True), ArgumentError, "n_fft must be"),
        (lambda x: plugrad.stft(x, 8, win_length=9, return_complex=True), ArgumentError, "9"),
        (lambda x: plugrad.stft(x, 64, return_complex=True, center=False), ShapeError, "shorter"),
        (
            lambda x: plugrad.stft(x, 8, window=plugrad.ones(5), return_complex=True),
            ShapeError,
            "window must be",
        ),
        (lambda x: plugrad.stft(x, 8, pad_mode="wrap", return_complex=True), ArgumentError, "pad"),
        (lambda x: plugrad.stft(x[None], 8, return_complex=True), ShapeError, "1-d signal"),
        (lambda x: plugrad.istft(x, 8), ArgumentError, "complex spectrum"),
        (
            lambda x: plugrad.istft(plugrad.stft(x, 8, return_complex=True), 8, hop_length=9),
            ArgumentError,
            "hop_length",
        ),
        (
            lambda x: plugrad.istft(plugrad.stft(x, 8, return_complex=True), 10),
            ShapeError,
            "frequencies",
        ),
    ],
)
def test_bad_arguments_get_clear_errors(call: Any, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        call(plugrad.tensor(SIGNALS))
