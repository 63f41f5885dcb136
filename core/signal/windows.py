"""PyTorch's ``torch.signal.windows``: the window functions of SciPy's ``scipy.signal.windows``.

Each takes the window length ``M`` and, by keyword only, its own parameters and
``sym``, ``dtype``, ``layout``, ``device`` and ``requires_grad``. A symmetric
window (``sym=True``, the default: for filter design) mirrors about its middle;
a periodic one (``sym=False``: for spectral analysis) is the first ``M`` values
of the symmetric window of ``M + 1``. A window of no sample is empty, and of one
sample ``[1.0]`` (but for :func:`exponential` centred away from it).

The formulas are those of :mod:`plugrad.windows`, PyTorch's ``torch.*_window``,
which are periodic by default: ``hann(M, sym=s)`` is ``plugrad.hann_window(M,
periodic=not s)``. As PyTorch's, a window is ``float32`` or ``float64`` (the
default float dtype unless ``dtype`` says), computed in that dtype on
``device``. With ``requires_grad=True`` it is a leaf that requires grad
(PyTorch's is the result of the ops that computed it, so not a leaf).

Examples
--------
>>> import plugrad
>>> plugrad.signal.windows.hann(5)
tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
>>> plugrad.signal.windows.hann(4, sym=False)
tensor([0.0000, 0.5000, 1.0000, 0.5000])
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Iterable
from typing import Any

from .. import creation as _creation
from .. import dtypes as _dtypes
from .. import ops as _ops
from .. import windows as _windows
from ..creation import CreationOptions, DeviceLike
from ..errors import ArgumentError, DtypeError, InvalidArgumentError
from ..memory_formats import layout as _layout
from ..memory_formats import strided
from ..tensor import Tensor

__all__ = [
    "bartlett",
    "blackman",
    "cosine",
    "exponential",
    "gaussian",
    "general_cosine",
    "general_hamming",
    "hamming",
    "hann",
    "kaiser",
    "nuttall",
]

#: Nuttall's minimum 4-term Blackman-Harris window.
_NUTTALL = (0.3635819, 0.4891775, 0.1365995, 0.0106411)


def _checked(
    function: str,
    M: Any,
    sym: Any,
    dtype: Any,
    layout: Any,
    device: DeviceLike,
    requires_grad: bool,
) -> tuple[int, CreationOptions]:
    """The length ``M`` and the creation options of a window, checked in PyTorch's order
    (the length, the layout, then the dtype) before the window's own parameters."""
    if isinstance(M, bool):
        raise ArgumentError(f"{function}(): M, the window length, must be an int, got bool")
    try:
        length = operator.index(M)
    except TypeError:
        raise ArgumentError(
            f"{function}(): M, the window length, must be an int, got {type(M).__name__}"
        ) from None
    if length < 0:
        raise InvalidArgumentError(
            f"{function}(): M, the window length, must be >= 0, got M={length}"
        )
    if not isinstance(sym, bool):
        raise ArgumentError(f"{function}(): sym must be a bool, got {type(sym).__name__}")
    if layout is not strided:
        raise InvalidArgumentError(
            f"{function}(): windows are dense tensors: layout must be plugrad.strided, "
            f"got {layout!r}"
        )
    dtype = _dtypes.default_float_dtype if dtype is None else _dtypes.of_python_type(dtype)
    if dtype is not _dtypes.float32 and dtype is not _dtypes.float64:
        raise DtypeError(
            f"{function}(): a window is float32 or float64, got dtype="
            f"{getattr(dtype, 'name', dtype)!r}; pass dtype=plugrad.float32 or plugrad.float64"
        )
    return length, {"dtype": dtype, "device": device, "requires_grad": requires_grad}


def _number(function: str, name: str, value: Any) -> float:
    """``value`` as a float, when it is a real number (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ArgumentError(f"{function}(): {name} must be a real number, got {value!r}")
    return float(value)


def _positive(function: str, name: str, value: Any, *, zero: bool = False) -> float:
    """``value`` as a float, when it is a number > 0 (>= 0 with ``zero``); NaN is refused."""
    number = _number(function, name, value)
    if not (number >= 0 if zero else number > 0):
        bound = ">= 0" if zero else "> 0"
        raise InvalidArgumentError(f"{function}(): {name} must be {bound}, got {value!r}")
    return number


def _cosine_window(
    function: str, length: int, sym: bool, options: CreationOptions, a: tuple[float, ...]
) -> Tensor:
    """``a[0] - a[1] cos(2 pi n / N) + a[2] cos(4 pi n / N) - ...`` (``plugrad.windows``')."""
    return _windows._window(function, length, not sym, options, _windows._cosine_sum(a))


def bartlett(
    M: int,
    *,
    sym: bool = True,
    dtype: _dtypes.DType | None = None,
    layout: _layout = strided,
    device: DeviceLike = None,
    requires_grad: bool = False,
) -> Tensor:
    """Return the Bartlett (triangular) window ``1 - |2 n / N - 1|``.

    ``N`` is ``M - 1`` when ``sym``, else ``M``; this is :func:`plugrad.bartlett_window`.

    Parameters
    ----------
    M : int
        The number of samples, >= 0.
    sym : bool, optional
        A symmetric window (the default) or a periodic one.
    dtype, layout, device, requires_grad
        As :func:`plugrad.ones`'s; ``dtype`` is ``float32`` or ``float64``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.signal.windows.bartlett(5)
    tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
    """
    length, options = _checked("bartlett", M, sym, dtype, layout, device, requires_grad)
    return _windows.bartlett_window(length, not sym, **options)


def blackman(
    M: int,
    *,
    sym: bool = True,
    dtype: _dtypes.DType | None = None,
    layout: _layout = strided,
    device: DeviceLike = None,
    requires_grad: bool = False,
) -> Tensor:
    """Return the Blackman window ``0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)``.

    ``N`` is ``M - 1`` when ``sym``, else ``M``; this is :func:`plugrad.blackman_window`.

    Parameters
    ----------
    M : int
        The number of samples, >= 0.
    sym : bool, optional
        A symmetric window (the default) or a periodic one.
    dtype, layout, device, requires_grad
        As :func:`plugrad.ones`'s; ``dtype`` is ``float32`` or ``float64``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.signal.windows.blackman(5)
    tensor([-1.4901e-08,  3.4000e-01,  1.0000e+00,  3.4000e-01, -1.4901e-08])
    """
    length, options = _checked("blackman", M, sym, dtype, layout, device, requires_grad)
    return _cosine_window("blackman", length, sym, options, (0.42, 0.5, 0.08))


def cosine(
    M: int,
    *,
    sym: bool = True,
    dtype: _dtypes.DType | None = None,
    layout: _layout = strided,
    device: DeviceLike = None,
    requires_grad: bool = False,
) -> Tensor:
    """Return the cosine (sine) window ``sin(pi (n + 0.5) / M)``, as SciPy's.

    The samples sit half a step in from the ends, so none is 0; a periodic window
    divides by ``M + 1``.

    Parameters
    ----------
    M : int
        The number of samples, >= 0.
    sym : bool, optional
        A symmetric window (the default) or a periodic one.
    dtype, layout, device, requires_grad
        As :func:`plugrad.ones`'s; ``dtype`` is ``float32`` or ``float64``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.signal.windows.cosine(4)
    tensor([0.3827, 0.9239, 0.9239, 0.3827])
    """
    length, options = _checked("cosine", M, sym, dtype, layout, device, requires_grad)

    def weights(positions: Tensor, span: int) -> Tensor:
        # span is M - 1 (symmetric) or M (periodic): the divisor is one more
        return _ops.sin((positions + 0.5) * (math.pi / (span + 1)))

    return _windows._window("cosine", length, not sym, options, weights)


def exponential(
    M: int,
    *,
    center: float | None = None,
    tau: float = 1.0,
    sym: bool = True,
    dtype: _dtypes.DType | None = None,
    layout: _layout = strided,
    device: DeviceLike = None,
    requires_grad: bool = False,
) -> Tensor:
    """Return the exponential (Poisson) window ``exp(-|n - center| / tau)``.

    Parameters
    ----------
    M : int
        The number of samples, >= 0.
    center : float, optional
        Where the peak lies; only for a periodic window (``sym=False``). By default
        the middle: ``(M - 1) / 2`` when ``sym``, else ``M / 2``.
    tau : float, optional
        The decay, > 0: the window falls by ``e`` every ``tau`` samples.
    sym : bool, optional
        A symmetric window (the default) or a periodic one.
    dtype, layout, device, requires_grad
        As :func:`plugrad.ones`'s; ``dtype`` is ``float32`` or ``float64``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.signal.windows.exponential(5)
    tensor([0.1353, 0.3679, 1.0000, 0.3679, 0.1353])
    >>> plugrad.signal.windows.exponential(4, center=0.0, tau=2.0, sym=False)
    tensor([1.0000, 0.6065, 0.3679, 0.2231])
    """
    length, options = _checked("exponential", M, sym, dtype, layout, device, requires_grad)
    decay = _positive("exponential", "tau", tau)
    if center is not None:
        if sym:
            raise InvalidArgumentError(
                "exponential(): a symmetric window is centred in its middle; pass "
                "center=None, or sym=False to centre it elsewhere"
            )
        center = _number("exponential", "center", center)
        if length == 1:  # (one sample elsewhere than its centre is not 1)
            return _creation.full((1,), math.exp(-abs(center) / decay), **options)

    def weights(positions: Tensor, span: int) -> Tensor:
        middle = span / 2.0 if center is None else center
        return _ops.exp(-_ops.abs(positions - middle) * (1.0 / decay))

    return _windows._window("exponential", length, not sym, options, weights)


def gaussian(
    M: int,
    *,
    std: float = 1.0,
    sym: bool = True,
    dtype: _dtypes.DType | None = None,
    layout: _layout = strided,
    device: DeviceLike = None,
    requires_grad: bool = False,
) -> Tensor:
    """Return the Gaussian window ``exp(-(n - N / 2)**2 / (2 std**2))``.

    ``N`` is ``M - 1`` when ``sym``, else ``M``.

    Parameters
    ----------
    M : int
        The number of samples, >= 0.
    std : float, optional
        The standard deviation in samples, > 0: how wide the window is.
    sym : bool, optional
        A symmetric window (the default) or a periodic one.
    dtype, layout, device, requires_grad
        As :func:`plugrad.ones`'s; ``dtype`` is ``float32`` or ``float64``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.signal.windows.gaussian(5, std=2.0)
    tensor([0.6065, 0.8825, 1.0000, 0.8825, 0.6065])
    """
    length, options = _checked("gaussian", M, sym, dtype, layout, device, requires_grad)
    scale = 1.0 / (_positive("gaussian", "std", std) * math.sqrt(2.0))

    def weights(positions: Tensor, span: int) -> Tensor:
        scaled = (positions - span / 2.0) * scale
        return _ops.exp(-(scaled * scaled))

    return _windows._window("gaussian", length, not sym, options, weights)


def general_cosine(
    M: int,
    *,
    a: Iterable[float],
    sym: bool = True,
    dtype: _dtypes.DType | None = None,
    layout: _layout = strided,
    device: DeviceLike = None,
    requires_grad: bool = False,
) -> Tensor:
    """Return the generalized cosine window ``sum_i (-1)**i a[i] cos(2 pi i n / N)``.

    ``N`` is ``M - 1`` when ``sym``, else ``M``. :func:`hann`, :func:`hamming`,
    :func:`blackman` and :func:`nuttall` are such windows.

    Parameters
    ----------
    M : int
        The number of samples, >= 0.
    a : sequence of float
        The coefficients, at least one (keyword only, and required).
    sym : bool, optional
        A symmetric window (the default) or a periodic one.
    dtype, layout, device, requires_grad
        As :func:`plugrad.ones`'s; ``dtype`` is ``float32`` or ``float64``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.signal.windows.general_cosine(5, a=[0.5, 0.5])
    tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
    """
    length, options = _checked("general_cosine", M, sym, dtype, layout, device, requires_grad)
    if isinstance(a, (str, bytes)) or not isinstance(a, Iterable):
        raise ArgumentError(
            f"general_cosine(): a, the coefficients, must be a list or tuple of numbers, "
            f"got {type(a).__name__}"
        )
    coefficients = tuple(_number("general_cosine", "each coefficient in a", w) for w in a)
    if not coefficients:
        raise InvalidArgumentError("general_cosine(): a, the coefficients, must not be empty")
    return _cosine_window("general_cosine", length, sym, options, coefficients)


def general_hamming(
    M: int,
    *,
    alpha: float = 0.54,
    sym: bool = True,
    dtype: _dtypes.DType | None = None,
    layout: _layout = strided,
    device: DeviceLike = None,
    requires_grad: bool = False,
) -> Tensor:
    """Return the generalized Hamming window ``alpha - (1 - alpha) cos(2 pi n / N)``.

    ``N`` is ``M - 1`` when ``sym``, else ``M``; ``alpha=0.5`` is :func:`hann`.

    Parameters
    ----------
    M : int
        The number of samples, >= 0.
    alpha : float, optional
        The window's coefficient (0.54: :func:`hamming`).
    sym : bool, optional
        A symmetric window (the default) or a periodic one.
    dtype, layout, device, requires_grad
        As :func:`plugrad.ones`'s; ``dtype`` is ``float32`` or ``float64``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.signal.windows.general_hamming(5, alpha=0.6)
    tensor([0.2000, 0.6000, 1.0000, 0.6000, 0.2000])
    """
    length, options = _checked("general_hamming", M, sym, dtype, layout, device, requires_grad)
    coefficient = _number("general_hamming", "alpha", alpha)
    return _cosine_window("general_hamming", length, sym, options, (coefficient, 1.0 - coefficient))


def hamming(
    M: int,
    *,
    sym: bool = True,
    dtype: _dtypes.DType | None = None,
    layout: _layout = strided,
    device: DeviceLike = None,
    requires_grad: bool = False,
) -> Tensor:
    """Return the Hamming window ``0.54 - 0.46 cos(2 pi n / N)``.

    ``N`` is ``M - 1`` when ``sym``, else ``M``; this is :func:`general_hamming` of
    ``alpha=0.54``.

    Parameters
    ----------
    M : int
        The number of samples, >= 0.
    sym : bool, optional
        A symmetric window (the default) or a periodic one.
    dtype, layout, device, requires_grad
        As :func:`plugrad.ones`'s; ``dtype`` is ``float32`` or ``float64``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.signal.windows.hamming(5)
    tensor([0.0800, 0.5400, 1.0000, 0.5400, 0.0800])
    """
    length, options = _checked("hamming", M, sym, dtype, layout, device, requires_grad)
    return _cosine_window("hamming", length, sym, options, (0.54, 1.0 - 0.54))


def hann(
    M: int,
    *,
    sym: bool = True,
    dtype: _dtypes.DType | None = None,
    layout: _layout = strided,
    device: DeviceLike = None,
    requires_grad: bool = False,
) -> Tensor:
    """Return the Hann window ``0.5 - 0.5 cos(2 pi n / N)``, that is ``sin(pi n / N)**2``.

    ``N`` is ``M - 1`` when ``sym``, else ``M``; this is :func:`plugrad.hann_window`.

    Parameters
    ----------
    M : int
        The number of samples, >= 0.
    sym : bool, optional
        A symmetric window (the default) or a periodic one.
    dtype, layout, device, requires_grad
        As :func:`plugrad.ones`'s; ``dtype`` is ``float32`` or ``float64``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.signal.windows.hann(5, dtype=plugrad.float64)
    tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000], dtype=plugrad.float64)
    """
    length, options = _checked("hann", M, sym, dtype, layout, device, requires_grad)
    return _cosine_window("hann", length, sym, options, (0.5, 0.5))


def kaiser(
    M: int,
    *,
    beta: float = 12.0,
    sym: bool = True,
    dtype: _dtypes.DType | None = None,
    layout: _layout = strided,
    device: DeviceLike = None,
    requires_grad: bool = False,
) -> Tensor:
    """Return the Kaiser window ``I0(beta * sqrt(1 - (2 n / N - 1)**2)) / I0(beta)``.

    ``I0`` is the modified Bessel function of order 0 and ``N`` is ``M - 1`` when
    ``sym``, else ``M``; this is :func:`plugrad.kaiser_window`.

    Parameters
    ----------
    M : int
        The number of samples, >= 0.
    beta : float, optional
        The shape, >= 0: 0 is a flat window, larger ones are narrower.
    sym : bool, optional
        A symmetric window (the default) or a periodic one.
    dtype, layout, device, requires_grad
        As :func:`plugrad.ones`'s; ``dtype`` is ``float32`` or ``float64``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.signal.windows.kaiser(5, beta=5.0)
    tensor([0.0367, 0.5529, 1.0000, 0.5529, 0.0367])
    """
    length, options = _checked("kaiser", M, sym, dtype, layout, device, requires_grad)
    shape = _positive("kaiser", "beta", beta, zero=True)
    return _windows.kaiser_window(length, not sym, shape, **options)


def nuttall(
    M: int,
    *,
    sym: bool = True,
    dtype: _dtypes.DType | None = None,
    layout: _layout = strided,
    device: DeviceLike = None,
    requires_grad: bool = False,
) -> Tensor:
    """Return Nuttall's minimum 4-term Blackman-Harris window.

    ``0.3635819 - 0.4891775 cos(z) + 0.1365995 cos(2 z) - 0.0106411 cos(3 z)`` of
    ``z = 2 pi n / N``, where ``N`` is ``M - 1`` when ``sym``, else ``M``.

    Parameters
    ----------
    M : int
        The number of samples, >= 0.
    sym : bool, optional
        A symmetric window (the default) or a periodic one.
    dtype, layout, device, requires_grad
        As :func:`plugrad.ones`'s; ``dtype`` is ``float32`` or ``float64``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.signal.windows.nuttall(5)
    tensor([3.6280e-04, 2.2698e-01, 1.0000e+00, 2.2698e-01, 3.6280e-04])
    """
    length, options = _checked("nuttall", M, sym, dtype, layout, device, requires_grad)
    return _cosine_window("nuttall", length, sym, options, _NUTTALL)
