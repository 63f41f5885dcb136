"""``x[key]`` and ``x[key] = value`` at the Tensor level: PyTorch's layout, keys read once."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import plugrad

torch = pytest.importorskip("torch")

BASE = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
ALL = slice(None)
ENTRIES = [0, -1, ALL, slice(1, 3), [0, 1], [[0], [1]], None, Ellipsis, np.array([1, 0])]


def _keys():
    for n in (2, 3, 4):
        for key in itertools.product(ENTRIES, repeat=n):
            if sum(k is Ellipsis for k in key) > 1:
                continue
            torch_key = tuple(torch.tensor(k) if isinstance(k, np.ndarray) else k for k in key)
            try:
                torch.zeros(BASE.shape)[torch_key]
            except IndexError:
                continue
            yield key, torch_key


def test_keys_mixing_integers_index_arrays_and_slices_index_as_in_pytorch() -> None:
    # x[0, :, [0, 2]]: NumPy puts the indexed axis first, PyTorch keeps it in place.
    checked = moved = 0
    for key, torch_key in _keys():
        ours_key = tuple(plugrad.asarray(k) if isinstance(k, np.ndarray) else k for k in key)
        expected = torch.tensor(BASE)[torch_key].numpy()
        got = plugrad.tensor(BASE)[ours_key].numpy()
        assert got.shape == expected.shape, key
        np.testing.assert_array_equal(got, expected, err_msg=str(key))
        moved += got.shape != BASE[key].shape  # where NumPy's layout differs
        value = np.arange(expected.size, dtype=np.float32).reshape(expected.shape) + 1000
        theirs = torch.tensor(BASE)
        theirs[torch_key] = torch.tensor(value)
        ours = plugrad.tensor(BASE)
        ours[ours_key] = plugrad.tensor(value)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=str(key))
        checked += 1
    assert checked > 3000 and moved > 100


ROWS, COLUMNS = np.array([0, 1]), np.array([1, 2])
EMPTY_ELLIPSIS_KEYS = [
    (ALL, ALL, ROWS, Ellipsis, COLUMNS),
    (ALL, ROWS, Ellipsis, COLUMNS, ALL),
    (ALL, 0, ROWS, Ellipsis, COLUMNS),
    (1, ALL, ROWS, Ellipsis, COLUMNS),
    (ALL, ROWS, Ellipsis, 0, COLUMNS),
    (ALL, ALL, ROWS, None, Ellipsis, COLUMNS),
    (ALL, ALL, ROWS, Ellipsis, [[1], [2]]),
]


@pytest.mark.parametrize("key", EMPTY_ELLIPSIS_KEYS, ids=str)
def test_an_ellipsis_of_no_axes_between_index_arrays_lays_out_as_in_pytorch(key) -> None:
    # To NumPy a `...` that stands for no axes still parts x[:, :, i, ..., j]'s arrays
    # (their axes go first); to PyTorch it is not there (they stay in place).
    torch_key = tuple(torch.tensor(k) if isinstance(k, np.ndarray | list) else k for k in key)
    ours_key = tuple(plugrad.asarray(k) if isinstance(k, np.ndarray | list) else k for k in key)
    expected = torch.tensor(BASE)[torch_key].numpy()
    np.testing.assert_array_equal(plugrad.tensor(BASE)[ours_key].numpy(), expected)
    # Written, with gradients into the tensor and the value.
    value = np.arange(expected.size, dtype=np.float64).reshape(expected.shape) + 1000
    t, t_value = (torch.tensor(a, requires_grad=True) for a in (BASE.astype(np.float64), value))
    p, p_value = (plugrad.tensor(a, requires_grad=True) for a in (BASE.astype(np.float64), value))
    t_copy, p_copy = t * 1, p * 1
    t_copy[torch_key] = t_value * 2
    p_copy[ours_key] = p_value * 2
    (t_copy * t_copy).sum().backward()
    (p_copy * p_copy).sum().backward()
    np.testing.assert_array_equal(p_copy.detach().numpy(), t_copy.detach().numpy())
    np.testing.assert_array_equal(p.grad.numpy(), t.grad.numpy())
    np.testing.assert_array_equal(p_value.grad.numpy(), t_value.grad.numpy())


def test_gradients_of_a_key_in_pytorch_layout_match_pytorch() -> None:
    rng = np.random.default_rng(0)
    base = rng.normal(size=(2, 3, 4))
    key = (0, ALL, [[0], [3]])
    weights = rng.normal(size=(3, 2, 1))
    t, t_value = torch.tensor(base, requires_grad=True), torch.tensor(weights, requires_grad=True)
    p, p_value = (
        plugrad.tensor(base, requires_grad=True),
        plugrad.tensor(weights, requires_grad=True),
    )
    (t[key] * torch.tensor(weights)).sum().backward()
    (p[key] * plugrad.tensor(weights)).sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy())
    t.grad = p.grad = None
    t_copy, p_copy = t * 1, p * 1
    t_copy[key] = t_value * 2
    p_copy[key] = p_value * 2
    (t_copy * t_copy).sum().backward()
    (p_copy * p_copy).sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy())
    np.testing.assert_allclose(p_value.grad.numpy(), t_value.grad.numpy())


def test_a_list_key_is_read_when_indexing_not_at_backward() -> None:
    x = plugrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    index = [0, 2]
    y = x[index]
    index[0] = 1  # the caller reuses its list
    (y * plugrad.tensor([1.0, 10.0])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 0.0, 10.0])


def test_empty_and_boolean_list_keys_index_as_in_numpy() -> None:
    x = plugrad.arange(6.0).reshape(2, 3)
    assert x[[]].shape == (0, 3)
    np.testing.assert_array_equal(x[[True, False]].numpy(), [[0.0, 1.0, 2.0]])
    x[[0]] = 5.0
    np.testing.assert_array_equal(x.numpy(), [[5.0, 5.0, 5.0], [3.0, 4.0, 5.0]])


def _index_programs(lib):
    """name -> (x, program(x, index) -> output, index, how the index changes afterwards)."""
    return {
        "x[index]": (lambda x, i: x[i], lib.tensor([0, 2])),
        "x[mask]": (lambda x, i: x[i], lib.tensor([True, False, True])),
        "x.scatter": (lambda x, i: x.scatter(0, i, x[:2] * 5), lib.tensor([0, 1])),
        "x.scatter_add": (lambda x, i: x.scatter_add(0, i, x[:2] * 5), lib.tensor([0, 2])),
        "y[index] = value": (lambda x, i: _assigned(x, i), lib.tensor([0, 1])),
    }


def _assigned(x, index):
    y = x * 1
    y[index] = x[:2] * 3
    return y


@pytest.mark.parametrize("name", list(_index_programs(plugrad)))
def test_an_index_tensor_changed_after_the_forward_pass_changes_no_gradient(name) -> None:
    # PyTorch refuses the backward pass; plugrad kept a copy, so the gradient is the one of
    # the values computed (what PyTorch gives without the change).
    def run(lib, change):
        program, index = _index_programs(lib)[name]
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        out = program(x, index)
        if change:
            with lib.no_grad():
                index.copy_(lib.flip(index, (0,)) if index.dtype != lib.bool else ~index)
        weights = lib.arange(1.0, out.shape[0] + 1.0)
        (out * weights).sum().backward()
        return x.grad.numpy()

    np.testing.assert_array_equal(run(plugrad, change=True), run(torch, change=False))


def test_a_uint8_index_tensor_is_refused_as_ambiguous() -> None:
    # PyTorch reads it as a mask (deprecated), the standard as positions: x[u8] gave rows
    # 1, 0, 1 where PyTorch gives rows 0 and 2.
    x = plugrad.arange(12.0).reshape(3, 4)
    index = plugrad.tensor([1, 0, 1], dtype=plugrad.uint8)
    for call in (lambda: x[index], lambda: x[:, plugrad.tensor([1, 0, 1, 0], dtype=plugrad.uint8)]):
        with pytest.raises(plugrad.errors.DtypeError, match=r"index\.bool\(\)"):
            call()
    with pytest.raises(plugrad.errors.DtypeError, match="ambiguous"):
        x[index] = 0.0
    assert x.tolist() == plugrad.arange(12.0).reshape(3, 4).tolist()
    assert x[index.bool()].shape == (2, 4) and x[index.long()].shape == (3, 4)
    # index_put with accumulate=True reads its indices as positions itself: refused too
    # (it added 9 at rows 1, 0, 1 where PyTorch adds it at rows 0 and 2).
    row = plugrad.tensor([1.0, 2.0, 3.0])
    for accumulate in (True, False):
        with pytest.raises(plugrad.errors.DtypeError, match=r"index_put\(\): a uint8"):
            row.index_put((index,), plugrad.tensor(9.0), accumulate=accumulate)
        with pytest.raises(plugrad.errors.DtypeError, match=r"index_put_\(\): a uint8"):
            row.index_put_((index,), plugrad.tensor(9.0), accumulate=accumulate)
    assert row.tolist() == [1.0, 2.0, 3.0] and row._version == 0


@pytest.mark.parametrize("name", plugrad.testing.backends_under_test())
def test_a_0d_uint8_index_is_refused_as_a_1d_one_is(name: str) -> None:
    # It was read as the int it holds (row 1) where PyTorch reads it as a mask (every row,
    # under a new axis): x[i].shape was (3,) for PyTorch's (1, 2, 3), and x[i] = 9.0 wrote
    # row 1 only.
    with plugrad.use_backend(name):
        x = plugrad.arange(6.0).reshape(2, 3)
        for index in (plugrad.tensor(1, dtype=plugrad.uint8), np.array(1, dtype=np.uint8)):
            for key in (index, (0, index), (Ellipsis, index)):
                with pytest.raises(plugrad.errors.DtypeError, match=r"uint8 .* index\.bool\(\)"):
                    x[key]
                with pytest.raises(plugrad.errors.DtypeError, match="ambiguous"):
                    x[key] = 9.0
                with pytest.raises(plugrad.errors.DtypeError, match="ambiguous"):
                    x[key] = plugrad.tensor(9.0)
        assert x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]] and x._version == 0
        # A NumPy integer scalar is a position, whatever its dtype, as to PyTorch.
        assert x[np.uint8(1)].tolist() == [3.0, 4.0, 5.0]
        x[np.uint8(1)] = 9.0
        assert x.tolist() == [[0.0, 1.0, 2.0], [9.0, 9.0, 9.0]]
        assert x[plugrad.tensor(1, dtype=plugrad.int8)].tolist() == [9.0, 9.0, 9.0]


def test_assigning_a_value_with_leading_axes_of_size_one_gives_its_gradient_its_shape() -> None:
    torch = pytest.importorskip("torch")
    for lib in (plugrad, torch):
        base = lib.zeros(3, 4, requires_grad=True)
        row = lib.ones(1, 4, requires_grad=True)
        block = lib.ones(1, 1, 4, requires_grad=True)
        x = base * 1
        x[0] = row
        x[1:3] = block
        (x * 2).sum().backward()
        assert row.grad.tolist() == [[2.0] * 4] and block.grad.tolist() == [[[4.0] * 4]]


@pytest.mark.parametrize("value_shape", [(1, 1), (1, 1, 1), (1, 5), ()])
def test_a_mask_assignment_takes_values_with_leading_axes_of_size_one(value_shape) -> None:
    # NumPy's mask assignment takes 0-d or 1-d values only: a (1, 1) value raised.
    results = []
    for lib in (plugrad, torch):
        base = lib.zeros(2, 3, requires_grad=True)
        value = (
            lib.full(value_shape, 7.0, requires_grad=True)
            if value_shape
            else lib.tensor(7.0, requires_grad=True)
        )
        mask = lib.tensor([[False, True, True], [True, True, True]])
        x = base * 1
        x[mask] = value
        (x * lib.arange(6.0).reshape(2, 3)).sum().backward()
        results.append((x.tolist(), base.grad.tolist(), value.grad.tolist()))
    assert results[0] == results[1]


@pytest.mark.parametrize(
    "call",
    [
        lambda a, i, s: a.index_add(0, i, s),
        lambda a, i, s: a.index_copy(0, i, s),
        lambda a, i, s: a.scatter(0, i, s),
        lambda a, i, s: a.scatter_add(0, i, s),
        lambda a, i, s: a.scatter_reduce(0, i, s, "sum"),
        lambda a, i, s: a.index_put((i,), s),
        lambda a, i, s: a.masked_scatter(a > 2, s),
    ],
)
def test_writing_a_source_of_another_dtype_is_refused_as_in_pytorch(call) -> None:
    # The result took the source's dtype (index_add of floats into int64 gave float32) or
    # silently converted it (scatter truncated), unlike PyTorch, which refuses.
    torch = pytest.importorskip("torch")
    for lib, error in ((plugrad, plugrad.errors.DtypeError), (torch, RuntimeError)):
        index = lib.tensor([0, 1])
        for target, source in (
            (lib.arange(5), lib.tensor([2.5, 3.0])),
            (lib.arange(5.0), lib.tensor([2.5, 3.0], dtype=lib.float64)),
        ):
            with pytest.raises(error):
                call(target, index, source)


def test_backend_errors_of_a_bad_mask_assignment_and_permutation_are_shape_errors() -> None:
    # NumPy's own ValueErrors came through raw ("cannot assign 5 input values", "axes don't
    # match array"); JAX and Dask's were ShapeErrors already.
    z = plugrad.zeros((2, 3))
    with pytest.raises(plugrad.errors.ShapeError, match="cannot assign 5 input values"):
        z[z == 0] = plugrad.tensor([1.0, 2.0, 3.0, 4.0, 5.0])
    assert z.tolist() == [[0.0] * 3] * 2 and z._version == 0
    with pytest.raises(plugrad.errors.ShapeError, match="permute_dims"):
        plugrad.ones((5, 4)).permute(0)
