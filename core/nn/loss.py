"""Loss layers: ``CrossEntropyLoss``, ``NLLLoss``, ``MSELoss``, ``L1Loss``, ``BCELoss``, ..."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from ..tensor import Tensor
from . import functional as F
from .module import Module

__all__ = [
    "BCELoss",
    "BCEWithLogitsLoss",
    "CrossEntropyLoss",
    "L1Loss",
    "MSELoss",
    "NLLLoss",
    "SmoothL1Loss",
]


class _Loss(Module):
    """A loss layer: ``reduction`` (``"mean"``, ``"sum"`` or ``"none"``) is checked and kept."""

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(
                f"{type(self).__name__}: reduction must be 'mean', 'sum' or 'none', "
                f"got {reduction!r}"
            )
        self.reduction = reduction


class _PlainLoss(_Loss):
    """A loss with no setting but ``reduction``: ``_function`` of :mod:`plugrad.nn.functional`."""

    _function: ClassVar[Callable[..., Tensor]]

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return type(self)._function(input, target, reduction=self.reduction)


class MSELoss(_PlainLoss):
    """Mean squared error (:func:`~plugrad.nn.functional.mse_loss`).

    Examples
    --------
    >>> import plugrad
    >>> input, target = plugrad.tensor([1.0, 3.0]), plugrad.tensor([1.0, 1.0])
    >>> plugrad.nn.MSELoss()(input, target)
    tensor(2.)
    >>> plugrad.nn.MSELoss(reduction="none")(input, target)
    tensor([0., 4.])
    """

    _function = F.mse_loss


class L1Loss(_PlainLoss):
    """Mean absolute error (:func:`~plugrad.nn.functional.l1_loss`).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.L1Loss()(plugrad.tensor([1.0, 3.0]), plugrad.tensor([1.0, 1.0]))
    tensor(1.)
    """

    _function = F.l1_loss


class SmoothL1Loss(_Loss):
    """Squared below ``beta``, absolute above (:func:`~plugrad.nn.functional.smooth_l1_loss`).

    Examples
    --------
    >>> import plugrad
    >>> loss = plugrad.nn.SmoothL1Loss(beta=2.0)
    >>> loss(plugrad.tensor([1.0, 3.0]), plugrad.tensor([0.0, 0.0]))
    tensor(1.1250)
    """

    def __init__(self, reduction: str = "mean", beta: float = 1.0) -> None:
        super().__init__(reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class BCELoss(_Loss):
    """Binary cross-entropy of probabilities (:func:`~plugrad.nn.functional.binary_cross_entropy`).

    ``weight`` (broadcast against the input) is kept as a buffer.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.BCELoss()(plugrad.tensor([0.5, 0.9]), plugrad.tensor([0.0, 1.0]))
    tensor(0.3993)
    """

    def __init__(self, weight: Tensor | None = None, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.register_buffer("weight", weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class CrossEntropyLoss(_Loss):
    """Cross-entropy from logits (:func:`~plugrad.nn.functional.cross_entropy`).

    ``weight`` (one per class) is kept as a buffer, so it moves with :meth:`to`.

    Examples
    --------
    >>> import plugrad
    >>> loss = plugrad.nn.CrossEntropyLoss(label_smoothing=0.1)
    >>> loss(plugrad.tensor([[3.0, 0.0]]), plugrad.tensor([0]))
    tensor(0.1986)
    """

    def __init__(
        self,
        weight: Tensor | None = None,
        ignore_index: int = -100,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
    ) -> None:
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.cross_entropy(
            input,
            target,
            self.weight,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
            label_smoothing=self.label_smoothing,
        )


class NLLLoss(_Loss):
    """Negative log-likelihood of log-probabilities (:func:`~plugrad.nn.functional.nll_loss`).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.NLLLoss()(plugrad.tensor([[-0.1, -2.4]]), plugrad.tensor([1]))
    tensor(2.4000)
    """

    def __init__(
        self, weight: Tensor | None = None, ignore_index: int = -100, reduction: str = "mean"
    ) -> None:
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.nll_loss(
            input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction
        )


class BCEWithLogitsLoss(_Loss):
    """Binary cross-entropy from logits (``binary_cross_entropy_with_logits`` in functional).

    ``weight`` and ``pos_weight`` are kept as buffers.

    Examples
    --------
    >>> import plugrad
    >>> loss = plugrad.nn.BCEWithLogitsLoss(pos_weight=plugrad.tensor([2.0]))
    >>> loss(plugrad.tensor([[0.0]]), plugrad.tensor([[1.0]]))
    tensor(1.3863)
    """

    def __init__(
        self,
        weight: Tensor | None = None,
        reduction: str = "mean",
        pos_weight: Tensor | None = None,
    ) -> None:
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy_with_logits(
            input, target, self.weight, reduction=self.reduction, pos_weight=self.pos_weight
        )
