"""Which results share their input's memory, against ``torch``, on every backend under test.

A call whose parameters change nothing (a factor of 1, a padding of 0, a running sum over
one element, ``matrix_power(x, 1)``, ``rot90(x, 0)``) handed back its input, or a view of
it, where PyTorch gives new memory: a later ``x.add_(1)`` then changed the result without
a word. On the torch backend ``clone()`` of a tensor requiring grad was the tensor itself
(``torch.positive`` returns its argument). Views stay views where PyTorch's are.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

import plugrad
from plugrad.testing import backends_under_test

torch = pytest.importorskip("torch")

# name -> (input shape, program(lib, x)); the same program runs on plugrad and torch
CALLS: dict[str, tuple[tuple[int, ...], Callable[[Any, Any], Any]]] = {
    "clone": ((2,), lambda lib, x: x.clone()),
    "clone of a tensor requiring grad": ((2,), lambda lib, x: x.requires_grad_().clone()),
    "positive of a tensor requiring grad": ((2,), lambda lib, x: lib.positive(x * 1)),
    "diag of a matrix": ((2, 2), lambda lib, x: lib.diag(x)),
    "rot90 by 0": ((2, 2), lambda lib, x: lib.rot90(x, 0)),
    "rot90 by 4": ((2, 2), lambda lib, x: lib.rot90(x, 4)),
    "rot90 by 1": ((2, 2), lambda lib, x: lib.rot90(x, 1)),
    "fliplr": ((2, 2), lambda lib, x: lib.fliplr(x)),
    "logcumsumexp over one element": ((1, 2), lambda lib, x: lib.logcumsumexp(x, 0)),
    "cummax over one element": ((1, 2), lambda lib, x: lib.cummax(x, 0).values),
    "cumsum over one element": ((1,), lambda lib, x: lib.cumsum(x, 0)),
    "diff with n=0": ((3,), lambda lib, x: lib.diff(x, n=0)),
    "matrix_power 1": ((2, 2), lambda lib, x: lib.linalg.matrix_power(x, 1)),
    "pad by 0": ((2, 2), lambda lib, x: lib.nn.functional.pad(x, (0, 0))),
    "pad cropping only": ((2, 3), lambda lib, x: lib.nn.functional.pad(x, (-1, 0))),
    "pixel_shuffle by 1": ((1, 1, 2, 2), lambda lib, x: lib.nn.functional.pixel_shuffle(x, 1)),
    "pixel_shuffle of 1x1 pixels": (
        (1, 4, 1, 1), lambda lib, x: lib.nn.functional.pixel_shuffle(x, 2)),
    "pixel_unshuffle by 1": (
        (1, 1, 2, 2), lambda lib, x: lib.nn.functional.pixel_unshuffle(x, 1)),
    "channel_shuffle by 1": (
        (1, 2, 2, 2), lambda lib, x: lib.nn.functional.channel_shuffle(x, 1)),
    "max_pool2d of kernel 1": ((1, 1, 2, 2), lambda lib, x: lib.nn.functional.max_pool2d(x, 1)),
    "adaptive_avg_pool2d to the same size": (
        (1, 1, 2, 2), lambda lib, x: lib.nn.functional.adaptive_avg_pool2d(x, (2, 2))),
    "interpolate to the same size": (
        (1, 1, 2, 2), lambda lib, x: lib.nn.functional.interpolate(x, size=(2, 2))),
    "sort of one element": ((1,), lambda lib, x: x.sort().values),
    "tile by 1": ((2,), lambda lib, x: lib.tile(x, (1,))),
    "roll by 0": ((2,), lambda lib, x: lib.roll(x, 0)),
    "nan_to_num": ((2,), lambda lib, x: lib.nan_to_num(x)),
    "where all true": ((2,), lambda lib, x: lib.where(lib.ones(2, dtype=lib.bool), x, 0.0)),
    # views in both
    "narrow": ((2,), lambda lib, x: x.narrow(0, 0, 2)),
    "diagonal": ((2, 2), lambda lib, x: x.diagonal()),
    "expand": ((1,), lambda lib, x: x.expand(2)),
    "split": ((2,), lambda lib, x: x.split(1)[0]),
    "flatten": ((2, 2), lambda lib, x: x.flatten()),
    "dropout in eval": ((2,), lambda lib, x: lib.nn.functional.dropout(x, 0.5, training=False)),
}  # fmt: skip


def _changed_with_input(lib: Any, shape: tuple[int, ...], program: Callable[..., Any]) -> bool:
    x = lib.arange(1.0, math.prod(shape) + 1.0).reshape(shape)
    result = program(lib, x)
    before = result.detach().tolist()
    with lib.no_grad():
        x.add_(100)
    return result.detach().tolist() != before


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", CALLS)
def test_a_result_shares_its_inputs_memory_only_where_pytorchs_does(name: str, backend: str):
    shape, program = CALLS[name]
    with plugrad.use_backend(backend):
        ours = _changed_with_input(plugrad, shape, program)
    theirs = _changed_with_input(torch, shape, program)
    assert ours == theirs, f"{name}: {'a view' if ours else 'a copy'} on {backend}"
