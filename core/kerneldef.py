"""Kernels for existing ops: declaring one for a backend, and naming the one that serves.

A plugin with a better way to compute an op that is already registered — a
fused cupy kernel, a numba loop, a direct call that skips a wrapper — does
not declare the op again. It returns a :class:`KernelDef` from the
:func:`~plugrad.hookspecs.plugrad_kernels` hook: the op's name, the backend,
and a kernel with the same signature as the op's generic kernel. The op's
backward rules stay as they are.

Which kernel serves an op on a backend, best first:

1. kernels declared through ``plugrad_kernels``, ordered by the hookimpl's
   mark (``tryfirst`` before unmarked before ``trylast``) and then by
   registration order, the plugin registered *later* winning (built-ins
   register first, then entry points, then :func:`plugrad.plugins.register`);
2. the op's own kernel for that backend (``op(..., kernels={...})``);
3. the backend's own kernel for that op (:meth:`plugrad.backend.Backend.kernels`);
4. the op's generic kernel.

:func:`plugrad.plugins.kernel_source` answers the question for one op and
backend with a :class:`KernelSource`.

Example
-------
>>> from plugrad.kerneldef import kernel
>>> def matmul_direct(xp, x1, x2, /):
...     return xp.matmul(x1, x2)
>>> kernel("matmul", backend="numpy", fn=matmul_direct)
KernelDef('matmul', backend='numpy')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import PluginRegistrationError
from .opdef import _split_kernel_signature

if TYPE_CHECKING:
    from .opdef import OpDef, RegisteredOp

__all__ = ["KernelDef", "KernelSource", "kernel"]

Kernel = Callable[..., Any]


class KernelDef:
    """A kernel for one existing op on one backend; ``kernel(...)`` is the same class.

    Parameters
    ----------
    op : str or OpDef
        The op it computes, by name (``"matmul"``) or as the declaration.
        It may belong to plugrad or to any plugin.
    backend : str
        The name of the backend it runs on (``"numpy"``, ``"cupy"``, ...).
        The backend need not be registered or available: the kernel is simply
        unused where it is not.
    fn : callable
        ``fn(xp, *arrays, **params)`` with exactly the inputs and params of the
        op's generic kernel; checked when the plugin registers.
    """

    def __init__(self, op: str | OpDef, /, *, backend: str, fn: Kernel) -> None:
        self.op = op if isinstance(op, str) else getattr(op, "name", op)
        self.backend = backend
        self.fn = fn

    def __repr__(self) -> str:
        return f"KernelDef({self.op!r}, backend={self.backend!r})"

    def _validate(self, owner: str, ops: Mapping[str, RegisteredOp]) -> RegisteredOp:
        """Check the declaration against the registered ``ops``; return the op it serves.

        Raises :class:`PluginRegistrationError` naming ``owner`` (the plugin), the op and
        the backend.
        """

        def fail(message: str) -> PluginRegistrationError:
            return PluginRegistrationError(
                f"{owner}, kernel for op {self.op!r} on backend {self.backend!r}: {message}"
            )

        if not isinstance(self.op, str):
            raise fail("the op must be given by name (a str) or as its OpDef")
        if not isinstance(self.backend, str) or not self.backend.isidentifier():
            raise fail("the backend must be a backend name such as 'numpy'")
        if not callable(self.fn):
            raise fail(f"fn must be callable, got {type(self.fn).__name__}")
        target = ops.get(self.op)
        if target is None:
            import difflib  # only for this message

            close = difflib.get_close_matches(self.op, ops, n=3)
            hint = f"did you mean {', '.join(map(repr, close))}? " if close else ""
            raise fail(
                f"no op named {self.op!r} is registered; {hint}a kernel can only replace an "
                "existing op's kernel (declare new ops with plugrad_ops())"
            )
        inputs, params, _, _ = _split_kernel_signature(self.fn, target.declared_inputs, fail)
        if (inputs, params) != (target.input_names, target.param_names):
            raise fail(
                f"fn has inputs {inputs} and params {params}, but the op's kernel has inputs "
                f"{target.input_names} and params {target.param_names}; give it the op's "
                f"signature: (xp, {str(target.signature)[1:]}"
            )
        return target


#: Declare a kernel for an existing op: ``kernel(op, backend=..., fn=...)``; see :class:`KernelDef`.
kernel = KernelDef


@dataclass(frozen=True)
class KernelSource:
    """Where the kernel that computes one op on one backend comes from.

    Attributes
    ----------
    op : str
        The op.
    backend : str
        The backend.
    kind : str
        ``"override"`` (from a ``plugrad_kernels`` hook), ``"op"`` (the op's
        own kernel for this backend), ``"backend"`` (the backend's own kernel
        for this op) or ``"generic"`` (the op's generic kernel).
    plugin : str
        The plugin that contributed the kernel.
    function : callable
        The kernel itself.
    distribution : str or None
        The installed distribution the plugin comes from, where known.
    version : str or None
        That distribution's version.
    mark : str or None
        ``"tryfirst"`` or ``"trylast"`` if the contributing hookimpl is marked so.
    """

    op: str
    backend: str
    kind: str
    plugin: str
    function: Kernel
    distribution: str | None = None
    version: str | None = None
    mark: str | None = None

    @property
    def function_name(self) -> str:
        """The kernel's dotted name, e.g. ``"plugrad_myops.plugin.matmul_direct"``."""
        function = self.function
        module = getattr(function, "__module__", None) or "?"
        return f"{module}.{getattr(function, '__qualname__', type(function).__qualname__)}"

    def owner(self) -> str:
        """``"plugin 'myops' (plugrad-myops 0.1.0)"``: who to blame or thank."""
        return describe_plugin(self.plugin, self.distribution, self.version)

    def __str__(self) -> str:
        mark = f", {self.mark}" if self.mark else ""
        return f"{self.kind} kernel {self.function_name} from {self.owner()}{mark}"


def describe_plugin(name: str, distribution: str | None, version: str | None) -> str:
    """``plugin 'name' (distribution version)``, or without the parentheses where unknown."""
    if distribution is None:
        return f"plugin {name!r}"
    return f"plugin {name!r} ({distribution}{'' if version is None else ' ' + version})"
