"""The von Mises distribution: the normal distribution's analogue on the circle."""

from __future__ import annotations

import math
from typing import ClassVar

from .. import ops as _ops
from ..creation import zeros_like
from ..grad_mode import no_grad
from ..random import rand
from ..special import i0e, i1e
from ..tensor import Tensor
from . import constraints
from .distribution import _CentredAtLoc, _Elementwise
from .utils import _first_accepted

__all__ = ["VonMises"]


class VonMises(_Elementwise, _CentredAtLoc):
    """Angles with density ``exp(concentration * cos(x - loc)) / (2 pi I0(concentration))``.

    Samples lie in ``[-pi, pi)``; ``log_prob`` takes any real angle (the density
    is periodic), as PyTorch's. Samples are drawn by Best and Fisher's rejection
    method (no ``rsample``, as PyTorch's).

    Parameters
    ----------
    loc : Tensor or float
        The mean direction, in radians.
    concentration : Tensor or float
        Positive; near 0 the distribution is nearly uniform, large it is nearly
        normal with variance ``1 / concentration``. They broadcast together.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import VonMises
    >>> d = VonMises(plugrad.tensor([0.0, 1.0]), plugrad.tensor([0.5, 4.0]))
    >>> d.log_prob(plugrad.tensor([0.3, 2.0])), d.variance
    (tensor([-1.4218, -2.1016]), tensor([0.7575, 0.1365]))
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "loc": constraints.real,
        "concentration": constraints.positive,
    }
    support = constraints.real
    loc: Tensor
    concentration: Tensor

    def __init__(
        self,
        loc: Tensor | float,
        concentration: Tensor | float,
        validate_args: bool | None = None,
    ) -> None:
        self._set_parameters(validate_args, loc=loc, concentration=concentration)

    @property
    def variance(self) -> Tensor:
        """The circular variance, ``1 - I1(k) / I0(k)``."""
        k = self.concentration
        return 1 - i1e(k) / i0e(k)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        k = self.concentration
        # log I0(k) = log(i0e(k)) + k, finite for every k where I0 itself overflows.
        log_normalizer = math.log(2 * math.pi) + _ops.log(i0e(k)) + k
        return k * _ops.cos(value - self.loc) - log_normalizer

    def sample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """Angles in ``[-pi, pi)`` by Best and Fisher's method: a wrapped Cauchy proposal,
        accepted by a squeeze or the exact test; every element until one is accepted."""
        shape = self._extended_shape(sample_shape)
        with no_grad():
            loc = _ops.broadcast_to(self.loc, shape)
            k = _ops.broadcast_to(self.concentration, shape)
            dtype, device = k.dtype, k.device
            tau = 1 + _ops.sqrt(1 + 4 * k * k)
            tiny = k < 1e-5
            rho = (tau - _ops.sqrt(2 * tau)) / (2 * _ops.where(tiny, 1.0, k))
            rho = _ops.where(tiny, 1.0, rho)
            # Near k = 0 the expression cancels: its expansion 1/k + k there.
            r = _ops.where(tiny, 1 / _ops.where(tiny, k, 1.0) + k, (1 + rho * rho) / (2 * rho))

            def propose() -> tuple[Tensor, Tensor]:
                u1, u2, u3 = (rand(shape, dtype=dtype, device=device) for _ in range(3))
                z = _ops.cos(math.pi * u1)
                f = (1 + r * z) / (r + z)
                c = k * (r - f)
                squeeze = c * (2 - c) - u2 > 0
                positive = (c > 0) & (u2 > 0)
                ratio = _ops.where(positive, c, 1.0) / _ops.where(positive, u2, 1.0)
                exact = positive & (_ops.log(ratio) + 1 - c >= 0)
                drawn = _ops.sign(u3 - 0.5) * _ops.acos(_ops.clip(f, -1.0, 1.0))
                return squeeze | exact, drawn

            angle = _first_accepted("von Mises", propose, zeros_like(k), ~_ops.isfinite(r))
            return _ops.remainder(angle + math.pi + loc, 2 * math.pi) - math.pi
