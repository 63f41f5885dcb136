"""A compiled training step on the backends whose arrays are immutable (JAX) or lazy (Dask)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sgd_regression import regression_params, sgd_step

import plugrad
from plugrad.errors import BackendError, CompileWarning


def _backend(name: str) -> str:
    pytest.importorskip(name, reason=f"needs {name} (the {name} extra)")
    try:
        plugrad.registry.resolve_device(name)
    except BackendError as exc:
        pytest.skip(str(exc))
    return name


@pytest.mark.parametrize("name", ["jax", "dask"])
def test_compiled_training_step_equals_eager_bit_for_bit(name):
    with plugrad.use_backend(_backend(name)):
        params, eager_params = regression_params(0), regression_params(0)
        compiled = plugrad.compile(sgd_step(params), fullgraph=True)
        eager = sgd_step(eager_params)
        rng = np.random.default_rng(1)
        for _ in range(3):
            x = plugrad.tensor(rng.standard_normal((5, 3)))
            y = plugrad.tensor(rng.random((5, 4)))
            got, expected = compiled(x, y), eager(x, y)
            assert got.detach().numpy().tobytes() == expected.detach().numpy().tobytes()
            for p, e in zip(params, eager_params, strict=True):
                assert p.detach().numpy().tobytes() == e.detach().numpy().tobytes()
                assert p.grad.numpy().tobytes() == e.grad.numpy().tobytes()
        assert compiled.captures == 1


@pytest.fixture
def small_dask_graphs():
    """The dask backend settling graphs past 30 layers (100 by default), for short loops."""
    backend = plugrad.registry.resolve_device(_backend("dask")).backend
    before = backend.max_graph_layers
    backend.max_graph_layers = 30
    try:
        yield 30
    finally:
        backend.max_graph_layers = before


@pytest.mark.parametrize(
    "make",
    [lambda p: plugrad.optim.SGD(p, lr=0.1, momentum=0.9), plugrad.optim.Adam],
    ids=["sgd-momentum", "adam"],
)
def test_a_long_compiled_loop_on_dask_keeps_bounded_graphs_and_equals_eager(
    small_dask_graphs, make
):
    # A replay calls the namespace directly, past the kernels that settle eager graphs:
    # without settling after each replay, every step would extend the last one's graphs
    # (a step here adds ~40 layers to each parameter; 40 steps, ~1,600 layers).
    def layers(tensor):
        return len(tensor.array.dask.layers)

    def training(params):
        optimizer = make(params)

        def step(x, y):
            optimizer.zero_grad()
            w, b = params
            loss = (((x @ w + b).tanh() - y) ** 2).mean()
            loss.backward()
            optimizer.step()
            return loss

        return step, optimizer

    with plugrad.use_backend("dask"):
        params, eager_params = regression_params(0), regression_params(0)
        step, optimizer = training(params)
        compiled = plugrad.compile(step, fullgraph=True)
        eager, _ = training(eager_params)
        rng = np.random.default_rng(2)
        x = plugrad.tensor(rng.standard_normal((5, 3)))
        y = plugrad.tensor(rng.random((5, 4)))
        for index in range(40):
            got, expected = compiled(x, y), eager(x, y)
            if index < 2:
                continue  # captures (the first step has no .grad nor state yet) run eagerly
            state = [v for s in optimizer.state.values() for v in s.values()]
            held = [got, *params, *(p.grad for p in params)]
            held += [v for v in state if isinstance(v, plugrad.Tensor)]
            assert max(layers(t) for t in held) <= small_dask_graphs
        assert compiled.captures == 2
        assert got.detach().numpy().tobytes() == expected.detach().numpy().tobytes()
        for p, e in zip(params, eager_params, strict=True):
            assert p.detach().numpy().tobytes() == e.detach().numpy().tobytes()
            assert p.grad.numpy().tobytes() == e.grad.numpy().tobytes()


@pytest.mark.parametrize("name", ["numpy", "torch", "jax", "dask"])
def test_numpy_asarray_of_a_tensor_is_a_graph_break_on_every_backend(name):
    # On torch, np.asarray(x) handed the traced array to torch's own conversion and raised
    # "object __array__ method not producing an array" instead of running eagerly.
    if name != "numpy":
        pytest.importorskip(name, reason=f"needs {name} (the {name} extra)")

    def scaled(x):
        return x * float(np.asarray(x)[0])

    with plugrad.use_backend(name):
        x = plugrad.tensor([2.0, 3.0])
        with pytest.warns(plugrad.errors.CompileWarning, match="converting a tensor to a NumPy"):
            assert plugrad.compile(scaled)(x).tolist() == [4.0, 6.0]
        with pytest.raises(plugrad.errors.GraphBreakError, match="NumPy array"):
            plugrad.compile(scaled, fullgraph=True)(x)


VIEW_OF_A_VIEW = {
    "x.T[0]": lambda x: x.T[0],
    "x[1:][::2]": lambda x: x[1:][::2],
    "x.unsqueeze(0)[0]": lambda x: x.unsqueeze(0)[0],
    "x.detach()[0]": lambda x: x.detach()[0],
}


@pytest.mark.parametrize("view", list(VIEW_OF_A_VIEW))
@pytest.mark.parametrize("name", ["jax", "dask"])
def test_a_replayed_view_of_a_view_follows_its_base_as_eager(name, view):
    # A replay's result was registered as a view of x under no key: x.mul_(2) after it was
    # refused (ViewCopyError), where the eager result follows x through x.T.
    with plugrad.use_backend(_backend(name)):
        results = []
        for function in (VIEW_OF_A_VIEW[view], plugrad.compile(VIEW_OF_A_VIEW[view])):
            x = plugrad.arange(20.0).reshape(4, 5)
            kept = []
            for _ in range(3):
                kept.append(function(x))
                with plugrad.no_grad():
                    x.mul_(2)
            results.append([r.tolist() for r in kept])
        assert results[0] == results[1]


@pytest.mark.parametrize("name", ["jax", "dask"])
def test_a_view_returned_by_replays_that_change_its_base_keeps_following(name):
    # The second replay refused the change: the first replay's x.T could not follow x.
    with plugrad.use_backend(_backend(name)):

        def double_and_view(x):
            with plugrad.no_grad():
                x.mul_(2)
            return x.T

        results = []
        for function in (double_and_view, plugrad.compile(double_and_view)):
            x = plugrad.arange(6.0).reshape(2, 3)
            kept = [function(x) for _ in range(3)]
            results.append((x.tolist(), [r.tolist() for r in kept]))
        assert results[0] == results[1]
        assert results[0][0] == [[0.0, 8.0, 16.0], [24.0, 32.0, 40.0]]


def _compiled_model_training(compiled: bool) -> tuple[list[float], list[bytes]]:
    plugrad.manual_seed(0)
    model = plugrad.nn.Sequential(
        plugrad.nn.Linear(3, 8), plugrad.nn.Dropout(0.2), plugrad.nn.Tanh(), plugrad.nn.Linear(8, 1)
    )
    optimizer = plugrad.optim.Adam(model.parameters(), lr=0.01)
    forward = plugrad.compile(model) if compiled else model
    x, y = plugrad.ones((4, 3)), plugrad.zeros((4, 1))
    losses = []
    for _ in range(4):
        optimizer.zero_grad()
        loss = ((forward(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, [p.detach().numpy().tobytes() for p in model.parameters()]


@pytest.mark.parametrize("name", ["torch", "jax"])
def test_a_compiled_model_with_the_backward_outside_equals_eager(name):
    with plugrad.use_backend(_backend(name)), warnings.catch_warnings():
        warnings.simplefilter("error")  # replayed, not run eagerly (which warns)
        assert _compiled_model_training(True) == _compiled_model_training(False)


def test_a_compiled_model_on_dask_runs_eagerly_with_the_backward_outside():
    with plugrad.use_backend(_backend("dask")):
        with pytest.warns(CompileWarning, match="lazy backend"):
            compiled = _compiled_model_training(True)
        assert compiled == _compiled_model_training(False)


@pytest.mark.parametrize("name", ["jax", "dask"])
def test_a_plan_captured_on_numpy_misses_for_a_tensor_of_another_backend(name):
    # The NumPy plan guards its argument's memory layout; the other library's array has
    # none to read: the call captures a plan of its own instead of failing in the guard.
    device = _backend(name)
    compiled = plugrad.compile(lambda x: x * 2 + 1)
    on_numpy = plugrad.ones(3, device="numpy")
    compiled(on_numpy)
    compiled(on_numpy)
    other = plugrad.ones(3, device=device)
    for _ in range(2):
        result = compiled(other)
        assert result.device == other.device
        assert result.tolist() == [3.0, 3.0, 3.0]
    assert compiled(on_numpy).tolist() == [3.0, 3.0, 3.0]
    assert compiled.captures == 2
