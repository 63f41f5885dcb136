"""Dropout layers: random zeroing while training, nothing in evaluation mode.

``Dropout`` zeroes single elements, ``Dropout1d``/``2d``/``3d`` whole channels,
``AlphaDropout`` and ``FeatureAlphaDropout`` keep the statistics of SELU networks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from ..errors import InvalidArgumentError
from ..tensor import Tensor
from . import functional as F
from .module import Module

__all__ = [
    "AlphaDropout",
    "Dropout",
    "Dropout1d",
    "Dropout2d",
    "Dropout3d",
    "FeatureAlphaDropout",
]


class _DropoutNd(Module):
    """A dropout layer: ``p`` checked and kept, ``_function(input, p, training, inplace)``."""

    _function: ClassVar[Callable[..., Tensor]]

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not isinstance(p, (int, float)) or isinstance(p, bool) or not 0.0 <= p <= 1.0:
            raise InvalidArgumentError(
                f"{type(self).__name__}: p must be a probability between 0 and 1, got {p!r}"
            )
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._function(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero each element with probability ``p`` in training mode, scaling the rest by ``1/(1-p)``.

    With ``inplace=True`` the input holds the result.

    In evaluation mode (:meth:`~plugrad.nn.Module.eval`) it returns its input.
    The masks come from plugrad's random generators (:func:`plugrad.manual_seed`).

    Examples
    --------
    >>> import plugrad
    >>> drop = plugrad.nn.Dropout(p=0.25)
    >>> drop
    Dropout(p=0.25, inplace=False)
    >>> x = plugrad.ones(8)
    >>> drop.eval()(x) is x
    True
    """

    _function = F.dropout


class Dropout1d(_DropoutNd):
    """Zero whole channels of ``(N, C, L)`` or ``(C, L)`` input
    (:func:`~plugrad.nn.functional.dropout1d`).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.Dropout1d(0.2)
    Dropout1d(p=0.2, inplace=False)
    """

    _function = F.dropout1d


class Dropout2d(_DropoutNd):
    """Zero whole channels of ``(N, C, H, W)`` input (:func:`~plugrad.nn.functional.dropout2d`).

    Examples
    --------
    >>> import plugrad
    >>> _ = plugrad.manual_seed(0)
    >>> plugrad.nn.Dropout2d()(plugrad.ones((1, 4, 2, 2)))[0, :, 0, 0]
    tensor([2., 2., 2., 0.])
    """

    _function = F.dropout2d


class Dropout3d(_DropoutNd):
    """Zero whole channels of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input
    (:func:`~plugrad.nn.functional.dropout3d`)."""

    _function = F.dropout3d


class AlphaDropout(_DropoutNd):
    """Dropout that keeps a SELU network's zero mean and unit variance
    (:func:`~plugrad.nn.functional.alpha_dropout`).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.AlphaDropout(0.1)
    AlphaDropout(p=0.1, inplace=False)
    """

    _function = F.alpha_dropout


class FeatureAlphaDropout(_DropoutNd):
    """:class:`AlphaDropout` of whole channels
    (:func:`~plugrad.nn.functional.feature_alpha_dropout`)."""

    _function = F.feature_alpha_dropout
