"""Pickling tensors, Parameters, modules and optimizers: plain bytes, no graph, across processes."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import pickle
import pickletools
import sys

import numpy as np
import pytest

import plugrad
from plugrad import nn, optim
from plugrad.errors import SerializationError

DTYPES = ["bool", "int8", "int64", "uint8", "float16", "float32", "float64", "complex128"]


def round_trip(obj):
    return pickle.loads(pickle.dumps(obj))


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_tensor_comes_back_with_its_values_dtype_and_device(backend, dtype) -> None:
    if getattr(plugrad, dtype) not in backend.dtypes:
        pytest.skip(f"{backend.backend.name} has no {dtype}")
    values = (np.arange(6).reshape(2, 3) * 3 - 7).astype(dtype)
    x = plugrad.asarray(values, device=backend)
    y = round_trip(x)
    assert type(y) is plugrad.Tensor
    assert y.dtype == x.dtype and y.device is x.device and y.shape == (2, 3)
    np.testing.assert_array_equal(np.asarray(y), values)
    assert not y.requires_grad and y.is_leaf


def test_views_and_non_contiguous_data_pickle_their_own_values(on_numpy) -> None:
    base = plugrad.asarray(np.arange(12.0).reshape(3, 4))
    for view in (base[:, ::2], base.mT, base[1], base[0, 0]):
        np.testing.assert_array_equal(np.asarray(round_trip(view)), np.asarray(view))


def test_requires_grad_is_kept_and_grad_and_hooks_are_not(on_numpy) -> None:
    w = plugrad.tensor([1.0, 2.0], requires_grad=True)
    w.register_hook(lambda g: g * 2)  # a lambda: pickling would fail if hooks were kept
    (w * w).sum().backward()
    copy = round_trip(w)
    assert copy.requires_grad and copy.is_leaf and copy.grad is None
    (copy * copy).sum().backward()
    np.testing.assert_array_equal(np.asarray(copy.grad), [2.0, 4.0])  # no doubling hook


def test_the_pickle_holds_no_code_but_the_rebuild_function(on_numpy) -> None:
    data = pickle.dumps(plugrad.tensor([1.0], requires_grad=True))
    globals_named = {
        arg for op, arg, _ in pickletools.genops(data) if op.name in {"GLOBAL", "STACK_GLOBAL"}
    }
    strings = {
        arg for op, arg, _ in pickletools.genops(data) if op.name.endswith("UNICODE") and arg
    }
    assert "_rebuild_tensor" in strings and "plugrad.pickling" in strings
    assert not any("lambda" in str(s) or "backends" in str(s) for s in strings | globals_named)


def test_a_tensor_with_a_graph_is_refused_with_the_fix(on_numpy) -> None:
    w = plugrad.tensor([1.0, 2.0], requires_grad=True)
    y = w * 2
    with pytest.raises(SerializationError, match=r"detach\(\)"):
        pickle.dumps(y)
    np.testing.assert_array_equal(np.asarray(round_trip(y.detach())), [2.0, 4.0])


def test_an_unknown_device_is_a_clear_error(on_numpy, monkeypatch) -> None:
    data = pickle.dumps(plugrad.tensor([1.0]))
    monkeypatch.setattr(
        plugrad.pickling.registry,
        "resolve_device",
        lambda name: (_ for _ in ()).throw(plugrad.errors.UnknownBackendError("no such backend")),
    )
    with pytest.raises(SerializationError, match="not available here"):
        pickle.loads(data)


def test_parameters_modules_and_optimizers_round_trip_together(on_numpy) -> None:
    plugrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    opt = optim.Adam(model.parameters(), lr=0.01)
    x = plugrad.randn(5, 3)
    for _ in range(2):
        opt.zero_grad()
        (model(x) ** 2).mean().backward()
        opt.step()
    model2, opt2 = round_trip((model, opt))
    assert isinstance(model2[0].weight, nn.Parameter)
    assert repr(model2) == repr(model)
    assert all(p is q for p, q in zip(opt2.param_groups[0]["params"], model2.parameters()))
    # The next steps continue identically from the copied state.
    for m, o in ((model, opt), (model2, opt2)):
        o.zero_grad()
        (m(x) ** 2).mean().backward()
        o.step()
    for p, q in zip(model.parameters(), model2.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())


WORKER = """
def train_elsewhere(model, opt, x):
    opt.zero_grad()
    loss = (model(x) ** 2).mean()
    loss.backward()
    opt.step()
    return model, opt, loss.detach()
"""


def test_spawned_processes_receive_and_return_models_and_optimizers(
    on_numpy, tmp_path, monkeypatch
) -> None:
    # A spawned process imports the function it runs by module name: give it a module.
    (tmp_path / "plugrad_pickling_worker.py").write_text(WORKER)
    monkeypatch.syspath_prepend(str(tmp_path))
    from plugrad_pickling_worker import train_elsewhere

    plugrad.manual_seed(1)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = plugrad.randn(6, 3)
    expected = train_elsewhere(*round_trip((model, opt, x)))
    spawn = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=spawn) as pool:
        model2, opt2, loss = pool.submit(train_elsewhere, model, opt, x).result(timeout=300)
    assert float(loss) == float(expected[2])
    for p, q in zip(expected[0].parameters(), model2.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    assert opt2.param_groups[0]["params"][0] is next(model2.parameters())
    assert set(map(id, opt2.state)) == set(map(id, model2.parameters()))
    assert len(opt2.state) == 4  # momentum buffers came back


def test_a_device_pickles_by_name_and_comes_back_as_itself() -> None:
    import pickle

    device = plugrad.ones(1).device
    config = pickle.loads(pickle.dumps({"device": device, "x": plugrad.ones(2)}))
    assert config["device"] is device and config["x"].device is device


def test_attributes_set_on_a_tensor_or_parameter_are_kept_as_pytorch_keeps_them() -> None:
    # Tensors took no attributes of the user's (p.no_weight_decay = True): AttributeError.
    import copy

    weight = plugrad.nn.Parameter(plugrad.ones(2))
    weight.no_weight_decay = True
    for copied in (pickle.loads(pickle.dumps(weight)), copy.deepcopy(weight), copy.copy(weight)):
        assert type(copied) is plugrad.nn.Parameter and copied.no_weight_decay is True
    layer = plugrad.nn.Linear(2, 2)
    layer.weight.shard = {"axis": 0}
    twin = copy.deepcopy(layer)
    assert twin.weight.shard == {"axis": 0} and twin.weight.shard is not layer.weight.shard
    plain = plugrad.ones(3)
    plain.tag = "input"
    assert pickle.loads(pickle.dumps(plain)).tag == "input"
    assert not hasattr(pickle.loads(pickle.dumps(plugrad.ones(3))), "tag")


def test_deepcopy_copies_a_tensor_reached_twice_once_and_a_view_apart_from_its_base() -> None:
    import copy

    base = plugrad.reshape(plugrad.arange(12.0), (3, 4))
    copied = copy.deepcopy({"base": base, "again": base, "view": base[1:3]})
    assert copied["again"] is copied["base"]
    copied["base"][1, 0] = -100.0
    # The documented difference from PyTorch: the copied view does not follow its copied base.
    assert float(copied["view"][0, 0]) == 4.0
    assert float(base[1, 0]) == 4.0 and copied["view"].shape == (2, 4)


def test_an_uninitialized_lazy_model_pickles_and_its_copy_infers_its_shapes_as_torchs() -> None:
    # Pickling read the values of the uninitialized parameters: UninitializedParameterError.
    torch = pytest.importorskip("torch")
    model = nn.Sequential(nn.LazyLinear(3), nn.ReLU(), nn.LazyBatchNorm1d())
    model[0].weight.tag = "first"
    opt = optim.SGD(model.parameters(), lr=0.1)
    copied, copied_opt = round_trip((model, opt))
    weight = copied[0].weight
    assert type(weight) is nn.UninitializedParameter and weight.tag == "first"
    assert weight.requires_grad and weight.dtype == model[0].weight.dtype
    assert type(copied[2].running_mean) is nn.UninitializedBuffer
    assert not copied[2].running_mean.requires_grad
    assert copied_opt.param_groups[0]["params"][0] is weight  # one object, as the original
    theirs = round_trip(torch.nn.Sequential(torch.nn.LazyLinear(3), torch.nn.ReLU()))
    assert copied(plugrad.ones((2, 4))).shape == tuple(theirs(torch.ones(2, 4)).shape) == (2, 3)
    assert type(copied[0]) is nn.Linear and copied[0].weight is weight and weight.shape == (3, 4)
    assert type(model[0]) is nn.LazyLinear  # the original is as it was
    no_grad = round_trip(nn.UninitializedParameter(requires_grad=False, dtype=plugrad.float64))
    assert not no_grad.requires_grad and no_grad.dtype == plugrad.float64


def bfloat16_views(backend_name: str) -> dict[str, plugrad.Tensor]:
    pytest.importorskip(backend_name)
    values = [[1.5, -2.0, 3.0e38, -0.0], [float("nan"), float("inf"), -1.0e-38, 7.0]]
    w = plugrad.asarray(values, backend=backend_name).to(plugrad.bfloat16)
    return {"whole": w, "T": w.T, "rows": w[::2], "columns": w[:, 1:], "0-d": w[1, 2]}


def assert_same_bfloat16(copy: plugrad.Tensor, original: plugrad.Tensor) -> None:
    assert copy.dtype is plugrad.bfloat16 and copy.device is original.device
    assert copy.shape == original.shape
    widened = copy.detach().float().numpy()
    expected = original.detach().float().numpy()
    np.testing.assert_array_equal(widened, expected)  # (NaN where NaN)
    np.testing.assert_array_equal(np.signbit(widened), np.signbit(expected))


@pytest.mark.parametrize("backend_name", ["torch", "jax"])
def test_bfloat16_tensors_and_their_views_come_back_exactly(backend_name) -> None:
    for view in bfloat16_views(backend_name).values():
        assert_same_bfloat16(round_trip(view), view)
    model = nn.Linear(3, 2, device=backend_name).bfloat16()
    copy = round_trip(model)
    for name, parameter in model.named_parameters():
        assert_same_bfloat16(getattr(copy, name), parameter)
        assert getattr(copy, name).requires_grad


def test_bfloat16_pickles_as_its_values_where_the_host_holds_them_as_float32(
    monkeypatch,
) -> None:
    views = bfloat16_views("torch")
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # the host path without ml_dtypes
    for view in views.values():
        assert_same_bfloat16(round_trip(view), view)
