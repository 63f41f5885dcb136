"""Rprop: steps of a per-coordinate size that grows or shrinks with the gradient's sign."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import ArgumentError, InvalidArgumentError
from ..tensor import Tensor
from .checks import check_compatibility_flags, check_number, check_options, check_state
from .optimizer import Optimizer, ParamsT, fill_parameter_docs
from .updates import full_state, gradients_to_descend, overwrite, zeros_state

__all__ = ["Rprop"]


@fill_parameter_docs
class Rprop(Optimizer):
    r"""Resilient backpropagation (Riedmiller & Braun, 1993), as PyTorch's.

    Each coordinate keeps its own step size :math:`s` (``lr`` at first). With
    gradient :math:`g` (negated for ``maximize``) and the previous one
    :math:`g'`, each step computes

    .. math::

        s &\leftarrow \operatorname{clip}(s \cdot f,\ s_{\min},\ s_{\max}),
            \quad f = \eta_+ \text{ if } g g' > 0,\ \eta_- \text{ if } g g' < 0,\ 1 \text{ else} \\
        g &\leftarrow 0 \text{ where } g g' < 0 \\
        p &\leftarrow p - \operatorname{sign}(g)\,s

    and keeps :math:`g` as the next step's :math:`g'`: after a sign change a
    coordinate pauses for one step.

    Parameters
    ----------
    {params}
    lr : float, default 1e-2
        The initial step size of every coordinate (later changes of ``lr``, by a
        scheduler say, do not affect parameters that have stepped).
    etas : tuple of float, default (0.5, 1.2)
        :math:`(\eta_-, \eta_+)`, with :math:`0 < \eta_- < 1 < \eta_+`: the
        factors that shrink and grow the step sizes.
    step_sizes : tuple of float, default (1e-6, 50)
        :math:`(s_{\min}, s_{\max})`, the bounds of the step sizes.
    {capturable}
    {foreach}
    {maximize}
    {differentiable}

    Notes
    -----
    The state of a parameter is ``{"step": int, "prev": Tensor, "step_size":
    Tensor}``. A complex parameter is stepped as two real numbers, its real and
    imaginary parts, as in PyTorch: each part has its own sign and step size
    (``step_size`` starts at ``lr + lr * 1j``).

    Examples
    --------
    Steps grow by 1.2 while the gradient keeps its sign:

    >>> import plugrad
    >>> w = plugrad.tensor([0.0], requires_grad=True)
    >>> opt = plugrad.optim.Rprop([w], lr=0.1)
    >>> w.grad = plugrad.tensor([-3.0])
    >>> for _ in range(3):
    ...     opt.step()
    >>> w, opt.state[w]["step_size"]
    (tensor([0.3640], requires_grad=True), tensor([0.1440]))
    """

    _complex_as_real = True
    _options = ("lr", "etas", "step_sizes", "foreach", "maximize", "differentiable", "capturable")
    _pairs = ("etas", "step_sizes")

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        etas: tuple[float, float] = (0.5, 1.2),
        step_sizes: tuple[float, float] = (1e-6, 50),
        *,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        super().__init__(params, self._defaults_from(locals()))

    def _check_options(self, group: dict[str, Any]) -> None:
        check_options(group, ["lr"], ["maximize"])
        for key in ("etas", "step_sizes"):
            pair = group[key]
            if not isinstance(pair, tuple | list) or len(pair) != 2:
                raise ArgumentError(f"Rprop {key} must be a pair of numbers, got {pair!r}")
            check_number(f"{key}[0]", pair[0])
            check_number(f"{key}[1]", pair[1])
        etaminus, etaplus = group["etas"]
        if not 0.0 < etaminus < 1.0 < etaplus:
            raise InvalidArgumentError(
                f"Rprop etas must be (etaminus, etaplus) with 0 < etaminus < 1 < etaplus, got "
                f"{tuple(group['etas'])!r}"
            )
        low, high = group["step_sizes"]
        if low > high:
            raise InvalidArgumentError(
                f"Rprop step_sizes must be (minimum, maximum) with minimum <= maximum, got "
                f"{tuple(group['step_sizes'])!r}"
            )
        check_compatibility_flags("Rprop", group)

    def _check_state(self, param: Tensor, state: Mapping[str, Any], group: dict[str, Any]) -> None:
        check_state("Rprop", param, state, buffers=["prev", "step_size"])

    def _new_state(self, param: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        return {"step": 0, "prev": zeros_state(param), "step_size": full_state(param, group["lr"])}

    def _prepare_group(self, group: dict[str, Any]) -> list[float]:
        self._count_steps(group)
        return []

    def _update_group(self, group: dict[str, Any], numbers: list[float]) -> None:
        etaminus, etaplus = group["etas"]
        low, high = group["step_sizes"]
        state = self.state
        for param, array, g in gradients_to_descend(group):
            xp = param._device.xp
            entry = state[param]
            prev, step_size = entry["prev"], entry["step_size"]
            sign = xp.sign(g * prev._array)
            factor = xp.where(sign > 0, etaplus, xp.where(sign < 0, etaminus, xp.ones_like(sign)))
            s = step_size._array
            s *= factor
            s = step_size._array = overwrite(xp, s, xp.clip(s, low, high))
            g = xp.where(sign < 0, 0.0, g)
            # A NaN gradient moves nothing, as in PyTorch (whose sign of NaN is 0).
            array -= xp.where(xp.isnan(g), 0.0, xp.sign(g)) * s
            prev._array = overwrite(xp, prev._array, g)
            param._array = array  # the same object, unless the backend's arrays are immutable
            param._bump_version()
