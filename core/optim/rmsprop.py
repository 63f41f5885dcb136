"""RMSprop: each step divided by a running root mean square of the gradients."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..tensor import Tensor
from .checks import check_compatibility_flags, check_options, check_state
from .optimizer import Optimizer, ParamsT, fill_parameter_docs
from .updates import decay_and_add_, gradients_to_descend

__all__ = ["RMSprop"]


@fill_parameter_docs
class RMSprop(Optimizer):
    r"""RMSprop (Hinton's lecture notes), with PyTorch's options and update order.

    With gradient :math:`g` (negated for ``maximize``, plus
    :math:`\lambda p` for ``weight_decay``), each step computes

    .. math::

        v &\leftarrow \alpha\,v + (1 - \alpha)\,g^2 \\
        a &= \sqrt{v - \bar g^2} + \epsilon \text{ (centered, with }
             \bar g \leftarrow \alpha\,\bar g + (1 - \alpha)\,g\text{) or } \sqrt{v} + \epsilon \\
        b &\leftarrow \mu\,b + g / a \text{ (with momentum } \mu > 0\text{)} \\
        p &\leftarrow p - \eta\,b \text{ (or } p - \eta\,g / a \text{ without momentum)}

    Parameters
    ----------
    {params}
    lr : float, default 1e-2
        Learning rate :math:`\eta`.
    alpha : float, default 0.99
        Smoothing constant :math:`\alpha` of the mean square.
    eps : float, default 1e-8
        Added to the denominator.
    {weight_decay}
    momentum : float, default 0
        Momentum factor :math:`\mu`.
    centered : bool, default False
        Divide by the estimated standard deviation of the gradient instead.
    {capturable}
    {foreach}
    {maximize}
    {differentiable}

    Notes
    -----
    The state of a parameter is ``step``, ``square_avg``, and
    ``momentum_buffer`` and ``grad_avg`` when momentum and ``centered`` use them.
    A complex parameter is stepped as two real numbers, its real and imaginary
    parts, as in PyTorch: its state tensors are complex, each part holding that
    part's averages.

    Examples
    --------
    The first step divides each gradient by its root mean square so far,
    ``sqrt(1 - alpha) * |g|``: every coordinate moves by ``lr / sqrt(1 - alpha)``,
    ten times ``lr`` with the default ``alpha``.

    >>> import plugrad
    >>> w = plugrad.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = plugrad.optim.RMSprop([w], lr=0.01)
    >>> w.grad = plugrad.tensor([2.0, -0.5])
    >>> opt.step()
    >>> w, opt.state[w]["square_avg"]
    (tensor([ 0.9000, -1.9000], requires_grad=True), tensor([0.0400, 0.0025]))
    """

    _complex_as_real = True
    _options = (
        "lr", "momentum", "alpha", "eps", "centered", "weight_decay", "capturable", "foreach",
        "maximize", "differentiable",
    )  # fmt: skip
    _buffers = ("square_avg",)

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        super().__init__(params, self._defaults_from(locals()))

    def _check_options(self, group: dict[str, Any]) -> None:
        numbers = ("lr", "alpha", "eps", "weight_decay", "momentum")
        check_options(group, numbers, ["centered", "maximize"])
        check_compatibility_flags("RMSprop", group)

    def _check_state(self, param: Tensor, state: Mapping[str, Any], group: dict[str, Any]) -> None:
        optional = ["momentum_buffer", "grad_avg"]
        check_state("RMSprop", param, state, buffers=self._buffers, optional=optional)

    _fresh_options = frozenset({"lr", "momentum"})

    def _prepare_group(self, group: dict[str, Any]) -> list[float]:
        optional = []  # made on the first step, or once the option is switched on
        if group["momentum"] > 0:
            optional.append("momentum_buffer")
        if group["centered"]:
            optional.append("grad_avg")
        self._count_steps(group, optional)
        return [group["lr"], group["momentum"]]

    def _structure_of(self, option: str, value: Any) -> Any:
        return bool(value > 0) if option == "momentum" else None  # 0: no buffer

    def _update_group(self, group: dict[str, Any], numbers: list[float]) -> None:
        lr, momentum = numbers
        alpha, eps, uses_momentum = group["alpha"], group["eps"], group["momentum"] > 0
        for param, array, g in gradients_to_descend(group):
            xp = param._device.xp
            entry = self.state[param]
            v = decay_and_add_(entry["square_avg"], alpha, (1 - alpha) * (g * g))
            if group["centered"]:
                m = decay_and_add_(entry["grad_avg"], alpha, (1 - alpha) * g)
                denominator = xp.sqrt(v - m * m) + eps
            else:
                denominator = xp.sqrt(v) + eps
            if uses_momentum:
                b = decay_and_add_(entry["momentum_buffer"], momentum, g / denominator)
                array -= lr * b
            else:
                array -= lr * (g / denominator)
            param._array = array  # the same object, unless the backend's arrays are immutable
            param._bump_version()
