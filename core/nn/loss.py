"""Loss layers: ``CrossEntropyLoss``, ``NLLLoss``, ``MSELoss``, ``HuberLoss``, ``KLDivLoss``, ..."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import ArgumentError, InvalidArgumentError, NotSupportedError, ShapeError
from ..tensor import Tensor
from . import functional as F
from .distance import PairwiseDistance
from .legacy_reduction import accepts_legacy_reduction
from .linear import Linear, _sizes
from .module import Module, ParameterPlacement, with_placement

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "BCELoss",
    "BCEWithLogitsLoss",
    "CosineEmbeddingLoss",
    "CTCLoss",
    "CrossEntropyLoss",
    "GaussianNLLLoss",
    "HingeEmbeddingLoss",
    "HuberLoss",
    "KLDivLoss",
    "L1Loss",
    "LinearCrossEntropyLoss",
    "MSELoss",
    "MarginRankingLoss",
    "MultiLabelMarginLoss",
    "MultiLabelSoftMarginLoss",
    "MultiMarginLoss",
    "NLLLoss",
    "PoissonNLLLoss",
    "SmoothL1Loss",
    "SoftMarginLoss",
    "TripletMarginLoss",
    "TripletMarginWithDistanceLoss",
]


class _Loss(Module):
    """A loss layer: ``reduction`` (``"mean"``, ``"sum"`` or ``"none"``) is checked and kept."""

    _reductions: ClassVar[tuple[str, ...]] = ("mean", "sum", "none")

    @accepts_legacy_reduction(after="self")
    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        if reduction not in self._reductions:
            *first, last = (repr(name) for name in self._reductions)
            raise InvalidArgumentError(
                f"{type(self).__name__}: reduction must be {', '.join(first)} or {last}, "
                f"got {reduction!r}"
            )
        self.reduction = reduction


class _FunctionLoss(_Loss):
    """A loss whose ``forward`` passes its inputs to :meth:`_compute`: ``_function`` of
    :mod:`plugrad.nn.functional`, with ``reduction=`` and ``name=value`` for each attribute
    named in ``_settings``."""

    _function: ClassVar[Callable[..., Tensor]]
    _settings: ClassVar[tuple[str, ...]] = ()

    def _compute(self, *inputs: Any) -> Tensor:
        settings = {name: getattr(self, name) for name in self._settings}
        return type(self)._function(*inputs, reduction=self.reduction, **settings)


class _InputTargetLoss(_FunctionLoss):
    """A loss of an ``input`` and a ``target``."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return self._compute(input, target)


class _WeightedLoss(_Loss):
    """A loss keeping ``weight`` as a buffer: ``_function(input, target, weight, reduction=)``."""

    _function: ClassVar[Callable[..., Tensor]]

    @accepts_legacy_reduction(after="weight")
    def __init__(self, weight: Tensor | None = None, reduction: str = "mean") -> None:
        super().__init__(reduction=reduction)
        self.register_buffer("weight", weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return type(self)._function(input, target, self.weight, reduction=self.reduction)


class MSELoss(_InputTargetLoss):
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


class L1Loss(_InputTargetLoss):
    """Mean absolute error (:func:`~plugrad.nn.functional.l1_loss`).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.L1Loss()(plugrad.tensor([1.0, 3.0]), plugrad.tensor([1.0, 1.0]))
    tensor(1.)
    """

    _function = F.l1_loss


class SmoothL1Loss(_InputTargetLoss):
    """Squared below ``beta``, absolute above (:func:`~plugrad.nn.functional.smooth_l1_loss`).

    Examples
    --------
    >>> import plugrad
    >>> loss = plugrad.nn.SmoothL1Loss(beta=2.0)
    >>> loss(plugrad.tensor([1.0, 3.0]), plugrad.tensor([0.0, 0.0]))
    tensor(1.1250)
    """

    _function = F.smooth_l1_loss
    _settings = ("beta",)

    @accepts_legacy_reduction(after="self")
    def __init__(self, reduction: str = "mean", beta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        self.beta = beta


class BCELoss(_WeightedLoss):
    """Binary cross-entropy of probabilities (:func:`~plugrad.nn.functional.binary_cross_entropy`).

    ``weight`` (broadcast against the input) is kept as a buffer.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.BCELoss()(plugrad.tensor([0.5, 0.9]), plugrad.tensor([0.0, 1.0]))
    tensor(0.3993)
    """

    _function = F.binary_cross_entropy


class CrossEntropyLoss(_WeightedLoss):
    """Cross-entropy from logits (:func:`~plugrad.nn.functional.cross_entropy`).

    ``weight`` (one per class) is kept as a buffer, so it moves with :meth:`to`.

    Examples
    --------
    >>> import plugrad
    >>> loss = plugrad.nn.CrossEntropyLoss(label_smoothing=0.1)
    >>> loss(plugrad.tensor([[3.0, 0.0]]), plugrad.tensor([0]))
    tensor(0.1986)
    """

    @accepts_legacy_reduction(after="weight")
    def __init__(
        self,
        weight: Tensor | None = None,
        ignore_index: int = -100,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
    ) -> None:
        super().__init__(weight, reduction=reduction)
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


class LinearCrossEntropyLoss(_WeightedLoss):
    """Cross-entropy of a linear map's outputs (:func:`~.functional.linear_cross_entropy`).

    The map's weight, logically ``(num_classes, *out_features, in_features)``, is kept flat
    in a :class:`Linear` ``linear`` (``linear.weight`` of shape
    ``(num_classes * prod(out_features), in_features)``, and ``linear.bias`` with
    ``bias=True``), initialized as :class:`Linear` is, so a PyTorch ``state_dict`` loads
    as it is. ``weight`` (one per class) is kept as a buffer.

    Parameters
    ----------
    in_features, num_classes : int
    out_features : tuple of int
        ``(d1, ..., dK)`` for a K-dimensional loss; ``()`` by default.
    bias : bool
        Whether the map adds a learnable bias (``False`` by default).
    device, dtype, backend : optional
        Of the parameters, as for :class:`Linear`.
    reduction, weight, ignore_index, label_smoothing, options
        As for :func:`~plugrad.nn.functional.linear_cross_entropy`.

    Examples
    --------
    >>> import plugrad
    >>> _ = plugrad.manual_seed(0)
    >>> loss = plugrad.nn.LinearCrossEntropyLoss(3, 4, out_features=(2,))
    >>> loss.linear.weight.shape
    (8, 3)
    >>> loss(plugrad.ones((5, 3)), plugrad.zeros((5, 2), dtype=plugrad.int64)).shape
    ()
    """

    @with_placement
    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        out_features: tuple[int, ...] = (),
        bias: bool = False,
        reduction: str = "mean",
        weight: Tensor | None = None,
        ignore_index: int | None = None,
        label_smoothing: float = 0.0,
        options: Any = None,
        **placement: Unpack[ParameterPlacement],
    ) -> None:
        layer = type(self).__name__
        if not isinstance(out_features, (tuple, list)):
            raise ArgumentError(
                f"{layer}: out_features must be a tuple of ints (d1, ..., dK), got {out_features!r}"
            )
        (num_classes,) = _sizes(layer, num_classes=num_classes)
        out_features = tuple(
            _sizes(layer, **{f"out_features[{i}]": d for i, d in enumerate(out_features)})
        )
        if weight is not None and (
            not isinstance(weight, Tensor) or weight.shape != (num_classes,)
        ):
            raise ShapeError(
                f"{layer}: weight must be a tensor of shape ({num_classes},), one per class, "
                f"got {getattr(weight, 'shape', type(weight).__name__)}"
            )
        if not isinstance(label_smoothing, (int, float)) or not 0.0 <= label_smoothing <= 1.0:
            raise InvalidArgumentError(
                f"{layer}: label_smoothing must be in [0, 1], got {label_smoothing!r}"
            )
        if ignore_index is not None and (
            not isinstance(ignore_index, int) or isinstance(ignore_index, bool)
        ):
            raise ArgumentError(
                f"{layer}: ignore_index must be an int or None, got {ignore_index!r}"
            )
        if options is not None:
            raise NotSupportedError(
                f"{layer}: options={options!r} asks for PyTorch's chunked computation, which "
                "plugrad does not have; pass options=None: the result is the unchunked one, "
                "which the chunked one only computes with less memory"
            )
        super().__init__(weight, reduction=reduction)
        self.num_classes = num_classes
        self.out_features = out_features
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        # Kept flat, as PyTorch keeps it (Linear takes a 2-d weight); reshaped in forward.
        self.linear = Linear(
            in_features, math.prod(out_features) * num_classes, bias=bias, **placement
        )
        self.options = options

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        shape = (self.num_classes, *self.out_features)
        bias = self.linear.bias
        return F.linear_cross_entropy(
            input,
            self.linear.weight.reshape((*shape, self.linear.in_features)),
            target,
            linear_bias=None if bias is None else bias.reshape(shape),
            weight=self.weight,
            reduction=self.reduction,
            ignore_index=self.ignore_index,
            label_smoothing=self.label_smoothing,
        )

    def extra_repr(self) -> str:
        return (
            f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
            f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
            f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
            f"label_smoothing={self.label_smoothing}, options={self.options}"
        )


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of log-probabilities (:func:`~plugrad.nn.functional.nll_loss`).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.NLLLoss()(plugrad.tensor([[-0.1, -2.4]]), plugrad.tensor([1]))
    tensor(2.4000)
    """

    @accepts_legacy_reduction(after="weight")
    def __init__(
        self, weight: Tensor | None = None, ignore_index: int = -100, reduction: str = "mean"
    ) -> None:
        super().__init__(weight, reduction=reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.nll_loss(
            input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction
        )


class BCEWithLogitsLoss(_WeightedLoss):
    """Binary cross-entropy from logits (``binary_cross_entropy_with_logits`` in functional).

    ``weight`` and ``pos_weight`` are kept as buffers.

    Examples
    --------
    >>> import plugrad
    >>> loss = plugrad.nn.BCEWithLogitsLoss(pos_weight=plugrad.tensor([2.0]))
    >>> loss(plugrad.tensor([[0.0]]), plugrad.tensor([[1.0]]))
    tensor(1.3863)
    """

    @accepts_legacy_reduction(after="weight")
    def __init__(
        self,
        weight: Tensor | None = None,
        reduction: str = "mean",
        pos_weight: Tensor | None = None,
    ) -> None:
        super().__init__(weight, reduction=reduction)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy_with_logits(
            input, target, self.weight, reduction=self.reduction, pos_weight=self.pos_weight
        )


class HuberLoss(_InputTargetLoss):
    """Squared below ``delta``, ``delta``-scaled absolute above
    (:func:`~plugrad.nn.functional.huber_loss`).

    Examples
    --------
    >>> import plugrad
    >>> loss = plugrad.nn.HuberLoss(delta=2.0)
    >>> loss(plugrad.tensor([1.0, 3.0]), plugrad.tensor([0.0, 0.0]))
    tensor(2.2500)
    """

    _function = F.huber_loss
    _settings = ("delta",)

    @accepts_legacy_reduction
    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        self.delta = delta


class KLDivLoss(_InputTargetLoss):
    """Kullback-Leibler divergence from log-probabilities (:func:`~plugrad.nn.functional.kl_div`).

    ``reduction`` may also be ``"batchmean"``, the mathematical KL divergence
    averaged over the batch.

    Examples
    --------
    >>> import plugrad
    >>> loss = plugrad.nn.KLDivLoss(reduction="batchmean", log_target=True)
    >>> log_p = plugrad.log(plugrad.tensor([[0.5, 0.5]]))
    >>> loss(log_p, log_p)
    tensor(0.)
    """

    _function = F.kl_div
    _settings = ("log_target",)
    _reductions = ("mean", "sum", "none", "batchmean")

    @accepts_legacy_reduction(after="self")
    def __init__(self, reduction: str = "mean", log_target: bool = False) -> None:
        super().__init__(reduction=reduction)
        self.log_target = log_target


class _MarginLoss(_FunctionLoss):
    """A loss with a ``margin`` and ``reduction``: ``_function(*inputs, margin, reduction)``."""

    _settings = ("margin",)

    @accepts_legacy_reduction(after="margin")
    def __init__(self, margin: float = 0.0, reduction: str = "mean") -> None:
        super().__init__(reduction=reduction)
        self.margin = margin


class _PairMarginLoss(_MarginLoss):
    """A margin loss of two inputs and a target: ``_function(input1, input2, target, ...)``."""

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return self._compute(input1, input2, target)


class MarginRankingLoss(_PairMarginLoss):
    """Ranking hinge ``max(0, -target * (input1 - input2) + margin)``
    (:func:`~plugrad.nn.functional.margin_ranking_loss`).

    Examples
    --------
    >>> import plugrad
    >>> loss = plugrad.nn.MarginRankingLoss(margin=0.5)
    >>> loss(plugrad.tensor([1.0]), plugrad.tensor([0.8]), plugrad.tensor([1.0]))
    tensor(0.3000)
    """

    _function = F.margin_ranking_loss


class HingeEmbeddingLoss(_MarginLoss):
    """``input`` for alike pairs (target 1), ``max(0, margin - input)`` for others (target -1)
    (:func:`~plugrad.nn.functional.hinge_embedding_loss`).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.HingeEmbeddingLoss()(plugrad.tensor([0.3]), plugrad.tensor([-1.0]))
    tensor(0.7000)
    """

    _function = F.hinge_embedding_loss

    @accepts_legacy_reduction(after="margin")
    def __init__(self, margin: float = 1.0, reduction: str = "mean") -> None:
        super().__init__(margin, reduction=reduction)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return self._compute(input, target)


class CosineEmbeddingLoss(_PairMarginLoss):
    """``1 - cos`` for alike pairs, ``max(0, cos - margin)`` for others
    (:func:`~plugrad.nn.functional.cosine_embedding_loss`).

    Examples
    --------
    >>> import plugrad
    >>> loss = plugrad.nn.CosineEmbeddingLoss()
    >>> loss(plugrad.tensor([[1.0, 0.0]]), plugrad.tensor([[0.0, 1.0]]), plugrad.tensor([1.0]))
    tensor(1.)
    """

    _function = F.cosine_embedding_loss


class SoftMarginLoss(_InputTargetLoss):
    """Two-class logistic loss ``log(1 + exp(-target * input))``
    (:func:`~plugrad.nn.functional.soft_margin_loss`).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.SoftMarginLoss()(plugrad.tensor([0.0]), plugrad.tensor([1.0]))
    tensor(0.6931)
    """

    _function = F.soft_margin_loss


class _TripletLoss(_FunctionLoss):
    """A triplet loss: its ``margin`` (checked positive), ``swap`` and ``reduction``."""

    def __init__(self, margin: float, swap: bool, reduction: str) -> None:
        super().__init__(reduction=reduction)
        if margin <= 0:
            raise InvalidArgumentError(f"{type(self).__name__}: margin must be > 0, got {margin!r}")
        self.margin, self.swap = margin, swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return self._compute(anchor, positive, negative)


class TripletMarginLoss(_TripletLoss):
    """``max(0, margin + d(anchor, positive) - d(anchor, negative))``
    (:func:`~plugrad.nn.functional.triplet_margin_loss`).

    Examples
    --------
    >>> import plugrad
    >>> loss = plugrad.nn.TripletMarginLoss(margin=1.0, p=1.0)
    >>> a, pos, neg = plugrad.zeros((1, 2)), plugrad.ones((1, 2)), plugrad.full((1, 2), 2.0)
    >>> loss(a, pos, neg)
    tensor(0.)
    """

    _function = F.triplet_margin_loss
    _settings = ("margin", "p", "eps", "swap")

    @accepts_legacy_reduction(after="swap")
    def __init__(
        self,
        margin: float = 1.0,
        p: float = 2.0,
        eps: float = 1e-6,
        swap: bool = False,
        reduction: str = "mean",
    ) -> None:
        super().__init__(margin, swap, reduction)
        self.p, self.eps = p, eps


class TripletMarginWithDistanceLoss(_TripletLoss):
    """:class:`TripletMarginLoss` with a distance of one's own
    (:func:`~plugrad.nn.functional.triplet_margin_with_distance_loss`).

    Without ``distance_function`` the distance is a :class:`PairwiseDistance`
    (kept as a submodule, as PyTorch's).

    Examples
    --------
    >>> import plugrad
    >>> loss = plugrad.nn.TripletMarginWithDistanceLoss(margin=0.5)
    >>> loss
    TripletMarginWithDistanceLoss(
      (distance_function): PairwiseDistance()
    )
    >>> loss(plugrad.zeros((1, 2)), plugrad.zeros((1, 2)), plugrad.ones((1, 2)))
    tensor(0.)
    """

    _function = F.triplet_margin_with_distance_loss
    _settings = ("distance_function", "margin", "swap")

    @accepts_legacy_reduction
    def __init__(
        self,
        *,
        distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
        margin: float = 1.0,
        swap: bool = False,
        reduction: str = "mean",
    ) -> None:
        super().__init__(margin, swap, reduction)
        if distance_function is not None and not callable(distance_function):
            raise ArgumentError(
                "TripletMarginWithDistanceLoss: distance_function must be callable, got "
                f"{type(distance_function).__name__}"
            )
        self.distance_function = (
            distance_function if distance_function is not None else PairwiseDistance()
        )


class MultiLabelMarginLoss(_InputTargetLoss):
    """Multi-label hinge loss (:func:`~plugrad.nn.functional.multilabel_margin_loss`).

    Examples
    --------
    >>> import plugrad
    >>> loss = plugrad.nn.MultiLabelMarginLoss()
    >>> loss(plugrad.tensor([[0.1, 0.2, 0.4, 0.8]]), plugrad.tensor([[3, 0, -1, 1]]))
    tensor(0.8500)
    """

    _function = F.multilabel_margin_loss


class PoissonNLLLoss(_FunctionLoss):
    """Poisson negative log-likelihood (:func:`~plugrad.nn.functional.poisson_nll_loss`).

    Examples
    --------
    >>> import plugrad
    >>> loss = plugrad.nn.PoissonNLLLoss()
    >>> loss(plugrad.tensor([0.0]), plugrad.tensor([1.0]))
    tensor(1.)
    """

    _function = F.poisson_nll_loss
    _settings = ("log_input", "full", "eps")

    @accepts_legacy_reduction(after="full")
    def __init__(
        self,
        log_input: bool = True,
        full: bool = False,
        eps: float = 1e-8,
        reduction: str = "mean",
    ) -> None:
        super().__init__(reduction=reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input: Tensor, target: Tensor) -> Tensor:
        return self._compute(log_input, target)


class GaussianNLLLoss(_FunctionLoss):
    """Gaussian negative log-likelihood, ``forward(input, target, var)``
    (:func:`~plugrad.nn.functional.gaussian_nll_loss`).

    Examples
    --------
    >>> import plugrad
    >>> loss = plugrad.nn.GaussianNLLLoss()
    >>> loss(plugrad.tensor([0.0, 1.0]), plugrad.tensor([1.0, 1.0]), plugrad.ones(2))
    tensor(0.2500)
    """

    _function = F.gaussian_nll_loss
    _settings = ("full", "eps")

    @accepts_legacy_reduction
    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean") -> None:
        super().__init__(reduction=reduction)
        self.full, self.eps = full, eps

    def forward(self, input: Tensor, target: Tensor, var: Tensor | float) -> Tensor:
        return self._compute(input, target, var)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Binary cross-entropy from logits per label, averaged over the labels
    (:func:`~plugrad.nn.functional.multilabel_soft_margin_loss`).

    ``weight`` (one per class) is kept as a buffer.

    Examples
    --------
    >>> import plugrad
    >>> loss = plugrad.nn.MultiLabelSoftMarginLoss()
    >>> loss(plugrad.tensor([[0.0, 0.0]]), plugrad.tensor([[1.0, 0.0]]))
    tensor(0.6931)
    """

    _function = F.multilabel_soft_margin_loss


class MultiMarginLoss(_InputTargetLoss):
    """Multi-class hinge loss (:func:`~plugrad.nn.functional.multi_margin_loss`).

    ``weight`` (one per class) is kept as a buffer.

    Examples
    --------
    >>> import plugrad
    >>> loss = plugrad.nn.MultiMarginLoss()
    >>> loss(plugrad.tensor([[0.1, 0.2, 0.4, 0.8]]), plugrad.tensor([3]))
    tensor(0.3250)
    """

    _function = F.multi_margin_loss
    _settings = ("p", "margin", "weight")

    @accepts_legacy_reduction(after="weight")
    def __init__(
        self,
        p: int = 1,
        margin: float = 1.0,
        weight: Tensor | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(reduction=reduction)
        if p not in (1, 2):
            raise InvalidArgumentError(f"MultiMarginLoss: p must be 1 or 2, got {p!r}")
        if weight is not None and (not isinstance(weight, Tensor) or weight.ndim != 1):
            raise InvalidArgumentError(
                "MultiMarginLoss: weight must be a 1-d Tensor (one per class)"
            )
        self.p, self.margin = p, margin
        self.register_buffer("weight", weight)


class CTCLoss(_FunctionLoss):
    """Connectionist temporal classification loss (:func:`~plugrad.nn.functional.ctc_loss`).

    Called with ``(log_probs, targets, input_lengths, target_lengths)``; ``blank``
    is the class of the blank, ``zero_infinity`` gives 0 for targets no alignment
    fits.

    Examples
    --------
    >>> import plugrad
    >>> loss = plugrad.nn.CTCLoss(reduction="sum")
    >>> log_probs = plugrad.zeros(4, 1, 3).log_softmax(2)
    >>> loss(log_probs, plugrad.tensor([[1, 2]]), [4], [2])
    tensor(1.6864)
    """

    _function = F.ctc_loss
    _settings = ("blank", "zero_infinity")

    def __init__(
        self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False
    ) -> None:
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(
        self, log_probs: Tensor, targets: Tensor, input_lengths: Any, target_lengths: Any
    ) -> Tensor:
        return self._compute(log_probs, targets, input_lengths, target_lengths)
