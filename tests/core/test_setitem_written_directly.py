"""``x[key] = number`` and ``x[key] = tensor``: written by the array itself where nothing
records it, with the general path's values, errors and versions, into the tensor's own memory."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import plugrad
from plugrad import inplace
from plugrad.errors import (
    IndexOutOfRangeError,
    InPlaceModificationError,
    PlugradError,
    ReadOnlyViewError,
    ScalarRangeError,
)

DTYPES = ["bool", "int8", "uint8", "int32", "int64", "float16", "float32", "float64", "complex64"]
NUMBERS = [True, 0, -1, 7, 300, 2**40, 2.7, -3.9, -0.0, 1e5, 1e39, math.inf, math.nan]
KEYS: list[Any] = [1, -1, (0, 1), (slice(None), 0), (slice(1, None, 2), Ellipsis), (None, 0)]


def _outcome(backend: str, dtype: str, key: Any, number: Any) -> tuple[Any, ...]:
    x = plugrad.zeros((3, 4), dtype=getattr(plugrad, dtype), device=backend)
    before = x._version
    try:
        x[key] = number
    except PlugradError as error:
        return (type(error), x._version - before, x.cpu().numpy().tolist())
    return (None, x._version - before, x.cpu().numpy().tolist())


def _supported(backend: str, dtype: str) -> bool:
    try:
        plugrad.zeros(1, dtype=getattr(plugrad, dtype), device=backend)
    except PlugradError:
        return False
    return True


def test_a_number_written_directly_matches_the_general_path(
    installed_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    cases = [
        (dtype, key, number)
        for dtype in DTYPES
        if _supported(installed_backend, dtype)
        for key in KEYS
        for number in NUMBERS
    ]
    direct = [_outcome(installed_backend, *case) for case in cases]
    monkeypatch.setattr(inplace, "_write_directly", lambda *arguments: False)
    general = [_outcome(installed_backend, *case) for case in cases]
    for case, ours, expected in zip(cases, direct, general, strict=True):
        assert repr(ours) == repr(expected), case  # repr: NaN equals NaN
    refused = sum(outcome[0] is ScalarRangeError for outcome in direct)
    assert refused and refused < len(cases)  # both kinds of case were met


#: Values of x[key] = value for x of shape (3, 4): made from x itself (overlapping it) or new.
TENSOR_VALUES: list[Any] = [
    lambda x: plugrad.full((), 5.0, dtype=x.dtype, device=x.device),
    lambda x: plugrad.arange(4.0, device=x.device).to(x.dtype),
    lambda x: plugrad.ones((1, 4), dtype=x.dtype, device=x.device),
    lambda x: plugrad.ones((1, 1, 4), dtype=x.dtype, device=x.device),
    lambda x: plugrad.ones(3, dtype=x.dtype, device=x.device),  # fits only some keys
    lambda x: plugrad.ones(5, dtype=x.dtype, device=x.device),  # fits none
    lambda x: x[2],
    lambda x: x[:, 1],
    lambda x: plugrad.ones(4, dtype=plugrad.float64, device=x.device),  # another dtype
]
TENSOR_KEYS: list[Any] = [1, (slice(None), 0), (slice(0, 2), Ellipsis), (None, 0), (slice(None),)]


def _tensor_outcome(backend: str, key: Any, make: Any) -> tuple[Any, ...]:
    x = plugrad.arange(12.0, device=backend).reshape(3, 4).float()
    before = x._version
    try:
        x[key] = make(x)
    except PlugradError as error:
        return (type(error), x._version - before, x.cpu().numpy().tolist())
    return (None, x._version - before, x.cpu().numpy().tolist())


def test_a_tensor_written_directly_matches_the_general_path(
    installed_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    cases = [(key, make) for key in TENSOR_KEYS for make in TENSOR_VALUES]
    direct = [_tensor_outcome(installed_backend, *case) for case in cases]
    monkeypatch.setattr(inplace, "_write_directly", lambda *arguments: False)
    general = [_tensor_outcome(installed_backend, *case) for case in cases]
    for (key, make), ours, expected in zip(cases, direct, general, strict=True):
        assert ours == expected, (key, TENSOR_VALUES.index(make))
    assert any(outcome[0] is None for outcome in direct)
    assert any(outcome[0] is not None for outcome in direct)


def test_a_tensor_written_into_a_row_changes_only_that_row() -> None:
    x = plugrad.zeros(1000, 8)
    shared = x.numpy()
    row = plugrad.arange(8.0)
    x[3] = row
    x[4, 2:] = row[:6]
    assert shared[3].tolist() == row.tolist() and shared[4, 2:].tolist() == row[:6].tolist()
    assert float(x.sum()) == 28.0 + 15.0 and x._version == 2


def test_the_write_reaches_memory_shared_with_views_and_numpy() -> None:
    x = plugrad.zeros(5)
    shared = x.numpy()
    tail = x[2:]
    x[3] = 4.0
    tail[0] = 2.0
    assert shared.tolist() == [0.0, 0.0, 2.0, 4.0, 0.0]
    assert x.tolist() == [0.0, 0.0, 2.0, 4.0, 0.0]
    assert x._version == tail._version == 2


def test_an_index_out_of_range_changes_nothing() -> None:
    x = plugrad.arange(4.0)
    with pytest.raises(IndexOutOfRangeError, match="index 4 is out of bounds"):
        x[4] = 1.0
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0] and x._version == 0


def test_a_number_the_dtype_cannot_hold_is_refused_and_changes_nothing() -> None:
    x = plugrad.zeros(3, dtype=plugrad.uint8)
    with pytest.raises(ScalarRangeError, match="out of the range of uint8"):
        x[0] = 300
    with pytest.raises(ScalarRangeError):
        x[1] = math.nan
    assert x.tolist() == [0, 0, 0] and x._version == 0


def test_a_real_number_beyond_a_complex_dtype_is_refused_as_in_pytorch() -> None:
    # PyTorch: "value cannot be converted to type c10::complex<float> without overflow".
    z = plugrad.zeros(2, dtype=plugrad.complex64)
    with pytest.raises(ScalarRangeError, match="out of the range of complex64"):
        z[0] = 1e39
    with pytest.raises(ScalarRangeError, match=r"out of the range of complex64"):
        z.fill_(-1e39)
    assert z.tolist() == [0j, 0j] and z._version == 0
    z[0] = 2.0**127
    z[1] = math.inf
    assert z.tolist() == [complex(2.0**127, 0), complex(math.inf, 0)]


def test_a_view_made_under_no_grad_of_a_tensor_requiring_grad_is_refused_outside_it() -> None:
    w = plugrad.ones(3, requires_grad=True)
    with plugrad.no_grad():
        v = w[1:]
    with pytest.raises(InPlaceModificationError, match="under no_grad"):
        v[0] = 2.0
    with plugrad.no_grad():
        v[0] = 2.0
    assert w.tolist() == [1.0, 2.0, 1.0]


def test_a_broadcast_view_is_refused_and_its_base_left_as_it_was() -> None:
    x = plugrad.zeros(4)
    b = plugrad.broadcast_to(x, (3, 4))
    with pytest.raises(ReadOnlyViewError):
        b[0, 0] = 1.0
    assert x.tolist() == [0.0] * 4


def test_read_only_memory_no_tensor_shares_is_replaced_not_written() -> None:
    held = np.zeros(3)
    held.flags.writeable = False
    x = plugrad.asarray(held)
    x[0] = 1.0
    assert x.tolist() == [1.0, 0.0, 0.0] and held.tolist() == [0.0, 0.0, 0.0]


def test_a_write_recorded_by_autograd_takes_the_general_path() -> None:
    x = plugrad.ones(3, requires_grad=True)
    y = x * 1.0
    y[0] = 5.0
    y.sum().backward()
    assert y.tolist() == [5.0, 1.0, 1.0]
    assert x.grad is not None and x.grad.tolist() == [0.0, 1.0, 1.0]


def test_a_compiled_step_replays_its_writes() -> None:
    def step(x: plugrad.Tensor, value: float) -> plugrad.Tensor:
        out = x * 2.0
        out[0] = value
        return out.sum()

    compiled = plugrad.compile(step)
    for value in (1.0, 2.0, 3.0):
        x = plugrad.arange(3.0)
        assert compiled(x, value).item() == step(x, value).item() == value + 6.0
