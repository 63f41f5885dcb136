"""plugrad.cpu and plugrad.jit: PyTorch's torch.cpu and torch.jit, for device-agnostic code
and for code that scripts or traces its model (which runs eagerly here).

Each test was an AttributeError before: plugrad had no ``cpu`` and no ``jit``.
"""

from __future__ import annotations

import io
import typing

import numpy as np
import pytest

import plugrad
from plugrad.errors import ArgumentError, InvalidArgumentError, NotSupportedError

torch = pytest.importorskip("torch")

# -- plugrad.cpu ---------------------------------------------------------------------------


def test_the_cpu_answers_are_torchs() -> None:
    for name in ("is_available", "device_count", "current_device", "is_initialized"):
        assert getattr(plugrad.cpu, name)() == getattr(torch.cpu, name)(), name
    assert (plugrad.cpu.is_available(), plugrad.cpu.device_count()) == (True, 1)
    assert plugrad.cpu.current_device() == "cpu"


@pytest.mark.parametrize("device", [None, "cpu", 0, "cpu:0"])
def test_synchronize_and_set_device_take_a_device_and_return_none(device) -> None:
    for lib in (plugrad, torch):
        assert lib.cpu.synchronize(device) is None
        assert lib.cpu.set_device(device) is None
    assert plugrad.cpu.synchronize(plugrad.device("cpu")) is None


def test_a_value_that_names_no_device_is_refused() -> None:
    # (PyTorch's ignores every argument; a float or a list names no device at all)
    for bad in (1.5, [0], True):
        for function in (plugrad.cpu.synchronize, plugrad.cpu.set_device):
            with pytest.raises(ArgumentError, match="device"):
                function(bad)


def test_streams_nest_and_restore_as_torchs() -> None:
    for lib in (plugrad, torch):
        default = lib.cpu.current_stream()
        first, second = lib.cpu.Stream(), lib.cpu.Stream(priority=0)
        with lib.cpu.stream(first):
            assert lib.cpu.current_stream() is first
            with lib.cpu.stream(second):
                assert lib.cpu.current_stream() is second
            with lib.cpu.stream(None):  # None leaves the current stream
                assert lib.cpu.current_stream() is first
            assert lib.cpu.current_stream() is first
        assert lib.cpu.current_stream() is default
        assert lib.cpu.Event().query() is True
        first.wait_stream(second)
        first.wait_event(lib.cpu.Event())
    with pytest.raises(ArgumentError, match="Stream"):
        plugrad.cpu.stream("stream")


@pytest.mark.parametrize("name", ["autocast", "GradScaler"])
def test_cpu_amp_names_warn_future_warning_as_torchs(name) -> None:
    made = {}
    for lib in (plugrad, torch):
        with pytest.warns(FutureWarning, match=rf"{lib.__name__}\.amp\.{name}\('cpu'"):
            made[lib] = getattr(lib.cpu.amp, name)(enabled=False)
        assert isinstance(made[lib], getattr(lib.amp, name))
    assert made[plugrad].device == "cpu" if name == "autocast" else made[plugrad]._device == "cpu"
    from plugrad.cpu.amp import GradScaler, autocast  # PyTorch's import line too

    assert getattr(plugrad.cpu.amp, name) is {"autocast": autocast, "GradScaler": GradScaler}[name]


def test_cpu_amp_grad_scaler_takes_torchs_arguments() -> None:
    options = {"init_scale": 8.0, "growth_factor": 4.0, "backoff_factor": 0.25,
               "growth_interval": 3}  # fmt: skip
    scalers = {}
    for lib in (plugrad, torch):
        with pytest.warns(FutureWarning):
            scalers[lib] = lib.cpu.amp.GradScaler(*options.values())
    for scaler in scalers.values():
        assert scaler.get_scale() == 8.0
        assert (scaler.get_growth_factor(), scaler.get_backoff_factor()) == (4.0, 0.25)
        assert scaler.get_growth_interval() == 3
    loss = {lib: lib.tensor(1.5) for lib in (plugrad, torch)}
    assert scalers[plugrad].scale(loss[plugrad]).item() == scalers[torch].scale(loss[torch]).item()


def test_an_enabled_cpu_autocast_warns_then_is_plugrad_amps() -> None:
    with pytest.warns(FutureWarning):
        region = plugrad.cpu.amp.autocast(dtype=plugrad.float16)
    with region:
        assert plugrad.is_autocast_enabled("cpu")
        assert (plugrad.ones((2, 2)) @ plugrad.ones((2, 2))).dtype is plugrad.float16
    assert not plugrad.is_autocast_enabled("cpu")


# -- plugrad.jit ---------------------------------------------------------------------------


def _models():
    """The same two-layer model in torch and in plugrad (float64, torch's weights)."""
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(
        torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2)
    ).double()
    ours = plugrad.nn.Sequential(
        plugrad.nn.Linear(3, 4), plugrad.nn.Tanh(), plugrad.nn.Linear(4, 2)
    ).double()
    weights = theirs.state_dict().items()
    ours.load_state_dict({name: plugrad.tensor(value.numpy()) for name, value in weights})
    return ours, theirs


def _run(lib, model, data):
    x = lib.tensor(data)
    out = model(x)
    (out * out).sum().backward()
    return out.detach().numpy(), [p.grad.numpy() for p in model.parameters()]


@pytest.mark.parametrize("how", ["script", "trace"])
def test_a_scripted_or_traced_model_gives_torchs_outputs_and_gradients(how) -> None:
    ours, theirs = _models()
    data = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
    compiled = {}
    for lib, model in ((plugrad, ours), (torch, theirs)):
        name = "plugrad.jit" if lib is plugrad else "torch.jit"
        with pytest.warns(DeprecationWarning, match=f"{name}.{how}"):
            args = () if how == "script" else (lib.tensor(data),)
            compiled[lib] = getattr(lib.jit, how)(model, *args)
    assert isinstance(compiled[torch], torch.jit.ScriptModule)
    assert compiled[plugrad] is ours  # the module stays that module
    out, grads = _run(plugrad, compiled[plugrad], data)
    expected_out, expected_grads = _run(torch, compiled[torch], data)
    np.testing.assert_allclose(out, expected_out, rtol=1e-12)
    for grad, expected in zip(grads, expected_grads, strict=True):
        np.testing.assert_allclose(grad, expected, rtol=1e-12)


def test_a_traced_function_is_the_function_and_follows_the_data() -> None:
    def sign_scale(x):
        return x * 2 if float(x.sum()) > 0 else x * -1

    with pytest.warns(DeprecationWarning):
        traced = plugrad.jit.trace(sign_scale, (plugrad.ones(2),))
    assert traced is sign_scale
    # (PyTorch's trace would replay the branch the example took; here each call chooses)
    assert traced(plugrad.tensor([-1.0, -2.0])).tolist() == [1.0, 2.0]


@pytest.mark.parametrize(
    "example, torch_error, ours",
    [
        (lambda lib: ((), {}), TypeError, ArgumentError),  # no example
        (lambda lib: ((3,), {}), TypeError, ArgumentError),  # neither a tensor nor a tuple
        (lambda lib: (((lib.ones(2), 3),), {}), RuntimeError, InvalidArgumentError),
        (lambda lib: (((lib.ones(2), None),), {}), RuntimeError, InvalidArgumentError),
        (lambda lib: ((), {"example_kwarg_inputs": [lib.ones(2)]}), TypeError, ArgumentError),
    ],
    ids=["none", "an int", "an int inside", "None inside", "kwargs not a dict"],
)
def test_trace_refuses_the_examples_torch_refuses(example, torch_error, ours) -> None:
    def double(x, y=None):
        return x * 2

    for lib, error in ((torch, torch_error), (plugrad, ours)):
        args, kwargs = example(lib)
        with pytest.warns(DeprecationWarning), pytest.raises(error):
            lib.jit.trace(double, *args, **kwargs)


def test_trace_takes_nested_tensor_examples_as_torch() -> None:
    def first(x):
        return x[0]["a"] * 2

    for lib in (torch, plugrad):
        with pytest.warns(DeprecationWarning):
            traced = lib.jit.trace(first, ([{"a": lib.ones(2)}],))
        assert traced([{"a": lib.ones(2)}]).tolist() == [2.0, 2.0]
    with pytest.warns(DeprecationWarning):
        kw = plugrad.jit.trace(first, example_kwarg_inputs={"x": [{"a": plugrad.ones(2)}]})
    assert kw is first
    with pytest.warns(DeprecationWarning), pytest.raises(ArgumentError, match="function"):
        plugrad.jit.trace(3, (plugrad.ones(1),))


def test_script_returns_a_function_or_class_and_refuses_a_value() -> None:
    def double(x):
        return x * 2

    with pytest.warns(DeprecationWarning):
        assert plugrad.jit.script(double) is double
    with pytest.warns(DeprecationWarning):
        assert plugrad.jit.script(plugrad.nn.Linear) is plugrad.nn.Linear
    with pytest.warns(DeprecationWarning), pytest.raises(TypeError):
        torch.jit.script(3)
    with pytest.warns(DeprecationWarning), pytest.raises(ArgumentError, match="int"):
        plugrad.jit.script(3)


def test_optimize_warns_future_warning_as_torch() -> None:
    def double(x):
        return x * 2

    for lib in (torch, plugrad):
        with pytest.warns(DeprecationWarning), pytest.warns(FutureWarning, match="optimize"):
            lib.jit.script(double, optimize=True)


def test_the_decorators_and_helpers_are_torchs_outside_torchscript() -> None:
    def f(x):
        return x + 1

    for lib in (torch, plugrad):
        assert lib.jit.ignore(f) is f and lib.jit.ignore(drop=False)(f) is f
        assert lib.jit.unused(f) is f and lib.jit.export(f) is f
        assert (lib.jit.is_scripting(), lib.jit.is_tracing()) == (False, False)
        assert lib.jit.annotate(list[int], [1]) == [1]
        with pytest.warns(FutureWarning, match=r"unused"):
            assert lib.jit.ignore(drop=True)(f) is f
        with pytest.warns(FutureWarning, match=r"unused"):
            lib.jit.ignore(drop_on_export=True)
    assert plugrad.jit.Final is torch.jit.Final is typing.Final
    with pytest.raises(RuntimeError, match="bool or a function"):
        torch.jit.ignore("x")
    with pytest.raises(ArgumentError, match="function or drop"):
        plugrad.jit.ignore("x")


def test_fork_runs_at_once_and_wait_gives_the_result_as_torch() -> None:
    def add(a, b=1):
        return a + b

    def boom(x):
        raise KeyError("boom")

    for lib in (torch, plugrad):
        with pytest.warns(DeprecationWarning, match="fork"):
            future = lib.jit.fork(add, 1, b=2)
        assert future.done() and future.value() == 3
        with pytest.warns(DeprecationWarning, match="wait"):
            assert lib.jit.wait(future) == 3
        with pytest.warns(DeprecationWarning), pytest.raises(KeyError, match="boom"):
            lib.jit.fork(boom, 1)  # raised when forked, not when waited for
        with pytest.warns(DeprecationWarning), pytest.raises(TypeError):
            lib.jit.wait(3)


def test_save_and_load_are_refused_pointing_to_state_dicts() -> None:
    model = plugrad.nn.Linear(2, 1)
    for call in (lambda: plugrad.jit.save(model, io.BytesIO()),
                 lambda: plugrad.jit.load(io.BytesIO())):  # fmt: skip
        with pytest.raises(NotSupportedError, match=r"plugrad\.save\(model\.state_dict\(\)"):
            call()
        with pytest.raises(NotImplementedError):
            call()
