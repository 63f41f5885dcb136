"""Invertible maps with a known Jacobian: PyTorch's ``torch.distributions.transforms``.

A :class:`Transform` maps values of its ``domain`` to its ``codomain``
(:mod:`~plugrad.distributions.constraints`); ``t.inv`` maps them back, and
``t.log_abs_det_jacobian(x, y)`` is ``log |det dy/dx|``, the term
:class:`~plugrad.distributions.TransformedDistribution` subtracts from a
density. Everything is computed with plugrad's ops, so it differentiates on
every backend.

Examples
--------
>>> import plugrad
>>> from plugrad.distributions.transforms import AffineTransform, ComposeTransform, ExpTransform
>>> t = ComposeTransform([ExpTransform(), AffineTransform(1.0, 2.0)])
>>> y = t(plugrad.tensor([0.0, 1.0]))
>>> y, t.inv(y)
(tensor([3.0000, 6.4366]), tensor([0.0000, 1.0000]))
>>> t.log_abs_det_jacobian(plugrad.tensor([0.0, 1.0]), y)
tensor([0.6931, 1.6931])
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from numbers import Number
from typing import Any

from .. import linalg as _linalg
from .. import ops as _ops
from ..creation import arange, asarray, eye, full_like, zeros, zeros_like
from ..dtype_functions import broadcast_shapes, finfo
from ..errors import ArgumentError, InvalidArgumentError, ShapeError
from ..nn.functional import logsigmoid, pad, sigmoid, softmax, softplus
from ..pytorch_names import diag_embed
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution, _require_distribution
from .utils import _as_tuple, _block_lengths, broadcast_all

__all__ = [
    "AbsTransform",
    "AffineTransform",
    "CatTransform",
    "ComposeTransform",
    "CorrCholeskyTransform",
    "CumulativeDistributionTransform",
    "ExpTransform",
    "IndependentTransform",
    "LowerCholeskyTransform",
    "PositiveDefiniteTransform",
    "PowerTransform",
    "ReshapeTransform",
    "SigmoidTransform",
    "SoftmaxTransform",
    "SoftplusTransform",
    "StackTransform",
    "StickBreakingTransform",
    "TanhTransform",
    "Transform",
    "identity_transform",
]


def _sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """``value`` summed over its ``dim`` right-most axes (all of them when it has fewer)."""
    if dim <= 0:
        return value
    return _ops.sum(value, axis=tuple(range(max(value.ndim - dim, 0), value.ndim)))


def _checked_cache_size(cache_size: Any) -> int:
    if type(cache_size) is not int or cache_size not in (0, 1):
        raise InvalidArgumentError(
            f"cache_size must be 0 (no cache) or 1 (the latest value), got {cache_size!r}"
        )
    return cache_size


def _is_number(value: Any) -> bool:
    return isinstance(value, Number) and not isinstance(value, bool | complex)


def _require_axes(what: str, shape: tuple[int, ...], count: int) -> None:
    if len(shape) < count:
        raise ShapeError(f"{what}: needs at least {count} axes, got shape {shape}")


def _shown(value: Any) -> str:
    if isinstance(value, Tensor):
        return repr(value.item()) if value.ndim == 0 else f"<Tensor of shape {tuple(value.shape)}>"
    return repr(value)


class Transform:
    """An invertible map ``x -> y`` and the log of its Jacobian: PyTorch's ``Transform``.

    ``t(x)`` applies it, ``t.inv(y)`` inverts it and
    ``t.log_abs_det_jacobian(x, y)`` is ``log |det dy/dx|``, reduced over the
    ``domain``'s ``event_dim`` right-most axes. A subclass writes ``_call``
    and ``_inverse`` (and ``log_abs_det_jacobian`` if ``bijective``).

    Parameters
    ----------
    cache_size : {0, 1}
        With 1, the transform keeps the last pair ``(x, y)`` it saw: calling
        it again on that same ``x`` object, or inverting that same ``y``
        object, returns the kept value without computing. So
        ``t.inv(t(x)) is x``, exact where the inverse is not (``atanh`` of a
        ``tanh`` that rounded to 1). With 0 nothing is kept.

    Attributes
    ----------
    domain, codomain : Constraint
        The sets of valid inputs and outputs.
    bijective : bool
        Whether ``t.inv(t(x))`` is ``x`` and ``t(t.inv(y))`` is ``y``.
    sign : int or Tensor
        For a bijective map of numbers, +1 where increasing and -1 where decreasing.
    event_dim : int
        How many right-most axes one event of the map has.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions.transforms import TanhTransform
    >>> t = TanhTransform(cache_size=1)
    >>> x = plugrad.tensor([20.0])
    >>> t.inv(t(x)) is x  # atanh(tanh(20.0)) would be inf in float32
    True
    """

    bijective = False
    domain: Any
    codomain: Any

    def __init__(self, cache_size: int = 0) -> None:
        self._cache_size = _checked_cache_size(cache_size)
        self._inv: Transform | None = None
        self._cached_x_y: tuple[Any, Any] = (None, None)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_cached_x_y"] = (None, None)  # tensors of one computation, not of the transform
        return state

    @property
    def event_dim(self) -> int:
        """The ``event_dim`` of the domain, which must be the codomain's."""
        if self.domain.event_dim != self.codomain.event_dim:
            raise InvalidArgumentError(
                f"{self!r} maps events of {self.domain.event_dim} axes to events of "
                f"{self.codomain.event_dim}: read domain.event_dim or codomain.event_dim"
            )
        return self.domain.event_dim

    @property
    def inv(self) -> Transform:
        """The inverse transform, made once: ``t.inv.inv is t``."""
        if self._inv is None:
            self._inv = _InverseTransform(self)
        return self._inv

    @property
    def sign(self) -> Any:
        """+1 or -1 as the map increases or decreases (bijective maps of numbers only)."""
        raise NotImplementedError(f"{type(self).__name__} has no sign")

    def with_cache(self, cache_size: int = 1) -> Transform:
        """This transform with ``cache_size`` (itself if it has that size already).

        Examples
        --------
        >>> from plugrad.distributions.transforms import ExpTransform
        >>> t = ExpTransform()
        >>> t.with_cache(0) is t, t.with_cache(1) == t
        (True, True)
        """
        cache_size = _checked_cache_size(cache_size)
        if self._cache_size == cache_size:
            return self
        return self._with_cache_size(cache_size)

    def _with_cache_size(self, cache_size: int) -> Transform:
        """A copy of this transform with ``cache_size``, for ``with_cache``."""
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self).__name__}.with_cache is not implemented")

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = None  # type: ignore[assignment]  # equal transforms are not one object

    def _check_input(self, value: Any, what: str) -> None:
        if not isinstance(value, Tensor):
            raise ArgumentError(
                f"{self!r}: {what} must be a Tensor, got {type(value).__name__}; "
                "wrap it in plugrad.tensor(...)"
            )

    def __call__(self, x: Tensor) -> Tensor:
        """``y``, the image of ``x``."""
        return self._through_cache(x, "x", self._call, inverse=False)

    def _inv_call(self, y: Tensor) -> Tensor:
        return self._through_cache(y, "y", self._inverse, inverse=True)

    def _through_cache(
        self, value: Tensor, what: str, compute: Callable[[Tensor], Tensor], *, inverse: bool
    ) -> Tensor:
        """``compute(value)``, or the other end of the cached ``(x, y)`` pair where ``value``
        is (the very object at) its ``x`` end, or its ``y`` end for an ``inverse`` call."""
        if self._cache_size == 0:
            self._check_input(value, what)
            return compute(value)
        x_old, y_old = self._cached_x_y
        if value is (y_old if inverse else x_old):
            return x_old if inverse else y_old
        self._check_input(value, what)
        result = compute(value)
        self._cached_x_y = (result, value) if inverse else (value, result)
        return result

    def _call(self, x: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement its map")

    def _inverse(self, y: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement its inverse")

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """``log |det dy/dx|`` at ``x`` (with ``y = t(x)``), per event."""
        raise NotImplementedError(
            f"{type(self).__name__} has no log_abs_det_jacobian (it is not bijective)"
        )

    def forward_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The shape of ``t(x)`` for ``x`` of ``shape``."""
        return tuple(shape)

    def inverse_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The shape of ``t.inv(y)`` for ``y`` of ``shape``."""
        return tuple(shape)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class _InverseTransform(Transform):
    """``t.inv``: ``t`` run backwards, sharing ``t``'s cache."""

    _inv: Transform

    def __init__(self, transform: Transform) -> None:
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @property
    def domain(self) -> Any:
        return self._inv.codomain

    @property
    def codomain(self) -> Any:
        return self._inv.domain

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return self._inv.bijective

    @property
    def sign(self) -> Any:
        return self._inv.sign

    @property
    def inv(self) -> Transform:
        return self._inv

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self._inv.with_cache(cache_size).inv

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    def __call__(self, x: Tensor) -> Tensor:
        return self._inv._inv_call(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return self._inv(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return self._inv.forward_shape(shape)

    def __repr__(self) -> str:
        return f"{self._inv!r}.inv"


def _transforms(what: str, parts: Any) -> list[Transform]:
    if isinstance(parts, Transform) or not isinstance(parts, Sequence):
        raise ArgumentError(f"{what} takes a list of Transforms, got {type(parts).__name__}")
    for part in parts:
        if not isinstance(part, Transform):
            raise ArgumentError(f"{what}: every part must be a Transform, got {part!r}")
    return list(parts)


class ComposeTransform(Transform):
    """The transforms of ``parts`` applied one after the other, first to last.

    Its log-Jacobian is the sum of theirs, each summed over the event axes it
    does not see itself. The parts do their own caching.

    Parameters
    ----------
    parts : list of Transform
        Applied in order; none is the identity.
    cache_size : {0, 1}
        Given to every part (see :class:`Transform`).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions.transforms import (
    ...     ComposeTransform, ExpTransform, IndependentTransform)
    >>> t = ComposeTransform([ExpTransform(), IndependentTransform(ExpTransform(), 1)])
    >>> t.domain.event_dim, t.log_abs_det_jacobian(plugrad.zeros(2, 3), t(plugrad.zeros(2, 3)))
    (1, tensor([3., 3.]))
    """

    def __init__(self, parts: Sequence[Transform], cache_size: int = 0) -> None:
        parts = _transforms("ComposeTransform", parts)
        super().__init__(cache_size=cache_size)
        if cache_size:
            parts = [part.with_cache(cache_size) for part in parts]
        self.parts = parts

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    @property
    def domain(self) -> Any:
        return self._end_constraint(forward=False)

    @property
    def codomain(self) -> Any:
        return self._end_constraint(forward=True)

    def _end_constraint(self, *, forward: bool) -> Any:
        """The last part's codomain (``forward``) or the first part's domain, with events as
        wide as the widest any part sees, traced through the parts to that end."""
        if not self.parts:
            return constraints.real

        def source_and_target(part: Transform) -> tuple[Any, Any]:
            return (part.domain, part.codomain) if forward else (part.codomain, part.domain)

        parts = self.parts if forward else self.parts[::-1]
        event_dim = source_and_target(parts[0])[0].event_dim
        for part in parts:
            source, target = source_and_target(part)
            event_dim = max(event_dim + target.event_dim - source.event_dim, target.event_dim)
        end = source_and_target(parts[-1])[1]
        if event_dim > end.event_dim:
            end = constraints.independent(end, event_dim - end.event_dim)
        return end

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(part.bijective for part in self.parts)

    @property
    def sign(self) -> Any:
        sign: Any = 1
        for part in self.parts:
            sign = sign * part.sign
        return sign

    @property
    def inv(self) -> Transform:
        if self._inv is None:
            inverse = ComposeTransform([part.inv for part in reversed(self.parts)])
            inverse._inv = self
            self._inv = inverse
        return self._inv

    def _with_cache_size(self, cache_size: int) -> Transform:
        return ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x: Tensor) -> Tensor:
        if not self.parts:
            self._check_input(x, "x")
        for part in self.parts:
            x = part(x)
        return x

    def _inverse(self, y: Tensor) -> Tensor:
        for part in reversed(self.parts):
            y = part.inv(y)
        return y

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        if not self.parts:
            return zeros_like(x)
        # The intermediate values: free where the parts cache them.
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        event_dim = self.domain.event_dim
        total: Tensor | None = None
        for part, x_in, y_out in zip(self.parts, xs[:-1], xs[1:]):
            term = part.log_abs_det_jacobian(x_in, y_out)
            term = _sum_rightmost(term, event_dim - part.domain.event_dim)
            total = term if total is None else total + term
            event_dim += part.codomain.event_dim - part.domain.event_dim
        assert total is not None
        return total

    def forward_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        for part in self.parts:
            shape = part.forward_shape(shape)
        return tuple(shape)

    def inverse_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return tuple(shape)

    def __repr__(self) -> str:
        return f"ComposeTransform([{', '.join(repr(part) for part in self.parts)}])"


#: The identity map: a :class:`ComposeTransform` of no parts.
identity_transform = ComposeTransform([])


def _check_ndims(what: str, ndims: Any) -> int:
    if not isinstance(ndims, int) or isinstance(ndims, bool) or ndims < 0:
        raise InvalidArgumentError(f"{what} must be a non-negative int, got {ndims!r}")
    return ndims


class IndependentTransform(Transform):
    """``base_transform`` with ``reinterpreted_batch_ndims`` more right-most axes per event.

    The map is ``base_transform``'s; only the log-Jacobian differs: it is
    summed over those axes too.

    Parameters
    ----------
    base_transform : Transform
    reinterpreted_batch_ndims : int
        How many more right-most axes make up one event.
    cache_size : {0, 1}

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions.transforms import ExpTransform, IndependentTransform
    >>> t = IndependentTransform(ExpTransform(), 1)
    >>> x = plugrad.tensor([[0.0, 1.0], [2.0, 3.0]])
    >>> t.log_abs_det_jacobian(x, t(x))
    tensor([1., 5.])
    """

    def __init__(
        self, base_transform: Transform, reinterpreted_batch_ndims: int, cache_size: int = 0
    ) -> None:
        if not isinstance(base_transform, Transform):
            raise ArgumentError(
                f"IndependentTransform: base_transform must be a Transform, got "
                f"{type(base_transform).__name__}"
            )
        self.reinterpreted_batch_ndims = _check_ndims(
            "IndependentTransform: reinterpreted_batch_ndims", reinterpreted_batch_ndims
        )
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)

    def _with_cache_size(self, cache_size: int) -> Transform:
        return IndependentTransform(
            self.base_transform, self.reinterpreted_batch_ndims, cache_size=cache_size
        )

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, IndependentTransform)
            and self.base_transform == other.base_transform
            and self.reinterpreted_batch_ndims == other.reinterpreted_batch_ndims
        )

    @property
    def domain(self) -> Any:
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @property
    def codomain(self) -> Any:
        return constraints.independent(self.base_transform.codomain, self.reinterpreted_batch_ndims)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return self.base_transform.bijective

    @property
    def sign(self) -> Any:
        return self.base_transform.sign

    def _call(self, x: Tensor) -> Tensor:
        _require_axes(f"{self!r}: x", tuple(x.shape), self.domain.event_dim)
        return self.base_transform(x)

    def _inverse(self, y: Tensor) -> Tensor:
        _require_axes(f"{self!r}.inv: y", tuple(y.shape), self.codomain.event_dim)
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        result = self.base_transform.log_abs_det_jacobian(x, y)
        return _sum_rightmost(result, self.reinterpreted_batch_ndims)

    def forward_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return self.base_transform.inverse_shape(shape)

    def __repr__(self) -> str:
        return f"IndependentTransform({self.base_transform!r}, {self.reinterpreted_batch_ndims})"


class ReshapeTransform(Transform):
    """Events of shape ``in_shape`` reshaped to ``out_shape`` (as many elements); Jacobian 1.

    Parameters
    ----------
    in_shape, out_shape : tuple of int
        The event shapes before and after.
    cache_size : {0, 1}

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions.transforms import ReshapeTransform
    >>> t = ReshapeTransform((2, 3), (6,))
    >>> t(plugrad.zeros(4, 2, 3)).shape, t.forward_shape((4, 2, 3)), t.inverse_shape((6,))
    ((4, 6), (4, 6), (2, 3))
    """

    bijective = True

    def __init__(
        self, in_shape: Sequence[int], out_shape: Sequence[int], cache_size: int = 0
    ) -> None:
        self.in_shape = _as_tuple(in_shape, "ReshapeTransform: in_shape")
        self.out_shape = _as_tuple(out_shape, "ReshapeTransform: out_shape")
        if math.prod(self.in_shape) != math.prod(self.out_shape):
            raise ShapeError(
                f"ReshapeTransform: in_shape {self.in_shape} and out_shape {self.out_shape} "
                "hold different numbers of elements"
            )
        super().__init__(cache_size=cache_size)

    @property
    def domain(self) -> Any:
        return constraints.independent(constraints.real, len(self.in_shape))

    @property
    def codomain(self) -> Any:
        return constraints.independent(constraints.real, len(self.out_shape))

    def _with_cache_size(self, cache_size: int) -> Transform:
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ReshapeTransform)
            and self.in_shape == other.in_shape
            and self.out_shape == other.out_shape
        )

    def _batch(self, what: str, shape: tuple[int, ...], event: tuple[int, ...]) -> tuple[int, ...]:
        cut = len(shape) - len(event)
        if cut < 0 or shape[cut:] != event:
            raise ShapeError(
                f"{self!r}: {what} of shape {shape} does not end in the event shape {event}"
            )
        return shape[:cut]

    def _call(self, x: Tensor) -> Tensor:
        batch = self._batch("x", tuple(x.shape), self.in_shape)
        return _ops.reshape(x, batch + self.out_shape)

    def _inverse(self, y: Tensor) -> Tensor:
        batch = self._batch("y", tuple(y.shape), self.out_shape)
        return _ops.reshape(y, batch + self.in_shape)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        batch = self._batch("x", tuple(x.shape), self.in_shape)
        return zeros(batch, dtype=x.dtype, device=x.device)

    def forward_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return self._batch("the input", tuple(shape), self.in_shape) + self.out_shape

    def inverse_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return self._batch("the output", tuple(shape), self.out_shape) + self.in_shape

    def __repr__(self) -> str:
        return f"ReshapeTransform(in_shape={self.in_shape}, out_shape={self.out_shape})"


class _Parameterless(Transform):
    """A transform without parameters: all of one class are equal."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, type(self))


class ExpTransform(_Parameterless):
    """``y = exp(x)``, from the reals to the positive numbers.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions.transforms import ExpTransform
    >>> t = ExpTransform()
    >>> t(plugrad.tensor([0.0, 1.0])), t.inv(plugrad.tensor([1.0]))
    (tensor([1.0000, 2.7183]), tensor([0.]))
    """

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def _call(self, x: Tensor) -> Tensor:
        return _ops.exp(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return _ops.log(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return x


class PowerTransform(Transform):
    """``y = x ** exponent``, on the positive numbers.

    Parameters
    ----------
    exponent : Tensor or float
        Non-zero; it broadcasts with ``x``.
    cache_size : {0, 1}

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions.transforms import PowerTransform
    >>> t = PowerTransform(2.0)
    >>> x = plugrad.tensor([1.0, 3.0])
    >>> t(x), t.log_abs_det_jacobian(x, t(x))
    (tensor([1., 9.]), tensor([0.6931, 1.7918]))
    """

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent: Tensor | float, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        (self.exponent,) = broadcast_all(exponent)

    def _with_cache_size(self, cache_size: int) -> Transform:
        return PowerTransform(self.exponent, cache_size=cache_size)

    @property
    def sign(self) -> Tensor:
        return _ops.sign(self.exponent)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PowerTransform):
            return False
        return _equal_values(self.exponent, other.exponent)

    def _call(self, x: Tensor) -> Tensor:
        return x**self.exponent

    def _inverse(self, y: Tensor) -> Tensor:
        return y ** (1 / self.exponent)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return _ops.log(_ops.abs(self.exponent * y / x))

    def forward_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return _broadcast(self, shape, self.exponent)

    def inverse_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return _broadcast(self, shape, self.exponent)

    def __repr__(self) -> str:
        return f"PowerTransform(exponent={_shown(self.exponent)})"


def _equal_values(a: Any, b: Any) -> bool:
    """Whether two parameters (numbers or tensors) are equal everywhere."""
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        return bool(a == b)
    try:
        return bool(_ops.all(a == b))
    except ValueError:  # shapes that do not broadcast: not equal
        return False


def _broadcast(transform: Transform, shape: tuple[int, ...], *parameters: Any) -> tuple[int, ...]:
    shapes = [tuple(shape)] + [tuple(p.shape) for p in parameters if isinstance(p, Tensor)]
    try:
        return tuple(broadcast_shapes(*shapes))
    except ValueError:
        raise ShapeError(
            f"{transform!r}: a value of shape {tuple(shape)} does not broadcast with the "
            f"parameters' shapes {shapes[1:]}"
        ) from None


def _clipped_sigmoid(x: Tensor) -> Tensor:
    # Kept inside (0, 1): log(y) and log1p(-y) of it stay finite.
    info = finfo(x.dtype)
    return _ops.clip(sigmoid(x), info.smallest_normal, 1.0 - info.eps)


class SigmoidTransform(_Parameterless):
    """``y = 1 / (1 + exp(-x))``, from the reals to the unit interval; ``x = logit(y)``.

    The output is clipped to ``[tiny, 1 - eps]`` of its dtype, so that the
    inverse stays finite.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions.transforms import SigmoidTransform
    >>> t = SigmoidTransform()
    >>> x = plugrad.tensor([0.0, 2.0])
    >>> t(x), t.log_abs_det_jacobian(x, t(x))
    (tensor([0.5000, 0.8808]), tensor([-1.3863, -2.2539]))
    """

    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True
    sign = +1

    def _call(self, x: Tensor) -> Tensor:
        return _clipped_sigmoid(x)

    def _inverse(self, y: Tensor) -> Tensor:
        info = finfo(y.dtype)
        y = _ops.clip(y, info.smallest_normal, 1.0 - info.eps)
        return _ops.log(y) - _ops.log1p(-y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -softplus(-x) - softplus(x)


class SoftplusTransform(_Parameterless):
    """``y = log(1 + exp(x))``, from the reals to the positive numbers (linear above 20).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions.transforms import SoftplusTransform
    >>> t = SoftplusTransform()
    >>> t(plugrad.tensor([0.0, 1.0])), t.inv(plugrad.tensor([1.0, 2.0]))
    (tensor([0.6931, 1.3133]), tensor([0.5413, 1.8546]))
    """

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def _call(self, x: Tensor) -> Tensor:
        return softplus(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return _ops.log(-_ops.expm1(-y)) + y

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -softplus(-x)


class TanhTransform(_Parameterless):
    """``y = tanh(x)``, from the reals to ``[-1, 1]``.

    Its log-Jacobian is computed as ``2 * (log 2 - x - softplus(-2 x))``,
    finite for every ``x``. The inverse is ``atanh``, infinite where ``tanh``
    rounded to 1: give ``cache_size=1`` to invert a sample exactly (as
    ``log_prob(rsample())`` of a tanh-squashed policy does).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions.transforms import TanhTransform
    >>> t = TanhTransform()
    >>> x = plugrad.tensor([0.0, 20.0])
    >>> t(x), t.log_abs_det_jacobian(x, t(x))
    (tensor([0., 1.]), tensor([  0.0000, -38.6137]))
    """

    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = +1

    def _call(self, x: Tensor) -> Tensor:
        return _ops.tanh(x)

    def _inverse(self, y: Tensor) -> Tensor:
        # Not clipped, as PyTorch's: cache_size=1 is the exact inverse of a sample.
        return _ops.atanh(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        # 1 - tanh(x)**2 underflows (and its log is -inf) from |x| = 9 in float32.
        return 2.0 * (math.log(2.0) - x - softplus(-2.0 * x))


class AbsTransform(_Parameterless):
    """``y = |x|``; its "inverse" is the identity (not bijective: no log-Jacobian).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions.transforms import AbsTransform
    >>> AbsTransform()(plugrad.tensor([-2.0, 3.0]))
    tensor([2., 3.])
    """

    domain = constraints.real
    codomain = constraints.positive

    def _call(self, x: Tensor) -> Tensor:
        return _ops.abs(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return y


def _check_parameter(what: str, value: Any) -> Any:
    if not isinstance(value, Tensor) and not _is_number(value):
        raise ArgumentError(
            f"AffineTransform: {what} must be a Tensor or a real number, got {type(value).__name__}"
        )
    return value


class AffineTransform(Transform):
    """``y = loc + scale * x``, element-wise.

    Parameters
    ----------
    loc, scale : Tensor or float
        They broadcast with ``x``. A ``scale`` of 0 is not invertible.
    event_dim : int
        How many right-most axes make one event (0 for numbers, 1 for
        vectors, ...): the log-Jacobian is summed over them.
    cache_size : {0, 1}

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions.transforms import AffineTransform
    >>> t = AffineTransform(1.0, plugrad.tensor([2.0, -0.5]), event_dim=1)
    >>> x = plugrad.tensor([1.0, 2.0])
    >>> t(x), t.log_abs_det_jacobian(x, t(x)), t.sign
    (tensor([3., 0.]), tensor(0.), tensor([ 1., -1.]))
    """

    bijective = True

    def __init__(
        self,
        loc: Tensor | float,
        scale: Tensor | float,
        event_dim: int = 0,
        cache_size: int = 0,
    ) -> None:
        self.loc = _check_parameter("loc", loc)
        self.scale = _check_parameter("scale", scale)
        self._event_dim = _check_ndims("AffineTransform: event_dim", event_dim)
        super().__init__(cache_size=cache_size)

    @property
    def event_dim(self) -> int:
        return self._event_dim

    @property
    def domain(self) -> Any:
        if self._event_dim == 0:
            return constraints.real
        return constraints.independent(constraints.real, self._event_dim)

    codomain = domain

    def _with_cache_size(self, cache_size: int) -> Transform:
        return AffineTransform(self.loc, self.scale, self._event_dim, cache_size=cache_size)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AffineTransform):
            return False
        return _equal_values(self.loc, other.loc) and _equal_values(self.scale, other.scale)

    @property
    def sign(self) -> Any:
        if isinstance(self.scale, Tensor):
            return _ops.sign(self.scale)
        return 1 if self.scale > 0 else -1 if self.scale < 0 else 0

    def _call(self, x: Tensor) -> Tensor:
        return self.loc + self.scale * x

    def _inverse(self, y: Tensor) -> Tensor:
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        scale = self.scale
        if isinstance(scale, Tensor):
            result = _ops.log(_ops.abs(scale))
            shape = broadcast_shapes(tuple(result.shape), tuple(x.shape))
        else:
            result = full_like(x, math.log(abs(scale)) if scale else -math.inf)
            shape = tuple(x.shape)
        if not self._event_dim:
            return _ops.broadcast_to(result, shape)
        # NOTE: broadcast before summing: a scale narrower than the event counts once per
        # element (PyTorch's counts it once per event).
        return _sum_rightmost(_ops.broadcast_to(result, shape), self._event_dim)

    def forward_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return _broadcast(self, shape, self.loc, self.scale)

    def inverse_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return _broadcast(self, shape, self.loc, self.scale)

    def __repr__(self) -> str:
        shown = f"loc={_shown(self.loc)}, scale={_shown(self.scale)}"
        return f"AffineTransform({shown}, event_dim={self._event_dim})"


def _tril_positions(size: int, diagonal: int) -> list[int]:
    """The flat positions, row by row, of the entries of a ``size`` square matrix on or
    below its ``diagonal``-th diagonal."""
    return [i * size + j for i in range(size) for j in range(size) if j <= i + diagonal]


def _tril_to_vector(matrix: Tensor, diagonal: int) -> Tensor:
    size = matrix.shape[-1]
    flat = _ops.reshape(matrix, (*matrix.shape[:-2], size * size))
    index_dtype = matrix.device.default_int_dtype
    positions = asarray(_tril_positions(size, diagonal), dtype=index_dtype, device=matrix.device)
    return _ops.take(flat, positions, axis=-1)


def _vector_to_tril(vector: Tensor, size: int, diagonal: int) -> Tensor:
    positions = _tril_positions(size, diagonal)
    count = len(positions)
    # Each entry of the matrix reads the vector's entry for it, or a zero appended to it.
    source = [count] * (size * size)
    for k, position in enumerate(positions):
        source[position] = k
    padded = pad(vector, [0, 1], value=0.0)
    index = asarray(source, dtype=vector.device.default_int_dtype, device=vector.device)
    return _ops.reshape(_ops.take(padded, index, axis=-1), (*vector.shape[:-1], size, size))


class CorrCholeskyTransform(_Parameterless):
    """A vector of ``D (D - 1) / 2`` reals to the Cholesky factor of a ``D x D`` correlation matrix.

    The vector fills the strict lower triangle row by row; ``tanh`` takes
    each entry into ``(-1, 1)``, and each row is then scaled by a signed stick
    breaking so that it has unit length with a positive diagonal. Its
    log-Jacobian is that of the map to the strict lower triangle of the result.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions.transforms import CorrCholeskyTransform
    >>> t = CorrCholeskyTransform()
    >>> t(plugrad.tensor([0.5, -1.0, 2.0]))
    tensor([[ 1.0000,  0.0000,  0.0000],
            [ 0.4621,  0.8868,  0.0000],
            [-0.7616,  0.6247,  0.1723]])
    """

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def _call(self, x: Tensor) -> Tensor:
        _require_axes(f"{self!r}: x", tuple(x.shape), 1)
        size = self.forward_shape(tuple(x.shape))[-1]
        eps = finfo(x.dtype).eps
        r = _vector_to_tril(_ops.clip(_ops.tanh(x), -1 + eps, 1 - eps), size, -1)
        # Row i is r_i scaled by the length left, sqrt(prod_{k<j} (1 - r_ik**2)), at entry j;
        # its diagonal gets what is left of the row.
        left = _ops.cumprod(_ops.sqrt(1 - r**2), -1)
        scale = pad(left[..., :-1], [1, 0], value=1.0)
        return (r + eye(size, dtype=x.dtype, device=x.device)) * scale

    def _inverse(self, y: Tensor) -> Tensor:
        _require_axes(f"{self!r}.inv: y", tuple(y.shape), 2)
        left = 1 - _ops.cumsum(y * y, -1)
        left_before = pad(left[..., :-1], [1, 0], value=1.0)
        t = _tril_to_vector(y, -1) / _ops.sqrt(_tril_to_vector(left_before, -1))
        return (_ops.log1p(t) - _ops.log1p(-t)) / 2

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        left = 1 - _ops.cumsum(y * y, -1)
        # Entries below the first subdiagonal: the lengths left before each of them.
        stick_breaking = 0.5 * _ops.sum(_ops.log(_tril_to_vector(left, -2)), axis=-1)
        tanh = -2 * _ops.sum(x + softplus(-2 * x) - math.log(2.0), axis=-1)
        return stick_breaking + tanh

    def forward_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        _require_axes(f"{self!r}: the input", tuple(shape), 1)
        count = shape[-1]
        size = round((0.25 + 2 * count) ** 0.5 + 0.5)
        if size * (size - 1) // 2 != count:
            raise ShapeError(
                f"{self!r}: the input's last axis must have D (D - 1) / 2 entries for some D, "
                f"got {count}"
            )
        return (*shape[:-1], size, size)

    def inverse_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        _require_axes(f"{self!r}: the output", tuple(shape), 2)
        if shape[-2] != shape[-1]:
            raise ShapeError(f"{self!r}: the output must be square matrices, got shape {shape}")
        size = shape[-1]
        return (*shape[:-2], size * (size - 1) // 2)


class SoftmaxTransform(_Parameterless):
    """``y = exp(x) / sum(exp(x))`` over the last axis, from vectors to the simplex.

    Not bijective (adding a number to every entry changes nothing), and
    without a log-Jacobian; ``inv`` is ``log``.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions.transforms import SoftmaxTransform
    >>> SoftmaxTransform()(plugrad.tensor([0.0, 0.0, 1.0]))
    tensor([0.2119, 0.2119, 0.5761])
    """

    domain = constraints.real_vector
    codomain = constraints.simplex

    def _call(self, x: Tensor) -> Tensor:
        _require_axes(f"{self!r}: x", tuple(x.shape), 1)
        return softmax(x, dim=-1)

    def _inverse(self, y: Tensor) -> Tensor:
        _require_axes(f"{self!r}.inv: y", tuple(y.shape), 1)
        return _ops.log(y)

    def forward_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        _require_axes(f"{self!r}: the input", tuple(shape), 1)
        return tuple(shape)

    inverse_shape = forward_shape


def _stick_offsets(like: Tensor, count: int) -> Tensor:
    """``log([count, count - 1, ..., 1])``: centres the stick breaking at equal pieces."""
    return _ops.log(arange(count, 0, -1, dtype=like.dtype, device=like.device))


class StickBreakingTransform(_Parameterless):
    """Vectors of ``K`` reals to the simplex of ``K + 1`` entries, by breaking a stick.

    Entry ``k`` takes the share ``sigmoid(x_k - log(K - k))`` of what is left
    of the stick; the last entry is the rest. Bijective, so ``biject_to``
    uses it for the simplex.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions.transforms import StickBreakingTransform
    >>> t = StickBreakingTransform()
    >>> t(plugrad.zeros(3))
    tensor([0.2500, 0.2500, 0.2500, 0.2500])
    >>> t.inv(plugrad.tensor([0.5, 0.25, 0.125, 0.125]))
    tensor([1.0986, 0.6931, 0.0000])
    """

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def _call(self, x: Tensor) -> Tensor:
        _require_axes(f"{self!r}: x", tuple(x.shape), 1)
        share = _clipped_sigmoid(x - _stick_offsets(x, x.shape[-1]))
        left = _ops.cumprod(1 - share, -1)
        return pad(share, [0, 1], value=1.0) * pad(left, [1, 0], value=1.0)

    def _inverse(self, y: Tensor) -> Tensor:
        _require_axes(f"{self!r}.inv: y", tuple(y.shape), 1)
        pieces = y[..., :-1]
        # NOTE: what is left can round to 0 or below when the last piece is tiny.
        left = _ops.clip(1 - _ops.cumsum(pieces, -1), finfo(y.dtype).smallest_normal, None)
        return _ops.log(pieces) - _ops.log(left) + _stick_offsets(y, pieces.shape[-1])

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        shifted = x - _stick_offsets(x, x.shape[-1])
        # 1 - sigmoid(z) = exp(-z) sigmoid(z)
        return _ops.sum(-shifted + logsigmoid(shifted) + _ops.log(y[..., :-1]), axis=-1)

    def forward_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        _require_axes(f"{self!r}: the input", tuple(shape), 1)
        return (*shape[:-1], shape[-1] + 1)

    def inverse_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        _require_axes(f"{self!r}: the output", tuple(shape), 1)
        if shape[-1] < 1:
            raise ShapeError(f"{self!r}: the output's last axis must not be empty")
        return (*shape[:-1], shape[-1] - 1)


def _square(what: str, value: Tensor) -> None:
    if value.ndim < 2 or value.shape[-1] != value.shape[-2]:
        raise ShapeError(f"{what}: needs square matrices, got shape {tuple(value.shape)}")


class LowerCholeskyTransform(_Parameterless):
    """Square matrices to lower-triangular ones with a positive diagonal.

    The strict lower triangle is kept, the diagonal exponentiated and the
    upper triangle dropped (so it is not bijective).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions.transforms import LowerCholeskyTransform
    >>> LowerCholeskyTransform()(plugrad.tensor([[0.0, 5.0], [2.0, 1.0]]))
    tensor([[1.0000, 0.0000],
            [2.0000, 2.7183]])
    """

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def _call(self, x: Tensor) -> Tensor:
        _square(f"{self!r}: x", x)
        return _ops.tril(x, k=-1) + diag_embed(_ops.exp(_ops.diagonal(x, offset=0)))

    def _inverse(self, y: Tensor) -> Tensor:
        _square(f"{self!r}.inv: y", y)
        return _ops.tril(y, k=-1) + diag_embed(_ops.log(_ops.diagonal(y, offset=0)))


class PositiveDefiniteTransform(_Parameterless):
    """Square matrices to positive-definite ones: ``L @ L.mT`` for ``L`` their
    :class:`LowerCholeskyTransform`.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions.transforms import PositiveDefiniteTransform
    >>> PositiveDefiniteTransform()(plugrad.tensor([[0.0, 5.0], [2.0, 0.0]]))
    tensor([[1., 2.],
            [2., 5.]])
    """

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def _call(self, x: Tensor) -> Tensor:
        lower = LowerCholeskyTransform()(x)
        return lower @ _ops.matrix_transpose(lower)

    def _inverse(self, y: Tensor) -> Tensor:
        _square(f"{self!r}.inv: y", y)
        return LowerCholeskyTransform().inv(_linalg.cholesky(y))


def _axis_and_size(transform: Transform, what: str, value: Tensor, dim: int, size: int) -> None:
    if not -value.ndim <= dim < value.ndim:
        raise ShapeError(
            f"{transform!r}: dim {dim} is out of range for {what} of shape {tuple(value.shape)}"
        )
    if value.shape[dim] != size:
        raise ShapeError(
            f"{transform!r}: axis {dim} of {what} has {value.shape[dim]} entries, {size} expected"
        )


class _Joined(Transform):
    """``transforms[i]`` applied to the ``i``-th part of axis ``dim`` of a value, the images
    joined again along it; how a value is parted and joined is the subclass's."""

    transforms: list[Transform]
    dim: int

    def _parts(self, what: str, value: Tensor) -> list[Tensor]:
        raise NotImplementedError

    def _join(self, parts: list[Tensor]) -> Tensor:
        raise NotImplementedError

    def _joined_constraint(self, parts: list[Any]) -> Any:
        """The constraint holding ``parts[i]`` on the ``i``-th part of axis ``dim``."""
        raise NotImplementedError

    def _call(self, x: Tensor) -> Tensor:
        return self._join([t(part) for t, part in zip(self.transforms, self._parts("x", x))])

    def _inverse(self, y: Tensor) -> Tensor:
        return self._join([t.inv(part) for t, part in zip(self.transforms, self._parts("y", y))])

    def _log_abs_det_jacobians(self, x: Tensor, y: Tensor) -> list[Tensor]:
        """Each part's log-Jacobian, at its part of ``x`` and ``y``."""
        pairs = zip(self.transforms, self._parts("x", x), self._parts("y", y))
        return [t.log_abs_det_jacobian(x_part, y_part) for t, x_part, y_part in pairs]

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self) -> Any:
        return self._joined_constraint([t.domain for t in self.transforms])

    @property
    def codomain(self) -> Any:
        return self._joined_constraint([t.codomain for t in self.transforms])


class CatTransform(_Joined):
    """``tseq[i]`` applied to the ``i``-th block (of ``lengths[i]``) along ``dim``, as ``concat``.

    Parameters
    ----------
    tseq : list of Transform
    dim : int
        The axis the blocks lie along.
    lengths : list of int, optional
        The length of each block (1 each by default).
    cache_size : {0, 1}

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions.transforms import CatTransform, ExpTransform, identity_transform
    >>> t = CatTransform([ExpTransform(), identity_transform], dim=0, lengths=[2, 1])
    >>> x = plugrad.tensor([0.0, 1.0, 5.0])
    >>> t(x), t.log_abs_det_jacobian(x, t(x))
    (tensor([1.0000, 2.7183, 5.0000]), tensor([0., 1., 0.]))
    """

    def __init__(
        self,
        tseq: Sequence[Transform],
        dim: int = 0,
        lengths: Sequence[int] | None = None,
        cache_size: int = 0,
    ) -> None:
        tseq = _transforms("CatTransform", tseq)
        if not tseq:
            raise InvalidArgumentError("CatTransform: tseq must hold at least one transform")
        super().__init__(cache_size=cache_size)
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        self.transforms = tseq
        self.lengths = _block_lengths("CatTransform", lengths, len(tseq), "transform")
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise ArgumentError(f"CatTransform: dim must be an int, got {dim!r}")
        self.dim = dim

    @property
    def event_dim(self) -> int:
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self) -> int:
        """The length of axis ``dim``: the sum of ``lengths``."""
        return sum(self.lengths)

    def _with_cache_size(self, cache_size: int) -> Transform:
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, CatTransform)
            and self.transforms == other.transforms
            and self.dim == other.dim
            and self.lengths == other.lengths
        )

    def _parts(self, what: str, value: Tensor) -> list[Tensor]:
        _axis_and_size(self, what, value, self.dim, self.length)
        blocks, start = [], 0
        for length in self.lengths:
            blocks.append(_ops.narrow(value, self.dim, start, length))
            start += length
        return blocks

    def _join(self, parts: list[Tensor]) -> Tensor:
        return _ops.concat(parts, axis=self.dim)

    def _joined_constraint(self, parts: list[Any]) -> Any:
        return constraints.cat(parts, self.dim, self.lengths)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        event_dim = self.event_dim
        terms = [
            _sum_rightmost(term, event_dim - t.event_dim)
            for t, term in zip(self.transforms, self._log_abs_det_jacobians(x, y))
        ]
        # Along a batch axis the blocks' terms sit side by side; along an event axis they add.
        dim = (self.dim - x.ndim if self.dim >= 0 else self.dim) + event_dim
        if dim < 0:
            return _ops.concat(terms, axis=dim)
        total = terms[0]
        for term in terms[1:]:
            total = total + term
        return total

    def __repr__(self) -> str:
        parts = ", ".join(repr(t) for t in self.transforms)
        return f"CatTransform([{parts}], dim={self.dim}, lengths={self.lengths})"


class StackTransform(_Joined):
    """``tseq[i]`` applied to the ``i``-th slice along ``dim``, as ``stack``.

    Parameters
    ----------
    tseq : list of Transform
        One per entry of axis ``dim``.
    dim : int
    cache_size : {0, 1}

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions.transforms import ExpTransform, StackTransform
    >>> from plugrad.distributions.transforms import identity_transform
    >>> t = StackTransform([ExpTransform(), identity_transform], dim=1)
    >>> t(plugrad.tensor([[0.0, 0.0], [1.0, 1.0]]))
    tensor([[1.0000, 0.0000],
            [2.7183, 1.0000]])
    """

    def __init__(self, tseq: Sequence[Transform], dim: int = 0, cache_size: int = 0) -> None:
        tseq = _transforms("StackTransform", tseq)
        if not tseq:
            raise InvalidArgumentError("StackTransform: tseq must hold at least one transform")
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise ArgumentError(f"StackTransform: dim must be an int, got {dim!r}")
        super().__init__(cache_size=cache_size)
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        self.transforms = tseq
        self.dim = dim

    def _with_cache_size(self, cache_size: int) -> Transform:
        return StackTransform(self.transforms, self.dim, cache_size)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, StackTransform)
            and self.transforms == other.transforms
            and self.dim == other.dim
        )

    def _parts(self, what: str, value: Tensor) -> list[Tensor]:
        _axis_and_size(self, what, value, self.dim, len(self.transforms))
        return [_ops.select(value, self.dim, i) for i in range(len(self.transforms))]

    def _join(self, parts: list[Tensor]) -> Tensor:
        return _ops.stack(parts, axis=self.dim)

    def _joined_constraint(self, parts: list[Any]) -> Any:
        return constraints.stack(parts, self.dim)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return self._join(self._log_abs_det_jacobians(x, y))

    def __repr__(self) -> str:
        parts = ", ".join(repr(t) for t in self.transforms)
        return f"StackTransform([{parts}], dim={self.dim})"


class CumulativeDistributionTransform(Transform):
    """``y = distribution.cdf(x)``, from the distribution's support to the unit interval.

    Its inverse is ``icdf`` and its log-Jacobian the density, ``log_prob``: a
    copula is a distribution pushed through the CDFs of its marginals.

    Parameters
    ----------
    distribution : Distribution
        Of numbers (``event_shape`` ``()``), with ``cdf``, ``icdf`` and ``log_prob``.
    cache_size : {0, 1}

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import Normal
    >>> from plugrad.distributions.transforms import CumulativeDistributionTransform
    >>> t = CumulativeDistributionTransform(Normal(0.0, 1.0))
    >>> t(plugrad.tensor([0.0, 1.0])), t.inv(plugrad.tensor([0.5]))
    (tensor([0.5000, 0.8413]), tensor([0.]))
    """

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution: Distribution, cache_size: int = 0) -> None:
        _require_distribution("CumulativeDistributionTransform: distribution", distribution)
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self) -> Any:
        return self.distribution.support

    def _call(self, x: Tensor) -> Tensor:
        return self.distribution.cdf(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return self.distribution.log_prob(x)

    def _with_cache_size(self, cache_size: int) -> Transform:
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, CumulativeDistributionTransform)
            and self.distribution is other.distribution
        )

    def __repr__(self) -> str:
        return f"CumulativeDistributionTransform({self.distribution!r})"
