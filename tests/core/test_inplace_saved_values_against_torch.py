"""In-place ops against PyTorch where a wrong gradient could slip through unnoticed.

- An in-place op whose backward reads its own output (``exp_``, ``sigmoid_``...):
  the tensor's memory is that saved output, so changing the tensor afterwards
  (through an alias too, or under ``no_grad``) must make that backward raise.
- An in-place op whose operand that requires grad is a keyword argument
  (``clamp_(min=s)``, ``scatter_(src=s)``) records the op as a positional one does.
- ``index_fill``'s value gets one gradient per filled element, however often the
  index repeats it; a complex number is never written into a real tensor.
"""

from __future__ import annotations

import numpy as np
import pytest

import plugrad
from plugrad.errors import (
    DtypeError,
    InPlaceModificationError,
    LinAlgError,
    ShapeError,
)

torch = pytest.importorskip("torch")

SAVING_OUTPUT = ["exp_", "sigmoid_", "tanh_", "sqrt_", "relu_", "reciprocal_", "rsqrt_"]
ALIASES = {
    "slice": lambda y: y[0:1],
    "view": lambda y: y.view(2),
    "detach": lambda y: y.detach(),
    "none": lambda y: None,
}
CHANGES = {
    "mul_": lambda y, alias: y.mul_(3),
    "zero_": lambda y, alias: y.zero_(),
    "setitem": lambda y, alias: y.__setitem__(0, 5.0),
    "through the alias": lambda y, alias: (alias if alias is not None else y).add_(1),
}


def _program(lib, op, alias, change):
    w = lib.tensor([0.5, 0.7], requires_grad=True)
    y = w * 1
    getattr(y, op)()
    kept = ALIASES[alias](y)
    if change == "through the alias" and alias == "detach":
        with lib.no_grad():
            CHANGES[change](y, kept)
    else:
        CHANGES[change](y, kept)
    y.sum().backward()
    return w.grad


@pytest.mark.parametrize("change", sorted(CHANGES))
@pytest.mark.parametrize("alias", sorted(ALIASES))
@pytest.mark.parametrize("op", SAVING_OUTPUT)
def test_changing_a_saved_output_in_place_makes_its_backward_raise(op, alias, change):
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _program(torch, op, alias, change)  # the oracle refuses it too
    with pytest.raises(InPlaceModificationError):  # (through a view: its own message)
        _program(plugrad, op, alias, change)


#: Ops whose backward PyTorch computes from their inputs: their output may change in place.
NOT_SAVING_OUTPUT = {
    "a / b": lambda lib, a, b: a / b,
    "b / a": lambda lib, a, b: b / a,
    "erfinv": lambda lib, a, b: lib.erfinv(a),
    "sinc": lambda lib, a, b: lib.sinc(a),
    "normalize": lambda lib, a, b: lib.nn.functional.normalize(a, dim=0),
}


@pytest.mark.parametrize("name", sorted(NOT_SAVING_OUTPUT))
def test_changing_the_output_of_an_op_that_saves_its_inputs_is_allowed(name):
    # plugrad saved these outputs: z = a / b; z.relu_() made backward refuse, as a
    # normalize followed by mul_ did, where PyTorch computes the gradients.
    grads = []
    for lib in (plugrad, torch):
        a = lib.tensor([0.5, -0.3], requires_grad=True)
        b = lib.tensor([2.0, 4.0], requires_grad=True)
        z = NOT_SAVING_OUTPUT[name](lib, a, b)
        z.relu_()
        (z * z).sum().backward()
        grads.append([None if t.grad is None else t.grad.tolist() for t in (a, b)])
    for ours, theirs in zip(*grads):
        assert (ours is None) == (theirs is None)
        if ours is not None:
            np.testing.assert_allclose(ours, theirs, rtol=1e-6)


@pytest.mark.parametrize("op", SAVING_OUTPUT)
def test_a_change_under_no_grad_is_seen_too(op):
    w = plugrad.tensor([0.5, 0.7], requires_grad=True)
    y = w * 1
    getattr(y, op)()
    with plugrad.no_grad():
        y.mul_(3)
    with pytest.raises(InPlaceModificationError):
        y.sum().backward()


LATER_CHANGES = {
    "mul_": lambda y, view: y.mul_(3),
    "mul_ under no_grad": lambda y, view: y.mul_(3),
    "setitem": lambda y, view: y.__setitem__(0, 5.0),
    "through the view": lambda y, view: view.add_(1),
    "through the view under no_grad": lambda y, view: view.add_(1),
    "through a new view": lambda y, view: y[:1].zero_(),
}


def _changed_after_saving_with_a_view_made_before(lib, op, change):
    w = lib.tensor([0.5, 0.7], requires_grad=True)
    y = w * 1
    view = y[1:]  # made before: the op then writes y's memory
    getattr(y, op)()
    if change.endswith("under no_grad"):
        with lib.no_grad():
            LATER_CHANGES[change](y, view)
    else:
        LATER_CHANGES[change](y, view)
    y.sum().backward()


@pytest.mark.parametrize("change", list(LATER_CHANGES))
@pytest.mark.parametrize("op", SAVING_OUTPUT)
def test_a_saved_output_changed_while_a_view_made_before_lives_makes_backward_raise(
    installed_backend, op, change
):
    # With a view of y alive the op wrote y's memory and its backward kept a copy of the
    # output, which no later change reached: backward gave a gradient PyTorch refuses.
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _changed_after_saving_with_a_view_made_before(torch, op, change)
    with plugrad.use_backend(installed_backend):
        with pytest.raises(InPlaceModificationError, match=f"{op[:-1].capitalize()}Backward"):
            _changed_after_saving_with_a_view_made_before(plugrad, op, change)


@pytest.mark.parametrize("op", ["exp_", "sigmoid_"])
def test_a_saved_output_of_a_view_changed_through_its_base_makes_backward_raise(op):
    # v.exp_() wrote y's memory; a later change of y did not reach the saved output's check.
    for lib in (torch, plugrad):
        w = lib.tensor([0.5, 0.7, 0.9], requires_grad=True)
        y = w * 1
        v = y[1:]
        getattr(v, op)()
        y.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            (y * y).sum().backward()


@pytest.mark.parametrize("op", SAVING_OUTPUT)
def test_unchanged_saved_outputs_give_pytorchs_gradient_and_version(op):
    results = []
    for lib in (plugrad, torch):
        w = lib.tensor([0.5, 0.7], requires_grad=True)
        y = w * 1
        y.add_(1)
        getattr(y, op)()
        view = y[1:]
        (y * 2).sum().backward()
        results.append((w.grad.tolist(), y._version, view._version))
    ours, theirs = results
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)
    assert ours[1:] == theirs[1:]


def test_a_later_op_on_the_result_still_records_and_counts_versions():
    w = plugrad.tensor([0.5, 0.7], requires_grad=True)
    y = w * 1
    y.exp_()
    z = y * 2  # saves y at its version after exp_
    y.mul_(3)
    assert y._version == 2
    with pytest.raises(InPlaceModificationError):
        z.sum().backward()


# name -> program(lib, s) returning the loss; s is a leaf of [2., 10.] that requires grad.
KEYWORD_OPERANDS = {
    "clamp_(min=)": lambda lib, s: lib.zeros(2).clamp_(min=s).sum() * 3,
    "clamp_(max=)": lambda lib, s: lib.full((2,), 20.0).clamp_(max=s).sum() * 3,
    "clip_(min=)": lambda lib, s: lib.zeros(2).clip_(min=s).sum() * 3,
    "masked_fill_(value=)": lambda lib, s: (
        lib.zeros(2).masked_fill_(lib.tensor([True, False]), value=s[0]).sum() * 3
    ),
    "index_fill_(value)": lambda lib, s: (
        lib.zeros(3).index_fill_(0, lib.tensor([0, 2]), s[1]).sum() * 3
    ),
    "scatter_(src=)": lambda lib, s: (
        lib.zeros(3).scatter_(0, lib.tensor([2, 0]), src=s) * lib.tensor([1.0, 2.0, 3.0])
    ).sum(),
    "scatter_add_(src=)": lambda lib, s: (
        lib.zeros(3).scatter_add_(0, lib.tensor([1, 1]), src=s) * lib.tensor([1.0, 2.0, 3.0])
    ).sum(),
}


@pytest.mark.parametrize("name", sorted(KEYWORD_OPERANDS))
def test_an_operand_given_by_keyword_is_recorded(name):
    grads = []
    for lib in (plugrad, torch):
        s = lib.tensor([2.0, 10.0], requires_grad=True)
        loss = KEYWORD_OPERANDS[name](lib, s)
        assert loss.requires_grad
        loss.backward()
        grads.append(s.grad.tolist())
    assert grads[0] == grads[1]


@pytest.mark.parametrize("in_place", [False, True])
def test_index_fill_counts_a_repeated_index_once(in_place):
    grads = []
    for lib in (plugrad, torch):
        s = lib.tensor(1.0, requires_grad=True)
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 1
        index = lib.tensor([1, 1, 2, 1])
        y = y.index_fill_(0, index, s * 1.5) if in_place else y.index_fill(0, index, s * 1.5)
        (y * lib.tensor([1.0, 2.0, 4.0])).sum().backward()
        grads.append((s.grad.item(), x.grad.tolist()))
    assert grads[0] == grads[1]


COMPLEX_INTO_REAL = {
    "masked_fill": lambda x, m: x.masked_fill(m, 1 + 2j),
    "masked_fill_": lambda x, m: x.masked_fill_(m, 1 + 2j),
    "index_fill_": lambda x, m: x.index_fill_(0, plugrad.tensor([0]), 1 + 2j),
    "x[m] = 1j": lambda x, m: x.__setitem__(m, 1j),
    "scatter_": lambda x, m: x.scatter_(0, plugrad.tensor([0]), 1 + 2j),
    "scatter_(reduce=)": lambda x, m: x.scatter_(0, plugrad.tensor([0]), 1j, reduce="add"),
    "fill_": lambda x, m: x.fill_(1j),
}


@pytest.mark.parametrize("name", sorted(COMPLEX_INTO_REAL))
def test_a_complex_number_is_not_written_into_a_real_tensor(name):
    x = plugrad.tensor([3.0, 2.0, 5.0])
    with pytest.raises(DtypeError, match="complex"):
        COMPLEX_INTO_REAL[name](x, plugrad.tensor([True, False, True]))
    assert x.tolist() == [3.0, 2.0, 5.0] and x._version == 0


def test_full_of_a_complex_number_needs_a_complex_dtype():
    with pytest.raises(DtypeError, match="complex"):
        plugrad.full((2,), 1 + 2j, dtype=plugrad.float32)
    assert plugrad.full((2,), 1 + 2j).dtype == plugrad.complex64
    assert plugrad.full((2,), 1 + 2j, dtype=plugrad.complex128).tolist() == [1 + 2j, 1 + 2j]


@pytest.mark.parametrize("through", ["a view of it", "its base"])
def test_retain_grad_follows_a_change_made_through_another_tensor(through):
    results = []
    for lib in (plugrad, torch):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 1
        view = y[1:]
        kept = y if through == "a view of it" else view
        kept.retain_grad()
        if through == "a view of it":
            view.mul_(3)
        else:
            y.mul_(2)
        (kept * kept).sum().backward()
        results.append((kept.grad.tolist(), x.grad.tolist()))
    assert results[0] == results[1]


@pytest.mark.parametrize("change", ["t_", "unsqueeze_"])
def test_a_leaf_whose_shape_changed_after_use_gets_no_gradient_of_its_old_shape(change):
    x = plugrad.ones(2, 3, requires_grad=True)
    other = plugrad.ones(2, 3, requires_grad=True)
    z = (x * 2.0).sum() + other.sum()  # x is not saved: only the shapes can tell
    with plugrad.no_grad():
        getattr(x, change)(*(() if change == "t_" else (0,)))
    with pytest.raises(InPlaceModificationError, match="shape was changed in place"):
        z.backward()
    assert x.grad is None and other.grad is None  # nothing half-done


@pytest.mark.parametrize(
    ("data", "error"),
    [([1, 1], DtypeError), ([1.0], ShapeError)],
    ids=["int64 data", "shorter data"],
)
def test_a_grad_whose_data_was_replaced_is_not_added_to_as_pytorch_refuses(data, error):
    # An int64 .grad.data made the float32 parameter's gradient float64; a (1,) one grew to (2,).
    for lib in (plugrad, torch):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        other = lib.tensor([1.0], requires_grad=True)
        (a * 2).sum().backward()
        a.grad.data = lib.tensor(data)
        with pytest.raises(error if lib is plugrad else RuntimeError):
            ((a * 2).sum() + other.sum()).backward()
        assert a.grad.tolist() == data
        if lib is plugrad:
            assert other.grad is None  # nothing half-done


def test_a_leaf_that_stopped_requiring_grad_gets_no_gradient():
    results = []
    for lib in (plugrad, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        w = lib.tensor([3.0, 4.0], requires_grad=True)
        z = (x * w).sum()
        x.requires_grad_(False)
        z.backward()
        results.append((x.grad, w.grad.tolist()))
    assert results[0][0] is None and results[1][0] is None
    assert results[0][1] == results[1][1]


def test_a_view_changed_in_place_is_an_index_of_its_updated_base_as_in_pytorch() -> None:
    # Gradients with respect to the base, hooks and retain_grad on it see the path through
    # the view (they missed it: grad(loss, h) gave [1, 1, 1, 1] here).
    def run(lib, hooked):
        x = lib.tensor([1.0, 2.0, 3.0, 4.0], dtype=lib.float64, requires_grad=True)
        h = x * 1
        v = h[1:3]
        v.mul_(3)
        if hooked:
            h.register_hook(lambda g: g * 10)
            h.retain_grad()
            (v * 2).sum().backward()
            return [x.grad.numpy(), h.grad.numpy()]
        loss = (v * 2).sum() + h.sum()
        by_h = lib.autograd.grad(loss, h, retain_graph=True)[0]
        return [by_h.numpy(), lib.autograd.grad(loss, x)[0].numpy(), v.detach().numpy()]

    for hooked in (False, True):
        for ours, theirs in zip(run(plugrad, hooked), run(torch, hooked)):
            np.testing.assert_array_equal(ours, theirs)


def test_a_0d_result_shares_its_memory_with_its_views_as_in_pytorch() -> None:
    # NumPy gives 0-d results as immutable scalars: a change through a view, a detach()-ed
    # tensor or an unbind() element did not reach the tensor (while its gradient did).
    def run(lib):
        out = []
        s = lib.tensor([1.0, 2.0]).sum()
        s.detach().add_(100)
        out.append(s.item())
        s = lib.tensor([1.0, 2.0]).sum()
        s[None].add_(1)
        s.reshape(1).mul_(2)
        out.append(s.item())
        x = lib.arange(3.0) * 2
        x.unbind()[2].add_(1)
        out.append(x.tolist())
        b = lib.tensor([1.0, 2.0], requires_grad=True)
        s = (b * 2).sum()
        s[...].mul_(3)
        s.backward()
        out.append((s.item(), b.grad.tolist()))
        return out

    assert run(plugrad) == run(torch)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_keeps_its_output_so_its_input_may_change_after(name) -> None:
    # Its gradient reads the output alone, as PyTorch's: changing the input in place after
    # is no error (it raised InPlaceModificationError).
    def run(lib):
        x = lib.tensor([[1.0, 2.0, 3.0]], dtype=lib.float64, requires_grad=True)
        a = x * 1
        s = getattr(lib.nn.functional, name)(a, dim=-1)
        a.add_(1)
        (s * lib.tensor([[1.0, 2.0, 5.0]], dtype=lib.float64)).sum().backward()
        return x.grad.numpy()

    np.testing.assert_allclose(run(plugrad), run(torch), rtol=1e-14)


@pytest.mark.parametrize(
    "compute",
    [
        lambda lib, a: lib.nn.functional.gelu(a),
        lambda lib, a: lib.nn.functional.gelu(a, approximate="tanh"),
        lambda lib, a: a.var(dim=1, keepdim=True),
    ],
    ids=["gelu", "gelu tanh", "var"],
)
def test_an_op_keeping_its_input_alone_lets_its_output_change_after(compute) -> None:
    # A rule computed in float32 for float16 inputs hid what it read, so these ops kept
    # their output too, and changing it in place made backward raise where PyTorch's runs.
    def run(lib):
        x = lib.tensor([[0.5, -1.0, 2.0]], dtype=lib.float64, requires_grad=True)
        y = compute(lib, x * 1)
        y.mul_(3)
        (y * y).sum().backward()
        return x.grad.numpy()

    np.testing.assert_allclose(run(plugrad), run(torch), rtol=1e-12)


#: Ops with several outputs: PyTorch's rules read some of them (max pooling its indices,
#: slogdet its sign), so the others may be changed in place before backward.
SEVERAL_OUTPUTS = {
    "max_pool2d": lambda lib, x: lib.nn.functional.max_pool2d(x, 2, return_indices=True),
    "max_pool1d": lambda lib, x: lib.nn.functional.max_pool1d(x[0], 2, return_indices=True),
    "adaptive_max_pool2d": lambda lib, x: lib.nn.functional.adaptive_max_pool2d(
        x, 2, return_indices=True
    ),
    "adaptive_max_pool1d": lambda lib, x: lib.nn.functional.adaptive_max_pool1d(
        x[0], 2, return_indices=True
    ),
    "slogdet": lambda lib, x: lib.linalg.slogdet(x[0] + 0.0),
    "svd": lambda lib, x: lib.linalg.svd(x[0] + 0.0, full_matrices=False),
    "qr": lambda lib, x: lib.linalg.qr(x[0] + 0.0),
    "aminmax": lambda lib, x: lib.aminmax(x, dim=1),
}


def _change_output(lib, name, index, change=True):
    x = lib.tensor(np.random.default_rng(5).standard_normal((1, 4, 4)), requires_grad=True)
    outputs = SEVERAL_OUTPUTS[name](lib, x)
    if change:
        outputs[index].mul_(3)
    total = sum(o.sum() for o in outputs if o.requires_grad)
    total.backward()
    return x.grad.numpy()


@pytest.mark.parametrize("index", [0, 1])
@pytest.mark.parametrize("name", sorted(SEVERAL_OUTPUTS))
def test_changing_an_output_of_an_op_with_several_raises_only_where_pytorchs_does(name, index):
    try:
        expected = _change_output(torch, name, index)
    except RuntimeError as exc:
        assert "modified by an inplace operation" in str(exc)
        try:
            ours = _change_output(plugrad, name, index)
        except InPlaceModificationError:
            return
        # Allowed only where the output changed is not what the rule reads: integer indices
        # computed from the saved ones (adaptive_max_pool1d's), which take no gradient.
        assert not SEVERAL_OUTPUTS[name](torch, torch.ones(1, 4, 4))[index].is_floating_point()
        unchanged = _change_output(torch, name, index, change=False)
        np.testing.assert_allclose(ours, unchanged, atol=1e-12)
    else:
        # e.g. Conv2d -> MaxPool2d -> ReLU(inplace=True): the values are not saved.
        np.testing.assert_allclose(_change_output(plugrad, name, index), expected, atol=1e-12)


def test_max_pooling_then_an_in_place_relu_trains_as_in_pytorch():
    grads = []
    for lib in (plugrad, torch):
        lib.manual_seed(0)
        net = lib.nn.Sequential(
            lib.nn.Conv2d(1, 2, 3), lib.nn.MaxPool2d(2), lib.nn.ReLU(inplace=True)
        ).double()
        with lib.no_grad():
            for p, value in zip(net.parameters(), ([0.1] * 18, [0.05, -0.02])):
                p.copy_(lib.tensor(value, dtype=lib.float64).reshape(p.shape))
        x = lib.tensor(np.linspace(-1, 1, 2 * 64).reshape(2, 1, 8, 8), requires_grad=True)
        net(x).pow(2).sum().backward()
        grads.append((x.grad.numpy(), net[0].weight.grad.numpy()))
    for ours, theirs in zip(*grads):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10)


def test_slogdet_of_a_singular_matrix_still_refuses_backward_and_nan_gives_nan():
    x = plugrad.tensor([[1.0, 2.0], [2.0, 4.0]], requires_grad=True)
    _sign, logabsdet = plugrad.linalg.slogdet(x)
    with pytest.raises(LinAlgError, match="singular"):
        logabsdet.backward()
    y = plugrad.tensor([[1.0, float("nan")], [2.0, 4.0]], requires_grad=True)
    with np.errstate(invalid="ignore"):
        plugrad.linalg.slogdet(y)[1].backward()
        assert np.isnan(y.grad.numpy()).all()
