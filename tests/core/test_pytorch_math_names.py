"""PyTorch's math names (lerp, addcmul, fmod, nansum, cummax, median, ...) against ``torch``.

One row per calling form: both libraries run the program from the same float64
leaf; results must agree in dtype, shape and values, and the gradient of a
weighted sum of the float outputs with respect to the leaf must agree too.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from torch_compare import as_tensor as _t
from torch_compare import assert_agrees

import plugrad
from plugrad.errors import AxisError, DtypeError, IndexOutOfRangeError
from plugrad.testing import backends_under_test

torch = pytest.importorskip("torch")

X = np.array([[0.5, -1.5, 2.0, 0.75], [3.0, 1.25, -0.125, 1.5], [0.375, -1.75, 1.0, 2.5]])
TIES = np.array([[1.0, 3.0, 3.0, 2.0], [2.0, 2.0, 1.0, 2.0], [0.5, 0.5, 0.5, 0.5]])
NAN, INF = np.nan, np.inf
SPECIAL = np.array([[NAN, 1.0, INF, -2.0], [0.0, -INF, 3.0, NAN], [1.5, 0.25, -1.0, 2.0]])


def _with(base: np.ndarray, program: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """``program`` run on ``x * 0 + base``: values from ``base``, gradients to the leaf."""
    return lambda lib, x: program(lib, x * 0 + _t(lib, base))


def _in_place(method: str, *args: Any, **kwargs: Any) -> Callable[[Any, Any], Any]:
    def program(lib: Any, x: Any) -> Any:
        y = x * 1.0
        assert getattr(y, method)(*(a(lib) if callable(a) else a for a in args), **kwargs) is y
        return y

    return program


POSITIVE = np.abs(X) + 0.25
UNIT = np.array([[0.1, 0.25, 0.5, 0.9], [0.05, 0.75, 0.6, 0.3], [0.45, 0.55, 0.2, 0.95]])

PROGRAMS: dict[str, Callable[[Any, Any], Any]] = {
    "lerp": lambda lib, x: lib.lerp(x, x.flip(0) * 2, 0.3),
    "lerp(weight=0.75)": lambda lib, x: lib.lerp(x, x * x, 0.75),
    "lerp(tensor weight)": lambda lib, x: lib.lerp(x, x.flip(1), _t(lib, UNIT)),
    "x.lerp": lambda lib, x: x.lerp(_t(lib, X * 3), x / 4),
    "x.lerp_": _in_place("lerp_", lambda lib: _t(lib, X * 3), 0.6),
    "addcmul": lambda lib, x: lib.addcmul(x, x, x.flip(0), value=0.5),
    "x.addcmul": lambda lib, x: x.addcmul(x[:1], _t(lib, X)),
    "x.addcmul_": _in_place("addcmul_", lambda lib: _t(lib, X), lambda lib: _t(lib, X), value=2),
    "addcdiv": lambda lib, x: lib.addcdiv(x, x, x.flip(0) + 5.0, value=-2),
    "x.addcdiv": lambda lib, x: x.addcdiv(_t(lib, X), x * x + 1),
    "x.addcdiv_": _in_place("addcdiv_", lambda lib: _t(lib, X), lambda lib: _t(lib, POSITIVE)),
    "clamp_min": lambda lib, x: lib.clamp_min(x, 0.5),
    "clamp_max(tensor)": lambda lib, x: lib.clamp_max(x, x.flip(0)),
    "x.clamp_min": lambda lib, x: x.clamp_min(x.flip(1)),
    "x.clamp_max": lambda lib, x: x.clamp_max(1.0),
    "x.clamp_min_": _in_place("clamp_min_", 0.75),
    "x.clamp_max_": _in_place("clamp_max_", 0.75),
    "nan_to_num": _with(SPECIAL, lambda lib, x: lib.nan_to_num(x)),
    "nan_to_num(values)": _with(
        SPECIAL, lambda lib, x: lib.nan_to_num(x, nan=7.0, posinf=9.0, neginf=-9.0)
    ),
    "x.nan_to_num(float32)": lambda lib, x: (x.float() / 0.0).nan_to_num(posinf=1.0),
    "x.nan_to_num_": lambda lib, x: (x * 0 + _t(lib, SPECIAL)).nan_to_num_(nan=-1.0),
    "nan_to_num(int)": lambda lib, x: lib.nan_to_num(_t(lib, np.array([1, -2, 0]))),
    "fmod": lambda lib, x: lib.fmod(x * 3, x.flip(0)),
    "fmod(scalar)": lambda lib, x: lib.fmod(x * 5, -1.5),
    "fmod(int)": lambda lib, x: lib.fmod(_t(lib, np.array([-7, 7, -8, 5])), 3),
    "x.fmod": lambda lib, x: x.fmod(0.7),
    "x.fmod_": _in_place("fmod_", 0.4),
    "fmax": lambda lib, x: lib.fmax(x, x.flip(1)),
    "fmin": lambda lib, x: lib.fmin(x, x.flip(0)),
    "fmax(ties)": lambda lib, x: lib.fmax(x, x * 1),
    "fmin(ties)": lambda lib, x: lib.fmin(x, x * 1),
    "fmax(nan)": _with(SPECIAL, lambda lib, x: lib.fmax(x, x.flip(1))),
    "fmin(nan)": _with(SPECIAL, lambda lib, x: lib.fmin(x.flip(0), x)),
    "x.fmax": lambda lib, x: x.fmax(_t(lib, X.T[:, :3].T.copy())),
    "x.fmin": lambda lib, x: x.fmin(_t(lib, np.zeros(4))),
    "xlogy": lambda lib, x: lib.xlogy(x, x * x + 0.5),
    "xlogy(x == 0)": lambda lib, x: lib.xlogy(x * _t(lib, X > 0), x.flip(0) * x.flip(0) + 0.5),
    "xlogy(at 0, nan)": lambda lib, x: lib.xlogy(
        x * 0, x * 0 + _t(lib, np.array([NAN, 0.0, 2.0, INF]))
    ),
    "xlogy(scalar)": lambda lib, x: lib.xlogy(x, 2.0),
    "x.xlogy": lambda lib, x: x.xlogy(_t(lib, POSITIVE)),
    "x.xlogy_": _in_place("xlogy_", lambda lib: _t(lib, POSITIVE)),
    "logit": _with(UNIT, lambda lib, x: lib.logit(x)),
    "logit(eps)": _with(UNIT, lambda lib, x: lib.logit(x, eps=0.2)),
    "logit(eps at the bound)": _with(UNIT, lambda lib, x: lib.logit(x, 0.25)),
    "x.logit": _with(UNIT, lambda lib, x: x.logit()),
    "x.logit_": _with(UNIT, lambda lib, x: x.logit_(0.1)),
    "sinc": lambda lib, x: lib.sinc(x),
    "sinc(0)": lambda lib, x: lib.sinc(x * _t(lib, X > 0)),
    "x.sinc": lambda lib, x: x.sinc(),
    "x.sinc_": _in_place("sinc_"),
    # PyTorch's heaviside has no derivative (plugrad's result does not require grad).
    "heaviside": lambda lib, x: lib.heaviside(
        x.detach() * _t(lib, X > 0), _t(lib, np.array([0.5]))
    ),
    "x.heaviside": lambda lib, x: x.detach().heaviside(x.detach().flip(0)),
    "float_power": lambda lib, x: lib.float_power(x.abs(), x.flip(1)),
    "float_power(float32)": lambda lib, x: lib.float_power(x.float(), 2),
    "float_power(int)": lambda lib, x: lib.float_power(_t(lib, np.array([1, 2, 3])), 3),
    "float_power(scalar base)": lambda lib, x: lib.float_power(2.0, x),
    "x.float_power": lambda lib, x: x.float_power(_t(lib, X)),
    "x.float_power_": _in_place("float_power_", 3),
    "amax": lambda lib, x: lib.amax(x),
    "amax(dim, keepdim)": lambda lib, x: lib.amax(x, (0, 1), keepdim=True),
    "amin([dims])": _with(TIES, lambda lib, x: lib.amin(x, [1])),
    "nansum": _with(SPECIAL, lambda lib, x: lib.nansum(x)),
    "nansum(dim)": _with(SPECIAL, lambda lib, x: lib.nansum(x, 1, keepdim=True)),
    "nansum(int)": lambda lib, x: lib.nansum(_t(lib, np.array([[1, 2], [3, 4]], np.int32)), 0),
    "x.nansum": _with(SPECIAL, lambda lib, x: x.nansum(dim=0)),
    "nanmean": _with(SPECIAL, lambda lib, x: lib.nanmean(x)),
    "nanmean(dim)": _with(SPECIAL, lambda lib, x: lib.nanmean(x, 0)),
    "x.nanmean": _with(SPECIAL, lambda lib, x: x.nanmean(dim=(0, 1), keepdim=True)),
    "count_nonzero(dim)": lambda lib, x: lib.count_nonzero(x * _t(lib, X > 0), 1),
    "x.count_nonzero": lambda lib, x: (x * _t(lib, X > 0)).count_nonzero(),
    "x.count_nonzero(dims)": lambda lib, x: (x * _t(lib, X > 1)).count_nonzero((0, 1)),
    "logcumsumexp": lambda lib, x: lib.logcumsumexp(x, 1),
    "logcumsumexp(wide range)": lambda lib, x: lib.logcumsumexp(
        x * _t(lib, np.array([[1000.0], [1.0], [-800.0]])), 1
    ),
    "x.logcumsumexp": lambda lib, x: x.logcumsumexp(dim=0),
    "cummax": lambda lib, x: tuple(lib.cummax(x, 1)),
    "cummin": lambda lib, x: tuple(lib.cummin(x, 0)),
    "cummax(ties)": _with(TIES, lambda lib, x: tuple(lib.cummax(x, 1))),
    "cummin(ties)": _with(TIES, lambda lib, x: tuple(lib.cummin(x, -1))),
    "cummax(nan)": _with(SPECIAL, lambda lib, x: tuple(lib.cummax(x, 1))),
    "cummin(nan)": _with(SPECIAL, lambda lib, x: tuple(lib.cummin(x.flip(1), 1))),
    "x.cummax": lambda lib, x: tuple(x.cummax(dim=0)),
    "x.cummin": lambda lib, x: tuple(x.cummin(1)),
    "cummax(int)": lambda lib, x: tuple(lib.cummax(_t(lib, np.array([3, 1, 4, 4, 5])), 0)),
    "median": lambda lib, x: lib.median(x),
    "median(ties)": _with(TIES, lambda lib, x: lib.median(x)),
    "median(dim)": lambda lib, x: tuple(lib.median(x, 1)),
    "median(dim, keepdim)": lambda lib, x: tuple(lib.median(x, 0, keepdim=True)),
    "median(nan)": _with(SPECIAL, lambda lib, x: tuple(lib.median(x, 1))),
    "x.median": lambda lib, x: x.median(),
    "x.median(dim)": lambda lib, x: tuple(x.median(dim=0)),
    "nanmedian": _with(SPECIAL, lambda lib, x: lib.nanmedian(x)),
    "nanmedian(dim)": _with(SPECIAL, lambda lib, x: tuple(lib.nanmedian(x, 1))),
    "x.nanmedian": lambda lib, x: tuple(x.nanmedian(0, True)),
    "kthvalue": lambda lib, x: tuple(lib.kthvalue(x, 2)),
    "kthvalue(dim)": lambda lib, x: tuple(lib.kthvalue(x, 3, 0, keepdim=True)),
    "x.kthvalue": lambda lib, x: tuple(x.kthvalue(4, dim=1)),
    "aminmax": lambda lib, x: tuple(lib.aminmax(x)),
    "aminmax(dim)": lambda lib, x: tuple(lib.aminmax(x, dim=1, keepdim=True)),
    "aminmax(ties)": _with(TIES, lambda lib, x: tuple(lib.aminmax(x, dim=0))),
    "x.aminmax": lambda lib, x: tuple(x.aminmax(dim=-1)),
    "msort": lambda lib, x: lib.msort(x),
    "x.msort": lambda lib, x: x.msort(),
}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's warnings at NaN and 0
@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_a_math_name_gives_pytorchs_values_and_gradients(name, backend) -> None:
    assert_agrees(PROGRAMS[name], X, backend)


def test_the_named_tuples_have_pytorchs_fields_and_pickle() -> None:
    x = plugrad.asarray(X)
    assert plugrad.aminmax(x).max.shape == ()
    assert plugrad.median(x, 1)._fields == ("values", "indices")
    result = x.cummax(0)
    assert type(result).__name__ == "cummax"
    again = pickle.loads(pickle.dumps(result))
    np.testing.assert_array_equal(again.indices.numpy(), result.indices.numpy())


def test_kthvalue_at_ties_gives_pytorchs_value() -> None:
    # NOTE: PyTorch's index among equal elements follows its selection algorithm; the
    # value (and so the gradient's total) is the same.
    values = np.array([2.0, 2.0, 2.0, 1.0, 2.0])
    ours = plugrad.kthvalue(plugrad.asarray(values), 3)
    assert ours.values.item() == torch.kthvalue(torch.from_numpy(values), 3).values.item()
    assert values[ours.indices.item()] == 2.0


def test_bad_inputs_raise_plugrads_typed_errors() -> None:
    x = plugrad.asarray(X)
    with pytest.raises(IndexOutOfRangeError, match="kthvalue"):
        plugrad.kthvalue(x, 5)
    with pytest.raises(IndexOutOfRangeError, match="kthvalue"):
        x.kthvalue(0, dim=0)
    with pytest.raises(DtypeError, match="nanmean"):
        plugrad.nanmean(plugrad.asarray(np.array([1, 2])))
    for call in (lambda: x.cummax(2), lambda: plugrad.logcumsumexp(x, -3), lambda: x.median(5)):
        with pytest.raises(AxisError, match="out of range"):
            call()
    with pytest.raises(DtypeError, match="heaviside"):
        plugrad.heaviside(x, plugrad.asarray(np.array([0.5], np.float32)))


def test_clamp_needs_a_bound_as_pytorchs_where_the_standards_clip_copies() -> None:
    with pytest.raises(RuntimeError, match="min"):
        torch.clamp(torch.from_numpy(X))
    x = plugrad.asarray(X.copy())
    calls = (lambda: plugrad.clamp(x), lambda: x.clamp(), lambda: x.clamp(None, None), x.clamp_)
    for call in calls:
        with pytest.raises(TypeError, match="clamp"):
            call()
    assert x._version == 0 and np.array_equal(x.numpy(), X)
    np.testing.assert_array_equal(plugrad.clip(x).numpy(), X)


def _clamped_in_place(lib: Any, x: Any) -> Any:
    y = x * 1.0
    y.clamp_(1.0, -1.0)
    return y


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize(
    "program",
    [
        lambda lib, x: lib.clamp(x, 1.0, -1.0),
        lambda lib, x: lib.clamp(x, _t(lib, [1.0] * 4), _t(lib, [-1.0, 3.0, -1.0, 4.0])),
        _clamped_in_place,
    ],
    ids=["scalars", "tensors", "in-place"],
)
def test_clamp_with_min_above_max_gives_max_as_pytorch(program, backend: str) -> None:
    # (array_api_strict's clip refused min > max with its own ValueError)
    assert_agrees(program, np.array([-2.0, 0.0, 2.0, 5.0]), backend)


# -- gcd and lcm -------------------------------------------------------------------------

GCD_LEFT = np.array([12, -18, 0, 0, 7, -4, 2**20, 5, 1])
GCD_RIGHT = np.array([18, 12, 0, 5, 0, 6, 3 * 2**10, -15, -1])


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", ["gcd", "lcm"])
def test_gcd_and_lcm_as_pytorchs(name: str, backend: str) -> None:
    # (they were missing; array_api_strict and Dask have none of their own: Euclid's rounds)
    for left, right in ((GCD_LEFT, GCD_RIGHT), (GCD_LEFT.astype(np.int32), np.int8(6))):
        theirs = getattr(torch, name)(torch.tensor(left), torch.tensor(right))
        with plugrad.use_backend(backend):
            x, y = plugrad.asarray(left), plugrad.asarray(right)
            for ours in (getattr(plugrad, name)(x, y), getattr(x, name)(y)):
                assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
                assert ours.tolist() == theirs.tolist()
            assert (
                getattr(x, name)(6).tolist()
                == getattr(torch, name)(
                    torch.tensor(left), torch.tensor(6, dtype=torch.tensor(left).dtype)
                ).tolist()
            )
            assert getattr(x, name + "_")(y) is x
            assert x.tolist() == theirs.tolist()


@pytest.mark.parametrize("name", ["gcd", "lcm"])
def test_gcd_and_lcm_refuse_other_than_integers(name: str) -> None:
    for left, right in ((plugrad.ones(2), plugrad.ones(2)), (plugrad.ones(2) > 0, True)):
        with pytest.raises(DtypeError, match=f"{name}\\(\\) takes integer tensors"):
            getattr(plugrad, name)(left, right)
    x = plugrad.asarray([4, 6])
    with pytest.raises(DtypeError):
        getattr(x, name + "_")(plugrad.ones(2))
    assert x.tolist() == [4, 6]
