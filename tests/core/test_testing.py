"""plugrad.testing: assert_close, and an op-test harness that fails on wrong ops."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import plugrad
from plugrad.errors import GradcheckError
from plugrad.hookspecs import hookimpl
from plugrad.opdef import op
from plugrad.testing import OpCase, OpTests, assert_close

pytestmark = pytest.mark.usefixtures("on_numpy")


def test_assert_close_accepts_values_within_the_dtype_tolerance() -> None:
    x = plugrad.tensor([1.0, 2.0, 3.0], dtype=plugrad.float64)
    assert_close(x * 3, np.array([3.0, 6.0, 9.0]))
    assert_close(x + 1e-12, x)
    assert_close((x, [x]), (x, [x]))
    assert_close(plugrad.tensor([1, 2]), np.array([1, 2]))


def test_assert_close_says_where_values_differ_most() -> None:
    x = plugrad.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=plugrad.float64)
    with pytest.raises(AssertionError, match=r"1 of 4 elements differ.* 0\.5 at index \(1, 0\)"):
        assert_close(x + plugrad.tensor([[0.0, 0.0], [0.5, 0.0]], dtype=plugrad.float64), x)


@pytest.mark.parametrize(
    ("actual", "expected", "message"),
    [
        (plugrad.zeros(3), plugrad.zeros(2), "shapes differ"),
        (plugrad.zeros(2), np.zeros(2), "dtypes differ"),
        (plugrad.tensor([1, 2]), np.array([1, 3]), "1 of 2 elements differ"),
        (plugrad.tensor([np.nan]), np.array([np.nan], dtype=np.float32), "1 of 1"),
        ((plugrad.zeros(2),), plugrad.zeros(2), "one side is a sequence"),
    ],
)
def test_assert_close_refuses(actual, expected, message) -> None:
    with pytest.raises(AssertionError, match=message):
        assert_close(actual, expected)


def test_assert_close_nan_equal_only_when_asked_and_tolerances_in_pairs() -> None:
    nan = plugrad.tensor([np.nan, 1.0])
    assert_close(nan, np.array([np.nan, 1.0], dtype=np.float32), equal_nan=True)
    with pytest.raises(TypeError, match="give both rtol and atol"):
        assert_close(nan, nan, rtol=1e-3)


# An op whose backward rule is wrong (the derivative of x**3 is 3x**2, not 2x**2).
cube_wrong_rule = op("testing_cube", lambda xp, x, /: x * x * x, saves=("x",)).vjp(
    lambda xp, g, ans, x: 2 * x * x * g
)


class WrongRule:
    @hookimpl
    def plugrad_ops(self):
        return [cube_wrong_rule]


@pytest.fixture
def registered_wrong_rule():
    name = plugrad.plugins.register(WrongRule(), name="testing_wrong_rule")
    yield
    plugrad.plugins.unregister(name)


def test_the_harness_catches_a_wrong_backward_rule(registered_wrong_rule) -> None:
    class TestCube(OpTests):
        cases = (OpCase("testing_cube", reference=lambda x: x**3, shapes=[(3,)]),)

    case, harness = TestCube.cases[0], TestCube()
    harness.test_forward_matches_reference(case, plugrad.float64, "numpy")
    with pytest.raises(GradcheckError):
        harness.test_backward_matches_finite_differences(case, "numpy")


def test_the_harness_catches_a_wrong_reference_and_dtype(registered_wrong_rule) -> None:
    wrong = OpCase("testing_cube", reference=lambda x: x**3 + 1e-3, shapes=[(3,)])
    with pytest.raises(AssertionError, match="testing_cube"):
        OpTests().test_forward_matches_reference(wrong, plugrad.float64, "numpy")
    as_float64 = OpCase("testing_cube", reference=lambda x: (x**3).astype(np.float64),
                        shapes=[(3,)])  # fmt: skip
    with pytest.raises(AssertionError, match="dtypes differ"):
        OpTests().test_forward_matches_reference(as_float64, plugrad.float32, "numpy")


def test_a_case_of_an_unregistered_op_says_how_to_fix_it() -> None:
    with pytest.raises(LookupError, match="not registered; register its plugin"):

        class TestMissing(OpTests):
            cases = (OpCase("no_such_op", reference=np.exp, shapes=[(2,)]),)


def test_check_transfers_passes_for_a_backend_apart_from_numpy() -> None:
    plugrad.testing.check_transfers("array_api_strict")


def test_check_transfers_fails_where_mixing_is_not_refused() -> None:
    # Tensors "moved" to numpy itself mix freely with numpy tensors: not a backend apart.
    with pytest.raises(AssertionError, match="without an error"):
        plugrad.testing.check_transfers("numpy")


# The derivative of x**3, right on every backend but array-api-strict, where its second
# derivative is wrong too: what a backend-specific fault in a rule looks like.
def _cube_rule_wrong_on_strict(xp, g, ans, x):
    raw = x.detach().array if isinstance(x, plugrad.Tensor) else x  # a Tensor in double backward
    factor = 2.5 if type(raw).__module__.startswith("array_api_strict") else 3
    return factor * x * x * g


cube_wrong_on_strict = op("testing_cube_strict", lambda xp, x, /: x * x * x, saves=("x",)).vjp(
    _cube_rule_wrong_on_strict
)


class WrongOnStrict:
    @hookimpl
    def plugrad_ops(self):
        return [cube_wrong_on_strict]


def test_the_harness_catches_a_rule_wrong_on_one_backend_only() -> None:
    name = plugrad.plugins.register(WrongOnStrict(), name="testing_wrong_on_strict")
    try:
        case = OpCase("testing_cube_strict", reference=lambda x: x**3, shapes=[(3,)])
        harness = OpTests()
        harness.test_backward_matches_finite_differences(case, "numpy")
        with pytest.raises(AssertionError, match="on array_api_strict: gradient of input 0"):
            harness.test_gradients_match_numpy(case, "array_api_strict")
        first_order_only = OpCase(
            "testing_cube_strict", reference=lambda x: x**3, shapes=[(3,)], no_double="skip it"
        )
        with pytest.raises(AssertionError, match="gradient of input 0"):
            harness.test_gradients_match_numpy(first_order_only, "array_api_strict")
    finally:
        plugrad.plugins.unregister(name)


def test_op_tables_run_on_a_named_device_too(monkeypatch) -> None:
    monkeypatch.setenv("PLUGRAD_TEST_BACKENDS", "array_api_strict:1,numpy:7,nolib:0")
    tested = plugrad.testing.backends_under_test()
    # a device of a backend runs beside the backends; one that does not exist is left out
    assert "array_api_strict:1" in tested and "numpy" in tested
    assert "numpy:7" not in tested and "nolib:0" not in tested


def test_a_test_class_whose_base_has_no_cases_gets_every_check_back(registered_wrong_rule) -> None:
    # A base of shared settings without cases turned every check off for its subclasses:
    # a wrong op passed with only the not-a-view check collected.
    class SharedSettings(OpTests):
        forward_dtypes = (plugrad.float64,)

    class TestCube(SharedSettings):
        cases = (OpCase("testing_cube", reference=lambda x: x**3, shapes=[(3,)]),)

    assert SharedSettings.test_backward_matches_finite_differences is None
    check = TestCube.test_backward_matches_finite_differences
    assert check is OpTests.test_backward_matches_finite_differences
    with pytest.raises(GradcheckError):
        check(TestCube(), TestCube.cases[0], "numpy")


def test_a_test_class_without_cases_fails_to_collect_rather_than_pass(tmp_path) -> None:
    (tmp_path / "test_plugin_ops.py").write_text(
        textwrap.dedent(
            """
            import numpy as np
            from plugrad.testing import OpCase, OpTests

            class TestTypo(OpTests):
                case = (OpCase("exp", reference=np.exp, shapes=[(2,)]),)

            class TestGenerator(OpTests):
                cases = (OpCase("exp", reference=np.exp, shapes=[(n,)]) for n in (2, 3))
            """
        )
    )
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_plugin_ops.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    # (a typo'd cases, or a generator spent at class creation, gave 20 skips and exit status 0)
    assert run.returncode != 0, run.stdout
    assert "TestTypo has no cases" in run.stdout
    assert "TestGenerator has no cases" not in run.stdout


def _subtract_max_in_place(xp, x, /):
    x -= xp.max(x)  # writes into the caller's array
    return x * 2


class InPlaceKernel:
    @hookimpl
    def plugrad_ops(self):
        return [op("testing_writes_input", _subtract_max_in_place, vjp=lambda xp, g, ans, x: 2 * g)]


def test_the_harness_catches_a_kernel_that_writes_into_its_input() -> None:
    name = plugrad.plugins.register(InPlaceKernel(), name="testing_writes_input")
    try:
        case = OpCase("testing_writes_input", reference=lambda x: (x - x.max()) * 2, shapes=[(3,)])
        with pytest.raises(
            AssertionError, match="input 0 changed: the kernel wrote into its input"
        ):
            OpTests().test_forward_matches_reference(case, plugrad.float64, "numpy")
    finally:
        plugrad.plugins.unregister(name)


def _doubled_but_broken_in_float16(xp, x, /):
    if x.dtype == xp.float16:
        raise TypeError("a bug of this kernel's in float16")
    return x * 2


class BrokenInFloat16:
    @hookimpl
    def plugrad_ops(self):
        return [
            op(
                "testing_broken_f16",
                _doubled_but_broken_in_float16,
                vjp=lambda xp, g, ans, x: 2 * g,
            )
        ]


def test_the_harness_fails_a_kernel_that_breaks_in_float16_rather_than_skip_it() -> None:
    # Any TypeError was taken for "the backend has no float16 version", and skipped.
    if plugrad.float16 not in plugrad.default_device().dtypes:
        pytest.skip(f"{plugrad.default_device().backend.name} has no float16")
    name = plugrad.plugins.register(BrokenInFloat16(), name="testing_broken_f16")
    try:
        case = OpCase("testing_broken_f16", reference=lambda x: x * 2, shapes=[(3,)])
        with pytest.raises(TypeError, match="a bug of this kernel's"):
            OpTests().test_float16_gradients_stay_float16(case)
    finally:
        plugrad.plugins.unregister(name)


def _sin_cos_grad(xp, g, ans, x):
    g_sin, g_cos = g
    return g_sin * xp.cos(x) - g_cos * xp.sin(x)


class TwoOutputs:
    @hookimpl
    def plugrad_ops(self):
        return [
            op("testing_sin_cos", lambda xp, x, /: (xp.sin(x), xp.cos(x)), vjp=_sin_cos_grad,
               multiple_outputs=True),
            op("testing_sin_cos_wrong", lambda xp, x, /: (xp.sin(x), xp.cos(x)),
               vjp=lambda xp, g, ans, x: g[0] * xp.cos(x) + g[1] * xp.sin(x),
               multiple_outputs=True),
        ]  # fmt: skip


def test_the_harness_takes_ops_of_several_outputs() -> None:
    # Each gradient check called out.backward() on the tuple of outputs: AttributeError.
    name = plugrad.plugins.register(TwoOutputs(), name="testing_two_outputs")
    try:
        reference = lambda x: (np.sin(x), np.cos(x))
        right = OpCase("testing_sin_cos", reference=reference, shapes=[(3,)])
        harness = OpTests()
        harness.test_backward_matches_finite_differences(right, "numpy")
        harness.test_float32_gradients_stay_float32(right, "numpy")
        harness.test_float16_gradients_stay_float16(right)
        wrong = OpCase("testing_sin_cos_wrong", reference=reference, shapes=[(3,)])
        with pytest.raises(GradcheckError):
            harness.test_backward_matches_finite_differences(wrong, "numpy")
    finally:
        plugrad.plugins.unregister(name)


class ComplexSquares:
    @hookimpl
    def plugrad_ops(self):
        return [
            op(
                "testing_square",
                lambda xp, z, /: z * z,
                vjp=lambda xp, g, ans, z: g * xp.conj(2 * z),
            ),
            op(
                "testing_square_no_conj",
                lambda xp, z, /: z * z,
                vjp=lambda xp, g, ans, z: g * 2 * z,
            ),
        ]


def test_the_harness_checks_complex_inputs_as_complex() -> None:
    # Complex inputs were cast to float64: a rule without its conj passed every check.
    name = plugrad.plugins.register(ComplexSquares(), name="testing_complex_squares")
    try:
        inputs = [np.array([0.5 + 1j, -1.5 - 0.3j, 0.2 + 0.7j])]
        right = OpCase("testing_square", reference=lambda z: z * z, inputs=inputs)
        assert right.host_inputs()[0].dtype == np.complex128
        harness = OpTests()
        harness.test_forward_matches_reference(right, plugrad.float64, "numpy")
        harness.test_backward_matches_finite_differences(right, "numpy")
        harness.test_float32_gradients_stay_float32(right, "numpy")
        harness.test_gradients_match_numpy(right, "array_api_strict")
        wrong = OpCase("testing_square_no_conj", reference=lambda z: z * z, inputs=inputs)
        with pytest.raises(GradcheckError, match="backward gives"):
            harness.test_backward_matches_finite_differences(wrong, "numpy")
    finally:
        plugrad.plugins.unregister(name)


def _doubles_g_in_place(xp, g, ans, x):
    g *= 2  # writes into the caller's gradient (or fails where it is read-only)
    return g


class WritesIntoG:
    @hookimpl
    def plugrad_ops(self):
        return [op("testing_writes_g", lambda xp, x, /: 2 * x, vjp=_doubles_g_in_place)]


def test_the_harness_catches_a_rule_that_writes_into_its_gradient() -> None:
    # Its gradients are right, so every check passed (but the double backward's, with an
    # in-place error about gradgradcheck's leaves); in use it failed with a read-only
    # ValueError, or changed another gradient.
    name = plugrad.plugins.register(WritesIntoG(), name="testing_writes_g")
    try:
        case = OpCase("testing_writes_g", reference=lambda x: 2 * x, shapes=[(3,)])
        first_order = OpCase(
            "testing_writes_g", reference=lambda x: 2 * x, shapes=[(3,)], no_double="skip it"
        )
        harness = OpTests()
        message = "a backward rule wrote into it. A backward rule must not write into its gradient"
        checks = [
            lambda: harness.test_backward_matches_finite_differences(case, "numpy"),
            lambda: harness.test_double_backward_matches_finite_differences(case, "numpy"),
            lambda: harness.test_float32_gradients_stay_float32(case, "numpy"),
            lambda: harness.test_gradients_match_numpy(first_order, "array_api_strict"),
        ]
        for check in checks:
            with pytest.raises(AssertionError, match=message):
                check()
    finally:
        plugrad.plugins.unregister(name)
