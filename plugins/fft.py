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

import functools
import numbers
from typing import Any

from plugrad.errors import ArgumentError, InvalidArgumentError
from plugrad.hookspecs import hookimpl
from plugrad.opdef import OpDef, as_int, collect_ops, dim_as_axis, op
from plugrad.plugins._rules import axis_slice, cast, checked_axis, device_of, one_array

#: PyTorch's ``norm=None`` is ``"backward"``.
_DUAL = {"backward": "forward", "ortho": "ortho", "forward": "backward", None: "forward"}


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


_NORMS = ("backward", "ortho", "forward", None)  # (None: PyTorch's "backward")
#: The transforms whose output along their (last) axis is real of length ``2 * (m - 1)``
#: by default, from ``m`` terms.
_HALVED_INPUT = frozenset({"irfft", "hfft", "irfftn", "hfftn"})


def _checked_norm(name: str, norm: Any) -> None:
    if norm not in _NORMS:
        raise InvalidArgumentError(
            f"{name}(): norm must be 'backward', 'ortho', 'forward' or None (as 'backward'), "
            f"got {norm!r}"
        )


def _checked_length(name: str, n: Any, length: int, halved: bool, where: str) -> None:
    """A transform's length along one axis: ``n`` given (-1 in ``s``: the input's), or the
    default (``length``, or ``2 * (length - 1)`` for a halved one), at least 1."""
    if n is not None and not (n == -1 and where == "s"):  # (in s: the input's length)
        if isinstance(n, bool) or not isinstance(n, numbers.Integral):
            raise ArgumentError(f"{name}(): {where} must be an int, got {type(n).__name__}")
        if n < 1:
            raise InvalidArgumentError(f"{name}(): {where} must be a positive length, got {n}")
        return
    default = 2 * (length - 1) if halved and n is None else length
    if default < 1:
        raise InvalidArgumentError(
            f"{name}(): the axis it transforms has {length} element(s), which makes a "
            f"transform of length {default}; pass {where} (at least 1)"
        )


def _checked_one_axis(name: str, shape: tuple[int, ...], n: Any, axis: int, norm: Any) -> None:
    _checked_norm(name, norm)
    _checked_length(name, n, shape[axis], name in _HALVED_INPUT, "n")


def _checked_over_axes(name: str, shape: tuple[int, ...], s: Any, axes: Any, norm: Any) -> None:
    _checked_norm(name, norm)
    if not shape:
        return
    if s is not None and axes is not None and len(s) != len(axes):
        raise InvalidArgumentError(
            f"{name}(): s {tuple(s)} and axes {tuple(axes)} must have one entry each per "
            "transformed axis"
        )
    transformed, _ = _axes_and_sizes(
        shape, None, axes if axes is not None else _default_axes(s, None)
    )
    sizes = [None] * len(transformed) if s is None else list(s)
    for index, (axis, n) in enumerate(zip(transformed, sizes)):
        halved = name in _HALVED_INPUT and index == len(transformed) - 1
        _checked_length(name, n, shape[axis], halved, "s")


def _library(xp: Any, name: str, a: Any, **options: Any) -> Any:
    """``xp.fft.<name>(a, **options)``; where ``a`` is empty along an axis it does not
    transform (an empty batch), computed on one row of zeros and cut to none (PyTorch's
    transforms fail on an empty batch; NumPy's give the empty result)."""
    transform = getattr(xp.fft, name)
    if 0 not in a.shape:
        return transform(a, **options)
    ndim = a.ndim
    if "axis" in options:
        transformed = {options["axis"] % ndim}
    else:
        transformed = set(_axes_and_sizes(tuple(a.shape), options.get("s"), options.get("axes"))[0])
    empty = [i for i in range(ndim) if a.shape[i] == 0 and i not in transformed]
    if not empty:
        return transform(a, **options)
    filled = tuple(1 if i in empty else length for i, length in enumerate(a.shape))
    out = transform(xp.zeros(filled, dtype=a.dtype, device=device_of(a)), **options)
    return out[tuple(slice(0, 0) if i in empty else slice(None) for i in range(out.ndim))]


# -- kernels and rules ---------------------------------------------------------------------


def _complex_input(name: str) -> Any:
    """The kernel of a 1-D transform of complex input (``fft``, ``ifft``, ``irfft``,
    ``hfft``), which converts real input first."""

    def kernel(xp: Any, x: Any, /, *, n: Any = None, axis: int = -1, norm: str = "backward") -> Any:
        checked_axis(name, axis, x.ndim)
        _checked_one_axis(name, tuple(x.shape), n, axis, norm)
        return _library(xp, name, _as_complex(xp, x), n=n, axis=axis, norm=norm)

    return kernel


def _real_input(name: str) -> Any:
    """The kernel of a 1-D transform of real input (``rfft``, ``ihfft``)."""

    def kernel(xp: Any, x: Any, /, *, n: Any = None, axis: int = -1, norm: str = "backward") -> Any:
        checked_axis(name, axis, x.ndim)
        _checked_one_axis(name, tuple(x.shape), n, axis, norm)
        return _library(xp, name, x, n=n, axis=axis, norm=norm)

    return kernel


def _over_axes(name: str, computed_by: str | None = None) -> Any:
    """The kernel of an n-dimensional transform: ``s`` alone means the last ``len(s)`` axes.
    ``computed_by``: the library's transform that computes it (``name``'s by default)."""
    function = computed_by or name

    def kernel(
        xp: Any, x: Any, /, *, s: Any = None, axes: Any = None, norm: str = "backward"
    ) -> Any:
        axes = _default_axes(s, axes)
        if axes is not None:
            _checked_axes(name, axes, x.ndim)
        _checked_over_axes(name, tuple(x.shape), s, axes, norm)
        if axes is not None:
            unique = {a % x.ndim if x.ndim and -x.ndim <= a < x.ndim else a for a in axes}
            if len(unique) != len(axes):
                raise InvalidArgumentError(
                    f"{name}(): the axes {tuple(axes)} name one axis twice; give each once"
                )
            if not axes and name in ("fftn", "ifftn"):  # no axis transformed: still complex
                return _as_complex(xp, x)
        if function in ("fftn", "ifftn", "irfftn"):
            x = _as_complex(xp, x)  # (as fft's: the standard's take complex input only)
        if s is not None and -1 in s:
            # -1 is the input's length; Dask's transforms chunked their result for -1
            s = _axes_and_sizes(tuple(x.shape), s, axes)[1]
        return _library(xp, function, x, s=s, axes=axes, norm=norm)

    return kernel


def _fft_grad(inverse_name: str) -> Any:
    def rule(xp: Any, g: Any, ans: Any, x: Any, *, n: Any, axis: int, norm: str) -> Any:
        grad = _library(xp, inverse_name, g, axis=axis, norm=_DUAL[norm])
        return cast(xp, _resize(xp, grad, axis, x.shape[axis]), x.dtype)

    return rule


def _fftn_grad(inverse_name: str) -> Any:
    def rule(xp: Any, g: Any, ans: Any, x: Any, *, s: Any, axes: Any, norm: str) -> Any:
        axes_, _ = _axes_and_sizes(tuple(x.shape), s, axes)
        grad = _library(xp, inverse_name, g, axes=axes_, norm=_DUAL[norm])
        return cast(xp, _resize_axes(xp, grad, axes_, tuple(x.shape)), x.dtype)

    return rule


def _rfft_grad(xp: Any, g: Any, ans: Any, x: Any, *, n: Any, axis: int, norm: str) -> Any:
    full = x.shape[axis] if n is None else n
    padded = _resize(xp, g, axis, full)
    grad = xp.real(_library(xp, "ifft", padded, axis=axis, norm=_DUAL[norm]))
    return cast(xp, _resize(xp, grad, axis, x.shape[axis]), x.dtype)


def _irfft_grad(xp: Any, g: Any, ans: Any, x: Any, *, n: Any, axis: int, norm: str) -> Any:
    grad = _library(xp, "rfft", g, axis=axis, norm=_DUAL[norm])
    grad = grad * _pair_weights(xp, grad, axis % grad.ndim, g.shape[axis])
    return cast(xp, _resize(xp, grad, axis, x.shape[axis]), x.dtype)


def _hfft_grad(xp: Any, g: Any, ans: Any, x: Any, *, n: Any, axis: int, norm: str) -> Any:
    # hfft(x) = irfft(conj(x)) with the dual norm; conj passes conj(g) back.
    return xp.conj(_irfft_grad(xp, g, ans, x, n=n, axis=axis, norm=_DUAL[norm]))


def _ihfft_grad(xp: Any, g: Any, ans: Any, x: Any, *, n: Any, axis: int, norm: str) -> Any:
    # ihfft(x) = conj(rfft(x)) with the dual norm.
    return _rfft_grad(xp, xp.conj(g), ans, x, n=n, axis=axis, norm=_DUAL[norm])


#: The library transforms hfftn and ihfftn are computed by, checking in their names.
_IRFFTN_FOR_HFFTN = _over_axes("hfftn", computed_by="irfftn")
_RFFTN_FOR_IHFFTN = _over_axes("ihfftn", computed_by="rfftn")


def _hfftn(xp: Any, x: Any, /, *, s: Any = None, axes: Any = None, norm: str = "backward") -> Any:
    """``hfftn(x) = irfftn(conj(x))`` with the dual norm (no library has it)."""
    return _IRFFTN_FOR_HFFTN(xp, xp.conj(_as_complex(xp, x)), s=s, axes=axes, norm=_DUAL[norm])


def _ihfftn(xp: Any, x: Any, /, *, s: Any = None, axes: Any = None, norm: str = "backward") -> Any:
    """``ihfftn(x) = conj(rfftn(x))`` with the dual norm."""
    return xp.conj(_RFFTN_FOR_IHFFTN(xp, x, s=s, axes=axes, norm=_DUAL[norm]))


def _hfftn_grad(xp: Any, g: Any, ans: Any, x: Any, *, s: Any, axes: Any, norm: str) -> Any:
    return xp.conj(_irfftn_grad(xp, g, ans, x, s=s, axes=axes, norm=_DUAL[norm]))


def _ihfftn_grad(xp: Any, g: Any, ans: Any, x: Any, *, s: Any, axes: Any, norm: str) -> Any:
    return _rfftn_grad(xp, xp.conj(g), ans, x, s=s, axes=axes, norm=_DUAL[norm])


def _rfftn_grad(xp: Any, g: Any, ans: Any, x: Any, *, s: Any, axes: Any, norm: str) -> Any:
    axes_, sizes = _axes_and_sizes(tuple(x.shape), s, axes)
    padded = _resize(xp, g, axes_[-1], sizes[-1])
    grad = xp.real(_library(xp, "ifftn", padded, axes=axes_, norm=_DUAL[norm]))
    return cast(xp, _resize_axes(xp, grad, axes_, tuple(x.shape)), x.dtype)


def _irfftn_grad(xp: Any, g: Any, ans: Any, x: Any, *, s: Any, axes: Any, norm: str) -> Any:
    shape = tuple(x.shape)
    axes_, _ = _axes_and_sizes(shape, s, axes)
    sizes = tuple(g.shape[a] for a in axes_)  # the real output's lengths
    grad = _library(xp, "rfftn", g, axes=axes_, norm=_DUAL[norm])
    grad = grad * _pair_weights(xp, grad, axes_[-1], sizes[-1])
    return cast(xp, _resize_axes(xp, grad, axes_, shape), x.dtype)


# -- the transforms: every rule reads only the input's shape and dtype (saves=()) -----------


def _checked_axes(name: str, dim: Any, ndim: int) -> tuple[int, ...]:
    """PyTorch's ``dim`` (one int or several) as the standard's ``axes``, each in range
    (a library's own error was an IndexError naming no function)."""
    dim = dim_as_axis(dim)  # (NumPy integers, 0-d integer tensors as ints)
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    for each in dims:
        checked_axis(name, each, ndim)
    return dims


def _torch_one_axis(name: str) -> Any:
    """PyTorch's ``torch.fft.<name>(input, n=None, dim=-1, norm=None)``."""

    def transform(xp: Any, x: Any, n: Any = None, dim: int = -1, norm: Any = None) -> Any:
        n, dim = as_int(n), dim_as_axis(dim)  # (NumPy integers, 0-d integer tensors as ints)
        checked_axis(name, dim, x.ndim)
        # (xp: plugrad's namespace, whose op of the standard's form checks the rest)
        return getattr(xp.fft, name)(x, n=n, axis=dim, norm="backward" if norm is None else norm)

    transform.__doc__ = f"PyTorch's ``torch.fft.{name}(input, n=None, dim=-1, norm=None)``."
    return one_array(transform)


def _torch_over_axes(name: str, dims: Any = None) -> Any:
    """PyTorch's ``torch.fft.<name>(input, s=None, dim=None, norm=None)`` (for the 2-D
    transforms ``dim=(-2, -1)``)."""

    def transform(xp: Any, x: Any, s: Any = None, dim: Any = dims, norm: Any = None) -> Any:
        if dim is not None:
            dim = _checked_axes(name, dim, x.ndim)
        if name in ("irfftn", "hfftn") and s is not None and len(s) and s[-1] == -1:
            # PyTorch's -1 on the halved axis is its default length, 2 * (m - 1); the
            # standard's (as on every other axis) is the input's length m.
            last = dim[-1] if dim is not None else -1
            s = (*s[:-1], 2 * (x.shape[last] - 1))
        return getattr(xp.fft, name)(x, s=s, axes=dim, norm="backward" if norm is None else norm)

    transform.__doc__ = f"PyTorch's ``torch.fft`` transform over ``dim`` (default {dims})."
    return one_array(transform)


def _torch_shift(name: str) -> Any:
    """PyTorch's ``torch.fft.<name>(input, dim=None)``."""

    def shift(xp: Any, x: Any, dim: Any = None) -> Any:
        return getattr(xp.fft, name)(
            x, axes=None if dim is None else _checked_axes(name, dim, x.ndim)
        )

    shift.__doc__ = f"PyTorch's ``torch.fft.{name}(input, dim=None)``."
    return one_array(shift)


#: A transform's row: integer and bool input computes in the default float dtype (PyTorch's
#: rfft of int64 is complex64), as fft's already did.
_transform = functools.partial(op, namespace="fft", saves=(), promotion="float")


#: The transforms of real input: a complex one is refused in plugrad's words (as PyTorch
#: refuses it), not in the library's.
_REAL_INPUT = frozenset({"rfft", "rfftn", "ihfft", "ihfftn"})


def _one_axis_row(name: str, vjp: Any, *, doc: str, kernel: Any = None) -> OpDef:
    """The row of a one-axis transform, with PyTorch's ``(input, n, dim, norm)`` form; without
    ``kernel``, the backend's function of that name computes it (its arguments checked)."""
    return _transform(name, kernel or _real_input(name), vjp=vjp,
                      torch_function=_torch_one_axis(name), doc=doc,
                      real_only=name in _REAL_INPUT)  # fmt: skip


def _over_axes_row(name: str, vjp: Any, *, doc: str, kernel: Any = None) -> OpDef:
    """The row of an n-dimensional transform, with PyTorch's ``dim`` form and its 2-D alias
    (``fftn`` -> ``fft2``: the last two axes)."""
    two_d = {name[:-1] + "2": _torch_over_axes(name, (-2, -1))}
    torch_form = _torch_over_axes(name)
    return _transform(name, kernel or _over_axes(name), vjp=vjp, torch_function=torch_form,
                      aliases=two_d, doc=doc, real_only=name in _REAL_INPUT)  # fmt: skip


# fmt: off
fft = _one_axis_row("fft", _fft_grad("ifft"), kernel=_complex_input("fft"), doc=(
    "One-dimensional discrete Fourier transform along ``axis`` (padded or cut to ``n``)."))
ifft = _one_axis_row("ifft", _fft_grad("fft"), kernel=_complex_input("ifft"), doc=(
    "One-dimensional inverse discrete Fourier transform along ``axis``."))
fftn = _over_axes_row("fftn", _fftn_grad("ifftn"), doc=(
    "N-dimensional discrete Fourier transform over ``axes`` (sizes ``s``)."))
ifftn = _over_axes_row("ifftn", _fftn_grad("fftn"), doc=(
    "N-dimensional inverse discrete Fourier transform over ``axes`` (sizes ``s``)."))
rfft = _one_axis_row("rfft", _rfft_grad, doc=(
    "Discrete Fourier transform of real input: the ``n // 2 + 1`` non-negative terms."))
irfft = _one_axis_row("irfft", _irfft_grad, kernel=_complex_input("irfft"), doc=(
    "Inverse of :func:`rfft`: ``n`` real values (``2 * (m - 1)`` from ``m`` terms)."))
rfftn = _over_axes_row("rfftn", _rfftn_grad, doc=(
    "N-dimensional discrete Fourier transform of real input (the last axis halved)."))
irfftn = _over_axes_row("irfftn", _irfftn_grad, doc=(
    "Inverse of :func:`rfftn`: real output of sizes ``s``."))
hfft = _one_axis_row("hfft", _hfft_grad, kernel=_complex_input("hfft"), doc=(
    "Discrete Fourier transform (real) of a Hermitian signal given by its first half."))
ihfft = _one_axis_row("ihfft", _ihfft_grad, doc=(
    "Inverse of :func:`hfft`: the conjugated first half of a real signal's spectrum."))
hfftn = _over_axes_row("hfftn", _hfftn_grad, kernel=_hfftn, doc=(
    "N-dimensional transform (real) of a Hermitian signal given by its last axis' first half."))
ihfftn = _over_axes_row("ihfftn", _ihfftn_grad, kernel=_ihfftn, doc=(
    "Inverse of :func:`hfftn`: the conjugated half spectrum of real input (the last axis halved)."))
fftshift = op("fftshift(x, /, *, axes=None)", namespace="fft",
              torch_function=_torch_shift("fftshift"),
              vjp=lambda xp, g, ans, x, *, axes: xp.fft.ifftshift(g, axes=axes),
              doc="Move the zero frequency to the middle of ``axes`` (all axes by default).")
ifftshift = op("ifftshift(x, /, *, axes=None)", namespace="fft",
               torch_function=_torch_shift("ifftshift"),
               vjp=lambda xp, g, ans, x, *, axes: xp.fft.fftshift(g, axes=axes),
               doc="Inverse of :func:`fftshift`.")
# fmt: on


@hookimpl
def plugrad_ops() -> list[OpDef]:
    return collect_ops(globals())
