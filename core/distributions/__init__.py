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

:class:`TransformedDistribution` pushes a distribution through the maps of
:mod:`~plugrad.distributions.transforms`, and :data:`biject_to` and
:data:`transform_to` (:mod:`~plugrad.distributions.constraint_registry`)
give the map from the reals onto a constraint.

The families that PyTorch derives from :class:`ExponentialFamily` derive from
it here too, so ``isinstance`` tests agree.

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

from . import constraint_registry, constraints, transforms
from .cauchy import Cauchy
from .constraint_registry import biject_to, transform_to
from .continuous import Exponential, Laplace, Uniform
from .continuous_bernoulli import ContinuousBernoulli
from .counts import Binomial, Multinomial, NegativeBinomial, Poisson
from .discrete import (
    Bernoulli,
    Categorical,
    Geometric,
    OneHotCategorical,
    OneHotCategoricalStraightThrough,
)
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .gamma import Beta, Chi2, Dirichlet, FisherSnedecor, Gamma, InverseGamma, StudentT
from .generalized_pareto import GeneralizedPareto
from .independent import Independent
from .kl import kl_divergence, register_kl
from .lkj_cholesky import LKJCholesky
from .low_rank_multivariate_normal import LowRankMultivariateNormal
from .mixture import MixtureSameFamily
from .multivariate_normal import MultivariateNormal
from .normal import LogNormal, Normal
from .relaxed import (
    ExpRelaxedCategorical,
    LogitRelaxedBernoulli,
    RelaxedBernoulli,
    RelaxedOneHotCategorical,
)
from .transformed_distribution import TransformedDistribution
from .transformed_families import (
    Gumbel,
    HalfCauchy,
    HalfNormal,
    Kumaraswamy,
    LogisticNormal,
    Pareto,
    Weibull,
)
from .transforms import *  # noqa: F403
from .von_mises import VonMises
from .wishart import Wishart

# The families, the tools around them, and every transform (transforms.__all__).
__all__ = [
    "Bernoulli",
    "Beta",
    "Binomial",
    "Categorical",
    "Cauchy",
    "Chi2",
    "ContinuousBernoulli",
    "Dirichlet",
    "Distribution",
    "ExpRelaxedCategorical",
    "Exponential",
    "ExponentialFamily",
    "FisherSnedecor",
    "Gamma",
    "GeneralizedPareto",
    "Geometric",
    "Gumbel",
    "HalfCauchy",
    "HalfNormal",
    "Independent",
    "InverseGamma",
    "Kumaraswamy",
    "LKJCholesky",
    "Laplace",
    "LogNormal",
    "LogisticNormal",
    "LogitRelaxedBernoulli",
    "LowRankMultivariateNormal",
    "MixtureSameFamily",
    "Multinomial",
    "MultivariateNormal",
    "NegativeBinomial",
    "Normal",
    "OneHotCategorical",
    "OneHotCategoricalStraightThrough",
    "Pareto",
    "Poisson",
    "RelaxedBernoulli",
    "RelaxedOneHotCategorical",
    "StudentT",
    "TransformedDistribution",
    "Uniform",
    "VonMises",
    "Weibull",
    "Wishart",
    "biject_to",
    "constraint_registry",
    "constraints",
    "kl_divergence",
    "register_kl",
    "transform_to",
    "transforms",
    *transforms.__all__,
]
