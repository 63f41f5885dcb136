"""What an op may declare beyond one array in, one array out, seen from a plugin:
dtype params, array params, several outputs, sequence inputs, optional inputs."""

from __future__ import annotations

import types

import numpy as np
import pytest

import plugrad
from plugrad import registry
from plugrad.errors import (
    AxisError,
    DeviceMismatchError,
    DtypeError,
    PluginRegistrationError,
    ShapeError,
)
from plugrad.hookspecs import hookimpl
from plugrad.opdef import op
from plugrad.testing import backends_under_test

# These tests are about op machinery; they pin the default device to numpy.
pytestmark = pytest.mark.usefixtures("on_numpy")


@pytest.fixture
def plugin():
    """Register ops as a plugin for one test and always unregister it afterwards."""
    names: list[str] = []

    def register(*ops) -> types.SimpleNamespace:
        @hookimpl
        def plugrad_ops():
            return list(ops)

        name = f"mechanisms_{len(names)}"
        names.append(registry.register_plugin(types.SimpleNamespace(plugrad_ops=plugrad_ops), name))
        return plugrad.ops

    yield register
    for name in names:
        registry.unregister_plugin(name)


def test_dtype_params_reach_the_kernel_as_backend_dtypes(plugin) -> None:
    seen = []

    def kernel(xp, x, /, *, dtype=None):
        seen.append(dtype)
        return x * 2 if dtype is None else xp.astype(x * 2, dtype)

    twice = op("twice_as_test", kernel, saves=()).vjp(
        lambda xp, g, ans, x, *, dtype: xp.astype(g * 2, x.dtype)
    )
    ops = plugin(twice)
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    y = ops.twice_as_test(x, dtype=plugrad.float64)
    assert seen[-1] is np.float64 or seen[-1] == np.dtype("float64")
    assert y.dtype == plugrad.float64
    y.sum().backward(create_graph=True)
    assert x.grad.dtype == plugrad.float32 and x.grad.tolist() == [2.0, 2.0]
    ops.twice_as_test(x)
    assert seen[-1] is None
    with pytest.raises(DtypeError, match=r"twice_as_test.*dtype='float64'.*plugrad\.float32"):
        ops.twice_as_test(x, dtype="float64")


def test_array_params_unwrap_tensors_and_check_devices(plugin) -> None:
    pick = op(
        "pick_test",
        lambda xp, x, /, *, key: x[key],
        array_params=("key",),
        saves=(),
    ).vjp(lambda xp, g, ans, x, *, key: xp.scatter_add(g, key=key, shape=x.shape))
    ops = plugin(pick)
    x = plugrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    ops.pick_test(x, key=(plugrad.tensor([2, 2]),)).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 2.0]

    fake = plugrad.tensor([0])
    fake._device = types.SimpleNamespace(name="other")  # a tensor on another device
    with pytest.raises(DeviceMismatchError, match=r"pick_test.*key.*'other'"):
        ops.pick_test(x, key=(fake,))


def test_several_outputs_get_their_own_edges_and_zero_gradients(plugin) -> None:
    calls = []

    def rule(xp, g, ans, x):
        calls.append(g)
        return g[0] * 2 + g[1] * 3

    split = op(
        "split_test",
        lambda xp, x, /: (x * 2, x * 3, xp.astype(x > 0, xp.int64)),
        output_names=("double", "triple", "positive"),
        saves=(),
    ).vjp(rule)
    ops = plugin(split)
    x = plugrad.tensor([1.0, -1.0], requires_grad=True)
    result = ops.split_test(x)
    assert result._fields == ("double", "triple", "positive")
    assert result.double.grad_fn is result.triple.grad_fn
    assert result.double.grad_fn.next_functions[0][0].variable is x
    assert not result.positive.requires_grad  # an integer output never requires grad
    result.triple.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]
    assert calls[-1][0].tolist() == [0.0, 0.0]  # the unused output's gradient: zeros
    assert len(calls[-1]) == 3


def test_variadic_inputs_each_get_an_edge(plugin) -> None:
    total = op(
        "total_test",
        lambda xp, *arrays, scale=1.0: sum(arrays[1:], arrays[0]) * scale,
        saves=(),
    ).vjp(lambda xp, g, ans, arrays, *, scale: [g * scale] * len(arrays))
    ops = plugin(total)
    a = plugrad.tensor([1.0], requires_grad=True)
    b = plugrad.tensor([2.0])
    c = plugrad.tensor([3.0], requires_grad=True)
    out = ops.total_test(a, b, c, scale=2.0)
    assert out.tolist() == [12.0] and len(out.grad_fn.next_functions) == 3
    out.backward()
    assert a.grad.tolist() == [2.0] and c.grad.tolist() == [2.0] and b.grad is None


def test_a_sequence_rule_must_return_one_gradient_per_array(plugin) -> None:
    bad = op("bad_sequence_test", lambda xp, arrays, /: arrays[0], sequence=True, saves=()).vjp(
        lambda xp, g, ans, arrays: [g]
    )
    ops = plugin(bad)
    a = plugrad.tensor([1.0], requires_grad=True)
    with pytest.raises(TypeError, match="1 gradients for a sequence of 2"):
        ops.bad_sequence_test([a, a]).backward()


def test_optional_inputs_may_be_none_or_tensors(plugin) -> None:
    shift = op(
        "shift_test",
        lambda xp, x, /, by=None: x if by is None else x + by,
        inputs=("x", "by"),
        broadcasting=True,
        saves=(),
    ).vjp(lambda xp, g, ans, x, by: g, lambda xp, g, ans, x, by: g)
    ops = plugin(shift)
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    by = plugrad.tensor(1.0, requires_grad=True)
    assert ops.shift_test(x).tolist() == [1.0, 2.0]
    ops.shift_test(x, by=by).sum().backward()
    assert by.grad.item() == 2.0 and x.grad.tolist() == [1.0, 1.0]


def test_hooks_and_retain_grad_on_one_output_of_several() -> None:
    x = plugrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    a, b = plugrad.unstack(x)
    seen = []
    b.register_hook(lambda g: seen.append(g.tolist()) or g * 10)
    a.retain_grad()
    (a.sum() + b.sum()).backward()
    assert seen == [[1.0, 1.0]]
    assert a.grad.tolist() == [1.0, 1.0]
    assert x.grad.tolist() == [[1.0, 1.0], [10.0, 10.0]]


@pytest.mark.parametrize("create_graph", [False, True])
def test_an_op_of_several_outputs_that_gives_one_backpropagates(create_graph) -> None:
    x = plugrad.tensor([[1.0, 2.0]], requires_grad=True)
    (row,) = plugrad.unstack(x)
    (g,) = plugrad.autograd.grad((row * row).sum(), x, create_graph=create_graph)
    assert g.tolist() == [[2.0, 4.0]] and g.requires_grad is create_graph


def test_a_node_keeps_the_inputs_the_running_rules_read(plugin) -> None:
    def first_rule(xp, g, ans, x1, x2):
        return g / x2

    def second_rule(xp, g, ans, x1, x2):
        return -g * ans / x2

    ratio = op("ratio_as_test", lambda xp, x1, x2, /: x1 / x2).vjp(first_rule, second_rule)
    ops = plugin(ratio)
    assert registry.find_op("ratio_as_test").keeps == (
        ((False, False), False),  # no gradient wanted: nothing kept
        ((False, True), False),  # x1's rule reads x2
        ((False, True), True),  # x2's rule reads ans and x2
        ((False, True), True),
    )
    x1 = plugrad.tensor([6.0], requires_grad=True)
    x2 = plugrad.tensor([2.0], requires_grad=True)
    ops.ratio_as_test(x1, x2).backward()
    assert x1.grad.tolist() == [0.5] and x2.grad.tolist() == [-1.5]


def test_rules_that_cannot_be_read_keep_everything_declared(plugin) -> None:
    import functools

    def rule(xp, g, ans, x1, x2, scale):
        return g * scale

    opaque = [functools.partial(rule, scale=1.0), lambda *args: args[1] * 1.0]
    times = op("opaque_as_test", lambda xp, x1, x2, /: x1 * x2, saves=("x1",)).vjp(*opaque)
    plugin(times)
    assert all(
        entry == ((True, False), False) for entry in registry.find_op("opaque_as_test").keeps[1:]
    )


def test_a_kernel_shape_error_names_the_op_the_shapes_and_the_layer() -> None:
    with pytest.raises(ShapeError, match=r"add\(\): .* shapes \(2, 3\), \(4,\): .*broadcast"):
        plugrad.ones((2, 3)) + plugrad.ones((4,))
    with pytest.raises(ShapeError, match=r"matmul\(\): .* shapes \(2, 3\), \(4,\)"):
        plugrad.matmul(plugrad.ones((2, 3)), plugrad.ones((4,)))
    with pytest.raises(ShapeError, match=r"concat\(\): .*\(2, 3\), \(2, 4\)"):
        plugrad.concat([plugrad.ones((2, 3)), plugrad.ones((2, 4))], axis=0)
    model = plugrad.nn.Sequential(plugrad.nn.Linear(3, 2), plugrad.nn.ReLU())
    with pytest.raises(ShapeError, match=r"^in the layer Linear\(in_features=3, .*linear\(\)"):
        model(plugrad.ones((5, 4)))
    with pytest.raises(ValueError):  # what code that caught the backend's error still catches
        plugrad.ones((2, 3)) * plugrad.ones((3, 2))


def test_a_kernel_refusing_a_dtype_names_the_op_and_the_dtypes() -> None:
    if "array_api_strict" not in plugrad.backends.available():
        pytest.skip("array-api-strict is not installed (it refuses float inputs of bitwise_invert)")
    values = plugrad.asarray([1.5, 2.0], device="array_api_strict")
    with pytest.raises(DtypeError, match=r"^bitwise_invert\(\): .* dtype float32 .*cast first"):
        plugrad.bitwise_invert(values)
    with pytest.raises(TypeError):  # what code that caught the backend's error still catches
        plugrad.bitwise_invert(values)
    assert values.tolist() == [1.5, 2.0]


@pytest.mark.parametrize(
    "call",
    [
        lambda x: plugrad.expand_dims(x, axis=3),
        lambda x: plugrad.expand_dims(x, axis=-4),
        lambda x: plugrad.sum(x, axis=2),
        lambda x: plugrad.flip(x, axis=-3),
    ],
)
def test_an_axis_out_of_range_is_an_axis_error_both_index_and_shape_error(backend, call) -> None:
    x = plugrad.zeros((2, 3))
    with pytest.raises(AxisError, match="out of bounds") as caught:
        call(x)
    # The Array API asks for an IndexError; plugrad's shape errors are ValueErrors.
    assert isinstance(caught.value, IndexError) and isinstance(caught.value, ShapeError)


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize(
    "mismatch",
    [lambda p: p.ones(3) + p.ones(4), lambda p: p.ones((2, 3)) @ p.ones((2, 3)),
     lambda p: p.concat([p.ones((2, 3)), p.ones((2, 4))]),
     lambda p: p.reshape(p.ones(6), (4, 2)), lambda p: p.stack([p.ones(2), p.ones(3)])],
)  # fmt: skip
def test_a_shape_mismatch_is_a_shape_error_on_every_backend(backend: str, mismatch) -> None:
    # PyTorch's kernels raise RuntimeError for these and JAX's TypeError, which came through
    # as they were: `except ShapeError` caught them on NumPy only.
    with plugrad.use_backend(backend), pytest.raises(ShapeError, match="cannot take inputs"):
        mismatch(plugrad)


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize(
    "call",
    [lambda x: x.sum((0, 0)), lambda x: plugrad.sum(x, axis=(1, -2)), lambda x: x.mean((0, 0)),
     lambda x: x.var((0, 0)), lambda x: plugrad.amax(x, dim=(0, 0)),
     lambda x: plugrad.count_nonzero(x, (0, 0)), lambda x: plugrad.flip(x, (0, 0)),
     lambda x: plugrad.squeeze(plugrad.ones((1, 1, 4)), (0, 0)),
     lambda x: plugrad.movedim(x, [0, 1], [0, 0]), lambda x: plugrad.movedim(x, [0, 0], [0, 1]),
     lambda x: x.permute(0, 0, 1)],
)  # fmt: skip
def test_an_axis_named_twice_is_a_shape_error_on_every_backend(backend: str, call) -> None:
    # Dask reduced, flipped or squeezed over it once, JAX's movedim gave shape (3, 2, 4), and
    # PyTorch's and JAX's kernels raised their own RuntimeError and TypeError.
    with plugrad.use_backend(backend), pytest.raises(ShapeError):
        call(plugrad.ones((2, 3, 4)))


@pytest.mark.parametrize(
    ("vjp", "message"),
    [
        (42, "got int 42"),
        ("g * 2", "got str 'g \\* 2'"),  # read as five rules, one per character
        ((lambda xp, g, ans, x: g, 3), "each rule of vjp= is a function or None, got int 3"),
    ],
)
def test_a_vjp_that_is_no_rule_is_refused_with_what_to_give(vjp, message) -> None:
    with pytest.raises(PluginRegistrationError, match=message):
        op("testing_bad_vjp", lambda xp, x, /: x * 2, vjp=vjp)


@pytest.mark.parametrize("raised", [KeyError("no such entry"), ValueError("bad value")])
def test_errors_of_a_third_party_kernel_and_rule_name_them_and_keep_their_type(
    plugin, raised
) -> None:
    def kernel(xp, x1, x2, /):
        if float(xp.sum(x1)) < 0:
            raise raised
        return x1 * x2

    def rule(xp, g, ans, x1, x2):
        raise ZeroDivisionError("rule failed")

    ops = plugin(
        op("fails_as_test", kernel).vjp(rule, lambda xp, g, ans, x1, x2: g * x1),
        op("fails_one_as_test", lambda xp, x, /: {}[0], differentiable=False),
    )
    x = plugrad.tensor([-3.0, 2.0], requires_grad=True)
    with pytest.raises(type(raised)) as caught:
        ops.fails_as_test(x, x)
    assert caught.value is raised  # the plugin's own error, as it raised it
    assert caught.value.__notes__ == [
        "plugrad: raised by plugin 'mechanisms_0', op 'fails_as_test': its generic kernel "
        f"{__name__}.{kernel.__qualname__} for numpy"
    ]
    with pytest.raises(KeyError) as caught:
        ops.fails_one_as_test(x)
    assert "op 'fails_one_as_test'" in caught.value.__notes__[0]
    y = ops.fails_as_test(x.abs(), x)
    with pytest.raises(ZeroDivisionError) as caught:
        y.sum().backward()
    (note,) = caught.value.__notes__
    assert note.startswith("plugrad: raised by plugin 'mechanisms_0', op 'fails_as_test': ")
    assert "'x1'" in note and x.grad is None
    # plugrad's own kernels and rules add nothing to the errors of theirs that pass through.
    with pytest.raises(Exception) as caught:
        plugrad.ones((2, 3)) @ plugrad.ones((2, 3))
    assert not hasattr(caught.value, "__notes__")
