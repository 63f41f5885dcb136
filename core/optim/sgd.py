"""Stochastic gradient descent, with momentum, Nesterov momentum and weight decay."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import InvalidArgumentError
from ..tensor import Tensor
from .checks import check_compatibility_flags, check_number, check_options, check_state
from .optimizer import Optimizer, ParamsT, fill_parameter_docs
from .updates import state_tensor

__all__ = ["SGD"]


@fill_parameter_docs
class SGD(Optimizer):
    r"""Stochastic gradient descent, optionally with (Nesterov) momentum, as PyTorch's.

    With gradient :math:`g`, each step computes (signs flipped for ``maximize``)

    .. math::

        d &= g + \lambda\,p \\
        b &\leftarrow \mu\,b + (1 - \tau)\,d \quad (b = d \text{ on the first step}) \\
        d &\leftarrow d + \mu\,b \text{ (Nesterov) or } b \\
        p &\leftarrow p - \eta\,d

    where :math:`\lambda` is ``weight_decay``, :math:`\mu` ``momentum``,
    :math:`\tau` ``dampening`` and :math:`\eta` ``lr``; the momentum lines
    apply only when ``momentum`` is not zero.

    Parameters
    ----------
    {params}
    lr : float, default 1e-3
        Learning rate.
    momentum : float, default 0
        Momentum factor; ``0`` keeps no state.
    dampening : float, default 0
        Dampening of the momentum.
    {weight_decay}
    nesterov : bool, default False
        Use Nesterov momentum (needs ``momentum > 0`` and ``dampening == 0``).
    {maximize}
    {foreach}
    {differentiable}
    {fused}

    Notes
    -----
    Complex parameters are supported (every operation is linear in the gradient).
    The state of a parameter is ``{"momentum_buffer": Tensor}`` once momentum
    has been used.

    Examples
    --------
    A gradient that keeps its direction moves the parameter further at each
    step, as the momentum buffer grows (``.grad`` is set by hand here; in
    training, ``backward()`` sets it):

    >>> import plugrad
    >>> w = plugrad.tensor([0.0], requires_grad=True)
    >>> opt = plugrad.optim.SGD([w], lr=0.1, momentum=0.9)
    >>> w.grad = plugrad.tensor([1.0])  # the same gradient for both steps
    >>> opt.step()
    >>> opt.step()
    >>> w, opt.state[w]["momentum_buffer"]  # moved by 0.1, then by 0.19
    (tensor([-0.2900], requires_grad=True), tensor([1.9000]))
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        super().__init__(params, self._defaults_from(locals()))

    def _check_options(self, group: dict[str, Any]) -> None:
        check_options(group, ["lr", "momentum", "weight_decay"], ["nesterov", "maximize"])
        check_compatibility_flags("SGD", group)
        check_number("dampening", group["dampening"], at_least=-float("inf"))
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise InvalidArgumentError(
                "Nesterov momentum needs momentum > 0 and dampening == 0, got "
                f"momentum={group['momentum']!r} and dampening={group['dampening']!r}"
            )

    def _check_state(self, param: Tensor, state: Mapping[str, Any], group: dict[str, Any]) -> None:
        check_state("SGD", param, state, optional=["momentum_buffer"], counts_steps=False)

    _fresh_options = frozenset({"lr", "momentum"})

    def _structure_of(self, option: str, value: Any) -> Any:
        return bool(value != 0) if option == "momentum" else None  # 0: no buffer

    def _prepare_group(self, group: dict[str, Any]) -> list[float]:
        return [group["lr"], group["momentum"]]

    def _update_group(self, group: dict[str, Any], numbers: list[float]) -> None:
        lr, momentum = numbers
        uses_momentum = group["momentum"] != 0
        dampening = group["dampening"]
        weight_decay = group["weight_decay"]
        nesterov = group["nesterov"]
        maximize = group["maximize"]
        state = self.state
        # NOTE: not built on gradients_to_descend: a tuple per parameter costs this cheap
        # step about 4% on a small MLP, and the loop tracks which arrays it may scale in place.
        for param in group["params"]:
            grad = param._grad
            if grad is None:
                continue
            array = param._array
            g = grad._array
            # `direction` is what the parameter moves against; `owned` says it is a
            # temporary of this step, which may be scaled in place.
            if weight_decay:
                direction = array * weight_decay
                if maximize:
                    direction -= g
                else:
                    direction += g
                owned = True
            elif maximize:
                direction, owned = -g, True
            else:
                direction, owned = g, False
            if uses_momentum:
                entry = state.setdefault(param, {})
                buffer = entry.get("momentum_buffer")
                if buffer is None:
                    # A fresh array (NumPy gives scalars for 0-d arithmetic), shared with
                    # `direction` only when nothing changes `direction` afterwards.
                    xp = param._device.xp
                    initial = xp.asarray(direction, copy=None if owned and not nesterov else True)
                    buffer = entry["momentum_buffer"] = state_tensor(param, initial)
                else:
                    values = buffer._array
                    values *= momentum
                    if dampening:
                        values += (1 - dampening) * direction
                    else:
                        values += direction
                    buffer._array = values
                if nesterov:
                    if owned:
                        direction += momentum * buffer._array
                    else:
                        direction, owned = direction + momentum * buffer._array, True
                else:
                    direction, owned = buffer._array, False
            if owned:
                direction *= lr
                array -= direction
            else:
                array -= lr * direction
            param._array = array  # the same object, unless the backend's arrays are immutable
            param._bump_version()
