"""Replays that must do what the eager function does, where they once did not.

Each test runs a function eagerly and compiled (several calls, so plans are
replayed, not only captured) and compares what a user can observe.
"""

from __future__ import annotations

import copy
import warnings

import pytest
from functions import Square

import plugrad
from plugrad import nn, optim
from plugrad.errors import IndexOutOfRangeError, InPlaceModificationError


@pytest.mark.parametrize("source", ["the default generator", "a generator"])
def test_seeding_reaches_replays(source):
    generator = plugrad.Generator(seed=3)

    def noisy(x):
        if source == "a generator":
            return x * plugrad.rand(3, generator=generator)
        return x + plugrad.randn(3)

    def seed():
        if source == "a generator":
            generator.manual_seed(5)
        else:
            plugrad.manual_seed(0)

    compiled = plugrad.compile(noisy)
    x = plugrad.ones(3)
    for _ in range(4):
        seed()
        expected = noisy(x).tolist()
        seed()
        assert compiled(x).tolist() == expected
    assert compiled.captures == 1
    assert compiled(x).tolist() != compiled(x).tolist()  # unseeded: fresh numbers


def test_a_seeded_training_step_with_dropout_follows_eager():
    plugrad.manual_seed(1)
    model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 1))
    twin = copy.deepcopy(model)
    optimizers = [optim.SGD(m.parameters(), lr=0.1) for m in (model, twin)]

    def step_of(m, opt):
        def step(x):
            opt.zero_grad()
            loss = m(x).square().mean()
            loss.backward()
            opt.step()
            return loss

        return step

    eager, compiled = step_of(model, optimizers[0]), plugrad.compile(step_of(twin, optimizers[1]))
    x = plugrad.ones(5, 4)
    for call in range(4):
        plugrad.manual_seed(10 + call)
        expected = eager(x).item()
        plugrad.manual_seed(10 + call)
        assert compiled(x).item() == expected
    for p, q in zip(model.parameters(), twin.parameters()):
        assert p.tolist() == q.tolist()


FREE = plugrad.tensor([1.0, 1.0, 1.0])
VIEWS = {"of the input": lambda x: x[1:], "of a free tensor": lambda x: FREE[1:]}


@pytest.mark.parametrize("made", sorted(VIEWS))
def test_a_returned_view_shares_its_base_version(made):
    function = VIEWS[made]
    compiled = plugrad.compile(function)
    for call in (function, compiled, compiled, compiled):
        x = plugrad.tensor([1.0, 1.0, 1.0])
        base = x if made == "of the input" else FREE
        w = plugrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
        view = call(x)
        y = (w * base).sum()  # saves base
        before = base._version
        view.add_(10.0)
        assert base._version == before + 1
        with pytest.raises(InPlaceModificationError):
            y.backward()
        assert w.grad is None


def test_results_that_share_memory_share_their_version():
    def f(x):
        y = x * 2
        return y, y.view(3, 1)

    compiled = plugrad.compile(f)
    for function in (f, compiled, compiled):
        a, b = function(plugrad.ones(3))
        before = a._version
        b.mul_(2)
        assert a._version == b._version == before + 1
        assert a.tolist() == [4.0, 4.0, 4.0]


def test_zero_grad_outside_the_compiled_step_follows_eager():
    def world():
        plugrad.manual_seed(0)
        model = nn.Linear(2, 1)
        opt = optim.SGD(model.parameters(), lr=0.1)

        def step(x):
            model(x).sum().backward()
            opt.step()

        return model, opt, step

    (model, opt, eager), (twin, twin_opt, step) = world(), world()
    compiled = plugrad.compile(step)
    x = plugrad.ones((1, 2))
    for call in range(7):
        if call % 3 == 2:
            opt.zero_grad()
            twin_opt.zero_grad()
        eager(x)
        compiled(x)
        for p, q in zip(model.parameters(), twin.parameters()):
            assert p.tolist() == q.tolist() and p.grad.tolist() == q.grad.tolist()
    # A .grad the replay made is the function's own array: it can be changed in place.
    for p in twin.parameters():
        p.grad.mul_(0.5)


def test_a_module_switched_to_eval_mode_is_seen():
    plugrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.BatchNorm1d(4))
    compiled = plugrad.compile(lambda x: model(x).detach())
    x = plugrad.randn(3, 4)
    for mode in ("train", "train", "eval", "eval", "train", "eval"):
        getattr(model, mode)()
        state = copy.deepcopy(model.state_dict())
        plugrad.manual_seed(7)
        expected = model(x).detach().tolist()
        model.load_state_dict(state)  # the running statistics as before the eager call
        plugrad.manual_seed(7)
        assert compiled(x).tolist() == expected, mode
    assert compiled.captures == 2


def test_a_modules_settings_changed_between_calls_are_seen():
    # Setting track_running_stats = False after the capture left the replays updating the
    # running statistics; a new Dropout.p or momentum was replayed as the old one.
    plugrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.BatchNorm1d(4))
    twin = copy.deepcopy(model)
    compiled = plugrad.compile(lambda x: twin(x).detach())
    x = plugrad.randn(6, 4)
    changes = [
        {}, {}, {"1.p": 0.25}, {}, {"2.momentum": 0.5}, {"2.track_running_stats": False}, {},
        {"2.eps": 1e-2},
    ]  # fmt: skip
    for change in changes:
        for name, value in change.items():
            index, attribute = name.split(".")
            setattr(model[int(index)], attribute, value)
            setattr(twin[int(index)], attribute, value)
        plugrad.manual_seed(7)
        expected = model(x).detach().tolist()
        plugrad.manual_seed(7)
        assert compiled(x).tolist() == expected, change
        for ours, theirs in zip(twin.buffers(), model.buffers(), strict=True):
            assert ours.tolist() == theirs.tolist(), change
    assert compiled.captures == 5


class _ReadsItsChildren(nn.Module):
    """A forward that reads a setting and a parameter of children it never calls."""

    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(3)
        self.head = nn.Linear(3, 3)

    def forward(self, x):
        return (x + self.norm.eps) @ self.head.weight


def test_settings_and_tensors_of_children_the_function_does_not_call_are_seen():
    # Only the modules called were checked: a new eps, or a new head weight, of a child
    # read in forward was replayed as the old one.
    model = _ReadsItsChildren()
    compiled = plugrad.compile(lambda x: model(x).detach())  # (no graph: lazy backends too)
    x = plugrad.ones(2, 3)
    changes = [
        lambda: None,
        lambda: setattr(model.norm, "eps", 10.0),
        lambda: setattr(model.head, "weight", nn.Parameter(plugrad.eye(3))),
    ]
    for change in changes:
        change()
        for _ in range(2):
            assert compiled(x).tolist() == model.forward(x).tolist()
    assert compiled.captures == 3


def _set_size_in_place(module):
    module.size[:] = [6, 6]


@pytest.mark.parametrize(
    ("make", "change"),
    [
        pytest.param(lambda: nn.LeakyReLU(np_float32(0.01)),
                     lambda m: setattr(m, "negative_slope", np_float32(0.5)), id="numpy-scalar"),
        pytest.param(lambda: nn.LeakyReLU(0.5),
                     lambda m: setattr(m, "negative_slope", np_float32(0.5)),
                     id="same-value-numpy-scalar"),
        pytest.param(lambda: nn.Upsample(size=[4, 4]),
                     lambda m: setattr(m, "size", [6, 6]), id="list-replaced"),
        pytest.param(lambda: nn.Upsample(size=[4, 4]), _set_size_in_place, id="list-changed"),
        pytest.param(lambda: nn.Upsample(size=(4, 4)), lambda m: setattr(m, "size", (6, 6)),
                     id="tuple-replaced"),
        pytest.param(lambda: nn.ConstantPad1d(1, 0.0),
                     lambda m: setattr(m, "value", -0.0), id="negative-zero"),
    ],
)  # fmt: skip
def test_settings_a_comparison_by_equality_misses_are_seen(make, change):
    # NumPy scalars and lists were not guarded at all, and 0.0 == -0.0: the replay kept
    # the setting it was captured with.
    model = make()
    compiled = plugrad.compile(lambda x: model(x))
    data = [[[-1.0, 2.0], [3.0, -4.0]]]
    try:  # (a NumPy float32 setting promotes float16 values, a Python float does not)
        x = plugrad.tensor(data, dtype=plugrad.float16)
    except plugrad.errors.DtypeError:  # a backend without float16
        x = plugrad.tensor(data)
    if isinstance(model, nn.Upsample):
        x = x[None]  # (1, 1, 2, 2)
    compiled(x)
    compiled(x)
    change(model)
    for _ in range(2):
        expected = model(x)
        got = compiled(x)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        assert got.numpy().tobytes() == expected.numpy().tobytes()
    assert compiled.captures == 2


def np_float32(value):
    return pytest.importorskip("numpy").float32(value)


def test_captures_that_keep_replacing_their_plans_say_so():
    layer = nn.Dropout(0.5)
    compiled = plugrad.compile(lambda x: layer(x), cache_size=2)
    x = plugrad.ones(4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(6):
            layer.p = 0.1 * step
            compiled(x)
    assert compiled.captures == 6
    messages = [
        str(w.message) for w in caught if issubclass(w.category, plugrad.errors.CompileWarning)
    ]
    assert len(messages) == 1 and "more plans for one input signature" in messages[0]
    assert caught[0].filename == __file__


@pytest.mark.parametrize("shape", [(1, 2), (3, 2)])
def test_a_parameter_rebound_to_another_tensor_is_seen(shape):
    def world():
        plugrad.manual_seed(0)
        model = nn.Linear(2, 1 if shape == (1, 2) else 3, bias=False)

        def step(x):
            loss = model(x).sum()
            loss.backward()
            return loss.detach()

        return model, step

    (model, eager), (twin, step) = world(), world()
    compiled = plugrad.compile(step)
    x = plugrad.ones((1, 2))
    for call in range(4):
        if call == 2:
            model.weight = nn.Parameter(plugrad.full(shape, 5.0))
            twin.weight = nn.Parameter(plugrad.full(shape, 5.0))
        assert compiled(x).item() == eager(x).item()
        assert twin.weight.grad.tolist() == model.weight.grad.tolist()


def _twice(function, *arguments):
    """What the eager function and its compiled form give at the 1st, 2nd and 3rd call."""
    compiled = plugrad.compile(function)
    eager = [function(*arguments) for _ in range(3)]
    return eager, [compiled(*arguments) for _ in range(3)]


def _values(result):
    if isinstance(result, plugrad.Tensor):
        return result.tolist()
    if isinstance(result, tuple):
        return (type(result).__name__, [_values(v) for v in result])
    if isinstance(result, dict):
        return {k: _values(v) for k, v in result.items()}
    return result


@pytest.mark.parametrize("name", ["mul_ of one", "clone twice", "zeros twice", "through a view"])
def test_values_computed_twice_stay_two_arrays_when_one_is_written(name):
    # Common-subexpression elimination merged x * 2 and x * 2; a write into one showed in
    # the other ([6, 12, 18] for [2, 4, 6]).
    def program(x):
        if name == "mul_ of one":
            p, q = x * 2, x * 2
            p.mul_(3)
        elif name == "clone twice":
            p, q = x.clone(), x.clone()
            p.add_(1)
        elif name == "zeros twice":
            p, q = plugrad.zeros(3), plugrad.zeros(3)
            p += x
        else:
            p, q = x * 2, x * 2
            p[1:].mul_(3)
        return q

    eager, compiled = _twice(program, plugrad.tensor([1.0, 2.0, 3.0]))
    assert [_values(r) for r in compiled] == [_values(r) for r in eager]


def test_two_results_computed_alike_are_two_tensors():
    compiled = plugrad.compile(lambda x: (x * 2, x * 2))
    for _ in range(2):
        first, second = compiled(plugrad.tensor([1.0, 2.0]))
    first.add_(1)
    assert second.tolist() == [2.0, 4.0]


def test_named_tuples_and_odd_numbers_in_results_are_made_at_each_replay():
    from collections import namedtuple

    pair = namedtuple("pair", "loss out")
    for program in (
        lambda x: pair((x * x).sum(), x * 2),
        lambda x: plugrad.max(x, dim=0),
        lambda x: (x.sum(), float("inf"), -0.0, {plugrad.float32: x}),
    ):
        compiled = plugrad.compile(program)
        compiled(plugrad.tensor([1.0, 2.0, 3.0]))
        y = plugrad.tensor([4.0, 5.0, 3.0])
        assert _values(compiled(y)) == _values(program(y))
        assert type(compiled(y)) is type(program(y))


def test_a_result_object_holding_tensors_runs_eagerly_with_a_warning():
    import dataclasses

    @dataclasses.dataclass
    class Out:
        value: plugrad.Tensor

    compiled = plugrad.compile(lambda x: Out(x * 2))
    with pytest.warns(plugrad.errors.CompileWarning, match="returns a Out holding tensors"):
        compiled(plugrad.tensor([1.0]))
    assert compiled(plugrad.tensor([3.0])).value.tolist() == [6.0]


def test_signed_zeros_and_nan_arguments_are_signatures_of_their_own():
    compiled = plugrad.compile(lambda x, s: x / s)
    x = plugrad.tensor([1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's, of dividing by zero
        assert compiled(x, 0.0).tolist() == [float("inf")] * 2
        assert compiled(x, -0.0).tolist() == [float("-inf")] * 2
        compiled(x, float("nan"))
        compiled(x, float("nan"))
    assert compiled.captures == 3


def test_an_in_place_change_of_a_temporary_view_compiles():
    # The view was inlined into the target of `... *= 2`: a SyntaxError in the plan's code.
    def program(y):
        y[1:].mul_(2)
        with plugrad.no_grad():
            y.T.add_(1)
        return y + 1

    eager_input, compiled_input = plugrad.tensor([1.0, 2.0, 3.0]), plugrad.tensor([1.0, 2.0, 3.0])
    compiled = plugrad.compile(program)
    for _ in range(3):
        assert compiled(compiled_input).tolist() == program(eager_input).tolist()
    assert compiled_input.tolist() == eager_input.tolist()


def test_repeat_interleave_by_a_tensor_of_counts_has_the_shape_of_its_values():
    def program(x, counts):
        y = plugrad.repeat_interleave(x, counts)
        return y.sum() / y.shape[0]

    compiled = plugrad.compile(program)
    x = plugrad.tensor([1.0, 2.0, 3.0])
    for counts in ([1, 1, 1], [3, 1, 0], [3, 1, 0], [0, 0, 2]):
        counts = plugrad.tensor(counts)
        assert compiled(x, counts).item() == program(x, counts).item()


def test_seeding_inside_the_function_happens_at_every_replay():
    def noisy(x):
        plugrad.manual_seed(0)
        generator = plugrad.Generator(seed=1)
        return x + plugrad.randn(3), x * plugrad.rand(3, generator=generator.manual_seed(7))

    eager, compiled = _twice(noisy, plugrad.ones(3))
    assert [_values(r) for r in compiled] == [_values(r) for r in eager]


def test_a_parameter_made_at_the_first_forward_is_used_by_later_replays():
    class Lazy(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = None

        def forward(self, x):
            if self.w is None:
                self.w = nn.Parameter(plugrad.randn(3), requires_grad=False)
            return x * self.w

    compiled = plugrad.compile(Lazy())
    outputs = [compiled(plugrad.ones(3)).tolist() for _ in range(4)]
    assert outputs == [outputs[0]] * 4 and compiled.captures == 2


def test_a_parameter_frozen_after_a_scheduler_step_in_the_function_is_seen():
    def trained(compiled):
        plugrad.manual_seed(0)
        model = nn.Linear(3, 2)
        optimizer = optim.Adam(model.parameters(), lr=0.1)
        schedule = optim.lr_scheduler.StepLR(optimizer, 2)

        def step(x):
            schedule.step()
            optimizer.zero_grad()
            model(x).sum().backward()
            optimizer.step()

        run = plugrad.compile(step) if compiled else step
        for call in range(6):
            if call == 3:
                model.weight.requires_grad_(False)
            run(plugrad.ones(4, 3))
        return model.weight.tolist(), model.bias.tolist(), model.weight.grad

    with pytest.warns(UserWarning):  # the scheduler steps before the optimizer, as written
        eager = trained(False)
    with pytest.warns(UserWarning):
        assert trained(True) == eager


def test_default_dtype_and_anomaly_mode_changes_are_seen_by_replays():
    compiled = plugrad.compile(lambda x: x + plugrad.arange(2.0))
    x = plugrad.ones(2, dtype=plugrad.float64)
    assert compiled(x).dtype == compiled(x).dtype == plugrad.float64
    plugrad.set_default_dtype(plugrad.float64)
    try:
        assert compiled(x).tolist() == [1.0, 2.0]
        assert compiled(plugrad.ones(2)).dtype == plugrad.float64  # arange follows the default
    finally:
        plugrad.set_default_dtype(plugrad.float32)
    assert compiled(plugrad.ones(2)).dtype == plugrad.float32
    scale = plugrad.tensor([float("nan"), 1.0])  # a NaN gradient, no division by zero
    log_step = plugrad.compile(lambda w: (w * scale).sum().backward())
    w = plugrad.tensor([0.5, 1.0], requires_grad=True)
    log_step(w)
    log_step(w)
    with pytest.raises(plugrad.errors.AnomalyError):
        with plugrad.autograd.detect_anomaly():
            with pytest.warns(plugrad.errors.CompileWarning, match="anomaly mode is on"):
                log_step(w)
    log_step(w)
    assert w.grad.tolist()[1] == 3.0  # three passes (anomaly mode stopped one)


def test_a_modules_mode_read_outside_its_forward_is_guarded():
    # A method other than forward (not reached through __call__) reading self.training:
    # after model.eval() the replay still applied dropout.
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(plugrad.ones(4, 4))

        def embed(self, x):
            return nn.functional.dropout(x @ self.weight, 0.5, training=self.training)

    model = Model()
    compiled = plugrad.compile(lambda x: model.embed(x))
    x = plugrad.ones(2, 4)
    with plugrad.no_grad():
        compiled(x)
        compiled(x)
        model.eval()
        assert compiled(x).tolist() == model.embed(x).tolist()
        model.train()
        compiled(x)
    assert compiled.captures == 2 and "training" not in nn.Module.__dict__


@pytest.mark.parametrize("inner_warm", [False, True])
def test_a_compiled_function_called_by_another_is_part_of_its_plan(inner_warm):
    # The inner capture ended the outer one: the outer replayed its capture's result
    # (sin(1) at every call), and a warm inner plan met traced arrays (TypeError).
    w = plugrad.tensor([0.5, -1.0], requires_grad=True)
    inner = plugrad.compile(lambda x: (x * w).exp())

    def outer_function(x):
        y = inner(x).sin()
        y.sum().backward()
        return y.detach()

    outer = plugrad.compile(outer_function)
    if inner_warm:
        with plugrad.no_grad():
            inner(plugrad.ones(2))
            inner(plugrad.ones(2))  # replayed: the plan it tries first at the next call
    expected_grads = []
    for i in range(3):
        x = plugrad.full((2,), float(i))
        expected = ((x * w).exp().sin()).tolist()
        assert outer(x).tolist() == expected
        expected_grads.append(w.grad.tolist())
    assert expected_grads[0] != expected_grads[1] != expected_grads[2]
    assert outer.captures == 2  # .grad None, then a .grad to accumulate into


def test_a_scheduler_stepped_with_a_tensor_runs_eagerly_as_eager_would():
    # ReduceLROnPlateau.step(loss) replayed the capture's loss: lr fell at every call.
    def world():
        plugrad.manual_seed(0)
        model = nn.Linear(1, 1)
        opt = optim.SGD(model.parameters(), lr=0.1)
        return model, opt, optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0)

    def step_of(model, opt, scheduler):
        def step(x):
            opt.zero_grad()
            loss = (model(x) ** 2).mean()
            loss.backward()
            opt.step()
            scheduler.step(loss)
            return loss

        return step

    eager, compiled = step_of(*world()), step_of(*world())
    compiled_step = plugrad.compile(compiled)
    eager_lrs, compiled_lrs = [], []
    with pytest.warns(plugrad.errors.CompileWarning, match=r"step\(\) received a tensor"):
        for i in range(4):
            x = plugrad.tensor([[float(i + 1)]])
            eager(x)
            compiled_step(x)
            eager_lrs.append(eager.__closure__[1].cell_contents.param_groups[0]["lr"])
            compiled_lrs.append(compiled.__closure__[1].cell_contents.param_groups[0]["lr"])
    assert compiled_lrs == eager_lrs


NUMPY_ONLY = pytest.mark.skipif(
    plugrad.default_device().backend.name != "numpy",
    reason="only NumPy's tensors share host memory and have memory layouts",
)


@NUMPY_ONLY
def test_host_memory_written_or_returned_runs_eagerly_and_read_only_is_shared():
    np = pytest.importorskip("numpy")

    def written(x):
        c = plugrad.as_tensor(np.zeros(3, dtype=np.float32))
        with plugrad.no_grad():
            c.add_(x)
        return c * 1

    compiled = plugrad.compile(written)
    with pytest.warns(plugrad.errors.CompileWarning, match="wraps host memory"):
        results = [compiled(plugrad.ones(3)).tolist() for _ in range(3)]
    assert results == [[1.0] * 3] * 3  # was 1, 2, 3: one array shared by the replays
    table = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    compiled = plugrad.compile(lambda x: x * plugrad.as_tensor(table))
    assert compiled(plugrad.ones(3)).tolist() == [1.0, 2.0, 3.0]
    table[0] = 10.0  # as eagerly, a replay reads the array as it is now
    assert compiled(plugrad.ones(3)).tolist() == [10.0, 2.0, 3.0]
    assert compiled.captures == 1


def test_a_submodule_replaced_between_calls_is_seen():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 2)
            self.act = nn.Tanh()

        def forward(self, x):
            return self.act(self.fc(x))

    model = Net()
    compiled = plugrad.compile(lambda x: model(x).detach())
    x = plugrad.ones(1, 3)
    compiled(x)
    model.act = nn.ReLU()  # the replay computed tanh still
    assert compiled(x).tolist() == model(x).detach().tolist()
    assert compiled.captures == 2


def test_a_mode_set_inside_the_function_is_set_by_replays_and_the_mode_it_met_guarded():
    plugrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 8), nn.Dropout(0.5))

    def validate(x):
        out = model(x).detach()
        model.train()  # leaves the model in training mode
        return out

    compiled = plugrad.compile(validate)
    x = plugrad.ones(1, 2)
    model.eval()
    first = compiled(x)  # eval mode: no dropout
    assert model.training
    model.eval()
    assert compiled(x).tolist() == first.tolist() and model.training  # the replay set it
    plugrad.manual_seed(5)
    expected = validate(x).tolist()  # train mode: dropout
    plugrad.manual_seed(5)
    assert compiled(x).tolist() == expected  # replayed the eval-mode output before
    assert compiled.captures == 2


def test_a_generator_made_inside_the_function_starts_again_at_every_replay():
    def seeded(x):
        return x + plugrad.randn(3, generator=plugrad.Generator(seed=0))

    eager, compiled = _twice(seeded, plugrad.zeros(3))
    assert [_values(r) for r in compiled] == [_values(r) for r in eager]
    assert len({tuple(r.tolist()) for r in compiled}) == 1  # was a new draw each replay
    unseeded = plugrad.compile(lambda x: x + plugrad.randn(3, generator=plugrad.Generator()))
    assert len({tuple(unseeded(plugrad.zeros(3)).tolist()) for _ in range(3)}) == 3


def test_a_call_under_another_default_backend_makes_its_tensors_there():
    pytest.importorskip("array_api_strict")

    def make(n):
        return plugrad.ones(n) * 2

    compiled = plugrad.compile(make)
    assert compiled(3).device == plugrad.default_device()
    with plugrad.use_backend("array_api_strict"):
        result = compiled(3)
        assert result.device == plugrad.default_device()  # was the first call's device
    assert result.tolist() == [2.0, 2.0, 2.0]


@NUMPY_ONLY
def test_a_stride_read_is_guarded_by_the_layouts_not_a_graph_break():
    def branch(x):
        return x * 2 if x.is_contiguous() and x.stride(-1) == 1 else x * 3

    compiled = plugrad.compile(branch, fullgraph=True)
    rows, transposed = plugrad.ones(2, 3), plugrad.ones(3, 2).t()
    for _ in range(2):
        assert compiled(rows).tolist() == [[2.0] * 3] * 2
        assert compiled(transposed).tolist() == [[3.0] * 3] * 2  # its own plan


@NUMPY_ONLY
@pytest.mark.parametrize("captured_on", ["a contiguous tensor", "a transposed view"])
def test_views_that_depend_on_the_memory_layout_follow_the_arguments_layout(captured_on):
    def write_through(x):
        y = x.contiguous()  # x itself when contiguous, else a copy
        with plugrad.no_grad():
            y.add_(1)
        return y * 1

    def contiguous():
        return plugrad.zeros(2, 3)

    def transposed():
        return plugrad.zeros(3, 2).t()

    first, other = (contiguous, transposed)
    if captured_on == "a transposed view":
        first, other = other, first
    compiled = plugrad.compile(write_through)
    compiled(first())
    compiled(first())
    for make in (other, first):
        x, twin = make(), make()
        write_through(twin)
        compiled(x)
        assert x.tolist() == twin.tolist()
    view = plugrad.compile(lambda x: x.view(-1) * 2)
    view(plugrad.zeros(2, 2))
    with pytest.raises(plugrad.errors.ShapeError, match="without a copy"):
        view(plugrad.zeros(2, 2).t())  # was NumPy's ValueError from the replay


def test_numpy_float_arguments_are_told_apart_by_their_bits():
    np = pytest.importorskip("numpy")
    compiled = plugrad.compile(lambda x, s: x / s)
    with np.errstate(divide="ignore"):
        assert compiled(plugrad.ones(1), np.float64(0.0)).tolist() == [float("inf")]
        assert compiled(plugrad.ones(1), np.float64(-0.0)).tolist() == [float("-inf")]


def _made_then_written(x):
    v = plugrad.zeros(3)
    v.add_(x)
    return v.sum() * 2


def _view_of_a_made_tensor_written(x):
    v = plugrad.zeros(4)
    w = v[:2]
    v[1:3] = x
    return w.sum() + v.sum()


def _masked_mean(keep, p):
    mask = plugrad.zeros(4)
    mask.masked_fill_(keep, 1.0)
    loss = (p * mask).sum() / mask.sum()
    loss.backward()
    return loss


@pytest.mark.parametrize("optimize", [True, False])
def test_a_tensor_made_in_the_function_and_written_in_place_is_no_constant(optimize):
    # Made from constants (zeros), it was folded into the plan: its writes were lost at
    # replay (6, 6, 6 where eager gives 6, 12, 18), and a masked mean's loss and gradient too.
    made = plugrad.compile(_made_then_written, optimize=optimize)
    viewed = plugrad.compile(_view_of_a_made_tensor_written, optimize=optimize)
    masked = plugrad.compile(_masked_mean, optimize=optimize)
    for k, keep in zip((1.0, 2.0, 3.0), ([1, 1, 0, 0], [1, 0, 0, 0], [1, 1, 1, 1]), strict=True):
        assert made(plugrad.full((3,), k)).item() == 6.0 * k
        assert viewed(plugrad.full((2,), k)).item() == 3.0 * k
        keep = plugrad.tensor(keep, dtype=plugrad.bool)
        p = plugrad.ones(4, requires_grad=True)
        twin = plugrad.ones(4, requires_grad=True)
        assert masked(keep, p).item() == _masked_mean(keep, twin).item()
        assert p.grad.tolist() == twin.grad.tolist()


def _written_through_a_reshape(x, w):
    y = (x * w).sum()
    x.reshape(-1).add_(1.0)  # a view of x where x's layout allows it, else a copy
    y.backward()
    return w.grad


@NUMPY_ONLY
def test_a_write_through_a_reshape_is_guarded_by_the_layout():
    # Captured where the reshape copied (a transposed x), the plan was replayed for a
    # contiguous x, whose reshape is a view: x changed and backward used the changed value,
    # where eager raises.
    compiled = plugrad.compile(_written_through_a_reshape)
    for _ in range(2):
        x = plugrad.ones(4, 3).t()
        compiled(x, plugrad.ones((3, 4), requires_grad=True))
        assert x.tolist() == [[1.0] * 4] * 3
    with pytest.raises(plugrad.errors.InPlaceModificationError):
        _written_through_a_reshape(plugrad.ones(3, 4), plugrad.ones((3, 4), requires_grad=True))
    with pytest.raises(plugrad.errors.InPlaceModificationError):
        compiled(plugrad.ones(3, 4), plugrad.ones((3, 4), requires_grad=True))


def test_a_grad_made_in_the_call_and_given_a_new_array_keeps_it_at_replay():
    # .grad stored by backward (a read-only broadcast of a sum's gradient), then rebound to
    # a new array by an in-place op: the replay kept the first array (ones).
    w = plugrad.zeros(3, requires_grad=True)

    def scaled_grad(x):
        w.grad = None
        w.sum().backward()
        w.grad.mul_(x)
        return w.grad

    def replaced_data(x):
        w.grad = x * 2
        w.grad.data = x * 5
        return x * 1

    compiled, compiled_data = plugrad.compile(scaled_grad), plugrad.compile(replaced_data)
    for k in (2.0, 3.0, 4.0):
        assert compiled(plugrad.full((3,), k)).tolist() == [k] * 3
        assert w.grad.tolist() == [k] * 3
        compiled_data(plugrad.full((3,), k))
        assert w.grad.tolist() == [5 * k] * 3


def test_an_argument_that_is_a_free_tensor_is_not_replayed_as_another():
    # Captured with a separate argument, a call passing the free tensor itself replayed:
    # one .grad written over the other, where eager adds both.
    w = plugrad.ones(3).requires_grad_()
    lin = nn.Linear(3, 3)

    def f(x):
        ((w * 2).sum() + (x * 3).sum() + (lin(x) * x).sum()).backward()

    compiled = plugrad.compile(f)
    for _ in range(2):
        compiled(plugrad.ones(3).requires_grad_())
    for argument in (w, lin.weight[0].detach().requires_grad_(), lin.bias):
        grads = []
        for function in (f, compiled, compiled):
            for t in (w, argument, lin.weight, lin.bias):
                t.grad = None
            function(argument)
            grads.append([t.grad.tolist() for t in (w, argument, lin.weight, lin.bias)])
        assert grads[1] == grads[0] and grads[2] == grads[0]


# (Where views are copies, JAX and Dask, such calls run eagerly, with a warning.)
@pytest.mark.filterwarnings("ignore::plugrad.errors.CompileWarning")
def test_arguments_sharing_memory_are_not_replayed_as_separate_ones():
    # The eager call raises (a saved tensor written in place); a plan captured with
    # separate tensors gave a gradient of the overwritten value.
    def f(x, w):
        z = (w * w).sum()
        with plugrad.no_grad():
            x.add_(1)
        z.backward()

    compiled = plugrad.compile(f)
    for _ in range(2):
        compiled(plugrad.zeros(3), plugrad.ones(3).requires_grad_())
    for function in (f, compiled, compiled):
        w = plugrad.ones(3).requires_grad_()
        with pytest.raises(InPlaceModificationError):
            function(w.detach(), w)
        assert w.grad is None
    # Sharing memory with a free tensor the plan writes (an optimizer's parameter) too.
    lin = nn.Linear(2, 2)
    opt = optim.SGD(lin.parameters(), lr=0.5)

    def step(x):
        opt.zero_grad()
        lin(x).sum().backward()
        opt.step()
        return x * 1

    compiled_step = plugrad.compile(step)
    twin = copy.deepcopy(lin)
    twin_opt = optim.SGD(twin.parameters(), lr=0.5)
    for _ in range(2):
        compiled_step(plugrad.ones(2, 2))
        twin_opt.zero_grad()
        twin(plugrad.ones(2, 2)).sum().backward()
        twin_opt.step()
    results = []
    for module, function in ((twin, None), (lin, compiled_step)):
        row = module.weight[0]  # a view of the parameter the step updates
        if function is None:
            twin_opt.zero_grad()
            module(row.detach()).sum().backward()
            twin_opt.step()
            results.append((row.detach() * 1).tolist())
        else:
            results.append(function(row.detach()).tolist())
    assert results[1] == results[0]
    assert lin.weight.tolist() == twin.weight.tolist()


def test_functional_call_inside_a_compiled_function_is_replayed():
    # Its swap of the module's tensors looked like lazy initialisation: every call captured.
    module = nn.Linear(3, 2)
    params = {k: v.detach().clone() * 2 for k, v in module.named_parameters()}

    def f(x):
        return plugrad.func.functional_call(module, params, (x,))

    compiled = plugrad.compile(f)
    for seed in range(4):
        x = plugrad.randn(4, 3, generator=plugrad.Generator(seed=seed))
        assert compiled(x).tolist() == f(x).tolist()
    assert compiled.captures == 1
    assert module.weight is not params["weight"]  # the module's own tensors are back


_SCALE = plugrad.tensor([1.0, 2.0, 3.0])


def _times_scale(x):
    return x * _SCALE


def test_rebinding_a_global_or_a_closure_variable_the_function_reads_captures_anew():
    # A replay read the tensor the capture found: [1, 2, 3] after the global was rebound.
    global _SCALE
    compiled = plugrad.compile(_times_scale)
    before = _SCALE
    try:
        for _ in range(2):
            assert compiled(plugrad.ones(3)).tolist() == [1.0, 2.0, 3.0]
        _SCALE = plugrad.tensor([10.0, 20.0, 30.0])
        assert compiled(plugrad.ones(3)).tolist() == [10.0, 20.0, 30.0]
        assert compiled.captures == 2
    finally:
        _SCALE = before
    assert compiled(plugrad.ones(3)).tolist() == [1.0, 2.0, 3.0] and compiled.captures == 2

    offset = plugrad.tensor([1.0])

    def shifted(x):
        return x + offset

    compiled = plugrad.compile(shifted)
    assert compiled(plugrad.zeros(2)).tolist() == compiled(plugrad.zeros(2)).tolist() == [1.0] * 2
    offset = plugrad.tensor([5.0])  # read through the closure
    assert compiled(plugrad.zeros(2)).tolist() == [5.0, 5.0]


class _Trainer:
    """A trainer holding its model, optimizer and scheduler as attributes."""

    def __init__(self, lr: float) -> None:
        self.model = nn.Linear(2, 1)
        self.optimizer = optim.SGD(self.model.parameters(), lr=lr)
        self.scheduler = optim.lr_scheduler.StepLR(self.optimizer, 1, 0.5)

    def step(self, x):
        self.optimizer.zero_grad()
        loss = self.model(x).sum()
        loss.backward()
        self.optimizer.step()
        self.scheduler.step()
        return loss


def test_replacing_an_object_the_function_reaches_by_an_attribute_or_a_key_captures_anew():
    # A replay read the objects the capture found: a trainer's model, optimizer or
    # scheduler replaced (t.model = ...), one held in a dictionary (state["opt"] = ...),
    # a function held by a module (m.act = plugrad.tanh) or a forward set on the instance
    # went on computing with the old one, without a word.
    x = plugrad.ones(3, 2)

    def run(trainer, compiled, change):
        losses = []
        for call in range(6):
            if call == 3:
                change(trainer)
            losses.append(compiled(x).item())
        return losses, [p.detach().clone() for p in trainer.model.parameters()]

    def new_model(trainer):
        trainer.model = nn.Linear(2, 1)
        with plugrad.no_grad():
            trainer.model.weight.fill_(0.5)
            trainer.model.bias.fill_(-1.0)

    changes = {
        "model": new_model,
        "optimizer": lambda t: setattr(t, "optimizer", optim.SGD(t.model.parameters(), lr=1.0)),
        "scheduler": lambda t: setattr(
            t, "scheduler", optim.lr_scheduler.ExponentialLR(t.optimizer, 0.9)
        ),
    }
    for name, change in changes.items():
        plugrad.manual_seed(0)
        eager = _Trainer(0.1)
        plugrad.manual_seed(0)
        compiled = _Trainer(0.1)
        expected, expected_params = run(eager, eager.step, change)
        got, got_params = run(compiled, plugrad.compile(compiled.step), change)
        assert got == expected, name
        for mine, theirs in zip(got_params, expected_params):
            assert mine.tolist() == theirs.tolist(), name

    weight = plugrad.tensor([1.0], requires_grad=True)
    state = {"opt": optim.SGD([weight], lr=0.1)}

    def step():
        state["opt"].zero_grad()
        (weight * 1).sum().backward()
        state["opt"].step()
        return weight.detach() * 1  # (no graph: a lazy backend runs a returned one eagerly)

    compiled = plugrad.compile(step)
    assert [compiled().item() for _ in range(2)] == pytest.approx([0.9, 0.8])
    state["opt"] = optim.SGD([weight], lr=10.0)
    assert compiled().item() == pytest.approx(-9.2)

    class Activated(nn.Module):
        def __init__(self):
            super().__init__()
            self.act = plugrad.relu

        def forward(self, x):
            return self.act(x)

    values = plugrad.tensor([-1.0, 2.0])
    module = Activated()
    compiled = plugrad.compile(module)
    assert compiled(values).tolist() == compiled(values).tolist() == [0.0, 2.0]
    module.act = plugrad.tanh
    assert compiled(values).tolist() == plugrad.tanh(values).tolist()

    layer = nn.Linear(2, 2).requires_grad_(False)  # (no graph: lazy backends replay it too)
    compiled = plugrad.compile(nn.Sequential(layer))  # a module it calls, not the one compiled
    compiled(values)
    compiled(values)
    layer.forward = lambda t: t * 100
    assert compiled(values).tolist() == [-100.0, 200.0]


_FACTOR = plugrad.full((2,), 4.0)


class _Doubled(nn.Module):
    scale = plugrad.full((2,), 1.0)  # a class-level default

    def helper(self, x):
        return x * 2 * _FACTOR  # a method reading a global

    def forward(self, x):
        return self.helper(x) * self.scale


class _Square(Square):
    """Its forward and backward inherited (replacing one here is seen all the same)."""


class _Cube(plugrad.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        return g * 0


_OP = _Square


def test_code_and_state_reached_through_classes_methods_and_containers_capture_anew():
    # Each change below left replays computing with the old code or tensor: a setting
    # shadowing the class's default, a method or forward replaced on the instance or the
    # class, a global read by a method, a global class rebound, a custom Function's
    # backward replaced, a ModuleDict entry or a ModuleList layer added (held in a
    # closure).
    global _FACTOR, _OP
    x = plugrad.ones(2)
    changes = [
        lambda m: setattr(m, "scale", plugrad.full((2,), 5.0)),
        lambda m: setattr(m, "helper", lambda t: t * 10),
        lambda m: setattr(_Doubled, "forward", lambda self, t: t * 7),
        lambda m: globals().__setitem__("_FACTOR", plugrad.full((2,), 3.0)),
    ]
    saved = (_Doubled.__dict__["forward"], _FACTOR)
    try:
        for change in changes:
            module = _Doubled()
            compiled = plugrad.compile(module)
            assert compiled(x).tolist() == compiled(x).tolist() == [8.0, 8.0]
            change(module)
            assert compiled(x).tolist() == module(x).tolist() != [8.0, 8.0]
            _Doubled.forward, _FACTOR = saved
    finally:
        _Doubled.forward, _FACTOR = saved

    def gradient(x):
        x = x.detach().requires_grad_(True)
        _OP.apply(x * 2).sum().backward()
        return x.grad

    compiled = plugrad.compile(gradient)
    assert compiled(x).tolist() == compiled(x).tolist() == [8.0, 8.0]
    try:
        _OP = _Cube
        assert compiled(x).tolist() == [0.0, 0.0]
        _OP = _Square
        assert compiled(x).tolist() == [8.0, 8.0]
        _Square.backward = staticmethod(lambda ctx, g: g * 9)
        assert compiled(x).tolist() == gradient(x).tolist() == [18.0, 18.0]
    finally:
        _OP = _Square
        del _Square.backward

    heads = nn.ModuleDict({"act": nn.Tanh()})
    layers = nn.ModuleList([nn.Tanh()])

    def through_containers(x):
        for layer in layers:
            x = layer(x)
        return heads["act"](x)

    compiled = plugrad.compile(through_containers)
    for _ in range(2):
        assert compiled(x).tolist() == through_containers(x).tolist()
    heads["act"] = nn.Sigmoid()
    assert compiled(x).tolist() == through_containers(x).tolist()
    layers.append(nn.Tanh())
    assert compiled(x).tolist() == through_containers(x).tolist()


def test_replacing_a_functions_default_arguments_captures_anew():
    # A default read by the function is part of what the capture saw: replays used the
    # old one after fn.__defaults__ (or __kwdefaults__) was replaced.
    def scaled(x, scale=2.0, *, shift=0.0):
        return x * scale + shift

    compiled = plugrad.compile(scaled)
    for _ in range(2):
        assert compiled(plugrad.ones(2)).tolist() == [2.0, 2.0]
    scaled.__defaults__ = (3.0,)
    assert compiled(plugrad.ones(2)).tolist() == [3.0, 3.0]
    scaled.__kwdefaults__ = {"shift": 1.0}
    assert compiled(plugrad.ones(2)).tolist() == [4.0, 4.0]
    assert compiled(plugrad.ones(2)).tolist() == [4.0, 4.0] and compiled.captures == 3

    weight = plugrad.tensor([1.0, 2.0])

    def weighted(x, w=weight):  # a default tensor: read by identity like a global one
        return x * w

    compiled = plugrad.compile(weighted)
    assert compiled(plugrad.ones(2)).tolist() == compiled(plugrad.ones(2)).tolist() == [1.0, 2.0]
    weighted.__defaults__ = (plugrad.tensor([5.0, 6.0]),)
    assert compiled(plugrad.ones(2)).tolist() == [5.0, 6.0]


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")
def test_python_numbers_in_namedtuples_dataclasses_and_dict_keys_are_told_apart():
    # They were compared with ==: 1 matched 1.0 (an int64 result replayed for a float32
    # one) and 0.0 matched -0.0 (inf replayed for -inf).
    import collections
    import dataclasses

    Settings = collections.namedtuple("Settings", "scale eps")

    @dataclasses.dataclass(frozen=True)
    class Frozen:
        scale: object

    def step(x, settings, frozen, keyed):
        return x * settings.scale / settings.eps, x * frozen.scale, sum(x * k for k in keyed)

    compiled = plugrad.compile(step)
    x = plugrad.tensor([1, 2, 3])
    calls = [(Settings(1, 0.0), Frozen(1), {1: None}), (Settings(1.0, -0.0), Frozen(1.0), {1.0: 0})]
    for arguments in calls + calls:
        for mine, eager in zip(compiled(x, *arguments), step(x, *arguments)):
            assert mine.dtype == eager.dtype and str(mine.tolist()) == str(eager.tolist())
    assert compiled.captures == 2
    with pytest.raises(plugrad.errors.CompileError, match="Tensor as a key"):
        compiled(x, calls[0][0], calls[0][1], {x: 1})


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")
def test_frozensets_and_tuple_subclasses_are_described_element_by_element():
    # A frozenset was compared with ==: {1} matched {1.0} and {0.0} matched {-0.0}.
    class Pair(tuple):
        pass

    def step(x, options, pair):
        (value,) = options
        scale = 2 if type(value) is float else 1
        return x * scale / value, x / pair[0]

    compiled = plugrad.compile(step)
    x = plugrad.tensor([1.0, -2.0])
    calls = [
        (frozenset({1}), Pair((0.0,))), (frozenset({1.0}), Pair((-0.0,))),
        (frozenset({0.0}), Pair((1,))), (frozenset({-0.0}), Pair((1.0,))),
    ]  # fmt: skip
    for arguments in calls + calls:
        for mine, eager in zip(compiled(x, *arguments), step(x, *arguments)):
            assert str(mine.tolist()) == str(eager.tolist()), arguments
    assert compiled.captures == 4
    with pytest.raises(plugrad.errors.CompileError, match="frozenset holding tensors"):
        compiled(x, frozenset({x}), Pair((1.0,)))


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")
def test_a_literal_minus_zero_is_not_merged_with_zero():
    # Common subexpressions keyed 0.0 and -0.0 alike: 1 / (x * -0.0) replayed 1 / (x * 0.0).
    def step(x):
        return (
            1.0 / (x * 0.0), 1.0 / (x * -0.0),
            plugrad.where(x > 0, x, 0.0) * -1, plugrad.where(x > 0, x, -0.0) * -1,
        )  # fmt: skip

    compiled = plugrad.compile(step)
    x = plugrad.tensor([1.0, -2.0])
    for _ in range(3):
        for mine, eager in zip(compiled(x), step(x)):
            assert str(mine.tolist()) == str(eager.tolist())
    assert compiled.captures == 1


def test_a_grad_scaler_whose_scale_changed_is_not_replayed_with_the_old_one() -> None:
    # The plan multiplied by the scale of the capture: after a backoff the replayed gradients
    # were twice eager's (unscale_ divides by the new scale), without a word.
    weight = nn.Parameter(plugrad.ones(2))
    scaler = plugrad.amp.GradScaler(init_scale=4.0)

    def step(x):
        weight.grad = None
        scaler.scale((weight * x).sum()).backward()

    found = []
    for function in (step, plugrad.compile(step)):
        scaler._scale = 4.0
        scaler._enabled = True
        grads = []
        for scale in (8.0, 8.0, 2.0, None):
            function(plugrad.tensor([1.0, 3.0]))
            grads.append(weight.grad.tolist())
            if scale is None:
                scaler._enabled = False  # (a scaler turned off scales nothing)
            else:
                scaler.update(new_scale=scale)
        function(plugrad.tensor([1.0, 3.0]))
        found.append([*grads, weight.grad.tolist()])
    assert found[0] == found[1] == [[4, 12], [8, 24], [8, 24], [2, 6], [1, 3]]


def test_an_argument_that_was_a_parameters_grad_at_capture_is_guarded():
    # Captured with x being a.grad, the plan was replayed for a fresh x: it wrote into the
    # caller's tensor and left a.grad as it was.
    logs = []
    for compiled in (False, True):
        a = plugrad.ones(3, requires_grad=True)

        def f(x, a=a):
            (a * x).sum().backward()
            return x * 1

        step = plugrad.compile(f) if compiled else f
        log = []
        for call in range(4):
            x = a.grad if call == 1 else plugrad.full((3,), 2.0)
            result = step(x)
            log.append((result.tolist(), a.grad.tolist(), x.tolist()))
        logs.append(log)
    assert logs[0] == logs[1]


def test_parameters_sharing_one_grad_at_capture_are_guarded():
    # Captured with a.grad is b.grad, the plan went on adding into one tensor after the
    # two were given separate gradients: a.grad stopped changing.
    results = []
    for compiled in (False, True):
        a = plugrad.ones(3, requires_grad=True)
        b = plugrad.ones(3, requires_grad=True)
        a.grad = b.grad = plugrad.zeros(3)

        def f(a=a, b=b):
            (a + 2 * b).sum().backward()

        step = plugrad.compile(f) if compiled else f
        run = []
        for call in range(5):
            if call == 3:
                b.grad = a.grad.clone()
            step()
            run.append((a.grad.tolist(), b.grad.tolist(), a.grad is b.grad))
        results.append(run)
    assert results[0] == results[1]


def _ema_of_state_made_at_the_first_call():
    state = {}

    def ema(x):
        if "ema" not in state:
            state["ema"] = plugrad.zeros(2)
        state["ema"].mul_(0.5).add_(x)
        return state["ema"] * 1

    return ema, state


def _hidden_state_carried_in_an_attribute():
    class Carry(nn.Module):
        def __init__(self):
            super().__init__()
            self.h = plugrad.zeros(2)

        def forward(self, x):
            self.h = (self.h * 0.5 + x).detach()  # a new tensor each call, kept as state
            return self.h * 1

    module = Carry()
    return module, module.__dict__


def _momentum_made_at_the_first_call():
    plugrad.manual_seed(0)
    model = nn.Linear(3, 1)
    momentum = {}

    def step(x):
        for p in model.parameters():
            p.grad = None
        loss = (model(x) ** 2).mean()
        loss.backward()
        with plugrad.no_grad():
            for p in model.parameters():
                if p not in momentum:
                    momentum[p] = p.grad.clone()
                else:
                    momentum[p].mul_(0.9).add_(p.grad)
                p -= 0.1 * momentum[p]
        return loss

    return step, momentum


@pytest.mark.parametrize(
    "make",
    [_ema_of_state_made_at_the_first_call, _hidden_state_carried_in_an_attribute,
     _momentum_made_at_the_first_call],
)  # fmt: skip
def test_a_tensor_made_in_the_call_and_kept_as_state_is_not_made_anew_by_replays(make):
    # Replays made the kept tensor again each call as a temporary: the state stayed as the
    # first call left it, and results drifted from the second call on, without a word.
    eager, eager_state = make()
    compiled, state = make()
    compiled = plugrad.compile(compiled, fullgraph=True)
    shape = (4, 3) if make is _momentum_made_at_the_first_call else (2,)
    for value in (1.0, 2.0, 3.0, 4.0, 5.0):
        x = plugrad.full(shape, value)
        assert compiled(x).tolist() == eager(x).tolist()

    def tensors(held):
        return [v.tolist() for v in held.values() if isinstance(v, plugrad.Tensor)]

    assert tensors(state) == tensors(eager_state) != []


def test_a_function_keeping_a_new_tensor_at_every_call_runs_eagerly_after_three_captures():
    # Each capture is right but not kept (the kept tensor is the call's own): rather than
    # capture at every call, the signature runs eagerly, with one warning saying why.
    module, _ = _hidden_state_carried_in_an_attribute()
    eager, _ = _hidden_state_carried_in_an_attribute()
    compiled = plugrad.compile(module)
    with pytest.warns(plugrad.errors.CompileWarning, match="kept after the call.*3 captures"):
        for value in (1.0, 2.0, 3.0):
            x = plugrad.full((2,), value)
            assert compiled(x).tolist() == eager(x).tolist()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for value in (4.0, 5.0):
            x = plugrad.full((2,), value)
            assert compiled(x).tolist() == eager(x).tolist()
    assert compiled.captures == 3
    # With fullgraph=True it never runs eagerly: it captures at every call, still right.
    module, _ = _hidden_state_carried_in_an_attribute()
    eager, _ = _hidden_state_carried_in_an_attribute()
    compiled = plugrad.compile(module, fullgraph=True)
    for value in (1.0, 2.0, 3.0, 4.0):
        x = plugrad.full((2,), value)
        assert compiled(x).tolist() == eager(x).tolist()
    assert compiled.captures == 4


def test_state_kept_in_a_tuple_is_named_by_its_own_shape():
    # The warning named the shape of another tensor the call made ((2, 4) for (1, 2, 4)).
    lstm = nn.LSTM(3, 4)
    state = {}

    @plugrad.compile
    def step(x):
        out, (h, c) = lstm(x, state["hc"]) if state else lstm(x)
        state["hc"] = (h.detach(), c.detach())
        return out.detach()

    with pytest.warns(plugrad.errors.CompileWarning, match=r"made \(shape \(1, 2, 4\)\) is kept"):
        for _ in range(4):
            step(plugrad.randn(5, 2, 3))


def _transposed_product(x, g):
    return (x.T - 0.5) * g  # x.T - 0.5 is laid out by columns; the product, eagerly, by rows


@NUMPY_ONLY
@pytest.mark.parametrize(
    "after",
    [
        pytest.param(lambda y: y.sum(axis=0), id="summed"),
        pytest.param(lambda y: y.view(-1), id="viewed"),
        pytest.param(lambda y: y.contiguous().view(-1), id="made contiguous, viewed"),
        pytest.param(lambda y: y, id="returned"),
    ],
)
def test_a_result_written_into_an_operand_keeps_the_layout_eager_gives_it(after):
    # Written into the difference's memory (out=), the product took its layout: a sum
    # over it added in another order (other last bits), and a view of it failed.
    plugrad.manual_seed(0)
    x, g = plugrad.randn(64, 32), plugrad.randn(32, 64)

    def f(x, g):
        return after(_transposed_product(x, g))

    compiled = plugrad.compile(f, fullgraph=True)
    expected = f(x, g)
    for _ in range(3):
        result = compiled(x, g)
        assert result.stride() == expected.stride()
        assert result.numpy().tobytes() == expected.numpy().tobytes()


@NUMPY_ONLY
def test_a_plan_that_writes_by_layout_is_captured_again_for_arguments_laid_out_otherwise():
    # The plan writes the product into the sum's memory only because, at capture, both
    # were laid out alike: arguments laid out otherwise make another plan, as eager results
    # would be laid out otherwise too.
    def f(x, g):
        return ((x + 1.0) * g).sum(axis=0)

    compiled = plugrad.compile(f, fullgraph=True)
    rows, columns = plugrad.randn(16, 8), plugrad.randn(8, 16).T
    g = plugrad.randn(16, 8)
    for x in (rows, rows, columns, columns, rows):
        assert compiled(x, g).numpy().tobytes() == f(x, g).numpy().tobytes()
    assert compiled.captures == 2


@NUMPY_ONLY
def test_a_product_with_a_seed_of_ones_keeps_the_layout_eager_gives_it():
    # ones * b, with b a transposed view, is laid out by rows; b by columns. The plan
    # read b for the product (1 * x is x), and the gradient summed in another order.
    np = pytest.importorskip("numpy")
    columns = np.random.default_rng(0).standard_normal((300, 200)).astype(np.float32)

    def f(c, b):
        y = (c * 2) * b
        y.backward(plugrad.ones_like(y))
        return c.grad.sum(), c.grad

    compiled = plugrad.compile(f, fullgraph=True)
    for _ in range(3):
        made = [(plugrad.ones(200, 300, requires_grad=True), plugrad.tensor(columns).t())
                for _ in range(2)]  # fmt: skip
        (total, grad), (expected_total, expected_grad) = compiled(*made[0]), f(*made[1])
        assert total.numpy().tobytes() == expected_total.numpy().tobytes()
        assert grad.stride() == expected_grad.stride()
        grad.view(-1)  # eagerly a view: the memory is laid out by rows


def test_a_result_whose_graph_a_backward_in_the_function_freed_runs_eagerly():
    # Its backward needs what the backward in the function freed: the capture failed
    # (GraphFreedError); eagerly the call works, and so does it now, with a warning.
    def f(a):
        y = a.exp()
        y.sum().backward()
        return y * 2

    compiled = plugrad.compile(f)
    # (on a lazy backend a result that carries a graph runs eagerly anyway)
    with pytest.warns(plugrad.errors.CompileWarning, match=r"freed|outlives the call"):
        compiled(plugrad.ones(3, requires_grad=True))
    for _ in range(2):
        a, b = plugrad.ones(3, requires_grad=True), plugrad.ones(3, requires_grad=True)
        result, expected = compiled(a), f(b)
        assert result.tolist() == expected.tolist() and result.requires_grad
        assert a.grad.tolist() == b.grad.tolist()
        with pytest.raises(plugrad.errors.GraphFreedError):
            result.sum().backward()
    with pytest.raises(plugrad.errors.GraphBreakError, match=r"freed|outlives the call"):
        plugrad.compile(f, fullgraph=True)(plugrad.ones(3, requires_grad=True))


def test_seeding_inside_a_step_that_sets_grads_keeps_its_plan():
    # The .grad reads after the seeding (a call replays repeat) became guards at the start
    # of the plan, contradicting those made before it: every call captured again.
    plugrad.manual_seed(0)
    models = [nn.Linear(5, 8) for _ in range(2)]
    models[1].load_state_dict(models[0].state_dict())
    optimizers = [optim.SGD(m.parameters(), lr=0.1) for m in models]
    generators = [plugrad.Generator() for _ in range(2)]

    def step(model, optimizer, generator, x):
        optimizer.zero_grad()
        generator.manual_seed(11)
        loss = nn.functional.dropout(model(x), 0.5, generator=generator).sum()
        loss.backward()
        optimizer.step()
        return loss.detach()

    compiled = plugrad.compile(lambda x: step(models[0], optimizers[0], generators[0], x))
    for _ in range(5):
        x = plugrad.ones(3, 5)
        got = compiled(x)
        expected = step(models[1], optimizers[1], generators[1], x)
        assert got.numpy().tobytes() == expected.numpy().tobytes()
    assert compiled.captures == 2  # .grad None at the first call, set at the others


def test_a_grad_read_after_an_optimizer_step_is_checked_where_it_is_read():
    # An optimizer step may run a closure that sets .grad: what the plan reads after it is
    # checked at that point, not at the start of the call.
    def made():
        w = plugrad.ones(3, requires_grad=True)
        optimizer = optim.SGD([w], lr=0.1)

        def closure():
            optimizer.zero_grad()
            loss = (w * w).sum()
            loss.backward()
            return loss

        return w, optimizer, closure

    w, optimizer, closure = made()
    twin_w, twin_optimizer, twin_closure = made()

    def step():
        optimizer.step(closure)
        return w.grad * 1

    compiled = plugrad.compile(step)
    for _ in range(4):
        got = compiled()
        twin_optimizer.step(twin_closure)
        assert got.tolist() == (twin_w.grad * 1).tolist()
        assert w.tolist() == twin_w.tolist()


_SHARED = {}


def _doubles_and_reads_the_global(x):
    x.mul_(2)
    return _SHARED["a"] + 0


def test_an_argument_that_is_also_a_global_the_function_reads_is_that_tensor_only():
    # Captured with the global passed, the plan read the global as the argument: a call
    # with another tensor then returned that tensor's values and left the global alone.
    results = []
    for function in (_doubles_and_reads_the_global, plugrad.compile(_doubles_and_reads_the_global)):
        _SHARED["a"], b = plugrad.tensor([1.0, 2.0]), plugrad.tensor([10.0, 20.0])
        function(_SHARED["a"])
        results.append((function(b).tolist(), _SHARED["a"].tolist(), b.tolist()))
        function(_SHARED["a"])
        results.append((function(b).tolist(), _SHARED["a"].tolist(), b.tolist()))
    assert results[:2] == results[2:]


def test_a_parameter_passed_to_a_step_that_also_trains_it_is_not_taken_for_another():
    # The step captured with the model's weight passed updated the other tensor, passed
    # later, as the weight (and not the weight itself).
    def run(compiled):
        plugrad.manual_seed(0)
        model, other = nn.Linear(2, 1), nn.Parameter(plugrad.ones((1, 2)))
        optimizer = optim.SGD(model.parameters(), lr=0.1)
        x = plugrad.tensor([[1.0, 2.0]])

        def step(p):
            optimizer.zero_grad()
            loss = model(x).sum() + (p**2).sum()
            loss.backward()
            optimizer.step()
            return loss.detach()

        function = plugrad.compile(step) if compiled else step
        losses = [function(p).item() for p in (other, model.weight, other, model.weight, other)]
        return losses, other.tolist(), model.weight.tolist()

    assert run(True) == run(False)


def test_an_argument_held_by_the_object_whose_method_is_compiled_is_that_tensor_only():
    class Accumulator:
        def __init__(self):
            self.total = plugrad.zeros(2)

        def add(self, x):
            self.total.add_(x)
            return self.total * 1

    results = []
    for compiled in (False, True):
        accumulator = Accumulator()
        add = plugrad.compile(accumulator.add) if compiled else accumulator.add
        other = plugrad.ones(2)
        outcome = [add(accumulator.total).tolist(), add(other).tolist(), add(other).tolist()]
        results.append((outcome, accumulator.total.tolist(), other.tolist()))
    assert results[0] == results[1]


class _Recurrent:
    def __init__(self):
        self.h = plugrad.zeros(2)

    def step(self, x):
        self.h = (self.h * 0.5 + x).detach()
        return self.h


_STATE = {}


def _keeps_and_returns_a_view(x):
    _STATE["h"] = _STATE["h"] + x
    return _STATE["h"][0:1]


@pytest.mark.parametrize("kind", ["attribute, returned", "dict, a view returned"])
def test_new_state_a_call_keeps_and_returns_is_not_frozen_at_the_capture(kind):
    # The plan made the returned tensor anew, but the assignment to the attribute (Python)
    # ran only at capture: the state stayed the capture's, and so did every result.
    outcomes = []
    for compiled in (False, True):
        if kind == "attribute, returned":
            holder = _Recurrent()
            function, state = holder.step, lambda: holder.h  # noqa: B023
        else:
            _STATE["h"] = plugrad.zeros(2)
            function, state = _keeps_and_returns_a_view, lambda: _STATE["h"]
        if compiled:
            function = plugrad.compile(function)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", plugrad.errors.CompileWarning)  # runs eagerly
            results = [function(plugrad.tensor([1.0, 2.0])).tolist() for _ in range(5)]
        outcomes.append((results, state().tolist()))
    assert outcomes[0] == outcomes[1]


def test_requires_grad_read_of_a_tensor_the_plan_does_not_compute_with_is_guarded():
    # Only tensors whose arrays the plan read were guarded: w2, skipped for not requiring
    # grad at capture, stayed skipped after requires_grad_().
    w1, w2 = plugrad.tensor([1.0, 2.0], requires_grad=True), plugrad.tensor([3.0, 4.0])

    def penalty(x):
        return x * sum((p.detach() ** 2).sum() for p in (w1, w2) if p.requires_grad)

    compiled = plugrad.compile(penalty)
    x = plugrad.tensor([1.0])
    for change in (None, None, lambda: w2.requires_grad_(True), None):
        if change is not None:
            change()
        assert compiled(x).tolist() == penalty(x).tolist()
    assert compiled.captures == 2


_HELPER_SCALE = None


def _times_the_scale(x):
    return x * _HELPER_SCALE


def test_globals_read_by_a_helper_or_an_inner_compiled_function_are_guarded():
    # Only the names of the compiled function's own code were guarded: rebinding a global
    # that a helper (or a compiled function it calls) reads replayed the old tensor.
    global _HELPER_SCALE
    _HELPER_SCALE = plugrad.tensor([2.0])
    inner = plugrad.compile(_times_the_scale)
    outer = plugrad.compile(lambda x: inner(x) + 1)
    through_helper = plugrad.compile(lambda x: _times_the_scale(x) + 1)
    x = plugrad.tensor([3.0, 4.0])
    for _ in range(2):
        assert outer(x).tolist() == through_helper(x).tolist() == [7.0, 9.0]
    _HELPER_SCALE = plugrad.tensor([10.0])
    for _ in range(2):
        assert outer(x).tolist() == through_helper(x).tolist() == [31.0, 41.0]
        assert inner(x).tolist() == [30.0, 40.0]


@pytest.mark.parametrize(
    "function",
    [
        pytest.param(lambda x: ((x * i).exp() for i in range(3)), id="generator"),
        pytest.param(lambda x: map(lambda i: (x * i).exp(), range(3)), id="map"),
        pytest.param(lambda x: lambda: (x * 2).exp(), id="closure"),
    ],
)
def test_a_result_that_computes_when_used_runs_eagerly(function):
    # The plan handed out the capture's generator (or closure) again: the values of the
    # capture's tensors, then nothing once the generator was used up.
    def values(result):
        return result().tolist() if callable(result) else [t.tolist() for t in result]

    compiled = plugrad.compile(function)
    with pytest.warns(plugrad.errors.CompileWarning, match="computes when it is used"):
        compiled(plugrad.tensor([1.0, 2.0]))
    for _ in range(2):
        x = plugrad.tensor([3.0, 4.0])
        assert values(compiled(x)) == values(function(x))
    with pytest.raises(plugrad.errors.GraphBreakError, match="computes when it is used"):
        plugrad.compile(function, fullgraph=True)(plugrad.tensor([1.0]))


def test_eager_code_in_other_threads_runs_as_usual_while_a_capture_is_under_way():
    # The tables and descriptors a capture installs serve the whole process: another
    # thread's eager ops got traced arrays (PluginOutputError, TypeError), and the
    # capturing thread lost tensors' arrays (AttributeError) or took the other thread's
    # .tolist() for a graph break of its own.
    import sys
    import threading

    compiled = plugrad.compile(lambda x, w: (x @ w).tanh().exp(), cache_size=1)
    w = plugrad.ones((3, 6)) * 0.1
    inputs = [plugrad.ones((4, 3)), plugrad.ones((5, 3))]  # a capture at every call
    expected = [(x @ w).tanh().exp().tolist() for x in inputs]
    a, b = plugrad.full((2, 3), 0.5), plugrad.full((3, 6), 0.5)
    other_expected = (a @ b).tanh().exp().tolist()
    failures, done = [], []

    def capturing():
        try:
            for i in range(60):
                if compiled(inputs[i % 2], w).tolist() != expected[i % 2]:
                    failures.append("compiled result")
        except Exception as exc:  # reported below, with the other thread's
            failures.append(repr(exc))
        finally:
            done.append(True)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", plugrad.errors.CompileWarning)
            # (a capture at every call is the point here, not something to tell)
            warnings.filterwarnings(
                "ignore", "plugrad.compile: .* captured again", plugrad.errors.CompileWarning
            )
            thread = threading.Thread(target=capturing)
            thread.start()
            while not done:
                try:
                    if (a @ b).tanh().exp().tolist() != other_expected:
                        failures.append("eager result")
                except Exception as exc:
                    failures.append(repr(exc))
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert failures == []


@pytest.mark.skipif(
    plugrad.default_device().backend.name != "numpy",
    reason="kernels that read index values in Python end a capture on some backends "
    "(array-api-strict, documented); NumPy's (add.at) reads none",
)
def test_index_put_accumulating_is_captured_and_checks_its_indices_at_every_replay():
    # Its bounds check read the indices (bool()): a graph break, every call eager
    # (fullgraph=True raised) on NumPy, whose kernel (add.at) needs no values in Python.
    def accumulate(x, i):
        return x.clone().index_put_((i,), plugrad.ones(4), accumulate=True)

    compiled = plugrad.compile(accumulate, fullgraph=True)
    x = plugrad.ones((3, 4))
    for index in ([0, 2, 2, 1], [1, 1, 1, -1], [2, 0, 0, 0]):
        i = plugrad.tensor(index)
        assert compiled(x, i).tolist() == accumulate(x, i).tolist()
    with pytest.raises(IndexOutOfRangeError, match="out of range"):
        compiled(x, plugrad.tensor([0, 3, 2, 1]))
    assert compiled.captures == 1


def test_losses_checking_their_values_are_captured_and_check_every_replay():
    # binary_cross_entropy's [0, 1] check and gaussian_nll_loss's variance check read the
    # values (bool()): a graph break, every training step with them eager.
    F = nn.functional
    weights = [plugrad.ones(3, requires_grad=True) for _ in range(2)]

    def step(x, t, w):
        w.grad = None
        probability = plugrad.sigmoid(x * w)
        loss = F.binary_cross_entropy(probability, t) + F.gaussian_nll_loss(x, t, w * w + 0.1)
        loss.backward()
        return loss

    compiled = plugrad.compile(step, fullgraph=True)
    x = plugrad.tensor([0.5, -1.0, 2.0])
    for t in ([0.0, 1.0, 1.0], [0.5, 0.25, 0.0], [1.0, 1.0, 1.0]):
        t = plugrad.tensor(t)
        assert compiled(x, t, weights[0]).tolist() == step(x, t, weights[1]).tolist()
        assert weights[0].grad.tolist() == weights[1].grad.tolist()
    for bad in ([0.0, 1.5, 1.0], [0.0, float("nan"), 1.0]):
        with pytest.raises(ValueError, match=r"outside \[0, 1\]"):
            compiled(x, plugrad.tensor(bad), weights[0])
    assert compiled.captures == 1
    nll = plugrad.compile(lambda x, var: F.gaussian_nll_loss(x, x * 2, var), fullgraph=True)
    for var in ([1.0, 0.5, 2.0], [0.0, 0.5, 2.0]):
        var = plugrad.tensor(var)
        assert nll(x, var).tolist() == F.gaussian_nll_loss(x, x * 2, var).tolist()
    with pytest.raises(ValueError, match="negative variance"):
        nll(x, plugrad.tensor([1.0, -0.5, 2.0]))
    assert nll.captures == 1


def test_distributions_checking_their_arguments_are_captured_and_check_every_replay():
    # Their parameter and support checks (validate_args, on by default as in PyTorch) read
    # the values with bool(): a graph break, every step sampling or scoring with one eager.
    D = plugrad.distributions
    InvalidArgumentError = plugrad.errors.InvalidArgumentError

    def score(loc, scale, x):
        return D.Normal(loc, scale).log_prob(x).sum() + D.Exponential(scale).log_prob(x.abs())

    compiled = plugrad.compile(score, fullgraph=True)
    calls = [([0.0, 1.0], [1.0, 2.0], [0.5, -1.0]), ([2.0, 1.0], [0.5, 3.0], [1.0, 0.0])]
    for values in calls:
        arguments = [plugrad.tensor(v) for v in values]
        assert compiled(*arguments).tolist() == score(*arguments).tolist()
    with pytest.raises(InvalidArgumentError, match="parameter scale of Normal"):
        compiled(plugrad.zeros(2), plugrad.tensor([1.0, -1.0]), plugrad.zeros(2))
    with pytest.raises(InvalidArgumentError, match="outside the support"):
        compiled(plugrad.zeros(2), plugrad.ones(2), plugrad.tensor([0.0, float("nan")]))
    assert compiled.captures == 1

    # and the checks of their own (Geometric's probs, RelaxedBernoulli's temperature), and
    # mvlgamma's domain
    def more(p, x, t):
        relaxed = D.RelaxedBernoulli(t, probs=p).log_prob(p)
        return D.Geometric(probs=p).log_prob(x) + relaxed + plugrad.mvlgamma(x + t, 2)

    compiled = plugrad.compile(more, fullgraph=True)
    x, t = plugrad.tensor([1.0, 2.0]), plugrad.tensor([0.5, 2.0])
    for p in ([0.3, 0.5], [0.9, 0.1]):
        p = plugrad.tensor(p)
        assert compiled(p, x, t).tolist() == more(p, x, t).tolist()
    p = plugrad.tensor([0.3, 0.5])
    with pytest.raises(InvalidArgumentError, match="probs of Geometric not positive"):
        compiled(plugrad.tensor([0.0, 0.5]), x, t)
    with pytest.raises(InvalidArgumentError, match="temperature of LogitRelaxedBernoulli"):
        compiled(p, x, plugrad.tensor([0.5, 0.0]))
    with pytest.raises(InvalidArgumentError, match=r"mvlgamma\(\): an element"):
        compiled(p, plugrad.tensor([0.0, 2.0]), plugrad.tensor([0.25, 2.0]))
    assert compiled.captures == 1


@pytest.mark.usefixtures("on_numpy")  # (other backends' kernels check indices in Python)
def test_an_index_out_of_range_in_a_replay_is_plugrads_typed_error():
    # NumPy's own IndexError came out of a replay (the per-op path tells it as plugrad's).
    def gather(t, i):
        return t[i] * 2

    def scatter(t, i, v):
        t[i] = v
        return t.sum()

    taken, written = plugrad.compile(gather), plugrad.compile(scatter)
    t = plugrad.arange(5.0)
    for index in ([0, 1], [2, 4]):
        assert taken(t, plugrad.tensor(index)).tolist() == gather(t, plugrad.tensor(index)).tolist()
        written(t, plugrad.tensor(index), plugrad.tensor([1.0, 2.0]))
    before = t.tolist()
    with pytest.raises(IndexOutOfRangeError, match=r"gather, replayed: index 7 is out of bounds"):
        taken(t, plugrad.tensor([0, 7]))
    with pytest.raises(IndexOutOfRangeError, match="out of bounds"):
        written(t, plugrad.tensor([9, 1]), plugrad.tensor([5.0, 5.0]))
    assert t.tolist() == before
