"""Plugin ops that ask to become Tensor methods (only where the name is free)."""

from __future__ import annotations

import inspect

import pytest

import plugrad
from plugrad.errors import PluginRegistrationError
from plugrad.opdef import op


def softplus_like(name: str = "softish_tm", **options):
    definition = op(name, lambda xp, x, /: xp.log(1 + xp.exp(x)), saves=("x",), **options)
    return definition.vjp(lambda xp, g, ans, x: g / (1 + xp.exp(-x)))


def test_an_op_becomes_a_method_when_it_asks(plugin, registered) -> None:
    registered(plugin(ops=[softplus_like(method=True)]), "methods")
    x = plugrad.tensor([0.0, 1.0], requires_grad=True)
    y = x.softish_tm()
    assert repr(y.grad_fn) == "<SoftishTmBackward>"
    y.sum().backward()
    assert x.grad.tolist() == pytest.approx([0.5, 0.7310586])
    assert plugrad.Tensor.softish_tm is plugrad.ops.softish_tm
    (info,) = [p for p in plugrad.plugins.list_plugins() if p.name == "methods"]
    assert info.methods == ("softish_tm",)


def test_methods_take_the_other_inputs_and_params(plugin, registered) -> None:
    blend = op(
        "blend_tm", lambda xp, x, y, /, *, weight=0.5: x * weight + y * (1 - weight), method="mix"
    )
    blend = blend.vjp(
        lambda xp, g, ans, x, y, weight: g * weight, lambda xp, g, ans, x, y, weight: g
    )
    registered(plugin(ops=[blend]), "mixer")
    a, b = plugrad.tensor([2.0]), plugrad.tensor([4.0])
    assert a.mix(b).tolist() == [3.0]
    assert a.mix(b, weight=1.0).tolist() == [2.0]
    assert not hasattr(plugrad.Tensor, "blend_tm")


def test_ops_without_the_option_are_not_methods(plugin, registered) -> None:
    registered(plugin(ops=[softplus_like()]), "plain")
    assert not hasattr(plugrad.Tensor, "softish_tm")
    assert plugrad.ops.softish_tm(plugrad.zeros(1)).item() == pytest.approx(0.6931472)


def test_unregistering_removes_the_method(plugin) -> None:
    plugrad.plugins.register(plugin(ops=[softplus_like(method="sp_tm")]), name="gone")
    assert hasattr(plugrad.Tensor, "sp_tm")
    plugrad.plugins.unregister("gone")
    assert not hasattr(plugrad.Tensor, "sp_tm")
    with pytest.raises(AttributeError):
        plugrad.ones(1).sp_tm()


def test_two_plugins_claiming_one_method_name_both_named(plugin, registered, snapshot) -> None:
    registered(plugin(ops=[softplus_like("first_tm", method="shared_tm")]), "first")
    before = snapshot()
    with pytest.raises(
        PluginRegistrationError,
        match=r"plugin 'second', op 'second_tm': it asks to be the Tensor method 'shared_tm', "
        r"but op 'first_tm' of plugin 'first' already claimed it",
    ):
        plugrad.plugins.register(
            plugin(ops=[softplus_like("second_tm", method="shared_tm")]), name="second"
        )
    assert snapshot() == before
    assert plugrad.Tensor.shared_tm is plugrad.ops.first_tm


@pytest.mark.parametrize("taken", ["reshape", "grad", "shape", "backward", "T", "requires_grad_"])
def test_existing_tensor_attributes_are_never_replaced(plugin, snapshot, taken) -> None:
    original = inspect.getattr_static(plugrad.Tensor, taken)
    before = snapshot()
    with pytest.raises(PluginRegistrationError, match=f"Tensor already has an attribute {taken!r}"):
        plugrad.plugins.register(plugin(ops=[softplus_like(method=taken)]), name="greedy")
    assert inspect.getattr_static(plugrad.Tensor, taken) is original
    assert snapshot() == before


def test_a_plugin_method_survives_unrelated_rebuilds(plugin, registered) -> None:
    registered(plugin(ops=[softplus_like(method=True)]), "keeps")
    other = op("other_tm", lambda xp, x, /: x, saves=()).vjp(lambda xp, g, ans, x: g)
    registered(plugin(ops=[other]), "other")
    plugrad.plugins.unregister("other")
    assert plugrad.ones(1).softish_tm().item() == pytest.approx(1.3132616)


def test_a_method_may_have_a_meaning_of_its_own(plugin, registered) -> None:
    def twice_then(xp, x, times=2):
        """Apply the op ``times`` times."""
        for _ in range(times):
            x = xp.ops.softish_am(x)
        return x

    registered(plugin(ops=[softplus_like("softish_am", methods={"softish_am": None,
                                                                "softish_twice": twice_then})]),
               "adapted")  # fmt: skip
    x = plugrad.tensor([0.0], requires_grad=True)
    assert x.softish_twice().item() == pytest.approx(x.softish_am().softish_am().item())
    x.softish_twice(times=3).sum().backward()
    assert x.grad is not None and x.grad.item() > 0
    assert plugrad.Tensor.softish_twice.__doc__ == "Apply the op ``times`` times."
    assert plugrad.Tensor.softish_am is plugrad.ops.softish_am
    plugrad.plugins.unregister("adapted")
    assert not hasattr(plugrad.Tensor, "softish_twice")


def test_a_method_that_is_not_callable_is_refused(plugin, snapshot) -> None:
    before = snapshot()
    with pytest.raises(PluginRegistrationError, match="'nothing' maps to 3, which is not callable"):
        plugrad.plugins.register(plugin(ops=[softplus_like(methods={"nothing": 3})]), name="bad")
    assert not hasattr(plugrad.Tensor, "nothing")
    assert snapshot() == before


@pytest.mark.parametrize("dtype", ["bool", "uint8"])
def test_counting_methods_sum_bools_and_unsigned_integers_on_every_backend(dtype) -> None:
    # PyTorch's mask.sum() is a count in the default integer dtype; the standard's sum takes
    # no bools (array-api-strict refused mask.sum()) and the default integer dtype is int32
    # on JAX without 64-bit types (uint8 sums asked JAX for int64 and failed).
    mask = plugrad.tensor([[1, 0, 1], [1, 1, 0]], dtype=getattr(plugrad, dtype))
    count = plugrad.default_device().default_int_dtype
    for result, expected in (
        (mask.sum(), 4),
        (mask.sum(dim=1), [2, 2]),
        (mask.prod(), 0),
        (mask.cumsum(1), [[1, 1, 2], [1, 2, 2]]),
        (mask.cumprod(dim=1), [[1, 0, 0], [1, 1, 0]]),
    ):
        assert result.dtype is count and result.tolist() == expected
    assert mask.sum(dtype=plugrad.float32).tolist() == 4.0
    assert mask.sum(dtype=plugrad.float32).dtype is plugrad.float32


def test_methods_take_pytorchs_keyword_names_for_their_sizes() -> None:
    # TypeErrors naming private helpers: where(other=), permute(dims=), view(size=), ...
    x = plugrad.arange(6.0).reshape(2, 3)
    assert x.where(x > 2, other=0.0).tolist() == [[0.0, 0.0, 0.0], [3.0, 4.0, 5.0]]
    assert x.permute(dims=(1, 0)).shape == (3, 2)
    assert x.view(size=(3, 2)).shape == x.reshape(shape=(3, 2)).shape == (3, 2)
    assert x[:1].expand(size=(4, 3)).shape == (4, 3)
    assert x.repeat(repeats=(2, 1)).shape == (4, 3) and x.tile(dims=(2,)).shape == (2, 6)
    with pytest.raises(plugrad.errors.ArgumentError, match="by position or as size=, not both"):
        x.view(3, size=(3, 2))
    with pytest.raises(plugrad.errors.ArgumentError, match="permute\\(\\): give the sizes"):
        x.permute(1, dims=(1, 0))


def test_gather_takes_pytorchs_sparse_grad_and_gives_the_dense_gradient() -> None:
    # a TypeError named the private _gather
    a = plugrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    index = plugrad.tensor([[1], [0]])
    for sparse_grad in (False, True):
        a.grad = None
        picked = a.gather(1, index, sparse_grad=sparse_grad)
        picked.sum().backward()
        assert picked.tolist() == [[2.0], [3.0]]
        assert a.grad.tolist() == [[0.0, 1.0], [1.0, 0.0]]
    assert plugrad.gather(a, 1, index, sparse_grad=False).tolist() == [[2.0], [3.0]]
    with pytest.raises(TypeError, match="sparse_grad must be a bool"):
        a.gather(1, index, sparse_grad="yes")
