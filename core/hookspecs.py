"""The hooks through which plugins extend plugrad.

plugrad is a pluggy host with the project name ``"plugrad"``. A plugin is any
module or object with functions marked ``@hookimpl`` whose names match the
specifications below. plugrad's own backends and ops are plugins of exactly
this kind. A third-party package makes its plugin known through the
``plugrad`` entry-point group::

    # pyproject.toml of the plugin package
    [project.entry-points.plugrad]
    myops = "plugrad_myops.plugin"

Hooks are called once, when plugins are loaded (at ``import plugrad``, and
again when a plugin is registered or unregistered at run time). Their answers
are validated and frozen into plain tables; no hook is ever called on the
per-op path. None of the hooks takes arguments.

A plugin is accepted or rejected whole: if any of its hooks raises or returns
something malformed, none of its contributions is used. A plugin found through
an entry point is then reported with a :class:`~plugrad.errors.PluginLoadWarning`
(and listed as failed by ``plugrad info``); one registered with
:func:`plugrad.plugins.register` raises
:class:`~plugrad.errors.PluginRegistrationError` instead. Either way the rest
of plugrad is left exactly as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from .backend import Backend
    from .distributed.communicator import CommunicatorBackend
    from .kerneldef import KernelDef
    from .opdef import OpDef

__all__ = [
    "hookimpl",
    "hookspec",
    "plugrad_backends",
    "plugrad_communicators",
    "plugrad_kernels",
    "plugrad_ops",
    "plugrad_plan_passes",
]

PROJECT_NAME = "plugrad"

#: Marks a function in a plugin as the implementation of a plugrad hook.
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)
#: Marks a hook specification (for plugrad itself).
hookspec = pluggy.HookspecMarker(PROJECT_NAME)


@hookspec
def plugrad_backends() -> Iterable[Backend]:
    """Return the backends this plugin provides.

    Called once per plugin when plugins are loaded. Each backend is an
    instance of a :class:`plugrad.backend.Backend` subclass. It is only a
    description: plugrad imports its library (``Backend.namespace()``) when the
    backend is first used, so a plugin for a library that is not installed
    costs nothing and is listed with the reason it is unavailable.

    Returns
    -------
    iterable of Backend
        The backends. Two backends with one name are rejected, naming both plugins.

    Examples
    --------
    ::

        from plugrad.hookspecs import hookimpl

        @hookimpl
        def plugrad_backends():
            return [MyBackend()]
    """


@hookspec
def plugrad_ops() -> Iterable[OpDef]:
    """Return the ops this plugin provides.

    Called once per plugin when plugins are loaded. Each op is an
    :class:`plugrad.opdef.OpDef` made with :func:`plugrad.opdef.op`: a
    generic kernel written against an Array API namespace, optional
    backend-specific kernels, and one backward rule per input (or
    ``differentiable=False``). Every op is validated when it is registered: a
    malformed op, a rule whose arity does not match, or a name another plugin
    already registered rejects this plugin's ops with an error that names the
    plugin and the op; the rest of plugrad keeps working.

    An op's name must be new: a name that another plugin registered first is
    rejected naming both plugins (and their distributions), and so is the name
    of a built-in op. To serve a built-in op with a faster kernel, use
    :func:`plugrad_kernels` instead.

    A kernel gets the backend's own namespace as ``xp``, as in
    :func:`plugrad_kernels`. A backward rule gets a namespace with more in it:
    the backend's functions plus every registered op that the standard does not
    define (``xp.scatter_add``, this plugin's own ops), so a rule may be written
    with other ops; with ``create_graph=True`` it gets ``plugrad`` itself.

    Returns
    -------
    iterable of OpDef
        The ops. Each becomes ``plugrad.ops.<name>`` (and ``plugrad.ops.<alias>``
        for its ``aliases=``), and also Tensor methods if it was declared with
        ``methods=``.

    Examples
    --------
    ::

        from plugrad.hookspecs import hookimpl
        from plugrad.opdef import op

        cube = op("cube", lambda xp, x, /: x * x * x, vjp=lambda xp, g, ans, x: 3 * x * x * g)

        @hookimpl
        def plugrad_ops():
            return [cube]
    """


@hookspec
def plugrad_kernels() -> Iterable[KernelDef]:
    """Return kernels for existing ops on particular backends.

    Called once per plugin when plugins are loaded, after every plugin's
    :func:`plugrad_ops`, so a plugin may provide kernels for built-in ops, for
    its own ops, or for ops of other plugins. Each is a
    :class:`plugrad.kerneldef.KernelDef` made with
    :func:`plugrad.kerneldef.kernel`: the op's name, a backend name and a
    function with the same inputs and params as the op's generic kernel. It
    replaces how the op is *computed* on that backend; the op's backward rules
    are unchanged.

    A kernel for an op that is not registered, a function whose signature
    differs from the op's kernel, or two kernels for one op and backend from one
    plugin reject the plugin, naming it, its distribution and the op.

    When several plugins provide a kernel for the same op and backend, the
    hookimpl's mark decides first (``@hookimpl(tryfirst=True)`` beats an
    unmarked hookimpl, which beats ``@hookimpl(trylast=True)``), then
    registration order: the plugin registered later wins. Any of these beats
    the op's own backend-specific kernel and the generic kernel.
    ``plugrad.plugins.kernel_source(op, backend)`` and ``plugrad info --ops``
    show which kernel won.

    Inside the kernel, ``xp`` is the backend's own Array API namespace as it
    is: ops that plugins register are not added to it, so a kernel is written
    with the backend's functions only, and ``xp.matmul`` in a ``matmul``
    kernel is the backend's function, never the kernel itself.

    Returns
    -------
    iterable of KernelDef
        The kernels.

    Examples
    --------
    ::

        from plugrad.hookspecs import hookimpl
        from plugrad.kerneldef import kernel


        def matmul_direct(xp, x1, x2, /):
            return x1 @ x2  # the array's own operator, skipping the namespace's wrapper


        @hookimpl
        def plugrad_kernels():
            return [kernel("matmul", backend="numpy", fn=matmul_direct)]
    """


@hookspec
def plugrad_communicators() -> Iterable[CommunicatorBackend]:
    """Return the communication libraries this plugin provides to :mod:`plugrad.distributed`.

    Called when :func:`plugrad.distributed.init_process_group` looks up its
    ``backend=`` name (not on the per-op path). Each answer is an instance of a
    :class:`plugrad.distributed.communicator.CommunicatorBackend` subclass: a
    description with a ``name`` (``"mpi"``, ``"nccl"``, ...), an
    ``unavailable_reason()`` that says what is missing without importing
    anything heavy, and a ``connect(timeout)`` that joins the job and returns a
    :class:`~plugrad.distributed.communicator.Communicator`. The communicator
    moves raw backend arrays with non-blocking operations, each returning a
    :class:`~plugrad.distributed.communicator.Work` handle; plugrad's front end
    checks the tensors, their agreement across ranks, and puts the results back
    into the tensors.

    Returns
    -------
    iterable of CommunicatorBackend
        The communication libraries. Two with one name are rejected, naming both plugins.

    Examples
    --------
    ::

        from plugrad.hookspecs import hookimpl

        @hookimpl
        def plugrad_communicators():
            return [MyFabric()]  # a CommunicatorBackend subclass; backend="myfabric"
    """


@hookspec
def plugrad_plan_passes() -> Iterable[Callable[[Any], Any]]:
    """Return rewrites of the plans :func:`plugrad.compile` captures.

    Called once per plugin when plugins are loaded. Each answer is a function
    ``rewrite(plan) -> plan`` taking a :class:`plugrad.compiler.plan.Plan` (the
    steps one call ran, after plugrad's own passes) and returning a plan that
    computes the same values and has the same effects: fused elementwise
    chains, a faster kernel for a pattern. It runs once per captured plan, when
    the plan is first replayed (or its source is asked for), before its code is
    written; never on later replays, nor for a plan never replayed. A rewrite
    that needs nothing may return the plan it was given.

    An answer that is not a callable of one argument rejects the plugin when it
    loads, naming it. A rewrite that raises, or returns something that is not a
    ``Plan`` or a plan that cannot run (a value read before any step computes
    it, a result no step computes), is skipped for that plan with a
    :class:`~plugrad.errors.CompileWarning` naming the plugin; the plan goes on
    without it. ``plugrad.compile(fn, optimize=False)`` runs no pass at all, which
    tells whether a rewrite changes a result.

    Returns
    -------
    iterable of callable
        The rewrites, applied in order.

    Examples
    --------
    ::

        from plugrad.hookspecs import hookimpl


        def exp_of_log_is_identity(plan):
            ...  # find `b = xp.exp(a)` where `a = xp.log(x)`; read plan.steps
            return plan


        @hookimpl
        def plugrad_plan_passes():
            return [exp_of_log_is_identity]
    """
