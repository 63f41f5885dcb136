"""Array helpers of the optimizers' update steps: gradients, state tensors, in-place writes.

An update works on the raw backend arrays with the backend's in-place
operators; these helpers keep that working where a library's arrays cannot be
written in place (e.g. JAX), and round as PyTorch's in-place operations do.
"""

from __future__ import annotations

from typing import Any

from .. import complex_parts
from .. import dtypes as _dtypes
from ..tensor import Tensor, _wrap

__all__ = [
    "as_scalar_state",
    "complex_from_pairs",
    "decay_and_add_",
    "full_state",
    "gradients_to_descend",
    "is_complex",
    "lerp_",
    "lerp_rounding",
    "overwrite",
    "real_pairs",
    "state_tensor",
    "zeros_state",
]

# Libraries whose arrays cannot be written in place (e.g. JAX) refuse with one of these.
_IMMUTABLE = (TypeError, ValueError, AttributeError, NotImplementedError, RuntimeError)


def gradients_to_descend(group: dict[str, Any]) -> list[tuple[Tensor, Any, Any]]:
    """For each parameter of ``group`` that has a gradient: it, its array, and what it descends.

    That is the gradient, negated for ``maximize``, plus ``weight_decay`` times
    the parameter where that is an L2 penalty (a group without
    ``weight_decay``, or with ``decoupled_weight_decay``, adds nothing): the
    gradient's own array when neither applies (read it, do not change it).
    The adaptive optimizers start their step from it.
    """
    maximize = group["maximize"]
    weight_decay = 0 if group.get("decoupled_weight_decay") else group.get("weight_decay", 0)
    steps = []
    for param in group["params"]:
        grad = param._grad
        if grad is None:
            continue
        array = param._array
        g = -grad._array if maximize else grad._array
        if weight_decay:
            g = g + weight_decay * array
        steps.append((param, array, g))
    return steps


def overwrite(xp: Any, buffer: Any, values: Any) -> Any:
    """Write ``values`` into ``buffer`` and return it; a copy of ``values`` if it cannot be written.

    Lets an update reuse one work array instead of allocating a temporary per
    operation. ``buffer`` cannot be written when the library's arrays are
    immutable, or when it is a NumPy scalar (what NumPy gives for arithmetic on
    0-d arrays).
    """
    try:
        buffer[...] = values
    except _IMMUTABLE:
        # NOTE: not `values` itself: in-place operators on it would change the caller's array.
        return xp.asarray(values, copy=True)
    return buffer


def decay_and_add_(tensor: Tensor, decay: float, addend: Any) -> Any:
    """Multiply ``tensor``'s array by ``decay`` and add ``addend``: a running average's update.

    In place where the library's arrays allow it (``tensor`` gets the new
    array where they do not); returns the updated array.
    """
    values = tensor._array
    values *= decay
    values += addend
    tensor._array = values
    return values


def state_tensor(param: Tensor, array: Any) -> Tensor:
    """``array`` as a tensor of ``param``'s state: on its device, recording nothing for autograd."""
    return _wrap(array, param._device, False, None)


def zeros_state(param: Tensor) -> Tensor:
    """A state tensor of zeros shaped like ``param``: a running average before its first update."""
    return state_tensor(param, param._device.xp.zeros_like(param._array))


def full_state(param: Tensor, value: float) -> Tensor:
    """A state tensor shaped like ``param``, every entry ``value`` (a step size, a sum's start).

    For a complex parameter both parts are ``value``: its real and imaginary
    parts are stepped as two real numbers, as PyTorch's optimizers step them.
    """
    fill = complex(value, value) if is_complex(param) else value
    return state_tensor(param, param._device.xp.full_like(param._array, fill))


def is_complex(tensor: Tensor) -> bool:
    """Whether ``tensor`` has a complex dtype."""
    return tensor._device.dtype_of(tensor._array).kind == "complex floating"


def real_pairs(xp: Any, array: Any) -> Any:
    """A complex array as pairs of reals: shape ``(..., 2)``, the real then the imaginary part.

    The values PyTorch's ``view_as_real`` shows, as a new array: a
    write into it does not reach ``array`` (:func:`complex_from_pairs` writes back).
    """
    return xp.stack([xp.real(array), xp.imag(array)], axis=-1)


def complex_from_pairs(xp: Any, pairs: Any, dtype: Any) -> Any:
    """The complex array of (native) ``dtype`` from :func:`real_pairs`' layout, exact for
    infinite and NaN parts."""
    return complex_parts.assembled(xp, pairs[..., 0], pairs[..., 1], dtype)


def lerp_(xp: Any, buffer: Any, target: Any, weight: float, rest: float, small: bool) -> Any:
    """Move ``buffer`` toward ``target`` by ``weight``, in place where it can be; return it.

    Rounded as PyTorch's ``lerp_``: ``buffer + weight * (target - buffer)``
    for a weight below 0.5 (``small``, from :func:`lerp_rounding`), else
    ``target - (target - buffer) * rest`` where ``rest`` is ``1 - weight``.
    """
    work = target - buffer
    if small:
        work *= weight
        buffer += work
        return buffer
    work *= rest
    return overwrite(xp, buffer, target - work)


def lerp_rounding(weight: float) -> bool:
    """Which of its two formulas :func:`lerp_` uses for ``weight`` (True: the small one)."""
    return abs(weight) < 0.5


def as_scalar_state(value: float) -> float:
    """``value`` as PyTorch's 0-d float state tensors (ASGD's ``eta``, NAdam's
    ``mu_product``) hold it: rounded to float32, unless the default dtype is float64."""
    if _dtypes.default_float_dtype is _dtypes.float64:
        return value
    return _dtypes.rounded_to_float32(value)
