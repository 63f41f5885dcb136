"""The workloads the benchmarks time, each written three ways.

- ``plugrad``: the computation with plugrad, ``backward()`` included;
- ``floor``: the same maths hand-written against the backend's raw namespace,
  backward derived by hand and nothing kept that the backward does not need:
  the floor a framework on that backend can reach;
- ``torch``: the same ops in PyTorch (CPU, eager), for ``compare.py`` only;
  the asv suite never imports torch;
- ``jax`` and ``jax_jit``: the same loss written with ``jax.numpy``, its gradient
  by ``jax.grad`` run eagerly and under ``jax.jit``, for ``compare.py --backend jax``
  (JAX's own autograd on the same arrays).

A workload builds its data in ``__init__`` (``NotImplementedError``, asv's
"skipped", if the backend cannot run here) and ``check()`` fails loudly if the
three ways disagree, so a wrong floor cannot skew a ratio. The asv classes
(``bench_*.py``) and ``compare.py`` time the same methods.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import tracemalloc
from collections.abc import Iterator
from typing import Any

import numpy as np

import plugrad
from plugrad.compiler import codegen as _codegen

from ._common import Skipped, clock_for, device_or_skip


class Workload:
    """Data on one backend and one computation, written for plugrad, the floor and PyTorch."""

    def __init__(self, backend: str) -> None:
        device = device_or_skip(backend)
        self.device = device
        self.backend = backend
        self.xp = device.xp
        self.to_numpy = device.backend.to_numpy
        self._sync_backend = device.backend
        self._sync_native = device.native
        #: Whether the backend only builds task graphs (Dask): see MLPStep._computed.
        self.lazy = device.backend.lazy
        #: What the ratios are timed with (CPU time on the CPU, see ``clock_for``).
        self.clock = clock_for(device)
        self.torch: Any = None
        self.jax: Any = None
        #: Why :func:`plugrad.compile` cannot run this workload here, if it cannot.
        self.compile_gap: str | None = None

    def skip_if_compile_gap(self) -> None:
        """Skip a compiled version's timing (asv's "skipped") where plugrad.compile cannot run."""
        if self.compile_gap:
            raise Skipped(self.compile_gap)

    @contextlib.contextmanager
    def compiled_checks(self) -> Iterator[None]:
        """Around the checks of the compiled versions: note why they cannot run here."""
        try:
            yield
        except NotImplementedError as exc:
            self.compile_gap = f"plugrad.compile on {self.backend!r}: {exc}"

    def sync(self) -> None:
        """Wait for the device to finish (a no-op on the CPU): GPU timings must include the work."""
        self._sync_backend.synchronize(self._sync_native)

    def tensor(self, data: Any, requires_grad: bool = False) -> plugrad.Tensor:
        """A float32 plugrad tensor on this workload's backend."""
        return plugrad.tensor(
            np.asarray(data, dtype=np.float32),
            dtype=plugrad.float32,
            device=self.backend,
            requires_grad=requires_grad,
        )

    def raw(self, data: Any) -> Any:
        """The same data as a raw float32 array of the backend, for the floor."""
        return self.tensor(data).array

    def use_torch(self, torch: Any) -> None:
        """Prepare the PyTorch version (CPU tensors holding the same data)."""
        self.torch = torch

    def check(self) -> None:
        """Raise ``AssertionError`` unless plugrad and the floor (and PyTorch) agree."""
        raise NotImplementedError

    # JAX's own autograd: a workload that has it defines ``_jax_loss(*arrays)`` (a pure
    # function of ``jax.numpy`` arrays) and ``_jax_arguments()`` (the raw arrays, those
    # differentiated first), and ``_jax_differentiated`` (how many of them).
    _jax_differentiated = 0

    def _jax_loss(self, *arrays: Any) -> Any:
        raise NotImplementedError

    def _jax_arguments(self) -> list[Any]:
        raise NotImplementedError

    def use_jax(self, jax: Any) -> None:
        """Prepare ``jax.grad`` of the loss, eager and jitted, on JAX copies of the data."""
        self.jax = jax
        arguments = [jax.numpy.asarray(self.to_numpy(a)) for a in self._jax_arguments()]
        self._jax_data = arguments
        argnums = tuple(range(self._jax_differentiated))
        self._jax_grad = jax.value_and_grad(self._jax_loss, argnums=argnums)
        self._jax_jit_grad = jax.jit(self._jax_grad)

    def jax_forward_backward(self) -> Any:
        """The loss and its gradients by ``jax.grad``, each primitive dispatched eagerly."""
        return self.jax.block_until_ready(self._jax_grad(*self._jax_data))

    def jax_jit_forward_backward(self) -> Any:
        """The same under ``jax.jit`` (compiled by XLA on the first call)."""
        return self.jax.block_until_ready(self._jax_jit_grad(*self._jax_data))

    def check_jax(self, loss: Any, *grads: Any, rtol: float = 1e-5, atol: float = 1e-6) -> None:
        """``jax.grad``, eager and jitted, gives ``loss`` and ``grads``."""
        for way in (self.jax_forward_backward, self.jax_jit_forward_backward):
            jax_loss, jax_grads = way()
            self.assert_close(np.asarray(jax_loss), loss, rtol=rtol, atol=atol)
            for got, expected in zip(jax_grads, grads, strict=True):
                self.assert_close(np.asarray(got), expected, rtol=rtol, atol=atol)

    def assert_close(
        self, actual: Any, expected: Any, rtol: float = 1e-4, atol: float = 1e-6
    ) -> None:
        """Compare two results, each a Tensor, a torch tensor or a raw backend array."""
        actual, expected = _host(actual, self.to_numpy), _host(expected, self.to_numpy)
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


def _host(value: Any, to_numpy: Any) -> np.ndarray:
    """``value`` (a Tensor, a torch tensor or a raw backend array) as a NumPy array."""
    if isinstance(value, plugrad.Tensor):
        return value.detach().numpy()
    if isinstance(value, np.ndarray):  # a reference computed here with NumPy
        return value
    if type(value).__module__.startswith("torch"):
        return value.detach().cpu().numpy()
    return to_numpy(value)


# -- an elementwise chain: per-op overhead on tiny tensors, bandwidth on large ones --------


class ElementwiseChain(Workload):
    """``loss = sum(exp((x * w + 1) * x))``: 5 ops, ``x`` and ``w`` require grad.

    On 4 elements the arithmetic is free and what is timed is the framework's
    own cost per op; on a million it is memory traffic. By hand (d loss/d y = 1)::

        b = x * w + 1;  y = exp(b * x);  dx = y * x * w + y * b;  dw = y * x * x
    """

    def __init__(self, backend: str, size: int) -> None:
        super().__init__(backend)
        rng = np.random.default_rng(0)
        x = rng.uniform(-0.5, 0.5, size)
        w = rng.uniform(-2.0, 2.0, size)
        self.x, self.w = self.tensor(x, True), self.tensor(w, True)
        self.xr, self.wr = self.raw(x), self.raw(w)
        # Python floats, for an independent float64 reference in check().
        self._x64, self._w64 = x, w

    def plugrad_forward_backward(self) -> plugrad.Tensor:
        x, w = self.x, self.w
        x.grad = None  # backward accumulates; every call starts from zero
        w.grad = None
        loss = ((x * w + 1.0) * x).exp().sum()
        loss.backward()
        return loss

    def plugrad_forward_no_grad(self) -> plugrad.Tensor:
        x = self.x
        with plugrad.no_grad():
            return ((x * self.w + 1.0) * x).exp()

    def plugrad_compiled_forward_backward(self) -> plugrad.Tensor:
        """The same step through :func:`plugrad.compile` (captured by :meth:`check`)."""
        self.skip_if_compile_gap()
        return self._compiled(self.x, self.w)

    @functools.cached_property
    def _compiled(self) -> Any:
        def step(x: plugrad.Tensor, w: plugrad.Tensor) -> plugrad.Tensor:
            x.grad = None
            w.grad = None
            loss = ((x * w + 1.0) * x).exp().sum()
            loss.backward()
            return loss

        return plugrad.compile(step, fullgraph=True)

    def floor_forward_backward(self) -> tuple[Any, Any, Any]:
        xp, x, w = self.xp, self.xr, self.wr
        b = x * w + 1.0
        y = xp.exp(b * x)
        loss = xp.sum(y)
        yx = y * x
        return loss, yx * w + y * b, yx * x

    def floor_forward(self) -> Any:
        x = self.xr
        return self.xp.exp((x * self.wr + 1.0) * x)

    def use_torch(self, torch: Any) -> None:
        super().use_torch(torch)
        self.tx = torch.tensor(self.to_numpy(self.xr), requires_grad=True)
        self.tw = torch.tensor(self.to_numpy(self.wr), requires_grad=True)

    def torch_forward_backward(self) -> Any:
        x, w = self.tx, self.tw
        x.grad = None
        w.grad = None
        loss = ((x * w + 1.0) * x).exp().sum()
        loss.backward()
        return loss

    def torch_forward_no_grad(self) -> Any:
        x = self.tx
        with self.torch.no_grad():
            return ((x * self.tw + 1.0) * x).exp()

    def check(self) -> None:
        loss = self.plugrad_forward_backward()
        loss_r, dx_r, dw_r = self.floor_forward_backward()
        rtol = 1e-4 if self.xr.shape[0] > 1000 else 1e-6  # float32 sums of a million terms
        self.assert_close(loss, loss_r, rtol=rtol)
        self.assert_close(self.x.grad, dx_r, rtol=1e-6)
        self.assert_close(self.w.grad, dw_r, rtol=1e-6)
        self.assert_close(self.plugrad_forward_no_grad(), self.floor_forward(), rtol=1e-6)
        x64, w64 = self._x64, self._w64
        y64 = np.exp((x64 * w64 + 1.0) * x64)
        self.assert_close(self.x.grad, y64 * (2 * x64 * w64 + 1.0), rtol=1e-5, atol=1e-6)
        self.assert_close(self.w.grad, y64 * x64 * x64, rtol=1e-5, atol=1e-6)
        with self.compiled_checks():
            for _ in range(2):  # capture, then replay
                self.assert_close(self.plugrad_compiled_forward_backward(), loss_r, rtol=rtol)
                self.assert_close(self.x.grad, dx_r, rtol=1e-6)
                self.assert_close(self.w.grad, dw_r, rtol=1e-6)
        self.plugrad_forward_backward()  # the gradients of an eager step, for PyTorch's check
        if self.torch is not None:
            self.assert_close(self.torch_forward_backward(), loss, rtol=rtol)
            self.assert_close(self.tx.grad, self.x.grad, rtol=1e-6)
            self.assert_close(self.torch_forward_no_grad(), self.floor_forward(), rtol=1e-6)
        if self.jax is not None:
            self.check_jax(loss_r, dx_r, dw_r, rtol=rtol)

    _jax_differentiated = 2

    def _jax_loss(self, x: Any, w: Any) -> Any:
        return self.jax.numpy.sum(self.jax.numpy.exp((x * w + 1.0) * x))

    def _jax_arguments(self) -> list[Any]:
        return [self.xr, self.wr]


class LongChain(Workload):
    """``n`` ops in a row on a (4,) tensor, then ``sum``, forward and backward.

    ``y = y * 1.0001`` and ``y = y + 0.0001`` alternate, so the gradient is
    ``1.0001 ** (n / 2)``. Times the engine on a deep graph: recording, the
    dependency count, and one node after another in the backward pass.
    """

    FACTOR, SHIFT = 1.0001, 0.0001

    def __init__(self, backend: str, n_ops: int) -> None:
        super().__init__(backend)
        self.pairs = n_ops // 2
        start = [0.5, -1.0, 2.0, 0.25]
        self.x = self.tensor(start, True)
        self.xr = self.raw(start)

    def _forward_backward(self, x: Any) -> Any:
        """The chain from ``x`` and its backward: plugrad and PyTorch run the same code."""
        factor, shift = self.FACTOR, self.SHIFT
        x.grad = None
        y = x
        for _ in range(self.pairs):
            y = y * factor
            y = y + shift
        loss = y.sum()
        loss.backward()
        return loss

    def plugrad_forward_backward(self) -> plugrad.Tensor:
        return self._forward_backward(self.x)

    def plugrad_compiled_forward_backward(self) -> plugrad.Tensor:
        """The chain through :func:`plugrad.compile` (captured by :meth:`check`)."""
        self.skip_if_compile_gap()
        return self._compiled(self.x)

    @functools.cached_property
    def _compiled(self) -> Any:
        return plugrad.compile(self._forward_backward, fullgraph=True)

    def floor_forward_backward(self) -> tuple[Any, Any]:
        xp, factor, shift = self.xp, self.FACTOR, self.SHIFT
        y = self.xr
        for _ in range(self.pairs):
            y = y * factor
            y = y + shift
        loss = xp.sum(y)
        g = xp.ones_like(y)
        for _ in range(self.pairs):
            g = g * factor  # the additions pass the gradient on unchanged
        return loss, g

    def use_torch(self, torch: Any) -> None:
        super().use_torch(torch)
        self.tx = torch.tensor(self.to_numpy(self.xr), requires_grad=True)

    def torch_forward_backward(self) -> Any:
        return self._forward_backward(self.tx)

    def check(self) -> None:
        loss = self.plugrad_forward_backward()
        loss_r, grad_r = self.floor_forward_backward()
        self.assert_close(loss, loss_r, rtol=1e-6)
        self.assert_close(self.x.grad, grad_r, rtol=1e-6)
        # float32 rounding grows with the length of the chain
        self.assert_close(self.x.grad, np.full(4, self.FACTOR**self.pairs), rtol=1e-3)
        with self.compiled_checks():
            for _ in range(2):  # capture, then replay
                self.assert_close(self.plugrad_compiled_forward_backward(), loss_r, rtol=1e-6)
                self.assert_close(self.x.grad, grad_r, rtol=1e-6)
        if self.torch is not None:
            self.assert_close(self.torch_forward_backward(), loss, rtol=1e-5)
            self.assert_close(self.tx.grad, self.x.grad, rtol=1e-5)


# -- single ops on moderately sized data ----------------------------------------------------


class Reduction(Workload):
    """``sum(var(x, axis=1))`` of a (256, 256) tensor; by hand ``2 * (x - mean) / n``."""

    def __init__(self, backend: str) -> None:
        super().__init__(backend)
        data = np.random.default_rng(0).normal(size=(256, 256))
        self.x = self.tensor(data, True)
        self.xr = self.raw(data)

    def plugrad_forward_backward(self) -> plugrad.Tensor:
        self.x.grad = None
        loss = plugrad.sum(plugrad.var(self.x, axis=1))
        loss.backward()
        return loss

    def floor_forward_backward(self) -> tuple[Any, Any]:
        xp, x = self.xp, self.xr
        loss = xp.sum(xp.var(x, axis=1))
        grad = 2.0 * (x - xp.mean(x, axis=1, keepdims=True)) / x.shape[1]
        return loss, grad

    def use_torch(self, torch: Any) -> None:
        super().use_torch(torch)
        self.tx = torch.tensor(self.to_numpy(self.xr), requires_grad=True)

    def torch_forward_backward(self) -> Any:
        self.tx.grad = None
        loss = self.torch.var(self.tx, dim=1, correction=0).sum()
        loss.backward()
        return loss

    def check(self) -> None:
        loss = self.plugrad_forward_backward()
        loss_r, grad_r = self.floor_forward_backward()
        self.assert_close(loss, loss_r)
        self.assert_close(self.x.grad, grad_r)
        if self.torch is not None:
            self.assert_close(self.torch_forward_backward(), loss_r)
            self.assert_close(self.tx.grad, grad_r)
        if self.jax is not None:
            self.check_jax(loss_r, grad_r, rtol=1e-4)

    _jax_differentiated = 1

    def _jax_loss(self, x: Any) -> Any:
        return self.jax.numpy.sum(self.jax.numpy.var(x, axis=1))

    def _jax_arguments(self) -> list[Any]:
        return [self.xr]


class MatMul(Workload):
    """``sum(a @ b)`` of (128, 128) matrices; by hand ``ones @ b.T`` and ``a.T @ ones``."""

    def __init__(self, backend: str) -> None:
        super().__init__(backend)
        rng = np.random.default_rng(1)
        a, b = rng.normal(size=(128, 128)), rng.normal(size=(128, 128))
        self.a, self.b = self.tensor(a, True), self.tensor(b, True)
        self.ar, self.br = self.raw(a), self.raw(b)

    def plugrad_forward_backward(self) -> plugrad.Tensor:
        self.a.grad = None
        self.b.grad = None
        loss = plugrad.sum(self.a @ self.b)
        loss.backward()
        return loss

    def floor_forward_backward(self) -> tuple[Any, Any, Any]:
        xp, a, b = self.xp, self.ar, self.br
        out = a @ b
        loss = xp.sum(out)
        ones = xp.ones_like(out)
        return loss, ones @ xp.matrix_transpose(b), xp.matrix_transpose(a) @ ones

    def use_torch(self, torch: Any) -> None:
        super().use_torch(torch)
        self.ta = torch.tensor(self.to_numpy(self.ar), requires_grad=True)
        self.tb = torch.tensor(self.to_numpy(self.br), requires_grad=True)

    def torch_forward_backward(self) -> Any:
        self.ta.grad = None
        self.tb.grad = None
        loss = (self.ta @ self.tb).sum()
        loss.backward()
        return loss

    def check(self) -> None:
        loss = self.plugrad_forward_backward()
        loss_r, grad_a, grad_b = self.floor_forward_backward()
        self.assert_close(loss, loss_r, atol=1e-3)
        self.assert_close(self.a.grad, grad_a, atol=1e-4)
        self.assert_close(self.b.grad, grad_b, atol=1e-4)
        if self.torch is not None:
            self.assert_close(self.torch_forward_backward(), loss_r, atol=1e-2)
            self.assert_close(self.ta.grad, grad_a, atol=1e-4)
        if self.jax is not None:
            self.check_jax(loss_r, grad_a, grad_b, rtol=1e-4, atol=1e-2)

    _jax_differentiated = 2

    def _jax_loss(self, a: Any, b: Any) -> Any:
        return self.jax.numpy.sum(a @ b)

    def _jax_arguments(self) -> list[Any]:
        return [self.ar, self.br]


class Indexing(Workload):
    """``sum(take(x, idx, axis=0) * w)``: 4096 repeated row indices into (1024, 16).

    ``take`` is the standard's row gather; by hand the backward is a
    scatter-add (the backend's ``scatter_add`` kernel, ``np.add.at`` on NumPy).
    """

    def __init__(self, backend: str) -> None:
        super().__init__(backend)
        rng = np.random.default_rng(2)
        data, weights = rng.normal(size=(1024, 16)), rng.normal(size=(4096, 16))
        self.index_host = rng.integers(0, 1024, size=4096)
        self.weights_host = weights
        self.x = self.tensor(data, True)
        self.w = self.tensor(weights)
        self.index = plugrad.tensor(self.index_host, device=backend)
        self.xr, self.wr, self.ir = self.x.array, self.w.array, self.index.array
        self.scatter_add = self.device.kernels["scatter_add"]

    def plugrad_forward_backward(self) -> plugrad.Tensor:
        self.x.grad = None
        loss = plugrad.sum(plugrad.take(self.x, self.index, axis=0) * self.w)
        loss.backward()
        return loss

    def floor_forward_backward(self) -> tuple[Any, Any]:
        xp = self.xp
        loss = xp.sum(xp.take(self.xr, self.ir, axis=0) * self.wr)
        # The backward by hand: add each weight row into the row it was gathered from.
        grad = self.scatter_add(self.wr, key=(self.ir, ...), shape=self.xr.shape)
        return loss, grad

    def use_torch(self, torch: Any) -> None:
        super().use_torch(torch)
        self.tx = torch.tensor(self.to_numpy(self.xr), requires_grad=True)
        self.tw = torch.tensor(self.to_numpy(self.wr))
        self.ti = torch.tensor(self.index_host)

    def torch_forward_backward(self) -> Any:
        self.tx.grad = None
        loss = (self.torch.index_select(self.tx, 0, self.ti) * self.tw).sum()
        loss.backward()
        return loss

    def check(self) -> None:
        try:
            loss = self.plugrad_forward_backward()
            loss_r, grad_r = self.floor_forward_backward()
        except IndexError as exc:  # a known gap: see tests/plugins/backend_gaps.txt
            raise NotImplementedError(
                f"take's gradient does not run on {self.backend!r} yet: {exc}"
            ) from None
        self.assert_close(loss, loss_r, atol=1e-3)
        self.assert_close(self.x.grad, grad_r, atol=1e-5)
        expected = np.zeros((1024, 16))
        np.add.at(expected, self.index_host, self.weights_host)
        self.assert_close(self.x.grad, expected, atol=1e-5)
        if self.torch is not None:
            self.assert_close(self.torch_forward_backward(), loss_r, atol=1e-2)
            self.assert_close(self.tx.grad, expected, atol=1e-5)
        if self.jax is not None:
            self.check_jax(loss_r, expected, rtol=1e-4, atol=1e-3)

    _jax_differentiated = 1

    def _jax_loss(self, x: Any, index: Any, w: Any) -> Any:
        return self.jax.numpy.sum(self.jax.numpy.take(x, index, axis=0) * w)

    def _jax_arguments(self) -> list[Any]:
        return [self.xr, self.ir, self.wr]


# -- a training step ------------------------------------------------------------------------

#: The classifier: 784 inputs (a flattened 28 x 28 image), two ReLU layers, 10 classes.
MLP_SIZES = (784, 512, 256, 10)
LEARNING_RATE = 0.01


def _mlp_host_data(batch: int) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Initial parameters (w1, b1, w2, b2, w3, b3), inputs and one-hot labels, in float32."""
    rng = np.random.default_rng(batch)
    params = []
    for n_in, n_out in itertools.pairwise(MLP_SIZES):
        bound = 1.0 / np.sqrt(n_in)  # PyTorch's default init range for nn.Linear
        params.append(rng.uniform(-bound, bound, (n_in, n_out)).astype(np.float32))
        params.append(rng.uniform(-bound, bound, n_out).astype(np.float32))
    x = rng.standard_normal((batch, MLP_SIZES[0])).astype(np.float32)
    labels = rng.integers(0, MLP_SIZES[-1], batch)
    onehot = np.eye(MLP_SIZES[-1], dtype=np.float32)[labels]
    return params, x, onehot


# The model, the loss and the update, written with plugrad's ops only. Each is the one
# place to change to use plugrad.nn.Linear / a cross-entropy function / an optimizer.


def _linear(x: plugrad.Tensor, w: plugrad.Tensor, b: plugrad.Tensor) -> plugrad.Tensor:
    return x @ w + b


def _relu(h: plugrad.Tensor) -> plugrad.Tensor:
    return plugrad.where(h > 0, h, 0.0)


def _mlp(x: plugrad.Tensor, params: list[plugrad.Tensor]) -> plugrad.Tensor:
    w1, b1, w2, b2, w3, b3 = params
    return _linear(_relu(_linear(_relu(_linear(x, w1, b1)), w2, b2)), w3, b3)


def _cross_entropy(logits: plugrad.Tensor, onehot: plugrad.Tensor) -> plugrad.Tensor:
    """Mean softmax cross-entropy; the max is subtracted for stability (no gradient needed)."""
    shifted = logits - plugrad.max(logits.detach(), axis=1, keepdims=True)
    log_probs = shifted - plugrad.log(plugrad.sum(plugrad.exp(shifted), axis=1, keepdims=True))
    return plugrad.sum(onehot * log_probs) * (-1.0 / logits.shape[0])


def _sgd(params: list[plugrad.Tensor], lr: float) -> None:
    with plugrad.no_grad():
        for p in params:
            p -= lr * p.grad


class MLPStep(Workload):
    """One SGD training step of a 784-512-256-10 ReLU MLP with softmax cross-entropy.

    Forward, backward and the in-place parameter update, float32. The floor
    computes the gradient of the loss with respect to the logits directly
    (``(softmax - onehot) / batch``), as hand-written code would.
    """

    def __init__(self, backend: str, batch: int) -> None:
        super().__init__(backend)
        params, x, onehot = _mlp_host_data(batch)
        self.host = params, x, onehot
        self.params = [self.tensor(p, True) for p in params]
        self.x, self.onehot = self.tensor(x), self.tensor(onehot)
        self.params_r = [self.raw(p) for p in params]
        self.xr, self.onehot_r = self.raw(x), self.raw(onehot)
        self.labels = plugrad.asarray(np.argmax(onehot, axis=1), device=self.device)
        self.model, self.optimizer = self._module_and_optimizer()
        # The floor of the nn step: its weights laid out as nn.Linear keeps them, and labels.
        self.module_params_r = [self.raw(np.ascontiguousarray(p.T)) for p in params]
        self.labels_r = self.labels.array
        self.classes_r = plugrad.arange(onehot.shape[1], device=self.device).array

    def _module_and_optimizer(self) -> tuple[Any, Any]:
        """The same network as plugrad.nn layers and an optim.SGD, from the same start."""
        nn = plugrad.nn
        sizes = MLP_SIZES
        layers: list[Any] = []
        for n_in, n_out in itertools.pairwise(sizes):
            layers += [nn.Linear(n_in, n_out, device=self.device), nn.ReLU()]
        model = nn.Sequential(*layers[:-1])
        params = self.host[0]
        state = {}
        for i, (w, b) in enumerate(zip(params[::2], params[1::2])):
            state[f"{2 * i}.weight"] = self.tensor(np.ascontiguousarray(w.T))  # (out, in)
            state[f"{2 * i}.bias"] = self.tensor(b)
        model.load_state_dict(state)
        return model, plugrad.optim.SGD(model.parameters(), lr=LEARNING_RATE)

    def _computed(self, loss: plugrad.Tensor, params: Any) -> plugrad.Tensor:
        """On a lazy backend (Dask), the step computed: its loss and updated parameters.

        A step there only builds a task graph; timing that alone would leave out the
        work, and parameters never computed would carry every earlier step's graph.
        """
        if self.lazy:
            plugrad.compute(loss, *params)
        return loss

    def plugrad_module_step(self) -> plugrad.Tensor:
        """The step as users write it: nn.Linear, ReLU, cross_entropy, optim.SGD."""
        self.optimizer.zero_grad()
        loss = plugrad.nn.functional.cross_entropy(self.model(self.x), self.labels)
        loss.backward()
        self.optimizer.step()
        return self._computed(loss, self.model.parameters())

    def plugrad_step(self) -> plugrad.Tensor:
        params = self.params
        for p in params:
            p.grad = None
        loss = _cross_entropy(_mlp(self.x, params), self.onehot)
        loss.backward()
        _sgd(params, LEARNING_RATE)
        return self._computed(loss, params)

    def plugrad_compiled_step(self) -> plugrad.Tensor:
        """:meth:`plugrad_step` through :func:`plugrad.compile` (captured by :meth:`check`)."""
        self.skip_if_compile_gap()
        return self._computed(self._compiled_step(self.x, self.onehot), self.params)

    def plugrad_compiled_module_step(self) -> plugrad.Tensor:
        """:meth:`plugrad_module_step` through :func:`plugrad.compile`."""
        self.skip_if_compile_gap()
        loss = self._compiled_module_step(self.x, self.labels)
        return self._computed(loss, self.model.parameters())

    def plugrad_compiled_model_step(self) -> plugrad.Tensor:
        """:meth:`plugrad_module_step` with only the model compiled: the loss, its backward
        and the update run eagerly after the call, as ``torch.compile(model)`` is used."""
        self.skip_if_compile_gap()
        if self.lazy:
            raise Skipped("on a lazy backend a compiled function's result carries no backward")
        self.optimizer.zero_grad()
        logits = self._compiled_model(self.x)
        loss = plugrad.nn.functional.cross_entropy(logits, self.labels)
        loss.backward()
        self.optimizer.step()
        return loss

    @functools.cached_property
    def _compiled_model(self) -> Any:
        return plugrad.compile(self.model, fullgraph=True)

    def plugrad_capture_step(self) -> plugrad.Tensor:
        """:meth:`plugrad_compiled_step` with its plans forgotten: capture time, not replay.

        The capture's call runs the step, recording it; the plan's code is written
        and compiled at its first replay (see :meth:`plugrad_capture_and_first_replay`).
        """
        self.skip_if_compile_gap()
        self._compiled_step.cache_clear()
        _codegen.forget_code()
        return self._computed(self._compiled_step(self.x, self.onehot), self.params)

    def plugrad_capture_and_first_replay(self) -> plugrad.Tensor:
        """Two steps: a capture, then the first replay, which writes the plan's code and
        compiles it (Python's compiled code of earlier captures forgotten)."""
        self.skip_if_compile_gap()
        self._compiled_step.cache_clear()
        _codegen.forget_code()
        self._compiled_step(self.x, self.onehot)
        return self._computed(self._compiled_step(self.x, self.onehot), self.params)

    @functools.cached_property
    def _compiled_step(self) -> Any:
        params = self.params

        def step(x: plugrad.Tensor, onehot: plugrad.Tensor) -> plugrad.Tensor:
            for p in params:
                p.grad = None
            loss = _cross_entropy(_mlp(x, params), onehot)
            loss.backward()
            _sgd(params, LEARNING_RATE)
            return loss

        return plugrad.compile(step, fullgraph=True)

    @functools.cached_property
    def _compiled_module_step(self) -> Any:
        model, optimizer = self.model, self.optimizer

        def step(x: plugrad.Tensor, labels: plugrad.Tensor) -> plugrad.Tensor:
            optimizer.zero_grad()
            loss = plugrad.nn.functional.cross_entropy(model(x), labels)
            loss.backward()
            optimizer.step()
            return loss

        return plugrad.compile(step, fullgraph=True)

    def floor_two_steps(self) -> Any:
        """Two floor steps: what :meth:`plugrad_capture_and_first_replay` is held against."""
        self.floor_step()
        return self.floor_step()

    def floor_module_step(self) -> Any:
        """The floor of the nn + optim.SGD step: :meth:`floor_step` with the weights laid out
        ``(out, in)``, as ``nn.Linear`` keeps them, and class labels, not one-hot rows."""
        xp, x, labels = self.xp, self.xr, self.labels_r
        w1, b1, w2, b2, w3, b3 = self.module_params_r
        transpose = xp.matrix_transpose
        h1 = x @ transpose(w1) + b1
        m1 = h1 > 0
        a1 = xp.where(m1, h1, 0.0)
        h2 = a1 @ transpose(w2) + b2
        m2 = h2 > 0
        a2 = xp.where(m2, h2, 0.0)
        z = a2 @ transpose(w3) + b3
        shifted = z - xp.max(z, axis=1, keepdims=True)
        e = xp.exp(shifted)
        total = xp.sum(e, axis=1, keepdims=True)
        batch = x.shape[0]
        hit = xp.expand_dims(labels, axis=1) == self.classes_r
        loss = -xp.sum(xp.where(hit, shifted - xp.log(total), 0.0)) / batch
        dz = (e / total - xp.astype(hit, e.dtype)) / batch
        grads = [None] * 6
        grads[4], grads[5] = transpose(dz) @ a2, xp.sum(dz, axis=0)
        dh2 = xp.where(m2, dz @ w3, 0.0)
        grads[2], grads[3] = transpose(dh2) @ a1, xp.sum(dh2, axis=0)
        dh1 = xp.where(m1, dh2 @ w2, 0.0)
        grads[0], grads[1] = transpose(dh1) @ x, xp.sum(dh1, axis=0)
        for i, (p, g) in enumerate(zip(self.module_params_r, grads)):
            p -= LEARNING_RATE * g
            self.module_params_r[i] = p
        if self.lazy:
            loss, *self.module_params_r = self.device.backend.compute([loss, *self.module_params_r])
        return loss

    def floor_step(self) -> Any:
        xp, x, onehot = self.xp, self.xr, self.onehot_r
        w1, b1, w2, b2, w3, b3 = self.params_r
        transpose = xp.matrix_transpose
        # forward, keeping only what the backward needs
        h1 = x @ w1 + b1
        m1 = h1 > 0
        a1 = xp.where(m1, h1, 0.0)
        h2 = a1 @ w2 + b2
        m2 = h2 > 0
        a2 = xp.where(m2, h2, 0.0)
        z = a2 @ w3 + b3
        shifted = z - xp.max(z, axis=1, keepdims=True)
        e = xp.exp(shifted)
        total = xp.sum(e, axis=1, keepdims=True)
        batch = x.shape[0]
        loss = -xp.sum(onehot * (shifted - xp.log(total))) / batch
        # backward: d loss / d z = (softmax(z) - onehot) / batch
        dz = (e / total - onehot) / batch
        grads = [None] * 6
        grads[4], grads[5] = transpose(a2) @ dz, xp.sum(dz, axis=0)
        dh2 = xp.where(m2, dz @ transpose(w3), 0.0)
        grads[2], grads[3] = transpose(a1) @ dh2, xp.sum(dh2, axis=0)
        dh1 = xp.where(m1, dh2 @ transpose(w2), 0.0)
        grads[0], grads[1] = transpose(x) @ dh1, xp.sum(dh1, axis=0)
        # update in place; immutable (JAX) and lazy (Dask) arrays make a new array for
        # ``p -= ...``, which is stored back
        for i, (p, g) in enumerate(zip(self.params_r, grads)):
            p -= LEARNING_RATE * g
            self.params_r[i] = p
        if self.lazy:  # computed, as plugrad's steps are (see _computed)
            loss, *self.params_r = self.device.backend.compute([loss, *self.params_r])
        return loss

    def use_torch(self, torch: Any) -> None:
        super().use_torch(torch)
        params, x, onehot = self.host
        self.tparams = [torch.tensor(p, requires_grad=True) for p in params]
        self.tx, self.tonehot = torch.tensor(x), torch.tensor(onehot)

    def torch_step(self) -> Any:
        torch, params = self.torch, self.tparams
        for p in params:
            p.grad = None
        w1, b1, w2, b2, w3, b3 = params
        h = self.tx
        for w, b, last in ((w1, b1, False), (w2, b2, False), (w3, b3, True)):
            h = h @ w + b
            if not last:
                h = torch.where(h > 0, h, 0.0)
        shifted = h - h.detach().amax(dim=1, keepdim=True)
        log_probs = shifted - torch.log(torch.exp(shifted).sum(dim=1, keepdim=True))
        loss = (self.tonehot * log_probs).sum() * (-1.0 / h.shape[0])
        loss.backward()
        with torch.no_grad():
            for p in params:
                p -= LEARNING_RATE * p.grad
        return loss

    def warm_up(self) -> None:
        """Capture the compiled steps and replay them once, so that timings are of replays.

        Notes why :func:`plugrad.compile` cannot run here instead, if it cannot
        (what :meth:`check` also does).
        """
        with self.compiled_checks():
            for _ in range(2):  # capture, then replay
                self.plugrad_compiled_step()
                self.plugrad_compiled_module_step()
                if not self.lazy:
                    self.plugrad_compiled_model_step()

    def check(self) -> None:
        """One step from the same starting parameters must give the same loss and update."""
        params, _, _ = self.host
        loss = self.plugrad_step()
        loss_r = self.floor_step()
        self.assert_close(loss, loss_r, rtol=1e-5)
        for p, p_r in zip(self.params, self.params_r):
            self.assert_close(p, p_r, rtol=1e-5, atol=1e-6)
        assert not np.allclose(self.params[0].detach().numpy(), params[0]), (
            "the update changed nothing"
        )
        self.assert_close(self.plugrad_module_step(), loss_r, rtol=1e-5)
        updated = [p.T if p.ndim == 2 else p for p in self.model.parameters()]
        for p, p_r in zip(updated, self.params_r):
            self.assert_close(p, p_r, rtol=1e-5, atol=1e-6)
        self.assert_close(self.floor_module_step(), loss_r, rtol=1e-5)
        for p, p_r in zip(self.model.parameters(), self.module_params_r):
            self.assert_close(p, p_r, rtol=1e-5, atol=1e-6)
        # The compiled steps, from the parameters as they are now, against eager steps.
        with self.compiled_checks():
            for compiled, eager, params in (
                (self.plugrad_compiled_step, self.plugrad_step, self.params),
                (self.plugrad_compiled_module_step, self.plugrad_module_step,
                 list(self.model.parameters())),
                *(() if self.lazy else ((self.plugrad_compiled_model_step,
                  self.plugrad_module_step, list(self.model.parameters())),)),
            ):  # fmt: skip
                for _ in range(2):  # capture, then replay
                    start = [p.detach().numpy().copy() for p in params]
                    expected = eager()
                    after = [p.detach().numpy().copy() for p in params]
                    with plugrad.no_grad():  # through the backend's write hook (JAX: immutable)
                        for p, value in zip(params, start):
                            p[...] = self.tensor(value)
                    self.assert_close(compiled(), expected, rtol=0, atol=0)
                    for p, value in zip(params, after):
                        self.assert_close(p, value, rtol=0, atol=0)
        if self.torch is not None:
            self.use_torch(self.torch)  # the same starting parameters again
            self.assert_close(self.torch_step(), loss_r, rtol=1e-5)
            for p, p_r in zip(self.tparams, self.params_r):
                self.assert_close(p, p_r, rtol=1e-5, atol=1e-6)
        if self.jax is not None:
            for way in (self.jax_step, self.jax_jit_step):
                self.use_jax(self.jax)  # the same starting parameters again
                self.assert_close(np.asarray(way()), loss_r, rtol=1e-5)
                for p, p_r in zip(self._jax_params, self.params_r):
                    self.assert_close(np.asarray(p), p_r, rtol=1e-5, atol=1e-6)

    def use_jax(self, jax: Any) -> None:
        """The step with ``jax.value_and_grad``, eager and jitted, from the starting parameters."""
        self.jax = jax
        jnp = jax.numpy
        params, x, onehot = self.host
        self._jax_params = [jnp.asarray(p) for p in params]
        self._jax_x, self._jax_onehot = jnp.asarray(x), jnp.asarray(onehot)

        def loss_of(params: list[Any], x: Any, onehot: Any) -> Any:
            w1, b1, w2, b2, w3, b3 = params
            h = jnp.where(x @ w1 + b1 > 0, x @ w1 + b1, 0.0)
            h = jnp.where(h @ w2 + b2 > 0, h @ w2 + b2, 0.0)
            z = h @ w3 + b3
            shifted = z - jax.lax.stop_gradient(jnp.max(z, axis=1, keepdims=True))
            log_probs = shifted - jnp.log(jnp.sum(jnp.exp(shifted), axis=1, keepdims=True))
            return jnp.sum(onehot * log_probs) * (-1.0 / z.shape[0])

        def step(params: list[Any], x: Any, onehot: Any) -> tuple[Any, list[Any]]:
            loss, grads = jax.value_and_grad(loss_of)(params, x, onehot)
            return loss, [p - LEARNING_RATE * g for p, g in zip(params, grads)]

        self._jax_eager_step, self._jax_compiled_step = step, jax.jit(step)

    def jax_step(self) -> Any:
        """One step by ``jax.value_and_grad``, each primitive dispatched eagerly."""
        loss, self._jax_params = self._jax_eager_step(
            self._jax_params, self._jax_x, self._jax_onehot
        )
        return self.jax.block_until_ready((loss, self._jax_params))[0]

    def jax_jit_step(self) -> Any:
        """The same step under ``jax.jit``."""
        loss, self._jax_params = self._jax_compiled_step(
            self._jax_params, self._jax_x, self._jax_onehot
        )
        return self.jax.block_until_ready((loss, self._jax_params))[0]


# -- peak memory ----------------------------------------------------------------------------


class MLPMemory(Workload):
    """Forward and backward of a wide MLP, 512 x 784 -> 2048 -> 2048 -> 10, mean squared error.

    The floor keeps exactly what its backward needs (the ReLU masks, not the
    pre-activations) and frees each gradient as soon as it is used, as careful
    hand-written code would. ReLU is ``where(h > 0, h, 0)``, which saves a boolean mask.
    """

    BATCH, INPUTS, HIDDEN, OUTPUTS = 512, 784, 2048, 10

    def __init__(self, backend: str) -> None:
        super().__init__(backend)
        rng = np.random.default_rng(0)

        def make(*shape: int, scale: float = 1.0) -> np.ndarray:
            return rng.standard_normal(shape) * scale

        b, i, h, o = self.BATCH, self.INPUTS, self.HIDDEN, self.OUTPUTS
        host = [
            make(b, i),
            make(b, o),
            make(i, h, scale=0.03),
            make(h, h, scale=0.02),
            make(h, o, scale=0.02),
        ]
        self.x, self.y = self.tensor(host[0]), self.tensor(host[1])
        self.weights = [self.tensor(w, True) for w in host[2:]]
        self.raws = [self.raw(a) for a in host]

    def plugrad_step(self, relu: Any = None) -> plugrad.Tensor:
        relu = relu or _relu
        w1, w2, w3 = self.weights
        for w in self.weights:
            w.grad = None
        a1 = relu(self.x @ w1)
        a2 = relu(a1 @ w2)
        loss = plugrad.mean((a2 @ w3 - self.y) ** 2)
        loss.backward()
        return loss

    def floor_step(self) -> tuple[Any, ...]:
        xp = self.xp
        x, y, w1, w2, w3 = self.raws
        transpose = xp.matrix_transpose
        h1 = x @ w1
        m1 = h1 > 0
        a1 = xp.where(m1, h1, 0.0)
        del h1
        h2 = a1 @ w2
        m2 = h2 > 0
        a2 = xp.where(m2, h2, 0.0)
        del h2
        diff = a2 @ w3 - y
        loss = xp.mean(diff * diff)
        g = diff * (2.0 / (self.BATCH * self.OUTPUTS))
        del diff
        g_w3 = transpose(a2) @ g
        g_h2 = xp.where(m2, g @ transpose(w3), 0.0)
        del g, a2, m2
        g_w2 = transpose(a1) @ g_h2
        g_h1 = xp.where(m1, g_h2 @ transpose(w2), 0.0)
        del g_h2, a1, m1
        g_w1 = transpose(x) @ g_h1
        return loss, g_w1, g_w2, g_w3

    def check(self) -> None:
        loss = self.plugrad_step()
        floor_loss, *floor_grads = self.floor_step()
        self.assert_close(loss, floor_loss)
        for w, g in zip(self.weights, floor_grads):
            self.assert_close(w.grad, g, rtol=1e-3)
        with self.compiled_checks():
            for _ in range(2):  # capture, then replay
                self.assert_close(self.plugrad_compiled_step(), floor_loss)
                for w, g in zip(self.weights, floor_grads):
                    self.assert_close(w.grad, g, rtol=1e-3)

    def plugrad_compiled_step(self) -> plugrad.Tensor:
        """:meth:`plugrad_step` through :func:`plugrad.compile` (the first call captures)."""
        self.skip_if_compile_gap()
        return self._compiled(self.x, self.y)

    @functools.cached_property
    def _compiled(self) -> Any:
        weights = self.weights

        def step(x: plugrad.Tensor, y: plugrad.Tensor) -> plugrad.Tensor:
            w1, w2, w3 = weights
            for w in weights:
                w.grad = None
            a1 = _relu(x @ w1)
            a2 = _relu(a1 @ w2)
            loss = plugrad.mean((a2 @ w3 - y) ** 2)
            loss.backward()
            return loss

        return plugrad.compile(step, fullgraph=True)

    def peak_ratio(self, relu: Any = None) -> float:
        """plugrad's peak allocation over the floor's (tracemalloc: NumPy's allocations)."""
        return traced_peak(lambda: self.plugrad_step(relu)) / traced_peak(self.floor_step)


def traced_peak(step: Any) -> int:
    """Bytes allocated at the peak of one call of ``step`` (after a warm-up call)."""
    step()  # first-use allocations are not part of a step
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        result = step()
        del result
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
