"""``plugrad.autograd``: the reverse-mode engine's public API.

Gradients of outputs with respect to chosen inputs (:func:`grad`), backward
passes into ``.grad`` (:func:`backward`), user-defined differentiable
operations (:class:`Function`), gradient checks for op and plugin authors
(:func:`gradcheck`, :func:`gradgradcheck`), anomaly detection
(:class:`detect_anomaly`) and PyTorch's functional API
(:mod:`plugrad.autograd.functional`: ``jacobian``, ``hessian``, ``vjp``, ...).
"""

from __future__ import annotations

import sys
from typing import Any

from . import autograd_functional as functional
from .anomaly import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from .engine import backward, grad
from .function import Function, FunctionCtx, once_differentiable
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .gradcheck import gradcheck, gradgradcheck
from .graph import Node
from .tensor import Tensor

# ``import plugrad.autograd.functional`` (PyTorch's ``torch.autograd.functional``).
sys.modules[__name__ + ".functional"] = functional

__all__ = [
    "Function",
    "FunctionCtx",
    "Node",
    "Variable",
    "backward",
    "detect_anomaly",
    "set_detect_anomaly",
    "functional",
    "enable_grad",
    "grad",
    "gradcheck",
    "gradgradcheck",
    "is_anomaly_enabled",
    "is_grad_enabled",
    "no_grad",
    "once_differentiable",
    "set_grad_enabled",
]


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
            raise TypeError(f"Variable() takes a Tensor, got {type(data).__name__}")
        leaf = data.detach()
        leaf.requires_grad_(bool(requires_grad))
        return leaf
