"""The shared harness of the op table: one row per op, many checks per row.

Each ``tests/plugins/test_<module>.py`` holds the rows of one plugin module,
``CASES`` (differentiable ops) and ``NO_GRAD`` (ops declared without gradients),
and binds the checks with ``table_tests``:

- forward against NumPy, in float32 and float64, on every available backend;
- backward against central finite differences (float64);
- double backward (``create_graph=True``) against finite differences of the
  first-order gradients;
- float32 inputs give float32 gradients that agree with float64 ones, and
  float16 inputs float16 gradients (where the backend computes in float16);
- ops without gradients return tensors that never require grad.

``test_op_coverage.py`` fails if a registered op has no row.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

import plugrad
from plugrad import registry

Maker = Callable[[np.random.Generator, type], list[np.ndarray]]

DTYPES = pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])


#: Backends whose op-table passes take minutes each: they run when they are the default
#: backend (``PLUGRAD_BACKEND``) or named in ``PLUGRAD_TEST_BACKENDS`` (``all``: every one).
ON_REQUEST = ("torch", "jax", "dask")


def available_backends() -> list[str]:
    """The backends the table tests and the ``backend`` fixture run on."""
    requested = os.environ.get("PLUGRAD_TEST_BACKENDS", "")
    chosen = {name.strip() for name in requested.split(",") if name.strip()}
    chosen.add(os.environ.get("PLUGRAD_BACKEND", "numpy"))
    names = []
    for name in registry.backend_names():
        if name in ON_REQUEST and name not in chosen and "all" not in chosen:
            continue
        try:
            registry.resolve_device(name)
        except plugrad.errors.BackendError:
            continue
        names.append(name)
    return names


def skipped_backends() -> list[str]:
    """Available backends left out of the table tests (see :data:`ON_REQUEST`)."""
    tested = available_backends()
    return [name for name in plugrad.backends.available() if name not in tested]


@dataclass(frozen=True)
class Case:
    """A differentiable op: ``program`` over Tensors, ``reference`` over NumPy arrays."""

    op: str
    id: str
    program: Callable[..., plugrad.Tensor]
    reference: Callable[..., np.ndarray]
    shapes: tuple[tuple[int, ...], ...] = ()
    domains: tuple[tuple[float, float], ...] = field(default=((-2.0, 2.0),))
    #: Custom inputs ``make(rng, dtype) -> arrays`` (instead of shapes and domains).
    make: Maker | None = None
    #: Relative tolerance of the float32 forward check.
    rtol32: float = 1e-5
    #: Tolerances of the gradient checks (float64 against finite differences).
    rtol: float = 1e-5
    atol: float = 1e-6
    #: Why double backward is not checked for this row ("" means it is checked).
    no_double: str = ""

    def inputs(self, dtype: type = np.float64) -> list[np.ndarray]:
        rng = np.random.default_rng(zlib.crc32(self.id.encode()))
        if self.make is not None:
            return [np.asarray(a, dtype=dtype) for a in self.make(rng, dtype)]
        domains = self.domains * len(self.shapes) if len(self.domains) == 1 else self.domains
        return [
            rng.uniform(lo, hi, size=s).astype(dtype) for s, (lo, hi) in zip(self.shapes, domains)
        ]


@dataclass(frozen=True)
class NoGrad:
    """An op without gradients: its values, and that its results never require grad."""

    op: str
    id: str
    program: Callable[..., Any]
    reference: Callable[..., Any]
    inputs: Sequence[Any]

    def tensors(self, device: str | None = None) -> list[plugrad.Tensor]:
        out = []
        for a in self.inputs:
            a = np.asarray(a)
            floating = a.dtype.kind == "f"
            out.append(plugrad.asarray(a, device=device, requires_grad=floating))
        return out


def _flatten(result: Any) -> list[Any]:
    if isinstance(result, (tuple, list)):
        return [leaf for item in result for leaf in _flatten(item)]
    return [result]


def table_tests(cases: Sequence[Case], no_grad: Sequence[NoGrad] = ()) -> tuple[Any, ...]:
    """Return the parametrized table tests for ``cases`` and ``no_grad`` rows."""
    by_id = pytest.mark.parametrize("case", cases, ids=lambda c: c.id)
    backends = pytest.mark.parametrize("backend", available_backends())

    @backends
    @DTYPES
    @by_id
    def test_forward_matches_numpy(case: Case, dtype: type, backend: str) -> None:
        arrays = case.inputs(dtype)
        with plugrad.use_backend(backend) as device:  # constants in rows follow it too
            result = case.program(*(plugrad.asarray(a) for a in arrays))
        assert result.device is device
        expected = case.reference(*arrays)
        assert result.shape == np.shape(expected)
        assert result.numpy().dtype == np.asarray(expected).dtype, "the op changed the dtype"
        rtol, atol = (case.rtol32, case.rtol32 / 10) if dtype is np.float32 else (1e-10, 1e-12)
        np.testing.assert_allclose(result.numpy(), expected, rtol=rtol, atol=atol)

    @backends
    @by_id
    def test_backward_matches_finite_differences(case: Case, check_gradients, backend: str) -> None:
        with plugrad.use_backend(backend):
            check_gradients(case.program, *case.inputs(), rtol=case.rtol, atol=case.atol)

    @backends
    @by_id
    def test_double_backward_matches_finite_differences(
        case: Case, check_double_backward, backend: str
    ) -> None:
        if case.no_double:
            pytest.skip(f"{case.op}: {case.no_double}")
        with plugrad.use_backend(backend):
            check_double_backward(
                case.program, *case.inputs(), rtol=case.rtol * 10, atol=case.atol * 10
            )

    @backends
    @by_id
    def test_float32_gradients_stay_float32(case: Case, backend: str) -> None:
        with plugrad.use_backend(backend):
            leaves = [plugrad.asarray(a, requires_grad=True) for a in case.inputs(np.float32)]
            out = case.program(*leaves)
            out.backward(plugrad.ones_like(out))
            reference = [plugrad.asarray(a, requires_grad=True) for a in case.inputs(np.float64)]
            out64 = case.program(*reference)
            out64.backward(plugrad.ones_like(out64))
        for leaf, ref in zip(leaves, reference):
            assert leaf.grad is not None
            assert leaf.grad.dtype == plugrad.float32
            scale = max(1.0, float(np.max(np.abs(ref.grad.numpy()), initial=0.0)))
            np.testing.assert_allclose(
                leaf.grad.numpy(), ref.grad.numpy(), rtol=case.rtol32 * 100, atol=1e-4 * scale
            )

    @by_id
    def test_float16_gradients_stay_float16(case: Case) -> None:
        if plugrad.float16 not in plugrad.default_device().dtypes:
            pytest.skip(f"{plugrad.default_device().backend.name} has no float16")
        leaves = [
            plugrad.asarray(a.astype(np.float16), requires_grad=True)
            for a in case.inputs(np.float64)
        ]
        try:
            out = case.program(*leaves)
        except TypeError as exc:
            pytest.skip(f"{case.op}: the backend has no float16 version ({exc})")
        out.backward(plugrad.ones_like(out))
        for leaf in leaves:
            assert leaf.grad is not None and leaf.grad.dtype == plugrad.float16

    tests = (
        test_forward_matches_numpy,
        test_backward_matches_finite_differences,
        test_double_backward_matches_finite_differences,
        test_float32_gradients_stay_float32,
        test_float16_gradients_stay_float16,
    )
    if not no_grad:
        return (*tests, None)

    @backends
    @pytest.mark.parametrize("row", no_grad, ids=lambda r: r.id)
    def test_ops_without_gradient(row: NoGrad, backend: str) -> None:
        with plugrad.use_backend(backend):
            tensors = row.tensors(backend)
            result = row.program(*tensors)
        expected = row.reference(*[np.asarray(a) for a in row.inputs])
        results, expecteds = _flatten(result), _flatten(expected)
        assert len(results) == len(expecteds)
        for r, e in zip(results, expecteds):
            assert isinstance(r, plugrad.Tensor)
            assert not r.requires_grad and r.grad_fn is None
            assert r.shape == np.shape(e)
            assert r.numpy().dtype == np.asarray(e).dtype
            np.testing.assert_array_equal(r.numpy(), e)

    return (*tests, test_ops_without_gradient)
