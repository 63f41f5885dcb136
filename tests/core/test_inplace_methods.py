"""In-place Tensor methods (``x.add_(y)``, ``x.exp_()``, ...) come from the op rows.

Each computes what PyTorch's does, keeps the tensor's dtype, and has the
in-place operators' safety: a backward pass that saved the old value raises,
and a leaf that requires grad changes only under ``no_grad``.
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import plugrad
from plugrad.errors import BackwardError, DtypeError, InPlaceModificationError

torch = pytest.importorskip("torch")

VALUES = np.array([0.25, 0.5, 0.75, 0.9], dtype=np.float32)
OTHER = np.array([1.0, -2.0, 0.5, 3.0], dtype=np.float32)

# method name -> arguments, where a Tensor argument is written as "other"
CALLS = {
    "add_": ("other",),
    "sub_": ("other",),
    "subtract_": (2.0,),
    "mul_": ("other",),
    "multiply_": (3,),
    "div_": ("other",),
    "divide_": (2,),
    "true_divide_": (4.0,),
    "pow_": (2,),
    "neg_": (),
    "negative_": (),
    "abs_": (),
    "absolute_": (),
    "exp_": (),
    "expm1_": (),
    "log_": (),
    "log1p_": (),
    "log2_": (),
    "log10_": (),
    "sqrt_": (),
    "square_": (),
    "reciprocal_": (),
    "rsqrt_": (),
    "sin_": (),
    "cos_": (),
    "tan_": (),
    "sinh_": (),
    "cosh_": (),
    "tanh_": (),
    "asin_": (),
    "arcsin_": (),
    "atan_": (),
    "asinh_": (),
    "atan2_": ("other",),
    "hypot_": ("other",),
    "copysign_": ("other",),
    "remainder_": ("other",),
    "sigmoid_": (),
    "relu_": (),
    "floor_": (),
    "ceil_": (),
    "round_": (),
    "trunc_": (),
    "sign_": (),
    "floor_divide_": ("other",),
    "erf_": (),
    "exp2_": (),
    "frac_": (),
    "deg2rad_": (),
    "rad2deg_": (),
    "sgn_": (),
    "fix_": (),
}


def _arguments(arguments, make):
    return [make(OTHER) if a == "other" else a for a in arguments]


@pytest.mark.parametrize("method", sorted(CALLS))
def test_an_in_place_method_computes_what_pytorchs_does(backend, method) -> None:
    arguments = CALLS[method]
    ours = plugrad.asarray(VALUES.copy(), device=backend)
    result = getattr(ours, method)(
        *_arguments(arguments, lambda a: plugrad.asarray(a, device=backend))
    )
    theirs = torch.tensor(VALUES.copy())
    getattr(theirs, method)(*_arguments(arguments, torch.tensor))
    assert result is ours
    assert ours.dtype is plugrad.float32
    assert ours._version == 1
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


MATRIX = np.array([[0.25, -1.5, 2.0], [3.0, 0.5, -0.75], [1.25, -2.0, 0.125]], dtype=np.float32)
FLAGS = np.array([True, False, True, False])
BITS = np.array([3, 12, -7, 1], dtype=np.int64)

# method -> (the tensor's values, arguments, keywords): in-place forms of other kinds of ops.
TYPED_CALLS = {
    "masked_fill_": (MATRIX, (MATRIX > 0.4, 0.0), {}),
    "masked_fill_ (-inf)": (MATRIX, (MATRIX < 0, float("-inf")), {}),
    "tril_": (MATRIX, (), {}),
    "tril_ (diagonal=1)": (MATRIX, (), {"diagonal": 1}),
    "triu_": (MATRIX, (-1,), {}),
    "cumsum_": (MATRIX, (0,), {}),
    "cumsum_ (dim=1)": (MATRIX, (), {"dim": 1}),
    "cumprod_": (MATRIX, (1,), {}),
    "erfc_": (MATRIX, (), {}),
    "nextafter_": (VALUES, (OTHER,), {}),
    "logical_and_": (FLAGS, (FLAGS[::-1].copy(),), {}),
    "logical_or_": (FLAGS, (FLAGS[::-1].copy(),), {}),
    "logical_xor_": (FLAGS, (FLAGS[::-1].copy(),), {}),
    "logical_not_": (FLAGS, (), {}),
    "bitwise_and_": (BITS, (BITS[::-1].copy(),), {}),
    "bitwise_or_": (BITS, (5,), {}),
    "bitwise_xor_": (BITS, (BITS[::-1].copy(),), {}),
    "bitwise_not_": (BITS, (), {}),
    "bitwise_left_shift_": (BITS, (2,), {}),
    "bitwise_right_shift_": (BITS, (np.array([1, 2, 0, 3]),), {}),
}


@pytest.mark.parametrize("case", sorted(TYPED_CALLS))
def test_in_place_forms_of_masking_triangle_cumulative_and_bit_ops_are_pytorchs(
    backend, case
) -> None:
    values, arguments, keywords = TYPED_CALLS[case]
    method = case.split()[0]
    ours = plugrad.asarray(values.copy(), device=backend)
    ours_args = [plugrad.asarray(a, device=backend) if isinstance(a, np.ndarray) else a
                 for a in arguments]  # fmt: skip
    result = getattr(ours, method)(*ours_args, **keywords)
    theirs = torch.from_numpy(values.copy())
    their_args = [torch.from_numpy(a) if isinstance(a, np.ndarray) else a for a in arguments]
    getattr(theirs, method)(*their_args, **keywords)
    assert result is ours and ours._version == 1
    assert str(ours.numpy().dtype) == str(theirs.numpy().dtype)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_masked_fill_in_place_keeps_autograds_safety() -> None:
    w = plugrad.tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = w * 1.0
    y.masked_fill_(y < 0, 0.0)
    (y * y).sum().backward()
    tw = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    ty = tw * 1.0
    ty.masked_fill_(ty < 0, 0.0)
    (ty * ty).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy())
    with pytest.raises(BackwardError, match="masked_fill_"):
        w.masked_fill_(w > 0, 0.0)
    assert w.tolist() == [1.0, -2.0, 3.0] and w._version == 0
    x = w.exp()
    z = x.sin()  # saves x
    x.masked_fill_(x > 2.0, 0.0)
    with pytest.raises(InPlaceModificationError):
        z.sum().backward()


@pytest.mark.parametrize(
    ("method", "arguments", "keywords"),
    [
        ("add_", ("other",), {"alpha": 2.0}),
        ("sub_", (1.5,), {"alpha": -3}),
        ("clamp_", (), {"min": 0.4, "max": 1.7}),
        ("clip_", (0.3,), {}),
        ("clamp_", (), {"max": 1.0}),
    ],
)
def test_keywords_of_in_place_methods_are_pytorchs(method, arguments, keywords) -> None:
    ours = plugrad.tensor(VALUES.copy())
    getattr(ours, method)(*_arguments(arguments, plugrad.tensor), **keywords)
    theirs = torch.tensor(VALUES.copy())
    getattr(theirs, method)(*_arguments(arguments, torch.tensor), **keywords)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_a_saved_value_modified_in_place_is_caught_at_backward() -> None:
    w = plugrad.tensor([1.0, 2.0], requires_grad=True)
    y = w * 2
    z = y * y  # saves y
    y.exp_()
    with pytest.raises(InPlaceModificationError):
        z.sum().backward()


def test_an_in_place_method_records_its_gradient() -> None:
    w = plugrad.tensor([0.5, 2.0], requires_grad=True)
    y = w * 1.0
    y.mul_(3).add_(w, alpha=2).exp_()
    y.sum().backward()
    tw = torch.tensor([0.5, 2.0], requires_grad=True)
    ty = tw * 1.0
    ty.mul_(3).add_(tw, alpha=2).exp_()
    ty.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-6)
    assert y.grad_fn is not None


def refused_on_a_leaf(method: str, *args: object) -> plugrad.Tensor:
    """A leaf that requires grad, which ``method`` refuses to change while recording."""
    w = plugrad.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(BackwardError, match=rf"{method}\(\) on a leaf tensor that requires grad"):
        getattr(w, method)(*args)
    assert w.tolist() == [1.0, 2.0] and w._version == 0
    return w


def test_a_leaf_that_requires_grad_changes_only_under_no_grad() -> None:
    w = refused_on_a_leaf("add_", 1.0)
    with plugrad.no_grad():
        w.sub_(plugrad.tensor([0.5, 0.5]), alpha=2)
        w.clamp_(min=0.5)
    assert w.tolist() == [0.5, 1.0] and w.is_leaf and w.requires_grad


def test_an_in_place_method_keeps_the_tensors_dtype_or_refuses() -> None:
    counts = plugrad.tensor([1, 2, 3])
    counts.mul_(2)
    assert counts.dtype is plugrad.int64 and counts.tolist() == [2, 4, 6]
    with pytest.raises(DtypeError, match="int64 tensor cannot hold"):
        counts.div_(2)
    with pytest.raises(DtypeError):
        counts.exp_()
    assert counts.tolist() == [2, 4, 6]
    halves = plugrad.tensor([1.0, 2.0], dtype=plugrad.float64)
    halves.add_(plugrad.tensor([1, 1]))
    assert halves.dtype is plugrad.float64


def test_zero_fill_and_copy_are_in_place_too() -> None:
    x = plugrad.tensor([1.0, 2.0])
    assert x.zero_() is x and x.tolist() == [0.0, 0.0]
    assert x.fill_(3).tolist() == [3.0, 3.0]
    assert x.copy_(plugrad.tensor([4.0, 5.0])).tolist() == [4.0, 5.0]
    assert x._version == 3
    # PyTorch's non_blocking= (refused as an unexpected keyword): the copy is done at once.
    assert x.copy_(plugrad.tensor([6.0, 7.0]), non_blocking=True).tolist() == [6.0, 7.0]


def test_uniform_and_normal_fill_in_place_from_plugrads_generators() -> None:
    plugrad.manual_seed(0)
    x = plugrad.empty(4000)
    assert x.uniform_(-2.0, 2.0) is x
    assert -2.0 <= float(plugrad.min(x)) and float(plugrad.max(x)) < 2.0
    x.normal_(3.0, 0.5)
    assert abs(float(plugrad.mean(x)) - 3.0) < 0.05
    assert abs(float(plugrad.std(x)) - 0.5) < 0.05
    w = plugrad.zeros(3, requires_grad=True)
    with pytest.raises(BackwardError):
        w.uniform_()
    with pytest.raises(ValueError, match="lower bound"):
        x.uniform_(1.0, 0.0)


# (dtype, method, arguments): PyTorch's in-place sampling methods, valid calls and refused ones
SAMPLING_CALLS = [
    ("int64", "bernoulli_", (0.5,)),
    ("bool", "bernoulli_", (0.5,)),
    ("float32", "bernoulli_", (1.5,)),
    ("float32", "exponential_", (2.0,)),
    ("float32", "exponential_", (0.0,)),
    ("int64", "exponential_", ()),
    ("int64", "geometric_", (0.5,)),
    ("float32", "geometric_", (1.0,)),
    ("float32", "geometric_", (0.0,)),
    ("float64", "cauchy_", (1.0, 2.0)),
    ("float32", "cauchy_", (0.0, -1.0)),
    ("float32", "log_normal_", (1.0, 0.0)),
    ("int32", "log_normal_", ()),
    ("complex64", "exponential_", ()),
    ("int32", "random_", ()),
    ("uint8", "random_", ()),
    ("bool", "random_", ()),
    ("float16", "random_", ()),
    ("float32", "random_", (5,)),
    ("float32", "random_", (3, 5)),
    ("float32", "random_", (5, 3)),
    ("uint8", "random_", (0, 300)),
    ("uint8", "random_", (-1, 3)),
    ("int8", "random_", (-128, 128)),
]


@pytest.mark.parametrize(("dtype", "method", "arguments"), SAMPLING_CALLS)
def test_sampling_methods_take_and_refuse_what_pytorch_does(dtype, method, arguments) -> None:
    if getattr(plugrad, dtype) not in plugrad.default_device().dtypes:
        pytest.skip(f"the default backend has no {dtype}")
    expected = torch.zeros(500, dtype=getattr(torch, dtype))
    x = plugrad.zeros(500, dtype=getattr(plugrad, dtype))
    try:
        getattr(expected, method)(*arguments)
    except (RuntimeError, NotImplementedError):
        with pytest.raises((ValueError, DtypeError)):
            getattr(x, method)(*arguments)
        assert not bool(plugrad.any(x != 0)), "a refused call left the tensor as it was"
        return
    assert getattr(x, method)(*arguments) is x
    assert x.dtype is getattr(plugrad, dtype)
    drawn, wanted = set(np.unique(x.numpy()).tolist()), set(np.unique(expected.numpy()).tolist())
    if method in ("bernoulli_", "random_") and len(wanted) < 10:
        assert drawn == wanted  # every value of a small range is drawn, and no other
    else:
        low, high = min(wanted), max(wanted)
        assert len(drawn) > 1 and all(np.isfinite(v) for v in drawn)
        if method in ("exponential_", "geometric_"):
            assert min(drawn) >= (1 if method == "geometric_" else 0) and low >= 0
        if method == "random_":
            kind = np.dtype(dtype)
            largest = np.iinfo(kind).max if kind.kind in "iu" else 2 ** (np.finfo(kind).nmant + 1)
            start, end = arguments if arguments else (0, largest + 1)
            assert start <= min(drawn) and max(drawn) < end
            assert min(drawn) < low + (high - low) / 4 and max(drawn) > high - (high - low) / 4


def test_sampling_methods_draw_their_distributions() -> None:
    plugrad.manual_seed(0)
    n = 200_000
    exponential = plugrad.empty(n, dtype=plugrad.float64).exponential_(2.0)
    assert abs(float(exponential.mean()) - 0.5) < 0.01
    assert abs(float(exponential.var()) - 0.25) < 0.01
    geometric = plugrad.empty(n, dtype=plugrad.int64).geometric_(0.25)
    assert int(geometric.min()) == 1
    assert abs(float(geometric.double().mean()) - 4.0) < 0.05  # mean 1 / p
    assert abs(float((geometric == 1).double().mean()) - 0.25) < 0.01
    log_normal = plugrad.empty(n, dtype=plugrad.float64).log_normal_(0.5, 0.25)
    assert abs(float(log_normal.log().mean()) - 0.5) < 0.005
    assert abs(float(log_normal.log().std()) - 0.25) < 0.005
    cauchy = plugrad.empty(n, dtype=plugrad.float64).cauchy_(1.0, 2.0)
    assert abs(float(cauchy.median()) - 1.0) < 0.05
    assert abs(float((cauchy - 1.0).abs().median()) - 2.0) < 0.05  # half the IQR is sigma
    coins = plugrad.empty(n, dtype=plugrad.int32).bernoulli_(0.3)
    assert abs(float(coins.double().mean()) - 0.3) < 0.01
    rows = plugrad.empty((n // 100, 3)).bernoulli_(plugrad.tensor([0.0, 0.5, 1.0]))
    assert rows.mean(dim=0).tolist()[0::2] == [0.0, 1.0]
    assert abs(float(rows[:, 1].mean()) - 0.5) < 0.03
    dice = plugrad.empty(n, dtype=plugrad.int64).random_(1, 7)
    counts = [int((dice == face).sum()) for face in range(1, 7)]
    assert sum(counts) == n and all(abs(c / n - 1 / 6) < 0.01 for c in counts)


def test_random_fills_the_whole_range_of_wide_dtypes() -> None:
    plugrad.manual_seed(0)
    wide = plugrad.empty(20_000, dtype=plugrad.int64).random_()
    assert int(wide.min()) >= 0 and int(wide.max()) > 2**62  # beyond a float64 draw's 2**53
    assert float(wide.double().mean()) / 2**62 == pytest.approx(1.0, abs=0.05)
    odd = plugrad.empty(20_000, dtype=plugrad.int64).random_(0, 3 * 2**60)
    assert int(odd.max()) < 3 * 2**60 and int(odd.max()) > 2 * 2**60
    floats = plugrad.empty(20_000).random_()
    assert float(floats.max()) <= 2**24 and float(floats.max()) > 2**23
    assert plugrad.empty(100).random_(7, None).min() >= 7  # from 7 up to the dtype's end


def test_sampling_methods_keep_the_in_place_rules() -> None:
    w = plugrad.zeros(3, requires_grad=True)
    for method in ("exponential_", "cauchy_", "log_normal_", "random_", "bernoulli_"):
        with pytest.raises(BackwardError):
            getattr(w, method)()
    assert w.tolist() == [0.0, 0.0, 0.0]
    y = (w * 2).exponential_()
    y.sum().backward()
    assert w.grad.tolist() == [0.0, 0.0, 0.0]  # a draw does not depend on what it replaced
    with pytest.raises(plugrad.errors.ShapeError):
        plugrad.zeros(2, 3).bernoulli_(plugrad.full((2,), 0.5))


def test_manual_seed_returns_the_default_generator() -> None:
    generator = plugrad.manual_seed(3)
    assert isinstance(generator, plugrad.Generator) and generator.initial_seed() == 3
    assert plugrad.rand(2, generator=generator).tolist() == (
        plugrad.manual_seed(3) and plugrad.rand(2).tolist()
    )


def test_the_in_place_methods_are_listed_with_their_ops() -> None:
    assert plugrad.Tensor.add_.__op__ is plugrad.add.__op__
    from plugrad import inventory

    assert inventory._method_ops()["add_"] == "add"


COMPARISONS_IN_PLACE = (
    "eq_", "ne_", "not_equal_", "lt_", "less_", "le_", "less_equal_", "gt_", "greater_",
    "ge_", "greater_equal_", "logical_and_", "logical_or_", "logical_xor_",
)  # fmt: skip
TARGETS = {
    "float32": np.array([0.5, 2.0, -1.0, 3.0], dtype=np.float32),
    "float64": np.array([0.5, 2.0, -1.0, 3.0]),
    "int64": np.array([0, 2, -1, 3], dtype=np.int64),
    "int8": np.array([0, 2, -1, 3], dtype=np.int8),
    "bool": np.array([False, True, True, False]),
}


@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize("method", COMPARISONS_IN_PLACE)
@pytest.mark.parametrize("other", ["tensor", "number"])
def test_in_place_comparisons_write_ones_and_zeros_of_the_tensors_dtype(
    backend, method, target, other
) -> None:
    ordering = method[:2] in ("lt", "le", "gt", "ge") or method.startswith(("less", "greater"))
    if backend.backend.name == "array_api_strict":
        if target == "bool" and ordering:
            pytest.skip("the standard orders real numbers only: array-api-strict refuses bools")
        if target != "bool" and method.startswith("logical"):
            pytest.skip("the standard's logical ops take bools only: array-api-strict refuses more")
    values = TARGETS[target]
    operand = np.array([0.5, 1.0, -1.0, 4.0], dtype=values.dtype) if other == "tensor" else 2
    if other == "number" and method.startswith("logical"):
        operand = True
    ours = plugrad.asarray(values.copy(), device=backend)
    result = getattr(ours, method)(
        plugrad.asarray(operand, device=backend) if other == "tensor" else operand
    )
    theirs = torch.from_numpy(values.copy())
    if other == "tensor":
        operand = torch.from_numpy(operand)
    elif method.startswith("logical"):  # PyTorch's logical methods take tensors only
        operand = torch.tensor(operand)
    getattr(theirs, method)(operand)
    assert result is ours and ours._version == 1
    assert str(ours.numpy().dtype) == str(theirs.numpy().dtype) == target
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_logical_not_in_place_writes_ones_and_zeros_of_the_tensors_dtype(backend) -> None:
    for values in TARGETS.values():
        if backend.backend.name == "array_api_strict" and values.dtype != bool:
            continue  # the standard's logical_not takes bools only: array-api-strict refuses more
        ours = plugrad.asarray(values.copy(), device=backend)
        theirs = torch.from_numpy(values.copy())
        ours.logical_not_()
        theirs.logical_not_()
        assert str(ours.numpy().dtype) == str(theirs.numpy().dtype)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_an_in_place_comparison_gives_a_zero_gradient_as_in_pytorch() -> None:
    def run(lib):
        w = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        limit = lib.tensor([2.5, 2.5, 2.5], requires_grad=True)
        y = w * 2
        y.lt_(limit)  # y is 1.0 where 2w < 2.5: no gradient flows through it
        assert y.requires_grad and y.grad_fn is not None
        (y * w).sum().backward()
        return y, w.grad, limit.grad

    ours, theirs = run(plugrad), run(torch)
    for mine, torchs in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(mine.detach().numpy(), torchs.detach().numpy())


def test_an_in_place_comparison_links_a_tensor_that_needs_no_grad_to_one_that_does() -> None:
    limit = plugrad.tensor([2.5, 2.5], requires_grad=True)
    x = plugrad.tensor([1.0, 3.0])
    x.ge_(limit)
    assert x.requires_grad and x.tolist() == [0.0, 1.0]
    x.sum().backward()
    assert limit.grad.tolist() == [0.0, 0.0]
    counts = plugrad.tensor([1, 3])
    counts.ge_(limit)  # an integer tensor never requires grad
    assert counts.tolist() == [0, 1] and not counts.requires_grad


def test_an_in_place_comparison_keeps_autograds_safety() -> None:
    w = refused_on_a_leaf("gt_", 1.5)
    with plugrad.no_grad():
        flags = w.clone()
        flags.gt_(1.5)
    assert flags.tolist() == [0.0, 1.0] and not flags.requires_grad
    y = w.exp()  # saves its output y
    y.gt_(3.0)
    with pytest.raises(InPlaceModificationError):
        y.sum().backward()
    z = w * 1.0
    with pytest.raises(Exception, match="shape"):
        z.lt_(plugrad.ones((2, 2)))
    assert z.tolist() == [1.0, 2.0] and z._version == 0


CUBE = np.arange(6, dtype=np.float32).reshape(2, 1, 3)
PLANE = np.arange(6, dtype=np.float32).reshape(2, 3)
# case -> (the tensor's values, method, arguments, keywords): PyTorch's in-place shape changes.
SHAPE_CHANGES = {
    "squeeze_": (CUBE, "squeeze_", (), {}),
    "squeeze_ (1)": (CUBE, "squeeze_", (1,), {}),
    "squeeze_ (dim=-2)": (CUBE, "squeeze_", (), {"dim": -2}),
    "squeeze_ ((0, 1))": (CUBE, "squeeze_", ((0, 1),), {}),
    "squeeze_ (an axis of size 2)": (CUBE, "squeeze_", (0,), {}),
    "unsqueeze_ (0)": (PLANE, "unsqueeze_", (0,), {}),
    "unsqueeze_ (-1)": (PLANE, "unsqueeze_", (-1,), {}),
    "t_": (PLANE, "t_", (), {}),
    "t_ (1-D)": (PLANE[0], "t_", (), {}),
    "transpose_": (CUBE, "transpose_", (0, 2), {}),
    "transpose_ (negative)": (CUBE, "transpose_", (-1, 0), {}),
    "swapaxes_": (CUBE, "swapaxes_", (1, 2), {}),
    "swapdims_": (PLANE, "swapdims_", (0, 1), {}),
    "resize_ (as many)": (PLANE, "resize_", (3, 2), {}),
    "resize_ (fewer)": (PLANE, "resize_", ((2, 2),), {}),
    "resize_as_": (PLANE, "resize_as_", ("like (3, 2)",), {}),
}


@pytest.mark.parametrize("case", sorted(SHAPE_CHANGES))
def test_in_place_shape_changes_are_pytorchs(backend, case) -> None:
    values, method, arguments, keywords = SHAPE_CHANGES[case]
    ours = plugrad.asarray(values.copy(), device=backend)
    theirs = torch.from_numpy(values.copy())
    like = {"ours": plugrad.ones((3, 2), device=backend), "theirs": torch.ones(3, 2)}
    result = getattr(ours, method)(
        *(like["ours"] if a == "like (3, 2)" else a for a in arguments), **keywords
    )
    getattr(theirs, method)(
        *(like["theirs"] if a == "like (3, 2)" else a for a in arguments), **keywords
    )
    assert result is ours and ours._version == theirs._version == 1
    assert ours.shape == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_resize_to_more_elements_keeps_the_old_ones_first_and_adds_zeros() -> None:
    x = plugrad.arange(4.0)
    x.resize_(2, 3)
    assert x.tolist() == [[0.0, 1.0, 2.0], [3.0, 0.0, 0.0]]  # PyTorch: the last two unset
    assert x.resize_(0).shape == (0,)
    with pytest.raises(plugrad.errors.ShapeError, match="non-negative"):
        x.resize_(-1)


def test_in_place_shape_changes_refuse_what_pytorchs_refuse() -> None:
    with pytest.raises(plugrad.errors.ShapeError, match="at most 2 dimensions"):
        plugrad.ones((2, 3, 4)).t_()
    with pytest.raises(plugrad.errors.ShapeError, match="out of range"):
        plugrad.ones((2, 3)).transpose_(0, 2)
    w = plugrad.ones((2, 1), requires_grad=True)
    for method, arguments in (("squeeze_", ()), ("unsqueeze_", (0,)), ("t_", ())):
        with pytest.raises(BackwardError, match=f"{method}\\(\\) on a leaf tensor"):
            getattr(w, method)(*arguments)
    y = w * 1.0
    with pytest.raises(BackwardError, match="resize_\\(\\) on a tensor that requires grad"):
        y.resize_(2)
    assert w.shape == y.shape == (2, 1) and w._version == y._version == 0
    with plugrad.no_grad():  # as in PyTorch, a leaf may change shape under no_grad
        w.squeeze_()
    assert w.shape == (2,) and w.is_leaf and w.requires_grad


def test_an_in_place_shape_change_is_recorded_as_pytorchs_is() -> None:
    def run(lib):
        w = lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
        y = w * w
        y.t_().unsqueeze_(0)
        y.squeeze_(0)
        y.transpose_(0, 1)
        (y * lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).sum().backward()
        return y, w.grad

    (ours, our_grad), (theirs, their_grad) = run(plugrad), run(torch)
    assert ours.shape == tuple(theirs.shape) and ours._version == theirs._version == 4
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())
    np.testing.assert_array_equal(our_grad.numpy(), their_grad.numpy())


def test_an_in_place_shape_change_is_seen_by_a_backward_pass_that_saved_the_tensor() -> None:
    w = plugrad.tensor([[1.0, 2.0]], requires_grad=True)
    y = w * 2
    z = y * y  # saves y
    y.squeeze_()
    with pytest.raises(InPlaceModificationError):
        z.sum().backward()
    y = w * 2
    z = y.exp()  # saves its own output, not y
    y.squeeze_()
    z.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * np.exp([[2.0, 4.0]]), rtol=1e-6)


def test_an_in_place_shape_change_leaves_the_memory_and_other_views_alone() -> None:
    base = plugrad.asarray(np.arange(6.0).reshape(2, 3))
    row = base[0]
    row.unsqueeze_(0)
    assert row.shape == (1, 3) and base.shape == (2, 3)
    base[0, 1] = -1.0  # the row still looks at the base's memory
    assert row.tolist() == [[0.0, -1.0, 2.0]]
    shared = np.arange(4.0)
    x = plugrad.from_numpy(shared)
    x.resize_(2, 2)
    shared[0] = 9.0
    assert x.tolist() == [[9.0, 1.0], [2.0, 3.0]]


@pytest.mark.parametrize(
    "change", [lambda y: y.unsqueeze_(0), lambda y: y.t_(), lambda y: y.squeeze_()]
)
def test_a_view_taken_before_an_in_place_shape_change_never_gives_wrong_gradients(
    change,
) -> None:
    # Its key describes the old shape: y[0].mul_(5) after y.unsqueeze_(0) was taken as a
    # write into y[0] of the new shape, all of y (x.grad [[10, 10], [0, 0]]; PyTorch's
    # [[5, 5], [1, 1]]). The values are right; backward through them raises instead.
    if plugrad.default_device().views_are_copies:
        pytest.skip("where views are copies, the shape change itself is refused")
    x = plugrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x * 1
    row = y[0]
    change(y)
    row.mul_(5)
    assert sorted(y.detach().reshape(-1).tolist()) == [3.0, 4.0, 5.0, 10.0]
    with pytest.raises(InPlaceModificationError, match="shape change in place"):
        y.sum().backward()
    assert x.grad is None
    # A view taken after the change is written as it is now.
    z = x * 1
    z.t_()
    z[0].mul_(5)
    z.sum().backward()
    assert x.grad.tolist() == [[5.0, 1.0], [5.0, 1.0]]


@pytest.mark.parametrize("method", ["arccos_", "exp_", "neg_", "clamp_"])
def test_an_in_place_method_refuses_out_and_leaves_both_tensors_alone(method) -> None:
    x = plugrad.tensor([0.5, 0.25])
    target = plugrad.zeros(2)
    with pytest.raises(plugrad.errors.ArgumentError, match=f"{method}\\(\\) takes no out="):
        getattr(x, method)(out=target)
    assert x.tolist() == [0.5, 0.25] and target.tolist() == [0.0, 0.0]
    assert x._version == 0 and target._version == 0
    assert "out" not in inspect.signature(getattr(plugrad.Tensor, method)).parameters


@pytest.mark.parametrize("backend", plugrad.testing.backends_under_test())
def test_an_expansion_to_the_tensors_own_shape_is_a_view_in_place_ops_write(backend) -> None:
    # PyTorch's expand to the same shape keeps the strides: a plain view. One that repeats
    # an element is refused, as there.
    with plugrad.use_backend(backend):
        x = plugrad.zeros(2, 3)
        x.expand(2, 3).add_(1)
        x.expand(-1, 3).mul_(3)
        x.expand_as(x).sub_(1)
        assert x.tolist() == [[2.0] * 3] * 2
        row = plugrad.zeros(1, 3)
        with pytest.raises(plugrad.errors.PlugradError, match="clone"):
            row.expand(2, 3).add_(1)
        assert row.tolist() == [[0.0] * 3]
    leaf = plugrad.asarray([1.0, 2.0, 3.0], requires_grad=True)
    y = leaf * 1
    y.expand(3).mul_(3)
    y.sum().backward()
    assert leaf.grad.tolist() == [3.0, 3.0, 3.0]


def test_pytorchs_deprecated_leading_number_forms_of_in_place_methods_are_read_as_there() -> None:
    # p.add_(-lr, grad), v.addcmul_(1 - beta, g, g), p.addcdiv_(-step, m, d): older optimizer
    # code, which PyTorch still runs (warning); any other extra argument is refused.
    torch = pytest.importorskip("torch")
    calls = [
        ("add_", (-0.1,)), ("sub_", (0.1,)), ("addcmul_", (0.5, "g")), ("addcdiv_", (-0.5, "g")),
    ]  # fmt: skip
    for recording in (False, True):
        for method, (number, *more) in calls:
            ours = plugrad.tensor([1.0, 2.0], requires_grad=recording) * 1
            theirs = torch.tensor([1.0, 2.0], requires_grad=recording) * 1
            g, tg = plugrad.tensor([2.0, 4.0]), torch.tensor([2.0, 4.0])
            with pytest.warns(UserWarning, match=r"deprecated form of x\.\w+_\(tensor"):
                getattr(ours, method)(number, g, *[g for _ in more])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                getattr(theirs, method)(number, tg, *[tg for _ in more])
            np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy())
    x, g = plugrad.tensor([1.0, 2.0]), plugrad.tensor([1.0, 1.0])
    for call in (
        lambda: x.add_(g, 2), lambda: x.mul_(2.0, g), lambda: x.div_(g, "floor"),
        lambda: x.pow_(2, 3), lambda: x.add(-0.1, g),
    ):  # fmt: skip
        with pytest.raises(TypeError, match="positional argument"):
            call()
    assert x.tolist() == [1.0, 2.0]


IN_PLACE_OPERATORS = {
    "//=": (lambda x, y: x.__ifloordiv__(y), [5, 6, -7], 2),
    "//= float": (lambda x, y: x.__ifloordiv__(y), [5.0, 6.0, -7.0], 2.5),
    "%=": (lambda x, y: x.__imod__(y), [5, 6, -7], 4),
    "%= float": (lambda x, y: x.__imod__(y), [5.0, 6.0, -7.0], -4.0),
    "&=": (lambda x, y: x.__iand__(y), [True, True, False], [True, False, True]),
    "|=": (lambda x, y: x.__ior__(y), [True, False, False], [False, True, False]),
    "^=": (lambda x, y: x.__ixor__(y), [3, 5, 0], 6),
    "<<=": (lambda x, y: x.__ilshift__(y), [1, 2, 3], 2),
    ">>=": (lambda x, y: x.__irshift__(y), [8, 9, -8], 1),
}


@pytest.mark.parametrize("name", list(IN_PLACE_OPERATORS))
def test_in_place_operators_write_through_aliases_and_views(name):
    # x //= 2 rebound the name to a new tensor: aliases and views kept the old values.
    write, data, other = IN_PLACE_OPERATORS[name]
    results = []
    for lib in (plugrad, torch):
        base = lib.tensor([data, data])
        alias, row = base, base[1]
        operand = lib.tensor(other) if isinstance(other, list) else other
        returned = write(row, operand)
        assert returned is row and alias is base
        results.append((base.tolist(), str(base.dtype).split(".")[-1]))
    assert results[0] == results[1]


def test_in_place_operators_refuse_a_result_the_tensor_cannot_hold():
    x = plugrad.tensor([5, 6])
    with pytest.raises(DtypeError, match="x //= y"):
        x //= 2.5
    assert x.tolist() == [5, 6]


def test_an_unsigned_tensor_updated_with_signed_integers_wraps_as_in_pytorch():
    # uint8 += int64 was refused while int8 += uint8 was taken: both wrap into the tensor.
    results = []
    for lib in (plugrad, torch):
        x = lib.tensor([1, 2], dtype=lib.uint8)
        x += lib.tensor([300, 1])
        y = lib.tensor([1, 2], dtype=lib.uint8)
        y -= lib.tensor([3, 1], dtype=lib.int8)
        results.append((x.tolist(), y.tolist(), str(x.dtype).split(".")[-1]))
    assert results[0] == results[1]


def test_an_expansion_by_new_axes_of_length_one_is_a_view_in_place_ops_write() -> None:
    # x.expand(1, 3) repeats no element, and PyTorch writes through it; it was read-only.
    x = plugrad.tensor([1.0, 2.0, 3.0])
    x.expand(1, 3).add_(1.0)
    x.expand(1, 1, -1).mul_(2.0)
    assert x.tolist() == [4.0, 6.0, 8.0]
    leaf = plugrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = leaf * 1
    y.expand_as(plugrad.ones((1, 3))).mul_(2.0)
    y.sum().backward()
    assert leaf.grad.tolist() == [2.0, 2.0, 2.0]
    refused = (plugrad.errors.ReadOnlyViewError, plugrad.errors.ViewCopyError)
    with pytest.raises(refused):
        x.expand(2, 3).add_(1.0)  # repeats: refused, as PyTorch refuses it


def test_an_in_place_op_keeps_the_tensors_dtype_while_gradients_are_recorded() -> None:
    # a += float64 tensor (a float32 in the graph) was refused; PyTorch keeps float32 and
    # differentiates through the cast, each gradient in its input's dtype.
    torch = pytest.importorskip("torch")
    wide = plugrad.float64 if plugrad.float64 in plugrad.default_device().dtypes else None
    if wide is None:
        pytest.skip("the default backend has no float64")
    x = plugrad.ones(2, requires_grad=True)
    b = plugrad.tensor([1.0, 2.0], dtype=wide, requires_grad=True)
    a = x * 1
    a += b
    assert a.dtype == plugrad.float32
    (a * a).sum().backward()
    tx = torch.ones(2, requires_grad=True)
    tb = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    ta = tx * 1
    ta += tb
    (ta * ta).sum().backward()
    assert x.grad.tolist() == tx.grad.tolist() and b.grad.tolist() == tb.grad.tolist()
    assert b.grad.dtype == wide
    with pytest.raises(DtypeError, match="cannot hold"):
        c = plugrad.ones(2, requires_grad=True) * 1
        c += plugrad.tensor([1j, 2j])


def test_uniform_refuses_a_range_wider_than_the_dtype_holds() -> None:
    # (high - low) overflowed: every draw became the largest value under high.
    for dtype, low, high in [(plugrad.float32, -2e38, 2e38), (plugrad.float16, -4e4, 4e4)]:
        try:
            tensor = plugrad.zeros(10, dtype=dtype)
        except plugrad.errors.DtypeError:
            continue  # (a backend without float16)
        with pytest.raises(ValueError, match="wider than the largest"):
            tensor.uniform_(low, high)
    drawn = plugrad.zeros(1000).uniform_(-1e38, 1e38)
    assert len(set(drawn.tolist())) > 900


def test_float16_exponential_draws_reach_past_its_largest_uniform() -> None:
    # Uniforms drawn in float16 end at 1 - 2**-11: no exponential draw was above 7.6
    # (P(X > 8) = 3.4e-4; PyTorch draws in float32 for float16 too).
    if plugrad.float16 not in plugrad.default_device().dtypes:
        pytest.skip("the backend has no float16")
    _ = plugrad.manual_seed(0)
    drawn = plugrad.empty(200_000, dtype=plugrad.float16).exponential_(1.0)
    assert drawn.dtype == plugrad.float16
    assert float(drawn.max()) > 9.0


def test_random_over_more_than_half_the_int64_range() -> None:
    # random_(-2, 2**63 - 1) raised ScalarRangeError (its offsets overflowed int64).
    _ = plugrad.manual_seed(0)
    drawn = plugrad.zeros(10_000, dtype=plugrad.int64).random_(-(2**62), 2**63 - 1)
    assert drawn.min().item() >= -(2**62) and drawn.max().item() < 2**63 - 1
    assert 0.15 < float((drawn < 0).float().mean()) < 0.5  # a third of the range is negative


PRODUCTS_IN_PLACE = {
    "addmm_": [(2, 3), (2, 4), (4, 3)],
    "addmv_": [(2,), (2, 4), (4,)],
    "baddbmm_": [(2, 2, 3), (2, 2, 4), (2, 4, 3)],
    "addbmm_": [(2, 3), (2, 2, 4), (2, 4, 3)],
    "addr_": [(2, 3), (2,), (3,)],
}


@pytest.mark.parametrize("keywords", [{}, {"beta": 0.5, "alpha": 2.0}, {"beta": 0}])
@pytest.mark.parametrize("method", list(PRODUCTS_IN_PLACE))
def test_matrix_products_in_place_as_pytorchs(method: str, keywords) -> None:
    rng = np.random.default_rng(5)
    values = [rng.normal(size=shape) for shape in PRODUCTS_IN_PLACE[method]]
    results = []
    for lib in (plugrad, torch):
        leaves = [lib.tensor(v, dtype=lib.float64, requires_grad=True) for v in values]
        target = leaves[0] * 1.0
        assert getattr(target, method)(*leaves[1:], **keywords) is target
        weights = lib.arange(target.numel(), dtype=lib.float64).reshape(target.shape)
        (target * weights).sum().backward()
        results.append([target.detach().numpy(), *(leaf.grad.numpy() for leaf in leaves)])
        assert target._version == 1
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


@pytest.mark.parametrize("method", list(PRODUCTS_IN_PLACE))
def test_a_matrix_product_in_place_refuses_a_float_result_in_an_int_tensor(method: str) -> None:
    shapes = PRODUCTS_IN_PLACE[method]
    target = plugrad.zeros(shapes[0], dtype=plugrad.int64)
    with pytest.raises(DtypeError, match=method):
        getattr(target, method)(*(plugrad.ones(shape) for shape in shapes[1:]))
    assert target._version == 0 and not target.any()


def test_uniform_of_an_integer_tensor_says_what_it_draws() -> None:
    # The error was finfo()'s ("finfo() needs a floating-point dtype").
    with pytest.raises(plugrad.errors.DtypeError, match=r"uniform_\(\) draws floating-point"):
        plugrad.zeros(3, dtype=plugrad.int64).uniform_()


@pytest.mark.parametrize(
    ("method", "call", "error", "inner"),
    [
        ("clamp_", lambda x: x.clamp_(plugrad.ones(2)), plugrad.errors.ShapeError, "clip"),
        ("addmm_", lambda x: plugrad.zeros(3, 3).addmm_(plugrad.ones(3, 2), plugrad.ones(3, 2)),
         plugrad.errors.ShapeError, "matmul"),
        ("unsqueeze_", lambda x: x.unsqueeze_(5), plugrad.errors.AxisError, "expand_dims"),
        ("masked_fill_", lambda x: x.masked_fill_(plugrad.zeros(2, dtype=plugrad.bool), 1.0),
         plugrad.errors.ShapeError, "where"),
        ("index_copy_", lambda x: x.index_copy_(0, plugrad.tensor([5]), plugrad.ones(1)),
         plugrad.errors.IndexOutOfRangeError, "scatter_"),
        ("index_fill_", lambda x: x.index_fill_(0, plugrad.tensor([5]), 1.0),
         plugrad.errors.IndexOutOfRangeError, "scatter_"),
        ("index_add_", lambda x: x.index_add_(0, plugrad.tensor([5]), plugrad.ones(1)),
         plugrad.errors.IndexOutOfRangeError, "scatter_add_"),
        ("index_copy", lambda x: x.index_copy(0, plugrad.tensor([5]), plugrad.ones(1)),
         plugrad.errors.IndexOutOfRangeError, "scatter"),
        ("add_", lambda x: x.add_(plugrad.ones(2)), plugrad.errors.ShapeError, None),
    ],
)  # fmt: skip
def test_an_in_place_methods_error_names_the_method_called(method, call, error, inner) -> None:
    # They named only the op they are made of (clip() for clamp_, scatter() for index_copy_),
    # which the caller never called; the error's class is the op's, as before.
    x = plugrad.zeros(3)
    named = f"{method}() (in {inner}()): " if inner else f"{method}(): "
    with pytest.raises(error) as raised:
        call(x)
    assert str(raised.value).startswith(named), str(raised.value)
    assert x.tolist() == [0.0, 0.0, 0.0] and x._version == 0
