"""plugrad.compile: capture, replay bit-identical to eager, guards, graph breaks, training."""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable

import numpy as np
import pytest
from classifier_training import (
    classification_batch,
    classifier_and_optimizer,
    training_step,
    trajectory,
)
from functions import Cube

import plugrad
from plugrad.errors import CompileError, CompileWarning, GraphBreakError, IndexOutOfRangeError

# Capture and the engine's callbacks are machinery: tested on NumPy (the strict backend
# is covered by its own test where it matters).
pytestmark = pytest.mark.usefixtures("on_numpy")
AVAILABLE = plugrad.backends.available()


def _same(a, b) -> None:
    """Bit-identical values (NaNs equal), same shape and dtype."""
    a = np.asarray(a.detach().numpy() if isinstance(a, plugrad.Tensor) else a)
    b = np.asarray(b.detach().numpy() if isinstance(b, plugrad.Tensor) else b)
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_array_equal(a, b)


def _leaves(seed: int = 0):
    rng = np.random.default_rng(seed)
    x = plugrad.tensor(rng.uniform(-1, 1, 5), requires_grad=True)
    w = plugrad.tensor(rng.uniform(-1, 1, 5), requires_grad=True)
    return x, w


def _step(x, w):
    x.grad = None
    w.grad = None
    loss = ((x * w + 1.0) * x).exp().sum()
    loss.backward()
    return loss


# -- capture and replay -------------------------------------------------------------------


def test_forward_replay_is_bit_identical_and_reads_new_argument_values():
    def f(a, b, d, c):
        return a * b + plugrad.log(d) * c

    compiled = plugrad.compile(f)
    rng = np.random.default_rng(1)
    for _ in range(3):
        args = [plugrad.tensor(rng.uniform(0.5, 2, (3, 4)).astype(np.float32)) for _ in range(4)]
        _same(compiled(*args), f(*args))
    assert compiled.captures == 1


def test_forward_backward_replay_matches_eager_values_and_grads():
    x, w = _leaves()
    x2, w2 = _leaves()
    compiled = plugrad.compile(_step)
    for _ in range(3):
        expected = _step(x, w)
        got = compiled(x2, w2)
        _same(got, expected)
        _same(x2.grad, x.grad)
        _same(w2.grad, w.grad)
    assert compiled.captures == 1
    # The graph a backward inside consumed is not kept: the grad_fn is spent, as eagerly.
    assert got.requires_grad is expected.requires_grad
    assert got.grad_fn.name() == expected.grad_fn.name()
    with pytest.raises(plugrad.errors.GraphFreedError):
        got.backward()


def test_gradients_accumulate_into_existing_grad_like_eager():
    def accumulate(x, w):
        ((x * w).sum()).backward()

    x, w = _leaves()
    x2, w2 = _leaves()
    compiled = plugrad.compile(accumulate)
    for _ in range(4):
        accumulate(x, w)
        compiled(x2, w2)
        _same(x2.grad, x.grad)
    # .grad None at the first call, a tensor afterwards: two plans, both replayed.
    assert compiled.captures == 2


def test_manual_sgd_under_no_grad_updates_parameters_in_place():
    w = plugrad.tensor([1.0, -2.0, 0.5], requires_grad=True)
    w2 = plugrad.tensor([1.0, -2.0, 0.5], requires_grad=True)
    memory = w2.array

    def make_step(param):
        def step(x):
            param.grad = None
            loss = (param * x).sum() ** 2
            loss.backward()
            with plugrad.no_grad():
                update = param
                update -= 0.1 * param.grad
            return loss

        return step

    eager, compiled = make_step(w), plugrad.compile(make_step(w2))
    x = plugrad.tensor([0.3, 0.2, -0.1])
    for _ in range(5):
        _same(compiled(x), eager(x))
        _same(w2, w)
    assert w2.array is memory  # updated in place, as eager does
    assert compiled.captures == 1


def test_generated_source_is_straight_line_code_over_the_namespace():
    def f(a, b, d, c):
        return a * b + plugrad.log(d) * c

    args = [plugrad.tensor([1.0, 2.0]) for _ in range(4)]
    source = plugrad.compile(f).code(*args)
    assert source.startswith("def replay(L, F):")
    assert "xp.multiply(" in source and "xp.log(" in source and "xp.add(" in source
    body = source.split("return MISS\n", 1)[-1]  # after the guards
    for word in ("for ", "while ", "if ", "Tensor(", "apply"):
        assert word not in body


def test_dead_code_elimination_drops_values_nothing_needs():
    def step(x, w):
        w.grad = None
        plugrad.exp(x)  # computed, never used
        (x * w).sum().backward()

    x = plugrad.tensor([1.0, 2.0])
    w = plugrad.tensor([3.0, 4.0], requires_grad=True)
    optimized = plugrad.compile(step).code(x, w)
    plain = plugrad.compile(step, optimize=False).code(x, w)
    assert "xp.exp(" in plain and "xp.exp(" not in optimized
    # The loss is not returned: only what w.grad needs is left.
    assert "xp.multiply(" in plain and "xp.multiply(" not in optimized
    assert "L[1]._grad = " in optimized


def test_backward_seed_is_folded_and_never_shared_with_a_grad():
    def step(x):
        x.grad = None
        loss = (x * x).sum()
        loss.backward()
        return loss

    x = plugrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    compiled = plugrad.compile(step)
    source = compiled.code(x)
    # ones_like(loss) is folded, and the first rule's product with it (1 * x) dropped.
    assert "ones_like" not in source and "folded_" not in source
    assert source.count("xp.multiply(") + source.count(" * ") == 1  # x * x; the grad is x + x
    compiled(x)
    first = x.grad
    compiled(x)
    assert first.array is not x.grad.array
    _same(first, x.grad)
    _same(x.grad, 2 * x.detach())
    # .grad of a sum is the seed broadcast: it escapes into .grad, so it is never folded.
    plain_sum = plugrad.compile(lambda t: t.sum().backward())
    t = plugrad.tensor([1.0, 2.0], requires_grad=True)
    plain_sum(t)
    grad = t.grad
    t.grad = None
    plain_sum(t)
    assert grad.array is not t.grad.array
    _same(t.grad, plugrad.ones(2))


def test_each_value_is_released_after_its_last_use():
    def f(a):
        return plugrad.exp(plugrad.exp(a) + 1.0).sum()

    source = plugrad.compile(f).code(plugrad.ones(3))
    lines = [line.strip() for line in source.splitlines()]
    exp_line = next(i for i, line in enumerate(lines) if "xp.exp(v" in line)
    first = lines[exp_line].split(" = ")[0]
    released = [i for i, line in enumerate(lines) if line.startswith("del ") and first in line]
    # exp(a) + 1.0 and the outer exp write into exp(a)'s array (out=): its names all go
    # after the sum, the last line that reads that array.
    sum_line = next(i for i, line in enumerate(lines) if "xp.sum(" in line)
    add_line = next(i for i, line in enumerate(lines) if line.startswith("v") and "xp.add(" in line)
    assert f"out={first}" in lines[add_line]
    alias = lines[add_line].split(" = ")[0]
    assert released == [sum_line + 1]  # dropped right after its last reader, once
    assert lines[sum_line + 1] == f"del {first}, {alias}"


def test_no_name_is_deleted_whose_array_lives_on():
    # A tensor's array, an array stored in a .grad and a returned one stay alive after the
    # replay's name for them goes: deleting the name would free nothing.
    w = plugrad.tensor([1.0, 2.0], requires_grad=True)

    def step(x):
        loss = (w * x).sum()
        loss.backward()
        with plugrad.no_grad():
            w.sub_(0.1 * w.grad)
        return loss

    x = plugrad.tensor([3.0, 4.0])
    source = plugrad.compile(step).code(x)
    loads = [line.split(" = ")[0].strip() for line in source.splitlines() if "._array" in line]
    deleted = {
        name.strip()
        for line in source.splitlines()
        if line.strip().startswith("del ")
        for name in line.strip()[4:].split(",")
    }
    assert loads and not deleted & set(loads)
    stored = re.findall(r"_wrap\((v\d+), c\d+, False, None\)", source)
    assert stored and not deleted & set(stored)


def test_a_value_only_the_next_statement_reads_is_computed_inside_it():
    def f(a, w):
        return plugrad.sum(plugrad.exp(a) * w, axis=0)

    a, w = plugrad.ones((3, 2)), plugrad.tensor([2.0, 3.0])
    source = plugrad.compile(f, optimize=False).code(a, w)
    # The product is computed inside the sum's call: no name, no ``del`` for it.
    assert "= xp.sum(xp.multiply(" in source, source
    # (one ``del``: exp's array; the arguments' arrays live on in the caller's tensors)
    assert source.count(" = xp.") == 2 and source.count("del ") == 1, source
    _same(plugrad.compile(f)(a, w), f(a, w))


# -- guards and re-capture ----------------------------------------------------------------


def test_new_shape_dtype_or_grad_mode_captures_a_new_plan():
    compiled = plugrad.compile(lambda a: a * 2.0 + 1.0)
    compiled(plugrad.ones(3))
    compiled(plugrad.ones(3))
    assert compiled.captures == 1
    _same(compiled(plugrad.ones(4)), plugrad.ones(4) * 2.0 + 1.0)
    assert compiled.captures == 2
    _same(
        compiled(plugrad.ones(3, dtype=plugrad.float64)),
        plugrad.ones(3, dtype=plugrad.float64) * 2.0 + 1.0,
    )
    assert compiled.captures == 3
    with plugrad.no_grad():
        compiled(plugrad.ones(3))
    assert compiled.captures == 4


def test_non_tensor_arguments_are_part_of_the_signature_by_value():
    compiled = plugrad.compile(lambda a, k: a * k)
    x = plugrad.ones(2)
    _same(compiled(x, 2.0), x * 2.0)
    _same(compiled(x, 3.0), x * 3.0)
    _same(compiled(x, 3.0), x * 3.0)
    assert compiled.captures == 2


@pytest.mark.parametrize("where", ["positional", "keyword", "in a list"])
def test_the_class_of_a_tensor_argument_is_part_of_the_signature(where):
    # A function may branch on it (isinstance(x, nn.Parameter)): a plan captured for a
    # plain tensor must not replay for a Parameter of the same shape, and back.
    def scale(x):
        return x * 2 if isinstance(x, plugrad.nn.Parameter) else x * 3

    calls = {
        "positional": lambda f, x: f(x),
        "keyword": lambda f, x: f(x=x),
        "in a list": lambda f, x: f([x]),
    }[where]
    function = (lambda xs: scale(xs[0])) if where == "in a list" else scale
    compiled = plugrad.compile(function)
    plain = plugrad.ones(3)
    parameter = plugrad.nn.Parameter(plugrad.ones(3), requires_grad=False)
    for x in (plain, parameter, plain, parameter):
        _same(calls(compiled, x), calls(function, x))
    assert compiled.captures == 2


def test_unhashable_argument_is_a_typed_error():
    compiled = plugrad.compile(lambda a, k: a)
    with pytest.raises(CompileError, match=r"argument 1 .* set"):
        compiled(plugrad.ones(2), {1, 2})


def test_parameter_replaced_by_another_shape_recaptures_never_a_wrong_result():
    layer = plugrad.nn.Linear(3, 2)
    compiled = plugrad.compile(lambda x: layer(x))
    x = plugrad.ones((4, 3))
    with plugrad.no_grad():
        compiled(x)
        layer.weight.data = plugrad.ones((2, 3)) * 0.5
        _same(compiled(x), layer(x))  # same shape, new values: read at replay
        assert compiled.captures == 1
        layer.weight.data = plugrad.ones((5, 3))
        layer.bias.data = plugrad.zeros(5)
        _same(compiled(x), layer(x))
        assert compiled.captures == 2


@pytest.mark.parametrize(
    "change",
    [
        lambda t: setattr(t, "data", plugrad.ones(3, dtype=plugrad.float64)),
        lambda t: t.requires_grad_(False),
    ],
    ids=["dtype", "requires_grad"],
)
def test_free_tensor_with_new_dtype_or_requires_grad_recaptures(change):
    # The first free tensor only has its .grad set: the guard on arrays covers the others.
    unread = plugrad.ones(3, requires_grad=True)
    scale = plugrad.tensor([1.0, 2.0, 3.0], requires_grad=True)

    def f(x):
        unread.grad = None
        with plugrad.no_grad():
            return x * scale

    compiled = plugrad.compile(f)
    x = plugrad.ones(3)
    compiled(x)
    change(scale)
    _same(compiled(x), f(x))
    assert compiled.captures == 2


def test_cache_is_bounded_least_recently_used_first():
    compiled = plugrad.compile(lambda a: a + 1.0, cache_size=2)
    for n in (1, 2, 3):
        compiled(plugrad.ones(n))
    assert compiled.cache_len == 2
    compiled(plugrad.ones(3))
    assert compiled.captures == 3
    with pytest.warns(CompileWarning, match="captured again an input signature its cache had"):
        compiled(plugrad.ones(1))  # evicted: captured again, said once
    assert compiled.captures == 4
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled(plugrad.ones(2))
    assert compiled.captures == 5


def test_not_callable_is_a_type_error():
    with pytest.raises(TypeError, match="needs a callable"):
        plugrad.compile(3)


@pytest.mark.parametrize("option", ["fullgraph", "optimize", "device_graph"])
def test_an_option_that_is_not_a_bool_is_a_type_error_in_both_forms(option):
    # "no" would read as True
    with pytest.raises(TypeError, match=option):
        plugrad.compile(lambda x: x, **{option: "no"})
    with pytest.raises(TypeError, match=option):
        plugrad.compile(**{option: 1})


@pytest.mark.parametrize("cache_size", [0, 2.0, True])
def test_a_cache_size_that_is_not_a_positive_int_is_refused_in_both_forms(cache_size):
    with pytest.raises(ValueError, match="cache_size"):
        plugrad.compile(lambda x: x, cache_size=cache_size)
    with pytest.raises(ValueError, match="cache_size"):
        plugrad.compile(cache_size=cache_size)


# -- graph breaks -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "read, reason",
    [
        (lambda y: y.sum().item(), r"\.item\(\)"),
        (lambda y: bool(y.sum() > 0), r"bool\(\)"),
        (lambda y: float(y.sum()), r"float\(\)"),
        (lambda y: y.detach().numpy(), r"\.numpy\(\)"),
        (lambda y: y.array, r"\.array"),
    ],
    ids=["item", "bool", "float", "numpy", "array"],
)
def test_value_reads_fall_back_to_eager_with_one_warning(read, reason):
    calls = []

    def f(x):
        y = x * 2.0
        calls.append(read(y))
        return y + 1.0

    compiled = plugrad.compile(f)
    x = plugrad.tensor([1.0, 2.0])
    with pytest.warns(CompileWarning, match=reason + r".*test_compile\.py:\d+"):
        _same(compiled(x), x * 2.0 + 1.0)
    _same(compiled(x), x * 2.0 + 1.0)  # eager again, no second warning (filterwarnings=error)
    assert len(calls) == 2  # the Python code ran both times: eager


def test_fullgraph_raises_a_typed_error_naming_the_reason():
    compiled = plugrad.compile(lambda x: x * x.sum().item(), fullgraph=True)
    with pytest.raises(GraphBreakError, match=r"\.item\(\)"):
        compiled(plugrad.tensor([1.0, 2.0]))


def test_fullgraph_raises_even_where_the_break_was_caught():
    # The function's own try (or NumPy retrying a conversion) caught the GraphBreakError: the
    # first call returned what it computed with its fallback value ([1., 2.], not [3., 6.]).
    def caught(x):
        try:
            s = x.sum().item()
        except RuntimeError:
            s = 1.0
        return x * s

    for function in (caught, lambda x: x * np.float64(x.sum())):
        compiled = plugrad.compile(function, fullgraph=True)
        for _ in range(2):
            with pytest.raises(GraphBreakError, match="caught the GraphBreakError"):
                compiled(plugrad.tensor([1.0, 2.0]))


@pytest.mark.parametrize(
    ("register", "match"),
    [
        (lambda y: y.register_hook(lambda g: g * 3.0), "hook"),
        (lambda y: y.grad_fn.register_prehook(lambda grads: (grads[0] * 3.0,)), "grad_fn hook"),
    ],
    ids=["tensor hook", "grad_fn hook"],
)
def test_a_hook_is_a_graph_break(register: Callable[[plugrad.Tensor], object], match: str) -> None:
    def f(x):
        y = x * 2.0
        register(y)
        y.sum().backward()

    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(CompileWarning, match=match):
        plugrad.compile(f)(x)
    _same(x.grad, plugrad.tensor([6.0, 6.0]))


def test_saving_and_restoring_a_generator_state_is_a_graph_break():
    # A replay would draw on where the eager call restored the stream: x and y would differ.
    def f():
        state = plugrad.get_rng_state()
        x = plugrad.rand(3)
        plugrad.set_rng_state(state)
        return x, plugrad.rand(3)

    compiled = plugrad.compile(f)
    with pytest.warns(CompileWarning, match="generator's state"):
        x, y = compiled()
    _same(x, y)
    for _ in range(2):  # eager from now on, as the warning said
        x, y = compiled()
        _same(x, y)


def test_a_replayed_write_through_a_view_made_inside_counts_on_the_tensor_viewed():
    # A replay made no view and counted nothing: backward then used the changed values
    # (a wrong gradient) where eager raises.
    def f(y):
        with plugrad.no_grad():
            y[1:].mul_(2.0)
            y.unsqueeze(0)[0, :1].add_(1.0)

    compiled = plugrad.compile(f)
    for _ in range(4):
        w = plugrad.ones(3, requires_grad=True)
        y = w.exp()  # saves its output, which f changes through views
        compiled(y.detach())
        _same(y.detach(), plugrad.exp(plugrad.ones(3)) * plugrad.tensor([1.0, 2.0, 2.0]) +
              plugrad.tensor([1.0, 0.0, 0.0]))  # fmt: skip
        with pytest.raises(plugrad.errors.InPlaceModificationError):
            y.sum().backward()
    assert compiled.captures == 1


def test_a_hook_registered_after_the_capture_is_not_skipped_by_replays():
    # The guards saw parameters, buffers and submodules, not hooks: replays ran without them.
    w = plugrad.ones(3, requires_grad=True)

    def step(x):
        (w * x).sum().backward()

    compiled = plugrad.compile(step)
    compiled(plugrad.ones(3))
    compiled(plugrad.ones(3))
    w.grad = None
    handle = w.register_hook(lambda g: g * 10.0)
    with pytest.warns(CompileWarning, match="hook"):
        compiled(plugrad.ones(3))
    _same(w.grad, plugrad.full((3,), 10.0))
    handle.remove()
    layer = plugrad.nn.Linear(2, 2)

    def forward(x):
        with plugrad.no_grad():
            return layer(x)

    compiled = plugrad.compile(forward)
    compiled(plugrad.ones(1, 2))
    compiled(plugrad.ones(1, 2))
    handle = layer.register_forward_hook(lambda module, args, out: out * 0.0)
    with pytest.warns(CompileWarning, match="hook"):
        _same(compiled(plugrad.ones(1, 2)), plugrad.zeros(1, 2))
    handle.remove()
    fresh = plugrad.compile(forward)  # (the signature above runs eagerly from now on)
    fresh(plugrad.ones(1, 2))
    unrelated = plugrad.ones(2, requires_grad=True)
    unrelated.register_hook(lambda g: g)  # looked for on this plan's tensors: none, no capture
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        _same(fresh(plugrad.ones(1, 2)), forward(plugrad.ones(1, 2)))
    assert fresh.captures == 1


@pytest.mark.parametrize("backend", [b for b in ("numpy", "jax", "dask") if b in AVAILABLE])
def test_arguments_sharing_memory_or_not_replay_as_eager_calls(backend):
    # On JAX and Dask a plan replayed the capture's sharing: b was overwritten with a's
    # values for separate tensors, and not updated for overlapping views.
    def f(a, b):
        a.add_(1.0)
        return a + b

    compiled = plugrad.compile(f)
    with plugrad.use_backend(backend), warnings.catch_warnings():
        warnings.simplefilter("ignore", CompileWarning)  # (eager on JAX and Dask: documented)
        bases = []  # (on JAX and Dask a view follows its base only while the base exists)

        def views(base):
            bases.append(base)
            return base[1:], base[:3]

        for make in (
            lambda: (lambda t: (t, t.detach()))(plugrad.zeros(3)),
            lambda: (plugrad.zeros(3), plugrad.full((3,), 5.0)),
            lambda: views(plugrad.zeros(4)),
            lambda: (plugrad.zeros(3), plugrad.full((3,), 5.0)),
        ):
            eager_args, compiled_args = make(), make()
            expected = f(*eager_args)
            _same(compiled(*compiled_args), expected)
            _same(compiled_args[1], eager_args[1])


def test_one_hot_with_a_number_of_classes_is_captured_and_checks_every_replay():
    # Its range check read the values (.tolist()): a graph break, every call eager.
    compiled = plugrad.compile(lambda i: plugrad.nn.functional.one_hot(i, 5) * 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        for _ in range(3):
            _same(compiled(plugrad.tensor([0, 4, 2])), plugrad.nn.functional.one_hot(
                plugrad.tensor([0, 4, 2]), 5) * 2)  # fmt: skip
        with pytest.raises(IndexOutOfRangeError, match=r"outside \[0, 5\)"):
            compiled(plugrad.tensor([0, 5, 2]))
    assert compiled.captures == 1


def test_a_returned_loss_requires_grad_after_the_backward_in_the_call_as_eagerly():
    # Replays returned it with requires_grad False (the capture and eager calls: True).
    w = plugrad.ones(3, requires_grad=True)

    def step(x):
        loss = (w * x).sum()
        loss.backward()
        return loss

    compiled = plugrad.compile(step)
    name = step(plugrad.ones(3)).grad_fn.name()
    for _ in range(3):
        w.grad = None
        loss = compiled(plugrad.ones(3))
        assert loss.requires_grad and loss.grad_fn.name() == name
        with pytest.raises(plugrad.errors.GraphFreedError):
            loss.backward()
    assert compiled.captures == 1


def test_gradient_ready_callback_is_a_graph_break():
    # DistributedDataParallel averages gradients from such a callback: a replay without it
    # would train each process on its own gradients, silently.
    w = plugrad.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    handle = plugrad.engine.watch_gradient_ready(w, lambda leaf, grad: seen.append(grad))

    def step(x):
        (w * x).sum().backward()

    try:
        x = plugrad.tensor([3.0, 4.0])
        compiled = plugrad.compile(step)
        with pytest.warns(CompileWarning, match="gradient-ready callback"):
            compiled(x)
        compiled(x)
        assert len(seen) == 2  # ran eagerly both times
        _same(w.grad, plugrad.tensor([6.0, 8.0]))
        w.grad = None
        with pytest.raises(GraphBreakError, match="gradient-ready callback"):
            plugrad.compile(step, fullgraph=True)(x)
    finally:
        handle.remove()


def test_graph_break_leaves_no_traced_arrays_behind():
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)

    def f(x):
        y = (x * x).sum()
        y.backward()
        return y.item()

    with pytest.warns(CompileWarning):
        assert plugrad.compile(f)(x) == 5.0
    assert type(x.array) is np.ndarray and type(x.grad.array) is np.ndarray
    assert type((x * 1.0).array) is np.ndarray


def test_random_ops_draw_fresh_numbers_at_every_replay():
    compiled = plugrad.compile(lambda x: x + plugrad.randn(3))
    x = plugrad.zeros(3)
    draws = [compiled(x).detach().numpy().copy() for _ in range(3)]
    assert compiled.captures == 1
    assert not np.array_equal(draws[1], draws[2])
    # The same stream as eager: seeded, compiled draws repeat eager draws.
    plugrad.manual_seed(7)
    eager = [(x + plugrad.randn(3)).detach().numpy().copy() for _ in range(3)]
    plugrad.manual_seed(7)
    compiled = plugrad.compile(lambda x: x + plugrad.randn(3))
    for expected in eager:
        _same(compiled(x), expected)


def test_dropout_mask_changes_between_replays():
    drop = plugrad.nn.Dropout(0.5)
    compiled = plugrad.compile(lambda x: drop(x))
    x = plugrad.ones(64)
    masks = {tuple(compiled(x).detach().numpy() > 0) for _ in range(4)}
    assert len(masks) > 1


# -- training -----------------------------------------------------------------------------


class _PlainSGD(plugrad.optim.Optimizer):
    """An optimizer written as one ``_step_group``: its step is a call the plan repeats."""

    def __init__(self, params, lr):
        super().__init__(params, {"lr": lr})

    def _step_group(self, group):
        for param in group["params"]:
            if param.grad is not None:
                param.array[...] = param.array - group["lr"] * param.grad.array


_OPTIMIZERS = {
    "SGD": lambda p: plugrad.optim.SGD(p, lr=0.1),
    "SGD-momentum-decay": lambda p: plugrad.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01),
    "SGD-nesterov": lambda p: plugrad.optim.SGD(p, lr=0.1, momentum=0.8, nesterov=True),
    "SGD-dampening-maximize": lambda p: plugrad.optim.SGD(
        p, lr=0.05, momentum=0.5, dampening=0.3, maximize=True
    ),
    "Adam": lambda p: plugrad.optim.Adam(p, lr=0.01),
    "Adam-amsgrad-decay": lambda p: plugrad.optim.Adam(p, lr=0.01, weight_decay=0.05, amsgrad=True),
    "Adam-maximize": lambda p: plugrad.optim.Adam(p, lr=0.01, maximize=True),
    "AdamW": lambda p: plugrad.optim.AdamW(p, lr=0.01, weight_decay=0.1),
    "AdamW-amsgrad": lambda p: plugrad.optim.AdamW(p, lr=0.01, amsgrad=True),
    "Adagrad-decay-maximize": lambda p: plugrad.optim.Adagrad(
        p, lr=0.01, lr_decay=0.1, weight_decay=0.05, maximize=True
    ),
    "RMSprop-centered-momentum-decay": lambda p: plugrad.optim.RMSprop(
        p, lr=0.01, momentum=0.9, centered=True, weight_decay=0.05
    ),
    "one-step-group": lambda p: _PlainSGD(p, lr=0.1),
}


@pytest.mark.parametrize("make_optimizer", list(_OPTIMIZERS.values()), ids=list(_OPTIMIZERS))
def test_training_trajectory_compiled_equals_eager_over_50_steps(make_optimizer):
    x, labels = classification_batch()
    trajectories = []
    for compiled in (False, True):
        model, optimizer = classifier_and_optimizer(make_optimizer)
        train = training_step(model, optimizer)
        step = plugrad.compile(train) if compiled else train
        trajectories.append(trajectory(step, model, 50))
        if compiled:
            # .grad None, and the optimizer's state made, on the first call only
            assert step.captures <= 2
            source = step.code(x, labels)
            if isinstance(optimizer, _PlainSGD):
                assert "advance_" not in source
            else:  # the step is array code, with its numbers recomputed at every replay
                assert "advance_" in source and "._compile_key() == " in source
    (eager_losses, eager_params), (losses, params) = trajectories
    for a, b in zip(eager_losses, losses):
        _same(a, b)
    for a, b in zip(eager_params, params):
        _same(a, b)


def _train_step(x, model, optimizer):
    optimizer.zero_grad()
    model(x).sum().backward()
    optimizer.step()


def _stepper(model, optimizer):
    return lambda x: _train_step(x, model, optimizer)


def test_optimizer_numbers_are_operands_only_in_a_compiled_step():
    class Careless(plugrad.optim.SGD):
        def _update_group(self, group, numbers):
            lr, momentum = numbers
            super()._update_group(group, [lr * 0.5, momentum])  # arithmetic on a replayed number

    model, optimizer = classifier_and_optimizer(lambda p: Careless(p, lr=0.1))
    train = plugrad.compile(lambda x: _train_step(x, model, optimizer))
    x = plugrad.ones((2, 4))
    with pytest.raises(TypeError, match="only be an operand of an array operation"):
        train(x)


def test_comparing_a_replayed_number_is_refused_not_a_baked_branch():
    # `number == 1` was False during a capture whatever the number (identity), so a
    # step branching on it took one branch for good.
    class Branching(plugrad.optim.SGD):
        def _update_group(self, group, numbers):
            if numbers[0] == 0.1:
                super()._update_group(group, numbers)

    model, optimizer = classifier_and_optimizer(lambda p: Branching(p, lr=0.1))
    train = plugrad.compile(lambda x: _train_step(x, model, optimizer))
    with pytest.raises(TypeError, match="only be an operand of an array operation"):
        train(plugrad.ones((2, 4)))


def test_asgd_average_compiled_equals_eager_where_it_starts_averaging():
    # The average is the parameter itself, copied exactly, until step t0; compiled, the
    # copy was replaced by ax + (p - ax) * 1, which rounds.
    averages = []
    for compiled in (False, True):
        model, optimizer = classifier_and_optimizer(lambda p: plugrad.optim.ASGD(p, lr=0.05, t0=6))
        x = plugrad.tensor(np.random.default_rng(5).standard_normal((6, 4)).astype(np.float32))
        train = _stepper(model, optimizer)
        if compiled:
            train = plugrad.compile(train)
        run = []
        for _ in range(14):
            train(x)
            run.append([optimizer.state[p]["ax"].numpy().copy() for p in model.parameters()])
        if compiled:
            assert train.captures <= 4  # the first step, then where the copying stops
        averages.append(run)
    eager, compiled_run = averages
    for step_eager, step_compiled in zip(eager, compiled_run):
        for a, b in zip(step_eager, step_compiled):
            _same(a, b)
    params = [p.detach().numpy() for p in model.parameters()]
    assert not all(np.array_equal(a, p) for a, p in zip(compiled_run[-1], params))


def test_an_optimizer_whose_state_is_replaced_is_captured_again():
    model, optimizer = classifier_and_optimizer(lambda p: plugrad.optim.Adam(p, lr=0.01))
    reference, eager_optimizer = classifier_and_optimizer(lambda p: plugrad.optim.Adam(p, lr=0.01))
    x = plugrad.ones((2, 4))
    compiled = plugrad.compile(lambda x: _train_step(x, model, optimizer))
    for _ in range(3):
        compiled(x)
        _train_step(x, reference, eager_optimizer)
    captures = compiled.captures
    saved = eager_optimizer.state_dict()
    eager_optimizer.load_state_dict(saved)  # the same values in new state tensors
    optimizer.load_state_dict(optimizer.state_dict())
    for _ in range(2):
        compiled(x)
        _train_step(x, reference, eager_optimizer)
    assert compiled.captures == captures + 1
    for a, b in zip(model.parameters(), reference.parameters()):
        _same(a, b)


def test_learning_rate_scheduler_steps_are_replayed():
    model, optimizer = classifier_and_optimizer(lambda p: plugrad.optim.SGD(p, lr=0.5))
    scheduler = plugrad.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    x = plugrad.ones((2, 4))

    @plugrad.compile
    def train(x):
        _train_step(x, model, optimizer)
        scheduler.step()

    for _ in range(4):
        train(x)
    assert optimizer.param_groups[0]["lr"] == 0.5 * 0.5**4


_SCHEDULED_MOMENTUM = {
    "SGD": lambda p: plugrad.optim.SGD(p, lr=0.1, momentum=0.9),
    "SGD-nesterov": lambda p: plugrad.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True),
    "Adam": lambda p: plugrad.optim.Adam(p, lr=0.1),
    "Adam-maximize": lambda p: plugrad.optim.Adam(p, lr=0.1, maximize=True, weight_decay=0.1),
    "AdamW-amsgrad": lambda p: plugrad.optim.AdamW(p, lr=0.1, amsgrad=True),
    "Adamax": lambda p: plugrad.optim.Adamax(p, lr=0.1),
    "NAdam": lambda p: plugrad.optim.NAdam(p, lr=0.1),
    "RAdam": lambda p: plugrad.optim.RAdam(p, lr=0.1, weight_decay=0.1),
    "RMSprop": lambda p: plugrad.optim.RMSprop(p, lr=0.01, momentum=0.9, centered=True),
}


@pytest.mark.parametrize("scheduler", ["OneCycleLR", "CyclicLR"])
@pytest.mark.parametrize("make", _SCHEDULED_MOMENTUM.values(), ids=_SCHEDULED_MOMENTUM)
def test_scheduled_momentum_and_betas_are_read_afresh_by_replays(make, scheduler):
    # OneCycleLR and CyclicLR change momentum (or beta1) at every step: a replay reads
    # it as it reads the learning rate, instead of capturing a new plan per step.
    runs = []
    for compiled in (False, True):
        model, optimizer = classifier_and_optimizer(make)
        lr_scheduler = plugrad.optim.lr_scheduler
        if scheduler == "OneCycleLR":
            schedule = lr_scheduler.OneCycleLR(optimizer, max_lr=0.1, total_steps=40)
        else:
            schedule = lr_scheduler.CyclicLR(optimizer, 0.01, 0.1, step_size_up=4)
        x = plugrad.ones((2, 4))
        step = _stepper(model, optimizer)
        train = plugrad.compile(step) if compiled else step
        momenta = []
        for _ in range(12):
            train(x)
            schedule.step()
            group = optimizer.param_groups[0]
            momenta.append(group["momentum"] if "momentum" in group else group["betas"][0])
        runs.append([p.detach().numpy() for p in model.parameters()])
        assert len(set(momenta)) > 3  # the schedule did change it
    if compiled:
        assert train.captures <= 2  # the first step makes the optimizer's state
    for a, b in zip(*runs):
        _same(a, b)


@pytest.mark.parametrize(
    ("make", "option", "values"),
    [
        (lambda p: plugrad.optim.SGD(p, lr=0.1, momentum=0.9), "momentum", [0.9, 0.0, 0.5]),
        (lambda p: plugrad.optim.RMSprop(p, lr=0.01, momentum=0.9), "momentum", [0.9, 0.0, 0.5]),
        (lambda p: plugrad.optim.NAdam(p, lr=0.1), "betas", [(0.9, 0.99), (0.2, 0.99), (0.8, 0.9)]),
        (lambda p: plugrad.optim.Adamax(p, lr=0.1), "betas", [(0.9, 0.99), (0.2, 0.99)]),
    ],
)
def test_a_momentum_that_changes_what_a_step_computes_captures_again(make, option, values):
    # A zero momentum skips its buffer; a beta1 below 0.5 rounds its lerp the other way.
    runs = []
    for compiled in (False, True):
        model, optimizer = classifier_and_optimizer(make)
        x = plugrad.ones((2, 4))
        step = _stepper(model, optimizer)
        train = plugrad.compile(step) if compiled else step
        for value in values:
            optimizer.param_groups[0][option] = value
            for _ in range(3):
                train(x)
        runs.append([p.detach().numpy() for p in model.parameters()])
    assert train.captures >= len(values)
    for a, b in zip(*runs):
        _same(a, b)


def _sgd_with_closure():
    """SGD on one parameter and a closure that computes its loss and gradient."""
    w = plugrad.tensor([1.0, -2.0], requires_grad=True)
    optimizer = plugrad.optim.SGD([w], lr=0.1)

    def closure():
        optimizer.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    return optimizer, closure


def test_what_a_step_with_a_closure_returns_is_each_replays_own():
    # Optimizer.step(closure) runs again at every replay; the loss it returns is that
    # replay's, not the captured call's (which was returned from every replay, unnoticed).
    def run(compiled: bool) -> list[float]:
        optimizer, closure = _sgd_with_closure()

        def step():
            loss = optimizer.step(closure)
            return loss, {"loss": (loss,)}

        step = plugrad.compile(step, fullgraph=True) if compiled else step
        results = [step() for _ in range(4)]
        for loss, inside in results:
            assert inside["loss"][0] is loss
        return [float(loss) for loss, _ in results]

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert run(True) == run(False) == pytest.approx([5.0, 3.2, 2.048, 1.31072])


@pytest.mark.parametrize("make", [
    lambda w: plugrad.optim.SGD([w], lr=0.1),
    lambda w: plugrad.optim.LBFGS([w], lr=0.1, max_iter=3),
])  # fmt: skip
def test_a_step_with_a_closure_made_in_the_call_runs_eagerly(make):
    # The replays called the capture's closure, which read the first call's x: every
    # step optimized the first input, silently (fullgraph=True did not catch it either).
    def run(compiled: bool) -> list[float]:
        w = plugrad.nn.Parameter(plugrad.tensor([1.0]))
        optimizer = make(w)

        def step(x):
            def closure():
                optimizer.zero_grad()
                loss = (w * x).sum() ** 2
                loss.backward()
                return loss

            return optimizer.step(closure)

        step = plugrad.compile(step) if compiled else step
        return [(float(step(plugrad.tensor([v]))), w.item()) for v in (1.0, 2.0, 3.0, 4.0)]

    with pytest.warns(CompileWarning, match="function made in the call"):
        assert run(True) == run(False)

    w = plugrad.nn.Parameter(plugrad.tensor([1.0]))
    optimizer = make(w)
    strict = plugrad.compile(lambda x: optimizer.step(lambda: (w * x).sum()), fullgraph=True)
    with pytest.raises(GraphBreakError, match="function made in the call"):
        strict(plugrad.ones(1))


def test_a_repeated_calls_result_read_by_traced_code_breaks_the_graph():
    optimizer, closure = _sgd_with_closure()
    compiled = plugrad.compile(lambda: optimizer.step(closure) * 2, fullgraph=True)
    with pytest.raises(GraphBreakError, match="result of a call each replay repeats"):
        compiled()


def test_module_forward_under_no_grad_and_create_graph():
    model, _ = classifier_and_optimizer(lambda p: None)
    x = plugrad.ones((2, 4))
    compiled = plugrad.compile(model)
    with plugrad.no_grad():
        _same(compiled(x), model(x))
        _same(compiled(x), model(x))

    def gradient_penalty(x):
        x.grad = None
        y = (x**3).sum()
        (g,) = plugrad.autograd.grad(y, x, create_graph=True)
        (g * g).sum().backward()

    a = plugrad.tensor([1.0, -2.0], requires_grad=True)
    b = plugrad.tensor([1.0, -2.0], requires_grad=True)
    compiled = plugrad.compile(gradient_penalty)
    for _ in range(2):
        gradient_penalty(a)
        compiled(b)
        _same(b.grad, a.grad)


def test_func_grad_and_custom_function_are_captured():
    def f(x):
        value, pullback = plugrad.func.vjp(lambda t: Cube.apply(t).sum(), x)
        (gradient,) = pullback(plugrad.ones_like(value))
        return value, gradient

    compiled = plugrad.compile(f)
    x = plugrad.tensor([1.0, 2.0, -0.5])
    for _ in range(2):
        for got, expected in zip(compiled(x), f(x)):
            _same(got, expected)
    assert compiled.captures == 1


# -- data-dependent shapes ----------------------------------------------------------------


def test_a_data_dependent_shape_that_changes_captures_again_never_a_wrong_result():
    def mean_of_positives(x):
        positive = x[x > 0]
        return positive.sum() * (1.0 / positive.shape[0])  # the count read in Python

    compiled = plugrad.compile(mean_of_positives)
    for values in ([1.0, -1.0, 3.0], [1.0, 2.0, 3.0], [1.0, -1.0, 5.0], [-2.0, -1.0, 4.0]):
        x = plugrad.tensor(values)
        _same(compiled(x), mean_of_positives(x))
    assert compiled.captures == 3  # two positives, three, two again (replayed), one
    assert "if v" in compiled.code(plugrad.tensor([1.0, -1.0, 3.0]))


def test_a_data_dependent_shape_after_an_update_is_an_error_not_a_wrong_result():
    state = {"w": plugrad.tensor([1.0, 2.0, 3.0])}

    def update_then_select(x):
        with plugrad.no_grad():
            state["w"] += 1.0
        return plugrad.nonzero(x)[0]

    compiled = plugrad.compile(update_then_select)
    compiled(plugrad.tensor([1.0, 0.0, 2.0]))
    compiled(plugrad.tensor([3.0, 0.0, 2.0]))  # two non-zeros again: replayed
    assert compiled.captures == 1
    with pytest.raises(CompileError, match="output shape"):
        compiled(plugrad.tensor([3.0, 1.0, 2.0]))
    _same(state["w"], plugrad.tensor([4.0, 5.0, 6.0]))  # three updates, none twice


def test_replay_on_the_array_api_strict_backend_matches_eager():
    pytest.importorskip("array_api_strict")
    with plugrad.use_backend("array_api_strict"):
        x, w = _leaves()
        x2, w2 = _leaves()
    compiled = plugrad.compile(_step, fullgraph=True)
    for _ in range(3):
        _same(compiled(x2, w2), _step(x, w))
        _same(x2.grad, x.grad)
        _same(w2.grad, w.grad)
    assert compiled.captures == 1
    assert x2.grad.device == x.grad.device and "strict" in str(x2.grad.device)


def test_class_targets_are_range_checked_at_every_replay():
    from plugrad.errors import IndexOutOfRangeError

    logits = plugrad.tensor(np.random.default_rng(0).normal(size=(4, 3)))
    compiled = plugrad.compile(lambda x, t: plugrad.nn.functional.cross_entropy(x, t))
    good = plugrad.tensor([0, 2, 1, 2])
    _same(compiled(logits, good), plugrad.nn.functional.cross_entropy(logits, good))
    _same(compiled(logits, good), plugrad.nn.functional.cross_entropy(logits, good))
    assert compiled.captures == 1  # the check did not break the graph
    for bad in ([0, 3, 1, 2], [0, -1, 1, 2]):  # past the end, and one NumPy would wrap
        with pytest.raises(IndexOutOfRangeError, match=r"class targets outside \[0, 3\)"):
            compiled(logits, plugrad.tensor(bad))
    _same(compiled(logits, good), plugrad.nn.functional.cross_entropy(logits, good))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_class_targets_with_and_without_ignored_ones_replay_like_eager(
    reduction, weighted, smoothing
):
    # One plan for every target of the signature: the NumPy kernels' path for targets
    # none of which is ignored, and the masked one, are chosen inside kernels.
    rng = np.random.default_rng(1)
    weight = plugrad.tensor(rng.uniform(0.5, 2.0, size=3)) if weighted else None

    def loss_and_grad(x, t):
        loss = plugrad.nn.functional.cross_entropy(
            x, t, weight, reduction=reduction, label_smoothing=smoothing
        )
        loss.sum().backward()
        return loss

    compiled = plugrad.compile(loss_and_grad, fullgraph=True)
    logits = rng.normal(size=(4, 3))
    targets = ([0, 2, 1, 2], [0, -100, 1, 2], [2, 1, 0, 0], [-100] * 4, [1, 1, 2, 0])
    with np.errstate(invalid="ignore"):  # every target ignored: a NaN mean, as in PyTorch
        for target in targets:
            x, x_eager = (plugrad.tensor(logits, requires_grad=True) for _ in range(2))
            _same(
                compiled(x, plugrad.tensor(target)), loss_and_grad(x_eager, plugrad.tensor(target))
            )
            _same(x.grad, x_eager.grad)
    assert compiled.captures == 1
    for bad in ([0, 3, 1, 2], [0, -1, -100, 2]):
        with pytest.raises(IndexOutOfRangeError, match=r"class targets outside \[0, 3\)"):
            compiled(plugrad.tensor(logits, requires_grad=True), plugrad.tensor(bad))


def test_checking_mode_runs_calls_eagerly_and_compiles_again_when_off():
    x = plugrad.tensor([1.0, 2.0])
    compiled = plugrad.compile(lambda t: t * 2.0 + 1.0)
    with plugrad.plugins.checking(True):
        with pytest.warns(CompileWarning, match="checking mode is on"):
            _same(compiled(x), x * 2.0 + 1.0)
        with pytest.raises(GraphBreakError, match="checking mode"):
            plugrad.compile(lambda t: t * 2.0, fullgraph=True)(x)
    _same(compiled(x), x * 2.0 + 1.0)
    assert compiled.captures == 1


def test_elementwise_results_reuse_an_operand_that_dies_never_an_input_or_a_grad():
    def step(x, w, b):
        w.grad = None
        h = plugrad.exp(x @ w + b) * 2.0  # the sum into the product's memory, and so on
        loss = (h * x.sum()).sum()
        loss.backward()
        return h

    rng = np.random.default_rng(5)
    x = plugrad.tensor(rng.standard_normal((4, 3)).astype(np.float32))
    b = plugrad.tensor(rng.standard_normal(2).astype(np.float32))
    w, w_eager = (plugrad.tensor(np.ones((3, 2), np.float32), requires_grad=True) for _ in "ab")
    compiled = plugrad.compile(step)
    source = compiled.code(x, w, b)
    in_place = [line for line in source.splitlines() if "out=" in line]
    assert any("xp.add(" in line for line in in_place), source
    inputs = {line.split(" = ")[0].strip() for line in source.splitlines() if "._array" in line}
    for line in in_place:  # never written: an input, or a value a .grad holds
        target = line.split("out=")[1].rstrip(")")
        assert target not in inputs
    x_before, b_before = x.numpy().copy(), b.numpy().copy()
    for _ in range(3):
        _same(compiled(x, w, b), step(x, w_eager, b))
        _same(w.grad, w_eager.grad)
    np.testing.assert_array_equal(x.numpy(), x_before)
    np.testing.assert_array_equal(b.numpy(), b_before)


def test_a_matrix_product_is_never_written_into_an_operand():
    # Written into the memory of a Fortran-ordered operand (the transpose of a new array
    # that dies there), a complex product takes another BLAS path than eagerly and differed
    # in the last bits.
    def f(a, b):
        return (a * 2.0).mT @ b

    rng = np.random.default_rng(0)
    a, b = (
        plugrad.tensor(rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))) for _ in "ab"
    )
    compiled = plugrad.compile(f)
    for _ in range(2):
        _same(compiled(a, b), f(a, b))
    source = compiled.code(a, b)
    assert not [line for line in source.splitlines() if "matmul" in line and "out=" in line]


def test_a_linear_layer_of_few_rows_replays_bit_identical_to_eager():
    # NumPy's own linear kernel multiplies the weight by the transposed rows here.
    def make():
        plugrad.manual_seed(3)
        model = plugrad.nn.Sequential(plugrad.nn.Linear(6, 16), plugrad.nn.ReLU())
        return model, plugrad.optim.SGD(model.parameters(), lr=0.1)

    def stepper(model, optimizer):
        def step(x):
            optimizer.zero_grad()
            loss = model(x).sum()
            loss.backward()
            optimizer.step()
            return loss

        return step

    (model, optimizer), (eager_model, eager_optimizer) = make(), make()
    compiled = plugrad.compile(stepper(model, optimizer), fullgraph=True)
    eager = stepper(eager_model, eager_optimizer)
    rng = np.random.default_rng(2)
    for _ in range(4):
        x = plugrad.tensor(rng.standard_normal((3, 6)).astype(np.float32))
        _same(compiled(x), eager(x))
        for p, e in zip(model.parameters(), eager_model.parameters(), strict=True):
            _same(p, e)
            _same(p.grad, e.grad)
    assert "matrix_transpose" not in compiled.code(x)
    assert compiled.captures == 2  # the first call finds no .grad to zero, the others do


def test_a_sum_goes_into_the_transpose_of_a_product_that_dies_there():
    def f(x, w, b):
        return (w @ x.mT).mT + b

    rng = np.random.default_rng(4)
    x = plugrad.tensor(rng.standard_normal((2, 5)).astype(np.float32))
    w = plugrad.tensor(rng.standard_normal((7, 5)).astype(np.float32))
    b = plugrad.tensor(rng.standard_normal(7).astype(np.float32))
    compiled = plugrad.compile(f)
    source = compiled.code(x, w, b)
    assert "matrix_transpose" not in source and ".mT" in source, source
    assert any("xp.add(" in line and "out=" in line for line in source.splitlines()), source
    before = [t.numpy().copy() for t in (x, w, b)]
    for _ in range(2):
        _same(compiled(x, w, b), f(x, w, b))
    for t, values in zip((x, w, b), before, strict=True):
        np.testing.assert_array_equal(t.numpy(), values)


def test_a_value_computed_twice_is_computed_once_but_never_across_a_write():
    def twice(x, w):
        w.grad = None
        loss = (plugrad.exp(x) * w + plugrad.exp(x) * 2.0 + (x + plugrad.arange(5.0))).sum()
        loss = loss + (x * plugrad.arange(5.0)).sum()
        loss.backward()
        return loss

    def around_a_write(x, w):
        before = plugrad.exp(w)
        with plugrad.no_grad():
            w.mul_(2.0)
        return before + plugrad.exp(w)

    x, w = _leaves(3)
    x = x.detach()
    compiled = plugrad.compile(twice)
    source = compiled.code(x, w)
    assert source.count("xp.exp(") == 1, source
    # The two aranges are one constant; the other is the backward seed's product with 2.0.
    assert source.count("= folded_") == 2, source
    w_eager = w.detach().clone().requires_grad_()
    for _ in range(2):
        _same(compiled(x, w), twice(x, w_eager))
        _same(w.grad, w_eager.grad)
    v = plugrad.tensor([0.5, 1.0])
    v_eager = v.clone()
    compiled = plugrad.compile(around_a_write)
    assert compiled.code(plugrad.tensor([0.0]), plugrad.tensor([0.0])).count("xp.exp(") == 2
    for _ in range(2):
        _same(compiled(x, v), around_a_write(x, v_eager))
        _same(v, v_eager)


def test_a_broadcast_that_only_feeds_elementwise_arithmetic_is_read_as_it_is():
    def step(x, w):
        x.grad = None
        loss = plugrad.exp(x).sum() * w
        loss.backward()
        return loss

    x, _ = _leaves(4)
    w = plugrad.tensor(1.5)
    compiled = plugrad.compile(step)
    assert "broadcast_to" in plugrad.compile(step, optimize=False).code(x, w)
    assert "broadcast_to" not in compiled.code(x, w)
    x_eager = x.detach().clone().requires_grad_()
    for _ in range(2):
        _same(compiled(x, w), step(x_eager, w))
        _same(x.grad, x_eager.grad)


def test_cross_entropys_gradient_reads_the_softmax_parts_its_forward_computed():
    def step(logits, labels):
        logits.grad = None
        loss = plugrad.nn.functional.cross_entropy(logits, labels)
        loss.backward()
        return loss

    rng = np.random.default_rng(5)
    logits = plugrad.tensor(rng.normal(size=(6, 4)).astype(np.float32), requires_grad=True)
    labels = plugrad.tensor([0, 3, -100, 1, 2, 3])
    compiled = plugrad.compile(step)
    source = compiled.code(logits, labels)
    # The rule's softmax is one division of the forward's exponentials by their sum;
    # ``labels != -100`` (the loss's mask) and not_equal (the mean's count) are one value.
    assert "softmax" not in source and source.count("xp.exp(") == 1, source
    assert source.count("!= -100") == 1 and "not_equal" not in source, source
    eager = logits.detach().clone().requires_grad_()
    for _ in range(2):
        _same(compiled(logits, labels), step(eager, labels))
        _same(logits.grad, eager.grad)


def test_a_plan_captured_again_reuses_the_code_its_source_compiled_to():
    from plugrad.compiler import codegen

    x, w = _leaves(6)
    compiled = plugrad.compile(_step)

    def replay_of_a_new_capture():
        compiled.cache_clear()
        compiled(x, w)  # captured
        compiled(x, w)  # replayed: the code is written and compiled
        return compiled._cache[next(iter(compiled._cache))].plans[0].replay

    first = replay_of_a_new_capture()
    again = replay_of_a_new_capture()
    assert again is not first and again.__code__ is first.__code__
    codegen.forget_code()
    fresh = replay_of_a_new_capture()
    assert fresh.__code__ is not first.__code__ and fresh.__code__.co_code == first.__code__.co_code
    x_eager, w_eager = _leaves(6)
    _same(compiled(x, w), _step(x_eager, w_eager))
    _same(w.grad, w_eager.grad)


def test_a_compiled_function_whose_plan_was_never_replayed_is_freed_with_its_last_reference():
    import gc
    import weakref

    def captured_once():
        w = plugrad.ones((3, 3), requires_grad=True)
        compiled = plugrad.compile(lambda x: (x * w).sum())
        compiled(plugrad.ones((3, 3)))  # captured, never replayed
        return weakref.ref(w), weakref.ref(compiled)

    collecting = gc.isenabled()
    gc.disable()  # freed by reference counting alone: no cycle holds the plan's tensors
    try:
        assert [ref() for ref in captured_once()] == [None, None]
    finally:
        if collecting:
            gc.enable()


def test_a_plan_is_written_and_compiled_at_its_first_replay_not_at_capture():
    from plugrad.compiler import codegen

    x, w = _leaves(6)
    x_eager, w_eager = _leaves(6)
    compiled = plugrad.compile(_step)
    codegen.forget_code()
    compiles = []
    real_build = codegen.build

    def counted_build(plan, filename):
        compiles.append(filename)
        return real_build(plan, filename)

    codegen.build = counted_build
    try:
        _same(compiled(x, w), _step(x_eager, w_eager))  # the capture runs the function
        (kept,) = compiled._cache[next(iter(compiled._cache))].plans
        assert compiles == [] and kept.source is None
        for _ in range(3):
            _same(compiled(x, w), _step(x_eager, w_eager))
            _same(w.grad, w_eager.grad)
        assert len(compiles) == 1 and "def replay(L, F):" in kept.source
        assert compiled.captures == 1
        # Its source asked for before any replay: written then, once.
        compiled.cache_clear()
        compiled(x, w)
        _step(x_eager, w_eager)
        assert "def replay(L, F):" in compiled.code(x, w) and len(compiles) == 2
        _same(compiled(x, w), _step(x_eager, w_eager))
        assert len(compiles) == 2 and compiled.captures == 2
    finally:
        codegen.build = real_build


def _linear_step(x, w, b):
    w.grad = None
    b.grad = None
    loss = plugrad.exp(x @ w.T + b).sum()
    loss.backward()
    return loss


def test_a_matrix_products_gradient_reads_matrices_without_reshaping_them():
    rng = np.random.default_rng(6)
    x = plugrad.tensor(rng.standard_normal((4, 3)).astype(np.float32))
    w = plugrad.tensor(rng.standard_normal((2, 3)).astype(np.float32), requires_grad=True)
    b = plugrad.tensor(rng.standard_normal(2).astype(np.float32), requires_grad=True)
    unoptimized = plugrad.compile(_linear_step, optimize=False).code(x, w, b)
    assert "xp.reshape(" in unoptimized and "keepdims=True" in unoptimized
    compiled = plugrad.compile(_linear_step)
    source = compiled.code(x, w, b)
    # The rule's flattening of matrices and the bias gradient's kept axes are gone; the
    # reshapes left make w.grad's row-major copy (the gradient of w.T comes out transposed):
    # flat with copy=True, and back to w's shape.
    assert source.count("xp.reshape(") == 2 and source.count("copy=True)") == 1, source
    assert "keepdims=False" in source and "keepdims=True" not in source, source
    w_eager = w.detach().clone().requires_grad_()
    b_eager = b.detach().clone().requires_grad_()
    for _ in range(3):
        _same(compiled(x, w, b), _linear_step(x, w_eager, b_eager))
        _same(w.grad, w_eager.grad)
        _same(b.grad, b_eager.grad)


def test_a_reshape_whose_value_is_kept_or_read_across_a_write_stays():
    def returned(x):
        return plugrad.reshape(x * 2.0, (2, 3))  # the reshape is the result

    def across_a_write(x, v):
        flat = plugrad.reshape(v, (3,))  # a copy, on a backend whose reshape copies
        with plugrad.no_grad():
            v.mul_(2.0)
        return flat * 2.0 + v

    x = plugrad.tensor(np.arange(6.0).reshape(2, 3))
    assert "reshape(" in plugrad.compile(returned).code(x)
    v = plugrad.tensor([1.0, 2.0, 3.0])
    v_eager = v.clone()
    compiled = plugrad.compile(across_a_write)
    assert "reshape(" in compiled.code(x, v.clone())
    for _ in range(2):
        _same(compiled(x, v), across_a_write(x, v_eager))
        _same(v, v_eager)


def _more_decay(optimizer):
    optimizer.param_groups[0]["weight_decay"] = 0.25


def _fewer_params(optimizer):
    optimizer.param_groups[0]["params"].pop()


def _fresh_state(optimizer):
    for entry in optimizer.state.values():
        for name, value in entry.items():
            if isinstance(value, plugrad.Tensor):
                entry[name] = value.clone()


@pytest.mark.parametrize("change", [_more_decay, _fewer_params, _fresh_state])
@pytest.mark.parametrize(
    "make_optimizer",
    [
        lambda p: plugrad.optim.SGD(p, lr=0.1, momentum=0.9),
        lambda p: plugrad.optim.Adam(p, lr=0.01),
    ],
    ids=["SGD-momentum", "Adam"],
)
def test_changing_what_an_optimizer_step_depends_on_captures_again(make_optimizer, change):
    x = plugrad.tensor(np.linspace(-1.0, 1.0, 8, dtype=np.float32).reshape(2, 4))
    model, optimizer = classifier_and_optimizer(make_optimizer)
    reference, eager_optimizer = classifier_and_optimizer(make_optimizer)
    compiled = plugrad.compile(lambda x: _train_step(x, model, optimizer))
    for _ in range(3):
        compiled(x)
        _train_step(x, reference, eager_optimizer)
    captures = compiled.captures
    change(optimizer)
    change(eager_optimizer)
    for _ in range(3):
        compiled(x)
        _train_step(x, reference, eager_optimizer)
    assert compiled.captures > captures
    for a, b in zip(model.parameters(), reference.parameters()):
        _same(a, b)


def test_a_backend_is_asked_about_its_own_arrays_in_a_capture(monkeypatch):
    # x[::-1] asks the backend whether the result shares memory: in a capture it was given
    # the tracer's wrappers, which CuPy refuses (TypeError) where NumPy let them pass.
    backend = plugrad.registry.resolve_device("numpy").backend
    asked = []

    def strict(array, other):
        assert type(array) is np.ndarray and type(other) is np.ndarray, (array, other)
        asked.append(True)
        return np.may_share_memory(array, other)

    monkeypatch.setattr(backend, "may_share_memory", strict)
    x = plugrad.arange(6.0, requires_grad=True)

    def flipped(t):
        loss = (t[::-1] * t[1::2].sum()).sum()
        loss.backward()
        return loss.detach()

    eager = flipped(x).item(), x.grad.tolist()
    compiled = plugrad.compile(flipped, fullgraph=True)
    for _ in range(2):  # a capture, then a replay
        x.grad = None
        assert (compiled(x).item(), x.grad.tolist()) == eager
    assert asked


def test_runs_of_grad_writes_become_one_statement_in_order():
    from plugrad.compiler.codegen import _merged_grad_stores

    lines = [
        "F[0]._grad = None",
        "F[1]._grad = _wrap(v1, c0, False, None)",
        "F[2]._grad = _wrap(v2, c0, False, None)",
        "F[7]._grad = _wrap(v7, c0, False, None)",
        "x = 1",
        "F[8]._grad = _wrap(v8, c0, False, None)",  # two stores stay lines (cheaper to run)
        "F[9]._grad = _wrap(v9, c0, False, None)",
        "F[3]._grad = None",
        "F[4]._grad = None",
        "F[5]._grad = _wrap(v3, c1, False, None)",  # another device: not merged with the next
        "F[6]._grad = _wrap(v4, c0, False, None)",
    ]
    assert _merged_grad_stores(lines) == [
        "F[0]._grad = None",
        "_store_grads(c0, F[1], v1, F[2], v2, F[7], v7)",
        "x = 1",
        "F[8]._grad = _wrap(v8, c0, False, None)",
        "F[9]._grad = _wrap(v9, c0, False, None)",
        "F[3]._grad = F[4]._grad = None",
        "F[5]._grad = _wrap(v3, c1, False, None)",
        "F[6]._grad = _wrap(v4, c0, False, None)",
    ]


def test_node_classes_made_later_have_their_releases_noted():
    """A capture notes every ``_release`` (which graphs a backward freed) without searching
    the node classes: one made after import is known from when it is made."""
    from plugrad.compiler import tracer
    from plugrad.node import Node, releasing_classes

    class Releasing(Node):
        def _release(self) -> None:
            pass

    class Inheriting(Releasing):
        pass

    assert Releasing in releasing_classes and Inheriting not in releasing_classes
    capture = tracer.Tracer([], False)
    capture.install()
    try:
        node = Inheriting()
        node._release()
    finally:
        capture.uninstall()
    assert capture.released == {id(node): node}
    assert Releasing.__dict__["_release"].__name__ == "_release"  # restored
