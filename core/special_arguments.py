"""What the special functions share: their arguments checked, and the precision they work in.

Each takes tensors (a number is a ``TypeError``, as PyTorch's), of real dtypes
(complex is refused, as PyTorch's kernels refuse it); integers and bools give
the default float dtype, as PyTorch's do. Narrower floats are computed in
float64 where the device has it and rounded once at the end.

Examples
--------
>>> import plugrad
>>> from plugrad.special_arguments import floating_argument
>>> floating_argument("i0", plugrad.tensor([1, 2])).dtype
plugrad.float32
"""

from __future__ import annotations

import math
from typing import Any

from . import dtypes as _dtypes
from . import ops as _ops
from .creation import asarray
from .dtype_functions import finfo, result_type
from .errors import ArgumentError, DtypeError
from .tensor import Tensor

__all__ = [
    "as_tensor_like",
    "common_float_dtype",
    "float_dtype",
    "floating_argument",
    "floating_arguments",
    "narrowed",
    "tensor_argument",
    "widened",
]


def tensor_argument(function: str, value: Any, name: str = "input") -> Tensor:
    """``value``, which must be a Tensor (PyTorch's special functions take no numbers)."""
    if not isinstance(value, Tensor):
        raise ArgumentError(
            f"special.{function}() takes a Tensor as {name}, got {type(value).__name__}; "
            "wrap it with plugrad.tensor(...)"
        )
    return value


def float_dtype(function: str, dtype: _dtypes.DType) -> _dtypes.DType:
    """The floating dtype the result of ``dtype`` arguments has: integers and bools give the
    default float dtype; complex is refused."""
    if dtype.kind == "real floating":
        return dtype
    if dtype.kind == "complex floating":
        raise DtypeError(
            f"special.{function}(): complex inputs are not supported ({dtype.name}): it is "
            "defined for real numbers only; apply it to x.real, x.imag or abs(x) instead"
        )
    return _dtypes.default_float_dtype


def floating_argument(function: str, value: Any) -> Tensor:
    """``value`` as a Tensor of a real floating dtype (see :func:`float_dtype`)."""
    x = tensor_argument(function, value)
    return _ops.astype(x, float_dtype(function, x.dtype))


def common_float_dtype(
    function: str, first: Any, second: Any, names: tuple[str, str] = ("input", "other")
) -> _dtypes.DType:
    """The floating dtype of the result of two arguments, one of which may be a real number
    (see :func:`float_dtype`)."""
    if not isinstance(first, Tensor) and not isinstance(second, Tensor):
        raise ArgumentError(
            f"special.{function}() takes a Tensor as {names[0]} or {names[1]}, got "
            f"{type(first).__name__} and {type(second).__name__}; wrap one with plugrad.tensor"
        )
    for value, name in ((first, names[0]), (second, names[1])):
        if isinstance(value, Tensor):
            float_dtype(function, value.dtype)  # refuses complex
        elif not isinstance(value, (bool, int, float)):
            raise ArgumentError(
                f"special.{function}() takes a Tensor or a real number as {name}, got "
                f"{type(value).__name__}"
            )
    return float_dtype(function, result_type(first, second))


def as_tensor_like(value: Any, dtype: _dtypes.DType, other: Any) -> Tensor:
    """``value`` (a Tensor, or a number beside the Tensor ``other``) as a tensor of ``dtype``."""
    if isinstance(value, Tensor):
        return _ops.astype(value, dtype)
    return asarray(value, dtype=dtype, device=other.device)


def floating_arguments(
    function: str, first: Any, second: Any, names: tuple[str, str] = ("input", "other")
) -> tuple[Tensor, Tensor]:
    """Two arguments, one of which may be a number, as tensors of their common floating dtype."""
    dtype = common_float_dtype(function, first, second, names)
    return as_tensor_like(first, dtype, second), as_tensor_like(second, dtype, first)


def widened(x: Tensor) -> Tensor:
    """``x`` in float64 where its device has it (as it is otherwise)."""
    if x.dtype != _dtypes.float64 and _dtypes.float64 in x.device.dtypes:
        return _ops.astype(x, _dtypes.float64)
    return x


def narrowed(value: Tensor, dtype: _dtypes.DType) -> Tensor:
    """``value`` rounded to ``dtype``; what is beyond its range becomes infinite (without the
    backend's warning of an overflow in the cast)."""
    if value.dtype == dtype:
        return value
    info = finfo(dtype)
    # Halfway between the largest float of dtype and the next power of two: from there on
    # rounding gives inf.
    beyond = info.max + info.max * info.eps / (2 * (2 - info.eps))
    if beyond < finfo(value.dtype).max:
        infinite = _ops.where(value > 0, math.inf, -math.inf)
        value = _ops.where(_ops.abs(value) >= beyond, infinite, value)
    return _ops.astype(value, dtype)
