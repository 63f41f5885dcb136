"""ASGD: stochastic gradient descent that also keeps a running average of the parameters."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..tensor import Tensor
from .checks import check_compatibility_flags, check_number, check_options, check_state
from .optimizer import Optimizer, ParamsT, fill_parameter_docs
from .updates import as_scalar_state, gradients_to_descend, overwrite, zeros_state

__all__ = ["ASGD"]


@fill_parameter_docs
class ASGD(Optimizer):
    r"""Averaged stochastic gradient descent (Polyak & Juditsky, 1992), as PyTorch's.

    With gradient :math:`g` at step :math:`t` (negated for ``maximize``, plus
    :math:`\lambda_w p` for ``weight_decay``), each step computes

    .. math::

        p &\leftarrow p\,(1 - \lambda\eta_t) - \eta_t\,g \\
        \bar p &\leftarrow \bar p + \mu_t\,(p - \bar p) \\
        \eta_{t+1} &= \eta / (1 + \lambda\eta t)^\alpha, \qquad
        \mu_{t+1} = 1 / \max(1, t - t_0)

    starting from :math:`\eta_1 = \eta` and :math:`\mu_1 = 1`. The average
    :math:`\bar p` is ``state[p]["ax"]``: copy it into the parameters to
    evaluate the averaged model. With the default ``t0`` it equals the
    parameter for the first million steps.

    Parameters
    ----------
    {params}
    lr : float, default 1e-2
        Learning rate :math:`\eta`.
    lambd : float, default 1e-4
        Decay term :math:`\lambda`.
    alpha : float, default 0.75
        Power :math:`\alpha` of the learning-rate decay.
    t0 : float, default 1e6
        The step from which the parameters are averaged.
    {weight_decay}
    {foreach}
    {maximize}
    {differentiable}
    {capturable}

    Notes
    -----
    The state of a parameter is ``{"step": int, "eta": float, "mu": float,
    "ax": Tensor}`` (PyTorch keeps ``step``, ``eta`` and ``mu`` as 0-d
    tensors, in float32 unless the default dtype is float64; ``eta`` and ``mu``
    are rounded as those are, so that the steps are PyTorch's to the last bit).
    Every operation is linear in the gradient, so complex parameters are supported.

    Examples
    --------
    With ``t0=0`` the average starts at the third step (:math:`\mu_3 = 1/2`):

    >>> import plugrad
    >>> w = plugrad.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = plugrad.optim.ASGD([w], lr=0.1, t0=0)
    >>> for gradient in ([1.0, 1.0], [2.0, 0.0], [0.0, 1.0]):
    ...     w.grad = plugrad.tensor(gradient)
    ...     opt.step()
    >>> w, opt.state[w]["ax"]
    (tensor([ 0.7000, -2.1999], requires_grad=True), tensor([ 0.7000, -2.1499]))
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        lambd: float = 1e-4,
        alpha: float = 0.75,
        t0: float = 1e6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        super().__init__(params, self._defaults_from(locals()))
        #: Per parameter (by id), whether this step's average is the parameter itself.
        self._copies: dict[int, bool] = {}

    def _check_options(self, group: dict[str, Any]) -> None:
        check_options(group, ["lr", "weight_decay"], ["maximize"])
        for key in ("lambd", "alpha", "t0"):
            check_number(key, group[key], at_least=-float("inf"))
        check_compatibility_flags("ASGD", group)

    def _check_state(self, param: Tensor, state: Mapping[str, Any], group: dict[str, Any]) -> None:
        check_state("ASGD", param, state, buffers=["ax"], numbers=["eta", "mu"])

    def _new_state(self, param: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        return {"step": 0, "eta": as_scalar_state(group["lr"]), "mu": 1.0, "ax": zeros_state(param)}

    def _prepare_group(self, group: dict[str, Any]) -> list[float]:
        # Per parameter: the decay factor, this step's learning rate, and mu (1 while the
        # average is the parameter itself, which is then copied exactly).
        lr, lambd, alpha, t0 = group["lr"], group["lambd"], group["alpha"], group["t0"]
        numbers = []
        stepped = [param for param in group["params"] if param._grad is not None]
        for param, entry in zip(stepped, self._count_steps(group)):
            eta, mu, step = entry["eta"], entry["mu"], entry["step"]
            numbers += [1 - lambd * eta, eta, mu]
            self._copies[id(param)] = mu == 1
            entry["eta"] = as_scalar_state(lr / ((1 + lambd * lr * step) ** alpha))
            entry["mu"] = as_scalar_state(1 / max(1, step - t0))
        return numbers

    def _choices(self) -> tuple[Any, ...]:
        # Which averages are the parameter itself at the next step (mu is 1): copied exactly.
        state = self.state
        return tuple(
            state[param]["mu"] == 1 if param in state else None
            for group in self.param_groups
            for param in group["params"]
        )

    def _update_group(self, group: dict[str, Any], numbers: list[float]) -> None:
        state = self.state
        copies = self._copies
        for index, (param, array, g) in enumerate(gradients_to_descend(group)):
            decay, eta, mu = numbers[3 * index : 3 * index + 3]
            array *= decay
            array -= eta * g
            average = state[param]["ax"]
            if copies[id(param)]:  # the parameter itself, exactly (overwrite copies it)
                averaged = array
            else:
                gap = array - average._array
                gap *= mu
                averaged = average._array + gap
            average._array = overwrite(param._device.xp, average._array, averaged)
            param._array = array  # the same object, unless the backend's arrays are immutable
            param._bump_version()
