"""``plugrad.distributions`` against ``torch.distributions``: values and parameter gradients.

Each case builds the same distribution with plugrad (on every backend under
test) and with PyTorch from the same float64 leaves, and compares what the
distribution computes (``log_prob``, ``entropy``, ``mean``, ``variance``,
``cdf``, ...) and the gradient of a weighted sum of it with respect to every
parameter. Shapes are chosen so that parameters and values broadcast.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

import plugrad
from plugrad.testing import backends_under_test

torch = pytest.importorskip("torch")

from ._helpers import seeded  # noqa: E402  (after the skip without PyTorch)

RNG, uniform = seeded(11)


def lower_cholesky(*shape: int) -> np.ndarray:
    a = np.tril(RNG.normal(size=shape)) * 0.4
    size = shape[-1]
    diagonal = np.abs(RNG.normal(size=(*shape[:-2], size))) + 0.5
    return a * (1 - np.eye(size)) + diagonal[..., None] * np.eye(size)


def positive_definite(*shape: int) -> np.ndarray:
    a = RNG.normal(size=shape) * 0.5
    return a @ np.swapaxes(a, -1, -2) + np.eye(shape[-1])


def one_hot(index: np.ndarray, k: int) -> np.ndarray:
    return np.eye(k)[index]


@dataclass
class Case:
    """``build(D, *params)`` with ``D`` the distributions module; what to compare."""

    build: Callable[..., Any]
    params: tuple[np.ndarray, ...]
    value: np.ndarray | None = None
    methods: tuple[str, ...] = ("log_prob", "entropy", "mean", "variance", "stddev")
    unit_value: np.ndarray | None = None  # the argument of icdf
    symmetric: tuple[int, ...] = field(default=())  # params compared by their symmetric part


#: A KL case: ``build(D, *params)`` gives the pair ``(p, q)``; the parameter arrays.
KLCase = tuple[Callable[..., Any], tuple[np.ndarray, ...]]

UNIT = uniform(0.05, 0.95, 4, 2, 3)

CASES: dict[str, Case] = {
    "Normal": Case(
        lambda D, loc, scale: D.Normal(loc, scale),
        (RNG.normal(size=3), uniform(0.5, 2.0, 2, 1)),
        RNG.normal(size=(4, 1, 3)),
        ("log_prob", "entropy", "mean", "mode", "variance", "stddev", "cdf", "icdf"),
        UNIT,
    ),
    "Normal number scale": Case(
        lambda D, loc: D.Normal(loc, 0.7), (RNG.normal(size=(2, 3)),), RNG.normal(size=3)
    ),
    "LogNormal": Case(
        lambda D, loc, scale: D.LogNormal(loc, scale),
        (RNG.normal(size=(2, 3)) * 0.5, uniform(0.3, 1.0, 3)),
        uniform(0.1, 3.0, 4, 2, 3),
        ("log_prob", "entropy", "mean", "mode", "variance", "cdf", "icdf"),
        UNIT,
    ),
    "Uniform": Case(
        lambda D, low, high: D.Uniform(low, high),
        (uniform(-2.0, -1.0, 3), uniform(1.0, 2.0, 2, 1)),
        uniform(-0.9, 0.9, 4, 2, 3),
        ("log_prob", "entropy", "mean", "variance", "stddev", "cdf", "icdf"),
        UNIT,
    ),
    "Laplace": Case(
        lambda D, loc, scale: D.Laplace(loc, scale),
        (RNG.normal(size=(2, 3)), uniform(0.5, 2.0, 3)),
        RNG.normal(size=(4, 2, 3)),
        ("log_prob", "entropy", "mean", "mode", "variance", "stddev", "cdf", "icdf"),
        UNIT,
    ),
    "Exponential": Case(
        lambda D, rate: D.Exponential(rate),
        (uniform(0.5, 2.0, 2, 3),),
        uniform(0.0, 3.0, 4, 2, 3),
        ("log_prob", "entropy", "mean", "variance", "stddev", "cdf", "icdf"),
        UNIT,
    ),
    "Bernoulli probs": Case(
        lambda D, p: D.Bernoulli(probs=p),
        (uniform(0.05, 0.95, 2, 3),),
        RNG.integers(0, 2, (4, 2, 3)).astype(float),
        ("log_prob", "entropy", "mean", "variance", "mode"),
    ),
    "Bernoulli logits": Case(
        lambda D, logits: D.Bernoulli(logits=logits),
        (RNG.normal(size=(2, 3)) * 2,),
        RNG.integers(0, 2, (3,)).astype(float),
        ("log_prob", "entropy", "mean", "variance"),
    ),
    "Geometric probs": Case(
        lambda D, p: D.Geometric(probs=p),
        (uniform(0.1, 0.9, 2, 3),),
        RNG.integers(0, 6, (4, 2, 3)).astype(float),
        ("log_prob", "entropy", "mean", "variance", "mode"),
    ),
    "Geometric logits": Case(
        lambda D, logits: D.Geometric(logits=logits),
        (RNG.normal(size=3),),
        RNG.integers(0, 6, (2, 3)).astype(float),
        ("log_prob", "entropy", "mean", "variance"),
    ),
    "Categorical probs": Case(
        lambda D, p: D.Categorical(probs=p),
        (uniform(0.1, 1.0, 2, 4),),
        RNG.integers(0, 4, (5, 2)),
        ("log_prob", "entropy", "mode"),
    ),
    "Categorical logits": Case(
        lambda D, logits: D.Categorical(logits=logits),
        (RNG.normal(size=(3, 2, 4)),),
        RNG.integers(0, 4, (5, 1, 2)),
        ("log_prob", "entropy"),
    ),
    "OneHotCategorical": Case(
        lambda D, p: D.OneHotCategorical(probs=p),
        (uniform(0.1, 1.0, 2, 4),),
        one_hot(RNG.integers(0, 4, (5, 2)), 4),
        ("log_prob", "entropy", "mean", "variance", "mode"),
    ),
    "OneHotCategorical logits": Case(
        lambda D, logits: D.OneHotCategorical(logits=logits),
        (RNG.normal(size=(2, 4)),),
        one_hot(RNG.integers(0, 4, (2,)), 4),
        ("log_prob", "entropy", "mean"),
    ),
    "MultivariateNormal scale_tril": Case(
        lambda D, loc, tril: D.MultivariateNormal(loc, scale_tril=tril),
        (RNG.normal(size=(2, 3)), lower_cholesky(3, 3)),
        RNG.normal(size=(4, 2, 3)),
        ("log_prob", "entropy", "mean", "variance"),
    ),
    "MultivariateNormal covariance": Case(
        lambda D, loc, cov: D.MultivariateNormal(loc, covariance_matrix=cov),
        (RNG.normal(size=3), positive_definite(2, 3, 3)),
        RNG.normal(size=(4, 1, 3)),
        ("log_prob", "entropy", "variance"),
        symmetric=(1,),
    ),
    "MultivariateNormal precision": Case(
        lambda D, loc, precision: D.MultivariateNormal(loc, precision_matrix=precision),
        (RNG.normal(size=(2, 3)), positive_definite(3, 3)),
        RNG.normal(size=(2, 3)),
        ("log_prob", "entropy", "variance"),
        symmetric=(1,),
    ),
    "Independent Normal": Case(
        lambda D, loc, scale: D.Independent(D.Normal(loc, scale), 1),
        (RNG.normal(size=(2, 3)), uniform(0.5, 2.0, 3)),
        RNG.normal(size=(4, 2, 3)),
        ("log_prob", "entropy", "mean", "variance"),
    ),
    "Independent Bernoulli 2": Case(
        lambda D, p: D.Independent(D.Bernoulli(probs=p), 2),
        (uniform(0.05, 0.95, 2, 3),),
        RNG.integers(0, 2, (4, 2, 3)).astype(float),
        ("log_prob", "entropy", "mean"),
    ),
}


def leaves(lib: Any, arrays: tuple[np.ndarray, ...]) -> list[Any]:
    if lib is plugrad:
        return [plugrad.asarray(a, requires_grad=True) for a in arrays]
    return [torch.tensor(a, requires_grad=True) for a in arrays]


def as_value(lib: Any, array: np.ndarray) -> Any:
    return plugrad.asarray(array) if lib is plugrad else torch.tensor(array)


Result = tuple[np.ndarray, list[np.ndarray | None]]


def ours_and_theirs(backend: str, function: Callable[..., Result], *args: Any) -> list[Result]:
    """``function(lib, *args)`` with ``lib`` plugrad (on ``backend``), then torch."""
    with plugrad.use_backend(backend):
        ours = function(plugrad, *args)
    return [ours, function(torch, *args)]


def differentiated(lib: Any, out: Any, tensors: list[Any]) -> Result:
    """``out``, and per leaf of ``tensors`` the gradient of a weighted sum of its finite values."""
    if out.requires_grad:
        finite = np.isfinite(out.detach().numpy())
        weights = np.linspace(0.5, 1.5, max(out.numel(), 1)).reshape(tuple(out.shape)) * finite
        (lib.where(as_value(lib, finite), out, 0.0) * as_value(lib, weights)).sum().backward()
    grads = [None if t.grad is None else np.asarray(t.grad.detach().numpy()) for t in tensors]
    return np.asarray(out.detach().numpy()), grads


def evaluate(
    lib: Any,
    build: Callable[..., Any],
    params: tuple[np.ndarray, ...],
    method: str,
    argument: np.ndarray | None,
) -> Result:
    """``method`` of the distribution, and the gradient of its weighted sum per parameter."""
    tensors = leaves(lib, params)
    dist = build(lib.distributions, *tensors)
    attribute = getattr(dist, method)
    out = attribute(as_value(lib, argument)) if argument is not None else (
        attribute() if callable(attribute) else attribute
    )  # fmt: skip
    return differentiated(lib, out, tensors)


def symmetric_part(g: np.ndarray) -> np.ndarray:
    return (g + np.swapaxes(g, -1, -2)) / 2


def argument_of(case: Case, method: str) -> np.ndarray | None:
    """What ``method`` is called with: the case's value, its probabilities for ``icdf``, or
    nothing."""
    return {"log_prob": case.value, "cdf": case.value, "icdf": case.unit_value}.get(method)


def evaluated(case: Case, method: str, backend: str) -> list[Result]:
    """``method`` of the case's distribution, with its parameter gradients: plugrad's (on
    ``backend``), then PyTorch's."""
    arguments = (case.build, case.params, method, argument_of(case, method))
    return ours_and_theirs(backend, evaluate, *arguments)


def assert_same_results(
    ours: Result,
    theirs: Result,
    what: str = "",
    *,
    symmetric: tuple[int, ...] = (),
    through_trigamma: bool = False,
) -> None:
    """plugrad's value and parameter gradients as PyTorch's.

    Where PyTorch has no gradient (or zeros), plugrad must have none or zeros; the
    parameters in ``symmetric`` are compared by their symmetric part.
    """
    (value, grads), (expected, expected_grads) = ours, theirs
    assert value.shape == expected.shape, what
    assert value.dtype == expected.dtype, what
    np.testing.assert_allclose(value, expected, rtol=1e-10, atol=1e-12, err_msg=what)
    for i, (mine, reference) in enumerate(zip(grads, expected_grads, strict=True)):
        if reference is None or not np.any(reference):
            assert mine is None or not np.any(mine), (what, i)
            continue
        assert mine is not None, (what, i)
        if i in symmetric:
            mine, reference = symmetric_part(mine), symmetric_part(reference)
        if through_trigamma:
            # Gradients through digamma use the trigamma function, PyTorch's off by up to
            # 5e-10 relative (plugrad's by 4e-16, against SciPy): hence 1e-8 rather than 1e-9,
            # of the largest element where terms cancel.
            rtol, atol = 1e-8, 1e-8 * float(np.max(np.abs(reference)))
        else:
            rtol, atol = 1e-9, 1e-12
        np.testing.assert_allclose(mine, reference, rtol=rtol, atol=atol, err_msg=f"{what} {i}")


def compare(case: Case, method: str, backend: str, *, through_trigamma: bool = False) -> None:
    """``method`` of the case's distribution, and its gradients, as PyTorch's."""
    ours, theirs = evaluated(case, method, backend)
    assert_same_results(
        ours, theirs, method, symmetric=case.symmetric, through_trigamma=through_trigamma
    )


def assert_expand_agrees_with_torch(
    build: Callable[..., Any],
    array: np.ndarray,
    batch_shape: tuple[int, ...],
    moment: str | None = None,
) -> None:
    """``build(D, array).expand(batch_shape)`` as PyTorch's: its shapes, its samples' shape,
    its ``log_prob`` at PyTorch's samples and, if named, that ``moment``."""
    ours = build(plugrad.distributions, plugrad.asarray(array)).expand(batch_shape)
    theirs = build(torch.distributions, torch.tensor(array)).expand(batch_shape)
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)
    assert tuple(ours.event_shape) == tuple(theirs.event_shape)
    assert tuple(ours.sample((2,)).shape) == tuple(theirs.sample((2,)).shape)
    value = theirs.sample((2,))
    np.testing.assert_allclose(
        ours.log_prob(plugrad.asarray(value.numpy())).numpy(), theirs.log_prob(value).numpy()
    )
    if moment is not None:
        np.testing.assert_allclose(getattr(ours, moment).numpy(), getattr(theirs, moment).numpy())


def method_cases(cases: dict[str, Case]) -> dict[str, Any]:
    """``parametrize``'s arguments for every (name, method) pair of a table of cases."""
    pairs = [(name, method) for name, case in cases.items() for method in case.methods]
    return {
        "argnames": ("name", "method"),
        "argvalues": pairs,
        "ids": [f"{n}-{m}" for n, m in pairs],
    }


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize(**method_cases(CASES))
def test_agrees_with_torch(name: str, method: str, backend: str) -> None:
    compare(CASES[name], method, backend)


KL_CASES: dict[str, KLCase] = {
    "Normal": (
        lambda D, a, b, c, d: (D.Normal(a, b), D.Normal(c, d)),
        (RNG.normal(size=3), uniform(0.5, 2, 2, 1), RNG.normal(size=(2, 3)), uniform(0.5, 2, 3)),
    ),
    "LogNormal": (
        lambda D, a, b, c, d: (D.LogNormal(a, b), D.LogNormal(c, d)),
        (RNG.normal(size=3), uniform(0.5, 2, 3), RNG.normal(size=3), uniform(0.5, 2, 3)),
    ),
    "Bernoulli": (
        lambda D, a, b: (D.Bernoulli(probs=a), D.Bernoulli(logits=b)),
        (uniform(0.05, 0.95, 2, 3), RNG.normal(size=(2, 3))),  # PyTorch's fails to broadcast
    ),
    "Categorical": (
        lambda D, a, b: (D.Categorical(probs=a), D.Categorical(logits=b)),
        (uniform(0.1, 1, 2, 4), RNG.normal(size=(3, 1, 4))),
    ),
    "OneHotCategorical": (
        lambda D, a, b: (D.OneHotCategorical(logits=a), D.OneHotCategorical(probs=b)),
        (RNG.normal(size=(2, 4)), uniform(0.1, 1, 4)),
    ),
    "Uniform": (
        lambda D, a, b, c, d: (D.Uniform(a, b), D.Uniform(c, d)),
        (uniform(-1, 0, 3), uniform(0, 1, 3), uniform(-2, -1, 2, 1), uniform(1, 2, 2, 3)),
    ),
    "Uniform not covered": (
        lambda D, a, b, c, d: (D.Uniform(a, b), D.Uniform(c, d)),
        (uniform(-2, 0, 3), uniform(0, 2, 3), uniform(-1, -0.5, 3), uniform(0.5, 1, 3)),
    ),
    "Laplace": (
        lambda D, a, b, c, d: (D.Laplace(a, b), D.Laplace(c, d)),
        (RNG.normal(size=(2, 3)), uniform(0.5, 2, 3), RNG.normal(size=3), uniform(0.5, 2, 2, 3)),
    ),
    "Exponential": (
        lambda D, a, b: (D.Exponential(a), D.Exponential(b)),
        (uniform(0.5, 2, 2, 3), uniform(0.5, 2, 3)),
    ),
    "MultivariateNormal": (
        lambda D, a, b, c, d: (
            D.MultivariateNormal(a, scale_tril=b),
            D.MultivariateNormal(c, covariance_matrix=d),
        ),
        (
            RNG.normal(size=(2, 3)),
            lower_cholesky(3, 3),
            RNG.normal(size=3),
            positive_definite(2, 3, 3),
        ),
    ),
    # q's scale_tril, whose upper triangle got a gradient (solved as a full matrix)
    "MultivariateNormal scale_tril": (
        lambda D, a, b, c, d: (
            D.MultivariateNormal(a, scale_tril=b),
            D.MultivariateNormal(c, scale_tril=d),
        ),
        (
            RNG.normal(size=(2, 3)),
            lower_cholesky(3, 3),
            RNG.normal(size=3),
            lower_cholesky(2, 3, 3),
        ),
    ),
    "Independent": (
        lambda D, a, b, c, d: (
            D.Independent(D.Normal(a, b), 1),
            D.Independent(D.Normal(c, d), 1),
        ),
        (RNG.normal(size=(2, 3)), uniform(0.5, 2, 3), RNG.normal(size=3), uniform(0.5, 2, 2, 3)),
    ),
}


def kl(lib: Any, build: Callable[..., Any], params: tuple[np.ndarray, ...]) -> Result:
    tensors = leaves(lib, params)
    p, q = build(lib.distributions, *tensors)
    return differentiated(lib, lib.distributions.kl_divergence(p, q), tensors)


def compare_kl(case: KLCase, backend: str, what: str, *, through_trigamma: bool = False) -> None:
    """The KL divergence of the case's pair, and its gradients, as PyTorch's."""
    ours, theirs = ours_and_theirs(backend, kl, *case)
    assert_same_results(ours, theirs, what, through_trigamma=through_trigamma)


def assert_kl_gradients_agree(
    case: KLCase, backend: str, *, symmetric: tuple[int, ...] = (), lower: tuple[int, ...] = ()
) -> None:
    """The KL divergence of the case's pair as PyTorch's, and a gradient for each parameter
    where PyTorch's has one (and only there) as PyTorch's; the parameters in ``symmetric`` are
    compared by their symmetric part, those in ``lower`` by their lower triangle."""
    (ours, our_grads), (theirs, their_grads) = ours_and_theirs(backend, kl, *case)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    for i, (mine, reference) in enumerate(zip(our_grads, their_grads, strict=True)):
        assert (mine is None) == (reference is None), i
        if reference is not None:
            if i in symmetric:
                mine, reference = symmetric_part(mine), symmetric_part(reference)
            if i in lower:
                mine, reference = np.tril(mine), np.tril(reference)
            np.testing.assert_allclose(mine, reference, rtol=1e-9, atol=1e-12, err_msg=str(i))


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", list(KL_CASES))
def test_kl_divergence_agrees_with_torch(name: str, backend: str) -> None:
    symmetric = {"MultivariateNormal": (3,)}.get(name, ())
    # PyTorch's KL reads p's scale_tril above the diagonal too (not its log_prob): compare
    # the lower triangle, which is all that defines the distribution.
    lower = {"MultivariateNormal": (1,), "MultivariateNormal scale_tril": (1,)}.get(name, ())
    assert_kl_gradients_agree(KL_CASES[name], backend, symmetric=symmetric, lower=lower)


def test_kl_is_infinite_where_q_has_no_mass() -> None:
    D = plugrad.distributions
    p = D.Categorical(probs=plugrad.tensor([0.5, 0.5, 0.0], dtype=plugrad.float64))
    q = D.Categorical(probs=plugrad.tensor([1.0, 0.0, 0.0], dtype=plugrad.float64))
    assert plugrad.distributions.kl_divergence(p, q).item() == float("inf")
    assert plugrad.distributions.kl_divergence(q, p).item() == pytest.approx(np.log(2.0))
    bp, bq = D.Bernoulli(probs=0.0), D.Bernoulli(probs=1.0)
    assert D.kl_divergence(bp, bq).item() == float("inf")
    assert D.kl_divergence(bp, bp).item() == 0.0


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_geometric_entropy_keeps_its_value_where_the_probability_underflows(dtype) -> None:
    # H = -log p - (1 - p) log(1 - p) / p; PyTorch's 0 / 0 gave nan (plugrad 0) at logits -100.
    logits = plugrad.tensor([-800.0, -100.0, -30.0, 30.0], dtype=getattr(plugrad, dtype),
                            requires_grad=True)  # fmt: skip
    entropy = plugrad.distributions.Geometric(logits=logits).entropy()
    # -log p = softplus(-l); the second term tends to 1 as p -> 0 and to l e**-l as p -> 1
    expected = [801.0, 101.0, 31.0, 31 * math.exp(-30)]
    rtol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(entropy.tolist(), expected, rtol=rtol)
    entropy.sum().backward()
    assert logits.grad.tolist()[:3] == pytest.approx([-1.0, -1.0, -1.0], rel=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_geometric_entropy_of_given_probs_is_theirs_not_of_clipped_ones(dtype) -> None:
    # It was the entropy of probs clipped to [eps, 1 - eps]: 16.94, not 21.72, at p = 1e-9
    # in float32 (PyTorch's 0.0), and 2e-6 at p = 1.
    probs = [1e-9, 1e-20, 0.25, 1.0]
    entropy = plugrad.distributions.Geometric(
        probs=plugrad.tensor(probs, dtype=getattr(plugrad, dtype))
    ).entropy()
    expected = [-math.log(p) - (1 - p) * math.log1p(-p) / p if p < 1 else 0.0 for p in probs]
    rtol = 1e-6 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(entropy.tolist(), expected, rtol=rtol)


@pytest.mark.parametrize(
    "pair",
    [
        lambda D, t: (D.Normal(t, 1.0), D.Uniform(-1.0, 1.0)),
        lambda D, t: (D.Normal(t, 1.0), D.Exponential(2.0)),
        lambda D, t: (D.Laplace(t, 1.0), D.Uniform(-1.0, 1.0)),
        lambda D, t: (D.Laplace(t, 1.0), D.Exponential(2.0)),
        lambda D, t: (D.Exponential(t.exp()), D.Uniform(0.0, 1.0)),
    ],
    ids=[
        "Normal-Uniform",
        "Normal-Exponential",
        "Laplace-Uniform",
        "Laplace-Exponential",
        "Exponential-Uniform",
    ],
)
def test_kl_of_unbounded_p_against_bounded_q_is_infinite_as_pytorchs(pair) -> None:
    values = RNG.normal(size=(2, 3))
    t = torch.tensor(values)
    ours = plugrad.distributions.kl_divergence(*pair(plugrad.distributions, plugrad.tensor(values)))
    theirs = torch.distributions.kl_divergence(*pair(torch.distributions, t))
    assert ours.tolist() == theirs.tolist()
    assert ours.dtype == plugrad.float64


@pytest.mark.parametrize(
    "build",
    [
        lambda D, t: D.Normal(t, 1.0),
        lambda D, t: D.Bernoulli(logits=t),
        lambda D, t: D.Categorical(logits=t),
        lambda D, t: D.MultivariateNormal(t, scale_tril=lib_eye(D, 3)),
        lambda D, t: D.Independent(D.Laplace(t, 2.0), 1),
    ],
    ids=["Normal", "Bernoulli", "Categorical", "MultivariateNormal", "Independent"],
)
def test_expand_agrees_with_torch(build: Callable[..., Any]) -> None:
    assert_expand_agrees_with_torch(build, RNG.normal(size=(1, 3)), (4, 3))


def lib_eye(D: Any, n: int) -> Any:
    lib = plugrad if D is plugrad.distributions else torch
    return lib.eye(n, dtype=lib.float64)


def test_repr_and_shapes_agree_with_torch() -> None:
    for name in (
        "Normal",
        "Bernoulli probs",
        "Categorical logits",
        "MultivariateNormal scale_tril",
    ):
        case = CASES[name]
        ours = case.build(plugrad.distributions, *leaves(plugrad, case.params))
        theirs = case.build(torch.distributions, *leaves(torch, case.params))
        assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)
        assert tuple(ours.event_shape) == tuple(theirs.event_shape)
        assert repr(ours).replace("plugrad.Size", "torch.Size") == repr(theirs)


def test_multivariate_normal_reads_scale_tril_and_infinite_values_as_pytorch() -> None:
    # log_prob at an infinite value was NaN (a general solve); a given scale_tril was cut to
    # its lower triangle everywhere (no gradient above the diagonal, other covariances).
    results = []
    for lib in (plugrad, torch):
        D = lib.distributions
        cov = lib.tensor([[2.0, 0.5], [0.5, 1.0]], dtype=lib.float64)
        values = lib.tensor(
            [[1.0, math.inf], [1.0, math.nan], [1.0, 2.0], [-math.inf, math.nan]], dtype=lib.float64
        )
        log_prob = D.MultivariateNormal(lib.zeros(2, dtype=lib.float64), cov, validate_args=False)
        tril = lib.tensor([[1.0, 3.0], [0.5, 2.0]], dtype=lib.float64, requires_grad=True)
        zero = lib.zeros(2, dtype=lib.float64)
        d = D.MultivariateNormal(zero, scale_tril=tril, validate_args=False)
        d.covariance_matrix.sum().backward()
        point = lib.tensor([1.0, 2.0], dtype=lib.float64)
        results.append(
            [log_prob.log_prob(values).tolist(), tril.grad.tolist(), d.covariance_matrix.tolist(),
             d.precision_matrix.tolist(), d.log_prob(point).item(), d.variance.tolist()]
        )  # fmt: skip
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_bernoulli_log_prob_has_the_values_dtype_as_pytorch() -> None:
    # A float64 value was cast down to the float32 parameter's dtype; a float32 value of
    # float64 parameters gave float64 (PyTorch's kernel computes in the value's dtype).
    for lib in (plugrad, torch):
        D = lib.distributions
        value = lib.tensor([1.0, 0.0], dtype=lib.float64)
        assert D.Bernoulli(lib.tensor([0.3, 0.6])).log_prob(value).dtype == lib.float64
        doubles = lib.tensor([0.3, 0.6], dtype=lib.float64)
        assert D.Bernoulli(doubles).log_prob(lib.tensor([1.0, 0.0])).dtype == lib.float32
        if lib is plugrad and plugrad.float16 not in plugrad.default_device().dtypes:
            continue
        halves = lib.tensor([0.0], dtype=lib.float16), lib.tensor([2.0], dtype=lib.float16)
        at = lib.tensor([0.5], dtype=lib.float16)
        assert D.Uniform(*halves).log_prob(at).dtype == lib.float16  # was float32
    # (Integer values, which PyTorch refuses here, take the parameter's dtype.)
    integers = plugrad.tensor([1, 0])
    assert plugrad.distributions.Bernoulli(plugrad.tensor([0.3])).log_prob(integers).dtype == (
        plugrad.float32
    )


def test_a_categorical_of_an_empty_batch_samples_nothing_as_pytorch() -> None:
    # It raised "need at least one array to stack".
    for lib in (plugrad, torch):
        assert tuple(lib.distributions.Categorical(lib.ones(0, 3)).sample((2,)).shape) == (2, 0)


def test_lognormal_cdf_at_zero_is_zero_as_pytorch() -> None:
    # The value's log is checked against the normal's support: cdf(0) is 0, not an error.
    import warnings

    for validate in (True, False):
        d = plugrad.distributions.LogNormal(0.0, 1.0, validate_args=validate)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's log(0)
            assert d.cdf(plugrad.tensor([0.0, 1.0])).tolist() == [0.0, 0.5]
    with warnings.catch_warnings(), pytest.raises(ValueError, match="support"):
        warnings.simplefilter("ignore", RuntimeWarning)
        plugrad.distributions.LogNormal(0.0, 1.0, validate_args=True).cdf(plugrad.tensor([-1.0]))


def test_a_parameter_of_the_full_shape_is_kept_itself_as_pytorchs_and_deep_copies() -> None:
    import copy

    for lib in (plugrad, torch):
        mu = lib.nn.Parameter(lib.zeros(3))
        prior = lib.distributions.Normal(mu, 1.0)
        assert prior.loc is mu and prior.loc.is_leaf
        assert prior.scale.shape == (3,)
        copied_mu, copied = copy.deepcopy((mu, prior))  # it was refused: not a leaf
        assert copied.loc is copied_mu
    wide = plugrad.distributions.Normal(plugrad.zeros(2, 1), plugrad.ones(3))
    assert wide.loc.shape == wide.scale.shape == (2, 3)


def _exp_relaxed_categorical(lib: Any) -> Any:
    if lib is plugrad:
        return plugrad.distributions.ExpRelaxedCategorical
    return torch.distributions.relaxed_categorical.ExpRelaxedCategorical


def _derived_first_without_grad() -> list[tuple[str, Callable[[Any], Any], Callable[[Any], Any]]]:
    """(label, make(lib, p), use(lib, d)): ``make`` builds a distribution from the leaf
    ``p`` and reads a derived parameter without gradients; ``use`` computes after it."""
    value3 = [0.2, 0.3, 0.5]

    def no_grad_log_prob(at: Any) -> Callable[[Any, Any], None]:
        def read(lib: Any, d: Any) -> None:
            with lib.no_grad():
                d.log_prob(lib.tensor(at))

        return read

    def sampled(lib: Any, d: Any) -> None:
        d.sample()

    return [
        ("NegativeBinomial after sample", lambda lib, p: lib.distributions.NegativeBinomial(
            3.0, probs=p[0]), sampled, lambda lib, d: d.log_prob(lib.tensor(2.0))),
        ("RelaxedOneHotCategorical after sample",
         lambda lib, p: lib.distributions.RelaxedOneHotCategorical(lib.tensor(0.5), probs=p),
         sampled, lambda lib, d: d.log_prob(lib.tensor(value3))),
        ("ExpRelaxedCategorical after sample",
         lambda lib, p: _exp_relaxed_categorical(lib)(lib.tensor(0.5), probs=p),
         sampled, lambda lib, d: d.log_prob(lib.log(lib.tensor(value3)))),
        ("Categorical after log_prob under no_grad",
         lambda lib, p: lib.distributions.Categorical(probs=p), no_grad_log_prob(1),
         lambda lib, d: d.log_prob(lib.tensor(1))),
        ("Bernoulli after log_prob under no_grad",
         lambda lib, p: lib.distributions.Bernoulli(probs=p), no_grad_log_prob([1.0, 0.0, 1.0]),
         lambda lib, d: d.log_prob(lib.tensor([1.0, 0.0, 1.0], dtype=lib.float64))),
        ("Binomial after log_prob under no_grad",
         lambda lib, p: lib.distributions.Binomial(4, probs=p), no_grad_log_prob([1.0, 0.0, 3.0]),
         lambda lib, d: d.log_prob(lib.tensor([1.0, 0.0, 3.0]))),
    ]  # fmt: skip


@pytest.mark.parametrize(
    "case", _derived_first_without_grad(), ids=lambda case: case[0] if type(case) is tuple else ""
)
def test_a_parameter_derived_first_without_grad_still_carries_the_gradient(case: Any) -> None:
    # Derived on first use and kept: first asked for under no_grad (sample() runs so),
    # it was kept without a graph, and log_prob's gradient silently went missing.
    _, make, read, use = case
    grads = []
    for lib in (plugrad, torch):
        p = lib.tensor([0.2, 0.3, 0.5], dtype=lib.float64, requires_grad=True)
        d = make(lib, p)
        read(lib, d)
        out = use(lib, d)
        assert out.requires_grad
        lib.sum(out).backward()
        grads.append(np.asarray(p.grad.tolist()))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-10, atol=1e-12)


def test_multivariate_normal_matrices_read_under_no_grad_carry_the_gradient() -> None:
    grads = []
    for lib in (plugrad, torch):
        c = lib.tensor([[2.0, 0.5], [0.5, 1.0]], dtype=lib.float64, requires_grad=True)
        d = lib.distributions.MultivariateNormal(lib.zeros(2, dtype=lib.float64),
                                                  covariance_matrix=c)  # fmt: skip
        with lib.no_grad():
            d.precision_matrix  # noqa: B018 (read first without gradients)
        lib.sum(d.precision_matrix).backward()
        grads.append(np.asarray(c.grad.tolist()))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-10)
