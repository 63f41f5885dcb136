"""The base of Adam's family (Adam, AdamW, Adamax, NAdam, RAdam): moving averages weighted by
``betas``, with the same option and state checks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..tensor import Tensor
from .checks import check_betas, check_compatibility_flags, check_options, check_state
from .optimizer import Optimizer
from .updates import lerp_rounding

__all__ = ["BetasOptimizer", "LerpedMomentOptimizer"]


class BetasOptimizer(Optimizer):
    """An optimizer that keeps moving averages of the gradient, weighted by ``betas``.

    Checks ``betas``, then the numbers of :attr:`_numbers` (each >= 0) and the
    flags of :attr:`_flags`, then PyTorch's compatibility switches. A
    parameter's state is its step count, the tensors of ``_buffers``, those of
    :attr:`_optional_buffers` where present, and the numbers of
    :attr:`_state_numbers`.
    """

    _complex_as_real = True
    _pairs = ("betas",)
    _fresh_options = frozenset({"lr", "betas"})
    _numbers: tuple[str, ...] = ("lr", "eps", "weight_decay")
    _flags: tuple[str, ...] = ("maximize",)
    _optional_buffers: tuple[str, ...] = ()
    _state_numbers: tuple[str, ...] = ()

    def _check_options(self, group: dict[str, Any]) -> None:
        name = type(self).__name__
        check_betas(name, group["betas"])
        check_options(group, self._numbers, self._flags)
        check_compatibility_flags(name, group)

    def _check_state(self, param: Tensor, state: Mapping[str, Any], group: dict[str, Any]) -> None:
        check_state(
            type(self).__name__, param, state, buffers=self._buffers,
            optional=self._optional_buffers, numbers=self._state_numbers,
        )  # fmt: skip


class LerpedMomentOptimizer(BetasOptimizer):
    """A :class:`BetasOptimizer` whose first moment moves toward the gradient by
    :func:`~plugrad.optim.updates.lerp_`, rounded as PyTorch's ``lerp_`` (Adamax, NAdam, RAdam).

    Which of lerp's two formulas applies depends on ``beta1``, so it is part of
    a compiled step's key.
    """

    def _structure_of(self, option: str, value: Any) -> Any:
        return lerp_rounding(1 - value[0]) if option == "betas" else None

    @staticmethod
    def _lerp_weights(group: dict[str, Any]) -> list[float]:
        """The first moment's weights for :func:`lerp_`: ``1 - beta1``, and 1 minus that."""
        beta1 = group["betas"][0]
        return [1 - beta1, 1 - (1 - beta1)]
