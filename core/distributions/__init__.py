"""``plugrad.distributions``: PyTorch's ``torch.distributions`` for the families plugrad computes.

Each distribution has a ``batch_shape`` and an ``event_shape``, draws samples
from plugrad's random-number generators (so :func:`plugrad.manual_seed` makes
them reproducible, on every backend), and computes ``log_prob``, ``entropy``,
``cdf`` and :func:`kl_divergence` with plugrad's ops, so they are
differentiable in the parameters. Those with ``has_rsample`` draw
reparameterized samples with ``rsample``, differentiable too. Parameters are
Tensors or Python numbers and broadcast together as in PyTorch; with
``validate_args`` (on by default) a parameter or a value outside its
constraint raises :class:`plugrad.errors.InvalidArgumentError`, a
``ValueError``.

The families whose densities need the log-gamma function (``Gamma``,
``Beta``, ``Dirichlet``, ``Poisson``, ``Binomial``, ``StudentT``, ``Chi2`` and
the rest) are not written yet, though :func:`plugrad.lgamma`,
:func:`plugrad.digamma` and :func:`plugrad.erfinv` are there to write them.

Examples
--------
>>> import plugrad
>>> from plugrad.distributions import Normal, kl_divergence
>>> loc = plugrad.tensor([0.0, 1.0], requires_grad=True)
>>> q = Normal(loc, 1.0)
>>> kl = kl_divergence(q, Normal(0.0, 1.0)).sum()
>>> kl.backward()
>>> loc.grad
tensor([0., 1.])
"""

from __future__ import annotations

from . import constraints
from .continuous import Exponential, Laplace, Uniform
from .discrete import Bernoulli, Categorical, Geometric, OneHotCategorical
from .distribution import Distribution
from .gamma import Beta, Chi2, Dirichlet, Gamma, StudentT
from .independent import Independent
from .kl import kl_divergence, register_kl
from .multivariate_normal import MultivariateNormal
from .normal import LogNormal, Normal

__all__ = [
    "Bernoulli",
    "Beta",
    "Chi2",
    "Dirichlet",
    "Gamma",
    "StudentT",
    "Categorical",
    "Distribution",
    "Exponential",
    "Geometric",
    "Independent",
    "Laplace",
    "LogNormal",
    "MultivariateNormal",
    "Normal",
    "OneHotCategorical",
    "Uniform",
    "constraints",
    "kl_divergence",
    "register_kl",
]
