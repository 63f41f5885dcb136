"""Adafactor: a second moment kept as row and column averages, with relative step sizes."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..dtype_functions import finfo
from ..errors import InvalidArgumentError
from ..tensor import Tensor
from .checks import check_compatibility_flags, check_number, check_options, check_state
from .optimizer import Optimizer, ParamsT, fill_parameter_docs
from .updates import gradients_to_descend, lerp_, lerp_rounding, state_tensor

__all__ = ["Adafactor"]


@fill_parameter_docs
class Adafactor(Optimizer):
    r"""Adafactor (Shazeer & Stern, 2018), as PyTorch's ``torch.optim.Adafactor``.

    With gradient :math:`g` at step :math:`t` (negated for ``maximize``) of a
    parameter :math:`p` of :math:`n` elements:

    .. math::

        \beta_t &= t^{c}, \quad \rho_t = \min(\eta, t^{-1/2}), \quad
        \alpha_t = \max(\epsilon_2, \lVert p\rVert / \sqrt n)\,\rho_t \\
        p &\leftarrow p\,(1 - \eta\lambda) \\
        v &\leftarrow v + \beta_t\,(g^2 - v) \quad \text{(factored: rows and columns)} \\
        u &= g / \sqrt{\max(v, \epsilon_1^2)} \\
        p &\leftarrow p - \frac{\alpha_t}{\max(1, \lVert u\rVert / (\sqrt n\,d))}\,u

    where :math:`c` is ``beta2_decay``. For a parameter of two or more axes
    the second moment :math:`v` is the outer product of the running means of
    :math:`g^2` over its last axis (rows) and over its second-to-last
    (columns), divided by the mean of the rows: memory of one row and one
    column instead of the whole matrix.

    Parameters
    ----------
    {params}
    lr : float, default 1e-2
        The largest relative step :math:`\eta` (steps are :math:`\min(\eta,
        t^{-1/2})` times the parameter's root mean square).
    beta2_decay : float, default -0.8
        The exponent :math:`c \le 0` of the second moment's weight :math:`t^{c}`.
    eps : tuple of (float or None, float), default (None, 1e-3)
        :math:`\epsilon_1`, the smallest second moment's root (None: the
        dtype's machine epsilon), and :math:`\epsilon_2`, the smallest
        parameter scale.
    d : float, default 1.0
        The update's clipping threshold (at least 1).
    weight_decay : float, default 0
        Decoupled weight decay :math:`\lambda`.
    {foreach}
    {maximize}

    Notes
    -----
    The state of a parameter is ``{"step": int, "row_var": Tensor, "col_var":
    Tensor}`` (shapes ``(..., R, 1)`` and ``(..., 1, C)``) for two or more
    axes, ``{"step": int, "variance": Tensor}`` otherwise. Complex parameters
    are refused (:class:`~plugrad.errors.DtypeError`), as PyTorch refuses them;
    the other optimizers take them.

    Examples
    --------
    >>> import plugrad
    >>> w = plugrad.tensor([[1.0, -2.0], [0.5, 4.0]], requires_grad=True)
    >>> opt = plugrad.optim.Adafactor([w], lr=0.1)
    >>> w.grad = plugrad.tensor([[1.0, 1.0], [-1.0, 2.0]])
    >>> opt.step()
    >>> opt.state[w]["row_var"].shape, opt.state[w]["col_var"].shape
    ((2, 1), (1, 2))
    """

    _supports_complex = False
    _pairs = ("eps",)
    _options = ("lr", "beta2_decay", "eps", "d", "weight_decay", "foreach", "maximize")

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        beta2_decay: float = -0.8,
        eps: tuple[float | None, float] = (None, 1e-3),
        d: float = 1.0,
        weight_decay: float = 0.0,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
    ) -> None:
        # Which formula each lerp of the second moment uses, per parameter (see _choices).
        self._small: dict[int, bool] = {}
        super().__init__(params, self._defaults_from(locals()))

    def _check_options(self, group: dict[str, Any]) -> None:
        check_options(group, ["lr", "d", "weight_decay"], ["maximize"])
        check_compatibility_flags("Adafactor", group)
        check_number("d", group["d"], at_least=1.0)
        decay = group["beta2_decay"]
        if isinstance(decay, bool) or not isinstance(decay, int | float) or decay > 0:
            raise InvalidArgumentError(
                f"Adafactor: beta2_decay must be a number <= 0, got {decay!r}"
            )
        eps = group["eps"]
        if not isinstance(eps, tuple | list) or len(eps) != 2:
            raise InvalidArgumentError(
                f"Adafactor: eps must be a pair (eps1 or None, eps2), got {eps!r}"
            )
        if eps[0] is not None:
            check_number("eps[0]", eps[0])
        check_number("eps[1]", eps[1])

    def _new_state(self, param: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        xp, array = param._device.xp, param._array
        if array.ndim < 2:
            return {"step": 0, "variance": state_tensor(param, xp.zeros_like(array))}
        shape = tuple(array.shape)
        rows = xp.zeros((*shape[:-1], 1), dtype=array.dtype, device=param._device.native)
        columns = xp.zeros((*shape[:-2], 1, shape[-1]), dtype=array.dtype,
                           device=param._device.native)  # fmt: skip
        return {
            "step": 0,
            "row_var": state_tensor(param, rows),
            "col_var": state_tensor(param, columns),
        }

    def _check_state(self, param: Tensor, state: Mapping[str, Any], group: dict[str, Any]) -> None:
        shape = tuple(param.shape)
        if len(shape) < 2:
            check_state("Adafactor", param, state, buffers=["variance"])
        else:
            rows, columns = (*shape[:-1], 1), (*shape[:-2], 1, shape[-1])
            check_state("Adafactor", param, state, shaped={"row_var": rows, "col_var": columns})

    def _choices(self) -> tuple[Any, ...]:
        # Whether the next step's second-moment weight is below 0.5 (PyTorch's lerp rounds
        # the two sides differently), per parameter: a compiled step replays only for the same.
        state = self.state
        return tuple(
            lerp_rounding((state[p]["step"] + 1) ** group["beta2_decay"]) if p in state else None
            for group in self.param_groups
            for p in group["params"]
        )

    def _prepare_group(self, group: dict[str, Any]) -> list[float]:
        # Per parameter that has a gradient: the second moment's weight and 1 - it, the
        # relative step rho, and the weight decay's factor.
        lr, decay, weight_decay = group["lr"], group["beta2_decay"], group["weight_decay"]
        numbers: list[float] = []
        stepped = [param for param in group["params"] if param._grad is not None]
        for param, entry in zip(stepped, self._count_steps(group)):
            step = entry["step"]
            weight = step**decay
            self._small[id(param)] = lerp_rounding(weight)
            numbers += [weight, 1 - weight, min(lr, 1 / step**0.5), 1 - lr * weight_decay]
        return numbers

    def _update_group(self, group: dict[str, Any], numbers: list[float]) -> None:
        (eps1, eps2), d, state = group["eps"], group["d"], self.state
        decays = bool(group["weight_decay"])
        steps = gradients_to_descend({**group, "weight_decay": 0})
        for index, (param, array, g) in enumerate(steps):
            weight, rest, rho, shrink = numbers[4 * index : 4 * index + 4]
            xp, small = param._device.xp, self._small[id(param)]
            smallest = finfo(param.dtype).eps if eps1 is None else eps1
            size = math.prod(array.shape)
            scale = xp.clip(xp.linalg.vector_norm(array) / size**0.5, min=eps2) * rho
            if decays:
                array *= shrink
            entry = state[param]
            if array.ndim >= 2:
                rows, columns = entry["row_var"], entry["col_var"]
                squares = g * g
                row_mean = xp.mean(squares, axis=-1, keepdims=True)
                column_mean = xp.mean(squares, axis=-2, keepdims=True)
                r = rows._array = lerp_(xp, rows._array, row_mean, weight, rest, small)
                c = columns._array = lerp_(xp, columns._array, column_mean, weight, rest, small)
                estimate = (r @ c) / xp.clip(xp.mean(r, axis=-2, keepdims=True), min=smallest)
            else:
                variance = entry["variance"]
                v = lerp_(xp, variance._array, g * g, weight, rest, small)
                variance._array = v
                estimate = v
            update = g / xp.sqrt(xp.clip(estimate, min=smallest * smallest))
            # At least 1; 1 where the norm is NaN (PyTorch's max(1.0, nan)), so that one
            # non-finite element of the update does not spread to every other one.
            clip = xp.linalg.vector_norm(update) / (size**0.5 * d)
            clip = xp.where(clip > 1.0, clip, 1.0)
            array -= (scale / clip) * update
            param._array = array  # the same object, unless the backend's arrays are immutable
            param._bump_version()
