"""What a backend plugin describes, and the per-device object every tensor points to.

A backend plugin subclasses :class:`Backend` and returns an instance from the
``plugrad_backends`` hook. plugrad activates a backend the first time it is
used: it asks :meth:`Backend.unavailable_reason`, imports the namespace, maps
the dtypes and builds the backend's kernel table. Tensors then point at a
:class:`Device`, which carries everything the per-op path needs (namespace,
kernel table, dtype map) so that dispatch is attribute reads and one dict lookup.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import AbstractContextManager
from types import ModuleType
from typing import Any, Protocol

from . import dtypes as _dtypes
from .memory_formats import row_major_layout

__all__ = ["WRITE_REFUSED", "Backend", "Device", "RandomSource", "missing_library"]

#: What :meth:`Backend.write` may raise where an array cannot be written (a read-only
#: NumPy view, an immutable library that does not say so): the caller rebinds instead.
WRITE_REFUSED = (TypeError, ValueError, AttributeError, NotImplementedError, RuntimeError)

#: The device type PyTorch gives the hardware of these backends (``torch.device(...).type``).
_TORCH_DEVICE_TYPES = {"numpy": "cpu", "cupy": "cuda"}


class RandomSource(Protocol):
    """A seeded stream of random numbers on one device of a backend."""

    def normal(self, shape: tuple[int, ...], dtype: Any) -> Any:
        """Return an array of standard normal samples with the backend's ``dtype``."""

    def uniform(self, shape: tuple[int, ...], dtype: Any) -> Any:
        """Return an array of samples from ``[0, 1)`` with the backend's ``dtype``."""

    # Optional: ``get_state()`` returns a snapshot of the stream made of what JSON holds
    # (dicts, lists, strings, ints), and ``set_state(state)`` restores one, for
    # ``Generator.get_state``/``set_state``, ``plugrad.get_rng_state`` and checkpoints
    # (``plugrad.save``); a source without them refuses those clearly.


def missing_library(*modules: str, install: str) -> str | None:
    """The reason a backend cannot run when one of ``modules`` cannot be found, else ``None``.

    A backend's :meth:`Backend.unavailable_reason` starts with it: the reason
    names the first missing module and how to install it (``install``).

    Examples
    --------
    >>> from plugrad.backend import missing_library
    >>> missing_library("json", install="pip install json") is None
    True
    >>> missing_library("no_such_library", install="pip install no-such-library")
    'no_such_library is not installed; pip install no-such-library'
    """
    for module in modules:
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed; {install}"
    return None


class Backend:
    """Describes one array library to plugrad.

    Subclass it, set :attr:`name`, implement :meth:`namespace`,
    :meth:`array_types`, :meth:`to_numpy` and :meth:`random_source`, and
    return an instance from the ``plugrad_backends`` hook. Nothing here is on
    the per-op path: plugrad calls these methods when it activates the backend,
    creates tensors, moves data or prints.

    Examples
    --------
    The shape of a backend for PyTorch tensors (``plugrad.backends.torch_backend``
    is the complete, tested one)::

        from plugrad.backend import Backend
        from plugrad.hookspecs import hookimpl

        class TorchBackend(Backend):
            name = "torch"
            def namespace(self):
                import array_api_compat.torch
                return array_api_compat.torch
            def array_types(self):
                import torch
                return (torch.Tensor,)
            def to_numpy(self, array):
                return array.detach().numpy()
            def random_source(self, seed, device):
                return TorchRandom(seed)  # normal(shape, dtype) and uniform(shape, dtype)

        @hookimpl
        def plugrad_backends():
            return [TorchBackend()]
    """

    #: The name users select it by, e.g. ``"numpy"``.
    name: str = ""
    #: The library it wraps, as users install it (named in errors when it cannot start).
    library: str = ""
    #: Whether its arrays are the host format (NumPy's): like Python data, they go to
    #: the default device when turned into tensors without ``device=``.
    holds_host_data: bool = False
    #: Whether operations only build a graph that is computed later (Dask): plugrad
    #: then calls :meth:`settle` wherever graphs grow, to keep them bounded.
    lazy: bool = False
    #: Whether a view (``x[1:3]``, ``x.reshape(...)``, ``x.detach()``) shares its base's
    #: memory, so that an in-place change of either one shows in the other. Where views
    #: are copies (JAX's immutable arrays, Dask's task graphs), plugrad brings the values
    #: of a tensor's views up to date after each in-place change, and refuses the change
    #: when a view cannot be re-derived (see ``plugrad.inplace``).
    views_share_memory: bool = True
    #: Types of the immutable 0-d values the library's functions may return instead of
    #: 0-d arrays (NumPy's scalars): a view of one, or a detach()-ed tensor, could not
    #: share its memory, so plugrad first gives such a tensor a 0-d array of the value.
    scalar_types: tuple[type, ...] = ()

    def unavailable_reason(self) -> str | None:
        """Return ``None`` if the backend can run here, otherwise a sentence saying why not.

        The sentence is shown to users, so it should say how to fix it, e.g.
        ``"cupy is not installed; pip install '.[cuda]' from a checkout"``.
        """
        return None

    def namespace(self) -> ModuleType:
        """Return the library's Array API namespace (usually from array-api-compat)."""
        raise NotImplementedError(f"backend {self.name!r} does not define namespace()")

    def array_types(self) -> tuple[type, ...]:
        """Return the types of the library's arrays, to recognise them in ``plugrad.asarray``."""
        raise NotImplementedError(f"backend {self.name!r} does not define array_types()")

    def devices(self) -> Sequence[Any]:
        """Return the library's own device objects usable here; the first is the default.

        Only devices that really exist: an empty answer, or an exception, makes
        the backend unavailable with that reason. The default asks the
        namespace's inspection API (``__array_namespace_info__().devices()``,
        its default device first); a library without one must override this.
        """
        xp = self.namespace()
        info = getattr(xp, "__array_namespace_info__", None)
        if info is None:
            raise NotImplementedError(
                f"backend {self.name!r} does not define devices(), and its namespace has no "
                "__array_namespace_info__() to ask; return the library's devices from devices()"
            )
        inspection = info()
        found = list(inspection.devices())
        default = inspection.default_device()
        if default in found:
            found.remove(default)
            found.insert(0, default)
        return tuple(found)

    def device_names(self, devices: Sequence[Any]) -> list[str]:
        """Return the plugrad name of each device in ``devices`` (the answer of :meth:`devices`).

        Users select a device by its name (``plugrad.zeros(2, device="cupy:1")``).
        The default is the backend's name alone for a single device, else
        ``name:0``, ``name:1``, ...; a backend may name its devices after the
        library's own (``torch:cuda:0``). ``name:index`` always selects by position too.
        """
        if len(devices) == 1:
            return [self.name]
        return [f"{self.name}:{index}" for index in range(len(devices))]

    def dtype_names(self, xp: ModuleType) -> Collection[str] | None:
        """Return the standard names of the dtypes the backend supports; ``None``: all it has.

        Asked once, when the backend is first used. ``None`` (the default)
        means every dtype name the namespace ``xp`` defines; a library whose
        dtypes depend on its configuration (JAX's 64-bit types) answers here.
        """
        return None

    def device_of(self, array: Any) -> Any:
        """Return the library's device object on which ``array`` lives.

        Where the backend has several devices, the engine asks this of every
        gradient a backward rule returns (its array type and dtype do not say
        which device it is on), so it should be cheap.
        """
        return array.device

    def device_context(self, device: Any) -> AbstractContextManager[Any]:
        """Return a context manager making ``device`` the library's current device.

        ``plugrad.use_backend("cupy:1")`` enters it, so that work the library
        queues on its "current" device goes to the device the user chose.
        """
        return contextlib.nullcontext()

    def floating_point_warnings_off(self) -> AbstractContextManager[Any] | None:
        """Return a context manager inside which the library does not warn of floating-point
        exceptions, or ``None`` (the default) for a library that never does.

        A division by zero, an overflow or an invalid operation (``0 / 0``,
        ``inf - inf``) gives ``inf`` or ``nan`` in PyTorch, CuPy and JAX without a
        word; NumPy warns, and a warnings filter set to ``"error"`` (pytest's
        ``filterwarnings = ["error"]``) turns each warning into an exception in the
        middle of a valid program. plugrad enters this context for each backward
        pass and for the steps of a compiled replay that change state, and computes
        a forward op (or a replay that changed nothing yet) again inside it where
        such a warning was raised as an error. Entered once per pass, it should be cheap (a fraction
        of a microsecond); a context with a ``context_variable`` attribute, a
        ``(ContextVar, value)`` pair, is entered by setting that variable to that
        value (NumPy's is).
        """
        return None

    def survives_fork(self) -> bool:
        """Whether a child process made now by ``os.fork()`` could use the library.

        A library running threads of its own (JAX's runtime, once started) cannot: the
        child gets the locks those threads held but not the threads, and hangs on them.
        :class:`~plugrad.utils.data.DataLoader` asks every registered backend before
        it starts workers with the platform's default start method, ``fork``, and
        starts them with ``spawn`` where one answers False. Asked of backends never
        used too, so it must not start the library. Default: True.
        """
        return True

    def dlpack_device(self, device: Any) -> tuple[int, int] | None:
        """Return the DLPack ``(device_type, device_id)`` of ``device``; ``None`` if unknown.

        Moving data between two backends whose devices report the same DLPack
        device goes through DLPack, without a copy; anything else goes through
        host memory.
        """
        return None

    def may_share_memory(self, array: Any, other: Any) -> bool:
        """Whether ``other``, made by a view op from ``array``, may share its memory.

        Asked only of a result that may be a copy (``reshape`` of an array its
        layout does not allow to view): a copy is not a view, and an in-place
        change of it must not count as one of ``array``. The default, True,
        treats every such result as a view.
        """
        return True

    def repeats_elements(self, array: Any) -> bool:
        """Whether ``array`` shows one memory location in several places (a broadcast view,
        stride 0) and its library would write it anyway: a write in place is then refused
        (PyTorch refuses it; NumPy's broadcast views are read-only). Default: False."""
        return False

    def write(self, array: Any, values: Any) -> Any:
        """Return ``array`` holding ``values`` (same shape and dtype): the functional-update hook.

        In-place operations (``x += y``, ``x[key] = v``, ``x.zero_()``) that
        record nothing finish by calling this. A library whose arrays can be
        written overwrites ``array`` and returns it, so memory is reused; one
        whose arrays are immutable (JAX) returns ``values`` itself, and the
        tensor is rebound to that new array. Either way the tensor's version
        counter goes up, so a backward pass that saved the old value still
        refuses to run.
        """
        array[...] = values
        return array

    def from_dlpack(self, obj: Any, device: Any) -> Any:
        """Return an array of this library sharing the memory of ``obj`` (has ``__dlpack__``)."""
        return self.namespace().from_dlpack(obj)

    def from_host(self, host: Any, device: Any) -> Any:
        """Return a new array on ``device`` holding a copy of the NumPy array ``host``."""
        return self.namespace().asarray(host, device=device, copy=True)

    def copy_to_device(self, array: Any, device: Any) -> Any:
        """Return a copy of one of this library's arrays on another of its devices."""
        return array.to_device(device)

    def to_numpy(self, array: Any) -> Any:
        """Return a NumPy array with the contents of ``array`` (a copy if it lives elsewhere)."""
        raise NotImplementedError(f"backend {self.name!r} does not define to_numpy()")

    def share_with_numpy(self, array: Any) -> Any:
        """Return a writable NumPy array sharing ``array``'s memory where possible.

        What :meth:`plugrad.Tensor.numpy` gives for a tensor that does not
        require grad. A CPU backend whose arrays NumPy can view without a copy
        overrides this; the default is :meth:`to_numpy` (a copy for data held
        elsewhere, as a GPU's).
        """
        return self.to_numpy(array)

    def strides(self, array: Any) -> tuple[int, ...]:
        """Elements between neighbours along each axis of ``array`` (PyTorch's ``stride()``).

        Arrays with a memory layout to read (``strides`` in bytes, as NumPy's and
        CuPy's) give theirs; others the row-major layout a copy of them would have.
        """
        in_bytes = getattr(array, "strides", None)
        itemsize = getattr(getattr(array, "dtype", None), "itemsize", None)
        size = getattr(array, "size", None)
        if isinstance(in_bytes, tuple) and isinstance(itemsize, int) and itemsize and size != 0:
            return tuple(step // itemsize for step in in_bytes)
        steps, step = [], 1
        for n in reversed(tuple(array.shape)):
            steps.append(step)
            step *= max(n, 1)
        return tuple(reversed(steps))

    def data_pointer(self, array: Any) -> int | None:
        """The address of ``array``'s first element (PyTorch's ``data_ptr()``), or ``None``
        where its memory has none to give (a lazy or remote array).

        Read from the array interfaces (``__array_interface__``,
        ``__cuda_array_interface__``) or JAX's ``unsafe_buffer_pointer()``.
        """
        for interface in ("__array_interface__", "__cuda_array_interface__"):
            found = getattr(array, interface, None)
            if isinstance(found, dict) and found.get("data") is not None:
                return int(found["data"][0])
        pointer = getattr(array, "unsafe_buffer_pointer", None)
        return int(pointer()) if callable(pointer) else None

    def row_major(self, array: Any) -> bool:
        """Whether ``array``'s elements lie in row-major order, one after the other
        (axes of length 1 aside): what PyTorch calls contiguous."""
        return row_major_layout(tuple(array.shape), self.strides(array))

    def synchronize(self, device: Any) -> None:
        """Wait until all work queued on ``device`` has finished (for timing)."""

    def release_cached_memory(self) -> None:
        """Hand memory the library keeps for reuse (blocks no array holds) back to its
        devices (:func:`plugrad.cuda.empty_cache`); a library without such a cache has
        nothing to do (the default)."""

    def compute(self, arrays: Sequence[Any]) -> list[Any]:
        """Return ``arrays`` with their values computed, sharing work between them.

        Only lazy libraries (Dask) have anything to do; an eager one returns
        the arrays as they are (the default). :func:`plugrad.compute` calls it.
        """
        return list(arrays)

    def settle(self, array: Any) -> None:
        """Keep the pending work behind ``array`` bounded; only lazy backends have any.

        plugrad calls it, on backends with :attr:`lazy` set only, for the inputs
        and outputs of every kernel, every gradient of a backward pass, and the
        parameters and state after an optimizer step (see ``plugrad.lazy``).
        A lazy library whose graphs cost more to extend or compute the larger
        they are computes ``array``'s graph now when it has grown past a limit,
        and makes ``array`` hold the results *in place* (the same object, the
        same values), so that everything holding it continues from there. The
        default does nothing.
        """

    def graph_recorder(
        self, device: Any
    ) -> Callable[[Callable[[], list[Any]]], Callable[[], None]] | None:
        """Return how to record kernel launches on ``device`` as one graph, or None.

        ``record(work)`` runs ``work()`` while recording the kernels it launches
        (into memory of the graph's own, which nothing else reuses), runs them
        once, and returns ``launch``, which runs the same kernels again on the
        same memory; ``work`` returns the arrays each launch rewrites. Used by
        ``plugrad.compile(fn, device_graph=True)``. ``record`` raises
        :class:`~plugrad.errors.DeviceGraphError` where the work cannot be
        recorded (a library call the graph cannot hold); the plan then replays
        without a graph. The default, for backends without device graphs, is None.
        """
        return None

    def random_source(self, seed: int | None, device: Any) -> RandomSource:
        """Return a new :class:`RandomSource` seeded with ``seed`` (``None``: from entropy)."""
        raise NotImplementedError(f"backend {self.name!r} does not define random_source()")

    def kernels(self) -> Mapping[str, Callable[..., Any]]:
        """Return backend-specific kernels by op name; they replace the op's generic kernel.

        Each kernel has the same signature as the generic one, ``kernel(xp, *arrays, **params)``.
        """
        return {}

    def __repr__(self) -> str:
        return f"<Backend {self.name}>"


class Device:
    """One device of an active backend: what a tensor's data lives on.

    There is exactly one :class:`Device` object per backend device, so the
    per-op path checks that inputs agree with one identity comparison.

    Attributes
    ----------
    backend : Backend
        The backend description.
    native : object
        The library's own device object.
    name : str
        ``"numpy"`` for a single-device backend, ``"cupy:0"`` style otherwise.
    xp : module
        The backend's own Array API namespace: what kernels receive.
    rule_xp : namespace
        What backward rules receive in an ordinary backward pass: ``xp`` plus
        every registered op that is not a function of the standard (bound to
        this backend), so a rule can call e.g. ``xp.scatter_add``. Standard
        names resolve to the backend's own functions.
    """

    __slots__ = (
        "_dtype_from_native",
        "_dtype_to_native",
        "array_type",
        "backend",
        "complex_natives",
        "half_natives",
        "integer_natives",
        "integral_natives",
        "kernels",
        "name",
        "native",
        "only_device",
        "output_types",
        "rule_xp",
        "scalar_promotions",
        "scalar_types",
        "summed_as_int_natives",
        "views_are_copies",
        "xp",
    )

    def __init__(
        self,
        backend: Backend,
        native: Any,
        name: str,
        xp: ModuleType,
        dtype_to_native: dict[_dtypes.DType, Any],
        dtype_from_native: dict[Any, _dtypes.DType],
    ) -> None:
        self.backend = backend
        self.native = native
        self.name = name
        self.xp = xp
        #: Copied from the backend: the in-place ops' one check for extra work on such devices.
        self.views_are_copies = not getattr(backend, "views_share_memory", True)
        #: Copied from the backend: see Tensor._shareable_array.
        self.scalar_types = frozenset(getattr(backend, "scalar_types", ()))
        #: Replaced together with ``kernels`` when the op tables are rebuilt.
        self.rule_xp: Any = xp
        self._dtype_to_native = dtype_to_native
        self._dtype_from_native = dtype_from_native
        #: op name -> kernel with ``xp`` bound, called as ``kernel(*arrays, **params)``;
        #: replaced wholesale (never mutated) when the op tables are rebuilt.
        self.kernels: Mapping[str, Callable[..., Any]] = {}
        #: The exact type of the arrays kernels return on this device (set by the first one):
        #: the per-op path accepts an output of this type with one identity comparison.
        self.array_type: type | None = None
        #: Every exact type found to be an array of this backend (kernels may return several,
        #: NumPy's scalars beside its arrays): see plugrad.dispatch.
        self.output_types: set[type] = set()
        #: Whether this is its backend's only device (set when the backend is activated):
        #: every array of the backend is then on it, so results need no device check. Else
        #: the engine asks each rule's gradient for its device: the devices of one backend
        #: share array types and dtypes, which is all its cheaper tests compare.
        self.only_device = False
        #: Python scalar type -> the native dtypes of another kind that meeting such a scalar
        #: in an element-wise op converts (int tensor + 0.5 -> float32, as in PyTorch): those
        #: of a lower kind, and for a bool every number dtype.
        self.scalar_promotions: dict[type, frozenset[Any]] = {
            scalar: frozenset(
                native
                for native, dtype in dtype_from_native.items()
                if _dtypes.kind_rank(dtype) < rank or (rank == 0 and _dtypes.kind_rank(dtype) > 0)
            )
            for scalar, rank in _dtypes.SCALAR_RANKS.items()
        }
        #: The native integer and bool dtypes: what ops computing in floating point convert.
        self.integral_natives = self.scalar_promotions[float]
        #: The native integer dtypes, whose range a Python int meeting them must fit (PyTorch
        #: and JAX would wrap ``uint8 + 300`` to 44 without a word; NumPy refuses).
        self.integer_natives = frozenset(
            native
            for native, dtype in dtype_from_native.items()
            if dtype.kind in ("signed integer", "unsigned integer")
        )
        #: The native complex dtypes: what ops defined for real numbers refuse.
        self.complex_natives = frozenset(
            native for native, dtype in dtype_from_native.items() if _dtypes.kind_rank(dtype) == 3
        )
        #: The native unsigned integer and bool dtypes: PyTorch's x.sum() of them is int64.
        self.summed_as_int_natives = frozenset(
            native
            for native, dtype in dtype_from_native.items()
            if dtype.kind in ("unsigned integer", "bool")
        )
        #: The native float16 (its dtype objects), which computes with an int or float Python
        #: scalar in float32 (PyTorch's rule: h / 1e5 is not 0): in those scalars' promotions
        #: for that, so that the per-op path tests it in the set it tests already.
        self.half_natives = frozenset(
            native for native, dtype in dtype_from_native.items() if dtype in _dtypes.half_floats
        )
        for scalar in (int, float):
            self.scalar_promotions[scalar] |= self.half_natives

    @property
    def dtypes(self) -> tuple[_dtypes.DType, ...]:
        """The plugrad dtypes this device's backend supports."""
        return tuple(self._dtype_to_native)

    @property
    def default_int_dtype(self) -> _dtypes.DType:
        """``int64``, or ``int32`` where the backend has none (JAX without ``jax_enable_x64``)."""
        if _dtypes.default_int_dtype in self._dtype_to_native:
            return _dtypes.default_int_dtype
        return _dtypes.int32

    def native_dtype(self, dtype: _dtypes.DType) -> Any:
        """Return the backend's dtype object for ``dtype``, or raise if it has none."""
        try:
            return self._dtype_to_native[dtype]
        except KeyError:
            from .errors import DtypeError

            if not isinstance(dtype, _dtypes.DType):
                raise DtypeError(
                    f"expected a plugrad dtype such as plugrad.float32, got {dtype!r}"
                ) from None
            hint = ""
            if dtype is _dtypes.bfloat16:  # (outside the Array API standard)
                hint = "; the torch and jax backends store bfloat16 (plugrad.use_backend('torch'))"
            raise DtypeError(
                f"backend {self.backend.name!r} has no dtype {dtype.name}; "
                f"it supports {', '.join(d.name for d in self._dtype_to_native)}{hint}"
            ) from None

    def dtype_of(self, array: Any) -> _dtypes.DType:
        """Return the plugrad dtype of one of this backend's arrays."""
        return self._dtype_from_native[array.dtype]

    def result_type(self, first: _dtypes.DType, second: _dtypes.DType) -> _dtypes.DType:
        """The standard's promotion of two dtypes of one kind (or real with complex), as this
        backend's library computes it; a TypeError where it has none."""
        native = self.xp.result_type(self.native_dtype(first), self.native_dtype(second))
        return self._dtype_from_native[native]

    @property
    def type(self) -> str:
        """PyTorch's device type: ``"cpu"`` (NumPy), ``"cuda"`` (CuPy), else the backend name."""
        return _TORCH_DEVICE_TYPES.get(self.backend.name, self.backend.name)

    @property
    def index(self) -> int | None:
        """The device's index (``"cupy:1"`` gives 1, a single GPU 0); ``None`` for the CPU."""
        _, colon, index = self.name.partition(":")
        if colon and index.isdigit():
            return int(index)
        # A GPU has an index even when it is the only one, as in PyTorch ("cuda:0").
        return 0 if self.type == "cuda" else None

    def __repr__(self) -> str:
        return f"device({self.name!r})"

    def __str__(self) -> str:
        return self.name
