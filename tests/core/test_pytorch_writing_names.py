"""PyTorch's index_put, masked_scatter, put_, addr, multi_dot and the argument forms of round,
tile, tensordot, searchsorted, eye and clamp, against ``torch`` (values, dtypes, gradients)."""

from __future__ import annotations

import numpy as np
import pytest

import plugrad
from plugrad.errors import ArgumentError, AxisError, DtypeError, IndexOutOfRangeError, ShapeError
from plugrad.testing import backends_under_test

torch = pytest.importorskip("torch")

X = np.random.default_rng(0).random((3, 4))
WEIGHTS = np.linspace(0.5, 1.5, 12).reshape(3, 4)


def _leaves(*arrays: np.ndarray):
    ours = [plugrad.asarray(a.copy(), requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a.copy(), requires_grad=True) for a in arrays]
    return ours, theirs


def _backward(ours, theirs) -> None:
    (ours * plugrad.asarray(WEIGHTS)).sum().backward()
    (theirs * torch.tensor(WEIGHTS)).sum().backward()


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put(accumulate: bool):
    rows = np.array([0, 2, 0, -1])
    values = np.arange(16.0).reshape(4, 4)
    (x, v), (tx, tv) = _leaves(X, values)
    ours = x.index_put((plugrad.asarray(rows),), v, accumulate=accumulate)
    theirs = tx.index_put((torch.tensor(rows),), tv, accumulate=accumulate)
    if accumulate:  # without it, which of the repeated rows wins is unspecified (both libraries)
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy())
    _backward(ours, theirs)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
    if accumulate:
        np.testing.assert_allclose(v.grad.numpy(), tv.grad.numpy())


def test_index_put_with_an_index_per_axis_and_in_place():
    key = (plugrad.tensor([0, 0, 1]), plugrad.tensor([1, 1, -1]))
    theirs = torch.zeros(3, 4).index_put(
        (torch.tensor([0, 0, 1]), torch.tensor([1, 1, -1])), torch.tensor(1.0), accumulate=True
    )
    assert plugrad.zeros(3, 4).index_put(key, plugrad.tensor(1.0), True).tolist() == (
        theirs.tolist()
    )
    y = plugrad.zeros(3)
    assert y.index_put_((plugrad.tensor([1, 1]),), plugrad.tensor([2.0, 3.0]), True) is y
    assert y.tolist() == [0.0, 5.0, 0.0]


def test_index_put_refuses_bad_indices():
    with pytest.raises(TypeError, match="tuple of Tensors"):
        plugrad.zeros(3).index_put(plugrad.tensor([1]), plugrad.tensor(1.0))
    with pytest.raises(IndexOutOfRangeError, match="length 3"):
        plugrad.zeros(3).index_put((plugrad.tensor([5]),), plugrad.tensor(1.0), accumulate=True)
    with pytest.raises(DtypeError, match="integer tensors"):
        plugrad.zeros(3).index_put((plugrad.tensor([0.5]),), plugrad.tensor(1.0), accumulate=True)
    with pytest.raises(DtypeError, match="for a mask"):  # (a ShapeError, as if of a shape)
        plugrad.zeros(3).put_(plugrad.tensor([True, False, True]), plugrad.ones(2))
    # In place too (it truncated 1.5 and 2.7 into the int64 tensor), as PyTorch refuses.
    for accumulate in (False, True):
        x = plugrad.zeros(3, dtype=plugrad.int64)
        with pytest.raises(DtypeError, match="same dtype"):
            x.index_put_((plugrad.tensor([0, 1]),), plugrad.tensor([1.5, 2.7]), accumulate)
        assert x.tolist() == [0, 0, 0]
        with pytest.raises(RuntimeError, match="dtypes match"):
            torch.zeros(3, dtype=torch.int64).index_put_(
                (torch.tensor([0, 1]),), torch.tensor([1.5, 2.7]), accumulate
            )


def test_masked_scatter():
    mask = np.array([True, False, True, True])
    source = np.arange(1.0, 13.0).reshape(3, 4)
    (x, s), (tx, ts) = _leaves(X, source)
    ours = x.masked_scatter(plugrad.asarray(mask), s)
    theirs = tx.masked_scatter(torch.tensor(mask), ts)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy())
    _backward(ours, theirs)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
    np.testing.assert_allclose(s.grad.numpy(), ts.grad.numpy())
    z = plugrad.zeros(2, 3)
    z.masked_scatter_(
        plugrad.tensor([[True, False, True], [False, False, True]]), plugrad.arange(1.0, 5.0)
    )
    assert z.tolist() == [[1.0, 0.0, 2.0], [0.0, 0.0, 3.0]]
    with pytest.raises(ShapeError, match="selects 3 elements but source has only 1"):
        plugrad.zeros(3).masked_scatter(plugrad.tensor([True, True, True]), plugrad.tensor([1.0]))


@pytest.mark.parametrize("accumulate", [False, True])
def test_put(accumulate: bool):
    index, source = [0, -1, 4, 1], [1.0, 2.0, 3.0, 4.0]
    ours, theirs = plugrad.zeros(2, 3), torch.zeros(2, 3)
    assert ours.put_(plugrad.tensor(index), plugrad.tensor(source), accumulate) is ours
    theirs.put_(torch.tensor(index), torch.tensor(source), accumulate)
    assert ours.tolist() == theirs.tolist()
    copy = plugrad.zeros(2, 2).put(plugrad.tensor([3, 3]), plugrad.tensor([5.0, 1.0]), True)
    assert copy.tolist() == [[0.0, 0.0], [0.0, 6.0]]
    # The function form, differentiable in both tensors, as torch.put.
    x = plugrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    s = plugrad.tensor([5.0, 6.0], requires_grad=True)
    tx = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    ts = torch.tensor([5.0, 6.0], requires_grad=True)
    out = plugrad.put(x, plugrad.tensor(index[:2]), s, accumulate)
    expected = torch.put(tx, torch.tensor(index[:2]), ts, accumulate)
    assert out.tolist() == expected.tolist()
    weights = [[1.0, 2.0], [3.0, 4.0]]
    (out * plugrad.tensor(weights)).sum().backward()
    (expected * torch.tensor(weights)).sum().backward()
    assert x.grad.tolist() == tx.grad.tolist() and s.grad.tolist() == ts.grad.tolist()


def test_index_fill_of_a_0d_tensor_counts_a_negative_index_from_the_end():
    ours = plugrad.tensor(1.0).index_fill(0, plugrad.tensor([-1]), 3.0)
    assert ours.tolist() == torch.tensor(1.0).index_fill(0, torch.tensor([-1]), 3.0).tolist()
    with pytest.raises(IndexOutOfRangeError):
        plugrad.tensor(1.0).index_fill(0, plugrad.tensor([-2]), 3.0)


@pytest.mark.parametrize(("beta", "alpha"), [(1, 1), (2, 0.5), (0, 3)])
def test_addr(beta, alpha):
    base = np.full((2, 3), np.nan) if beta == 0 else np.ones((2, 3))  # beta 0 ignores NaN
    ours = plugrad.addr(plugrad.asarray(base), plugrad.tensor([1.0, 2.0]),
                        plugrad.tensor([3.0, 4.0, 5.0]), beta=beta, alpha=alpha)  # fmt: skip
    theirs = torch.addr(torch.tensor(base), torch.tensor([1.0, 2.0]),
                        torch.tensor([3.0, 4.0, 5.0]), beta=beta, alpha=alpha)  # fmt: skip
    np.testing.assert_allclose(ours.numpy(), theirs.numpy())
    assert plugrad.ones(2, 2).addr(plugrad.ones(2), plugrad.ones(2)).tolist() == [[2.0] * 2] * 2


def test_multi_dot():
    rng = np.random.default_rng(1)
    matrices = [rng.random((3, 4)), rng.random((4, 5)), rng.random((5, 2))]
    ours = plugrad.linalg.multi_dot([plugrad.asarray(m) for m in matrices])
    theirs = torch.linalg.multi_dot([torch.tensor(m) for m in matrices])
    np.testing.assert_allclose(ours.numpy(), theirs.numpy())
    vectors = [plugrad.ones(2), plugrad.ones(2, 3), plugrad.ones(3)]
    assert plugrad.linalg.multi_dot(vectors).item() == 6.0
    with pytest.raises(ShapeError, match="1-D or 2-D"):
        plugrad.linalg.multi_dot([plugrad.ones(2, 2), plugrad.ones(2), plugrad.ones(2, 2)])


@pytest.mark.parametrize("decimals", [0, 1, 2, -1])
def test_round_to_decimals(decimals: int):
    values = np.array([[1.25, 2.55], [3.75, -4.125], [15.0, 0.05]], dtype=np.float32)
    theirs = torch.round(torch.tensor(values), decimals=decimals).numpy()
    assert plugrad.round(plugrad.asarray(values), decimals=decimals).numpy().tolist() == (
        theirs.tolist()
    )
    assert plugrad.asarray(values).round(decimals=decimals).numpy().tolist() == theirs.tolist()
    with pytest.raises(ArgumentError, match="decimals must be an int"):
        plugrad.round(plugrad.asarray(values), decimals=1.5)


@pytest.mark.parametrize("decimals", [309, 400, -400])
def test_round_to_decimals_past_float64s_range_gives_the_rounded_values(decimals: int):
    # 10.0 ** 400 raised a raw OverflowError; then it gave NaN, PyTorch's result, which is
    # no rounding of 1.25: to 309 places it is 1.25 itself, to -400 places 0.
    values = [1.25, 0.0]
    theirs = torch.round(torch.tensor(values), decimals=decimals).tolist()
    ours = plugrad.round(plugrad.tensor(values), decimals=decimals).tolist()
    assert np.isnan(theirs).all()
    assert ours == (values if decimals > 0 else [0.0, 0.0])


@pytest.mark.parametrize("decimals", [1, 2, -1])
def test_round_to_decimals_of_complex_rounds_both_parts(decimals: int):
    # decimals= was ignored for complex tensors (1.25+2.35j gave 1+2j); PyTorch refuses
    # them, NumPy rounds both parts, as plugrad now does.
    values = np.array([1.25 + 2.35j, -0.051 - 7.449j, 125.0 + 2351.0j])
    ours = plugrad.asarray(values).round(decimals=decimals).numpy()
    np.testing.assert_allclose(ours, np.round(values, decimals), rtol=1e-15)


def test_alpha_takes_the_kind_of_the_result_as_pytorchs():
    # A bool sum stays bool (it became int64 [3, 2]); a float alpha is refused only where
    # both terms are integers (it was refused for int + float tensor too).
    if plugrad.default_device().backend.name != "array_api_strict":  # (adds no bools)
        flags = plugrad.tensor([True, False])
        assert flags.add(plugrad.tensor([True, True]), alpha=2).tolist() == [True, True]
        assert flags.add(plugrad.tensor([True, True]), alpha=0).tolist() == [True, False]
        flags.add_(plugrad.tensor([True, True]), alpha=2)
        assert flags.dtype == plugrad.bool and flags.tolist() == [True, True]
    counts = plugrad.tensor([1, 2])
    assert counts.add(plugrad.tensor([1.0, 1.0]), alpha=0.5).tolist() == [1.5, 2.5]
    assert counts.add(2.0, alpha=0.5).tolist() == [2.0, 3.0]
    assert counts.sub(plugrad.tensor([1, 1]), alpha=3).tolist() == [-2, -1]
    with pytest.raises(DtypeError, match="both terms are integers"):
        counts.add(plugrad.tensor([1, 1]), alpha=0.5)
    with pytest.raises(DtypeError, match="complex"):
        plugrad.tensor([1.0]).add(plugrad.tensor([1.0]), alpha=1j)


def _float16_sum_with_alpha(m):
    return m.add(m.zeros(1), m.tensor([60000.0], dtype=m.float16), alpha=2)


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.add(m.zeros(2, dtype=m.int16), m.tensor([100, -100], dtype=m.int8), alpha=2),
        lambda m: m.zeros(2, dtype=m.int16).add_(m.tensor([100, -100], dtype=m.int8), alpha=2),
        lambda m: m.sub(m.zeros(2, dtype=m.int32), m.tensor([100, 7], dtype=m.int8), alpha=3),
        _float16_sum_with_alpha,
        lambda m: m.add(2.5, m.tensor([200], dtype=m.uint8), alpha=3),
        lambda m: m.add(m.tensor([1, 2], dtype=m.int8), m.tensor([True, False]), alpha=2),
    ],
)
def test_alpha_multiplies_in_the_dtype_of_the_result(call):
    # other * alpha was computed in other's own dtype first: int8 100 * 2 wrapped to -56,
    # float16 60000 * 2 became inf, and a bool times 2 made an int8 sum int64.
    if plugrad.default_device().backend.name == "array_api_strict":
        pytest.skip("array_api_strict mixes no kinds and adds no bools")
    if call is _float16_sum_with_alpha and plugrad.float16 not in plugrad.default_device().dtypes:
        pytest.skip("the default backend has no float16")
    ours, theirs = call(plugrad), call(torch)
    assert ours.tolist() == theirs.tolist()
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.sub(m.tensor([1, 2], dtype=m.int8), m.tensor([True, False]), alpha=2),
        lambda m: m.tensor([1, 2]) - True,
        lambda m: True - m.tensor([1, 2]),
        lambda m: m.tensor([1, 2]).sub_(True),
    ],
)
def test_a_bool_in_a_subtraction_is_refused_with_alpha_and_as_a_python_bool(call):
    with pytest.raises(RuntimeError):
        call(torch)
    with pytest.raises(DtypeError, match="subtraction"):
        call(plugrad)


@pytest.mark.parametrize("mode", ["trunc", "floor"])
def test_rounded_division_by_booleans_divides_integers(mode):
    # A bool divisor took the float path: 7 / False gave -inf in float32 without a word.
    if plugrad.default_device().backend.name == "array_api_strict":
        pytest.skip("array_api_strict divides no bools")
    for m in (plugrad, torch):
        ints = m.tensor([7, -7], dtype=m.int32)
        assert m.div(ints, m.tensor([True, True]), rounding_mode=mode).tolist() == [7, -7]
        assert m.div(ints, m.tensor([True, True]), rounding_mode=mode).dtype == m.int32
        assert m.div(m.tensor([True, False]), 2, rounding_mode=mode).dtype == m.int64
    with pytest.raises(ZeroDivisionError, match="integer division by zero"):
        plugrad.div(plugrad.tensor([7, -7]), plugrad.tensor([True, False]), rounding_mode=mode)
    with pytest.raises(DtypeError, match="two booleans"):
        plugrad.div(plugrad.tensor([True]), plugrad.tensor([True]), rounding_mode=mode)


def test_shifts_of_booleans_are_refused_as_in_pytorch():
    # NumPy shifted them as int8 (True << True was 2, an int8 tensor), without a word.
    flags = plugrad.tensor([True, False])
    for shift in (lambda a, b: a << b, lambda a, b: a >> b):
        with pytest.raises(DtypeError, match="not booleans"):
            shift(flags, flags)
        with pytest.raises(NotImplementedError):
            shift(torch.tensor([True, False]), torch.tensor([True, False]))
    with pytest.raises(DtypeError, match="not booleans"):
        plugrad.bitwise_left_shift(flags, flags)
    counts = plugrad.tensor([1, 2])
    assert (counts << 1).tolist() == [2, 4] and (counts >> counts).tolist() == [0, 0]
    assert (counts << flags).tolist() == (
        torch.tensor([1, 2]) << torch.tensor([True, False])
    ).tolist()


def test_powers_of_booleans_are_refused_and_of_mixed_kinds_promote_as_in_pytorch():
    # NumPy raised two booleans as int8 (True ** True an int8 1), without a word; the
    # standard defines pow for numbers, and PyTorch refuses bool ** bool tensors.
    flags = plugrad.tensor([True, False])
    for power in (
        lambda: flags**flags, lambda: flags**True, lambda: True**flags,
        lambda: plugrad.pow(flags, flags), lambda: flags.pow(False),
    ):  # fmt: skip
        with pytest.raises(DtypeError, match=r"pow\(\) of two booleans"):
            power()
    with pytest.raises(NotImplementedError):
        torch.tensor([True, False]) ** torch.tensor([True, False])
    tflags = torch.tensor([True, False])
    counts, tcounts = plugrad.tensor([2, 3], dtype=plugrad.int8), torch.tensor([2, 3]).char()
    for mine, theirs in (
        (flags**2, tflags**2), (2**flags, 2**tflags), (flags**1.5, tflags**1.5),
        (counts**counts, tcounts**tcounts), (counts**flags, tcounts**tflags),
    ):  # fmt: skip
        assert mine.tolist() == theirs.tolist()
        assert str(mine.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]


def test_tile_tensordot_searchsorted_and_eye_in_pytorchs_forms():
    x, tx = plugrad.asarray(X), torch.tensor(X)
    for dims in ((2, 1), ((1, 2),), (2,)):
        assert x.tile(*dims).shape == tuple(tx.tile(*dims).shape)
    for dims in (1, 2, ([1], [1])):
        np.testing.assert_allclose(
            plugrad.tensordot(x, x.mT if dims == 1 else x, dims=dims).numpy(),
            torch.tensordot(tx, tx.mT if dims == 1 else tx, dims=dims).numpy(),
        )
    assert plugrad.tensordot(x, x, 2).item() == pytest.approx(torch.tensordot(tx, tx, 2).item())
    with pytest.raises(ArgumentError, match="both axes= and PyTorch's dims="):
        plugrad.tensordot(x, x, dims=1, axes=1)
    ordered, values = [1.0, 2.0, 2.0, 3.0], [2.0, 0.5, 3.5]
    for right in (False, True):
        ours = plugrad.searchsorted(plugrad.tensor(ordered), plugrad.tensor(values), right=right)
        theirs = torch.searchsorted(torch.tensor(ordered), torch.tensor(values), right=right)
        assert ours.tolist() == theirs.tolist()
    found = plugrad.searchsorted(plugrad.tensor(ordered), plugrad.tensor(values), out_int32=True)
    assert found.dtype == plugrad.int32
    assert plugrad.eye(2, m=3).tolist() == torch.eye(2, m=3).tolist()
    with pytest.raises(ArgumentError, match="m="):
        plugrad.eye(2, 3, m=3)


@pytest.mark.parametrize("method", ["char", "byte", "cfloat", "cdouble"])
def test_casting_methods(method: str):
    ours = getattr(plugrad.tensor([1.0, 2.0]), method)()
    theirs = getattr(torch.tensor([1.0, 2.0]), method)()
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")


CLAMPS = [
    ("uint8", [1, 200], "int8", [5, -3]),
    ("int32", [1, 2], "int8", [0, 3]),
    ("float16", [1.0, 2.0], "float32", [1.5, 1.5]),
    ("int8", [1, 2], "int32", [300, -300]),
]


@pytest.mark.parametrize(("dtype", "values", "bound_dtype", "bound"), CLAMPS)
def test_clamp_by_a_bound_of_another_dtype_of_the_kind(dtype, values, bound_dtype, bound):
    if plugrad.float16 not in plugrad.default_device().dtypes and "float16" in (dtype, bound_dtype):
        pytest.skip("the default backend has no float16")
    ours = plugrad.clamp(
        plugrad.tensor(values, dtype=getattr(plugrad, dtype)),
        min=plugrad.tensor(bound, dtype=getattr(plugrad, bound_dtype)),
    )
    theirs = torch.clamp(
        torch.tensor(values, dtype=getattr(torch, dtype)),
        min=torch.tensor(bound, dtype=getattr(torch, bound_dtype)),
    )
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    assert ours.tolist() == theirs.tolist()


@pytest.mark.parametrize(
    "values", [[1, 1, 2, 2, 3, 1, 1], [[1, 1, 2], [2, 3, 3]], [], [5], [1.0, 1.0, np.nan, np.nan]]
)
@pytest.mark.parametrize(("inverse", "counts"), [(False, False), (True, False), (True, True)])
def test_unique_consecutive(values, inverse: bool, counts: bool):
    options = {"return_inverse": inverse, "return_counts": counts}
    ours = plugrad.unique_consecutive(plugrad.tensor(values), **options)
    theirs = torch.unique_consecutive(torch.tensor(values), **options)
    ours = ours if isinstance(ours, tuple) else (ours,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    for mine, reference in zip(ours, theirs, strict=True):
        assert mine.dtype.name == str(reference.dtype).removeprefix("torch.")
        np.testing.assert_array_equal(mine.numpy(), reference.numpy())
    with pytest.raises(AxisError, match="dim"):
        plugrad.unique_consecutive(plugrad.tensor(1), dim=0)


SLICES = np.array([[[0, 1], [1, 1]], [[0, 1], [1, 1]], [[1, 0], [0, 0]], [[0, 1], [1, 1]]])


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("name", ["unique", "unique_consecutive"])
def test_unique_slices_along_dim_as_pytorchs(name: str, dim: int, backend: str):
    # (dim= was refused)
    options = {"return_inverse": True, "return_counts": True}
    for values in (SLICES, SLICES.astype(bool), SLICES * 0.5):
        with plugrad.use_backend(backend):
            ours = getattr(plugrad, name)(plugrad.asarray(values), dim=dim, **options)
            ours = [np.asarray(part.tolist()) for part in ours]
        theirs = getattr(torch, name)(torch.from_numpy(values), dim=dim, **options)
        for mine, reference in zip(ours, theirs, strict=True):
            np.testing.assert_array_equal(mine, reference.numpy())


def test_renorm_as_pytorchs():
    rng = np.random.default_rng(0)
    values = rng.standard_normal((3, 4, 5))
    for p, dim, maxnorm in ((2, 1, 1.0), (1, 0, 2.0), (3, -1, 0.5), (float("inf"), 0, 1.0)):
        ours = plugrad.tensor(values, requires_grad=True)
        theirs = torch.tensor(values, requires_grad=True)
        weights = rng.standard_normal(values.shape)
        (plugrad.renorm(ours, p, dim, maxnorm) * plugrad.asarray(weights)).sum().backward()
        (torch.renorm(theirs, p, dim, maxnorm) * torch.tensor(weights)).sum().backward()
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-10)
        np.testing.assert_allclose(
            ours.detach().renorm(p, dim, maxnorm).numpy(),
            theirs.detach().renorm(p, dim, maxnorm).numpy(),
            rtol=1e-12,
        )
    inplace = plugrad.tensor([[3.0, 4.0]])
    assert inplace.renorm_(2, 0, 1.0) is inplace
    np.testing.assert_allclose(inplace.numpy(), [[0.6, 0.8]], rtol=1e-6)
    # In place on a tensor with history: backward refused (renorm had saved what it changed).
    ours = plugrad.tensor(values, requires_grad=True)
    theirs = torch.tensor(values, requires_grad=True)
    weights = rng.standard_normal(values.shape)
    (ours.clone().renorm_(2, 1, 1.0) * plugrad.asarray(weights)).sum().backward()
    (theirs.clone().renorm_(2, 1, 1.0) * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-10)
    for call in (
        lambda: plugrad.renorm(plugrad.ones(3), 2, 0, 1.0),
        lambda: plugrad.renorm(plugrad.ones((2, 2)), 0, 0, 1.0),
        lambda: plugrad.renorm(plugrad.ones((2, 2)), 2, 0, -1.0),
        lambda: plugrad.renorm(plugrad.ones((2, 2)), 2, 2, 1.0),
    ):
        with pytest.raises((ShapeError, ArgumentError)):
            call()


def test_fill_and_copy_convert_as_pytorchs():
    # fill_ of a 0-d tensor of another kind was refused, copy_ of a number too.
    assert plugrad.tensor([1, 2]).fill_(plugrad.tensor(2.7)).tolist() == [2, 2]
    assert plugrad.tensor([True, False]).fill_(plugrad.tensor(3)).tolist() == [True, True]
    assert plugrad.tensor([1.0, 2.0]).copy_(3.0).tolist() == [3.0, 3.0]
    assert plugrad.tensor([1, 2]).copy_(2.9).tolist() == [2, 2]
    complex_values = plugrad.tensor([1 + 1j, 2 - 1j])
    with pytest.warns(UserWarning, match="imaginary parts"):  # as PyTorch warns
        assert plugrad.tensor([0.0, 0.0]).copy_(complex_values).tolist() == [1.0, 2.0]
    with pytest.raises(TypeError, match="a Tensor or a number"):
        plugrad.tensor([1.0]).copy_("3")
    source = plugrad.tensor(3.0, requires_grad=True)
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    y.fill_(source)
    y.sum().backward()
    assert source.grad.item() == 2.0 and x.grad.tolist() == [0.0, 0.0]


@pytest.mark.parametrize(
    ("dims", "error"),
    [
        (-1, plugrad.errors.AxisError),  # NumPy took -1 as an outer product
        (3, plugrad.errors.AxisError),
        (([5], [0]), plugrad.errors.AxisError),  # NumPy's modulo made 5 axis 1
        (([1, 0], [0]), ArgumentError),
    ],
)
def test_tensordot_refuses_axes_numpy_would_read_otherwise(dims, error):
    with pytest.raises(error, match="tensordot"):
        plugrad.tensordot(plugrad.ones((2, 3)), plugrad.ones((3, 4)), dims=dims)
    with pytest.raises(ShapeError, match="lengths differ"):
        plugrad.tensordot(plugrad.ones((2, 1)), plugrad.ones((3, 4)), dims=([1], [0]))


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax", "array_api_strict"])
def test_tensordot_reads_a_pair_of_ints_alike_on_every_backend(backend):
    # dims=(1, 0) was NumPy's "axis 1 with axis 0" on NumPy and JAX, and torch's raw
    # TypeError on the torch backend.
    pytest.importorskip(backend)
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 3)), rng.normal(size=(3, 4))
    with plugrad.use_backend(backend):
        x, y = plugrad.asarray(a), plugrad.asarray(b)
        for dims in ((1, 0), ([1], [0]), ((-1,), (-2,)), 1):
            np.testing.assert_allclose(
                plugrad.tensordot(x, y, dims=dims).cpu().numpy(), a @ b, rtol=1e-6
            )


def test_tensordot_takes_dims_as_a_tensor_as_pytorch():
    # dims=tensor(1) was refused as "must be an int or two lists of axes".
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(2, 3)), rng.normal(size=(3, 4))
    for dims in ([[1], [0]], 1):
        ours = plugrad.tensordot(plugrad.tensor(a), plugrad.tensor(b), dims=plugrad.tensor(dims))
        theirs = torch.tensordot(torch.tensor(a), torch.tensor(b), dims=torch.tensor(dims))
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    with pytest.raises(ArgumentError, match="a tensor of axes must hold integers"):
        plugrad.tensordot(plugrad.tensor(a), plugrad.tensor(b), dims=plugrad.tensor([1.0]))


def test_xlog1py_takes_a_number_as_its_first_argument_as_pytorch():
    # special.xlog1py(2.0, y) was refused ("takes a Tensor, got float").
    y = [0.5, -0.5, 3.0]
    ours = plugrad.special.xlog1py(2.0, plugrad.tensor(y, requires_grad=True))
    theirs = torch.special.xlog1py(2.0, torch.tensor(y))
    np.testing.assert_allclose(ours.detach().numpy(), theirs.numpy(), rtol=1e-6)
    with pytest.raises(TypeError, match="takes a Tensor"):
        plugrad.special.xlog1py(2.0, 3.0)


def test_cdist_refuses_a_compute_mode_pytorch_does_not_have():
    x = plugrad.ones((3, 2))
    with pytest.raises(ArgumentError, match="compute_mode='foo'"):
        plugrad.cdist(x, x, compute_mode="foo")
    for mode in ("use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"):
        assert plugrad.cdist(x, x, compute_mode=mode).tolist() == [[0.0] * 3] * 3


def test_roll_with_no_dims_rolls_the_flattened_tensor_as_pytorchs():
    # x.roll(1, dims=[]) left x as it was (NumPy rolls along no axis).
    for lib in (plugrad, torch):
        x = lib.arange(6.0).reshape(2, 3)
        assert x.roll(1, dims=[]).tolist() == [[5.0, 0.0, 1.0], [2.0, 3.0, 4.0]]
        assert x.roll(1).tolist() == [[5.0, 0.0, 1.0], [2.0, 3.0, 4.0]]


def test_narrow_and_tensor_split_refuse_fractional_positions():
    # narrow(0, tensor(1.7), 2) started at 1 and tensor_split(tensor([1.9, 3.2])) cut at
    # [1, 3]; PyTorch refuses both.
    x = plugrad.arange(6.0)
    with pytest.raises(DtypeError, match="narrow"):
        x.narrow(0, plugrad.tensor(1.7), 2)
    with pytest.raises(TypeError):
        x.narrow(0, 1.5, 2)
    with pytest.raises(DtypeError, match="tensor_split"):
        x.tensor_split(plugrad.tensor([1.9, 3.2]))
    assert x.narrow(0, plugrad.tensor(1), 2).tolist() == [1.0, 2.0]
    assert [p.tolist() for p in x.tensor_split(plugrad.tensor([1, 3]))] == [
        [0.0],
        [1.0, 2.0],
        [3.0, 4.0, 5.0],
    ]


def test_the_repeat_interleave_method_takes_pytorchs_dim_and_output_size():
    # x.repeat_interleave(2, dim=0, output_size=4) said "Tensor.repeat() got an unexpected
    # keyword argument 'output_size'".
    for lib in (plugrad, torch):
        x = lib.arange(6.0).reshape(2, 3)
        assert tuple(x.repeat_interleave(2, dim=0, output_size=4).shape) == (4, 3)
        assert tuple(x.repeat_interleave(2, 1).shape) == (2, 6)


def test_broadcast_to_its_own_shape_is_a_view_written_through_as_expand():
    # broadcast_to(x, x.shape).add_(1) raised ReadOnlyViewError, unlike x.expand(x.shape)
    # (the docs promise both repeat nothing and write through).
    if plugrad.default_device().views_are_copies:
        pytest.skip("views are copies here: a broadcast view is not written back (documented)")
    x = plugrad.ones(3)
    plugrad.broadcast_to(x, x.shape).add_(1)
    plugrad.broadcast_to(x, (1, 3)).add_(1)
    assert x.tolist() == [3.0, 3.0, 3.0]
    with pytest.raises(plugrad.errors.ReadOnlyViewError):
        plugrad.broadcast_to(x, (2, 3)).add_(1)


# -- select_scatter, slice_scatter, diagonal_scatter ----------------------------------------

SCATTERS = [
    ("select_scatter", (4,), (0, 1)),
    ("select_scatter", (3,), (-1, -2)),
    ("slice_scatter", (3, 2), (1, 0, 4, 2)),
    ("slice_scatter", (3, 2), (1, -2)),
    ("slice_scatter", (3, 2), (1, 1, -1)),
    ("slice_scatter", (2, 4), (0, 1, 100)),
    ("slice_scatter", (3, 0), (1, 5)),
    ("diagonal_scatter", (3,), ()),
    ("diagonal_scatter", (3,), (1,)),
    ("diagonal_scatter", (2,), (-1,)),
    ("diagonal_scatter", (2,), (1, 1, 0)),
]


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize(("name", "src_shape", "args"), SCATTERS)
def test_view_scatters_as_pytorchs(name: str, src_shape: tuple, args: tuple, backend: str):
    # (they were missing)
    src = np.arange(1.0, 1.0 + np.prod(src_shape)).reshape(src_shape)
    (tx, ts) = (torch.tensor(X, requires_grad=True), torch.tensor(src, requires_grad=True))
    theirs = getattr(torch, name)(tx, ts, *args)
    (theirs * torch.tensor(WEIGHTS)).sum().backward()
    with plugrad.use_backend(backend):
        x = plugrad.asarray(X, requires_grad=True)
        s = plugrad.asarray(src, requires_grad=True)
        for ours in (getattr(plugrad, name)(x, s, *args), getattr(x, name)(s, *args)):
            np.testing.assert_array_equal(np.asarray(ours.tolist()), theirs.detach().numpy())
        (ours * plugrad.asarray(WEIGHTS)).sum().backward()
        assert x.tolist() == X.tolist()  # the input is left as it was
        np.testing.assert_array_equal(np.asarray(x.grad.tolist()), tx.grad.numpy())
        np.testing.assert_array_equal(
            np.asarray(s.grad.tolist()).reshape(src_shape), ts.grad.numpy()
        )


def test_view_scatters_convert_src_as_copy_does():
    ints = plugrad.select_scatter(plugrad.zeros(3, dtype=plugrad.int64), plugrad.tensor(2.5), 0, 0)
    assert ints.dtype == plugrad.int64
    assert ints.tolist() == [2, 0, 0]  # PyTorch's: truncated, as copy_
    floats = plugrad.slice_scatter(
        plugrad.zeros(3), plugrad.ones(1, dtype=plugrad.float64), 0, 1, 2
    )
    assert floats.dtype == plugrad.float32
    assert floats.tolist() == [0.0, 1.0, 0.0]


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda x: plugrad.select_scatter(x, plugrad.ones(1, 4), 0, 1), ShapeError, r"\(1, 4\)"),
        (lambda x: plugrad.select_scatter(x, plugrad.ones(4), 0, 5), IndexOutOfRangeError, "5"),
        (lambda x: plugrad.select_scatter(x, plugrad.ones(4), 2, 0), AxisError, "dim"),
        (lambda x: plugrad.slice_scatter(x, plugrad.ones(3, 1), 1, 0, 4, 0), ValueError, "step"),
        (lambda x: plugrad.slice_scatter(x, plugrad.ones(3, 1), 2), AxisError, "dim 2"),
        (lambda x: plugrad.slice_scatter(x, plugrad.ones(3), 1, 0, 1), ShapeError, "exactly"),
        (lambda x: plugrad.diagonal_scatter(x, plugrad.ones(3), 1, 1, 0), ShapeError, r"\(2,\)"),
        (lambda x: plugrad.diagonal_scatter(x, X, 0), TypeError, "src must be a Tensor"),
        (lambda x: plugrad.slice_scatter(x, x, 1.0), TypeError, "dim must be an int"),
    ],
)
def test_view_scatters_refuse_bad_arguments(call, error, match):
    x = plugrad.zeros(3, 4)
    with pytest.raises(error, match=match):
        call(x)
    assert x.tolist() == np.zeros((3, 4)).tolist()


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize(("offset", "dim1", "dim2"), [(0, 0, 1), (1, 2, 0), (-1, -1, 1)])
def test_diagonal_scatter_of_a_stack_as_pytorchs(offset: int, dim1: int, dim2: int, backend: str):
    values = np.random.default_rng(1).random((2, 3, 4))
    weights = np.linspace(-1.0, 2.0, values.size).reshape(values.shape)
    shape = torch.zeros(values.shape).diagonal(offset, dim1, dim2).shape
    src = np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape)
    tx, ts = torch.tensor(values, requires_grad=True), torch.tensor(src, requires_grad=True)
    theirs = torch.diagonal_scatter(tx, ts, offset, dim1, dim2)
    (theirs * torch.tensor(weights)).sum().backward()
    with plugrad.use_backend(backend):
        x = plugrad.asarray(values, requires_grad=True)
        s = plugrad.asarray(src, requires_grad=True)
        ours = plugrad.diagonal_scatter(x, s, offset, dim1, dim2)
        (ours * plugrad.asarray(weights)).sum().backward()
        np.testing.assert_array_equal(np.asarray(ours.tolist()), theirs.detach().numpy())
        np.testing.assert_array_equal(np.asarray(x.grad.tolist()), tx.grad.numpy())
        np.testing.assert_array_equal(np.asarray(s.grad.tolist()), ts.grad.numpy())
