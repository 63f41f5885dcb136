"""PyTorch's functions that build complex tensors from real ones and take them apart.

:func:`complex`, :func:`polar`, :func:`view_as_complex` and :func:`view_as_real`
(what rotary position embeddings call), and the conjugation methods of PyTorch's
lazy conjugate bit (``is_conj``, ``resolve_conj``, ``conj_physical``, ...). Every
result is differentiable in its inputs. Each returns a new tensor: plugrad's
complex tensors have no real view of their memory, so ``view_as_real(z)`` is a copy,
and conjugation is never lazy. Where PyTorch's result is a view (``view_as_real``,
``view_as_complex``, ``z.conj()``), a write into plugrad's copy would not reach ``z``:
it is refused (:class:`~plugrad.errors.ViewCopyError`), as is a write into a tensor
sharing the copy's memory.
"""

from __future__ import annotations

import builtins
from typing import Any

from . import autocast_mode as _autocast
from . import complex_parts
from . import dtypes as _dtypes
from . import graph as _graph
from . import ops as _ops
from .errors import ArgumentError, DtypeError, ShapeError
from .function import Function, FunctionCtx
from .inplace import apply_inplace, takes_out
from .tensor import Tensor, install_methods
from .versions import mark_copy_of_view

__all__ = [
    "conj_physical",
    "conj_physical_",
    "polar",
    "resolve_conj",
    "resolve_neg",
    "view_as_complex",
    "view_as_real",
]
# plugrad.complex is there too, but not in __all__: a star import must not shadow Python's.

_COMPLEX_OF = {"float32": _dtypes.complex64, "float64": _dtypes.complex128}


def _parts(function: str, first: Tensor, second: Tensor, names: str) -> _dtypes.DType:
    """The complex dtype of two real tensors of one dtype; refuses anything else."""
    for name, value in zip(names.split(), (first, second), strict=True):
        if not isinstance(value, Tensor):
            raise ArgumentError(
                f"{function}(): {name} must be a Tensor, got {type(value).__name__}"
            )
    if first.dtype != second.dtype:
        raise DtypeError(
            f"{function}(): {names.replace(' ', ' and ')} must have one dtype, got "
            f"{first.dtype.name} and {second.dtype.name}; convert one (x.to(y.dtype))"
        )
    dtype = _COMPLEX_OF.get(first.dtype.name)
    if dtype is None:
        raise DtypeError(
            f"{function}(): takes float32 or float64 tensors (complex64 or complex128 "
            f"results), got {first.dtype.name}"
        )
    return dtype


def _assembled(real: Tensor, imag: Tensor, dtype: _dtypes.DType) -> Tensor:
    if real.shape != imag.shape:
        real, imag = _ops.broadcast_arrays(real, imag)
    return _FromParts.apply(real, imag, dtype)


class _FromParts(Function):
    """``real + imag * 1j`` made exactly (signed zeros, infinities: see complex_parts),
    with the gradient ``(real(g), imag(g))`` of that linear map."""

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any) -> Tensor:
        real, imag, dtype = args
        return complex_parts.assembled(_graph.tensor_namespace, real, imag, dtype)

    @staticmethod
    def backward(ctx: FunctionCtx, *grad_outputs: Tensor) -> tuple[Tensor, Tensor, None]:
        (grad,) = grad_outputs
        return _ops.real(grad), _ops.imag(grad), None


@takes_out
def complex(real: Tensor, imag: Tensor) -> Tensor:
    """Return ``real + imag * 1j`` (PyTorch's ``torch.complex``), broadcasting the two.

    Both are ``float32`` (a ``complex64`` result) or both ``float64`` (``complex128``).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.complex(plugrad.tensor([1.0, 2.0]), plugrad.tensor([3.0, -4.0]))
    tensor([1.+3.j, 2.-4.j])
    """
    return _assembled(real, imag, _parts("complex", real, imag, "real imag"))


@_autocast.listed("polar")
@takes_out
def polar(abs: Tensor, angle: Tensor) -> Tensor:
    """Return the complex numbers of modulus ``abs`` and argument ``angle``:
    ``abs * (cos(angle) + sin(angle) * 1j)`` (PyTorch's ``torch.polar``).

    Examples
    --------
    >>> import math
    >>> import plugrad
    >>> plugrad.polar(plugrad.tensor([2.0]), plugrad.tensor([math.pi / 2])).imag
    tensor([2.])
    """
    dtype = _parts("polar", abs, angle, "abs angle")
    return _assembled(abs * _ops.cos(angle), abs * _ops.sin(angle), dtype)


@_autocast.listed("view_as_complex")
def view_as_complex(input: Tensor) -> Tensor:
    """Read a real tensor whose last dimension holds ``(real, imag)`` pairs as complex
    numbers: shape ``(..., 2)`` to ``(...)``.
    A copy in plugrad, which refuses in-place changes (see the module's note).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.view_as_complex(plugrad.tensor([[1.0, 2.0], [3.0, 4.0]]))
    tensor([1.+2.j, 3.+4.j])
    """
    if not isinstance(input, Tensor):
        raise ArgumentError(f"view_as_complex() takes a Tensor, got {type(input).__name__}")
    if input.ndim == 0 or input.shape[-1] != 2:
        raise ShapeError(
            f"view_as_complex() takes a tensor whose last dimension has size 2 (real and "
            f"imaginary parts), got shape {input.shape}; reshape it to (..., 2) first"
        )
    real, imag = input[..., 0], input[..., 1]
    result = _assembled(real, imag, _parts("view_as_complex", real, imag, "input input"))
    return mark_copy_of_view(result, "view_as_complex()", input)


def view_as_real(input: Tensor) -> Tensor:
    """Return a complex tensor's real and imaginary parts as a last dimension of size 2:
    shape ``(...)`` to ``(..., 2)``.
    A copy in plugrad, which refuses in-place changes (see the module's note).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.view_as_real(plugrad.tensor([1 + 2j, 3 - 4j]))
    tensor([[ 1.,  2.],
            [ 3., -4.]])
    """
    if not isinstance(input, Tensor):
        raise ArgumentError(f"view_as_real() takes a Tensor, got {type(input).__name__}")
    if input.dtype.kind != "complex floating":
        raise DtypeError(
            f"view_as_real() takes a complex tensor, got {input.dtype.name}; for a real "
            "tensor, x[..., None] adds the last dimension"
        )
    result = _ops.stack([_ops.real(input), _ops.imag(input)], axis=-1)
    return mark_copy_of_view(result, "view_as_real()", input)


@takes_out
def conj_physical(input: Tensor) -> Tensor:
    """The complex conjugate, computed now (as every conjugate in plugrad is)."""
    return _ops.conj(input)


def conj_physical_(input: Tensor) -> Tensor:
    """:func:`conj_physical` in place (``x.conj_physical_()``); a real tensor stays as it is.

    Examples
    --------
    >>> import plugrad
    >>> z = plugrad.tensor([1 + 2j, -3j])
    >>> plugrad.conj_physical_(z)
    tensor([1.-2.j, -0.+3.j])
    """
    if not isinstance(input, Tensor):
        raise ArgumentError(
            f"conj_physical_() changes a tensor in place, so input must be a Tensor, not "
            f"{type(input).__name__}; for a new result, call conj_physical() instead"
        )
    return apply_inplace(input, _ops.conj, name="conj_physical_()")


def resolve_conj(input: Tensor) -> Tensor:
    """``input`` itself: plugrad's conjugates are never lazy, so there is nothing to resolve."""
    return input


def resolve_neg(input: Tensor) -> Tensor:
    """``input`` itself: plugrad's negations are never lazy, so there is nothing to resolve."""
    return input


def _never_lazy(self: Tensor) -> bool:
    """False: plugrad conjugates and negates when asked, never lazily (PyTorch's bits)."""
    return False


def _with_part(self: Tensor, value: Tensor | builtins.complex, part: str) -> None:
    """``x.real = value`` and ``x.imag = value`` (PyTorch's): ``value`` written into one part.

    The whole tensor is written, as the other part and the new one put together, so
    gradients reach both and every backend can do it (JAX's views are copies).
    """
    if self.dtype.kind != "complex floating":
        if part == "imag":
            _ = self.imag  # refused, in the attribute's words
        self.copy_(value)
        return
    parts = {"real": _ops.real(self), "imag": _ops.imag(self)}
    replaced = parts[part].clone()
    replaced.copy_(value)  # (value's shape and dtype checked before anything is written)
    parts[part] = replaced
    self.copy_(_assembled(parts["real"], parts["imag"], self.dtype))


def _set_real(self: Tensor, value: Tensor | builtins.complex) -> None:
    _with_part(self, value, "real")


def _set_imag(self: Tensor, value: Tensor | builtins.complex) -> None:
    _with_part(self, value, "imag")


_REAL, _IMAG = vars(Tensor)["real"], vars(Tensor)["imag"]

install_methods(
    real=property(_REAL.fget, _set_real, doc=_REAL.__doc__),
    imag=property(_IMAG.fget, _set_imag, doc=_IMAG.__doc__),
    conj_physical=conj_physical,
    conj_physical_=conj_physical_,
    resolve_conj=resolve_conj,
    resolve_neg=resolve_neg,
    is_conj=_never_lazy,
    is_neg=_never_lazy,
)
