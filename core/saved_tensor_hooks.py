"""Saved-tensor hooks: what a backward keeps, packed and unpacked by the user's functions.

Inside :class:`saved_tensors_hooks` ``(pack_hook, unpack_hook)``, each tensor
that a recorded op (or a :class:`~plugrad.Function`'s ``save_for_backward``)
keeps for its backward is handed to ``pack_hook`` when it is saved, and the
node keeps what that returns instead of the array. The backward hands it to
``unpack_hook`` and computes with the tensor that gives back. This is
PyTorch's ``torch.autograd.graph.saved_tensors_hooks``: keep activations on
the host (:class:`save_on_cpu`), compressed, or on disk.

A packed node holds no reference to the array it saved, so memory is freed
when the pack hook moves it elsewhere. What the backward needs besides the
values is kept: where the tensor's own gradient goes (its ``grad_fn``, or
the leaf itself), and its version counter, so that an in-place change of the
tensor after the save is still refused. What ``unpack_hook`` returns must
have the saved tensor's shape, dtype and device; anything else is refused
with a :class:`~plugrad.errors.BackwardError` before a rule reads it.

Hooks are per thread, as PyTorch's; the innermost pair applies, and the hooks
themselves run with none (what they compute saves nothing through them). Outside
them nothing costs anything: the per-op path swaps its recorders only while a
pair is on in some thread (as anomaly mode does), and a compiled function runs
eagerly while one is on (a plan would not call the hooks).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from .dtypes import is_differentiable
from .errors import ArgumentError, BackwardError, InPlaceModificationError
from .graph import OpNode, check_output_versions, check_versions
from .node import Node
from .tensor import Tensor, _wrap
from .versions import shared_counter

__all__ = [
    "Packed",
    "SavedLeafBackward",
    "current_hooks",
    "disable_saved_tensors_hooks",
    "on_enter",
    "on_switch",
    "pack_node",
    "pack_saved",
    "packing",
    "save_on_cpu",
    "saved_tensors_hooks",
]

#: How many pairs of hooks are on, in every thread (read to swap the recorders).
active = 0
_lock = threading.Lock()
_local = threading.local()  # .hooks: list of (pack, unpack); .disabled: message or None
_listeners: list[Callable[[bool], None]] = []


def on_switch(listener: Callable[[bool], None]) -> None:
    """Call ``listener(True)`` when the first pair of hooks goes on in any thread, and
    ``listener(False)`` when the last goes off."""
    _listeners.append(listener)


def current_hooks() -> tuple[Callable[[Tensor], Any], Callable[[Any], Any]] | None:
    """The innermost ``(pack_hook, unpack_hook)`` of this thread, or ``None``; inside
    :class:`disable_saved_tensors_hooks`, hooks entered before it are refused here, when a
    tensor is saved (PyTorch's)."""
    hooks = getattr(_local, "hooks", None)
    if not hooks:
        return None
    message = getattr(_local, "disabled", None)
    if message is not None:
        raise BackwardError(message)
    return hooks[-1]


def _without_hooks(hook: Callable[[Any], Any], value: Any) -> Any:
    """``hook(value)`` with this thread's hooks off: the ops a hook runs save nothing
    through it again (PyTorch's)."""
    hooks = getattr(_local, "hooks", None)
    _local.hooks = None
    try:
        return hook(value)
    finally:
        _local.hooks = hooks


#: Called on entering hooks (a capture under way breaks its graph there).
_enter_listeners: list[Callable[[], None]] = []


def on_enter(listener: Callable[[], None]) -> None:
    """Call ``listener()`` each time a pair of hooks is entered, in the thread entering it."""
    _enter_listeners.append(listener)


def _add(change: int) -> None:
    global active
    with _lock:
        before = active > 0
        active += change
        if (active > 0) is not before:
            for listener in _listeners:
                listener(active > 0)


class saved_tensors_hooks:
    """Context manager: ``pack_hook(tensor)`` for each tensor a backward saves from now
    on, and ``unpack_hook(packed)`` when the backward needs it back (PyTorch's).

    ``unpack_hook`` must return a Tensor of the saved one's shape, dtype and
    device, holding the values to compute with. Only the innermost pair of
    nested hooks applies. A pack hook that returns its argument keeps the array
    (and makes a reference cycle through the output's node); return
    ``tensor.detach()`` to keep the values alone.

    Parameters
    ----------
    pack_hook : callable
        ``pack_hook(tensor) -> object``, called as an op saves ``tensor``.
    unpack_hook : callable
        ``unpack_hook(object) -> Tensor``, called by the backward.

    Examples
    --------
    >>> import plugrad
    >>> seen = []
    >>> def pack(t):
    ...     seen.append(tuple(t.shape))
    ...     return t.detach()
    >>> a = plugrad.ones(3, requires_grad=True)
    >>> with plugrad.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
    ...     y = (a * 2).exp()
    >>> seen  # exp keeps its output
    [(3,)]
    >>> y.sum().backward()
    >>> a.grad
    tensor([14.7781, 14.7781, 14.7781])
    """

    def __init__(
        self, pack_hook: Callable[[Tensor], Any], unpack_hook: Callable[[Any], Tensor]
    ) -> None:
        for name, hook in (("pack_hook", pack_hook), ("unpack_hook", unpack_hook)):
            if not callable(hook):
                raise ArgumentError(
                    f"saved_tensors_hooks(): {name} must be callable, got {type(hook).__name__}"
                )
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> saved_tensors_hooks:
        message = getattr(_local, "disabled", None)
        if message is not None:
            raise BackwardError(message)
        hooks = getattr(_local, "hooks", None)
        if hooks is None:
            hooks = _local.hooks = []
        for listener in _enter_listeners:
            listener()
        hooks.append((self.pack_hook, self.unpack_hook))
        _add(1)
        return self

    def __exit__(self, *exc_info: object) -> None:
        _local.hooks.pop()
        _add(-1)


class save_on_cpu(saved_tensors_hooks):
    """Keep the tensors a backward saves on the CPU, and move them back for the backward
    (PyTorch's): an accelerator's memory then holds the activations of one layer at a
    time.

    A tensor on the NumPy device (``"cpu"``) is kept as it is; one on another
    device, even the CPU device of another backend (``"torch"``, ``"jax"``), moves
    there with ``.cpu()`` and back with ``.to(device)``.

    Parameters
    ----------
    pin_memory : bool, default False
        Taken for PyTorch's signature; plugrad's backends do not pin host memory.
    device_type : str, default "cuda"
        Taken for PyTorch's signature: every device other than ``"cpu"`` is moved.

    Examples
    --------
    >>> import plugrad
    >>> w = plugrad.ones(4, requires_grad=True)
    >>> with plugrad.autograd.graph.save_on_cpu():
    ...     loss = (w.sin() * w).sum()
    >>> loss.backward()
    >>> w.grad
    tensor([1.3818, 1.3818, 1.3818, 1.3818])
    """

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack_to_cpu(tensor: Tensor) -> tuple[Any, Tensor]:
            if tensor.device.type == "cpu":
                return tensor.device, tensor.detach()
            return tensor.device, tensor.detach().cpu()

        def unpack_from_cpu(packed: tuple[Any, Tensor]) -> Tensor:
            device, tensor = packed
            return tensor.to(device)

        super().__init__(pack_to_cpu, unpack_from_cpu)


class disable_saved_tensors_hooks:
    """Context manager: entering :class:`saved_tensors_hooks` (or :class:`save_on_cpu`)
    inside it raises a :class:`~plugrad.errors.BackwardError` with ``error_message``
    (PyTorch's), for code that cannot work with them; so does saving a tensor inside
    it while hooks entered before it are on.

    Examples
    --------
    >>> import plugrad
    >>> graph = plugrad.autograd.graph
    >>> with graph.disable_saved_tensors_hooks("no hooks in here"):
    ...     with graph.save_on_cpu():
    ...         pass
    Traceback (most recent call last):
      ...
    plugrad.errors.BackwardError: no hooks in here
    """

    def __init__(self, error_message: str) -> None:
        if not isinstance(error_message, str):
            raise ArgumentError(
                "disable_saved_tensors_hooks() takes the error message as a str, got "
                f"{type(error_message).__name__}"
            )
        self.error_message = error_message
        self._before: list[str | None] = []

    def __enter__(self) -> None:
        self._before.append(getattr(_local, "disabled", None))
        _local.disabled = self.error_message

    def __exit__(self, *exc_info: object) -> None:
        _local.disabled = self._before.pop()

    def __call__(self, function: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            with self:
                return function(*args, **kwargs)

        return run


class Packed:
    """A saved tensor as a pack hook left it: what the hook returned, and what the
    backward needs besides the values (never the array itself)."""

    __slots__ = (
        "_counter", "device", "dtype", "edge", "leaf", "packed", "requires_grad", "shape", "unpack",
    )  # fmt: skip
    edge: Any  # a Node, (a Node, an output index), the leaf Tensor itself, or None

    def __init__(self, tensor: Tensor, hooks: tuple[Callable[..., Any], Callable[..., Any]]):
        pack, self.unpack = hooks
        array = tensor._array
        self.shape, self.dtype, self.device = tuple(array.shape), array.dtype, tensor._device
        self.requires_grad = requires_grad = tensor._requires_grad
        # Where the gradient of a tensor computed from it goes: its node, or the leaf.
        self.edge = edge = tensor._edge or (tensor if requires_grad else None)
        self.leaf = edge is tensor
        # The in-place check reads it; one made now, so that a later change is counted
        # where this node can see it (a tensor without one gets a new one when changed).
        counter = self._counter = shared_counter(tensor)
        version = counter[0]
        self.packed = _without_hooks(pack, tensor)
        if counter[0] != version:
            raise InPlaceModificationError(
                f"pack_hook changed the tensor it was given (shape {self.shape}) in place; it "
                "must leave it as it is (pack a copy: tensor.detach().clone())"
            )

    def tensor(self, node: Any) -> Tensor:
        """The saved tensor back, as the backward computes with it: the values
        ``unpack_hook`` gives, the gradient's way and the version counter of the tensor
        saved."""
        result = _without_hooks(self.unpack, self.packed)
        if not isinstance(result, Tensor):
            raise BackwardError(
                f"{node.name()}: unpack_hook returned a {type(result).__name__}, not a Tensor; "
                "it must give back the tensor pack_hook was given (its values)"
            )
        array = result._array
        if (
            tuple(array.shape) != self.shape
            or array.dtype != self.dtype
            or result._device is not self.device
        ):
            raise BackwardError(
                f"{node.name()}: unpack_hook returned a tensor of shape {tuple(array.shape)}, "
                f"{result.dtype.name} on {result._device.name!r}, for a saved tensor of shape "
                f"{self.shape}, {self.device._dtype_from_native[self.dtype].name} on "
                f"{self.device.name!r}; it must give back one of the saved tensor's shape, "
                "dtype and device"
            )
        edge = self.edge
        if self.leaf:  # (a leaf is its own edge, which no other tensor can hold)
            if array is edge._array:
                return edge  # (the leaf's own values: the graph as without hooks)
            edge = SavedLeafBackward(edge)
        unpacked = _wrap(array, self.device, self.requires_grad, edge)
        unpacked._counter = self._counter
        return unpacked


class SavedLeafBackward(Node):
    """The ``grad_fn`` of a leaf saved through hooks, as the backward computes with it: the
    gradient passes on to the leaf (only a double backward, ``create_graph=True``, records
    through it)."""

    __slots__ = ()

    def __init__(self, leaf: Tensor) -> None:
        self._device = leaf._device
        self._edges = (leaf,)
        self._hooks = None

    def _backward(self, grad: Any, create_graph: bool) -> tuple[Any, ...]:
        return (grad,)

    def _release(self) -> None:
        pass


def pack_saved(value: Any, hooks: Any) -> Any:
    """A value a node or a Function keeps, packed when it is a Tensor."""
    return Packed(value, hooks) if isinstance(value, Tensor) else value


def _packed_output(node: OpNode, array: Any, index: int | None, hooks: Any) -> Packed:
    """An output a node keeps (its ``ans``), packed: the hook receives it as a tensor whose
    ``grad_fn`` is the node."""
    if index is None:
        output = _wrap(array, node._device, True, node)
        output._counter = node._ans_counter
    else:  # one of several, as the per-op path will make it
        differentiable = index not in node.op.nondifferentiable_outputs and is_differentiable(
            node._device.dtype_of(array)
        )
        output = _wrap(
            array, node._device, differentiable, (node, index) if differentiable else None
        )
    return Packed(output, hooks)


def pack_node(node: OpNode) -> OpNode:
    """Hand the values ``node`` keeps to this thread's pack hook, if a pair is on; the node
    then unpacks them at each backward."""
    saved, tensors, ans = node._saved, node._saved_tensors, node._ans
    if (tensors is None and ans is None) or type(node) in _PACKED:
        return node  # shapes and numbers only, or packed already (a recorder called another)
    hooks = current_hooks()
    if hooks is None:
        return node
    if tensors is not None:
        node._saved = tuple(
            value if tensor is None else Packed(tensor, hooks)
            for value, tensor in zip(saved or (), tensors)
        )
        node._saved_tensors = None
    if ans is not None:
        if type(ans) is tuple:
            node._ans = tuple(
                None if a is None else _packed_output(node, a, i, hooks) for i, a in enumerate(ans)
            )
        else:
            node._ans = _packed_output(node, ans, None, hooks)
    node.__class__ = _packed_class(type(node))
    return node


_PACKED_CLASSES: dict[type, type] = {}
_unpacked_lock = threading.RLock()
_PACKED: set[type] = set()


def _packed_class(base: type) -> type:
    """``base`` (a node class), unpacking what its nodes keep before each backward."""
    packed = _PACKED_CLASSES.get(base)
    if packed is not None:
        return packed
    unpacked_backward = base._backward  # type: ignore[attr-defined]

    def _backward(self: Any, grad: Any, create_graph: bool) -> tuple[Any, ...]:
        saved, tensors, ans = self._saved, self._saved_tensors, self._ans
        if saved is None:
            return unpacked_backward(self, grad, create_graph)  # (freed: its error)
        # An in-place change since the save is told as such, before unpack_hook runs.
        check_versions(self, saved, self._versions)
        if self._ans_counter is not None:
            check_output_versions(self, self._ans_counter)
        values = list(saved)
        kept: list[Any] = [None] * len(saved)
        for index, value in enumerate(saved):
            if type(value) is Packed:
                kept[index] = value.tensor(self)
                values[index] = kept[index]._array
        if type(ans) is Packed:
            unpacked_ans = ans.tensor(self)._array
        elif type(ans) is tuple:
            unpacked_ans = tuple(a if a is None else a.tensor(self)._array for a in ans)
        else:
            unpacked_ans = ans
        # The rules read the node's slots: the unpacked values stand there for this call
        # only, one thread at a time (two backward passes through one retained graph).
        with _unpacked_lock:
            self._saved = tuple(values)
            self._saved_tensors = tuple(kept) if any(t is not None for t in kept) else None
            self._ans = unpacked_ans
            try:
                return unpacked_backward(self, grad, create_graph)
            finally:
                self._saved, self._saved_tensors, self._ans = saved, tensors, ans

    packed = type(base.__name__, (base,), {"__slots__": (), "_backward": _backward})
    packed.__qualname__ = base.__qualname__
    packed.__module__ = base.__module__
    _PACKED_CLASSES[base] = packed
    _PACKED.add(packed)
    return packed


def packing(record: Callable[..., Any]) -> Callable[..., Any]:
    """``record`` (a recorder of the per-op path), also packing what the node keeps."""

    def record_packed(*args: Any) -> Any:
        return pack_node(record(*args))

    return record_packed
