"""Muon: momentum whose update is orthogonalized by a Newton-Schulz iteration, for matrices."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping
from typing import Any

from .. import dtypes as _dtypes
from ..errors import InvalidArgumentError, ShapeError
from ..tensor import Tensor
from .checks import check_int, check_number, check_options, check_state
from .optimizer import Optimizer, ParamsT, fill_parameter_docs
from .updates import lerp_, lerp_rounding, zeros_state

__all__ = ["Muon"]

#: PyTorch's defaults (from Keller Jordan's Muon): the quintic's coefficients, its number of
#: iterations, and the smallest norm a matrix is divided by.
_COEFFICIENTS = (3.4445, -4.7750, 2.0315)
_STEPS = 5
_EPS = 1e-7
#: PyTorch refuses this many iterations or more (at the step); plugrad when the option is set.
_MOST_STEPS = 99
#: The learning-rate adjustments ``adjust_lr_fn`` names (None is "original").
_ADJUSTMENTS = ("original", "match_rms_adamw")


@fill_parameter_docs
class Muon(Optimizer):
    r"""Muon (Jordan et al., 2024), as PyTorch's ``torch.optim.Muon``: for 2-D parameters.

    With gradient :math:`g` of a matrix :math:`p` of shape :math:`m \times n`
    and momentum buffer :math:`B`:

    .. math::

        B &\leftarrow B + (1 - \mu)\,(g - B) \\
        u &= \begin{cases} g + \mu\,(B - g) & \text{with nesterov} \\
                           B & \text{without} \end{cases} \\
        O &= \mathrm{NS}_k(u) \\
        p &\leftarrow p\,(1 - \eta\lambda) - \eta'\,O

    where :math:`\mathrm{NS}_k` divides :math:`u` by its Frobenius norm (at
    least :math:`\epsilon`) and applies :math:`k` times the quintic
    :math:`X \leftarrow aX + (bXX^\top + c(XX^\top)^2)X` (to :math:`X^\top`
    when :math:`m > n`), which brings the singular values of :math:`X` near 1
    (not exactly: the coefficients favour speed): about the orthogonal factor
    of :math:`u`, whatever the gradient's scale. The learning rate :math:`\eta'`
    of the update is :math:`\eta` adjusted for the shape of :math:`p` (see
    ``adjust_lr_fn``); weight decay uses :math:`\eta` itself.

    Parameters
    ----------
    {params}
        Only matrices: biases, embeddings and the other parameters are
        optimized with another optimizer (such as :class:`~plugrad.optim.AdamW`).
    lr : float, default 1e-3
        Learning rate :math:`\eta`.
    weight_decay : float, default 0.1
        Decoupled weight decay :math:`\lambda`: each step first shrinks the
        parameter by the factor :math:`1 - \eta\lambda`.
    momentum : float, default 0.95
        The momentum :math:`\mu`: the buffer :math:`B` is a moving average of
        the gradients, with weight :math:`1 - \mu` for the newest.
    nesterov : bool, default True
        Orthogonalize the gradient moved toward the buffer by :math:`\mu`
        (Nesterov momentum) instead of the buffer itself.
    ns_coefficients : tuple of three floats, default (3.4445, -4.7750, 2.0315)
        The coefficients :math:`a, b, c` of the quintic.
    eps : float, default 1e-7
        The smallest norm :math:`u` is divided by (a zero gradient stays zero).
    ns_steps : int, default 5
        The number :math:`k` of Newton-Schulz iterations, below 100.
    adjust_lr_fn : {None, "original", "match_rms_adamw"}, optional
        How :math:`\eta'` follows from the shape :math:`m \times n`:
        ``"original"`` (Keller Jordan's, also what None means) is
        :math:`\eta\sqrt{\max(1, m/n)}`; ``"match_rms_adamw"`` (Moonshot AI's,
        Liu et al., 2025) is :math:`0.2\,\eta\sqrt{\max(m, n)}`, an update of
        about the root mean square of AdamW's, so that AdamW's learning rate and
        weight decay can be used as they are.

    Notes
    -----
    The state of a parameter is ``{"momentum_buffer": Tensor}``, as in
    PyTorch (no step count). As PyTorch's, the iteration runs in bfloat16
    precision: each of its results (the gradient, its norm, the quotient, each
    product) is rounded to the nearest bfloat16 value; here on every backend,
    by arithmetic on float32 arrays (NumPy has no bfloat16). The products
    accumulate in float32, as PyTorch's; where the backend sums in another
    order than PyTorch's kernel, an element that lands near the midpoint of
    two bfloat16 values may round the other way (rarely; the update then
    differs by about a bfloat16 step). The update is added to the parameter
    in the parameter's dtype.

    Parameters other than matrices are refused (a
    :class:`~plugrad.errors.ShapeError`), and so are complex ones (a
    :class:`~plugrad.errors.DtypeError`), when they are added: PyTorch refuses
    the former when the optimizer is built, the latter at the first step.

    Examples
    --------
    The step does not depend on the gradient's scale: a multiple of the
    identity gives about the identity (1.125 times it, after 5 iterations),
    times ``lr``:

    >>> import plugrad
    >>> w = plugrad.zeros((2, 2), requires_grad=True)
    >>> opt = plugrad.optim.Muon([w], lr=0.1, weight_decay=0.0)
    >>> w.grad = plugrad.tensor([[30.0, 0.0], [0.0, 30.0]])
    >>> opt.step()
    >>> w
    tensor([[-0.1125,  0.0000],
            [ 0.0000, -0.1125]], requires_grad=True)
    """

    _supports_complex = False
    _pairs = ("ns_coefficients",)
    # Schedulers change the momentum too (OneCycleLR's cycle_momentum): read afresh.
    _fresh_options = frozenset({"lr", "momentum"})

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        weight_decay: float = 0.1,
        momentum: float = 0.95,
        nesterov: bool = True,
        ns_coefficients: tuple[float, float, float] = _COEFFICIENTS,
        eps: float = _EPS,
        ns_steps: int = _STEPS,
        adjust_lr_fn: str | None = None,
    ) -> None:
        super().__init__(params, self._defaults_from(locals()))

    def _check_options(self, group: dict[str, Any]) -> None:
        check_options(group, ["lr", "weight_decay", "momentum", "eps"], ["nesterov"])
        coefficients = group["ns_coefficients"]
        if not isinstance(coefficients, tuple | list) or len(coefficients) != 3:
            raise InvalidArgumentError(
                f"Muon: ns_coefficients must be three numbers (a, b, c), got {coefficients!r}"
            )
        for index, coefficient in enumerate(coefficients):
            check_number(f"ns_coefficients[{index}]", coefficient, at_least=-math.inf)
        steps = group["ns_steps"]
        check_int("ns_steps", steps, at_least=0)
        if steps > _MOST_STEPS:
            raise InvalidArgumentError(
                f"Muon: ns_steps must be below {_MOST_STEPS + 1} (each step costs three matrix "
                f"products; PyTorch's limit), got {steps!r}"
            )
        adjust = group["adjust_lr_fn"]
        if adjust is not None and adjust not in _ADJUSTMENTS:
            raise InvalidArgumentError(
                f"Muon: adjust_lr_fn must be None, 'original' or 'match_rms_adamw', got {adjust!r}"
            )

    def _check_param_dtype(self, param: Tensor) -> None:
        # (the check each parameter gets when it is added: its shape, for Muon, too)
        super()._check_param_dtype(param)
        if param.ndim != 2:
            raise ShapeError(
                f"Muon only optimizes 2-D parameters (matrices), got one of shape {param.shape}; "
                "optimize the others (biases, embeddings, ...) with a second optimizer, such as "
                "AdamW"
            )

    def _check_state(self, param: Tensor, state: Mapping[str, Any], group: dict[str, Any]) -> None:
        check_state("Muon", param, state, buffers=["momentum_buffer"], counts_steps=False)

    def _structure_of(self, option: str, value: Any) -> Any:
        # Which formula each lerp of the momentum uses (PyTorch's rounds its sides differently).
        if option == "momentum":
            return lerp_rounding(1 - value), lerp_rounding(value)
        return None

    def _prepare_group(self, group: dict[str, Any]) -> list[float]:
        # The buffer's lerp weight and 1 - it, the Nesterov lerp's weight and 1 - it, the
        # weight decay's factor; then per parameter that has a gradient, its step size.
        lr, momentum, state = group["lr"], group["momentum"], self.state
        weight = 1 - momentum
        numbers = [weight, 1 - weight, momentum, 1 - momentum, 1 - lr * group["weight_decay"]]
        for param in group["params"]:
            if param._grad is None:
                continue
            if not state.get(param):
                state[param] = {"momentum_buffer": zeros_state(param)}
            numbers.append(lr * _lr_ratio(group["adjust_lr_fn"], *param.shape))
        return numbers

    def _update_group(self, group: dict[str, Any], numbers: list[float]) -> None:
        weight, rest, momentum, nesterov_rest, shrink = numbers[:5]
        small, nesterov_small = self._structure_of("momentum", group["momentum"])
        nesterov, decays, state = group["nesterov"], bool(group["weight_decay"]), self.state
        coefficients, steps, eps = group["ns_coefficients"], group["ns_steps"], group["eps"]
        stepped = [param for param in group["params"] if param._grad is not None]
        for param, step_size in zip(stepped, numbers[5:]):
            xp, device = param._device.xp, param._device
            wide = (
                device.native_dtype(_dtypes.float64) if _dtypes.float64 in device.dtypes else None
            )
            quiet = device.backend.floating_point_warnings_off()
            # (an infinite gradient gives NaN without a word, as in PyTorch: NumPy would warn)
            with quiet if quiet is not None else contextlib.nullcontext():
                array, g = param._array, param._grad._array
                buffer = state[param]["momentum_buffer"]
                b = buffer._array = lerp_(xp, buffer._array, g, weight, rest, small)
                if nesterov:
                    # PyTorch's grad.lerp(buffer, momentum), on a copy: g is the gradient's own.
                    g = xp.asarray(g, copy=True)
                    u = lerp_(xp, g, b, momentum, nesterov_rest, nesterov_small)
                else:
                    u = b
                update = _orthogonalized(xp, u, coefficients, steps, eps, wide)
                if update.dtype != array.dtype:
                    update = xp.astype(update, array.dtype)
                if decays:
                    array *= shrink
                update *= step_size
                array -= update
            param._array = array  # the same object, unless the backend's arrays are immutable
            param._bump_version()


def _lr_ratio(adjust_lr_fn: str | None, rows: int, columns: int) -> float:
    """What ``adjust_lr_fn`` multiplies the learning rate by for a matrix of that shape."""
    if adjust_lr_fn == "match_rms_adamw":
        return 0.2 * math.sqrt(max(rows, columns))
    return math.sqrt(max(1, rows / columns))


def _orthogonalized(
    xp: Any, u: Any, coefficients: tuple[float, float, float], steps: int, eps: float, wide: Any
) -> Any:
    """The Newton-Schulz iteration of :class:`Muon` on the matrix ``u``, in bfloat16 precision.

    A float32 array of bfloat16 values, shaped as ``u``: each of PyTorch's
    bfloat16 results rounded as it rounds them (see :func:`_bfloat16_values`);
    ``wide`` is the device's float64, or None (see :func:`_fused`).
    """
    a, b, c = coefficients
    # From float64 through float32, as PyTorch converts to bfloat16 (two roundings).
    x = _bfloat16_values(xp, xp.astype(u, xp.float32))
    tall = x.shape[0] > x.shape[1]
    if tall:  # (the Gram matrix of the smaller side)
        x = x.T
    norm = _bfloat16_values(xp, xp.clip(xp.linalg.vector_norm(x), min=eps))
    x = _bfloat16_values(xp, x / norm)
    for _ in range(steps):
        gram = _bfloat16_values(xp, x @ x.T)
        polynomial = _bfloat16_values(xp, _fused(xp, b, gram, c * (gram @ gram), wide))
        x = _bfloat16_values(xp, _fused(xp, a, x, polynomial @ x, wide))
    return x.T if tall else x


def _fused(xp: Any, beta: float, c: Any, t: Any, wide: Any) -> Any:
    """``beta * c + t`` (float32 arrays), rounded once, as PyTorch's ``addmm`` adds ``beta``
    times its first argument to the product: the multiplication is fused into the addition.

    Computed in ``wide`` (float64, exact there for ``beta * c`` of a bfloat16 ``c``), or in
    float32 with two roundings where it is None (a device without float64).
    """
    beta = _dtypes.rounded_to_float32(beta)  # (PyTorch's beta is a float: float32)
    if wide is None:
        return beta * c + t
    return xp.astype(beta * xp.astype(c, wide) + xp.astype(t, wide), xp.float32)


def _bfloat16_values(xp: Any, x: Any) -> Any:
    """Each value of the float32 array ``x`` rounded to the nearest bfloat16 (ties to even).

    What a cast to bfloat16 gives, as float32, for every value (zeros and
    infinities keep their sign, NaN stays NaN), by arithmetic alone, so on
    every backend (NumPy has no bfloat16); subnormal values become 0 where the
    backend's arithmetic flushes them (JAX's on the CPU).

    bfloat16 keeps 8 of float32's 24 significant bits: Veltkamp's split,
    ``s + (x - s)`` with ``s = (2**16 + 1) * x``, is ``x`` rounded to them (to
    nearest, ties to even). Values beyond 2**100 are split scaled by 2**-64,
    so that ``s`` cannot overflow; below 2**-126 (bfloat16's subnormals, a
    fixed step of 2**-133) adding and subtracting 1.5 * 2**-110, whose float32
    step is 2**-133, rounds instead.
    """
    magnitude = xp.abs(x)
    huge = magnitude > 2.0**100
    scaled = xp.where(huge, magnitude * 2.0**-64, magnitude)
    spread = scaled * 65537.0
    rounded = spread + (scaled - spread)
    rounded = xp.where(huge, rounded * 2.0**64, rounded)
    subnormal = (magnitude + 1.5 * 2.0**-110) - 1.5 * 2.0**-110
    rounded = xp.where(magnitude < 2.0**-126, subnormal, rounded)
    rounded = xp.where(xp.isinf(magnitude), magnitude, rounded)  # (the split gives NaN there)
    return xp.copysign(rounded, x)
