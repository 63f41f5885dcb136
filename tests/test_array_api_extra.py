"""Third-party Array API code under autograd: array-api-extra functions called with Tensors.

array-api-extra computes with whatever namespace its inputs belong to; given
plugrad Tensors, every step is a plugrad op, so the results carry gradients.
They are checked against finite differences and, where PyTorch is installed,
against the same array-api-extra functions run on torch tensors.
"""

from __future__ import annotations

import numpy as np
import pytest

import plugrad

xpx = pytest.importorskip("array_api_extra")

A = np.array([[1.0, 2.0, 0.5], [3.0, 4.0, -1.0]])
V = np.array([0.7, -0.2, -2.0])

# Each program is written once for any namespace: ``xp`` is plugrad or torch's.
PROGRAMS = {
    "kron-sinc": lambda xp, a, v: xp.sum(xpx.sinc(xpx.kron(a, v)) ** 2),
    "cov": lambda xp, a, v: xp.sum(xpx.cov(a * v) * xpx.cov(a)),
    "atleast_nd": lambda xp, a, v: xp.sum(xpx.atleast_nd(v, ndim=3) * a),
    "nan-reductions": lambda xp, a, v: xpx.nansum(a * v) + xpx.nanmean(a) * xpx.nanmax(v),
    "nan_to_num": lambda xp, a, v: xp.sum(xpx.nan_to_num(xp.log(xp.abs(a * v))) ** 2),
    "deg2rad": lambda xp, a, v: xp.sum(xp.sin(xpx.deg2rad(a * 40.0)) * v),
    "partition": lambda xp, a, v: xp.sum(xpx.partition(a * v, 1, axis=1) * xp.asarray(V)),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_gradients_through_array_api_extra_match_finite_differences(
    name: str, check_gradients
) -> None:
    program = PROGRAMS[name]
    check_gradients(lambda a, v: program(plugrad, a, v), A, V)


# array-api-extra's torch paths for these write in place (autograd refuses) or warn.
NOT_ON_TORCH = {"nan_to_num", "partition"}


@pytest.mark.parametrize("name", sorted(set(PROGRAMS) - NOT_ON_TORCH))
def test_gradients_through_array_api_extra_match_pytorch(name: str) -> None:
    torch = pytest.importorskip("torch")
    from array_api_compat import torch as torch_xp

    program = PROGRAMS[name]
    a, v = plugrad.asarray(A, requires_grad=True), plugrad.asarray(V, requires_grad=True)
    program(plugrad, a, v).backward()
    ta, tv = torch.tensor(A, requires_grad=True), torch.tensor(V, requires_grad=True)
    program(torch_xp, ta, tv).backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(v.grad.numpy(), tv.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_array_api_extra_sees_plugrad_as_the_namespace() -> None:
    from array_api_compat import array_namespace

    x = plugrad.ones(2, requires_grad=True)
    assert array_namespace(x) is plugrad
    assert xpx.nunique(plugrad.tensor([1.0, 2.0, 2.0])).item() == 2
