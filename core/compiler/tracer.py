"""Capture: run a function once, eagerly, while recording every array operation into a plan.

For the length of one call the tracer swaps a few tables, as checking mode
does, and puts them back afterwards, so eager execution pays nothing for it:

- each device's ``xp`` (what kernels receive) and ``rule_xp`` (what backward
  rules receive) become :class:`RecordingNamespace` objects, which call the
  real functions and record the call;
- arrays produced during the call are :class:`TracedArray` objects: the real
  array plus its name in the plan; their operators record themselves, so the
  engine's gradient sums, an optimizer's ``array -= lr * g`` and in-place
  updates are recorded like any kernel;
- ``Tensor._array`` and ``Tensor._grad`` become descriptors that notice the
  first read of a tensor made before the call (an argument, a parameter,
  optimizer state: an input of the plan, by identity) and every write to such
  a tensor (an effect the plan must repeat);
- value reads (``item()``, ``bool()``, ``.numpy()``, ...) and tensor hooks
  are *graph breaks*: the call goes on eagerly and the plan is dropped;
- an optimizer step runs its Python part (step counts, the learning rate)
  as a call the plan makes again at every replay, whose numbers are plan
  values (:class:`TracedScalar`), and its array part is recorded like any
  other array code; other stateful code (``LRScheduler.step``, an optimizer
  that does not split its step) and random sources become calls the plan
  makes again at every replay.
"""

from __future__ import annotations

import collections
import copy
import functools
import gc
import math
import numbers
import operator
import os
import re
import secrets
import sys
import threading
import types
from collections.abc import Callable, Mapping
from typing import Any

from .. import engine as _engine
from .. import graph as _graph
from .. import inplace as _views
from .. import random as _random
from .. import registry as _registry
from .. import versions as _versions
from ..backend_activation import bind_kernel
from ..backend_activation import default_device as _default_device
from ..errors import ArgumentError, GraphBreakError, GraphFreedError, IndexOutOfRangeError
from ..graph import Node
from ..nn import functional as _functional
from ..nn.lazy import is_uninitialized
from ..node import hook_epoch, releasing_classes, split_edge
from ..plugins import _rules
from ..random import Generator, _default_generators, _generator_for
from ..tensor import Tensor
from ..tensor_hooks import PostAccumulateGradHook
from ..versions import ALIAS, DETACHED
from . import codegen
from .plan import Name, Plan, Ref, Step, refs_in

__all__ = ["GraphBreak", "RecordingNamespace", "TracedArray", "TracedScalar", "Tracer"]

_ARRAY_SLOT = Tensor.__dict__["_array"]
_GRAD_SLOT = Tensor.__dict__["_grad"]
_get_array, _set_array = _ARRAY_SLOT.__get__, _ARRAY_SLOT.__set__
_get_grad, _set_grad = _GRAD_SLOT.__get__, _GRAD_SLOT.__set__
_SOURCE_SLOT = Generator.__dict__["_source"]
_HOOK_SLOT = PostAccumulateGradHook.__dict__["function"]
_PY_SCALARS = (int, float, complex, bool)
#: Array methods that write into the array they are called on.
_MUTATING_METHODS = frozenset({"fill", "sort", "put", "resize", "setflags", "partition"})

#: Functions whose result depends on their first argument's shape and dtype only.
_SHAPE_ONLY = frozenset({"ones_like", "zeros_like", "full_like"})
#: Kinds of step that compute a value from their arguments and nothing else.
_FOLDABLE_KINDS = frozenset({"call", "binop", "unary", "attr", "getitem"})

#: One capture at a time: the swapped tables are process-wide.
capture_lock = threading.RLock()
#: The tracer of the capture under way, if any.
_active: Tracer | None = None


def _current() -> Tracer | None:
    """The capture under way in this thread, if any: the tables and descriptors a capture
    installs are the whole process's, and another thread's code runs through them as it
    would without them."""
    tracer = _active
    if tracer is not None and tracer.thread != threading.get_ident():
        return None
    return tracer


class GraphBreak(Exception):
    """Raised inside a capture with ``fullgraph=True`` (wrapped in GraphBreakError)."""


def _is_plain_setting(value: Any) -> bool:
    """Whether ``value`` is a number (a NumPy scalar too), string, bool or None, or a tuple
    (a ``plugrad.Size``, a named tuple too) or list of them."""
    if isinstance(value, tuple) or type(value) is list:
        return all(_is_plain_setting(item) for item in value)
    return value is None or type(value) in (bool, int, str) or isinstance(value, numbers.Number)


def _compared_by_text(value: Any) -> bool:
    """Whether settings holding ``value`` are compared by their ``repr``, not by ``==``:
    ``0.0 == -0.0``, a NumPy scalar equals a Python number of another dtype (each promotes
    otherwise), a tuple's subclass equals a tuple (its repr names it), and a list may
    change in place (the capture's would change with it)."""
    if type(value) is tuple:
        return any(_compared_by_text(item) for item in value)
    return value is not None and type(value) not in (bool, int, str)


def _holds_list(value: Any) -> bool:
    """Whether a plain setting is or holds a list (which may change in place)."""
    return type(value) is list or (isinstance(value, tuple) and any(map(_holds_list, value)))


def _members(module: Any) -> tuple[Any, ...]:
    """What a module holds, by name and identity (a lazily made parameter changes it)."""
    return tuple(
        (name, id(value))
        for table in (module._parameters, module._buffers, module._modules)
        for name, value in table.items()
    )


def _made_to_run_later(value: Any) -> bool:
    """Whether ``value`` is code made to run after the call: a generator, an iterator
    (``map``, ``zip``), a coroutine, a function defined in a function (a closure), or a
    ``functools.partial``."""
    if isinstance(value, (types.GeneratorType, types.CoroutineType, functools.partial)):
        return True
    if isinstance(value, types.FunctionType):
        return "<locals>" in value.__qualname__ or value.__name__ == "<lambda>"
    return hasattr(type(value), "__next__")


def _holds_tensors(value: Any, wanted: Callable[[Tensor], bool]) -> bool:
    """Whether ``value`` holds, at any depth, a Tensor for which ``wanted`` is true: among
    the keys and values of a mapping (an OrderedDict, a defaultdict, a ChainMap), the items
    of a sequence or set of any kind, or the attributes of an object (``__dict__`` and
    ``__slots__``: a dataclass, a plain object)."""
    seen: set[int] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Tensor):
            if wanted(item):
                return True
            continue
        if id(item) in seen or isinstance(item, _OPAQUE):
            continue
        seen.add(id(item))
        if isinstance(item, Mapping):
            stack += [*item.keys(), *item.values()]
        elif isinstance(item, (tuple, list, set, frozenset, collections.deque)):
            stack += item
        else:
            fields = getattr(item, "__dict__", None)
            if isinstance(fields, dict):
                stack += fields.values()
            for slot in _slots_of(type(item)):
                stack.append(getattr(item, slot, None))
    return False


#: What :func:`_holds_tensors` does not look into: text, classes, code, modules.
_OPAQUE = (str, bytes, type, types.FunctionType, types.MethodType, types.ModuleType)


def _slots_of(kind: type) -> tuple[str, ...]:
    """The ``__slots__`` names of ``kind`` and its bases."""
    names: list[str] = []
    for base in kind.__mro__:
        slots = base.__dict__.get("__slots__", ())
        names += [slots] if isinstance(slots, str) else [s for s in slots if s != "__dict__"]
    return tuple(names)


def _is_array(value: Any) -> bool:
    kind = type(value)
    if kind in _ARRAY_TYPES:  # every kernel's result is asked: the answer is kept by type
        return True
    if kind in _PY_SCALARS or not (
        hasattr(value, "shape") and hasattr(value, "dtype") and hasattr(value, "ndim")
    ):
        return False
    if all(isinstance(getattr(kind, a, None), _CLASS_ATTRIBUTES) for a in _ARRAY_ATTRIBUTES):
        _ARRAY_TYPES.add(kind)  # attributes every instance has, whatever its value
    return True


_ARRAY_ATTRIBUTES = ("shape", "dtype", "ndim")
#: What an extension type defines for an attribute that all its instances then have.
_CLASS_ATTRIBUTES = (types.GetSetDescriptorType, types.MemberDescriptorType)
#: Types whose instances are arrays (found by :func:`_is_array`).
_ARRAY_TYPES: set[type] = set()


def _unwrap(value: Any) -> Any:
    """``value`` with every TracedArray replaced by its real array (containers searched)."""
    kind = type(value)
    if kind is TracedArray:
        return value._real
    if kind is TracedScalar:
        return value._value
    if kind is tuple:
        # Every kernel call passes its arguments through here: arrays and literals are
        # handled in the comprehension, only what holds more is searched.
        return tuple(
            [
                v._real if type(v) is TracedArray else _unwrap(v) if type(v) in _HOLDERS else v
                for v in value
            ]
        )
    if kind is list:
        return [_unwrap(v) for v in value]
    if kind is dict:
        return {k: _unwrap(v) for k, v in value.items()}
    return value


def _has_traced(value: Any) -> bool:
    kind = type(value)
    if kind is TracedArray or kind is TracedScalar:
        return True
    if kind in (tuple, list):
        for v in value:
            if type(v) is TracedArray or (type(v) in _HOLDERS and _has_traced(v)):
                return True
        return False
    if kind is dict:
        return any(_has_traced(v) for v in value.values())
    return False


def _holds_tensor(value: Any) -> bool:
    """Whether ``value`` is a Tensor, or a tuple, list or dict holding one."""
    if isinstance(value, Tensor):
        return True
    if type(value) in (tuple, list):
        return any(_holds_tensor(v) for v in value)
    if type(value) is dict:
        return any(_holds_tensor(v) for v in value.values())
    return False


def _as_step_arg(value: Any) -> Any:
    """``value`` as a step keeps it: TracedArrays become Refs (containers searched)."""
    kind = type(value)
    if kind is TracedArray or kind is TracedScalar:
        return value._ref
    if kind is tuple:
        return tuple(
            [
                v._ref if type(v) is TracedArray else _as_step_arg(v) if type(v) in _HOLDERS else v
                for v in value
            ]
        )
    if kind is list:
        return [_as_step_arg(v) for v in value]
    if kind is dict:
        return {k: _as_step_arg(v) for k, v in value.items()}
    if kind is slice:
        return slice(_as_step_arg(value.start), _as_step_arg(value.stop), _as_step_arg(value.step))
    return value


def _metadata(name: str) -> property:
    """A property of :class:`TracedArray`: the real array's ``name``, not recorded."""
    # attrgetter reads it without a Python frame: the engine and kernels ask often.
    return property(operator.attrgetter(f"_real.{name}"), doc=f"The real array's ``{name}``.")


class TracedArray:
    """A real backend array that records what is done with it during a capture.

    After the capture it only forwards to the real array, so one that escaped
    (kept in a Python list, say) still computes the right values.
    """

    __slots__ = ("_real", "_ref", "_tracer")
    # ndarray op TracedArray: let NumPy hand the operation to our reflected operator.
    __array_ufunc__ = None

    def __init__(self, real: Any, ref: Ref, tracer: Tracer) -> None:
        self._real = real
        self._ref = ref
        self._tracer = tracer

    # -- static metadata: guarded by the plan's signature, so read freely -----------------

    shape = _metadata("shape")
    dtype = _metadata("dtype")
    ndim = _metadata("ndim")
    size = _metadata("size")
    device = _metadata("device")

    def devices(self) -> Any:  # JAX's arrays say where they live through a method
        return self._real.devices()

    def __len__(self) -> int:
        return len(self._real)

    def __array_namespace__(self, *args: Any, **kwargs: Any) -> Any:
        return self._real.__array_namespace__(*args, **kwargs)

    def __dlpack_device__(self) -> Any:
        return self._real.__dlpack_device__()

    # -- recorded ---------------------------------------------------------------------------

    @property
    def T(self) -> Any:
        return self._attr("T")

    @property
    def mT(self) -> Any:
        return self._attr("mT")

    def _attr(self, name: str) -> Any:
        real = getattr(self._real, name)
        tracer = self._tracer
        if not tracer.recording:
            return real
        return tracer.record("attr", name, (self,), None, real)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = getattr(self._real, name)
        if callable(value):
            return _RecordingMethod(self, name, value)
        if _is_array(value) and self._tracer.recording:
            return self._tracer.record("attr", name, (self,), None, value)
        return value

    def __getitem__(self, key: Any) -> Any:
        real = self._real[_unwrap(key)]
        tracer = self._tracer
        if not tracer.recording:
            return real
        return tracer.record("getitem", None, (self, key), None, real)

    def __setitem__(self, key: Any, value: Any) -> None:
        self._real[_unwrap(key)] = _unwrap(value)
        tracer = self._tracer
        if tracer.recording:
            tracer.record("setitem", None, (self, key, value), None, None, effect=True)

    def __iter__(self) -> Any:
        return (self[i] for i in range(len(self._real)))

    # -- values on the host: a graph break -------------------------------------------------

    def _host_value(self, what: str) -> Any:
        self._tracer.graph_break(f"{what} reads the values of a traced array")
        return self._real

    def __bool__(self) -> bool:
        return bool(self._host_value("bool()"))

    def __int__(self) -> int:
        return int(self._host_value("int()"))

    def __float__(self) -> float:
        return float(self._host_value("float()"))

    def __complex__(self) -> complex:
        return complex(self._host_value("complex()"))

    def __index__(self) -> int:
        return operator.index(self._host_value("using an array as an index"))

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        real = self._host_value("converting to a NumPy array (or a function outside xp)")
        return real.__array__(*args, **kwargs)

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self._host_value("__dlpack__ (exporting the data)").__dlpack__(*args, **kwargs)

    def __repr__(self) -> str:
        return repr(self._host_value("repr() (printing)"))

    def __str__(self) -> str:
        return str(self._host_value("str() (printing)"))

    def __format__(self, spec: str) -> str:
        return format(self._host_value("formatting"), spec)

    __hash__ = object.__hash__


class TracedScalar:
    """A number a replay computes afresh (a learning rate, a bias correction), during a capture.

    It may only be an operand of an array operation, which records it by
    name. Arithmetic with another number would make a constant of the result,
    wrong at the next replay, so it raises; an optimizer computes such
    numbers in ``_prepare_group`` instead.
    """

    __slots__ = ("_ref", "_value")
    # ndarray op TracedScalar: refused by NumPy, so that our operator below decides.
    __array_ufunc__ = None

    def __init__(self, value: float, ref: Ref) -> None:
        self._value = value
        self._ref = ref

    def _refuse(self, *args: Any) -> Any:
        if args and type(args[0]) is TracedArray:
            return NotImplemented  # the array's reflected operator records the operation
        raise ArgumentError(
            "a number that a compiled step recomputes at every replay (from _prepare_group) "
            "may only be an operand of an array operation; compute any arithmetic on it in "
            "_prepare_group"
        )

    def __float__(self) -> float:
        tracer = _current()
        if tracer is not None:
            tracer.graph_break("float() of a number the plan recomputes at every replay")
        return float(self._value)

    def __repr__(self) -> str:
        return f"TracedScalar({self._value!r}, {self._ref})"


for _name in (
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "lt", "le", "gt", "ge",
):  # fmt: skip
    setattr(TracedScalar, f"__{_name}__", TracedScalar._refuse)
    setattr(TracedScalar, f"__r{_name}__", TracedScalar._refuse)
# == and != too: a branch on one would be taken once, at the capture, for every replay.
for _name in ("eq", "ne", "neg", "pos", "abs", "bool", "int", "index"):
    setattr(TracedScalar, f"__{_name}__", TracedScalar._refuse)


class _RecordingMethod:
    """A method of a traced array (``x.astype(...)``, ``x.reshape(...)``), recorded when called."""

    __slots__ = ("_array", "_method", "_name")

    def __init__(self, array: TracedArray, name: str, method: Callable[..., Any]) -> None:
        self._array = array
        self._name = name
        self._method = method

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        array = self._array
        tracer = array._tracer
        result = self._method(*_unwrap(args), **(_unwrap(kwargs) if kwargs else kwargs))
        if not tracer.recording:
            return result
        if self._name in ("item", "tolist", "tobytes"):
            tracer.graph_break(f".{self._name}() reads the values of a traced array")
            return result
        mutating = self._name in _MUTATING_METHODS or "out" in kwargs
        if result is None or result is array._real:
            tracer.record(
                "method", None, (array, *args), kwargs, None, effect=True, name=self._name
            )
            return array if result is array._real else None
        return tracer.record("method", None, (array, *args), kwargs, result, effect=mutating,
                             name=self._name)  # fmt: skip


def _binary(symbol: str, function: Callable[[Any, Any], Any], reflected: bool) -> Any:
    def method(self: TracedArray, other: Any) -> Any:
        a, b = (other, self) if reflected else (self, other)
        real = function(_unwrap(a), _unwrap(b))
        if real is NotImplemented or not self._tracer.recording:
            return real
        return self._tracer.record("binop", symbol, (a, b), None, real)

    return method


def _inplace(symbol: str, function: Callable[[Any, Any], Any]) -> Any:
    def method(self: TracedArray, other: Any) -> Any:
        before = self._real
        real = function(before, _unwrap(other))
        tracer = self._tracer
        if not tracer.recording:
            self._real = real
            return self
        if real is before:
            tracer.record("inplace", symbol, (self, other), None, None, effect=True)
            return self
        return tracer.record("call", f"_op.{function.__name__}", (self, other), None, real)

    return method


def _unary(symbol: str, function: Callable[[Any], Any]) -> Any:
    def method(self: TracedArray) -> Any:
        real = function(self._real)
        if not self._tracer.recording:
            return real
        return self._tracer.record("unary", symbol, (self,), None, real)

    return method


for _name, _symbol, _function in (
    ("add", "+", operator.add), ("sub", "-", operator.sub), ("mul", "*", operator.mul),
    ("truediv", "/", operator.truediv), ("floordiv", "//", operator.floordiv),
    ("mod", "%", operator.mod), ("pow", "**", operator.pow), ("matmul", "@", operator.matmul),
    ("and", "&", operator.and_), ("or", "|", operator.or_), ("xor", "^", operator.xor),
    ("lshift", "<<", operator.lshift), ("rshift", ">>", operator.rshift),
):  # fmt: skip
    setattr(TracedArray, f"__{_name}__", _binary(_symbol, _function, False))
    setattr(TracedArray, f"__r{_name}__", _binary(_symbol, _function, True))
    setattr(TracedArray, f"__i{_name}__", _inplace(_symbol, getattr(operator, f"i{_name}")))
for _name, _symbol, _function in (
    ("lt", "<", operator.lt), ("le", "<=", operator.le), ("gt", ">", operator.gt),
    ("ge", ">=", operator.ge), ("eq", "==", operator.eq), ("ne", "!=", operator.ne),
):  # fmt: skip
    setattr(TracedArray, f"__{_name}__", _binary(_symbol, _function, False))
for _name, _symbol, _unary_function in (
    ("neg", "-", operator.neg), ("pos", "+", operator.pos), ("invert", "~", operator.invert),
    ("abs", "abs", operator.abs),
):  # fmt: skip
    setattr(TracedArray, f"__{_name}__", _unary(_symbol, _unary_function))
# __eq__ above would otherwise remove it; mypy sees a method, Python an attribute.
TracedArray.__hash__ = object.__hash__  # type: ignore[method-assign, assignment]


#: Types of argument whose parts may be traced (a TracedScalar stands for a number).
_HOLDERS = frozenset({TracedScalar, tuple, list, dict, slice})


class RecordingNamespace:
    """A backend namespace whose functions record their calls into the capture under way.

    Outside a capture its functions only call the real ones, so one namespace
    (and the kernel table bound to it) serves every capture on its device.
    """

    def __init__(self, real: Any, label: str, plain: Any = None) -> None:
        self.__dict__["_real"] = real
        self.__dict__["_label"] = label
        # For a rule namespace: the plain namespace, so standard names print as `xp.name`.
        self.__dict__["_plain"] = plain

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._real, name)
        if isinstance(value, (types.ModuleType, types.SimpleNamespace)):
            wrapped: Any = RecordingNamespace(value, f"{self._label}.{name}")
        elif callable(value) and not isinstance(value, type):
            plain = self._plain
            if plain is not None and getattr(plain._real, name, None) is value:
                label = f"{plain._label}.{name}"
            else:
                label = f"{self._label}.{name}"
            wrapped = _recording_function(value, label)
            if name == "matrix_transpose":
                wrapped = _transposing(value, wrapped)
            elif name == "reshape":
                wrapped = _noting_layout(wrapped)
        else:
            wrapped = value
        self.__dict__[name] = wrapped
        return wrapped

    def __dir__(self) -> list[str]:
        return dir(self._real)


def _opaque_kernel(kernel: Callable[..., Any], op: str) -> Any:
    """A backend's own kernel (bound), recorded as one call: it may use more than ``xp``."""

    def recording(*args: Any, **kwargs: Any) -> Any:
        result = kernel(*_unwrap(args), **(_unwrap(kwargs) if kwargs else kwargs))
        tracer = _current()
        if tracer is None or not tracer.recording:
            return result
        label = tracer.constant(kernel, f"kernel_{op}_")
        return tracer.record("call", label, args, kwargs, result)

    return recording


def _recording_function(function: Callable[..., Any], label: str) -> Any:
    def recording(*args: Any, **kwargs: Any) -> Any:
        result = function(*_unwrap(args), **(_unwrap(kwargs) if kwargs else kwargs))
        tracer = _current()
        if tracer is None or not tracer.recording:
            return result
        traced = _has_traced(args) or _has_traced(kwargs)
        if not traced and not _is_array(result) and not isinstance(result, (tuple, list)):
            return result  # dtype queries and the like: nothing to replay
        return tracer.record("call", label, args, kwargs, result, effect="out" in kwargs)

    recording.__name__ = getattr(function, "__name__", "function")
    return recording


def _noting_stride_read(original: Callable[..., Any]) -> Any:
    """``Tensor.stride`` that notes the read: the plan guards the inputs' layouts."""

    def stride(self: Any, *args: Any, **kwargs: Any) -> Any:
        tracer = _current()
        if tracer is not None and tracer.recording:
            tracer.layout_read = True
        return original(self, *args, **kwargs)

    stride.__name__ = "stride"
    return stride


def _guarding_requires_grad(original: property) -> property:
    """``Tensor.requires_grad`` that makes a tensor made before the call, read so, an input
    of the plan (``[p for p in params if p.requires_grad]``): the guard of the plan's free
    tensors checks their ``requires_grad``, as it checks the shape of one whose shape was
    read."""
    getter = original.fget
    assert getter is not None

    def requires_grad(tensor: Any) -> bool:
        tracer = _current()
        if tracer is not None and tracer.recording and id(tensor) not in tracer._created:
            tensor._array  # noqa: B018 (read through the tracer's descriptor: guarded)
        return getter(tensor)

    return property(requires_grad, original.fset, doc=original.__doc__)


def _noting_layout(recorded: Callable[..., Any]) -> Any:
    """``reshape`` that notes a reshape that must not copy: whether it gives a view or
    fails depends on the memory layout, so the plan guards the layouts of its inputs."""

    def reshape(*args: Any, **kwargs: Any) -> Any:
        tracer = _current()
        result = recorded(*args, **kwargs)
        if tracer is not None and tracer.recording:
            if kwargs.get("copy") is False:
                tracer.layout_read = True
            elif kwargs.get("copy") is None and args:
                # A view or a copy by the layout: a later write into either side changes
                # the other only where it is a view (see Tracer.record).
                for array in (args[0], result):
                    tracer.reshaped_roots.add(id(_memory_root(_unwrap(array))))
        return result

    reshape.__name__ = "reshape"
    return reshape


def _transposing(function: Callable[..., Any], recorded: Callable[..., Any]) -> Any:
    """``matrix_transpose`` recorded as the array's ``.mT`` where its type has one.

    The standard defines ``x.mT`` as ``matrix_transpose(x)``; the attribute skips a
    Python call at every replay (on NumPy it costs a tenth as much).
    """

    def recording(x: Any) -> Any:
        if type(x) is TracedArray and isinstance(
            getattr(type(x._real), "mT", None), _CLASS_ATTRIBUTES
        ):
            return x._attr("mT")
        return recorded(x)

    recording.__name__ = getattr(function, "__name__", "matrix_transpose")
    return recording


class _RecordingSource:
    """A random source whose draws are calls the plan makes again (fresh numbers each replay)."""

    def __init__(self, tracer: Tracer, source: Any, generator: Any) -> None:
        self._tracer = tracer
        self._source = source
        self._generator = generator

    def get_state(self) -> Any:
        # A replay would not read or restore the stream where the capture did.
        self._tracer.graph_break("saving a generator's state")
        return self._source.get_state()

    def set_state(self, state: Any) -> None:
        self._tracer.graph_break("restoring a generator's state")
        self._source.set_state(state)

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._source, name)
        tracer = self._tracer
        generator = self._generator

        def draw(*args: Any, **kwargs: Any) -> Any:
            result = method(*args, **kwargs)
            if not tracer.recording or not _is_array(result):
                return result
            replayed = tracer.constant(_replayed_draw(generator, name), "draw_")
            return tracer.record("call", replayed, args, kwargs, result, effect=True)

        return draw


def _replayed_draw(generator: Any, name: str) -> Callable[..., Any]:
    """The draw ``name`` as a replay makes it: from the stream the generator has then.

    Seeding replaces a generator's stream (``g.manual_seed``) and the default
    generators themselves (``plugrad.manual_seed``): a replay after it draws as an
    eager call would, never from the stream the capture saw.
    """
    device = generator.device
    if _default_generators.get(device) is generator:

        def draw(*args: Any, **kwargs: Any) -> Any:
            return getattr(_generator_for(device)._source, name)(*args, **kwargs)

    else:

        def draw(*args: Any, **kwargs: Any) -> Any:
            return getattr(generator._source, name)(*args, **kwargs)

    return draw


class _ArrayDescriptor:
    """``Tensor._array`` during a capture."""

    def __get__(self, tensor: Any, owner: Any = None) -> Any:
        if tensor is None:
            return self
        value = _get_array(tensor)
        tracer = _current()
        if type(value) is TracedArray:
            # Code the plan does not record (a call it repeats, or after a graph break)
            # works on real arrays.
            return value if tracer is not None and tracer.recording else value._real
        if tracer is None or not tracer.recording:
            return value
        return tracer.read_tensor(tensor, value)

    def __set__(self, tensor: Any, value: Any) -> None:
        tracer = _current()
        if tracer is None:
            _set_array(tensor, value)
        else:
            tracer.write_array(tensor, value)


#: What uninstall() finds saved for an attribute the class did not have: it is deleted.
_ABSENT = object()


class _TrainingDescriptor:
    """``Module.training`` during a capture: a module whose mode is read is guarded."""

    def __get__(self, module: Any, owner: Any = None) -> Any:
        if module is None:
            return self
        try:
            value = module.__dict__["training"]
        except KeyError:
            raise AttributeError("training") from None
        tracer = _current()
        if tracer is not None:
            tracer.note_module(module)
        return value

    def __set__(self, module: Any, value: Any) -> None:
        tracer = _current()
        if tracer is not None and tracer.recording:
            tracer.set_mode(module, value)
        module.__dict__["training"] = value


class _GradDescriptor:
    """``Tensor._grad`` during a capture."""

    def __get__(self, tensor: Any, owner: Any = None) -> Any:
        if tensor is None:
            return self
        value = _get_grad(tensor)
        tracer = _current()
        if tracer is not None and tracer.recording:
            tracer.read_grad(tensor, value)
        return value

    def __set__(self, tensor: Any, value: Any) -> None:
        tracer = _current()
        if tracer is not None and tracer.recording:
            tracer.write_grad(tensor, value)
        _set_grad(tensor, value)


class _SourceDescriptor:
    """``Generator._source`` during a capture: draws become replayed calls."""

    def __get__(self, generator: Any, owner: Any = None) -> Any:
        if generator is None:
            return self
        source = _SOURCE_SLOT.__get__(generator)
        tracer = _current()
        if tracer is None or not tracer.recording:
            return source
        return _RecordingSource(tracer, source, generator)

    def __set__(self, generator: Any, value: Any) -> None:
        tracer = _current()
        if tracer is not None and tracer.recording:
            # A Generator made in the function (manual_seed is a call each replay repeats):
            # each eager call makes a new one, whose stream starts again; so does each replay.
            restart = tracer.constant(_restart_stream, "restart_")
            seed = None if generator._drawn else generator._seed
            step = Step("text", None, f"{restart}({{0}}, {{1}})", (generator, seed), effect=True)
            tracer.steps.append(step)
            tracer.restarts.append(step)
        _SOURCE_SLOT.__set__(generator, value)


def _restart_stream(generator: Any, seed: int | None) -> None:
    """Give ``generator`` the stream its constructor gave it (a new one for seed None)."""
    device = generator.device
    if seed is None:
        seed = generator._seed = secrets.randbits(63)
    generator._source = device.backend.random_source(seed, device.native)


class _HookDescriptor:
    """``PostAccumulateGradHook.function`` during a capture: calling a hook is a graph break."""

    def __get__(self, hook: Any, owner: Any = None) -> Any:
        if hook is None:
            return self
        tracer = _current()
        if tracer is not None:
            tracer.graph_break("a post-accumulate-grad hook runs Python code on the gradient")
        return _HOOK_SLOT.__get__(hook)

    def __set__(self, hook: Any, value: Any) -> None:
        _HOOK_SLOT.__set__(hook, value)


def _breaking(original: Callable[..., Any], what: str) -> Callable[..., Any]:
    """``original`` made a graph break (the call still happens, eagerly)."""

    def method(*args: Any, **kwargs: Any) -> Any:
        tracer = _current()
        if tracer is not None and tracer.recording:  # a call the plan repeats may do anything
            tracer.graph_break(what)
        return original(*args, **kwargs)

    return method


def _memory_root(array: Any) -> Any:
    """The array whose memory ``array`` views (NumPy's and CuPy's ``base``, PyTorch's
    ``_base``; through the NumPy array an array-api-strict array wraps), or ``array``."""
    while True:
        inner = getattr(array, "_array", None)
        if inner is not None and hasattr(inner, "shape"):
            array = inner
        parent = getattr(array, "base", None)
        if parent is None:
            parent = getattr(array, "_base", None)
        if parent is None or not hasattr(parent, "shape"):
            return array
        array = parent


def _strides(tensors: list[Any]) -> list[Any]:
    arrays = [_get_array(t) for t in tensors]
    return [
        getattr(getattr(a, "_real", a), "strides", None) or getattr(t, "_layout", None)
        for t, a in zip(tensors, arrays)
    ]


def _noting_default_device(original: Callable[..., Any], tracer: Tracer) -> Callable[..., Any]:
    """``registry.resolve_device`` that notes a tensor made on the default device unnamed:
    the plan then guards that device (``use_backend`` around a later call changes it)."""

    def resolve_device(spec: Any) -> Any:
        device = original(spec)
        if spec is None and tracer.recording and tracer is _current():
            tracer.default_device_read = device
        return device

    return resolve_device


def _noting_release(original: Callable[..., Any], tracer: Tracer) -> Callable[..., Any]:
    """``Node._release`` that also notes the node: backward ran through it in this call."""

    def release(node: Any) -> None:
        if tracer is _current():
            tracer.released[id(node)] = node  # kept, so the id stays the node's
        original(node)

    return release


def _replayed_range_check(original: Callable[..., Any]) -> Callable[..., Any]:
    """``nn.functional.any_outside`` made a check that every replay repeats (no graph break)."""

    def any_outside(flag: Tensor, what: str) -> bool:
        tracer = _current()
        if tracer is None or not tracer.recording:
            return original(flag, what)
        return _replayed_flag(tracer, flag._array, what)

    return any_outside


def _replayed_kernel_check(original: Callable[..., Any]) -> Callable[..., Any]:
    """``plugins._rules.any_true`` (a kernel's check of its indices) made a check that every
    replay repeats (no graph break)."""

    def any_true(flag: Any, what: str, error: type[Exception] = IndexOutOfRangeError) -> bool:
        tracer = _current()
        if tracer is None or not tracer.recording:
            return original(flag, what, error)
        # A method's kernel computes on tensors (through the rule namespace), an op's on arrays.
        found = flag._array if isinstance(flag, Tensor) else flag
        return _replayed_flag(tracer, found, what, error)

    return any_true


def _replayed_flag(
    tracer: Tracer, found: Any, what: str, kind: type[Exception] = IndexOutOfRangeError
) -> bool:
    """Whether the 0-d boolean ``found`` is true now; if it is a traced array, the plan
    checks it again at every replay and raises ``kind`` saying ``what``."""
    if not isinstance(found, TracedArray):
        return bool(found)
    if bool(found._real):
        return True  # the caller raises now, during the capture
    error = functools.partial(
        kind,
        f"{what} in a call of a compiled function; call the function eagerly to see which values",
    )
    raise_it = tracer.constant(error, "range_error_")
    tracer.steps.append(
        Step("text", None, f"if {{0}}: raise {raise_it}()", (found._ref,), effect=True)
    )
    return False


def _copied_of_real_arrays(device: Any, x: Tensor, out: Tensor) -> bool:
    """``versions.made_a_copy`` during a capture: whether a view op copied, asked of the
    real arrays (the plan keeps the answer; its guards keep the arguments' layouts)."""
    array, result = x._array, out._array
    real = array._real if isinstance(array, TracedArray) else array
    real_result = result._real if isinstance(result, TracedArray) else result
    return not device.backend.may_share_memory(real, real_result)


def _host_call(
    original: Callable[..., Any], what: str, changes_grads: bool = True
) -> Callable[..., Any]:
    """``original`` (a method of a stateful object) made a call the plan repeats at every replay.

    ``changes_grads=False`` for calls that cannot set a ``.grad`` (seeding a
    generator): what the plan knew of each ``.grad`` holds after them.
    """

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        tracer = _current()
        if tracer is None or not tracer.recording:
            return original(self, *args, **kwargs)
        if _has_traced(args) or _has_traced(kwargs):
            tracer.graph_break(f"{what} received a traced array")
            return original(self, *args, **kwargs)
        if _holds_tensor(args) or _holds_tensor(kwargs):
            # A replay would hand it the capture's tensor (scheduler.step(loss)), not its own.
            tracer.graph_break(f"{what} received a tensor")
            return original(self, *args, **kwargs)
        if any(
            _made_to_run_later(value) and id(value) not in tracer.bound
            for value in (*args, *kwargs.values())
        ):
            # optimizer.step(closure) of a closure defined in the call: a replay would call
            # the capture's, which reads the capture's tensors (its x, not the replay's).
            tracer.graph_break(
                f"{what} received a function made in the call (a closure, a lambda, a "
                "functools.partial), which a replay would call as the capture made it; "
                "define it outside the compiled function"
            )
            return original(self, *args, **kwargs)
        bound = tracer.constant(types.MethodType(original, self))
        slots = [f"{{{i}}}" for i in range(len(args))]
        slots += [f"{name}={{{len(args) + i}}}" for i, name in enumerate(kwargs)]
        # Its result is the replay's own (a closure's loss, say): named, never a constant.
        out = tracer.new_name("h")
        tracer.steps.append(
            Step(
                "text", out, f"{bound}({', '.join(slots)})", (*args, *kwargs.values()), effect=True
            )
        )
        tracer.host_calls += 1
        tracer.recording = False
        try:
            result = original(self, *args, **kwargs)
        finally:
            tracer.recording = tracer.broken is None
            tracer.after_host_call(changes_grads)
        tracer.note_host_result(out, result)
        return result

    return method


def _host_function(
    original: Callable[..., Any], what: str, changes_grads: bool = True
) -> Callable[..., Any]:
    """A module-level function made a call the plan repeats (see :func:`_host_call`)."""

    def unbound(_owner: Any, *args: Any, **kwargs: Any) -> Any:
        return original(*args, **kwargs)

    host = _host_call(unbound, what, changes_grads)

    def function(*args: Any, **kwargs: Any) -> Any:
        return host(_random, *args, **kwargs)

    functools.update_wrapper(function, original)
    return function


#: id(device) -> (its xp, rule_xp and kernels, then the recording namespaces and kernel table
#: made for them), reused by every capture while the device's tables stay the same.
_RECORDING_TABLES: dict[int, tuple[Any, ...]] = {}


def _recording_tables(device: Any, label: str) -> tuple[Any, Any, dict[str, Any]]:
    """The recording namespaces of ``device`` (plain and for rules) and its kernel table.

    Generic kernels are written against ``xp`` alone, so their namespace calls are
    recorded one by one; a backend's own kernel may call its library directly
    (NumPy's ``add.at``, stride tricks), so the plan calls it whole.
    """
    cached = _RECORDING_TABLES.get(id(device))
    if (
        cached is not None
        and cached[0] is device.xp
        and cached[1] is device.rule_xp
        and cached[2] is device.kernels
        and cached[3]._label == label
    ):
        return cached[3], cached[4], cached[5]
    plain = RecordingNamespace(device.xp, label)
    rule = RecordingNamespace(device.rule_xp, "r" + label, plain)
    backend = device.backend.name
    sources = _registry._state.kernel_sources.get(backend, {})
    table = dict(device.kernels)
    for name, found in sources.items():
        if not found or name not in table:
            continue
        if found[0].kind == "generic":
            table[name] = bind_kernel(found[0].function, plain, name, backend)
        else:
            table[name] = _opaque_kernel(table[name], name)
    real_rule = device.rule_xp.__dict__ if hasattr(device.rule_xp, "__dict__") else {}
    for name, kernel in device.kernels.items():
        # A rule calling plugrad's own op (``xp.softmax`` in cross_entropy's rule) records
        # the op's namespace calls, so the plan can share them with the forward's.
        if real_rule.get(name) is kernel and kernel is not None and name in table:
            whole = _recording_function(kernel, f"r{label}.{name}")
            rule.__dict__[name] = _kernel_in_a_rule(table[name], whole)
    _RECORDING_TABLES[id(device)] = (device.xp, device.rule_xp, device.kernels, plain, rule, table)
    return plain, rule, table


def _kernel_in_a_rule(recorded: Callable[..., Any], whole: Callable[..., Any]) -> Any:
    """An op's kernel as a rule calls it: its namespace calls recorded one by one, or,
    for a kernel that reaches past the namespace (JAX's ``.at[]`` in ``scatter_add``),
    the kernel recorded as one call."""

    def kernel(*args: Any, **kwargs: Any) -> Any:
        tracer = _current()
        if tracer is None or not tracer.recording:
            return whole(*args, **kwargs)
        mark, broken = len(tracer.steps), tracer.broken
        try:
            result = recorded(*args, **kwargs)
        except Exception:
            if tracer.broken is broken:
                raise
        else:
            if tracer.broken is broken:
                return result
        # The kernel read values of traced arrays: forget what it recorded, call it whole.
        del tracer.steps[mark:]
        tracer.broken, tracer.recording = broken, True
        return whole(*args, **kwargs)

    return kernel


def _optimizer_step(host_step: Callable[..., Any], tracer: Tracer) -> Callable[..., Any]:
    """``Optimizer.step`` during a capture: Python part repeated, array part recorded.

    An optimizer that splits its step (``_prepare_group``/``_update_group``)
    runs its Python part as a call the plan repeats, whose numbers are plan
    values, then its array part, recorded. The replay checks the optimizer's
    key (parameters, state tensors, options); a step that made state (the
    first one) gives a plan that is not kept: the next call captures again.
    """
    from ..optim.hooks import has_step_hooks
    from ..optim.optimizer import Optimizer, plain_options

    def step(self: Any, closure: Any = None) -> Any:
        if (
            tracer is not _current()
            or not tracer.recording
            or closure is not None
            or type(self)._step_group is not Optimizer._step_group
            or has_step_hooks(self)  # (Python around the step: the replay repeats it all)
        ):
            return host_step(self, closure)
        before = self._compile_key()
        tracer.recording = False
        try:
            numbers = self._advance()
            # Options given as tensors read as numbers, not traced (the numbers the update
            # reads afresh come from _advance at every replay).
            groups = [plain_options(group) for group in self.param_groups]
        finally:
            tracer.recording = tracer.broken is None
        if not tracer.recording:
            for group, group_numbers in zip(groups, numbers):
                self._update_group(group, group_numbers)
            return None
        advance = tracer.constant(self._advance, "advance_")
        values = tracer.new_name("h")
        tracer.steps.append(Step("text", values, advance + "()", effect=True))
        traced = []
        for g, group_numbers in enumerate(numbers):
            row = []
            for k, number in enumerate(group_numbers):
                name = tracer.new_name("s")
                tracer.steps.append(Step("text", name, f"{{0}}[{g}][{k}]", (Ref(values),)))
                row.append(TracedScalar(number, Ref(name)))
            traced.append(row)
        # The parameters' views follow as in an eager step (where views are copies); the
        # refresh is recorded too: the plan may read them after the step.
        followers = self._views_to_follow()
        for group, group_numbers in zip(groups, traced):
            self._update_group(group, group_numbers)
        if followers:
            _views.follow_raw_writes(followers)
        after = self._compile_key()
        if after != before:
            tracer.discard = f"{type(self).__name__}.step() made its state in this call"
        else:
            key = tracer.constant(after, "optimizer_key_")
            me = tracer.constant(self, "optimizer_")
            full = f"{me}._compile_key() == {key}"
            # The key costs more to build than its parts cost to check: checked whole on a miss.
            quick = self._compile_key_check(me, tracer.constant)
            tracer.guards.append(full if quick is None else f"({quick} or {full})")
        return None

    return step


def _scaler_scale(host_scale: Callable[..., Any], tracer: Tracer) -> Callable[..., Any]:
    """``GradScaler.scale`` during a capture: the plan multiplies by the scale it found, so
    it guards that the scaler still has it (a scaler that backed off or grew, or was turned
    off, captures again: a replay scaled by the old one while unscale_ divided by the new)."""

    def scale(self: Any, outputs: Any) -> Any:
        if tracer is _current() and tracer.recording:
            me = tracer.constant(self, "scaler_")
            if self._enabled:
                found = tracer.constant(self._scale, "scale_")
                guard = f"({me}._enabled is True and {me}._scale == {found})"
            else:
                guard = f"{me}._enabled is False"
            if guard not in tracer.guards:
                tracer.guards.append(guard)
        return host_scale(self, outputs)

    return scale


class Tracer:
    """The state of one capture: the steps so far and what the plan reads and writes."""

    def __init__(self, leaves: list[Tensor], fullgraph: bool) -> None:
        #: The thread that captures (see ``_current``).
        self.thread = threading.get_ident()
        self.steps: list[Step] = []
        #: The memory layouts of the arguments' and the free tensors' arrays, as found.
        self._leaf_strides = _strides(leaves)
        self._free_strides: list[Any] = []
        self.fullgraph = fullgraph
        self.recording = True
        #: (reason, where) of the first graph break.
        self.broken: tuple[str, str] | None = None
        #: Why the plan of this capture must not be kept (the next call captures again).
        self.discard: str | None = None
        self.host_calls = 0
        #: Nodes a backward pass without retain_graph ran through during the capture.
        self.released: dict[int, Any] = {}
        self._counter = 0
        self.constants: dict[str, Any] = {}
        self._constant_names: dict[int, str] = {}
        self.namespaces: dict[str, Any] = {}
        #: Plan value -> its array, for values the same at every replay.
        self.folded: dict[str, Any] = {}
        #: Plan value -> (shape, dtype) at capture.
        self.meta: dict[str, tuple[tuple[int, ...], Any]] = {}
        self.strides: dict[str, Any] = {}
        #: id(tensor) -> its expression in the replayed code, for tensors made before the call.
        self.sources: dict[int, str] = {}
        self.free: list[Tensor] = []
        self.guards: list[str] = []
        self._grad_guards: list[str] = []
        #: The .grads read at the start, distinct at capture: a replay adds into each one,
        #: so it holds only while none is another's (b.grad = a.grad) or shares its memory.
        self._distinct_grads: list[str] = []
        #: The nn.Modules the function called: a replay checks each one's train/eval mode.
        self.modules: dict[int, Any] = {}
        #: The default device, where the function made a tensor on it without naming it.
        self.default_device_read: Any = None
        #: The steps that restart the stream of a Generator made in the call.
        self.restarts: list[Step] = []
        #: Whether a view was made or refused by the memory layout (see _noting_layout).
        self.layout_read = False
        #: The memory (ids of the root arrays) on either side of a reshape that is a view or
        #: a copy by the layout: a write into it changes the other side only where it is a
        #: view (x.reshape(-1).add_(1) changes x or not), so it reads the layout.
        self.reshaped_roots: set[int] = set()
        #: id -> the mode of each module whose mode was read before the call set it.
        self._modes_at_start: dict[int, Any] = {}
        #: id(module) -> its settings as its code found them (see _note_settings).
        self._settings_read: dict[int, dict[str, Any]] = {}
        #: ids of the modules whose mode the call set (the replay sets it as it did).
        self._modes_set: set[int] = set()
        #: id(module) -> its parameters, buffers and submodules when first called.
        self._module_members: dict[int, Any] = {}
        #: Tensors this capture made (kept alive so their ids stay theirs until it ends).
        self._created: dict[int, Tensor] = {}
        self._kept: list[Tensor] = []
        #: Tensors made while nothing was recorded: every replay makes them again.
        self._made_unrecorded: set[int] = set()
        #: Tensors whose _array slot holds a TracedArray, to restore at the end.
        self._traced_tensors: dict[int, Tensor] = {}
        #: Tensors made before the call whose .grad this capture has seen or written.
        self._grad_known: set[int] = set()
        #: The tensors the call made and stored as a ``.grad`` (which every replay stores).
        self._stored_grads: set[int] = set()
        #: Tensors the call made that a backward gave a .grad: id -> where (file:line).
        self._made_given_grads: dict[int, str] = {}
        #: Whether a call the plan repeats that may set a ``.grad`` ran (see ``read_grad``).
        self._grads_after_host_call = False
        #: id(tensor) -> (requires_grad, edge) when first read, to notice changes.
        self._snapshots: dict[int, tuple[Any, Any]] = {}
        #: id(tensor) -> the name of the Tensor the replay makes for it.
        self._materialized: dict[int, str] = {}
        #: id(tensor) -> (its expression, the tensor), for tensors a repeated call returned.
        self._host_results: dict[int, tuple[str, Tensor]] = {}
        #: ids of the results whose graph the plan's own backward continues (see
        #: .differentiable): made by a replay as tensors that require grad.
        self.differentiable: set[int] = set()
        #: id(node) -> node, for the nodes of the arguments that carry a graph made before
        #: the call: the plan's graph ends at them (see ``crosses_boundary``).
        self.boundary: dict[int, Any] = {}
        for index, tensor in enumerate(leaves):
            self.sources.setdefault(id(tensor), f"L[{index}]")
            if tensor._edge is not None:
                node = split_edge(tensor._edge)[0]
                self.boundary[id(node)] = node
        self._leaves = leaves
        #: ids of what the function's global names, closure cells and defaults held when
        #: the call began (a plan misses when they are rebound): not made in the call.
        self.bound: set[int] = set()
        #: Modules the function's names reach (see ``plan``), called or not.
        self.reached_modules: list[Any] = []
        self._saved: list[tuple[Any, str, Any]] = []
        #: Source of a free tensor read before any host call -> what the replay checks of it
        #: (see ``TENSOR_META``).
        self._free_meta: dict[str, tuple[Any, ...]] = {}
        #: The same sources -> the array read (for its layout, see ``codegen.meta_guard``).
        self._free_layouts: dict[str, Any] = {}

    # -- values and steps --------------------------------------------------------------------

    def new_name(self, prefix: str = "v") -> str:
        name = f"{prefix}{self._counter}"
        self._counter += 1
        return name

    def constant(self, value: Any, hint: str = "c") -> str:
        """The name under which the replayed code reaches ``value`` (``hint`` starts it)."""
        name = self._constant_names.get(id(value))
        if name is None or self.constants[name] is not value:
            name = f"{hint}{len(self.constants)}"
            self.constants[name] = value
            self._constant_names[id(value)] = name
        return name

    def record(
        self,
        kind: str,
        target: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any] | None,
        result: Any,
        effect: bool = False,
        name: str | None = None,
    ) -> Any:
        """Append a step; return the TracedArray(s) standing for ``result``."""
        if kind == "method":
            target = name
        if effect and self.folded:
            written = (
                kwargs.get("out")
                if kwargs and "out" in kwargs
                else (args[0] if kind in ("setitem", "inplace", "method") and args else None)
            )
            if type(written) is TracedArray:
                self._unfold_written(written._real)
        if effect and self.reshaped_roots and kind in ("setitem", "inplace", "method") and args:
            target_array = args[0]
            if type(target_array) is TracedArray:
                if id(_memory_root(target_array._real)) in self.reshaped_roots:
                    self.layout_read = True
        step_args = _as_step_arg(args if type(args) is tuple else tuple(args))
        # _as_step_arg makes a new dict of a dict (the record never shares the caller's)
        step_kwargs = (
            _as_step_arg(kwargs if type(kwargs) is dict else dict(kwargs)) if kwargs else {}
        )
        if result is None:
            self.steps.append(Step(kind, None, target, step_args, step_kwargs, effect=effect))
            return None
        # Asked at every step; most are calls of a function already known to keep shapes.
        if kind == "call":
            dynamic = not (type(target) is str and target in _STATIC_CALLS) and (
                _has_dynamic_shape(kind, target, args, kwargs)
            )
        else:
            dynamic = kind == "getitem" and _has_dynamic_shape(kind, target, args, kwargs)
        if isinstance(result, (tuple, list)):
            out = self.new_name()
            self.steps.append(Step(kind, out, target, step_args, step_kwargs, effect=effect))
            items = []
            for index, item in enumerate(result):
                if _is_array(item):
                    items.append(self.record("getitem", None, (Ref(out), index), None, item))
                    if dynamic:
                        self._check_shape(items[-1])
                else:
                    items.append(item)
            if hasattr(result, "_fields"):  # a named tuple (svd, qr, slogdet...)
                return type(result)(*items)
            return type(result)(items)
        if not _is_array(result):
            self.graph_break(f"{target}() returned a Python value computed from traced arrays")
            return result
        out = f"v{self._counter}"  # self.new_name(), without the call
        self._counter += 1
        step = Step(kind, out, target, step_args, step_kwargs, effect=effect)
        self.steps.append(step)
        self.meta[out] = (tuple(result.shape), result.dtype)
        self.strides[out] = getattr(result, "strides", None)
        if not effect and self._is_constant(step):
            self.folded[out] = result
        traced = TracedArray(result, Ref(out), self)
        if dynamic:
            self._check_shape(traced)
        return traced

    def _check_shape(self, traced: TracedArray) -> None:
        """After an op whose output shape depends on values: the replay checks that shape.

        Everything after it (shapes the engine and Python read, literals in
        the plan) assumed the captured shape. Before any effect that a second
        run would repeat, a different shape makes the plan not apply (a new
        capture follows); after one, it is an error rather than a wrong result.
        """
        shape = tuple(traced._real.shape)
        if any(_repeats_badly(step) for step in self.steps):
            otherwise = (
                f"raise CompileError('a compiled function got an output shape from {{0}} other "
                f"than the {shape} it was captured with, after updating state; compile the part "
                "with data-dependent shapes separately, or do not compile it')"
            )
        else:
            otherwise = "return MISS"
        self.steps.append(
            Step("text", None, f"if {{0}}.shape != {shape!r}: " + otherwise, (traced._ref,),
                 effect=True)
        )  # fmt: skip

    def _unfold_written(self, real: Any) -> None:
        """An array was written in place: neither it nor a view sharing its memory holds a
        value the same at every replay any more (``zeros(3).add_(x)`` was folded to the
        first call's values)."""
        root = _memory_root(real)
        for name, value in list(self.folded.items()):
            if value is real or _memory_root(value) is root:
                del self.folded[name]

    def _is_constant(self, step: Step) -> bool:
        """Whether a step's value is the same at every replay (a candidate for folding).

        So it is when every plan value it reads is itself constant, or when it
        reads only the shape and dtype of its first argument (``ones_like``),
        which the guards fix.
        """
        kind, target = step.kind, step.target
        if kind not in _FOLDABLE_KINDS:
            return False
        folded = self.folded
        if kind == "call" and type(target) is str and target.rpartition(".")[2] in _SHAPE_ONLY:
            return all(name in folded for name in refs_in((step.args[1:], step.kwargs)))
        names = step.uses()  # kept by the step: the passes ask again
        if not names:
            # A namespace function of literals alone (``arange(10)``); random draws are
            # calls of their source, not of the namespace, and are never folded.
            return (
                kind == "call"
                and type(target) is str
                and target.partition(".")[0] in (self.namespaces)
            )
        for name in names:  # asked at every step: a loop, without a generator
            if name not in folded:
                return False
        return True

    def traced_constant(self, real: Any) -> TracedArray:
        """An array that came from outside the namespace (host data): a constant of the plan."""
        out = self.new_name()
        self.steps.append(Step("text", out, self.constant(real)))
        self.meta[out] = (tuple(real.shape), real.dtype)
        self.strides[out] = getattr(real, "strides", None)
        return TracedArray(real, Ref(out), self)

    # -- graph breaks ------------------------------------------------------------------------

    def graph_break(self, reason: str, where: str | None = None) -> None:
        """Stop recording: ``reason`` (at ``where``, else the user's line now) makes the
        call run eagerly, or raises under ``fullgraph``."""
        if self.broken is None:
            self.broken = (reason, where or _user_location())
            self.recording = False
        if self.fullgraph:
            # Every time, not only the first: code that caught the first (NumPy retrying a
            # conversion, the function's own try) must not go on with a made-up value.
            first, where = self.broken
            raise GraphBreakError(
                f"plugrad.compile(fullgraph=True) cannot capture this function: {first} "
                f"(at {where}). Remove that from the compiled function, or compile with "
                "fullgraph=False to run such calls eagerly."
            )

    # -- tensors -----------------------------------------------------------------------------

    def source_of(self, tensor: Tensor) -> str:
        """The expression for a tensor made before the call; registers it as free if new."""
        source = self.sources.get(id(tensor))
        if source is None:
            source = f"F[{len(self.free)}]"
            self.free.append(tensor)
            if is_uninitialized(tensor):
                # Its shape comes later in this call: the next call captures the step.
                self.discard = "a lazy layer's parameters got their shapes in this call"
                self._free_strides.append(None)
            else:
                self._free_strides.extend(_strides([tensor]))
            self.sources[id(tensor)] = source
        return source

    def read_tensor(self, tensor: Tensor, real: Any) -> TracedArray:
        """The first read of a tensor's array that is not traced: an input of the plan."""
        key = id(tensor)
        made_in_this_call = key in self._created
        if made_in_this_call:
            # Made by code the plan calls again (optimizer state, say): it lives on, so it is
            # read like any tensor made before the call.
            self._kept.append(self._created.pop(key))
        # An argument's graph may lead on from the plan's (see ``crosses_boundary``).
        argument = not made_in_this_call and self.sources.get(key, "").startswith("L[")
        if tensor._edge is not None and not argument and _state_enabled():
            if key in self._host_results:
                self.graph_break(
                    "the result of a call each replay repeats (an optimizer step's closure, "
                    "say) is used with its autograd history; return it as it is, and use it "
                    "outside the compiled function"
                )
            else:
                self.graph_break(
                    "a tensor with autograd history made outside the compiled function is "
                    "used inside it (pass it as an argument, compute it inside, or use it "
                    "detached)"
                )
            return real
        source = self.source_of(tensor)
        # A replay checks, before it runs, what it reads of a tensor that existed before
        # the call (a parameter read after a scheduler's step too): one a repeated call
        # made cannot be checked then.
        if (self.host_calls == 0 or not made_in_this_call) and not source.startswith("L["):
            self._free_layouts.setdefault(source, real)
            self._free_meta.setdefault(
                source,
                (tuple(real.shape), real.dtype, tensor._device, tensor._requires_grad),
            )
        self._snapshots.setdefault(key, (tensor._requires_grad, tensor._edge))
        out = self.new_name()
        self.steps.append(Step("text", out, f"{source}._array"))
        self.meta[out] = (tuple(real.shape), real.dtype)
        self.strides[out] = getattr(real, "strides", None)
        traced = TracedArray(real, Ref(out), self)
        _set_array(tensor, traced)
        self._traced_tensors[key] = tensor
        return traced

    def write_array(self, tensor: Tensor, value: Any) -> None:
        key = id(tensor)
        try:
            previous = _get_array(tensor)
        except AttributeError:
            # A tensor being made (its first write).
            self._created[key] = tensor
            if not self.recording:  # by a call every replay repeats (an L-BFGS step)
                self._made_unrecorded.add(key)
            previous = None
        if type(value) is not TracedArray:
            if not self.recording:
                _set_array(tensor, value)
                return
            # Host data (a Python list, a NumPy array of the caller's): a constant of the plan.
            value = self.traced_constant(value)
        if self.recording and value is not previous:
            if key not in self._created:
                source = self.source_of(tensor)
                self.steps.append(
                    Step("text", None, source + "._array = {0}", (value._ref,), effect=True)
                )
            elif key in self._materialized:
                # A tensor made in the call and already made by the replay too (a .grad
                # stored by backward), now given a new array (w.grad.mul_(x) of a read-only
                # gradient): the replay's tensor is given it as well.
                twin = Ref(self._materialized[key])
                self.steps.append(
                    Step("text", None, "{0}._array = {1}", (twin, value._ref), effect=True)
                )
        _set_array(tensor, value)
        self._traced_tensors[key] = tensor

    def read_grad(self, tensor: Tensor, value: Any) -> None:
        key = id(tensor)
        if key in self._created or key in self._grad_known:
            return
        self._grad_known.add(key)
        source = self.source_of(tensor)
        if value is None:
            condition = f"{source}._grad is None"
        else:
            known = self.sources.get(id(value))
            if known is None:
                condition = f"{source}._grad is not None"
                self.sources[id(value)] = f"{source}._grad"
                if not self._grads_after_host_call:
                    self._distinct_grads.append(f"{source}._grad")
            else:  # an argument, or another tensor's .grad: the plan reads it by that name
                condition = f"{source}._grad is {known}"
        if not self._grads_after_host_call:
            self._grad_guards.append(condition)
            return
        # Read after a call the plan repeats, which may have set it: a guard at the start
        # would check the state before that call (and could contradict one made before it).
        otherwise = (
            "raise CompileError('a call a compiled function repeats (an optimizer step) left "
            f"{source}.grad otherwise than at capture, after state was updated; do not "
            "compile that part')"
            if any(_repeats_badly(step) for step in self.steps)
            else "return MISS"
        )
        self.steps.append(Step("text", None, f"if not ({condition}): {otherwise}", effect=True))

    def write_grad(self, tensor: Tensor, value: Any) -> None:
        key = id(tensor)
        if key in self._created:
            if value is not None:
                # (x.detach().requires_grad_() in the function): see check_grads_handed_out
                self._made_given_grads[key] = _user_location()
            return
        self._grad_known.add(key)
        source = self.source_of(tensor)
        if value is None:
            self.steps.append(Step("text", None, source + "._grad = None", effect=True))
        else:
            self._stored_grads.add(id(value))
            self.steps.append(
                Step("text", None, source + "._grad = {0}", (self.tensor_ref(value),), effect=True)
            )

    def note_host_result(self, expression: str, value: Any) -> None:
        """The tensors in what a call the plan repeats returned: each replay's come from
        ``expression`` (``h3``, ``h3[0]``...), never from the capture's."""
        if isinstance(value, Tensor):
            self._host_results[id(value)] = (expression, value)  # kept: the id stays its own
            self.sources[id(value)] = expression
        elif type(value) in (tuple, list):
            for index, item in enumerate(value):
                self.note_host_result(f"{expression}[{index}]", item)
        elif type(value) is dict:
            for key, item in value.items():
                self.note_host_result(f"{expression}[{key!r}]", item)

    def tensor_ref(self, tensor: Tensor) -> Any:
        """What stands for ``tensor`` in a step: its source, or a Tensor the replay makes."""
        key = id(tensor)
        host = self._host_results.get(key)
        if host is not None:
            return Name(host[0])
        if key not in self._created:
            return Name(self.source_of(tensor))
        name = self._materialized.get(key)
        if name is None:
            requires_grad = tensor._requires_grad
            edge = "None"
            if tensor._edge is not None and self._graph_consumed(tensor._edge):
                # A backward pass in the function used (and freed) this graph: the replay's
                # result requires grad as the eager one does, its grad_fn a spent node.
                node = tensor._edge[0] if type(tensor._edge) is tuple else tensor._edge
                edge = self.constant(_SpentNode(node.name(), tensor._device), "spent_")
            elif tensor._edge is not None and key not in self.differentiable:
                self.graph_break(
                    "a tensor with autograd history outlives the call (kept as a .grad made "
                    "with create_graph=True, or returned where a plan does not carry the "
                    "backward of its result: in checking mode, with device_graph=True, on a "
                    "lazy backend); a replayed plan records no graph"
                )
                return None
            array = _get_array(tensor)
            if type(array) is not TracedArray:
                array = self.traced_constant(array)
            name = self.new_name("t")
            self.steps.append(
                Step(
                    "text",
                    name,
                    "_wrap({0}, " + self.constant(tensor._device) + f", {requires_grad}, {edge})",
                    (array._ref,),
                )
            )
            self._materialized[key] = name
            self._share_memory_as_captured(tensor, name)
        return Ref(name)

    def _share_memory_as_captured(self, tensor: Tensor, name: str) -> None:
        """Where the captured ``tensor`` shares memory with an input, a free tensor or
        another result (a view of it), its replayed twin shares that tensor's version
        counter, so an in-place change of either is seen by autograd's checks."""
        counter = tensor._counter
        if counter is None or len(counter) < 2:
            return
        own = next((entry for entry in counter[1:] if entry[0]() is tensor), None)
        made_from = own[1]() if own is not None and own[1] is not None else None
        if (
            own is not None
            and made_from is not None
            and made_from is not tensor
            and own[2] is not DETACHED
            and own[2] is not ALIAS
        ):
            # The tensor it was made from, made by the replay too where the call made it (the
            # x.T of a returned x.T[0]): views follow their base through that chain where
            # views are copies, and a view of x under no key could not follow x.
            base: Any = None
            if id(made_from) in self.sources and id(made_from) not in self._created:
                base = Name(self.sources[id(made_from)])
            elif id(made_from) in self._created and made_from._edge is None:
                base = self.tensor_ref(made_from)
            if base is not None:
                alias = Step("text", None, "{0}._add_alias({1}, {2})", (base, Ref(name), own[2]))
                alias.effect = True
                self.steps.append(alias)
                return
        for member_ref, _, _ in counter[1:]:
            member = member_ref()
            if member is None or member is tensor:
                continue
            other = self._materialized.get(id(member))
            if other is not None:
                ref: Any = Ref(other)
            elif id(member) in self.sources and id(member) not in self._created:
                ref = Name(self.sources[id(member)])
            else:
                continue
            key = None
            if own is not None and (own[2] is DETACHED or (own[1] and own[1]() is member)):
                key = own[2]  # how the tensor was made from that one, where known
            self.steps.append(
                Step("text", None, "{0}._add_alias({1}, {2})", (ref, Ref(name), key), effect=True)
            )
            return

    def bump_version(self, tensor: Tensor) -> None:
        if not self.recording:
            return
        if id(tensor) not in self._created:
            source = self.source_of(tensor)
            self.steps.append(Step("text", None, source + "._bump_version()", effect=True))
            return
        # Made in this call, but maybe a view of a tensor made before it, whose counter it
        # shares: a replay makes no view, so it counts the change on that tensor itself.
        counter = tensor._counter
        for member_ref, _, _ in counter[1:] if counter is not None else ():
            member = member_ref()
            if member is None or id(member) not in self.sources or id(member) in self._created:
                continue
            source = self.sources[id(member)]
            self.steps.append(Step("text", None, source + "._bump_version()", effect=True))
            return

    def after_host_call(self, changes_grads: bool = True) -> None:
        """Forget what a call the plan repeats may have changed: later reads read afresh."""
        for key, tensor in list(self._traced_tensors.items()):
            if key not in self._created:
                value = _get_array(tensor)
                if type(value) is not TracedArray:
                    del self._traced_tensors[key]
        if changes_grads:
            self._grad_known.clear()
            self._grads_after_host_call = True

    # -- the end -----------------------------------------------------------------------------

    def output(self, value: Any) -> str:
        """The expression that rebuilds ``value`` (the function's result) at replay."""
        kind = type(value)
        if isinstance(value, Tensor):
            if kind is not Tensor and id(value) in self._created:
                # (a replay makes plain Tensors)
                self.graph_break(
                    f"the function returns a {kind.__name__} it made (a Tensor subclass, such "
                    "as an nn.Parameter), which a replay would hand out as a plain Tensor; "
                    "make it outside the function, or return a Tensor"
                )
                return "None"
            ref = self.tensor_ref(value)
            return "None" if ref is None else ref.name
        if id(value) in self.bound and not _holds_tensors(value, self._made_anew):
            # State made before the call (a global dict, self.history): eager hands out that
            # object itself, as it is then.
            return self.constant(value)
        if kind in (tuple, list):
            items = [self.output(v) for v in value]
            if kind is tuple:
                return "(" + "".join(item + ", " for item in items) + ")"
            return "[" + ", ".join(items) + "]"
        if isinstance(value, tuple) and hasattr(kind, "_fields"):
            # A named tuple (max(x, dim).values, a user's): made again with this replay's items.
            fields = ", ".join(self.output(v) for v in value)
            return f"{self.constant(kind, 'result_type_')}({fields})"
        if (kind is dict or kind is collections.OrderedDict) and any(
            isinstance(k, Tensor) for k in value
        ):
            self.graph_break(
                "the function returns a dict with a tensor as a key, which a replay would take "
                "from the capture; key it by something else (a string, an int)"
            )
            return "None"
        if kind is dict:
            return "{" + ", ".join(
                f"{self._literal_output(k)}: {self.output(v)}" for k, v in value.items()
            ) + "}"  # fmt: skip
        if kind is collections.OrderedDict:
            pairs = "".join(
                f"({self._literal_output(k)}, {self.output(v)}), " for k, v in value.items()
            )
            return f"{self.constant(kind, 'result_type_')}(({pairs}))"
        if type(value) is TracedArray or _is_array(value):
            self.graph_break("the function returns a raw array, not a Tensor")
            return "None"
        if _holds_tensors(value, self._made_anew):
            # A container of another kind (a dataclass, ...) would be the capture's own object,
            # holding the capture's tensors, at every replay.
            self.graph_break(
                f"the function returns a {kind.__name__} holding tensors; return them in a "
                "tuple, list, dict or named tuple"
            )
            return "None"
        if _made_to_run_later(value):
            # Made by the call to compute when used (x * i for i in ...), from the capture's
            # tensors: a replay would hand out that same object again.
            self.graph_break(
                f"the function returns a {kind.__name__}, which computes when it is used, "
                "not in the call; return the tensors themselves (a list or tuple of them)"
            )
            return "None"
        if kind is set:  # made by the call: each replay hands out a set of its own
            return f"set({self.constant(frozenset(value))})"
        return self._literal_output(value)

    def _literal_output(self, value: Any) -> str:
        """A value of the result that holds no tensor: as a literal, or a constant."""
        kind = type(value)
        if value is None or kind in (bool, int, str):
            return repr(value)
        if kind is float and math.isfinite(value):
            return repr(value)  # -0.0 keeps its sign
        return self.constant(value)

    def check_grads_handed_out(self) -> None:
        """After the result is known: a tensor the call made, gave a ``.grad`` and hands out
        (``x_adv = x.detach().requires_grad_()``, its backward, ``return x_adv``) is a graph
        break. Each replay makes it anew, without that ``.grad``; a ``.grad`` itself handed
        out (``return x_adv.grad``) is replayed."""
        for key, where in self._made_given_grads.items():
            if key in self._materialized:
                self.graph_break(
                    f"it returns a tensor (shape {self._created[key].shape}) that the call "
                    "made and a backward gave a .grad, which a replay would not give it",
                    where,
                )

    def _made_anew(self, tensor: Tensor) -> bool:
        """Whether a replay has another tensor where the capture had ``tensor``: one the
        call made, or an argument. (Tensors made before the call are read as they are.)"""
        return id(tensor) in self._created or self.sources.get(id(tensor), "").startswith("L[")

    def made_and_handed_out(self) -> list[Tensor]:
        """The tensors the call made that the replay makes too to hand them out (its
        results, a returned view's base), not to store them as a ``.grad``: where the
        program's state holds one as well, that is state the plan cannot replay."""
        grads, created = self._stored_grads, self._created
        return [created[key] for key in self._materialized if key in created and key not in grads]

    def check_kept_tensors(self, result: Any = None, scratch: tuple[Any, ...] = ()) -> None:
        """After the call: a tensor it made and does not hand out that something still
        holds (state made at the first call: ``if "m" not in state: state["m"] = zeros(3)``).

        The plan would make it anew at every replay, never reaching the one kept (an
        assignment to an attribute or a dict is Python, which runs only at capture): the
        plan is not kept, and the next call captures again, reading the kept tensor as
        one made before the call (where each call keeps a new one, the function runs
        eagerly after a few such captures). ``scratch``: the capture's own containers.
        The tensors it hands out are looked for in the program's state by the caller
        (see :meth:`made_and_handed_out`).
        """
        created, materialized, traced = self._created, self._materialized, self._traced_tensors
        host, unrecorded = self._host_results, self._made_unrecorded
        candidates = []
        for key in created:  # not .items(): its iterator may keep the last pair alive
            if key in materialized or key in host or key in unrecorded:
                continue  # made by every replay too (see made_and_handed_out for results)
            # Held here by the dict, the list's slot and getrefcount's argument (and
            # _traced_tensors): more, and something else holds it.
            candidates.append(created[key])
            if sys.getrefcount(candidates[-1]) <= 3 + (key in traced):
                candidates.pop()
        if candidates:
            # The result's own tuples, lists and dicts hold what it returns.
            containers = _containers_in(result, [])
            kept = _held_by_the_program(
                candidates,
                self,
                (created, traced, candidates, containers, *containers, *scratch),
            )
            if kept is not None:
                self.discard = (
                    f"a tensor it made (shape {kept.shape}) is kept after the call, in a "
                    "dict, a list or an attribute"
                )

    def check_snapshots(self) -> None:
        for key, module in self.modules.items():
            if _members(module) != self._module_members[key]:
                # Lazy initialisation (a parameter made at the first forward): the next call
                # runs another program, which a new capture sees.
                self.discard = (
                    f"{type(module).__name__} made or replaced parameters, buffers or "
                    "submodules in this call"
                )
        for key, (requires_grad, edge) in self._snapshots.items():
            tensor = self._traced_tensors.get(key)
            if tensor is not None and (
                tensor._requires_grad != requires_grad or tensor._edge is not edge
            ):
                self.graph_break(
                    "the function changes requires_grad or the graph of a tensor it did not make"
                )
                return

    def restore_arrays(self, result: Any) -> None:
        """Put every real array back where a TracedArray stood."""
        for tensor in self._traced_tensors.values():
            value = _get_array(tensor)
            if type(value) is TracedArray:
                _set_array(tensor, value._real)
        for tensor in self._created.values():
            value = _get_array(tensor)
            if type(value) is TracedArray:
                _set_array(tensor, value._real)
        _restore_graph(result, self.boundary)
        self._traced_tensors.clear()
        self._created.clear()
        self._made_unrecorded.clear()

    def plan(self, output: str) -> Plan:
        if self.restarts:
            # A default generator made in the call (the first draw after manual_seed) is
            # the one each replay finds by device: its stream goes on, as eagerly.
            made_default = {
                id(step) for step in self.restarts
                if _default_generators.get(step.args[0].device) is step.args[0]
            }  # fmt: skip
            self.steps = [step for step in self.steps if id(step) not in made_default]
        output_refs = tuple(_names_in_expression(output, self.steps))
        # Whether each .grad is None first: the guard of the free tensors reads their metadata.
        layout_guards = {
            "L": f"[*map(_strides_of, L)] == {self.constant(self._leaf_strides, 'strides_')}"
        }
        if self.free:
            layouts = self.constant(self._free_strides, "strides_")
            layout_guards["F"] = f"[*map(_strides_of, F)] == {layouts}"
        if self.layout_read:
            # A view that exists or not by the memory layout (x.view(-1), x.contiguous(),
            # or a reshape written through): a replay is right only for inputs laid out as
            # the capture's were.
            guards = [*self._grad_guards, *self.guards, *layout_guards.values()]
            layout_guards = {}
        else:
            guards = self._grad_guards + self.guards
        if len(self._distinct_grads) > 1:
            grads = ", ".join(self._distinct_grads)
            guards.insert(
                len(self._grad_guards),
                f"_distinct_memory(({grads},)) == {len(self._distinct_grads)}",
            )
        if self._free_meta:
            guards.insert(len(self._grad_guards), self._free_tensors_guard(layout_guards))
        if self.default_device_read is not None:
            default = self.constant(_default_device, "default_device_")
            device = self.constant(self.default_device_read, "device_")
            guards.append(f"{default}() is {device}")
        if self._modes_at_start:
            read = tuple(self.modules[key] for key in self._modes_at_start)
            modes = self.constant(list(self._modes_at_start.values()), "modes_")
            guards.append(f"[m.training for m in {self.constant(read, 'moded_')}] == {modes}")
        if self.free or self.modules:
            # A hook registered after the capture (on a parameter, a module) would run at
            # an eager call: once any hook was registered, the replay looks for them again.
            epoch = self.constant(hook_epoch, "hook_epoch_")
            seen = self.constant([hook_epoch[0]], "hooks_seen_")
            absent = self.constant(_hooks_absent, "hooks_absent_")
            modules_called = self.constant(tuple(self.modules.values()), "hooked_")
            guards.append(f"({epoch}[0] == {seen}[0] or {absent}({seen}, F, {modules_called}))")
        if self.modules:
            # With the modules below them, called or not: forward may read a setting or a
            # tensor of a child it does not call (``self.norm.eps``, ``self.head.weight``).
            below: dict[int, Any] = {}
            # (and the modules the function reaches by name without calling them: a
            # ModuleList in a closure whose layers it calls in a loop)
            for module in (*self.modules.values(), *self.reached_modules):
                for child in module.modules():
                    if id(child) not in self.modules:
                        below.setdefault(id(child), child)
            modules = (*self.modules.values(), *below.values())
            called = self.constant(modules, "modules_")
            # A parameter, buffer or submodule rebound to another (of any shape) is seen too.
            held = [
                id(t)
                for m in modules
                for t in (*m._parameters.values(), *m._buffers.values(), *m._modules.values())
            ]
            guards.append(
                f"[id(t) for m in {called} for t in (*m._parameters.values(), "
                f"*m._buffers.values(), *m._modules.values())] == {self.constant(held, 'held_')}"
            )
            guards += self._settings_guards(modules)
        return Plan(
            steps=self.steps,
            guards=guards,
            output=output,
            output_refs=output_refs,
            constants=self.constants,
            free=self.free,
            namespaces=self.namespaces,
            folded=self.folded,
            meta=self.meta,
            strides=self.strides,
            layout_guards=layout_guards,
        )

    def _settings_guards(self, modules: tuple[Any, ...]) -> list[str]:
        """Guards of the called modules' settings (``Dropout.p``, a norm's ``momentum`` and
        ``track_running_stats``, a convolution's ``stride``): each module's attributes that
        hold plain values (see ``_is_plain_setting``), as the capture left them, so that a
        change between calls captures again instead of replaying the old value."""
        guards = []
        for module in modules:
            # Code a module holds (``self.activation = F.gelu``) is checked to be the same
            # object, and its attributes to be as many: one set later (a ``forward`` or a
            # method on the instance, a setting shadowing the class's) computes otherwise.
            fields = module.__dict__
            held = self.constant(fields, "attributes_")
            guards.append(f"len({held}) == {len(fields)}")
            for name, value in fields.items():
                if callable(value) and not isinstance(value, type) and name != "_compiled_call":
                    guards.append(f"{held}.get({name!r}) is {self.constant(value, 'code_')}")
            names = [
                name for name, value in fields.items()
                if name != "training" and _is_plain_setting(value)
            ]  # fmt: skip
            if not names:
                continue
            read = operator.attrgetter(*names)
            getter = self.constant(read, "settings_of_")
            target = self.constant(module, "module_")
            # As the plan read them, not as the call left them.
            found = self._settings_read.get(id(module), {})
            now = read(module)
            now = (now,) if len(names) == 1 else now
            values = tuple(found.get(name, value) for name, value in zip(names, now, strict=True))
            settings = values[0] if len(names) == 1 else values
            if _compared_by_text(settings):
                # repr tells floats by their bits, NumPy scalars by their type (in C).
                expected = self.constant(repr(settings), "settings_")
                guards.append(f"repr({getter}({target})) == {expected}")
            else:
                guards.append(f"{getter}({target}) == {self.constant(settings, 'settings_')}")
        return guards

    def _free_tensors_guard(self, layout_guards: dict[str, str]) -> str:
        """One guard for the shapes, dtypes, devices and ``requires_grad`` of the free tensors
        the plan reads (and their layouts, see ``codegen.meta_guard``): a call of a getter
        per tensor (in C), one comparison, one line to compile instead of one per tensor.
        Where it covers every free tensor's layout, ``layout_guards`` loses its own."""
        sources = list(self._free_meta)
        getter, _ = codegen.meta_guard(list(self._free_layouts.values()))
        if getter == "_laid_out_meta":
            meta = [
                (shape, dtype, self._free_layouts[source].strides, *rest)
                for source, (shape, dtype, *rest) in self._free_meta.items()
            ]
        else:
            meta = list(self._free_meta.values())
        expected = self.constant(meta, "free_meta_")
        if sources == [f"F[{index}]" for index in range(len(self.free))]:
            tensors = "F"
            if getter == "_laid_out_meta":
                layout_guards.pop("F", None)
        else:
            tensors = "(" + "".join(source + ", " for source in sources) + ")"
        return f"[*map({getter}, {tensors})] == {expected}"

    # -- swapping the tables -----------------------------------------------------------------

    def install(self) -> None:
        global _active
        saved = self._saved
        devices = [d for group in _registry._state.devices.values() for d in group]
        for module in self.reached_modules:  # (their settings as the call finds them)
            self._note_settings(module)
        # The default device's namespace is the one the replayed code calls plain ``xp``.
        default = _registry.resolve_device(None)
        devices.sort(key=lambda d: d is not default)
        labels: dict[int, str] = {}
        for device in devices:
            label = labels.get(id(device.xp))
            if label is None:
                label = "xp" if not labels else f"xp{len(labels)}"
                labels[id(device.xp)] = label
            plain, rule, table = _recording_tables(device, label)
            self.namespaces[label] = device.xp
            self.namespaces["r" + label] = device.rule_xp
            saved.append((device, "xp", device.xp))
            saved.append((device, "rule_xp", device.rule_xp))
            saved.append((device, "kernels", device.kernels))
            device.kernels = table
            device.xp = plain
            device.rule_xp = rule
        from ..amp import GradScaler
        from ..nn import module as _module
        from ..optim.lr_scheduler import LRScheduler
        from ..optim.optimizer import Optimizer

        patches: list[tuple[Any, str, Any]] = [
            (Tensor, "_array", _ArrayDescriptor()),
            (Tensor, "_grad", _GradDescriptor()),
            (Generator, "_source", _SourceDescriptor()),
            (PostAccumulateGradHook, "function", _HookDescriptor()),
            (
                _engine,
                "_call_hook",
                _breaking(_engine._call_hook, "a tensor hook runs Python code"),
            ),
            (
                _engine,
                "_call_node_hook",
                _breaking(_engine._call_node_hook, "a grad_fn hook runs Python code"),
            ),
            (Tensor, "_bump_version", _bumping(Tensor.__dict__["_bump_version"], self)),
            (_module, "_call_observer", self.note_module),
            (
                _functional,
                "any_outside",
                _replayed_range_check(_functional.__dict__["any_outside"]),
            ),
            (_rules, "any_true", _replayed_kernel_check(_rules.__dict__["any_true"])),
            (_versions, "made_a_copy", _copied_of_real_arrays),
            (_graph, "backend_array_types", _with_traced_arrays()),
            (_registry, "resolve_device", _noting_default_device(_registry.resolve_device, self)),
            (
                _engine,
                "_watched_leaf_edges",
                _breaking(
                    _engine._watched_leaf_edges,
                    "a gradient-ready callback (DistributedDataParallel) runs during backward",
                ),
            ),
        ]
        if self.boundary:
            patches.append((_engine, "_run", _bounded_backward(_engine._run, self)))
        collectives = sys.modules.get("plugrad.distributed.collectives")
        if collectives is not None:
            # A replay would skip the exchange with the other processes: run those calls eagerly.
            what = "a collective of plugrad.distributed communicates with other processes"
            patches.append(
                (collectives, "_communicator", _breaking(collectives._communicator, what))
            )
        for name, what in (
            ("item", ".item()"), ("numpy", ".numpy()"), ("tolist", ".tolist()"),
            ("__bool__", "bool() of a tensor"), ("__float__", "float() of a tensor"),
            ("__int__", "int() of a tensor"), ("__index__", "using a tensor as an index"),
            ("__repr__", "printing a tensor"), ("register_hook", "registering a tensor hook"),
            ("retain_grad", "retain_grad(), whose .grad a replay would not fill"),
            # (np.asarray(x): the backend's own conversion would get the traced array)
            ("__array__", "converting a tensor to a NumPy array"),
            ("__complex__", "complex() of a tensor"), ("__dlpack__", "exporting a tensor"),
            ("data_ptr", "reading a tensor's memory address"),
        ):  # fmt: skip
            patches.append((Tensor, name, _breaking(vars(Tensor)[name], what)))
        patches.append((GradScaler, "scale", _scaler_scale(GradScaler.__dict__["scale"], self)))
        # A stride read (x.is_contiguous(), x.contiguous()) depends on the layouts of the
        # inputs only: the plan then guards them, as for a reshape that must not copy.
        patches.append((Tensor, "stride", _noting_stride_read(vars(Tensor)["stride"])))
        patches.append(
            (Tensor, "requires_grad", _guarding_requires_grad(vars(Tensor)["requires_grad"]))
        )
        array: property = vars(Tensor)["array"]
        assert array.fget is not None
        patches.append((Tensor, "array", property(_breaking(array.fget, ".array"))))
        for owner in list(releasing_classes):
            noting = _noting_release(owner.__dict__["_release"], self)
            patches.append((owner, "_release", noting))
        # Seeding inside the function happens at every replay, as the eager calls seed.
        seed_generator = _host_call(
            Generator.__dict__["manual_seed"], "Generator.manual_seed()", changes_grads=False
        )
        patches.append((Generator, "manual_seed", seed_generator))
        reseed_generator = _host_call(
            Generator.__dict__["seed"], "Generator.seed()", changes_grads=False
        )
        patches.append((Generator, "seed", reseed_generator))
        seed_all = _host_function(_random.manual_seed, "plugrad.manual_seed()", changes_grads=False)
        patches.append((_random, "manual_seed", seed_all))
        package = sys.modules["plugrad"]
        if package.__dict__.get("manual_seed") is _random.__dict__["manual_seed"]:
            patches.append((package, "manual_seed", seed_all))
        for owner in _with_subclasses(Optimizer) + _with_subclasses(LRScheduler):
            if "step" in owner.__dict__:
                # A scheduler sets learning rates; an optimizer's step (its closure) may set
                # a .grad.
                host = _host_call(
                    owner.__dict__["step"],
                    f"{owner.__name__}.step()",
                    changes_grads=not issubclass(owner, LRScheduler),
                )
                if owner is Optimizer:
                    host = _optimizer_step(host, self)
                patches.append((owner, "step", host))
        # A module's mode read as module.training (F.dropout(x, training=self.training) in a
        # method other than forward) is guarded as a called module's is.
        saved.append((_module.Module, "training", _module.Module.__dict__.get("training", _ABSENT)))
        _module.Module.training = _TrainingDescriptor()  # type: ignore[assignment]
        for owner, name, replacement in patches:
            saved.append((owner, name, owner.__dict__[name]))
            setattr(owner, name, replacement)
        _active = self

    def note_module(self, module: Any) -> None:
        """Told of each module called or whose mode is read: the plan guards each one's
        tensors, and its mode as it was when the call started, unless the call set it."""
        if self is not _current():
            return  # another thread's module call
        key = id(module)
        if module._module_hooks and self.recording:
            self.graph_break(f"a hook of {type(module).__name__} runs Python code at its calls")
        if self.recording and key not in self.modules:
            self._note_settings(module)
            self.modules[key] = module
            self._module_members[key] = _members(module)
            if key not in self._modes_set:
                self._modes_at_start[key] = module.__dict__.get("training")

    def _note_settings(self, module: Any) -> None:
        """Keep the settings of ``module`` and the modules below it as its code finds them
        (at its first call): the plan computed with those, and the function may change one
        after (``model[0].momentum = 0.5``), so its guards compare with these."""
        for child in module.modules():
            if id(child) not in self._settings_read:
                self._settings_read[id(child)] = {
                    # A copy of what holds a list (which may change in place; the guards
                    # compare with it as read); a tuple of plain values is kept as it is.
                    name: copy.deepcopy(value) if _holds_list(value) else value
                    for name, value in child.__dict__.items()
                    if name != "training" and _is_plain_setting(value)
                }

    def set_mode(self, module: Any, training: Any) -> None:
        """``module.training = training`` in the function (``train()``, ``eval()``): the
        replay does the same at the same point."""
        self._modes_set.add(id(module))
        target = self.constant(module, "module_")
        self.steps.append(
            Step("text", None, f"{target}.__dict__['training'] = {{0}}", (training,), effect=True)
        )

    def _graph_consumed(self, edge: Any) -> bool:
        """Whether a backward pass without ``retain_graph`` used ``edge``'s node in this call.

        Such a result leaves the call without its graph, as nothing is meant to
        differentiate through it again (a node that saved no values keeps what it
        has, so whether it was freed does not tell).
        """
        node = edge[0] if type(edge) is tuple else edge
        return id(node) in self.released or getattr(node, "_saved", True) is None

    def leads_to_consumed(self, edge: Any) -> bool:
        """Whether the graph behind ``edge`` (made in this call) runs through a node that a
        backward pass in the call freed (``y = x.exp(); y.sum().backward(); return y * 2``)."""
        boundary, seen = self.boundary, set()
        nodes = [edge[0] if type(edge) is tuple else edge]
        while nodes:
            node = nodes.pop()
            if id(node) in seen or id(node) in boundary:
                continue
            seen.add(id(node))
            if self._graph_consumed(node):
                return True
            for following in node._edges:
                target = following[0] if type(following) is tuple else following
                if isinstance(target, Node):
                    nodes.append(target)
        return False

    def crosses_boundary(self, roots: list[Any], targets: Any) -> bool:
        """Whether a backward pass from ``roots`` would run a node of a graph made before
        the call (behind an argument that carries one).

        The plan's graph ends at such arguments: a pass that stops there (their
        gradients are what it computes, as the plan's own backward does) is
        replayed; one that goes on (``loss.backward()`` through them, or to a
        parameter the graph before used too) runs code no plan holds.
        """
        boundary = self.boundary
        starts = [node for (node, _), _ in roots if isinstance(node, Node)]
        if targets is not None:
            below = _engine._nodes_leading_to(starts, targets, Node)
            return any(below.get(node) for node in boundary.values())
        seen: set[int] = set()
        while starts:
            node = starts.pop()
            if id(node) in boundary:
                return True
            if id(node) not in seen:
                seen.add(id(node))
                for edge in node._edges:
                    target = edge[0] if type(edge) is tuple else edge
                    if isinstance(target, Node):
                        starts.append(target)
        return False

    def namespace_label(self, xp: Any) -> str:
        """The name of the backend namespace ``xp`` in the replayed code."""
        for label, namespace in self.namespaces.items():
            if namespace is xp:
                return label
        return self.constant(xp, "namespace")

    def uninstall(self) -> None:
        global _active
        _active = None
        for owner, name, original in reversed(self._saved):
            if original is _ABSENT:
                delattr(owner, name)
            else:
                setattr(owner, name, original)
        self._saved.clear()


def _with_traced_arrays() -> Callable[[Any], tuple[type, ...]]:
    """``graph.backend_array_types`` during a capture: each backend's types and TracedArray.

    Asked for every gradient a rule returns; answered once per backend and capture.
    """
    known: dict[int, tuple[type, ...]] = {}

    def backend_array_types(backend: Any) -> tuple[type, ...]:
        types_ = known.get(id(backend))
        if types_ is None:
            types_ = known[id(backend)] = (*backend.array_types(), TracedArray)
        return types_

    return backend_array_types


#: Ops whose output shape depends on the values of their inputs.
_DYNAMIC_SHAPE = frozenset(
    {"nonzero", "unique_all", "unique_counts", "unique_inverse", "unique_values", "argwhere",
     "flatnonzero", "extract", "compress", "masked_select"}
)  # fmt: skip


#: Functions whose output shape depends on the values of their arguments after the first
#: where those are arrays (``repeat(x, counts)``), not where they are numbers.
_SHAPE_FROM_ARRAY_ARGUMENTS = frozenset({"repeat"})


def _has_dynamic_shape(
    kind: str, target: Any, args: tuple[Any, ...], kwargs: dict[str, Any] | None
) -> bool:
    name = ""
    if kind == "call" and type(target) is str:
        called = _CALLED.get(target)
        if called is None:
            called = target.rpartition(".")[2]
            if called.startswith("kernel_"):
                called = called[len("kernel_") :].rstrip("0123456789").rstrip("_")
            _CALLED[target] = called
        name = called
        if name in _DYNAMIC_SHAPE:
            return True
        if name in _SHAPE_FROM_ARRAY_ARGUMENTS:  # repeat(x, counts): counts' values
            return bool(_traced_in((args[1:], kwargs or {})))
        if name != "getitem":
            _STATIC_CALLS.add(target)
    if kind == "getitem" or name == "getitem":  # a boolean mask that is a plan value
        return any("bool" in str(array.dtype) for array in _traced_in((args[1:], kwargs or {})))
    return False


#: A call's target (``xp.nonzero``, ``kernel_take_3``) -> the function it names.
_CALLED: dict[str, str] = {}
#: Call targets whose output shape depends on their inputs' shapes alone.
_STATIC_CALLS: set[str] = set()


def _traced_in(value: Any) -> list[TracedArray]:
    kind = type(value)
    if kind is TracedArray:
        return [value]
    if kind in (tuple, list):
        return [t for item in value for t in _traced_in(item)]
    if kind is dict:
        return [t for item in value.values() for t in _traced_in(item)]
    return []


def _repeats_badly(step: Step) -> bool:
    """Whether running ``step`` twice differs from running it once (a plan cannot undo it)."""
    if not step.effect:
        return False
    target = step.target
    if step.kind == "text" and type(target) is str:
        return not (target.endswith("._grad = None") or target.startswith("if "))
    return True


class _SpentNode(Node):
    """The ``grad_fn`` of a replayed result whose graph a backward in the call used and
    freed: named as the captured one, and a backward through it says the graph is gone."""

    __slots__ = ("_name",)

    def __init__(self, name: str, device: Any) -> None:
        self._name = name
        self._device = device
        self._edges = ()
        self._hooks = None

    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"<{self._name}>"

    def _backward(self, grad: Any, create_graph: bool) -> tuple[Any, ...]:
        raise GraphFreedError(
            f"{self._name}: the compiled function's backward() freed this graph; pass "
            "retain_graph=True to that backward() to differentiate through it again"
        )

    def _release(self) -> None:
        pass


def _hooks_absent(seen: list[int], free: Any, modules: tuple[Any, ...]) -> bool:
    """Whether no free tensor of a plan and none of its modules has a hook; if so, the
    plan notes the registrations counted so far, to skip this look until the next one."""
    if any(t._hooks for t in free) or any(m._module_hooks for m in modules):
        return False
    seen[0] = hook_epoch[0]
    return True


def _bumping(original: Callable[[Tensor], None], tracer: Tracer) -> Callable[[Tensor], None]:
    def bump(tensor: Tensor) -> None:
        if tracer is _current():
            tracer.bump_version(tensor)
        original(tensor)

    return bump


def _with_subclasses(cls: type) -> list[type]:
    found: list[type] = [cls]
    for owner in found:  # the list grows as it is read: breadth first, without recursion
        found.extend(type.__subclasses__(owner))
    return found


def _bounded_backward(run: Callable[..., Any], tracer: Tracer) -> Any:
    """The engine's pass, a graph break where it would go on into a graph made before
    the call (see ``Tracer.crosses_boundary``); it then runs eagerly, as the rest does.
    Other threads' passes are theirs (installed by the capturing thread)."""
    capturing = threading.get_ident()

    def bounded(roots: Any, retain_graph: bool, create_graph: bool, targets: Any) -> Any:
        if (
            tracer.recording
            and threading.get_ident() == capturing
            and tracer.crosses_boundary(roots, targets)
        ):
            tracer.graph_break(
                "a backward pass goes on into the graph that an argument carries, made "
                "before the call (make that argument inside the compiled function to "
                "capture its graph too, or run that backward outside the function)"
            )
        return run(roots, retain_graph, create_graph, targets)

    return bounded


def _state_enabled() -> bool:
    from ..grad_mode import _state

    return _state.enabled


def _restore_graph(result: Any, boundary: dict[int, Any]) -> None:
    """Real arrays back into the nodes of any graph the result still carries (up to
    ``boundary``, the nodes made before the call, which never held traced arrays)."""
    from ..graph import Node

    stack = []
    seen: set[int] = set()

    def visit(value: Any) -> None:
        if isinstance(value, Tensor):
            edge = value._edge
            if edge is not None:
                stack.append(edge[0] if type(edge) is tuple else edge)
        elif type(value) in (tuple, list):
            for v in value:
                visit(v)
        elif type(value) is dict:
            for v in value.values():
                visit(v)

    visit(result)
    while stack:
        node = stack.pop()
        if id(node) in seen or id(node) in boundary or not isinstance(node, Node):
            continue
        seen.add(id(node))
        for slot in ("_saved", "_ans", "_params"):
            value = getattr(node, slot, None)
            if value is not None:
                try:
                    setattr(node, slot, _unwrap(value))
                except AttributeError:
                    pass
        for edge in node._edges:
            if edge is not None:
                target = edge[0] if type(edge) is tuple else edge
                if isinstance(target, Node):
                    stack.append(target)


def _names_in_expression(expression: str, steps: list[Step]) -> list[str]:
    return sorted(set(re.findall(r"\b[vth]\d+\b", expression)))


def _user_location() -> str:
    """``file:line`` of the innermost frame outside plugrad (the user's line)."""
    frame, _ = _user_frame(sys._getframe(1))
    return "<unknown>" if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes a warning its caller raises name the user's line
    (the innermost frame outside plugrad), however deep in plugrad the caller is."""
    frame, level = _user_frame(sys._getframe(1))
    return 1 if frame is None else level


def _user_frame(frame: types.FrameType | None) -> tuple[types.FrameType | None, int]:
    """The first frame from ``frame`` outward that is not plugrad's, and its depth (1 for
    ``frame`` itself)."""
    files = (
        getattr(sys.modules.get(name), "__file__", None)
        for name in ("plugrad", "plugrad.backends", "plugrad.plugins")
    )
    roots = tuple(os.path.dirname(os.path.abspath(file)) + os.sep for file in files if file)
    level = 1
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if not filename.startswith(roots) and not filename.startswith("<plugrad"):
            return frame, level
        frame = frame.f_back
        level += 1
    return None, level


__all__ += ["capture_lock", "refs_in", "user_stacklevel"]


def _containers_in(value: Any, found: list[Any]) -> list[Any]:
    """``found`` with the tuples, lists and dicts inside ``value`` (a function's result)."""
    if type(value) in (tuple, list) or isinstance(value, tuple):
        found.append(value)
        for item in value:
            _containers_in(item, found)
    elif isinstance(value, dict):
        found.append(value)
        for item in value.values():
            _containers_in(item, found)
    return found


def _held_by_the_program(
    candidates: list[Tensor], tracer: Tracer, scratch: tuple[Any, ...]
) -> Tensor | None:
    """One of ``candidates`` that a container or object of the program holds, if any.

    plugrad's own objects (views' links to their bases, graph nodes, closures of its
    own), the tracer's tables and the caller's ``scratch`` containers do not count; a
    tuple counts where a container of the program holds it. One pass over the
    collector's objects (two with tuples).
    """
    skipped = {id(tracer)} | {id(x) for x in scratch} | {id(x) for x in vars(tracer).values()}
    tuples = []
    for holder in gc.get_referrers(*candidates):
        kind = type(holder)
        if id(holder) in skipped or kind in _NOT_THE_PROGRAMS:
            continue
        if kind is tuple:
            tuples.append(holder)
        elif kind in (dict, list) or not kind.__module__.startswith("plugrad."):
            return _one_held(candidates, holder)
        elif _is_module(holder):  # an attribute of a layer: the program's state
            return _one_held(candidates, holder)
    if tuples:
        skipped.add(id(tuples))
        for holder in gc.get_referrers(*tuples):
            kind = type(holder)
            if id(holder) not in skipped and kind in (dict, list):
                return _one_held(candidates, holder)
    return None


def _one_held(candidates: list[Tensor], holder: Any) -> Tensor:
    """The candidate ``holder`` holds, itself or in a tuple it holds (a dict's value
    ``(h, c)`` too: the message names that tensor's shape, not another's)."""
    referents = list(gc.get_referents(holder))
    for item in list(referents):
        if type(item) is dict:  # an object's attributes
            referents += item.values()
    held = {id(x) for x in referents}
    for item in referents:
        if type(item) is tuple:
            held.update(id(x) for x in item)
    return next((t for t in candidates if id(t) in held), candidates[0])


def _is_module(value: Any) -> bool:
    from ..nn.module import Module

    return isinstance(value, Module)


#: Holders that are plugrad's own machinery or the interpreter's, not the program's state.
_NOT_THE_PROGRAMS = frozenset(
    {types.FrameType, types.CellType, types.FunctionType, types.MethodType}
)
