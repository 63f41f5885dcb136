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

from . import autograd_functional as functional
from .anomaly import detect_anomaly, is_anomaly_enabled
from .engine import backward, grad
from .function import Function, FunctionCtx, once_differentiable
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .gradcheck import gradcheck, gradgradcheck
from .graph import Node

# ``import plugrad.autograd.functional`` (PyTorch's ``torch.autograd.functional``).
sys.modules[__name__ + ".functional"] = functional

__all__ = [
    "Function",
    "FunctionCtx",
    "Node",
    "backward",
    "detect_anomaly",
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
