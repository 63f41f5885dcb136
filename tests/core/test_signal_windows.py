"""``plugrad.signal.windows``, PyTorch's ``torch.signal.windows``, against ``torch``: values,
signatures, leaves that require grad, devices and the errors of bad arguments."""

from __future__ import annotations

import inspect
import math
from typing import Any

import numpy as np
import pytest

import plugrad
import plugrad.signal.windows as windows
from plugrad.errors import ArgumentError, DtypeError, InvalidArgumentError, PlugradError
from plugrad.testing import backends_under_test

torch = pytest.importorskip("torch")

#: Each window with the parameters it is tested with (its defaults, and others).
CASES: list[tuple[str, dict[str, Any]]] = [
    ("bartlett", {}),
    ("blackman", {}),
    ("cosine", {}),
    ("exponential", {}),
    ("exponential", {"tau": 0.7}),
    ("gaussian", {}),
    ("gaussian", {"std": 2.5}),
    ("general_cosine", {"a": [0.3, 0.4, 0.2, 0.1]}),
    ("general_cosine", {"a": (1.0,)}),
    ("general_hamming", {}),
    ("general_hamming", {"alpha": 0.6}),
    ("hamming", {}),
    ("hann", {}),
    ("kaiser", {}),
    ("kaiser", {"beta": 3}),
    ("kaiser", {"beta": 0.0}),
    ("nuttall", {}),
]
IDS = [name + "".join(f"-{key}={value}" for key, value in kwargs.items()) for name, kwargs in CASES]
#: What a float32 window and a float64 one may differ from PyTorch's by (its rounding).
TOLERANCE = {"float32": 1e-6, "float64": 1e-14}


def _agree(ours: plugrad.Tensor, theirs: Any, dtype: str) -> None:
    assert ours.dtype.name == dtype and ours.shape == tuple(theirs.shape)
    np.testing.assert_allclose(
        np.array(ours.tolist(), dtype=np.float64),
        theirs.double().numpy(),
        rtol=0,
        atol=TOLERANCE[dtype],
    )


def test_the_windows_are_pytorchs() -> None:
    assert windows.__all__ == torch.signal.windows.__all__
    assert plugrad.signal.windows is windows
    from plugrad.signal.windows import hann

    assert hann is windows.hann


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=IDS)
def test_values_agree_with_torch(name: str, kwargs: dict[str, Any], backend: str) -> None:
    device = plugrad.device(backend)
    dtypes = ["float32"] + (["float64"] if plugrad.float64 in device.dtypes else [])
    for length in (0, 1, 2, 5, 16):
        for sym in (True, False):
            for dtype in dtypes:
                theirs = getattr(torch.signal.windows, name)(
                    length, sym=sym, dtype=getattr(torch, dtype), **kwargs
                )
                ours = getattr(windows, name)(
                    length, sym=sym, dtype=getattr(plugrad, dtype), device=device, **kwargs
                )
                assert ours.device == device and not ours.requires_grad
                _agree(ours, theirs, dtype)


@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=IDS)
def test_the_defaults_are_a_symmetric_window_of_the_default_dtype(
    name: str, kwargs: dict[str, Any]
) -> None:
    ours = getattr(windows, name)(6, **kwargs)
    _agree(ours, getattr(torch.signal.windows, name)(6, **kwargs), "float32")
    previous = plugrad.get_default_dtype()
    plugrad.set_default_dtype(plugrad.float64)
    try:
        ours = getattr(windows, name)(7, **kwargs)
    finally:
        plugrad.set_default_dtype(previous)
    theirs = getattr(torch.signal.windows, name)(7, dtype=torch.float64, **kwargs)
    _agree(ours, theirs, "float64")


@pytest.mark.parametrize("length", [1, 2, 5, 16])
@pytest.mark.parametrize("center", [0.0, 2.5, -1.0, 20])
def test_exponential_centred_elsewhere_agrees_with_torch(length: int, center: float) -> None:
    # One sample centred away from it is exp(-|center| / tau), not 1.
    for dtype in ("float32", "float64"):
        theirs = torch.signal.windows.exponential(
            length, center=center, tau=1.5, sym=False, dtype=getattr(torch, dtype)
        )
        ours = windows.exponential(
            length, center=center, tau=1.5, sym=False, dtype=getattr(plugrad, dtype)
        )
        _agree(ours, theirs, dtype)


@pytest.mark.parametrize("name", windows.__all__)
def test_the_signatures_are_pytorchs(name: str) -> None:
    ours = inspect.signature(getattr(windows, name)).parameters
    theirs = inspect.signature(getattr(torch.signal.windows, name)).parameters
    assert list(ours) == list(theirs)
    for key, parameter in ours.items():
        assert parameter.kind == theirs[key].kind, key
        default = theirs[key].default
        if default is torch.strided:
            assert parameter.default is plugrad.strided
        elif default is inspect.Parameter.empty or isinstance(default, (bool, float, type(None))):
            assert parameter.default == default and type(parameter.default) is type(default), key


@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=IDS)
@pytest.mark.parametrize("length", [0, 1, 5])
def test_requires_grad_gives_a_leaf(name: str, kwargs: dict[str, Any], length: int) -> None:
    # (PyTorch's window is the result of the ops that made it, except of 0 or 1 sample)
    window = getattr(windows, name)(length, requires_grad=True, dtype=plugrad.float64, **kwargs)
    assert window.requires_grad and window.is_leaf and window.grad_fn is None
    (window * window).sum().backward()
    expected = 2 * np.array(window.tolist())
    np.testing.assert_allclose(np.array(window.grad.tolist()), expected, rtol=1e-15)


def test_the_windows_are_made_where_asked() -> None:
    device = plugrad.device("numpy")
    for name, kwargs in CASES:
        window = getattr(windows, name)(4, sym=False, device="numpy", **kwargs)
        assert window.device == device, name
    if "array_api_strict" not in backends_under_test():
        return
    with plugrad.use_backend("array_api_strict") as default:
        assert windows.hann(3).device == default
        assert windows.exponential(1, center=1.0, sym=False).device == default


#: (a call, plugrad's error, a part of its message, the error PyTorch raises: our error is one
#: too, so code catching PyTorch's catches ours; Exception where PyTorch's is another, None
#: where PyTorch takes the call). PyTorch's ValueError for a dtype is our DtypeError, a
#: TypeError as for plugrad's other windows.
ERRORS: list[tuple[Any, type[PlugradError], str, type[Exception] | None]] = [
    (lambda w: w.hann(-1), InvalidArgumentError, r"M, the window length, must be >= 0", ValueError),
    (lambda w: w.kaiser(-3), InvalidArgumentError, "M=-3", ValueError),
    (lambda w: w.hann(2.0), ArgumentError, "must be an int, got float", TypeError),
    (lambda w: w.gaussian("5"), ArgumentError, "must be an int, got str", TypeError),
    (lambda w: w.hann(True), ArgumentError, "must be an int, got bool", None),
    (lambda w: w.cosine(3, sym=1), ArgumentError, "sym must be a bool", None),
    (lambda w: w.hann(3, layout=None), InvalidArgumentError, "layout must be", ValueError),
    (lambda w: w.nuttall(3, dtype=w.int64), DtypeError, "float32 or float64", Exception),
    (lambda w: w.bartlett(3, dtype=w.float16), DtypeError, "float32 or float64", Exception),
    (lambda w: w.hamming(3, dtype=w.complex64), DtypeError, "float32 or float64", Exception),
    (lambda w: w.exponential(3, tau=0.0), InvalidArgumentError, "tau must be > 0", ValueError),
    (lambda w: w.exponential(3, tau=-1), InvalidArgumentError, "tau must be > 0", ValueError),
    (lambda w: w.exponential(3, tau="1"), ArgumentError, "tau must be a real number", TypeError),
    (lambda w: w.exponential(3, tau=math.nan), InvalidArgumentError, "tau must be > 0", None),
    (lambda w: w.exponential(3, center=1.0), InvalidArgumentError, "sym=False", ValueError),
    (lambda w: w.exponential(3, center="1", sym=False), ArgumentError, "center", TypeError),
    (lambda w: w.gaussian(3, std=0), InvalidArgumentError, "std must be > 0", ValueError),
    (lambda w: w.gaussian(3, std=-2.0), InvalidArgumentError, "std must be > 0", ValueError),
    (lambda w: w.kaiser(3, beta=-1.0), InvalidArgumentError, "beta must be >= 0", ValueError),
    (lambda w: w.kaiser(3, beta="1"), ArgumentError, "beta must be a real number", TypeError),
    (lambda w: w.general_cosine(3, a=5), ArgumentError, "list or tuple", TypeError),
    (lambda w: w.general_cosine(3, a=[]), InvalidArgumentError, "must not be empty", ValueError),
    (lambda w: w.general_cosine(3, a=["x"]), ArgumentError, "coefficient in a", Exception),
    (lambda w: w.general_cosine(3, a="ab"), ArgumentError, "list or tuple", Exception),
    (lambda w: w.general_hamming(3, alpha="0.5"), ArgumentError, "alpha must be", TypeError),
]


class _Namespace:
    """The windows and the dtypes of one library, so that one call runs on either."""

    def __init__(self, library: Any) -> None:
        self.library = library

    def __getattr__(self, name: str) -> Any:
        if hasattr(self.library.signal.windows, name):
            return getattr(self.library.signal.windows, name)
        return getattr(self.library, name)


@pytest.mark.parametrize(("call", "error", "match", "theirs"), ERRORS)
def test_bad_arguments_raise_typed_errors(
    call: Any, error: type[PlugradError], match: str, theirs: type[Exception] | None
) -> None:
    with pytest.raises(error, match=match):
        call(_Namespace(plugrad))
    if theirs is not None:  # PyTorch refuses it too, and code catching its error catches ours
        with pytest.raises(theirs):
            call(_Namespace(torch))
        assert issubclass(error, theirs)
