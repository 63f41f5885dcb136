"""Adadelta: steps scaled by the ratio of running RMS of updates and of gradients."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import InvalidArgumentError
from ..tensor import Tensor
from .checks import check_compatibility_flags, check_number, check_options, check_state
from .optimizer import Optimizer, ParamsT, fill_parameter_docs
from .updates import decay_and_add_, gradients_to_descend

__all__ = ["Adadelta"]


@fill_parameter_docs
class Adadelta(Optimizer):
    r"""Adadelta (Zeiler, 2012), with PyTorch's options and update order.

    With gradient :math:`g` (negated for ``maximize``, plus :math:`\lambda p`
    for ``weight_decay``), each step computes

    .. math::

        v &\leftarrow \rho\,v + (1 - \rho)\,g^2 \\
        \Delta &= \frac{\sqrt{u + \epsilon}}{\sqrt{v + \epsilon}}\,g \\
        u &\leftarrow \rho\,u + (1 - \rho)\,\Delta^2 \\
        p &\leftarrow p - \eta\,\Delta

    Parameters
    ----------
    {params}
    lr : float, default 1.0
        Learning rate :math:`\eta`, a factor on :math:`\Delta`.
    rho : float, default 0.9
        Decay rate :math:`\rho` of both running averages, in ``[0, 1]``.
    eps : float, default 1e-6
        Added inside both square roots.
    {weight_decay}
    {foreach}
    {capturable}
    {maximize}
    {differentiable}

    Notes
    -----
    The state of a parameter is ``{"step": int, "square_avg": Tensor,
    "acc_delta": Tensor}``. A complex parameter is stepped as two real numbers,
    its real and imaginary parts, as in PyTorch: its state tensors are complex,
    each part holding that part's running averages.

    Examples
    --------
    The first step is about ``sqrt(eps / (1 - rho))`` per coordinate, whatever
    the gradient's scale (a little less where the gradient is as small as
    ``eps``), and the steps grow as the updates accumulate:

    >>> import plugrad
    >>> w = plugrad.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = plugrad.optim.Adadelta([w])
    >>> w.grad = plugrad.tensor([100.0, -0.01])
    >>> opt.step()
    >>> w - plugrad.tensor([1.0, -2.0])
    tensor([-0.0032,  0.0030], grad_fn=<SubBackward>)
    """

    _complex_as_real = True
    _options = (
        "lr",
        "rho",
        "eps",
        "weight_decay",
        "maximize",
        "capturable",
        "foreach",
        "differentiable",
    )
    _buffers = ("square_avg", "acc_delta")

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        capturable: bool = False,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        super().__init__(params, self._defaults_from(locals()))

    def _check_options(self, group: dict[str, Any]) -> None:
        check_options(group, ["lr", "eps", "weight_decay"], ["maximize"])
        check_number("rho", group["rho"])
        if group["rho"] > 1:
            raise InvalidArgumentError(f"rho must be at most 1, got {group['rho']!r}")
        check_compatibility_flags("Adadelta", group)

    def _check_state(self, param: Tensor, state: Mapping[str, Any], group: dict[str, Any]) -> None:
        check_state("Adadelta", param, state, buffers=self._buffers)

    def _prepare_group(self, group: dict[str, Any]) -> list[float]:
        self._count_steps(group)
        return [group["lr"]]

    def _update_group(self, group: dict[str, Any], numbers: list[float]) -> None:
        (lr,) = numbers
        rho, eps, state = group["rho"], group["eps"], self.state
        for param, array, g in gradients_to_descend(group):
            xp = param._device.xp
            entry = state[param]
            v = decay_and_add_(entry["square_avg"], rho, (1 - rho) * g * g)
            acc_delta = entry["acc_delta"]
            delta = xp.sqrt(acc_delta._array + eps) / xp.sqrt(v + eps) * g
            decay_and_add_(acc_delta, rho, (1 - rho) * delta * delta)
            array -= lr * delta
            param._array = array  # the same object, unless the backend's arrays are immutable
            param._bump_version()
