"""plugrad.cli.expression: arithmetic over tensors from text, evaluated without eval."""

from __future__ import annotations

import math

import numpy as np
import pytest

import plugrad
from plugrad.cli.expression import ExpressionError, evaluate


@pytest.fixture
def xw() -> dict[str, plugrad.Tensor]:
    return {
        "x": plugrad.tensor([1.0, 2.0, 3.0], requires_grad=True),
        "w": plugrad.tensor([0.5, 0.1, 2.0], requires_grad=True),
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("sum(exp(x * w))", lambda x, w: np.sum(np.exp(x * w))),
        ("-x + +w - 2 * x / w // 1 % 3", lambda x, w: -x + w - 2 * x / w // 1 % 3),
        ("x ** 2 @ w", lambda x, w: (x**2) @ w),
        ("mean(x, axis=0, keepdims=True)", lambda x, w: np.mean(x, axis=0, keepdims=True)),
        ("sum(x * w, axis=(0,))", lambda x, w: np.sum(x * w, axis=(0,))),
        ("linalg.vector_norm(x) * pi + e", lambda x, w: np.linalg.norm(x) * math.pi + math.e),
        ("ops.exp(x)", lambda x, w: np.exp(x)),
        ("astype(x, float64) + 2 ** 0.5", lambda x, w: x.astype(np.float64) + 2**0.5),
        ("concat([x, w])", lambda x, w: np.concatenate([x, w])),
    ],
)
def test_evaluates_like_numpy(xw, text, expected) -> None:
    result = evaluate(text, xw)
    reference = expected(*(v.detach().numpy() for v in xw.values()))
    np.testing.assert_allclose(result.detach().numpy(), reference, rtol=1e-6)
    assert result.requires_grad


def test_gradients_flow_through_evaluated_expressions(xw) -> None:
    torch = pytest.importorskip("torch")
    evaluate("sum(exp(x * w) - x)", xw).backward()
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = torch.tensor([0.5, 0.1, 2.0], requires_grad=True)
    torch.sum(torch.exp(x * w) - x).backward()
    np.testing.assert_allclose(xw["x"].grad.numpy(), x.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(xw["w"].grad.numpy(), w.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("__import__('os')", "__import__ is not a plugrad function"),
        ("__import__('os').system('echo hi')", "only plugrad functions can be called"),
        ("os.system('echo hi')", "os.system is not a plugrad function"),
        ("x.__class__", "attributes cannot be read"),
        ("x.sum()", "x.sum is not a plugrad function"),
        ("linalg.exp(x)", "linalg.exp is not a plugrad function"),
        ("fft.det(x)", "fft.det is not a plugrad function"),
        ("open('f')", "open is not a plugrad function"),
        ("x(1)", "x is a variable, not a function"),
        ("(lambda: 1)()", "only plugrad functions can be called"),
        ("exp", "exp is a function; call it"),
        ("y * 2", r"y is not defined \(define it with --var y=\.\.\.\)"),
        ("x[0]", "subscripts are not allowed"),
        ("[v for v in x]", "comprehensions are not allowed"),
        ("lambda: 1", "lambdas are not allowed"),
        ("x if w else x", "conditional expressions are not allowed"),
        ("x and w", "and/or are not allowed"),
        ("x < w", "comparisons are not allowed"),
        ("~x", "the only unary operators are - and +"),
        ("x << 1", "the only binary operators are"),
        ("sum(*x)", r"\*arguments are not allowed"),
        ("sum(x, **{'axis': 0})", r"\*\*arguments are not allowed"),
        ("f'{x}'", "f-strings are not allowed"),
        ("b'x' * x", "bytes literals are not allowed"),
        ("(y := x)", "assignments are not allowed"),
        ("x +", "cannot parse the expression"),
    ],
)
def test_refuses_everything_else(xw, text, message) -> None:
    with pytest.raises(ExpressionError, match=message) as caught:
        evaluate(text, xw)
    assert isinstance(caught.value, ValueError)
    if "cannot parse" not in message:
        assert "Expressions may use numbers, the variables (x, w)" in str(caught.value)
    assert xw["x"].grad is None


def test_number_arithmetic_stays_bounded() -> None:
    # Integer powers of plain numbers would run for ever; they are float powers instead.
    with pytest.raises(ExpressionError, match="too large for a float"):
        evaluate("9 ** 9 ** 9 ** 9", {})
    # a repeated sequence was built in full (most of a gigabyte) before being refused
    for text in ("(0,) * 50000000", "50000000 * 'ab'", "[1, 2] * 1000000"):
        with pytest.raises(ExpressionError, match="repeated to more than 1,000,000 items"):
            evaluate(text, {})
    with pytest.raises(ExpressionError, match="division by zero"):
        evaluate("1 / 0", {})
    assert evaluate("2 ** 10 + 1", {}) == 1025.0


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    with pytest.raises(ExpressionError, match="nested too deeply"):
        evaluate("-" * 100_000 + "1", {})
    with pytest.raises(ExpressionError, match="nested too deeply"):
        evaluate("+".join(["1"] * 50_000), {})


def test_variables_take_precedence_over_constants() -> None:
    pi = plugrad.tensor(1.0)
    assert evaluate("pi * 2", {"pi": pi}).item() == 2.0
