"""``plugrad.autograd.forward_ad``: PyTorch's forward-mode AD API, on the reverse-mode engine.

Inside a :class:`dual_level`, :func:`make_dual` pairs a tensor with a tangent
and :func:`unpack_dual` gives any tensor computed from such *dual* tensors
with its tangent, the Jacobian-vector product ``J @ t`` summed over the
level's duals::

    with forward_ad.dual_level():
        x = forward_ad.make_dual(x0, t)
        y, y_t = forward_ad.unpack_dual(f(x))

plugrad has no forward-mode rules: as :func:`plugrad.func.jvp`, a tangent is
the derivative, with respect to a dummy cotangent ``u``, of the reverse pass
``u @ J`` (the "double-vjp" construction). So the ops between the duals and
the tensor are recorded as for ``backward``, and every :func:`unpack_dual` of
a tensor computed from duals costs two backward passes through that graph;
:func:`plugrad.func.linearize` does it in one pass per tangent where many
tangents meet one point. What that brings, beside PyTorch's behaviour:

- an op whose backward is ``once_differentiable`` (a :class:`~plugrad.autograd.Function`'s)
  has no tangent: :func:`unpack_dual` raises the engine's
  :class:`~plugrad.errors.BackwardError`;
- the duals, and what is computed from them, require grad (PyTorch's do only where
  the primal did, so there ``backward()`` from them refuses), and ops run under
  :class:`~plugrad.no_grad` are not recorded: a tensor computed there has no
  tangent (PyTorch's forward mode ignores ``no_grad``);
- hooks of the tensors in between (``register_hook``, ``retain_grad``) see
  :func:`unpack_dual`'s passes;
- a dual is a copy of its primal's values (PyTorch's a view), and its tangent
  has the primal's dtype (PyTorch keeps one of another floating dtype).

To differentiate a model with respect to its parameters, call it with duals in
their place, ``plugrad.func.functional_call(model, duals, (x,))``, as in PyTorch.

Reverse mode goes on through the duals: the dual of a tensor that requires grad
passes gradients back to it, and the tangents unpacked from it are
differentiable with respect to it (and to tangents that require grad). As in
PyTorch, one level exists at a time (:func:`plugrad.func.jvp` composes, for
higher orders), and exiting it drops its tangents.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

from . import ops as _ops
from .dtypes import is_differentiable
from .errors import (
    ArgumentError,
    CallOrderError,
    DeviceMismatchError,
    DtypeError,
    InvalidArgumentError,
    ShapeError,
)
from .func import _pushforward, _reaches_outside, _running
from .grad_mode import enable_grad, is_grad_enabled
from .node import Node, split_edge
from .tensor import Tensor

__all__ = [
    "UnpackedDualTensor",
    "dual_level",
    "enter_dual_level",
    "exit_dual_level",
    "make_dual",
    "unpack_dual",
]

F = TypeVar("F", bound=Callable[..., Any])

#: The level in use (PyTorch's numbering: 0, or -1 for none), and its duals: by the id of
#: each dual's node, ``(source, tangent)``, where ``source`` is the tensor the tangents are
#: taken with respect to (a fresh leaf, or a copy of a primal that requires grad).
_current_level = [-1]
_duals: dict[int, tuple[Tensor, Tensor]] = {}


class UnpackedDualTensor(NamedTuple):
    """What :func:`unpack_dual` returns: ``(primal, tangent)``, also unpackable as a pair."""

    primal: Tensor
    tangent: Tensor | None


def enter_dual_level() -> int:
    """Enter a forward AD level, the one :func:`make_dual` and :func:`unpack_dual` then use.

    Returns
    -------
    int
        The level (0: one level exists at a time, as in PyTorch).

    Examples
    --------
    >>> from plugrad.autograd import forward_ad
    >>> level = forward_ad.enter_dual_level()
    >>> level
    0
    >>> forward_ad.exit_dual_level(level=level)
    """
    if _current_level[0] >= 0:
        raise CallOrderError(
            f"forward AD level {_current_level[0]} is in use, and levels do not nest (as in "
            "PyTorch); exit it first, or use plugrad.func.jvp, which composes, for "
            "higher-order forward derivatives"
        )
    _current_level[0] = 0
    return 0


def exit_dual_level(*, level: int | None = None) -> None:
    """Exit the forward AD level (``level``, the current one by default), dropping the
    tangents of its duals: :func:`unpack_dual` gives ``None`` for them afterwards.

    Examples
    --------
    >>> from plugrad.autograd import forward_ad
    >>> forward_ad.enter_dual_level()
    0
    >>> forward_ad.exit_dual_level()
    """
    current = _current_level[0]
    level = _level_argument(level, "exit_dual_level")
    if level is None:
        level = current
    if level != current:
        raise CallOrderError(
            f"exit_dual_level(level={level}): only the last level entered can be exited, and "
            f"that is {current}" + (" (none is in use)" if current < 0 else "")
        )
    if level < 0:
        raise CallOrderError(
            "exit_dual_level(): no forward AD level is in use; enter one with "
            "enter_dual_level() (or use the dual_level() context manager)"
        )
    _duals.clear()
    _current_level[0] = -1


class dual_level:
    """Context manager (and decorator) of a forward AD level: enters one, exits it after.

    ``with dual_level() as level:`` gives the level's number (0). Levels do not
    nest, as in PyTorch.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.autograd import forward_ad
    >>> with forward_ad.dual_level():
    ...     x = forward_ad.make_dual(plugrad.tensor([1.0, 2.0]), plugrad.ones(2))
    ...     forward_ad.unpack_dual(x * x).tangent
    tensor([2., 4.])
    """

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc_info: object) -> None:
        exit_dual_level()

    def __call__(self, func: F) -> F:
        @functools.wraps(func)
        def in_level(*args: Any, **kwargs: Any) -> Any:
            with dual_level():
                return func(*args, **kwargs)

        return in_level  # type: ignore[return-value]


def _level_argument(level: Any, name: str) -> int | None:
    if level is not None and (not isinstance(level, int) or isinstance(level, bool)):
        raise ArgumentError(f"{name}(level=...) takes an int or None, got {type(level).__name__}")
    return level


def _level_in_use(level: int, name: str) -> None:
    current = _current_level[0]
    if level != current:
        now = f"the one in use is {current}" if current >= 0 else "none is in use"
        raise InvalidArgumentError(
            f"{name}(level={level}): that forward AD level is not in use ({now}); leave "
            "level out to use the current one"
        )


def _duals_reached(tensor: Tensor) -> list[int]:
    """The keys in :data:`_duals` of the duals ``tensor`` was computed from (itself if one)."""
    if tensor._edge is None or not _duals:
        return []
    found, seen, stack = [], set(), [tensor._edge]
    while stack:
        node = split_edge(stack.pop())[0]
        if not isinstance(node, Node) or id(node) in seen:
            continue  # (a leaf tensor)
        seen.add(id(node))
        if id(node) in _duals:
            found.append(id(node))
            continue  # (a dual's primal has no tangent at this level: nothing behind it)
        stack.extend(e for e in node._edges if e is not None)
    return found


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """Return a dual tensor: ``tensor``'s values, with ``tangent`` as their forward gradient.

    The result is a new tensor (a copy of the values; PyTorch's is a view).
    Gradients of a backward pass through it reach ``tensor`` where that requires
    grad (with grad mode on), as in PyTorch.

    Parameters
    ----------
    tensor : Tensor
        The primal: floating point or complex, with no tangent at this level
        already (not a dual, nor computed from one).
    tangent : Tensor
        Of ``tensor``'s shape, dtype and device; kept as it is (not copied).
    level : int, optional
        The level (the current one by default).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.autograd import forward_ad
    >>> with forward_ad.dual_level():
    ...     x = forward_ad.make_dual(plugrad.tensor([0.0, 1.0]), plugrad.tensor([1.0, 0.0]))
    ...     forward_ad.unpack_dual(plugrad.exp(x)).tangent
    tensor([1., 0.])
    """
    level = _level_argument(level, "make_dual")
    if level is None:
        level = _current_level[0]
    if level < 0:
        raise CallOrderError(
            "make_dual() needs a forward AD level: call it inside 'with "
            "plugrad.autograd.forward_ad.dual_level():' (or after enter_dual_level())"
        )
    _level_in_use(level, "make_dual")
    for what, value in (("tensor", tensor), ("tangent", tangent)):
        if not isinstance(value, Tensor):
            raise ArgumentError(f"make_dual(): {what} is a {type(value).__name__}; pass a Tensor")
        if not is_differentiable(value.dtype):
            raise DtypeError(
                f"make_dual(): the {what} is {value.dtype.name}; forward AD takes "
                "floating-point or complex tensors only"
            )
    if tangent.shape != tensor.shape:
        raise ShapeError(
            f"make_dual(): the tangent has shape {tangent.shape} but the tensor has shape "
            f"{tensor.shape}; they must be the same (a tangent is not broadcast)"
        )
    if tangent.dtype != tensor.dtype:
        # (PyTorch keeps a tangent of another dtype; plugrad's tangents are computed in the
        # primal's dtype by the backward rules.)
        raise DtypeError(
            f"make_dual(): the tangent is {tangent.dtype.name} but the tensor is "
            f"{tensor.dtype.name}; pass tangent.to({tensor.dtype.name}) for a tangent of its dtype"
        )
    if tangent._device is not tensor._device:
        raise DeviceMismatchError(
            f"make_dual(): the tangent is on {tangent._device.name!r} but the tensor on "
            f"{tensor._device.name!r}; move it with .to({tensor._device.name!r})"
        )
    if _duals_reached(tensor):
        raise InvalidArgumentError(
            f"make_dual(): the tensor already has a tangent at level {level} (it is a dual "
            "tensor, or computed from one), as PyTorch refuses; make the dual of its "
            "unpack_dual(...).primal, or of the tensor it was computed from"
        )
    connected = tensor.requires_grad and is_grad_enabled()
    with enable_grad():
        # The tangents are taken with respect to ``source``, which nothing else uses: the
        # dual may be changed in place.
        source = _ops.positive(tensor) if connected else tensor.detach().requires_grad_()
        dual = _ops.positive(source)
    node = split_edge(dual._edge)[0]
    _duals[id(node)] = (source, tangent)
    # While the dual's node lives (a graph through the dual does) its tangent may be asked for.
    weakref.finalize(node, _duals.pop, id(node), None)
    return dual


def unpack_dual(tensor: Tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """Return ``(primal, tangent)`` of ``tensor`` at the forward AD level.

    ``primal`` has ``tensor``'s values (detached, unless ``tensor`` was computed
    from tensors outside the level that require grad, or a dual's primal that
    does, as in PyTorch); ``tangent`` is the sum over the level's duals of
    ``J @ tangent`` (``J`` the Jacobian of ``tensor`` with respect to the dual),
    a dual's own tangent as given to :func:`make_dual`, or ``None`` where
    ``tensor`` was computed from no dual, or no level is in use. Each tangent
    but a dual's own costs two backward passes through the graph from the
    duals to ``tensor``.

    Parameters
    ----------
    tensor : Tensor
    level : int, optional
        The level (the current one by default); a negative one gives
        ``(tensor, None)``, as no level does.

    Returns
    -------
    UnpackedDualTensor
        The named tuple ``(primal, tangent)``.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.autograd import forward_ad
    >>> with forward_ad.dual_level():
    ...     x = forward_ad.make_dual(plugrad.tensor([1.0, 2.0]), plugrad.tensor([1.0, 1.0]))
    ...     y, y_t = forward_ad.unpack_dual(x**3)
    >>> y, y_t
    (tensor([1., 8.]), tensor([ 3., 12.]))
    """
    if not isinstance(tensor, Tensor):
        raise ArgumentError(f"unpack_dual() takes a Tensor, got {type(tensor).__name__}")
    level = _level_argument(level, "unpack_dual")
    if level is None:
        level = _current_level[0]
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    _level_in_use(level, "unpack_dual")
    reached = _duals_reached(tensor)
    # Where the tensor reaches a tensor requiring grad other than the duals' fresh leaves,
    # its parts keep their graph (PyTorch's do whatever the grad mode).
    keep = tensor.requires_grad and _reaches_outside(
        [tensor], [source for source, _ in _duals.values()], _running[0] + 1
    )
    if keep:
        with enable_grad():
            primal = tensor.view_as(tensor)
    else:
        primal = tensor.detach()
    if not reached:
        return UnpackedDualTensor(primal, None)
    own = _duals.get(id(tensor._edge))  # (a dual not changed in place: its own tangent)
    if own is not None:
        return UnpackedDualTensor(primal, own[1])
    sources, tangents = zip(*(_duals[key] for key in reached))
    (column,) = _pushforward((tensor,), sources, strict=False)(tangents)
    if column is not None and not (keep or any(t.requires_grad for t in tangents)):
        column = column.detach()
    return UnpackedDualTensor(primal, column)
