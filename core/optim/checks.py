"""Checks of what optimizers are given: option values, and per-parameter state to load.

Each optimizer's ``_check_options`` and ``_check_state`` are made of these;
they raise ``TypeError`` or ``ValueError`` with a message that names the
option or state entry and the value found.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from ..errors import ArgumentError, InvalidArgumentError, checked_bool, type_name
from ..tensor import Tensor

__all__ = [
    "check_betas",
    "check_compatibility_flags",
    "check_flag",
    "check_int",
    "check_number",
    "check_options",
    "check_state",
]


def check_options(group: Mapping[str, Any], numbers: Iterable[str], flags: Iterable[str]) -> None:
    """Raise unless each option of ``numbers`` is a number >= 0 and each of ``flags`` a bool."""
    for key in numbers:
        check_number(key, group[key])
    for key in flags:
        check_flag(key, group[key])


def check_state(
    optimizer: str,
    param: Tensor,
    state: Mapping[str, Any],
    *,
    buffers: Collection[str] = (),
    optional: Collection[str] = (),
    counts_steps: bool = True,
    numbers: Collection[str] = (),
    shaped: Mapping[str, tuple[int, ...]] | None = None,
) -> None:
    """Raise unless ``state`` can be the state of ``param`` for ``optimizer`` (its name).

    That is: empty (not stepped yet), or a ``step`` that counts (where
    ``counts_steps``), a tensor shaped like the parameter for each of
    ``buffers`` and for those of ``optional`` present, a real number for each
    of ``numbers``, a tensor of the given shape for each of ``shaped`` (buffers
    shaped otherwise than the parameter), and nothing else.
    """
    shaped = shaped or {}
    buffers = [*buffers, *shaped]
    needed = {"step", *buffers, *numbers} if counts_steps else {*buffers, *numbers}
    known = needed | set(optional)
    unknown = set(state) - known
    if unknown:
        raise InvalidArgumentError(
            f"{optimizer} keeps {sorted(known)} per parameter, not {sorted(unknown)}"
        )
    if not state:
        return
    missing = needed - set(state)
    if missing:
        raise InvalidArgumentError(f"the {optimizer} state of a parameter lacks {sorted(missing)}")
    step = state.get("step", 0)
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise ArgumentError(f"{optimizer} state 'step' must be an int >= 0, got {step!r}")
    for key in buffers:
        _check_buffer(param, key, state[key], shaped.get(key))
    for key in numbers:
        value = state[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ArgumentError(f"{optimizer} state {key!r} must be a number, got {value!r}")
    for key in optional:
        if state.get(key) is not None:
            _check_buffer(param, key, state[key])


def check_number(
    name: str, value: Any, *, at_least: float = 0.0, below: float | None = None
) -> None:
    """Raise unless ``value`` is a real number with ``at_least <= value`` (``< below``):
    a Python or NumPy number, or a 0-d real tensor (read at each step, as PyTorch's)."""
    if isinstance(value, Tensor) and value.ndim == 0 and value.dtype.kind != "complex floating":
        value = value.item()
    elif isinstance(value, numbers.Real) and type(value).__module__ == "numpy":
        value = value.item()  # type: ignore[attr-defined]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ArgumentError(f"{name} must be a number, got {value!r} ({type(value).__name__})")
    if math.isnan(value) or value < at_least or (below is not None and value >= below):
        bounds = f"at least {at_least}" + (f" and below {below}" if below is not None else "")
        raise InvalidArgumentError(f"{name} must be {bounds}, got {value!r}")


def check_int(name: str, value: Any, *, at_least: int) -> None:
    """Raise ``ValueError`` unless ``value`` is an int (a NumPy one too, not a bool) with
    ``value >= at_least``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < at_least:
        raise InvalidArgumentError(f"{name} must be an int >= {at_least}, got {value!r}")


def integral(name: str, value: Any, *, at_least: int) -> int:
    """``value`` as an int >= ``at_least``: an int, or a float with an integral value
    (PyTorch's schedulers take ``StepLR(opt, 1.0)``); ``ValueError`` otherwise."""
    if isinstance(value, numbers.Real) and not isinstance(value, (bool, numbers.Integral)):
        number = float(value)
        if math.isfinite(number) and number.is_integer():
            value = int(number)
    check_int(name, value, at_least=at_least)
    return int(value)


def check_flag(name: str, value: Any) -> None:
    """Raise unless ``value`` is a bool."""
    checked_bool(name, value)


def check_betas(optimizer: str, betas: Any) -> None:
    """Raise unless ``betas`` is a pair of numbers, each in ``[0, 1)``."""
    if not isinstance(betas, tuple | list) or len(betas) != 2:
        raise ArgumentError(f"{optimizer} betas must be a pair (beta1, beta2), got {betas!r}")
    check_number("betas[0]", betas[0], below=1.0)
    check_number("betas[1]", betas[1], below=1.0)


def check_compatibility_flags(optimizer: str, group: Mapping[str, Any]) -> None:
    """Raise unless PyTorch's implementation switches of ``group`` are ones plugrad can honour.

    ``foreach``, ``fused`` (None or a bool) and ``capturable`` choose how PyTorch
    runs a step, not what it computes: plugrad accepts them and computes the same
    update. ``differentiable=True`` asks for a step autograd can differentiate
    through, which plugrad's steps (raw array updates) are not.
    """
    for key in ("foreach", "fused"):
        value = group.get(key)
        if value is not None and not isinstance(value, bool):
            raise ArgumentError(f"{key} must be None, True or False, got {value!r}")
    if group.get("foreach") and group.get("fused"):
        raise InvalidArgumentError(
            f"{optimizer} got foreach=True and fused=True: they choose between two ways of "
            "running a step; pass one of them"
        )
    for key in ("capturable", "differentiable"):
        if key in group:
            check_flag(key, group[key])
    if group.get("differentiable"):
        raise InvalidArgumentError(
            f"{optimizer} got differentiable=True, but plugrad's optimizer steps update the "
            "parameters outside autograd and cannot be differentiated through; pass "
            "differentiable=False, or write the update with tensor operations"
        )


def _check_buffer(
    param: Tensor, key: str, value: Any, shape: tuple[int, ...] | None = None
) -> None:
    """Raise unless ``value`` is a tensor shaped like ``param`` (or of ``shape``, if given)."""
    if not isinstance(value, Tensor):
        raise ArgumentError(
            f"state {key!r} of a parameter of shape {param.shape} must be a Tensor, got "
            f"{type_name(value)}"
        )
    if shape is not None and tuple(value.shape) != shape:
        raise InvalidArgumentError(
            f"state {key!r} has shape {value.shape} but must have shape {shape} for its "
            f"parameter of shape {param.shape}; the state dict belongs to other parameters"
        )
    if shape is None and value.shape != param.shape:
        raise InvalidArgumentError(
            f"state {key!r} has shape {value.shape} but its parameter has shape {param.shape}; "
            "the state dict belongs to other parameters"
        )
