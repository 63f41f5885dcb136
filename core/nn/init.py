"""Initializing parameters in place: ``plugrad.nn.init`` (PyTorch's names and formulas).

Every function fills its tensor in place without recording a gradient and
returns it. Random ones draw from plugrad's generators: the default generator
of the tensor's device (seeded by :func:`plugrad.manual_seed`), or
``generator=``.

Examples
--------
>>> import plugrad
>>> w = plugrad.empty((3, 4))
>>> plugrad.nn.init.zeros_(w)
tensor([[0., 0., 0., 0.],
        [0., 0., 0., 0.],
        [0., 0., 0., 0.]])
>>> _ = plugrad.manual_seed(0)
>>> w = plugrad.nn.init.kaiming_uniform_(plugrad.empty((256, 64)))
>>> bound = (6 / 64) ** 0.5
>>> bool(plugrad.all(plugrad.abs(w) <= bound))
True
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

from .. import linalg
from .. import ops as _ops
from ..creation import eye
from ..dtypes import float32, float64
from ..errors import ArgumentError, DtypeError, InvalidArgumentError, ShapeError
from ..grad_mode import no_grad
from ..random import Generator, rand, randn, randperm, uniform_values
from ..tensor import Tensor
from .functional import _int_or_itself

__all__ = [
    "calculate_gain",
    "constant_",
    "dirac_",
    "eye_",
    "kaiming_normal_",
    "kaiming_uniform_",
    "normal_",
    "ones_",
    "orthogonal_",
    "sparse_",
    "trunc_normal_",
    "uniform_",
    "xavier_normal_",
    "xavier_uniform_",
    "zeros_",
]


def _fill(tensor: Tensor, values: Tensor | float) -> Tensor:
    if not isinstance(tensor, Tensor):
        raise ArgumentError(f"nn.init fills a Tensor in place, got {type(tensor).__name__}")
    with no_grad():
        if isinstance(values, Tensor):
            tensor.copy_(values)
        else:
            tensor.fill_(values)
    return tensor


def uniform_(
    tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Generator | None = None
) -> Tensor:
    """Fill with samples of the uniform distribution on ``[a, b)``.

    Examples
    --------
    >>> import plugrad
    >>> w = plugrad.nn.init.uniform_(plugrad.empty(1000), -2.0, 2.0)
    >>> bool(plugrad.all(w >= -2.0)) and bool(plugrad.all(w < 2.0))
    True
    """
    return _fill(tensor, uniform_values(tensor.shape, a, b, tensor.dtype, tensor.device, generator))


def normal_(
    tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Generator | None = None
) -> Tensor:
    """Fill with samples of the normal distribution with ``mean`` and ``std``.

    Examples
    --------
    >>> import plugrad
    >>> w = plugrad.nn.init.normal_(plugrad.empty(10000), mean=3.0, std=0.5)
    >>> round(float(plugrad.mean(w)), 1), round(float(plugrad.std(w)), 1)
    (3.0, 0.5)
    """
    if not std >= 0:  # (NaN too: it filled the tensor with NaN)
        raise InvalidArgumentError(f"normal_(): std must be non-negative, got {std}")
    sample = randn(*tensor.shape, dtype=tensor.dtype, device=tensor.device, generator=generator)
    return _fill(tensor, sample * std + mean)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with ``val``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.init.constant_(plugrad.empty(2), 0.5)
    tensor([0.5000, 0.5000])
    """
    return _fill(tensor, val)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with zeros.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.init.zeros_(plugrad.empty(2))
    tensor([0., 0.])
    """
    return _fill(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    """Fill with ones.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.init.ones_(plugrad.empty(2))
    tensor([1., 1.])
    """
    return _fill(tensor, 1.0)


_LINEAR_GAINS = {
    "linear": 1.0,
    "identity": 1.0,
    "conv1d": 1.0,
    "conv2d": 1.0,
    "conv3d": 1.0,
    "conv_transpose1d": 1.0,
    "conv_transpose2d": 1.0,
    "conv_transpose3d": 1.0,
    "sigmoid": 1.0,
    "tanh": 5.0 / 3.0,
    "relu": math.sqrt(2.0),
    "selu": 3.0 / 4.0,
}


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended scale of initial weights followed by ``nonlinearity``.

    ``"leaky_relu"`` takes its negative slope as ``param`` (default 0.01).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.init.calculate_gain("relu")
    1.4142135623730951
    >>> plugrad.nn.init.calculate_gain("leaky_relu", 5 ** 0.5)
    0.5773502691896257
    """
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        if isinstance(slope, bool) or not isinstance(slope, (int, float)):
            raise InvalidArgumentError(
                f"calculate_gain(): negative slope {slope!r} is not a number"
            )
        return math.sqrt(2.0 / (1.0 + slope**2))
    try:
        return _LINEAR_GAINS[nonlinearity]
    except KeyError:
        raise InvalidArgumentError(
            f"calculate_gain(): unknown nonlinearity {nonlinearity!r}; known: "
            f"{', '.join(sorted([*_LINEAR_GAINS, 'leaky_relu']))}"
        ) from None


def _fans(tensor: Tensor) -> tuple[int, int]:
    """``(fan_in, fan_out)`` of a ``(out, in, *kernel)`` weight."""
    if tensor.ndim < 2:
        raise ShapeError(
            f"fan in and fan out need a weight with at least 2 axes, got shape {tensor.shape}"
        )
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor: Tensor, mode: str) -> int:
    if not isinstance(mode, str) or mode.lower() not in ("fan_in", "fan_out"):
        raise InvalidArgumentError(f"mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = _fans(tensor)
    return fan_in if mode.lower() == "fan_in" else fan_out


# PyTorch's private names for the two, which layers' reset_parameters() often call (as
# its Linear's does: bound = 1 / sqrt(fan_in)).
_calculate_fan_in_and_fan_out = _fans
_calculate_correct_fan = _fan


def xavier_uniform_(
    tensor: Tensor, gain: float = 1.0, generator: Generator | None = None
) -> Tensor:
    """Glorot uniform: ``U(-b, b)`` with ``b = gain * sqrt(6 / (fan_in + fan_out))``.

    Examples
    --------
    >>> import plugrad
    >>> w = plugrad.nn.init.xavier_uniform_(plugrad.empty((30, 20)))
    >>> bool(plugrad.all(plugrad.abs(w) <= (6 / 50) ** 0.5))
    True
    """
    fan_in, fan_out = _fans(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator=generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Glorot normal: ``N(0, std)`` with ``std = gain * sqrt(2 / (fan_in + fan_out))``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.init.xavier_normal_(plugrad.empty((30, 20))).shape
    (30, 20)
    """
    fan_in, fan_out = _fans(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator=generator)


def kaiming_uniform_(
    tensor: Tensor,
    a: float = 0.0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: Generator | None = None,
) -> Tensor:
    """He uniform: ``U(-b, b)`` with ``b = gain * sqrt(3 / fan)``.

    ``a`` is the negative slope of a following leaky ReLU. PyTorch's default
    for :class:`~plugrad.nn.Linear` and :class:`~plugrad.nn.Conv2d` weights is
    ``a=sqrt(5)``, which gives ``b = 1 / sqrt(fan_in)``.

    Examples
    --------
    >>> import plugrad
    >>> w = plugrad.nn.init.kaiming_uniform_(plugrad.empty((8, 100)), a=5 ** 0.5)
    >>> bool(plugrad.all(plugrad.abs(w) <= 0.1))
    True
    """
    gain = calculate_gain(nonlinearity, a)
    bound = gain * math.sqrt(3.0 / _fan(tensor, mode)) if tensor.size else 0.0
    return uniform_(tensor, -bound, bound, generator=generator)


def kaiming_normal_(
    tensor: Tensor,
    a: float = 0.0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: Generator | None = None,
) -> Tensor:
    """He normal: ``N(0, std)`` with ``std = gain / sqrt(fan)``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.init.kaiming_normal_(plugrad.empty((8, 4)), nonlinearity="relu").shape
    (8, 4)
    """
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(_fan(tensor, mode)) if tensor.size else 0.0
    return normal_(tensor, 0.0, std, generator=generator)


def trunc_normal_(
    tensor: Tensor,
    mean: float = 0.0,
    std: float = 1.0,
    a: float = -2.0,
    b: float = 2.0,
    generator: Generator | None = None,
) -> Tensor:
    """Fill with samples of the normal distribution (``mean``, ``std``) truncated to ``[a, b]``.

    ``a`` and ``b`` bound the values themselves (not in units of ``std``), as
    in PyTorch. Each sample is the normal quantile of a uniform draw between the
    bounds' probabilities (computed in float64, on the host for a device without
    it), so a narrow interval or one in a tail is filled as readily as a wide one.
    An interval lying entirely beyond about 7 standard deviations from the mean,
    where float64 probabilities run out of digits, is refused.

    Examples
    --------
    >>> import plugrad
    >>> w = plugrad.nn.init.trunc_normal_(plugrad.empty(1000), std=1.0, a=-0.5, b=0.5)
    >>> bool(plugrad.all(plugrad.abs(w) <= 0.5))
    True
    """
    if not isinstance(tensor, Tensor):
        raise ArgumentError(f"nn.init fills a Tensor in place, got {type(tensor).__name__}")
    if tensor.dtype.kind != "real floating":  # (bools came out all True, ints rounded)
        raise DtypeError(
            f"trunc_normal_(): fills a real floating-point tensor, got {tensor.dtype.name}"
        )
    if not std >= 0:
        raise InvalidArgumentError(f"trunc_normal_(): std must be non-negative, got {std}")
    if not a < b:
        raise InvalidArgumentError(
            f"trunc_normal_(): the lower bound {a} is not below the upper bound {b}"
        )
    if std == 0:
        if not a <= mean <= b:
            raise InvalidArgumentError(
                f"trunc_normal_(): std is 0 and the mean {mean} is outside [{a}, {b}]"
            )
        return _fill(tensor, float(mean))
    low, high = (a - mean) / std, (b - mean) / std
    # An interval above the mean is sampled as its mirror image below it, where the
    # normal CDF keeps its relative precision (1 - 1e-20 is 1 in float64; 1e-20 is not).
    mirrored = low > 0
    if mirrored:
        low, high = -high, -low
    below, above = (0.5 * math.erfc(-z / math.sqrt(2.0)) for z in (low, high))
    if above < 1e-12:
        raise InvalidArgumentError(
            f"trunc_normal_(): [{a}, {b}] lies at least {abs(high):.1f} standard deviations "
            f"from the mean {mean}, beyond what float64 probabilities resolve; move the bounds "
            "toward the mean or shift and scale the values yourself"
        )
    has_float64 = float64 in tensor.device.dtypes
    with no_grad():
        uniform = rand(
            *tensor.shape,
            dtype=float64 if has_float64 else float32,
            device=tensor.device,
            generator=generator,
        )
        if not has_float64:
            # In float32, 2p - 1 rounds to -1 for p below 3e-8: an interval 5 standard
            # deviations out came out all on its bound. The quantiles are computed on the host.
            uniform = _ops.astype(uniform.cpu(), float64)
        quantile = _ops.erfinv(2.0 * (below + uniform * (above - below)) - 1.0) * math.sqrt(2.0)
        values = (-quantile if mirrored else quantile) * std + mean
        values = _ops.astype(_ops.clip(values, a, b), tensor.dtype)
        return _fill(tensor, values if has_float64 else values.to(tensor.device))


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Fill with a (semi-)orthogonal matrix times ``gain``: rows or columns orthonormal.

    Dims after the first are flattened into columns. Drawn as the QR factor
    of a Gaussian matrix with the signs of R's diagonal, so it is uniform
    among orthogonal matrices.

    Examples
    --------
    >>> import plugrad
    >>> q = plugrad.nn.init.orthogonal_(plugrad.empty((3, 5)))
    >>> bool(plugrad.allclose(q @ q.T, plugrad.eye(3), atol=1e-5))
    True
    """
    if not isinstance(tensor, Tensor) or tensor.ndim < 2:
        raise ShapeError("orthogonal_() fills a tensor of at least 2 dimensions")
    if tensor.size == 0:
        return tensor
    rows = tensor.shape[0]
    columns = tensor.size // rows
    with no_grad():
        flat = randn(rows, columns, dtype=tensor.dtype, device=tensor.device, generator=generator)
        if rows < columns:
            flat = flat.T
        q, r = linalg.qr(flat)
        q = q * _ops.sign(linalg.diagonal(r))[None, :]
        if rows < columns:
            q = q.T
        return _fill(tensor, q.reshape(tensor.shape) * gain)


def eye_(tensor: Tensor) -> Tensor:
    """Fill a matrix with the identity (ones on the diagonal, zeros elsewhere).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.init.eye_(plugrad.empty((2, 3)))
    tensor([[1., 0., 0.],
            [0., 1., 0.]])
    """
    if not isinstance(tensor, Tensor) or tensor.ndim != 2:
        raise ShapeError("eye_() fills a matrix (2 dimensions)")
    return _fill(tensor, eye(*tensor.shape, dtype=tensor.dtype, device=tensor.device))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3-, 4- or 5-d convolution weight with the Dirac delta: the identity convolution.

    In each of ``groups`` groups, output channel ``d`` takes input channel ``d``
    at the kernel's center (as many channels as both have).

    Examples
    --------
    >>> import plugrad
    >>> w = plugrad.nn.init.dirac_(plugrad.empty((2, 2, 3)))
    >>> w[:, :, 1]
    tensor([[1., 0.],
            [0., 1.]])
    """
    if not isinstance(tensor, Tensor) or tensor.ndim not in (3, 4, 5):
        raise ShapeError("dirac_() fills a 3-, 4- or 5-dimensional tensor")
    groups = _int_or_itself(groups)
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise InvalidArgumentError(f"dirac_(): groups must be an int >= 1, got {groups!r}")
    if tensor.shape[0] % groups:
        raise InvalidArgumentError(
            f"dirac_(): the {tensor.shape[0]} output channels do not divide into {groups} groups"
        )
    per_group = tensor.shape[0] // groups
    count = min(per_group, tensor.shape[1])
    center = tuple(size // 2 for size in tensor.shape[2:])
    with no_grad():
        _fill(tensor, 0.0)
        for group in range(groups):
            for channel in range(count):
                at = (group * per_group + channel, channel, *center)
                tensor[at] = 1.0
    return tensor


def sparse_(
    tensor: Tensor, sparsity: float, std: float = 0.01, generator: Generator | None = None
) -> Tensor:
    """Fill a matrix with ``N(0, std)`` samples, then zero ``ceil(sparsity * rows)`` random
    rows of each column.

    Examples
    --------
    >>> import plugrad
    >>> w = plugrad.nn.init.sparse_(plugrad.empty((10, 3)), sparsity=0.3)
    >>> [int((w[:, j] == 0).sum()) for j in range(3)]
    [3, 3, 3]
    """
    if not isinstance(tensor, Tensor) or tensor.ndim != 2:
        raise ShapeError("sparse_() fills a matrix (2 dimensions)")
    if not 0 <= sparsity <= 1:
        raise InvalidArgumentError(f"sparse_(): sparsity must be in [0, 1], got {sparsity}")
    rows, columns = tensor.shape
    zeroed = math.ceil(sparsity * rows)
    normal_(tensor, 0.0, std, generator=generator)
    with no_grad():
        for column in range(columns):
            order = randperm(rows, device=tensor.device, generator=generator)
            tensor[order[:zeroed], column] = 0.0
    return tensor


def _deprecated(name: str, function: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """PyTorch's old name without the trailing ``_``, warning as PyTorch's does."""

    def deprecated(*args: Any, **kwargs: Any) -> Tensor:
        warnings.warn(
            f"nn.init.{name} is deprecated in favor of nn.init.{name}_", FutureWarning, stacklevel=2
        )
        return function(*args, **kwargs)

    deprecated.__name__ = deprecated.__qualname__ = name
    deprecated.__doc__ = f"Deprecated: :func:`{name}_`, with a warning (PyTorch's old name)."
    return deprecated


uniform = _deprecated("uniform", uniform_)
normal = _deprecated("normal", normal_)
constant = _deprecated("constant", constant_)
xavier_uniform = _deprecated("xavier_uniform", xavier_uniform_)
xavier_normal = _deprecated("xavier_normal", xavier_normal_)
kaiming_uniform = _deprecated("kaiming_uniform", kaiming_uniform_)
kaiming_normal = _deprecated("kaiming_normal", kaiming_normal_)
orthogonal = _deprecated("orthogonal", orthogonal_)
sparse = _deprecated("sparse", sparse_)
