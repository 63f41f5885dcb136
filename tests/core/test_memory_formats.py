"""PyTorch's memory formats are accepted where PyTorch takes them and refused where it refuses."""

from __future__ import annotations

import copy
import pickle

import pytest

import plugrad
from plugrad.errors import InvalidArgumentError

torch = pytest.importorskip("torch")

FORMATS = ["preserve_format", "contiguous_format", "channels_last", "channels_last_3d"]
CALLS = {
    "zeros_like": lambda lib, x, f: lib.zeros_like(x, memory_format=f),
    "ones_like": lambda lib, x, f: lib.ones_like(x, memory_format=f),
    "empty_like": lambda lib, x, f: lib.empty_like(x, memory_format=f),
    "full_like": lambda lib, x, f: lib.full_like(x, 2.0, memory_format=f),
    "rand_like": lambda lib, x, f: lib.rand_like(x, memory_format=f),
    "randn_like": lambda lib, x, f: lib.randn_like(x, memory_format=f),
    "randint_like": lambda lib, x, f: lib.randint_like(x, 3, memory_format=f),
    "clone": lambda lib, x, f: x.clone(memory_format=f),
    "torch.clone": lambda lib, x, f: lib.clone(x, memory_format=f),
    "contiguous": lambda lib, x, f: x.contiguous(memory_format=f),
}


@pytest.mark.parametrize("ndim", [2, 4, 5])
@pytest.mark.parametrize("name", FORMATS)
@pytest.mark.parametrize("call", list(CALLS))
def test_accepted_and_refused_as_in_pytorch(call: str, name: str, ndim: int) -> None:
    shape = (2, 3, 1, 2, 1)[:ndim]
    transposed = plugrad.ones(shape).permute(*reversed(range(ndim)))
    if call == "contiguous" and name == "preserve_format" and transposed.is_contiguous():
        pytest.skip("the default backend's arrays have no layout: every one is contiguous")
    outcomes = []
    for lib in (plugrad, torch):
        x = lib.ones(shape).permute(*reversed(range(ndim)))  # not row-major
        try:
            result = CALLS[call](lib, x, getattr(lib, name))
        except (RuntimeError, ValueError):
            outcomes.append("refused")
        else:
            assert tuple(result.shape) == tuple(x.shape) and result.dtype.is_floating_point
            outcomes.append("accepted")
    assert outcomes[0] == outcomes[1]


def test_values_and_gradients_do_not_depend_on_the_format() -> None:
    x = plugrad.arange(24.0).reshape(1, 2, 3, 4).requires_grad_()
    y = x.clone(memory_format=plugrad.channels_last)
    assert y.tolist() == x.tolist()
    (y * y).sum().backward()
    assert x.grad.tolist() == (2 * x).tolist()


def test_a_channels_last_layout_is_not_answered_from_the_row_major_one() -> None:
    x = plugrad.ones(2, 3, 4, 5)
    assert x.is_contiguous(memory_format=plugrad.contiguous_format)
    for name in ("channels_last",):
        with pytest.raises(InvalidArgumentError, match="does not track channels-last"):
            x.is_contiguous(memory_format=getattr(plugrad, name))


def test_other_values_are_refused_and_formats_are_singletons() -> None:
    for bad in ("channels_last", 1, torch.channels_last):
        with pytest.raises(TypeError, match="memory_format must be one of"):
            plugrad.zeros_like(plugrad.ones(2), memory_format=bad)
        with pytest.raises(TypeError, match="memory_format must be one of"):
            plugrad.ones(2).to(memory_format=bad)
    layer = plugrad.nn.Linear(2, 2)
    assert layer.to(memory_format=plugrad.channels_last, non_blocking=True) is layer
    for fmt in (plugrad.preserve_format, plugrad.channels_last):
        assert pickle.loads(pickle.dumps(fmt)) is fmt and copy.deepcopy(fmt) is fmt
    assert repr(plugrad.channels_last) == "plugrad.channels_last"
