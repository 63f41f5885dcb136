"""``plugrad.compile``: the compiled function, its signature, its cache of plans."""

from __future__ import annotations

import collections
import dataclasses
import functools
import gc
import operator
import sys
import sysconfig
import types
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from typing import Any

from .. import anomaly as _anomaly
from .. import autocast_mode as _autocast_mode
from .. import checking as _checking
from .. import dtypes as _dtypes
from .. import inplace as _inplace
from .. import lazy as _lazy
from .. import registry as _registry
from .. import saved_tensor_hooks as _saved_tensor_hooks
from ..errors import (
    ArgumentError,
    CompileError,
    CompileWarning,
    GraphBreakError,
    IndexOutOfRangeError,
    InvalidArgumentError,
    PlugradError,
    checked_bool,
)
from ..function import Function
from ..grad_mode import _state
from ..nn import module as _module
from ..tensor import Tensor, tensors_in
from . import checks, codegen, differentiable, graphs, passes
from . import tracer as _tracer
from .tracer import Tracer, capture_lock

__all__ = ["CompiledFunction", "compile"]

_TENSOR = object()
_MISS = codegen.MISS
_EAGER = "eager"


#: Most tensor arguments a plan checks itself, so that a call can skip the signature.
_MOST_CHECKED_ARGUMENTS = 8


#: Captures of one signature given up in a row (each made state that the next call reads)
#: after which the signature runs eagerly.
_MOST_CAPTURES_NOT_KEPT = 3


class _Same:
    """An argument as part of a signature by identity, whatever its class's ``__eq__`` says."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value  # (held: its id stays its own while the signature is cached)

    def __eq__(self, other: object) -> bool:
        return type(other) is _Same and other.value is self.value

    def __hash__(self) -> int:
        return id(self.value)


class _Kept:
    """A captured plan of a signature, and the code that replays it.

    The code is written and compiled when the plan is first replayed (or its
    source asked for), not at capture: the capture's own call has run already,
    and a signature called once (the last, shorter batch of an epoch) never pays
    for Python's compiler.
    """

    __slots__ = ("__weakref__", "_make", "checks_arguments", "free", "plan", "replay", "source")

    def __init__(
        self,
        make: Callable[[], tuple[Callable[..., Any], str, Any]],
        free: tuple[Any, ...],
        plan: Any,
        checks_arguments: bool,
    ) -> None:
        self._make: Callable[[], tuple[Callable[..., Any], str, Any]] | None = make
        #: ``(L, F) -> result or MISS``; builds the code at its first call (through a weak
        #: reference: a bound method would hold this object in a cycle until it is built).
        self.replay: Callable[..., Any] = _first_replay_of(weakref.ref(self))
        self.free = free
        #: The plan as captured, then as its passes rewrote it.
        self.plan = plan
        #: Whether ``replay`` checks the call's arguments itself (see CompiledFunction._last).
        self.checks_arguments = checks_arguments
        self.source: str | None = None

    def build(self) -> str:
        """Write and compile the replay (once); return its source."""
        with capture_lock:  # two threads replaying it first build it once
            make = self._make
            if make is not None:
                self.replay, self.source, self.plan = make()
                self._make = None
        assert self.source is not None
        return self.source


def _first_replay_of(reference: weakref.ref[_Kept]) -> Callable[..., Any]:
    """The replay a :class:`_Kept` starts with: it builds the code, then runs it."""

    def first_replay(L: Any, F: Any) -> Any:
        kept = reference()
        assert kept is not None  # called only through the _Kept that holds it
        kept.build()
        return kept.replay(L, F)

    return first_replay


class _Entry:
    """The plans of one signature (several when free tensors differ), or the eager fallback."""

    __slots__ = ("discards", "evicted", "plans", "reason")

    def __init__(self) -> None:
        self.plans: list[_Kept] = []
        self.reason: str | None = None
        #: Captures not kept since the last one kept (see Tracer.discard).
        self.discards = 0
        #: Whether a plan was dropped for a newer one (said once, in a warning).
        self.evicted = False


class CompiledFunction:
    """A function that captures a plan per input signature and replays it.

    Made by :func:`plugrad.compile`; call it as you would call the function.
    """

    fn: Callable[..., Any]

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        fullgraph: bool = False,
        cache_size: int = 8,
        optimize: bool = True,
        device_graph: bool = False,
    ) -> None:
        if not callable(fn):
            raise ArgumentError(
                f"plugrad.compile() needs a callable (a function or a module), got "
                f"{type(fn).__name__}"
            )
        if isinstance(fn, CompiledFunction):
            fn = fn.fn
        self.fn = fn
        #: What a capture or an eager call runs: ``fn``, or a module's uncompiled call.
        self._run: Callable[..., Any] = fn
        self.fullgraph = checked_bool("plugrad.compile(): fullgraph", fullgraph)
        self.cache_size = _checked_cache_size(cache_size)
        self.optimize = checked_bool("plugrad.compile(): optimize", optimize)
        self.device_graph = checked_bool("plugrad.compile(): device_graph", device_graph)
        self._cache: OrderedDict[Any, _Entry] = OrderedDict()
        _instances.add(self)
        # The plan that ran last, when it checks its arguments itself: tried before the
        # signature is computed (it is the most recently used, so the LRU order holds).
        self._last: tuple[Callable[..., Any], tuple[Any, ...]] | None = None
        #: How many captures ran (a test and a user can see re-captures).
        self.captures = 0
        #: The hashes of signatures dropped from the cache, and whether capturing one
        #: again was said (a warning, once).
        self._dropped: set[int] = set()
        self._said_dropped = False
        functools.update_wrapper(self, fn)

    # -- calling ---------------------------------------------------------------------------

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _tracer._active is not None and _tracer._current() is not None:
            # Called while another function is captured: its code becomes part of that plan.
            return self._run(*args, **kwargs)
        last = self._last
        try:
            if last is not None and not kwargs:
                result = last[0](args, last[1])
                if result is not _MISS:
                    return result
            leaves: list[Tensor] = []
            key = _signature(args, kwargs, leaves)
            cache = self._cache
            entry = cache.get(key)
            if entry is not None:
                cache.move_to_end(key)
                if entry.reason is not None:
                    return self._run(*args, **kwargs)
                for kept in entry.plans:
                    result = kept.replay(leaves, kept.free)
                    if result is not codegen.MISS:
                        self._last = (kept.replay, kept.free) if kept.checks_arguments else None
                        return result
        except IndexError as error:
            # A kernel's own (NumPy's index out of bounds), which the per-op path tells as
            # plugrad's: a replay calls kernels directly.
            if isinstance(error, PlugradError):
                raise
            raise IndexOutOfRangeError(f"{self._name()}, replayed: {error}") from error
        return self._capture(key, entry, args, kwargs, leaves)

    def _capture(
        self, key: Any, entry: _Entry | None, args: Any, kwargs: Any, leaves: list[Tensor]
    ) -> Any:
        # A capture makes many small objects that all live until it ends: the collector's
        # passes over them (and over everything else) would find nothing to free.
        collecting = gc.isenabled()
        gc.disable()
        try:
            return self._capture_plan(key, entry, args, kwargs, leaves)
        finally:
            if collecting:
                gc.enable()

    def _capture_plan(
        self, key: Any, entry: _Entry | None, args: Any, kwargs: Any, leaves: list[Tensor]
    ) -> Any:
        checking = _checking._enabled
        if checking and not (self.optimize and _registry._state.plan_passes):
            return self._eager_in_checking_mode(key, args, kwargs)
        if _anomaly.enabled:
            return self._eager_in_mode(
                key, args, kwargs, "anomaly mode is on, and it checks every gradient as it runs"
            )
        if _autocast_mode.enabled_here():
            return self._eager_in_mode(
                key, args, kwargs,
                "autocast is enabled (plugrad.autocast), whose casts a plan does not follow",
                "compile the step without autocast",
            )  # fmt: skip
        if _saved_tensor_hooks.active:
            return self._eager_in_mode(
                key, args, kwargs,
                "saved-tensor hooks are on (plugrad.autograd.graph.saved_tensors_hooks), which "
                "a plan would not call", "leave them",
            )  # fmt: skip
        if _inplace.copies_in_use and _copies_views(leaves) and _share_memory(leaves):
            return self._eager_in_mode(
                key, args, kwargs,
                "its arguments share memory on a backend whose views are copies (JAX, Dask), "
                "which plugrad keeps up to date call by call, not in a plan",
                "pass arguments that share no memory (clone one)",
            )  # fmt: skip
        if checking:
            # Plan passes are plugins, checked on the first replay of each plan: capture
            # (the checks of kernels and rules read values, which a capture cannot).
            with capture_lock, _checking.checking(False):
                return self._capture_plan(key, entry, args, kwargs, leaves)
        backward: differentiable.Backward | None = None
        # What the warning of a graph break advises, where not the usual.
        advice: str | None = None
        # Arguments may carry a graph made before the call (the output of the layers
        # before a compiled block, a loss function's input): the plan's graph ends at
        # them, and a replay's result leads on into theirs.
        with capture_lock:
            bindings = _bindings_read(self.fn, (args, kwargs))  # as the call found them
            tracer = Tracer(leaves, self.fullgraph)
            tracer.bound = _ids_bound(bindings)
            tracer.reached_modules = [
                value for _, _, value in bindings if isinstance(value, _module.Module)
            ]
            tracer.install()
            try:
                result = self._run(*args, **kwargs)
                with_graph: list[Tensor] = []
                if self._may_differentiate(key, leaves, tracer.free):
                    with_graph = differentiable.outputs_with_graph(tracer, result)
                tracer.differentiable = {id(t) for t in with_graph}
                output = tracer.output(result)
                tracer.check_grads_handed_out()
                if with_graph and tracer.broken is None:
                    try:
                        backward = differentiable.capture_backward(
                            tracer, with_graph, leaves, output
                        )
                    except GraphBreakError:
                        raise
                    except Exception as error:
                        # Where the eager call returns, and only a backward() through its
                        # result would fail so (a custom Function without one, an argument
                        # changed in place after use): the call returns its result too.
                        tracer.graph_break(
                            "the backward of its result (which carries a graph), recorded "
                            f"with the forward, raised {type(error).__name__}: {error}"
                        )
                        advice = (
                            "Eagerly, a backward() through that result raises so. Compute "
                            "a result not meant to be differentiated under plugrad.no_grad() "
                            "(or return it detached) to have it compiled; use fullgraph=True "
                            "to make this an error."
                        )
                    if backward is not None:
                        output = backward.output
                tracer.check_snapshots()
                tracer.check_kept_tensors(result, (with_graph,))
                handed_out = tracer.made_and_handed_out()
                if tracer.discard is None and handed_out:
                    roots = (bindings, tracer.modules.values())
                    kept = _held_by_state(self.fn, *roots, handed_out)
                    if kept:
                        tracer.discard = (
                            f"a tensor it made and returns (shape {handed_out[kept[0]].shape}) "
                            "is also kept after the call, in a dict, a list or an attribute"
                        )
            finally:
                tracer.uninstall()
                tracer.restore_arrays(locals().get("result"))
        self.captures += 1
        self._last = None
        if entry is None:
            entry = _Entry()
            self._cache[key] = entry
            while len(self._cache) > self.cache_size:
                dropped, _ = self._cache.popitem(last=False)
                if len(self._dropped) < _DROPPED_KEPT:
                    self._dropped.add(hash(dropped))
            if hash(key) in self._dropped and not self._said_dropped:
                self._said_dropped = True
                warnings.warn(
                    f"plugrad.compile: {self._name()} captured again an input signature its "
                    f"cache had dropped: it is called with more signatures (argument shapes, "
                    f"dtypes, values) than cache_size={self.cache_size} holds, and each such "
                    "call pays for a capture. Raise cache_size, or call it with fewer shapes "
                    "(pad or bucket them).",
                    CompileWarning,
                    stacklevel=4,  # the caller of the compiled function
                )
        if tracer.broken is not None:
            reason, where = tracer.broken
            if self.fullgraph:  # the function caught the GraphBreakError and went on
                raise GraphBreakError(
                    f"plugrad.compile(fullgraph=True) cannot capture {self._name()}: {reason} "
                    f"(at {where}); the function (or a library it called) caught the "
                    "GraphBreakError raised there and went on: what it computed after is not "
                    "returned. Remove that from the compiled function, or compile with "
                    "fullgraph=False"
                )
            self._runs_eagerly(
                entry,
                f"{reason} (at {where})",
                advice
                or "A plan repeats only operations on tensors (Python code runs only while it "
                "is captured), and this needs Python at every call; use fullgraph=True to make "
                "this an error.",
            )
            return result
        if tracer.discard is not None:
            # State made at the first call costs one more capture; a function that makes
            # new state at every call would capture at every call: it runs eagerly instead.
            entry.discards += 1
            if entry.discards >= _MOST_CAPTURES_NOT_KEPT and not self.fullgraph:
                self._runs_eagerly(
                    entry,
                    f"{tracer.discard} ({entry.discards} captures in a row, none kept: each "
                    "call made new state)",
                    "Change such state in place (state.mul_(...)) to have it replayed.",
                )
            return result
        entry.discards = 0
        plan = tracer.plan(output)
        if passes.shares_host_memory(plan):
            reason = (
                "it writes or returns a tensor that wraps host memory without a copy "
                "(as_tensor or from_numpy of an array), which a replay would share between "
                "calls; make it with plugrad.tensor(...), which copies, or pass it as an argument"
            )
            if self.fullgraph:
                raise GraphBreakError(
                    f"plugrad.compile(fullgraph=True) cannot capture {self._name()}: {reason}"
                )
            self._runs_eagerly(entry, reason, "Use fullgraph=True to make this an error.")
            return result
        for index in _held_by_state(self.fn, bindings, tracer.modules.values(), leaves):
            # Reached through the function's state as well as passed: the plan cannot tell
            # which reads went which way, so it holds only for that same tensor.
            name = f"argument_{index}_held"
            while name in plan.constants:
                name += "_"
            plan.constants[name] = leaves[index]
            plan.guards.append(f"L[{index}] is {name}")
        checks_arguments = not kwargs and _checks_arguments(plan, args, key[-1])
        _guard_memory_sharing(plan, leaves)
        # What the code is made from, later: not the call's tensors, nor this function
        # (which holds its plans: a plan never replayed is freed with it, without a cycle).
        host_calls, name, optimize, device_graph = (
            tracer.host_calls, self._name(), self.optimize, self.device_graph
        )  # fmt: skip
        devices = [t._device for t in (*leaves, *plan.free)]

        def make(plan: Any = plan) -> tuple[Callable[..., Any], str, Any]:
            rewrites: list[tuple[str, Any]] | None = [] if key[-1] else None  # checking mode
            if optimize:
                plan = passes.run_passes(plan, rewrites)
            replay, source = codegen.build(plan, f"<plugrad compiled {name}>")
            if backward is not None:
                replay = differentiable.replaying(replay, plan, backward)
            if rewrites is not None and len(rewrites) > 1:
                replay = checks.first_replay_checked(
                    rewrites, host_calls, f"<plugrad compiled {name}>"
                )
            if device_graph:
                replay = _graphed(plan, replay, host_calls, devices, name)
            if _inplace.copies_in_use:
                replay = _following(replay, plan, devices, name)
            if _lazy.in_use:
                replay = _settling(replay, plan, devices)
            if bindings:
                replay = _guarding_bindings(replay, bindings)
            return replay, source, plan

        if key[-1]:
            checks_arguments = False  # checking mode: the first replay may compare rewrites
        new_plan = _Kept(make, tuple(plan.free), plan, checks_arguments)
        if device_graph:
            new_plan.build()  # says at capture whether it replays in a device graph
        entry.plans.append(new_plan)
        if len(entry.plans) > self.cache_size:
            del entry.plans[0]
            if not entry.evicted:
                entry.evicted = True
                warnings.warn(
                    f"plugrad.compile: {self._name()} captured more plans for one input "
                    f"signature than its cache holds ({self.cache_size}): something its plans "
                    "check changes from call to call (a module's setting such as Dropout.p, "
                    "a parameter replaced, a global or an attribute it reads rebound, as "
                    "self.state = {...} at every call), and each such call pays for a "
                    "capture. Make what changes a tensor (changed in place) or an argument.",
                    CompileWarning,
                    stacklevel=4,  # the caller of the compiled function
                )
        return result

    def _may_differentiate(self, key: Any, leaves: list[Tensor], free: Any = ()) -> bool:
        """Whether a result carrying a graph may get the plan's own backward: not in
        checking mode (which compares plans by their results), not in a device graph,
        not on a lazy backend (whose replays settle what they return)."""
        return not (
            key[-1] or self.device_graph or any(t._device.backend.lazy for t in (*leaves, *free))
        )

    def _runs_eagerly(self, entry: _Entry, reason: str, advice: str) -> None:
        """Calls of this signature run eagerly from now on, with one warning saying why."""
        entry.reason = reason
        entry.plans.clear()
        warnings.warn(
            f"plugrad.compile: {self._name()} runs eagerly for this input signature: "
            f"{reason}. {advice}",
            CompileWarning,
            stacklevel=5,  # the caller of the compiled function
        )

    def _eager_in_checking_mode(self, key: Any, args: Any, kwargs: Any) -> Any:
        """Checking mode checks each kernel and rule as it runs: such calls run eagerly.

        The signature includes the mode, so turning it off compiles again.
        """
        reason = "plugrad's checking mode is on, and it checks every kernel and rule as it runs"
        return self._eager_in_mode(
            key, args, kwargs, reason, "turn checking mode off (plugrad.plugins.checking(False))"
        )

    def _eager_in_mode(
        self, key: Any, args: Any, kwargs: Any, reason: str, how: str = "leave that mode"
    ) -> Any:
        """Run eagerly while a mode that checks every call is on (cached until it changes)."""
        if self.fullgraph:
            raise GraphBreakError(
                f"plugrad.compile(fullgraph=True) cannot capture {self._name()}: {reason}; "
                f"{how} to compile"
            )
        entry = _Entry()
        entry.reason = reason
        self._cache[key] = entry
        warnings.warn(
            f"plugrad.compile: {self._name()} runs eagerly while {reason}",
            CompileWarning,
            stacklevel=3,
        )
        return self._run(*args, **kwargs)

    def _name(self) -> str:
        return getattr(self.fn, "__qualname__", type(self.fn).__name__)

    # -- looking inside --------------------------------------------------------------------

    def code(self, *args: Any, **kwargs: Any) -> str:
        """The Python source replayed for these arguments (captured now if not yet).

        Capturing runs the function once, with its effects (a training step
        updates the parameters).

        Returns
        -------
        str
            The source of the replayed function, or a line saying why calls
            with this signature run eagerly.
        """
        leaves: list[Tensor] = []
        key = _signature(args, kwargs, leaves)
        entry = self._cache.get(key)
        if entry is None or (not entry.plans and entry.reason is None):
            self._capture(key, entry, args, kwargs, leaves)
            entry = self._cache[key]
        if entry.reason is not None:
            return f"# runs eagerly: {entry.reason}\n"
        return entry.plans[-1].build()

    def cache_clear(self) -> None:
        """Forget every plan; the next call captures again."""
        self._cache.clear()
        self._dropped.clear()
        self._last = None

    @property
    def cache_len(self) -> int:
        """How many input signatures have a plan (or an eager fallback) cached."""
        return len(self._cache)

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        # Used as a method decorator: bind like a function.
        if instance is None:
            return self
        return functools.partial(self, instance)

    def __repr__(self) -> str:
        return f"<compiled {self._name()}>"


#: Every compiled function, to forget their plans when what plans assume changes.
_instances: weakref.WeakSet[CompiledFunction] = weakref.WeakSet()


def _forget_every_plan(*_: Any) -> None:
    """Anomaly mode switched, the default dtype changed, or a plugin changed the op and
    kernel tables: plans made before are stale."""
    for function in list(_instances):
        function.cache_clear()


_anomaly.on_switch(_forget_every_plan)


def _hooks_switched(on: bool) -> None:
    """Saved-tensor hooks went on: no call may take the shortcut to the last plan (the
    signature, which tells hooks on from off, then finds none: plans are made without)."""
    if on:
        for function in list(_instances):
            function._last = None


_saved_tensor_hooks.on_switch(_hooks_switched)


def _hooks_entered() -> None:
    """Saved-tensor hooks entered inside a capture: the plan would not call them."""
    tracer = _tracer._current()
    if tracer is not None and tracer.recording:
        tracer.graph_break(
            "it enters saved-tensor hooks (plugrad.autograd.graph.saved_tensors_hooks), which "
            "a plan would not call"
        )


_saved_tensor_hooks.on_enter(_hooks_entered)
_dtypes.on_default_change(_forget_every_plan)
_registry.on_rebuild(_forget_every_plan)


#: Python's scalars: a binding to one is guarded by its type and value, not its identity
#: (``lr = lr * 1.0`` is the same number in a new object). A number the code reads from a
#: global, a closure or an attribute is baked into the plan (``x * lr``) or decides a
#: branch (``if step % 10 == 0``): a new value captures a plan for it.
_SCALARS = (bool, int, float, complex, str, bytes)


def _is_unguarded(value: Any) -> bool:
    """Whether a binding to ``value`` is not guarded: a module or class of plugrad's, a
    library's or Python's (``import numpy as np``, ``Tensor``: checked at every call they
    would cost every replay, and are not rebound)."""
    if isinstance(value, type):
        return not _is_the_programs_class(value)
    if isinstance(value, types.ModuleType):
        return _is_library(value.__name__, getattr(value, "__file__", None))
    return False


def _same_scalar(now: Any, then: Any) -> bool:
    """Whether ``now`` is the scalar ``then`` by type and value: ``0.0`` and ``-0.0`` differ
    (``x / s`` does), as do ``1`` and ``1.0``; a NaN is the same as a NaN."""
    if type(now) is not type(then):
        return False
    if isinstance(then, (float, complex)):
        return repr(now) == repr(then)
    return bool(now == then)


def compile_module_calls(module: Any, **options: Any) -> CompiledFunction:
    """The compiled call :meth:`plugrad.nn.Module.compile` gives ``module``."""
    compiled = CompiledFunction(module, **options)
    compiled._run = functools.partial(_uncompiled_call, module)
    return compiled


def _uncompiled_call(module: Any, *args: Any, **kwargs: Any) -> Any:
    """``module(*args, **kwargs)`` as if it had no compiled call (a capture runs it so)."""
    compiled = module.__dict__.pop("_compiled_call", None)
    try:
        return module(*args, **kwargs)
    finally:
        if compiled is not None:
            module.__dict__["_compiled_call"] = compiled


_module._compile_calls = compile_module_calls


#: The methods of an autograd.Function subclass that its apply runs (or a capture records).
_FUNCTION_METHODS = ("forward", "setup_context", "backward", "vjp", "jvp", "vmap")


def _bindings_read(fn: Callable[..., Any], arguments: Any = ()) -> tuple[tuple[Any, Any, Any], ...]:
    """The global names, closure cells and defaults ``fn``'s own code reads, with what they
    hold now, and the attributes it may read of the objects it reaches.

    A replay reads the objects the capture reached, so rebinding one of these names
    (``scale = plugrad.tensor(...)`` at module level, ``nonlocal`` in a closure,
    ``fn.__defaults__ = ...``) must make the plan miss. Each entry is
    ``(globals, name, value)``, ``(cell, None, value)`` or ``(function, attribute, value)``.
    The functions of the program that ``fn`` reaches by such a name (a helper, a compiled
    function it calls) are read too, to a bounded depth: their names are as much a
    part of the plan. Library code (plugrad's, installed packages', Python's) is not.

    The objects whose attributes are guarded (see ``_attributes_read``): the one whose
    method is compiled, what the names read hold, the objects in ``arguments`` (the
    call's ``(args, kwargs)``, and in the defaults: a config passed, in a list too),
    the objects of the bound methods reached (``inner = compile(obj.apply)`` called
    from ``fn``) and the program's modules below the modules among them. The
    attributes are found by the names the code of their classes reads (``__call__``,
    a child's ``forward`` reading ``self.cfg.scale``), besides ``fn``'s own.
    """
    function = getattr(fn, "__func__", fn)
    forward = getattr(type(fn), "forward", None)  # a module's (its own state is checked)
    owner = getattr(fn, "__self__", None)
    if not hasattr(function, "__code__"):
        # a module's forward, or the __call__ of an object of the program's callable class
        call = forward or next(
            (vars(c)["__call__"] for c in type(fn).__mro__ if "__call__" in vars(c)), None
        )
        if isinstance(call, types.FunctionType):
            function, owner = call, fn
    found: list[tuple[Any, Any, Any]] = []
    names: set[str] = {"forward"} if isinstance(owner, _module.Module) else set()
    keys: set[str] = set()
    functions, seen = [(function, 0)], {id(function)}
    looked_up: set[str] = set()
    classes_read: dict[tuple[int, str], bool] = {}  # (see _class_attributes_read)
    defaults = (getattr(function, "__defaults__", None), getattr(function, "__kwdefaults__", None))
    objects = _objects_in((arguments, defaults))
    objects += [value.__self__ for value in objects if isinstance(value, types.MethodType)]
    for value in objects:
        value = getattr(value, "__func__", value) if isinstance(value, types.MethodType) else value
        if (
            isinstance(value, types.FunctionType)
            and id(value) not in seen
            and _is_the_programs(value)
        ):
            seen.add(id(value))  # a function passed: its code is the program's too
            functions.append((value, 1))
    while functions:
        function, depth = functions.pop()
        code = getattr(function, "__code__", None)
        if not isinstance(code, types.CodeType):
            continue
        read = _names_read(function, code)
        found += read
        _collect_names(code, names, keys)
        if owner is not None:
            # The object's class is the program's too: a method its code calls
            # (self.helper(x)) or a class attribute it reads, replaced on the class or
            # shadowed on the object, computes otherwise; such a method's names are read.
            new = names - looked_up
            looked_up |= new
            statics = _class_attributes_read(owner, new, classes_read)
            found += statics
            read = read + statics
        if depth == _HELPER_DEPTH:
            continue
        for _, _, value in read:
            helper = value.fn if isinstance(value, CompiledFunction) else value
            if isinstance(helper, (types.MethodType, _module.Module)):
                # a bound method's object (or a compiled module): its attributes are read
                objects.append(getattr(helper, "__self__", helper))
            try:
                helper = getattr(helper, "__func__", helper)
            except Exception:  # (an AttrDict's __getattr__ raising KeyError): not a method
                pass
            if isinstance(helper, types.FunctionType) and id(helper) not in seen:
                seen.add(id(helper))
                if _is_the_programs(helper):
                    functions.append((helper, depth + 1))
            elif isinstance(helper, type) and issubclass(helper, Function):
                # Fn.apply(x) runs the class's forward (and backward, captured with the
                # plan): the names their code reads are the program's too.
                for method in _FUNCTION_METHODS:
                    code_of = getattr(helper, method, None)
                    code_of = getattr(code_of, "__func__", code_of)
                    if (
                        isinstance(code_of, types.FunctionType)
                        and id(code_of) not in seen
                        and _is_the_programs(code_of)
                    ):
                        seen.add(id(code_of))
                        functions.append((code_of, depth + 1))
    roots = [owner] if owner is not None else []
    roots += [value for _, _, value in found]
    roots += [value for value in objects if not isinstance(value, _NOT_STATE)]
    below = _modules_below(roots)
    roots += below
    passed = {id(value) for value in objects}
    for root in roots:
        _names_of_class(root, id(root) in passed, names, keys)
    # A plan guards the tensors, children and settings of the modules below those it
    # calls or reaches (Tracer.plan): of these only the other attributes are found.
    settled = {id(module) for module in below}
    attributes = _attributes_read(roots, names, keys, settled, classes_read)
    for _ in range(_ATTRIBUTE_DEPTH):
        # The code of the objects these hold reads their attributes too (self.sub.apply(x)
        # reads self.sub.k): found again with those names, until no new one comes.
        known = len(names), len(keys)
        for _, _, value in attributes:
            _names_of_class(value, False, names, keys)
        if (len(names), len(keys)) == known:
            break
        attributes = _attributes_read(roots, names, keys, settled, classes_read)
    return tuple(found + attributes)


def _objects_in(value: Any, depth: int = 0) -> list[Any]:
    """The objects in ``value`` and the lists, tuples, dicts and dataclasses it holds, a few
    deep: the arguments of a call and the defaults of a function, not the containers (a
    signature holds what they hold, see ``_describe``)."""
    if isinstance(value, (tuple, list, frozenset)):
        items: Any = value
    elif isinstance(value, dict):
        items = value.values()
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = [getattr(value, field.name) for field in dataclasses.fields(value)]
    elif value is None or isinstance(value, (Tensor, *_SCALARS)):
        return []
    else:
        return [value]
    if depth == _ARGUMENT_DEPTH:
        return []
    return [found for item in items for found in _objects_in(item, depth + 1)]


#: How deep :func:`_objects_in` looks: ``(args, kwargs)``, then three levels of containers.
_ARGUMENT_DEPTH = 5


def _modules_below(roots: list[Any]) -> list[Any]:
    """The program's modules below the modules among ``roots`` (a child's ``forward`` reads
    its own attributes: ``self.cfg.scale``, ``self.mask``)."""
    below: dict[int, Any] = {}
    for root in roots:
        if isinstance(root, _module.Module):
            for child in root.modules():
                if child is not root and _is_the_programs_class(type(child)):
                    below.setdefault(id(child), child)
    return list(below.values())


def _names_of_class(value: Any, passed: bool, names: set[str], keys: set[str]) -> None:
    """Add to ``names`` and ``keys`` what the code of ``value``'s class (or of ``value``, a
    class: its class methods read ``cls.SCALE``) reads: of the program's classes along its
    mro, and of a library's distribution passed as an argument (its methods read its
    attributes: ``d.log_prob`` reads ``d.loc``). Other library objects (modules,
    optimizers) are guarded otherwise (see Tracer.plan)."""
    if isinstance(value, type):
        mro, library_too = value.__mro__, False
    elif isinstance(value, (types.ModuleType, *_NOT_STATE)):
        return
    else:
        from ..distributions.distribution import Distribution

        mro, library_too = type(value).__mro__, passed and isinstance(value, Distribution)
    for cls in mro:
        if cls is object or not (library_too or _is_the_programs_class(cls)):
            break
        for entry in vars(cls).values():
            if isinstance(entry, (staticmethod, classmethod)):
                entry = entry.__func__
            parts = (entry.fget, entry.fset) if isinstance(entry, property) else (entry,)
            for part in parts:
                code = getattr(part, "__code__", None)
                if isinstance(code, types.CodeType):
                    _collect_names(code, names, keys)


def _class_attributes_read(
    holder: Any,
    names: AbstractSet[str],
    done: dict[tuple[int, str], bool],
    shadowing: bool = True,
) -> list[tuple[Any, Any, Any]]:
    """For each of ``names`` that ``holder``'s class (a class of the program's, not
    plugrad's or a library's) finds along its mro and ``holder`` does not hold itself:
    the class's entry (see ``_looked_up``), and, with ``shadowing``, that ``holder`` holds
    no attribute of that name (one set later shadows it; a ``__slots__`` object holds
    none but its slots).

    ``done`` holds the ``(id, name)`` of each class and object looked up already (a class's
    with whether it finds the name): the objects of one class share its entries.
    """
    found: list[tuple[Any, Any, Any]] = []
    cls = type(holder)
    fields = getattr(holder, "__dict__", None)
    if not isinstance(fields, dict):
        fields, shadowing = dict.fromkeys(_tracer._slots_of(cls)), False
    for name in sorted(names):
        if name in fields:  # (the object's own attributes: see _attributes_read)
            continue
        finds = done.get((id(cls), name))
        if finds is None:
            looked_up = _looked_up(cls.__mro__, name)
            finds = done[id(cls), name] = bool(looked_up)
            found += looked_up
        if finds and shadowing and (id(holder), name) not in done:
            done[id(holder), name] = True
            found.append((fields, name, _MISSING))
    return found


def _looked_up(mro: tuple[type, ...], name: str) -> list[tuple[Any, Any, Any]]:
    """Where ``name`` is found along ``mro``, as guards: that the program's classes before
    the one defining it still do not, and that one's entry (where it is the program's).

    Nothing (an empty list) for a special method the code spells other than ``__call__``
    (the ``super().__init__()`` of a constructor): Python calls them, not a replay's code.
    """
    if name.startswith("__") and name.endswith("__") and name != "__call__":
        return []
    found: list[tuple[Any, Any, Any]] = []
    for cls in mro:
        if not _is_the_programs_class(cls):
            return found if name in cls.__dict__ else []
        entry = cls.__dict__.get(name, _MISSING)
        found.append((cls.__dict__, name, entry))
        if entry is not _MISSING:
            return found
    return []


def _is_the_programs_class(cls: type) -> bool:
    """Whether ``cls`` is defined by the program (not plugrad, a library or Python)."""
    module = sys.modules.get(cls.__module__)
    return not _is_library(cls.__module__ or "", getattr(module, "__file__", None))


def _collect_names(code: types.CodeType, names: set[str], keys: set[str]) -> None:
    """Add the names ``code`` (and the code nested in it) reads to ``names``, and its string
    constants (a dictionary's keys, ``state["optimizer"]``) to ``keys``."""
    codes = [code]
    while codes:
        current = codes.pop()
        names.update(current.co_names)
        for constant in current.co_consts:
            if isinstance(constant, types.CodeType):
                codes.append(constant)
            elif type(constant) is str:
                keys.add(constant)


def _attributes_read(
    roots: list[Any],
    names: set[str],
    keys: set[str],
    settled: AbstractSet[int] = frozenset(),
    classes_read: dict[tuple[int, str], bool] | None = None,
) -> list[tuple[Any, Any, Any]]:
    """The attributes and dictionary entries the program's code may read of ``roots`` (the
    object whose method is compiled, what its global names and closure cells hold), two
    levels deep: ``self.model``, ``trainer.optimizer.param_groups``, ``state["opt"]``.

    Found by name: an attribute of a root whose name the code reads (and a dictionary's
    entry whose key is one of its string constants). Replacing one (``trainer.model =
    nn.Linear(...)``, ``m.act = plugrad.tanh``, ``state["opt"] = SGD(...)``) must make
    the plan miss, as rebinding a global does; the replay would read the old object.
    Python numbers and strings are checked by value (see ``_same_scalar``). Each
    entry is ``(object, name, value)``, or ``(dictionary, key, value)``: a module's
    children, parameters and buffers are entries of its dictionaries. A dictionary's keys
    are an entry too, ``(dictionary, _KEYS, keys)``: adding, removing or reordering them
    changes what ``d.get("b", 0)``, ``"b" in d`` or a loop over ``d`` computes; so are a
    set's items (``"b" in flags``).

    What an object of the program's class reads of its class (``self.k`` where the class
    holds ``k``, a method, a module's ``forward``), and the attributes the code reads of a
    class of the program's (``Config.SCALE``, a custom Function's ``Op.k``), are entries
    of the classes along the mro (see ``_class_attributes_read``; ``classes_read``: those
    found already, of the object whose method is compiled).
    """
    found: list[tuple[Any, Any, Any]] = []
    seen: set[int] = set()
    done = dict(classes_read or {})
    stack = [(root, 0) for root in roots]
    while stack:
        holder, level = stack.pop()
        if id(holder) in seen or isinstance(holder, Tensor):
            continue
        seen.add(id(holder))
        slotted = False
        if isinstance(holder, dict):  # a defaultdict, an OrderedDict or another subclass too
            # Its keys as they are, in order: the code may ask for one that is missing
            # (d.get("b", 0), "b" in d) or go through them all.
            found.append((holder, _KEYS, tuple(holder)))
            # A subclass may serve its items as attributes too (an AttrDict's cfg.lr).
            wanted = keys if type(holder) is dict else keys | names
            tables: list[tuple[Any, Any, set[str]]] = [(holder, holder, wanted)]
            fields = getattr(holder, "__dict__", None)
            if type(fields) is dict:  # a subclass's own attributes, read from that dict
                tables.append((fields, fields, names))
        elif isinstance(holder, set):
            # Its items as they are, as a dictionary's keys ("double" in FLAGS, a loop).
            found.append((holder, _KEYS, tuple(holder)))
            continue
        elif isinstance(holder, type):
            if _is_the_programs_class(holder):
                # Its attributes the code reads, and a custom Function's code, replaced on
                # the class (Config.SCALE = 3.0, Op.backward = ...)
                wanted = names.union(_FUNCTION_METHODS) if issubclass(holder, Function) else names
                for name in sorted(wanted):
                    if (id(holder), name) not in done:
                        looked_up = _looked_up(holder.__mro__, name)
                        done[id(holder), name] = bool(looked_up)
                        found += looked_up
                        _read_further(looked_up, level, stack)
            continue
        elif isinstance(holder, types.ModuleType):
            if _is_unguarded(holder):
                continue
            tables = [(holder.__dict__, holder.__dict__, names)]  # the program's module
        elif isinstance(holder, _NOT_STATE):
            continue
        elif not hasattr(holder, "__dict__"):
            # An object with __slots__: its attributes as they are (one unset is missing).
            slots = _tracer._slots_of(type(holder))
            if not slots:
                continue
            fields = {name: getattr(holder, name, _MISSING) for name in slots}
            found += [(holder, name, _MISSING) for name in sorted(fields.keys() & (names | keys))
                      if fields[name] is _MISSING]  # fmt: skip
            tables = [(holder, {k: v for k, v in fields.items() if v is not _MISSING}, names)]
            slotted = True
        else:
            tables = [(holder, vars(holder), names)]
            if id(holder) in settled:
                tables = [(holder, _unsettled(vars(holder)), names)]
            elif isinstance(holder, _module.Module):
                # by attribute (self.encoder) or by key (a ModuleDict's heads["a"])
                tables += [
                    (table, table, names | keys)
                    for table in (holder._modules, holder._parameters, holder._buffers)
                ]
        if not isinstance(holder, dict) and _is_the_programs_class(type(holder)):
            # A module's class gives its forward, a callable object's its __call__. A
            # module below those reached is guarded against new attributes otherwise
            # (see Tracer._settings_guards).
            code = "forward" if isinstance(holder, _module.Module) else "__call__"
            looked_up = _class_attributes_read(
                holder, names | {code}, done, shadowing=id(holder) not in settled
            )
            found += looked_up
            _read_further(looked_up, level, stack)
        for target, table, wanted in tables:
            if table is not holder and not slotted:  # (a dictionary's: its _KEYS entry)
                # An attribute the code names in a string (getattr(self, "scale", None),
                # hasattr) and that is missing now: set later, it changes what is computed.
                for name in sorted(k for k in keys if k not in table and k.isidentifier()):
                    found.append((table, name, _MISSING))
            for name in sorted(wanted.intersection(table)):
                value = table[name]
                if _is_unguarded(value):
                    continue
                found.append((target, name, value))
                if level + 1 < _ATTRIBUTE_DEPTH:
                    stack.append((value, level + 1))
    return found


def _read_further(
    entries: list[tuple[Any, Any, Any]], level: int, stack: list[tuple[Any, int]]
) -> None:
    """Add to ``stack`` what the class entries in ``entries`` hold (``Config.optim.lr``),
    if not at the last level: the code reads their attributes as those of an object's."""
    if level + 1 < _ATTRIBUTE_DEPTH:
        stack += [
            (value, level + 1)
            for _, _, value in entries
            if value is not _MISSING and not isinstance(value, _CLASS_CODE)
        ]


#: What a class holds of its code, besides functions.
_CLASS_CODE = (staticmethod, classmethod, property)


def _unsettled(fields: dict[str, Any]) -> dict[str, Any]:
    """A module's attributes that are not settings or functions (``Tracer._settings_guards``
    guards those): a config object, a tensor, a dict, an enum, a tuple holding a tensor."""
    return {
        name: value for name, value in fields.items()
        if not (_tracer._is_plain_setting(value) or isinstance(value, _NOT_STATE))
    }  # fmt: skip


#: How many attributes deep :func:`_attributes_read` looks (``self.model.encoder``: 2).
_ATTRIBUTE_DEPTH = 2


def _ids_bound(bindings: tuple[tuple[Any, Any, Any], ...]) -> set[int]:
    """The ids of what ``bindings`` hold: each value, and each default of a defaults entry
    (``def train(closure=closure)``: the closure was made before the call)."""
    ids = set()
    for _, name, value in bindings:
        if isinstance(value, _SCALARS):  # (a small int is one object everywhere)
            continue
        ids.add(id(value))
        if name == "__defaults__":
            ids.update(map(id, value))
        elif name == "__kwdefaults__":
            ids.update(map(id, value.values()))
    return ids


def _names_read(function: Any, code: types.CodeType) -> list[tuple[Any, Any, Any]]:
    """The globals and closure cells ``code`` (and the code nested in it) reads."""
    names: set[str] = set()
    codes = [code]
    while codes:  # nested functions, lambdas and comprehensions read names too
        current = codes.pop()
        names.update(current.co_names)
        codes.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    found: list[tuple[Any, Any, Any]] = []
    namespace = function.__globals__
    for name in sorted(names):
        value = namespace.get(name, _MISSING)
        if value is not _MISSING and not _is_unguarded(value):
            found.append((namespace, name, value))
    for cell in function.__closure__ or ():
        try:
            value = cell.cell_contents
        except ValueError:  # a cell not bound yet
            continue
        if not _is_unguarded(value):
            found.append((cell, None, value))
    # Defaults are bound like names: replacing them (``fn.__defaults__ = ...``) changes
    # what a call without that argument computes.
    for attribute in ("__defaults__", "__kwdefaults__"):
        value = getattr(function, attribute, None)
        if value is not None:
            found.append((function, attribute, value))
    return found


#: How many calls deep :func:`_bindings_read` follows the program's own functions.
_HELPER_DEPTH = 3
#: Where library code lives (its globals are the library's, not the program's state).
_LIBRARY_PATHS = tuple(
    {path for key in ("stdlib", "platstdlib", "purelib", "platlib")
     if (path := sysconfig.get_paths().get(key))}
)  # fmt: skip


def _is_the_programs(function: types.FunctionType) -> bool:
    """Whether ``function`` is the program's own code (not plugrad's or a library's)."""
    module = getattr(function, "__module__", None) or ""
    return not _is_library(module, function.__code__.co_filename)


def _is_library(module: str, path: str | None) -> bool:
    """Whether the module named ``module``, read from ``path``, is plugrad, Python's or an
    installed package's (its functions, classes and globals are not the program's)."""
    if module == "plugrad" or module.startswith("plugrad.") or module in sys.builtin_module_names:
        return True
    return (path or "").startswith(_LIBRARY_PATHS)


_MISSING = object()
#: The name of a binding that holds a dictionary's keys (a set's items), in order, not one entry.
_KEYS = object()

#: How deep and how far :func:`_held_by_state` looks through the function's state.
_STATE_DEPTH = 8
_STATE_OBJECTS = 20_000
#: What holds no tensor of the function's state (or is code, not state).
_NOT_STATE = (
    *_SCALARS,
    type(None),
    types.ModuleType,
    type,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    weakref.ref,
)


def _held_by_state(
    fn: Any, bindings: tuple[tuple[Any, Any, Any], ...], modules: Any, tensors: list[Tensor]
) -> list[int]:
    """The indices of ``tensors`` that the function's state holds.

    A tensor passed as an argument that the function also reaches otherwise (a
    global it reads, a parameter of a module it calls, an optimizer's state, an
    attribute of the object whose method it is) is one tensor to the capture,
    read by the argument's name: a later call with another tensor must not
    replay that plan (it would read and write the argument where the function
    reaches its own tensor). A tensor the call made and returns that the state
    holds too (``self.h = new; return self.h``) was stored there by Python, which
    a replay does not run. Searched from the globals and closure cells the
    function reads, the modules it called, the function itself (a module) and
    its bound object, through containers and attributes, to a bounded depth.
    """
    wanted = {id(tensor): index for index, tensor in enumerate(tensors)}
    if not wanted:
        return []
    roots = [value for _, _, value in bindings]
    roots += [*modules, fn, getattr(fn, "__self__", None)]
    found: set[int] = set()
    seen: set[int] = set()
    stack = [(root, 0) for root in roots if root is not None]
    while stack and len(seen) < _STATE_OBJECTS:
        value, depth = stack.pop()
        if id(value) in seen or isinstance(value, _NOT_STATE):
            continue
        seen.add(id(value))
        if isinstance(value, Tensor):
            index = wanted.get(id(value))
            if index is not None:
                found.add(index)
            continue
        if depth == _STATE_DEPTH:
            continue
        if isinstance(value, (list, tuple, set, frozenset, collections.deque)):
            children: Any = value
        elif isinstance(value, dict):  # an OrderedDict, a defaultdict (optimizer.state) too
            children = [*value.values(), *(k for k in value if isinstance(k, Tensor))]
        elif hasattr(value, "__dict__") and not isinstance(value, type):
            children = vars(value).values()
        else:
            continue
        stack.extend((child, depth + 1) for child in children)
    return sorted(found)


def _graphed(
    plan: Any, replay: Callable[..., Any], host_calls: int, devices: list[Any], name: str
) -> Callable[..., Any]:
    """``replay`` as a device graph's launch, or as it is with a warning saying why not.

    ``devices``: those of the call's tensors and of the free ones.
    """
    distinct = {id(device): device for device in devices}
    reason = graphs.why_not_graphed(plan, host_calls)
    record = None
    if reason is None and len(distinct) != 1:
        reason = "its tensors are not all on one device"
    if reason is None:
        (device,) = distinct.values()
        record = device.backend.graph_recorder(device.native)
        if record is None:
            reason = f"the {device.backend.name} backend has no device graphs"
    if reason is not None or record is None:
        warnings.warn(
            f"plugrad.compile: {name} replays without a device graph: {reason}",
            CompileWarning,
            stacklevel=_tracer.user_stacklevel(),
        )
        return replay
    return graphs.graphed(plan, replay, record)


def _guarding_bindings(
    replay: Callable[..., Any], bindings: tuple[tuple[Any, Any, Any], ...]
) -> Callable[..., Any]:
    """``replay``, missing when a global name, closure cell or default its function read
    was rebound."""

    def guarded(L: Any, F: Any) -> Any:
        for holder, name, value in bindings:
            if name is _KEYS:
                if len(holder) != len(value) or not all(map(operator.is_, holder, value)):
                    return codegen.MISS
                continue
            if isinstance(holder, (dict, types.MappingProxyType)):  # (a class's: a proxy)
                now = holder.get(name, _MISSING)
            else:
                now = holder.cell_contents if name is None else getattr(holder, name, _MISSING)
            if now is not value and not (isinstance(value, _SCALARS) and _same_scalar(now, value)):
                return codegen.MISS
        return replay(L, F)

    return guarded


def _settling(replay: Callable[..., Any], plan: Any, devices: list[Any]) -> Callable[..., Any]:
    """``replay`` settling what it leaves behind on lazy backends; as it is on eager ones.

    Eager code settles the arrays of every kernel (``plugrad.lazy``); a replay
    calls the namespace directly, so without this a training loop replayed on
    Dask would extend the same task graphs call after call. After each replay,
    the arrays and gradients of the tensors the plan reads (arguments,
    parameters, optimizer state) and of its result are settled: one replay's
    graph is bounded by the plan, and nothing carries over to the next.
    """
    if not any(device.backend.lazy for device in devices):
        return replay
    free = tuple(plan.free)

    def settled(L: Any, F: Any) -> Any:
        result = replay(L, F)
        if result is not codegen.MISS:
            held = [*tensors_in(L), *free, *tensors_in(result)]
            _lazy.settle_tensors(held)
            _lazy.settle_tensors([t._grad for t in held if t._grad is not None])
        return result

    return settled


def _following(
    replay: Callable[..., Any], plan: Any, devices: list[Any], name: str
) -> Callable[..., Any]:
    """``replay`` bringing up to date the views of what it changes where views are copies.

    The plan writes the arrays of the tensors it changes in place (a parameter
    update, ``x.add_(1)`` under ``no_grad``); where views share memory, every
    view sees the change. Where they are copies (JAX, Dask), views that existed
    at capture are brought up to date by the plan itself, but views made since
    are not: this finds them before each replay (or refuses it, changing
    nothing, where one could not follow) and brings them up to date after it.
    """
    if not any(device.views_are_copies for device in devices):
        return replay
    written = graphs.tensors_changed_in_place(plan)
    if not written:
        return replay
    what = f"a replay of the compiled {name}"

    def following(L: Any, F: Any) -> Any:
        found = _inplace.views_to_follow(
            [(L if which == "L" else F)[index] for which, index in written], what
        )
        result = replay(L, F)
        if found and result is not codegen.MISS:
            _inplace.follow_raw_writes(found)
        return result

    return following


def _signature(args: tuple[Any, ...], kwargs: dict[str, Any], leaves: list[Tensor]) -> Any:
    """What a plan depends on besides the free tensors it checks itself."""
    parts: list[Any] = []
    for index, value in enumerate(args):
        if isinstance(value, Tensor):  # the common case, spelled out: it runs every call
            leaves.append(value)
            array = value._array
            # Its class too: the function may branch on it (isinstance(x, nn.Parameter)).
            parts.append(
                (type(value), array.shape, array.dtype, value._device, value._requires_grad,
                 value._edge is None)
            )  # fmt: skip
        else:
            parts.append(_describe(value, leaves, index))
    if kwargs:
        parts.extend((k, _describe(v, leaves, k)) for k, v in kwargs.items())
    if len(leaves) > 1:
        ids = [id(t) for t in leaves]
        if len(set(ids)) != len(ids):
            parts.append(("aliases", tuple(ids.index(i) for i in ids)))
        if _inplace.copies_in_use and _copies_views(leaves):
            # Where views are copies (JAX, Dask), which tensors share memory is plugrad's
            # bookkeeping, replayed as captured: a plan holds only for the same sharing.
            # Each argument as the first one it shares memory with (itself where none):
            # whether a tensor has a counter yet is no part of it.
            counters = [
                id(t._counter) if t._counter is not None else -i - 1 for i, t in enumerate(leaves)
            ]
            parts.append(("memory", tuple(map(counters.index, counters))))
    # (with saved-tensor hooks on, a call runs eagerly; its plans wait for them to go off)
    # (with autocast enabled in this thread too: it runs eagerly; its plans are those made
    # without). Checking mode last: key[-1] reads it.
    return (
        tuple(parts), _state.enabled, _saved_tensor_hooks.active > 0,
        _autocast_mode.enabled_here(), _checking._enabled,
    )  # fmt: skip


def _copies_views(leaves: list[Tensor]) -> bool:
    """Whether any of ``leaves`` is on a device whose views are copies (JAX, Dask)."""
    return any(t._device.views_are_copies for t in leaves)


def _share_memory(leaves: list[Tensor]) -> bool:
    """Whether two different tensors among ``leaves`` share memory (one version counter)."""
    seen: dict[int, int] = {}
    for tensor in leaves:
        counter = tensor._counter
        if counter is not None and seen.setdefault(id(counter), id(tensor)) != id(tensor):
            return True
    return False


def _checks_arguments(plan: Any, args: tuple[Any, ...], checking: bool) -> bool:
    """Add to ``plan`` the guards that make its signature check redundant, if it can have them.

    When every argument is a tensor (the common case: ``step(x, y)``), the
    signature is what the replayed code can check at less cost: the number of
    arguments, each one's class, shape, dtype, device, ``requires_grad`` and whether
    it has a graph, which of them are the same tensor, grad mode and checking mode.
    With these guards the plan may run before the signature is computed.
    """
    if not 0 < len(args) <= _MOST_CHECKED_ARGUMENTS or not all(isinstance(a, Tensor) for a in args):
        return False
    guards = [f"len(L) == {len(args)}", "_grad_state.enabled is " + str(_state.enabled)]
    guards.append(f"_checking._enabled is {checking}")
    guards.append("not _autocast_mode.active")  # (a region somewhere: the signature tells)
    for index, tensor in enumerate(args):
        aliases = "".join(
            f" and a{index} {'is' if tensor is args[other] else 'is not'} a{other}"
            for other in range(index)
        )
        kind = type(tensor)
        if kind is Tensor:
            kind_name = "Tensor"
        else:  # a subclass (nn.Parameter...): the function may branch on it
            kind_name = f"argument_class_{index}"
            while kind_name in plan.constants:
                kind_name += "_"
            plan.constants[kind_name] = kind
        guards.append(
            f"type(a{index} := L[{index}]) is {kind_name} and "
            f"a{index}._edge is {'' if tensor._edge is None else 'not '}None{aliases}"
        )
    # Shapes, dtypes, layouts, devices and requires_grad: one comparison, as for the free
    # tensors.
    _, getter = codegen.meta_guard([tensor._array for tensor in args])
    laid_out = getter is codegen.LAID_OUT_META
    expected = tuple(item for tensor in args for item in getter(tensor))
    name = "argument_meta"
    while name in plan.constants:
        name += "_"
    plan.constants[name] = expected
    guards.append(f"{codegen.arguments_meta(len(args), laid_out)} == {name}")
    if laid_out:
        plan.layout_guards.pop("L", None)
    if len(args) > 1 and _copies_views(list(args)):
        # Where views are copies, arguments sharing memory run eagerly (see _capture_plan).
        helper = "share_memory"
        while helper in plan.constants:
            helper += "_"
        plan.constants[helper] = _share_memory
        guards.append(f"not {helper}(L)")
    plan.guards[:0] = guards
    return True


def _memory_groups(tensors: Any) -> tuple[int, ...]:
    """Each tensor as the first one it is or shares memory with (its version counter)."""
    keys = [id(t._counter or t) for t in tensors]
    return tuple(map(keys.index, keys))


def _guard_memory_sharing(plan: Any, leaves: list[Tensor]) -> None:
    """Guard which of the call's and the free tensors are one tensor or share memory.

    A plan is right only for the sharing it was captured with: an argument that
    is a free tensor adds two gradients into one ``.grad`` (a plan writes each),
    and a write into memory another tensor shares changes what that one reads,
    or raises in eager code where a saved value was written. Arguments among
    themselves are in the signature; memory they share matters where the plan
    writes in place.
    """
    tensors = [*leaves, *plan.free]
    if len(tensors) < 2 or not (plan.free or graphs.tensors_changed_in_place(plan)):
        return
    groups = _memory_groups(tensors)
    if groups == tuple(range(len(tensors))):  # none shared: one set, the common case
        plan.guards.append(f"_distinct_memory((*L, *F)) == {len(tensors)}")
        return
    name = "memory_groups"
    while name in plan.constants:
        name += "_"
    plan.constants[name] = groups
    plan.constants["_memory_groups"] = _memory_groups
    plan.guards.append(f"_memory_groups((*L, *F)) == {name}")


def _describe(value: Any, leaves: list[Tensor], where: Any) -> Any:
    if isinstance(value, Tensor):
        leaves.append(value)
        array = value._array
        return (
            _TENSOR,
            type(value),
            array.shape,
            array.dtype,
            value._device,
            value._requires_grad,
            value._edge is None,
        )
    kind = type(value)
    if isinstance(value, (tuple, list)):
        # a namedtuple (any subclass) as a tuple of its kind: its values compared with ==,
        # 1 would match 1.0
        return (kind, tuple(_describe(v, leaves, (where, i)) for i, v in enumerate(value)))
    if isinstance(value, frozenset):
        # each element described (compared with ==, {1} matched {1.0} and {0.0} {-0.0}), in
        # an order of their descriptions: the set's own order is no part of it
        inner: list[Tensor] = []
        described = sorted((_describe(v, inner, where) for v in value), key=repr)
        if inner:
            raise CompileError(
                f"{_where(where)} of a compiled function is a frozenset holding tensors, which "
                "have no order in it to be read in at a replay; pass them in a tuple or list"
            )
        return (kind, tuple(described))
    if isinstance(value, dict):  # an OrderedDict (a state_dict) or another subclass too
        items = tuple((_key(k, where), _describe(v, leaves, (where, k))) for k, v in value.items())
        # a defaultdict's factory makes what a missing key reads
        return (kind, getattr(value, "default_factory", None), items)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (kind, tuple(
            (field.name, _describe(getattr(value, field.name), leaves, (where, field.name)))
            for field in dataclasses.fields(value)
        ))  # fmt: skip
    try:
        hash(value)
    except TypeError:
        raise CompileError(
            f"{_where(where)} of a compiled function is a {kind.__name__}, which cannot be part "
            "of its input signature (it is not hashable); pass Tensors, numbers, strings, or "
            "tuples, lists and dicts of them, or reach it from inside the function instead"
        ) from None
    if isinstance(value, float):  # NumPy's float64 is a float subclass
        # 0.0 == -0.0 (x / s differs) and nan != nan (a key never found): by their bits.
        return (kind, float(value).hex())
    if isinstance(value, complex):
        return (kind, value.real.hex(), value.imag.hex())
    if kind.__module__ == "numpy" and hasattr(value, "dtype") and value.dtype.kind in "fc":
        # NumPy's float32 and float16 scalars, as their bits
        return (kind, value.tobytes())
    if getattr(kind, "__eq__", None) is not object.__eq__ and hasattr(value, "__dict__"):
        # An object with attributes whose class says when two are equal: the plan's guards
        # read the attributes of the one it captured, and an equal one may hold others.
        return (kind, _Same(value))
    return (kind, value)


def _key(key: Any, where: Any) -> Any:
    """A dict key as part of a signature: by value and type (``1`` and ``1.0`` are one key
    to a dict, but not to a plan), never a tensor."""
    inner: list[Tensor] = []
    described = _describe(key, inner, where)
    if inner:
        raise CompileError(
            f"{_where(where)} of a compiled function is a dict with a Tensor as a key, which "
            "cannot be part of its input signature; key it by names or numbers"
        )
    return described


def _where(where: Any) -> str:
    """``argument 0``, ``argument 'x'[1]['a']``: where an argument sits, for an error."""
    path = []
    while type(where) is tuple:
        where, key = where
        path.append(f"[{key!r}]")
    return f"argument {where!r}" + "".join(reversed(path))


#: How many dropped signatures a compiled function remembers (to warn when one returns).
_DROPPED_KEPT = 4096


def _checked_cache_size(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InvalidArgumentError(f"cache_size must be an int >= 1, got {value!r}")
    return value


def compile(
    fn: Callable[..., Any] | None = None,
    *,
    fullgraph: bool = False,
    cache_size: int = 8,
    optimize: bool = True,
    device_graph: bool = False,
) -> Any:
    """Capture ``fn`` once per input signature and replay it as straight-line array code.

    The first call with a given signature runs ``fn`` eagerly while recording
    every array operation it causes -- forward ops, the backward rules the
    engine runs, gradients accumulated into ``.grad``, in-place updates under
    :func:`plugrad.no_grad` -- into a plan. The second call makes the plan a
    Python function over the backend namespace (passes, source, ``compile()``)
    and runs it, as do later calls with the same signature: no Tensor, graph
    node or dispatch work per op.

    Python code in ``fn`` runs only while a plan is captured. Values read on
    the host (``.item()``, ``bool()``, ``.numpy()``...) and tensor hooks cannot
    be replayed: the call falls back to eager for that signature with a
    :class:`~plugrad.errors.CompileWarning`, or raises
    :class:`~plugrad.errors.GraphBreakError` with ``fullgraph=True``.

    Parameters
    ----------
    fn : callable
        The function (or module) to compile. Without it, ``compile`` returns a decorator.
    fullgraph : bool, default False
        Raise instead of falling back to eager execution.
    cache_size : int, default 8
        How many input signatures keep a plan (least recently used dropped first).
    optimize : bool, default True
        Run the plan passes (dead-code elimination and those of plugins).
    device_graph : bool, default False
        Replay each plan as one device graph (CUDA graphs, on the CuPy
        backend): its kernels launched with one call, on memory of its own.
        A plan a graph cannot repeat (it reads values on the host, calls
        Python code such as an optimizer's step counts, draws random numbers)
        replays as usual, with a :class:`~plugrad.errors.CompileWarning`.

    Returns
    -------
    CompiledFunction

    Examples
    --------
    >>> import plugrad
    >>> @plugrad.compile
    ... def f(a, b):
    ...     return a * b + plugrad.exp(a)
    >>> x = plugrad.tensor([0.0, 1.0])
    >>> f(x, x).tolist()
    [1.0, 3.7182817459106445]
    >>> f(x, x).tolist()  # replayed
    [1.0, 3.7182817459106445]
    >>> f.captures
    1
    """
    if fn is None:
        # Checked now, where the decorator is written, not at the decoration.
        for name, value in (
            ("fullgraph", fullgraph),
            ("optimize", optimize),
            ("device_graph", device_graph),
        ):
            checked_bool(f"plugrad.compile(): {name}", value)
        _checked_cache_size(cache_size)
        return lambda function: CompiledFunction(
            function,
            fullgraph=fullgraph,
            cache_size=cache_size,
            optimize=optimize,
            device_graph=device_graph,
        )
    return CompiledFunction(
        fn,
        fullgraph=fullgraph,
        cache_size=cache_size,
        optimize=optimize,
        device_graph=device_graph,
    )
