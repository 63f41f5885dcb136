"""Tensor's Python operators and the methods that forward to one op.

Importing this module makes its functions methods of :class:`~plugrad.Tensor`.
Each operator is one call of an op's public function (``x * y`` is
``plugrad.ops.multiply(x, y)``), looked up in :mod:`plugrad.ops` when called,
where plugin loading installs it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import ops as _ops
from .errors import ArgumentError, ShapeError
from .tensor import Tensor, install_methods

__all__ = ["BINARY_OPERATORS", "COMPARISONS", "UNARY_OPERATORS"]

#: Python's binary operators (``__add__``, and ``__radd__`` reflected) -> (symbol, the op called).
BINARY_OPERATORS = {
    "add": ("+", "add"),
    "sub": ("-", "subtract"),
    "mul": ("*", "multiply"),
    "truediv": ("/", "divide"),
    "pow": ("**", "pow"),
    "matmul": ("@", "matmul"),
    "floordiv": ("//", "floor_divide"),
    "mod": ("%", "remainder"),
    "and": ("&", "bitwise_and"),
    "or": ("|", "bitwise_or"),
    "xor": ("^", "bitwise_xor"),
    "lshift": ("<<", "bitwise_left_shift"),
    "rshift": (">>", "bitwise_right_shift"),
}
#: Comparisons (no reflected forms: Python swaps ``<`` and ``>`` itself) -> (symbol, op).
COMPARISONS = {
    "eq": ("==", "equal"),
    "ne": ("!=", "not_equal"),
    "lt": ("<", "less"),
    "le": ("<=", "less_equal"),
    "gt": (">", "greater"),
    "ge": (">=", "greater_equal"),
}
#: Python's unary operators -> (how one is written, the op called).
UNARY_OPERATORS = {
    "invert": ("~x", "bitwise_invert"),
    "abs": ("abs(x)", "abs"),
    "neg": ("-x", "negative"),
}

# The op functions by name: a dict lookup per call, as ``_ops.<name>`` would be, that
# sees the functions plugin loading installs after this module is imported.
_OPS = vars(_ops)


def _binary(symbol: str, op: str) -> Callable[[Tensor, Any], Tensor]:
    def operator(self: Tensor, other: Any) -> Tensor:
        try:
            return _OPS[op](self, other)
        except TypeError:
            # Python then asks the other operand, as PyTorch lets it; x + [1, 2] keeps
            # plugrad's error (a list asks nothing, and the error says what is wrong).
            if _foreign(other) and not isinstance(other, (list, tuple)):
                return NotImplemented
            raise

    operator.__doc__ = f"``x {symbol} y``: ``plugrad.{op}(x, y)``."
    return operator


def _equality(symbol: str, op: str) -> Callable[[Tensor, Any], Tensor]:
    def operator(self: Tensor, other: Any) -> Tensor:
        if other is None:  # Python's answer (x == None is False), as PyTorch gives
            return NotImplemented
        try:
            return _OPS[op](self, other)
        except TypeError:
            if _foreign(other):  # x == "auto": Python's answer too
                return NotImplemented
            raise

    operator.__doc__ = (
        f"``x {symbol} y``: ``plugrad.{op}(x, y)`` (``x {symbol} None`` or another object "
        "that is not an operand: Python's)."
    )
    return operator


def _reflected(symbol: str, op: str) -> Callable[[Tensor, Any], Tensor]:
    def operator(self: Tensor, other: Any) -> Tensor:
        try:
            return _OPS[op](other, self)
        except TypeError:
            if _foreign(other):  # [0] * tensor(3): the list repeats itself, as with PyTorch
                return NotImplemented
            raise

    operator.__doc__ = f"``y {symbol} x``: ``plugrad.{op}(y, x)``."
    return operator


def _foreign(value: Any) -> bool:
    """Whether ``value`` is no operand plugrad knows (a string, a list, an object of another
    library's class): an operator then returns NotImplemented, so that Python tries the
    other operand's method, and else raises its own TypeError. Arrays of other libraries
    are refused with plugrad's error instead, which says how to convert them."""
    if isinstance(value, (Tensor, bool, int, float, complex)):
        return False
    array_like = ("__array__", "__array_namespace__", "__dlpack__", "dtype")
    return not any(hasattr(value, name) for name in array_like)


def _unary(form: str, op: str) -> Callable[[Tensor], Tensor]:
    def operator(self: Tensor) -> Tensor:
        return _OPS[op](self)

    operator.__doc__ = f"``{form}``: ``plugrad.{op}(x)``."
    return operator


def _positive(self: Tensor) -> Tensor:
    """``+x``: ``x`` itself."""
    return self


# In-place operators (``x += y``) are the in-place ops of plugrad.inplace.
install_methods(
    **{f"__{name}__": _binary(*row) for name, row in BINARY_OPERATORS.items()},
    **{
        f"__{name}__": (_equality if name in ("eq", "ne") else _binary)(*row)
        for name, row in COMPARISONS.items()
    },
    **{f"__r{name}__": _reflected(*row) for name, row in BINARY_OPERATORS.items()},
    **{f"__{name}__": _unary(*row) for name, row in UNARY_OPERATORS.items()},
    __pos__=_positive,
)


def _reshape(self: Tensor, *sizes: int | tuple[int, ...], shape: Any = None) -> Tensor:
    """Return the same data with a new shape: ``x.reshape(2, 3)`` or ``x.reshape((2, 3))``."""
    shape = _sizes_or_keyword("reshape", sizes, shape, "shape")
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    try:
        below = bool(shape) and min(shape) < -1  # (NumPy read -3)
    except TypeError:  # sizes that are no numbers: the kernel's to refuse
        below = False
    if below:
        raise ShapeError(f"reshape{shape}: a size is at least 0, or -1 for the one inferred")
    return _ops.reshape(self, shape)


def _sizes_or_keyword(function: str, values: tuple[Any, ...], keyword: Any, name: str) -> Any:
    """The varargs ``values``, or ``(keyword,)`` where they came as PyTorch's ``name=``."""
    if keyword is None:
        return values
    if values:
        raise ArgumentError(f"{function}(): give the sizes by position or as {name}=, not both")
    return (keyword,)


def _permute(self: Tensor, *axes: int | tuple[int, ...], dims: Any = None) -> Tensor:
    """Return a view with axes reordered: ``x.permute(1, 0, 2)`` (see ``permute_dims``)."""
    axes = _sizes_or_keyword("permute", axes, dims, "dims")
    if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        axes = tuple(axes[0])
    return _ops.permute_dims(self, axes)


install_methods(reshape=_reshape, permute=_permute)
