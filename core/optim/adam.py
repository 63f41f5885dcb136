"""Adam and AdamW: adaptive moment estimation, with L2 or decoupled weight decay."""

from __future__ import annotations

import math
from typing import Any

from .moments import BetasOptimizer
from .optimizer import ParamsT, fill_parameter_docs
from .updates import decay_and_add_, gradients_to_descend, overwrite

__all__ = ["Adam", "AdamW"]


@fill_parameter_docs
class Adam(BetasOptimizer):
    r"""Adam (Kingma & Ba, 2014), with PyTorch's options and update order.

    With gradient :math:`g` at step :math:`t` (negated for ``maximize``, plus
    :math:`\lambda p` for ``weight_decay``):

    .. math::

        m &\leftarrow \beta_1 m + (1 - \beta_1)\,g \\
        v &\leftarrow \beta_2 v + (1 - \beta_2)\,g^2 \\
        p &\leftarrow p - \frac{\eta}{1 - \beta_1^t}\,
              \frac{m}{\sqrt{v} / \sqrt{1 - \beta_2^t} + \epsilon}

    With ``amsgrad``, :math:`\sqrt{v}` is replaced by the square root of the
    running maximum of :math:`v`.

    Parameters
    ----------
    {params}
    lr : float, default 1e-3
        Learning rate :math:`\eta`: about the size of each coordinate's step.
    betas : tuple of float, default (0.9, 0.999)
        Decay rates :math:`\beta_1, \beta_2` of the moment estimates, each in ``[0, 1)``.
    eps : float, default 1e-8
        Added to the denominator for numerical stability.
    weight_decay : float, optional
        L2 penalty added to the gradient, 0 by default (see
        ``decoupled_weight_decay``).
    amsgrad : bool, default False
        Use the AMSGrad variant (Reddi et al., 2018).
    {foreach}
    {maximize}
    {capturable}
    {differentiable}
    {fused}
    decoupled_weight_decay : bool, default False
        Shrink the parameter by ``1 - lr * weight_decay`` at each step instead of
        adding the penalty to the gradient: :class:`AdamW`.

    Notes
    -----
    The state of a parameter is ``{"step": int, "exp_avg": Tensor,
    "exp_avg_sq": Tensor}`` plus ``"max_exp_avg_sq"`` with ``amsgrad``
    (PyTorch keeps ``step`` as a tensor; here it is a Python int).

    A complex parameter is stepped as two real numbers, its real and imaginary
    parts, as in PyTorch: its state tensors are complex, each part holding that
    part's moments (the imaginary part of ``exp_avg_sq`` is the average of the
    squared imaginary parts of the gradients, not a part of :math:`g^2`).

    Examples
    --------
    The first step moves each coordinate by about ``lr``, whatever the scale of
    its gradient:

    >>> import plugrad
    >>> w = plugrad.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = plugrad.optim.Adam([w], lr=0.1)
    >>> w.grad = plugrad.tensor([1000.0, -0.001])
    >>> opt.step()
    >>> w
    tensor([ 0.9000, -1.9000], requires_grad=True)
    """

    #: What ``weight_decay=None`` (the default) stands for.
    _default_weight_decay: float = 0
    _options = (
        "lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "foreach", "capturable",
        "differentiable", "fused", "decoupled_weight_decay",
    )  # fmt: skip
    _buffers = ("exp_avg", "exp_avg_sq")
    _optional_buffers = ("max_exp_avg_sq",)
    _flags = ("amsgrad", "maximize", "decoupled_weight_decay")

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float | None = None,
        amsgrad: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
    ) -> None:
        if weight_decay is None:
            weight_decay = self._default_weight_decay
        super().__init__(params, self._defaults_from(locals()))

    def _prepare_group(self, group: dict[str, Any]) -> list[float]:
        # The moments' weights; then per parameter that has a gradient: the factor of
        # decoupled weight decay, the root of the second moment's bias correction, and the
        # step size.
        lr = group["lr"]
        beta1, beta2 = group["betas"]
        numbers = [beta1, 1 - beta1, beta2, 1 - beta2]
        # max_exp_avg_sq: made on the first step, or once amsgrad is switched on
        for entry in self._count_steps(group, ["max_exp_avg_sq"] if group["amsgrad"] else ()):
            step = entry["step"]
            numbers += [
                1 - lr * group["weight_decay"],
                math.sqrt(1 - beta2**step),
                lr / (1 - beta1**step),
            ]
        return numbers

    def _update_group(self, group: dict[str, Any], numbers: list[float]) -> None:
        beta1, first, beta2, second = numbers[:4]
        eps, amsgrad, state = group["eps"], group["amsgrad"], self.state
        decoupled = group["weight_decay"] and group["decoupled_weight_decay"]
        for index, (param, array, g) in enumerate(gradients_to_descend(group)):
            decay, bias_root, step_size = numbers[4 + 3 * index : 7 + 3 * index]
            if decoupled:
                array *= decay
            xp = param._device.xp
            entry = state[param]

            # One work array per parameter and step, reused for each intermediate value.
            work = g * first
            m = decay_and_add_(entry["exp_avg"], beta1, work)

            work = overwrite(xp, work, g)
            work *= g
            work *= second
            v = decay_and_add_(entry["exp_avg_sq"], beta2, work)

            if amsgrad:
                peak = entry["max_exp_avg_sq"]
                v = peak._array = xp.asarray(xp.maximum(peak._array, v))

            work = overwrite(xp, work, v)
            work **= 0.5
            work /= bias_root
            work += eps
            work = m / work
            work *= step_size
            array -= work
            param._array = array  # the same object, unless the backend's arrays are immutable
            param._bump_version()


class AdamW(Adam):
    r"""Adam with decoupled weight decay (Loshchilov & Hutter, 2019), as PyTorch's.

    Identical to :class:`Adam` except for weight decay: instead of adding
    :math:`\lambda p` to the gradient, each step first shrinks the parameter,
    :math:`p \leftarrow p\,(1 - \eta\lambda)`.

    Parameters
    ----------
    params, lr, betas, eps, amsgrad, maximize, foreach, capturable, differentiable, fused
        As for :class:`Adam`.
    weight_decay : float, optional
        Decoupled weight decay coefficient :math:`\lambda`, 1e-2 by default.

    Examples
    --------
    With a zero gradient, a step only shrinks the parameter, by the factor
    ``1 - lr * weight_decay``:

    >>> import plugrad
    >>> w = plugrad.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = plugrad.optim.AdamW([w], lr=0.1, weight_decay=0.5)
    >>> w.grad = plugrad.zeros(2)
    >>> opt.step()
    >>> w
    tensor([ 0.9500, -1.9000], requires_grad=True)
    """

    _default_weight_decay = 1e-2

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        super().__init__(
            params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
            capturable=capturable, differentiable=differentiable, fused=fused,
            decoupled_weight_decay=True,
        )  # fmt: skip
