"""``plugrad.autograd``: the reverse-mode engine's public API.

Gradients of outputs with respect to chosen inputs (:func:`grad`), backward
passes into ``.grad`` (:func:`backward`), user-defined differentiable
operations (:class:`Function`), gradient checks for op and plugin authors
(:func:`gradcheck`, :func:`gradgradcheck`), anomaly detection
(:class:`detect_anomaly`), PyTorch's functional API
(:mod:`plugrad.autograd.functional`: ``jacobian``, ``hessian``, ``vjp``, ...)
and hooks on what a backward saves (:mod:`plugrad.autograd.graph`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from . import anomaly as anomaly_mode
from . import autograd_functional as functional
from . import autograd_graph as graph
from . import forward_ad, function, grad_mode
from . import ops as _ops
from .anomaly import (
    detect_anomaly,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_detect_anomaly,
)
from .engine import backward
from .engine import grad as _grad
from .errors import ArgumentError, InvalidArgumentError
from .function import Function, FunctionCtx, once_differentiable
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .gradcheck import gradcheck, gradgradcheck
from .graph import Node
from .tensor import Tensor

# ``import plugrad.autograd.functional`` (PyTorch's ``torch.autograd.functional``), and
# ``from plugrad.autograd.function import Function``, ``...grad_mode``, ``...anomaly_mode``:
# PyTorch's submodules of these names are plugrad's modules.
for _name, _module in [
    ("functional", functional), ("function", function), ("grad_mode", grad_mode),
    ("anomaly_mode", anomaly_mode), ("graph", graph), ("forward_ad", forward_ad),
]:  # fmt: skip
    sys.modules[f"{__name__}.{_name}"] = _module
del _name, _module

__all__ = [
    "Function",
    "FunctionCtx",
    "Node",
    "Variable",
    "anomaly_mode",
    "backward",
    "detect_anomaly",
    "set_detect_anomaly",
    "forward_ad",
    "function",
    "functional",
    "graph",
    "enable_grad",
    "grad",
    "gradcheck",
    "grad_mode",
    "gradgradcheck",
    "inference_mode",
    "is_anomaly_check_nan_enabled",
    "is_anomaly_enabled",
    "is_grad_enabled",
    "no_grad",
    "once_differentiable",
    "set_grad_enabled",
]


def grad(
    outputs: Tensor | Sequence[Tensor],
    inputs: Tensor | Sequence[Tensor],
    grad_outputs: Tensor | Sequence[Tensor | None] | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple[Tensor | None, ...]:
    """Return the gradients of ``outputs`` with respect to ``inputs``; ``.grad`` is not touched.

    Parameters
    ----------
    outputs : Tensor or sequence of Tensor
        What to differentiate.
    inputs : Tensor or sequence of Tensor
        With respect to what (leaves or intermediate tensors).
    grad_outputs : Tensor or sequence of (Tensor or None), optional
        The gradient with respect to each output (needed for outputs with more
        than one element).
    retain_graph : bool, optional
        Keep saved values for another backward pass. Defaults to ``create_graph``.
    create_graph : bool
        Make the returned gradients differentiable (for higher-order derivatives).
    only_inputs : bool
        PyTorch's deprecated flag, taken and ignored as PyTorch ignores it.
    allow_unused : bool, optional
        Return ``None`` for an input the outputs do not depend on, instead of
        raising (the default unless ``materialize_grads``).
    is_grads_batched : bool
        Each of ``grad_outputs`` holds a batch of output gradients along its
        first dimension; each result holds the gradients of the batch along
        its first dimension, as PyTorch's (computed one entry at a time).
    materialize_grads : bool
        Return zeros of its shape for such an input instead of ``None``.

    Returns
    -------
    tuple of Tensor or None
        One gradient per input, in the order of ``inputs``.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor(3.0, requires_grad=True)
    >>> (dy,) = plugrad.autograd.grad(x**3, x, create_graph=True)
    >>> dy
    tensor(27., grad_fn=<MulBackward>)
    >>> plugrad.autograd.grad(dy, x)
    (tensor(18.),)
    >>> v = plugrad.tensor([1.0, 2.0], requires_grad=True)
    >>> plugrad.autograd.grad(v * v, v, plugrad.eye(2), is_grads_batched=True)
    (tensor([[2., 0.],
            [0., 4.]]),)
    """
    if not is_grads_batched:
        return _grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                     materialize_grads)  # fmt: skip
    given = (grad_outputs,) if isinstance(grad_outputs, Tensor) else tuple(grad_outputs or ())
    sizes = {g.shape[0] for g in given if isinstance(g, Tensor) and g.ndim}
    if not given or len(sizes) != 1 or any(isinstance(g, Tensor) and not g.ndim for g in given):
        shapes = [getattr(g, "shape", g) for g in given]
        raise InvalidArgumentError(
            "grad(is_grads_batched=True) takes grad_outputs with a batch dimension first, of "
            f"one size for every output; got shapes {shapes}"
        )
    size = sizes.pop()
    keep = create_graph if retain_graph is None else retain_graph
    entries = [
        _grad(outputs, inputs, tuple(g[i] if isinstance(g, Tensor) else g for g in given),
              retain_graph=True if i < size - 1 else keep, create_graph=create_graph,
              allow_unused=allow_unused, materialize_grads=materialize_grads)
        for i in range(size)
    ]  # fmt: skip
    return tuple(
        None if any(g is None for g in column) else _ops.stack(column) for column in zip(*entries)
    )


class _AnyTensor(type):
    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, Tensor)


class Variable(metaclass=_AnyTensor):
    """PyTorch's legacy ``Variable(tensor, requires_grad=False)``: a new leaf sharing the
    tensor's memory (its ``detach()``), requiring grad if asked; every tensor is an
    instance, as in PyTorch, where Variables and Tensors became one.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.autograd import Variable
    >>> x = Variable(plugrad.ones(2), requires_grad=True)
    >>> x.requires_grad, x.is_leaf, isinstance(plugrad.ones(1), Variable)
    (True, True, True)
    """

    def __new__(cls, data: Tensor, requires_grad: bool = False, volatile: bool = False) -> Any:
        if not isinstance(data, Tensor):
            raise ArgumentError(f"Variable() takes a Tensor, got {type(data).__name__}")
        leaf = data.detach()
        leaf.requires_grad_(bool(requires_grad))
        return leaf
