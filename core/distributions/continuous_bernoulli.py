"""The continuous Bernoulli distribution."""

from __future__ import annotations

import math
from typing import Any

from .. import dtypes as _dtypes
from .. import ops as _ops
from ..dtype_functions import result_type
from ..errors import InvalidArgumentError
from ..grad_mode import no_grad
from ..nn.functional import sigmoid
from ..random import rand
from ..tensor import Size, Tensor
from . import constraints
from .discrete import _BinaryParameters
from .exp_family import ExponentialFamily
from .utils import broadcast_all, clamp_probs, lazy_property

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(_BinaryParameters, ExponentialFamily):
    """The continuous Bernoulli distribution on ``[0, 1]``: density proportional to
    ``p**x (1 - p)**(1 - x)`` (Loaiza-Ganem and Cunningham, 2019).

    The normalized likelihood of a variational autoencoder with pixels in
    ``[0, 1]``. ``probs`` is not a probability and ``logits`` not log-odds,
    though they are related as a Bernoulli's. Near ``probs = 1/2``, within
    ``lims``, the normalizer, mean and variance are Taylor expansions, whose
    exact forms cancel there.

    Parameters
    ----------
    probs : Tensor or float, optional
        In ``[0, 1]`` (clipped into ``[eps, 1 - eps]``).
    logits : Tensor or float, optional
        Real. Give ``probs`` or ``logits``, not both.
    lims : tuple of two floats
        The interval about 1/2 where the expansions are used.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import ContinuousBernoulli
    >>> d = ContinuousBernoulli(probs=plugrad.tensor([0.2, 0.5]))
    >>> d.log_prob(plugrad.tensor([0.25, 0.25])), d.mean
    (tensor([0.2677, 0.0000]), tensor([0.3880, 0.5000]))
    >>> d.cdf(d.icdf(plugrad.tensor([0.3, 0.3])))
    tensor([0.3000, 0.3000])
    """

    support = constraints.unit_interval
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(
        self,
        probs: Tensor | float | None = None,
        logits: Tensor | float | None = None,
        lims: tuple[float, float] = (0.499, 0.501),
        validate_args: bool | None = None,
    ) -> None:
        if not (
            isinstance(lims, tuple | list)
            and len(lims) == 2
            and all(isinstance(v, int | float) and not isinstance(v, bool) for v in lims)
            and 0 < lims[0] <= 0.5 <= lims[1] < 1
        ):
            raise InvalidArgumentError(
                f"ContinuousBernoulli: lims must be two numbers about 1/2, (low, high) with "
                f"0 < low <= 0.5 <= high < 1, got {lims!r}"
            )
        self._lims = (lims[0], lims[1])
        super().__init__(probs, logits, validate_args)
        if "probs" in self.__dict__:
            # As PyTorch's: clipped once checked, so that the logs stay finite.
            self.probs = clamp_probs(self.probs)

    def _expand_into(self, new: Any, batch_shape: tuple[int, ...]) -> None:
        super()._expand_into(new, batch_shape)
        new._lims = self._lims

    @lazy_property
    def probs(self) -> Tensor:
        """The parameter ``p`` in ``[eps, 1 - eps]``: ``sigmoid(logits)``, clipped."""
        return clamp_probs(sigmoid(self.logits))

    @property
    def param_shape(self) -> Size:
        """The shape of ``probs`` (or ``logits``)."""
        return Size(self._param.shape)

    def _outside_unstable_region(self) -> Tensor:
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self) -> Tensor:
        """``probs`` outside ``lims``, and ``lims[0]`` inside (where it is not used), in
        float64 where the device has it: the exact forms cancel near 1/2 (float32's
        variance at ``probs = 0.498`` was 0.018 for 0.083)."""
        probs = self.probs
        if _dtypes.float64 in probs.device.dtypes:
            probs = _ops.astype(probs, _dtypes.float64)
        return _ops.where(self._outside_unstable_region(), probs, self._lims[0])

    def _narrowed(self, value: Tensor) -> Tensor:
        """``value`` (computed from :meth:`_cut_probs`) in the dtype of ``probs``."""
        return _ops.astype(value, self.probs.dtype)

    def _cont_bern_log_norm(self) -> Tensor:
        """The log of the normalizing constant, ``log(2 atanh(1 - 2p) / (1 - 2p))``."""
        cut = self._cut_probs()
        below_half = _ops.where(cut <= 0.5, cut, 0.0)
        above_half = _ops.where(cut >= 0.5, cut, 1.0)
        log_norm = _ops.log(_ops.abs(_ops.log1p(-cut) - _ops.log(cut))) - _ops.where(
            cut <= 0.5, _ops.log1p(-2.0 * below_half), _ops.log(2.0 * above_half - 1.0)
        )
        x = (self.probs - 0.5) ** 2
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return _ops.where(self._outside_unstable_region(), self._narrowed(log_norm), taylor)

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (self.logits,)

    def _log_normalizer(self, *natural_params: Tensor) -> Tensor:
        """``log((exp(theta) - 1) / theta)``; near 0, within ``lims`` moved onto the
        logits (``lims - 1/2``, as PyTorch's), its Taylor expansion."""
        (x,) = natural_params
        outside = (x <= self._lims[0] - 0.5) | (x > self._lims[1] - 0.5)
        cut = _ops.where(outside, x, self._lims[0] - 0.5)  # away from 0 where not used
        exact = _ops.log(_ops.abs(_ops.expm1(cut))) - _ops.log(_ops.abs(cut))
        squared = x**2
        taylor = 0.5 * x + squared / 24.0 - squared**2 / 2880.0
        return _ops.where(outside, exact, taylor)

    @property
    def mean(self) -> Tensor:
        cut = self._cut_probs()
        exact = cut / (2.0 * cut - 1.0) + 1.0 / (_ops.log1p(-cut) - _ops.log(cut))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x**2) * x
        return _ops.where(self._outside_unstable_region(), self._narrowed(exact), taylor)

    @property
    def variance(self) -> Tensor:
        cut = self._cut_probs()
        exact = (
            cut * (cut - 1.0) / (1.0 - 2.0 * cut) ** 2
            + 1.0 / (_ops.log1p(-cut) - _ops.log(cut)) ** 2
        )
        x = (self.probs - 0.5) ** 2
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return _ops.where(self._outside_unstable_region(), self._narrowed(exact), taylor)

    def sample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """``icdf(u)`` for ``u`` uniform on ``[0, 1)``: differentiable in the parameter."""
        shape = self._extended_shape(sample_shape)
        return self._quantile(rand(shape, dtype=self.probs.dtype, device=self.probs.device))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        dtype = result_type(logits, value)
        logits, value = _ops.astype(logits, dtype), _ops.astype(value, dtype)
        bce = _ops.binary_cross_entropy_with_logits(logits, value, None, None)
        return -bce + self._cont_bern_log_norm()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        exact = (cut**value * (1.0 - cut) ** (1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        dtype = result_type(self.probs, value)
        inside = _ops.where(self._outside_unstable_region(), _ops.astype(exact, dtype), value)
        return _ops.where(value <= 0.0, 0.0, _ops.where(value >= 1.0, 1.0, inside))

    def icdf(self, value: Tensor) -> Tensor:
        self._validate_probability(value)
        return self._quantile(value)

    def _quantile(self, value: Tensor) -> Tensor:
        cut = self._cut_probs()
        exact = (_ops.log1p(-cut + value * (2.0 * cut - 1.0)) - _ops.log1p(-cut)) / (
            _ops.log(cut) - _ops.log1p(-cut)
        )
        dtype = result_type(self.probs, value)
        return _ops.where(self._outside_unstable_region(), _ops.astype(exact, dtype), value)

    def entropy(self) -> Tensor:
        log_probs0 = _ops.log1p(-self.probs)
        log_probs1 = _ops.log(self.probs)
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0
