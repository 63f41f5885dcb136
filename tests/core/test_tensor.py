"""Tensor: attributes, operators, repr, requires_grad rules, conversions."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import plugrad
from plugrad.errors import BackwardError, DtypeError, InvalidArgumentError, ShapeError


def test_attributes() -> None:
    x = plugrad.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert x.shape == (2, 3) and x.ndim == 2 and x.size == 6 and len(x) == 2
    assert x.dtype == plugrad.float32
    assert x.device is plugrad.default_device() and x.backend is x.device.backend
    assert isinstance(x.array, x.backend.array_types())
    assert x.grad is None and x.grad_fn is None and x.is_leaf and not x.requires_grad


def test_the_legacy_tensor_constructor_makes_default_float_tensors_as_pytorchs() -> None:
    # Tensor(data) and Tensor(2, 3) were refused (old PyTorch code writes them).
    assert plugrad.Tensor([1, 2]).tolist() == [1.0, 2.0]
    assert plugrad.Tensor([1, 2]).dtype is plugrad.get_default_dtype()
    assert plugrad.Tensor(2, 3).shape == (2, 3) and plugrad.Tensor(2, 3).tolist() == [[0.0] * 3] * 2
    assert plugrad.Tensor().shape == (0,) and plugrad.Tensor([]).shape == (0,)
    with pytest.raises(TypeError, match=r"plugrad\.tensor\(data, \.\.\.\)"):
        plugrad.Tensor([1.0], dtype=plugrad.float64)
    with pytest.raises(TypeError, match="one sequence of data or ints"):
        plugrad.Tensor([1.0], [2.0])


def test_the_legacy_constructor_of_a_tensor_is_that_tensor_under_a_new_name() -> None:
    # Tensor(t) made a float32 copy without history: a float64 tensor lost its dtype and
    # its gradient; PyTorch's is t itself (a view sharing memory and history).
    torch = pytest.importorskip("torch")
    x = plugrad.tensor([1.0, 2.0], dtype=plugrad.float64, requires_grad=True)
    alias = plugrad.Tensor(x)
    assert alias.dtype is plugrad.float64 and alias.requires_grad and alias is not x
    (alias * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]
    with plugrad.no_grad():
        alias[0] = 5.0
    assert x.tolist() == [5.0, 2.0]  # the same memory
    counts = plugrad.tensor([1, 2])
    assert plugrad.Tensor(counts).dtype is plugrad.int64
    assert torch.Tensor(torch.tensor([1, 2])).dtype is torch.int64
    assert plugrad.LongTensor(counts).tolist() == [1, 2]
    with pytest.raises(TypeError, match=r"own dtype \(plugrad.float32\).*t.to"):
        plugrad.FloatTensor(x)
    with pytest.raises(TypeError):
        torch.FloatTensor(torch.ones(2, dtype=torch.float64))


@pytest.mark.parametrize(
    ("op", "reference"),
    [
        (operator.add, np.add),
        (operator.sub, np.subtract),
        (operator.mul, np.multiply),
        (operator.truediv, np.divide),
        (operator.pow, np.power),
        (operator.eq, np.equal),
        (operator.ne, np.not_equal),
        (operator.lt, np.less),
        (operator.le, np.less_equal),
        (operator.gt, np.greater),
        (operator.ge, np.greater_equal),
    ],
)
def test_binary_operators_with_tensors_and_scalars_on_either_side(op, reference) -> None:
    a = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    b = np.array([2.0, 2.0, 0.5], dtype=np.float32)
    ta, tb = plugrad.asarray(a), plugrad.asarray(b)
    np.testing.assert_allclose(op(ta, tb).numpy(), reference(a, b))
    np.testing.assert_allclose(op(ta, 2.0).numpy(), reference(a, np.float32(2.0)))
    np.testing.assert_allclose(op(2.0, ta).numpy(), reference(np.float32(2.0), a))
    assert op(ta, 2).dtype == op(ta, tb).dtype


def test_unary_operators_and_matmul() -> None:
    a = plugrad.tensor([[1.0, -2.0], [3.0, 4.0]])
    np.testing.assert_array_equal((-a).numpy(), -a.numpy())
    assert +a is a
    np.testing.assert_array_equal((a @ a).numpy(), a.numpy() @ a.numpy())
    np.testing.assert_array_equal(a.T.numpy(), a.numpy().T)
    np.testing.assert_array_equal(a.mT.numpy(), a.numpy().T)
    np.testing.assert_array_equal(a.transpose(0, 1).numpy(), a.numpy().T)
    np.testing.assert_array_equal(a.permute(1, 0).numpy(), a.numpy().T)
    assert a.reshape(4).shape == (4,) and a.reshape((1, 4)).shape == (1, 4)
    assert a.sum().item() == 6.0 and a.mean(axis=0).shape == (2,)


def test_numpy_array_on_the_left_defers_to_tensor() -> None:
    with pytest.raises(TypeError, match=r"plugrad\.asarray"):
        np.ones(2) + plugrad.ones(2)


def test_non_tensor_inputs_get_a_clear_error() -> None:
    x = plugrad.ones(2)
    with pytest.raises(TypeError, match=r"x2 is a list, not a Tensor"):
        x + [1.0, 2.0]  # noqa: RUF005 - a list on purpose
    with pytest.raises(TypeError, match="at least one must be a Tensor"):
        plugrad.add(1.0, 2.0)
    with pytest.raises(TypeError, match=r"plugrad\.asarray"):
        plugrad.exp(np.ones(2))


@pytest.fixture
def on_numpy():
    with plugrad.use_backend("numpy"):
        yield


def test_repr(on_numpy) -> None:
    assert repr(plugrad.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(plugrad.tensor([1.0], requires_grad=True)) == "tensor([1.], requires_grad=True)"
    x = plugrad.tensor(2.0, requires_grad=True)
    assert repr(x * x) == "tensor(4., grad_fn=<MulBackward>)"
    assert repr(plugrad.tensor([1, 2])) == "tensor([1, 2])"
    assert (
        repr(plugrad.tensor([1.0], dtype=plugrad.float64)) == "tensor([1.], dtype=plugrad.float64)"
    )
    assert repr(plugrad.zeros((2, 2))) == "tensor([[0., 0.],\n        [0., 0.]])"


def test_requires_grad_rules() -> None:
    x = plugrad.tensor([1.0])
    x.requires_grad = True
    assert x.requires_grad
    assert x.requires_grad_(False) is x and not x.requires_grad
    with pytest.raises(DtypeError, match="only floating-point and complex"):
        plugrad.tensor([1, 2]).requires_grad = True
    with pytest.raises(DtypeError, match="int64"):
        plugrad.tensor([1, 2], requires_grad=True)
    with pytest.raises(TypeError, match="bool"):
        x.requires_grad = 1
    y = plugrad.tensor([1.0], requires_grad=True) * 2
    y.requires_grad = True  # already true: allowed
    with pytest.raises(BackwardError, match="detach"):
        y.requires_grad = False
    assert plugrad.tensor([1 + 2j], requires_grad=True).dtype == plugrad.complex64


def test_detach_shares_data_and_cuts_the_graph() -> None:
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    d = y.detach()
    assert d.is_leaf and not d.requires_grad and d.array is y.array


def test_a_write_through_data_after_a_save_refuses_the_backward() -> None:
    # PyTorch's .data keeps a version counter of its own: the same program gives a wrong
    # gradient there (24 where it is 8), without a word. plugrad's shares y's counter.
    x = plugrad.ones(2, requires_grad=True)
    y = x * 2
    z = (y * y).sum()
    y.data.mul_(3)
    with pytest.raises(plugrad.errors.InPlaceModificationError, match="MulBackward"):
        z.backward()
    assert x.grad is None
    (y * y).sum().backward()  # a new forward after the write reads the new values
    assert x.grad.tolist() == [24.0, 24.0]


def test_grad_assignment_is_validated() -> None:
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    x.grad = plugrad.tensor([0.5, 0.5])
    assert x.grad.tolist() == [0.5, 0.5]
    with pytest.raises(ShapeError, match="shape"):
        x.grad = plugrad.ones(3)
    with pytest.raises(DtypeError, match="dtype float64, but the tensor has shape"):
        x.grad = plugrad.ones(2, dtype=plugrad.float64)
    with pytest.raises(TypeError):
        x.grad = np.ones(2)
    x.grad = None
    assert x.grad is None


def test_a_tensor_cannot_be_its_own_grad() -> None:
    # x.grad = x was accepted, and backward() then added the gradient into x itself
    # (x [1, 2] became [4, 5]); PyTorch refuses it. A tensor sharing x's memory would do
    # the same (PyTorch accepts those, and changes x): refused too, .grad left as it was.
    torch = pytest.importorskip("torch")
    t = torch.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="own grad"):
        t.grad = t
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    x.grad = plugrad.tensor([0.5, 0.5])
    for same_memory in (x, x.detach(), x.data, x[:], x.detach().reshape(2)):
        with pytest.raises(InvalidArgumentError, match="own grad"):
            x.grad = same_memory
        assert x.grad.tolist() == [0.5, 0.5]
    (x * 3).sum().backward()
    assert x.tolist() == [1.0, 2.0] and x.grad.tolist() == [3.5, 3.5]
    x.grad = x.detach().clone()  # a copy is any other tensor
    assert x.grad.tolist() == [1.0, 2.0]


def test_conversions() -> None:
    x = plugrad.tensor([[1.5]])
    assert x.item() == 1.5 and float(x) == 1.5 and int(x) == 1 and bool(x)
    assert plugrad.tensor([1.0, 2.0]).tolist() == [1.0, 2.0]
    assert [1, 2, 3][plugrad.tensor(1)] == 2
    with pytest.raises(ShapeError, match="exactly one element"):
        plugrad.ones(2).item()
    with pytest.raises(ShapeError, match="ambiguous"):
        bool(plugrad.ones(2))
    with pytest.raises(DtypeError):
        [1, 2][plugrad.tensor(1.0)]
    with pytest.raises(TypeError, match="0-d"):
        len(plugrad.tensor(1.0))
    assert complex(plugrad.tensor(1 + 2j)) == 1 + 2j
    for conversion in (float, int):
        with pytest.raises(DtypeError, match="imaginary part"):
            conversion(plugrad.tensor(1 + 2j))


def test_numpy_and_from_numpy_share_memory_both_ways_on_the_cpu() -> None:
    x = plugrad.zeros(3, backend="numpy")
    host = x.numpy()
    host[0] = 5.0  # NumPy to tensor
    x.array[1] = 7.0  # tensor to NumPy
    np.testing.assert_array_equal(np.asarray(x), [5.0, 7.0, 0.0])
    np.testing.assert_array_equal(host, [5.0, 7.0, 0.0])
    source = np.arange(3.0)
    t = plugrad.from_numpy(source)
    source[2] = -1.0
    t.numpy()[0] = 9.0
    np.testing.assert_array_equal(source, [9.0, 1.0, -1.0])
    np.testing.assert_array_equal(np.asarray(t), [9.0, 1.0, -1.0])
    detached = plugrad.tensor([1.0], requires_grad=True, backend="numpy").detach().numpy()
    assert detached.flags.writeable


def test_numpy_of_a_0d_result_shares_its_memory_both_ways() -> None:
    # NumPy gives a 0-d result as a scalar: .numpy() handed out a copy of it.
    for make in (
        lambda: plugrad.tensor([1.0, 2.0, 3.0], backend="numpy").sum(),
        lambda: plugrad.tensor([1.0, 5.0], backend="numpy").max(),
        lambda: plugrad.tensor(1.0, backend="numpy") + np.float64(2),
    ):
        s = make()
        host = s.numpy()
        host[()] = 5.0
        assert s.item() == 5.0
        s.fill_(0)
        assert host[()] == 0.0
        np.asarray(s)[()] = 7.0
        assert s.item() == 7.0


def test_from_numpy_of_a_read_only_array_warns_that_writes_are_not_shared() -> None:
    # A change in place gave the tensor an array of its own without a word.
    source = np.zeros(3)
    source.flags.writeable = False
    with pytest.warns(UserWarning, match="not writeable"):
        t = plugrad.from_numpy(source)
    t.add_(1)
    assert t.tolist() == [1.0, 1.0, 1.0] and source.tolist() == [0.0, 0.0, 0.0]


def test_numpy_scalars_fill_and_are_found_as_python_numbers() -> None:
    # fill_ of an int or bool tensor refused them; `in` took no NumPy scalar at all.
    assert plugrad.tensor([1, 2, 3]).fill_(np.float64(7.9)).tolist() == [7, 7, 7]
    assert plugrad.tensor([True, False]).fill_(np.int64(2)).tolist() == [True, True]
    assert plugrad.ones(2).fill_(np.float32(3)).tolist() == [3.0, 3.0]
    assert np.int64(2) in plugrad.tensor([1, 2])
    assert np.float32(2.5) not in plugrad.tensor([1.0, 2.0])


def test_numpy_arrays_in_a_key_index_as_tensors_do() -> None:
    x = plugrad.arange(4.0, backend="numpy")
    # A uint8 array was read as positions (PyTorch: a mask); refused as a uint8 tensor is.
    with pytest.raises(DtypeError, match="uint8"):
        x[np.array([1, 0, 1, 1], dtype=np.uint8)]
    assert x[np.array([True, False, True, False])].tolist() == [0.0, 2.0]
    assert x[np.array([3, 0])].tolist() == [3.0, 0.0]
    assert x[(np.array([0, 1]),)].tolist() == [0.0, 1.0]
    assert x[np.int64(1)].item() == 1.0
    x[np.array(2)].fill_(100.0)  # a 0-d integer indexes as an int: a view, as in PyTorch
    x[np.array([0, 1])] = 7.0
    assert x.tolist() == [7.0, 7.0, 100.0, 3.0]
    w = plugrad.ones(3, requires_grad=True, backend="numpy")
    w[np.array([0, 0, 2])].sum().backward()
    assert w.grad.tolist() == [2.0, 0.0, 1.0]


def test_numpy_of_a_tensor_that_requires_grad_is_refused_and_detach_shares_memory() -> None:
    x = plugrad.tensor([1.0, 2.0], requires_grad=True, backend="numpy")
    with pytest.raises(plugrad.errors.BackwardError, match=r"x\.detach\(\)\.numpy\(\)"):
        x.numpy()
    with pytest.raises(plugrad.errors.BackwardError):
        np.asarray(x)
    host = x.detach().numpy()
    assert np.shares_memory(host, x.array)  # as in PyTorch: the same memory, writable
    np.testing.assert_array_equal(np.asarray(x.detach()), [1.0, 2.0])
    assert np.asarray(x.detach(), dtype=np.float64).dtype == np.float64


def test_tensors_are_hashable_by_identity() -> None:
    a, b = plugrad.ones(2), plugrad.ones(2)
    assert len({a, b, a}) == 2


def test_deepcopy_of_a_leaf_copies_data_grad_and_requires_grad(backend) -> None:
    import copy

    w = plugrad.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    w2 = copy.deepcopy(w)
    assert w2.requires_grad and w2.is_leaf and w2.device == w.device
    assert w2.array is not w.array and w2.grad.array is not w.grad.array
    assert w2.tolist() == [1.0, 2.0] and w2.grad.tolist() == [2.0, 4.0]
    with plugrad.no_grad():
        w2 += 1.0
    assert w.tolist() == [1.0, 2.0]  # separate memory
    assert w2._version == 1 and w._version == 0  # separate version counters


def test_deepcopy_of_a_graph_node_is_refused_and_says_what_to_do() -> None:
    import copy

    y = plugrad.tensor([1.0], requires_grad=True) * 2
    with pytest.raises(RuntimeError, match=r"only leaf tensors.*detach\(\)"):
        copy.deepcopy(y)


def test_deepcopy_keeps_shared_tensors_shared() -> None:
    import copy

    w = plugrad.tensor([1.0])
    pair = copy.deepcopy([w, w])
    assert pair[0] is pair[1] and pair[0] is not w


def test_copy_copy_shares_the_data_as_pytorchs(backend) -> None:
    # copy.copy made a copy of the data (it went through pickling); PyTorch's shares it.
    import copy

    t = plugrad.tensor([1.0, 2.0])
    shallow = copy.copy(t)
    shallow.add_(1.0)
    assert t.tolist() == [2.0, 3.0] and t._version == shallow._version == 1
    w = plugrad.tensor([1.0, 2.0], requires_grad=True)
    leaf = copy.copy(w * 2)  # a new leaf, as PyTorch's
    assert leaf.requires_grad and leaf.is_leaf and leaf.tolist() == [2.0, 4.0]
    assert type(copy.copy(plugrad.nn.Parameter(plugrad.ones(2)))) is plugrad.nn.Parameter
    saved = w * 1
    square = saved * saved
    with plugrad.no_grad():
        copy.copy(saved).mul_(2.0)  # seen by the graph that saved the values
    with pytest.raises(plugrad.errors.InPlaceModificationError):
        square.sum().backward()


def test_real_and_imag_are_attributes_as_in_pytorch() -> None:
    z = plugrad.tensor([1 + 2j, 3 - 1j], requires_grad=True)
    assert z.real.tolist() == [1.0, 3.0] and z.imag.tolist() == [2.0, -1.0]
    (z.real * 2 + z.imag * 3).sum().backward()
    assert z.grad.tolist() == [2 + 3j, 2 + 3j]
    x = plugrad.tensor([1.0, 2.0])
    assert x.real.tolist() == [1.0, 2.0]
    with pytest.raises(plugrad.errors.DtypeError, match=r"x\.imag is for complex tensors"):
        _ = x.imag


def test_real_and_imag_can_be_assigned_as_in_pytorch() -> None:
    # x.real = v raised AttributeError (a property without a setter).
    z = plugrad.tensor([1 + 2j, 3 - 1j])
    z.real = 7
    z.imag = plugrad.tensor([5.0, 6.0])
    assert z.tolist() == [7 + 5j, 7 + 6j]
    x = plugrad.tensor([1.0, 2.0])
    x.real = plugrad.tensor([5.0, 6.0])
    assert x.tolist() == [5.0, 6.0]
    with pytest.raises(plugrad.errors.DtypeError, match=r"x\.imag is for complex tensors"):
        x.imag = plugrad.tensor([1.0, 2.0])
    assert x.tolist() == [5.0, 6.0]
    with pytest.raises(plugrad.errors.ShapeError):
        z.real = plugrad.ones(3)
    assert z.tolist() == [7 + 5j, 7 + 6j]
    # Gradients reach the part written and the part kept (PyTorch's values).
    leaf = plugrad.tensor([1 + 2j, 3 + 4j], requires_grad=True)
    v = plugrad.tensor([1.0, 1.0], requires_grad=True)
    y = leaf * 1
    y.real = v * 3
    y.abs().sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), [0.5547002j, 0.8j], rtol=1e-6)
    np.testing.assert_allclose(v.grad.numpy(), [2.4961509, 1.8], rtol=1e-6)


def test_is_cuda_is_cpu_and_get_device_answer_as_pytorchs_on_the_cpu(on_numpy) -> None:
    # They were missing (AttributeError).
    x = plugrad.ones(2)
    assert (x.is_cuda, x.is_cpu, x.get_device()) == (False, True, -1)


@pytest.mark.parametrize(
    "call",
    [
        lambda lib, t: lib.cat([t, t]),
        lambda lib, t: lib.cat([t, t], 1),
        lambda lib, t: lib.stack([t, t]),
        lambda lib, t: lib.cumsum(t, 0),
        lambda lib, t: lib.roll(t, 1, 0),
        lambda lib, t: lib.tril(t),
        lambda lib, t: lib.triu(t, 1),
    ],
)
def test_joins_and_scans_of_transposed_tensors_are_contiguous_as_pytorchs(call) -> None:
    # NumPy kept the inputs' column-major order: view(-1) of the result raised.
    torch = pytest.importorskip("torch")
    if plugrad.default_device().backend.name == "array_api_strict":
        pytest.skip("array-api-strict's own functions lay out as NumPy's (a test backend)")
    ours = call(plugrad, plugrad.arange(12.0).reshape(3, 4).t())
    theirs = call(torch, torch.arange(12.0).reshape(3, 4).t())
    assert ours.is_contiguous() and theirs.is_contiguous()
    assert ours.view(-1).tolist() == theirs.view(-1).tolist()


def test_clone_lays_out_as_pytorch() -> None:
    # clone(memory_format=contiguous_format) of a transposed tensor stayed transposed,
    # and a clone of an expand came out column-major: view(-1) of either raised.
    torch = pytest.importorskip("torch")
    for ours, theirs in (
        (plugrad.arange(6.0).reshape(2, 3).t(), torch.arange(6.0).reshape(2, 3).t()),
        (plugrad.ones(3).expand(2, 3), torch.ones(3).expand(2, 3)),
        (plugrad.ones((3, 1)).expand(3, 4), torch.ones(3, 1).expand(3, 4)),
    ):
        for fmt, their_fmt in (
            (plugrad.contiguous_format, torch.contiguous_format),
            (plugrad.preserve_format, torch.preserve_format),
        ):
            copy, their_copy = ours.clone(memory_format=fmt), theirs.clone(memory_format=their_fmt)
            if plugrad.default_device().backend.name in ("numpy", "torch"):  # have layouts
                assert copy.stride() == their_copy.stride()
                assert copy.is_contiguous() == their_copy.is_contiguous()
            if their_copy.is_contiguous():
                assert copy.view(-1).tolist() == their_copy.view(-1).tolist()
    x = plugrad.arange(6.0, requires_grad=True)
    x.view(2, 3).t().clone(memory_format=plugrad.contiguous_format).sum().backward()
    assert x.grad.tolist() == [1.0] * 6


def test_operators_leave_objects_they_do_not_know_to_python() -> None:
    # x == "auto", x in ["auto", None] and x + Custom() raised plugrad's TypeError; as
    # PyTorch's, the operators return NotImplemented, so Python asks the other operand.
    class Custom:
        def __radd__(self, other):
            return "Custom.__radd__"

        def __rmatmul__(self, other):
            return "Custom.__rmatmul__"

    x = plugrad.ones(2)
    assert (x == "auto") is False and (x != "auto") is True
    assert x not in ["auto", None] and ["auto", x].index(x) == 1
    assert x + Custom() == "Custom.__radd__" and x @ Custom() == "Custom.__rmatmul__"
    assert [0] * plugrad.tensor(3) == [0, 0, 0]
    with pytest.raises(TypeError, match="unsupported operand"):
        x + "a"
    with pytest.raises(TypeError, match="not supported between"):
        _ = x < "a"
    # Arrays of other libraries keep plugrad's error, which says how to convert them.
    with pytest.raises(TypeError, match=r"plugrad\.asarray"):
        x + np.ones(2)
    # And a dtype error is still plugrad's own.
    with pytest.raises(DtypeError):
        plugrad.ones(2, dtype=plugrad.int32).__iadd__(1.5)


def test_a_numpy_mask_is_refused_as_not_a_tensor() -> None:
    # The message came from inside: isdtype() expects a plugrad dtype ... got dtype('bool').
    x, mask = plugrad.ones(3), np.array([True, False, True])
    for call in (
        lambda: x.masked_fill(mask, 0.0),
        lambda: x.where(mask, 0.0),
        lambda: plugrad.masked_select(x, mask),
    ):
        with pytest.raises(TypeError, match="mask must be a tensor, got ndarray"):
            call()


def test_numpy_conversion_with_a_dtype_shares_when_it_can_and_dlpack_refuses_grad() -> None:
    # np.asarray(t, dtype=float32) of a float32 tensor copied (a write through it was lost),
    # copy=False copied without a word, and DLPack exported tensors that require grad.
    t = plugrad.ones(2)
    if plugrad.default_device().backend.name == "numpy":  # (others' arrays copy, or are read-only)
        np.asarray(t, dtype=np.float32)[0] = 5.0
        assert t.tolist() == [5.0, 1.0]
    with pytest.raises(ValueError, match="must be a copy"):
        np.array(t, dtype=np.float64, copy=False)
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    with pytest.raises(BufferError, match="requires grad"):
        np.from_dlpack(plugrad.ones(2, requires_grad=True))
    assert np.from_dlpack(plugrad.ones(2, requires_grad=True).detach()).tolist() == [1.0, 1.0]


def test_a_slice_sum_or_product_of_a_size_is_a_size_as_pytorchs() -> None:
    # x.size()[1:] was a plain tuple: .numel() of it raised AttributeError.
    size = plugrad.zeros(2, 3).size()
    assert size[1:] == plugrad.Size([3]) and size[1:].numel() == 3
    for combined in (size + (4,), (1,) + size, size * 2, 2 * size):  # noqa: RUF005
        assert type(combined) is plugrad.Size
    assert type(size[0]) is int
    assert plugrad.Size([plugrad.tensor(2), 3]) == (2, 3)
    with pytest.raises(TypeError, match="Size takes ints"):
        plugrad.Size([2.5])


def test_pytorchs_layout_and_kind_flags_and_dtype_counterparts() -> None:
    # x.layout, x.is_sparse and dtype.to_complex() raised AttributeError.
    x = plugrad.ones(2)
    assert x.layout is plugrad.strided and repr(plugrad.strided) == "plugrad.strided"
    assert not (x.is_sparse or x.is_quantized or x.is_meta or x.is_mkldnn or x.is_nested)
    assert plugrad.float32.to_complex() is plugrad.complex64
    assert plugrad.complex128.to_real() is plugrad.float64
    assert plugrad.float64.to_real() is plugrad.float64
    with pytest.raises(TypeError, match="no complex counterpart"):
        plugrad.int32.to_complex()
