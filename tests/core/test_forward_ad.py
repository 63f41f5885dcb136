"""``plugrad.autograd.forward_ad`` (dual tensors computed by the double-vjp) against PyTorch's."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import plugrad
import plugrad.autograd.forward_ad as fwAD
from plugrad.errors import (
    ArgumentError,
    BackwardError,
    CallOrderError,
    DtypeError,
    InvalidArgumentError,
    PlugradError,
    ShapeError,
)

torch = pytest.importorskip("torch")
import torch.autograd.forward_ad as torch_fwAD  # noqa: E402

LIBRARIES = [(plugrad, fwAD), (torch, torch_fwAD)]
# PyTorch's make_dual loads its forward-mode decompositions through torch.jit.script.
pytestmark = pytest.mark.filterwarnings(
    "ignore:`torch.jit.script` is deprecated:DeprecationWarning"
)


@pytest.fixture(autouse=True)
def _no_level_left_behind():
    yield
    if fwAD._current_level[0] >= 0:
        fwAD.exit_dual_level()
    if torch_fwAD._current_level >= 0:
        torch_fwAD.exit_dual_level()


def _values(value):
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return [_values(v) for v in value]
    return np.asarray(value.detach().tolist())


def _both(program, rtol=1e-6):
    """Run ``program(lib, fw)`` with plugrad and with PyTorch; their results agree."""
    ours, theirs = (program(lib, fw) for lib, fw in LIBRARIES)
    _assert_same(ours, theirs, rtol)
    return ours


def _assert_same(ours, theirs, rtol):
    if isinstance(ours, (list, tuple)):
        assert isinstance(theirs, (list, tuple)) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _assert_same(a, b, rtol)
    elif isinstance(ours, np.ndarray):
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=1e-7)
    else:
        assert ours == theirs


def test_the_module_is_reachable_by_pytorchs_path():
    assert importlib.import_module("plugrad.autograd.forward_ad") is plugrad.autograd.forward_ad
    for name in fwAD.__all__:
        assert hasattr(torch_fwAD, name), name


def test_an_elementwise_chain():
    def program(lib, fw):
        x = lib.tensor([0.5, 1.0, -2.0], dtype=lib.float64)
        t = lib.tensor([1.0, -0.5, 2.0], dtype=lib.float64)
        with fw.dual_level():
            d = fw.make_dual(x, t)
            y = lib.sin(d) * lib.exp(d) + d**2 / (1 + d * d)
            primal, tangent = fw.unpack_dual(y)
        return _values([primal, tangent])

    _both(program)


def test_matmul_softmax_and_broadcasting():
    rng = np.random.default_rng(0)
    a, b, c, ta, tc = (rng.standard_normal(s) for s in [(2, 3), (3, 4), (4,), (2, 3), (4,)])

    def program(lib, fw):
        with fw.dual_level():
            da = fw.make_dual(lib.tensor(a), lib.tensor(ta))
            dc = fw.make_dual(lib.tensor(c), lib.tensor(tc))
            product = da @ lib.tensor(b)
            soft = lib.softmax(product, dim=-1)
            broadcast = product * dc - dc  # (2, 4) with (4,)
            return _values([fw.unpack_dual(y) for y in (product, soft, broadcast)])

    _both(program)


def test_several_duals_sum_their_products_and_each_dual_keeps_its_own_tangent():
    def program(lib, fw):
        t = lib.tensor([0.0, 1.0])
        with fw.dual_level():
            a = fw.make_dual(lib.tensor([1.0, 2.0]), lib.tensor([1.0, 0.0]))
            b = fw.make_dual(lib.tensor([3.0, 4.0]), t)
            y = fw.unpack_dual(a * b + a)
            own = fw.unpack_dual(b).tangent
            assert own is t  # as given, not copied
        return _values([y, own])

    _both(program)


def test_a_tensor_computed_from_no_dual_has_no_tangent():
    def program(lib, fw):
        w = lib.tensor([1.0, 2.0], requires_grad=True)
        with fw.dual_level():
            d = fw.make_dual(lib.tensor([1.0, 2.0]), lib.ones(2))
            results = [fw.unpack_dual(lib.ones(2)), fw.unpack_dual(w * 2), fw.unpack_dual(d > 1)]
            return [(_values(p), t, p.requires_grad) for p, t in results]

    _both(program)


def test_the_primal_and_tangent_require_grad_as_pytorchs():
    def program(lib, fw):
        flags = []
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        t = lib.tensor([0.5, 1.0], requires_grad=True)
        with fw.dual_level():
            for primal, tangent in [(x.detach(), t.detach()), (x, t.detach()), (x.detach(), t)]:
                y = lib.exp(fw.make_dual(primal, tangent))
                p, yt = fw.unpack_dual(y)
                flags.append((p.requires_grad, yt.requires_grad, bool((p == y.detach()).all())))
        return flags

    assert _both(program) == [(False, False, True), (True, True, True), (False, True, True)]


def test_backward_reaches_the_primal_through_the_dual_and_the_tangent_is_differentiable():
    def program(lib, fw):
        x = lib.tensor([0.3, -1.2, 2.0], dtype=lib.float64, requires_grad=True)
        u = lib.tensor([1.0, 2.0, -1.0], dtype=lib.float64, requires_grad=True)
        with fw.dual_level():
            d = fw.make_dual(x, u)
            y = lib.tanh(d) * d
            primal, tangent = fw.unpack_dual(y)
            y.sum().backward(retain_graph=True)
            through_y = x.grad.clone()
            # (as PyTorch's, the tangent's graph goes through y's: keep it for the next)
            gx, gu = lib.autograd.grad(tangent.sum(), [x, u], retain_graph=True)
            (gp,) = lib.autograd.grad(primal.sum(), x)
        return _values([primal, tangent, through_y, gx, gu, gp])

    _both(program)


def test_a_model_with_dual_input_and_dual_parameters():
    rng = np.random.default_rng(1)
    weight, bias = rng.standard_normal((3, 4)), rng.standard_normal(3)
    x, tx = rng.standard_normal((2, 4)), rng.standard_normal((2, 4))
    tw, tb = rng.standard_normal((3, 4)), rng.standard_normal(3)

    def program(lib, fw):
        model = lib.nn.Linear(4, 3).double()
        with lib.no_grad():
            model.weight.copy_(lib.tensor(weight))
            model.bias.copy_(lib.tensor(bias))
        results = []
        with fw.dual_level():
            y = lib.tanh(model(fw.make_dual(lib.tensor(x), lib.tensor(tx))))
            results.append(fw.unpack_dual(y))
            # PyTorch's way to differentiate with respect to parameters: call the model
            # with dual tensors in their place.
            duals = {
                "weight": fw.make_dual(model.weight, lib.tensor(tw)),
                "bias": fw.make_dual(model.bias, lib.tensor(tb)),
            }
            y = lib.tanh(lib.func.functional_call(model, duals, (lib.tensor(x),)))
            results.append(fw.unpack_dual(y))
            y.sum().backward()  # reaches the parameters through their duals
        return _values([*results, model.weight.grad, model.bias.grad])

    _both(program)


def test_an_in_place_change_of_a_dual_changes_its_tangent():
    def program(lib, fw):
        with fw.dual_level():
            c = fw.make_dual(lib.tensor([1.0, 2.0]), lib.tensor([1.0, 1.0]))
            c.mul_(3)
            c.add_(lib.tensor([1.0, 1.0]))
            return _values(fw.unpack_dual(c))

    _both(program)


def test_complex_duals():
    def program(lib, fw):
        z = lib.tensor([1.0 + 2.0j, -0.5j])
        with fw.dual_level():
            d = fw.make_dual(z, lib.tensor([1.0 - 1.0j, 2.0 + 0.0j]))
            return _values(fw.unpack_dual(d * d * 3 + lib.exp(d)))

    _both(program)


def test_unpack_gives_a_named_tuple_that_unpacks_as_a_pair():
    with fwAD.dual_level():
        result = fwAD.unpack_dual(fwAD.make_dual(plugrad.ones(2), plugrad.ones(2)) * 2)
    assert isinstance(result, fwAD.UnpackedDualTensor) and isinstance(result, tuple)
    primal, tangent = result
    assert primal is result.primal and tangent is result.tangent
    assert result._fields == torch_fwAD.UnpackedDualTensor._fields


def test_levels_do_not_nest_and_only_the_current_one_exits():
    def program(lib, fw):
        outcomes = []

        def attempt(call):
            try:
                call()
                outcomes.append("ok")
            except Exception as error:
                outcomes.append(isinstance(error, RuntimeError))
                if lib is plugrad:
                    assert isinstance(error, PlugradError), error

        attempt(lambda: fw.exit_dual_level())  # none to exit
        attempt(lambda: fw.exit_dual_level(level=0))
        with fw.dual_level() as level:
            outcomes.append(level)
            attempt(fw.enter_dual_level)
            attempt(lambda: fw.exit_dual_level(level=1))
            attempt(lambda: fw.make_dual(lib.ones(1), lib.ones(1), level=3))
            d = fw.make_dual(lib.tensor([2.0]), lib.tensor([1.0]))
            attempt(lambda: fw.unpack_dual(d, level=3))
            # The refusals left the level as it was.
            outcomes.append(_values(fw.unpack_dual(d * d).tangent))
            y = d * d
        outcomes.append(fw.unpack_dual(y).tangent)  # the level's tangents are gone
        outcomes.append(fw.enter_dual_level())  # the next level takes the number again
        outcomes.append(fw.unpack_dual(y).tangent)
        fw.exit_dual_level(level=0)
        return outcomes

    result = _both(program)
    assert result[:3] == [True, True, 0]


def test_errors_name_the_problem_and_leave_the_level_usable():
    x = plugrad.tensor([1.0, 2.0])
    with pytest.raises(CallOrderError, match="needs a forward AD level"):
        fwAD.make_dual(x, plugrad.ones(2))
    with fwAD.dual_level():
        with pytest.raises(CallOrderError, match="do not nest"):
            fwAD.enter_dual_level()
        with pytest.raises(CallOrderError, match="do not nest"), fwAD.dual_level():
            pass
        with pytest.raises(ShapeError, match=r"shape \(1,\).*\(2,\)"):
            fwAD.make_dual(x, plugrad.ones(1))  # not broadcast, as PyTorch
        with pytest.raises(DtypeError, match="float64 but the tensor is float32"):
            fwAD.make_dual(x, plugrad.ones(2, dtype=plugrad.float64))
        with pytest.raises(DtypeError, match="int64"):
            fwAD.make_dual(plugrad.tensor([1, 2]), plugrad.ones(2))
        with pytest.raises(DtypeError, match="int64"):
            fwAD.make_dual(x, plugrad.tensor([1, 2]))
        with pytest.raises(ArgumentError, match="float"):
            fwAD.make_dual(x, 1.0)
        with pytest.raises(ArgumentError, match="float"):
            fwAD.unpack_dual(3.0)
        with pytest.raises(ArgumentError, match="level"):
            fwAD.unpack_dual(x, level="0")
        with pytest.raises(InvalidArgumentError, match=r"level=3\).*the one in use is 0"):
            fwAD.make_dual(x, plugrad.ones(2), level=3)
        d = fwAD.make_dual(x, plugrad.ones(2))
        for has_tangent in (d, d * 2):
            with pytest.raises(InvalidArgumentError, match="already has a tangent at level 0"):
                fwAD.make_dual(has_tangent, plugrad.ones(2))
        again = fwAD.make_dual(x, plugrad.ones(2) * 2)  # the primal itself has none
        assert fwAD.unpack_dual(d * again).tangent.tolist() == [3.0, 6.0]
        with pytest.raises(CallOrderError, match="only the last level entered"):
            fwAD.exit_dual_level(level=1)
        assert fwAD.unpack_dual(d).tangent.tolist() == [1.0, 1.0]
    with pytest.raises(CallOrderError, match="no forward AD level is in use"):
        fwAD.exit_dual_level()


def test_pytorchs_errors_are_runtime_errors_as_ours():
    for lib, fw in LIBRARIES:
        with pytest.raises(RuntimeError):
            fw.make_dual(lib.ones(2), lib.ones(2))
        with fw.dual_level():
            with pytest.raises(RuntimeError):
                fw.make_dual(lib.ones(2), lib.ones(3))
            d = fw.make_dual(lib.ones(2), lib.ones(2))
            with pytest.raises(RuntimeError):
                fw.make_dual(d * 2, lib.ones(2))


def test_outside_a_level_unpack_gives_the_tensor_without_tangent():
    def program(lib, fw):
        x = lib.ones(2)
        outside = fw.unpack_dual(x)
        with fw.dual_level():
            d = fw.make_dual(lib.ones(2), lib.ones(2))
            below = fw.unpack_dual(d, level=-1)
        return [outside.primal is x, outside.tangent, below.primal is d, below.tangent]

    assert _both(program) == [True, None, True, None]


def test_the_level_is_exited_when_its_block_raises():
    with pytest.raises(KeyError), fwAD.dual_level():
        raise KeyError
    assert fwAD.enter_dual_level() == 0
    fwAD.exit_dual_level()


def test_dual_level_decorates_a_function():
    @fwAD.dual_level()
    def tangent_of_cube(x, t):
        return fwAD.unpack_dual(fwAD.make_dual(x, t) ** 3).tangent

    assert tangent_of_cube(plugrad.tensor([2.0]), plugrad.ones(1)).tolist() == [12.0]
    assert fwAD.unpack_dual(plugrad.ones(1)).tangent is None  # the level was exited


def test_an_op_whose_backward_is_once_differentiable_refuses_with_the_engines_error():
    class Cube(plugrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        @plugrad.autograd.once_differentiable
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 3 * x**2

    with fwAD.dual_level():
        y = Cube.apply(fwAD.make_dual(plugrad.tensor([2.0]), plugrad.ones(1)))
        with pytest.raises(BackwardError, match="once_differentiable"):
            fwAD.unpack_dual(y)


def test_a_dual_whose_graph_is_gone_is_forgotten():
    import gc

    with fwAD.dual_level():
        y = plugrad.exp(fwAD.make_dual(plugrad.ones(2), plugrad.ones(2)))
        assert len(fwAD._duals) == 1
        assert fwAD.unpack_dual(y).tangent.tolist() == pytest.approx([np.e, np.e])
        del y
        gc.collect()
        assert not fwAD._duals


def test_a_level_inside_a_function_transform_gives_differentiable_tangents():
    t = plugrad.tensor([1.0, 2.0])

    def tangent_sum(x):  # sum(3 x^2 t): its gradient is 6 x t
        with fwAD.dual_level():
            return fwAD.unpack_dual(fwAD.make_dual(x, t) ** 3).tangent.sum()

    x = plugrad.tensor([1.0, 3.0])
    assert plugrad.func.grad(tangent_sum)(x).tolist() == [6.0, 36.0]
    assert [v.item() for v in plugrad.func.jvp(tangent_sum, (x,), (plugrad.ones(2),))] == [
        57.0,
        42.0,
    ]
