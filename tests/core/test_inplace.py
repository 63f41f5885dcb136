"""In-place operations: version counters, rebasing, and the errors that prevent wrong gradients."""

from __future__ import annotations

import gc
import threading
import warnings

import numpy as np
import pytest
from functions import Exp, Square
from threads import run_in_threads

import plugrad
from plugrad.errors import (
    BackwardError,
    DtypeError,
    InPlaceModificationError,
    ReadOnlyViewError,
    ShapeError,
    ViewCopyError,
)


def leaf(*values) -> plugrad.Tensor:
    return plugrad.tensor(list(values), dtype=plugrad.float64, requires_grad=True)


def assert_backward_refused_after_changing(
    changed: plugrad.Tensor, output: plugrad.Tensor, match: str | None = None
) -> None:
    """Add 1 to ``changed`` in place, unrecorded: the backward of ``output`` must then raise."""
    with plugrad.no_grad():
        changed += 1
    with pytest.raises(InPlaceModificationError, match=match):
        output.sum().backward()


def test_update_under_no_grad_keeps_the_memory() -> None:
    w = leaf(1.0, 2.0)
    w.grad = plugrad.tensor([0.5, 0.5], dtype=plugrad.float64)
    before = w.array
    with plugrad.no_grad():
        w -= 0.1 * w.grad
    assert w.array is before or w.backend.name != "numpy"
    np.testing.assert_allclose(w.detach().numpy(), [0.95, 1.95])
    assert w.is_leaf and w.requires_grad and w._version == 1


@pytest.mark.parametrize(
    ("apply", "expected"),
    [
        (lambda w, o: w.__iadd__(o), lambda a, b: a + b),
        (lambda w, o: w.__isub__(o), lambda a, b: a - b),
        (lambda w, o: w.__imul__(o), lambda a, b: a * b),
        (lambda w, o: w.__itruediv__(o), lambda a, b: a / b),
        (lambda w, o: w.__ipow__(o), lambda a, b: a**b),
    ],
)
@pytest.mark.parametrize("operand", ["tensor", "number"])
def test_update_without_recording_matches_the_out_of_place_op(apply, expected, operand) -> None:
    values, other = [1.5, 2.0, 0.25], [0.5, -1.0, 3.0]
    w = plugrad.tensor(values, dtype=plugrad.float32, requires_grad=True)
    o = plugrad.tensor(other, dtype=plugrad.float32) if operand == "tensor" else 0.75
    before = w.array
    with plugrad.no_grad():
        reference = expected(w * 1, o)
        assert apply(w, o) is w
    assert w.dtype == plugrad.float32 and w._version == 1 and w.is_leaf and w.requires_grad
    assert w.array is before or w.backend.name != "numpy", "updated in place"
    np.testing.assert_array_equal(w.detach().numpy(), reference.detach().numpy())


def test_update_of_a_read_only_array_replaces_it() -> None:
    w = leaf(1.0, 2.0)
    if w.backend.name != "numpy":
        pytest.skip("read-only arrays are NumPy's")
    before = w.array
    before.flags.writeable = False
    with plugrad.no_grad():
        w -= plugrad.tensor([0.5, 0.5], dtype=plugrad.float64)
    assert w.tolist() == [0.5, 1.5] and before.tolist() == [1.0, 2.0] and w._version == 1


def test_in_place_on_a_leaf_that_requires_grad_is_an_error() -> None:
    w = leaf(1.0)
    with pytest.raises(BackwardError, match=r"leaf tensor that requires grad.*no_grad"):
        w += 1
    assert w.tolist() == [1.0] and w._version == 0, "a refused op changes nothing"


@pytest.mark.parametrize(
    ("apply", "expected_grad"),
    [
        (lambda h: h.__iadd__(3.0), 1.0),
        (lambda h: h.__isub__(3.0), 1.0),
        (lambda h: h.__imul__(3.0), 3.0),
        (lambda h: h.__itruediv__(4.0), 0.25),
    ],
)
def test_recorded_in_place_ops_rebase_the_tensor(apply, expected_grad) -> None:
    x = leaf(1.0, 2.0)
    h = x * 2
    node_before = h.grad_fn
    result = apply(h)
    assert result is h and h.grad_fn is not node_before and h._version == 1
    h.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2 * expected_grad] * 2)


def test_in_place_power_and_chains_match_out_of_place() -> None:
    x = leaf(1.5, -0.5)
    h = x * 1
    h **= 3
    h *= x
    h.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 4 * x.detach().numpy() ** 3)


def test_modifying_a_saved_tensor_makes_backward_raise() -> None:
    x = leaf(1.0, 2.0)
    y = x * 1
    z = y * y  # saves y
    y += 1
    with pytest.raises(InPlaceModificationError, match=r"MulBackward.*shape \(2,\).*version 1.*0"):
        z.sum().backward()
    assert x.grad is None


def test_modifying_a_tensor_nothing_saved_is_fine() -> None:
    x = leaf(1.0, 2.0)
    y = x * 1
    z = y + 5  # add saves nothing
    y += 1
    z.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_views_share_the_version_counter() -> None:
    base = leaf(1.0, 2.0, 3.0, 4.0)
    with plugrad.no_grad():
        data = base * 1
    view = data.reshape(2, 2)
    w = leaf(1.0, 1.0)
    out = view @ w  # saves the view
    # data's memory is what the view shows
    assert_backward_refused_after_changing(data, out, match="MatMulBackward")


def test_detach_shares_the_version_counter() -> None:
    x = leaf(1.0, 2.0)
    y = x * 1
    d = y.detach()
    z = y * y
    assert_backward_refused_after_changing(d, z)


def test_function_saved_tensors_are_version_checked() -> None:
    x = leaf(3.0)
    y = x * 1
    out = Square.apply(y)
    y += 1
    with pytest.raises(InPlaceModificationError, match="SquareBackward"):
        out.sum().backward()


def test_fill_zero_and_copy() -> None:
    x = leaf(1.0, 2.0)
    h = x * 3
    h.zero_()
    assert h.tolist() == [0.0, 0.0] and h.requires_grad
    s = leaf(5.0)
    g = x * 1
    g.copy_(s * 2)
    assert g.tolist() == [10.0, 10.0]
    (g.sum() + h.sum()).backward()
    assert x.grad.tolist() == [0.0, 0.0], "overwritten values get no gradient"
    assert s.grad.tolist() == [4.0]
    with plugrad.no_grad():
        w = plugrad.ones(3)
        assert w.fill_(0.25).tolist() == [0.25] * 3
    with pytest.raises(TypeError, match="Tensor"):
        w.copy_([1.0, 2.0, 3.0])


def test_copying_complex_values_into_a_real_tensor_warns_as_pytorch() -> None:
    # The imaginary parts were dropped without a word (PyTorch warns).
    x = plugrad.zeros(2)
    with pytest.warns(UserWarning, match="discards their imaginary parts"):
        x.copy_(plugrad.tensor([1 + 2j, 3 - 1j]))
    assert x.tolist() == [1.0, 3.0]
    with pytest.warns(UserWarning, match="discards their imaginary parts"):
        x.fill_(plugrad.tensor(7 + 2j))
    assert x.tolist() == [7.0, 7.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x.copy_(plugrad.real(plugrad.tensor([5 + 2j, 6 - 1j])))
        plugrad.zeros(2, dtype=plugrad.complex64).copy_(plugrad.tensor([1 + 2j, 3 - 1j]))
        # A bool tensor takes whether each is nonzero: nothing is dropped (PyTorch: no warning).
        flags = plugrad.zeros(2, dtype=plugrad.bool).copy_(plugrad.tensor([2j, 0j]))
    assert x.tolist() == [5.0, 6.0] and flags.tolist() == [True, False]


def test_shape_and_dtype_rules() -> None:
    x = plugrad.ones(2)
    with pytest.raises(ShapeError, match=r"cannot change the shape"):
        x += plugrad.ones((3, 2))
    i = plugrad.ones(2, dtype=plugrad.int64)
    # numpy promotes int + float to float, which an int tensor cannot hold; libraries
    # that refuse mixed-kind promotion (array-api-strict) raise their own TypeError.
    expected = DtypeError if i.backend.name == "numpy" else TypeError
    with pytest.raises(expected):
        i += plugrad.ones(2)
    f = plugrad.ones(2, dtype=plugrad.float32)
    f += plugrad.ones(2, dtype=plugrad.float64)  # same kind: stored as float32
    assert f.dtype == plugrad.float32 and f.tolist() == [2.0, 2.0]
    assert x.tolist() == [1.0, 1.0] and i.tolist() == [1, 1]


def test_in_place_matches_pytorch() -> None:
    torch = pytest.importorskip("torch")
    values = [0.3, -1.2, 2.0]
    x = leaf(*values)
    h = x * x
    h += x
    h *= 2.0
    h.sum().backward()
    t = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    th = t * t
    th += t
    th *= 2.0
    th.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy())


def test_fill_and_copy_on_a_device_other_than_the_first() -> None:
    # The all-true mask behind fill_/copy_ is made on the tensor's device, not the default one.
    t = plugrad.zeros(3, device="array_api_strict:1")
    assert t.fill_(2.0).tolist() == [2.0, 2.0, 2.0]
    assert t.copy_(plugrad.ones(3, device="array_api_strict:1")).tolist() == [1.0, 1.0, 1.0]
    assert t.device.name == "array_api_strict:1"


# -- saved outputs and views share the version check ---------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(plugrad.exp, id="exp"),
        pytest.param(plugrad.tanh, id="tanh"),
        pytest.param(lambda x: plugrad.sqrt(x * x + 1.0), id="sqrt"),
    ],
)
def test_saved_output_changed_under_no_grad_raises(make) -> None:
    x = leaf(0.5, 1.5)
    z = make(x)
    assert_backward_refused_after_changing(z, z, match="output")
    assert x.grad is None


def test_saved_output_changed_through_a_view_raises() -> None:
    x = leaf(0.5, 1.5)
    z = plugrad.exp(x)
    v = z[:]
    with plugrad.no_grad():
        v *= 2.0
    with pytest.raises(InPlaceModificationError):
        z.sum().backward()


def test_unchanged_saved_output_still_differentiates() -> None:
    x = leaf(0.5, 1.5)
    z = plugrad.exp(x)
    z.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([0.5, 1.5]))


def test_saved_output_of_a_function_changed_in_place_raises() -> None:
    x = leaf(0.5)
    z = Exp.apply(x)
    assert_backward_refused_after_changing(z, z)


@pytest.mark.parametrize(
    "view",
    [
        pytest.param(lambda w: w[:], id="slice"),
        pytest.param(lambda w: w[0], id="integer"),
        pytest.param(lambda w: w[None, ...], id="new-axis"),
        pytest.param(lambda w: plugrad.moveaxis(w, 0, 1), id="moveaxis"),
        pytest.param(lambda w: plugrad.linalg.diagonal(w), id="diagonal"),
        pytest.param(lambda w: plugrad.reshape(w, (-1,)), id="reshape"),
        pytest.param(lambda w: w.T, id="transpose"),
        pytest.param(lambda w: plugrad.real(w), id="real"),
        pytest.param(lambda w: plugrad.unstack(w)[1], id="unstack"),
        pytest.param(lambda w: plugrad.unstack(w, axis=1)[0], id="unstack-axis-1"),
    ],
)
def test_view_changed_under_no_grad_after_its_base_was_saved_raises(view) -> None:
    x = leaf(1.0, 2.0)
    w = plugrad.tensor([[3.0, 4.0], [5.0, 6.0]], dtype=plugrad.float64)
    y = x * w
    v = view(w)
    try:
        with plugrad.no_grad():
            v += 1
    except ReadOnlyViewError:  # NumPy's diagonal is a read-only view: the change is refused
        assert w.tolist() == [[3.0, 4.0], [5.0, 6.0]]
        return
    with pytest.raises(InPlaceModificationError):
        y.sum().backward()
    assert x.grad is None


def test_each_output_of_broadcast_arrays_shares_its_own_inputs_counter() -> None:
    x = leaf(1.0, 2.0)
    w = plugrad.tensor([3.0, 4.0], dtype=plugrad.float64)
    other = plugrad.tensor([[1.0], [2.0]], dtype=plugrad.float64)
    y = x * w
    _, wide_other = plugrad.broadcast_arrays(w, other)
    with plugrad.no_grad():
        other += 1.0  # not saved by y: nothing to refuse
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 4.0]
    assert wide_other._counter is other._counter and wide_other._counter is not w._counter
    x.grad = None
    y = x * w
    wide_w, _ = plugrad.broadcast_arrays(w, other)
    with plugrad.no_grad():
        w += 1.0  # changes what wide_w shows, and what y saved
    assert wide_w._counter is w._counter
    with pytest.raises(InPlaceModificationError):
        y.sum().backward()


def test_base_changed_after_a_view_was_saved_raises() -> None:
    x = leaf(1.0, 2.0)
    w = plugrad.tensor([3.0, 4.0, 5.0], dtype=plugrad.float64)
    v = w[1:]
    y = x * v
    assert_backward_refused_after_changing(w, y)


def test_advanced_indexing_copies_and_does_not_share_the_version() -> None:
    x = leaf(1.0, 2.0)
    w = plugrad.tensor([3.0, 4.0, 5.0], dtype=plugrad.float64)
    y = x * w[1:]
    picked = w[plugrad.tensor([0, 1])]
    with plugrad.no_grad():
        picked += 1.0  # a copy: w is untouched
    y.sum().backward()
    assert x.grad.tolist() == [4.0, 5.0]


VIEWS = [
    pytest.param(lambda y: y[1:3], id="slice"),
    pytest.param(lambda y: plugrad.reshape(y, (2, 2)), id="reshape"),
    pytest.param(lambda y: y.detach(), id="detach"),
    pytest.param(lambda y: plugrad.unstack(plugrad.reshape(y, (2, 2)))[1], id="unstack"),
]


@pytest.mark.parametrize("view", VIEWS)
def test_recorded_in_place_op_on_a_view_changes_its_base(view) -> None:
    """Values stay those of PyTorch (and of the same program under no_grad)."""
    x = leaf(1.0, 2.0, 3.0, 4.0)
    y = x * 2.0
    v = view(y)
    v.mul_(leaf(3.0))  # recorded: the operand requires grad
    with plugrad.no_grad():
        z = x * 2.0
        view(z).mul_(3.0)
        expected = z.tolist()
    assert y.tolist() == expected
    assert v.tolist() == view(y).tolist()


def test_recorded_in_place_op_on_a_base_changes_its_views() -> None:
    x = leaf(1.0, 2.0, 3.0, 4.0)
    y = x * 2.0
    v = y[1:3]
    y.mul_(leaf(2.0))
    assert v.tolist() == [8.0, 12.0]


def test_a_base_changed_through_its_view_differentiates_as_in_pytorch() -> None:
    x = leaf(1.0, 2.0, 3.0, 4.0)
    y = x * 2.0
    v = y[1:3]
    v.mul_(3.0)
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 6.0, 6.0, 2.0]


def test_augmented_assignment_to_an_index_differentiates_as_in_pytorch() -> None:
    x = plugrad.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=plugrad.float64, requires_grad=True)
    y = x * 1.0
    y[:, 0] += 5.0 * y[:, 1]  # an in-place op on the view y[:, 0], then y[:, 0] = it
    (y * y).sum().backward()
    assert x.grad.tolist() == [[22.0, 114.0], [46.0, 238.0]]


def test_views_of_a_base_changed_in_place_follow_it() -> None:
    x = leaf(1.0, 2.0, 3.0, 4.0)
    y = x * 2.0
    v = y[1:3]
    inner = v[0]  # a view of a view
    y.mul_(leaf(3.0))
    assert v.tolist() == [12.0, 18.0] and inner.item() == 12.0
    (v.sum() + inner).backward()
    assert x.grad.tolist() == [0.0, 12.0, 6.0, 0.0]


def test_sibling_views_see_a_change_through_one_of_them() -> None:
    x = leaf(1.0, 2.0, 3.0, 4.0)
    y = x * 1.0
    left, right = y[0:3], y[1:4]
    right.mul_(leaf(2.0))
    assert left.tolist() == [1.0, 4.0, 6.0]
    left.sum().backward()
    assert x.grad.tolist() == [1.0, 2.0, 2.0, 0.0]


def test_backward_through_a_view_op_view_of_a_changed_base_follows_the_change() -> None:
    # As in PyTorch: a reshaped (or transposed, ...) view of a changed base, and a base
    # changed through such a view, differentiate through the change (they raised).
    x = leaf(1.0, 2.0, 3.0, 4.0)
    y = x * 2.0
    v = plugrad.reshape(y, (2, 2))
    y.add_(leaf(1.0))
    y.sum().backward()  # y itself holds the op
    assert x.grad.tolist() == [2.0, 2.0, 2.0, 2.0]
    assert v.tolist() == [[3.0, 5.0], [7.0, 9.0]]
    (v * v).sum().backward()
    assert x.grad.tolist() == [14.0, 22.0, 30.0, 38.0]
    z = x * 2.0
    plugrad.matrix_transpose(plugrad.reshape(z, (2, 2))).mul_(3.0)
    z.sum().backward()
    assert x.grad.tolist() == [20.0, 28.0, 36.0, 44.0]


def test_a_constant_base_changed_through_its_view_joins_the_graph() -> None:
    w = leaf(5.0)
    base = plugrad.zeros(4, dtype=plugrad.float64)
    v = base[1:3]
    v.add_(w)
    assert base.tolist() == [0.0, 5.0, 5.0, 0.0]
    assert base.requires_grad
    (base * base).sum().backward()
    assert w.grad.tolist() == [20.0]


def test_recorded_in_place_op_on_a_view_of_a_leaf_that_requires_grad_is_an_error() -> None:
    w = leaf(1.0, 2.0, 3.0)
    v = w[1:]
    with pytest.raises(BackwardError, match="a leaf tensor that requires grad"):
        v.mul_(2.0)
    assert w.tolist() == [1.0, 2.0, 3.0] and v.grad_fn is not None and w.grad_fn is None
    with plugrad.no_grad():
        v.mul_(2.0)  # allowed, as for the leaf itself
    assert w.tolist() == [1.0, 4.0, 6.0]


def test_what_a_recorded_in_place_op_saves_is_not_overwritten() -> None:
    x = leaf(1.0, 2.0, 3.0, 4.0)
    w = leaf(3.0, 3.0)
    y = x * 1.0
    v = y[1:3]
    v.mul_(w)  # saves v's old values for w's gradient, then writes into y's memory
    v.sum().backward()
    assert w.grad.tolist() == [2.0, 3.0]
    assert x.grad.tolist() == [0.0, 3.0, 3.0, 0.0]


def test_a_dead_view_does_not_count() -> None:
    x = leaf(1.0, 2.0, 3.0)
    y = x * 2.0
    total = y[0] + y[1]  # views that are gone once the sum is made
    y.mul_(leaf(2.0))
    (y.sum() + total).backward()
    assert x.grad.tolist() == [6.0, 6.0, 4.0]


def test_the_list_of_aliases_does_not_grow_without_bound() -> None:
    y = plugrad.zeros(10)
    for i in range(1000):
        y[i % 10]
    assert len(y._counter) < 80


def test_a_detached_alias_sees_the_new_values_and_stays_a_constant() -> None:
    x = leaf(1.0, 2.0)
    y = x * 2.0
    d = y.detach()
    y.mul_(leaf(3.0))
    assert d.tolist() == [6.0, 12.0]
    assert not d.requires_grad and d.grad_fn is None
    (y * d).sum().backward()
    assert x.grad.tolist() == [36.0, 72.0]


def _rows_scaled(m, x):
    y = x * 1
    for i in range(2):
        y[i] *= i + 2
    return y


def _recurrence(m, x):
    out = m.zeros(3, dtype=x.dtype)
    for i in range(3):
        out[i] = x[i] * 2 + out[i - 1] if i else x[i]
    return out


def _rows_feeding_each_other(m, x):
    y = x * 1
    a, b = y[0], y[1]
    a += b
    b -= a * 3
    return y


def _column_from_column(m, x):
    y = x * 1
    y[:, 0] += 5 * y[:, 1]
    y[:, 1:].mul_(3.0)
    return y


def _view_of_a_view(m, x):
    y = x.exp()
    z = y * 1
    row = z[1]
    row[0:1].sub_(row[1:2] * 2)
    return z * y


@pytest.mark.parametrize(
    "program", [_rows_scaled, _recurrence, _rows_feeding_each_other, _column_from_column,
                _view_of_a_view],
)  # fmt: skip
def test_recorded_in_place_ops_through_index_views_match_pytorch(program) -> None:
    torch = pytest.importorskip("torch")
    values = [[0.3, -1.2], [2.0, 0.7]] if program is not _recurrence else [0.3, -1.2, 2.0]
    x = plugrad.tensor(values, dtype=plugrad.float64, requires_grad=True)
    t = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    y, ty = program(plugrad, x), program(torch, t)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy())
    (y * y).sum().backward()
    (ty * ty).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy())


def test_a_view_saved_then_changed_through_another_view_is_refused_as_in_pytorch() -> None:
    torch = pytest.importorskip("torch")
    for m, error in ((torch, RuntimeError), (plugrad, InPlaceModificationError)):
        x = m.tensor([[0.3, -1.2], [2.0, 0.7]], dtype=m.float64, requires_grad=True)
        y = x * 1
        a, b = y[0], y[1]
        b *= a  # saves a
        a += 1.0
        with pytest.raises(error, match=r"modified by an inplace operation|modified in place"):
            y.sum().backward()


def test_views_made_in_threads_are_all_listed_while_the_dead_are_forgotten() -> None:
    y = plugrad.zeros(10)
    kept: list[list[plugrad.Tensor]] = [[] for _ in range(4)]

    def make_views(mine: list[plugrad.Tensor]) -> None:
        for i in range(3000):
            view = y[i % 10]
            if i % 7 == 0:
                mine.append(view)  # the others die at once and are pruned meanwhile

    run_in_threads(make_views, [(mine,) for mine in kept])  # switching inside the prune too
    listed = {id(entry[0]()) for entry in y._counter[1:]}
    missing = [view for mine in kept for view in mine if id(view) not in listed]
    assert not missing, f"{len(missing)} live views lost from the shared version counter"
    live = sum(len(mine) for mine in kept)
    # Pruned near each power of two: about the live count, twice that if threads
    # switching at the wrong moments let one prune pass; never the 12,000 made.
    assert len(y._counter) < 4 * live


def test_the_first_views_of_a_tensor_made_in_threads_at_once_share_one_counter() -> None:
    # Two threads making a tensor's first views each made it a counter: the views listed in
    # the one that lost went unseen by in-place changes of the tensor.
    lost = 0
    for _ in range(200):
        y = plugrad.zeros(10)
        kept: list[list[plugrad.Tensor]] = [[] for _ in range(4)]
        start = threading.Barrier(4)

        def make_views(mine: list[plugrad.Tensor], y=y, start=start) -> None:
            start.wait()
            for i in range(10):
                mine.append(y[i])

        run_in_threads(make_views, [(mine,) for mine in kept])
        listed = {id(entry[0]()) for entry in y._counter[1:]}
        lost += sum(v._counter is not y._counter or id(v) not in listed for m in kept for v in m)
    assert lost == 0, f"{lost} views lost their base's version counter"


def test_flip_and_diag_are_copies_as_in_pytorch() -> None:
    # NumPy's flip and diagonal are views: a change to either side must not reach the other.
    image = plugrad.arange(6.0).reshape(2, 3)
    flipped, by_function, diagonal = image.flip(-1), plugrad.flip(image, axis=0), image.diag()
    flipped.sub_(10)
    by_function.mul_(0)
    assert image.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    image.add_(1)
    assert diagonal.tolist() == [0.0, 4.0]
    assert flipped.tolist() == [[-8.0, -9.0, -10.0], [-5.0, -6.0, -7.0]]


def test_a_view_made_under_no_grad_is_changed_in_place_only_under_no_grad() -> None:
    # As PyTorch: outside no_grad, the change would be ambiguous (recorded or not?), and a
    # gradient through the base would silently leave it out.
    x = plugrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = x * 1
    with plugrad.no_grad():
        v = b[:2]
    with pytest.raises(InPlaceModificationError, match=r"view made under no_grad\(\)"):
        v.mul_(3)
    with pytest.raises(InPlaceModificationError, match=r"view made under no_grad\(\)"):
        v.mul_(x[:2])
    assert b.tolist() == [1.0, 2.0, 3.0] and b._version == 0
    with plugrad.no_grad():
        v.mul_(3)
    assert b.tolist() == [3.0, 6.0, 3.0]
    # A view made with grad enabled is recorded, and detach() is a copy by its own right.
    y = x * 1
    y[:2].mul_(3)
    y.detach().add_(0)
    (y * y).sum().backward()
    assert x.grad.tolist() == [18.0, 36.0, 6.0]


@pytest.mark.parametrize(
    "make_view",
    [
        lambda t: t.diagonal(),
        lambda t: t.diagonal()[:1],
        lambda t: t[0][1:],
        lambda t: t.T[0],
        lambda t: t.view(-1)[::3],
    ],
    ids=["diagonal", "slice of diagonal", "view of a view", "row of T", "slice of view"],
)
@pytest.mark.parametrize("leaf", [True, False], ids=["of a leaf", "of a result"])
def test_a_view_of_a_view_made_under_no_grad_is_refused_too(make_view, leaf) -> None:
    # Each view between was made under no_grad as well, and requires no grad: the tensor
    # that does is further up (diagonal is a view of a view of its input).
    x = plugrad.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=plugrad.float64, requires_grad=True)
    base = x if leaf else x * 1
    with plugrad.no_grad():
        view = make_view(base)
    with pytest.raises(InPlaceModificationError, match=r"view made under no_grad\(\)"):
        view.add_(10.0)
    assert base.tolist() == [[1.0, 2.0], [3.0, 4.0]] and base._version == 0
    detached = base.detach()[0]  # a view of a detached tensor changes freely
    detached.add_(0.0)


def test_retain_grad_follows_a_tensor_changed_in_place_as_in_pytorch() -> None:
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2
    h.retain_grad()
    h.mul_(3)  # h's .grad is now the gradient with respect to 3 * (x * 2)
    (h * h).sum().backward()
    assert h.retains_grad
    assert h.grad.tolist() == [12.0, 24.0]
    assert x.grad.tolist() == [72.0, 144.0]


@pytest.mark.parametrize(
    "view", [lambda y: y.mT, lambda y: y.T, lambda y: y.reshape(4), lambda y: y.permute(1, 0)]
)
def test_a_base_changed_through_a_reshaping_view_differentiates_through_every_backward(view):
    # autograd.grad and backward(inputs=...) once left the base's path out ([[1, 1], [1, 1]]
    # where the gradient is [[4, 4], [4, 4]]); then all three refused; now, as in PyTorch,
    # the base's history goes through the change.
    x = plugrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x * 1
    view(y).mul_(3)
    assert y.tolist() == [[3.0, 6.0], [9.0, 12.0]]
    loss = y.sum() + x.sum()
    (grad,) = plugrad.autograd.grad(loss, [x], retain_graph=True)
    assert grad.tolist() == [[4.0, 4.0], [4.0, 4.0]]
    loss.backward(inputs=[x], retain_graph=True)
    assert x.grad.tolist() == [[4.0, 4.0], [4.0, 4.0]]
    (grad,) = plugrad.autograd.grad(y.sum(), [x], allow_unused=True)
    assert grad.tolist() == [[3.0, 3.0], [3.0, 3.0]]


@pytest.mark.skipif(
    plugrad.default_device().backend.name != "numpy",
    reason="NumPy's read-only diagonal made writable (views are copies on others, or read-only)",
)
def test_writing_into_a_diagonal_writes_into_the_matrix_as_pytorch():
    # NumPy's diagonal view is read-only: fill_ was refused with a message about broadcasts.
    torch = pytest.importorskip("torch")
    results = []
    for lib in (plugrad, torch):
        x, y = lib.ones(3, 3), lib.ones(2, 3, 4)
        x.diagonal().fill_(0)
        y.diagonal(1, 1, 2).mul_(5)
        results.append((x.tolist(), y.tolist()))
    assert results[0] == results[1]
    broadcast = plugrad.ones(3).expand(3, 3)
    with pytest.raises(plugrad.errors.ReadOnlyViewError):
        broadcast.diagonal().fill_(0)  # its memory holds one row: still refused


def test_a_recorded_in_place_op_writes_memory_numpy_shares() -> None:
    # With an operand requiring grad the tensor was rebound to a new array: the array given
    # to from_numpy, or got from .numpy(), never saw the change (PyTorch writes it).
    w = plugrad.tensor([1.0, 2.0, 3.0], requires_grad=True, device="numpy")
    given = np.zeros(3, dtype=np.float32)
    shared = plugrad.from_numpy(given)
    shared.add_(w)
    exported = plugrad.zeros(3, device="numpy")
    array = exported.numpy()
    exported.mul_(w).add_(w)
    assert given.tolist() == [1.0, 2.0, 3.0] and array.tolist() == [1.0, 2.0, 3.0]
    (shared.sum() + exported.sum()).backward()
    assert w.grad.tolist() == [2.0, 2.0, 2.0]


# -- results that are views in PyTorch and copies here ------------------------------------


_COPIES_OF_VIEWS = {
    "view_as_real": lambda z: plugrad.view_as_real(z),
    "view_as_real, indexed": lambda z: plugrad.view_as_real(z)[0],
    "view_as_real, reshaped": lambda z: plugrad.view_as_real(z).reshape(-1),
    "view_as_real, detached": lambda z: plugrad.view_as_real(z).detach(),
    "view_as_complex": lambda z: plugrad.view_as_complex(plugrad.view_as_real(z).clone()),
    "conj": lambda z: z.conj(),
    "mH": lambda z: z[None].mH,
    "H": lambda z: z[None].H,
}
_CHANGES = {
    "add_": lambda v: v.add_(1),
    "setitem": lambda v: v.__setitem__(0, 0),
    "copy_": lambda v: v.copy_(plugrad.zeros_like(v)),
    "zero_": lambda v: v.zero_(),
    "out=": lambda v: plugrad.multiply(v, 2, out=v),
}


@pytest.mark.parametrize("change", _CHANGES.values(), ids=_CHANGES.keys())
@pytest.mark.parametrize("make", _COPIES_OF_VIEWS.values(), ids=_COPIES_OF_VIEWS.keys())
def test_a_write_into_a_copy_that_pytorch_makes_a_view_is_refused(make, change) -> None:
    # In PyTorch these are views of z and the write changes z; here they are copies, and the
    # write was made into the copy alone, z left as it was: a silent difference.
    z = plugrad.tensor([1 + 2j, -3j], dtype=plugrad.complex128, requires_grad=False)
    view = make(z)
    gc.collect()  # (the detached one outlives the view_as_real result it came from)
    before = view.clone()
    with pytest.raises(ViewCopyError, match="in PyTorch is a view of its input"):
        change(view)
    assert z.tolist() == [1 + 2j, -3j] and plugrad.all(view == before)
    # A clone is the user's own copy, and a real tensor's conj() is itself.
    copy = view.clone()
    change(copy)
    x = plugrad.tensor([1.0, 2.0])
    x.conj().add_(1)
    assert x.tolist() == [2.0, 3.0]


def test_the_marks_of_copies_of_views_go_with_their_tensors() -> None:
    z = plugrad.tensor([1 + 2j])
    for _ in range(100):
        plugrad.view_as_real(z)[0].detach()
    gc.collect()
    assert not plugrad.versions.copies_of_views


def test_detach_in_place_of_a_view_is_refused() -> None:
    # As PyTorch: a view stays tied to its base's history (a later write into the base
    # would put it back into the graph); detach() makes a new tensor instead.
    x = leaf(1.0, 2.0, 3.0)
    y = x * 2.0
    v = y[1:]
    with pytest.raises(BackwardError, match=r"detach_\(\) of a view .* detach\(\)"):
        v.detach_()
    assert v.requires_grad and v.grad_fn is not None  # unchanged
    d = y.detach()
    assert d.detach_() is d  # a detach()-ed tensor is no view: allowed


def test_a_view_made_before_its_base_was_detached_in_place_cannot_be_changed() -> None:
    # The view's history says it comes from x; its base's says it is a constant now:
    # writing through the view would put the detached base back into the graph.
    x = leaf(1.0, 2.0, 3.0)
    y = x * 2.0
    v = y[1:]
    y.detach_()
    with pytest.raises(InPlaceModificationError, match=r"detach_\(\).*view again"):
        v.mul_(10.0)
    assert y.tolist() == [2.0, 4.0, 6.0] and not y.requires_grad and y.grad_fn is None
    assert v._version == y._version == 0
    w = y[1:]  # a view made after the detach: a constant, changed freely
    w.mul_(10.0)
    assert y.tolist() == [2.0, 40.0, 60.0] and not y.requires_grad


@pytest.mark.parametrize(
    "product",
    [lambda y, c: y @ c[0], lambda y, c: c[0] @ y, lambda y, c: c[1] @ y,
     lambda y, c: y.reshape(1, 3) @ c[1].T, lambda y, c: plugrad.matmul(c[2], y)],
)  # fmt: skip
def test_a_matrix_product_keeps_an_operand_only_for_the_other_ones_gradient(product) -> None:
    # As multiply and PyTorch: with a constant other operand, changing y after the product
    # does not touch what its backward needs (it raised "needs saved tensor 0").
    x = leaf(1.0, 2.0, 3.0)
    y = x * 1.0
    constants = (
        plugrad.tensor([2.0, 3.0, 4.0], dtype=plugrad.float64),
        plugrad.ones((2, 3), dtype=plugrad.float64),
        plugrad.ones((4, 2, 3), dtype=plugrad.float64),
    )
    z = product(y, constants)
    y.add_(1.0)
    z.sum().backward()
    fresh = leaf(1.0, 2.0, 3.0)  # the same product, with nothing changed
    product(fresh * 1.0, constants).sum().backward()
    assert x.grad.tolist() == fresh.grad.tolist()
