"""In-place changes on backends whose views are copies (JAX, Dask) show as on NumPy, or are refused.

Each case runs on NumPy (shared memory: the reference) and on every installed
backend whose views are copies; there plugrad brings the values of the tensors
sharing memory up to date, or refuses the change before making it.
"""

from __future__ import annotations

import gc
import importlib.util
from collections.abc import Iterator

import pytest
from functions import doubling_in_place

import plugrad
from plugrad.errors import ReadOnlyViewError, ViewCopyError

_COPYING = [
    pytest.param(
        name,
        marks=pytest.mark.skipif(
            importlib.util.find_spec(library) is None,
            reason=f"the {name} backend needs {library} (the {name} extra)",
        ),
    )
    for name, library in (("jax", "jax"), ("dask", "dask"))
]


@pytest.fixture(params=["numpy", *_COPYING])
def device(request: pytest.FixtureRequest) -> Iterator[plugrad.backend.Device]:
    with plugrad.use_backend(request.param) as device:
        yield device


@pytest.fixture(params=_COPYING)
def copying(request: pytest.FixtureRequest) -> Iterator[plugrad.backend.Device]:
    with plugrad.use_backend(request.param) as device:
        yield device


def test_the_backends_say_whether_views_share_memory(device) -> None:
    assert device.backend.views_share_memory is (device.backend.name == "numpy")
    assert device.views_are_copies is not device.backend.views_share_memory


def test_a_change_through_an_index_view_reaches_its_base(device) -> None:
    x = plugrad.tensor([1.0, 2.0, 3.0, 4.0])
    v = x[1:3]
    v.mul_(10)
    assert x.tolist() == [1.0, 20.0, 30.0, 4.0] and v.tolist() == [20.0, 30.0]


def test_a_change_of_a_base_reaches_its_index_views(device) -> None:
    y = plugrad.tensor([1.0, 2.0, 3.0, 4.0])
    w = y[1:3]
    y.add_(1)
    assert w.tolist() == [3.0, 4.0]
    y += 1  # the raw arrays' own operator
    assert w.tolist() == [4.0, 5.0]
    y[0] = 7.0
    y.copy_(y * 2)
    assert w.tolist() == [8.0, 10.0]
    y.zero_()
    assert w.tolist() == [0.0, 0.0]
    y.fill_(3.0)
    assert w.tolist() == [3.0, 3.0]


def test_out_writes_reach_the_views_of_out(device) -> None:
    out = plugrad.zeros(4)
    row = out[2:]
    plugrad.add(plugrad.ones(4), plugrad.ones(4), out=out)
    assert row.tolist() == [2.0, 2.0]


def test_views_made_by_view_ops_follow_both_ways(device) -> None:
    x = plugrad.arange(24.0).reshape(2, 3, 4)
    moved = x.movedim((0, 2), (2, 0))
    transposed = x.transpose(0, 2)
    row = x[1]
    row_t = row.T
    columns = plugrad.unstack(x, axis=1)
    diagonal = plugrad.linalg.diagonal(x)
    moved.mul_(2)
    for view, again in (
        (transposed, x.transpose(0, 2)),
        (row_t, x[1].T),
        (columns[2], x[:, 2]),
        (diagonal, plugrad.linalg.diagonal(x)),
    ):
        assert view.tolist() == again.tolist()
    row_t.zero_()
    columns[0].fill_(-1.0)
    assert x.sum().item() == 112.0
    assert [t.sum().item() for t in (transposed, moved, row)] == [112.0] * 2 + [-4.0]


def test_a_detached_alias_follows_and_is_followed(device) -> None:
    x = plugrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    d = y.detach()
    part = d[1:]
    with plugrad.no_grad():
        y.mul_(2)
    assert d.tolist() == [2.0, 4.0, 6.0] and part.tolist() == [4.0, 6.0]
    part.add_(1)
    assert y.tolist() == [2.0, 5.0, 7.0] and d.tolist() == [2.0, 5.0, 7.0]
    assert not d.requires_grad and d.grad_fn is None


def test_a_detached_copy_of_a_temporary_view_follows_and_is_followed(device) -> None:
    # On JAX and Dask the view between was gone, so no change could reach the copy, and
    # every change was refused (ViewCopyError) where NumPy and PyTorch make it.
    w = plugrad.zeros(2, 3)
    w[0].detach().fill_(7.0)
    w.t()[1].data.mul_(2.0)  # through two views that are gone
    t = w[:, 1:].detach()
    w.add_(1.0)
    assert w.tolist() == [[8.0, 15.0, 8.0], [1.0, 1.0, 1.0]]
    assert t.tolist() == [[15.0, 8.0], [1.0, 1.0]]
    t[1].zero_()
    assert w.tolist() == [[8.0, 15.0, 8.0], [1.0, 0.0, 0.0]]
    layer = plugrad.nn.Linear(3, 2)
    layer.weight[0].data.fill_(7.0)
    assert layer.weight[0].tolist() == [7.0] * 3


def test_detached_copies_of_a_tensor_that_is_gone_follow_each_other(device) -> None:
    h = plugrad.zeros(2, 3) * 1
    row, whole, again = h[1].detach(), h.detach(), h.detach()
    del h
    gc.collect()
    whole.add_(1.0)
    row.fill_(5.0)
    assert again.tolist() == whole.tolist() == [[1.0] * 3, [5.0] * 3]
    assert row.tolist() == [5.0] * 3


def test_views_of_the_old_memory_follow_each_other_after_data_is_replaced(device) -> None:
    # x's views hold the memory x (a reshape of a temporary) had: on JAX and Dask a change
    # of one of them was refused once x took new data.
    x = plugrad.arange(4.0).reshape(2, 2)
    row, flat = x[0], x.reshape(4)
    x.data = plugrad.zeros(2, 2)
    row.add_(1.0)
    assert row.tolist() == [1.0, 2.0] and flat.tolist() == [1.0, 2.0, 2.0, 3.0]
    assert x.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    x.add_(1.0)  # its own memory now: the views keep theirs
    assert flat.tolist() == [1.0, 2.0, 2.0, 3.0]


def test_a_parameter_and_the_tensor_it_was_made_from_follow_each_other(device) -> None:
    data = plugrad.tensor([1.0, 2.0])
    weight = plugrad.nn.Parameter(data)
    with plugrad.no_grad():
        weight -= 0.5
    assert data.tolist() == [0.5, 1.5]


def test_gradients_through_a_changed_index_view_are_numpys(device) -> None:
    a = plugrad.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    b = plugrad.tensor([5.0, 6.0], requires_grad=True)
    base = a * 1
    v = base[1:3]
    v.mul_(b)
    (base * base).sum().backward()
    assert base.tolist() == [1.0, 10.0, 18.0, 4.0]
    assert a.grad.tolist() == [2.0, 100.0, 216.0, 8.0]
    assert b.grad.tolist() == [40.0, 108.0]


def _assert_nothing_changed(tensors, values, versions) -> None:
    assert [t.tolist() for t in tensors] == values
    assert [t._version for t in tensors] == versions


def test_a_change_a_view_cannot_follow_is_refused_and_changes_nothing(copying) -> None:
    x = plugrad.tensor([1.0, 2.0, 3.0, 4.0])
    row = x[1:3]
    wide = plugrad.broadcast_to(x, (2, 4))  # cannot be written back, can follow
    tensors = (x, row, wide)
    values, versions = [t.tolist() for t in tensors], [t._version for t in tensors]
    # read-only, as a broadcast view on NumPy
    with pytest.raises(ReadOnlyViewError, match=r"shape \(2, 4\).*views are copies.*clone\(\)"):
        wide.add_(1)
    _assert_nothing_changed(tensors, values, versions)
    x.add_(1)  # the base, and every view, can follow
    assert wide.tolist() == [[2.0, 3.0, 4.0, 5.0]] * 2 and row.tolist() == [3.0, 4.0]


def test_a_view_of_views_of_a_temporary_follows(copying) -> None:
    # A view keeps what it views alive (PyTorch's _base): the column follows x through x.T.
    x = plugrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    column = x.T[0]
    x.mul_(2)
    assert column.tolist() == [2.0, 6.0]
    column.zero_()
    assert x.tolist() == [[0.0, 4.0], [0.0, 8.0]]


def _unfollowable_view(x: plugrad.Tensor) -> plugrad.Tensor:
    """A view of ``x``'s first row made with another input (broadcast_arrays), through a
    view that is gone: it cannot be re-derived from ``x``."""
    return plugrad.broadcast_arrays(x[0], plugrad.zeros(x.shape[1:]))[0]


def test_a_view_of_a_temporary_cannot_follow_and_the_change_is_refused(copying) -> None:
    x = plugrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    column = _unfollowable_view(x)
    tensors = (x, column)
    values, versions = [t.tolist() for t in tensors], [t._version for t in tensors]
    for target, method, args in ((x, "mul_", (2,)), (column, "zero_", ()), (x, "__iadd__", (1.0,))):
        with pytest.raises(ViewCopyError, match=r"shape \(2,\).*Make that view after the change"):
            getattr(target, method)(*args)
        _assert_nothing_changed(tensors, values, versions)
    with pytest.raises(ViewCopyError, match=r"unsqueeze_\(\).*shape \(2, 2\)"):
        x.unsqueeze_(0)
    _assert_nothing_changed(tensors, values, versions)
    assert x.shape == (2, 2)
    del column, tensors, target
    x.mul_(2)  # nothing else looks at the memory now
    assert x.tolist() == [[2.0, 4.0], [6.0, 8.0]]


def test_a_refused_recorded_change_leaves_the_graph_as_it_was(copying) -> None:
    a = plugrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    base = a * 1
    view, _ = plugrad.broadcast_arrays(base, plugrad.ones(3))  # made by two inputs
    edge = base.grad_fn
    with pytest.raises(ViewCopyError, match="broadcast_arrays"):
        view.mul_(2)
    assert base.grad_fn is edge and view.tolist() == [1.0, 2.0, 3.0]
    (base * base).sum().backward()
    assert a.grad.tolist() == [2.0, 4.0, 6.0]


@pytest.mark.parametrize("part", ["real", "imag"])
def test_a_change_through_a_complex_part_reaches_its_base(copying, part) -> None:
    # Refused before: the real part of a copy could not be written back into its base.
    z = plugrad.tensor([1 + 2j, 3 - 1j], requires_grad=True)
    w = z * 1
    getattr(w, part).mul_(3.0)
    expected = [3 + 2j, 9 - 1j] if part == "real" else [1 + 6j, 3 - 3j]
    assert w.tolist() == expected
    (w.real + w.imag).sum().backward()
    weights = [3 + 1j, 3 + 1j] if part == "real" else [1 + 3j, 1 + 3j]  # PyTorch's
    assert z.grad.tolist() == weights


@pytest.mark.parametrize("optimizer", ["SGD", "Adam", "Adagrad", "RMSprop"])
def test_an_optimizer_step_reaches_the_views_of_its_parameters(device, optimizer) -> None:
    weight = plugrad.nn.Parameter(plugrad.tensor([[1.0, 2.0], [3.0, 4.0]]))
    row, flat, alias = weight[0], weight.reshape(4), weight.detach()
    step = getattr(plugrad.optim, optimizer)([weight], lr=0.5)
    for _ in range(2):
        step.zero_grad()
        (weight * weight).sum().backward()
        step.step()
        assert row.tolist() == weight[0].tolist()
        assert flat.tolist() == weight.reshape(4).tolist()
        assert alias.tolist() == weight.tolist()
    assert weight.tolist() != [[1.0, 2.0], [3.0, 4.0]]


@pytest.mark.parametrize(("optimizer", "buffer"), [("SGD", "momentum_buffer"), ("Adam", "exp_avg")])
def test_an_optimizer_step_reaches_the_views_of_its_state(device, optimizer, buffer) -> None:
    # On JAX and Dask a view of a momentum buffer kept its first values.
    weight = plugrad.nn.Parameter(plugrad.tensor([1.0, 2.0, 3.0]))
    options = {"momentum": 0.9} if optimizer == "SGD" else {}
    step = getattr(plugrad.optim, optimizer)([weight], lr=0.1, **options)
    (weight * weight).sum().backward()
    step.step()
    state = step.state[weight][buffer]
    head, alias = state[:2], state.detach()
    step.zero_grad()
    (weight * weight).sum().backward()
    step.step()
    assert head.tolist() == state[:2].tolist() and alias.tolist() == state.tolist()


def test_lbfgs_steps_reach_the_views_of_its_parameters(device) -> None:
    # LBFGS writes its parameters itself: its views kept the values before the step.
    weight = plugrad.nn.Parameter(plugrad.tensor([1.0, 2.0, 3.0]))
    tail, alias = weight[1:], weight.detach()
    step = plugrad.optim.LBFGS([weight], lr=0.1)

    def closure():
        step.zero_grad()
        loss = (weight**2).sum()
        loss.backward()
        return loss

    step.step(closure)
    assert weight.tolist() != [1.0, 2.0, 3.0]
    assert tail.tolist() == weight[1:].tolist() and alias.tolist() == weight.tolist()


def test_gradients_accumulated_into_grad_reach_its_views(device) -> None:
    # On JAX and Dask views and detach()ed copies of .grad kept the first pass's values.
    p = plugrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (p * p).sum().backward()
    head, alias = p.grad[:2], p.grad.detach()
    (p * 3).sum().backward()
    assert p.grad.tolist() == [5.0, 7.0, 9.0]
    assert head.tolist() == [5.0, 7.0] and alias.tolist() == [5.0, 7.0, 9.0]
    buffer = plugrad.zeros(6)
    q = plugrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    q.grad = buffer[:3]
    (q * q).sum().backward()
    assert buffer.tolist() == [2.0, 4.0, 6.0, 0.0, 0.0, 0.0]


def test_an_optimizer_step_its_views_cannot_follow_is_refused_and_changes_nothing(copying) -> None:
    first = plugrad.nn.Parameter(plugrad.tensor([1.0, 2.0]))
    weight = plugrad.nn.Parameter(plugrad.tensor([[1.0, 2.0], [3.0, 4.0]]))
    column = _unfollowable_view(weight)
    step = plugrad.optim.SGD([first, weight], lr=0.5, momentum=0.9)
    (first.sum() + weight.sum()).backward()
    tensors = (first, weight, column)
    values, versions = [t.tolist() for t in tensors], [t._version for t in tensors]
    with pytest.raises(ViewCopyError, match=r"SGD\.step\(\).*Make that view after the change"):
        step.step()
    _assert_nothing_changed(tensors, values, versions)
    assert step.state == {} or all(not entry for entry in step.state.values())
    del column, tensors
    step.step()  # nothing else looks at the memory now
    assert weight.tolist() == [[0.5, 1.5], [2.5, 3.5]] and first.tolist() == [0.5, 1.5]


def test_compiled_changes_reach_views_made_before_and_after_the_capture(device) -> None:
    weight = plugrad.nn.Parameter(plugrad.tensor([1.0, 2.0]))
    counts = plugrad.tensor([0.0, 0.0])
    step = plugrad.optim.SGD([weight], lr=0.1)

    @plugrad.compile
    def train() -> plugrad.Tensor:
        step.zero_grad()
        loss = (weight * weight).sum()
        loss.backward()
        step.step()
        with plugrad.no_grad():
            counts.add_(1)
        return loss

    first, count = weight[0:1], counts[1]
    train()
    train()  # captured again: the first step made the optimizer's state
    later, later_count = weight[1:2], counts[0]  # made after the capture
    for _ in range(2):
        train()
        assert first.tolist() == weight[0:1].tolist() and later.tolist() == weight[1:2].tolist()
        assert count.item() == later_count.item() == counts[0].item()
    assert counts.tolist() == [4.0, 4.0]


def test_a_compiled_change_a_view_made_since_cannot_follow_is_refused(copying) -> None:
    x = plugrad.tensor([[1.0, 2.0], [3.0, 4.0]])

    @plugrad.compile
    def scale() -> plugrad.Tensor:
        with plugrad.no_grad():
            x.mul_(2)
        return x.sum()

    scale()
    column = _unfollowable_view(x)
    values, versions = [x.tolist(), column.tolist()], [x._version, column._version]
    with pytest.raises(ViewCopyError, match=r"replay of the compiled .*scale.*Make that view"):
        scale()
    _assert_nothing_changed((x, column), values, versions)
    del column
    assert scale().item() == 40.0


def test_a_tensor_given_new_data_leaves_its_views_behind(device) -> None:
    # NumPy: x.data = y gives x new memory, and its views keep the old. Where views are
    # copies they still followed x (v.add_(1) wrote into the new data).
    x = plugrad.arange(4.0)
    v = x[1:]
    x.data = plugrad.zeros(4)
    v.add_(1)
    assert x.tolist() == [0.0, 0.0, 0.0, 0.0] and v.tolist() == [2.0, 3.0, 4.0]
    x.add_(5)
    assert x.tolist() == [5.0] * 4 and v.tolist() == [2.0, 3.0, 4.0]
    w = plugrad.tensor([1.0, 2.0], requires_grad=True)
    loss = (w * w).sum()
    w.data = plugrad.tensor([3.0, 4.0])
    with pytest.raises(plugrad.errors.InPlaceModificationError):
        loss.backward()  # it saved the old values


def test_resize_keeps_views_in_their_shape(device) -> None:
    # Where views are copies, a view made before resize_ was made again from the resized
    # tensor at its next change: x[1:3] became [[6, 8], [10, 12]] (PyTorch: [4, 6]).
    x = plugrad.arange(1.0, 7.0)
    v = x[1:3]
    if device.views_are_copies:
        with pytest.raises(ViewCopyError, match=r"resize_\(\)"):
            x.resize_(3, 2)  # the same memory in a new shape, as squeeze_ or t_
        assert x.shape == (6,)
    else:
        x.resize_(3, 2)
        x.mul_(2)
        assert v.tolist() == [4.0, 6.0]  # as PyTorch's: the view follows the memory
    x = plugrad.arange(1.0, 7.0)
    v = x[1:3]
    x.resize_(2, 2)  # fewer elements
    x.fill_(0.0)
    assert x.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    # NumPy's slice keeps the memory, as PyTorch's; a copy stays as it was
    assert v.tolist() == ([2.0, 3.0] if device.views_are_copies else [0.0, 0.0])
    v.add_(1)  # and, as NumPy's copy would, no longer writes into x
    expected = [[0.0, 0.0], [0.0, 0.0]] if device.views_are_copies else [[0.0, 1.0], [1.0, 0.0]]
    assert x.tolist() == expected


@pytest.mark.parametrize(
    "make",
    [
        lambda x: x.t().contiguous(),
        lambda x: x[:, ::2].contiguous(),
        lambda x: x.t().reshape(-1),
        lambda x: x[:, 1:].flatten(),
        lambda x: x.mT.ravel(),
        lambda x: plugrad.reshape(x, (3, 2), copy=True),
    ],
    ids=["t().contiguous()", "strided contiguous()", "t().reshape", "flatten", "ravel", "copy"],
)
def test_reshapes_a_strided_library_makes_by_copying_are_copies(device, make) -> None:
    # Where views are copies, each of these was an alias of x: a change of it reached x
    # (and the gradient through x counted the change).
    a = plugrad.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    x = a * 1
    made = make(x)
    made.mul_(3)
    assert x.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    (x * x).sum().backward()
    assert a.grad.tolist() == [[2.0, 4.0, 6.0], [8.0, 10.0, 12.0]]


def test_views_keep_the_layout_a_strided_library_gives_them(device) -> None:
    x = plugrad.arange(24.0).reshape(6, 4)
    assert x.t().stride() == (1, 4) and not x.t().is_contiguous()
    assert x[:, 1:].stride() == (4, 1) and x[1:].is_contiguous()
    assert x.reshape(2, 3, 4).permute(2, 0, 1).stride() == (1, 12, 4)
    assert x.t().detach().stride() == (1, 4)
    assert x[:, ::2].reshape(12).stride() == (2,)  # every other element: still a view
    assert x[:, 1:].reshape(18).stride() == (1,)  # a copy: row-major
    row = x[1:].reshape(20)  # a view, as PyTorch's: a change of it reaches x
    row.add_(100)
    assert x[5].tolist() == [120.0, 121.0, 122.0, 123.0]
    with pytest.raises(plugrad.errors.ShapeError, match="without a copy"):
        x.t().view(24)


def test_a_function_changing_a_view_in_place_reaches_its_base_and_views(device) -> None:
    # mark_dirty refused a view (and a tensor with views), after forward had changed it.
    a = plugrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = a * 1
    first, tail = y[0], y[1:]
    doubling_in_place(plugrad).apply(y[1:])
    assert y.tolist() == [1.0, 4.0, 6.0] and tail.tolist() == [4.0, 6.0] and first.tolist() == 1.0
    ((y * y).sum() + (tail * 10).sum()).backward()
    assert a.grad.tolist() == [2.0, 36.0, 44.0]
