"""NAdam and RAdam: Adam with Nesterov momentum, and Adam with a rectified variance."""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from .moments import LerpedMomentOptimizer
from .optimizer import ParamsT, fill_parameter_docs
from .updates import as_scalar_state, decay_and_add_, gradients_to_descend, lerp_, lerp_rounding

__all__ = ["NAdam", "RAdam"]


#: (namespace, dtype) -> the dtype's smallest normal number, read once: an eps below it may
#: round to 0. (Keyed with the namespace: array-api-strict's dtypes warn when compared with
#: NumPy's.)
_SMALLEST_NORMAL: dict[tuple[Any, Any], float] = {}


def _smallest_normal(xp: Any, dtype: Any) -> float:
    value = _SMALLEST_NORMAL.get((xp, dtype))
    if value is None:
        value = _SMALLEST_NORMAL[xp, dtype] = float(xp.finfo(dtype).smallest_normal)
    return value


class _AdamVariant(LerpedMomentOptimizer):
    """What NAdam and RAdam share: Adam's moments, and L2 or decoupled weight decay."""

    #: How many numbers _prepare_group gives per parameter (the first: the decay factor).
    _numbers_per_param = 1
    _buffers = ("exp_avg", "exp_avg_sq")
    _flags = ("decoupled_weight_decay", "maximize")

    def _moment_weights(self, group: dict[str, Any]) -> list[float]:
        """The numbers :meth:`_moments` reads first: the first moment's weights (for
        :func:`lerp_`), ``beta2`` and ``1 - beta2``."""
        beta2 = group["betas"][1]
        return [*self._lerp_weights(group), beta2, 1 - beta2]

    def _moments(self, group: dict[str, Any], numbers: list[float]) -> Any:
        """For each parameter with a gradient: its numbers, xp, array, gradient and moments.

        Applies the weight decay (to the gradient, or decoupled to the
        parameter with the first number) and updates both moments first.
        """
        first, rest, beta2, second = numbers[:4]
        small = lerp_rounding(1 - group["betas"][0])
        decoupled = group["weight_decay"] and group["decoupled_weight_decay"]
        state, count = self.state, self._numbers_per_param
        for index, (param, array, g) in enumerate(gradients_to_descend(group)):
            start = 4 + count * index
            mine = numbers[start : start + count]
            if decoupled:
                array *= mine[0]
            xp = param._device.xp
            entry = state[param]
            exp_avg, exp_avg_sq = entry["exp_avg"], entry["exp_avg_sq"]
            m = exp_avg._array = lerp_(xp, exp_avg._array, g, first, rest, small)
            v = decay_and_add_(exp_avg_sq, beta2, second * g * g)
            yield param, mine, xp, array, g, m, v


@fill_parameter_docs
class NAdam(_AdamVariant):
    r"""NAdam (Dozat, 2016): Adam with Nesterov momentum, with PyTorch's options and update order.

    With gradient :math:`g` at step :math:`t` (negated for ``maximize``, plus
    :math:`\lambda p` for ``weight_decay`` unless it is decoupled), the
    momentum coefficients :math:`\mu_t = \beta_1 (1 - \tfrac12\,0.96^{t\psi})`
    and their running product :math:`\Pi_t = \prod_{i \le t} \mu_i`:

    .. math::

        m &\leftarrow \beta_1 m + (1 - \beta_1)\,g \\
        v &\leftarrow \beta_2 v + (1 - \beta_2)\,g^2 \\
        d &= \sqrt{v / (1 - \beta_2^t)} + \epsilon \\
        p &\leftarrow p - \eta\,\frac{1 - \mu_t}{1 - \Pi_t}\,\frac{g}{d}
              - \eta\,\frac{\mu_{t+1}}{1 - \Pi_t\,\mu_{t+1}}\,\frac{m}{d}

    where :math:`\psi` is ``momentum_decay``.

    Parameters
    ----------
    {params}
    lr : float, default 2e-3
        Learning rate :math:`\eta`.
    betas : tuple of float, default (0.9, 0.999)
        Decay rates :math:`\beta_1, \beta_2` of the moment estimates, each in ``[0, 1)``.
    eps : float, default 1e-8
        Added to the denominator.
    weight_decay : float, default 0
        Weight decay :math:`\lambda`: an L2 penalty added to the gradient, or
        with ``decoupled_weight_decay`` a shrinking of the parameter by
        ``1 - lr * weight_decay`` at each step (NAdamW).
    momentum_decay : float, default 4e-3
        :math:`\psi`, how fast the momentum coefficient approaches :math:`\beta_1`.
    decoupled_weight_decay : bool, default False
        Decouple the weight decay from the gradient, as :class:`AdamW` does.
    {foreach}
    {maximize}
    {capturable}
    {differentiable}

    Notes
    -----
    The state of a parameter is ``{"step": int, "mu_product": float,
    "exp_avg": Tensor, "exp_avg_sq": Tensor}`` (PyTorch keeps ``step`` and
    ``mu_product`` as 0-d tensors, in float32 unless the default dtype is
    float64; here they are Python numbers, rounded as those tensors are).
    A complex parameter is stepped as two real numbers, its real and imaginary
    parts, as in PyTorch: its state tensors are complex, each part holding that
    part's moments.

    Examples
    --------
    >>> import plugrad
    >>> w = plugrad.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = plugrad.optim.NAdam([w], lr=0.1)
    >>> w.grad = plugrad.tensor([4.0, -0.5])
    >>> opt.step()
    >>> w, round(opt.state[w]["mu_product"], 6)
    (tensor([ 0.8944, -1.8944], requires_grad=True), 0.450073)
    """

    _numbers_per_param = 4
    _numbers = ("lr", "eps", "weight_decay", "momentum_decay")
    _state_numbers = ("mu_product",)
    _options = (
        "lr",
        "betas",
        "eps",
        "weight_decay",
        "momentum_decay",
        "decoupled_weight_decay",
        "maximize",
        "foreach",
        "capturable",
        "differentiable",
    )

    def __init__(
        self,
        params: ParamsT,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum_decay: float = 4e-3,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        super().__init__(params, self._defaults_from(locals()))

    def _new_state(self, param: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        return {"step": 0, "mu_product": 1.0, **super()._new_state(param, group)}

    def _prepare_group(self, group: dict[str, Any]) -> list[float]:
        # Per parameter: the decoupled decay factor, the second moment's bias correction,
        # and the factors of g / d and m / d, negated.
        lr = group["lr"]
        beta1, beta2 = group["betas"]
        psi = group["momentum_decay"]
        numbers = self._moment_weights(group)
        for entry in self._count_steps(group):
            step = entry["step"]
            mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * psi)))
            mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * psi)))
            # (PyTorch's product is a float32 tensor, multiplied by mu in float32)
            product = entry["mu_product"] = as_scalar_state(
                entry["mu_product"] * as_scalar_state(mu)
            )
            numbers += [
                1 - lr * group["weight_decay"],
                1 - beta2**step,
                -lr * (1.0 - mu) / (1.0 - product),
                (-lr * mu_next) / (1.0 - product * mu_next),
            ]
        return numbers

    def _update_group(self, group: dict[str, Any], numbers: list[float]) -> None:
        eps = group["eps"]
        for param, mine, xp, array, g, m, v in self._moments(group, numbers):
            _, bias_correction2, grad_factor, momentum_factor = mine
            denominator = xp.sqrt(v / bias_correction2)
            denominator += eps
            array += grad_factor * (g / denominator)
            array += momentum_factor * (m / denominator)
            param._array = array  # the same object, unless the backend's arrays are immutable
            param._bump_version()


class RAdam(_AdamVariant):
    r"""RAdam (Liu et al., 2019): Adam with a rectified variance, with PyTorch's options and order.

    With gradient :math:`g` at step :math:`t` (negated for ``maximize``, plus
    :math:`\lambda p` for ``weight_decay`` unless it is decoupled), Adam's
    moments :math:`m, v`, :math:`\rho_\infty = 2 / (1 - \beta_2) - 1` and
    :math:`\rho_t = \rho_\infty - 2 t \beta_2^t / (1 - \beta_2^t)`:

    .. math::

        \hat m &= m / (1 - \beta_1^t) \\
        p &\leftarrow p - \eta\,\hat m\,\frac{\sqrt{1 - \beta_2^t}}{\sqrt{v} + \epsilon}\,r_t
            \quad\text{where } \rho_t > 5, \text{ with }
            r_t = \sqrt{\frac{(\rho_t - 4)(\rho_t - 2)\rho_\infty}
                             {(\rho_\infty - 4)(\rho_\infty - 2)\rho_t}} \\
        p &\leftarrow p - \eta\,\hat m \quad\text{otherwise (the first steps: SGD with momentum)}

    Parameters
    ----------
    params, betas, eps, decoupled_weight_decay, foreach, maximize, capturable, differentiable
        As for :class:`NAdam`.
    lr : float, default 1e-3
        Learning rate :math:`\eta`.
    weight_decay : float, default 0
        Weight decay: an L2 penalty added to the gradient, or with
        ``decoupled_weight_decay`` a shrinking of the parameter by
        ``1 - lr * weight_decay`` at each step (RAdamW).

    Notes
    -----
    The state of a parameter is ``{"step": int, "exp_avg": Tensor,
    "exp_avg_sq": Tensor}``. A complex parameter is stepped as two real
    numbers, its real and imaginary parts, as in PyTorch: its state tensors are
    complex, each part holding that part's moments.

    Examples
    --------
    Until :math:`\rho_t > 5` (the first 5 steps with the default betas), a step
    moves the parameter by ``lr`` times the bias-corrected first moment:

    >>> import plugrad
    >>> w = plugrad.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = plugrad.optim.RAdam([w], lr=0.1)
    >>> w.grad = plugrad.tensor([4.0, -0.5])
    >>> opt.step()
    >>> w
    tensor([ 0.6000, -1.9500], requires_grad=True)
    """

    _numbers_per_param = 5
    _options = (
        "lr",
        "betas",
        "eps",
        "weight_decay",
        "maximize",
        "foreach",
        "capturable",
        "decoupled_weight_decay",
        "differentiable",
    )

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        super().__init__(params, self._defaults_from(locals()))

    def _prepare_group(self, group: dict[str, Any]) -> list[float]:
        # Per parameter: the decoupled decay factor, the first moment's bias correction,
        # the root of the second's, and the learning rate of each branch of the update:
        # `rectified` multiplies the adaptive step, `plain` the momentum step; one is 0.
        lr = group["lr"]
        beta1, beta2 = group["betas"]
        rho_inf = 2 / (1 - beta2) - 1
        numbers = self._moment_weights(group)
        for entry in self._count_steps(group):
            step = entry["step"]
            bias_correction2 = 1 - beta2**step
            rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
            if rho_t > 5.0:
                rect = (
                    (rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)
                ) ** 0.5
                rectified, plain = lr * rect, 0.0
            else:
                rectified, plain = 0.0, lr
            numbers += [
                1 - lr * group["weight_decay"],
                1 - beta1**step,
                bias_correction2**0.5,
                rectified,
                plain,
            ]
        return numbers

    def _update_group(self, group: dict[str, Any], numbers: list[float]) -> None:
        eps = group["eps"]
        # NOTE: both branches run at every step, one of them times 0: which one applies
        # changes with the step count, which a compiled step's replays do not see.
        for param, mine, xp, array, _, m, v in self._moments(group, numbers):
            _, bias_correction1, bias_root, rectified, plain = mine
            corrected = m / bias_correction1
            adaptive = xp.sqrt(v)
            adaptive += eps
            if eps < _smallest_normal(xp, array.dtype):
                # Where no gradient ever came (v == 0, so m == 0), the branch times 0 must
                # give 0, not 0 * inf = NaN: PyTorch accepts eps=0 and takes only the other.
                # So for an eps that rounds to 0 in the parameter's dtype (float16's 1e-8).
                adaptive = xp.where(adaptive == 0, xp.ones_like(adaptive), adaptive)
            adaptive = bias_root / adaptive
            adaptive *= corrected
            adaptive *= rectified
            corrected *= plain
            adaptive += corrected
            array -= adaptive
            param._array = array  # the same object, unless the backend's arrays are immutable
            param._bump_version()
