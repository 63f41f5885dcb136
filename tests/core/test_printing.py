"""Tensors print in PyTorch's layout, and the print options work as PyTorch's do."""

from __future__ import annotations

import math

import numpy as np
import pytest

import plugrad
from plugrad.errors import InvalidArgumentError

# The layout is the backend's business only through its host copy: tested on NumPy,
# and once per backend below.
pytestmark = pytest.mark.usefixtures("on_numpy")

VALUES = [
    pytest.param([0.0, 1.5430806], "float32", id="decimals"),
    pytest.param([1.0, 2.0, -3.0], "float32", id="whole-numbers"),
    pytest.param([1e-10, 1.718], "float64", id="small-scientific"),
    pytest.param([1e9, 1.0], "float32", id="large-scientific"),
    pytest.param([123456.0, 1.0], "float32", id="wide-range"),
    pytest.param([0.0, math.nan, math.inf, -2.5], "float32", id="non-finite"),
    pytest.param([0.0, math.nan, -math.inf, -2.0], "float32", id="non-finite-whole"),
    pytest.param([1e-5, 1e-5], "float32", id="tiny"),
    pytest.param([math.nan], "float32", id="nan-only"),
    pytest.param(3.25, "float32", id="scalar"),
    pytest.param(3.0, "float64", id="scalar-whole"),
    pytest.param([-1, 20, 3], "int64", id="int"),
    pytest.param([[7, -8]], "int32", id="int32"),
    pytest.param([[True, False]], "bool", id="bool"),
    pytest.param([1 + 2j, 3.5 - 1j], "complex64", id="complex"),
    pytest.param(np.arange(12.0).reshape(2, 2, 3), "float32", id="3d"),
    pytest.param((np.arange(40.0) * 1.5).reshape(2, 20), "float32", id="wrapped-rows"),
    pytest.param(np.arange(2000.0), "float32", id="summarized"),
    pytest.param(np.zeros((3, 400)), "float32", id="summarized-2d"),
    pytest.param(np.linspace(-1, 1, 5000).reshape(50, 100), "float64", id="summarized-both"),
    pytest.param(np.zeros((0, 3)), "float32", id="empty-shaped"),
    pytest.param(np.zeros((0,)), "float32", id="empty"),
]


@pytest.mark.parametrize(("values", "dtype"), VALUES)
def test_repr_matches_pytorch(values: object, dtype: str) -> None:
    torch = pytest.importorskip("torch")
    expected = repr(torch.tensor(np.asarray(values), dtype=getattr(torch, dtype)))
    got = repr(plugrad.tensor(np.asarray(values), dtype=getattr(plugrad, dtype)))
    assert got == expected.replace("torch.", "plugrad.")


@pytest.mark.parametrize(("values", "dtype"), VALUES)
def test_every_backend_prints_the_same_values(values: object, dtype: str) -> None:
    array = np.asarray(values)
    expected = repr(plugrad.tensor(array, dtype=getattr(plugrad, dtype)))
    for name in plugrad.backends.available():
        with plugrad.use_backend(name) as device:
            got = repr(plugrad.tensor(array, dtype=getattr(plugrad, dtype)))
        if device.name != "numpy":
            shown = f"device={device.name!r}"
            got = got.replace(", " + shown, "").replace(",\n       " + shown, "")
        assert got == expected


def test_repr_shows_grad_state_and_device_name() -> None:
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    assert repr(x) == "tensor([1., 2.], requires_grad=True)"
    assert repr(x * 2) == "tensor([2., 4.], grad_fn=<MulBackward>)"


def test_precision_and_profiles() -> None:
    x = plugrad.tensor([3.14159, 2.71828])
    try:
        plugrad.set_printoptions(precision=2)
        assert repr(x) == "tensor([3.14, 2.72])"
        assert plugrad.get_printoptions()["precision"] == 2
        plugrad.set_printoptions(sci_mode=True)
        assert repr(x) == "tensor([3.14e+00, 2.72e+00])"
        plugrad.set_printoptions(profile="full")
        assert "..." not in repr(plugrad.zeros(2000))
    finally:
        plugrad.set_printoptions(profile="default")
    assert repr(x) == "tensor([3.1416, 2.7183])"
    assert plugrad.get_printoptions() == {
        "precision": 4,
        "threshold": 1000,
        "edgeitems": 3,
        "linewidth": 80,
        "sci_mode": None,
    }


def test_printoptions_context_restores_even_on_error() -> None:
    x = plugrad.tensor([0.25, 1.5])
    with pytest.raises(RuntimeError, match="inside"):
        with plugrad.printoptions(precision=1, threshold=10):
            assert repr(x) == "tensor([0.2, 1.5])"
            raise RuntimeError("inside")
    assert plugrad.get_printoptions()["precision"] == 4
    assert plugrad.get_printoptions()["threshold"] == 1000


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"precision": -1}, "precision must be a non-negative int"),
        ({"threshold": 2.5}, "threshold must be a non-negative int"),
        ({"linewidth": True}, "linewidth must be a non-negative int"),
        ({"sci_mode": "yes"}, "sci_mode must be True, False or None"),
        ({"profile": "long"}, "unknown print profile 'long'"),
    ],
)
def test_bad_options_are_refused_and_change_nothing(kwargs: dict, message: str) -> None:
    before = plugrad.get_printoptions()
    with pytest.raises(InvalidArgumentError, match=message):
        plugrad.set_printoptions(**kwargs)
    assert plugrad.get_printoptions() == before


def test_a_0d_tensor_formats_as_its_number_as_in_pytorch() -> None:
    loss = plugrad.tensor(0.123456, requires_grad=True)
    assert f"{loss:.4f}" == "0.1235"
    assert f"{plugrad.tensor(3)}" == "3"
    assert f"{plugrad.tensor(2.5):>6}" == "   2.5"
    vector = plugrad.tensor([1.0, 2.0])
    assert f"{vector}" == str(vector)
    with pytest.raises(TypeError, match=r"only 0-d tensors take one"):
        f"{vector:.2f}"


def test_empty_tensors_and_complex_numbers_print_as_in_pytorch() -> None:
    torch = pytest.importorskip("torch")
    for make in (
        lambda lib: lib.zeros(0, dtype=lib.int64),
        lambda lib: lib.zeros(2, 0, dtype=lib.bool),
        lambda lib: lib.zeros(0),
        lambda lib: lib.zeros(0, dtype=lib.complex64),
        lambda lib: lib.tensor([1 + 1j, 100 + 100j]),
        lambda lib: lib.tensor([[1.5 - 2j, 3 + 0.25j], [0j, -1 - 1j]]),
    ):
        assert repr(make(plugrad)).replace("plugrad.", "torch.") == repr(make(torch))
    plugrad.set_default_dtype(plugrad.float64)
    torch.set_default_dtype(torch.float64)
    try:  # the dtype left out is the default now, as there
        for dtype in ("float32", "float64"):
            ours = repr(plugrad.tensor([1.5], dtype=getattr(plugrad, dtype)))
            assert ours.replace("plugrad.", "torch.") == repr(
                torch.tensor([1.5], dtype=getattr(torch, dtype))
            )
    finally:
        plugrad.set_default_dtype(plugrad.float32)
        torch.set_default_dtype(torch.float32)


def test_pytorchs_print_option_idioms_are_taken() -> None:
    # threshold=float("inf") (print every element) was refused, as was precision=3.0.
    try:
        plugrad.set_printoptions(threshold=float("inf"), precision=3.0, sci_mode=0)
        text = repr(plugrad.arange(2000.0))
        assert "..." not in text and "1999." in text
        assert repr(plugrad.tensor([1.23456])) == "tensor([1.235])"
    finally:
        plugrad.set_printoptions(profile="default", sci_mode=None)
    with pytest.raises(InvalidArgumentError, match="precision"):
        plugrad.set_printoptions(precision=2.5)


def test_a_complex_nan_prints_without_a_sign_of_its_own() -> None:
    # NumPy's 0 * inf is a NaN with its sign bit set: it printed as 1.-nanj.
    values = [complex(1, -math.nan), complex(0, -0.0), complex(1, -2)]
    assert repr(plugrad.tensor(values)) == "tensor([1.+nanj, 0.-0.j, 1.-2.j])"


def test_a_suffix_stays_on_the_last_line_of_a_multi_line_tensor_where_pytorchs_does() -> None:
    # The prefix was counted on the last line too: requires_grad=True went to a line of its own.
    torch = pytest.importorskip("torch")
    ours = repr(plugrad.arange(18.0).reshape(2, 9).requires_grad_())
    theirs = repr(torch.arange(18.0).reshape(2, 9).requires_grad_())
    assert ours == theirs


@pytest.mark.parametrize(
    "make",
    [
        lambda lib: lib.ones(14, requires_grad=True),  # the suffix went past linewidth
        lambda lib: lib.ones(19, dtype=lib.int32),
        lambda lib: lib.tensor([3e5 + 0j] * 4),  # with sci_mode=True below: 104 characters
        lambda lib: lib.tensor([0.0, float("inf"), float("nan")]),
    ],
    ids=["requires_grad", "dtype", "complex zeros", "no nonzero finite value"],
)
@pytest.mark.parametrize("sci_mode", [None, True])
def test_layout_and_notation_are_pytorchs_at_the_edges(make, sci_mode) -> None:
    torch = pytest.importorskip("torch")
    texts = []
    for lib in (plugrad, torch):
        lib.set_printoptions(sci_mode=sci_mode)
        try:
            texts.append(repr(make(lib)).replace("plugrad.", "torch."))
        finally:
            lib.set_printoptions(profile="default")
    assert texts[0] == texts[1]


def test_a_summary_showing_no_value_gives_the_size() -> None:
    # edgeitems=0 printed tensor([ ...]): neither a value nor how many were hidden.
    with plugrad.printoptions(edgeitems=0, threshold=5):
        assert repr(plugrad.ones((3, 4))) == "tensor([...], size=(3, 4))"
