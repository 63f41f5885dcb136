"""``plugrad.distributions.transforms``, the constraint registry and the constraints they need.

Each transform against ``torch.distributions.transforms`` on every backend, in
float64: the map, its inverse and ``log_abs_det_jacobian``, and their gradients
with respect to the input and the parameters; the log-Jacobian against the
Jacobian autograd finds; shapes, the cache, composition, equality and bad
input. ``biject_to`` and ``transform_to`` against PyTorch's for each constraint.
"""

from __future__ import annotations

import math
import pickle
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import plugrad
from plugrad.distributions import constraints as C
from plugrad.distributions import transforms as T
from plugrad.errors import ArgumentError, InvalidArgumentError, ShapeError
from plugrad.testing import backends_under_test

torch = pytest.importorskip("torch")

from ._helpers import seeded  # noqa: E402
from .test_against_torch import (  # noqa: E402  (after the skip without PyTorch)
    as_value,
    differentiated,
    leaves,
    ours_and_theirs,
)

RNG, uniform = seeded(31)


def lower_cholesky(*shape: int) -> np.ndarray:
    size = shape[-1]
    diagonal = np.abs(RNG.normal(size=(*shape[:-2], size))) + 0.5
    return np.tril(RNG.normal(size=shape), -1) * 0.4 + diagonal[..., None] * np.eye(size)


F64 = plugrad.float64


@dataclass
class TransformCase:
    """``build(transforms, distributions, *params)``; an input ``x`` in its domain."""

    build: Callable[..., Any]
    params: tuple[np.ndarray, ...]
    x: np.ndarray
    has_log_det: bool = True
    elementwise: bool = False  # dy/dx is diagonal: compared with autograd's derivative
    round_trip: bool = True  # inv(t(x)) is x


CASES: dict[str, TransformCase] = {
    "Exp": TransformCase(
        lambda T, D: T.ExpTransform(), (), RNG.normal(size=(2, 3)), elementwise=True
    ),
    "Exp inverse": TransformCase(
        lambda T, D: T.ExpTransform().inv, (), uniform(0.2, 3.0, 2, 3), elementwise=True
    ),
    "Power": TransformCase(
        lambda T, D, e: T.PowerTransform(e),
        (uniform(0.5, 2.0, 3),),
        uniform(0.2, 2.0, 2, 3),
        elementwise=True,
    ),
    "Power negative": TransformCase(
        lambda T, D, e: T.PowerTransform(e),
        (np.array(-1.5),),
        uniform(0.2, 2.0, 4),
        elementwise=True,
    ),
    "Sigmoid": TransformCase(
        lambda T, D: T.SigmoidTransform(), (), RNG.normal(size=(2, 3)) * 3, elementwise=True
    ),
    "Sigmoid inverse": TransformCase(
        lambda T, D: T.SigmoidTransform().inv, (), uniform(0.02, 0.98, 5), elementwise=True
    ),
    "Softplus": TransformCase(
        lambda T, D: T.SoftplusTransform(), (), RNG.normal(size=(2, 3)) * 3, elementwise=True
    ),
    "Tanh": TransformCase(
        lambda T, D: T.TanhTransform(), (), RNG.normal(size=(2, 3)) * 2, elementwise=True
    ),
    "Affine tensors": TransformCase(
        lambda T, D, loc, scale: T.AffineTransform(loc, scale),
        (RNG.normal(size=3), np.array([[1.5], [-0.5]])),
        RNG.normal(size=(2, 3)),
        elementwise=True,
    ),
    "Affine numbers": TransformCase(
        lambda T, D: T.AffineTransform(1.5, -2.0), (), RNG.normal(size=4), elementwise=True
    ),
    "Affine event_dim 1": TransformCase(
        lambda T, D, loc, scale: T.AffineTransform(loc, scale, event_dim=1),
        (RNG.normal(size=3), uniform(0.5, 2.0, 3)),
        RNG.normal(size=(2, 3)),
    ),
    "Affine number event_dim 2": TransformCase(
        lambda T, D: T.AffineTransform(0.5, 3.0, event_dim=2), (), RNG.normal(size=(2, 3, 2))
    ),
    "Abs": TransformCase(
        lambda T, D: T.AbsTransform(),
        (),
        RNG.normal(size=(2, 3)),
        has_log_det=False,
        round_trip=False,
    ),
    "Softmax": TransformCase(
        lambda T, D: T.SoftmaxTransform(),
        (),
        RNG.normal(size=(2, 4)),
        has_log_det=False,
        round_trip=False,
    ),
    "StickBreaking": TransformCase(
        lambda T, D: T.StickBreakingTransform(), (), RNG.normal(size=(2, 3))
    ),
    "StickBreaking inverse": TransformCase(
        lambda T, D: T.StickBreakingTransform().inv, (), RNG.dirichlet([1.0, 2.0, 3.0], 2)
    ),
    "LowerCholesky": TransformCase(
        lambda T, D: T.LowerCholeskyTransform(),
        (),
        RNG.normal(size=(2, 3, 3)),
        has_log_det=False,
        round_trip=False,
    ),
    "LowerCholesky of a lower Cholesky factor": TransformCase(
        lambda T, D: T.LowerCholeskyTransform(),
        (),
        np.tril(RNG.normal(size=(2, 3, 3))),
        has_log_det=False,
    ),
    "PositiveDefinite": TransformCase(
        lambda T, D: T.PositiveDefiniteTransform(),
        (),
        np.tril(RNG.normal(size=(2, 3, 3))),
        has_log_det=False,
    ),
    "CorrCholesky": TransformCase(
        lambda T, D: T.CorrCholeskyTransform(), (), RNG.normal(size=(2, 6))
    ),
    "CorrCholesky 2x2": TransformCase(
        lambda T, D: T.CorrCholeskyTransform(), (), RNG.normal(size=(3, 1))
    ),
    "Compose": TransformCase(
        lambda T, D, e: T.ComposeTransform(
            [T.SigmoidTransform(), T.AffineTransform(0.0, 0.5), T.PowerTransform(e)]
        ),
        (uniform(0.5, 2.0, 3),),
        RNG.normal(size=(2, 3)),
        elementwise=True,
    ),
    "Compose with a vector part": TransformCase(
        lambda T, D, loc, scale: T.ComposeTransform(
            [T.AffineTransform(loc, scale), T.StickBreakingTransform()]
        ),
        (RNG.normal(size=3), uniform(0.5, 2.0, 3)),
        RNG.normal(size=(2, 3)),
    ),
    "Compose empty": TransformCase(
        lambda T, D: T.ComposeTransform([]), (), RNG.normal(size=(2, 3)), elementwise=True
    ),
    "Independent": TransformCase(
        lambda T, D: T.IndependentTransform(T.ExpTransform(), 1), (), RNG.normal(size=(2, 3))
    ),
    "Reshape": TransformCase(
        lambda T, D: T.ReshapeTransform((2, 3), (3, 2)), (), RNG.normal(size=(4, 2, 3))
    ),
    "Cat along an event axis": TransformCase(
        lambda T, D, s: T.CatTransform(
            [T.ExpTransform(), T.AffineTransform(1.0, s)], dim=-1, lengths=[2, 1]
        ),
        (np.array(2.5),),
        RNG.normal(size=(2, 3)),
    ),
    "Cat of vector transforms along a batch axis": TransformCase(
        lambda T, D: T.CatTransform(
            [T.IndependentTransform(T.ExpTransform(), 1), T.AffineTransform(0.0, 3.0, 1)],
            dim=0,
            lengths=[1, 2],
        ),
        (),
        RNG.normal(size=(3, 2)),
    ),
    "Stack": TransformCase(
        lambda T, D: T.StackTransform([T.ExpTransform(), T.TanhTransform()], dim=1),
        (),
        RNG.normal(size=(4, 2)),
    ),
    "CumulativeDistribution": TransformCase(
        lambda T, D, loc, scale: T.CumulativeDistributionTransform(D.Normal(loc, scale)),
        (RNG.normal(size=3), uniform(0.5, 2.0, 3)),
        RNG.normal(size=(2, 3)),
    ),
}


def transform_of(lib: Any, case: TransformCase, tensors: list[Any]) -> Any:
    return case.build(lib.distributions.transforms, lib.distributions, *tensors)


def forward(lib: Any, case: TransformCase) -> Any:
    tensors = leaves(lib, case.params)
    x = leaves(lib, (case.x,))[0]
    return differentiated(lib, transform_of(lib, case, tensors)(x), [*tensors, x])


def inverse(lib: Any, case: TransformCase, y: np.ndarray) -> Any:
    tensors = leaves(lib, case.params)
    y_leaf = leaves(lib, (y,))[0]
    return differentiated(lib, transform_of(lib, case, tensors).inv(y_leaf), [*tensors, y_leaf])


def log_det(lib: Any, case: TransformCase, y: np.ndarray) -> Any:
    tensors = leaves(lib, case.params)
    x, y_value = leaves(lib, (case.x,))[0], as_value(lib, y)
    out = transform_of(lib, case, tensors).log_abs_det_jacobian(x, y_value)
    return differentiated(lib, out, [*tensors, x])


def assert_same(result: list[Any], rtol: float = 1e-10) -> None:
    (ours, our_grads), (theirs, their_grads) = result
    assert ours.shape == theirs.shape
    assert ours.dtype == theirs.dtype
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=1e-12)
    for i, (mine, reference) in enumerate(zip(our_grads, their_grads, strict=True)):
        if reference is None or not np.any(reference):
            assert mine is None or not np.any(mine), i
            continue
        np.testing.assert_allclose(mine, reference, rtol=1e-9, atol=1e-12, err_msg=str(i))


def torch_image(case: TransformCase) -> np.ndarray:
    t = transform_of(torch, case, [torch.tensor(p) for p in case.params])
    return t(torch.tensor(case.x)).numpy()


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", list(CASES))
def test_transform_agrees_with_torch(name: str, backend: str) -> None:
    case = CASES[name]
    assert_same(ours_and_theirs(backend, forward, case))
    y = torch_image(case)
    inverted = ours_and_theirs(backend, inverse, case, y)
    assert_same(inverted)
    if case.round_trip:
        np.testing.assert_allclose(inverted[0][0], case.x, rtol=1e-8, atol=1e-10)
    if case.has_log_det:
        assert_same(ours_and_theirs(backend, log_det, case, y))


def as_list(value: Any) -> Any:
    return value.tolist() if hasattr(value, "tolist") else value


@pytest.mark.parametrize("name", list(CASES))
def test_domain_codomain_and_flags_agree_with_torch(name: str) -> None:
    case = CASES[name]
    ours = transform_of(plugrad, case, [plugrad.asarray(p) for p in case.params])
    theirs = transform_of(torch, case, [torch.tensor(p) for p in case.params])
    for which in ("domain", "codomain"):
        mine, reference = getattr(ours, which), getattr(theirs, which)
        assert repr(mine).replace("plugrad", "torch") == repr(reference), which
        assert mine.event_dim == reference.event_dim, which
    assert ours.bijective == theirs.bijective
    try:
        expected_sign = theirs.sign
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            ours.sign  # noqa: B018
    else:
        np.testing.assert_array_equal(as_list(ours.sign), as_list(expected_sign))
    for shape in [case.x.shape, (5, *case.x.shape)]:
        try:
            expected = tuple(theirs.forward_shape(torch.Size(shape)))
        except ValueError:
            with pytest.raises(ShapeError):
                ours.forward_shape(shape)
            continue
        assert ours.forward_shape(shape) == expected
        image = tuple(theirs.forward_shape(torch.Size(shape)))
        assert ours.inverse_shape(image) == tuple(theirs.inverse_shape(torch.Size(image)))


def derivative_of_elementwise(t: Any, x: np.ndarray) -> np.ndarray:
    leaf = plugrad.asarray(x, requires_grad=True)
    t(leaf).sum().backward()
    return leaf.grad.numpy()


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c.elementwise])
def test_log_det_of_an_elementwise_transform_is_that_of_its_derivative(
    name: str, backend: str
) -> None:
    case = CASES[name]
    with plugrad.use_backend(backend):
        t = transform_of(plugrad, case, [plugrad.asarray(p) for p in case.params])
        x = plugrad.asarray(case.x)
        derivative = np.broadcast_to(derivative_of_elementwise(t, case.x), t(x).shape)
        log_det = t.log_abs_det_jacobian(x, t(x)).numpy()
    np.testing.assert_allclose(log_det, np.log(np.abs(derivative)), rtol=1e-10, atol=1e-12)


def jacobian(function: Callable[[Any], Any], x: np.ndarray) -> np.ndarray:
    return plugrad.autograd.functional.jacobian(function, plugrad.asarray(x)).numpy()


@pytest.mark.parametrize("backend", backends_under_test())
def test_log_dets_of_vector_transforms_are_those_of_their_jacobians(backend: str) -> None:
    with plugrad.use_backend(backend):
        # Stick breaking: K entries to the first K of the K + 1 it makes.
        t = T.StickBreakingTransform()
        x = RNG.normal(size=4)
        matrix = jacobian(lambda v: t(v)[:-1], x)
        expected = np.linalg.slogdet(matrix)[1]
        got = t.log_abs_det_jacobian(plugrad.asarray(x), t(plugrad.asarray(x))).item()
        assert got == pytest.approx(expected, rel=1e-10)
        # Correlation Cholesky factors: the vector to the strict lower triangle.
        t = T.CorrCholeskyTransform()
        x = RNG.normal(size=6)
        rows, cols = np.tril_indices(4, -1)
        full = jacobian(lambda v: t(v).reshape(16), x)
        expected = np.linalg.slogdet(full[rows * 4 + cols])[1]
        got = t.log_abs_det_jacobian(plugrad.asarray(x), t(plugrad.asarray(x))).item()
        assert got == pytest.approx(expected, rel=1e-10)
        # Affine over events of two axes, a scale narrower than the event: one log|scale|
        # per element (PyTorch's counts it once per event).
        t = T.AffineTransform(0.0, plugrad.tensor([2.0, -3.0], dtype=F64), event_dim=2)
        x = plugrad.zeros(4, 3, 2, dtype=F64)
        expected = 3 * (math.log(2.0) + math.log(3.0))
        np.testing.assert_allclose(t.log_abs_det_jacobian(x, t(x)).numpy(), [expected] * 4)


def test_cache_of_size_one_returns_the_values_it_saw() -> None:
    x = plugrad.tensor([0.5, 1.0], dtype=F64)
    cached = T.ExpTransform(cache_size=1)
    y = cached(x)
    assert cached(x) is y and cached.inv(y) is x
    y2 = plugrad.tensor([2.0], dtype=F64)
    x2 = cached.inv(y2)
    assert cached(x2) is y2 and cached.inv(y2) is x2
    plain = T.ExpTransform()
    assert plain.inv(plain(x)) is not x and plain(x) is not plain(x)
    # atanh(tanh(x)) is inf where tanh rounds to 1; the cache gives x back exactly.
    big = plugrad.tensor([20.0, -20.0, 0.3])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's atanh(1)
        assert np.isinf(T.TanhTransform().inv(T.TanhTransform()(big)).numpy()[:2]).all()
    tanh = T.TanhTransform(cache_size=1)
    assert tanh.inv(tanh(big)) is big
    # A composition's parts cache: its inverse returns the input.
    compose = T.ComposeTransform([T.AffineTransform(0.0, 2.0), T.TanhTransform()], cache_size=1)
    assert all(part._cache_size == 1 for part in compose.parts)
    assert compose.inv(compose(big)) is big


def test_with_cache() -> None:
    exp = T.ExpTransform()
    assert exp.with_cache(0) is exp
    cached = exp.with_cache(1)
    assert cached is not exp and cached == exp and cached._cache_size == 1
    assert cached.with_cache(1) is cached
    assert exp.inv.with_cache(1).inv._cache_size == 1
    affine = T.AffineTransform(1.0, 2.0, event_dim=1).with_cache()
    assert (affine.loc, affine.scale, affine.event_dim, affine._cache_size) == (1.0, 2.0, 1, 1)
    power = T.PowerTransform(2.0).with_cache()
    assert power == T.PowerTransform(2.0) and power._cache_size == 1
    independent = T.IndependentTransform(T.ExpTransform(), 1).with_cache()
    assert independent.base_transform._cache_size == 1
    for t in (
        T.ReshapeTransform((2,), (2, 1)),
        T.CatTransform([T.ExpTransform()], 0, [2]),
        T.StackTransform([T.ExpTransform()]),
        T.CumulativeDistributionTransform(plugrad.distributions.Normal(0.0, 1.0)),
        T.ComposeTransform([T.ExpTransform()]),
    ):
        assert t.with_cache(1)._cache_size == 1 and t.with_cache(0) is t

    class Scaled(T.Transform):
        def __init__(self, factor: float) -> None:
            super().__init__()
            self.factor = factor

    with pytest.raises(NotImplementedError, match="with_cache"):
        Scaled(2.0).with_cache(1)
    for bad in (2, -1, 1.0, True, "1"):
        with pytest.raises(InvalidArgumentError, match="cache_size must be 0"):
            T.ExpTransform(cache_size=bad)
        with pytest.raises(InvalidArgumentError, match="cache_size must be 0"):
            exp.with_cache(bad)


def test_inverse_and_composition() -> None:
    exp = T.ExpTransform()
    assert exp.inv is exp.inv and exp.inv.inv is exp
    assert exp.inv.domain is C.positive and exp.inv.codomain is C.real
    assert exp.inv.sign == 1 and exp.inv.bijective
    assert repr(exp.inv) == "ExpTransform().inv"
    compose = T.ComposeTransform([T.ExpTransform(), T.AffineTransform(1.0, -2.0)])
    assert compose.inv.inv is compose
    assert compose.inv.parts == [T.AffineTransform(1.0, -2.0).inv, T.ExpTransform().inv]
    assert compose.sign == -1 and compose.bijective
    assert repr(compose) == (
        "ComposeTransform([ExpTransform(), AffineTransform(loc=1.0, scale=-2.0, event_dim=0)])"
    )
    x = plugrad.tensor([0.0, 1.0], dtype=F64)
    np.testing.assert_allclose(compose.inv(compose(x)).numpy(), x.numpy())
    mixed = T.ComposeTransform([T.ExpTransform(), T.IndependentTransform(T.ExpTransform(), 2)])
    assert mixed.domain.event_dim == mixed.codomain.event_dim == mixed.event_dim == 2
    zeros = plugrad.zeros(4, 2, 3, dtype=F64)
    log_det = mixed.log_abs_det_jacobian(zeros, mixed(zeros))
    np.testing.assert_allclose(log_det.numpy(), [6.0] * 4)
    identity = T.identity_transform
    assert identity(x) is x and identity.inv(x) is x and identity.domain is C.real
    assert identity.bijective and identity.sign == 1
    np.testing.assert_array_equal(identity.log_abs_det_jacobian(x, x).numpy(), [0.0, 0.0])


def test_equality() -> None:
    assert T.ExpTransform() == T.ExpTransform()
    assert T.ExpTransform() != T.SigmoidTransform()
    assert T.ExpTransform().inv == T.ExpTransform().inv != T.ExpTransform()
    assert T.AffineTransform(1.0, 2.0) == T.AffineTransform(1.0, 2.0)
    assert T.AffineTransform(1.0, 2.0) != T.AffineTransform(1.0, 3.0)
    assert T.AffineTransform(plugrad.tensor([1.0, 1.0]), 2.0) == T.AffineTransform(1.0, 2.0)
    assert T.AffineTransform(plugrad.zeros(2), 1.0) != T.AffineTransform(plugrad.zeros(3), 1.0)
    assert T.PowerTransform(2.0) == T.PowerTransform(plugrad.tensor(2.0))
    assert T.PowerTransform(2.0) != T.PowerTransform(3.0)
    assert T.ComposeTransform([T.ExpTransform()]) == T.ComposeTransform([T.ExpTransform()])
    assert T.ComposeTransform([T.ExpTransform()]) != T.ComposeTransform([])
    assert T.IndependentTransform(T.ExpTransform(), 1) == T.IndependentTransform(
        T.ExpTransform(), 1
    )
    assert T.IndependentTransform(T.ExpTransform(), 1) != T.IndependentTransform(
        T.ExpTransform(), 2
    )
    assert T.ReshapeTransform((6,), (2, 3)) == T.ReshapeTransform([6], [2, 3])
    assert T.ReshapeTransform((6,), (2, 3)) != T.ReshapeTransform((6,), (3, 2))
    assert T.CatTransform([T.ExpTransform()], 0, [2]) != T.CatTransform([T.ExpTransform()], 0)
    assert T.StackTransform([T.ExpTransform()], 1) == T.StackTransform([T.ExpTransform()], 1)
    assert T.StickBreakingTransform() != T.SoftmaxTransform()
    with pytest.raises(TypeError):
        hash(T.ExpTransform())  # unhashable, as PyTorch's: equal ones are not one object


def test_transforms_pickle_without_their_cache() -> None:
    t = T.ComposeTransform([T.ExpTransform(), T.AffineTransform(1.0, 2.0)], cache_size=1)
    t(plugrad.zeros(2))
    copy = pickle.loads(pickle.dumps(t.inv))
    assert copy == t.inv and copy.inv.parts[0]._cached_x_y == (None, None)
    np.testing.assert_allclose(copy(plugrad.tensor([3.0])).numpy(), [0.0])


def test_bad_input_raises_and_changes_nothing() -> None:
    exp = T.ExpTransform(cache_size=1)
    x = plugrad.tensor([1.0])
    y = exp(x)
    for t in (exp, T.ExpTransform(), T.identity_transform, T.AffineTransform(0.0, 1.0)):
        with pytest.raises(ArgumentError, match="x must be a Tensor"):
            t(1.0)
        with pytest.raises(ArgumentError, match="must be a Tensor"):
            t.inv([1.0])
    assert exp(x) is y and exp.inv(y) is x  # the cache is as it was
    with pytest.raises(ShapeError, match="hold different numbers of elements"):
        T.ReshapeTransform((2, 3), (5,))
    with pytest.raises(ShapeError, match=r"does not end in the event shape \(2, 3\)"):
        T.ReshapeTransform((2, 3), (6,))(plugrad.zeros(3, 2))
    with pytest.raises(ShapeError, match="does not end in the event shape"):
        T.ReshapeTransform((2, 3), (6,)).forward_shape((3,))
    with pytest.raises(ArgumentError, match="tuple of ints"):
        T.ReshapeTransform(6, (6,))
    with pytest.raises(ShapeError, match="at least 1 axes"):
        T.StickBreakingTransform()(plugrad.tensor(1.0))
    with pytest.raises(ShapeError, match="at least 1 axes"):
        T.StickBreakingTransform().forward_shape(())
    with pytest.raises(ShapeError, match=r"D \(D - 1\) / 2 entries"):
        T.CorrCholeskyTransform()(plugrad.zeros(4))
    with pytest.raises(ShapeError, match="square"):
        T.CorrCholeskyTransform().inverse_shape((2, 3))
    with pytest.raises(ShapeError, match="square matrices"):
        T.LowerCholeskyTransform()(plugrad.zeros(2, 3))
    with pytest.raises(InvalidArgumentError, match="maps events of 1 axes to events of 2"):
        T.CorrCholeskyTransform().event_dim  # noqa: B018
    with pytest.raises(ShapeError, match="at least 2 axes"):
        T.IndependentTransform(T.ExpTransform(), 2)(plugrad.zeros(3))
    with pytest.raises(InvalidArgumentError, match="reinterpreted_batch_ndims must be"):
        T.IndependentTransform(T.ExpTransform(), -1)
    with pytest.raises(ArgumentError, match="base_transform must be a Transform"):
        T.IndependentTransform(C.real, 1)
    with pytest.raises(ArgumentError, match="loc must be a Tensor or a real number"):
        T.AffineTransform("0", 1.0)
    with pytest.raises(InvalidArgumentError, match="event_dim must be a non-negative int"):
        T.AffineTransform(0.0, 1.0, event_dim=-1)
    with pytest.raises(ShapeError, match="does not broadcast"):
        T.AffineTransform(plugrad.zeros(3), 1.0).forward_shape((2,))
    with pytest.raises(ArgumentError, match="every part must be a Transform"):
        T.ComposeTransform([T.ExpTransform(), "exp"])
    with pytest.raises(ArgumentError, match="takes a list of Transforms"):
        T.ComposeTransform(T.ExpTransform())
    cat = T.CatTransform([T.ExpTransform(), T.ExpTransform()], dim=0, lengths=[1, 2])
    with pytest.raises(ShapeError, match="axis 0 of x has 4 entries, 3 expected"):
        cat(plugrad.zeros(4))
    with pytest.raises(ShapeError, match="dim 0 is out of range"):
        cat(plugrad.tensor(1.0))
    with pytest.raises(InvalidArgumentError, match="one non-negative int per transform"):
        T.CatTransform([T.ExpTransform()], lengths=[1, 2])
    with pytest.raises(InvalidArgumentError, match="at least one transform"):
        T.CatTransform([])
    stack = T.StackTransform([T.ExpTransform(), T.ExpTransform()], dim=1)
    with pytest.raises(ShapeError, match="axis 1 of y has 3 entries, 2 expected"):
        stack.inv(plugrad.ones(2, 3))
    with pytest.raises(ArgumentError, match="dim must be an int"):
        T.StackTransform([T.ExpTransform()], dim=1.0)
    with pytest.raises(ArgumentError, match="distribution must be a Distribution"):
        T.CumulativeDistributionTransform(T.ExpTransform())
    with pytest.raises(NotImplementedError, match="not bijective"):
        T.AbsTransform().log_abs_det_jacobian(x, x)
    with pytest.raises(NotImplementedError, match="has no sign"):
        T.SoftmaxTransform().sign  # noqa: B018


# -- the constraint registry -----------------------------------------------------------------

# name -> (constraint of the library, shape of an unconstrained input, registries)
BOTH = ("biject_to", "transform_to")
REGISTRY_CASES: dict[str, tuple[Callable[[Any], Any], tuple[int, ...], tuple[str, ...]]] = {
    "real": (lambda C: C.real, (2, 3), BOTH),
    "real_vector": (lambda C: C.real_vector, (2, 3), BOTH),
    "positive": (lambda C: C.positive, (2, 3), BOTH),
    "nonnegative": (lambda C: C.nonnegative, (4,), BOTH),
    "greater_than": (lambda C: C.greater_than(2.5), (4,), BOTH),
    "greater_than_eq": (lambda C: C.greater_than_eq(-1.0), (4,), BOTH),
    "less_than": (lambda C: C.less_than(3.0), (4,), BOTH),
    "unit_interval": (lambda C: C.unit_interval, (4,), BOTH),
    "interval": (lambda C: C.interval(-2.0, 5.0), (4,), BOTH),
    "half_open_interval": (lambda C: C.half_open_interval(1.0, 2.0), (4,), BOTH),
    "independent positive": (lambda C: C.independent(C.positive, 2), (3, 2, 2), BOTH),
    "simplex": (lambda C: C.simplex, (2, 3), BOTH),
    "corr_cholesky": (lambda C: C.corr_cholesky, (2, 3), BOTH),
    "lower_cholesky": (lambda C: C.lower_cholesky, (2, 3, 3), ("transform_to",)),
    "positive_definite": (lambda C: C.positive_definite, (2, 3, 3), ("transform_to",)),
    "positive_semidefinite": (lambda C: C.positive_semidefinite, (3, 3), ("transform_to",)),
    "cat": (lambda C: C.cat([C.positive, C.real, C.unit_interval], -1, [2, 1, 2]), (3, 5), BOTH),
    "stack": (lambda C: C.stack([C.positive, C.interval(0.0, 4.0)], dim=-1), (3, 2), BOTH),
}


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", list(REGISTRY_CASES))
def test_registry_agrees_with_torch(name: str, backend: str) -> None:
    build, shape, registries = REGISTRY_CASES[name]
    x = RNG.normal(size=shape)
    for registry in registries:
        theirs = getattr(torch.distributions, registry)(build(torch.distributions.constraints))
        expected_y = theirs(torch.tensor(x))
        with plugrad.use_backend(backend):
            constraint = build(C)
            ours = getattr(plugrad.distributions, registry)(constraint)
            assert type(ours).__name__ == type(theirs).__name__
            assert ours.bijective == theirs.bijective
            y = ours(plugrad.asarray(x))
            np.testing.assert_allclose(y.numpy(), expected_y.numpy(), rtol=1e-10, atol=1e-12)
            assert bool(plugrad.all(constraint.check(y)))
            if registry == "biject_to":
                np.testing.assert_allclose(ours.inv(y).numpy(), x, rtol=1e-8, atol=1e-8)
                log_det = ours.log_abs_det_jacobian(plugrad.asarray(x), y).numpy()
                expected = theirs.log_abs_det_jacobian(torch.tensor(x), expected_y).numpy()
                np.testing.assert_allclose(log_det, expected, rtol=1e-10, atol=1e-12)


def test_registry_with_tensor_bounds_and_new_entries() -> None:
    low = plugrad.tensor([0.0, 10.0], dtype=F64)
    t = plugrad.distributions.biject_to(C.interval(low, low + 2))
    y = t(plugrad.tensor([[-30.0, 30.0], [0.0, 0.0]], dtype=F64))
    assert ((y.numpy() >= low.numpy()) & (y.numpy() <= low.numpy() + 2)).all()
    np.testing.assert_allclose(y.numpy()[1], [1.0, 11.0])
    registry = plugrad.distributions.constraint_registry.ConstraintRegistry()
    registry.register(C.positive, lambda c: T.SoftplusTransform())
    assert isinstance(registry(C.greater_than(0.0)), T.SoftplusTransform)

    @registry.register(C.interval)
    def _interval(constraint: Any) -> T.Transform:
        return T.AffineTransform(constraint.lower_bound, 1.0)

    assert registry(C.interval(3.0, 4.0)).loc == 3.0
    with pytest.raises(NotImplementedError, match="Cannot transform HalfOpenInterval"):
        registry(C.half_open_interval(0.0, 1.0))
    with pytest.raises(NotImplementedError, match="Cannot transform IntegerInterval constraints"):
        plugrad.distributions.biject_to(C.integer_interval(0, 3))
    with pytest.raises(NotImplementedError, match="Cannot transform LowerCholesky"):
        plugrad.distributions.biject_to(C.lower_cholesky)
    with pytest.raises(ArgumentError, match="Constraint subclass or instance"):
        registry.register(int, lambda c: T.ExpTransform())
    with pytest.raises(ArgumentError, match="factory must be callable"):
        registry.register(C.real, 3)
    with pytest.raises(ArgumentError, match="looks up Constraints"):
        plugrad.distributions.transform_to("positive")


def test_transform_to_optimizes_a_constrained_parameter() -> None:
    # A scale fitted through an unconstrained parameter never leaves the positive numbers.
    plugrad.manual_seed(0)
    data = plugrad.randn(500, dtype=F64) * 3.0
    unconstrained = plugrad.zeros((), dtype=F64, requires_grad=True)
    D = plugrad.distributions
    to_scale = D.transform_to(D.Normal.arg_constraints["scale"])
    optimizer = plugrad.optim.Adam([unconstrained], lr=0.1)
    for _ in range(300):
        optimizer.zero_grad()
        loss = -D.Normal(0.0, to_scale(unconstrained)).log_prob(data).mean()
        loss.backward()
        optimizer.step()
    expected = float(np.sqrt((data.numpy() ** 2).mean()))
    assert to_scale(unconstrained).item() == pytest.approx(expected, rel=1e-3)


# -- constraints the transforms need ---------------------------------------------------------


def correlation_cholesky(*shape: int) -> np.ndarray:
    tril = lower_cholesky(*shape)
    return tril / np.linalg.norm(tril, axis=-1, keepdims=True)


CONSTRAINT_VALUES: dict[str, tuple[Callable[[Any], Any], list[np.ndarray]]] = {
    "square": (lambda C: C.square, [RNG.normal(size=(2, 3, 3)), RNG.normal(size=(2, 3))]),
    "symmetric": (
        lambda C: C.symmetric,
        [RNG.normal(size=(2, 3, 3)), np.eye(3) + np.ones((3, 3)), RNG.normal(size=(3, 2))],
    ),
    "positive_semidefinite": (
        lambda C: C.positive_semidefinite,
        [np.ones((2, 2)), np.array([[1.0, 2.0], [2.0, 1.0]]), RNG.normal(size=(2, 2, 2))],
    ),
    "positive_definite": (
        lambda C: C.positive_definite,
        [np.eye(3) * 2, np.ones((2, 2)), np.stack([np.eye(2), -np.eye(2)])],
    ),
    "lower_triangular": (
        lambda C: C.lower_triangular,
        [np.tril(RNG.normal(size=(2, 3, 3))), RNG.normal(size=(3, 3))],
    ),
    "corr_cholesky": (
        lambda C: C.corr_cholesky,
        [correlation_cholesky(2, 3, 3), lower_cholesky(3, 3), -correlation_cholesky(3, 3)],
    ),
    "positive_integer": (lambda C: C.positive_integer, [np.array([0.0, 1.0, 2.0, 1.5])]),
    "cat": (
        lambda C: C.cat([C.positive, C.unit_interval], dim=-1, lengths=[1, 2]),
        [np.array([[1.0, 0.5, 0.5], [-1.0, 0.5, 2.0]])],
    ),
    "cat of vectors along a batch axis": (
        lambda C: C.cat([C.simplex, C.real_vector], dim=0, lengths=[2, 1]),
        [np.array([[0.5, 0.5], [0.2, 0.9], [3.0, 4.0]])],
    ),
    "stack": (
        lambda C: C.stack([C.positive, C.real, C.unit_interval], dim=1),
        [np.array([[1.0, -5.0, 0.5], [-1.0, 0.0, 2.0]])],
    ),
    "stack inside the event": (
        lambda C: C.stack([C.simplex, C.simplex], dim=-1),
        [np.stack([[[0.5, 0.5], [0.1, 0.8]], [[1.0, 0.0], [0.5, 0.5]]], axis=-1)],
    ),
}


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", list(CONSTRAINT_VALUES))
def test_constraints_agree_with_torch(name: str, backend: str) -> None:
    build, values = CONSTRAINT_VALUES[name]
    ours, theirs = build(C), build(torch.distributions.constraints)
    assert repr(ours) == repr(theirs)
    assert (ours.event_dim, ours.is_discrete) == (theirs.event_dim, theirs.is_discrete)
    for value in values:
        with plugrad.use_backend(backend):
            got = ours.check(plugrad.asarray(value))
        expected = theirs.check(torch.tensor(value))
        assert got.tolist() == expected.tolist(), value


def test_constraints_refuse_bad_arguments() -> None:
    with pytest.raises(ShapeError, match="at least 2 axes"):
        C.independent(C.real, 2).check(plugrad.zeros(3))
    with pytest.raises(ArgumentError, match="base_constraint must be a Constraint"):
        C.independent(T.ExpTransform(), 1)
    with pytest.raises(InvalidArgumentError, match="reinterpreted_batch_ndims"):
        C.independent(C.real, -1)
    with pytest.raises(ArgumentError, match="cseq must hold Constraints"):
        C.cat([C.real, 1.0])
    with pytest.raises(InvalidArgumentError, match="one non-negative int per constraint"):
        C.cat([C.real], lengths=[1, 1])
    with pytest.raises(ShapeError, match=r"lengths .* add up to 3"):
        C.cat([C.real, C.real], lengths=[1, 2]).check(plugrad.zeros(4))
    with pytest.raises(ShapeError, match="one per constraint"):
        C.stack([C.real, C.real]).check(plugrad.zeros(3))
    with pytest.raises(ShapeError, match="out of range"):
        C.stack([C.real], dim=2).check(plugrad.zeros(3))
