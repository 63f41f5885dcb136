"""plugrad.autocast's semantics against PyTorch's: the state per thread and device type, nesting,
the cache of parameter casts, differentiable casts, the warnings that leave autocast off, the
decorator, custom_fwd/custom_bwd inside a region, and that nothing stays swapped after a region.
(Which ops cast to what, op by op: tests/core/test_autocast_against_torch.py.)"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import plugrad
from plugrad import autocast_mode, dispatch
from plugrad.errors import ArgumentError, InvalidArgumentError, NotSupportedError

torch = pytest.importorskip("torch")

HALF = {plugrad: plugrad.float16, torch: torch.float16}


def _name(dtype) -> str:
    return str(dtype).split(".")[-1]


def test_a_region_lowers_the_listed_ops_only_and_is_seen_as_pytorchs() -> None:
    seen = {}
    for lib in (plugrad, torch):
        a = lib.ones((2, 3))
        w = lib.ones((4, 3))
        before = (lib.is_autocast_enabled("cpu"), _name(lib.get_autocast_dtype("cpu")))
        with lib.autocast("cpu", dtype=HALF[lib]):
            inside = (lib.is_autocast_enabled("cpu"), lib.is_autocast_enabled())
            dtypes = [
                _name(d)
                for d in (
                    (a @ w.T).dtype,
                    lib.nn.functional.linear(a, w).dtype,
                    (a + a).dtype,
                    lib.exp(a).dtype,
                    lib.nn.functional.mse_loss(a.half(), a.half()).dtype,
                    (a.double() @ w.double().T).dtype,  # float64 is not cast
                    (lib.ones((2, 2), dtype=lib.int64) @ lib.ones((2, 2), dtype=lib.int64)).dtype,
                )
            ]
        seen[lib] = (before, inside, dtypes, lib.is_autocast_enabled("cpu"))
    assert seen[plugrad] == seen[torch]
    assert seen[plugrad][2][:4] == ["float16", "float16", "float32", "float32"]


def test_casts_are_differentiable_and_float32_parameters_get_float32_gradients() -> None:
    grads = {}
    for lib in (plugrad, torch):
        lib.manual_seed(0)
        x = lib.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
        w = lib.tensor(
            np.linspace(-0.5, 0.5, 20, dtype=np.float32).reshape(5, 4), requires_grad=True
        )
        b = lib.tensor(np.linspace(0, 1, 5, dtype=np.float32), requires_grad=True)
        with lib.autocast("cpu", dtype=HALF[lib]):
            y = lib.nn.functional.linear(x, w, b)
            loss = lib.nn.functional.mse_loss(y, lib.zeros((3, 5)))
        assert _name(y.dtype) == "float16" and _name(loss.dtype) == "float32"
        loss.backward()
        grads[lib] = (w.grad, b.grad)
    for ours, theirs in zip(grads[plugrad], grads[torch]):
        assert ours.dtype is plugrad.float32
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=2**-8, atol=1e-4)


def test_a_parameter_is_cast_once_per_outermost_region() -> None:
    w = plugrad.ones((2, 2), requires_grad=True)
    with plugrad.autocast("cpu", dtype=plugrad.float16):
        first, second = w @ w, w.mm(w)
        with plugrad.autocast("cpu", dtype=plugrad.float16):
            third = w @ w
        casts = {id(node) for y in (first, second, third) for node, _ in y.grad_fn.next_functions}
        assert len(casts) == 1  # one AstypeBackward for every use, as PyTorch's ToCopyBackward0
        x = plugrad.ones((2, 2))  # not a leaf requiring grad: cast at each use
        assert (x @ x).grad_fn is None
    with plugrad.autocast("cpu", dtype=plugrad.float16):
        fourth = w @ w
    assert fourth.grad_fn.next_functions[0][0] is not first.grad_fn.next_functions[0][0]
    with plugrad.autocast("cpu", dtype=plugrad.float16, cache_enabled=False):
        assert not plugrad.is_autocast_cache_enabled()
        y = w @ w
        a, b = (node for node, _ in y.grad_fn.next_functions)
        assert a is not b
    assert plugrad.is_autocast_cache_enabled()


def test_a_cached_cast_of_one_dtype_is_not_used_for_another() -> None:
    # PyTorch's cache hands an inner float16 region the outer bfloat16 cast (and mm then
    # fails, Half != BFloat16); plugrad's keys the cache by dtype.
    pytest.importorskip("ml_dtypes")
    w = plugrad.ones((2, 2), requires_grad=True, device="torch")
    with plugrad.autocast("cpu", dtype=plugrad.bfloat16):
        assert (w @ w).dtype is plugrad.bfloat16
        with plugrad.autocast("cpu", dtype=plugrad.float16):
            assert (w @ w).dtype is plugrad.float16


def test_nesting_disabling_and_the_dtype_restore_as_pytorchs() -> None:
    seen = {}
    for lib in (plugrad, torch):
        a = lib.ones((2, 2))
        states = []
        with lib.autocast("cpu", dtype=HALF[lib]):
            states.append((lib.is_autocast_enabled("cpu"), _name((a @ a).dtype)))
            with lib.autocast("cpu", enabled=False):
                states.append((lib.is_autocast_enabled("cpu"), _name((a @ a).dtype)))
                states.append(_name(lib.get_autocast_dtype("cpu")))
            states.append((lib.is_autocast_enabled("cpu"), _name((a @ a).dtype)))
        states.append((lib.is_autocast_enabled("cpu"), _name(lib.get_autocast_dtype("cpu"))))
        seen[lib] = states
    assert seen[plugrad] == seen[torch]


def test_the_state_is_per_thread() -> None:
    seen = []

    def other() -> None:
        seen.append(
            (
                plugrad.is_autocast_enabled("cpu"),
                (plugrad.ones((2, 2)) @ plugrad.ones((2, 2))).dtype,
            )
        )

    with plugrad.autocast("cpu", dtype=plugrad.float16):
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        assert (plugrad.ones((2, 2)) @ plugrad.ones((2, 2))).dtype is plugrad.float16
    assert seen == [(False, plugrad.float32)]


def test_a_decorated_function_runs_in_a_region() -> None:
    region = plugrad.autocast("cpu", dtype=plugrad.float16)

    @region
    def product(a):
        return a @ a

    assert product(plugrad.ones((2, 2))).dtype is plugrad.float16
    assert product.__name__ == "product"
    assert (plugrad.ones((2, 2)) @ plugrad.ones((2, 2))).dtype is plugrad.float32


def test_the_low_level_switches_as_pytorchs() -> None:
    seen = {}
    for lib in (plugrad, torch):
        lib.set_autocast_dtype("cpu", HALF[lib])
        lib.set_autocast_enabled("cpu", True)
        try:
            states = [
                lib.is_autocast_enabled("cpu"),
                _name((lib.ones((2, 2)) @ lib.ones((2, 2))).dtype),
            ]
        finally:
            lib.set_autocast_enabled("cpu", False)
            lib.set_autocast_dtype("cpu", lib.bfloat16)
        lib.set_autocast_cache_enabled(False)
        states.append(lib.is_autocast_cache_enabled())
        lib.set_autocast_cache_enabled(True)
        lib.clear_autocast_cache()
        seen[lib] = [*states, lib.is_autocast_enabled("cpu"), _name(lib.get_autocast_dtype("cpu"))]
    assert seen[plugrad] == seen[torch] == [True, "float16", False, False, "bfloat16"]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_a_dtype_the_cpu_does_not_take_warns_and_leaves_autocast_off(dtype) -> None:
    for lib in (plugrad, torch):
        with pytest.warns(UserWarning, match="[Aa]utocast"):
            region = lib.autocast("cpu", dtype=getattr(lib, dtype))
        with region:
            assert not lib.is_autocast_enabled("cpu")
            assert _name((lib.ones((2, 2)) @ lib.ones((2, 2))).dtype) == "float32"


@pytest.mark.skipif(plugrad.cuda.is_available(), reason="a CUDA device is available here")
def test_a_cuda_region_without_a_cuda_device_warns_and_leaves_autocast_off() -> None:
    with pytest.warns(UserWarning, match="CUDA"):
        region = plugrad.autocast("cuda")
    with region:
        assert not plugrad.is_autocast_enabled("cuda")


def test_bad_arguments_are_typed_errors_that_leave_the_state_as_it_was() -> None:
    for call, error in (
        (lambda: plugrad.autocast(3), ArgumentError),
        (lambda: plugrad.autocast("cpu", dtype="half"), ArgumentError),
        (lambda: plugrad.autocast("cpu", enabled="yes"), ArgumentError),
        (lambda: plugrad.autocast("bogus"), InvalidArgumentError),
        (lambda: plugrad.autocast("mps"), NotSupportedError),
        (lambda: plugrad.set_autocast_dtype("cpu", "half"), ArgumentError),
        (lambda: plugrad.set_autocast_enabled("cpu", 1), ArgumentError),
    ):
        with pytest.raises(error):
            call()
        assert not plugrad.is_autocast_enabled("cpu")
        assert plugrad.get_autocast_dtype("cpu") is plugrad.bfloat16
    with plugrad.autocast("mps", enabled=False):  # taken disabled, as PyTorch's
        assert not plugrad.is_autocast_enabled("mps")


def test_bfloat16_on_numpy_is_a_dtype_error_naming_the_backends_that_store_it() -> None:
    a = plugrad.ones((2, 2), device="numpy")
    with plugrad.autocast("cpu"), pytest.raises(plugrad.errors.DtypeError, match="torch"):
        a @ a
    assert not plugrad.is_autocast_enabled("cpu")


def test_an_error_inside_a_region_leaves_autocast_off_after_it() -> None:
    with pytest.raises(RuntimeError), plugrad.autocast("cpu", dtype=plugrad.float16):
        raise RuntimeError("inside")
    assert not plugrad.is_autocast_enabled("cpu") and not autocast_mode.active


def test_the_op_functions_have_their_plain_entries_after_a_region() -> None:
    # The per-op path costs nothing outside autocast: the listed ops' functions get their
    # autocasting entries only while a region is enabled somewhere.
    scope = plugrad.matmul.__globals__
    assert scope["_apply2"] is dispatch.apply2
    with plugrad.autocast("cpu", dtype=plugrad.float16):
        assert scope["_apply2"] is not dispatch.apply2
    assert scope["_apply2"] is dispatch.apply2
    assert plugrad.add.__globals__["_apply2"] is dispatch.apply2  # never swapped: not listed


def test_ops_inside_a_listed_composite_are_not_cast_again() -> None:
    # cdist is float32 under autocast, though its work is products: PyTorch's cdist too.
    for lib in (plugrad, torch):
        a = lib.ones((3, 2), dtype=HALF[lib])
        with lib.autocast("cpu", dtype=HALF[lib]):
            assert _name(lib.cdist(a, a).dtype) == "float32"


def _scaled(lib, **forward_options):
    class Scaled(lib.autograd.Function):
        @staticmethod
        @lib.amp.custom_fwd(device_type="cpu", **forward_options)
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return x @ w

        @staticmethod
        @lib.amp.custom_bwd(device_type="cpu")
        def backward(ctx, grad):
            x, w = ctx.saved_tensors
            ctx.inside = lib.is_autocast_enabled("cpu")
            return grad @ w.T, x.T @ grad

    return Scaled


@pytest.mark.parametrize("cast_inputs", [None, "float32"])
def test_custom_fwd_and_custom_bwd_inside_a_region_as_pytorchs(cast_inputs) -> None:
    seen = {}
    for lib in (plugrad, torch):
        options = {} if cast_inputs is None else {"cast_inputs": getattr(lib, cast_inputs)}
        x = lib.ones((2, 3), dtype=HALF[lib], requires_grad=True)
        w = lib.ones((3, 2), requires_grad=True)
        with lib.autocast("cpu", dtype=HALF[lib]):
            if cast_inputs is None:  # x @ w runs under the region: lowered
                y = _scaled(lib, **options).apply(x, w)
            else:  # forward runs with autocast off, its inputs in float32
                y = _scaled(lib, **options).apply(x, w)
        y.float().sum().backward()
        seen[lib] = (_name(y.dtype), _name(x.grad.dtype), _name(w.grad.dtype), x.grad.tolist())
    assert seen[plugrad] == seen[torch]


def test_a_compiled_step_runs_eagerly_under_autocast_and_replays_without() -> None:
    @plugrad.compile
    def product(a, b):
        return a @ b + 1.0

    a, b = plugrad.ones((2, 3)), plugrad.ones((3, 2))
    for _ in range(3):  # captured and replayed without autocast
        assert product(a, b).dtype is plugrad.float32
    with plugrad.autocast("cpu", dtype=plugrad.float16):
        with pytest.warns(plugrad.errors.CompileWarning, match="autocast"):
            assert product(a, b).dtype is plugrad.float16
        assert product(a, b).dtype is plugrad.float16
    assert product(a, b).dtype is plugrad.float32


def test_argument_dependent_kinds_read_every_form_of_their_arguments() -> None:
    # inner(input=..., other=...) raised IndexError in a region and tensordot with dims given
    # as a tensor or a NumPy integer raised TypeError: the rules read positional ints only.
    a, b = plugrad.randn(2, 3), plugrad.randn(3, 2)
    with plugrad.autocast("cpu", dtype=plugrad.float16):
        assert plugrad.inner(input=a, other=b.mT).dtype == plugrad.float16
        assert plugrad.inner(a[0], other=a[1]).dtype == plugrad.float32  # a dot: kept
        for dims in (plugrad.tensor(1), np.int64(1), plugrad.tensor([[1], [0]])):
            assert plugrad.tensordot(a, b, dims=dims).dtype == plugrad.float16
        assert plugrad.tensordot(a, a, dims=plugrad.tensor(2)).dtype == plugrad.float32
        with pytest.raises(ArgumentError, match="axes"):
            plugrad.tensordot(a, b, dims="x")
