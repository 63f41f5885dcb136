"""The base class of the exponential families, whose entropy follows from their log-normalizer."""

from __future__ import annotations

from ..engine import grad
from ..grad_mode import enable_grad, is_grad_enabled
from ..tensor import Tensor
from .distribution import Distribution
from .utils import sum_rightmost

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """A distribution with density ``exp(<t(x), theta> - F(theta) + k(x))``: PyTorch's base
    class of the exponential families.

    ``theta`` are the natural parameters, ``t(x)`` the sufficient statistics,
    ``F`` the log-normalizer and ``k(x)`` the carrier measure. A family gives
    ``_natural_params``, ``_log_normalizer(*theta)`` and
    ``_mean_carrier_measure`` (the expectation of ``k``); :meth:`entropy` then
    follows, as ``F(theta) - <theta, grad F(theta)> - E[k(x)]``. The families
    of plugrad derive from it where PyTorch's do (``Bernoulli``, ``Beta``,
    ``Chi2``, ``ContinuousBernoulli``, ``Dirichlet``, ``Exponential``,
    ``Gamma``, ``Normal``, ``Poisson``, ``Wishart``); each computes its
    entropy in closed form, and those that PyTorch leaves without
    ``_mean_carrier_measure`` (``Beta``, ``Dirichlet``, ``Poisson``) have none
    here either.

    Examples
    --------
    >>> import math
    >>> import plugrad
    >>> from plugrad.distributions import ExponentialFamily
    >>> class Unit(ExponentialFamily):  # the exponential distribution, theta = -rate
    ...     _mean_carrier_measure = 0
    ...     def __init__(self, rate):
    ...         self.rate = rate
    ...         super().__init__(rate.shape)
    ...     @property
    ...     def _natural_params(self):
    ...         return (-self.rate,)
    ...     def _log_normalizer(self, theta):
    ...         return -(-theta).log()
    >>> Unit(plugrad.tensor([1.0, 2.0])).entropy()  # 1 - log(rate)
    tensor([1.0000, 0.3069])
    """

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        """The natural parameters ``theta``, each with the batch shape first."""
        raise NotImplementedError(f"{type(self).__name__} does not give its natural parameters")

    def _log_normalizer(self, *natural_params: Tensor) -> Tensor:
        """The log-normalizer ``F(theta)``, of the batch shape, of ``natural_params``."""
        raise NotImplementedError(f"{type(self).__name__} does not give its log-normalizer")

    @property
    def _mean_carrier_measure(self) -> float | Tensor:
        """The expectation of the carrier measure ``k(x)``."""
        raise NotImplementedError(
            f"{type(self).__name__} does not give the mean of its carrier measure"
        )

    def entropy(self) -> Tensor:
        """``F(theta) - <theta, grad F(theta)> - E[k(x)]``, with ``grad F`` by autograd.

        As PyTorch's, and differentiable in the parameters too (PyTorch's is
        computed from detached copies of them).
        """
        carrier = self._mean_carrier_measure
        natural = self._natural_params
        connected = is_grad_enabled() and any(p.requires_grad for p in natural)
        batch_axes = len(self._batch_shape)
        with enable_grad():
            # A node of its own for each parameter: the gradient in one that is also another
            # (Beta(a, a)) must not be the sum of both.
            params = [p * 1 if p.requires_grad else p.detach().requires_grad_() for p in natural]
            normalizer = self._log_normalizer(*params)
            slopes = grad(normalizer.sum(), params, create_graph=connected)
            result = normalizer - carrier
            for param, slope in zip(params, slopes):
                assert slope is not None  # every parameter enters the normalizer
                result = result - sum_rightmost(param * slope, max(param.ndim - batch_axes, 0))
        return result if connected else result.detach()
