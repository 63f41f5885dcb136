"""In-place changes through views made by view ops, against PyTorch.

A change through ``b.t()``, ``b.view(...)``, ``b.permute(...)``, ``b.unsqueeze(0)``
(and chains of them, of temporaries too) is the base's change, and the base's
views follow: values and gradients as PyTorch's. They raised before, where the
view was not an index of the base. So is a change through a view that holds part
of its base (``diagonal``, a complex tensor's ``.real`` and ``.imag``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import plugrad
from plugrad.errors import ReadOnlyViewError

torch = pytest.importorskip("torch")

VIEWS = {
    "t": lambda b: b.t(),
    "T": lambda b: b.T,
    "mT": lambda b: b.mT,
    "view": lambda b: b.view(3, 2),
    "reshape": lambda b: b.reshape(6),
    "flatten": lambda b: b.flatten(),
    "permute": lambda b: b.permute(1, 0),
    "transpose": lambda b: b.transpose(0, 1),
    "movedim": lambda b: b.movedim(0, 1),
    "unsqueeze": lambda b: b.unsqueeze(0),
    "unflatten": lambda b: b.unflatten(1, (3, 1)),
    "chain": lambda b: b.reshape(3, 2).t().unsqueeze(-1),
    "view-then-index": lambda b: b.t()[1],
    "index-then-view": lambda b: b[1:].t(),
}

CHANGES = {
    "mul_": lambda v, lib: v.mul_(lib.full(v.shape, 3.0)),
    "add_": lambda v, lib: v.add_(2.0),
    "zero_": lambda v, lib: v.zero_(),
    "addcmul_": lambda v, lib: v.addcmul_(lib.ones(v.shape), lib.full(v.shape, 2.0), value=0.5),
    "setitem": lambda v, lib: v.__setitem__(0, 7.0),
    "copy_": lambda v, lib: v.copy_(lib.ones(v.shape) * 5),
}


def _run(lib, view, change):
    x = lib.tensor(np.arange(1.0, 7.0).reshape(2, 3), requires_grad=True)
    b = x * 1
    other = b.reshape(3, 2)  # another view of b: it follows the change
    v = view(b)
    change(v, lib)
    loss = (b * b).sum() + (other * lib.tensor([[1.0, 2.0]] * 3)).sum() + (v * v).sum()
    loss.backward()
    return b.tolist(), other.tolist(), v.tolist(), x.grad.tolist()


@pytest.mark.parametrize("change", list(CHANGES))
@pytest.mark.parametrize("view", list(VIEWS))
def test_a_change_through_a_view_is_the_bases_as_in_pytorch(view, change):
    ours = _run(plugrad, VIEWS[view], CHANGES[change])
    theirs = _run(torch, VIEWS[view], CHANGES[change])
    for mine, reference in zip(ours, theirs):
        np.testing.assert_allclose(mine, reference, rtol=1e-6)


def test_a_copy_made_by_reshape_is_not_a_view():
    # A reshape the layout cannot view copies: changing it leaves the base (and its
    # graph) alone, as in PyTorch. (Where views are copies, every view op's result is
    # kept up to date as a view: there, the change reaches the base.)
    if plugrad.default_device().views_are_copies:
        pytest.skip("every view op's result acts as a view where views are copies")
    results = []
    for lib in (plugrad, torch):
        x = lib.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        b = x * 1
        copied = b.mT.reshape(6)
        copied.mul_(2.0)
        (b.sum() + copied.sum()).backward()
        results.append((b.tolist(), x.grad.tolist()))
    assert results[0] == results[1]


@pytest.mark.parametrize("offset", [0, 1, -2])
def test_a_base_changed_through_its_diagonal_follows_pytorch(offset):
    # Backward raised: the base's history could not be written from a diagonal.
    if plugrad.default_device().backend.name == "array_api_strict":  # a read-only diagonal
        with pytest.raises(ReadOnlyViewError, match="will not write"):
            (plugrad.ones((2, 2), requires_grad=True) * 1).diagonal().mul_(3.0)
        return
    results = []
    for lib in (plugrad, torch):
        x = lib.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
        b = x * 1
        b.diagonal(offset).mul_(3.0)
        (b * b).sum().backward()
        results.append((b.detach().numpy(), x.grad.numpy()))
    for ours, theirs in zip(*results, strict=True):
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("view", ["diagonal", "expand"])
def test_partial_views_of_a_changed_base_follow_it_as_in_pytorch(view):
    # They raised at backward: only index views of a changed base were made again.
    results = []
    for lib in (plugrad, torch):
        x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        b = x * 1
        if view == "diagonal":
            v = plugrad.linalg.diagonal(b) if lib is plugrad else torch.diagonal(b)
        else:
            v = b[0].expand(3, 2)
        b.mul_(lib.full((2, 2), 3.0))
        (v * v).sum().backward()
        results.append((v.tolist(), x.grad.tolist()))
    assert results[0] == results[1]


PART_CHANGES = {
    "mul_": lambda v, lib: v.mul_(3.0),
    "add_": lambda v, lib: v.add_(lib.tensor([1.0, -2.0, 0.5])),
    "copy_": lambda v, lib: v.copy_(lib.tensor([7.0, 8.0, 9.0])),
    "setitem": lambda v, lib: v.__setitem__(slice(1, None), 4.0),
    "of an index": lambda v, lib: v[1:].zero_(),
}


@pytest.mark.parametrize("change", list(PART_CHANGES))
@pytest.mark.parametrize("part", ["real", "imag"])
def test_a_change_through_a_complex_part_is_the_bases_as_in_pytorch(part, change):
    # Backward raised: the base's history could not be written from its real or
    # imaginary part, so z.real.mul_(3) of a tensor requiring grad was a dead end.
    results = []
    for lib in (plugrad, torch):
        z = lib.tensor([1 + 2j, 3 - 1j, 0.5 + 0.25j], requires_grad=True)
        w = z * (1.5 - 0.5j)
        other = w[1:]  # another view of w: it follows the change
        PART_CHANGES[change](getattr(w, part), lib)
        loss = (w * w.conj()).real.sum() + (w**2).imag.sum() + (other * 2j).real.sum()
        loss.backward()
        results.append((w.detach().numpy(), other.detach().numpy(), z.grad.numpy()))
    for ours, theirs in zip(*results, strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_a_part_written_beside_an_infinite_one_keeps_it():
    # The other part is put back as it was: inf * 1j would make a real part nan.
    z = plugrad.tensor([complex(1, math.inf), complex(math.nan, 2), complex(3, -math.inf)])
    z.real.mul_(2)
    np.testing.assert_array_equal(z.numpy(), [complex(2, math.inf), complex(math.nan, 2),
                                              complex(6, -math.inf)])  # fmt: skip
    z.imag.copy_(plugrad.tensor([math.inf, math.nan, 1.0]))
    np.testing.assert_array_equal(z.numpy(), [complex(2, math.inf), complex(math.nan, math.nan),
                                              complex(6, 1)])  # fmt: skip


STRIDED_COPIES = {
    "contiguous": lambda view: view.contiguous(),
    "ravel": lambda view: view.ravel(),
    "t().contiguous()": lambda view: view.t().contiguous(),
}


@pytest.mark.parametrize("call", list(STRIDED_COPIES))
def test_contiguous_and_ravel_of_a_strided_view_are_copies_as_in_pytorch(call: str) -> None:
    # contiguous() returned x[:, ::2] itself (it can be seen flat), so zeroing the "copy"
    # zeroed every other column of x.
    sums = []
    for lib in (plugrad, torch):
        x = lib.arange(12.0).reshape(3, 4)
        STRIDED_COPIES[call](x[:, ::2]).zero_()
        sums.append(float(x.sum()))
    assert sums[0] == sums[1] == 66.0


def test_a_broadcast_output_refuses_writes_as_expand_does(on_numpy) -> None:
    # NumPy's broadcast views were writable: a_.add_(1) added 1 once to x's one row.
    x = plugrad.zeros(1, 3)
    broadcast, _ = plugrad.broadcast_tensors(x, plugrad.ones(2, 1))
    with pytest.raises(ReadOnlyViewError, match="Nothing was changed"):
        broadcast.add_(1.0)
    assert x.tolist() == [[0.0, 0.0, 0.0]]
    y = plugrad.zeros(2, 3)
    same, _ = plugrad.broadcast_tensors(y, plugrad.ones(1, 3))
    same.add_(1.0)  # no element shown twice: written, as in PyTorch
    assert y.tolist() == [[1.0] * 3] * 2


DETACHED_VIEWS = {
    "detach()[1:]": lambda h: h.detach()[1:],
    "detach()[0]": lambda h: h.detach()[0],
    "detach().view": lambda h: h.detach().view(2, 2),
    "detach().view.t()": lambda h: h.detach().view(2, 2).t(),
    "data[1:]": lambda h: h.data[1:],
    "view.detach()[1:]": lambda h: h[1:].detach()[1:],
    "detach().unbind": lambda h: h.detach().view(2, 2).unbind(0)[1],
}

RECORDED_CHANGES = {
    "setitem": lambda h: h.__setitem__(0, 5.0),
    "mul_": lambda h: h.mul_(2.0),
    "through a view": lambda h: h[1:].mul_(3.0),
    "copy_": lambda h: h.copy_(h.detach() * 0 + 7.0),
    "sigmoid_": lambda h: h.sigmoid_(),
}


def _detached_view_kept(lib, make, change):
    x = lib.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    h = x * 1
    t = make(h)  # a target, a logged activation
    change(h)
    out = (t.requires_grad, t.grad_fn is None, t.tolist())
    ((h * h).sum() + (h * t.sum()).sum()).backward()
    return (*out, x.grad.tolist())


@pytest.mark.parametrize("change", list(RECORDED_CHANGES))
@pytest.mark.parametrize("make", list(DETACHED_VIEWS))
def test_a_view_of_a_detached_tensor_stays_out_of_the_graph_as_in_pytorch(
    installed_backend, make, change
):
    # It was given requires_grad=True and a grad_fn that refused backward: the recorded
    # change of h took it for a view of h itself.
    theirs = _detached_view_kept(torch, DETACHED_VIEWS[make], RECORDED_CHANGES[change])
    with plugrad.use_backend(installed_backend):
        ours = _detached_view_kept(plugrad, DETACHED_VIEWS[make], RECORDED_CHANGES[change])
    assert ours[:2] == theirs[:2] == (False, True)
    for mine, reference in zip(ours[2:], theirs[2:]):
        np.testing.assert_allclose(mine, reference, rtol=1e-6)


CHANGES_BY = {
    "mul_": lambda d, w: d.mul_(w),
    "through a view": lambda d, w: d[1:].mul_(w),
    "setitem": lambda d, w: d.__setitem__(0, w),
}


@pytest.mark.parametrize("change", list(CHANGES_BY))
def test_a_tensor_changed_through_its_detached_copy_keeps_its_history_as_in_pytorch(
    installed_backend, change
):
    # Backward through h raised: h's history was taken for one its values had outgrown.
    results = []
    for lib in (torch, plugrad):
        with plugrad.use_backend(installed_backend):
            x = lib.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
            w = lib.tensor(3.0, requires_grad=True)
            h = x * 2
            d = h.detach()
            CHANGES_BY[change](d, w)
            assert h.grad_fn is not None and d.requires_grad
            (h.sum() + d.sum()).backward()
            results.append((h.tolist(), d.tolist(), x.grad.tolist(), w.grad.item()))
    assert results[0] == results[1]


@pytest.mark.parametrize("shape", [(2, 3), (1, 2, 3)], ids=["own shape", "new axis of 1"])
def test_a_broadcast_that_repeats_nothing_is_written_through_as_in_pytorch(
    installed_backend, shape
):
    # JAX and Dask refused the change (ReadOnlyViewError) and on every backend the base's
    # history was lost (backward raised), as for a broadcast that repeats elements.
    results = []
    for lib in (torch, plugrad):
        with plugrad.use_backend(installed_backend):
            x = lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
            w = lib.tensor(3.0, requires_grad=True)
            h = x * 1
            view = lib.broadcast_to(h, shape)
            view.mul_(w)
            view[..., 0].add_(1.0)
            (h * h).sum().backward()
            results.append((h.tolist(), view.tolist(), x.grad.tolist(), w.grad.item()))
    assert results[0] == results[1]
