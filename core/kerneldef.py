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

import difflib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import PluginRegistrationError
from .opdef import _split_kernel_signature

if TYPE_CHECKING:
    from .opdef import OpDef, RegisteredOp

__all__ = ["KernelDef", "KernelSource", "kernel", "misspelled_backend"]

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
        unused where it is not. A name that is not registered but a typo away
        from a registered one (``"nmupy"``) is refused (see
        :func:`misspelled_backend`).
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

    def _validate(
        self, owner: str, ops: Mapping[str, RegisteredOp], backends: Iterable[str] = ()
    ) -> RegisteredOp:
        """Check the declaration against the registered ``ops`` and ``backends`` (names);
        return the op it serves.

        Raises :class:`PluginRegistrationError` naming ``owner`` (the plugin), the op and
        the backend.
        """

        def fail(message: str) -> PluginRegistrationError:
            return PluginRegistrationError(
                f"{owner}, kernel for op {self.op!r} on backend {self.backend!r}: {message}"
            )

        if not isinstance(self.op, str):
            raise fail("the op must be given by name (a str) or as its OpDef")
        backends = tuple(backends)
        if not isinstance(self.backend, str) or not self.backend.isidentifier():
            meant = _meant_backend(self.backend, backends)
            raise fail(
                "the backend must be a backend name such as 'numpy'"
                + (f"; did you mean {meant!r}?" if meant else "")
            )
        typo = misspelled_backend(self.backend, backends)
        if typo is not None:
            raise fail(_unregistered_backend(self.backend, typo))
        if not callable(self.fn):
            raise fail(f"fn must be callable, got {type(self.fn).__name__}")
        target = ops.get(self.op)
        if target is None:
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


#: What authors write for a backend registered under another name: module nicknames.
_BACKEND_NICKNAMES = {"np": "numpy", "cp": "cupy", "jnp": "jax", "pytorch": "torch"}


def misspelled_backend(name: str, backends: Iterable[str]) -> str | None:
    """The registered backend that ``name``, a name not among ``backends``, misspells.

    A kernel may be declared for a backend that is not registered here (a
    plugin ships cupy kernels to machines without a GPU, or kernels for a
    third-party backend installed elsewhere), so an unknown name alone is no
    error. A near miss of a registered name is taken for a typo, which would
    otherwise leave the op on its generic kernel without a word: the same name
    but for case, ``-`` and ``_`` (``"NumPy"``, ``"array-api-strict"``), a
    module nickname (``"np"``, ``"jnp"``), or, for names of four letters or
    more, one letter added, dropped, changed or two neighbours swapped
    (``"nmupy"``, ``"torhc"``).

    Parameters
    ----------
    name : str
        The backend name a kernel is declared for.
    backends : iterable of str
        The registered backends' names.

    Returns
    -------
    str or None
        The registered name ``name`` misspells; ``None`` where ``name`` is
        registered or no near miss.

    Examples
    --------
    >>> from plugrad.kerneldef import misspelled_backend
    >>> misspelled_backend("nmupy", ["numpy", "cupy"])
    'numpy'
    >>> misspelled_backend("mlx", ["numpy", "cupy"]) is None
    True
    """
    names = list(backends)
    if name in names:
        return None

    def plain(text: str) -> str:
        return text.casefold().replace("-", "").replace("_", "")

    nickname = _BACKEND_NICKNAMES.get(name.casefold())
    if nickname in names:
        return nickname
    for known in names:
        if plain(known) == plain(name):
            return known
    if len(name) < 4:
        return None  # three letters leave no room: "max" is no typo of "jax"
    # One letter added, dropped, changed, or two neighbours swapped, scores 0.75 or more.
    near = difflib.get_close_matches(name, names, n=1, cutoff=0.75)
    return near[0] if near else None


def _meant_backend(key: Any, backends: tuple[str, ...]) -> str | None:
    """The registered backend a key that is no backend name means, if any: ``"cupy"`` for
    the device ``"cupy:0"``, ``"array_api_strict"`` for ``"array-api-strict"``."""
    if not isinstance(key, str):
        return None
    head = key.partition(":")[0]
    return head if head in backends else misspelled_backend(head, backends)


def _unregistered_backend(name: str, typo: str) -> str:
    """Why a kernel for the backend ``name``, a misspelling of ``typo``, is refused."""
    return (
        f"no backend named {name!r} is registered; did you mean {typo!r}? A kernel may name "
        f"a backend that is not installed here, but {name!r} is too close to the registered "
        f"{typo!r} to be another backend: as written, the kernel would never run"
    )


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
