"""softplus and smooth_max: values, gradients of first and second order (by plugrad.testing),
numerical stability, and the kernels that serve each backend."""

from __future__ import annotations

import doctest

import array_api_compat.numpy as numpy_namespace
import numpy as np
import plugrad
import pytest
from plugrad.testing import OpCase, OpTests, assert_close

from plugrad_myops import ops

softplus, smooth_max = plugrad.ops.softplus, plugrad.ops.smooth_max
RNG = np.random.default_rng(0)


def reference_softplus(x: np.ndarray) -> np.ndarray:
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)


class TestMyOps(OpTests):
    """Values against the references in float32 and float64, gradients and second
    derivatives against finite differences, and gradient dtypes, on every backend."""

    cases = (
        OpCase("softplus", reference=reference_softplus, shapes=[(4, 5)], domains=[(-8, 8)]),
        OpCase(
            "softplus",
            id="softplus-method",
            program=lambda x: x.softplus(),
            reference=reference_softplus,
            shapes=[(3, 4)],
        ),
        OpCase(
            "softplus",
            id="softplus-chain",
            program=lambda x: softplus(x * x),
            reference=lambda x: reference_softplus(x * x),
            shapes=[(3, 4)],
        ),
        *(
            OpCase("smooth_max", id=f"smooth_max{shapes}", reference=np.logaddexp, shapes=shapes)
            for shapes in [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 3), (4, 1)), ((), (5,))]
        ),
    )


def test_softplus_is_stable_far_from_zero() -> None:
    x = plugrad.tensor([-1e4, -50.0, 50.0, 1e4], dtype=plugrad.float64, requires_grad=True)
    y = softplus(x)  # warnings are errors here: any overflow would fail
    assert_close(y, np.array([0.0, np.exp(-50.0), 50.0, 1e4]), rtol=1e-12, atol=0.0)
    y.sum().backward()
    assert_close(x.grad, np.array([0.0, np.exp(-50.0), 1.0, 1.0]), rtol=1e-12, atol=0.0)


def test_smooth_max_with_python_scalars_and_extremes() -> None:
    x = plugrad.tensor([1000.0, -1000.0, 0.0], dtype=plugrad.float64, requires_grad=True)
    y = smooth_max(x, 0.0)
    assert_close(y, np.array([1000.0, 0.0, np.log(2.0)]), rtol=0.0, atol=1e-12)
    y.sum().backward()
    assert_close(x.grad, np.array([1.0, 0.0, 0.5]), rtol=0.0, atol=1e-12)
    assert smooth_max(2.0, plugrad.tensor([2.0])).item() == pytest.approx(2.0 + np.log(2.0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_generic_kernels_agree_with_the_numpy_kernels(dtype) -> None:
    # The generic kernels serve every backend without a kernel of its own; check them here.
    xp = numpy_namespace
    x = RNG.uniform(-60, 60, size=50).astype(dtype)
    y = RNG.uniform(-60, 60, size=50).astype(dtype)
    tolerance = {"rtol": 1e-5 if dtype == np.float32 else 1e-12}
    generic = ops.softplus.kernel(xp, x)
    assert generic.dtype == dtype
    np.testing.assert_allclose(generic, ops.softplus.backend_kernels["numpy"](xp, x), **tolerance)
    np.testing.assert_allclose(
        ops.smooth_max.kernel(xp, x, y),
        ops.smooth_max.backend_kernels["numpy"](xp, x, y),
        **tolerance,
    )
    same = np.array([3.0, -np.inf, np.inf], dtype=dtype)
    with np.errstate(invalid="ignore"):  # inf - inf in the branch that is not taken
        both = ops.smooth_max.kernel(xp, same, same)
    np.testing.assert_allclose(both, np.logaddexp(same, same), rtol=1e-6)


def test_ops_pass_plugrads_checking_mode() -> None:
    # Checking mode compares the numpy kernels with the generic ones and checks every gradient.
    with plugrad.plugins.checking():
        x = plugrad.asarray(RNG.uniform(-5, 5, size=(2, 3)), requires_grad=True)
        (softplus(x) + smooth_max(x, x.T.T * 0.5)).sum().backward(create_graph=True)
        x.grad.sum().backward()


@pytest.mark.parametrize("name", ["softplus", "smooth_max"])
def test_docstring_examples(name) -> None:
    function = getattr(plugrad.ops, name)
    runner = doctest.DocTestRunner()
    (test,) = doctest.DocTestFinder().find(function, name, globs={})
    assert len(test.examples) >= 2
    runner.run(test)
    assert runner.failures == 0
