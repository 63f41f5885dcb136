"""The torch backend: plugrad's engine on PyTorch tensors, PyTorch's autograd off."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

import plugrad
from plugrad.errors import PluginOutputError
from plugrad.hookspecs import hookimpl
from plugrad.opdef import op

torch = pytest.importorskip("torch", reason="the torch backend needs torch (the torch extra)")

from plugrad.backends.torch_backend import TorchBackend  # noqa: E402 (needs torch)


def test_devices_are_the_ones_torch_has() -> None:
    info = {b.name: b for b in plugrad.plugins.list_backends()}["torch"]
    names = info.devices
    assert names[0] == "torch:cpu"
    assert ("torch:cuda:0" in names) == torch.cuda.is_available()
    x = plugrad.ones(2, device="torch:cpu")
    assert x.device.name == "torch:cpu" and x.array.device == torch.device("cpu")


def test_classic_graph_on_torch_with_torch_autograd_off() -> None:
    with plugrad.use_backend("torch"):
        a, b, c, d = (plugrad.tensor(v, requires_grad=True) for v in (2.0, 3.0, 4.0, 5.0))
        e = a * b + plugrad.log(d) * c
        e.backward()
    assert isinstance(e.array, torch.Tensor) and repr(e.grad_fn) == "<AddBackward>"
    assert not e.array.requires_grad, "plugrad does the autograd, not torch"
    assert [t.grad.item() for t in (a, b, c, d)] == pytest.approx([3.0, 2.0, math.log(5.0), 0.8])
    assert all(isinstance(t.grad.array, torch.Tensor) for t in (a, b, c, d))


def test_mlp_step_matches_numpy() -> None:
    rng = np.random.default_rng(0)
    x, w1, w2 = rng.normal(size=(8, 5)), rng.normal(size=(5, 4)), rng.normal(size=(4,))

    def loss_and_grads(backend: str) -> list[np.ndarray]:
        p1 = plugrad.asarray(w1, device=backend, requires_grad=True)
        p2 = plugrad.asarray(w2, device=backend, requires_grad=True)
        loss = plugrad.mean(plugrad.tanh(plugrad.asarray(x, device=backend) @ p1) @ p2)
        loss.backward()
        return [loss.detach().numpy(), p1.grad.numpy(), p2.grad.numpy()]

    for ours, reference in zip(loss_and_grads("torch"), loss_and_grads("numpy")):
        np.testing.assert_allclose(ours, reference, rtol=1e-12)


def test_dlpack_transfers_with_numpy_share_memory_and_carry_gradients() -> None:
    source = np.arange(3.0)
    moved = plugrad.asarray(source).to("torch")
    source[0] = 7.0
    assert moved.tolist() == [7.0, 1.0, 2.0], "the move shares NumPy's memory"
    back = moved.numpy()
    assert np.shares_memory(back, source) and back.flags.writeable  # as PyTorch's numpy()
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    (x.to("torch") ** 2).sum().backward()
    assert x.grad.device.name == "numpy" and x.grad.tolist() == [2.0, 4.0]


def test_reversed_numpy_views_are_copied_not_shared() -> None:
    source = np.arange(4.0)[::-1]  # negative strides: torch cannot view this memory
    assert plugrad.asarray(source).to("torch").tolist() == [3.0, 2.0, 1.0, 0.0]


def test_mixing_with_numpy_names_both_and_the_fix() -> None:
    with pytest.raises(plugrad.errors.DeviceMismatchError, match=r"numpy.*torch.*\.to\("):
        plugrad.ones(2) * plugrad.ones(2, backend="torch")


def test_seeded_random_numbers_repeat() -> None:
    a = plugrad.randn(4, generator=plugrad.Generator(seed=1, backend="torch"))
    b = plugrad.randn(4, generator=plugrad.Generator(seed=1, backend="torch"))
    assert a.device.name == "torch:cpu" and a.tolist() == b.tolist()


def test_scatter_add_uses_index_add_and_accumulates() -> None:
    assert plugrad.plugins.kernel_source("scatter_add", "torch").kind == "backend"
    rng = np.random.default_rng(0)
    index = rng.integers(0, 5, size=40)
    x = plugrad.asarray(rng.normal(size=(5, 3)), device="torch", requires_grad=True)
    weights = rng.normal(size=(40, 3))
    picked = plugrad.take(x, plugrad.tensor(index, device="torch"), axis=0)
    plugrad.sum(picked * plugrad.asarray(weights, device="torch")).backward()
    expected = np.zeros((5, 3))
    np.add.at(expected, index, weights)
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12)
    y = plugrad.asarray(rng.normal(size=(2, 4)), device="torch", requires_grad=True)
    y[:, ::-2].sum().backward()  # a negative step, which torch's own indexing lacks
    assert y.grad.tolist() == [[0.0, 1.0, 0.0, 1.0]] * 2


def test_in_place_updates_write_into_the_same_torch_memory() -> None:
    x = plugrad.zeros(3, backend="torch")
    memory = x.array.data_ptr()
    x += 1.0
    x[0] = 5.0
    assert x.tolist() == [5.0, 1.0, 1.0] and x.array.data_ptr() == memory


# -- a gradient on another device of the same backend ----------------------------------------


class PairedTorchBackend(TorchBackend):
    """torch with two devices here: the CPU and ``meta`` (shapes and dtypes, no data).

    Their tensors share one type and torch's dtype objects, as torch:cpu and
    torch:cuda:0 do on a machine with a GPU: nothing but the device tells them apart.
    """

    name = "torch_pair"

    def devices(self):
        return (torch.device("cpu"), torch.device("meta"))

    def device_names(self, devices):
        return [f"torch_pair:{device.type}" for device in devices]


@pytest.fixture
def paired_torch():
    """Register the two-device backend and an op plugin built by the test; remove both after."""
    added = []

    def register(plugin, name):
        added.append(plugrad.plugins.register(plugin, name=name))

    register(SimpleNamespace(plugrad_backends=hookimpl(lambda: [PairedTorchBackend()])), "paired")
    yield register
    for name in reversed(added):
        plugrad.plugins.unregister(name)


def _to_meta(xp, g, ans, *inputs):
    return g.to("meta")


def _same_device(xp, g, ans, *inputs):
    return g * 1


# One op per kind of node the engine has (each checks gradients on its own path).
MOVING_OPS = [
    ("unary", lambda: op("meta_unary", lambda xp, x, /: x * 1).vjp(_to_meta), 1, "x"),
    ("broadcasting", lambda: op("meta_broadcasting", lambda xp, x, /: x * 1, broadcasting=True)
     .vjp(_to_meta), 1, "x"),
    ("binary", lambda: op("meta_binary", lambda xp, x, y, /: x * y)
     .vjp(_same_device, _to_meta), 2, "y"),
    ("two outputs", lambda: op("meta_pair", lambda xp, x, /: (x * 1, x * 2), multiple_outputs=True)
     .vjp(lambda xp, g, ans, x: g[0].to("meta")), 1, "x"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("make_op", "arity", "culprit_input"),
    [case[1:] for case in MOVING_OPS],
    ids=[case[0] for case in MOVING_OPS],
)
def test_a_gradient_on_another_device_is_refused_naming_op_plugin_and_devices(
    paired_torch, make_op, arity, culprit_input
) -> None:
    declared = make_op()
    paired_torch(SimpleNamespace(plugrad_ops=hookimpl(lambda: [declared])), "culprit")
    inputs = [plugrad.ones(3, device="torch_pair:cpu", requires_grad=True) for _ in range(arity)]
    outputs = getattr(plugrad.ops, declared.name)(*inputs)
    loss = sum(y.sum() for y in (outputs if isinstance(outputs, tuple) else (outputs,)))
    # The engine's own check: checking mode, when on, words the same finding its own way.
    with plugrad.plugins.checking(False), pytest.raises(PluginOutputError) as info:
        loss.backward()
    assert str(info.value) == (
        f"plugin 'culprit', op {declared.name!r}: the backward rule for input {culprit_input!r} "
        "returned a gradient on device(type='meta'), but the op ran on 'torch_pair:cpu'; "
        "compute the gradient with xp.* on the inputs' device"
    )
    assert all(x.grad is None for x in inputs), "backward changed nothing"


@pytest.mark.parametrize("device", ["torch_pair:cpu", "torch_pair:meta"])
def test_gradients_on_their_own_device_of_a_two_device_backend_pass(paired_torch, device) -> None:
    w_host, x_host = np.array([[0.5, -1.0], [2.0, 1.0]]), np.array([1.0, 2.0])
    w = plugrad.tensor(w_host, device=device, requires_grad=True)
    x = plugrad.tensor(x_host, device=device, requires_grad=True)
    (plugrad.tanh(w @ x) * x).sum().backward()
    assert w.grad.device.name == x.grad.device.name == device
    assert w.grad.array.device == x.grad.array.device == torch.device(device.split(":")[1])
    if device == "torch_pair:cpu":  # meta tensors have no values
        t = np.tanh(w_host @ x_host)
        np.testing.assert_allclose(x.grad.numpy(), t + w_host.T @ ((1 - t**2) * x_host))


def test_a_slice_with_a_negative_step_is_a_copy_that_shares_no_version() -> None:
    # PyTorch has no negative strides: x[::-1] is a copy there, which was counted as a view,
    # so a change of x stopped a backward pass that had saved only the copy.
    x = plugrad.arange(6.0, device="torch", requires_grad=True)
    y = x * 1
    reversed_ = y[::-1]
    loss = (reversed_ * reversed_).sum()
    y.add_(1.0)
    loss.backward()
    assert x.grad.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    plain = plugrad.arange(6.0, device="torch")
    every_other = plain[::-2]
    every_other.zero_()
    assert plain.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]  # documented: a copy
    forward = plain[1::2]
    forward.zero_()  # a positive step is a view, as everywhere
    assert plain.tolist() == [0.0, 0.0, 2.0, 0.0, 4.0, 0.0]


def test_clone_positive_and_conj_are_new_memory() -> None:
    # torch.positive and torch.conj (of a real tensor) return their argument itself: clone()
    # of a tensor requiring grad was the tensor, and y.mul_(2) on y = x.conj() changed x.
    with plugrad.use_backend("torch"):
        x = plugrad.tensor([1.0, 2.0], requires_grad=True)
        z = plugrad.tensor([1 + 1j, 2 - 1j])
        m = plugrad.ones(2, 2)
        copies = [x.clone(), plugrad.positive(x), (x * 1).conj(), m.rot90(0)]
        before = [c.detach().tolist() for c in copies]
        conjugate = z.conj()
        with plugrad.no_grad():
            x.add_(10)
            m.add_(10)
            # z.conj() is a view in PyTorch, a copy in plugrad: z is not changed under it.
            with pytest.raises(plugrad.errors.ViewCopyError, match=r"x\.conj"):
                z.add_(10)
    assert [c.detach().tolist() for c in copies] == before
    assert not any(c.array.is_conj() for c in (*copies, conjugate))
    assert z.tolist() == [1 + 1j, 2 - 1j]


def test_complex_add_and_subtract_are_exact_part_by_part_with_infinities() -> None:
    # PyTorch's complex add computes x1 + 1 * x2 in complex arithmetic, where
    # 1 * (0 + inf j) is nan + inf j: (1 + 0j) + (0 + inf j) gave nan + inf j, as did
    # plugrad.complex(1.0, inf) on this backend.
    inf, nan = math.inf, math.nan
    first = [1 + 0j, complex(inf, 0), complex(0, -inf), complex(nan, 1), 2 - 3j]
    second = [complex(0, inf), 1 + 0j, complex(inf, inf), 1j, complex(0, nan)]

    def results() -> list[list[complex]]:
        a = plugrad.tensor(first)
        b = plugrad.tensor(second, dtype=plugrad.complex64)
        row = plugrad.tensor([second[:2]])  # broadcast against a column
        return [
            (a + b).tolist(), (a - b).tolist(), (b - a).tolist(),
            (a + complex(0, inf)).tolist(), (complex(0, -inf) - a).tolist(),
            (plugrad.tensor([1.0, 2.0]) + b[:2]).tolist(), (a.conj() + b).tolist(),
            (a[:2, None] + row).tolist(), (a - 1.5).tolist(),
            plugrad.complex(plugrad.tensor([1.0, 2.0]), plugrad.tensor([inf, -inf])).tolist(),
        ]  # fmt: skip

    with np.errstate(invalid="ignore"):  # (NumPy warns of inf - inf)
        expected = results()  # the numpy backend: the standard's part-by-part sums
    with plugrad.use_backend("torch"):
        got = results()
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_array_equal(np.array(g), np.array(e))  # (nan equal to nan)
    assert got[0][0] == complex(1, inf) and got[-1] == [complex(1, inf), complex(2, -inf)]
    with plugrad.use_backend("torch"):
        z = plugrad.tensor([1 + 2j, 3 - 1j], requires_grad=True)
        w = plugrad.tensor([0.5 - 1j, 2j], requires_grad=True)
        ((z + w) * (z - w).conj()).real.sum().backward()
        x = plugrad.tensor([1.0, 2.0])
        x.add_(3)
        assert x.dtype == plugrad.float32 and x.tolist() == [4.0, 5.0]
    assert z.grad.tolist() == pytest.approx([2 + 4j, 6 - 2j])
    assert w.grad.tolist() == pytest.approx([-1 + 2j, -4j])


def test_a_dtype_torch_has_no_kernel_for_is_a_dtype_error() -> None:
    # PyTorch's NotImplementedError ("add_stub" not implemented for 'UInt32') came through raw.
    with plugrad.use_backend("torch"):
        with pytest.raises(plugrad.errors.DtypeError, match=r"add\(\): the torch kernel .*uint32"):
            plugrad.tensor([1, 2], dtype=plugrad.uint32) + 1
        with pytest.raises(plugrad.errors.DtypeError, match="bool"):
            plugrad.floor(plugrad.tensor([True]))
        # torch's RuntimeError for `-` of bools ("... on a bool tensor is not supported")
        with pytest.raises(plugrad.errors.DtypeError, match=r"negative\(\)"):
            -plugrad.tensor([True])
        # float16 linear algebra: a raw RuntimeError (inv), a ShapeError (pinv, whose message
        # names dimensions), and every hint said to convert to int64
        half = plugrad.eye(3, dtype=plugrad.float16)
        for function in (plugrad.linalg.inv, plugrad.linalg.pinv, plugrad.linalg.det):
            with pytest.raises(
                plugrad.errors.DtypeError, match=r"float16.*x\.to\(plugrad\.float32\)"
            ):
                function(half)
        with pytest.raises(plugrad.errors.ShapeError, match=r"shapes \(3,\)"):
            plugrad.linalg.pinv(plugrad.ones(3))  # the same message for a 1-d input: its shape
        # complex inputs torch has no kernel for: the hint said to convert them to int64
        with pytest.raises(plugrad.errors.DtypeError, match=r"complex64.*backend that has one"):
            plugrad.softmax(plugrad.tensor([1 + 1j, 2j]), axis=0)


def test_numpy_of_a_cpu_tensor_shares_its_memory_writably_as_pytorchs() -> None:
    # It was a read-only view: neither the shared array the docs promise nor a copy.
    t = plugrad.tensor([1.0, 2.0], device="torch")
    array = t.numpy()
    array[0] = 7.0
    assert t.tolist() == [7.0, 2.0]
    t.add_(1.0)
    assert array.tolist() == [8.0, 3.0]


def test_a_torch_tensor_with_its_negative_bit_set_is_read() -> None:
    # asarray() took it, and repr, tolist() and numpy() then raised PyTorch's RuntimeError.
    q = plugrad.asarray(torch.tensor([1 + 1j, 2 - 3j]).conj().imag)
    assert q.tolist() == [-1.0, 3.0] and q.numpy().tolist() == [-1.0, 3.0]
    assert "tensor([-1.,  3.]" in repr(q)


def test_to_another_library_with_copy_copies_even_where_memory_could_be_shared() -> None:
    # numpy -> torch:cpu shares memory through DLPack: copy=True was ignored there.
    x = plugrad.tensor([1.0, 2.0])
    for target in ("torch", "numpy"):
        moved = x.to(target, copy=True)
        moved.add_(1.0)
        assert x.tolist() == [1.0, 2.0], target
        x = x.to("torch")
    shared = plugrad.tensor([1.0, 2.0]).to("torch")
    assert shared.tolist() == [1.0, 2.0]


def test_from_dlpack_of_a_dtype_plugrad_lacks_is_a_dtype_error() -> None:
    with pytest.raises(plugrad.errors.DtypeError, match=r"from_dlpack\(\).*bfloat16"):
        plugrad.from_dlpack(torch.ones(2, dtype=torch.bfloat16))


@pytest.mark.parametrize("order", [1, -1, math.inf, -math.inf])
def test_matrix_norm_gradients_of_column_and_row_sums_are_the_numpy_backends(order) -> None:
    # torch.linalg.matrix_norm adds a column in another order than abs().sum(): the
    # gradient's sums never equalled the forward's, and it was nan (half of 30 matrices).
    rng = np.random.default_rng(1)
    for _ in range(30):
        data = rng.standard_normal(tuple(rng.integers(2, 40, size=2)))
        grads = []
        for device in ("numpy", "torch"):
            x = plugrad.tensor(data, device=device, requires_grad=True)
            plugrad.linalg.matrix_norm(x, ord=order).backward()
            grads.append(x.grad.numpy())
        np.testing.assert_allclose(grads[1], grads[0], atol=1e-12)


def test_argmax_and_argmin_of_booleans_are_numpys() -> None:
    # PyTorch's refuses bools: a raw RuntimeError came through.
    data = np.array([[True, False, True], [False, False, True]])
    for name in ("argmax", "argmin"):
        for kwargs in ({}, {"dim": 1}, {"dim": 0, "keepdim": True}):
            got = getattr(plugrad.tensor(data, device="torch"), name)(**kwargs)
            expected = getattr(plugrad.tensor(data), name)(**kwargs)
            assert got.dtype is expected.dtype
            np.testing.assert_array_equal(got.numpy(), expected.numpy())
