"""Tensor's Python operators and the methods that forward to one op.

:class:`TensorOperators` is a base of :class:`~plugrad.Tensor`. Each operator
is one call of the op's public function (``x * y`` is ``plugrad.ops.multiply(x, y)``),
looked up in :mod:`plugrad.ops` when called, where plugin loading installs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import ops as _ops

if TYPE_CHECKING:
    from .tensor import Tensor

__all__ = ["TensorOperators"]


class TensorOperators:
    """Arithmetic, comparison and bitwise operators (a base of :class:`~plugrad.Tensor`)."""

    __slots__ = ()
    _array: Any

    # -- methods that forward to ops ----------------------------------------------------

    def reshape(self, *shape: int | tuple[int, ...]) -> Tensor:
        """Return the same data with a new shape: ``x.reshape(2, 3)`` or ``x.reshape((2, 3))``."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return _ops.reshape(self, shape)

    def permute(self, *axes: int | tuple[int, ...]) -> Tensor:
        """Return a view with axes reordered: ``x.permute(1, 0, 2)`` (see ``permute_dims``)."""
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return _ops.permute_dims(self, axes)

    @property
    def T(self) -> Tensor:
        """The tensor with all axes reversed; for 2-D tensors the matrix transpose."""
        return _ops.permute_dims(self, tuple(range(self._array.ndim - 1, -1, -1)))

    @property
    def mT(self) -> Tensor:
        """Transpose of the last two axes (a stack of matrices)."""
        return _ops.matrix_transpose(self)

    # -- operators ----------------------------------------------------------------------

    def __add__(self, other: Any) -> Tensor:
        return _ops.add(self, other)

    def __radd__(self, other: Any) -> Tensor:
        return _ops.add(other, self)

    def __sub__(self, other: Any) -> Tensor:
        return _ops.subtract(self, other)

    def __rsub__(self, other: Any) -> Tensor:
        return _ops.subtract(other, self)

    def __mul__(self, other: Any) -> Tensor:
        return _ops.multiply(self, other)

    def __rmul__(self, other: Any) -> Tensor:
        return _ops.multiply(other, self)

    def __truediv__(self, other: Any) -> Tensor:
        return _ops.divide(self, other)

    def __rtruediv__(self, other: Any) -> Tensor:
        return _ops.divide(other, self)

    def __pow__(self, other: Any) -> Tensor:
        return _ops.pow(self, other)

    def __rpow__(self, other: Any) -> Tensor:
        return _ops.pow(other, self)

    def __matmul__(self, other: Any) -> Tensor:
        return _ops.matmul(self, other)

    def __rmatmul__(self, other: Any) -> Tensor:
        return _ops.matmul(other, self)

    def __floordiv__(self, other: Any) -> Tensor:
        return _ops.floor_divide(self, other)

    def __rfloordiv__(self, other: Any) -> Tensor:
        return _ops.floor_divide(other, self)

    def __mod__(self, other: Any) -> Tensor:
        return _ops.remainder(self, other)

    def __rmod__(self, other: Any) -> Tensor:
        return _ops.remainder(other, self)

    def __and__(self, other: Any) -> Tensor:
        return _ops.bitwise_and(self, other)

    def __rand__(self, other: Any) -> Tensor:
        return _ops.bitwise_and(other, self)

    def __or__(self, other: Any) -> Tensor:
        return _ops.bitwise_or(self, other)

    def __ror__(self, other: Any) -> Tensor:
        return _ops.bitwise_or(other, self)

    def __xor__(self, other: Any) -> Tensor:
        return _ops.bitwise_xor(self, other)

    def __rxor__(self, other: Any) -> Tensor:
        return _ops.bitwise_xor(other, self)

    def __lshift__(self, other: Any) -> Tensor:
        return _ops.bitwise_left_shift(self, other)

    def __rlshift__(self, other: Any) -> Tensor:
        return _ops.bitwise_left_shift(other, self)

    def __rshift__(self, other: Any) -> Tensor:
        return _ops.bitwise_right_shift(self, other)

    def __rrshift__(self, other: Any) -> Tensor:
        return _ops.bitwise_right_shift(other, self)

    def __invert__(self) -> Tensor:
        return _ops.bitwise_invert(self)

    def __abs__(self) -> Tensor:
        return _ops.abs(self)

    def __neg__(self) -> Tensor:
        return _ops.negative(self)

    def __pos__(self) -> Tensor:
        return self

    # In-place operators (``x += y``) are deliberately not defined: Python then
    # evaluates ``x = x + y``, a new tensor, which can never corrupt a saved value.

    def __eq__(self, other: Any) -> Tensor:  # type: ignore[override]
        return _ops.equal(self, other)

    def __ne__(self, other: Any) -> Tensor:  # type: ignore[override]
        return _ops.not_equal(self, other)

    def __lt__(self, other: Any) -> Tensor:
        return _ops.less(self, other)

    def __le__(self, other: Any) -> Tensor:
        return _ops.less_equal(self, other)

    def __gt__(self, other: Any) -> Tensor:
        return _ops.greater(self, other)

    def __ge__(self, other: Any) -> Tensor:
        return _ops.greater_equal(self, other)
