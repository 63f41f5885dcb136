"""plugrad.nn.utils against torch.nn.utils."""

from __future__ import annotations

import math

import numpy as np
import pytest

import plugrad
from plugrad.nn.utils import (
    clip_grad_norm_,
    clip_grad_value_,
    parameters_to_vector,
    vector_to_parameters,
)

torch = pytest.importorskip("torch", reason="torch (CPU) is the test oracle")


def _pair(seed, scale=1.0):
    rng = np.random.default_rng(seed)
    arrays = [rng.normal(size=s).astype(np.float64) * scale for s in [(3, 4), (4,), (2, 2, 2)]]
    grads = [rng.normal(size=a.shape) * scale for a in arrays]
    ours = []
    theirs = []
    for a, g in zip(arrays, grads):
        p = plugrad.asarray(a).detach()
        p.requires_grad = True
        p.grad = plugrad.asarray(g)
        ours.append(p)
        t = torch.tensor(a, requires_grad=True)
        t.grad = torch.tensor(g)
        theirs.append(t)
    return ours, theirs


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, 0.5, math.inf, -math.inf, -1.0])
@pytest.mark.parametrize("max_norm", [0.5, 1e6])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    ours, theirs = _pair(0)
    total = clip_grad_norm_(ours, max_norm, norm_type)
    expected = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type)
    np.testing.assert_allclose(float(total), float(expected), rtol=1e-12)
    for p, t in zip(ours, theirs):
        np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=1e-12)


def test_clip_grad_norm_keeps_grad_objects_and_skips_missing_grads():
    ours, _ = _pair(1)
    grads = [p.grad for p in ours]
    extra = plugrad.zeros(2, requires_grad=True)
    clip_grad_norm_([*ours, extra], 0.1)
    assert all(p.grad is g for p, g in zip(ours, grads))
    assert extra.grad is None


def test_clip_grad_norm_nonfinite():
    ours, _ = _pair(2)
    ours[0].grad = plugrad.full((3, 4), math.inf, dtype=plugrad.float64)
    before = [p.grad.numpy().copy() for p in ours]
    with pytest.raises(RuntimeError, match="error_if_nonfinite"):
        clip_grad_norm_(ours, 1.0, error_if_nonfinite=True)
    for p, b in zip(ours, before):
        np.testing.assert_array_equal(p.grad.numpy(), b)


def test_clip_grad_norm_refuses_bad_norm_type():
    ours, _ = _pair(3)
    with pytest.raises(ValueError, match="norm_type"):
        clip_grad_norm_(ours, 1.0, norm_type=math.nan)


def test_the_zero_norm_is_pytorchs_the_count_of_tensors_with_a_nonzero_gradient():
    # Was the count of nonzero elements (4 for these), and clipped by it.
    torch = pytest.importorskip("torch")
    totals, grads = [], []
    for lib in (plugrad, torch):
        a = lib.tensor([1.0, 0.0, 2.0], requires_grad=True)
        b = lib.tensor([3.0, 4.0], requires_grad=True)
        c = lib.tensor([1.0], requires_grad=True)
        a.grad, b.grad, c.grad = lib.tensor([1.0, 0.0, 2.0]), lib.tensor([3.0, 4.0]), lib.zeros(1)
        totals.append(float(lib.nn.utils.clip_grad_norm_([a, b, c], 1.0, norm_type=0)))
        grads.append(a.grad.tolist() + b.grad.tolist())
    assert totals == [2.0, 2.0]
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)


@pytest.mark.parametrize("scale", [300.0, 1e-4])
def test_half_precision_gradients_are_clipped_by_their_norm_as_torch_clips_them(scale):
    # The squares of float16 gradients overflow (or underflow) float16: the norm is summed
    # in float32, as PyTorch sums it.
    if plugrad.float16 not in plugrad.default_device().dtypes:
        pytest.skip("the default backend has no float16")
    ours = plugrad.zeros(100, dtype=plugrad.float16, requires_grad=True)
    ours.grad = plugrad.full((100,), scale, dtype=plugrad.float16)
    theirs = torch.zeros(100, dtype=torch.float16, requires_grad=True)
    theirs.grad = torch.full((100,), scale, dtype=torch.float16)
    max_norm = scale
    total = clip_grad_norm_([ours], max_norm)
    expected = torch.nn.utils.clip_grad_norm_([theirs], max_norm)
    assert total.dtype == plugrad.float16
    np.testing.assert_allclose(float(total), float(expected), rtol=1e-3)
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=2e-3)
    assert 0 < abs(float(ours.grad[0])) < scale


def test_clip_grad_value_matches_torch():
    ours, theirs = _pair(4, scale=3.0)
    clip_grad_value_(ours, 1.25, foreach=True)
    torch.nn.utils.clip_grad_value_(theirs, 1.25, foreach=True)
    for p, t in zip(ours, theirs):
        np.testing.assert_array_equal(p.grad.numpy(), t.grad.numpy())
    with pytest.raises(ValueError, match="clip_value"):
        clip_grad_value_(ours, -1.0)


def test_parameters_to_vector_and_back_match_torch():
    ours, theirs = _pair(5)
    vector = parameters_to_vector(ours)
    expected = torch.nn.utils.parameters_to_vector(theirs)
    np.testing.assert_array_equal(vector.detach().numpy(), expected.detach().numpy())
    # differentiable, as in torch
    (vector * vector).sum().backward()
    np.testing.assert_allclose(
        ours[0].grad.numpy(), 2 * ours[0].detach().numpy() + _pair(5)[0][0].grad.numpy()
    )

    new = plugrad.arange(vector.shape[0], dtype=plugrad.float64)
    vector_to_parameters(new, ours)
    torch.nn.utils.vector_to_parameters(torch.arange(vector.shape[0], dtype=torch.float64), theirs)
    for p, t in zip(ours, theirs):
        np.testing.assert_array_equal(p.detach().numpy(), t.detach().numpy())
        assert p.requires_grad


def test_vector_to_parameters_checks_the_length():
    ours, _ = _pair(6)
    before = [p.detach().numpy().copy() for p in ours]
    with pytest.raises(ValueError, match="hold 24 elements"):
        vector_to_parameters(plugrad.zeros(5, dtype=plugrad.float64), ours)
    for p, b in zip(ours, before):
        np.testing.assert_array_equal(p.detach().numpy(), b)


def _tied() -> plugrad.nn.Module:
    class Tied(plugrad.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = plugrad.nn.Linear(2, 2, bias=False)
            self.b = plugrad.nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    return Tied()


def test_functional_call_differentiates_the_given_tensors_and_restores_the_module() -> None:
    from plugrad.func import functional_call

    results = []
    for lib in (plugrad, torch):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.Tanh(), lib.nn.Linear(3, 1))
        own = {k: v.detach().clone() for k, v in model.named_parameters()}
        given = {
            k: (lib.arange(v.numel(), dtype=lib.float32).reshape(v.shape) / 7).requires_grad_()
            for k, v in model.named_parameters()
        }
        x = lib.tensor([[1.0, -2.0], [0.5, 3.0]])
        call = functional_call if lib is plugrad else torch.func.functional_call
        out = call(model, given, (x,))
        out.sum().backward()
        assert all(p.grad is None for p in model.parameters())
        assert all((model.get_parameter(k) == v).all() for k, v in own.items())
        results.append([out.tolist()] + [given[k].grad.tolist() for k in sorted(given)])
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-5)
    for ours, theirs in zip(results[0][1:], results[1][1:]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-7)


def test_functional_call_fills_a_slot_that_holds_none() -> None:
    # Linear(bias=False) has a bias slot holding None: a given bias was refused (KeyError).
    results = []
    for lib in (plugrad, torch):
        layer = lib.nn.Linear(2, 2, bias=False)
        with lib.no_grad():
            layer.weight.copy_(lib.tensor([[1.0, 2.0], [3.0, 4.0]]))
        given = {"bias": lib.tensor([10.0, 20.0])}
        results.append(lib.func.functional_call(layer, given, (lib.ones(1, 2),)).tolist())
        assert layer.bias is None
        strict = lib.func.functional_call(
            layer, {"weight": lib.eye(2)}, (lib.ones(1, 2),), strict=True
        )
        results.append(strict.tolist())
    assert results[:2] == results[2:]


def test_functional_call_ties_weights_and_refuses_what_it_cannot_use() -> None:
    from plugrad.func import functional_call

    model = _tied()
    x = plugrad.tensor([[1.0, 1.0]])
    doubled = plugrad.eye(2) * 2
    assert functional_call(model, {"a.weight": doubled}, x).tolist() == [[4.0, 4.0]]
    untied = functional_call(model, {"a.weight": doubled}, x, tie_weights=False)
    assert untied.tolist() == model.b(x * 2).tolist()
    with pytest.raises(ValueError, match="tied"):
        functional_call(model, {"a.weight": doubled, "b.weight": plugrad.eye(2)}, x)
    with pytest.raises(KeyError, match=r"'a\.wieght'"):
        functional_call(model, {"a.wieght": doubled}, x)  # misspelt: refused, not ignored
    assert functional_call(model, {}, x).tolist() == model(x).tolist()
    with pytest.raises(KeyError, match=r"no tensor given for 'a\.weight', 'b\.weight'"):
        functional_call(model, {}, x, strict=True)
    with pytest.raises(ValueError, match="more than one"):
        functional_call(model, ({"a.weight": doubled}, {"a.weight": doubled}), x)
    with pytest.raises(TypeError, match="give a Tensor"):
        functional_call(model, {"a.weight": [[1.0, 0.0], [0.0, 1.0]]}, x)
    weight = model.a.weight
    with pytest.raises(Exception):  # noqa: B017 - whatever the forward raises
        functional_call(model, {"a.weight": plugrad.ones(3, 3)}, x)
    assert model.a.weight is weight and model.b.weight is weight


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_and_unpad_sequence_agree_with_pytorch(batch_first: bool, padding_side: str) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    lengths = [3, 5, 1]
    arrays = [rng.standard_normal((n, 2)) for n in lengths]
    weights = rng.standard_normal((5, 3, 2) if not batch_first else (3, 5, 2))
    results = []
    for lib, rnn in ((plugrad, plugrad.nn.utils.rnn), (torch, torch.nn.utils.rnn)):
        leaves = [lib.tensor(a, requires_grad=True) for a in arrays]
        padded = rnn.pad_sequence(leaves, batch_first=batch_first, padding_value=-1.5,
                                  padding_side=padding_side)  # fmt: skip
        (padded * lib.tensor(weights)).sum().backward()
        values = padded.detach().numpy().copy()  # PyTorch's unpad transposes its input
        cut = rnn.unpad_sequence(padded, lib.tensor(lengths), batch_first=batch_first)
        results.append(
            (values, [leaf.grad.numpy() for leaf in leaves], [c.detach().numpy() for c in cut])
        )
    (ours, our_grads, our_cut), (theirs, their_grads, their_cut) = results
    np.testing.assert_array_equal(ours, theirs)
    for a, b in zip(our_grads + our_cut, their_grads + their_cut, strict=True):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(plugrad.errors.ShapeError, match="one rest"):
        plugrad.nn.utils.rnn.pad_sequence([plugrad.ones(2, 3), plugrad.ones(2, 4)])


def test_pad_sequence_takes_the_first_sequences_dtype_as_pytorch() -> None:
    # concat promoted the batch (float32 with float64 became float64); a float sequence after
    # an int one would be truncated, so it is refused.
    for first, second in (("float32", "float64"), ("float64", "float32"), ("float32", "int64")):
        ours, theirs = (
            lib.nn.utils.rnn.pad_sequence(
                [lib.ones(2, dtype=getattr(lib, first)), lib.ones(1, dtype=getattr(lib, second))]
            )
            for lib in (plugrad, torch)
        )
        assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    with pytest.raises(plugrad.errors.DtypeError, match="cannot hold"):
        plugrad.nn.utils.rnn.pad_sequence([plugrad.tensor([1, 2]), plugrad.tensor([3.5])])


def test_an_unknown_name_of_the_rnn_utilities_raises_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        plugrad.nn.utils.rnn.no_such_name  # noqa: B018


def test_functional_call_names_unknown_and_missing_tensors_with_a_typed_error() -> None:
    # Both were plain KeyErrors; now plugrad errors, still KeyError, and RuntimeError as
    # PyTorch's strict=True error is.
    from plugrad.errors import PlugradError
    from plugrad.func import functional_call

    layer = plugrad.nn.Linear(2, 2)
    x = plugrad.ones(1, 2)
    with pytest.raises(PlugradError, match=r"named 'wieght'; its names are 'weight', 'bias'") as e:
        functional_call(layer, {"wieght": plugrad.zeros(2, 2)}, x)
    assert isinstance(e.value, KeyError) and str(e.value).startswith("functional_call()")
    for error in (PlugradError, KeyError, RuntimeError):
        with pytest.raises(error, match=r"no tensor given for 'bias'; .*'weight', 'bias'"):
            functional_call(layer, {"weight": plugrad.zeros(2, 2)}, x, strict=True)
    with pytest.raises(RuntimeError, match="Missing key"):
        torch.func.functional_call(torch.nn.Linear(2, 2), {}, torch.ones(1, 2), strict=True)
