"""Adamax: Adam with the infinity norm in place of the second moment."""

from __future__ import annotations

from typing import Any

from .moments import LerpedMomentOptimizer
from .optimizer import ParamsT, fill_parameter_docs
from .updates import gradients_to_descend, lerp_, lerp_rounding, overwrite

__all__ = ["Adamax"]


@fill_parameter_docs
class Adamax(LerpedMomentOptimizer):
    r"""Adamax (Kingma & Ba, 2014, section 7), with PyTorch's options and update order.

    With gradient :math:`g` at step :math:`t` (negated for ``maximize``, plus
    :math:`\lambda p` for ``weight_decay``):

    .. math::

        m &\leftarrow \beta_1 m + (1 - \beta_1)\,g \\
        u &\leftarrow \max(\beta_2 u,\ |g| + \epsilon) \\
        p &\leftarrow p - \frac{\eta}{1 - \beta_1^t}\,\frac{m}{u}

    Parameters
    ----------
    {params}
    lr : float, default 2e-3
        Learning rate :math:`\eta`.
    betas : tuple of float, default (0.9, 0.999)
        Decay rates :math:`\beta_1, \beta_2` of the first moment and of the
        infinity norm, each in ``[0, 1)``.
    eps : float, default 1e-8
        Added to :math:`|g|` before the maximum, so the denominator is never 0.
    {weight_decay}
    {foreach}
    {maximize}
    {differentiable}
    {capturable}

    Notes
    -----
    The state of a parameter is ``{"step": int, "exp_avg": Tensor, "exp_inf":
    Tensor}``. A complex parameter is stepped as two real numbers, its real and
    imaginary parts, as in PyTorch: its state tensors are complex, each part
    holding that part's moment and norm.

    Examples
    --------
    The first step moves each coordinate by about ``lr``, whatever the scale of
    its gradient:

    >>> import plugrad
    >>> w = plugrad.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = plugrad.optim.Adamax([w], lr=0.1)
    >>> w.grad = plugrad.tensor([1000.0, -0.5])
    >>> opt.step()
    >>> w, opt.state[w]["exp_inf"]
    (tensor([ 0.9000, -1.9000], requires_grad=True), tensor([1.0000e+03, 5.0000e-01]))
    """

    _buffers = ("exp_avg", "exp_inf")

    def __init__(
        self,
        params: ParamsT,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        super().__init__(params, self._defaults_from(locals()))

    def _prepare_group(self, group: dict[str, Any]) -> list[float]:
        # The first moment's weights (for lerp_), beta2, then per parameter that has a gradient: the
        # step size, lr over the bias correction.
        lr, (beta1, beta2) = group["lr"], group["betas"]
        steps = [lr / (1 - beta1 ** entry["step"]) for entry in self._count_steps(group)]
        return [*self._lerp_weights(group), beta2, *steps]

    def _update_group(self, group: dict[str, Any], numbers: list[float]) -> None:
        first, rest, beta2 = numbers[:3]
        small = lerp_rounding(1 - group["betas"][0])
        eps, state = group["eps"], self.state
        for (param, array, g), step_size in zip(gradients_to_descend(group), numbers[3:]):
            xp = param._device.xp
            entry = state[param]
            exp_avg, exp_inf = entry["exp_avg"], entry["exp_inf"]
            m = exp_avg._array = lerp_(xp, exp_avg._array, g, first, rest, small)
            u = exp_inf._array
            u *= beta2
            u = exp_inf._array = overwrite(xp, u, xp.maximum(u, xp.abs(g) + eps))
            array -= step_size * (m / u)
            param._array = array  # the same object, unless the backend's arrays are immutable
            param._bump_version()
