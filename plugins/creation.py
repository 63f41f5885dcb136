"""Creation functions of the Array API that take tensors: ``tril``, ``triu``, ``meshgrid``.

PyTorch's ``diag`` (a vector's diagonal matrix, or a matrix's diagonal) rides
on ``tril``'s row.

The functions that make tensors from nothing (``zeros``, ``eye``, ``linspace``,
...) are not ops; they live in :mod:`plugrad.creation`.
"""

from __future__ import annotations

import numbers
from typing import Any

from plugrad.errors import ArgumentError, ShapeError
from plugrad.hookspecs import hookimpl
from plugrad.opdef import OpDef, as_int, collect_ops, op


def _triangle(name: str) -> Any:
    def triangle(xp: Any, x: Any, diagonal: int = 0, *, k: int | None = None) -> Any:
        if k is not None and diagonal != 0:
            raise ArgumentError(
                f"{name}() got both diagonal= and k=, which name the same argument (diagonal is "
                "PyTorch's name for k); pass only one"
            )
        # (a NumPy integer or a 0-d integer tensor as an int: the kernel takes ints)
        return getattr(xp, name)(x, k=as_int(diagonal if k is None else k))

    triangle.__doc__ = (
        f"PyTorch's ``{name}(x, diagonal=0)``: ``{name}(x, k=diagonal)``, the diagonal also "
        "given by position."
    )
    return triangle


def _triangle_kernel(name: str) -> Any:
    def kernel(xp: Any, x: Any, /, *, k: int = 0) -> Any:
        if isinstance(k, bool) or not isinstance(k, numbers.Integral):
            # (NumPy took 0.5: tril(x, 0.5) kept the whole matrix)
            raise ArgumentError(f"{name}(): the diagonal is an int, got {k!r}")
        # NumPy's tril of a vector builds a matrix from it; the standard and PyTorch take
        # matrices (in the last two dimensions) only.
        if x.ndim < 2:
            raise ShapeError(
                f"{name}() takes a tensor of at least 2 dimensions (matrices in the last two), "
                f"got shape {tuple(x.shape)}"
            )
        return getattr(xp, name)(x, k=k)

    kernel.__name__ = kernel.__qualname__ = f"_{name}"
    return kernel


def _diag(xp: Any, x: Any, diagonal: int = 0) -> Any:
    """PyTorch's ``diag(x, diagonal=0)``: a vector's diagonal matrix, or a matrix's diagonal.

    A 1-D ``x`` becomes the square matrix with ``x`` on diagonal ``diagonal``
    (above the main one if positive) and zeros elsewhere; a 2-D ``x`` gives
    its diagonal ``diagonal`` as a vector.
    """
    diagonal = as_int(diagonal)  # (a NumPy integer, a 0-d integer tensor: the ops record it)
    if x.ndim == 2:  # a copy, as PyTorch's (diagonal is a view; torch's positive returns it)
        return xp.asarray(xp.linalg.diagonal(x, offset=diagonal), copy=True)
    if x.ndim != 1:
        raise ShapeError(f"diag() takes a 1-D or 2-D tensor, got shape {tuple(x.shape)}")
    offset = abs(diagonal)
    size = x.shape[0] + offset
    padded = xp.concat([x, xp.zeros(offset, dtype=x.dtype, device=x.device)]) if offset else x
    # Above the main diagonal, row i holds x[i]; below it, column j holds x[j].
    along = xp.expand_dims(padded, axis=1 if diagonal >= 0 else 0)
    # NOTE: where, not a product with eye: inf * 0 would put NaN off the diagonal.
    on_diagonal = xp.eye(size, k=diagonal, dtype=xp.bool, device=x.device)
    return xp.where(on_diagonal, along, xp.zeros((), dtype=x.dtype, device=x.device))


def _meshgrid(xp: Any, *arrays: Any, indexing: str = "xy") -> Any:
    for position, array in enumerate(arrays):
        if array.ndim > 1:  # NumPy would flatten it
            raise ShapeError(
                f"meshgrid() takes 1-D (or 0-D) tensors; tensor {position} has shape "
                f"{tuple(array.shape)} (flatten it first if that is meant)"
            )
    # The standard (and JAX) take 1-D arrays only: a 0-D one is its one element.
    arrays = tuple(xp.reshape(a, (1,)) if a.ndim == 0 else a for a in arrays)
    return xp.meshgrid(*arrays, indexing=indexing)


def _meshgrid_grad(xp: Any, g: Any, ans: Any, arrays: tuple[Any, ...], *, indexing: str) -> Any:
    # Each grid repeats its array along every axis but one: sum the others away (a 0-D
    # array's axis, of length 1, back to no axis).
    grads = []
    for i, gi in enumerate(g):
        keep = 1 - i if indexing == "xy" and len(arrays) >= 2 and i < 2 else i
        others = tuple(d for d in range(gi.ndim) if d != keep)
        summed = xp.sum(gi, axis=others) if others else gi
        grads.append(xp.reshape(summed, ()) if arrays[i].ndim == 0 else summed)
    return grads


# fmt: off
tril = op("tril", _triangle_kernel("tril"), vjp=lambda xp, g, ans, x, *, k: xp.tril(g, k=k),
          methods={"tril": _triangle("tril"), "diag": _diag}, aliases={"diag": _diag},
          torch_function=_triangle("tril"), inplace=("tril",),
          doc="The lower triangle (on and below diagonal ``k``) of the last two axes; 0 above.")
triu = op("triu", _triangle_kernel("triu"), vjp=lambda xp, g, ans, x, *, k: xp.triu(g, k=k),
          methods={"triu": _triangle("triu")}, torch_function=_triangle("triu"), inplace=True,
          doc="The upper triangle (on and above diagonal ``k``) of the last two axes; 0 below.")
# The rule reads how many arrays there are and which are 0-D.
meshgrid = op("meshgrid", _meshgrid, vjp=_meshgrid_grad, multiple_outputs=True, paired_outputs=True,
              doc="Coordinate grids from 1-D tensors, indexed 'xy' (Cartesian) or 'ij'.")
# fmt: on


@hookimpl
def plugrad_ops() -> list[OpDef]:
    return collect_ops(globals())
