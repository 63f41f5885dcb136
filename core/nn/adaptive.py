"""``AdaptiveLogSoftmaxWithLoss``: Grave et al.'s adaptive softmax, with its loss."""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from .. import ops as _ops
from ..creation import zeros_like
from ..errors import (
    ArgumentError,
    DtypeError,
    IndexOutOfRangeError,
    InvalidArgumentError,
    ShapeError,
)
from ..tensor import Tensor
from . import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module, ParameterPlacement

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["AdaptiveLogSoftmaxWithLoss"]


class _ASMoutput(NamedTuple):
    """What :class:`AdaptiveLogSoftmaxWithLoss` returns: each target's log-probability
    (``output``) and their negative mean (``loss``)."""

    output: Tensor
    loss: Tensor


class AdaptiveLogSoftmaxWithLoss(Module):
    """Efficient softmax approximation of Grave et al. ("Efficient softmax approximation
    for GPUs"), for many classes of very unequal frequencies.

    The classes, most frequent first, are split at ``cutoffs``: the ``head`` (a
    ``Linear(in_features, cutoffs[0] + len(cutoffs))``) scores the first
    ``cutoffs[0]`` classes and one entry for each further cluster; cluster ``i``
    (from 1) is scored by ``tail[i - 1]``, a ``Linear(in_features, hsz)`` then a
    ``Linear(hsz, cluster size)`` with ``hsz = in_features // div_value ** i``. A
    class's log-probability is its head's log-softmax entry, plus, for a class of a
    cluster, its log-softmax within the cluster. The parameters are named as
    PyTorch's (``head.weight``, ``tail.0.0.weight``, ...), so its weights load.

    Parameters
    ----------
    in_features : int
        The input's size.
    n_classes : int
        The number of classes.
    cutoffs : sequence of int
        Increasing, unique, each in ``[1, n_classes - 1]``.
    div_value : float
        Divides ``in_features`` once more for each further cluster.
    head_bias : bool
        Give the head a bias.
    device, dtype, backend
        Where and how the parameters are made, as for :class:`Linear`.

    Examples
    --------
    >>> import plugrad
    >>> _ = plugrad.manual_seed(0)
    >>> asm = plugrad.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[4, 8])
    >>> result = asm(plugrad.randn(3, 8), plugrad.tensor([0, 5, 9]))
    >>> result.output.shape, result.loss.shape
    ((3,), ())
    >>> asm.log_prob(plugrad.randn(3, 8)).exp().sum(dim=1)
    tensor([1.0000, 1.0000, 1.0000], grad_fn=<SumBackward>)
    """

    in_features: int
    n_classes: int
    cutoffs: list[int]
    div_value: float
    head_bias: bool
    head: Linear
    tail: ModuleList

    def __init__(
        self,
        in_features: int,
        n_classes: int,
        cutoffs: Sequence[int],
        div_value: float = 4.0,
        head_bias: bool = False,
        **placement: Unpack[ParameterPlacement],
    ) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if not cutoffs:
            raise InvalidArgumentError(
                "AdaptiveLogSoftmaxWithLoss: cutoffs is empty; give at least one cutoff"
            )
        if (
            not all(isinstance(c, numbers.Integral) and not isinstance(c, bool) for c in cutoffs)
            or cutoffs != sorted(cutoffs)
            or len(set(cutoffs)) != len(cutoffs)
            or min(cutoffs) <= 0
            or max(cutoffs) > n_classes - 1
        ):
            raise InvalidArgumentError(
                "AdaptiveLogSoftmaxWithLoss: cutoffs must be unique increasing ints, each "
                f"between 1 and n_classes - 1 = {n_classes - 1}; got {cutoffs}"
            )
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = [int(c) for c in cutoffs] + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, **placement)
        self.tail = ModuleList()
        for i, (start, stop) in enumerate(itertools.pairwise(self.cutoffs)):
            hidden = int(in_features // (div_value ** (i + 1)))
            self.tail.append(
                Sequential(
                    Linear(in_features, hidden, bias=False, **placement),
                    Linear(hidden, stop - start, bias=False, **placement),
                )
            )

    def reset_parameters(self) -> None:
        """Draw the parameters afresh, as each ``Linear`` draws its own."""
        self.head.reset_parameters()
        for projection in self.tail:
            for layer in projection:  # type: ignore[attr-defined]
                layer.reset_parameters()

    def forward(self, input: Tensor, target: Tensor) -> _ASMoutput:
        """Each target's log-probability and the loss, their negative mean.

        ``input`` is ``(N, in_features)`` with ``target`` ``(N,)``, or
        ``(in_features,)`` with a 0-d ``target`` (then ``output`` is 0-d). Only the
        clusters that some target falls in are evaluated, on those rows only.
        """
        name = "AdaptiveLogSoftmaxWithLoss"
        if not isinstance(input, Tensor) or not isinstance(target, Tensor):
            raise ArgumentError(f"{name}: input and target must be Tensors")
        if target.ndim == 1:
            if input.ndim != 2:
                raise ShapeError(
                    f"{name}: a 1-D target needs a 2-D input (N, in_features), got {input.shape}"
                )
            if input.shape[0] != target.shape[0]:
                raise ShapeError(
                    f"{name}: input and target must have the same batch size, got "
                    f"{input.shape[0]} and {target.shape[0]}"
                )
        elif target.ndim == 0:
            if input.ndim != 1:
                raise ShapeError(
                    f"{name}: a 0-d target needs a 1-D input (in_features,), got {input.shape}"
                )
        else:
            raise ShapeError(f"{name}: target must be 0-d or 1-D, got shape {target.shape}")
        if target.dtype.kind not in ("signed integer", "unsigned integer"):
            raise DtypeError(f"{name}: target must hold integer classes, got {target.dtype.name}")
        batched = target.ndim == 1
        if not batched:
            input, target = _ops.expand_dims(input, axis=0), _ops.expand_dims(target, axis=0)
        if target.shape[0] and (
            bool(_ops.any(target < 0)) or bool(_ops.any(target >= self.n_classes))
        ):
            raise IndexOutOfRangeError(
                f"{name}: targets must be in [0, {self.n_classes - 1}], got values in "
                f"[{int(_ops.min(target))}, {int(_ops.max(target))}]"
            )
        # Each row's head entry: its class in the shortlist, else its cluster's entry.
        cluster = sum(
            (_ops.astype(target >= c, target.dtype) for c in self.cutoffs[:-1]),
            start=zeros_like(target),
        )
        head_index = _ops.where(cluster == 0, target, cluster + (self.shortlist_size - 1))
        head_logprob = F.log_softmax(self.head(input), dim=1)
        output = _ops.take_along_axis(head_logprob, _ops.expand_dims(head_index, axis=1), axis=1)
        output = output[:, 0]
        for i, low in enumerate(self.cutoffs[:-1]):
            (rows,) = _ops.nonzero(cluster == i + 1)
            if not rows.shape[0]:
                continue
            logprob = F.log_softmax(self.tail[i](_ops.take(input, rows, axis=0)), dim=1)
            within = _ops.expand_dims(_ops.take(target, rows, axis=0) - low, axis=1)
            local = _ops.take_along_axis(logprob, within, axis=1)[:, 0]
            # Add each row's within-cluster term at its place (zero for the other rows).
            output = output + _ops.scatter_add(local, key=(rows,), shape=output.shape)
        loss = _ops.mean(-output)
        return _ASMoutput(output if batched else output[0], loss)

    def _full_log_prob(self, input: Tensor, head_output: Tensor) -> Tensor:
        """The log-probabilities of every class, ``(N, n_classes)``."""
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, : self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            entry = head_logprob[:, self.shortlist_size + i : self.shortlist_size + i + 1]
            parts.append(cluster_logprob + entry)
        return _ops.concat(parts, axis=1)

    def _rows(self, input: Tensor, method: str) -> Tensor:
        if not isinstance(input, Tensor) or input.ndim not in (1, 2):
            shape = input.shape if isinstance(input, Tensor) else type(input).__name__
            raise ShapeError(
                f"AdaptiveLogSoftmaxWithLoss.{method}(): input must be (N, in_features) or "
                f"(in_features,), got {shape}"
            )
        return input if input.ndim == 2 else _ops.expand_dims(input, axis=0)

    def log_prob(self, input: Tensor) -> Tensor:
        """The log-probability of every class: ``(N, n_classes)`` for ``(N, in_features)``
        (``(n_classes,)`` for ``(in_features,)``, which PyTorch refuses).

        Examples
        --------
        >>> import plugrad
        >>> asm = plugrad.nn.AdaptiveLogSoftmaxWithLoss(4, 6, cutoffs=[3])
        >>> asm.log_prob(plugrad.ones((2, 4))).shape
        (2, 6)
        """
        rows = self._rows(input, "log_prob")
        out = self._full_log_prob(rows, self.head(rows))
        return out if input.ndim == 2 else out[0]

    def predict(self, input: Tensor) -> Tensor:
        """The most probable class of each row, as ``log_prob(input).argmax(dim=1)``; the
        tails are evaluated only when some row's head prefers a cluster.

        Examples
        --------
        >>> import plugrad
        >>> asm = plugrad.nn.AdaptiveLogSoftmaxWithLoss(4, 6, cutoffs=[3])
        >>> asm.predict(plugrad.ones((2, 4))).shape
        (2,)
        """
        rows = self._rows(input, "predict")
        head_output = self.head(rows)
        best = _ops.argmax(head_output, axis=1)
        in_cluster = best >= self.shortlist_size
        if bool(_ops.any(in_cluster)):
            # A shortlist class the head prefers beats every class of every cluster.
            full = _ops.argmax(self._full_log_prob(rows, head_output), axis=1)
            best = _ops.where(in_cluster, full, best)
        return best if input.ndim == 2 else best[0]
