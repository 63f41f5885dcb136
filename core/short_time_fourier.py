"""The short-time Fourier transform and its inverse, as PyTorch's ``stft`` and ``istft``.

Both are made of differentiable ops (padding, overlapping frames, the
``fft`` extension, overlap-add through ``fold``), so they have gradients of
every order and run on every backend.
"""

from __future__ import annotations

from typing import Any

from . import autocast_mode as _autocast
from . import creation as _creation
from . import fft as _fft
from . import ops as _ops
from .errors import ArgumentError, ShapeError
from .nn import functional as _functional
from .tensor import Tensor, install_function_methods

__all__ = ["istft", "stft"]

_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def _positive(function: str, name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ArgumentError(f"{function}(): {name} must be a positive int, got {value!r}")
    return value


def _frame_sizes(
    function: str, n_fft: Any, hop_length: Any, win_length: Any
) -> tuple[int, int, int]:
    """``n_fft``, the hop (``n_fft // 4`` by default) and the window's length (``n_fft``)."""
    n_fft = _positive(function, "n_fft", n_fft)
    hop = _positive(function, "hop_length", n_fft // 4 if hop_length is None else hop_length)
    return (
        n_fft,
        hop,
        _positive(function, "win_length", n_fft if win_length is None else win_length),
    )


def _window(
    function: str, window: Tensor | None, n_fft: int, win_length: int, like: Tensor
) -> Tensor:
    """The window, zero-padded on both sides to ``n_fft`` (a rectangle where none is given)."""
    if win_length > n_fft:
        raise ArgumentError(
            f"{function}(): win_length ({win_length}) must be at most n_fft ({n_fft}); give a "
            "shorter window or a larger n_fft"
        )
    if window is None:
        real = _ops.real(like) if like.dtype.kind == "complex floating" else like
        window = _creation.ones(win_length, dtype=real.dtype, device=like.device)
    elif not isinstance(window, Tensor) or window.ndim != 1 or window.shape[0] != win_length:
        shape = getattr(window, "shape", type(window).__name__)
        raise ShapeError(
            f"{function}(): window must be a 1-d tensor of win_length ({win_length}) "
            f"elements, got {shape}"
        )
    left = (n_fft - win_length) // 2
    if left or n_fft - win_length - left:
        window = _functional.pad(window, (left, n_fft - win_length - left))
    return window


@_autocast.listed("stft")
def stft(
    input: Tensor,
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Tensor | None = None,
    center: bool = True,
    pad_mode: str = "reflect",
    normalized: bool = False,
    onesided: bool | None = None,
    return_complex: bool | None = None,
) -> Tensor:
    """The short-time Fourier transform of ``input`` (PyTorch's ``torch.stft``).

    ``input`` holds one signal (1-d) or a batch (2-d). Each frame of ``n_fft``
    samples, ``hop_length`` apart (``n_fft // 4`` by default), is multiplied by
    ``window`` (ones of ``win_length``, by default ``n_fft``, zero-padded on
    both sides to ``n_fft``) and transformed; with ``center`` the signal is
    first padded by ``n_fft // 2`` on both sides (``pad_mode``). The result has
    shape ``(..., frequencies, frames)``: ``n_fft // 2 + 1`` frequencies where
    ``onesided`` (the default for real input and window), ``n_fft`` otherwise;
    ``normalized`` scales it by ``n_fft ** -0.5``. As in PyTorch, real input
    needs ``return_complex`` given: True for a complex result, False for its
    real and imaginary parts in a last axis of 2.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.arange(16.0)
    >>> plugrad.stft(x, 8, hop_length=4, return_complex=True).shape
    (5, 5)
    """
    if not isinstance(input, Tensor):
        raise ArgumentError(f"stft() takes a Tensor, got {type(input).__name__}")
    n_fft, hop, win_length = _frame_sizes("stft", n_fft, hop_length, win_length)
    if input.ndim not in (1, 2):
        raise ShapeError(
            f"stft() takes a 1-d signal or a 2-d batch of signals, got shape {tuple(input.shape)}"
        )
    complex_input = input.dtype.kind == "complex floating"
    if return_complex is None and not complex_input:
        raise ArgumentError(
            "stft(): give return_complex for real input: True for a complex result (as "
            "PyTorch asks), False for the real and imaginary parts in a last axis of 2"
        )
    if pad_mode not in _PAD_MODES:
        raise ArgumentError(f"stft(): pad_mode must be one of {_PAD_MODES}, got {pad_mode!r}")
    window = _window("stft", window, n_fft, win_length, input)
    complex_window = window.dtype.kind == "complex floating"
    if onesided is None:
        onesided = not (complex_input or complex_window)
    elif onesided and (complex_input or complex_window):
        raise ArgumentError(
            "stft(): onesided=True needs a real input and a real window (a complex "
            "signal's spectrum has no symmetric half to leave out)"
        )
    signal = input if input.ndim == 2 else _ops.expand_dims(input, axis=0)
    if center:
        half = n_fft // 2
        # pad takes (batch, channel, length) for the modes that read the signal
        signal = _functional.pad(_ops.expand_dims(signal, axis=1), (half, half), mode=pad_mode)
        signal = _ops.squeeze(signal, axis=1)
    length = signal.shape[-1]
    if length < n_fft:
        raise ShapeError(
            f"stft(): the signal ({length} samples{' after padding' if center else ''}) is "
            f"shorter than one frame of n_fft ({n_fft})"
        )
    frames = signal.unfold(-1, n_fft, hop) * window  # (batch, frames, n_fft)
    norm = "ortho" if normalized else "backward"
    if onesided:
        spectrum = _fft.rfft(frames, axis=-1, norm=norm)
    else:
        spectrum = _fft.fft(frames, axis=-1, norm=norm)
    spectrum = _ops.permute_dims(spectrum, (0, 2, 1))
    if input.ndim == 1:
        spectrum = _ops.squeeze(spectrum, axis=0)
    if return_complex is False:
        return _ops.stack([_ops.real(spectrum), _ops.imag(spectrum)], axis=-1)
    return spectrum


def istft(
    input: Tensor,
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Tensor | None = None,
    center: bool = True,
    normalized: bool = False,
    onesided: bool | None = None,
    length: int | None = None,
    return_complex: bool = False,
) -> Tensor:
    """The inverse of :func:`stft` (PyTorch's ``torch.istft``), by overlap-add.

    ``input`` is a complex ``(..., frequencies, frames)`` spectrum (one signal or
    a 2-d batch). Each frame is transformed back, multiplied by the window
    and added where it overlaps its neighbours; the sum is divided by the
    overlapped squared window, which must not vanish anywhere (the
    nonzero-overlap-add condition; a window that breaks it raises
    :class:`~plugrad.errors.ArgumentError`, where PyTorch also refuses).
    ``length`` cuts or zero-pads the result to that many samples. A full
    (two-sided) spectrum with ``return_complex=False`` is read as PyTorch reads
    it: by its first ``n_fft // 2 + 1`` frequencies, of which the others are
    the conjugates where the signal is real.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.arange(16.0)
    >>> window = plugrad.hann_window(8)
    >>> spectrum = plugrad.stft(x, 8, hop_length=2, window=window, return_complex=True)
    >>> y = plugrad.istft(spectrum, 8, hop_length=2, window=window, length=16)
    >>> bool(plugrad.allclose(x, y, atol=1e-5))
    True
    """
    if not isinstance(input, Tensor):
        raise ArgumentError(f"istft() takes a Tensor, got {type(input).__name__}")
    if input.dtype.kind != "complex floating":
        raise ArgumentError(
            f"istft() takes a complex spectrum (stft(..., return_complex=True)), got {input.dtype}"
        )
    if input.ndim not in (2, 3):
        raise ShapeError(
            "istft() takes a (frequencies, frames) spectrum or a batch of them, got shape "
            f"{tuple(input.shape)}"
        )
    n_fft, hop, win_length = _frame_sizes("istft", n_fft, hop_length, win_length)
    if hop > win_length:
        raise ArgumentError(
            f"istft(): hop_length ({hop}) must be at most win_length ({win_length}), or "
            "samples between frames are lost"
        )
    spectrum = input if input.ndim == 3 else _ops.expand_dims(input, axis=0)
    frequencies, count = spectrum.shape[1], spectrum.shape[2]
    if onesided is None:
        onesided = frequencies != n_fft
    expected = n_fft // 2 + 1 if onesided else n_fft
    if frequencies != expected:
        raise ShapeError(
            f"istft(): a {'one-sided' if onesided else 'full'} spectrum of n_fft {n_fft} has "
            f"{expected} frequencies, got {frequencies}"
        )
    real_window = _window("istft", window, n_fft, win_length, _ops.real(spectrum))
    frames = _ops.permute_dims(spectrum, (0, 2, 1))  # (batch, frames, frequencies)
    norm = "ortho" if normalized else "backward"
    if onesided:
        if return_complex:
            raise ArgumentError("istft(): a one-sided spectrum gives a real signal; "
                                "pass return_complex=False")  # fmt: skip
        frames = _fft.irfft(frames, n=n_fft, axis=-1, norm=norm)
    elif return_complex:
        frames = _fft.ifft(frames, axis=-1, norm=norm)
    else:  # as PyTorch: a real signal's spectrum is its first half (the rest conjugates)
        frames = _fft.irfft(frames[..., : n_fft // 2 + 1], n=n_fft, axis=-1, norm=norm)
    frames = frames * real_window
    total = n_fft + hop * (count - 1)
    # Overlap-add: fold sums the (batch, n_fft, frames) columns into one row of ``total``.
    signal = _functional.fold(
        _ops.permute_dims(frames, (0, 2, 1)), (1, total), (1, n_fft), stride=(1, hop)
    )[:, 0, 0, :]
    squared = _ops.expand_dims(_ops.expand_dims(real_window * real_window, axis=0), axis=-1)
    envelope = _functional.fold(
        _ops.broadcast_to(squared, (1, n_fft, count)), (1, total), (1, n_fft), stride=(1, hop)
    )[0, 0, 0, :]
    start = n_fft // 2 if center else 0
    if length is not None:
        length = _positive("istft", "length", length)
        end = min(start + length, total)
    else:
        end = total - n_fft // 2 if center else total
    signal, envelope = signal[:, start:end], envelope[start:end]
    smallest = float(_ops.min(_ops.abs(envelope))) if envelope.shape[0] else 1.0
    if smallest < 1e-11:
        raise ArgumentError(
            "istft(): the squared window overlapped by hop_length vanishes at some sample "
            f"(its least sum is {smallest:.3g}), so the signal cannot be recovered there; use "
            "a window that overlaps itself (a Hann window with hop_length <= n_fft // 2, say)"
        )
    signal = signal / envelope
    if length is not None and signal.shape[-1] < length:
        signal = _functional.pad(signal, (0, length - signal.shape[-1]))
    return signal if input.ndim == 3 else signal[0]


install_function_methods(stft=stft, istft=istft)
