"""PyTorch's import paths under ``autograd`` reach plugrad's modules of the same job."""

from __future__ import annotations

import importlib

import pytest

import plugrad


@pytest.mark.parametrize(
    ("path", "names"),
    [
        ("plugrad.autograd.function", ["Function", "FunctionCtx", "once_differentiable"]),
        ("plugrad.autograd.grad_mode", ["no_grad", "enable_grad", "set_grad_enabled",
                                        "inference_mode"]),
        ("plugrad.autograd.anomaly_mode", ["detect_anomaly", "set_detect_anomaly"]),
        ("plugrad.autograd.functional", ["jacobian", "hessian", "vjp", "jvp"]),
    ],
)  # fmt: skip
def test_submodule_imports(path: str, names: list[str]) -> None:
    module = importlib.import_module(path)
    assert getattr(plugrad.autograd, path.rpartition(".")[2]) is module
    for name in names:
        assert callable(getattr(module, name)), name


def test_a_function_written_against_the_submodule_path_differentiates() -> None:
    from plugrad.autograd.function import Function, once_differentiable

    class Cube(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        @once_differentiable
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 3 * x**2

    x = plugrad.tensor([2.0], requires_grad=True)
    Cube.apply(x).sum().backward()
    assert x.grad.tolist() == [12.0]


def test_inference_mode_is_reachable_from_autograd() -> None:
    x = plugrad.tensor([1.0], requires_grad=True)
    with plugrad.autograd.inference_mode():
        assert not (x * 2).requires_grad
    assert plugrad.autograd.inference_mode is plugrad.inference_mode
