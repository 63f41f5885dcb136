"""Clipping gradients in place: by their total norm, or elementwise by value."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable
from typing import Any

from ... import dtypes as _dtypes
from ... import ops
from ...creation import asarray
from ...errors import ArgumentError, InvalidArgumentError
from ...grad_mode import no_grad
from ...tensor import Tensor

__all__ = [
    "clip_grad_norm",
    "clip_grad_norm_",
    "clip_grad_value_",
    "clip_grads_with_norm_",
    "get_total_norm",
]


def _grads(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    """The gradients of the parameters that have one."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    found = []
    for position, p in enumerate(parameters):
        if not isinstance(p, Tensor):
            raise ArgumentError(
                f"parameters must be Tensors; item {position} is {type(p).__name__}"
            )
        if p.grad is not None:
            found.append(p.grad)
    return found


def get_total_norm(
    tensors: Tensor | Iterable[Tensor],
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """The ``norm_type``-norm of the tensors' norms: for the other orders, that of all their
    elements, as if concatenated into one vector.

    Any order :func:`plugrad.linalg.vector_norm` takes: ``inf`` gives the
    largest absolute value, ``-inf`` the smallest, ``0`` the number of tensors
    with a non-zero element (PyTorch's, not the number of elements). Half-precision
    tensors are summed in ``float32`` (their squares overflow ``float16`` from
    about 256), and the result has the tensors' common dtype. ``foreach`` is
    accepted as PyTorch's (there is one way to compute it here).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.utils import get_total_norm
    >>> get_total_norm([plugrad.tensor([3.0]), plugrad.tensor([4.0])])
    tensor(5.)
    """
    norm_type = float(norm_type)
    if math.isnan(norm_type):
        raise InvalidArgumentError("norm_type must be a number or +-inf, got nan")
    if isinstance(tensors, Tensor):
        tensors = [tensors]
    tensors = list(tensors)
    for position, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise ArgumentError(
                f"get_total_norm() takes Tensors; item {position} is {type(t).__name__}"
            )
    with no_grad():
        if not tensors:
            return asarray(0.0)
        per_tensor = ops.stack([ops.vector_norm(t, ord=norm_type) for t in tensors])
        # PyTorch's: the norm of the tensors' norms, of the same order. For order 0 that is
        # how many tensors have a nonzero element (not how many elements are nonzero).
        total = ops.vector_norm(per_tensor, ord=norm_type)
        if error_if_nonfinite and not bool(ops.isfinite(total)):
            raise InvalidArgumentError(
                f"the total {norm_type}-norm of the gradients is {float(total)}, so they cannot be "
                "clipped by it; pass error_if_nonfinite=False to scale by it anyway"
            )
    return total


def clip_grads_with_norm_(
    parameters: Tensor | Iterable[Tensor],
    max_norm: float,
    total_norm: Tensor | float,
    foreach: bool | None = None,
) -> None:
    """Scale the gradients in place by ``min(1, max_norm / (total_norm + 1e-6))``.

    ``total_norm`` is what :func:`get_total_norm` gave for them (computed apart,
    for instance summed over processes first).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.utils import clip_grads_with_norm_
    >>> w = plugrad.tensor([3.0, 4.0], requires_grad=True)
    >>> (w * w).sum().backward()
    >>> clip_grads_with_norm_([w], 1.0, 10.0)
    >>> [round(v, 4) for v in w.grad.tolist()]
    [0.6, 0.8]
    """
    max_norm = float(max_norm)
    grads = _grads(parameters)
    with no_grad():
        if isinstance(total_norm, Tensor):
            if total_norm.dtype == _dtypes.float16:  # max_norm / 1e-6 overflows float16
                total_norm = ops.astype(total_norm, _dtypes.float32)
            scale: Tensor | float = ops.clip(max_norm / (total_norm + 1e-6), max=1.0)
        else:
            scale = min(1.0, max_norm / (float(total_norm) + 1e-6))
        for g in grads:
            # In the wider of the two dtypes, rounded once into the gradient's (a float16
            # gradient times a float16 scale rounded twice, a step off PyTorch's).
            g.copy_(g * scale)


def clip_grad_norm_(
    parameters: Tensor | Iterable[Tensor],
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Scale the gradients in place so that their total norm is at most ``max_norm``.

    The total norm is the ``norm_type``-norm of all gradients taken together, as
    if they were concatenated into one vector (``inf`` for the largest absolute
    value): :func:`get_total_norm`. Gradients are multiplied by
    ``min(1, max_norm / (total + 1e-6))``: :func:`clip_grads_with_norm_`.

    Parameters
    ----------
    parameters : Tensor or iterable of Tensor
        Tensors whose ``.grad`` is clipped; those without a gradient are skipped.
    max_norm : float
        The largest allowed total norm.
    norm_type : float
        The order of the norm (``2.0``, ``1.0``, ``float("inf")``, ...).
    error_if_nonfinite : bool
        Raise when the total norm is NaN or infinite instead of scaling by it.
    foreach : bool or None
        Accepted as PyTorch's; changes nothing.

    Returns
    -------
    Tensor
        The total norm before clipping (a 0-d tensor).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.utils import clip_grad_norm_
    >>> w = plugrad.tensor([3.0, 4.0], requires_grad=True)
    >>> (w * w).sum().backward()
    >>> clip_grad_norm_([w], max_norm=1.0)
    tensor(10.)
    >>> [round(v, 4) for v in w.grad.tolist()]
    [0.6, 0.8]
    """
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    parameters = list(parameters)
    grads = _grads(parameters)
    total = get_total_norm(grads, norm_type, error_if_nonfinite)
    if grads:
        clip_grads_with_norm_(parameters, max_norm, total)
    return total


def clip_grad_value_(
    parameters: Tensor | Iterable[Tensor], clip_value: float, foreach: bool | None = None
) -> None:
    """Clip every gradient element into ``[-clip_value, clip_value]``, in place.

    ``foreach`` is accepted as PyTorch's (there is one way to clip here).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.utils import clip_grad_value_
    >>> w = plugrad.tensor([1.0, -3.0], requires_grad=True)
    >>> (w * w).sum().backward()
    >>> clip_grad_value_([w], 1.5)
    >>> w.grad
    tensor([ 1.5000, -1.5000])
    """
    clip_value = float(clip_value)
    if clip_value < 0 or math.isnan(clip_value):
        raise InvalidArgumentError(f"clip_value must be a non-negative number, got {clip_value}")
    with no_grad():
        for g in _grads(parameters):
            g.copy_(ops.clip(g, -clip_value, clip_value))


def clip_grad_norm(*args: Any, **kwargs: Any) -> Tensor:
    """PyTorch's deprecated name of :func:`clip_grad_norm_` (with its warning)."""
    warnings.warn(
        "clip_grad_norm is deprecated in favour of clip_grad_norm_ (PyTorch's too)",
        FutureWarning,
        stacklevel=2,
    )
    return clip_grad_norm_(*args, **kwargs)
