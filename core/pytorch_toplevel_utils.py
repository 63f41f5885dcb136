"""PyTorch's small top-level functions: Tensor predicates, in-place methods and settings.

``torch.is_signed(x)``, ``torch.zero_(x)``, ``torch.fill(x, v)``, ``torch.range``, ... are
spelled here as PyTorch spells them; each is a Tensor method (or its out-of-place form) or a
process setting. The in-place functions of ops (``plugrad.exp_``) are made with the ops'
in-place methods instead (see :mod:`plugrad.function_generation`).
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, Any

from . import autocast_mode as _autocast
from . import dtypes as _dtypes
from . import linalg as _linalg
from .creation import arange, full
from .errors import ArgumentError, InvalidArgumentError
from .grad_mode import is_grad_enabled
from .tensor import Tensor

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .creation import CreationOptions

__all__ = [
    "detach_",
    "fill",
    "fill_",
    "frobenius_norm",
    "get_device",
    "get_num_interop_threads",
    "i0_",
    "index_put_",
    "is_conj",
    "is_inference",
    "is_neg",
    "is_signed",
    "is_warn_always_enabled",
    "ldexp_",
    "nuclear_norm",
    "range",
    "resize_as_",
    "set_flush_denormal",
    "set_num_interop_threads",
    "set_warn_always",
    "zero_",
]

#: The settings these functions record: they change nothing else (see each).
_settings: dict[str, Any] = {"interop_threads": 1, "warn_always": False}


def _tensor(function: str, input: Any) -> Tensor:
    if not isinstance(input, Tensor):
        raise ArgumentError(
            f"{function}(): input must be a Tensor, not {type(input).__name__}; "
            "make one with plugrad.tensor(...)"
        )
    return input


# -- predicates ---------------------------------------------------------------------------


def is_signed(input: Tensor) -> bool:
    """Whether the dtype of ``input`` holds negative numbers (``x.is_signed()``).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.is_signed(plugrad.tensor([1], dtype=plugrad.uint8))
    False
    """
    return _tensor("is_signed", input).is_signed()


def is_conj(input: Tensor) -> bool:
    """Whether ``input`` is a lazily conjugated view (``x.is_conj()``).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.is_conj(plugrad.tensor([1.0]))
    False
    """
    return _tensor("is_conj", input).is_conj()


def is_neg(input: Tensor) -> bool:
    """Whether ``input`` is a lazily negated view (``x.is_neg()``).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.is_neg(plugrad.tensor([1.0]))
    False
    """
    return _tensor("is_neg", input).is_neg()


def is_inference(input: Tensor) -> bool:
    """Whether ``input`` was made under :class:`plugrad.inference_mode` (``x.is_inference()``).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.is_inference(plugrad.tensor([1.0]))
    False
    """
    return _tensor("is_inference", input).is_inference()


def get_device(input: Tensor) -> int:
    """The index of the accelerator holding ``input``; ``-1`` on the CPU (``x.get_device()``).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.get_device(plugrad.tensor([1.0]))
    -1
    """
    return _tensor("get_device", input).get_device()


# -- the in-place methods that are no op's ------------------------------------------------


def detach_(input: Tensor) -> Tensor:
    """``input.detach_()``: make ``input`` a leaf that needs no gradient; returns it.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.detach_(plugrad.ones(1, requires_grad=True) * 2).requires_grad
    False
    """
    return _tensor("detach_", input).detach_()


def fill_(input: Tensor, value: Any) -> Tensor:
    """``input.fill_(value)``: set every element of ``input`` to ``value``; returns it.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.fill_(plugrad.zeros(2), 3.0)
    tensor([3., 3.])
    """
    return _tensor("fill_", input).fill_(value)


def zero_(input: Tensor) -> Tensor:
    """``input.zero_()``: set every element of ``input`` to zero; returns it.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.zero_(plugrad.ones(2))
    tensor([0., 0.])
    """
    return _tensor("zero_", input).zero_()


def index_put_(
    input: Tensor, indices: tuple[Tensor, ...], values: Tensor, accumulate: bool = False
) -> Tensor:
    """``input.index_put_(indices, values, accumulate)``; returns ``input``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.index_put_(plugrad.zeros(3), (plugrad.tensor([1]),), plugrad.tensor(5.0))
    tensor([0., 5., 0.])
    """
    return _tensor("index_put_", input).index_put_(indices, values, accumulate)


def i0_(input: Tensor) -> Tensor:
    """``input.i0_()``: the modified Bessel function of order 0, in place.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.i0_(plugrad.zeros(1))
    tensor([1.])
    """
    return _tensor("i0_", input).i0_()


def ldexp_(input: Tensor, other: Tensor) -> Tensor:
    """``input.ldexp_(other)``: ``input * 2 ** other``, in place.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.ldexp_(plugrad.ones(1), plugrad.tensor([3]))
    tensor([8.])
    """
    return _tensor("ldexp_", input).ldexp_(other)


def resize_as_(input: Tensor, the_template: Tensor) -> Tensor:
    """``input.resize_as_(the_template)``: give ``input`` the shape of ``the_template``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.resize_as_(plugrad.zeros(4), plugrad.zeros(2, 2)).shape
    (2, 2)
    """
    return _tensor("resize_as_", input).resize_as_(the_template)


# -- out-of-place forms and old names ----------------------------------------------------


def fill(input: Tensor, value: Any) -> Tensor:
    """A new tensor of the shape and dtype of ``input``, every element ``value``.

    ``value`` is a number or a tensor of no dims, as PyTorch's. The result takes
    gradients from ``value`` (a tensor) and, where ``input`` requires grad, gives
    it a zero gradient, as PyTorch's (``autograd.grad`` of it reaches ``input``).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.fill(plugrad.zeros(2), 7.0)
    tensor([7., 7.])
    """
    _tensor("fill", input)
    if isinstance(value, Tensor) and value.ndim != 0:
        raise InvalidArgumentError(
            f"fill(): value must be a number or a tensor of no dims, got shape {value.shape}; "
            "pick one element with value[i] or value.item()"
        )
    if input.requires_grad and is_grad_enabled():
        return input.clone().fill_(value)  # (in the graph: input's gradient is 0)
    if isinstance(value, Tensor):
        return value.to(dtype=input.dtype).expand(*input.shape).clone()
    return full(input.shape, value, dtype=input.dtype, device=input.device)


def range(
    start: Any,
    end: Any,
    step: Any = 1,
    **options: Unpack[CreationOptions],
) -> Tensor:
    """Deprecated: ``start, start + step, ...`` up to **and including** ``end``.

    Warns as PyTorch's does: :func:`plugrad.arange` stops before ``end``. The dtype
    is the default float dtype unless ``dtype=`` is given, whatever the arguments.

    Examples
    --------
    >>> import plugrad, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     plugrad.range(0, 2)
    tensor([0., 1., 2.])
    """
    warnings.warn(
        "plugrad.range is deprecated, as torch.range is: it includes end, unlike Python's "
        "range; use plugrad.arange, whose values are in [start, end)",
        UserWarning,
        stacklevel=2,
    )
    for name, number in (("start", start), ("end", end), ("step", step)):
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            raise ArgumentError(f"range(): {name} must be a number, got {number!r}")
    if step == 0 or not math.isfinite(step) or (end - start) * step < 0:
        raise InvalidArgumentError(
            f"range(): step {step!r} must be nonzero and go from start {start!r} to end {end!r}"
        )
    count = math.floor((end - start) / step) + 1
    dtype = options.pop("dtype", None) or _dtypes.default_float_dtype
    values = arange(count, **options).to(dtype=_dtypes.float64) * step + start
    return values.to(dtype=dtype)


@_autocast.listed("frobenius_norm")
def frobenius_norm(input: Tensor, dim: int | tuple[int, ...], keepdim: bool = False) -> Tensor:
    """Deprecated as PyTorch's: the 2-norm over ``dim``, ``linalg.vector_norm(input, 2, dim)``.

    Examples
    --------
    >>> import plugrad, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     plugrad.frobenius_norm(plugrad.tensor([[3.0, 4.0]]), (0, 1))
    tensor(5.)
    """
    warnings.warn(
        "frobenius_norm is deprecated, as PyTorch's: use plugrad.linalg.vector_norm(A, 2, dim, "
        "keepdim)",
        UserWarning,
        stacklevel=2,
    )
    axes = (dim,) if isinstance(dim, int) else tuple(dim)
    return _linalg.vector_norm(_tensor("frobenius_norm", input), 2, axes, keepdim)


@_autocast.listed("nuclear_norm")
def nuclear_norm(
    input: Tensor, dim: tuple[int, int] | bool | None = None, keepdim: bool = False
) -> Tensor:
    """Deprecated as PyTorch's: the sum of the singular values over ``dim`` (the last two).

    ``nuclear_norm(A, keepdim)`` (a bool second) and ``nuclear_norm(A, dim, keepdim)``
    are both accepted, as PyTorch's two forms.

    Examples
    --------
    >>> import plugrad, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     plugrad.nuclear_norm(plugrad.tensor([[3.0, 0.0], [0.0, 4.0]]))
    tensor(7.)
    """
    warnings.warn(
        "nuclear_norm is deprecated, as PyTorch's: use plugrad.linalg.matrix_norm(A, 'nuc', "
        "dim, keepdim)",
        UserWarning,
        stacklevel=2,
    )
    if isinstance(dim, bool):  # the form nuclear_norm(input, keepdim)
        axes, keepdim = (-2, -1), dim
    else:
        axes = (-2, -1) if dim is None else (dim[0], dim[1])
    return _linalg.matrix_norm(_tensor("nuclear_norm", input), "nuc", axes, keepdim)


# -- settings -----------------------------------------------------------------------------


def set_num_interop_threads(num: int) -> None:
    """Record ``num`` as PyTorch's inter-op thread count; plugrad runs ops one at a time.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.set_num_interop_threads(2); plugrad.get_num_interop_threads()
    2
    """
    if isinstance(num, bool) or not isinstance(num, int) or num < 1:
        raise InvalidArgumentError(
            f"set_num_interop_threads() takes an int of at least 1, got {num!r}"
        )
    _settings["interop_threads"] = num


def get_num_interop_threads() -> int:
    """What :func:`set_num_interop_threads` recorded (1 at first: ops run one at a time)."""
    return int(_settings["interop_threads"])


def set_flush_denormal(mode: bool) -> bool:
    """Whether the request is honoured: flushing denormals is not supported, so ``True``
    returns False (as PyTorch's on a CPU without it) and ``False`` returns True.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.set_flush_denormal(True)
    False
    """
    return not mode


def set_warn_always(b: bool) -> None:
    """Record whether warnings PyTorch gives once should be given every time.

    plugrad's warnings follow Python's :mod:`warnings` filters, so this only records ``b``.
    """
    if not isinstance(b, bool):
        raise ArgumentError(f"set_warn_always() takes a bool, got {b!r}")
    _settings["warn_always"] = b


def is_warn_always_enabled() -> bool:
    """What :func:`set_warn_always` recorded (False at first)."""
    return bool(_settings["warn_always"])
