"""The named tuples that PyTorch's forms of ``max``, ``min``, ``sort``, ``svd``, ``topk``,
``qr``, ``triangular_solve`` and ``linalg.lstsq`` return.

``x.max(dim)`` returns ``max(values=..., indices=...)``: a tuple whose fields
have names, as PyTorch's ``torch.return_types.max``. The classes live here, at
a name ``pickle`` can find, so results can cross process boundaries.

Examples
--------
>>> import pickle
>>> import plugrad
>>> result = plugrad.tensor([[1.0, 3.0], [4.0, 2.0]]).max(1)
>>> result.indices
tensor([1, 0])
>>> pickle.loads(pickle.dumps(result)).values
tensor([3., 4.])
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = [
    "frexp",
    "geqrf",
    "histogram",
    "histogramdd",
    "linalg_cholesky_ex",
    "linalg_inv_ex",
    "linalg_lu",
    "linalg_lu_factor",
    "linalg_lu_factor_ex",
    "linalg_solve_ex",
    "lu_unpack",
    "linalg_lstsq",
    "max",
    "min",
    "mode",
    "qr",
    "sort",
    "svd",
    "topk",
    "triangular_solve",
]


class max(NamedTuple):  # PyTorch's names, in a namespace of their own
    """The maxima along an axis and the index of each."""

    values: Any
    indices: Any


class min(NamedTuple):
    """The minima along an axis and the index of each."""

    values: Any
    indices: Any


class mode(NamedTuple):
    """The most frequent value along an axis and the last index where it stands."""

    values: Any
    indices: Any


class sort(NamedTuple):
    """Sorted values and the index each came from."""

    values: Any
    indices: Any


class svd(NamedTuple):
    """``U``, ``S`` and ``V`` with ``input = U @ diag(S) @ V.mH`` (:func:`plugrad.svd`)."""

    U: Any
    S: Any
    V: Any


class qr(NamedTuple):
    """``Q`` with orthonormal columns and upper-triangular ``R``, ``input = Q @ R``."""

    Q: Any
    R: Any


class triangular_solve(NamedTuple):
    """The ``solution`` of a triangular system and a copy of its matrix."""

    solution: Any
    cloned_coefficient: Any


class topk(NamedTuple):
    """The ``k`` largest (or smallest) values and the index each came from."""

    values: Any
    indices: Any


class linalg_lstsq(NamedTuple):
    """The least-squares ``solution``, ``residuals``, ``rank`` and ``singular_values`` of
    :func:`plugrad.linalg.lstsq` (empty where PyTorch's default driver leaves them empty)."""

    solution: Any
    residuals: Any
    rank: Any
    singular_values: Any


class frexp(NamedTuple):
    """Each element as ``mantissa * 2**exponent`` (:func:`plugrad.frexp`)."""

    mantissa: Any
    exponent: Any


class histogram(NamedTuple):
    """The counts ``hist`` and the ``bin_edges`` of :func:`plugrad.histogram`."""

    hist: Any
    bin_edges: Any


class histogramdd(NamedTuple):
    """The counts ``hist`` and one tensor of ``bin_edges`` per dimension
    (:func:`plugrad.histogramdd`)."""

    hist: Any
    bin_edges: Any


class linalg_lu_factor(NamedTuple):
    """The packed ``LU`` factors and 1-based row interchanges ``pivots`` of
    :func:`plugrad.linalg.lu_factor`."""

    LU: Any
    pivots: Any


class linalg_lu_factor_ex(NamedTuple):
    """:func:`plugrad.linalg.lu_factor_ex`'s ``LU``, ``pivots`` and LAPACK's ``info``."""

    LU: Any
    pivots: Any
    info: Any


class linalg_lu(NamedTuple):
    """``P``, ``L``, ``U`` with ``A = P @ L @ U`` (:func:`plugrad.linalg.lu`)."""

    P: Any
    L: Any
    U: Any


class lu_unpack(NamedTuple):
    """``P``, ``L``, ``U`` unpacked from ``LU`` and ``pivots`` (:func:`plugrad.lu_unpack`)."""

    P: Any
    L: Any
    U: Any


class linalg_inv_ex(NamedTuple):
    """The ``inverse`` of :func:`plugrad.linalg.inv_ex` and LAPACK's ``info``."""

    inverse: Any
    info: Any


class linalg_solve_ex(NamedTuple):
    """The ``result`` of :func:`plugrad.linalg.solve_ex` and LAPACK's ``info``."""

    result: Any
    info: Any


class geqrf(NamedTuple):
    """The packed ``a`` (``R`` and the Householder vectors) and the ``tau`` of
    :func:`plugrad.geqrf`."""

    a: Any
    tau: Any


class linalg_cholesky_ex(NamedTuple):
    """The factor ``L`` of :func:`plugrad.linalg.cholesky_ex` and ``info``: 0 for each matrix
    factored, else the order of its first leading minor that is not positive definite."""

    L: Any
    info: Any
