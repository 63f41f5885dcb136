"""``plugrad.special`` against ``torch.special``: values and gradients on each backend."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from torch_compare import assert_agrees

import plugrad
from plugrad.testing import backends_under_test

torch = pytest.importorskip("torch")

X = np.array([[-40.0, -6.0, -1.5, -0.25], [0.0, 0.3, 0.75, 1.0], [2.5, 6.0, 9.0, 40.0]])
UNIT = np.array([[0.01, 0.2, 0.5], [0.7, 0.9, 0.999]])

# name -> (program(lib, x), leaf); x is a float64 leaf that requires grad.
PROGRAMS: dict[str, tuple[Callable[[Any, Any], Any], np.ndarray]] = {
    "expit": (lambda lib, x: lib.special.expit(x), X),
    "logit": (lambda lib, x: lib.special.logit(x), UNIT),
    "logit eps": (lambda lib, x: lib.special.logit(x * 1.5 - 0.2, eps=0.05), UNIT),
    "erf": (lambda lib, x: lib.special.erf(x), X),
    "erfc": (lambda lib, x: lib.special.erfc(x), X),
    "ndtr": (lambda lib, x: lib.special.ndtr(x), X),
    "xlogy": (lambda lib, x: lib.special.xlogy(x, x * x + 1), X),
    "xlog1py": (lambda lib, x: lib.special.xlog1py(x, x), UNIT),
    "xlog1py zero": (lambda lib, x: lib.special.xlog1py(x * 0, x - 2), UNIT),
    "log1p": (lambda lib, x: lib.special.log1p(x), UNIT),
    "expm1": (lambda lib, x: lib.special.expm1(x), UNIT),
    "exp2": (lambda lib, x: lib.special.exp2(x), UNIT),
    "sinc": (lambda lib, x: lib.special.sinc(x), X),
    "round": (lambda lib, x: lib.special.round(x * 3), X),
    "entr": (lambda lib, x: lib.special.entr(x - 0.5), UNIT),
    "entr zero": (lambda lib, x: lib.special.entr(lib.where(x > 0.6, x, 0.0)), UNIT),
    "softmax": (lambda lib, x: lib.special.softmax(x, 1), X),
    "log_softmax": (lambda lib, x: lib.special.log_softmax(x, dim=0), X),
    "logsumexp": (lambda lib, x: lib.special.logsumexp(x, 1), X),
}


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_agrees_with_torch(name: str, backend: str) -> None:
    program, leaf = PROGRAMS[name]
    assert_agrees(program, leaf, backend)


def test_what_plugrad_cannot_compute_is_absent() -> None:
    for name in ("i0", "bessel_j0", "zeta", "ndtri"):
        assert not hasattr(plugrad.special, name)
    with pytest.raises(TypeError, match="takes a Tensor"):
        plugrad.special.ndtr(0.5)
