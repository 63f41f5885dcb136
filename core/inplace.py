"""In-place operations (``x += y``, ``x.zero_()``, ...) made safe for autograd.

When the operation must be recorded, it is computed out of place and the
tensor is *rebased* onto the result: its data and ``grad_fn`` become the new
ones, and no memory a backward pass saved is overwritten. When nothing is
recorded (``no_grad``, or no tensor involved requires grad) the data is
overwritten in place where the backend allows it, so a parameter update
keeps its memory. Either way the tensor's version goes up, and a backward
pass that saved the old value raises
:class:`~plugrad.errors.InPlaceModificationError` instead of using wrong data.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .errors import BackwardError, DtypeError, ShapeError
from .grad_mode import _state
from .tensor import Tensor, _wrap

__all__ = ["apply_inplace"]

# Backends whose arrays are immutable (e.g. JAX) refuse item assignment with one of these.
_IMMUTABLE = (TypeError, ValueError, AttributeError, NotImplementedError, RuntimeError)


def apply_inplace(
    target: Tensor, function: Callable[..., Tensor], *args: Any, name: str = "in-place op"
) -> Tensor:
    """Make ``target`` hold ``function(target, *args)``; return ``target``."""
    recording = _state.enabled and (
        target._requires_grad or any(isinstance(a, Tensor) and a._requires_grad for a in args)
    )
    if recording:
        if target._edge is None and target._requires_grad:
            raise BackwardError(
                f"{name} on a leaf tensor that requires grad (shape {target.shape}) would change "
                "the very value gradients are taken with respect to. Do it inside "
                "plugrad.no_grad() (e.g. for a parameter update), or write x = x + y to make "
                "a new tensor."
            )
        # The recorded op saves this stand-in for the old value, not the tensor we rebase.
        before = _wrap(target._array, target._device, target._requires_grad, target._edge)
        result = function(before, *args)
        _check_result(target, result, name, recording=True)
        target._array = result._array
        target._edge = result._edge
        target._requires_grad = result._requires_grad
    else:
        previous = _state.enabled
        _state.enabled = False
        try:
            result = function(target, *args)
        finally:
            _state.enabled = previous
        array = _check_result(target, result, name, recording=False)
        try:
            target._array[...] = array
        except _IMMUTABLE:
            target._array = array
    target._bump_version()
    return target


def _check_result(target: Tensor, result: Tensor, name: str, *, recording: bool) -> Any:
    """Return the result's array, cast to ``target``'s dtype if that loses no kind."""
    if result.shape != target.shape:
        raise ShapeError(
            f"{name} would give shape {result.shape}, but the tensor it modifies has shape "
            f"{target.shape}; an in-place op cannot change the shape (the other operand "
            "must broadcast to it)"
        )
    array = result._array
    if result.dtype is target.dtype:
        return array
    if result.dtype.kind != target.dtype.kind or recording:
        raise DtypeError(
            f"{name} would give {result.dtype.name} values, which a {target.dtype.name} tensor "
            f"cannot hold{' while gradients are recorded' if recording else ''}; convert one "
            "operand first, or write x = x + y to make a new tensor"
        )
    device = target._device
    return device.xp.astype(array, device.native_dtype(target.dtype))
