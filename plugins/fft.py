"""The Array API ``fft`` extension: ``plugrad.fft.<name>``, with gradients.

Every transform is linear, so its gradient is its adjoint (PyTorch's
convention for complex gradients: ``A^H g``): the inverse transform with the
*dual* normalization (``"backward"`` and ``"forward"`` swap, ``"ortho"``
stays), followed by undoing the padding or truncation that ``n``/``s``
asked for. Real-input transforms (``rfft``) take the real part; the adjoint of
``irfft`` counts twice the frequencies that stand for a conjugate pair.
``hfft(x) = irfft(conj(x))`` and ``ihfft(x) = conj(rfft(x))`` with dual
normalizations, and their rules say so.
"""

from __future__ import annotations

from typing import Any

from plugrad.hookspecs import hookimpl
from plugrad.opdef import OpDef, op
from plugrad.plugins._rules import axis_slice, cast, device_of

_DUAL = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def _resize(xp: Any, a: Any, axis: int, length: int) -> Any:
    """Truncate or zero-pad ``a`` along ``axis`` to ``length`` (each is the other's adjoint)."""
    current = a.shape[axis]
    if current > length:
        return a[axis_slice(a.ndim, axis, 0, length)]
    if current < length:
        shape = list(a.shape)
        shape[axis] = length - current
        pad = xp.zeros(tuple(shape), dtype=a.dtype, device=device_of(a))
        return xp.concat([a, pad], axis=axis % a.ndim)
    return a


def _resize_axes(xp: Any, a: Any, axes: tuple[int, ...], shape: tuple[int, ...]) -> Any:
    for axis in axes:
        a = _resize(xp, a, axis, shape[axis])
    return a


def _default_axes(s: Any, axes: Any) -> Any:
    """The standard's default: the last ``len(s)`` axes when only ``s`` is given."""
    return tuple(range(-len(s), 0)) if axes is None and s is not None else axes


def _axes_and_sizes(
    shape: tuple[int, ...], s: Any, axes: Any
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The transformed axes (non-negative) and the transform length along each."""
    ndim = len(shape)
    if axes is None:
        axes = tuple(range(ndim)) if s is None else tuple(range(ndim - len(s), ndim))
    axes = tuple(a % ndim for a in axes)
    sizes = tuple(shape[a] for a in axes) if s is None else tuple(s)
    sizes = tuple(shape[a] if n == -1 else n for a, n in zip(axes, sizes))
    return axes, sizes


def _as_complex(xp: Any, x: Any) -> Any:
    """``x`` as a complex array: the standard's complex-to-complex transforms take no real input."""
    if xp.isdtype(x.dtype, "complex floating"):
        return x
    return xp.astype(x, xp.complex128 if x.dtype == xp.float64 else xp.complex64)


def _pair_weights(xp: Any, like: Any, axis: int, full: int) -> Any:
    """1 for frequencies that stand for themselves, 2 for those that also stand for a conjugate."""
    half = like.shape[axis]
    shape = [1] * like.ndim
    shape[axis] = half
    k = xp.reshape(xp.arange(half, device=device_of(like)), tuple(shape))
    doubled = xp.logical_and(k >= 1, k <= full - (full // 2 + 1))
    # NOTE: not where(doubled, 2.0, 1.0): the standard needs an array among where's values.
    return xp.astype(doubled, like.dtype) + 1.0


# -- complex-to-complex ------------------------------------------------------------------


def _fft_grad(inverse_name: str) -> Any:
    def rule(xp: Any, g: Any, ans: Any, x: Any, *, n: Any, axis: int, norm: str) -> Any:
        grad = getattr(xp.fft, inverse_name)(g, axis=axis, norm=_DUAL[norm])
        return cast(xp, _resize(xp, grad, axis, x.shape[axis]), x.dtype)

    return rule


def _fftn_grad(inverse_name: str) -> Any:
    def rule(xp: Any, g: Any, ans: Any, x: Any, *, s: Any, axes: Any, norm: str) -> Any:
        axes_, _ = _axes_and_sizes(tuple(x.shape), s, axes)
        grad = getattr(xp.fft, inverse_name)(g, axes=axes_, norm=_DUAL[norm])
        return cast(xp, _resize_axes(xp, grad, axes_, tuple(x.shape)), x.dtype)

    return rule


fft = op(
    "fft",
    lambda xp, x, /, *, n=None, axis=-1, norm="backward": xp.fft.fft(
        _as_complex(xp, x), n=n, axis=axis, norm=norm
    ),
    namespace="fft",
    saves=(),
    doc="""One-dimensional discrete Fourier transform along ``axis`` (zero-padded or cut to ``n``).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.fft.fft(plugrad.tensor([1.0, 0.0, 0.0, 0.0]))
    tensor([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j])
    """,
).vjp(_fft_grad("ifft"))

ifft = op(
    "ifft",
    lambda xp, x, /, *, n=None, axis=-1, norm="backward": xp.fft.ifft(
        _as_complex(xp, x), n=n, axis=axis, norm=norm
    ),
    namespace="fft",
    saves=(),
    doc="""One-dimensional inverse discrete Fourier transform along ``axis``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.fft.ifft(plugrad.tensor([4.0, 0.0, 0.0, 0.0]))
    tensor([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j])
    """,
).vjp(_fft_grad("fft"))

fftn = op(
    "fftn",
    lambda xp, x, /, *, s=None, axes=None, norm="backward": xp.fft.fftn(
        x, s=s, axes=_default_axes(s, axes), norm=norm
    ),
    namespace="fft",
    saves=(),
    doc="""N-dimensional discrete Fourier transform over ``axes`` (sizes ``s``).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.fft.fftn(plugrad.ones((2, 2)))
    tensor([[4.+0.j, 0.+0.j],
            [0.+0.j, 0.+0.j]])
    """,
).vjp(_fftn_grad("ifftn"))

ifftn = op(
    "ifftn",
    lambda xp, x, /, *, s=None, axes=None, norm="backward": xp.fft.ifftn(
        x, s=s, axes=_default_axes(s, axes), norm=norm
    ),
    namespace="fft",
    saves=(),
    doc="""N-dimensional inverse discrete Fourier transform over ``axes`` (sizes ``s``).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.fft.ifftn(plugrad.ones((2, 2)))
    tensor([[1.+0.j, 0.+0.j],
            [0.+0.j, 0.+0.j]])
    """,
).vjp(_fftn_grad("fftn"))


# -- real input, Hermitian output ------------------------------------------------------------


def _rfft_vjp(xp: Any, g: Any, x: Any, n: Any, axis: int, norm: str) -> Any:
    full = x.shape[axis] if n is None else n
    padded = _resize(xp, g, axis, full)
    grad = xp.real(xp.fft.ifft(padded, axis=axis, norm=_DUAL[norm]))
    return cast(xp, _resize(xp, grad, axis, x.shape[axis]), x.dtype)


def _irfft_vjp(xp: Any, g: Any, x: Any, n: Any, axis: int, norm: str) -> Any:
    grad = xp.fft.rfft(g, axis=axis, norm=_DUAL[norm])
    grad = grad * _pair_weights(xp, grad, axis % grad.ndim, g.shape[axis])
    return cast(xp, _resize(xp, grad, axis, x.shape[axis]), x.dtype)


rfft = op(
    "rfft",
    lambda xp, x, /, *, n=None, axis=-1, norm="backward": xp.fft.rfft(x, n=n, axis=axis, norm=norm),
    namespace="fft",
    saves=(),
    doc="""Discrete Fourier transform of real input: the ``n // 2 + 1`` non-negative frequencies.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.fft.rfft(plugrad.tensor([1.0, 2.0, 3.0, 4.0]))
    tensor([10.+0.j, -2.+2.j, -2.+0.j])
    """,
).vjp(lambda xp, g, ans, x, *, n, axis, norm: _rfft_vjp(xp, g, x, n, axis, norm))

irfft = op(
    "irfft",
    lambda xp, x, /, *, n=None, axis=-1, norm="backward": xp.fft.irfft(
        x, n=n, axis=axis, norm=norm
    ),
    namespace="fft",
    saves=(),
    doc="""Inverse of :func:`rfft`: ``n`` real values from ``m`` frequencies.

    ``n`` is ``2 * (m - 1)`` by default.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.fft.irfft(plugrad.fft.rfft(plugrad.tensor([1.0, 2.0, 3.0, 4.0])))
    tensor([1., 2., 3., 4.])
    """,
).vjp(lambda xp, g, ans, x, *, n, axis, norm: _irfft_vjp(xp, g, x, n, axis, norm))


def _rfftn_grad(xp: Any, g: Any, ans: Any, x: Any, *, s: Any, axes: Any, norm: str) -> Any:
    axes_, sizes = _axes_and_sizes(tuple(x.shape), s, axes)
    padded = _resize(xp, g, axes_[-1], sizes[-1])
    grad = xp.real(xp.fft.ifftn(padded, axes=axes_, norm=_DUAL[norm]))
    return cast(xp, _resize_axes(xp, grad, axes_, tuple(x.shape)), x.dtype)


def _irfftn_grad(xp: Any, g: Any, ans: Any, x: Any, *, s: Any, axes: Any, norm: str) -> Any:
    shape = tuple(x.shape)
    axes_, _ = _axes_and_sizes(shape, s, axes)
    sizes = tuple(g.shape[a] for a in axes_)  # the real output's lengths
    grad = xp.fft.rfftn(g, axes=axes_, norm=_DUAL[norm])
    grad = grad * _pair_weights(xp, grad, axes_[-1], sizes[-1])
    return cast(xp, _resize_axes(xp, grad, axes_, shape), x.dtype)


rfftn = op(
    "rfftn",
    lambda xp, x, /, *, s=None, axes=None, norm="backward": xp.fft.rfftn(
        x, s=s, axes=_default_axes(s, axes), norm=norm
    ),
    namespace="fft",
    saves=(),
    doc="""N-dimensional discrete Fourier transform of real input (the last axis halved).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.fft.rfftn(plugrad.ones((2, 4))).shape
    (2, 3)
    """,
).vjp(_rfftn_grad)

irfftn = op(
    "irfftn",
    lambda xp, x, /, *, s=None, axes=None, norm="backward": xp.fft.irfftn(
        x, s=s, axes=_default_axes(s, axes), norm=norm
    ),
    namespace="fft",
    saves=(),
    doc="""Inverse of :func:`rfftn`: real output of sizes ``s``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.fft.irfftn(plugrad.fft.rfftn(plugrad.ones((2, 4)))).shape
    (2, 4)
    """,
).vjp(_irfftn_grad)

hfft = op(
    "hfft",
    lambda xp, x, /, *, n=None, axis=-1, norm="backward": xp.fft.hfft(x, n=n, axis=axis, norm=norm),
    namespace="fft",
    saves=(),
    doc="""Discrete Fourier transform of a Hermitian-symmetric signal given by its first half.

    The output is real.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.fft.hfft(plugrad.tensor([1.0, 0.0, 0.0]))
    tensor([1., 1., 1., 1.])
    """,
).vjp(
    # hfft(x) = irfft(conj(x)) with the dual norm; conj passes conj(g) back.
    lambda xp, g, ans, x, *, n, axis, norm: xp.conj(_irfft_vjp(xp, g, x, n, axis, _DUAL[norm]))
)

ihfft = op(
    "ihfft",
    lambda xp, x, /, *, n=None, axis=-1, norm="backward": xp.fft.ihfft(
        x, n=n, axis=axis, norm=norm
    ),
    namespace="fft",
    saves=(),
    doc="""Inverse of :func:`hfft`: the first half of the spectrum of a real signal, conjugated.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.fft.ihfft(plugrad.tensor([1.0, 1.0, 1.0, 1.0]))
    tensor([1.-0.j, 0.-0.j, 0.-0.j])
    """,
).vjp(
    # ihfft(x) = conj(rfft(x)) with the dual norm.
    lambda xp, g, ans, x, *, n, axis, norm: _rfft_vjp(xp, xp.conj(g), x, n, axis, _DUAL[norm])
)

fftshift = op(
    "fftshift",
    lambda xp, x, /, *, axes=None: xp.fft.fftshift(x, axes=axes),
    namespace="fft",
    saves=(),
    doc="""Move the zero frequency to the middle of ``axes`` (all axes by default).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.fft.fftshift(plugrad.fft.fftfreq(4))
    tensor([-0.5000, -0.2500,  0.0000,  0.2500])
    """,
).vjp(lambda xp, g, ans, x, *, axes: xp.fft.ifftshift(g, axes=axes))

ifftshift = op(
    "ifftshift",
    lambda xp, x, /, *, axes=None: xp.fft.ifftshift(x, axes=axes),
    namespace="fft",
    saves=(),
    doc="""Inverse of :func:`fftshift`.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.fft.ifftshift(plugrad.fft.fftshift(plugrad.fft.fftfreq(5)))
    tensor([ 0.0000,  0.2000,  0.4000, -0.4000, -0.2000])
    """,
).vjp(lambda xp, g, ans, x, *, axes: xp.fft.fftshift(g, axes=axes))


@hookimpl
def plugrad_ops() -> list[OpDef]:
    return [fft, ifft, fftn, ifftn, rfft, irfft, rfftn, irfftn, hfft, ihfft, fftshift, ifftshift]
