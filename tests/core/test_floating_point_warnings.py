"""inf and nan as PyTorch makes them: NumPy's floating-point warnings never become errors.

pytest's ``filterwarnings = ["error"]`` (this suite's too) turns every warning into
an exception; NumPy warns of a division by zero, an overflow and an invalid
operation, so a valid program (log of a probability that underflowed, the
backward of sqrt at 0) failed in the middle. Each test runs with every warning
an error, as such a suite does, and compares with PyTorch.
"""

from __future__ import annotations

import copy
import math
import warnings

import numpy as np
import pytest

import plugrad

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("error")


def _values(tensor: plugrad.Tensor) -> np.ndarray:
    return np.asarray(tensor.detach().cpu().numpy(), dtype=np.float64)


def _skip_on_lazy_backends() -> None:
    if plugrad.get_default_device().backend.lazy:
        pytest.skip("a lazy backend (Dask) computes later, in its scheduler's threads")


FORWARD = [
    ("log of 0", lambda m, t: m.log(t([0.0, 1.0]))),
    ("1 / 0", lambda m, t: t([1.0, 0.0, -1.0]) / t([0.0, 0.0, 0.0])),
    ("exp overflow", lambda m, t: m.exp(t([1000.0, 1.0]))),
    ("inf - inf", lambda m, t: t([math.inf]) - math.inf),
    ("float64 1e308 to float32", lambda m, t: t([1e308], dtype=m.float64).float()),
    ("1e308 * 10", lambda m, t: t([1e308], dtype=m.float64) * 10),
    ("sqrt of -1", lambda m, t: m.sqrt(t([-1.0, 4.0]))),
    ("mean of nothing", lambda m, t: m.mean(t([]))),
    ("0 ** -1", lambda m, t: t([0.0]) ** -1),
    ("atanh of 1", lambda m, t: m.atanh(t([1.0, -1.0]))),
]


@pytest.mark.parametrize(("label", "compute"), FORWARD, ids=[label for label, _ in FORWARD])
def test_forward_ops_give_inf_and_nan_without_an_error(label, compute) -> None:
    _skip_on_lazy_backends()
    expected = compute(torch, torch.tensor).numpy()
    np.testing.assert_allclose(_values(compute(plugrad, plugrad.tensor)), expected, rtol=1e-6)


BACKWARD = [
    ("sqrt at 0", lambda m, x: m.sqrt(x)),
    ("log at 0", lambda m, x: m.log(x)),
    ("1 / x at 0", lambda m, x: 1 / x),
    ("norm at 0", lambda m, x: m.linalg.norm(x * 0)),
    ("x ** 0.5 at 0", lambda m, x: x**0.5),
]


@pytest.mark.parametrize(("label", "compute"), BACKWARD, ids=[label for label, _ in BACKWARD])
def test_backward_passes_give_inf_and_nan_without_an_error(label, compute) -> None:
    _skip_on_lazy_backends()
    data = [0.0, 2.0]
    x_t = torch.tensor(data, dtype=torch.float64, requires_grad=True)
    compute(torch, x_t).sum().backward()
    x = plugrad.tensor(data, dtype=plugrad.float64, requires_grad=True)
    compute(plugrad, x).sum().backward()
    np.testing.assert_allclose(_values(x.grad), x_t.grad.numpy(), rtol=1e-14)
    (again,) = plugrad.autograd.grad(compute(plugrad, x).sum(), x)
    np.testing.assert_allclose(_values(again), x_t.grad.numpy(), rtol=1e-14)


def test_a_backward_pass_shows_no_warning_either() -> None:
    _skip_on_lazy_backends()
    x = plugrad.tensor([0.0, 1.0], requires_grad=True)
    y = plugrad.sqrt(x).sum()
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        y.backward()
    assert [str(w.message) for w in shown] == []
    assert _values(x.grad)[0] == math.inf


def test_an_in_place_division_by_zero_is_made_once() -> None:
    # NumPy raises the warning after writing the whole result: made again, it would be
    # divided twice.
    _skip_on_lazy_backends()
    a = plugrad.tensor([1.0, 0.0, 4.0])
    version = a._version
    a /= plugrad.tensor([0.0, 0.0, 2.0])
    np.testing.assert_array_equal(_values(a), [math.inf, math.nan, 2.0])
    assert a._version == version + 1
    b = plugrad.tensor([3.0, 8.0])
    b /= 0.0
    np.testing.assert_array_equal(_values(b), [math.inf, math.inf])


def test_numpy_code_of_the_user_keeps_its_warnings() -> None:
    # Only plugrad's own computations are quieted: NumPy used directly still warns.
    with pytest.raises(RuntimeWarning, match="divide by zero"):
        np.log(np.zeros(1))
    x = plugrad.tensor([0.0], requires_grad=True)
    plugrad.log(x).sum().backward()  # (quiet inside the pass, restored after it)
    with pytest.raises(RuntimeWarning, match="divide by zero"):
        np.log(np.zeros(1))


def test_backends_say_whether_they_warn() -> None:
    from plugrad.backends.numpy_backend import NumpyBackend
    from plugrad.backends.torch_backend import TorchBackend

    assert TorchBackend().floating_point_warnings_off() is None
    context = NumpyBackend().floating_point_warnings_off()
    with context:
        assert np.log(np.zeros(1))[0] == -math.inf
    with pytest.raises(RuntimeWarning):
        np.log(np.zeros(1))


def test_a_compiled_replay_meeting_a_warning_is_made_again_without_it() -> None:
    # A replay under an "error" filter raised NumPy's warning part-way through.
    _skip_on_lazy_backends()

    @plugrad.compile
    def f(x):
        return plugrad.log(x) * 2

    x = plugrad.tensor([0.0, 1.0])
    for _ in range(3):  # the capture, then replays
        np.testing.assert_array_equal(_values(f(x)), [-math.inf, 0.0])
    assert f.captures == 1


def test_a_compiled_training_step_meeting_warnings_updates_once() -> None:
    # Warnings before the first change (the forward and backward) make the step again;
    # the update after it (an overflow of the step size times an inf) runs without them.
    _skip_on_lazy_backends()

    def run(compiled):
        w = plugrad.tensor([1.0, 2.0], dtype=plugrad.float64, requires_grad=True)

        def step(data):
            w.grad = None
            loss = plugrad.exp(w * data).sum()
            loss.backward()
            with plugrad.no_grad():
                w.sub_(w.grad * 1e-300 * 1e-300)
            return loss

        step = plugrad.compile(step) if compiled else step
        losses = []
        for data in ([1.0, 1.0], [1000.0, 1.0], [1.0, 1.0], [1.0, 1.0]):
            losses.append(float(step(plugrad.tensor(data, dtype=plugrad.float64))))
        return losses, _values(w), _values(w.grad)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the eager reference, computed quietly
        expected = run(compiled=False)
    got = run(compiled=True)
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_array_equal(got[1], expected[1])
    np.testing.assert_array_equal(got[2], expected[2])


def test_a_compiled_function_with_a_graph_gives_its_forward_without_warnings() -> None:
    _skip_on_lazy_backends()

    @plugrad.compile
    def f(x):
        return plugrad.exp(x) * 2

    for _ in range(3):
        x = plugrad.tensor([1.0, 1000.0], dtype=plugrad.float64, requires_grad=True)
        y = f(x)
        y.sum().backward()
        assert _values(y)[1] == math.inf and _values(x.grad)[1] == math.inf


def test_a_second_kind_of_context_is_entered_only_inside_a_pass(monkeypatch) -> None:
    # With two kinds of context (NumPy's and another backend's), taking note of the second
    # entered both for good: NumPy's warnings stayed off for the whole program.
    from plugrad import floating_point_warnings

    entered: list[bool] = []

    class Other:
        def __enter__(self) -> None:
            entered.append(True)

        def __exit__(self, *exc: object) -> None:
            entered.pop()

    class OtherBackend:
        def floating_point_warnings_off(self) -> Other:
            return Other()

    for name in ("_factories", "warnings_off", "switches"):
        value = getattr(floating_point_warnings, name)
        monkeypatch.setattr(floating_point_warnings, name, copy.copy(value))
    floating_point_warnings.note_backend(OtherBackend())
    assert entered == []
    with pytest.raises(RuntimeWarning, match="divide by zero"):
        np.log(np.zeros(1))
    x = plugrad.tensor([0.0, 1.0], requires_grad=True)
    seen: list[int] = []
    x.register_hook(lambda g: seen.append(len(entered)))  # runs inside the pass
    plugrad.sqrt(x).sum().backward()
    assert seen == [1] and entered == []
