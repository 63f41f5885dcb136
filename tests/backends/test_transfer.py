"""Moving tensors between devices and backends; DLPack exchange."""

from __future__ import annotations

import numpy as np
import pytest

import plugrad

strict = pytest.mark.skipif(
    "array_api_strict" not in plugrad.backends.available(), reason="array-api-strict not installed"
)


@strict
def test_to_moves_data_and_keeps_dtype() -> None:
    x = plugrad.tensor([1.0, 2.0], dtype=plugrad.float64)
    y = x.to("array_api_strict:2")
    assert y.device.name == "array_api_strict:2" and y.dtype == plugrad.float64
    assert y.tolist() == [1.0, 2.0]
    z = y.to("array_api_strict:1")
    assert z.device.name == "array_api_strict:1" and z.tolist() == [1.0, 2.0]
    assert z.to("numpy").device.name == "numpy"
    assert x.to("numpy") is x and x.to(x.device) is x


@strict
def test_to_is_differentiable_and_gradients_come_home() -> None:
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    y = x.to("array_api_strict:1")
    assert repr(y.grad_fn) == "<ToDeviceBackward>" and y.requires_grad
    loss = (y * y).sum()
    loss.backward()
    assert x.grad.device.name == "numpy"
    assert x.grad.tolist() == [2.0, 4.0]


@strict
def test_double_backward_across_a_transfer() -> None:
    x = plugrad.tensor(3.0, dtype=plugrad.float64, requires_grad=True)
    y = x.to("array_api_strict") ** 3
    y.backward(create_graph=True)
    first = x.grad
    assert first.device.name == "numpy" and first.item() == pytest.approx(27.0)
    x.grad = None
    first.backward()
    assert x.grad.item() == pytest.approx(18.0)


def test_to_without_grad_records_nothing() -> None:
    x = plugrad.tensor([1.0], requires_grad=True)
    with plugrad.no_grad():
        assert x.to("numpy") is x
    if "array_api_strict" in plugrad.backends.available():
        with plugrad.no_grad():
            moved = x.to("array_api_strict")
        assert moved.is_leaf and not moved.requires_grad


def test_dlpack_round_trip_with_numpy_shares_memory() -> None:
    a = np.arange(4.0)
    t = plugrad.from_dlpack(a)
    assert t.device.name == "numpy" and t.dtype == plugrad.float64
    a[0] = 42.0
    assert t.tolist()[0] == 42.0
    back = np.from_dlpack(t)
    assert np.shares_memory(back, a)
    copied = plugrad.from_dlpack(a, copy=True)
    a[1] = -1.0
    assert copied.tolist()[1] == 1.0
    assert t.__dlpack_device__() == (1, 0)


def test_from_dlpack_errors() -> None:
    with pytest.raises(TypeError, match="__dlpack__"):
        plugrad.from_dlpack([1.0, 2.0])


@strict
def test_from_dlpack_onto_a_chosen_backend() -> None:
    a = np.arange(3.0)
    t = plugrad.from_dlpack(a, device="array_api_strict")
    assert t.device.name == "array_api_strict:0" and t.tolist() == [0.0, 1.0, 2.0]
    with plugrad.use_backend("array_api_strict"):
        assert plugrad.from_dlpack(a).backend.name == "array_api_strict"


def test_dlpack_with_torch_is_zero_copy() -> None:
    torch = pytest.importorskip("torch")
    source = torch.arange(3, dtype=torch.float32)
    t = plugrad.from_dlpack(source)
    source[0] = 9.0
    assert t.tolist() == [9.0, 1.0, 2.0]
    back = torch.from_dlpack(plugrad.tensor([1.0, 2.0]))
    assert back.tolist() == [1.0, 2.0]


@strict
def test_backward_gradient_on_another_device_is_a_clear_error() -> None:
    y = plugrad.ones(2, backend="array_api_strict", requires_grad=True) * 2
    with pytest.raises(plugrad.errors.DeviceMismatchError, match=r"\.to\('array_api_strict:0'\)"):
        y.backward(plugrad.ones(2, device="numpy"))


def test_dlpack_export_takes_the_standards_keywords() -> None:
    t = plugrad.tensor([1.0, 2.0])
    shared = np.from_dlpack(t)  # numpy passes max_version (and dl_device/copy when asked)
    assert np.shares_memory(shared, t.array)
    copied = np.from_dlpack(t, copy=True)
    assert not np.shares_memory(copied, t.array)
    capsule = t.__dlpack__(max_version=(1, 0), dl_device=(1, 0))
    assert type(capsule).__name__ == "PyCapsule"


def test_to_device_is_the_standards_name_for_to() -> None:
    pytest.importorskip("array_api_strict")
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    assert x.to_device(x.device) is x
    y = x.to_device("array_api_strict")
    assert y.backend.name == "array_api_strict"
    y.sum().backward()  # differentiable, like .to()
    assert x.grad.tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="stream"):
        x.to_device("numpy", stream=1)


_LIBRARIES = ("numpy", "array_api_strict", "torch", "jax", "dask")


_PAIRS = [
    pytest.param(source, target, id=f"{source}-to-{target}")
    for source in _LIBRARIES
    for target in _LIBRARIES
    if source != target
]


@pytest.mark.parametrize(("source", "target"), _PAIRS)
def test_to_between_every_pair_of_backends_moves_values_and_gradients(
    source: str, target: str
) -> None:
    missing = [n for n in (source, target) if n not in plugrad.backends.available()]
    if missing:
        pytest.skip(f"backend {' and '.join(missing)} not available here")
    values = np.array([[1.5, -2.0, 0.25], [3.0, 4.0, -0.5]])
    x = plugrad.asarray(values, dtype=plugrad.float64, device=source, requires_grad=True)
    y = x.to(target)
    assert y.backend.name == target and y.dtype == plugrad.float64 and y.shape == (2, 3)
    assert repr(y.grad_fn) == "<ToDeviceBackward>"
    np.testing.assert_array_equal(y.detach().numpy(), values)
    weights = plugrad.asarray(np.arange(6.0).reshape(2, 3), device=y.device)
    (y * y * weights).sum().backward()
    assert x.grad.backend.name == source and x.grad.dtype == plugrad.float64
    np.testing.assert_allclose(x.grad.numpy(), 2 * values * np.arange(6.0).reshape(2, 3))
    back = y.detach().to(source)
    assert back.backend.name == source
    np.testing.assert_array_equal(back.numpy(), values)


@pytest.mark.parametrize(
    ("device", "message"),
    [
        ("torch:cuda:7", r"backend 'torch' has no device 'cuda:7'; its devices are"),
        ("jax:tpu:3", r"backend 'jax' has no device 'tpu:3'; its devices are"),
        ("dask:1", r"backend 'dask' has no device '1'; its devices are dask"),
        ("nosuch", r"no backend named 'nosuch' is registered; registered backends:"),
    ],
)
def test_to_a_device_that_cannot_be_reached_names_it_and_what_exists(
    device: str, message: str
) -> None:
    name = device.split(":")[0]
    if name != "nosuch" and name not in plugrad.backends.available():
        pytest.skip(f"backend {name!r} not available here")
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(plugrad.errors.UnknownBackendError, match=message):
        x.to(device)
    assert x.grad is None and x.device.name == "numpy" and x.tolist() == [1.0, 2.0]


def test_to_an_unavailable_backend_says_why() -> None:
    if "cupy" in plugrad.backends.available():
        pytest.skip("cupy is available here")
    with pytest.raises(
        plugrad.errors.BackendUnavailableError, match="backend 'cupy' is not available: "
    ):
        plugrad.tensor([1.0]).to("cupy")


def test_moving_a_dtype_the_target_backend_lacks_is_refused() -> None:
    # Dask has no float16 here: the tensor moved, and its dtype (printing, any op) then
    # failed with a bare KeyError.
    import plugrad.backends

    if "dask" not in plugrad.backends.available():
        pytest.skip("the dask backend is not installed (extra 'dask')")
    half = plugrad.zeros(3, dtype=plugrad.float16, device="numpy")
    with pytest.raises(plugrad.errors.DtypeError, match=r"to\(\): the dask backend has no dtype"):
        half.to("dask")
    with pytest.raises(plugrad.errors.DtypeError, match=r"from_dlpack\(\): the dask backend"):
        plugrad.from_dlpack(np.zeros(3, np.float16), device="dask")
    moved = half.to(plugrad.float32).to("dask")
    assert moved.dtype == plugrad.float32 and moved.tolist() == [0.0, 0.0, 0.0]
