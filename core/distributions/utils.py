"""Helpers shared by the distributions: broadcasting parameters, probabilities and logits.

Examples
--------
>>> import plugrad
>>> from plugrad.distributions.utils import broadcast_all
>>> loc, scale = broadcast_all(plugrad.zeros(3), 1.0)
>>> scale
tensor([1., 1., 1.])
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from numbers import Number
from typing import Any

from .. import ops as _ops
from ..creation import asarray
from ..dtype_functions import broadcast_shapes, finfo
from ..errors import ArgumentError, ConvergenceError, InvalidArgumentError
from ..grad_mode import enable_grad
from ..nn.functional import log_softmax, sigmoid, softmax
from ..pytorch_names import get_default_dtype
from ..tensor import Tensor

__all__ = [
    "broadcast_all",
    "clamp_probs",
    "lazy_property",
    "logits_to_probs",
    "probs_to_logits",
    "sum_rightmost",
]

#: Rounds of proposals a rejection sampler makes before giving up.
_MAX_ROUNDS = 1000


class lazy_property(functools.cached_property):
    """A value a distribution derives from its parameters on first use, then keeps.

    It is computed with gradients on, as PyTorch's ``lazy_property``: first asked
    for under :class:`~plugrad.no_grad` (or inside ``sample()``, which runs so), a
    plain cached property would keep a value with no path back to the
    parameters, and every later ``log_prob`` would silently get no gradient.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import Categorical
    >>> p = plugrad.tensor([0.25, 0.75], requires_grad=True)
    >>> d = Categorical(probs=p)
    >>> with plugrad.no_grad():
    ...     _ = d.logits
    >>> d.log_prob(plugrad.tensor(1)).requires_grad
    True
    """

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        with enable_grad():
            return super().__get__(instance, owner)


def broadcast_all(*values: Tensor | float) -> list[Tensor]:
    """The values as tensors of one broadcast shape, as PyTorch's ``broadcast_all``.

    Numbers become tensors of the first tensor's dtype and device (of the
    default dtype and device when all are numbers). A tensor of the broadcast
    shape is returned itself; the others become views that pass gradients back
    to the tensors given.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions.utils import broadcast_all
    >>> [v.shape for v in broadcast_all(plugrad.zeros(2, 1), plugrad.zeros(3), 0.5)]
    [(2, 3), (2, 3), (2, 3)]
    """
    first = next((v for v in values if isinstance(v, Tensor)), None)
    dtype = first.dtype if first is not None else get_default_dtype()
    device = first.device if first is not None else None
    tensors = []
    for value in values:
        if isinstance(value, Tensor):
            tensors.append(value)
        elif isinstance(value, Number) and not isinstance(value, bool | complex):
            tensors.append(asarray(value, dtype=dtype, device=device))
        else:
            raise ArgumentError(
                f"a distribution's parameters must be Tensors or real numbers, got "
                f"{type(value).__name__} {value!r}"
            )
    if len({t.shape for t in tensors}) == 1:
        return tensors
    shape = broadcast_shapes(*(t.shape for t in tensors))
    # A tensor of the full shape is kept itself, as PyTorch's: dist.loc is the Parameter given.
    return [t if t.shape == shape else _ops.broadcast_to(t, shape) for t in tensors]


def sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """Sum ``value`` over its ``dim`` right-most axes (none when ``dim`` is 0)."""
    if dim == 0:
        return value
    return _ops.sum(value, axis=tuple(range(-dim, 0)))


def clamp_probs(probs: Tensor) -> Tensor:
    """``probs`` clipped to ``[eps, 1 - eps]`` for its dtype's ``eps``, so that logs stay finite."""
    eps = finfo(probs.dtype).eps
    return _ops.clip(probs, eps, 1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """The logits of probabilities: ``log(p) - log1p(-p)`` when binary, else ``log(p)``.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions.utils import probs_to_logits
    >>> probs_to_logits(plugrad.tensor([0.5]), is_binary=True)
    tensor([0.])
    """
    clamped = clamp_probs(probs)
    if is_binary:
        return _ops.log(clamped) - _ops.log1p(-clamped)
    return _ops.log(clamped)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """The probabilities of logits: ``sigmoid`` when binary, else ``softmax`` over the last axis.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions.utils import logits_to_probs
    >>> logits_to_probs(plugrad.tensor([0.0, 0.0]))
    tensor([0.5000, 0.5000])
    """
    if is_binary:
        return sigmoid(logits)
    return softmax(logits, dim=-1)


def normalized_logits(logits: Tensor) -> Tensor:
    """Logits shifted so that their exponentials sum to 1 over the last axis."""
    return log_softmax(logits, dim=-1)


def _as_tuple(value: Any, what: str) -> tuple[int, ...]:
    if isinstance(value, int) and not isinstance(value, bool):
        raise ArgumentError(
            f"{what} must be a tuple of ints, got the int {value}; write ({value},)"
        )
    try:
        shape = tuple(value)
    except TypeError:
        raise ArgumentError(f"{what} must be a tuple of ints, got {value!r}") from None
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
        raise ArgumentError(f"{what} must be a tuple of non-negative ints, got {value!r}")
    return shape


def _block_lengths(what: str, lengths: Any, count: int, per: str) -> list[int]:
    """The lengths of ``count`` blocks along an axis: ``lengths`` as a list (1 each when it is
    None), one non-negative int ``per`` block (``what`` names the caller in the error)."""
    checked = [1] * count if lengths is None else list(lengths)
    if len(checked) != count or not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in checked
    ):
        raise InvalidArgumentError(
            f"{what}: lengths must be one non-negative int per {per} ({count}), got {lengths!r}"
        )
    return checked


def _first_accepted(
    what: str, propose: Callable[[], tuple[Tensor, Tensor]], value: Tensor, done: Tensor
) -> Tensor:
    """Each element's first accepted proposal, drawn by rounds of ``propose()``.

    ``propose()`` returns ``(accepted, proposal)`` for every element; the
    elements ``done`` already keep their ``value``. The rounds go on while some
    element has no value, for at most ``_MAX_ROUNDS`` (``what`` names the
    sampler in the error then).
    """
    for _ in range(_MAX_ROUNDS):
        accepted, proposal = propose()
        value = _ops.where(accepted & ~done, proposal, value)
        done = done | accepted
        if bool(_ops.all(done)):
            return value
    raise ConvergenceError(
        f"no {what} proposal was accepted for some elements in {_MAX_ROUNDS} rounds"
    )
