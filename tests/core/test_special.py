"""``plugrad.special`` against ``torch.special``: values and gradients on each backend."""

from __future__ import annotations

import math
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


def test_lgamma_keeps_its_relative_accuracy_next_to_its_zeros() -> None:
    # The Lanczos sum's absolute error (1e-16) was the whole value there: lgamma(1 + 1e-12)
    # was 1e-4 off and lgamma(2 - 1e-15) had the wrong sign.
    points = [1 + 1e-12, 2 - 1e-15, 1 - 1e-9, 1 + 1e-6, 0.76, 1.24, 1.76, 2.24, 1.0, 2.0]
    ours = plugrad.lgamma(plugrad.tensor(points, dtype=plugrad.float64)).numpy()
    theirs = torch.lgamma(torch.tensor(points, dtype=torch.float64)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-14, atol=0)
    assert plugrad.special.gammaln(plugrad.tensor([1.1, 2.2])).dtype is plugrad.float32


def test_erfc_reaches_zero_and_ldexp_does_not_overflow_halfway() -> None:
    far = [27.0, 27.1, 30.0, math.inf, -math.inf]
    ours = plugrad.erfc(plugrad.tensor(far, dtype=plugrad.float64)).tolist()
    assert ours == torch.erfc(torch.tensor(far, dtype=torch.float64)).tolist()  # was 5e-319
    assert plugrad.special.ndtr(plugrad.tensor([-math.inf], dtype=plugrad.float64)).item() == 0
    for values, exponents, dtype in [
        ([1e-30, 1e30, 3.0, -2.5], [150, -150, 2, -3], "float32"),
        ([0.5, 3.0, 1e-300, 5e-324], [1024, -1075, 2000, 2097], "float64"),
    ]:  # 2**exponent alone overflows or underflows where the result is finite
        ours = plugrad.ldexp(plugrad.tensor(values, dtype=getattr(plugrad, dtype)),
                             plugrad.tensor(exponents))  # fmt: skip
        theirs = torch.ldexp(torch.tensor(values, dtype=getattr(torch, dtype)),
                             torch.tensor(exponents))  # fmt: skip
        assert ours.tolist() == theirs.tolist()
