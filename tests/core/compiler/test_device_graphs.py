"""compile(fn, device_graph=True): a plan replayed as one device graph.

CUDA graphs need a GPU; the bookkeeping around a launch (argument copies into
the graph's buffers, results and gradients copied out, effects done again) is
tested on NumPy with a recorder that stands in for one.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sgd_regression import regression_params, sgd_step

import plugrad
from plugrad.backends.numpy_backend import NumpyBackend
from plugrad.errors import CompileWarning, DeviceGraphError

pytestmark = pytest.mark.usefixtures("on_numpy")


class _Recorder:
    """Stands in for a device graph: a launch runs the work again and writes its arrays
    into those of the recorded run, as kernels replayed on the same memory would."""

    def __init__(self) -> None:
        self.recorded = 0
        self.launches = 0

    def __call__(self, work):
        self.recorded += 1
        arrays = work()

        def launch() -> None:
            self.launches += 1
            for old, new in zip(arrays, work(), strict=True):
                old[...] = new

        return launch


@pytest.fixture
def recorder(monkeypatch):
    made = _Recorder()
    monkeypatch.setattr(NumpyBackend, "graph_recorder", lambda self, device: made)
    return made


def _step(params):
    step = sgd_step(params)

    def step_with_array_loss(x, y):
        # As an array of one (NumPy makes 0-d results scalars, which no launch could rewrite).
        return step(x, y).detach().reshape((1,))

    return step_with_array_loss


def test_graph_replays_training_steps_bit_identical_to_eager(recorder):
    params, eager_params = regression_params(0), regression_params(0)
    compiled = plugrad.compile(_step(params), device_graph=True)
    eager = _step(eager_params)
    rng = np.random.default_rng(1)
    losses = []
    for _ in range(4):
        x, y = plugrad.tensor(rng.standard_normal((5, 3))), plugrad.tensor(rng.random((5, 4)))
        loss = compiled(x, y)
        expected = eager(x, y)
        np.testing.assert_array_equal(loss.detach().numpy(), expected.detach().numpy())
        for p, e in zip(params, eager_params):
            np.testing.assert_array_equal(p.detach().numpy(), e.detach().numpy())
            np.testing.assert_array_equal(p.grad.numpy(), e.grad.numpy())
        losses.append((loss, loss.detach().numpy().copy()))
    # The first call captures, the second records the graph (and runs it), the rest launch.
    assert (compiled.captures, recorder.recorded, recorder.launches) == (1, 1, 2)
    for loss, value in losses:  # no call's result shares memory with a later one's
        np.testing.assert_array_equal(loss.detach().numpy(), value)


def test_a_parameter_given_a_new_array_records_the_graph_again(recorder):
    params, eager_params = regression_params(2), regression_params(2)
    compiled = plugrad.compile(_step(params), device_graph=True)
    x, y = plugrad.tensor(np.ones((5, 3))), plugrad.tensor(np.zeros((5, 4)))
    for _ in range(2):
        compiled(x, y)
        _step(eager_params)(x, y)
    params[0].data = params[0].detach().clone()  # same values, new memory
    np.testing.assert_array_equal(
        compiled(x, y).detach().numpy(), _step(eager_params)(x, y).detach().numpy()
    )
    np.testing.assert_array_equal(params[0].detach().numpy(), eager_params[0].detach().numpy())
    assert recorder.recorded == 2


@pytest.mark.parametrize(
    ("program", "reason"),
    [
        (lambda x, y: plugrad.nn.functional.cross_entropy(x, y), "host"),
        (lambda x, y: x + plugrad.rand(*x.shape), "random"),
        (lambda x, y: x.add_(1.0) * 2.0, "writes into an argument"),
    ],
)
def test_a_plan_a_graph_cannot_repeat_replays_as_usual_with_a_warning(recorder, program, reason):
    x, x_eager = plugrad.tensor(np.ones((2, 3))), plugrad.tensor(np.ones((2, 3)))
    y = plugrad.tensor([0, 2])
    compiled = plugrad.compile(program, device_graph=True)
    with pytest.warns(CompileWarning, match=reason):
        compiled(x, y)
    program(x_eager, y)
    if reason != "random":
        np.testing.assert_array_equal(compiled(x, y).numpy(), program(x_eager, y).numpy())
        np.testing.assert_array_equal(x.numpy(), x_eager.numpy())
    assert recorder.recorded == 0


def test_a_backend_without_graphs_replays_as_usual_with_a_warning():
    compiled = plugrad.compile(lambda x: x * 2.0, device_graph=True)
    x = plugrad.tensor([1.0, 2.0])
    with pytest.warns(CompileWarning, match="has no device graphs") as record:
        compiled(x)
    assert [w.filename for w in record] == [__file__]  # the line calling the function
    np.testing.assert_array_equal(compiled(x).numpy(), [2.0, 4.0])


class _FailingRecorder:
    """A backend whose recording fails after running part of the work (a library call
    its graphs cannot hold): the work has already written the parameters and .grad."""

    def __init__(self) -> None:
        self.tries = 0

    def __call__(self, work):
        self.tries += 1
        work()
        raise DeviceGraphError("the library cannot record a matrix product")


def test_a_plan_whose_recording_fails_replays_as_usual_and_changes_nothing(monkeypatch):
    failing = _FailingRecorder()
    monkeypatch.setattr(NumpyBackend, "graph_recorder", lambda self, device: failing)
    params, eager_params = regression_params(4), regression_params(4)
    compiled = plugrad.compile(_step(params), device_graph=True)
    eager = _step(eager_params)
    rng = np.random.default_rng(2)
    for call in range(4):
        x, y = plugrad.tensor(rng.standard_normal((5, 3))), plugrad.tensor(rng.random((5, 4)))
        if call == 1:  # the second call tries to record, fails, and replays
            with pytest.warns(CompileWarning, match="cannot record a matrix product"):
                loss = compiled(x, y)
        else:
            loss = compiled(x, y)
        np.testing.assert_array_equal(loss.detach().numpy(), eager(x, y).detach().numpy())
        for p, e in zip(params, eager_params):
            np.testing.assert_array_equal(p.detach().numpy(), e.detach().numpy())
            np.testing.assert_array_equal(p.grad.numpy(), e.grad.numpy())
    assert failing.tries == 1  # not tried again at every call


def _on_gpu():
    """The CuPy device, or a skip saying why there is none."""
    pytest.importorskip("cupy", reason="CUDA graphs need CuPy")
    try:
        return plugrad.registry.resolve_device("cupy")
    except plugrad.errors.BackendError as exc:
        pytest.skip(f"CUDA graphs need a GPU: {exc}")


@pytest.fixture
def cuda_graphs(monkeypatch):
    """Counts of CUDA graphs recorded and launched (the launch inside a recording aside)."""
    from plugrad.backends.cupy_backend import CupyBackend

    device = _on_gpu()
    counts = {"recorded": 0, "launches": 0}
    original = CupyBackend.graph_recorder

    def counting(self, native):
        record = original(self, native)

        def counted_record(work):
            launch = record(work)
            counts["recorded"] += 1

            def counted_launch():
                counts["launches"] += 1
                launch()

            return counted_launch

        return counted_record

    monkeypatch.setattr(CupyBackend, "graph_recorder", counting)
    with plugrad.use_backend(device):
        yield counts


def _elementwise_step(w):
    """SGD on ``sum((w * x - y) ** 2)``: elementwise kernels and a sum, all recordable."""
    params = [w]

    def step(x, y):
        w.grad = None
        loss = plugrad.sum((w * x - y) ** 2)
        loss.backward()
        with plugrad.no_grad():
            for p in params:
                p -= 0.05 * p.grad
        return loss.detach().reshape((1,))

    return step


def test_cuda_graph_replay_matches_eager_on_a_gpu(cuda_graphs):
    w, w_eager = (plugrad.tensor([0.5, -1.0, 2.0], requires_grad=True) for _ in range(2))
    compiled = plugrad.compile(_elementwise_step(w), device_graph=True)
    eager = _elementwise_step(w_eager)
    rng = np.random.default_rng(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)  # graphed: no fallback
        for _ in range(4):
            x, y = (plugrad.tensor(rng.standard_normal(3)) for _ in range(2))
            loss = compiled(x, y)
            np.testing.assert_array_equal(loss.numpy(), eager(x, y).numpy())
            np.testing.assert_array_equal(w.detach().numpy(), w_eager.detach().numpy())
            np.testing.assert_array_equal(w.grad.numpy(), w_eager.grad.numpy())
    assert (compiled.captures, cuda_graphs["recorded"], cuda_graphs["launches"]) == (1, 1, 2)


def test_a_step_with_matrix_products_replays_without_a_cuda_graph_on_a_gpu(cuda_graphs):
    # CuPy refuses cuBLAS calls inside a recording.
    params, eager_params = regression_params(3), regression_params(3)
    compiled = plugrad.compile(_step(params), device_graph=True)
    eager = _step(eager_params)
    x, y = plugrad.tensor(np.ones((5, 3))), plugrad.tensor(np.zeros((5, 4)))
    compiled(x, y)
    eager(x, y)
    with pytest.warns(CompileWarning, match="CUDA graph"):
        loss = compiled(x, y)
    np.testing.assert_array_equal(loss.numpy(), eager(x, y).numpy())
    for _ in range(2):
        np.testing.assert_array_equal(compiled(x, y).numpy(), eager(x, y).numpy())
    for p, e in zip(params, eager_params):
        np.testing.assert_array_equal(p.detach().numpy(), e.detach().numpy())
        np.testing.assert_array_equal(p.grad.numpy(), e.grad.numpy())
    assert cuda_graphs["recorded"] == 0
