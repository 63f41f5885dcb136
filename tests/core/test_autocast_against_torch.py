"""plugrad.autocast against torch.autocast("cpu") on a representative list of functions.

Each case runs one program under ``autocast("cpu", dtype=...)`` with plugrad and with
PyTorch from the same data: bfloat16 regions on the torch backend, float16 regions on
NumPy (which stores no bfloat16). Every tensor output must have PyTorch's dtype and
values within the region dtype's precision (relative to the largest magnitude), and
the float32 leaves (inputs, a module's parameters) gradients of PyTorch's dtype and
values. The cases cover each kind of PyTorch's CPU policy (lowered: matmul,
convolutions...; float32: losses, linear algebra, FFTs...; promoted: cat, stack) and
functions outside it, which must run in their inputs' dtype.

The cases marked xfail are known differences from PyTorch, each with its cause: a fix
makes its case pass, and the strict xfail then fails, to be removed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

import plugrad

torch = pytest.importorskip("torch")

# (backend, region dtype name, relative tolerance): about two units in the last place
REGIONS = {
    "numpy-float16": ("numpy", "float16", 2.0**-9),
    "torch-bfloat16": ("torch", "bfloat16", 2.0**-6),
}


FLOATING = ("float16", "bfloat16", "float32", "float64")


def _dtype_name(t: Any) -> str:
    """``"float32"`` for ``plugrad.float32`` and ``torch.float32``."""
    return str(t.dtype).split(".")[-1]


@dataclass
class Case:
    """``program(lib, *tensors)`` on tensors made from ``inputs``: ``(array, kind)`` pairs,
    kind ``"f32"`` (a float32 leaf that requires grad), ``"low"`` (such a leaf cast to the
    region's dtype before the region), ``"f64"`` or ``"data"`` (as it is, no grad)."""

    program: Callable[..., Any]
    inputs: list[tuple[np.ndarray, str]]
    #: a module built by ``module(lib)``, given the same parameters in both, is passed first
    module: Callable[[Any], Any] | None = None
    grads: bool = True
    regions: tuple[str, ...] = tuple(REGIONS)
    xfail: dict[str, str] = field(default_factory=dict)


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def r(*shape: int, seed: int = 0, kind: str = "f32", scale: float = 1.0) -> tuple[np.ndarray, str]:
    return (scale * _rng(seed + sum(shape)).standard_normal(shape)).astype(np.float32), kind


def positive(*shape: int, seed: int = 0) -> tuple[np.ndarray, str]:
    return (_rng(seed).uniform(0.2, 0.8, shape).astype(np.float32), "f32")


def spd(n: int, kind: str = "f32") -> tuple[np.ndarray, str]:
    a = _rng(n).standard_normal((n, n))
    return (a @ a.T + n * np.eye(n)).astype(np.float32), kind


def labels(*shape: int, classes: int) -> tuple[np.ndarray, str]:
    return _rng(7).integers(0, classes, shape), "data"


F = "nn.functional."


def fn(name: str) -> Callable[..., Any]:
    """``lib.<name>`` (dotted) as a program."""

    def program(lib: Any, *args: Any, **kwargs: Any) -> Any:
        target = lib
        for part in name.split("."):
            target = getattr(target, part)
        return target(*args, **kwargs)

    return program


CASES: dict[str, Case] = {
    # -- lowered: the region's dtype ------------------------------------------------------
    "matmul": Case(fn("matmul"), [r(3, 4), r(4, 5)]),
    "matmul 1-D": Case(fn("matmul"), [r(4), r(4, 3)]),
    "@": Case(lambda lib, a, b: a @ b, [r(2, 3, 4), r(4, 5)]),
    "mm": Case(fn("mm"), [r(3, 4), r(4, 5)]),
    "Tensor.mm": Case(lambda lib, a, b: a.mm(b), [r(3, 4), r(4, 5)]),
    "mm of a lowered and a float32 input": Case(fn("mm"), [r(3, 4, kind="low"), r(4, 5)]),
    "mm of float64 inputs (not cast)": Case(
        fn("mm"), [r(3, 4, kind="f64"), r(4, 5, kind="f64")], grads=False
    ),
    "bmm": Case(fn("bmm"), [r(2, 3, 4), r(2, 4, 5)]),
    "addmm": Case(
        lambda lib, c, a, b: lib.addmm(c, a, b, beta=0.5, alpha=2.0), [r(3, 5), r(3, 4), r(4, 5)]
    ),
    "baddbmm": Case(fn("baddbmm"), [r(2, 3, 5), r(2, 3, 4), r(2, 4, 5)]),
    "einsum contraction": Case(
        lambda lib, a, b: lib.einsum("bij,bjk->bik", a, b), [r(2, 3, 4), r(2, 4, 5)]
    ),
    # PyTorch's einsum is lowered where it reaches bmm: a label two operands share summed
    "einsum without a contraction": Case(lambda lib, a: lib.einsum("ii->i", a), [r(4, 4)]),
    "einsum of one operand, a sum": Case(lambda lib, a: lib.einsum("ij->", a), [r(3, 4)]),
    "einsum, an outer product": Case(lambda lib, a, b: lib.einsum("i,j->ij", a, b), [r(3), r(4)]),
    "einsum, elementwise": Case(
        lambda lib, a, b: lib.einsum("ij,ij->ij", a, b), [r(3, 4), r(3, 4, seed=1)]
    ),
    "einsum, implicit output with a contraction": Case(
        lambda lib, a, b: lib.einsum("ij,jk", a, b), [r(3, 4), r(4, 2)]
    ),
    "einsum, a dot of three": Case(
        lambda lib, a, b, c: lib.einsum("i,i,i->", a, b, c), [r(4), r(4, seed=1), r(4, seed=2)]
    ),
    "einsum, ellipsis batched product": Case(
        lambda lib, a, b: lib.einsum("...ij,...jk->...ik", a, b), [r(2, 3, 4), r(2, 4, 5)]
    ),
    "tensordot": Case(lambda lib, a, b: lib.tensordot(a, b, dims=2), [r(2, 3, 4), r(3, 4, 5)]),
    "tensordot, an outer product": Case(
        lambda lib, a, b: lib.tensordot(a, b, dims=0), [r(2), r(3)]
    ),
    "tensordot, axes as lists": Case(
        lambda lib, a, b: lib.tensordot(a, b, dims=([1, 2], [0, 1])), [r(2, 3, 4), r(3, 4, 5)]
    ),
    "tensordot to a scalar": Case(
        lambda lib, a, b: lib.tensordot(a, b, dims=2), [r(2, 3), r(2, 3, seed=1)]
    ),
    "dot": Case(
        fn("dot"),
        [r(5), r(5)],
    ),
    "inner": Case(fn("inner"), [r(2, 5), r(3, 5)]),
    "inner of two vectors": Case(fn("inner"), [r(5), r(5, seed=1)]),
    "inner of a matrix and a vector": Case(fn("inner"), [r(3, 5), r(5)]),
    "vdot": Case(fn("vdot"), [r(5), r(5, seed=1)]),
    "mv": Case(fn("mv"), [r(3, 5), r(5)]),
    "linear": Case(fn(F + "linear"), [r(3, 4), r(5, 4), r(5)]),
    "conv1d": Case(
        lambda lib, x, w, b: lib.nn.functional.conv1d(x, w, b, padding=1),
        [r(2, 3, 7), r(4, 3, 3), r(4)],
    ),
    "conv2d": Case(
        lambda lib, x, w, b: lib.nn.functional.conv2d(x, w, b, stride=2),
        [r(2, 3, 6, 6), r(4, 3, 3, 3), r(4)],
    ),
    "conv_transpose2d": Case(fn(F + "conv_transpose2d"), [r(2, 3, 4, 4), r(3, 2, 3, 3), r(2)]),
    "conv3d": Case(fn(F + "conv3d"), [r(1, 2, 5, 5, 5), r(3, 2, 3, 3, 3), r(3)]),
    "conv3d, a deep kernel": Case(
        lambda lib, x, w, b: lib.nn.functional.conv3d(x, w, b, stride=2),
        [r(1, 1, 6, 6, 6, scale=3), r(2, 1, 4, 4, 4, scale=3), r(2)],
    ),
    "prelu": Case(fn(F + "prelu"), [r(2, 3, 4), positive(3)]),
    "scaled_dot_product_attention": Case(
        fn(F + "scaled_dot_product_attention"), [r(2, 3, 5, 4), r(2, 3, 6, 4), r(2, 3, 6, 4)]
    ),
    "nn.Linear": Case(lambda lib, m, x: m(x), [r(3, 4)], module=lambda lib: lib.nn.Linear(4, 5)),
    "nn.Conv2d": Case(
        lambda lib, m, x: m(x), [r(2, 3, 6, 6)], module=lambda lib: lib.nn.Conv2d(3, 4, 3)
    ),
    "nn.Conv2d then nn.BatchNorm2d": Case(
        lambda lib, m, x: m(x),
        [r(2, 3, 6, 6)],
        # (no conv bias: its gradient through a training BatchNorm is 0 up to rounding noise)
        module=lambda lib: lib.nn.Sequential(
            lib.nn.Conv2d(3, 4, 3, bias=False), lib.nn.BatchNorm2d(4)
        ),
    ),
    "nn.LSTM": Case(
        lambda lib, m, x: m(x),
        [r(2, 3, 4)],
        module=lambda lib: lib.nn.LSTM(4, 5, batch_first=True),
        # Under float16, PyTorch's oneDNN LSTM raises on the CPU: no reference.
        regions=("torch-bfloat16",),
    ),
    "nn.RNN": Case(
        lambda lib, m, x: m(x),
        [r(3, 2, 4)],
        module=lambda lib: lib.nn.RNN(4, 5, num_layers=2, bidirectional=True),
        regions=("torch-bfloat16",),
    ),
    "nn.GRU (not lowered)": Case(
        lambda lib, m, x: m(x), [r(3, 2, 4)], module=lambda lib: lib.nn.GRU(4, 5)
    ),
    # -- float32: losses, linear algebra, FFTs, reductions ------------------------------
    "mse_loss": Case(fn(F + "mse_loss"), [r(4, 3, kind="low"), r(4, 3)]),
    "cross_entropy": Case(fn(F + "cross_entropy"), [r(4, 5, kind="low"), labels(4, classes=5)]),
    "nll_loss": Case(
        lambda lib, x, t: lib.nn.functional.nll_loss(lib.log_softmax(x, 1), t),
        [r(4, 5, kind="low"), labels(4, classes=5)],
    ),
    "l1_loss": Case(fn(F + "l1_loss"), [r(4, 3, kind="low"), r(4, 3)]),
    "smooth_l1_loss": Case(fn(F + "smooth_l1_loss"), [r(4, 3), r(4, 3, kind="low")]),
    "kl_div": Case(
        lambda lib, x, t: lib.nn.functional.kl_div(x, t, reduction="batchmean"),
        [r(4, 3, kind="low"), positive(4, 3)],
    ),
    "binary_cross_entropy_with_logits": Case(
        fn(F + "binary_cross_entropy_with_logits"), [r(4, 3, kind="low"), positive(4, 3)]
    ),
    "mse_loss of float32 inputs": Case(fn(F + "mse_loss"), [r(4, 3), r(4, 3, seed=1)]),
    "fft.fft": Case(fn("fft.fft"), [r(8, kind="low")], grads=False),
    "fft.rfft": Case(lambda lib, x: lib.fft.rfft(x).abs(), [r(8)]),
    "linalg.inv": Case(fn("linalg.inv"), [spd(3, "low")]),
    "linalg.inv of float32": Case(fn("linalg.inv"), [spd(3)]),
    "linalg.solve": Case(fn("linalg.solve"), [spd(3, "low"), r(3, 2)]),
    "linalg.svd": Case(lambda lib, a: lib.linalg.svd(a)[1], [r(4, 3, kind="low")], grads=False),
    "linalg.svdvals": Case(fn("linalg.svdvals"), [r(4, 3)]),
    "linalg.eigh": Case(lambda lib, a: lib.linalg.eigh(a)[0], [spd(3, "low")], grads=False),
    "linalg.qr": Case(lambda lib, a: lib.linalg.qr(a)[1].abs(), [r(4, 3, kind="low")], grads=False),
    "linalg.cholesky": Case(fn("linalg.cholesky"), [spd(3, "low")]),
    "linalg.inv_ex": Case(
        lambda lib, a: lib.linalg.inv_ex(a)[0],
        [spd(3, "low")],
    ),
    "linalg.matrix_exp": Case(
        fn("linalg.matrix_exp"),
        [r(5, 5, scale=3)],
    ),
    "linalg.lstsq": Case(
        lambda lib, a, b: lib.linalg.lstsq(a, b)[0], [spd(3, "low"), r(3, 2)], grads=False
    ),
    "linalg.cholesky_ex": Case(lambda lib, a: lib.linalg.cholesky_ex(a)[0], [spd(3, "low")]),
    "linalg.lu_solve": Case(
        lambda lib, a, b: lib.linalg.lu_solve(*lib.linalg.lu_factor(a), b),
        [spd(3), r(3, 2)],
        grads=False,
    ),
    "max_unpool1d": Case(
        lambda lib, x: lib.nn.functional.max_unpool1d(
            *lib.nn.functional.max_pool1d(x, 2, return_indices=True), 2
        ),
        [r(2, 3, 8, kind="low")],
        grads=False,
    ),
    "prod": Case(lambda lib, x: lib.prod(x, 1), [r(3, 4, kind="low")], grads=False),
    "prod of float32": Case(lambda lib, x: lib.prod(x, 1), [r(3, 4)]),
    "cumsum": Case(lambda lib, x: lib.cumsum(x, 0), [r(5, kind="low")], grads=False),
    "cdist": Case(fn("cdist"), [r(3, 4, kind="low"), r(5, 4)]),
    "trace": Case(fn("trace"), [r(4, 4, kind="low")], grads=False),
    "trace of float32": Case(fn("trace"), [r(4, 4)]),
    # (reflection_pad1d/2d and replication_pad1d/2d/3d are on PyTorch's CPU float32 list)
    "F.pad reflect": Case(
        lambda lib, x: lib.nn.functional.pad(x, (1, 1), mode="reflect"),
        [r(2, 3, 4, kind="low")],
        grads=False,
    ),
    "F.pad reflect 2-d": Case(
        lambda lib, x: lib.nn.functional.pad(x, (1, 1, 2, 0), mode="reflect"),
        [r(1, 2, 4, 4, kind="low")],
        grads=False,
    ),
    "F.pad reflect 3-d (not listed)": Case(
        lambda lib, x: lib.nn.functional.pad(x, (1, 1, 1, 1, 1, 1), mode="reflect"),
        [r(1, 2, 3, 4, 4, kind="low")],
        grads=False,
    ),
    "F.pad replicate 3-d": Case(
        lambda lib, x: lib.nn.functional.pad(x, (1, 1, 1, 1, 1, 1), mode="replicate"),
        [r(1, 2, 3, 4, 4, kind="low")],
        grads=False,
    ),
    "F.pad constant (not listed)": Case(
        lambda lib, x: lib.nn.functional.pad(x, (1, 2), value=0.5),
        [r(2, 3, 4, kind="low")],
        grads=False,
    ),
    # -- promoted: the widest floating dtype ----------------------------------------------
    "cat of float32 and lowered": Case(
        lambda lib, a, b: lib.cat([a, b]), [r(2, 3), r(2, 3, kind="low")]
    ),
    "cat of float64 and lowered": Case(
        lambda lib, a, b: lib.cat([a, b]), [r(2, 3, kind="f64"), r(2, 3, kind="low")]
    ),
    "stack of float32 and lowered": Case(
        lambda lib, a, b: lib.stack([a, b], 1), [r(2, 3, kind="low"), r(2, 3)]
    ),
    # -- on no list: the inputs' dtype ----------------------------------------------------
    "add": Case(fn("add"), [r(3, 4, kind="low"), r(3, 4, kind="low", seed=1)], grads=False),
    "add of float32": Case(fn("add"), [r(3, 4), r(3, 4, seed=1)]),
    "mul of lowered and float32": Case(fn("mul"), [r(3, 4, kind="low"), r(3, 4)]),
    "exp": Case(fn("exp"), [r(3, 4, kind="low")], grads=False),
    "softmax": Case(lambda lib, x: lib.softmax(x, 1), [r(3, 4, kind="low")], grads=False),
    "layer_norm of float32": Case(
        lambda lib, x, w, b: lib.nn.functional.layer_norm(x, (4,), w, b), [r(3, 4), r(4), r(4)]
    ),
    "layer_norm of a lowered input, float32 weights": Case(
        lambda lib, x, w, b: lib.nn.functional.layer_norm(x, (4,), w, b),
        [r(3, 4, kind="low"), r(4), r(4)],
    ),
    "sum": Case(fn("sum"), [r(3, 4, kind="low")], grads=False),
    "relu": Case(fn("relu"), [r(3, 4, kind="low")], grads=False),
    "gelu": Case(fn(F + "gelu"), [r(3, 4, kind="low")], grads=False),
    "linear then gelu then softmax": Case(
        lambda lib, x, w: lib.softmax(lib.nn.functional.gelu(lib.nn.functional.linear(x, w)), 1),
        [r(3, 4), r(5, 4)],
    ),
    # -- composites of listed ops, lowered by PyTorch -------------------------------------
    "linalg.pinv": Case(
        fn("linalg.pinv"),
        [r(4, 3)],
        grads=False,  # (torch's backward mixes the dtypes there: its mm raises)
    ),
    "linalg.pinv hermitian": Case(
        lambda lib, a: lib.linalg.pinv(a, hermitian=True), [spd(3)], grads=False
    ),
    "cov": Case(fn("cov"), [r(3, 6)]),
    "cov with aweights": Case(
        lambda lib, x, w: lib.cov(x, aweights=w), [r(3, 6), positive(6)], grads=False
    ),
    "rnn_relu_cell": Case(
        fn("rnn_relu_cell"), [r(2, 3), r(2, 4), r(4, 3), r(4, 4), r(4), r(4, seed=1)]
    ),
    "rnn_tanh_cell": Case(
        fn("rnn_tanh_cell"),
        [r(2, 3), r(2, 4), r(4, 3), r(4, 4), r(4), r(4, seed=1)],
    ),
}


def _tensors(lib: Any, device: Any, inputs: list, low: str, leaves: list) -> list:
    """The tensors of ``inputs`` (their float32 leaves appended to ``leaves``)."""
    out = []
    for array, kind in inputs:
        if kind == "data":
            out.append(
                torch.from_numpy(array.copy())
                if lib is torch
                else plugrad.asarray(array, device=device)
            )
            continue
        dtype = "float64" if kind == "f64" else "float32"
        if lib is torch:
            t = torch.from_numpy(array.copy()).to(getattr(torch, dtype))
        else:
            t = plugrad.asarray(array, device=device).to(getattr(plugrad, dtype))
        if kind != "f64":
            leaves.append(t.requires_grad_(True))
        out.append(t.to(getattr(lib, low)) if kind == "low" else t)
    return out


def _flat(value: Any) -> list:
    if isinstance(value, plugrad.Tensor | torch.Tensor):
        return [value]
    if isinstance(value, tuple | list):
        return [t for v in value for t in _flat(v)]
    return []


def _module(lib: Any, device: Any, make: Callable[[Any], Any]) -> Any:
    torch.manual_seed(0)
    reference = make(torch)
    if lib is torch:
        return reference
    module = make(plugrad)
    state = {
        k: plugrad.asarray(v.numpy().copy(), device=device)
        for k, v in reference.state_dict().items()
    }
    module.load_state_dict(state)
    return module


def _run(lib: Any, case: Case, backend: str, low: str) -> tuple[list, list, list]:
    """The outputs, and the float32 leaves and their gradients (of a weighted sum)."""
    with plugrad.use_backend(backend) as device:
        leaves: list = []
        tensors = _tensors(lib, device, case.inputs, low, leaves)
        args = tensors
        if case.module is not None:
            module = _module(lib, device, case.module)
            leaves = [*module.parameters(), *leaves]
            args = [module, *tensors]
        with lib.autocast("cpu", dtype=getattr(lib, low)):
            outs = _flat(case.program(lib, *args))
        if not case.grads:
            return outs, [], []
        loss = None
        for o in outs:
            if _dtype_name(o) in FLOATING and o.requires_grad:
                n = int(np.prod(tuple(o.shape)))
                weights = np.linspace(0.5, 1.5, n).astype(np.float32).reshape(tuple(o.shape))
                w = (
                    torch.from_numpy(weights)
                    if lib is torch
                    else plugrad.asarray(weights, device=device)
                )
                term = (o.float() * w).sum()
                loss = term if loss is None else loss + term
        assert loss is not None, "no output requires grad"
        loss.backward()
        return outs, leaves, [leaf.grad for leaf in leaves]


def _values(t: Any) -> np.ndarray:
    t = t.detach()
    if _dtype_name(t) in ("bfloat16", "float16"):
        t = t.float()
    return np.asarray(t.numpy())


def _assert_close(ours: Any, theirs: Any, rtol: float, what: str) -> None:
    a, b = _values(ours), _values(theirs)
    assert a.shape == b.shape, f"{what}: shape {a.shape} != torch's {b.shape}"
    scale = float(np.abs(b).max()) if b.size else 1.0
    np.testing.assert_allclose(a, b, rtol=0, atol=rtol * max(scale, 1e-30), err_msg=what)


def _params() -> list:
    params = []
    for name, case in CASES.items():
        for region in case.regions:
            reason = case.xfail.get(region, case.xfail.get("*"))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            params.append(pytest.param(name, region, id=f"{name}-{region}", marks=marks))
    return params


@pytest.mark.parametrize(("name", "region"), _params())
def test_autocast_agrees_with_torch(name: str, region: str) -> None:
    case = CASES[name]
    backend, low, rtol = REGIONS[region]
    ours, our_leaves, our_grads = _run(plugrad, case, backend, low)
    theirs, _, their_grads = _run(torch, case, backend, low)
    assert [_dtype_name(t) for t in ours] == [_dtype_name(t) for t in theirs], "dtypes"
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        if b.dtype.is_floating_point or b.dtype.is_complex:
            _assert_close(a, b, rtol, f"output {i}")
        else:
            np.testing.assert_array_equal(_values(a), _values(b))
    for i, (leaf, a, b) in enumerate(zip(our_leaves, our_grads, their_grads, strict=True)):
        assert leaf.dtype == plugrad.float32
        assert (a is None) == (b is None), f"leaf {i}: gradient presence"
        if b is not None:
            assert _dtype_name(a) == _dtype_name(b) == "float32", f"leaf {i} grad dtype"
            _assert_close(a, b, 2 * rtol, f"leaf {i} grad")
