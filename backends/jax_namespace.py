"""The JAX backend's Array API namespace: ``jax.numpy``, with products at full precision.

On GPUs and TPUs, JAX computes float32 matrix products at reduced precision
unless asked otherwise (TF32 on NVIDIA GPUs since Ampere: a 10-bit mantissa).
On an H100 that put float32 ``conv2d`` results, which plugrad computes with
``matmul``, up to 0.8 % away from NumPy's, and a complex float32 ``cholesky``
(which XLA builds from products) up to 0.04 %, where every other backend is
within float32's rounding. Here ``matmul``, ``tensordot`` and ``vecdot`` ask for
``Precision.HIGHEST``, and every ``linalg`` function runs under
``jax.default_matmul_precision("highest")``, as NumPy, CuPy and PyTorch's
``matmul`` compute float32 products in float32. On the CPU this changes nothing.
``cumulative_sum`` and ``cumulative_prod`` of small integers widen to the default
integer dtype of their kind, as the standard says (``jax.numpy``'s kept ``int8``, in
which a running product of 100s wrapped). ``asarray`` never gives a weakly typed array,
and ``linalg.cholesky``, ``eigh`` and ``eigvalsh`` read the lower triangle alone.
``moveaxis`` refuses an axis named twice, which ``jax.numpy``'s moved to a wrong shape.
Every other name is ``jax.numpy``'s own.
"""

from __future__ import annotations

import builtins
import functools
import types
from collections.abc import Callable
from typing import Any

import jax as _jax
import jax.numpy as _jnp
from jax.numpy import *  # noqa: F403
from jax.numpy import __array_api_version__, __array_namespace_info__  # noqa: F401

_HIGHEST = _jax.lax.Precision.HIGHEST

# The three products replace jax.numpy's; mypy sees the clash only where jax is
# installed, hence no-redef with unused-ignore.


def matmul(x1: Any, x2: Any, /) -> Any:  # type: ignore[no-redef, unused-ignore]
    return _jnp.matmul(x1, x2, precision=_HIGHEST)


def tensordot(x1: Any, x2: Any, /, *, axes: Any = 2) -> Any:  # type: ignore[no-redef, unused-ignore]
    return _jnp.tensordot(x1, x2, axes=axes, precision=_HIGHEST)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:  # type: ignore[no-redef, unused-ignore]
    return _jnp.vecdot(x1, x2, axis=axis, precision=_HIGHEST)


def asarray(  # type: ignore[no-redef, unused-ignore]
    obj: Any, /, *, dtype: Any = None, device: Any = None, copy: bool | None = None
) -> Any:
    """``jax.numpy.asarray``, never weakly typed: an array made from a Python number is, and
    then takes another operand's dtype (``int8 + tensor(100)`` stayed int8 and wrapped), where
    a tensor's dtype is its own."""
    out = _jnp.asarray(obj, dtype=dtype, device=device, copy=copy)
    if getattr(out, "weak_type", False):
        out = _jnp.asarray(out, dtype=out.dtype)
    return out


def moveaxis(x: Any, source: Any, destination: Any, /) -> Any:  # type: ignore[no-redef, unused-ignore]
    """``jax.numpy.moveaxis``, refusing an axis named twice (JAX's moved the axes to a
    shape no other library gives, where NumPy and PyTorch refuse)."""
    for axes in (source, destination):
        if isinstance(axes, tuple | list) and len(axes) > 1:
            n = builtins.max(x.ndim, 1)
            if builtins.len({a % n if -n <= a < n else a for a in axes}) != builtins.len(axes):
                raise ValueError(f"moveaxis(): repeated axis in {tuple(axes)}")
    return _jnp.moveaxis(x, source, destination)


def _widening_integers(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` (a running sum or product) in the standard's default dtype for integers."""

    @functools.wraps(function)
    def call(
        x: Any, /, *, axis: Any = None, dtype: Any = None, include_initial: bool = False
    ) -> Any:
        if dtype is None and _jnp.issubdtype(x.dtype, _jnp.integer):
            signed = __array_namespace_info__().default_dtypes()["integral"]
            if _jnp.issubdtype(x.dtype, _jnp.signedinteger):
                dtype = signed
            else:
                dtype = _jnp.uint64 if signed == _jnp.int64 else _jnp.uint32
        return function(x, axis=axis, dtype=dtype, include_initial=include_initial)

    return call


cumulative_sum = _widening_integers(_jnp.cumulative_sum)
cumulative_prod = _widening_integers(_jnp.cumulative_prod)


def _at_full_precision(function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        with _jax.default_matmul_precision("highest"):
            return function(*args, **kwargs)

    return call


_READING_ONE_TRIANGLE = frozenset({"cholesky", "eigh", "eigvalsh"})


class _FullPrecisionModule(types.ModuleType):
    """A module whose functions are ``module``'s, each run at full product precision."""

    def __init__(self, module: types.ModuleType) -> None:
        super().__init__(module.__name__, module.__doc__)
        self._module = module

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._module, name)
        if name in _READING_ONE_TRIANGLE:
            # As NumPy and PyTorch, from the lower triangle alone: JAX's average the matrix
            # with its transpose first, which changes the answer for one that is not symmetric.
            value = functools.partial(value, symmetrize_input=False)
        if callable(value) and not isinstance(value, type):
            value = _at_full_precision(value)
        setattr(self, name, value)  # wrapped once
        return value

    def __dir__(self) -> list[str]:
        return dir(self._module)


linalg = _FullPrecisionModule(_jnp.linalg)
