"""Small pieces of PyTorch's API that ported code calls, each checked against ``torch``:
``Tensor.apply_`` and ``map_``, ``MultiheadAttention.merge_masks``, the RNN layers'
argument checks (``check_forward_args``, ``get_expected_hidden_size``, ``permute_hidden``,
``_flat_weights``), ``parametrize.transfer_parametrizations_and_params`` and
``plugrad.testing.make_tensor``."""

from __future__ import annotations

import contextlib
import math
import warnings
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import plugrad
from plugrad import nn
from plugrad.errors import (
    ArgumentError,
    BackwardError,
    DtypeError,
    InPlaceModificationError,
    InvalidArgumentError,
    NotSupportedError,
    PlugradError,
    ScalarRangeError,
    ShapeError,
    TensorNameError,
)
from plugrad.nn.utils import parametrizations, parametrize
from plugrad.testing import backends_under_test, make_tensor

torch = pytest.importorskip("torch")


def _values(x: Any) -> Any:
    return np.asarray(x.detach().numpy())


def _same(ours: Any, theirs: Any) -> None:
    """Equal values (NaN where NaN), shapes and dtypes."""
    a, b = _values(ours), _values(theirs)
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a, b)


def _both(values: list[Any], dtype: str, device: Any = None) -> tuple[Any, Any]:
    mine = plugrad.tensor(values, dtype=getattr(plugrad, dtype), device=device)
    return mine, torch.tensor(values, dtype=getattr(torch, dtype))


# -- Tensor.apply_ and map_ ---------------------------------------------------------------

# (dtype, elements, callable): each stores what PyTorch stores
APPLIED = [
    ("float32", [1.0, -2.5, 3.25], lambda e: e * 2),
    ("float64", [0.1, 2.0], lambda e: int(e) + 1),  # ints into a float tensor
    ("int64", [1, 2, 3], lambda e: e * 2.7),  # floats truncated toward zero
    ("int32", [1, 2], lambda e: -e - 0.7),
    ("int8", [1, 2], lambda e: True),
    ("uint8", [1, 200], lambda e: 255 - e),
    ("int64", [5], lambda e: np.float64(3.9)),  # a subclass of float
    ("int64", [5], lambda e: np.int16(-4)),
    ("bool", [True, False], lambda e: 0.5),  # nonzero: True
    ("bool", [True, False], lambda e: 0j),
    ("bool", [True, False], lambda e: not e),
    ("bool", [True, False], lambda e: np.bool_(e)),
    ("float16", [1.0, 2.0], lambda e: 1e6),  # beyond float16: inf, as PyTorch's
    ("float32", [1.0, 2.0], lambda e: float("nan")),
    ("float32", [1.0, 2.0], lambda e: Fraction(1, 3)),
    ("float64", [1.0], lambda e: np.float32(0.5)),
    ("complex64", [1 + 2j, -1j], lambda e: e * 1j),
    ("complex128", [1 + 2j], lambda e: 2),  # an int into a complex tensor
    ("complex64", [1 + 2j], lambda e: e.real),
]


@pytest.mark.parametrize(("dtype", "elements", "function"), APPLIED)
def test_apply_stores_what_pytorch_stores(dtype: str, elements: list, function: Any) -> None:
    mine, theirs = _both(elements, dtype)
    assert mine.apply_(function) is mine
    theirs.apply_(function)
    _same(mine, theirs)


@pytest.mark.parametrize("dtype", ["bool", "int64", "uint8", "float16", "float32", "complex64"])
def test_apply_passes_python_numbers_of_the_dtype_kind(dtype: str) -> None:
    seen: dict[str, list[type]] = {"mine": [], "theirs": []}
    mine, theirs = _both([1, 0], dtype)
    mine.apply_(lambda e: seen["mine"].append(type(e)) or e)
    theirs.apply_(lambda e: seen["theirs"].append(type(e)) or e)
    assert seen["mine"] == seen["theirs"]
    _same(mine, theirs)


def test_apply_on_views_writes_into_the_base_as_pytorch() -> None:
    mine, theirs = plugrad.arange(6.0).reshape(2, 3), torch.arange(6.0).reshape(2, 3)
    mine[:, 1].apply_(lambda e: -e)
    theirs[:, 1].apply_(lambda e: -e)
    mine.t().apply_(lambda e: e + 100)
    theirs.t().apply_(lambda e: e + 100)
    _same(mine, theirs)
    mine, theirs = plugrad.tensor(3.0), torch.tensor(3.0)  # 0-d
    _same(mine.apply_(lambda e: e / 2), theirs.apply_(lambda e: e / 2))
    mine, theirs = plugrad.zeros(0, 3), torch.zeros(0, 3)
    _same(mine.apply_(lambda e: e + 1), theirs.apply_(lambda e: e + 1))


@pytest.mark.parametrize("backend", backends_under_test())
def test_apply_and_map_on_every_backend(backend: str) -> None:
    x = plugrad.asarray(np.arange(6.0).reshape(2, 3), device=backend)
    view = x[1]
    view.apply_(lambda e: e * 10)
    x.map_(plugrad.asarray(np.array([1.0, 2.0, 3.0]), device=backend), lambda a, b: a - b)
    expected = torch.arange(6.0, dtype=torch.float64).reshape(2, 3)
    expected[1].apply_(lambda e: e * 10)
    expected.map_(torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64), lambda a, b: a - b)
    np.testing.assert_array_equal(x.tolist(), expected.tolist())


def _requires_grad_cases(lib: Any) -> dict[str, Any]:
    leaf = lib.tensor([1.0, 2.0], requires_grad=True)
    return {"leaf": leaf, "non-leaf": leaf * 2}


@pytest.mark.parametrize("case", ["leaf", "non-leaf", "leaf under no_grad"])
@pytest.mark.parametrize("method", ["apply_", "map_ self", "map_ other"])
def test_refuses_tensors_that_require_grad_as_pytorch(case: str, method: str) -> None:
    for lib in (torch, plugrad):
        tensor = _requires_grad_cases(lib)[case.removesuffix(" under no_grad")]
        plain = lib.tensor([5.0, 6.0])
        before = _values(tensor)
        with lib.no_grad() if case.endswith("no_grad") else contextlib.nullcontext():
            with pytest.raises(RuntimeError, match="requires grad"):
                if method == "apply_":
                    tensor.apply_(lambda e: e + 1)
                elif method == "map_ self":
                    tensor.map_(plain, lambda a, b: a + b)
                else:
                    plain.map_(tensor, lambda a, b: a + b)
        np.testing.assert_array_equal(_values(tensor), before)
        np.testing.assert_array_equal(_values(plain), [5.0, 6.0])
    with pytest.raises(BackwardError, match=r"x\.detach\(\)"):
        _requires_grad_cases(plugrad)["leaf"].apply_(lambda e: e)


def test_refuses_a_view_made_under_no_grad_of_a_leaf_that_requires_grad() -> None:
    for lib in (torch, plugrad):
        leaf = lib.tensor([1.0, 2.0], requires_grad=True)
        with lib.no_grad():
            view = leaf[:1]
        with pytest.raises(RuntimeError, match="apply_"):
            view.apply_(lambda e: e + 10)
        np.testing.assert_array_equal(_values(leaf), [1.0, 2.0])


def test_apply_on_a_result_made_under_no_grad_and_on_a_detached_alias() -> None:
    for lib in (torch, plugrad):
        leaf = lib.tensor([1.0, 2.0], requires_grad=True)
        with lib.no_grad():
            y = leaf * 2
        assert not y.requires_grad
        y.apply_(lambda e: e + 1)
        np.testing.assert_array_equal(_values(y), [3.0, 5.0])
        leaf.detach().apply_(lambda e: e * 10)  # shares the leaf's memory
        np.testing.assert_array_equal(_values(leaf), [10.0, 20.0])


def test_apply_raises_the_version_so_a_saved_alias_is_caught() -> None:
    leaf = plugrad.tensor([1.0, 2.0], requires_grad=True)
    alias = leaf.detach()
    version = alias._version
    square = leaf * leaf  # saves leaf
    alias.apply_(lambda e: e + 1)
    assert alias._version == version + 1
    # PyTorch's apply_ leaves the version as it was, and this backward used the new values.
    with pytest.raises(InPlaceModificationError):
        square.sum().backward()
    x = plugrad.tensor([1.0, 2.0])
    before = x._version
    x.map_(plugrad.tensor(1.0), lambda a, b: a + b)
    assert x._version == before + 1


# (dtype, elements, callable, plugrad's error): PyTorch refuses each too
REFUSED = [
    ("float32", [1.0], lambda e: 1 + 1j, DtypeError),
    ("float32", [1.0], lambda e: "3.5", DtypeError),
    ("float32", [1.0], lambda e: None, DtypeError),
    ("float32", [1.0], lambda e: 10**400, ScalarRangeError),
    ("complex64", [1j], lambda e: "1", DtypeError),
    ("int64", [1], lambda e: np.float32(3.7), DtypeError),
    ("int64", [1], lambda e: Fraction(7, 3), DtypeError),
    ("int64", [1], lambda e: 1 + 0j, DtypeError),
    ("int64", [1], lambda e: float("inf"), ScalarRangeError),
    ("int64", [1], lambda e: 1e30, ScalarRangeError),
    ("int32", [1], lambda e: float("nan"), ScalarRangeError),
    ("int32", [1], lambda e: 2**40, ScalarRangeError),
    ("int8", [1], lambda e: 300, ScalarRangeError),
    ("int8", [1], lambda e: -129, ScalarRangeError),
    ("uint8", [1], lambda e: 256, ScalarRangeError),
    ("uint8", [1], lambda e: -1.5, ScalarRangeError),
    ("bool", [True], lambda e: "x", DtypeError),
    ("bool", [True], lambda e: np.float32(0.0), DtypeError),
    ("int64", [1], lambda e: np.True_, DtypeError),
]


@pytest.mark.parametrize(("dtype", "elements", "function", "error"), REFUSED)
def test_refuses_results_pytorch_refuses(dtype: str, elements: list, function: Any, error: type):
    mine, theirs = _both(elements, dtype)
    with pytest.raises((TypeError, ValueError, RuntimeError, OverflowError)):
        theirs.apply_(function)
    before = _values(mine)
    with pytest.raises(error, match="callable returned"):
        mine.apply_(function)
    np.testing.assert_array_equal(_values(mine), before)


def test_negative_values_into_unsigned_are_refused_where_pytorch_wraps_them() -> None:
    mine, theirs = _both([1, 2], "uint8")
    theirs.apply_(lambda e: -200)  # 56, wrapped around
    assert theirs.tolist() == [56, 56]
    with pytest.raises(ScalarRangeError, match="uint8"):
        mine.apply_(lambda e: -200)
    assert mine.tolist() == [1, 2]


def test_a_callable_that_raises_leaves_the_tensor_unchanged() -> None:
    def failing(e: float) -> float:
        if e == 2:
            raise KeyError("two")
        return e * 10

    for lib, expected in ((torch, [10.0, 2.0, 3.0]), (plugrad, [1.0, 2.0, 3.0])):
        x = lib.tensor([1.0, 2.0, 3.0])
        with pytest.raises(KeyError, match="two"):
            x.apply_(failing)
        # PyTorch has written the elements before the failure; plugrad none
        assert x.tolist() == expected


@pytest.mark.parametrize(
    "other", [[[1.0], [2.0]], 5.0, [10.0, 20.0, 30.0], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]]
)
def test_map_broadcasts_other_as_pytorch(other: Any) -> None:
    start = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    mine, theirs = _both(start, "float32")
    o_mine, o_theirs = _both(other, "float32")
    assert mine.map_(o_mine, lambda a, b: a * 10 + b) is mine
    theirs.map_(o_theirs, lambda a, b: a * 10 + b)
    _same(mine, theirs)


def test_map_stores_as_apply_does() -> None:
    mine, theirs = _both([[1, 2, 3]], "int64")
    o_mine, o_theirs = _both([1, 1, 1], "int64")
    mine.map_(o_mine, lambda a, b: a / 2 + b)
    theirs.map_(o_theirs, callable=lambda a, b: a / 2 + b)
    _same(mine, theirs)


@pytest.mark.parametrize(
    ("other", "error"),
    [
        (lambda lib: lib.tensor([1.0, 2.0]), ShapeError),  # does not broadcast
        (lambda lib: lib.ones(2, 2, 3), ShapeError),  # more dims than self
        (lambda lib: lib.tensor([1, 2, 3]), DtypeError),  # another dtype
        (lambda lib: [1.0, 2.0, 3.0], ArgumentError),  # not a tensor
    ],
)
def test_map_refuses_what_pytorch_refuses(other: Any, error: type) -> None:
    theirs = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    with pytest.raises((TypeError, RuntimeError)):
        theirs.map_(other(torch), lambda a, b: a)
    mine = plugrad.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    with pytest.raises(error, match="map_"):
        mine.map_(other(plugrad), lambda a, b: a)
    assert mine.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]


def test_a_callable_must_be_callable() -> None:
    with pytest.raises(TypeError):
        torch.tensor([1.0]).apply_(3)
    with pytest.raises(ArgumentError, match="callable"):
        plugrad.tensor([1.0]).apply_(3)
    with pytest.raises(ArgumentError, match="callable"):
        plugrad.tensor([1.0]).map_(plugrad.tensor([1.0]), None)


def test_apply_refuses_accelerator_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    x = plugrad.tensor([1.0, 2.0], device="numpy")
    monkeypatch.setattr(type(x.device.backend), "dlpack_device", lambda self, d: (2, 0))
    with pytest.raises(ArgumentError, match="host memory"):
        x.apply_(lambda e: e)
    with pytest.raises(ArgumentError, match="host memory"):
        x.map_(x.clone(), lambda a, b: a)
    monkeypatch.undo()
    assert x.tolist() == [1.0, 2.0]


# -- MultiheadAttention.merge_masks -------------------------------------------------------

BATCH, LENGTH, HEADS = 3, 5, 2
_rng = np.random.default_rng(0)
MASKS = {
    "bool": _rng.random((LENGTH, LENGTH)) < 0.3,
    "float": np.where(_rng.random((LENGTH, LENGTH)) < 0.3, -np.inf, 0.0).astype(np.float32),
    "3-d": _rng.random((BATCH * HEADS, LENGTH, LENGTH)) < 0.3,
    "3-d float": _rng.standard_normal((BATCH * HEADS, LENGTH, LENGTH)).astype(np.float32),
    "flat": _rng.random(LENGTH * LENGTH) < 0.3,  # read as (L, L), as PyTorch's view
}
PADDING = {
    "bool": _rng.random((BATCH, LENGTH)) < 0.3,
    "float": np.where(_rng.random((BATCH, LENGTH)) < 0.3, -np.inf, 0.0).astype(np.float32),
}


def _masks(lib: Any, attn: str | None, padding: str | None) -> tuple[Any, Any, Any]:
    def make(array: Any) -> Any:
        return None if array is None else lib.asarray(array.copy())

    query = make(np.zeros((BATCH, LENGTH, 4), np.float32))
    return make(MASKS.get(attn)), make(PADDING.get(padding)), query


@pytest.mark.parametrize("padding", [None, "bool", "float"])
@pytest.mark.parametrize("attn", [None, *MASKS])
def test_merge_masks_as_pytorch(attn: str | None, padding: str | None) -> None:
    mine = nn.MultiheadAttention(4, HEADS, batch_first=True)
    theirs = torch.nn.MultiheadAttention(4, HEADS, batch_first=True)
    my_attn, my_padding, my_query = _masks(plugrad, attn, padding)
    merged, kind = mine.merge_masks(my_attn, my_padding, my_query)
    expected, expected_kind = theirs.merge_masks(*_masks(torch, attn, padding))
    assert kind == expected_kind
    if expected is None:
        assert merged is None
    else:
        _same(merged, expected)
    if attn is None and padding is not None:
        assert merged is my_padding  # given back as it is, as PyTorch's


@pytest.mark.parametrize(
    ("attn", "padding", "query"),
    [
        (np.zeros((4, 4), bool), None, np.zeros((BATCH, LENGTH, 4))),  # not (L, L)
        (np.zeros((7, LENGTH, LENGTH), bool), None, np.zeros((BATCH, LENGTH, 4))),
        (np.zeros((LENGTH, LENGTH), bool), np.zeros((2, LENGTH), bool), np.zeros((3, 5, 4))),
        (np.zeros((LENGTH, LENGTH), bool), None, np.zeros((LENGTH, 4))),  # not 3-d
    ],
)
def test_merge_masks_refuses_what_pytorch_refuses(attn: Any, padding: Any, query: Any) -> None:
    theirs = torch.nn.MultiheadAttention(4, HEADS, batch_first=True)

    def arguments(lib: Any) -> list[Any]:
        return [None if a is None else lib.asarray(a.copy()) for a in (attn, padding, query)]

    with pytest.raises((RuntimeError, ValueError)):
        theirs.merge_masks(*arguments(torch))
    with pytest.raises(ShapeError, match="merge_masks"):
        nn.MultiheadAttention(4, HEADS, batch_first=True).merge_masks(*arguments(plugrad))


def test_merge_masks_takes_tensors() -> None:
    attention = nn.MultiheadAttention(4, HEADS)
    with pytest.raises(ArgumentError, match="attn_mask"):
        attention.merge_masks([[True]], None, plugrad.zeros(1, 1, 4))
    with pytest.raises(ArgumentError, match="query"):
        attention.merge_masks(plugrad.zeros(1, 1), None, [[[0.0]]])


# -- the RNN layers' argument checks ---------------------------------------------------------

RNN_CONFIGS = [
    ("RNN", {}),
    ("RNN", {"batch_first": True, "num_layers": 2}),
    ("GRU", {"bidirectional": True}),
    ("GRU", {"batch_first": True, "bidirectional": True, "num_layers": 3}),
    ("LSTM", {}),
    ("LSTM", {"proj_size": 3, "bidirectional": True, "batch_first": True}),
]


def _layers(name: str, options: dict[str, Any]) -> tuple[Any, Any]:
    return getattr(nn, name)(4, 8, **options), getattr(torch.nn, name)(4, 8, **options)


@pytest.mark.parametrize(("name", "options"), RNN_CONFIGS)
def test_flat_weights_and_expected_sizes_as_pytorch(name: str, options: dict) -> None:
    mine, theirs = _layers(name, options)
    assert mine._flat_weights_names == theirs._flat_weights_names
    assert [tuple(w.shape) for w in mine._flat_weights] == [
        tuple(w.shape) for w in theirs._flat_weights
    ]
    assert [[tuple(w.shape) for w in ws] for ws in mine.all_weights] == [
        [tuple(w.shape) for w in ws] for ws in theirs.all_weights
    ]
    x = np.zeros((6, 2, 4), np.float32)
    for batch_sizes in (None, [2, 2, 1]):
        data = x if batch_sizes is None else x[0]  # (packed: (elements, input_size))
        args = [
            (lib.asarray(data), None if batch_sizes is None else lib.asarray(batch_sizes))
            for lib in (plugrad, torch)
        ]
        expected = tuple(theirs.get_expected_hidden_size(*args[1]))
        assert mine.get_expected_hidden_size(*args[0]) == expected
        if name == "LSTM":
            expected = tuple(theirs.get_expected_cell_size(*args[1]))
            assert mine.get_expected_cell_size(*args[0]) == expected


def test_flat_weights_follow_an_assigned_weight() -> None:
    rnn = nn.GRU(4, 8)
    new = nn.Parameter(plugrad.zeros(24, 8))
    rnn.weight_hh_l0 = new
    assert rnn._flat_weights[1] is new
    with pytest.raises(NotSupportedError, match="by name"):
        rnn._flat_weights = []


def _hidden(lib: Any, name: str, shapes: list[tuple[int, ...]]) -> Any:
    states = [lib.zeros(*shape) for shape in shapes]
    return tuple(states) if name == "LSTM" else states[0]


# (layer, options, input shape, hidden shapes, batch_sizes, input dtype)
FORWARD_ARGS = [
    ("RNN", {}, (5, 3, 4), [(1, 3, 8)], None, "float32"),
    ("RNN", {}, (5, 3, 4), [(1, 2, 8)], None, "float32"),
    ("RNN", {"batch_first": True}, (3, 5, 4), [(1, 3, 8)], None, "float32"),
    ("RNN", {"batch_first": True}, (3, 5, 4), [(1, 5, 8)], None, "float32"),
    ("GRU", {"num_layers": 2}, (5, 3, 4), [(1, 3, 8)], None, "float32"),
    ("GRU", {}, (5, 3), [(1, 3, 8)], None, "float32"),  # 2-d without batch sizes
    ("GRU", {}, (7, 4), [(1, 3, 8)], [3, 2, 2], "float32"),  # packed data
    ("GRU", {}, (5, 3, 4), [(1, 3, 8)], [3, 2, 2], "float32"),  # 3-d with batch sizes
    ("GRU", {}, (5, 3, 5), [(1, 3, 8)], None, "float32"),  # input_size
    ("GRU", {}, (5, 3, 4), [(1, 3, 8)], None, "float64"),  # dtype
    ("LSTM", {"proj_size": 3}, (5, 2, 4), [(1, 2, 3), (1, 2, 8)], None, "float32"),
    ("LSTM", {"proj_size": 3}, (5, 2, 4), [(1, 2, 8), (1, 2, 8)], None, "float32"),
    ("LSTM", {"proj_size": 3}, (5, 2, 4), [(1, 2, 3), (1, 2, 3)], None, "float32"),
    ("LSTM", {"bidirectional": True}, (5, 2, 4), [(2, 2, 8), (1, 2, 8)], None, "float32"),
]


@pytest.mark.parametrize(("name", "options", "shape", "hidden", "sizes", "dtype"), FORWARD_ARGS)
def test_check_forward_args_as_pytorch(
    name: str, options: dict, shape: tuple, hidden: list, sizes: Any, dtype: str
) -> None:
    mine, theirs = _layers(name, options)

    def arguments(lib: Any) -> tuple[Any, Any, Any]:
        x = lib.zeros(*shape, dtype=getattr(lib, dtype))
        batch_sizes = None if sizes is None else lib.asarray(np.array(sizes))
        return x, _hidden(lib, name, hidden), batch_sizes

    try:
        theirs.check_forward_args(*arguments(torch))
    except (RuntimeError, ValueError) as error:
        expected = error
    else:
        expected = None
    if expected is None:
        mine.check_forward_args(*arguments(plugrad))
        return
    wanted = DtypeError if isinstance(expected, ValueError) else ShapeError
    with pytest.raises(wanted) as caught:
        mine.check_forward_args(*arguments(plugrad))
    if wanted is ShapeError:  # PyTorch's words, after the layer's name
        assert str(caught.value) == f"{name}: {expected}"


def test_check_hidden_size_formats_the_message_given() -> None:
    mine, theirs = _layers("RNN", {})
    for layer, lib in ((theirs, torch), (mine, plugrad)):
        layer.check_hidden_size(lib.zeros(1, 2, 8), (1, 2, 8))
    with pytest.raises(RuntimeError) as expected:
        theirs.check_hidden_size(torch.zeros(1, 2, 7), (1, 2, 8), "want {} have {}")
    with pytest.raises(ShapeError) as caught:
        mine.check_hidden_size(plugrad.zeros(1, 2, 7), (1, 2, 8), "want {} have {}")
    assert str(caught.value) == f"RNN: {expected.value}"
    with pytest.raises(ArgumentError, match="hidden state"):
        mine.check_hidden_size([[0.0]], (1, 2, 8))


@pytest.mark.parametrize("name", ["RNN", "GRU", "LSTM"])
def test_permute_hidden_as_pytorch(name: str) -> None:
    mine, theirs = _layers(name, {"num_layers": 2})
    h = np.arange(2 * 3 * 8, dtype=np.float32).reshape(2, 3, 8)

    def hidden(lib: Any) -> Any:
        h_lib = lib.asarray(h.copy())
        return (h_lib, h_lib * -1) if name == "LSTM" else h_lib

    order = np.array([2, 0, 1])
    got = mine.permute_hidden(hidden(plugrad), plugrad.asarray(order))
    expected = theirs.permute_hidden(hidden(torch), torch.asarray(order))
    pairs = zip(got, expected, strict=True) if name == "LSTM" else [(got, expected)]
    for a, b in pairs:
        _same(a, b)
    given = hidden(plugrad)
    assert mine.permute_hidden(given, None) is given


# -- parametrize.transfer_parametrizations_and_params ------------------------------------------


class _Symmetric(nn.Module):
    def forward(self, x: Any) -> Any:
        return x.triu() + x.triu(1).mT


class _TorchSymmetric(torch.nn.Module):
    def forward(self, x: Any) -> Any:
        return x.triu() + x.triu(1).mT


def _parametrized(lib: Any, kind: str) -> Any:
    """A Linear(3, 3) of ``lib`` with ``kind`` on its weight, from the same values."""
    layer = (nn if lib is plugrad else torch.nn).Linear(3, 3)
    with lib.no_grad():
        layer.weight.copy_(lib.asarray(np.arange(9.0, dtype=np.float32).reshape(3, 3) / 7 - 0.5))
    utils = parametrizations if lib is plugrad else torch.nn.utils.parametrizations
    if kind == "orthogonal":
        return utils.orthogonal(layer)
    if kind == "weight_norm":
        return utils.weight_norm(layer)
    symmetric = _Symmetric() if lib is plugrad else _TorchSymmetric()
    transfer = parametrize if lib is plugrad else torch.nn.utils.parametrize
    return transfer.register_parametrization(layer, "weight", symmetric)


def _facts(source: Any, target: Any) -> dict[str, Any]:
    """What the transfer left, comparable across the libraries."""
    given, made = source.parametrizations.weight, target.parametrizations.weight
    originals = [k for k in ("original", "original0", "original1") if hasattr(given, k)]
    return {
        "class": type(target).__name__,
        "keys": sorted(target.state_dict()),
        "shared originals": [getattr(given, k) is getattr(made, k) for k in originals],
        "shared parametrizations": [a is b for a, b in zip(given, made, strict=True)],
        "same weight": bool((target.weight == source.weight).all()),
        "parameters": sorted(name for name, _ in target.named_parameters()),
    }


@pytest.mark.parametrize("tensor_name", [None, "weight"])
@pytest.mark.parametrize("kind", ["orthogonal", "weight_norm", "symmetric"])
def test_transfer_as_pytorch(kind: str, tensor_name: str | None) -> None:
    facts = []
    for lib in (torch, plugrad):
        source = _parametrized(lib, kind)
        target = (nn if lib is plugrad else torch.nn).Linear(3, 3)
        transfer = parametrize if lib is plugrad else torch.nn.utils.parametrize
        assert transfer.transfer_parametrizations_and_params(source, target, tensor_name) is target
        facts.append(_facts(source, target))
    assert facts[0] == facts[1]
    assert facts[1]["same weight"] and all(facts[1]["shared originals"])


def test_transfer_shares_what_is_trained() -> None:
    source = _parametrized(plugrad, "weight_norm")
    target = parametrize.transfer_parametrizations_and_params(source, nn.Linear(3, 3))
    target.weight.sum().backward()
    assert source.parametrizations.weight.original1.grad is not None
    with plugrad.no_grad():
        source.parametrizations.weight.original0.mul_(2)
    np.testing.assert_array_equal(_values(target.weight), _values(source.weight))


def test_transfer_into_a_module_without_the_tensor_as_pytorch() -> None:
    results = []
    for lib in (torch, plugrad):
        source = _parametrized(lib, "symmetric")
        module = lib.nn.Module() if lib is torch else nn.Module()
        transfer = torch.nn.utils.parametrize if lib is torch else parametrize
        target = transfer.transfer_parametrizations_and_params(source, module)
        results.append((type(target).__name__, sorted(target.state_dict()), _values(target.weight)))
    assert results[0][:2] == results[1][:2]
    np.testing.assert_allclose(results[1][2], results[0][2], rtol=1e-6)


def test_transfer_from_an_unparametrized_module_changes_nothing() -> None:
    target = nn.Linear(3, 3)
    assert parametrize.transfer_parametrizations_and_params(nn.Linear(3, 3), target) is target
    assert type(target) is nn.Linear and not parametrize.is_parametrized(target)


def test_transfer_refuses_bad_arguments_and_changes_nothing() -> None:
    source = _parametrized(plugrad, "weight_norm")
    with pytest.raises(KeyError):  # as PyTorch's
        torch.nn.utils.parametrize.transfer_parametrizations_and_params(
            _parametrized(torch, "weight_norm"), torch.nn.Linear(3, 3), "bias"
        )
    target = nn.Linear(3, 3)
    with pytest.raises(TensorNameError, match="'bias'") as caught:
        parametrize.transfer_parametrizations_and_params(source, target, "bias")
    assert isinstance(caught.value, KeyError)
    other = nn.Linear(4, 4)  # PyTorch gives it the 3 x 3 weight without a word
    with pytest.raises(ShapeError, match=r"\(4, 4\)"):
        parametrize.transfer_parametrizations_and_params(source, other)
    with pytest.raises(ArgumentError, match="two Modules"):
        parametrize.transfer_parametrizations_and_params(source, "layer")
    for module in (target, other):
        assert type(module) is nn.Linear and not parametrize.is_parametrized(module)


# -- plugrad.testing.make_tensor ---------------------------------------------------------------

DTYPES = [
    *("bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64"),
    *("float16", "float32", "float64", "complex64", "complex128"),
]


def _drawn(dtype: str, count: int = 4000, **options: Any) -> tuple[Any, Any]:
    """``make_tensor`` of plugrad and of PyTorch, as NumPy arrays (complex as their parts)."""
    theirs = torch.testing.make_tensor(count, dtype=getattr(torch, dtype), device="cpu", **options)
    mine = make_tensor(count, dtype=getattr(plugrad, dtype), **options)
    a, b = _values(mine), _values(theirs)
    assert a.dtype == b.dtype and a.shape == b.shape == (count,)
    if a.dtype.kind == "c":
        return np.concatenate([a.real, a.imag]), np.concatenate([b.real, b.imag])
    return a, b


@pytest.mark.parametrize("dtype", DTYPES)
def test_make_tensor_default_ranges_as_pytorch(dtype: str) -> None:
    plugrad.manual_seed(0)
    mine, theirs = _drawn(dtype)
    if mine.dtype.kind in "fc":  # [-9, 9), both nearly reaching each end
        for values in (mine, theirs):
            assert values.min() >= -9 and values.max() < 9
            assert values.min() < -8.9 and values.max() > 8.9
    else:  # every value of the range drawn: [-9, 10), [0, 10) unsigned, both bools
        assert set(np.unique(mine).tolist()) == set(np.unique(theirs).tolist())


# (dtype, low, high): clamped to the dtype's range, and for integers rounded up
CLAMPED = [
    ("int8", -1e60, -127),
    ("int8", 126, 1e60),
    ("uint8", -1e60, 1),
    ("int32", 0.5, 2.5),
    ("int64", -3.5, -1.5),
    ("int16", -3, 4),
    ("bool", -1, 0.5),
    ("bool", 0.5, 7),
]


@pytest.mark.parametrize(("dtype", "low", "high"), CLAMPED)
def test_make_tensor_clamps_and_rounds_as_pytorch(dtype: str, low: float, high: float) -> None:
    mine, theirs = _drawn(dtype, 400, low=low, high=high)
    assert set(np.unique(mine).tolist()) == set(np.unique(theirs).tolist())


@pytest.mark.parametrize(
    ("dtype", "low", "high"),
    [
        ("float16", 60000, 1e10),
        ("float32", -1e60, 1e60),
        ("float64", -math.inf, -1e300),
        ("complex64", 0.5, 2.5),
        ("float32", -3, 4),
    ],
)
def test_make_tensor_floats_within_the_clamped_range(dtype: str, low: float, high: float) -> None:
    mine, theirs = _drawn(dtype, 400, low=low, high=high)
    largest = float(np.finfo(mine.dtype).max)
    bottom, top = max(low, -largest), min(high, largest)
    for values in (mine, theirs):
        assert np.isfinite(values).all()
        assert values.min() >= bottom and values.max() <= top
        spread = float(values.max()) - float(values.min())
        assert spread > (top - bottom) / 2  # over the range, not at one end


def test_make_tensor_is_seeded_by_manual_seed() -> None:
    plugrad.manual_seed(3)
    first = make_tensor(2, 3, dtype=plugrad.float32)
    plugrad.manual_seed(3)
    again = make_tensor((2, 3), dtype=plugrad.float32)
    np.testing.assert_array_equal(_values(again), _values(first))


@pytest.mark.parametrize("dtype", DTYPES)
def test_make_tensor_exclude_zero(dtype: str) -> None:
    # [0, 1) draws only zeros for integers and bools; [0, 0] (warned of) for floats
    floating = dtype.startswith(("float", "complex"))
    high = 0 if floating else 1

    def draw(lib: Any, **device: Any) -> Any:
        maker = make_tensor if lib is plugrad else torch.testing.make_tensor
        dtype_ = getattr(lib, dtype)
        with pytest.warns(FutureWarning) if floating else contextlib.nullcontext():
            return _values(maker(5, dtype=dtype_, low=0, high=high, exclude_zero=True, **device))

    mine = draw(plugrad)
    if dtype.startswith("complex"):  # as PyTorch documents: both parts tiny (its code: tiny + 0j)
        tiny = np.finfo(mine.real.dtype).tiny
        np.testing.assert_array_equal(mine, np.full(5, complex(tiny, tiny), mine.dtype))
    elif dtype.startswith("float"):
        np.testing.assert_array_equal(mine, np.full(5, np.finfo(mine.dtype).tiny, mine.dtype))
    else:
        np.testing.assert_array_equal(mine, np.ones(5, mine.dtype))
    # (PyTorch's masked_fill refuses uint16 to uint64; for complex see above)
    if not dtype.startswith(("complex", "uint16", "uint32", "uint64")):
        np.testing.assert_array_equal(mine, draw(torch, device="cpu"))


def test_make_tensor_layout_and_grad_as_pytorch() -> None:
    theirs = torch.testing.make_tensor(
        3, 4, dtype=torch.float32, device="cpu", noncontiguous=True, requires_grad=True
    )
    mine = make_tensor(3, 4, dtype=plugrad.float32, noncontiguous=True, requires_grad=True)
    assert (mine.shape, mine.is_contiguous(), mine.stride()) == (
        tuple(theirs.shape),
        theirs.is_contiguous(),
        theirs.stride(),
    )
    assert mine.requires_grad and mine.is_leaf
    one = make_tensor(1, dtype=plugrad.float32, noncontiguous=True)  # too small to stride
    assert one.is_contiguous()
    assert make_tensor((), dtype=plugrad.float64).shape == ()
    assert make_tensor(
        [2, 3], dtype=plugrad.int32, memory_format=plugrad.contiguous_format
    ).shape == (2, 3)


def test_make_tensor_low_equal_high_warns_as_pytorch() -> None:
    with pytest.warns(FutureWarning):
        theirs = torch.testing.make_tensor(3, dtype=torch.float32, device="cpu", low=2, high=2)
    with pytest.warns(FutureWarning, match="plugrad.full"):
        mine = make_tensor(3, dtype=plugrad.float32, low=2, high=2)
    _same(mine, theirs)


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"low": 2, "high": 1}, InvalidArgumentError),
        ({"low": 1, "high": 1, "dtype": "int32"}, InvalidArgumentError),
        ({"low": math.nan}, InvalidArgumentError),
        ({"high": math.nan}, InvalidArgumentError),
        ({"low": 200, "high": 300, "dtype": "int8"}, InvalidArgumentError),
        ({"low": -5, "high": 0, "dtype": "uint8"}, InvalidArgumentError),
        ({"requires_grad": True, "dtype": "int64"}, InvalidArgumentError),
        ({"requires_grad": True, "dtype": "bool"}, InvalidArgumentError),
        ({"noncontiguous": True, "memory_format": "contiguous_format"}, InvalidArgumentError),
    ],
)
def test_make_tensor_refuses_what_pytorch_refuses(options: dict, error: type) -> None:
    options = dict(options)
    name = options.pop("dtype", "float32")

    def arguments(lib: Any) -> dict[str, Any]:
        given = dict(options, dtype=getattr(lib, name))
        if "memory_format" in given:
            given["memory_format"] = getattr(lib, given["memory_format"])
        return given

    with pytest.raises((ValueError, RuntimeError)):  # (RuntimeError: uint8's [-5, 0) clamped)
        torch.testing.make_tensor(3, device="cpu", **arguments(torch))
    with pytest.raises(error, match="make_tensor"):
        make_tensor(3, **arguments(plugrad))


def test_make_tensor_takes_dtypes_and_numbers() -> None:
    with pytest.raises(DtypeError, match="dtype"):
        make_tensor(3, dtype="float32")
    with pytest.raises(ArgumentError, match="low"):
        make_tensor(3, dtype=plugrad.float32, low="0")
    assert isinstance(InvalidArgumentError("x"), PlugradError)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert make_tensor(2, dtype=plugrad.float16, low=-math.inf, high=math.inf).dtype is (
            plugrad.float16
        )
