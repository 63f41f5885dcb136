"""Every Tensor method and name of the PyTorch surface, run in plugrad and in ``torch``.

One row per name the surface promises (the Tensor methods PyTorch users type
daily, their in-place forms, the namespace names and factories). Both
libraries run the row's program from the same values; every returned tensor
must agree in dtype, shape and values, and the gradient of a weighted sum of
its float outputs with respect to the leaf must agree too. Runs on every
backend under test. Other tables test more calling forms of many of these
names (``test_torch_methods.py``, ``test_pytorch_names.py``,
``test_inplace_methods.py``); this one is the checklist.
"""

from __future__ import annotations

import math
import subprocess
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from torch_compare import as_tensor as _tensor
from torch_compare import assert_agrees

import plugrad
from plugrad.testing import backends_under_test

torch = pytest.importorskip("torch")

# Positive and distinct: in the domain of log and sqrt, and without ties.
X = np.array([[0.5, 0.25, 2.0, 0.75], [3.0, 1.25, 0.125, 1.5], [0.375, 1.75, 1.0, 2.5]])


def _index(lib: Any) -> Any:
    return _tensor(lib, np.array([[2, 0], [1, 3], [0, 0]]))


def _distinct_index(lib: Any) -> Any:
    """Indices along axis 1 without repeats in a row: scatter's result is then unique."""
    return _tensor(lib, np.array([[2, 0], [1, 3], [0, 3]]))


def _deprecated_in_torch(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``call(*args, **kwargs)`` without the deprecation warning PyTorch gives for it."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "The reduce argument of torch.scatter", UserWarning)
        return call(*args, **kwargs)


def _in_place(method: str, *args: Any) -> Callable[[Any, Any], Any]:
    """``y = x * 1; y.<method>(*args)``: recorded on a tensor that is not a leaf."""

    def program(lib: Any, x: Any) -> Any:
        y = x * 1.0
        result = getattr(y, method)(*(a(lib, x) if callable(a) else a for a in args))
        assert result is y
        return y

    return program


# name -> program(lib, x); x is a float64 (3, 4) leaf that requires grad.
METHODS: dict[str, Callable[[Any, Any], Any]] = {
    "view": lambda lib, x: x.view(4, 3),
    "reshape": lambda lib, x: x.reshape(2, 6),
    "flatten": lambda lib, x: x.flatten(),
    "unsqueeze": lambda lib, x: x.unsqueeze(1),
    "squeeze": lambda lib, x: x[:, :1].squeeze(),
    "permute": lambda lib, x: x.permute(1, 0),
    "transpose": lambda lib, x: x.transpose(0, 1),
    "t": lambda lib, x: x.t(),
    "expand": lambda lib, x: x[:1].expand(3, 4),
    "expand_as": lambda lib, x: x[:, :1].expand_as(x),
    "repeat": lambda lib, x: x.repeat(2, 1),
    "contiguous": lambda lib, x: x.contiguous(),
    "clone": lambda lib, x: x.clone(),
    "numel": lambda lib, x: x.numel(),
    "dim": lambda lib, x: x.dim(),
    "float": lambda lib, x: x.float(),
    "double": lambda lib, x: x.float().double(),
    "half": lambda lib, x: x.half(),
    "long": lambda lib, x: x.long(),
    "int": lambda lib, x: x.int(),
    "bool": lambda lib, x: (x - 1.0).bool(),
    "to": lambda lib, x: x.to(lib.float32),
    "cpu": lambda lib, x: x.cpu(),
    "type_as": lambda lib, x: x.type_as(_tensor(lib, np.zeros(1, dtype=np.float32))),
    "new_zeros": lambda lib, x: x.new_zeros(2, 3),
    "new_ones": lambda lib, x: x.new_ones((2,)),
    "new_full": lambda lib, x: x.new_full((2,), 3.5),
    "new_tensor": lambda lib, x: x.new_tensor([1.0, 2.0]),
    **{
        name: (lambda method: lambda lib, x: getattr(x, method)())(name)
        for name in (
            "abs",
            "neg",
            "exp",
            "log",
            "log1p",
            "expm1",
            "sqrt",
            "rsqrt",
            "square",
            "sin",
            "cos",
            "tan",
            "sinh",
            "cosh",
            "tanh",
            "asinh",
            "atan",
            "sigmoid",
            "relu",
            "floor",
            "ceil",
            "round",
            "trunc",
            "sign",
            "reciprocal",
            "log2",
            "log10",
            "erf",
            "exp2",
            "frac",
        )
    },
    "pow": lambda lib, x: x.pow(3),
    "clamp": lambda lib, x: x.clamp(min=0.4, max=2.2),
    "clip": lambda lib, x: x.clip(0.4, 2.2),
    "maximum": lambda lib, x: x.maximum(x.flip(1)),
    "minimum": lambda lib, x: x.minimum(x.flip(0)),
    "mm": lambda lib, x: x.mm(x.t()),
    "bmm": lambda lib, x: x[None].bmm(x.t()[None]),
    "matmul": lambda lib, x: x.matmul(x.t()),
    "dot": lambda lib, x: x[0].dot(x[1]),
    "outer": lambda lib, x: x[0].outer(x[1]),
    "sum": lambda lib, x: x.sum(dim=1, keepdim=True),
    "mean": lambda lib, x: x.mean(dim=0),
    "prod": lambda lib, x: x.prod(1),
    "std": lambda lib, x: x.std(dim=1),
    "var": lambda lib, x: x.var(0, keepdim=True),
    "norm": lambda lib, x: x.norm(dim=1, keepdim=True),
    "max": lambda lib, x: tuple(x.max(dim=1)),
    "min": lambda lib, x: tuple(x.min(0, keepdim=True)),
    "max()": lambda lib, x: x.max(),
    "argmax": lambda lib, x: x.argmax(dim=1),
    "argmin": lambda lib, x: x.argmin(0, keepdim=True),
    "softmax": lambda lib, x: x.softmax(dim=1),
    "log_softmax": lambda lib, x: x.log_softmax(0),
    "cumsum": lambda lib, x: x.cumsum(dim=1),
    "topk": lambda lib, x: tuple(x.topk(2)),
    "sort": lambda lib, x: tuple(x.sort(dim=0, descending=True)),
    "argsort": lambda lib, x: x.argsort(dim=1),
    "gather": lambda lib, x: x.gather(1, _index(lib)),
    "index_select": lambda lib, x: x.index_select(0, _tensor(lib, np.array([2, 0]))),
    "masked_fill": lambda lib, x: x.masked_fill(x > 1.0, 0.0),
    "where": lambda lib, x: x.where(x > 1.0, x * x),
    "chunk": lambda lib, x: x.chunk(2, dim=1),
    "split": lambda lib, x: x.split([1, 3], dim=1),
    "unbind": lambda lib, x: x.unbind(1),
    "flip": lambda lib, x: x.flip(0),
    "flip(dims=)": lambda lib, x: x.flip(dims=(1,)),
    "flip(*dims)": lambda lib, x: x.flip(0, 1),
    "roll": lambda lib, x: x.roll(1, 1),
    "roll(shifts=, dims=)": lambda lib, x: x.roll(shifts=(1, 2), dims=(0, 1)),
    "diff": lambda lib, x: x.diff(),
    "diff(n, dim)": lambda lib, x: x.diff(2, 0),
    "tril": lambda lib, x: x.tril(),
    "triu": lambda lib, x: x.triu(1),
    "all": lambda lib, x: (x > 0.2).all(dim=1),
    "any": lambda lib, x: (x > 2.0).any(0),
    **{
        name: (lambda method: lambda lib, x: getattr(x, method)(1.0))(name)
        for name in ("eq", "ne", "gt", "ge", "lt", "le")
    },
    "nonzero": lambda lib, x: (x > 1.0).nonzero(),
    "nonzero(as_tuple=True)": lambda lib, x: (x > 1.0).nonzero(as_tuple=True),
    "nonzero(0-d)": lambda lib, x: (x[0, 0].nonzero(), (x[0, 0] * 0).nonzero()),
    "nonzero(0-d, as_tuple=True)": lambda lib, x: x[0, 0].nonzero(as_tuple=True),
    "is_floating_point": lambda lib, x: (x.is_floating_point(), x.long().is_floating_point()),
    "is_complex": lambda lib, x: (x.is_complex(), (x * 1j).is_complex()),
    "is_contiguous": lambda lib, x: x.is_contiguous(),
    "nelement": lambda lib, x: x.nelement(),
    "narrow": lambda lib, x: x.narrow(1, 1, 2),
    "narrow(negative start)": lambda lib, x: x.narrow(0, -2, 2),
    "scatter": lambda lib, x: x.scatter(1, _distinct_index(lib), x[:, 1:3] * 2),
    "scatter(value)": lambda lib, x: x.scatter(1, _distinct_index(lib), 0.5),
    "scatter_add": lambda lib, x: x.scatter_add(1, _index(lib), x[:, :2] * 3),
    **{
        f"scatter_reduce({reduce}, include_self={include})": (
            lambda lib, x, reduce=reduce, include=include: x.scatter_reduce(
                1, _index(lib), x.flip(0)[:, :2] * 1.25, reduce, include_self=include
            )
        )
        for reduce in ("sum", "prod", "mean", "amax", "amin")
        for include in (True, False)
    },
    "scatter_reduce(amax) with ties": lambda lib, x: x.scatter_reduce(
        1, _tensor(lib, np.zeros((3, 2), dtype=np.int64)), x[:, :2] * 0 + x[:, :1], "amax"
    ),
    "scatter_reduce(prod) with zeros": lambda lib, x: (x - 0.5).scatter_reduce(
        1, _index(lib), (x - 0.125)[:, 1:3], "prod"
    ),
    "scatter_reduce(prod) with two zeros": lambda lib, x: (x - 0.5).scatter_reduce(
        0, _tensor(lib, np.zeros((2, 4), dtype=np.int64)), (x - 0.5)[:2] * 0 + (x[0] - 0.5), "prod"
    ),
    "scatter_reduce(mean) of ints": lambda lib, x: _tensor(lib, [[1, 2, 3, 4]]).scatter_reduce(
        1, _tensor(lib, [[0, 0, 1]]), _tensor(lib, [[5, 6, 8]]), "mean"
    ),
    # PyTorch has no gradient for scatter(reduce=): values only (plugrad's is scatter_reduce's).
    "scatter(reduce='add')": lambda lib, x: _deprecated_in_torch(
        x.detach().scatter, 1, _index(lib), x[:, 1:3].detach(), reduce="add"
    ),
    "scatter(value, reduce='multiply')": lambda lib, x: x.detach().scatter(
        1, _index(lib), 2.0, reduce="multiply"
    ),
    "scatter_reduce with src larger than index": lambda lib, x: x.detach().scatter_reduce(
        1, _index(lib), x.detach() * 2, "sum"
    ),
    "masked_select": lambda lib, x: x.masked_select(x > 1.0),
    "masked_select(broadcast)": lambda lib, x: x.masked_select(x[0] > 0.6),
    "allclose": lambda lib, x: (x.allclose(x + 1e-9), x.allclose(x * 1.001)),
    "isclose": lambda lib, x: x.isclose(x * (1 + 1e-6 * (x - 1.0)), rtol=1e-6),
    "add_": _in_place(
        "add_",
        lambda lib, x: x.flip(0),
    ),
    "sub_": _in_place("sub_", 0.5),
    "div_(rounding_mode=)": lambda lib, x: (x * 1.0).div_(0.3, rounding_mode="trunc"),
    "mul_": _in_place("mul_", lambda lib, x: x.flip(1)),
    "div_": _in_place("div_", 4.0),
    "clamp_": _in_place("clamp_", 0.4, 2.2),
    "exp_": _in_place("exp_"),
    "zero_": _in_place("zero_"),
    "fill_": _in_place("fill_", 2.5),
    "copy_": _in_place("copy_", lambda lib, x: x.flip(0) * 2),
    "lt_": _in_place("lt_", 1.0),
    "eq_": _in_place("eq_", lambda lib, x: x.flip(0).flip(0)),
    "scatter_": _in_place(
        "scatter_", 1, lambda lib, x: _distinct_index(lib), lambda lib, x: x[:, 1:3] * 2
    ),
    "scatter_reduce_": _in_place(
        "scatter_reduce_", 1, lambda lib, x: _index(lib), lambda lib, x: x[:, :2] * 3, "amax"
    ),
    "scatter_add_": _in_place(
        "scatter_add_", 1, lambda lib, x: _index(lib), lambda lib, x: x[:, :2] * 3
    ),
    "squeeze_": lambda lib, x: (x[:, :1] * 1.0).squeeze_(1),
    "unsqueeze_": _in_place("unsqueeze_", 0),
    "t_": _in_place("t_"),
    "transpose_": _in_place("transpose_", 1, 0),
    # dims as PyTorch code spells them: lists (global average pooling), NumPy integers
    "x.mean([dims])": lambda lib, x: x.reshape(1, 1, 3, 4).mean([2, 3]),
    "x.sum(dim=[dims], keepdim=)": lambda lib, x: x.sum(dim=[1], keepdim=True),
    "x.amax([dims])": lambda lib, x: x.amax([0, 1]),
    "x.std([dims])": lambda lib, x: x.std([0]),
    "x.var(dim=[dims])": lambda lib, x: x.var(dim=[0, 1]),
    "x.max(numpy int)": lambda lib, x: x.max(np.int64(1)),
    "x.cumsum(numpy int)": lambda lib, x: x.cumsum(np.int64(0)),
    "x[int, :, list]": lambda lib, x: x.reshape(1, 3, 4)[0, :, [3, 1, 3]],
}


def _inference(lib: Any, x: Any) -> tuple[bool, bool, bool]:
    with lib.inference_mode():
        inside = (x * 2).requires_grad, lib.is_grad_enabled()
    return (*inside, lib.is_grad_enabled())


NAMES: dict[str, Callable[[Any, Any], Any]] = {
    "float, double, half, long, int, short, cfloat, cdouble": lambda lib, x: tuple(
        getattr(lib, n) is getattr(lib, m)
        for n, m in (
            ("float", "float32"),
            ("double", "float64"),
            ("half", "float16"),
            ("long", "int64"),
            ("int", "int32"),
            ("short", "int16"),
            ("cfloat", "complex64"),
            ("cdouble", "complex128"),
        )
    ),
    "cat": lambda lib, x: lib.cat([x, x], dim=1),
    # PyTorch joins a 1-d empty tensor to any shape as nothing (collecting loops start from
    # torch.tensor([])); it was refused.
    "cat with tensor([])": lambda lib, x: (
        lib.cat([lib.tensor([], dtype=x.dtype), x]),
        lib.cat((x, lib.zeros(0, dtype=x.dtype)), 1),
        lib.concatenate([lib.tensor([], dtype=x.dtype), x[0], lib.tensor([], dtype=x.dtype)]),
    ),
    "clamp": lambda lib, x: lib.clamp(x, min=0.5),
    "mm": lambda lib, x: lib.mm(x, x.t()),
    "bmm": lambda lib, x: lib.bmm(x[None], x.t()[None]),
    "numel": lambda lib, x: lib.numel(x),
    "from_numpy": lambda lib, x: lib.from_numpy(X.astype(np.float32)),
    "as_tensor": lambda lib, x: lib.as_tensor([1, 2], dtype=lib.float64),
    "is_tensor": lambda lib, x: (lib.is_tensor(x), lib.is_tensor(X)),
    "get_default_dtype": lambda lib, x: str(lib.get_default_dtype()).split(".")[-1],
    "device": lambda lib, x: (lib.device("cpu").type, lib.device("cpu").index),
    "zeros(2, 3)": lambda lib, x: lib.zeros(2, 3),
    "ones(2, 3)": lambda lib, x: lib.ones(2, 3, dtype=lib.float64),
    "empty(2, 3)": lambda lib, x: tuple(lib.empty(2, 3).shape),
    "full((2, 3), v)": lambda lib, x: lib.full((2, 3), 1.5),
    "linspace(steps=)": lambda lib, x: lib.linspace(0, 1, steps=5),
    "linspace(dtype)": lambda lib, x: lib.linspace(-1.0, 2.0, 4, dtype=lib.float64),
    "bare @no_grad": lambda lib, x: lib.no_grad(lambda: (x * 2).requires_grad)(),
    "add(alpha=)": lambda lib, x: lib.add(x, x.flip(0), alpha=2),
    "sub(alpha=)": lambda lib, x: lib.sub(x, x.flip(1), alpha=0.5),
    "div(rounding_mode=)": lambda lib, x: tuple(
        lib.div(x * 3, x.flip(0) - 0.9, rounding_mode=mode) for mode in (None, "trunc", "floor")
    ),
    "div(int, rounding_mode=)": lambda lib, x: tuple(
        lib.div(_tensor(lib, [7, -7, 7, -7, 6]), _tensor(lib, [2, 2, -2, -2, 3]), rounding_mode=m)
        for m in ("trunc", "floor")
    ),
    "x.div(rounding_mode=)": lambda lib, x: x.div(0.3, rounding_mode="floor"),
    "flip(x, dims)": lambda lib, x: lib.flip(x, (0,)),
    "flip(x, dims=)": lambda lib, x: lib.flip(x, dims=[0, 1]),
    "roll(x, shifts, dims)": lambda lib, x: lib.roll(x, 1, 0),
    "roll(x, shifts=, dims=)": lambda lib, x: lib.roll(x, shifts=(1, -1), dims=(0, 1)),
    "roll(x, shifts)": lambda lib, x: lib.roll(x, 5),
    "diff(x, n, dim)": lambda lib, x: lib.diff(x, 1, 0),
    "diff(x, n=, dim=)": lambda lib, x: lib.diff(x, n=2, dim=1),
    "where(condition)": lambda lib, x: lib.where(x > 1.0),
    "where(0-d condition)": lambda lib, x: (lib.where(x[0, 0] > 0.0), lib.where(x[0, 0] * 0)),
    "einsum(matmul)": lambda lib, x: lib.einsum("ij,jk->ik", x, x.t()),
    "einsum(implicit)": lambda lib, x: lib.einsum("ij,kj", x, x * 2),
    "einsum(transpose)": lambda lib, x: lib.einsum("ij->ji", x),
    "einsum(sum)": lambda lib, x: lib.einsum("ij->", x),
    "einsum(three)": lambda lib, x: lib.einsum("ij,jk,ij->k", x, x.t(), x * 2),
    "einsum(vector)": lambda lib, x: lib.einsum("ij,j->i", x, x[0]),
    "einsum(diagonal)": lambda lib, x: lib.einsum("ii->i", x[:, :3]),
    "einsum(trace)": lambda lib, x: lib.einsum("ii", x[:, :3]),
    "einsum(batched)": lambda lib, x: lib.einsum(
        "bij,bjk->bik", x.reshape(2, 2, 3), x.reshape(2, 3, 2)
    ),
    "einsum(list)": lambda lib, x: lib.einsum("i,j->ij", [x[0], x[1]]),
    "einsum(...ij,...jk->...ik)": lambda lib, x: lib.einsum(
        "...ij,...jk->...ik", x.reshape(2, 2, 3), x.reshape(2, 1, 3, 2)
    ),
    "einsum(implicit ...)": lambda lib, x: lib.einsum("...j,j", x, x[1]),
    "einsum(... summed)": lambda lib, x: lib.einsum("...ij->j", x.reshape(3, 2, 2)),
    "einsum(... broadcast)": lambda lib, x: lib.einsum("...,...->...", x[:, :1], x[0]),
    "einsum(... diagonal)": lambda lib, x: lib.einsum("...ii->...i", x[:2, :2][None]),
    "einsum(i...j)": lambda lib, x: lib.einsum("i...j,j...k->ik", x.reshape(3, 2, 2), x[:2]),
    "dot": lambda lib, x: lib.dot(x[0], x[1]),
    "copy_ into int64": lambda lib, x: lib.zeros(3, 4, dtype=lib.int64).copy_(x * 3 - 4),
    "copy_ into bool": lambda lib, x: lib.zeros(4, dtype=lib.bool).copy_(x[0] - 0.5),
    "copy_ into float32": lambda lib, x: (x.float() * 0).copy_(x * 2),
    "scatter_reduce(x, dim, index, src, reduce)": lambda lib, x: lib.scatter_reduce(
        x, 0, _tensor(lib, [[1, 0, 2, 1]]), x[1:2] * 2, "mean", include_self=False
    ),
    "addmm": lambda lib, x: lib.addmm(x[:, :3], x, x.t()[:, :3], beta=0.5, alpha=2),
    "x.addmm": lambda lib, x: x[:, :3].addmm(x, x.t()[:, :3]),
    "addmm(beta=0) ignores nan": lambda lib, x: lib.addmm(
        _tensor(lib, np.full((3, 3), np.nan)), x, x.t()[:, :3], beta=0
    ),
    "addmv": lambda lib, x: lib.addmv(x[:, 0], x, x[0], alpha=0.5),
    "x.addmv": lambda lib, x: x[:, 1].addmv(x, x[1], beta=2),
    "baddbmm": lambda lib, x: lib.baddbmm(
        x[:2, :2], x.reshape(2, 2, 3), x.reshape(2, 3, 2), beta=-1, alpha=0.25
    ),
    "x.baddbmm": lambda lib, x: (
        x[:2, :2].expand(2, 2, 2).baddbmm(x.reshape(2, 2, 3), x.reshape(2, 3, 2))
    ),
    "dist": lambda lib, x: lib.dist(x, x.flip(0), 3),
    "x.dist": lambda lib, x: x.dist(x[0]),
    "x.dist(p=inf)": lambda lib, x: x.dist(x.flip(1), float("inf")),
    "cdist": lambda lib, x: lib.cdist(x, x[:2] * 1.5),
    "cdist(p=1)": lambda lib, x: lib.cdist(x, x[:2].flip(1), p=1.0),
    "cdist(p=3) batched": lambda lib, x: lib.cdist(
        x.reshape(2, 2, 3), x.reshape(2, 2, 3).flip(1) * 2, p=3
    ),
    "cdist with a coincident row": lambda lib, x: lib.cdist(x, x[1:3]),
    "unique": lambda lib, x: lib.unique(_tensor(lib, [[3, 1, 2], [1, 3, 3]])),
    "unique(return_inverse, return_counts)": lambda lib, x: lib.unique(
        _tensor(lib, [[3, 1, 2], [1, 3, 3]]), return_inverse=True, return_counts=True
    ),
    "x.unique(return_counts=True)": lambda lib, x: (
        (x * 4).detach().round().unique(return_counts=True)
    ),
    "x.unique(sorted=False, return_inverse=True)": lambda lib, x: _tensor(
        lib, [2.5, 1.0, 2.5]
    ).unique(sorted=False, return_inverse=True),
    **{
        f"F.{name}": lambda lib, x, name=name, kwargs=kwargs: getattr(lib.nn.functional, name)(
            (x - 1.4) * 3, **kwargs
        )
        for name, kwargs in (
            ("hardtanh", {}),
            ("hardtanh", {"min_val": -2.7, "max_val": 1.0}),
            ("relu6", {}),
            ("threshold", {"threshold": -1.2, "value": 7.0}),
            ("softplus", {}),
            ("softplus", {"beta": 2.0, "threshold": 3.0}),
            ("hardswish", {}),
            ("mish", {}),
            ("selu", {}),
            ("celu", {"alpha": 2.0}),
        )
    },
    **{
        f"F.{name} on its kinks": lambda lib, x, name=name: getattr(lib.nn.functional, name)(
            lib.stack([x[0, 0] * 6, -x[0, 0] * 6, x[0, 2] * -1.5, x[0, 1] * 4, x[1, 0]])
        )
        for name in ("hardswish", "relu6", "hardtanh", "selu", "celu", "mish")
    },
    **{
        f"F.{name}_ and F.{name}(inplace=True)": lambda lib, x, name=name, args=args: tuple(
            (
                getattr(lib.nn.functional, name + "_")((x - 1.4) * 3, *args),
                getattr(lib.nn.functional, name)((x - 1.4) * 2, *args, inplace=True),
            )
        )
        for name, args in (
            ("relu", ()),
            ("leaky_relu", (0.2,)),
            ("elu", (0.5,)),
            ("hardtanh", (-2.0, 2.0)),
            ("threshold", (0.5, -1.0)),
        )
    },
    **{
        f"nn.{layer}(inplace=True)": lambda lib, x, layer=layer, args=args: getattr(lib.nn, layer)(
            *args, inplace=True
        )((x - 1.4) * 3)
        for layer, args in (
            ("ReLU", ()),
            ("ReLU6", ()),
            ("LeakyReLU", (0.2,)),
            ("ELU", ()),
            ("CELU", (0.5,)),
            ("SELU", ()),
            ("Hardtanh", ()),
            ("Hardswish", ()),
            ("Mish", ()),
            ("SiLU", ()),
            ("Threshold", (0.1, 5.0)),
        )
    },
    **{
        f"F.adaptive_avg_pool2d({size})": lambda lib, x, size=size: (
            lib.nn.functional.adaptive_avg_pool2d(x.reshape(1, 1, 3, 4) * x[:1, :1], size)
        )
        for size in (1, (1, 1), 2, (2, 3), (3, None), (2, 4), (3, 4))
    },
    "nn.AdaptiveAvgPool2d((1, 1)) of (C, H, W)": lambda lib, x: lib.nn.AdaptiveAvgPool2d((1, 1))(
        x.reshape(1, 3, 4).expand(2, 3, 4) * x[:2, :1, None]
    ),
    "nn.Softplus": lambda lib, x: lib.nn.Softplus(0.5)((x - 1.4) * 3),
    "t().contiguous().view(-1)": lambda lib, x: x.t().contiguous().view(-1),
    "is_contiguous": lambda lib, x: (
        x.is_contiguous(),
        x.t().is_contiguous(),
        x.t().contiguous().is_contiguous(),
    ),
    # x[:, ::2] and a diagonal can be seen flat without a copy, and were called contiguous.
    "is_contiguous of strided views": lambda lib, x: tuple(
        view.is_contiguous()
        for view in (x[:, ::2], x.diagonal(), x[1, :, None], x[:, 1:2], x[:1], x[None], x[:0])
    ),
    "x.equal": lambda lib, x: (x.equal(x * 1), x.equal(x + 1), x.equal(x[:2])),
    **{
        f"linalg.norm({kwargs})": lambda lib, x, kwargs=kwargs: lib.linalg.norm(x, **kwargs)
        for kwargs in (
            {},
            {"ord": 1},
            {"ord": "nuc"},
            {"ord": -2},
            {"dim": 1},
            {"dim": (1, 0), "keepdim": True, "ord": float("inf")},
            {"ord": 3, "dim": 0, "keepdim": True},
        )
    },
    "diag of a vector": lambda lib, x: (lib.diag(x[0]), lib.diag(x[1], 2), lib.diag(x[2], -1)),
    "diag of a matrix": lambda lib, x: (lib.diag(x), lib.diag(x, 1), lib.diag(x, diagonal=-2)),
    "x.diag()": lambda lib, x: (x[0].diag(), x.diag(-1)),
    "trace": lambda lib, x: (lib.trace(x), x[:, :3].trace()),
    "std_mean": lambda lib, x: tuple(lib.std_mean(x)),
    "std_mean(dim, keepdim)": lambda lib, x: tuple(lib.std_mean(x, 1, keepdim=True)),
    "var_mean(dim=, unbiased=False)": lambda lib, x: tuple(lib.var_mean(x, dim=0, unbiased=False)),
    "var_mean(correction=0)": lambda lib, x: tuple(lib.var_mean(x, (0, 1), correction=0)),
    "outer(x, y)": lambda lib, x: lib.outer(x[0], x[1, :3]),
    "outer of ints": lambda lib, x: lib.outer(_tensor(lib, [1, 2]), _tensor(lib, [3, -4, 5])),
    "logsumexp": lambda lib, x: lib.logsumexp(x, 1),
    "softmax": lambda lib, x: lib.softmax(x, 1),
    "softmax(dim=)": lambda lib, x: lib.softmax(x, dim=0),
    "log_softmax": lambda lib, x: lib.log_softmax(x, dim=1),
    "sigmoid": lambda lib, x: lib.sigmoid(x - 1.0),
    "relu": lambda lib, x: lib.relu(x - 1.0),
    "gather": lambda lib, x: lib.gather(x, 1, _index(lib)),
    "topk": lambda lib, x: tuple(lib.topk(x, 2, dim=0)),
    "topk(largest=False)": lambda lib, x: tuple(lib.topk(x, 3, largest=False)),
    "norm": lambda lib, x: lib.norm(x),
    "norm(dim)": lambda lib, x: lib.norm(x, dim=1, keepdim=True),
    "norm(p=1)": lambda lib, x: lib.norm(x, 1, 0),
    "isclose": lambda lib, x: lib.isclose(x, x + 2e-5, atol=1e-5),
    "isclose(inf, nan)": lambda lib, x: lib.isclose(
        _tensor(lib, [np.inf, -np.inf, np.nan, 1.0]),
        _tensor(lib, [np.inf, np.inf, np.nan, np.nan]),
        equal_nan=True,
    ),
    "allclose": lambda lib, x: (lib.allclose(x, x * (1 + 1e-7)), lib.allclose(x, x + 1e-4)),
    "with inference_mode()": lambda lib, x: _inference(lib, x),
    "@inference_mode": lambda lib, x: lib.inference_mode(lambda: (x * 2).requires_grad)(),
    "@inference_mode(False)": lambda lib, x: lib.inference_mode(False)(
        lambda: (x * 2).requires_grad
    )(),
    "x.size()": lambda lib, x: tuple(x.size()),
    "x.size(dim)": lambda lib, x: x.size(-1),
}
RANDOM: dict[str, Callable[[Any, Any], Any]] = {
    "randint": lambda lib, x: lib.randint(0, 5, (3, 2)),
    "randn_like": lambda lib, x: lib.randn_like(x),
    "rand_like": lambda lib, x: lib.rand_like(x),
    "randint_like": lambda lib, x: lib.randint_like(x, 4),
    "normal": lambda lib, x: lib.normal(0.0, 1.0, (2, 3)),
    "randperm": lambda lib, x: lib.randperm(7),
    "randperm(dtype)": lambda lib, x: lib.randperm(4, dtype=lib.int32),
    "bernoulli": lambda lib, x: lib.bernoulli(x / 4),
    "bernoulli(p)": lambda lib, x: lib.bernoulli(x.float(), 0.3),
    "x.bernoulli()": lambda lib, x: (x / 4).bernoulli(),
    "multinomial": lambda lib, x: lib.multinomial(x[0], 3),
    "x.multinomial(replacement=True)": lambda lib, x: x.multinomial(6, replacement=True),
}


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", [*METHODS, *NAMES])
def test_a_name_of_the_pytorch_surface_gives_pytorchs_values_and_gradients(name, backend) -> None:
    program = METHODS.get(name) or NAMES[name]
    if name == "half":
        try:
            plugrad.zeros(1, dtype=plugrad.float16, device=backend)
        except plugrad.errors.DtypeError:
            pytest.skip(f"{backend} has no float16")
    assert_agrees(program, X, backend)


@pytest.mark.parametrize("name", list(RANDOM))
def test_a_random_name_gives_pytorchs_dtype_and_shape(name) -> None:
    ours = RANDOM[name](plugrad, plugrad.asarray(X))
    theirs = RANDOM[name](torch, torch.from_numpy(X))
    assert (str(np.asarray(ours).dtype), ours.shape) == (
        str(theirs.numpy().dtype),
        tuple(theirs.shape),
    )


def test_randperm_and_bernoulli_draw_what_they_promise() -> None:
    plugrad.manual_seed(3)
    permutations = {tuple(plugrad.randperm(4).tolist()) for _ in range(200)}
    assert all(sorted(p) == [0, 1, 2, 3] for p in permutations) and len(permutations) == 24
    assert plugrad.randperm(0).shape == (0,)
    probabilities = plugrad.asarray(np.array([0.0, 0.25, 1.0]))
    drawn = np.stack([plugrad.bernoulli(probabilities).numpy() for _ in range(2000)])
    assert set(np.unique(drawn)) <= {0.0, 1.0}
    assert drawn[:, 0].sum() == 0 and drawn[:, 2].sum() == 2000
    assert abs(drawn[:, 1].mean() - 0.25) < 0.05
    x = plugrad.asarray(X / 4, requires_grad=True)
    assert plugrad.bernoulli(x).requires_grad  # as torch.bernoulli's, with a zero gradient
    assert not plugrad.bernoulli(x.detach()).requires_grad
    generator = plugrad.Generator(7)
    first = plugrad.randperm(9, generator=generator).tolist()
    assert first == plugrad.randperm(9, generator=plugrad.Generator(7)).tolist()
    with pytest.raises(ValueError, match="non-negative"):
        plugrad.randperm(-1)
    with pytest.raises(plugrad.errors.DtypeError, match="real floating"):
        plugrad.bernoulli(plugrad.asarray([0, 1]))


@pytest.mark.parametrize("backend", backends_under_test())
def test_multinomial_draws_with_the_weights_probabilities(backend) -> None:
    with plugrad.use_backend(backend):
        plugrad.manual_seed(5)
        weights = plugrad.asarray(np.array([[1.0, 2.0, 7.0], [5.0, 0.0, 5.0]]))
        drawn = plugrad.multinomial(weights, 4000, replacement=True).numpy()
        first = np.stack([plugrad.multinomial(weights[0], 2).numpy() for _ in range(1500)])
        generator = plugrad.Generator(11)
        again = plugrad.multinomial(weights, 2, generator=generator).tolist()
        assert again == plugrad.multinomial(weights, 2, generator=plugrad.Generator(11)).tolist()
    frequencies = [np.bincount(row, minlength=3) / 4000 for row in drawn]
    np.testing.assert_allclose(frequencies[0], [0.1, 0.2, 0.7], atol=0.03)
    np.testing.assert_allclose(frequencies[1], [0.5, 0.0, 0.5], atol=0.03)
    # Without replacement the second draw is the first of what is left: P(second = 0)
    # = 0.2 * 1/8 + 0.7 * 1/3 = 0.2583..., as PyTorch draws.
    assert all(len(set(pair)) == 2 for pair in first.tolist())
    np.testing.assert_allclose(np.bincount(first[:, 1], minlength=3)[0] / 1500, 0.2583, atol=0.04)
    assert sorted(again[1]) == [0, 2]  # a weight of 0 is never drawn
    for weights, count, kwargs, error in (
        (np.array([0.0, 1.0, 3.0]), 3, {}, "without replacement"),
        (np.array([-1.0, 2.0]), 1, {}, "non-negative"),
        (np.array([np.nan, 2.0]), 1, {}, "finite"),
        (np.array([0.0, 0.0]), 1, {"replacement": True}, "sums to 0"),
        (np.array([1.0, 2.0]), 0, {}, "positive int"),
        (np.ones((2, 2, 2)), 1, {}, "vector or a matrix"),
    ):
        with pytest.raises(ValueError, match=error):
            plugrad.multinomial(plugrad.asarray(weights), count, **kwargs)
    with pytest.raises(plugrad.errors.DtypeError, match="real floating"):
        plugrad.multinomial(plugrad.asarray([1, 2]), 1)


@pytest.mark.parametrize("backend", backends_under_test())
def test_integer_draws_use_the_backends_default_integer_dtype(backend) -> None:
    # int64, as PyTorch's, where the backend has it (int32 on JAX without x64).
    with plugrad.use_backend(backend):
        device = plugrad.default_device()
        weights = plugrad.asarray(np.array([0.0, 1.0, 3.0]))
        draws = (
            plugrad.randint(0, 5, (40,)),
            plugrad.randperm(40),
            plugrad.multinomial(weights, 40, replacement=True),
            plugrad.multinomial(weights, 2),
        )
        for drawn in draws:
            assert drawn.dtype == device.default_int_dtype
        values = [d.tolist() for d in draws]
    assert set(values[0]) <= set(range(5)) and sorted(values[1]) == list(range(40))
    assert set(values[2]) <= {1, 2} and sorted(values[3]) == [1, 2]


def test_multinomial_with_replacement_bisects_instead_of_comparing_every_category() -> None:
    # 10^5 draws from 10^5 categories: comparing each draw with each cumulative
    # weight would need 10^10 booleans.
    weights = plugrad.ones(100_000, dtype=plugrad.float64)
    weights[-1] = 100_000.0
    drawn = plugrad.multinomial(weights, 100_000, replacement=True, generator=plugrad.Generator(2))
    assert abs(float((drawn == 99_999).to(plugrad.float64).mean()) - 0.5) < 0.01


def test_promote_types_and_finfo_names_match_torch() -> None:
    names = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64",
             "complex64", "complex128"]  # fmt: skip
    for first in names:
        for second in names:
            ours = plugrad.promote_types(getattr(plugrad, first), getattr(plugrad, second))
            theirs = torch.promote_types(getattr(torch, first), getattr(torch, second))
            assert ours.name == str(theirs).removeprefix("torch."), (first, second)
    for name in ("float16", "float32", "float64"):
        ours, theirs = plugrad.finfo(getattr(plugrad, name)), torch.finfo(getattr(torch, name))
        assert (ours.tiny, ours.resolution) == (theirs.tiny, theirs.resolution)
    with pytest.raises(TypeError, match="result_type"):
        plugrad.promote_types(plugrad.ones(2), plugrad.float32)


def test_where_takes_one_or_three_arguments() -> None:
    x = plugrad.asarray(X)
    with pytest.raises(TypeError, match="two values"):
        plugrad.where(x > 1.0, x)


def test_einsum_refuses_what_it_cannot_read() -> None:
    x = plugrad.asarray(X)
    for equation, operands, error in (
        ("ij,jk->ik", (x,), plugrad.errors.ArgumentError),
        ("....j->j", (x,), plugrad.errors.ArgumentError),
        ("i...j...", (x,), plugrad.errors.ArgumentError),
        ("ij->...k", (x,), plugrad.errors.ArgumentError),
        ("...ijk", (x,), plugrad.errors.ShapeError),
        ("...,...", (x, x[:, :3]), plugrad.errors.ShapeError),
        ("ij->ii", (x,), plugrad.errors.ArgumentError),
        ("ijk->i", (x,), plugrad.errors.ShapeError),
        ("ij,ij->i", (x, x.t()), plugrad.errors.ShapeError),
        ("i1->i", (x,), plugrad.errors.ArgumentError),
    ):
        with pytest.raises(error, match="einsum"):
            plugrad.einsum(equation, *operands)


def test_an_integer_tensor_compared_in_place_stays_out_of_the_graph() -> None:
    # PyTorch gives it a grad_fn through which no gradient can flow; the values agree.
    ours = plugrad.ones(3, 4, dtype=plugrad.int64).lt_(plugrad.asarray(X, requires_grad=True))
    theirs = torch.ones(3, 4, dtype=torch.int64).lt_(torch.tensor(X, requires_grad=True))
    assert not ours.requires_grad and ours.grad_fn is None
    np.testing.assert_array_equal(ours.numpy(), theirs.detach().numpy())


def test_scatter_reduce_amin_without_self_gives_the_true_gradient_at_a_tie_with_self() -> None:
    # The result is min(src) alone, so its gradient goes wholly to the smallest src value.
    # PyTorch also counts the excluded self value equal to it and gives 0.5: a case
    # where plugrad differs on purpose.
    x = plugrad.asarray([[0.375, 9.0]], requires_grad=True)
    src = plugrad.asarray([[0.75, 0.375]], requires_grad=True)
    index = plugrad.asarray([[0, 0]])
    y = x.scatter_reduce(1, index, src, "amin", include_self=False)
    y.sum().backward()
    assert y.tolist() == [[0.375, 9.0]]
    assert src.grad.tolist() == [[0.0, 1.0]] and x.grad.tolist() == [[0.0, 1.0]]


@pytest.mark.parametrize("reduce", ["amax", "amin"])
def test_scatter_reduce_sends_the_gradient_to_a_nan_that_wins_as_amax_does(reduce: str) -> None:
    # NaN != NaN: no value was taken for the result, and every gradient there was lost.
    x = plugrad.asarray([1.0, 5.0], requires_grad=True)
    src = plugrad.asarray([math.nan, 1.0], requires_grad=True)
    y = x.scatter_reduce(0, plugrad.asarray([0, 0]), src, reduce)
    y.sum().backward()
    assert math.isnan(y.tolist()[0]) and y.tolist()[1] == 5.0
    assert x.grad.tolist() == [0.0, 1.0] and src.grad.tolist() == [1.0, 0.0]
    # As the reduction's own: plugrad.amax gives a NaN that wins the whole gradient.
    values = plugrad.asarray([1.0, math.nan, 1.0], requires_grad=True)
    getattr(plugrad, reduce)(values).backward()
    assert values.grad.tolist() == [0.0, 1.0, 0.0]


def test_scatter_reduce_takes_pytorchs_max_and_min_names() -> None:
    for lib in (plugrad, torch):
        x = lib.tensor([1.0, 2.0])
        got = [
            x.scatter_reduce(0, lib.tensor([0, 0]), lib.tensor([5.0, -1.0]), name).tolist()
            for name in ("max", "min")
        ]
        assert got == [[5.0, 2.0], [-1.0, 2.0]]


@pytest.mark.parametrize(
    "program",
    [
        lambda lib, x: x.scatter(0, lib.tensor(2), 5.0),
        lambda lib, x: x.scatter(0, lib.tensor([2]), x.sum()),
        lambda lib, x: x.scatter_add(0, lib.tensor(2), x.sum()),
        lambda lib, x: x.scatter_reduce(0, lib.tensor(1), x.sum(), "prod"),
        lambda lib, x: x.sum().gather(0, lib.tensor([0, 0])),
        lambda lib, x: x.sum().scatter(0, lib.tensor([0]), 3.0),
    ],
)
def test_a_0d_operand_of_a_scatter_or_gather_is_one_row_as_in_pytorch(program) -> None:
    # A 0-d index into a 1-d tensor raised ZeroDivisionError (scatter) or ShapeError, and
    # gather from a 0-d tensor an AxisError.
    assert_agrees(program, np.array([0.5, 1.5, 2.5]), plugrad.default_device().backend.name)


def test_masked_scatter_takes_the_shape_of_a_wider_mask_as_pytorch() -> None:
    # broadcast_to(mask, input.shape) raised for a mask of more dimensions.
    mask = [[True, False, True], [False, True, False]]
    for lib in (plugrad, torch):
        x = lib.zeros(3, requires_grad=True)
        source = lib.arange(1.0, 7.0, requires_grad=True)
        out = x.masked_scatter(lib.tensor(mask), source)
        assert out.tolist() == [[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]
        out.sum().backward()
        assert x.grad.tolist() == [1.0, 1.0, 1.0]
        assert source.grad.tolist() == [1.0, 1.0, 1.0, 0.0, 0.0, 0.0]
    x = plugrad.zeros(3)
    with pytest.raises(plugrad.errors.ShapeError, match="does not broadcast"):
        x.masked_scatter_(plugrad.tensor([mask[0]]), plugrad.ones(3))
    assert x.tolist() == [0.0] * 3


def test_scatter_reduce_refuses_what_pytorch_refuses() -> None:
    x = plugrad.ones(2, 3)
    index = plugrad.asarray([[0, 0], [2, 2]])
    src = plugrad.asarray([[5.0, 6.0], [1.0, 2.0]])
    for args, error in (
        ((1, index, src, "median"), plugrad.errors.ArgumentError),
        ((1, index, src.long(), "sum"), plugrad.errors.DtypeError),
        ((1, index[0], src, "sum"), plugrad.errors.ShapeError),
        ((1, plugrad.asarray([[0, 0, 0, 0]]), src, "sum"), plugrad.errors.ShapeError),
        ((1, plugrad.asarray([[0, 3], [0, 0]]), src, "sum"), IndexError),
    ):
        with pytest.raises(error):
            x.scatter_reduce(*args)
    with pytest.raises(plugrad.errors.ArgumentError, match="'add', 'multiply'"):
        x.scatter(1, index, src, reduce="sum")
    assert x.tolist() == [[1.0] * 3] * 2
    flags = plugrad.asarray([True, True])
    for include_self in (True, False):  # an int8 or int64 result, by include_self
        with pytest.raises(plugrad.errors.DtypeError, match="'mean' of bools"):
            flags.scatter_reduce(
                0, plugrad.asarray([0, 0]), plugrad.asarray([True, False]), "mean",
                include_self=include_self,
            )  # fmt: skip


_TOO_LARGE = [
    # index larger than src: src was broadcast (all ones, and its gradient summed)
    lambda lib: lib.zeros(2, 3).scatter(0, lib.tensor([[0, 0, 0], [1, 1, 1]]), lib.ones(1, 3)),
    lambda lib: lib.zeros(2, 3).scatter_(0, lib.tensor([[0, 0, 0], [1, 1, 1]]), lib.ones(1, 3)),
    lambda lib: lib.zeros(2, 3).scatter_add(0, lib.tensor([[0, 0, 0], [1, 1, 1]]), lib.ones(1, 3)),
    lambda lib: lib.zeros(2, 3).scatter_add_(1, lib.tensor([[0, 1, 2], [0, 0, 0]]), lib.ones(1, 1)),
    lambda lib: lib.zeros(3).scatter(0, lib.tensor([1, 2]), lib.tensor(2.0)),
    lambda lib: lib.zeros(2, 3).scatter(
        0, lib.tensor([[0, 0, 0], [1, 1, 1]]), lib.ones(1, 3), reduce="add"
    ),
    # src of fewer dimensions than index (0-d: broadcast; 1-d: "getitem(): too many indices")
    lambda lib: lib.zeros(3, 3).scatter_add(0, lib.tensor([[0, 1, 2]]), lib.tensor(5.0)),
    lambda lib: lib.zeros(3, 3).scatter(0, lib.tensor([[0, 1, 2]]), lib.ones(3)),
    # index larger than the tensor off dim ("index 3 is out of bounds for axis 1")
    lambda lib: lib.zeros(2, 3).scatter(0, lib.tensor([[0, 0, 0, 1]]), 1.0),
    lambda lib: lib.zeros(2, 3).scatter_(0, lib.tensor([[0, 0, 0, 1]]), lib.ones(1, 4)),
    lambda lib: lib.zeros(2, 3).scatter_add(0, lib.tensor([[0, 0, 0, 1]]), lib.ones(1, 4)),
    lambda lib: lib.zeros(2, 3).gather(0, lib.tensor([[0, 0, 0, 1]])),
]


@pytest.mark.parametrize("program", _TOO_LARGE)
def test_scatter_and_gather_refuse_an_index_larger_than_src_or_the_tensor(program) -> None:
    with pytest.raises((RuntimeError, IndexError)):
        program(torch)
    with pytest.raises(
        plugrad.errors.ShapeError, match=r"^(scatter|gather)\w*\(\): .*(src|tensor)"
    ):
        program(plugrad)
    x = plugrad.zeros(2, 3)
    with pytest.raises(plugrad.errors.ShapeError, match=r"scatter_add_\(\)"):
        x.scatter_add_(0, plugrad.tensor([[0, 0, 0], [1, 1, 1]]), plugrad.ones(1, 3))
    assert x.tolist() == [[0.0] * 3] * 2 and x._version == 0


def test_scatter_reads_the_leading_part_of_a_larger_src_and_nothing_for_an_empty_index() -> None:
    for program, read in (
        (lambda lib, x, src: x.scatter(0, lib.tensor([[0, 1, 2]]), src), (1, 3)),
        (lambda lib, x, src: x.scatter_add(1, lib.tensor([[2], [0]]), src), (2, 1)),
        (lambda lib, x, src: x.scatter(0, lib.zeros((0, 3), dtype=lib.int64), src), (0, 0)),
        (lambda lib, x, src: x.scatter_add(0, lib.zeros((0, 5), dtype=lib.int64), src), (0, 0)),
    ):
        expected = program(torch, torch.zeros(3, 3), torch.arange(1.0, 13.0).reshape(4, 3))
        src = plugrad.arange(1.0, 13.0).reshape(4, 3).requires_grad_(True)
        out = program(plugrad, plugrad.zeros(3, 3), src)
        assert out.tolist() == expected.tolist()
        out.sum().backward()
        grad = np.zeros((4, 3))
        grad[: read[0], : read[1]] = 1.0
        np.testing.assert_array_equal(src.grad.numpy(), grad)


@pytest.mark.parametrize("reduce", ["sum", "amax", "amin", "mean"])
def test_scatter_reduce_of_small_integers_counts_every_value_sent(reduce: str) -> None:
    # The count of values sent to a position was kept in the tensor's dtype: 256 uint8
    # values into one position counted 0, and the position kept its value.
    results = []
    for lib in (plugrad, torch):
        x = lib.zeros(2, dtype=lib.uint8)
        src = lib.ones(256, dtype=lib.uint8)
        index = lib.zeros(256, dtype=lib.int64)
        results.append(x.scatter_reduce(0, index, src, reduce, include_self=False).tolist())
    assert results[0] == results[1]


@pytest.mark.parametrize(
    ("name", "call"),
    [
        ("mode", lambda x: x.mode()),  # named iinfo()
        ("median", lambda x: x.median()),  # named argsort()
        ("median", lambda x: x.median(0)),
        ("nanmedian", lambda x: x.nanmedian(0)),
        ("kthvalue", lambda x: x.kthvalue(1)),
        ("topk", lambda x: x.topk(1)),
        ("cummax", lambda x: x.cummax(0)),  # named maximum()
        ("cummin", lambda x: x.cummin(0)),
    ],
)
def test_ordering_complex_values_is_refused_naming_the_function_called(name, call) -> None:
    with pytest.raises(RuntimeError):
        call(torch.tensor([1 + 1j, 2.0]))
    with pytest.raises(plugrad.errors.DtypeError, match=rf"^{name}\(\): complex .*x\.real"):
        call(plugrad.tensor([1 + 1j, 2.0]))


def test_hardsigmoid_is_pytorchs_up_to_its_single_precision_slope() -> None:
    # PyTorch's backward multiplies by a single-precision 1/6 in every dtype.
    values = (X - 1.4) * 3
    results = []
    for lib in (plugrad, torch):
        x = _tensor(lib, values).requires_grad_(True)
        y = lib.nn.Hardsigmoid(inplace=True)(x * 1.0)
        (lib.nn.functional.hardsigmoid(x) * 2 + y).sum().backward()
        results.append((np.asarray(y.detach().numpy()), np.asarray(x.grad.numpy())))
    (ours, our_grad), (theirs, their_grad) = results
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    np.testing.assert_allclose(our_grad, their_grad, rtol=1e-7)


def test_outer_takes_vectors_only_as_in_pytorch() -> None:
    assert plugrad.outer is plugrad.linalg.outer
    x = plugrad.asarray(X)
    for first, second in ((x, x[0]), (x[0], x), (x[0, 0], x[0])):
        with pytest.raises(plugrad.errors.ShapeError, match="1-D"):
            plugrad.outer(first, second)
        with pytest.raises(plugrad.errors.ShapeError, match="1-D"):
            first.outer(second)


def test_outer_of_an_integer_and_a_float_vector_has_pytorchs_dtype() -> None:
    # NumPy's promotion made int64 with float32 float64.
    torch = pytest.importorskip("torch")
    for lib in (plugrad, torch):
        ints, singles = lib.arange(3), lib.ones(2, dtype=lib.float32)
        assert lib.outer(ints, singles).dtype == lib.float32
        assert ints.outer(singles).dtype == lib.float32
        assert lib.outer(singles, lib.ones(2, dtype=lib.float64)).dtype == lib.float64
    w = plugrad.ones(2, dtype=plugrad.float32, requires_grad=True)
    plugrad.outer(plugrad.arange(3), w).sum().backward()
    assert w.grad.dtype == plugrad.float32 and w.grad.tolist() == [3.0, 3.0]


def test_linspace_takes_the_count_once() -> None:
    for bad in ({}, {"num": 3, "steps": 3}):
        with pytest.raises(plugrad.errors.ArgumentError, match="steps="):
            plugrad.linspace(0.0, 1.0, **bad)


def test_the_default_dtype_and_device_setters_are_pytorchs() -> None:
    for lib in (plugrad, torch):
        lib.set_default_dtype(lib.float64)
        try:
            assert lib.zeros(2).dtype is lib.float64
        finally:
            lib.set_default_dtype(lib.float32)
        lib.set_default_device("cpu")
        try:
            assert lib.zeros(2).device.type == "cpu"
            assert lib.get_default_device() == lib.zeros(2).device
        finally:
            if lib is torch:  # its default-device mode changes later calls of the oracle
                torch.set_default_device(None)


def test_the_cuda_and_accelerator_questions_never_import_a_gpu_library_that_is_absent() -> None:
    code = (
        "import importlib.util, sys, plugrad\n"
        "answers = plugrad.cuda.is_available(), plugrad.cuda.device_count()\n"
        "plugrad.cuda.empty_cache()\n"
        "accelerator = plugrad.accelerator\n"
        "same = answers == (accelerator.is_available(), accelerator.device_count())\n"
        "found = accelerator.current_accelerator()\n"
        "device = found.type if accelerator.is_available() else 'cpu'  # PyTorch's tutorials'\n"
        "print(*answers, 'cupy' in sys.modules, importlib.util.find_spec('cupy') is not None,\n"
        "      same, device, found is None)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    available, count, imported, installed, same, device, none = done.stdout.split()
    assert same == "True"
    if installed == "False":
        assert (available, count, imported, device, none) == ("False", "0", "False", "cpu", "True")
    else:
        assert (available == "True") == (int(count) > 0)
        assert (device, none) == (("cuda", "False") if available == "True" else ("cpu", "True"))


def test_the_matrix_and_distance_forms_refuse_other_shapes() -> None:
    x = plugrad.asarray(X)
    for call, error in (
        (lambda: plugrad.addmm(x, x, x[0]), plugrad.errors.ShapeError),
        (lambda: plugrad.addmv(x[:, 0], x, x), plugrad.errors.ShapeError),
        (lambda: plugrad.baddbmm(x, x, x.t()), plugrad.errors.ShapeError),
        (lambda: plugrad.cdist(x[0], x), plugrad.errors.ShapeError),
        (lambda: plugrad.cdist(x, x[:, :3]), plugrad.errors.ShapeError),
        (lambda: plugrad.cdist(x, x, p=-1), plugrad.errors.ArgumentError),
        (lambda: plugrad.unique(x, dim=2), plugrad.errors.AxisError),
    ):
        with pytest.raises(error):
            call()


@pytest.mark.parametrize(
    "in_place",
    [
        lambda y: plugrad.nn.functional.relu_(y),
        lambda y: plugrad.nn.functional.hardtanh_(y),
        lambda y: plugrad.nn.functional.threshold_(y, 0.5, 0.0),
        lambda y: plugrad.nn.ReLU6(inplace=True)(y),
        lambda y: plugrad.nn.Mish(inplace=True)(y),
        lambda y: plugrad.nn.Hardswish(inplace=True)(y),
    ],
)
def test_in_place_activations_keep_the_version_counter_safety(in_place) -> None:
    x = plugrad.asarray(X, requires_grad=True)
    y = x * 1.0
    z = plugrad.sin(y)  # sin keeps its input for backward
    assert in_place(y) is y
    with pytest.raises(plugrad.errors.BackwardError, match=r"in place|in-place|version"):
        z.sum().backward()
    with pytest.raises(plugrad.errors.PlugradError):
        in_place(x)  # a leaf that requires grad


def test_unbind_takes_dim_by_position_as_in_pytorch() -> None:
    x = np.arange(6.0).reshape(2, 3)
    ours = plugrad.unbind(plugrad.asarray(x), 1)
    theirs = torch.unbind(torch.from_numpy(x), 1)
    assert len(ours) == len(theirs) == 3
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("backend", backends_under_test())
def test_linspace_of_integers_rounds_toward_zero_as_in_pytorch(backend) -> None:
    for start, stop, num, dtype in ((-1, 1, 7, "int32"), (-7, 9, 6, "int64"), (0, 10, 4, "uint8")):
        expected = torch.linspace(start, stop, num, dtype=getattr(torch, dtype)).tolist()
        with plugrad.use_backend(backend):
            got = plugrad.linspace(start, stop, num, dtype=getattr(plugrad, dtype)).tolist()
        assert got == expected, (start, stop, num, dtype)


def test_stride_is_pytorchs_in_elements() -> None:
    torch = pytest.importorskip("torch")
    if plugrad.default_device().backend.name != "numpy":
        pytest.skip("the layouts compared are NumPy's (others give the row-major of a copy)")
    for program in (
        lambda lib: lib.zeros(2, 3).stride(),
        lambda lib: lib.zeros(2, 3).t().stride(),
        lambda lib: lib.zeros(4, 6)[:, ::2].stride(),
        lambda lib: lib.zeros(2, 0, 3).stride(),
        lambda lib: lib.zeros(2, 3).t().stride(0),
        lambda lib: lib.zeros(2, 3).stride(-1),
        lambda lib: lib.tensor(1.0).stride(),
    ):
        assert program(plugrad) == program(torch)
    with pytest.raises(IndexError, match=r"dim must be an int in \[-2, 1\]"):
        plugrad.zeros(2, 3).stride(2)
    with pytest.raises(IndexError, match="a 0-d tensor has no dimensions"):
        plugrad.tensor(1.0).stride(0)  # was the tuple's own IndexError


def test_numpy_force_gives_the_values_of_a_tensor_that_requires_grad() -> None:
    x = plugrad.ones(2, requires_grad=True)
    with pytest.raises(plugrad.errors.BackwardError, match="force=True"):
        x.numpy()
    np.testing.assert_array_equal(x.numpy(force=True), [1.0, 1.0])


def test_fftfreq_takes_the_spacing_by_position_and_no_samples() -> None:
    torch = pytest.importorskip("torch")
    for call in (
        lambda lib: lib.fft.fftfreq(5, 0.1),
        lambda lib: lib.fft.rfftfreq(4, 2.0),
        lambda lib: lib.fft.fftfreq(0),  # ZeroDivisionError from the library before
        lambda lib: lib.fft.fftfreq(4, 0.0),  # so too a spacing of 0: nan and infinities
        lambda lib: lib.fft.fftfreq(5, -0.0),
        lambda lib: lib.fft.rfftfreq(4, 0.0),
    ):
        np.testing.assert_allclose(call(plugrad).numpy(), call(torch).numpy())
    assert plugrad.fft.rfftfreq(0).shape == (0,)
    with pytest.raises(ValueError, match="int >= 0"):
        plugrad.fft.fftfreq(-1)


def test_transforms_of_real_input_refuse_complex_input_in_plugrads_words() -> None:
    # NumPy's rfft of complex input raised "ufunc 'rfft_n_even' not supported".
    z = plugrad.tensor([1 + 1j, 2 - 1j])
    for transform in (plugrad.fft.rfft, plugrad.fft.ihfft, plugrad.fft.rfftn):
        with pytest.raises(plugrad.errors.DtypeError, match="complex inputs are not supported"):
            transform(z)


_EINSUM_DTYPE_CASES = [
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ij,jk->", [(2, 3), (3, 4)]),
    ("ij->i", [(2, 3)]),
    ("ij,k->k", [(2, 3), (4,)]),
    ("i,i", [(3,), (3,)]),
    ("bij,bkj->bik", [(1, 2, 3), (4, 5, 3)]),
    ("ij,jk", [(2, 1), (3, 4)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
]


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint8", "float16"])
@pytest.mark.parametrize(("equation", "shapes"), _EINSUM_DTYPE_CASES)
def test_einsum_keeps_dtypes_and_values_as_pytorch(equation, shapes, dtype) -> None:
    # A contraction keeps the dtype (int8 products wrap in int8), a sum over one operand's
    # own letter gives int64; the sums of a contraction were int64 (uint64 for uint8).
    torch = pytest.importorskip("torch")
    if dtype == "float16" and plugrad.float16 not in plugrad.default_device().dtypes:
        pytest.skip("the default backend has no float16")
    rng = np.random.default_rng(5)
    high = 4 if dtype == "float16" else 120  # float16 sums stay exact
    arrays = [rng.integers(0, high, shape).astype(dtype) for shape in shapes]
    theirs = torch.einsum(equation, *[torch.tensor(a) for a in arrays])
    ours = plugrad.einsum(equation, *[plugrad.tensor(a) for a in arrays])
    assert str(ours.dtype).removeprefix("plugrad.") == str(theirs.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(np.asarray(ours.tolist()), theirs.numpy())


def test_einsum_contracts_by_matrix_products_not_a_broadcast_of_every_axis() -> None:
    # "ij,jk->ik" of 300 x 300 made a 300**3 product first (216 MB in float64).
    import tracemalloc

    if plugrad.default_device().backend.name != "numpy":
        pytest.skip("memory is measured on the NumPy backend")
    a = plugrad.asarray(np.random.default_rng(0).standard_normal((300, 300)))
    tracemalloc.start()
    try:
        product = plugrad.einsum("ij,jk->ik", a, a)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    np.testing.assert_allclose(product.numpy(), a.numpy() @ a.numpy(), rtol=1e-12)
    assert peak < 4 * 300 * 300 * 8


def test_einsum_sublist_form_and_diagonals_of_unequal_sizes() -> None:
    torch = pytest.importorskip("torch")
    x, y = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    ours = plugrad.einsum(plugrad.asarray(x), [0, 1], plugrad.asarray(y), [1, 2], [0, 2])
    theirs = torch.einsum(torch.tensor(x), [0, 1], torch.tensor(y), [1, 2], [0, 2])
    np.testing.assert_allclose(ours.numpy(), theirs.numpy())
    summed = plugrad.einsum(plugrad.asarray(x), [Ellipsis, 1], [1])
    np.testing.assert_allclose(summed.numpy(), x.sum(0))
    with pytest.raises(plugrad.errors.ArgumentError, match="ints from 0 to 51"):
        plugrad.einsum(plugrad.asarray(x), [0, 52])
    # A repeated letter takes a diagonal, which needs equal sizes (a size-1 axis was taken
    # as broadcasting: "ii->i" of a (1, 3) matrix gave one element).
    with pytest.raises(plugrad.errors.ShapeError, match="diagonal needs equal sizes"):
        plugrad.einsum("ii->i", plugrad.ones((1, 3)))


@pytest.mark.parametrize(
    "call",
    [
        lambda lib: lib.clamp(lib.tensor([1, 2, 3]), min=np.float64(2.5)),
        lambda lib: lib.tensor([1, 2, 3]).clamp(max=np.float32(1.5)),
        lambda lib: lib.tensor([1, 2, 3]).clip(np.int64(2), np.float64(2.5)),
        lambda lib: lib.tensor([True, False]).clamp(min=np.int64(3)),
        lambda lib: lib.where(lib.tensor([True, False]), lib.tensor([1.0, 2.0]), np.float64(0.5)),
        lambda lib: lib.div(lib.tensor([7, -7]), np.int64(2), rounding_mode="floor"),
        lambda lib: lib.div(np.int64(7), lib.tensor([2, -2]), rounding_mode="trunc"),
    ],
)
def test_numpy_scalars_promote_as_python_numbers_in_ops_of_several_inputs(call) -> None:
    # They were converted after the dtype was chosen: a clamp of integers by np.float64(2.5)
    # truncated the bound to 2, and where() of float32 with np.float64(0.5) gave float64;
    # div(rounding_mode=) raised on a NumPy dtype.
    torch = pytest.importorskip("torch")
    ours, theirs = call(plugrad), call(torch)
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    assert ours.tolist() == theirs.tolist()


def test_a_numpy_float_alpha_of_integers_is_refused_as_a_float_one() -> None:
    # np.float32(2.5) is no Python float: int64 + 2.5 * int64 became float32.
    ints = plugrad.tensor([1, 2])
    with pytest.raises(plugrad.errors.DtypeError, match=r"alpha=2\.5 is a float"):
        plugrad.add(ints, ints, alpha=np.float32(2.5))
    assert plugrad.add(ints, ints, alpha=np.int64(2)).tolist() == [3, 6]


TOP_LEVEL_NN = {
    "conv1d": lambda lib, x: lib.conv1d(x.reshape(1, 2, 6), x.reshape(2, 2, 3)[:, :, :2], None, 2),
    "conv2d": lambda lib, x: lib.conv2d(x.reshape(1, 1, 3, 4), x[:2, :2].reshape(1, 1, 2, 2)),
    "conv_transpose1d": lambda lib, x: lib.conv_transpose1d(
        x.reshape(1, 2, 6), x[:1].reshape(2, 1, 2)
    ),
    "max_pool1d": lambda lib, x: lib.max_pool1d(x.reshape(1, 2, 6), 2, 2),
    "avg_pool1d": lambda lib, x: lib.avg_pool1d(x.reshape(1, 2, 6), 3),
    "pixel_shuffle": lambda lib, x: lib.pixel_shuffle(x.reshape(1, 4, 3, 1), 2),
    "cosine_similarity": lambda lib, x: lib.cosine_similarity(x, x.flip(0), 1),
    "pairwise_distance": lambda lib, x: lib.pairwise_distance(x, x.flip(0)),
    "pdist": lambda lib, x: lib.pdist(x),
    "celu": lambda lib, x: lib.celu(x - 1.5, 0.5),
    "threshold": lambda lib, x: lib.threshold(x, 1.0, -2.0),
    "layer_norm": lambda lib, x: lib.layer_norm(x, (4,)),
    "group_norm": lambda lib, x: lib.group_norm(x, 2),
    "dropout": lambda lib, x: lib.dropout(x, 0.5, False),
    "hardshrink": lambda lib, x: lib.hardshrink(x - 1.5, 0.7),
    "conv3d": lambda lib, x: lib.conv3d(x.reshape(1, 1, 2, 3, 2), x[:1, :2].reshape(1, 1, 1, 1, 2)),
    "conv_transpose3d": lambda lib, x: lib.conv_transpose3d(
        x.reshape(1, 2, 1, 3, 2), x[:1].reshape(2, 1, 1, 1, 2), None, 1, 0, 0, 1, 1
    ),
    "max_pool3d": lambda lib, x: lib.max_pool3d(x.reshape(1, 1, 2, 3, 2), 2, 1),
    "adaptive_max_pool1d": lambda lib, x: lib.adaptive_max_pool1d(x.reshape(1, 2, 6), 4),
    "rrelu": lambda lib, x: lib.rrelu(x - 1.5, 0.1, 0.3, False),
    "relu_": lambda lib, x: lib.relu_(x - 1.5),
    "selu_": lambda lib, x: lib.selu_(x - 1.5),
    "celu_": lambda lib, x: lib.celu_(x - 1.5, 0.5),
    "rrelu_": lambda lib, x: lib.rrelu_(x - 1.5, 0.1, 0.3, False),
    "threshold_": lambda lib, x: lib.threshold_(x * 1.0, 1.0, -2.0),
}  # fmt: skip


@pytest.mark.parametrize("name", TOP_LEVEL_NN)
def test_top_level_names_of_nn_functions_are_pytorchs(name: str) -> None:
    # They were missing (AttributeError). Those whose top-level arguments are not
    # torch.nn.functional's (torch.batch_norm, torch.embedding) take PyTorch's top-level
    # ones: test_pytorch_toplevel_names.
    assert_agrees(
        TOP_LEVEL_NN[name], X, plugrad.default_device().backend.name, tolerance=1e-5,
        grad_tolerance=1e-5,
    )  # fmt: skip
    assert not hasattr(plugrad, "embedding_bag")  # (weight first in PyTorch's: not yet)


def test_pytorchs_pinned_memory_calls_run_and_copy() -> None:
    # x.pin_memory() and x.is_pinned() were missing (AttributeError), though
    # DataLoader(pin_memory=True) is taken: no backend pins host memory, so pin_memory()
    # is a copy (PyTorch's is one too: writing it leaves x as it was) and is_pinned() False.
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    copy = x.pin_memory()
    assert not x.is_pinned() and not copy.is_pinned() and not x.is_mps
    with plugrad.no_grad():
        copy[0] = 5.0
    assert x.tolist() == [1.0, 2.0]
    (copy * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]
    assert torch.ones(2).is_pinned() is False


def test_the_split_method_takes_pytorchs_split_size_keyword() -> None:
    for lib in (plugrad, torch):
        x = lib.ones((2, 5))
        assert [tuple(p.shape) for p in x.split(split_size=2, dim=1)] == [(2, 2), (2, 2), (2, 1)]
        pieces = lib.split(x, split_size_or_sections=[1, 4], dim=1)
        assert [tuple(p.shape) for p in pieces] == [(2, 1), (2, 4)]


@pytest.mark.parametrize(
    "call",
    [
        lambda x: x.repeat(1, True), lambda x: x.tile(1, True), lambda x: x.sum_to_size(1, True),
    ],
    ids=["repeat", "tile", "sum_to_size"],
)  # fmt: skip
def test_a_bool_count_is_one_as_pytorch_reads_it(call) -> None:
    # Taken forward, then backward failed with a bare "TypeError: an integer is required".
    results = []
    for lib in (plugrad, torch):
        x = lib.tensor(X, requires_grad=True)
        y = call(x)
        (y * lib.arange(y.numel(), dtype=y.dtype).reshape(y.shape)).sum().backward()
        results.append((tuple(y.shape), y.tolist(), x.grad.tolist()))
    assert results[0] == results[1]
    with pytest.raises(plugrad.errors.ArgumentError, match=r"repeat\(\): the counts must be whole"):
        plugrad.tensor(X).repeat(1, 2.5)


def test_rot90_of_bools_by_whole_turns_and_isin_assume_unique_as_pytorch() -> None:
    # rot90 by 0 or 4 turns copied through positive(), which takes no bools; isin refused
    # assume_unique= (a hint that changes nothing).
    for lib in (plugrad, torch):
        flags = lib.tensor([[True, False]])
        assert lib.rot90(flags, 0).tolist() == lib.rot90(flags, 4).tolist() == [[True, False]]
        found = lib.isin(lib.tensor([1, 2, 3]), lib.tensor([2, 5]), assume_unique=True)
        assert found.tolist() == [False, True, False]


@pytest.mark.parametrize(
    "name",
    ["FloatTensor", "DoubleTensor", "LongTensor", "IntTensor", "ShortTensor", "CharTensor",
     "ByteTensor", "BoolTensor"],
)  # fmt: skip
def test_legacy_tensor_types_and_new_as_pytorchs(name: str) -> None:
    # plugrad.FloatTensor and x.new were missing (AttributeError).
    for lib in (plugrad, torch):
        kind = getattr(lib, name)
        made, empty, sized = kind([1, 0, 1]), kind(), kind(2, 3)
        assert isinstance(made, kind) and not isinstance(made.to(lib.float16), kind)
        assert (empty.shape, tuple(sized.shape), sized.dtype) == ((0,), (2, 3), made.dtype)
        assert made.new([1, 1]).dtype == made.dtype and tuple(made.new(4).shape) == (4,)
        if lib is plugrad:
            ours = (made.dtype.name, made.tolist())
        else:
            assert ours == (str(made.dtype).removeprefix("torch."), made.tolist())


@pytest.mark.parametrize(
    "call",
    [
        lambda lib, x: x.add(other=x * 2, alpha=3),
        lambda lib, x: x.mul(other=x),
        lambda lib, x: x.sub(other=1.5),
        lambda lib, x: x.maximum(other=x.flip(0)),
        lambda lib, x: x.atan2(other=x + 1),
        lambda lib, x: x.pow(exponent=2),
        lambda lib, x: x.eq(other=x.flip(0)),
        lambda lib, x: x.matmul(other=x.t()),
        lambda lib, x: (x * 1).add_(other=x),
        lambda lib, x: (x * 1).pow_(exponent=3),
        lambda lib, x: x.div(other=x + 1, rounding_mode="floor"),
        lambda lib, x: lib.div(x, other=2.0),
    ],
)
def test_methods_take_their_second_input_by_pytorchs_keyword(call) -> None:
    # x.add(other=y), x.pow(exponent=2): refused (TypeError), the input being positional only.
    assert_agrees(call, X, plugrad.default_device().backend.name)


def test_numpy_scalars_and_ints_act_as_python_numbers() -> None:
    # NumPy's reductions return NumPy scalars (np.prod for a flattened size): they were
    # refused as sizes, values and factors, or (np.float64 as addcmul's value) made the
    # result float64.
    x = plugrad.zeros(2)
    x[0] = np.float64(0.5)
    x[1:] = np.int64(2)
    assert x.tolist() == [0.5, 2.0]
    assert x.masked_fill(x > 1, np.float64(1.5)).tolist() == [0.5, 1.5]
    ones = plugrad.ones((2, 2))
    assert plugrad.addmm(ones, ones, ones, alpha=np.float64(2)).tolist() == [[5.0, 5.0]] * 2
    for method in ("addcmul", "addcdiv"):
        result = getattr(plugrad.zeros(2), method)(
            plugrad.ones(2), plugrad.ones(2), value=np.float64(1.5)
        )
        assert result.dtype == plugrad.float32 and result.tolist() == [1.5, 1.5]
    assert plugrad.nn.Linear(np.prod((2, 3)), 4).weight.shape == (4, 6)
    assert plugrad.nn.Conv2d(2, 3, np.int64(3), stride=np.int64(2)).kernel_size == (3, 3)
    assert plugrad.nn.LayerNorm(np.int64(3)).normalized_shape == (3,)
    assert plugrad.nn.Bilinear(np.int64(2), 3, 4).weight.shape == (4, 2, 3)
    maps = plugrad.ones(2, 4, 3)
    assert plugrad.nn.GroupNorm(np.int64(2), 4)(maps).shape == (2, 4, 3)
    assert plugrad.nn.functional.group_norm(maps, np.int64(2)).shape == (2, 4, 3)
    assert plugrad.nn.LocalResponseNorm(np.int64(2))(maps).shape == (2, 4, 3)
    assert plugrad.nn.functional.normalize(maps, dim=np.int64(1)).shape == (2, 4, 3)
    assert plugrad.nn.init.dirac_(plugrad.empty(4, 2, 3), groups=np.int64(2)).shape == (4, 2, 3)
    assert plugrad.nn.Unflatten(1, (np.int64(2), np.int64(2)))(maps).shape == (2, 2, 2, 3)
    six = plugrad.ones(6)
    assert six.size(np.int64(0)) == 6
    assert [t.shape for t in six.chunk(np.int64(3))] == [(2,)] * 3
    assert [t.shape for t in six.split(plugrad.tensor(4))] == [(4,), (2,)]


def test_empty_cache_asks_each_backend_in_use_to_release_what_it_keeps(monkeypatch) -> None:
    plugrad.ones(1)  # the default backend is in use
    released = []
    for backend in plugrad.registry.backends_in_use():
        monkeypatch.setattr(backend, "release_cached_memory", lambda b=backend: released.append(b))
    plugrad.cuda.empty_cache()
    assert released == list(plugrad.registry.backends_in_use())
    assert plugrad.default_device().backend in released


def test_the_gpu_timing_and_naming_calls_say_why_without_a_gpu() -> None:
    # torch.cuda.synchronize() and current_device() were missing.
    calls = (plugrad.cuda.synchronize, plugrad.cuda.current_device)
    if plugrad.cuda.is_available():
        plugrad.cuda.synchronize()
        plugrad.cuda.synchronize(0)
        assert plugrad.cuda.current_device() == 0
        with pytest.raises(plugrad.errors.ArgumentError, match="not a CUDA GPU"):
            plugrad.cuda.synchronize("cpu")
        return
    for call in calls:
        with pytest.raises(plugrad.errors.BackendUnavailableError, match="is_available"):
            call()


def test_data_ptr_tells_shared_memory_as_pytorchs_does() -> None:
    device = plugrad.zeros(1).device
    if device.views_are_copies or device.backend.lazy:
        pytest.skip(f"views on {device.backend.name} are copies (documented)")
    results = []
    for lib in (plugrad, torch):
        x = lib.zeros(4, 3)
        base = x.data_ptr()
        results.append(
            (
                x[1:].data_ptr() - base,
                x.T.data_ptr() == base,
                x.view(12).data_ptr() == base,
                x.clone().data_ptr() == base,
                lib.zeros(0).data_ptr(),
            )
        )
    assert results[0] == results[1] == (12, True, True, False, 0)


def test_data_ptr_of_a_lazy_array_is_a_clear_error_and_ends_a_capture() -> None:
    if plugrad.zeros(1).device.backend.lazy:
        with pytest.raises(plugrad.errors.BackendError, match="no memory address"):
            plugrad.zeros(2).data_ptr()
        return
    compiled = plugrad.compile(lambda x: x * (x.data_ptr() > 0))
    with pytest.warns(plugrad.errors.CompileWarning, match="memory address"):
        assert compiled(plugrad.ones(2)).tolist() == [1.0, 1.0]
