"""Adagrad: each coordinate's step divided by the root of its summed squared gradients."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..tensor import Tensor
from .checks import check_compatibility_flags, check_options, check_state
from .optimizer import Optimizer, ParamsT, fill_parameter_docs
from .updates import full_state, gradients_to_descend

__all__ = ["Adagrad"]


@fill_parameter_docs
class Adagrad(Optimizer):
    r"""Adagrad (Duchi et al., 2011), with PyTorch's options and update order.

    With gradient :math:`g` at step :math:`t` (negated for ``maximize``, plus
    :math:`\lambda p` for ``weight_decay``), each step computes

    .. math::

        \tilde\eta &= \eta / (1 + (t - 1)\,\delta) \\
        s &\leftarrow s + g^2 \\
        p &\leftarrow p - \tilde\eta\,g / (\sqrt{s} + \epsilon)

    where :math:`\delta` is ``lr_decay`` and :math:`s` starts at
    ``initial_accumulator_value``.

    Parameters
    ----------
    {params}
    lr : float, default 1e-2
        Learning rate :math:`\eta`, before its decay by ``lr_decay``.
    lr_decay : float, default 0
        Decay :math:`\delta` of the learning rate with the step count.
    {weight_decay}
    initial_accumulator_value : float, default 0
        The sum of squares :math:`s` before the first step. A parameter group's own
        value applies to its parameters (PyTorch's starts every group from the
        constructor's, ignoring a group's).
    eps : float, default 1e-10
        Added to the denominator.
    {foreach}
    {maximize}
    {differentiable}
    {fused}

    Notes
    -----
    The state of a parameter is ``{"step": int, "sum": Tensor}``, made when the
    optimizer is built. A complex parameter is stepped as two real numbers, its
    real and imaginary parts, as in PyTorch: ``sum`` is complex, each part the
    sum of that part's squares (starting from ``initial_accumulator_value``
    in both).

    Examples
    --------
    Under a constant gradient the sum of squares grows by the same amount at
    each step, so the steps shrink as ``lr / sqrt(t)``: 1, 0.71, 0.58, 0.5.

    >>> import plugrad
    >>> w = plugrad.tensor([0.0], requires_grad=True)
    >>> opt = plugrad.optim.Adagrad([w], lr=1.0)
    >>> w.grad = plugrad.tensor([3.0])
    >>> positions = []
    >>> for _ in range(4):
    ...     opt.step()
    ...     positions.append(round(w.item(), 4))
    >>> positions
    [-1.0, -1.7071, -2.2845, -2.7845]
    """

    _complex_as_real = True
    _options = (
        "lr", "lr_decay", "eps", "weight_decay", "initial_accumulator_value", "foreach",
        "maximize", "differentiable", "fused",
    )  # fmt: skip

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        lr_decay: float = 0,
        weight_decay: float = 0,
        initial_accumulator_value: float = 0,
        eps: float = 1e-10,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        super().__init__(params, self._defaults_from(locals()))
        # As PyTorch's, the sums start at construction, for parameters that never get a
        # gradient too (so a state dict saved before the first step has them).
        for group in self.param_groups:
            for param in group["params"]:
                self.state[param] = self._new_state(param, group)

    def _new_state(self, param: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        return {"step": 0, "sum": full_state(param, group["initial_accumulator_value"])}

    def _check_options(self, group: dict[str, Any]) -> None:
        numbers = ("lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps")
        check_options(group, numbers, ["maximize"])
        check_compatibility_flags("Adagrad", group)

    def _check_state(self, param: Tensor, state: Mapping[str, Any], group: dict[str, Any]) -> None:
        check_state("Adagrad", param, state, buffers=["sum"])

    def _prepare_group(self, group: dict[str, Any]) -> list[float]:
        lr, lr_decay = group["lr"], group["lr_decay"]
        return [lr / (1 + (entry["step"] - 1) * lr_decay) for entry in self._count_steps(group)]

    def _update_group(self, group: dict[str, Any], numbers: list[float]) -> None:
        eps, state = group["eps"], self.state
        for (param, array, g), step_size in zip(gradients_to_descend(group), numbers):
            total = state[param]["sum"]
            s = total._array
            s += g * g
            total._array = s
            array -= step_size * (g / (param._device.xp.sqrt(s) + eps))
            param._array = array  # the same object, unless the backend's arrays are immutable
            param._bump_version()
