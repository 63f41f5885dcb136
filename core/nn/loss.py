"""Loss layers: ``CrossEntropyLoss``, ``NLLLoss``, ``MSELoss``, ``BCEWithLogitsLoss``."""

from __future__ import annotations

from ..tensor import Tensor
from . import functional as F
from .module import Module

__all__ = ["BCEWithLogitsLoss", "CrossEntropyLoss", "MSELoss", "NLLLoss"]


def _check_reduction(layer: str, reduction: str) -> str:
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{layer}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    return reduction


class MSELoss(Module):
    """Mean squared error (:func:`~plugrad.nn.functional.mse_loss`).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.MSELoss()(plugrad.tensor([1.0, 3.0]), plugrad.tensor([1.0, 1.0]))
    tensor(2.)
    """

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = _check_reduction("MSELoss", reduction)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.mse_loss(input, target, reduction=self.reduction)


class CrossEntropyLoss(Module):
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
        super().__init__()
        self.register_buffer("weight", weight)
        self.ignore_index = ignore_index
        self.reduction = _check_reduction("CrossEntropyLoss", reduction)
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


class NLLLoss(Module):
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
        super().__init__()
        self.register_buffer("weight", weight)
        self.ignore_index = ignore_index
        self.reduction = _check_reduction("NLLLoss", reduction)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.nll_loss(
            input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction
        )


class BCEWithLogitsLoss(Module):
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
        super().__init__()
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)
        self.reduction = _check_reduction("BCEWithLogitsLoss", reduction)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy_with_logits(
            input, target, self.weight, reduction=self.reduction, pos_weight=self.pos_weight
        )
