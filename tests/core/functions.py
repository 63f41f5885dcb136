"""Custom Functions that several test modules use."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import plugrad


class Square(plugrad.Function):
    """``x * x``, saving ``x``; backward ``2 * x * g``."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


class Cube(plugrad.Function):
    """``x * x * x``, saving ``x``; backward ``3 * x * x * g``."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3.0 * x * x * g


class Exp(plugrad.Function):
    """exp, with backward ``g * exp(z)``: right for real inputs; for complex ones the
    convention needs ``g * conj(exp(z))``."""

    @staticmethod
    def forward(ctx, x):
        result = plugrad.exp(x)
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return grad * result


def identity_with_backward(name: str, backward: Callable[[Any, Any], Any]) -> type:
    """A Function named ``name`` whose forward copies its input and whose backward is
    ``backward(ctx, g)``."""

    def forward(ctx, t):
        return t * 1

    namespace = {"forward": staticmethod(forward), "backward": staticmethod(backward)}
    return type(name, (plugrad.Function,), namespace)


def doubling_in_place(library: Any) -> Any:
    """PyTorch's or plugrad's Function doubling its input in place (marked dirty)."""

    class Double_(library.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    return Double_
